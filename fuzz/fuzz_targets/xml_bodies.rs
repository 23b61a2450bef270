//! The S3 XML request bodies the server parses, `CompleteMultipartUpload` and `Delete`
//! (DeleteObjects), on arbitrary bytes.
//!
//! Checked: neither parser panics; a body that parses holds between one and the document's limit of
//! entries; and when the parsed value can be written back (it may hold a character XML cannot carry)
//! the written document parses to the same value.
#![no_main]

use std::fmt::Debug;

use brisk_wire::xml::{
    CompleteMultipartUpload, Delete, MAX_COMPLETE_PARTS, MAX_DELETE_OBJECTS, XmlDocument,
};
use libfuzzer_sys::fuzz_target;

fn round_trip<T: XmlDocument + PartialEq + Debug>(parsed: &T) {
    if let Ok(written) = parsed.to_vec() {
        let again = T::parse(&written);
        assert_eq!(
            again.as_ref(),
            Ok(parsed),
            "written as {:?}",
            String::from_utf8_lossy(&written)
        );
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(complete) = CompleteMultipartUpload::parse(data) {
        assert!((1..=MAX_COMPLETE_PARTS).contains(&complete.parts.len()));
        round_trip(&complete);
    }
    if let Ok(delete) = Delete::parse(data) {
        assert!((1..=MAX_DELETE_OBJECTS).contains(&delete.objects.len()));
        round_trip(&delete);
    }
});
