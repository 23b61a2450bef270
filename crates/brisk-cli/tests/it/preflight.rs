//! A CORS preflight (`OPTIONS`) on a presigned URL, as a browser sends it before using the URL:
//! answered as S3 answers for a bucket without a CORS configuration, never as a signature error
//! (a preflight carries none, whatever the URL's query holds).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::support::{brisk, serve};

fn options(url: &str, path_and_query: &str, origin: Option<&str>) -> (u16, String) {
    let host = url.trim_start_matches("http://");
    let mut s = TcpStream::connect(host).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let origin = origin.map_or(String::new(), |o| {
        format!("Origin: {o}\r\nAccess-Control-Request-Method: GET\r\n")
    });
    write!(
        s,
        "OPTIONS {path_and_query} HTTP/1.1\r\nHost: {host}\r\n{origin}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    (out[9..12].parse().unwrap(), out)
}

#[test]
fn preflight_on_a_presigned_url_is_answered_as_s3_answers_without_cors() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("data"), &[]);
    let url = server.url.as_str();
    assert!(brisk(url, &["mb", "s3://preflight"]).status.success());
    let presigned = brisk(url, &["presign", "s3://preflight/key"]);
    assert!(presigned.status.success());
    let presigned = String::from_utf8(presigned.stdout).unwrap();
    let path_and_query = presigned.trim().trim_start_matches(url);
    assert!(
        path_and_query.starts_with("/preflight/key?"),
        "{path_and_query}"
    );

    let (status, answer) = options(url, path_and_query, Some("https://example.com"));
    assert_eq!(status, 403, "{answer}");
    assert!(answer.contains("<Code>CORSResponse</Code>"), "{answer}");
    assert!(
        answer.contains("CORS is not enabled for this bucket."),
        "{answer}"
    );

    let (status, answer) = options(url, path_and_query, None);
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer.contains("Insufficient information. Origin request header needed."),
        "{answer}"
    );
}
