//! Parsing the Blob service's XML: responses recorded from Azurite 3.35 (List Blobs flat and with a
//! delimiter, List Containers paged, Error documents), documents shaped like the service's own (a
//! byte order mark, pretty-printing, `Content-CRC64`, empty optional elements, `Metadata` whose
//! children are named like the blob's fields, snapshots, encoded names), hostile input, and the Put
//! Block List body read back.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use brisk_wire::azure::{
    BlobEntry, ContainerEntry, block_id, block_list_body, parse_error, parse_list_blobs,
    parse_list_containers,
};
use brisk_wire::xml::{MAX_LIST_ENTRIES, XmlParseError};

/// Azurite's answer to `?restype=container&comp=list&maxresults=3`: the first page, continued.
const AZURITE_FLAT_PAGE: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><EnumerationResults ServiceEndpoint="http://127.0.0.1:10099/devstoreaccount1" ContainerName="alpha"><Prefix/><Marker/><MaxResults>3</MaxResults><Blobs><Blob><Name>a.txt</Name><Properties><Creation-Time>Wed, 25 Nov 2026 08:55:39 GMT</Creation-Time><Last-Modified>Wed, 25 Nov 2026 08:55:39 GMT</Last-Modified><Etag>0x2160B6B62D40020</Etag><Content-Length>11</Content-Length><Content-Type>application/octet-stream</Content-Type><Content-MD5>aKBpe4NBG2y2t/55HEzvew==</Content-MD5><BlobType>BlockBlob</BlobType><LeaseStatus>unlocked</LeaseStatus><LeaseState>available</LeaseState><ServerEncrypted>true</ServerEncrypted><AccessTier>Hot</AccessTier><AccessTierInferred>true</AccessTierInferred><AccessTierChangeTime>Wed, 25 Nov 2026 08:55:39 GMT</AccessTierChangeTime></Properties></Blob><Blob><Name>dir/b.bin</Name><Properties><Creation-Time>Wed, 25 Nov 2026 08:55:40 GMT</Creation-Time><Last-Modified>Wed, 25 Nov 2026 08:55:40 GMT</Last-Modified><Etag>0x272DCD1C43A5EC0</Etag><Content-Length>15</Content-Length><Content-Type>application/octet-stream</Content-Type><Content-MD5>DsjpWzOv/ZrNShOHE85Lyg==</Content-MD5><BlobType>BlockBlob</BlobType><LeaseStatus>unlocked</LeaseStatus><LeaseState>available</LeaseState><ServerEncrypted>true</ServerEncrypted><AccessTier>Hot</AccessTier><AccessTierInferred>true</AccessTierInferred><AccessTierChangeTime>Wed, 25 Nov 2026 08:55:40 GMT</AccessTierChangeTime></Properties></Blob><Blob><Name>dir/sub/c</Name><Properties><Creation-Time>Wed, 25 Nov 2026 08:55:40 GMT</Creation-Time><Last-Modified>Wed, 25 Nov 2026 08:55:40 GMT</Last-Modified><Etag>0x22EBB7642754FC0</Etag><Content-Length>15</Content-Length><Content-Type>application/octet-stream</Content-Type><Content-MD5>zz1Ngl+s4KfQLlemOVKxaQ==</Content-MD5><BlobType>BlockBlob</BlobType><LeaseStatus>unlocked</LeaseStatus><LeaseState>available</LeaseState><ServerEncrypted>true</ServerEncrypted><AccessTier>Hot</AccessTier><AccessTierInferred>true</AccessTierInferred><AccessTierChangeTime>Wed, 25 Nov 2026 08:55:40 GMT</AccessTierChangeTime></Properties></Blob></Blobs><NextMarker>dir/sub/c</NextMarker></EnumerationResults>"#;

/// Azurite's answer to `?restype=container&comp=list&delimiter=%2F`: a prefix, escaped and non-ASCII
/// names, and an empty `NextMarker` (the last page).
const AZURITE_DELIMITED_PAGE: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><EnumerationResults ServiceEndpoint="http://127.0.0.1:10099/devstoreaccount1" ContainerName="alpha"><Prefix/><Marker/><MaxResults>5000</MaxResults><Delimiter>/</Delimiter><Blobs><BlobPrefix><Name>dir/</Name></BlobPrefix><Blob><Name>a.txt</Name><Properties><Creation-Time>Wed, 25 Nov 2026 08:55:39 GMT</Creation-Time><Last-Modified>Wed, 25 Nov 2026 08:55:39 GMT</Last-Modified><Etag>0x2160B6B62D40020</Etag><Content-Length>11</Content-Length><Content-Type>application/octet-stream</Content-Type><Content-MD5>aKBpe4NBG2y2t/55HEzvew==</Content-MD5><BlobType>BlockBlob</BlobType><LeaseStatus>unlocked</LeaseStatus><LeaseState>available</LeaseState><ServerEncrypted>true</ServerEncrypted><AccessTier>Hot</AccessTier><AccessTierInferred>true</AccessTierInferred><AccessTierChangeTime>Wed, 25 Nov 2026 08:55:39 GMT</AccessTierChangeTime></Properties></Blob><Blob><Name>plus+pct%.txt</Name><Properties><Creation-Time>Wed, 25 Nov 2026 08:55:40 GMT</Creation-Time><Last-Modified>Wed, 25 Nov 2026 08:55:40 GMT</Last-Modified><Etag>0x1C05BCF45673C40</Etag><Content-Length>19</Content-Length><Content-Type>application/octet-stream</Content-Type><Content-MD5>DO16jGGG3IkTQ443kTOEyQ==</Content-MD5><BlobType>BlockBlob</BlobType><LeaseStatus>unlocked</LeaseStatus><LeaseState>available</LeaseState><ServerEncrypted>true</ServerEncrypted><AccessTier>Hot</AccessTier><AccessTierInferred>true</AccessTierInferred><AccessTierChangeTime>Wed, 25 Nov 2026 08:55:40 GMT</AccessTierChangeTime></Properties></Blob><Blob><Name>space name &amp;&lt;&gt;.txt</Name><Properties><Creation-Time>Wed, 25 Nov 2026 08:55:40 GMT</Creation-Time><Last-Modified>Wed, 25 Nov 2026 08:55:40 GMT</Last-Modified><Etag>0x23150DC9B50C280</Etag><Content-Length>24</Content-Length><Content-Type>application/octet-stream</Content-Type><Content-MD5>HF2wUkoxXdlDkp7UNQ0KWA==</Content-MD5><BlobType>BlockBlob</BlobType><LeaseStatus>unlocked</LeaseStatus><LeaseState>available</LeaseState><ServerEncrypted>true</ServerEncrypted><AccessTier>Hot</AccessTier><AccessTierInferred>true</AccessTierInferred><AccessTierChangeTime>Wed, 25 Nov 2026 08:55:40 GMT</AccessTierChangeTime></Properties></Blob><Blob><Name>uni-é漢.txt</Name><Properties><Creation-Time>Wed, 25 Nov 2026 08:55:40 GMT</Creation-Time><Last-Modified>Wed, 25 Nov 2026 08:55:40 GMT</Last-Modified><Etag>0x2070A66C64B4AC0</Etag><Content-Length>19</Content-Length><Content-Type>application/octet-stream</Content-Type><Content-MD5>y21bUn5O7b3IN8exEdX/TQ==</Content-MD5><BlobType>BlockBlob</BlobType><LeaseStatus>unlocked</LeaseStatus><LeaseState>available</LeaseState><ServerEncrypted>true</ServerEncrypted><AccessTier>Hot</AccessTier><AccessTierInferred>true</AccessTierInferred><AccessTierChangeTime>Wed, 25 Nov 2026 08:55:40 GMT</AccessTierChangeTime></Properties></Blob></Blobs><NextMarker/></EnumerationResults>"#;

/// Azurite's answer to `?comp=list&maxresults=1`.
const AZURITE_CONTAINERS_PAGE: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><EnumerationResults ServiceEndpoint="http://127.0.0.1:10099/devstoreaccount1"><Prefix/><MaxResults>1</MaxResults><Containers><Container><Name>alpha</Name><Properties><Last-Modified>Wed, 25 Nov 2026 08:54:18 GMT</Last-Modified><Etag>"0x1C2F4786ABA9FA0"</Etag><LeaseStatus>unlocked</LeaseStatus><LeaseState>available</LeaseState><HasImmutabilityPolicy>false</HasImmutabilityPolicy><HasLegalHold>false</HasLegalHold></Properties></Container></Containers><NextMarker>alpha</NextMarker></EnumerationResults>"#;

/// Azurite's answer to `?comp=list`: every container, the last page.
const AZURITE_CONTAINERS_LAST: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><EnumerationResults ServiceEndpoint="http://127.0.0.1:10099/devstoreaccount1"><Prefix/><MaxResults>5000</MaxResults><Containers><Container><Name>alpha</Name><Properties><Last-Modified>Wed, 25 Nov 2026 08:54:18 GMT</Last-Modified><Etag>"0x1C2F4786ABA9FA0"</Etag><LeaseStatus>unlocked</LeaseStatus><LeaseState>available</LeaseState><HasImmutabilityPolicy>false</HasImmutabilityPolicy><HasLegalHold>false</HasLegalHold></Properties></Container><Container><Name>beta-2</Name><Properties><Last-Modified>Wed, 25 Nov 2026 08:54:18 GMT</Last-Modified><Etag>"0x1FD6BB3B6C6F5A0"</Etag><LeaseStatus>unlocked</LeaseStatus><LeaseState>available</LeaseState><HasImmutabilityPolicy>false</HasImmutabilityPolicy><HasLegalHold>false</HasLegalHold></Properties></Container></Containers><NextMarker/></EnumerationResults>"#;

/// Azurite's 404 for a missing blob (its message spans lines).
const AZURITE_BLOB_NOT_FOUND: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n\
<Error>\n  <Code>BlobNotFound</Code>\n  <Message>The specified blob does not exist.\n\
RequestId:10e0f57e-c16a-4113-8bc0-532cbc614cdc\nTime:2026-11-25T08:55:40.381Z</Message>\n</Error>";

fn blob(name: &str, size: u64, etag: &str, md5: &str) -> BlobEntry {
    BlobEntry {
        name: name.to_owned(),
        size,
        etag: etag.to_owned(),
        last_modified: "Wed, 25 Nov 2026 08:55:40 GMT".to_owned(),
        content_md5: Some(md5.to_owned()),
        content_crc64: None,
        blob_type: Some("BlockBlob".to_owned()),
    }
}

#[test]
fn azurite_flat_listing_page() {
    let page = parse_list_blobs(AZURITE_FLAT_PAGE.as_bytes()).unwrap();
    assert_eq!(page.next_marker.as_deref(), Some("dir/sub/c"));
    assert!(page.prefixes.is_empty());
    let mut first = blob("a.txt", 11, "0x2160B6B62D40020", "aKBpe4NBG2y2t/55HEzvew==");
    first.last_modified = "Wed, 25 Nov 2026 08:55:39 GMT".to_owned();
    assert_eq!(
        page.blobs,
        [
            first,
            blob(
                "dir/b.bin",
                15,
                "0x272DCD1C43A5EC0",
                "DsjpWzOv/ZrNShOHE85Lyg=="
            ),
            blob(
                "dir/sub/c",
                15,
                "0x22EBB7642754FC0",
                "zz1Ngl+s4KfQLlemOVKxaQ=="
            ),
        ]
    );
}

#[test]
fn azurite_delimited_last_page() {
    let page = parse_list_blobs(AZURITE_DELIMITED_PAGE.as_bytes()).unwrap();
    assert_eq!(page.next_marker, None, "<NextMarker/> ends the listing");
    assert_eq!(page.prefixes, ["dir/"]);
    let names: Vec<&str> = page.blobs.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "a.txt",
            "plus+pct%.txt",
            "space name &<>.txt",
            "uni-é漢.txt"
        ]
    );
    assert_eq!(page.blobs[3].size, 19);
}

#[test]
fn azurite_container_pages() {
    let page = parse_list_containers(AZURITE_CONTAINERS_PAGE.as_bytes()).unwrap();
    assert_eq!(
        page.containers,
        [ContainerEntry {
            name: "alpha".into(),
            last_modified: "Wed, 25 Nov 2026 08:54:18 GMT".into()
        }]
    );
    assert_eq!(page.next_marker.as_deref(), Some("alpha"));
    let last = parse_list_containers(AZURITE_CONTAINERS_LAST.as_bytes()).unwrap();
    let names: Vec<&str> = last.containers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["alpha", "beta-2"]);
    assert_eq!(last.next_marker, None);
}

#[test]
fn azurite_error_document() {
    let error = parse_error(AZURITE_BLOB_NOT_FOUND.as_bytes()).unwrap();
    assert_eq!(error.code, "BlobNotFound");
    assert_eq!(
        error.message,
        "The specified blob does not exist.\nRequestId:10e0f57e-c16a-4113-8bc0-532cbc614cdc\n\
         Time:2026-11-25T08:55:40.381Z"
    );
}

/// Shaped like the service's List Blobs reference: a byte order mark, indentation, every optional
/// element present but empty, `Content-CRC64`, a snapshot, metadata and tags, an encoded name, a
/// prefix between blobs and an opaque marker.
#[test]
fn service_shaped_listing() {
    let xml = "\u{FEFF}<?xml version=\"1.0\" encoding=\"utf-8\"?>
<EnumerationResults ServiceEndpoint=\"https://myaccount.blob.core.windows.net/\" ContainerName=\"mycontainer\">
  <Prefix>logs/</Prefix>
  <Marker />
  <MaxResults>2</MaxResults>
  <Delimiter>/</Delimiter>
  <Blobs>
    <Blob>
      <Name>logs/2024-06-01.txt</Name>
      <Snapshot>2024-06-02T10:00:00.0000000Z</Snapshot>
      <Properties>
        <Creation-Time>Sat, 01 Jun 2024 23:59:59 GMT</Creation-Time>
        <Last-Modified>Sun, 02 Jun 2024 10:00:00 GMT</Last-Modified>
        <Etag>0x8DC82D2C1C3E5A1</Etag>
        <Content-Length>1048576</Content-Length>
        <Content-Type>text/plain</Content-Type>
        <Content-Encoding />
        <Content-Language />
        <Content-CRC64>iJh5CoYUi64=</Content-CRC64>
        <Content-MD5 />
        <Cache-Control />
        <Content-Disposition />
        <BlobType>BlockBlob</BlobType>
        <AccessTier>Hot</AccessTier>
        <AccessTierInferred>true</AccessTierInferred>
        <LeaseStatus>unlocked</LeaseStatus>
        <LeaseState>available</LeaseState>
        <ServerEncrypted>true</ServerEncrypted>
      </Properties>
      <Metadata>
        <Name>not the blob's name</Name>
        <Content-Length>7</Content-Length>
      </Metadata>
      <Tags><TagSet><Tag><Key>k</Key><Value>v</Value></Tag></TagSet></Tags>
    </Blob>
    <BlobPrefix>
      <Name>logs/archive/</Name>
    </BlobPrefix>
    <Blob>
      <Name Encoded=\"true\">logs/odd%EF%BF%BEname%0A.txt</Name>
      <Properties>
        <Last-Modified>Sun, 02 Jun 2024 11:30:00 GMT</Last-Modified>
        <Etag>0x8DC82D2C1C3E5A2</Etag>
        <Content-Length>0</Content-Length>
        <Content-MD5>1B2M2Y8AsgTpgAmY7PhCfg==</Content-MD5>
        <BlobType>AppendBlob</BlobType>
      </Properties>
      <Metadata />
    </Blob>
  </Blobs>
  <NextMarker>2!96!MDAwMDI0IWxvZ3Mvb2RkbmFtZS50eHQhMDAwMDI4ITk5OTktMTItMzFUMjM6NTk6NTkuOTk5OTk5OVoh</NextMarker>
</EnumerationResults>
";
    let page = parse_list_blobs(xml.as_bytes()).unwrap();
    assert_eq!(
        page.blobs,
        [
            BlobEntry {
                name: "logs/2024-06-01.txt".into(),
                size: 1_048_576,
                etag: "0x8DC82D2C1C3E5A1".into(),
                last_modified: "Sun, 02 Jun 2024 10:00:00 GMT".into(),
                content_md5: None,
                content_crc64: Some("iJh5CoYUi64=".into()),
                blob_type: Some("BlockBlob".into()),
            },
            BlobEntry {
                name: "logs/odd\u{FFFE}name\n.txt".into(),
                size: 0,
                etag: "0x8DC82D2C1C3E5A2".into(),
                last_modified: "Sun, 02 Jun 2024 11:30:00 GMT".into(),
                content_md5: Some("1B2M2Y8AsgTpgAmY7PhCfg==".into()),
                content_crc64: None,
                blob_type: Some("AppendBlob".into()),
            },
        ]
    );
    assert_eq!(page.prefixes, ["logs/archive/"]);
    assert_eq!(
        page.next_marker.as_deref(),
        Some(
            "2!96!MDAwMDI0IWxvZ3Mvb2RkbmFtZS50eHQhMDAwMDI4ITk5OTktMTItMzFUMjM6NTk6NTkuOTk5OTk5OVoh"
        )
    );
}

#[test]
fn service_shaped_containers_and_errors() {
    let xml = "\u{FEFF}<?xml version=\"1.0\" encoding=\"utf-8\"?>
<EnumerationResults ServiceEndpoint=\"https://myaccount.blob.core.windows.net\">
  <Prefix>data</Prefix>
  <MaxResults>5000</MaxResults>
  <Containers>
    <Container>
      <Name>data-2024</Name>
      <Properties>
        <Last-Modified>Mon, 03 Jun 2024 08:00:00 GMT</Last-Modified>
        <Etag>\"0x8DC83A1B2C3D4E5\"</Etag>
        <PublicAccess>blob</PublicAccess>
      </Properties>
      <Metadata><Name>x</Name></Metadata>
    </Container>
  </Containers>
  <NextMarker />
</EnumerationResults>";
    let page = parse_list_containers(xml.as_bytes()).unwrap();
    assert_eq!(page.containers.len(), 1);
    assert_eq!(page.containers[0].name, "data-2024");
    assert_eq!(
        page.containers[0].last_modified,
        "Mon, 03 Jun 2024 08:00:00 GMT"
    );
    assert_eq!(page.next_marker, None);

    let error = "\u{FEFF}<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>AuthenticationFailed</Code>\
<Message>Server failed to authenticate the request. Make sure the value of Authorization header is \
formed correctly including the signature.\nRequestId:6c3b2f1e-001e-0042-1c2b-b3e5f1000000\n\
Time:2024-06-03T08:00:00.0000000Z</Message><AuthenticationErrorDetail>The MAC signature found in the \
HTTP request 'abc=' is not the same as any computed signature.</AuthenticationErrorDetail></Error>";
    let error = parse_error(error.as_bytes()).unwrap();
    assert_eq!(error.code, "AuthenticationFailed");
    assert!(error.message.ends_with("Time:2024-06-03T08:00:00.0000000Z"));
}

#[test]
fn hostile_listings_are_refused() {
    assert_eq!(
        parse_list_blobs(b"<!DOCTYPE x [<!ENTITY a \"b\">]><EnumerationResults/>"),
        Err(XmlParseError::Doctype)
    );
    assert!(matches!(
        parse_list_blobs(b"<EnumerationResults><Blobs><Blob><Name>a"),
        Err(XmlParseError::UnexpectedEof)
    ));
    assert!(matches!(
        parse_list_containers(b"<Error><Code>x</Code></Error>"),
        Err(XmlParseError::WrongRoot { .. })
    ));
    let prefix = "<BlobPrefix><Name>p/</Name></BlobPrefix>";
    let flood = format!(
        "<EnumerationResults><Blobs>{}</Blobs></EnumerationResults>",
        prefix.repeat(MAX_LIST_ENTRIES + 1)
    );
    assert!(matches!(
        parse_list_blobs(flood.as_bytes()),
        Err(XmlParseError::TooManyEntries { .. })
    ));
    assert_eq!(parse_error(b"<Error><Code>x</Code><Message>"), None);
}

#[test]
fn block_list_body_reads_back_in_order() {
    let ids: Vec<String> = (0..1_000).map(block_id).collect();
    let body = block_list_body(&ids);
    assert!(body.starts_with("<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList><Latest>"));
    let read: Vec<&str> = body
        .split("<Latest>")
        .skip(1)
        .map(|s| s.split("</Latest>").next().unwrap())
        .collect();
    assert_eq!(read, ids.iter().map(String::as_str).collect::<Vec<_>>());
}

#[test]
fn block_ids_are_equal_length_and_distinct() {
    let indices = [
        0,
        1,
        9,
        10,
        99,
        100,
        9_999,
        10_000,
        49_999,
        50_000,
        u32::MAX,
    ];
    let ids: Vec<String> = indices.iter().map(|&i| block_id(i)).collect();
    assert!(ids.iter().all(|id| id.len() == ids[0].len()), "{ids:?}");
    for (index, id) in indices.iter().zip(&ids) {
        let raw = STANDARD.decode(id).unwrap();
        assert!(raw.len() <= 64, "at most 64 bytes before encoding");
        assert_eq!(raw, format!("brisk-block-{index:010}").as_bytes());
    }
    let mut distinct = ids.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), ids.len());
}
