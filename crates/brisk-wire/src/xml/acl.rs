//! `AccessControlPolicy`, the response of GetBucketAcl and GetObjectAcl, for a store whose ACLs are
//! disabled (S3's default for new buckets since 2023, "bucket owner enforced"): the owner, and one
//! grant of FULL_CONTROL to the owner. Reading an ACL stays possible there, as on S3; tools that
//! check who owns what get the one answer that is true.

use std::io::Write;

use super::values::Owner;
use super::writer::XmlWriter;
use super::{S3_NAMESPACE, XmlWriteError};

const ROOT: &str = "AccessControlPolicy";
const XSI: &str = "http://www.w3.org/2001/XMLSchema-instance";

/// Writes the policy of a bucket or object that `owner` alone controls.
pub fn write_owner_full_control<W: Write>(out: W, owner: &Owner) -> Result<W, XmlWriteError> {
    let mut w = XmlWriter::new(out)?;
    w.root(ROOT, Some(S3_NAMESPACE))?;
    w.owner("Owner", owner)?;
    w.start("AccessControlList")?;
    w.start("Grant")?;
    w.start_with(
        "Grantee",
        &[("xmlns:xsi", XSI), ("xsi:type", "CanonicalUser")],
    )?;
    w.text("ID", &owner.id)?;
    w.opt_text("DisplayName", owner.display_name.as_deref())?;
    w.end("Grantee")?;
    w.text("Permission", "FULL_CONTROL")?;
    w.end("Grant")?;
    w.end("AccessControlList")?;
    w.finish(ROOT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_owner_has_full_control_and_no_one_else_is_named() {
        let owner = Owner {
            id: "brisk".to_owned(),
            display_name: Some("brisk".to_owned()),
        };
        let xml = String::from_utf8(write_owner_full_control(Vec::new(), &owner).unwrap()).unwrap();
        assert!(
            xml.contains(
                "<Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" \
                 xsi:type=\"CanonicalUser\"><ID>brisk</ID><DisplayName>brisk</DisplayName></Grantee>\
                 <Permission>FULL_CONTROL</Permission>"
            ),
            "{xml}"
        );
        assert_eq!(xml.matches("<Grant>").count(), 1, "{xml}");
    }
}
