//! Crash safety: a child process (this test binary, re-executed) is killed with SIGKILL at a chosen
//! point of a PUT; reopening the store must show no partial object and remove what the crash left.
//!
//! The child runs the ignored test `crash::crash_child`, selected by `--exact --ignored`, and prints
//! [`READY`] when it has reached the point to be killed at.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use crate::common::*;
use brisk_server::store::{FaultHook, FaultPoint, Store, StoreConfig, StoreError};

const SCENARIO_ENV: &str = "BRISK_STORE_CRASH_SCENARIO";
const ROOT_ENV: &str = "BRISK_STORE_CRASH_ROOT";
/// What the child prints when it has reached the point to be killed at.
const READY: &str = "BRISK-STORE-CRASH-CHILD-READY";
/// How long the parent waits for the child to reach its point, and the child for its end.
const TIMEOUT: Duration = Duration::from_secs(60);
/// The old version of the key, committed before the child starts.
const OLD_BODY: &[u8] = b"the previous, complete version";
/// Size of the new version the child writes.
const NEW_SIZE: usize = 8 << 20;

fn new_body() -> Vec<u8> {
    (0..NEW_SIZE).map(|i| (i % 251) as u8).collect()
}

fn stop_at(point: FaultPoint) -> StoreConfig {
    StoreConfig {
        fault_hook: Some(FaultHook(Arc::new(move |reached| {
            if reached == point {
                println!("{READY}");
                thread::sleep(TIMEOUT);
                panic!("not killed within {TIMEOUT:?}");
            }
        }))),
        ..StoreConfig::default()
    }
}

#[test]
#[ignore = "child process of the crash tests; they start it with the scenario in the environment"]
fn crash_child() {
    let scenario = std::env::var(SCENARIO_ENV).expect("scenario");
    let root = std::env::var(ROOT_ENV).expect("root");
    let config = match scenario.as_str() {
        "mid-write" => StoreConfig::default(),
        "after-rename" => stop_at(FaultPoint::DataRenamed),
        "after-commit" => stop_at(FaultPoint::MetadataCommitted),
        other => panic!("unknown scenario {other}"),
    };
    let store = Store::open(&root, config).unwrap();
    let body = new_body();
    let mut pending = store.begin_put("bkt", "key").unwrap();
    if scenario == "mid-write" {
        // Half the body, then keep writing slowly until killed.
        pending.write_all(&body[..NEW_SIZE / 2]).unwrap();
        println!("{READY}");
        let started = Instant::now();
        while started.elapsed() < TIMEOUT {
            pending.write_all(&body[..4096]).unwrap();
            thread::sleep(Duration::from_millis(10));
        }
        panic!("not killed within {TIMEOUT:?}");
    }
    pending.write_all(&body).unwrap();
    pending.commit(new_object("new")).unwrap();
    panic!("the fault hook should have stopped the commit");
}

/// Creates the store with the old version of the key, then runs the child and kills it at its point.
fn crash(scenario: &str, root: &Path) {
    {
        let store = Store::open(root, StoreConfig::default()).unwrap();
        store.create_bucket("bkt").unwrap();
        store
            .put_object("bkt", "key", OLD_BODY, new_object("old"))
            .unwrap();
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            // The test's name in the binary of the crate's integration tests (`it`).
            "crash::crash_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(SCENARIO_ENV, scenario)
        .env(ROOT_ENV, root)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (ready_tx, ready_rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            // libtest may print its "test crash::crash_child ... " prefix on the same line.
            if line.as_deref().is_ok_and(|l| l.contains(READY)) {
                let _ = ready_tx.send(());
            }
        }
    });
    let ready = ready_rx.recv_timeout(TIMEOUT);
    // Child::kill sends SIGKILL: no destructor, no flush, no cleanup runs in the child.
    child.kill().unwrap();
    let status = child.wait().unwrap();
    ready.unwrap_or_else(|_| panic!("child never reached its point ({status})"));
}

fn read(store: &Store) -> (String, Vec<u8>) {
    let (info, mut file) = store.open_object("bkt", "key").unwrap();
    let mut body = Vec::new();
    file.read_to_end(&mut body).unwrap();
    assert_eq!(body.len() as u64, info.size);
    (info.etag, body)
}

#[test]
fn killed_mid_write_keeps_the_old_version_and_removes_the_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    crash("mid-write", dir.path());
    assert_eq!(
        temp_files(dir.path()).len(),
        1,
        "the crash left the partial body"
    );

    let store = Store::open(dir.path(), StoreConfig::default()).unwrap();
    assert_eq!(store.recovery_report().temp_files_removed, 1);
    assert_eq!(store.recovery_report().orphan_data_files_removed, 0);
    assert!(temp_files(dir.path()).is_empty());
    assert_eq!(read(&store), ("old".to_owned(), OLD_BODY.to_vec()));
    assert_eq!(data_files(dir.path()).len(), 1);
}

#[test]
fn killed_between_rename_and_commit_keeps_the_old_version_and_removes_the_orphan() {
    let dir = tempfile::tempdir().unwrap();
    crash("after-rename", dir.path());
    assert_eq!(
        data_files(dir.path()).len(),
        2,
        "old version and the renamed new body"
    );

    let store = Store::open(dir.path(), StoreConfig::default()).unwrap();
    assert_eq!(store.recovery_report().orphan_data_files_removed, 1);
    assert_eq!(read(&store), ("old".to_owned(), OLD_BODY.to_vec()));
    assert_eq!(data_files(dir.path()).len(), 1);
    assert!(temp_files(dir.path()).is_empty());
}

#[test]
fn killed_after_commit_shows_the_whole_new_version_and_removes_the_old_file() {
    let dir = tempfile::tempdir().unwrap();
    crash("after-commit", dir.path());
    assert_eq!(
        data_files(dir.path()).len(),
        2,
        "the old file was not unlinked yet"
    );

    let store = Store::open(dir.path(), StoreConfig::default()).unwrap();
    assert_eq!(store.recovery_report().orphan_data_files_removed, 1);
    assert_eq!(read(&store), ("new".to_owned(), new_body()));
    assert_eq!(data_files(dir.path()).len(), 1);
    // The store is usable after recovery.
    store.delete_object("bkt", "key").unwrap();
    assert!(matches!(
        store.head_object("bkt", "key"),
        Err(StoreError::NoSuchKey { .. })
    ));
    assert!(data_files(dir.path()).is_empty());
}
