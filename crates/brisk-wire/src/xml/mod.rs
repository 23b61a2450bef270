//! The XML bodies of the S3 API, both directions: a streaming writer for the server (straight into a
//! reusable `Vec<u8>` or any `impl Write`; a listing of 1,000 keys is written from the entries, no document
//! tree is built) and a pull parser for the client and for request bodies (event by event over the
//! received bytes).
//!
//! # Escaping and keys XML cannot carry
//!
//! Object keys are arbitrary UTF-8, but XML 1.0 cannot carry most control characters (U+0000–U+001F other
//! than tab, LF and CR) nor U+FFFE/U+FFFF, even as character references. The writer never emits invalid
//! XML: such a character is an [`XmlWriteError::UnrepresentableCharacter`] unless the listing is written
//! with `encoding-type=url` ([`EncodingType::Url`]), which percent-encodes keys, prefixes, delimiters and
//! markers as S3 does. CR is written as `&#13;` because XML parsers turn a literal CR into LF.
//!
//! # Limits
//!
//! Parsers are for untrusted input. They refuse a `DOCTYPE` (no entity expansion of any kind), nest at
//! most [`MAX_DEPTH`] elements, read at most [`MAX_TEXT_LEN`] bytes of text per element and at most a
//! document-specific number of entries ([`MAX_DELETE_OBJECTS`], [`MAX_COMPLETE_PARTS`],
//! [`MAX_LIST_ENTRIES`]). Every rejection is an [`XmlParseError`], which S3 reports as `MalformedXML`.
//! Unknown elements are skipped, so documents from newer servers still parse.

mod acl;
mod attributes;
mod buckets;
mod delete;
mod error_document;
mod listing;
mod multipart;
mod reader;
mod values;
mod versions;
mod writer;

use std::io::Write;

pub use acl::write_owner_full_control;
pub use attributes::{AttributesPart, AttributesParts, ObjectAttributes, write_object_attributes};
pub use buckets::{
    BucketEntry, CreateBucketConfiguration, ListAllMyBucketsResult, LocationConstraint,
};
pub use delete::{Delete, DeleteError, DeleteResult, DeletedObject, ObjectIdentifier};
pub use error_document::ErrorDocument;
pub use listing::{
    ListBucketHeader, ListBucketResult, ListVersion, ObjectEntry, write_list_bucket_result,
};
pub use multipart::{
    ChecksumFields, CompleteMultipartUpload, CompleteMultipartUploadResult, CompletedPart,
    CopyObjectResult, CopyPartResult, InitiateMultipartUploadResult, ListMultipartUploadsResult,
    ListPartsResult, PartEntry, UploadEntry,
};
pub use values::{EncodingType, Owner, format_timestamp, parse_timestamp, url_decode};
pub use versions::{ListVersionsHeader, NULL_VERSION_ID, write_list_versions_result};
pub use writer::XmlWriter;

pub(crate) use reader::{XmlReader, check_room, required};

/// The namespace S3 declares on its documents (not on `Error`).
pub const S3_NAMESPACE: &str = "http://s3.amazonaws.com/doc/2006-03-01/";

/// How deeply elements may nest. S3's deepest document (ListParts with an `Owner`) nests 3 levels; 32
/// leaves room for extensions while keeping junk from costing more than a few hundred bytes of parser
/// state.
pub const MAX_DEPTH: usize = 32;

/// The most bytes of text one element may hold. Keys are at most 1,024 bytes (3× that when
/// url-encoded); the longest S3 text is an Error's `CanonicalRequest`/`StringToSign`, a few KiB for a
/// request with many signed headers. 64 KiB bounds them all with room to spare.
pub const MAX_TEXT_LEN: usize = 64 * 1024;

/// The most objects one DeleteObjects request may name (S3's documented limit).
pub const MAX_DELETE_OBJECTS: usize = 1_000;

/// The most parts one CompleteMultipartUpload may list (S3's limit on parts per upload).
pub const MAX_COMPLETE_PARTS: usize = 10_000;

/// The most entries (objects, prefixes, uploads, parts, buckets) a listing response may hold for the
/// client to accept it. S3 returns at most 1,000 per page (10,000 buckets per ListBuckets page); other
/// servers may be more generous, so the client accepts ten times S3's page and refuses more, which bounds
/// the memory one response can make the client allocate.
pub const MAX_LIST_ENTRIES: usize = 100_000;

/// Why an XML body was rejected. S3 answers all of these with the error code `MalformedXML`
/// ([`XmlParseError::S3_CODE`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum XmlParseError {
    /// The bytes are not well-formed XML (or not UTF-8, or use an undefined entity).
    #[error("malformed XML: {0}")]
    Syntax(String),
    /// A `DOCTYPE` declaration: refused so that no entity can ever be defined or expanded.
    #[error("DOCTYPE declarations are not allowed")]
    Doctype,
    /// The document element is not the one the operation expects.
    #[error("expected document element <{expected}>, found <{found}>")]
    WrongRoot {
        expected: &'static str,
        found: String,
    },
    /// The input ended before the document element was complete (or there was none).
    #[error("document ended before the document element was closed")]
    UnexpectedEof,
    /// Something other than whitespace, comments or processing instructions follows the document
    /// element.
    #[error("content after the document element")]
    TrailingContent,
    /// Elements nest deeper than [`MAX_DEPTH`].
    #[error("elements nested deeper than {limit} levels")]
    TooDeep { limit: usize },
    /// More entries of one kind than the document allows.
    #[error("more than {limit} <{element}> elements")]
    TooManyEntries { element: &'static str, limit: usize },
    /// An element's text is longer than [`MAX_TEXT_LEN`].
    #[error("text of <{element}> longer than {limit} bytes")]
    TextTooLong { element: &'static str, limit: usize },
    /// An element that holds a value contains an element.
    #[error("<{element}> must contain text, not elements")]
    UnexpectedChild { element: &'static str },
    /// A required element is absent.
    #[error("<{parent}> lacks the required <{element}>")]
    MissingElement {
        parent: &'static str,
        element: &'static str,
    },
    /// An element's text is not a valid value of its type.
    #[error("<{element}> holds {value:?}: {reason}")]
    InvalidValue {
        element: &'static str,
        value: String,
        reason: &'static str,
    },
}

impl XmlParseError {
    /// The S3 error code for every parse failure.
    pub const S3_CODE: crate::S3ErrorCode = crate::S3ErrorCode::MalformedXML;

    /// The S3 error code (always [`Self::S3_CODE`]).
    pub fn s3_code(&self) -> crate::S3ErrorCode {
        Self::S3_CODE
    }
}

/// Why a document could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum XmlWriteError {
    /// The destination failed.
    #[error("writing XML failed: {0}")]
    Io(#[from] std::io::Error),
    /// A value holds a character XML 1.0 cannot represent (a control character other than tab, LF and
    /// CR, or U+FFFE/U+FFFF). Listings avoid this with `encoding-type=url`.
    #[error("<{element}> value contains U+{code:04X}, which XML 1.0 cannot represent (use encoding-type=url)", code = u32::from(*character))]
    UnrepresentableCharacter {
        element: &'static str,
        character: char,
    },
    /// An element name (the extra fields of an Error document) is not a plain XML name.
    #[error("{name:?} is not a valid XML element name")]
    InvalidElementName { name: String },
}

/// An S3 XML document that can be written and parsed.
pub trait XmlDocument: Sized {
    /// The document element's name.
    const ROOT: &'static str;

    /// Writes the complete document (with the XML declaration) to `out`, returning it.
    fn write<W: Write>(&self, out: W) -> Result<W, XmlWriteError>;

    /// Parses a complete document.
    fn parse(input: &[u8]) -> Result<Self, XmlParseError>;

    /// Writes the document into a new buffer.
    fn to_vec(&self) -> Result<Vec<u8>, XmlWriteError> {
        self.write(Vec::with_capacity(512))
    }
}
