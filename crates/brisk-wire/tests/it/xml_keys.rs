//! Keys with markup characters, quotes, unicode and control characters, with and without
//! `encoding-type=url`.

use brisk_wire::xml::*;
use proptest::prelude::*;
use time::macros::datetime;

fn listing(keys: &[&str], encoding_type: Option<EncodingType>) -> ListBucketResult {
    ListBucketResult {
        header: ListBucketHeader {
            name: "bucket".into(),
            prefix: String::new(),
            delimiter: None,
            max_keys: 1000,
            is_truncated: false,
            encoding_type,
            version: ListVersion::V2 {
                key_count: keys.len() as u32,
                continuation_token: None,
                next_continuation_token: None,
                start_after: None,
            },
        },
        contents: keys
            .iter()
            .map(|key| ObjectEntry {
                key: (*key).into(),
                last_modified: datetime!(2024-01-02 03:04:05.006 UTC),
                etag: "\"d41d8cd98f00b204e9800998ecf8427e\"".into(),
                size: 0,
                storage_class: None,
                checksum_algorithm: None,
                checksum_type: None,
                owner: None,
            })
            .collect(),
        common_prefixes: vec![],
    }
}

const AWKWARD: [&str; 8] = [
    "a&b<c>d\"e'f",
    "&amp; literally",
    "]]> and <![CDATA[",
    "日本語/キー/🎉.txt",
    "tab\there\nnewline\r\ncrlf\rcr",
    "  leading and trailing  ",
    "100% + sign",
    "\u{FFFD}\u{E000}\u{10FFFF}",
];

#[test]
fn awkward_keys_round_trip_escaped() {
    let result = listing(&AWKWARD, None);
    let xml = result.to_vec().unwrap();
    assert_eq!(ListBucketResult::parse(&xml).unwrap(), result);
    let text = String::from_utf8(xml).unwrap();
    assert!(text.contains("<Key>a&amp;b&lt;c&gt;d&quot;e&apos;f</Key>"));
    assert!(
        text.contains("crlf&#13;"),
        "CR must be a character reference: {text}"
    );
}

#[test]
fn awkward_keys_round_trip_url_encoded() {
    let result = listing(&AWKWARD, Some(EncodingType::Url));
    let xml = result.to_vec().unwrap();
    assert_eq!(ListBucketResult::parse(&xml).unwrap(), result);
    let text = String::from_utf8(xml).unwrap();
    assert!(text.contains("<Key>a%26b%3Cc%3Ed%22e%27f</Key>"), "{text}");
    assert!(text.contains("<Key>%E6%97%A5%E6%9C%AC%E8%AA%9E/"), "{text}");
}

#[test]
fn control_characters_need_url_encoding() {
    for key in ["\u{0}", "bell\u{7}", "esc\u{1B}[0m", "\u{FFFF}"] {
        let err = listing(&[key], None).to_vec().unwrap_err();
        assert!(
            matches!(
                err,
                XmlWriteError::UnrepresentableCharacter { element: "Key", .. }
            ),
            "{key:?}: {err}"
        );
        assert!(err.to_string().contains("encoding-type=url"));
        let encoded = listing(&[key], Some(EncodingType::Url));
        let xml = encoded.to_vec().unwrap();
        assert_eq!(ListBucketResult::parse(&xml).unwrap(), encoded);
    }
    // The same rule for the other documents that carry keys.
    let delete = Delete {
        quiet: false,
        objects: vec![ObjectIdentifier {
            key: "x\u{1}".into(),
            version_id: None,
        }],
    };
    assert!(delete.to_vec().is_err());
}

#[test]
fn s3_plus_for_space_decodes() {
    let xml = b"<ListBucketResult><Name>b</Name><Prefix>run+books/</Prefix><KeyCount>1</KeyCount>\
<MaxKeys>1000</MaxKeys><EncodingType>url</EncodingType><IsTruncated>false</IsTruncated>\
<Contents><Key>run+books/a%2Bb.txt</Key><LastModified>2024-01-01T00:00:00.000Z</LastModified>\
<ETag>&quot;x&quot;</ETag><Size>1</Size></Contents></ListBucketResult>";
    let parsed = ListBucketResult::parse(xml).unwrap();
    assert_eq!(parsed.header.prefix, "run books/");
    assert_eq!(parsed.contents[0].key, "run books/a+b.txt");
    let bad = String::from_utf8_lossy(xml).replace("a%2Bb", "a%2");
    assert!(matches!(
        ListBucketResult::parse(bad.as_bytes()),
        Err(XmlParseError::InvalidValue { element: "Key", .. })
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Any keys round-trip with url encoding; without it they round-trip exactly when every character is
    /// one XML can carry, and are refused otherwise.
    #[test]
    fn random_keys_round_trip(keys in proptest::collection::vec(any::<String>(), 0..20)) {
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        let encoded = listing(&keys, Some(EncodingType::Url));
        prop_assert_eq!(ListBucketResult::parse(&encoded.to_vec().unwrap()).unwrap(), encoded);

        let plain = listing(&keys, None);
        let representable = keys.iter().all(|k| k.chars().all(|c| {
            matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
        }));
        match plain.to_vec() {
            Ok(xml) => {
                prop_assert!(representable);
                prop_assert_eq!(ListBucketResult::parse(&xml).unwrap(), plain);
            }
            Err(err) => {
                prop_assert!(!representable);
                let is_unrepresentable = matches!(err, XmlWriteError::UnrepresentableCharacter { .. });
                prop_assert!(is_unrepresentable);
            }
        }
    }
}
