//! `list_objects` against an in-memory model: prefixes, any delimiter string, start-after,
//! continuation tokens and max-keys, on small random key sets (proptest) and on 100,000 keys.

use std::collections::BTreeSet;
use std::time::Instant;

use crate::common::*;
use brisk_server::store::{ListPage, ListQuery, MAX_KEYS_PER_PAGE, Store, StoreError};
use proptest::prelude::*;

/// One listing result: a key or a common prefix. Both order by their string.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Item {
    Key(String),
    Prefix(String),
}

impl Item {
    fn text(&self) -> &str {
        match self {
            Item::Key(s) | Item::Prefix(s) => s,
        }
    }
}

/// Every result of a listing, in order, computed the obvious way over all keys.
fn model(
    keys: &BTreeSet<String>,
    prefix: &str,
    delimiter: Option<&str>,
    after: Option<&str>,
) -> Vec<Item> {
    let mut items: Vec<Item> = keys
        .iter()
        .filter(|k| k.starts_with(prefix))
        .map(
            |k| match delimiter.and_then(|d| k[prefix.len()..].find(d).map(|at| (d, at))) {
                Some((d, at)) => Item::Prefix(k[..prefix.len() + at + d.len()].to_owned()),
                None => Item::Key(k.clone()),
            },
        )
        .filter(|item| after.is_none_or(|a| item.text() > a))
        .collect();
    items.sort_by(|a, b| a.text().cmp(b.text()));
    items.dedup();
    items
}

fn page_items(page: &ListPage) -> Vec<Item> {
    let mut items: Vec<Item> = page
        .objects
        .iter()
        .map(|o| Item::Key(o.key.clone()))
        .chain(page.common_prefixes.iter().map(|p| Item::Prefix(p.clone())))
        .collect();
    items.sort_by(|a, b| a.text().cmp(b.text()));
    items
}

/// Checks one page against the model, then follows continuation tokens to the end and checks that
/// the pages together are exactly the model's results. Returns the number of pages.
fn check_listing(store: &Store, keys: &BTreeSet<String>, query: &ListQuery) -> usize {
    let delimiter = query.delimiter.as_deref().filter(|d| !d.is_empty());
    let expected = model(keys, &query.prefix, delimiter, query.start_after.as_deref());
    let max = query.max_keys.min(MAX_KEYS_PER_PAGE);
    let mut seen = Vec::new();
    let mut query = query.clone();
    let mut pages = 0;
    loop {
        let page = store.list_objects("bkt", &query).unwrap();
        pages += 1;
        let items = page_items(&page);
        let remaining = expected.len() - seen.len();
        assert_eq!(
            items.len(),
            max.min(remaining),
            "page {pages} size for {query:?}"
        );
        assert_eq!(
            page.is_truncated,
            max > 0 && remaining > max,
            "truncation for {query:?}"
        );
        seen.extend(items);
        assert_eq!(
            seen[..],
            expected[..seen.len()],
            "page {pages} content for {query:?}"
        );
        if !page.is_truncated {
            break;
        }
        assert_eq!(page.next_marker.as_deref(), seen.last().map(Item::text));
        query.continuation_token = page.next_continuation_token.clone();
        assert!(query.continuation_token.is_some());
    }
    if max > 0 {
        assert_eq!(seen, expected);
    }
    pages
}

/// Small key sets go through the ordinary PUT path.
fn store_with_keys(keys: &BTreeSet<String>) -> (tempfile::TempDir, Store) {
    let (dir, store) = store_with_bucket();
    for key in keys {
        store.put_object("bkt", key, b"", new_object("e")).unwrap();
    }
    (dir, store)
}

/// Large key sets: one PUT, then copies of it in one transaction (each creating a PUT's file would
/// take minutes on a slow file system and test nothing more about listing).
fn store_with_many_keys(keys: &BTreeSet<String>) -> (tempfile::TempDir, Store) {
    let (dir, store) = store_with_bucket();
    let first = keys.first().unwrap();
    store
        .put_object("bkt", first, b"x", new_object("e"))
        .unwrap();
    let copied = store
        .bulk_copy_for_tests("bkt", first, keys.iter().skip(1).map(String::as_str))
        .unwrap();
    assert_eq!(copied, keys.len() - 1);
    (dir, store)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn listing_matches_the_model(
        keys in proptest::collection::btree_set("[ab/.é]{1,7}", 1..40),
        queries in proptest::collection::vec(
            (
                "[ab/]{0,3}",
                proptest::option::of(prop_oneof![
                    Just("/".to_owned()), Just("a".to_owned()), Just("b/".to_owned()),
                    Just("//".to_owned()), Just("é".to_owned()), Just("".to_owned()),
                ]),
                proptest::option::of("[ab/.é]{0,5}"),
                0usize..7,
            ),
            1..12,
        ),
    ) {
        let (_dir, store) = store_with_keys(&keys);
        for (prefix, delimiter, start_after, max_keys) in queries {
            let query = ListQuery { prefix, delimiter, start_after, continuation_token: None, max_keys };
            check_listing(&store, &keys, &query);
        }
    }
}

#[test]
fn garbage_continuation_tokens_are_rejected() {
    let (_dir, store) = store_with_bucket();
    let query = ListQuery {
        continuation_token: Some("not base64 !".into()),
        ..ListQuery::default()
    };
    assert!(matches!(
        store.list_objects("bkt", &query),
        Err(StoreError::InvalidContinuationToken(_))
    ));
}

#[test]
fn max_keys_is_capped_at_1000() {
    let keys: BTreeSet<String> = (0..1500).map(|i| format!("k{i:05}")).collect();
    let (_dir, store) = store_with_many_keys(&keys);
    let query = ListQuery {
        max_keys: 5000,
        ..ListQuery::default()
    };
    let page = store.list_objects("bkt", &query).unwrap();
    assert_eq!(page.objects.len(), 1000);
    assert!(page.is_truncated);
    assert_eq!(check_listing(&store, &keys, &query), 2);
}

/// 100,000 keys: 100 top-level directories × 10 subdirectories × 100 files.
#[test]
fn hundred_thousand_keys() {
    let keys: BTreeSet<String> = (0..100_000)
        .map(|i| format!("dir{:02}/sub{}/file{:06}", i % 100, (i / 100) % 10, i))
        .collect();
    let started = Instant::now();
    let (_dir, store) = store_with_many_keys(&keys);
    eprintln!("stored 100,000 objects in {:?}", started.elapsed());

    let started = Instant::now();
    // Everything, page by page: 100 pages of 1000.
    let all = ListQuery::default();
    assert_eq!(check_listing(&store, &keys, &all), 100);
    eprintln!(
        "listed 100,000 keys in 100 pages in {:?}",
        started.elapsed()
    );

    // Common prefixes at the top are found by seeking: 100 results read ~100 index entries, not
    // the 100,000 keys under them.
    let top = ListQuery {
        delimiter: Some("/".into()),
        ..ListQuery::default()
    };
    let page = store.list_objects("bkt", &top).unwrap();
    assert_eq!(page.common_prefixes.len(), 100);
    assert!(page.objects.is_empty());
    assert!(
        page.index_entries_read <= 101,
        "read {} index entries for 100 common prefixes",
        page.index_entries_read
    );
    check_listing(&store, &keys, &top);

    for query in [
        ListQuery {
            prefix: "dir07/".into(),
            delimiter: Some("/".into()),
            ..ListQuery::default()
        },
        ListQuery {
            prefix: "dir07/sub3/".into(),
            max_keys: 30,
            ..ListQuery::default()
        },
        ListQuery {
            delimiter: Some("/sub".into()),
            max_keys: 7,
            ..ListQuery::default()
        },
        ListQuery {
            prefix: "dir4".into(),
            delimiter: Some("file0".into()),
            max_keys: 250,
            ..ListQuery::default()
        },
        ListQuery {
            start_after: Some("dir50/sub5/file05".into()),
            max_keys: 999,
            ..ListQuery::default()
        },
        ListQuery {
            start_after: Some("dir50/".into()),
            delimiter: Some("/".into()),
            max_keys: 10,
            ..ListQuery::default()
        },
        ListQuery {
            prefix: "dir99/sub9/file099999".into(),
            ..ListQuery::default()
        },
        ListQuery {
            prefix: "nothing".into(),
            ..ListQuery::default()
        },
    ] {
        check_listing(&store, &keys, &query);
    }

    // Paging through one subdirectory's common prefixes one at a time: each page reads at most three
    // entries (the first key under the prefix it resumes after, which it skips by seeking; the one it
    // returns; the one that shows the page is truncated) although 100 keys sit under each prefix.
    let mut query = ListQuery {
        prefix: "dir42/".into(),
        delimiter: Some("/".into()),
        max_keys: 1,
        ..ListQuery::default()
    };
    let mut prefixes = Vec::new();
    loop {
        let page = store.list_objects("bkt", &query).unwrap();
        assert!(page.index_entries_read <= 3, "{}", page.index_entries_read);
        prefixes.extend(page.common_prefixes);
        if !page.is_truncated {
            break;
        }
        query.continuation_token = page.next_continuation_token;
    }
    assert_eq!(prefixes.len(), 10);
}
