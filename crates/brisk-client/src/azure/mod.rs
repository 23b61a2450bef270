//! The operations whose wire form differs in Azure Blob Storage (block blobs). The public methods
//! of [`Client`] stay the same for both services; where S3 and Azure send different requests,
//! the method matches on the client's dialect and calls the S3 form in [`crate::s3`] or the
//! Azure form here:
//!
//! | operation | S3 | Azure Blob |
//! |---|---|---|
//! | one-shot write | PutObject | Put Blob (`x-ms-blob-type: BlockBlob`) |
//! | multipart write | CreateMultipartUpload, UploadPart, Complete | Put Block (`comp=block`), Put Block List |
//! | abort | AbortMultipartUpload | nothing: uncommitted blocks expire by themselves |
//! | listing | ListObjectsV2 | List Blobs (`restype=container&comp=list`, `marker`) |
//! | delete | DeleteObject, DeleteObjects | Delete Blob, one per blob |
//! | copy | CopyObject, UploadPartCopy | Copy Blob (`x-ms-copy-source`), waited for when pending |
//! | buckets | Create/Delete/ListBuckets | Create/Delete Container, List Containers |
//! | presigned URL | SigV4 query | service SAS ([`Client::presign`]) |
//!
//! Reads (whole, ranged, parallel, batch), HEAD, retries and resumed reads are the engine's and
//! are not here: a GET with `Range` and `If-Match` is the same request in both services.
//!
//! Integrity: every Put Blob and Put Block carries `x-ms-content-crc64`, Azure's CRC-64 of the
//! bytes sent (the same function as S3's CRC-64/NVME, little-endian on the wire), computed while
//! the part was read; the service refuses a block whose bytes changed on the way.

mod blobs;
mod containers;
mod list;
mod sas;

pub(crate) use list::list_page;

/// Azure's CRC-64 header value from the CRC-64/NVME value in S3's form (base64 of the big-endian
/// bytes), which is what the upload path computes while it reads a part.
pub(crate) fn crc64_from_s3_base64(s3_form: &str) -> Option<String> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s3_form)
        .ok()?;
    let bytes: [u8; 8] = bytes.try_into().ok()?;
    Some(brisk_wire::azure::crc64_header_value(u64::from_be_bytes(
        bytes,
    )))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_s3_form_of_crc64_converts_to_azures() {
        let data = b"123456789";
        let s3 = crate::UploadChecksum::Crc64Nvme.compute(data);
        assert_eq!(
            super::crc64_from_s3_base64(&s3).unwrap(),
            brisk_wire::azure::crc64_header_value(brisk_wire::azure::crc64(data))
        );
        assert!(super::crc64_from_s3_base64("bad").is_none());
    }
}
