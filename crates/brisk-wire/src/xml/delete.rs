//! DeleteObjects: the `Delete` request body and the `DeleteResult` response.

use std::io::Write;

use super::reader::{XmlReader, check_room, required};
use super::writer::XmlWriter;
use super::{
    MAX_DELETE_OBJECTS, MAX_LIST_ENTRIES, S3_NAMESPACE, XmlDocument, XmlParseError, XmlWriteError,
};

/// One object named in a DeleteObjects request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ObjectIdentifier {
    pub key: String,
    pub version_id: Option<String>,
}

/// The body of DeleteObjects. At most [`MAX_DELETE_OBJECTS`] objects, at least one.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Delete {
    /// When true the response lists only the failures.
    pub quiet: bool,
    pub objects: Vec<ObjectIdentifier>,
}

impl XmlDocument for Delete {
    const ROOT: &'static str = "Delete";

    fn write<W: Write>(&self, out: W) -> Result<W, XmlWriteError> {
        let mut w = XmlWriter::new(out)?;
        w.root(Self::ROOT, Some(S3_NAMESPACE))?;
        for object in &self.objects {
            w.start("Object")?;
            w.text("Key", &object.key)?;
            w.opt_text("VersionId", object.version_id.as_deref())?;
            w.end("Object")?;
        }
        if self.quiet {
            w.boolean("Quiet", true)?;
        }
        w.finish(Self::ROOT)
    }

    fn parse(input: &[u8]) -> Result<Self, XmlParseError> {
        XmlReader::document(input, Self::ROOT, |r| {
            let mut out = Self::default();
            r.children(|r, name| {
                match name {
                    b"Quiet" => out.quiet = r.boolean("Quiet")?,
                    b"Object" => {
                        check_room(out.objects.len(), MAX_DELETE_OBJECTS, "Object")?;
                        let (mut key, mut version_id) = (None, None);
                        r.children(|r, name| {
                            match name {
                                b"Key" => key = Some(r.text("Key")?),
                                b"VersionId" => version_id = Some(r.text("VersionId")?),
                                _ => {}
                            }
                            Ok(())
                        })?;
                        out.objects.push(ObjectIdentifier {
                            key: required(key, "Object", "Key")?,
                            version_id,
                        });
                    }
                    _ => {}
                }
                Ok(())
            })?;
            if out.objects.is_empty() {
                return Err(XmlParseError::MissingElement {
                    parent: Self::ROOT,
                    element: "Object",
                });
            }
            Ok(out)
        })
    }
}

/// An object DeleteObjects deleted.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeletedObject {
    pub key: String,
    pub version_id: Option<String>,
    pub delete_marker: Option<bool>,
    pub delete_marker_version_id: Option<String>,
}

/// An object DeleteObjects failed to delete.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeleteError {
    pub key: String,
    pub version_id: Option<String>,
    /// An S3 error code (`AccessDenied`, `InternalError`, ...).
    pub code: String,
    pub message: String,
}

/// The response of DeleteObjects.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeleteResult {
    pub deleted: Vec<DeletedObject>,
    pub errors: Vec<DeleteError>,
}

impl XmlDocument for DeleteResult {
    const ROOT: &'static str = "DeleteResult";

    fn write<W: Write>(&self, out: W) -> Result<W, XmlWriteError> {
        let mut w = XmlWriter::new(out)?;
        w.root(Self::ROOT, Some(S3_NAMESPACE))?;
        for deleted in &self.deleted {
            w.start("Deleted")?;
            w.text("Key", &deleted.key)?;
            w.opt_text("VersionId", deleted.version_id.as_deref())?;
            if let Some(marker) = deleted.delete_marker {
                w.boolean("DeleteMarker", marker)?;
            }
            w.opt_text(
                "DeleteMarkerVersionId",
                deleted.delete_marker_version_id.as_deref(),
            )?;
            w.end("Deleted")?;
        }
        for error in &self.errors {
            w.start("Error")?;
            w.text("Key", &error.key)?;
            w.opt_text("VersionId", error.version_id.as_deref())?;
            w.text("Code", &error.code)?;
            w.text("Message", &error.message)?;
            w.end("Error")?;
        }
        w.finish(Self::ROOT)
    }

    fn parse(input: &[u8]) -> Result<Self, XmlParseError> {
        XmlReader::document(input, Self::ROOT, |r| {
            let mut out = Self::default();
            r.children(|r, name| {
                let entries = out.deleted.len() + out.errors.len();
                match name {
                    b"Deleted" => {
                        check_room(entries, MAX_LIST_ENTRIES, "Deleted")?;
                        let mut d = DeletedObject::default();
                        let mut key = None;
                        r.children(|r, name| {
                            match name {
                                b"Key" => key = Some(r.text("Key")?),
                                b"VersionId" => d.version_id = Some(r.text("VersionId")?),
                                b"DeleteMarker" => {
                                    d.delete_marker = Some(r.boolean("DeleteMarker")?)
                                }
                                b"DeleteMarkerVersionId" => {
                                    d.delete_marker_version_id =
                                        Some(r.text("DeleteMarkerVersionId")?);
                                }
                                _ => {}
                            }
                            Ok(())
                        })?;
                        d.key = required(key, "Deleted", "Key")?;
                        out.deleted.push(d);
                    }
                    b"Error" => {
                        check_room(entries, MAX_LIST_ENTRIES, "Error")?;
                        let mut e = DeleteError::default();
                        r.children(|r, name| {
                            match name {
                                b"Key" => e.key = r.text("Key")?,
                                b"VersionId" => e.version_id = Some(r.text("VersionId")?),
                                b"Code" => e.code = r.text("Code")?,
                                b"Message" => e.message = r.text("Message")?,
                                _ => {}
                            }
                            Ok(())
                        })?;
                        out.errors.push(e);
                    }
                    _ => {}
                }
                Ok(())
            })?;
            Ok(out)
        })
    }
}
