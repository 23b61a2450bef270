//! A streaming XML writer for S3 documents on top of `quick-xml`, with S3's escaping rules.

use std::io::Write;

use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};
use time::OffsetDateTime;

use super::XmlWriteError;
use super::values::{EncodingType, Owner, TIMESTAMP_LEN, url_encode_into, write_timestamp};

/// Writes S3 XML element by element into `W`.
///
/// Text is escaped into one scratch string that is reused for every element, so writing a listing
/// allocates nothing per entry once the scratch has grown to the longest value.
pub struct XmlWriter<W: Write> {
    writer: quick_xml::Writer<W>,
    scratch: String,
}

impl<W: Write> std::fmt::Debug for XmlWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XmlWriter").finish_non_exhaustive()
    }
}

/// Whether XML 1.0 can carry `c` at all (the `Char` production, minus what Rust's `char` excludes
/// already: surrogates).
fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{FFFD}' | '\u{10000}'..)
        && !matches!(c, '\u{FFFE}' | '\u{FFFF}')
}

/// Escapes `text` for element content into `out` (cleared first). `"` and `'` are escaped as S3 does
/// (its ETags read `&quot;...&quot;`); CR is written as a character reference so that it survives the
/// line-end normalisation of XML parsers.
fn escape_into(element: &'static str, text: &str, out: &mut String) -> Result<(), XmlWriteError> {
    out.clear();
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\r' => out.push_str("&#13;"),
            c if is_xml_char(c) => out.push(c),
            character => {
                return Err(XmlWriteError::UnrepresentableCharacter { element, character });
            }
        }
    }
    Ok(())
}

/// Whether `name` is a plain element name (ASCII letter or `_`, then letters, digits, `_`, `-`, `.`).
fn is_plain_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

impl<W: Write> XmlWriter<W> {
    /// Starts a document: writes the XML declaration.
    pub fn new(out: W) -> Result<Self, XmlWriteError> {
        let mut writer = quick_xml::Writer::new(out);
        writer.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
        Ok(Self {
            writer,
            scratch: String::new(),
        })
    }

    /// Opens the document element, with the S3 namespace when `namespace` is given.
    pub fn root(&mut self, name: &str, namespace: Option<&str>) -> Result<(), XmlWriteError> {
        let mut start = BytesStart::new(name);
        if let Some(ns) = namespace {
            start.push_attribute(("xmlns", ns));
        }
        self.writer.write_event(Event::Start(start))?;
        Ok(())
    }

    /// Opens an element.
    pub fn start(&mut self, name: &str) -> Result<(), XmlWriteError> {
        self.writer
            .write_event(Event::Start(BytesStart::new(name)))?;
        Ok(())
    }

    /// Opens an element with attributes (names and values written as given, values escaped).
    pub fn start_with(
        &mut self,
        name: &str,
        attributes: &[(&str, &str)],
    ) -> Result<(), XmlWriteError> {
        let mut start = BytesStart::new(name);
        for &attribute in attributes {
            start.push_attribute(attribute);
        }
        self.writer.write_event(Event::Start(start))?;
        Ok(())
    }

    /// Closes an element.
    pub fn end(&mut self, name: &str) -> Result<(), XmlWriteError> {
        self.writer.write_event(Event::End(BytesEnd::new(name)))?;
        Ok(())
    }

    /// Writes `<name>text</name>`, escaped; fails if `text` holds a character XML cannot carry.
    pub fn text(&mut self, name: &'static str, text: &str) -> Result<(), XmlWriteError> {
        escape_into(name, text, &mut self.scratch)?;
        self.write_escaped(name)
    }

    /// Writes a text element whose name is only known at run time (the extra fields of an Error
    /// document); the name must be a plain XML name.
    pub fn dynamic_text(&mut self, name: &str, text: &str) -> Result<(), XmlWriteError> {
        if !is_plain_name(name) {
            return Err(XmlWriteError::InvalidElementName {
                name: name.to_owned(),
            });
        }
        escape_into("(extra field)", text, &mut self.scratch)?;
        self.write_escaped(name)
    }

    /// Writes a key-like value (key, prefix, delimiter, marker): url-encoded when the listing uses
    /// `encoding-type=url`, escaped otherwise.
    pub fn key_text(
        &mut self,
        name: &'static str,
        text: &str,
        encoding: Option<EncodingType>,
    ) -> Result<(), XmlWriteError> {
        match encoding {
            Some(EncodingType::Url) => {
                url_encode_into(text, &mut self.scratch);
                self.write_escaped(name)
            }
            None => self.text(name, text),
        }
    }

    /// Writes `text` if present.
    pub fn opt_text(
        &mut self,
        name: &'static str,
        text: Option<&str>,
    ) -> Result<(), XmlWriteError> {
        match text {
            Some(text) => self.text(name, text),
            None => Ok(()),
        }
    }

    /// Writes a key-like value if present.
    pub fn opt_key_text(
        &mut self,
        name: &'static str,
        text: Option<&str>,
        encoding: Option<EncodingType>,
    ) -> Result<(), XmlWriteError> {
        match text {
            Some(text) => self.key_text(name, text, encoding),
            None => Ok(()),
        }
    }

    /// Writes an unsigned number.
    pub fn number(&mut self, name: &'static str, value: u64) -> Result<(), XmlWriteError> {
        self.scratch.clear();
        // Formatting into a String cannot fail.
        let _ = std::fmt::Write::write_fmt(&mut self.scratch, format_args!("{value}"));
        self.write_escaped(name)
    }

    /// Writes `true` or `false`.
    pub fn boolean(&mut self, name: &'static str, value: bool) -> Result<(), XmlWriteError> {
        self.scratch.clear();
        self.scratch.push_str(if value { "true" } else { "false" });
        self.write_escaped(name)
    }

    /// Writes a timestamp as S3 does (`2009-10-12T17:50:30.000Z`).
    pub fn timestamp(
        &mut self,
        name: &'static str,
        t: OffsetDateTime,
    ) -> Result<(), XmlWriteError> {
        let mut buf = [0u8; TIMESTAMP_LEN];
        let bytes = write_timestamp(t, &mut buf);
        self.scratch.clear();
        self.scratch
            .push_str(std::str::from_utf8(bytes).expect("timestamp digits are ASCII"));
        self.write_escaped(name)
    }

    /// Writes an `Owner` (or `Initiator`) container.
    pub fn owner(&mut self, name: &'static str, owner: &Owner) -> Result<(), XmlWriteError> {
        self.start(name)?;
        self.text("ID", &owner.id)?;
        self.opt_text("DisplayName", owner.display_name.as_deref())?;
        self.end(name)
    }

    /// Writes a document whose element holds only text (`<LocationConstraint xmlns="...">eu-west-1<...>`)
    /// and returns the destination.
    pub fn text_with_namespace(
        mut self,
        root: &'static str,
        namespace: &str,
        text: &str,
    ) -> Result<W, XmlWriteError> {
        escape_into(root, text, &mut self.scratch)?;
        self.root(root, Some(namespace))?;
        self.writer
            .write_event(Event::Text(BytesText::from_escaped(self.scratch.as_str())))?;
        self.finish(root)
    }

    /// Closes the document element and returns the destination.
    pub fn finish(mut self, root: &str) -> Result<W, XmlWriteError> {
        self.end(root)?;
        Ok(self.writer.into_inner())
    }

    /// Writes `<name>{scratch}</name>`; the scratch holds escaped text.
    fn write_escaped(&mut self, name: &str) -> Result<(), XmlWriteError> {
        self.writer
            .write_event(Event::Start(BytesStart::new(name)))?;
        self.writer
            .write_event(Event::Text(BytesText::from_escaped(self.scratch.as_str())))?;
        self.writer.write_event(Event::End(BytesEnd::new(name)))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(
        f: impl FnOnce(&mut XmlWriter<&mut Vec<u8>>) -> Result<(), XmlWriteError>,
    ) -> String {
        let mut buf = Vec::new();
        let mut w = XmlWriter::new(&mut buf).unwrap();
        w.root("R", None).unwrap();
        f(&mut w).unwrap();
        w.finish("R").unwrap();
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn escapes_markup_quotes_and_cr() {
        let xml = written(|w| w.text("Key", "a&b<c>d\"e'f\rg\th\ni"));
        assert_eq!(
            xml,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><R><Key>a&amp;b&lt;c&gt;d&quot;e&apos;f&#13;g\th\ni</Key></R>"
        );
    }

    #[test]
    fn refuses_characters_xml_cannot_carry() {
        for bad in ["\u{0}", "a\u{1}b", "\u{1F}", "\u{FFFE}", "\u{FFFF}"] {
            let mut w = XmlWriter::new(Vec::new()).unwrap();
            let err = w.text("Key", bad).unwrap_err();
            assert!(
                matches!(
                    err,
                    XmlWriteError::UnrepresentableCharacter { element: "Key", .. }
                ),
                "{bad:?}: {err}"
            );
        }
        let mut w = XmlWriter::new(Vec::new()).unwrap();
        w.key_text("Key", "a\u{1}b", Some(EncodingType::Url))
            .unwrap();
        let xml = String::from_utf8(w.writer.into_inner()).unwrap();
        assert!(xml.ends_with("<Key>a%01b</Key>"), "{xml}");
    }

    #[test]
    fn dynamic_names_must_be_plain() {
        let mut w = XmlWriter::new(Vec::new()).unwrap();
        assert!(w.dynamic_text("StringToSign", "x").is_ok());
        for bad in ["", "1a", "a b", "a<b", "x:y"] {
            assert!(matches!(
                w.dynamic_text(bad, "x"),
                Err(XmlWriteError::InvalidElementName { .. })
            ));
        }
    }
}
