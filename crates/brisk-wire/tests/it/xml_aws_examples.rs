//! Parsing documents shaped like the examples of the AWS S3 API reference (ListObjectsV2, ListObjects,
//! ListBuckets, CreateMultipartUpload, CompleteMultipartUpload, ListParts, ListMultipartUploads,
//! CopyObject, DeleteObjects, GetBucketLocation, Error), pretty-printed with whitespace as the reference
//! shows them.

use brisk_wire::xml::*;
use time::macros::datetime;

#[test]
fn list_objects_v2_example() {
    let xml = br#"<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
    <Name>bucket</Name>
    <Prefix/>
    <KeyCount>205</KeyCount>
    <MaxKeys>1000</MaxKeys>
    <IsTruncated>false</IsTruncated>
    <Contents>
        <Key>my-image.jpg</Key>
        <LastModified>2009-10-12T17:50:30.000Z</LastModified>
        <ETag>"fba9dede5f27731c9771645a39863328"</ETag>
        <Size>434234</Size>
        <StorageClass>STANDARD</StorageClass>
    </Contents>
    <Contents>
        <Key>my-third-image.jpg</Key>
        <LastModified>2009-10-12T17:50:30.000Z</LastModified>
        <ETag>&quot;1b2cf535f27731c974343645a3985328&quot;</ETag>
        <Size>64994</Size>
        <StorageClass>STANDARD_IA</StorageClass>
    </Contents>
</ListBucketResult>"#;
    let result = ListBucketResult::parse(xml).unwrap();
    assert_eq!(result.header.name, "bucket");
    assert_eq!(result.header.prefix, "");
    assert_eq!(result.header.max_keys, 1000);
    assert!(!result.header.is_truncated);
    assert!(matches!(
        result.header.version,
        ListVersion::V2 { key_count: 205, .. }
    ));
    assert_eq!(result.contents.len(), 2);
    let first = &result.contents[0];
    assert_eq!(first.key, "my-image.jpg");
    assert_eq!(first.last_modified, datetime!(2009-10-12 17:50:30 UTC));
    assert_eq!(first.etag, "\"fba9dede5f27731c9771645a39863328\"");
    assert_eq!(first.size, 434_234);
    assert_eq!(
        result.contents[1].etag,
        "\"1b2cf535f27731c974343645a3985328\""
    );
    assert_eq!(
        result.contents[1].storage_class.as_deref(),
        Some("STANDARD_IA")
    );
}

#[test]
fn list_objects_v2_with_delimiter_and_token_example() {
    let xml = br#"<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>example-bucket</Name>
  <Prefix>photos/2006/</Prefix>
  <ContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</ContinuationToken>
  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwN=</NextContinuationToken>
  <KeyCount>2</KeyCount>
  <MaxKeys>2</MaxKeys>
  <Delimiter>/</Delimiter>
  <IsTruncated>true</IsTruncated>
  <CommonPrefixes>
    <Prefix>photos/2006/February/</Prefix>
  </CommonPrefixes>
  <CommonPrefixes>
    <Prefix>photos/2006/January/</Prefix>
  </CommonPrefixes>
</ListBucketResult>"#;
    let result = ListBucketResult::parse(xml).unwrap();
    assert_eq!(result.header.delimiter.as_deref(), Some("/"));
    assert_eq!(
        result.common_prefixes,
        ["photos/2006/February/", "photos/2006/January/"]
    );
    match &result.header.version {
        ListVersion::V2 {
            next_continuation_token: Some(token),
            ..
        } => assert!(token.ends_with("N=")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn list_objects_v1_example_with_owner() {
    let xml = br#"<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
    <Name>bucket</Name>
    <Prefix/>
    <Marker/>
    <MaxKeys>1000</MaxKeys>
    <IsTruncated>false</IsTruncated>
    <Contents>
        <Key>my-image.jpg</Key>
        <LastModified>2009-10-12T17:50:30.000Z</LastModified>
        <ETag>&quot;fba9dede5f27731c9771645a39863328&quot;</ETag>
        <Size>434234</Size>
        <StorageClass>STANDARD</StorageClass>
        <Owner>
            <ID>75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a</ID>
            <DisplayName>mtd@amazon.com</DisplayName>
        </Owner>
    </Contents>
</ListBucketResult>"#;
    let result = ListBucketResult::parse(xml).unwrap();
    assert_eq!(
        result.header.version,
        ListVersion::V1 {
            marker: String::new(),
            next_marker: None
        }
    );
    let owner = result.contents[0].owner.as_ref().unwrap();
    assert_eq!(owner.display_name.as_deref(), Some("mtd@amazon.com"));
}

#[test]
fn list_buckets_example() {
    let xml = br#"<?xml version="1.0" encoding="UTF-8"?>
<ListAllMyBucketsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Owner>
    <ID>bcaf1ffd86f461ca5fb16fd081034f</ID>
    <DisplayName>webfile</DisplayName>
  </Owner>
  <Buckets>
    <Bucket>
      <Name>quotes</Name>
      <CreationDate>2006-02-03T16:45:09.000Z</CreationDate>
    </Bucket>
    <Bucket>
      <Name>samples</Name>
      <CreationDate>2006-02-03T16:41:58.000Z</CreationDate>
      <BucketRegion>us-west-2</BucketRegion>
    </Bucket>
  </Buckets>
</ListAllMyBucketsResult>"#;
    let result = ListAllMyBucketsResult::parse(xml).unwrap();
    assert_eq!(result.owner.unwrap().id, "bcaf1ffd86f461ca5fb16fd081034f");
    let names: Vec<_> = result.buckets.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["quotes", "samples"]);
    assert_eq!(
        result.buckets[1].creation_date,
        datetime!(2006-02-03 16:41:58 UTC)
    );
    assert_eq!(
        result.buckets[1].bucket_region.as_deref(),
        Some("us-west-2")
    );
}

#[test]
fn multipart_examples() {
    let initiate = br#"<?xml version="1.0" encoding="UTF-8"?>
<InitiateMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Bucket>example-bucket</Bucket>
  <Key>example-object</Key>
  <UploadId>VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA</UploadId>
</InitiateMultipartUploadResult>"#;
    let initiate = InitiateMultipartUploadResult::parse(initiate).unwrap();
    assert_eq!(
        initiate.upload_id,
        "VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA"
    );

    let complete = br#"<CompleteMultipartUpload>
  <Part>
    <PartNumber>1</PartNumber>
    <ETag>"a54357aff0632cce46d942af68356b38"</ETag>
  </Part>
  <Part>
    <PartNumber>2</PartNumber>
    <ETag>"0c78aef83f66abc1fa1e8477f296d394"</ETag>
    <ChecksumCRC32>y/Q5Jg==</ChecksumCRC32>
  </Part>
  <Part>
    <PartNumber>3</PartNumber>
    <ETag>"acbd18db4cc2f85cedef654fccc4a4d8"</ETag>
  </Part>
</CompleteMultipartUpload>"#;
    let complete = CompleteMultipartUpload::parse(complete).unwrap();
    let numbers: Vec<u32> = complete.parts.iter().map(|p| p.part_number).collect();
    assert_eq!(numbers, [1, 2, 3]);
    assert_eq!(
        complete.parts[0].etag,
        "\"a54357aff0632cce46d942af68356b38\""
    );
    assert_eq!(
        complete.parts[1].checksums.crc32.as_deref(),
        Some("y/Q5Jg==")
    );

    let result = br#"<?xml version="1.0" encoding="UTF-8"?>
<CompleteMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Location>http://Example-Bucket.s3.Region.amazonaws.com/Example-Object</Location>
  <Bucket>Example-Bucket</Bucket>
  <Key>Example-Object</Key>
  <ETag>"3858f62230ac3c915f300c664312c11f-9"</ETag>
</CompleteMultipartUploadResult>"#;
    let result = CompleteMultipartUploadResult::parse(result).unwrap();
    assert_eq!(result.etag, "\"3858f62230ac3c915f300c664312c11f-9\"");
    assert_eq!(result.key, "Example-Object");

    let parts = br#"<?xml version="1.0" encoding="UTF-8"?>
<ListPartsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Bucket>example-bucket</Bucket>
  <Key>example-object</Key>
  <UploadId>XXBsb2FkIElEIGZvciBlbHZpbmcncyVcdS1tb3ZpZS5tMnRzEEEwbG9hZA</UploadId>
  <Initiator>
      <ID>arn:aws:iam::111122223333:user/some-user-11116a31-17b5-4fb7-9df5-b288870f11xx</ID>
      <DisplayName>umat-user-11116a31-17b5-4fb7-9df5-b288870f11xx</DisplayName>
  </Initiator>
  <Owner>
    <ID>75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a</ID>
    <DisplayName>someName</DisplayName>
  </Owner>
  <StorageClass>STANDARD</StorageClass>
  <PartNumberMarker>1</PartNumberMarker>
  <NextPartNumberMarker>3</NextPartNumberMarker>
  <MaxParts>2</MaxParts>
  <IsTruncated>true</IsTruncated>
  <Part>
    <PartNumber>2</PartNumber>
    <LastModified>2010-11-10T20:48:34.000Z</LastModified>
    <ETag>"7778aef83f66abc1fa1e8477f296d394"</ETag>
    <Size>10485760</Size>
  </Part>
  <Part>
    <PartNumber>3</PartNumber>
    <LastModified>2010-11-10T20:48:33.000Z</LastModified>
    <ETag>"aaaa18db4cc2f85cedef654fccc4a4x8"</ETag>
    <Size>10485760</Size>
  </Part>
</ListPartsResult>"#;
    let parts = ListPartsResult::parse(parts).unwrap();
    assert_eq!(parts.next_part_number_marker, Some(3));
    assert_eq!(parts.parts.len(), 2);
    assert_eq!(parts.parts[0].size, 10_485_760);
    assert!(parts.initiator.unwrap().id.starts_with("arn:aws:iam::"));

    let uploads = br#"<?xml version="1.0" encoding="UTF-8"?>
<ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Bucket>bucket</Bucket>
  <KeyMarker></KeyMarker>
  <UploadIdMarker></UploadIdMarker>
  <NextKeyMarker>my-movie.m2ts</NextKeyMarker>
  <NextUploadIdMarker>YW55IGlkZWEgd2h5IGVsdmluZydzIHVwbG9hZCBmYWlsZWQ</NextUploadIdMarker>
  <MaxUploads>3</MaxUploads>
  <IsTruncated>true</IsTruncated>
  <Upload>
    <Key>my-divisor</Key>
    <UploadId>XMgbGlrZSBlbHZpbmcncyBub3QgaGF2aW5nIG11Y2ggbHVjaw</UploadId>
    <Initiator>
      <ID>arn:aws:iam::111122223333:user/user1-11111a31-17b5-4fb7-9df5-b111111f13de</ID>
      <DisplayName>user1-11111a31-17b5-4fb7-9df5-b111111f13de</DisplayName>
    </Initiator>
    <Owner>
      <ID>75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a</ID>
      <DisplayName>OwnerDisplayName</DisplayName>
    </Owner>
    <StorageClass>STANDARD</StorageClass>
    <Initiated>2010-11-10T20:48:33.000Z</Initiated>
  </Upload>
</ListMultipartUploadsResult>"#;
    let uploads = ListMultipartUploadsResult::parse(uploads).unwrap();
    assert_eq!(uploads.uploads[0].key, "my-divisor");
    assert_eq!(
        uploads.uploads[0].initiated,
        datetime!(2010-11-10 20:48:33 UTC)
    );
    assert_eq!(uploads.next_key_marker.as_deref(), Some("my-movie.m2ts"));
}

#[test]
fn copy_object_example() {
    let xml = br#"<CopyObjectResult>
   <LastModified>2009-10-28T22:32:00</LastModified>
   <ETag>"9b2cf535f27731c974343645a3985328"</ETag>
</CopyObjectResult>"#;
    // The reference's example omits the zone designator; S3 only uses UTC, so it is read as UTC.
    let result = CopyObjectResult::parse(xml).unwrap();
    assert_eq!(result.last_modified, datetime!(2009-10-28 22:32:00 UTC));
    let xml = br#"<CopyObjectResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
   <LastModified>2009-10-28T22:32:00.000Z</LastModified>
   <ETag>"9b2cf535f27731c974343645a3985328"</ETag>
</CopyObjectResult>"#;
    let result = CopyObjectResult::parse(xml).unwrap();
    assert_eq!(result.etag, "\"9b2cf535f27731c974343645a3985328\"");
    assert_eq!(result.last_modified, datetime!(2009-10-28 22:32:00 UTC));
}

#[test]
fn delete_objects_examples() {
    let request = br#"<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Object>
    <Key>sample1.txt</Key>
  </Object>
  <Object>
    <Key>sample2.txt</Key>
    <VersionId>OYcLXagmS.WaD..oyH4KRguB95_YhLs7</VersionId>
  </Object>
  <Quiet>true</Quiet>
</Delete>"#;
    let request = Delete::parse(request).unwrap();
    assert!(request.quiet);
    assert_eq!(request.objects[0].key, "sample1.txt");
    assert_eq!(
        request.objects[1].version_id.as_deref(),
        Some("OYcLXagmS.WaD..oyH4KRguB95_YhLs7")
    );

    let response = br#"<?xml version="1.0" encoding="UTF-8"?>
<DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Deleted>
    <Key>sample1.txt</Key>
  </Deleted>
  <Deleted>
    <Key>SampleDocument.txt</Key>
    <DeleteMarker>true</DeleteMarker>
    <DeleteMarkerVersionId>NeQt5xeFTfgPJD8B4CGWnkSLtluMr11s</DeleteMarkerVersionId>
  </Deleted>
  <Error>
    <Key>sample2.txt</Key>
    <Code>AccessDenied</Code>
    <Message>Access Denied</Message>
  </Error>
</DeleteResult>"#;
    let response = DeleteResult::parse(response).unwrap();
    assert_eq!(response.deleted.len(), 2);
    assert_eq!(response.deleted[1].delete_marker, Some(true));
    assert_eq!(response.errors[0].code, "AccessDenied");
}

#[test]
fn bucket_location_examples() {
    let location = LocationConstraint::parse(
        br#"<?xml version="1.0" encoding="UTF-8"?>
<LocationConstraint xmlns="http://s3.amazonaws.com/doc/2006-03-01/">Europe</LocationConstraint>"#,
    )
    .unwrap();
    assert_eq!(location.region.as_deref(), Some("Europe"));
    let us_east_1 = LocationConstraint::parse(
        br#"<LocationConstraint xmlns="http://s3.amazonaws.com/doc/2006-03-01/"/>"#,
    )
    .unwrap();
    assert_eq!(us_east_1.region, None);
    let config = CreateBucketConfiguration::parse(
        br#"<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <LocationConstraint>eu-west-1</LocationConstraint>
</CreateBucketConfiguration>"#,
    )
    .unwrap();
    assert_eq!(config.location_constraint.as_deref(), Some("eu-west-1"));
}

#[test]
fn error_examples() {
    let no_such_key = ErrorDocument::parse(
        br#"<?xml version="1.0" encoding="UTF-8"?>
<Error>
  <Code>NoSuchKey</Code>
  <Message>The resource you requested does not exist</Message>
  <Resource>/mybucket/myfoto.jpg</Resource>
  <RequestId>4442587FB7D0A2F9</RequestId>
</Error>"#,
    )
    .unwrap();
    assert_eq!(no_such_key.code, "NoSuchKey");
    assert_eq!(
        no_such_key.resource.as_deref(),
        Some("/mybucket/myfoto.jpg")
    );
    assert_eq!(no_such_key.request_id.as_deref(), Some("4442587FB7D0A2F9"));
    assert!(no_such_key.extra.is_empty());

    let signature = ErrorDocument::parse(
        b"<Error><Code>SignatureDoesNotMatch</Code>\
<Message>The request signature we calculated does not match the signature you provided. Check your key and signing method.</Message>\
<AWSAccessKeyId>AKIAIOSFODNN7EXAMPLE</AWSAccessKeyId>\
<StringToSign>AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972</StringToSign>\
<SignatureProvided>f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41</SignatureProvided>\
<StringToSignBytes>41 57 53 34</StringToSignBytes>\
<CanonicalRequest>GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n\nhost;range\nUNSIGNED-PAYLOAD</CanonicalRequest>\
<CanonicalRequestBytes>47 45 54</CanonicalRequestBytes>\
<RequestId>8D8C0D6F1A2B3C4D</RequestId><HostId>aGVsbG8=</HostId></Error>",
    )
    .unwrap();
    assert_eq!(signature.code, "SignatureDoesNotMatch");
    assert_eq!(
        signature.field("AWSAccessKeyId"),
        Some("AKIAIOSFODNN7EXAMPLE")
    );
    assert!(
        signature
            .field("CanonicalRequest")
            .unwrap()
            .ends_with("UNSIGNED-PAYLOAD")
    );
    assert!(
        signature
            .field("StringToSign")
            .unwrap()
            .contains("\n20130524T000000Z\n")
    );
    assert_eq!(signature.host_id.as_deref(), Some("aGVsbG8="));
    assert_eq!(signature.extra.len(), 6);
}
