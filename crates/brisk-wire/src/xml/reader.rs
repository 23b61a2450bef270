//! A bounded pull parser over a received XML body, on top of `quick-xml`'s event reader.
//!
//! Documents are read by nesting [`XmlReader::children`] calls: the callback is handed each child
//! element's local name (namespace prefixes dropped) and reads it with [`XmlReader::text`], a nested
//! `children`, or not at all; an element the callback leaves unread is skipped, which is how unknown
//! elements are tolerated.

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};
use time::OffsetDateTime;

use super::values::{Owner, parse_timestamp};
use super::{MAX_DEPTH, MAX_TEXT_LEN, XmlParseError};

/// A pull parser positioned inside some element of a document.
pub(crate) struct XmlReader<'a> {
    reader: Reader<&'a [u8]>,
    /// How many elements are open.
    depth: usize,
}

fn syntax(err: impl std::fmt::Display) -> XmlParseError {
    XmlParseError::Syntax(err.to_string())
}

fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_whitespace)
}

impl<'a> XmlReader<'a> {
    /// Parses a whole document whose element is `root`: `body` reads the root's content (with
    /// [`children`](Self::children) or [`text`](Self::text)), then nothing but whitespace, comments and
    /// processing instructions may follow.
    pub(crate) fn document<T>(
        input: &'a [u8],
        root: &'static str,
        body: impl FnOnce(&mut Self) -> Result<T, XmlParseError>,
    ) -> Result<T, XmlParseError> {
        let mut reader = Reader::from_reader(input);
        let config = reader.config_mut();
        config.expand_empty_elements = true;
        config.check_end_names = true;
        config.trim_text(false);
        let mut r = Self { reader, depth: 0 };
        r.open_root(root)?;
        let value = body(&mut r)?;
        if r.depth != 0 {
            // The body left the root open (it read nothing): skip the rest of it.
            r.skip_to(0)?;
        }
        r.finish()?;
        Ok(value)
    }

    fn event(&mut self) -> Result<Event<'a>, XmlParseError> {
        match self.reader.read_event() {
            Ok(Event::DocType(_)) => Err(XmlParseError::Doctype),
            Ok(event) => Ok(event),
            Err(err) => Err(syntax(err)),
        }
    }

    fn enter(&mut self) -> Result<(), XmlParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(XmlParseError::TooDeep { limit: MAX_DEPTH });
        }
        Ok(())
    }

    fn open_root(&mut self, root: &'static str) -> Result<(), XmlParseError> {
        loop {
            match self.event()? {
                Event::Start(start) => {
                    let name = start.local_name();
                    if name.as_ref() != root.as_bytes() {
                        return Err(XmlParseError::WrongRoot {
                            expected: root,
                            found: String::from_utf8_lossy(name.as_ref()).into_owned(),
                        });
                    }
                    return self.enter();
                }
                Event::Text(text) if is_blank(&text) => {}
                Event::Decl(_) | Event::Comment(_) | Event::PI(_) => {}
                Event::Eof => return Err(XmlParseError::UnexpectedEof),
                _ => return Err(syntax("content before the document element")),
            }
        }
    }

    fn finish(&mut self) -> Result<(), XmlParseError> {
        loop {
            match self.event()? {
                Event::Eof => return Ok(()),
                Event::Text(text) if is_blank(&text) => {}
                Event::Comment(_) | Event::PI(_) => {}
                _ => return Err(XmlParseError::TrailingContent),
            }
        }
    }

    /// Reads events until the element open at depth `level + 1` is closed.
    fn skip_to(&mut self, level: usize) -> Result<(), XmlParseError> {
        while self.depth > level {
            match self.event()? {
                Event::Start(_) => self.enter()?,
                Event::End(_) => self.depth -= 1,
                Event::Eof => return Err(XmlParseError::UnexpectedEof),
                _ => {}
            }
        }
        Ok(())
    }

    /// Calls `f` with each child element of the current element (by local name), then consumes the
    /// current element's end. Children `f` does not read are skipped; text between children is ignored.
    pub(crate) fn children(
        &mut self,
        mut f: impl FnMut(&mut Self, &[u8]) -> Result<(), XmlParseError>,
    ) -> Result<(), XmlParseError> {
        self.children_with_start(|r, start| f(r, start.local_name().as_ref()))
    }

    /// [`children`](Self::children) for documents whose attributes matter: `f` is handed each child's
    /// start tag, whose [`local_name`](BytesStart::local_name) names it.
    pub(crate) fn children_with_start(
        &mut self,
        mut f: impl FnMut(&mut Self, &BytesStart<'a>) -> Result<(), XmlParseError>,
    ) -> Result<(), XmlParseError> {
        let level = self.depth;
        loop {
            match self.event()? {
                Event::Start(start) => {
                    self.enter()?;
                    f(self, &start)?;
                    self.skip_to(level)?;
                }
                Event::End(_) => {
                    self.depth -= 1;
                    return Ok(());
                }
                Event::Eof => return Err(XmlParseError::UnexpectedEof),
                _ => {}
            }
        }
    }

    /// Reads the text of the current element (unescaped, whitespace kept) and consumes its end.
    pub(crate) fn text(&mut self, element: &'static str) -> Result<String, XmlParseError> {
        let mut out = String::new();
        loop {
            let piece = match self.event()? {
                Event::Text(text) => text.unescape().map_err(syntax)?,
                Event::CData(data) => data.decode().map_err(syntax)?,
                Event::Start(_) => {
                    // Count the child as open so that a caller that tolerates the error can skip it.
                    self.enter()?;
                    return Err(XmlParseError::UnexpectedChild { element });
                }
                Event::End(_) => {
                    self.depth -= 1;
                    return Ok(out);
                }
                Event::Eof => return Err(XmlParseError::UnexpectedEof),
                _ => continue,
            };
            if out.len() + piece.len() > MAX_TEXT_LEN {
                return Err(XmlParseError::TextTooLong {
                    element,
                    limit: MAX_TEXT_LEN,
                });
            }
            out.push_str(&piece);
        }
    }

    /// Reads the text of the current element, trimmed, and converts it with `parse`.
    fn value<T>(
        &mut self,
        element: &'static str,
        reason: &'static str,
        parse: impl FnOnce(&str) -> Option<T>,
    ) -> Result<T, XmlParseError> {
        let text = self.text(element)?;
        match parse(text.trim()) {
            Some(value) => Ok(value),
            None => Err(XmlParseError::InvalidValue {
                element,
                value: text,
                reason,
            }),
        }
    }

    /// Reads an unsigned decimal number.
    pub(crate) fn u64(&mut self, element: &'static str) -> Result<u64, XmlParseError> {
        self.value(element, "not an unsigned decimal number", |t| {
            t.bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| t.parse().ok())?
        })
    }

    /// Reads an unsigned decimal number that fits 32 bits.
    pub(crate) fn u32(&mut self, element: &'static str) -> Result<u32, XmlParseError> {
        self.value(element, "not an unsigned 32-bit decimal number", |t| {
            t.bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| t.parse().ok())?
        })
    }

    /// Reads `true` or `false` (any case).
    pub(crate) fn boolean(&mut self, element: &'static str) -> Result<bool, XmlParseError> {
        self.value(element, "neither true nor false", |t| {
            if t.eq_ignore_ascii_case("true") {
                Some(true)
            } else if t.eq_ignore_ascii_case("false") {
                Some(false)
            } else {
                None
            }
        })
    }

    /// Reads an RFC 3339 timestamp.
    pub(crate) fn timestamp(
        &mut self,
        element: &'static str,
    ) -> Result<OffsetDateTime, XmlParseError> {
        self.value(element, "not an RFC 3339 timestamp", parse_timestamp)
    }

    /// Reads a value that has a fixed set of names; unknown names give `None` rather than an error, so
    /// that a newer server's values (a new storage class, a new checksum algorithm) do not break parsing.
    pub(crate) fn lenient<T: std::str::FromStr>(
        &mut self,
        element: &'static str,
    ) -> Result<Option<T>, XmlParseError> {
        Ok(self.text(element)?.trim().parse().ok())
    }

    /// Reads an `Owner` / `Initiator` container.
    pub(crate) fn owner(&mut self, element: &'static str) -> Result<Owner, XmlParseError> {
        let mut owner = Owner::default();
        let mut has_id = false;
        self.children(|r, name| {
            match name {
                b"ID" => {
                    owner.id = r.text("ID")?;
                    has_id = true;
                }
                b"DisplayName" => owner.display_name = Some(r.text("DisplayName")?),
                _ => {}
            }
            Ok(())
        })?;
        if !has_id {
            return Err(XmlParseError::MissingElement {
                parent: element,
                element: "ID",
            });
        }
        Ok(owner)
    }
}

/// Fails with [`XmlParseError::TooManyEntries`] when `len` entries are already held.
pub(crate) fn check_room(
    len: usize,
    limit: usize,
    element: &'static str,
) -> Result<(), XmlParseError> {
    if len >= limit {
        Err(XmlParseError::TooManyEntries { element, limit })
    } else {
        Ok(())
    }
}

/// Unwraps a required element.
pub(crate) fn required<T>(
    value: Option<T>,
    parent: &'static str,
    element: &'static str,
) -> Result<T, XmlParseError> {
    value.ok_or(XmlParseError::MissingElement { parent, element })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(input: &str) -> Result<Vec<String>, XmlParseError> {
        XmlReader::document(input.as_bytes(), "R", |r| {
            let mut keys = Vec::new();
            r.children(|r, name| {
                if name == b"Key" {
                    keys.push(r.text("Key")?);
                }
                Ok(())
            })?;
            Ok(keys)
        })
    }

    #[test]
    fn reads_children_and_skips_the_unknown() {
        let xml = r#"<?xml version="1.0"?>
            <!-- c --><s3:R xmlns:s3="urn:x"><s3:Key> a </s3:Key><New><Key>nested</Key></New><Key/>
            <Key><![CDATA[<raw>]]>&amp;&#x41;</Key></s3:R>
        "#;
        assert_eq!(keys(xml).unwrap(), [" a ", "", "<raw>&A"]);
    }

    #[test]
    fn hostile_structures_are_clear_errors() {
        assert_eq!(keys(""), Err(XmlParseError::UnexpectedEof));
        assert_eq!(keys("<R><Key>x</Key>"), Err(XmlParseError::UnexpectedEof));
        assert!(matches!(keys("<Q/>"), Err(XmlParseError::WrongRoot { .. })));
        assert_eq!(keys("<R/><R/>"), Err(XmlParseError::TrailingContent));
        assert_eq!(keys("<R/>junk"), Err(XmlParseError::TrailingContent));
        assert!(matches!(keys("junk<R/>"), Err(XmlParseError::Syntax(_))));
        assert!(matches!(
            keys("<R><Key>x</Kex></R>"),
            Err(XmlParseError::Syntax(_))
        ));
        assert!(matches!(
            keys("<R><Key>&bogus;</Key></R>"),
            Err(XmlParseError::Syntax(_))
        ));
        assert_eq!(
            keys("<!DOCTYPE R [<!ENTITY x \"y\">]><R/>"),
            Err(XmlParseError::Doctype)
        );
        assert_eq!(
            keys("<R><Key><b/></Key></R>"),
            Err(XmlParseError::UnexpectedChild { element: "Key" })
        );
        let deep = format!("<R>{}{}</R>", "<a>".repeat(100), "</a>".repeat(100));
        assert_eq!(
            keys(&deep),
            Err(XmlParseError::TooDeep { limit: MAX_DEPTH })
        );
        let long = format!("<R><Key>{}</Key></R>", "x".repeat(MAX_TEXT_LEN + 1));
        assert!(matches!(
            keys(&long),
            Err(XmlParseError::TextTooLong { .. })
        ));
        assert_eq!(keys("<R><Key>\u{FF}</Key></R>").unwrap(), ["\u{FF}"]);
        assert!(keys_bytes(b"<R><Key>\xff</Key></R>").is_err());
    }

    fn keys_bytes(input: &[u8]) -> Result<(), XmlParseError> {
        XmlReader::document(input, "R", |r| r.children(|r, _| r.text("Key").map(drop)))
    }
}
