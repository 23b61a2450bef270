//! `Client::get_many` against a backend: every byte of objects of mixed sizes, errors in place, the
//! queue depth as a bound on objects held, keys taken and connections opened.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::Backend;
use crate::support::{bounded, new_bucket, pattern};
use brisk_client::{Client, Error};
use brisk_mem::MemoryBudget;

const MIB: usize = 1024 * 1024;
const STEP: Duration = Duration::from_secs(120);

/// A client with a budget of its own (the default one is the process's, shared by the tests).
fn client(b: &Backend) -> Client {
    b.builder()
        .memory_budget(MemoryBudget::new(256 * MIB))
        .build()
        .unwrap()
}

/// Bytes reserved on `c`'s budget, less the released buffers it keeps for reuse.
fn held(c: &Client) -> usize {
    let budget = c.memory_budget();
    budget.reserved() - budget.metrics().kept_bytes
}

fn size_of(i: usize) -> usize {
    match i % 5 {
        0 => 0,
        1 => 1 + i,
        2 => 4096 * (i % 7) + 3,
        3 => 64 * 1024 + i,
        _ => MIB + 17 * i,
    }
}

pub async fn every_object_arrives_whole_and_missing_keys_fail_in_place(b: &Backend) {
    bounded(STEP, async {
        let c = client(b);
        let bucket = new_bucket(&c, "many").await;
        let mut bodies = HashMap::new();
        for i in 0..60 {
            let body = pattern(size_of(i), i as u8);
            c.put(&bucket, &format!("k{i}"), &body).await.unwrap();
            bodies.insert(format!("k{i}"), body);
        }
        // Every seventh key missing.
        let keys: Vec<String> = (0..70)
            .map(|i| {
                if i % 7 == 6 {
                    format!("missing{i}")
                } else {
                    format!("k{}", i % 60)
                }
            })
            .collect();
        let mut reads = c
            .get_many(keys.iter().map(|k| (bucket.as_str(), k.as_str())), 8)
            .unwrap();
        let mut seen = vec![false; keys.len()];
        while let Some((index, result)) = reads.next().await {
            let index = index as usize;
            assert!(!seen[index], "key {index} completed twice");
            seen[index] = true;
            match bodies.get(&keys[index]) {
                Some(body) => {
                    let buf = result.unwrap();
                    assert_eq!(buf.len(), body.len(), "{}", keys[index]);
                    assert!(buf[..] == body[..], "{}", keys[index]);
                }
                None => assert!(
                    matches!(result, Err(Error::NoSuchKey(_))),
                    "{}: {result:?}",
                    keys[index]
                ),
            }
        }
        assert!(seen.iter().all(|s| *s));
        assert!(
            c.metrics().connections_opened <= 8,
            "{:?}",
            c.metrics().connections_opened
        );
        drop(reads);
        assert_eq!(held(&c), 0, "every buffer dropped");
    })
    .await;
}

pub async fn keys_are_taken_lazily_and_at_most_the_queue_depth_is_held(b: &Backend) {
    bounded(STEP, async {
        let c = client(b);
        let bucket = new_bucket(&c, "lazy").await;
        let body = pattern(100_000, 3);
        for i in 0..20 {
            c.put(&bucket, &format!("k{i}"), &body).await.unwrap();
        }
        let pulled = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&pulled);
        let b = bucket.clone();
        // A million keys, of which 20 exist: only as many are taken as are read.
        let keys = (0..1_000_000u64).map(move |i| {
            counter.fetch_add(1, Ordering::Relaxed);
            (b.clone(), format!("k{}", i % 20))
        });
        let mut reads = c.get_many(keys, 4).unwrap();
        let mut kept = Vec::new();
        for _ in 0..10 {
            let (_, result) = reads.next().await.unwrap();
            kept.push(result.unwrap());
            // Slow consumer: the reads that the free slots started finish meanwhile.
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert!(pulled.load(Ordering::Relaxed) <= kept.len() as u64 + 4);
            // What the caller holds, plus at most 4 objects in flight or finished.
            assert!(
                held(&c) <= (kept.len() + 4) * body.len(),
                "{} reserved with {} held",
                held(&c),
                kept.len()
            );
        }
        assert_eq!(reads.keys_taken(), pulled.load(Ordering::Relaxed));
        assert!(kept.iter().all(|b| b[..] == body[..]));
    })
    .await;
}

pub async fn an_object_larger_than_the_budget_fails_alone(b: &Backend) {
    bounded(STEP, async {
        let c = b
            .builder()
            .memory_budget(MemoryBudget::new(MIB))
            .build()
            .unwrap();
        let bucket = new_bucket(&c, "budget").await;
        c.put(&bucket, "big", &pattern(2 * MIB, 1)).await.unwrap();
        c.put(&bucket, "small", &pattern(1000, 2)).await.unwrap();
        let keys = ["small", "big", "small", "nope", "small"];
        let mut reads = c
            .get_many(keys.iter().map(|k| (bucket.as_str(), *k)), 1)
            .unwrap();
        let mut results = HashMap::new();
        while let Some((index, result)) = reads.next().await {
            results.insert(index, result);
        }
        assert_eq!(results.len(), keys.len());
        for (i, key) in keys.iter().enumerate() {
            match (*key, &results[&(i as u64)]) {
                ("small", Ok(buf)) => assert_eq!(buf.len(), 1000),
                ("big", Err(Error::Memory(_))) | ("nope", Err(Error::NoSuchKey(_))) => {}
                (key, other) => panic!("{key}: {other:?}"),
            }
        }
    })
    .await;
}

pub async fn pairs_across_buckets_and_a_zero_queue_depth(b: &Backend) {
    bounded(STEP, async {
        let c = client(b);
        let first = new_bucket(&c, "pairs-a").await;
        let second = new_bucket(&c, "pairs-b").await;
        c.put(&first, "same", b"first").await.unwrap();
        c.put(&second, "same", b"second").await.unwrap();
        let mut reads = c
            .get_many([(first.as_str(), "same"), (second.as_str(), "same")], 2)
            .unwrap();
        let mut got = [Vec::new(), Vec::new()];
        while let Some((index, result)) = reads.next().await {
            got[index as usize] = result.unwrap().to_vec();
        }
        assert_eq!(got, [b"first".to_vec(), b"second".to_vec()]);
        assert!(matches!(
            c.get_many([(first.as_str(), "same")], 0),
            Err(Error::InvalidArgument { .. })
        ));
    })
    .await;
}

pub async fn a_set_that_keeps_every_object_fails_those_past_the_budget_instead_of_waiting(
    b: &Backend,
) {
    bounded(STEP, async {
        let c = b
            .builder()
            .memory_budget(MemoryBudget::new(3 * MIB))
            .build()
            .unwrap();
        let bucket = new_bucket(&c, "hold").await;
        let body = pattern(900 * 1024, 5);
        for i in 0..5 {
            c.put(&bucket, &format!("k{i}"), &body).await.unwrap();
        }
        let mut reads = c.object_reads(4).unwrap().hold_all();
        for i in 0..5 {
            reads.submit(i, bucket.as_str(), format!("k{i}"));
        }
        reads.submit(5, bucket.as_str(), "missing");
        // Every object kept, as a list would: three fit the budget together, two never will.
        let mut kept = Vec::new();
        let mut refused = 0;
        while let Some((index, result)) = reads.next().await {
            match result {
                Ok(buf) => kept.push(buf),
                Err(Error::Memory(_)) => refused += 1,
                Err(Error::NoSuchKey(_)) => assert_eq!(index, 5),
                Err(e) => panic!("{index}: {e}"),
            }
        }
        assert_eq!((kept.len(), refused), (3, 2));
        assert!(kept.iter().all(|b| b[..] == body[..]));
    })
    .await;
}

pub async fn reads_into_destinations_chosen_from_the_length(b: &Backend) {
    bounded(STEP, async {
        let c = client(b);
        let bucket = new_bucket(&c, "chosen").await;
        c.put(&bucket, "a", b"hello").await.unwrap();
        let mut reads = c
            .object_reads_with(2, |client, bucket, key| async move {
                client
                    .get_into_chosen(&bucket, &key, |len| Ok(vec![7u8; len + 3]))
                    .await
            })
            .unwrap();
        reads.submit(0, bucket.as_str(), "a");
        reads.submit(1, bucket.as_str(), "nope");
        let mut results = HashMap::new();
        while let Some((index, result)) = reads.next().await {
            results.insert(index, result);
        }
        let (dst, n) = results.remove(&0).unwrap().unwrap();
        assert_eq!((&dst[..], n), (&b"hello\x07\x07\x07"[..], 5));
        assert!(matches!(results.remove(&1), Some(Err(Error::NoSuchKey(_)))));
        let small = c.get_into_chosen(&bucket, "a", |_| Ok(vec![0u8; 2])).await;
        assert!(
            matches!(
                small,
                Err(Error::BufferTooSmall {
                    length: 5,
                    capacity: 2
                })
            ),
            "{small:?}"
        );
    })
    .await;
}
