//! An object's bytes, open for reading: one data file, or one file per part for an object completed
//! from a multipart upload (completion records the part files as the body's segments instead of
//! copying them into one file, so a 4 GiB upload is written to disk once, not twice).
//!
//! Every file stays readable and unchanged while it is open, even if the key is overwritten or
//! deleted meanwhile (files are never modified after commit, and an unlinked file lives on while a
//! descriptor holds it), so a reader always sees one whole version.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::ops::Range;
use std::os::unix::fs::FileExt;

/// One data file of a body and where it sits in the object.
#[derive(Debug)]
struct Segment {
    file: File,
    start: u64,
    len: u64,
}

/// The open data files of one object version, readable as one stream ([`Read`] + [`Seek`]) or
/// piece by piece for `sendfile` ([`ObjectBody::pieces`]).
///
/// A body may hold only the files of the span a request reads (`ObjectBody::skip` stands for the
/// others): a 256 KiB range of an object completed from 128 parts then opens one file, not 128.
/// Reading where no file was opened is an error, never a short or shifted read.
#[derive(Debug)]
pub struct ObjectBody {
    segments: Segments,
    len: u64,
    position: u64,
}

/// The segments, without a heap allocation for the usual body of one file: opening an object for a
/// GET allocates nothing here.
#[derive(Debug)]
enum Segments {
    Empty,
    One(Segment),
    Many(Vec<Segment>),
}

impl Segments {
    fn as_slice(&self) -> &[Segment] {
        match self {
            Self::Empty => &[],
            Self::One(segment) => std::slice::from_ref(segment),
            Self::Many(segments) => segments,
        }
    }
}

impl ObjectBody {
    /// A body of no files yet.
    pub(crate) fn empty() -> Self {
        Self {
            segments: Segments::Empty,
            len: 0,
            position: 0,
        }
    }

    /// Appends the next data file, `len` bytes of the object.
    pub(crate) fn push(&mut self, file: File, len: u64) {
        let segment = Segment {
            file,
            start: self.len,
            len,
        };
        self.len += len;
        self.segments = match std::mem::replace(&mut self.segments, Segments::Empty) {
            Segments::Empty => Segments::One(segment),
            Segments::One(first) => Segments::Many(vec![first, segment]),
            Segments::Many(mut all) => {
                all.push(segment);
                Segments::Many(all)
            }
        };
    }

    /// Accounts for the next `len` bytes of the object without opening their file: the body keeps
    /// its size and offsets, and those bytes cannot be read.
    pub(crate) fn skip(&mut self, len: u64) {
        self.len += len;
    }

    /// The body's size in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the body is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many files the body has open (1 for a whole object from a single PUT, the parts a span
    /// touches for one completed from several).
    pub fn segment_count(&self) -> usize {
        self.segments.as_slice().len()
    }

    /// The bytes of `span` as (file, offset in that file, length) pieces, in order: what a
    /// `sendfile` loop sends one after the other. Parts of `span` past the end are not returned.
    pub fn pieces(&self, span: Range<u64>) -> impl Iterator<Item = (&File, u64, u64)> + '_ {
        self.segments.as_slice().iter().filter_map(move |s| {
            let from = span.start.max(s.start);
            let to = span.end.min(s.start + s.len);
            (from < to).then(|| (&s.file, from - s.start, to - from))
        })
    }

    /// Reads at `offset` of the body into `buf` without moving the stream position; returns the
    /// bytes read (0 at or past the end).
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let end = offset.saturating_add(buf.len() as u64).min(self.len);
        if offset >= end {
            return Ok(0);
        }
        // The opened file holding `offset`; none if that part of the object was skipped.
        let Some(segment) = self
            .segments
            .as_slice()
            .iter()
            .find(|s| s.start <= offset && offset < s.start + s.len)
        else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "read outside the span of the object that was opened",
            ));
        };
        let (file, at) = (&segment.file, offset - segment.start);
        let len = (end - offset).min(segment.len - at);
        let n = file.read_at(&mut buf[..len as usize], at)?;
        if n == 0 && len > 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "an object's data file is shorter than its record says",
            ));
        }
        Ok(n)
    }
}

impl Read for ObjectBody {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.read_at(buf, self.position)?;
        self.position += n as u64;
        Ok(n)
    }
}

impl Seek for ObjectBody {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.position.checked_add_signed(d),
        };
        self.position = target
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek before the start"))?;
        Ok(self.position)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn body(parts: &[&[u8]]) -> ObjectBody {
        let mut body = ObjectBody::empty();
        for bytes in parts {
            let mut f = tempfile::tempfile().unwrap();
            f.write_all(bytes).unwrap();
            body.push(f, bytes.len() as u64);
        }
        body
    }

    #[test]
    fn reads_across_segments_as_one_stream() {
        let mut b = body(&[b"hello ", b"", b"segmented ", b"world"]);
        assert_eq!(b.len(), 21);
        let mut all = Vec::new();
        b.read_to_end(&mut all).unwrap();
        assert_eq!(all, b"hello segmented world");
        b.seek(SeekFrom::Start(4)).unwrap();
        let mut some = [0u8; 9];
        b.read_exact(&mut some).unwrap();
        assert_eq!(&some, b"o segment");
        assert_eq!(b.seek(SeekFrom::End(-5)).unwrap(), 16);
        assert!(b.seek(SeekFrom::Current(-100)).is_err());
    }

    #[test]
    fn pieces_cover_a_span_exactly() {
        let b = body(&[b"0123", b"4567", b"89"]);
        let spans: Vec<(u64, u64)> = b.pieces(2..9).map(|(_, at, len)| (at, len)).collect();
        assert_eq!(spans, [(2, 2), (0, 4), (0, 1)]);
        assert_eq!(b.pieces(4..8).count(), 1);
        assert_eq!(b.pieces(10..12).count(), 0);
        assert_eq!(b.pieces(0..10).map(|p| p.2).sum::<u64>(), 10);
    }

    #[test]
    fn bytes_of_skipped_segments_cannot_be_read() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(b"4567").unwrap();
        let mut b = ObjectBody::empty();
        b.skip(4);
        b.push(f, 4);
        b.skip(2);
        assert_eq!((b.len(), b.segment_count()), (10, 1));
        let mut buf = [0u8; 4];
        assert_eq!(b.read_at(&mut buf, 5).unwrap(), 3);
        assert_eq!(&buf[..3], b"567");
        assert!(b.read_at(&mut buf, 2).is_err(), "before the opened span");
        assert!(b.read_at(&mut buf, 8).is_err(), "after it");
        assert_eq!(b.read_at(&mut buf, 10).unwrap(), 0, "at the end");
        let spans: Vec<(u64, u64)> = b.pieces(0..10).map(|(_, at, len)| (at, len)).collect();
        assert_eq!(spans, [(0, 4)], "pieces come only from opened files");
    }

    #[test]
    fn a_short_file_is_an_error_not_a_short_object() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(b"abc").unwrap();
        let mut b = ObjectBody::empty();
        b.push(f, 10);
        let mut buf = [0u8; 10];
        assert_eq!(b.read_at(&mut buf, 0).unwrap(), 3);
        assert!(b.read_at(&mut buf, 3).is_err());
    }
}
