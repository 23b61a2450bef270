//! `ListObjects` (v1 and v2) over the ordered object index.
//!
//! A page is built by walking the `objects` table in key order from the first key after the resume
//! point. Each key becomes either an object entry or, when a delimiter follows the prefix, a common
//! prefix; right after a common prefix is emitted (or skipped as already returned), the walk seeks to
//! the prefix's successor instead of reading the keys under it. So one page reads at most
//! `max_keys + 1` entries plus one per common prefix, and holds at most `max_keys` results: its memory
//! and work do not depend on how many keys the bucket holds.
//!
//! Results are keys and common prefixes in one ascending sequence. The resume point (`start-after`,
//! a continuation token, or a v1 marker) is a string `S`, and a page contains exactly the results
//! greater than `S`. A continuation token is the last result of the previous page, so resuming after
//! a common prefix skips all of its keys and resuming after a key returns the keys that extend it.

use std::ops::Bound;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use redb::ReadableDatabase;

use super::Store;
use super::error::{Result, StoreError};
use super::meta::{self, ObjectSummary};
use super::tables::BUCKETS;
use super::tables::{self, OBJECTS};

/// Most results (keys plus common prefixes) one page returns, as in S3; larger `max_keys` are capped.
pub const MAX_KEYS_PER_PAGE: usize = 1000;

/// Parameters of one listing request.
#[derive(Debug, Clone)]
pub struct ListQuery {
    /// Only keys starting with this are listed.
    pub prefix: String,
    /// Roll keys up into common prefixes at the first occurrence of this string after the prefix.
    /// Any non-empty string works, not only `/`; empty means no delimiter.
    pub delimiter: Option<String>,
    /// List only results after this string (v2 `start-after`, v1 `marker`).
    pub start_after: Option<String>,
    /// A `next_continuation_token` from an earlier page; takes precedence over `start_after`.
    pub continuation_token: Option<String>,
    /// Most results to return, capped at [`MAX_KEYS_PER_PAGE`].
    pub max_keys: usize,
}

impl Default for ListQuery {
    fn default() -> Self {
        Self {
            prefix: String::new(),
            delimiter: None,
            start_after: None,
            continuation_token: None,
            max_keys: MAX_KEYS_PER_PAGE,
        }
    }
}

/// One page of a listing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListPage {
    /// Objects, in key order.
    pub objects: Vec<ObjectSummary>,
    /// Common prefixes, in order (each ends with the delimiter).
    pub common_prefixes: Vec<String>,
    /// More results follow this page.
    pub is_truncated: bool,
    /// Token for the next page (v2), when truncated.
    pub next_continuation_token: Option<String>,
    /// The last result of this page, when truncated: v1's `NextMarker`.
    pub next_marker: Option<String>,
    /// Index entries read to build this page. It stays within `max_keys + 1` plus one per common
    /// prefix, whatever the number of keys under those prefixes; exposed for tests and metrics.
    pub index_entries_read: usize,
}

/// Encodes a resume point as an opaque token.
fn encode_token(resume_after: &str) -> String {
    URL_SAFE_NO_PAD.encode(resume_after)
}

fn decode_token(token: &str) -> Result<String> {
    URL_SAFE_NO_PAD
        .decode(token)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(|| StoreError::InvalidContinuationToken(token.to_owned()))
}

impl Store {
    /// Lists one page of `bucket`; see [`ListQuery`] for the parameters and the module docs for the
    /// ordering and resume rules.
    pub fn list_objects(&self, bucket: &str, query: &ListQuery) -> Result<ListPage> {
        let resume = match &query.continuation_token {
            Some(token) => Some(decode_token(token)?),
            None => query.start_after.clone(),
        };
        let delimiter = query.delimiter.as_deref().filter(|d| !d.is_empty());
        let max_keys = query.max_keys.min(MAX_KEYS_PER_PAGE);
        let prefix = query.prefix.as_str();

        let txn = self.inner.db.begin_read()?;
        if txn.open_table(BUCKETS)?.get(bucket)?.is_none() {
            return Err(StoreError::NoSuchBucket(bucket.to_owned()));
        }
        let objects = txn.open_table(OBJECTS)?;
        let mut page = ListPage::default();
        if max_keys == 0 {
            return Ok(page);
        }

        let (start, end) = tables::prefix_range(bucket, prefix);
        let key_offset = tables::bucket_prefix_len(bucket);
        let mut lower = Bound::Included(start.clone());
        if let Some(resume) = &resume {
            let resume_key = tables::object_key(bucket, resume);
            if resume_key >= start {
                lower = Bound::Excluded(resume_key);
            }
        }
        let mut results = 0usize;
        let mut last: Option<String> = None;

        'seek: loop {
            let range = objects.range::<&[u8]>((
                lower.as_ref().map(Vec::as_slice),
                Bound::Excluded(end.as_slice()),
            ))?;
            for entry in range {
                let (index_key, record) = entry?;
                page.index_entries_read += 1;
                let key = std::str::from_utf8(&index_key.value()[key_offset..])
                    .map_err(|_| StoreError::CorruptMetadata("key is not UTF-8"))?;
                let rolled_up = delimiter.and_then(|d| {
                    key[prefix.len()..]
                        .find(d)
                        .map(|at| &key[..prefix.len() + at + d.len()])
                });
                match rolled_up {
                    Some(common) => {
                        let already_returned = resume.as_deref().is_some_and(|r| common <= r);
                        if !already_returned {
                            if results == max_keys {
                                page.is_truncated = true;
                                break 'seek;
                            }
                            results += 1;
                            page.common_prefixes.push(common.to_owned());
                            last = Some(common.to_owned());
                        }
                        // Skip every key under the common prefix with one seek.
                        let past = tables::prefix_successor(&tables::object_key(bucket, common))
                            .expect("a key never ends in 0xff");
                        lower = Bound::Included(past);
                        continue 'seek;
                    }
                    None => {
                        if results == max_keys {
                            page.is_truncated = true;
                            break 'seek;
                        }
                        results += 1;
                        let (summary, _) = meta::decode_summary(key, record.value())?;
                        page.objects.push(summary);
                        last = Some(key.to_owned());
                    }
                }
            }
            break;
        }

        if page.is_truncated {
            let last = last.expect("a truncated page has at least one result");
            page.next_continuation_token = Some(encode_token(&last));
            page.next_marker = Some(last);
        }
        Ok(page)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_reject_garbage() {
        for s in ["a", "a/b/", "é\u{0}\n", &"x".repeat(1024)] {
            assert_eq!(decode_token(&encode_token(s)).unwrap(), s);
        }
        assert!(matches!(
            decode_token("!!!"),
            Err(StoreError::InvalidContinuationToken(_))
        ));
        // Valid base64 of bytes that are not UTF-8.
        assert!(decode_token(&URL_SAFE_NO_PAD.encode([0xff, 0xfe])).is_err());
    }
}
