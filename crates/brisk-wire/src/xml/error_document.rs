//! The `Error` document of every failed S3 request.

use std::io::Write;

use super::reader::{XmlReader, required};
use super::writer::XmlWriter;
use super::{XmlDocument, XmlParseError, XmlWriteError};

/// The most extra fields an Error document may carry for the parser to accept it. S3's richest error,
/// SignatureDoesNotMatch, has 7 (AWSAccessKeyId, StringToSign, SignatureProvided, StringToSignBytes,
/// CanonicalRequest, CanonicalRequestBytes, HostId).
const MAX_EXTRA_FIELDS: usize = 64;

/// An S3 error response body: `<Error><Code>...</Code><Message>...</Message>...</Error>`, without a
/// namespace, as S3 writes it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ErrorDocument {
    /// The error code (`NoSuchKey`, `SignatureDoesNotMatch`, ...).
    pub code: String,
    pub message: String,
    /// The bucket or object the error concerns.
    pub resource: Option<String>,
    pub request_id: Option<String>,
    pub host_id: Option<String>,
    /// Further fields in document order (`Key`, `BucketName`, `CanonicalRequest`, `StringToSign`,
    /// `AWSAccessKeyId`, ...). Names must be plain XML names.
    pub extra: Vec<(String, String)>,
}

impl ErrorDocument {
    /// The value of an extra field.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.extra
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

impl XmlDocument for ErrorDocument {
    const ROOT: &'static str = "Error";

    fn write<W: Write>(&self, out: W) -> Result<W, XmlWriteError> {
        let mut w = XmlWriter::new(out)?;
        w.root(Self::ROOT, None)?;
        w.text("Code", &self.code)?;
        w.text("Message", &self.message)?;
        for (name, value) in &self.extra {
            w.dynamic_text(name, value)?;
        }
        w.opt_text("Resource", self.resource.as_deref())?;
        w.opt_text("RequestId", self.request_id.as_deref())?;
        w.opt_text("HostId", self.host_id.as_deref())?;
        w.finish(Self::ROOT)
    }

    /// Parses an Error document. Extra fields holding elements rather than text are skipped.
    fn parse(input: &[u8]) -> Result<Self, XmlParseError> {
        XmlReader::document(input, Self::ROOT, |r| {
            let mut out = Self::default();
            let mut code = None;
            r.children(|r, name| {
                match name {
                    b"Code" => code = Some(r.text("Code")?),
                    b"Message" => out.message = r.text("Message")?,
                    b"Resource" => out.resource = Some(r.text("Resource")?),
                    b"RequestId" => out.request_id = Some(r.text("RequestId")?),
                    b"HostId" => out.host_id = Some(r.text("HostId")?),
                    other => {
                        if out.extra.len() >= MAX_EXTRA_FIELDS {
                            return Err(XmlParseError::TooManyEntries {
                                element: "Error field",
                                limit: MAX_EXTRA_FIELDS,
                            });
                        }
                        let name = String::from_utf8_lossy(other).into_owned();
                        match r.text("(extra field)") {
                            Ok(value) => out.extra.push((name, value)),
                            // A structured field of a newer server: left out.
                            Err(XmlParseError::UnexpectedChild { .. }) => {}
                            Err(err) => return Err(err),
                        }
                    }
                }
                Ok(())
            })?;
            out.code = required(code, Self::ROOT, "Code")?;
            Ok(out)
        })
    }
}
