//! The XML bodies of the Blob service that the client reads (List Blobs, List Containers, Error) and
//! writes (Put Block List), with the block ids that body names.
//!
//! Parsing goes through the same bounded pull parser as the S3 documents (see [`crate::xml`]): no
//! `DOCTYPE`, bounded depth, text and entry counts, unknown elements skipped, a leading UTF-8 byte
//! order mark (which the service sends) ignored. Every failure is a [`XmlParseError`].
//!
//! Values are kept as the service sends them: `Last-Modified` is RFC 1123 text, `Etag` is quoted in
//! List Containers but not in List Blobs, and base64 digests stay base64.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use percent_encoding::percent_decode_str;
use quick_xml::escape::escape;
use quick_xml::events::BytesStart;

use crate::xml::{MAX_LIST_ENTRIES, XmlParseError, XmlReader, check_room, required};

/// The document element of both listings.
const ENUMERATION_RESULTS: &str = "EnumerationResults";

/// One page of List Blobs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BlobListPage {
    pub blobs: Vec<BlobEntry>,
    /// The `BlobPrefix` names of a listing with a delimiter (each ends with the delimiter).
    pub prefixes: Vec<String>,
    /// Where the next page starts; `None` when `<NextMarker/>` is empty or absent (the last page).
    pub next_marker: Option<String>,
}

/// One blob of a List Blobs page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobEntry {
    /// The blob name, decoded when the service sent it percent-encoded (`<Name Encoded="true">`).
    pub name: String,
    /// `Content-Length`.
    pub size: u64,
    /// `Etag`, as sent (List Blobs sends it without quotes).
    pub etag: String,
    /// `Last-Modified`, RFC 1123 as sent (`Wed, 25 Nov 2026 08:55:39 GMT`).
    pub last_modified: String,
    /// `Content-MD5` (base64), when the blob has one.
    pub content_md5: Option<String>,
    /// `Content-CRC64` (base64, little-endian; see [`mod@super::crc64`]), when the service sends it.
    pub content_crc64: Option<String>,
    /// `BlockBlob`, `AppendBlob` or `PageBlob`.
    pub blob_type: Option<String>,
}

/// One container of a List Containers page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerEntry {
    pub name: String,
    /// `Last-Modified`, RFC 1123 as sent.
    pub last_modified: String,
}

/// One page of List Containers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ContainerListPage {
    pub containers: Vec<ContainerEntry>,
    /// Where the next page starts; `None` on the last page.
    pub next_marker: Option<String>,
}

/// The body of a failed request: `<Error><Code>BlobNotFound</Code><Message>...</Message></Error>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AzureErrorDocument {
    /// The error code (`BlobNotFound`, `AuthenticationFailed`, ...), also sent as `x-ms-error-code`.
    pub code: String,
    /// The message, which ends with the request id and time.
    pub message: String,
}

/// Parses a List Blobs response (`restype=container&comp=list`), flat or with a delimiter.
pub fn parse_list_blobs(body: &[u8]) -> Result<BlobListPage, XmlParseError> {
    XmlReader::document(body, ENUMERATION_RESULTS, |r| {
        let mut page = BlobListPage::default();
        r.children(|r, name| {
            match name {
                b"Blobs" => r.children_with_start(|r, start| {
                    match start.local_name().as_ref() {
                        b"Blob" => {
                            room(&page)?;
                            page.blobs.push(parse_blob(r)?);
                        }
                        b"BlobPrefix" => {
                            room(&page)?;
                            page.prefixes.push(parse_prefix(r)?);
                        }
                        _ => {}
                    }
                    Ok(())
                })?,
                b"NextMarker" => page.next_marker = marker(r)?,
                _ => {}
            }
            Ok(())
        })?;
        Ok(page)
    })
}

fn room(page: &BlobListPage) -> Result<(), XmlParseError> {
    check_room(
        page.blobs.len() + page.prefixes.len(),
        MAX_LIST_ENTRIES,
        "Blob",
    )
}

/// Reads `NextMarker`: empty means no further page.
fn marker(r: &mut XmlReader<'_>) -> Result<Option<String>, XmlParseError> {
    let text = r.text("NextMarker")?;
    Ok((!text.trim().is_empty()).then_some(text))
}

/// Reads an optional value whose empty element (`<Content-MD5 />`) means absent.
fn optional(r: &mut XmlReader<'_>, element: &'static str) -> Result<Option<String>, XmlParseError> {
    let text = r.text(element)?;
    Ok((!text.trim().is_empty()).then(|| text.trim().to_owned()))
}

/// Reads a `Name`, decoding it when its `Encoded` attribute is `true`.
fn name(r: &mut XmlReader<'_>, start: &BytesStart<'_>) -> Result<String, XmlParseError> {
    let text = r.text("Name")?;
    let encoded = match start.try_get_attribute("Encoded") {
        Ok(Some(attribute)) => attribute
            .unescape_value()
            .map_err(|err| XmlParseError::Syntax(err.to_string()))?
            .trim()
            .eq_ignore_ascii_case("true"),
        Ok(None) => false,
        Err(err) => return Err(XmlParseError::Syntax(err.to_string())),
    };
    if !encoded {
        return Ok(text);
    }
    match percent_decode_str(&text).decode_utf8() {
        Ok(decoded) => Ok(decoded.into_owned()),
        Err(_) => Err(XmlParseError::InvalidValue {
            element: "Name",
            value: text,
            reason: "an Encoded name that does not decode to UTF-8",
        }),
    }
}

fn parse_prefix(r: &mut XmlReader<'_>) -> Result<String, XmlParseError> {
    let mut prefix = None;
    r.children_with_start(|r, start| {
        if start.local_name().as_ref() == b"Name" {
            prefix = Some(name(r, start)?);
        }
        Ok(())
    })?;
    required(prefix, "BlobPrefix", "Name")
}

fn parse_blob(r: &mut XmlReader<'_>) -> Result<BlobEntry, XmlParseError> {
    let mut blob_name = None;
    let (mut size, mut etag, mut last_modified) = (None, None, None);
    let (mut content_md5, mut content_crc64, mut blob_type) = (None, None, None);
    r.children_with_start(|r, start| {
        match start.local_name().as_ref() {
            b"Name" => blob_name = Some(name(r, start)?),
            b"Properties" => r.children(|r, property| {
                match property {
                    b"Content-Length" => size = Some(r.u64("Content-Length")?),
                    b"Etag" => etag = Some(r.text("Etag")?),
                    b"Last-Modified" => last_modified = Some(r.text("Last-Modified")?),
                    b"Content-MD5" => content_md5 = optional(r, "Content-MD5")?,
                    b"Content-CRC64" => content_crc64 = optional(r, "Content-CRC64")?,
                    b"x-ms-content-crc64" => content_crc64 = optional(r, "x-ms-content-crc64")?,
                    b"BlobType" => blob_type = optional(r, "BlobType")?,
                    _ => {}
                }
                Ok(())
            })?,
            _ => {}
        }
        Ok(())
    })?;
    Ok(BlobEntry {
        name: required(blob_name, "Blob", "Name")?,
        size: required(size, "Properties", "Content-Length")?,
        etag: required(etag, "Properties", "Etag")?,
        last_modified: required(last_modified, "Properties", "Last-Modified")?,
        content_md5,
        content_crc64,
        blob_type,
    })
}

/// Parses a List Containers response (`comp=list` on the account).
pub fn parse_list_containers(body: &[u8]) -> Result<ContainerListPage, XmlParseError> {
    XmlReader::document(body, ENUMERATION_RESULTS, |r| {
        let mut page = ContainerListPage::default();
        r.children(|r, name| {
            match name {
                b"Containers" => r.children(|r, name| {
                    if name == b"Container" {
                        check_room(page.containers.len(), MAX_LIST_ENTRIES, "Container")?;
                        page.containers.push(parse_container(r)?);
                    }
                    Ok(())
                })?,
                b"NextMarker" => page.next_marker = marker(r)?,
                _ => {}
            }
            Ok(())
        })?;
        Ok(page)
    })
}

fn parse_container(r: &mut XmlReader<'_>) -> Result<ContainerEntry, XmlParseError> {
    let (mut name, mut last_modified) = (None, None);
    r.children(|r, element| {
        match element {
            b"Name" => name = Some(r.text("Name")?),
            b"Properties" => r.children(|r, property| {
                if property == b"Last-Modified" {
                    last_modified = Some(r.text("Last-Modified")?);
                }
                Ok(())
            })?,
            _ => {}
        }
        Ok(())
    })?;
    Ok(ContainerEntry {
        name: required(name, "Container", "Name")?,
        last_modified: required(last_modified, "Properties", "Last-Modified")?,
    })
}

/// Reads the Error document of a failed request; `None` when the body is not one (empty, as for
/// `HEAD`, or not XML), in which case the `x-ms-error-code` header is all there is.
pub fn parse_error(body: &[u8]) -> Option<AzureErrorDocument> {
    XmlReader::document(body, "Error", |r| {
        let (mut code, mut message) = (None, String::new());
        r.children(|r, name| {
            match name {
                b"Code" => code = Some(r.text("Code")?.trim().to_owned()),
                b"Message" => message = r.text("Message")?,
                _ => {}
            }
            Ok(())
        })?;
        Ok(AzureErrorDocument {
            code: required(code, "Error", "Code")?,
            message,
        })
    })
    .ok()
}

/// The body of Put Block List committing `block_ids` in order, each from the uncommitted or
/// committed list (`Latest`):
/// `<?xml version="1.0" encoding="utf-8"?><BlockList><Latest>id</Latest>...</BlockList>`.
pub fn block_list_body(block_ids: &[String]) -> String {
    let mut body =
        String::with_capacity(64 + block_ids.iter().map(|id| id.len() + 17).sum::<usize>());
    body.push_str(r#"<?xml version="1.0" encoding="utf-8"?><BlockList>"#);
    for id in block_ids {
        body.push_str("<Latest>");
        body.push_str(&escape(id.as_str()));
        body.push_str("</Latest>");
    }
    body.push_str("</BlockList>");
    body
}

/// The block id of part `index` (0-based): base64 of `brisk-block-{index:010}`.
///
/// The service requires every block id of a blob to have the same length (at most 64 bytes before
/// encoding); the fixed-width index makes every id 32 characters long, whatever the part count.
pub fn block_id(index: u32) -> String {
    STANDARD.encode(format!("brisk-block-{index:010}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_ids_have_one_length_and_decode_to_the_index() {
        let ids: Vec<String> = [0, 1, 9, 10, 49_999, u32::MAX].map(block_id).into();
        assert!(ids.iter().all(|id| id.len() == 32), "{ids:?}");
        assert_eq!(STANDARD.decode(&ids[4]).unwrap(), b"brisk-block-0000049999");
        let unique: std::collections::HashSet<&String> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len());
    }

    #[test]
    fn block_list_body_lists_ids_in_order() {
        let ids = vec![block_id(0), block_id(1)];
        assert_eq!(
            block_list_body(&ids),
            format!(
                "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList><Latest>{}</Latest>\
                 <Latest>{}</Latest></BlockList>",
                ids[0], ids[1]
            )
        );
        assert_eq!(
            block_list_body(&[]),
            "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList></BlockList>"
        );
    }

    #[test]
    fn block_list_body_escapes_markup() {
        let body = block_list_body(&["a<b>&\"c'".to_owned()]);
        assert!(
            body.contains("<Latest>a&lt;b&gt;&amp;&quot;c&apos;</Latest>"),
            "{body}"
        );
    }

    #[test]
    fn encoded_names_are_decoded_and_plain_ones_kept() {
        let xml = r#"<EnumerationResults><Blobs>
            <BlobPrefix><Name Encoded="true">dir%EF%BF%BE/</Name></BlobPrefix>
            <Blob><Name Encoded="true">a%01b%2Bc%20d</Name><Properties><Content-Length>1</Content-Length>
              <Etag>0x1</Etag><Last-Modified>Wed, 25 Nov 2026 08:55:39 GMT</Last-Modified></Properties></Blob>
            <Blob><Name Encoded="false">%41+</Name><Properties><Content-Length>2</Content-Length>
              <Etag>0x2</Etag><Last-Modified>Wed, 25 Nov 2026 08:55:39 GMT</Last-Modified></Properties></Blob>
            <Blob><Name> %41+ </Name><Properties><Content-Length>3</Content-Length>
              <Etag>0x3</Etag><Last-Modified>Wed, 25 Nov 2026 08:55:39 GMT</Last-Modified></Properties></Blob>
            </Blobs><NextMarker /></EnumerationResults>"#;
        let page = parse_list_blobs(xml.as_bytes()).unwrap();
        let names: Vec<&str> = page.blobs.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["a\u{1}b+c d", "%41+", " %41+ "]);
        assert_eq!(page.prefixes, ["dir\u{FFFE}/"]);
        assert_eq!(page.next_marker, None);
        let bad = xml.replace("a%01b", "a%FFb");
        assert!(matches!(
            parse_list_blobs(bad.as_bytes()),
            Err(XmlParseError::InvalidValue {
                element: "Name",
                ..
            })
        ));
    }

    #[test]
    fn missing_required_properties_are_errors() {
        let xml = "<EnumerationResults><Blobs><Blob><Name>a</Name><Properties>\
                   <Etag>0x1</Etag><Last-Modified>x</Last-Modified></Properties></Blob></Blobs>\
                   </EnumerationResults>";
        assert_eq!(
            parse_list_blobs(xml.as_bytes()),
            Err(XmlParseError::MissingElement {
                parent: "Properties",
                element: "Content-Length"
            })
        );
        assert!(matches!(
            parse_list_blobs(b"<ListBucketResult/>"),
            Err(XmlParseError::WrongRoot { .. })
        ));
    }

    #[test]
    fn error_documents_parse_or_are_none() {
        let body = "\u{FEFF}<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>AuthenticationFailed\
                    </Code><Message>Server failed to authenticate the request.\nRequestId:1\n\
                    Time:2026-11-25T08:55:40.381Z</Message><AuthenticationErrorDetail>The MAC \
                    signature found in the HTTP request is not the same</AuthenticationErrorDetail>\
                    </Error>";
        let error = parse_error(body.as_bytes()).unwrap();
        assert_eq!(error.code, "AuthenticationFailed");
        assert!(error.message.starts_with("Server failed to authenticate"));
        assert_eq!(parse_error(b""), None);
        assert_eq!(parse_error(b"<Error><Message>m</Message></Error>"), None);
        assert_eq!(parse_error(b"Bad Request"), None);
    }
}
