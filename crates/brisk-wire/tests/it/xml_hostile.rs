//! Hostile and broken input: every rejection is a clear `XmlParseError` (reported as `MalformedXML`),
//! never a panic, and limits hold.

use brisk_wire::xml::*;
use proptest::prelude::*;

fn delete_body(objects: usize) -> Vec<u8> {
    let mut xml = String::from("<Delete>");
    for i in 0..objects {
        xml.push_str(&format!("<Object><Key>k{i}</Key></Object>"));
    }
    xml.push_str("</Delete>");
    xml.into_bytes()
}

fn complete_body(parts: usize) -> Vec<u8> {
    let mut xml = String::from("<CompleteMultipartUpload>");
    for i in 1..=parts {
        xml.push_str(&format!(
            "<Part><PartNumber>{i}</PartNumber><ETag>\"e\"</ETag></Part>"
        ));
    }
    xml.push_str("</CompleteMultipartUpload>");
    xml.into_bytes()
}

#[test]
fn delete_objects_is_bounded_at_1000_keys() {
    assert_eq!(
        Delete::parse(&delete_body(1000)).unwrap().objects.len(),
        1000
    );
    let err = Delete::parse(&delete_body(1001)).unwrap_err();
    assert_eq!(
        err,
        XmlParseError::TooManyEntries {
            element: "Object",
            limit: MAX_DELETE_OBJECTS
        }
    );
    assert_eq!(err.s3_code(), "MalformedXML");
    assert!(err.to_string().contains("1000"));
}

#[test]
fn complete_multipart_upload_is_bounded_at_10000_parts() {
    assert_eq!(
        CompleteMultipartUpload::parse(&complete_body(10_000))
            .unwrap()
            .parts
            .len(),
        10_000
    );
    assert!(matches!(
        CompleteMultipartUpload::parse(&complete_body(10_001)),
        Err(XmlParseError::TooManyEntries {
            element: "Part",
            limit: 10_000
        })
    ));
}

#[test]
fn empty_or_incomplete_requests_are_rejected() {
    assert!(matches!(
        Delete::parse(b"<Delete><Quiet>true</Quiet></Delete>"),
        Err(XmlParseError::MissingElement {
            element: "Object",
            ..
        })
    ));
    assert!(matches!(
        Delete::parse(b"<Delete><Object><VersionId>v</VersionId></Object></Delete>"),
        Err(XmlParseError::MissingElement { element: "Key", .. })
    ));
    assert!(matches!(
        CompleteMultipartUpload::parse(b"<CompleteMultipartUpload/>"),
        Err(XmlParseError::MissingElement {
            element: "Part",
            ..
        })
    ));
    assert!(matches!(
        CompleteMultipartUpload::parse(
            b"<CompleteMultipartUpload><Part><ETag>x</ETag></Part></CompleteMultipartUpload>"
        ),
        Err(XmlParseError::MissingElement {
            element: "PartNumber",
            ..
        })
    ));
    assert!(matches!(
        CompleteMultipartUpload::parse(
            b"<CompleteMultipartUpload><Part><PartNumber>-1</PartNumber><ETag>x</ETag></Part></CompleteMultipartUpload>"
        ),
        Err(XmlParseError::InvalidValue { element: "PartNumber", .. })
    ));
    assert!(matches!(
        CompleteMultipartUpload::parse(
            b"<CompleteMultipartUpload><Part><PartNumber>99999999999</PartNumber><ETag>x</ETag></Part></CompleteMultipartUpload>"
        ),
        Err(XmlParseError::InvalidValue { element: "PartNumber", .. })
    ));
    assert!(matches!(
        Delete::parse(b"<Delete><Quiet>yes</Quiet><Object><Key>k</Key></Object></Delete>"),
        Err(XmlParseError::InvalidValue {
            element: "Quiet",
            ..
        })
    ));
    assert!(matches!(
        ErrorDocument::parse(b"<Error><Message>m</Message></Error>"),
        Err(XmlParseError::MissingElement {
            element: "Code",
            ..
        })
    ));
}

#[test]
fn unknown_elements_and_whitespace_are_tolerated() {
    let xml = br#"
<?xml version="1.0" encoding="UTF-8"?>
<!-- a comment -->
<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/" xmlns:x="urn:future">
  <x:Future><Deeper><Deepest attr="1">text</Deepest></Deeper></x:Future>
  <Object>
    <Key>a</Key>
    <ETag>"added in a future API version"</ETag>
    <Unknown/>
  </Object>
  <Quiet> true </Quiet>
  <?processing instruction?>
</Delete>
"#;
    let parsed = Delete::parse(xml).unwrap();
    assert!(parsed.quiet);
    assert_eq!(parsed.objects[0].key, "a");
}

#[test]
fn wrong_documents_and_broken_xml_are_clear_errors() {
    assert!(matches!(
        Delete::parse(b"<DeleteResult/>"),
        Err(XmlParseError::WrongRoot {
            expected: "Delete",
            ..
        })
    ));
    for (input, what) in [
        (&b""[..], "empty"),
        (b"   ", "blank"),
        (b"<Delete>", "unclosed"),
        (b"<Delete><Object><Key>a</Key></Object>", "truncated"),
        (b"<Delete><Object><Key>a</Object></Delete>", "mismatched end"),
        (b"<Delete><Object><Key>a &amp b</Key></Object></Delete>", "bad entity"),
        (b"<Delete><Object><Key>&xxe;</Key></Object></Delete>", "undefined entity"),
        (b"<Delete></Delete><Delete></Delete>", "two roots"),
        (b"<Delete><Object><Key>\xff\xfe</Key></Object></Delete>", "not UTF-8"),
        (b"<Delete><Object><Key><![CDATA[a</Key></Object></Delete>", "unclosed CDATA"),
        (b"<?xml version=\"1.0\"?><!DOCTYPE Delete [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;\">]><Delete><Object><Key>&b;</Key></Object></Delete>", "DOCTYPE"),
    ] {
        let err = Delete::parse(input).expect_err(what);
        assert_eq!(err.s3_code(), "MalformedXML");
        assert!(!err.to_string().is_empty(), "{what}");
    }
    assert_eq!(
        Delete::parse(b"<!DOCTYPE Delete SYSTEM \"file:///etc/passwd\"><Delete/>"),
        Err(XmlParseError::Doctype)
    );
}

#[test]
fn deep_nesting_is_refused_without_recursion() {
    let depth = 100_000;
    let mut xml = String::from("<Delete><Object><Key>k</Key></Object>");
    xml.push_str(&"<a>".repeat(depth));
    xml.push_str(&"</a>".repeat(depth));
    xml.push_str("</Delete>");
    assert_eq!(
        Delete::parse(xml.as_bytes()),
        Err(XmlParseError::TooDeep { limit: MAX_DEPTH })
    );
}

#[test]
fn oversized_text_is_refused() {
    let xml = format!(
        "<Delete><Object><Key>{}</Key></Object></Delete>",
        "k".repeat(MAX_TEXT_LEN + 1)
    );
    assert!(matches!(
        Delete::parse(xml.as_bytes()),
        Err(XmlParseError::TextTooLong { element: "Key", .. })
    ));
}

#[test]
fn every_truncation_of_a_valid_document_is_an_error_not_a_panic() {
    let doc = CompleteMultipartUploadResult {
        location: "http://h/b/k".into(),
        bucket: "b".into(),
        key: "k & <k>".into(),
        etag: "\"e-2\"".into(),
        ..Default::default()
    }
    .to_vec()
    .unwrap();
    assert!(CompleteMultipartUploadResult::parse(&doc).is_ok());
    for cut in 0..doc.len() {
        assert!(
            CompleteMultipartUploadResult::parse(&doc[..cut]).is_err(),
            "prefix of {cut} bytes parsed"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Arbitrary bytes never panic any parser.
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = ListBucketResult::parse(&bytes);
        let _ = Delete::parse(&bytes);
        let _ = CompleteMultipartUpload::parse(&bytes);
        let _ = ErrorDocument::parse(&bytes);
        let _ = ListMultipartUploadsResult::parse(&bytes);
    }

    /// Random mutations of a valid listing never panic.
    #[test]
    fn mutated_documents_never_panic(
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8)
    ) {
        let mut doc = br#"<ListBucketResult><Name>b</Name><Prefix/><KeyCount>1</KeyCount><MaxKeys>1</MaxKeys><EncodingType>url</EncodingType><IsTruncated>false</IsTruncated><Contents><Key>a%20b</Key><LastModified>2009-10-12T17:50:30.000Z</LastModified><ETag>&quot;x&quot;</ETag><Size>1</Size></Contents><CommonPrefixes><Prefix>p/</Prefix></CommonPrefixes></ListBucketResult>"#.to_vec();
        for (pos, byte) in edits {
            let len = doc.len();
            doc[pos % len] = byte;
        }
        let _ = ListBucketResult::parse(&doc);
    }
}
