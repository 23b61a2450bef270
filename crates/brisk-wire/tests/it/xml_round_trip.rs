//! Every document written then parsed gives back the same value.

use brisk_wire::checksum::{ChecksumAlgorithm, ChecksumType};
use brisk_wire::xml::*;
use time::macros::datetime;

fn round_trip<T: XmlDocument + PartialEq + std::fmt::Debug>(value: &T) -> String {
    let bytes = value.to_vec().unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(
        text.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"),
        "{text}"
    );
    assert_eq!(&T::parse(&bytes).unwrap(), value, "{text}");
    text
}

fn owner() -> Owner {
    Owner {
        id: "75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a".into(),
        display_name: Some("Ann & Bob <ops>".into()),
    }
}

fn entry(key: &str) -> ObjectEntry {
    ObjectEntry {
        key: key.into(),
        last_modified: datetime!(2009-10-12 17:50:30.123 UTC),
        etag: "\"fba9dede5f27731c9771645a39863328\"".into(),
        size: 434_234,
        storage_class: Some("STANDARD".into()),
        checksum_algorithm: Some(ChecksumAlgorithm::Crc64Nvme),
        checksum_type: Some(ChecksumType::FullObject),
        owner: None,
    }
}

#[test]
fn list_objects_v2() {
    let mut owned = entry("photos/2006/Jan & Feb <\"sample\">.jpg");
    owned.owner = Some(owner());
    let result = ListBucketResult {
        header: ListBucketHeader {
            name: "bucket".into(),
            prefix: "photos/".into(),
            delimiter: Some("/".into()),
            max_keys: 1000,
            is_truncated: true,
            encoding_type: None,
            version: ListVersion::V2 {
                key_count: 3,
                continuation_token: Some("1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=".into()),
                next_continuation_token: Some("next token".into()),
                start_after: Some("photos/2005/".into()),
            },
        },
        contents: vec![entry("photos/a.jpg"), owned],
        common_prefixes: vec!["photos/2006/".into()],
    };
    let text = round_trip(&result);
    assert!(text.contains("<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"));
    assert!(text.contains("<LastModified>2009-10-12T17:50:30.123Z</LastModified>"));
    assert!(text.contains("<ETag>&quot;fba9dede5f27731c9771645a39863328&quot;</ETag>"));
}

#[test]
fn list_objects_v1_with_url_encoding() {
    let result = ListBucketResult {
        header: ListBucketHeader {
            name: "bucket".into(),
            prefix: "a b/".into(),
            delimiter: Some("/".into()),
            max_keys: 2,
            is_truncated: true,
            encoding_type: Some(EncodingType::Url),
            version: ListVersion::V1 {
                marker: "a b/\u{1}".into(),
                next_marker: Some("a b/z+".into()),
            },
        },
        contents: vec![entry("a b/\u{1}\u{2}.txt"), entry("a b/한글")],
        common_prefixes: vec!["a b/c\u{7f}/".into()],
    };
    let text = round_trip(&result);
    assert!(text.contains("<Key>a%20b/%01%02.txt</Key>"), "{text}");
    assert!(text.contains("<EncodingType>url</EncodingType>"));
    assert!(text.contains("<NextMarker>a%20b/z%2B</NextMarker>"));
}

#[test]
fn empty_listing() {
    let result = ListBucketResult {
        header: ListBucketHeader {
            name: "b".into(),
            prefix: String::new(),
            delimiter: None,
            max_keys: 1000,
            is_truncated: false,
            encoding_type: None,
            version: ListVersion::V2 {
                key_count: 0,
                continuation_token: None,
                next_continuation_token: None,
                start_after: None,
            },
        },
        contents: vec![],
        common_prefixes: vec![],
    };
    round_trip(&result);
}

#[test]
fn list_buckets() {
    round_trip(&ListAllMyBucketsResult {
        owner: Some(owner()),
        buckets: vec![
            BucketEntry {
                name: "examplebucket".into(),
                creation_date: datetime!(2019-12-11 23:32:47 UTC),
                bucket_region: Some("us-east-1".into()),
            },
            BucketEntry {
                name: "other".into(),
                creation_date: datetime!(2020-01-01 00:00:00.001 UTC),
                bucket_region: None,
            },
        ],
        continuation_token: Some("tok".into()),
        prefix: Some("ex".into()),
    });
    round_trip(&ListAllMyBucketsResult::default());
}

#[test]
fn bucket_configuration_and_location() {
    round_trip(&CreateBucketConfiguration {
        location_constraint: Some("eu-west-1".into()),
    });
    round_trip(&CreateBucketConfiguration::default());
    let text = round_trip(&LocationConstraint {
        region: Some("eu-west-1".into()),
    });
    assert!(text.ends_with(
        "<LocationConstraint xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">eu-west-1</LocationConstraint>"
    ));
    round_trip(&LocationConstraint { region: None });
}

#[test]
fn multipart_documents() {
    round_trip(&InitiateMultipartUploadResult {
        bucket: "example-bucket".into(),
        key: "example-object".into(),
        upload_id: "VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA".into(),
    });
    let mut checksums = ChecksumFields::default();
    checksums.set(ChecksumAlgorithm::Crc32, "y/Q5Jg==");
    checksums.set(
        ChecksumAlgorithm::Sha256,
        "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
    );
    round_trip(&CompleteMultipartUpload {
        parts: vec![
            CompletedPart {
                part_number: 1,
                etag: "\"a54357aff0632cce46d942af68356b38\"".into(),
                checksums: checksums.clone(),
            },
            CompletedPart {
                part_number: 10_000,
                etag: "\"0c78aef83f66abc1fa1e8477f296d394\"".into(),
                checksums: ChecksumFields::default(),
            },
        ],
    });
    let mut composite = ChecksumFields::default();
    composite.set(ChecksumAlgorithm::Crc32, "pm11MA==-2");
    round_trip(&CompleteMultipartUploadResult {
        location: "http://Example-Bucket.s3.amazonaws.com/Example-Object".into(),
        bucket: "Example-Bucket".into(),
        key: "Example-Object".into(),
        etag: "\"3858f62230ac3c915f300c664312c11f-9\"".into(),
        checksums: composite,
        checksum_type: Some(ChecksumType::Composite),
    });
    round_trip(&ListPartsResult {
        bucket: "example-bucket".into(),
        key: "example-object".into(),
        upload_id: "XXBsb2FkIElEIGZvciBlbHZpbmcncyVcdS1tb3ZpZS5tMnRzEEEwbG9hZA".into(),
        part_number_marker: Some(1),
        next_part_number_marker: Some(3),
        max_parts: 2,
        is_truncated: true,
        initiator: Some(owner()),
        owner: Some(Owner {
            id: "o".into(),
            display_name: None,
        }),
        storage_class: Some("STANDARD".into()),
        checksum_algorithm: Some(ChecksumAlgorithm::Crc32),
        checksum_type: Some(ChecksumType::Composite),
        parts: vec![PartEntry {
            part_number: 2,
            last_modified: datetime!(2010-11-10 20:48:34 UTC),
            etag: "\"7778aef83f66abc1fa1e8477f296d394\"".into(),
            size: 10_485_760,
            checksums,
        }],
    });
    round_trip(&ListMultipartUploadsResult {
        bucket: "bucket".into(),
        key_marker: "my movie".into(),
        upload_id_marker: "YW55IGlkZWEgd2h5".into(),
        next_key_marker: Some("my-movie.m2ts".into()),
        next_upload_id_marker: Some("QUpfZmlsZQ".into()),
        prefix: Some("my \u{1}".into()),
        delimiter: Some("/".into()),
        max_uploads: 3,
        is_truncated: true,
        encoding_type: Some(EncodingType::Url),
        uploads: vec![UploadEntry {
            key: "my divisor\u{2}".into(),
            upload_id: "XMgbGlrZSBlbHZpbmcncyBub3QgaGF2aW5nIG11Y2ggbHVjaw".into(),
            initiated: datetime!(2010-11-26 19:24:17 UTC),
            storage_class: Some("STANDARD".into()),
            initiator: Some(owner()),
            owner: Some(owner()),
            checksum_algorithm: Some(ChecksumAlgorithm::Crc64Nvme),
            checksum_type: Some(ChecksumType::FullObject),
        }],
        common_prefixes: vec!["my \u{3}/".into()],
    });
    round_trip(&ListMultipartUploadsResult::default());
}

#[test]
fn copy_results() {
    let mut checksums = ChecksumFields::default();
    checksums.set(ChecksumAlgorithm::Crc64Nvme, "rosUhgp5mIg=");
    round_trip(&CopyObjectResult {
        etag: "\"9b2cf535f27731c974343645a3985328\"".into(),
        last_modified: datetime!(2009-10-28 22:32:00 UTC),
        checksums: checksums.clone(),
        checksum_type: Some(ChecksumType::FullObject),
    });
    round_trip(&CopyPartResult {
        etag: "\"b20b0f9e2e7a8dc2b4b1c6f5d3e4a1c0\"".into(),
        last_modified: datetime!(2011-04-11 20:34:56 UTC),
        checksums,
    });
}

#[test]
fn delete_documents() {
    round_trip(&Delete {
        quiet: true,
        objects: vec![
            ObjectIdentifier {
                key: "sample1.txt".into(),
                version_id: None,
            },
            ObjectIdentifier {
                key: "it's <2> & \"more\"".into(),
                version_id: Some("OYcLXagmS.WaD..oyH4KRguB95_YhLs7".into()),
            },
        ],
    });
    round_trip(&DeleteResult {
        deleted: vec![DeletedObject {
            key: "sample1.txt".into(),
            version_id: Some("v1".into()),
            delete_marker: Some(true),
            delete_marker_version_id: Some("dm1".into()),
        }],
        errors: vec![DeleteError {
            key: "sample2.txt".into(),
            version_id: None,
            code: "AccessDenied".into(),
            message: "Access Denied".into(),
        }],
    });
    round_trip(&DeleteResult::default());
}

#[test]
fn error_document() {
    let text = round_trip(&ErrorDocument {
        code: "SignatureDoesNotMatch".into(),
        message: "The request signature we calculated does not match the signature you provided."
            .into(),
        resource: Some("/bucket/key".into()),
        request_id: Some("4442587FB7D0A2F9".into()),
        host_id: None,
        extra: vec![
            ("AWSAccessKeyId".into(), "AKIAIOSFODNN7EXAMPLE".into()),
            (
                "StringToSign".into(),
                "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\nabc".into(),
            ),
            (
                "CanonicalRequest".into(),
                "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n\nhost;range\ne3b0".into(),
            ),
        ],
    });
    assert!(
        text.contains("<Error><Code>"),
        "Error has no namespace: {text}"
    );
}
