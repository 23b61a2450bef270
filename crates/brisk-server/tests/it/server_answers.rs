//! S3's answers, checked over a socket with hand-built requests (no client library between):
//! `partNumber` on single-part and multipart objects, user metadata with non-ASCII characters,
//! SHA-1 checksums, and part checksums in ListParts.

use crate::http_support;
use base64::Engine as _;
use brisk_testkit::http::{Connection, ResponseHead};

/// Sends `method path` with `headers` (raw bytes: a value may hold UTF-8) and `body`.
fn send(
    c: &mut Connection,
    method: &str,
    path: &str,
    headers: &[(&str, &[u8])],
    body: &[u8],
) -> (ResponseHead, Vec<u8>) {
    let mut raw = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n").into_bytes();
    for (name, value) in headers {
        raw.extend_from_slice(name.as_bytes());
        raw.extend_from_slice(b": ");
        raw.extend_from_slice(value);
        raw.extend_from_slice(b"\r\n");
    }
    raw.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
    raw.extend_from_slice(body);
    c.send_raw(&raw);
    let mut out = Vec::new();
    let r = c.receive(method, |d| out.extend_from_slice(d));
    (r, out)
}

/// The value of the response field `name`, if present.
fn field<'a>(r: &'a ResponseHead, name: &str) -> Option<&'a str> {
    r.head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

fn text_between<'a>(doc: &'a str, open: &str, close: &str) -> &'a str {
    let start = doc.find(open).expect(open) + open.len();
    &doc[start..start + doc[start..].find(close).expect(close)]
}

fn sha1_b64(data: &[u8]) -> String {
    use brisk_wire::checksum::{ChecksumAlgorithm, Checksummer};
    Checksummer::checksum(ChecksumAlgorithm::Sha1, data).to_base64()
}

#[test]
fn part_numbers_of_single_part_and_multipart_objects() {
    let dir = tempfile::tempdir().unwrap();
    let server = http_support::start(dir.path());
    let mut c = Connection::connect(server.local_addr());
    assert_eq!(c.request("PUT", "/parts", b"").0.status, 200);
    assert_eq!(c.request("PUT", "/parts/one", b"hello").0.status, 200);

    // A single-part object is one part, the whole object: 206 with its Content-Range, and no
    // part count (S3 sends it only for multipart objects).
    for method in ["GET", "HEAD"] {
        let (r, body) = send(&mut c, method, "/parts/one?partNumber=1", &[], b"");
        assert_eq!(r.status, 206, "{method}: {}", r.head);
        assert_eq!(field(&r, "content-range"), Some("bytes 0-4/5"));
        assert_eq!(field(&r, "x-amz-mp-parts-count"), None, "{}", r.head);
        assert_eq!(r.content_length, 5);
        if method == "GET" {
            assert_eq!(body, b"hello");
        }
        let (r, body) = send(&mut c, method, "/parts/one?partNumber=2", &[], b"");
        assert_eq!(r.status, 416, "{}", r.head);
        if method == "GET" {
            assert!(String::from_utf8_lossy(&body).contains("<Code>InvalidPartNumber</Code>"));
        }
    }
    // A part and a Range together are refused, as S3 and MinIO refuse them.
    for method in ["GET", "HEAD"] {
        let (r, body) = send(
            &mut c,
            method,
            "/parts/one?partNumber=1",
            &[("range", b"bytes=0-1".as_slice())],
            b"",
        );
        assert_eq!(r.status, 400, "{method}: {}", r.head);
        if method == "GET" {
            assert!(String::from_utf8_lossy(&body).contains("<Code>InvalidRequest</Code>"));
        }
    }
    // The one part of an empty object has no range to name.
    assert_eq!(c.request("PUT", "/parts/empty", b"").0.status, 200);
    let (r, _) = c.request("GET", "/parts/empty?partNumber=1", b"");
    assert_eq!((r.status, r.content_length), (200, 0), "{}", r.head);
    assert_eq!(field(&r, "content-range"), None);

    // A multipart object: the part and the part count, the count only when a part is asked for.
    let (r, doc) = c.request("POST", "/parts/multi?uploads", b"");
    assert_eq!(r.status, 200);
    let doc = String::from_utf8(doc).unwrap();
    let id = text_between(&doc, "<UploadId>", "</UploadId>").to_owned();
    let part1 = vec![b'1'; 5 << 20];
    let mut etags = Vec::new();
    for (n, body) in [(1, &part1[..]), (2, b"second part".as_slice())] {
        let (r, _) = c.request(
            "PUT",
            &format!("/parts/multi?partNumber={n}&uploadId={id}"),
            body,
        );
        assert_eq!(r.status, 200, "{}", r.head);
        etags.push(field(&r, "etag").unwrap().to_owned());
    }
    let complete = format!(
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>{}</ETag></Part>\
         <Part><PartNumber>2</PartNumber><ETag>{}</ETag></Part></CompleteMultipartUpload>",
        etags[0], etags[1]
    );
    let (r, _) = c.request(
        "POST",
        &format!("/parts/multi?uploadId={id}"),
        complete.as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.head);
    let (r, body) = c.request("GET", "/parts/multi?partNumber=2", b"");
    assert_eq!(r.status, 206);
    assert_eq!(body, b"second part");
    let size = part1.len() + 11;
    assert_eq!(
        field(&r, "content-range"),
        Some(format!("bytes {}-{}/{size}", part1.len(), size - 1).as_str())
    );
    assert_eq!(field(&r, "x-amz-mp-parts-count"), Some("2"));
    let (r, _) = send(&mut c, "HEAD", "/parts/multi", &[], b"");
    assert_eq!(r.status, 200);
    assert_eq!(field(&r, "x-amz-mp-parts-count"), None, "{}", r.head);
    let (r, _) = send(&mut c, "HEAD", "/parts/multi?partNumber=3", &[], b"");
    assert_eq!(r.status, 416);
    drop(c);
    server.shutdown();
}

#[test]
fn non_ascii_metadata_comes_back_as_rfc_2047_encoded_words() {
    let dir = tempfile::tempdir().unwrap();
    let server = http_support::start(dir.path());
    let mut c = Connection::connect(server.local_addr());
    assert_eq!(c.request("PUT", "/meta", b"").0.status, 200);
    let headers: [(&str, &[u8]); 3] = [
        ("x-amz-meta-city", "Zürich".as_bytes()),
        ("x-amz-meta-plain", b"ascii only"),
        (
            "Content-Disposition",
            "attachment; filename=\"café.txt\"".as_bytes(),
        ),
    ];
    let (r, _) = send(&mut c, "PUT", "/meta/k", &headers, b"body");
    assert_eq!(r.status, 200, "{}", r.head);
    for method in ["GET", "HEAD"] {
        let (r, _) = send(&mut c, method, "/meta/k", &[], b"");
        assert_eq!(r.status, 200);
        assert!(r.head.is_ascii(), "raw non-ASCII bytes in {:?}", r.head);
        let word = |s: &str| {
            format!(
                "=?UTF-8?B?{}?=",
                base64::engine::general_purpose::STANDARD.encode(s)
            )
        };
        assert_eq!(field(&r, "x-amz-meta-city"), Some(word("Zürich").as_str()));
        assert_eq!(field(&r, "x-amz-meta-plain"), Some("ascii only"));
        assert_eq!(
            field(&r, "content-disposition"),
            Some(word("attachment; filename=\"café.txt\"").as_str())
        );
    }
    drop(c);
    server.shutdown();
}

#[test]
fn sha1_checksums_are_verified_stored_and_listed_with_parts() {
    let dir = tempfile::tempdir().unwrap();
    let server = http_support::start(dir.path());
    let mut c = Connection::connect(server.local_addr());
    assert_eq!(c.request("PUT", "/sums", b"").0.status, 200);

    let good = sha1_b64(b"payload");
    let (r, _) = send(
        &mut c,
        "PUT",
        "/sums/k",
        &[("x-amz-checksum-sha1", good.as_bytes())],
        b"payload",
    );
    assert_eq!(r.status, 200, "{}", r.head);
    assert_eq!(field(&r, "x-amz-checksum-sha1"), Some(good.as_str()));
    let mode: [(&str, &[u8]); 1] = [("x-amz-checksum-mode", b"ENABLED")];
    let (r, _) = send(&mut c, "HEAD", "/sums/k", &mode, b"");
    assert_eq!(field(&r, "x-amz-checksum-sha1"), Some(good.as_str()));
    let wrong = sha1_b64(b"other");
    let (r, body) = send(
        &mut c,
        "PUT",
        "/sums/bad",
        &[("x-amz-checksum-sha1", wrong.as_bytes())],
        b"payload",
    );
    assert_eq!(r.status, 400);
    assert!(String::from_utf8_lossy(&body).contains("<Code>BadDigest</Code>"));
    assert_eq!(c.request("HEAD", "/sums/bad", b"").0.status, 404);

    // An upload created with SHA-1: each part's checksum is SHA-1 (another algorithm is refused,
    // none is computed), and ListParts shows them.
    let (r, doc) = send(
        &mut c,
        "POST",
        "/sums/mp?uploads",
        &[("x-amz-checksum-algorithm", b"SHA1")],
        b"",
    );
    assert_eq!(r.status, 200);
    let doc = String::from_utf8(doc).unwrap();
    let id = text_between(&doc, "<UploadId>", "</UploadId>").to_owned();
    let path = |n: u32| format!("/sums/mp?partNumber={n}&uploadId={id}");
    let (r, _) = send(
        &mut c,
        "PUT",
        &path(1),
        &[("x-amz-checksum-sha1", good.as_bytes())],
        b"payload",
    );
    assert_eq!(r.status, 200, "{}", r.head);
    let crc = brisk_wire::checksum::Checksummer::checksum(
        brisk_wire::checksum::ChecksumAlgorithm::Crc32,
        b"payload",
    )
    .to_base64();
    let (r, body) = send(
        &mut c,
        "PUT",
        &path(2),
        &[("x-amz-checksum-crc32", crc.as_bytes())],
        b"payload",
    );
    let body = String::from_utf8_lossy(&body);
    assert_eq!(r.status, 400);
    assert!(
        body.contains("expected checksum Type: sha1, actual checksum Type: crc32"),
        "{body}"
    );
    let (r, _) = c.request("PUT", &path(3), b"computed");
    assert_eq!(r.status, 200);
    assert_eq!(
        field(&r, "x-amz-checksum-sha1"),
        Some(sha1_b64(b"computed").as_str())
    );
    let (r, doc) = c.request("GET", &format!("/sums/mp?uploadId={id}"), b"");
    assert_eq!(r.status, 200);
    let doc = String::from_utf8(doc).unwrap();
    assert!(
        doc.contains("<ChecksumAlgorithm>SHA1</ChecksumAlgorithm>"),
        "{doc}"
    );
    assert!(
        doc.contains(&format!("<ChecksumSHA1>{good}</ChecksumSHA1>")),
        "{doc}"
    );
    assert!(
        doc.contains(&format!(
            "<ChecksumSHA1>{}</ChecksumSHA1>",
            sha1_b64(b"computed")
        )),
        "{doc}"
    );
    assert_eq!(
        doc.matches("<Part>").count(),
        2,
        "the refused part is not there: {doc}"
    );
    drop(c);
    server.shutdown();
}
