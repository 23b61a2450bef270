//! `brisk cp` and `brisk cat` through a faulty network (resets in the middle of bodies, a storm of
//! `503 SlowDown`, a stalled body, flipped bytes) in front of `brisk serve`: every run ends with the
//! exact bytes, or a non-zero exit with a clear message and no file left behind.
//!
//! Alone in its test binary: a schedule such as "every 2nd response" counts the responses of the
//! parallel part downloads together, so which part it hits depends on their timing; with the other
//! tests of the crate running beside it in one process, one part can be hit on every attempt.

mod support;

use std::time::Duration;

use brisk_testkit::fault_proxy::{Fault, FaultProxy, Schedule};
use support::{brisk, serve};

const MIB: usize = 1 << 20;

fn port_of(url: &str) -> u16 {
    url.rsplit(':').next().unwrap().parse().unwrap()
}

#[test]
fn cp_and_cat_through_faults_are_exact_or_fail_clearly() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("data"), &[]);
    let port = port_of(&server.url);
    let body: Vec<u8> = (0..20 * MIB + 5)
        .map(|i| (i * 7 + i / 4093) as u8)
        .collect();
    let source = dir.path().join("source");
    std::fs::write(&source, &body).unwrap();
    assert!(brisk(&server.url, &["mb", "s3://faults"]).status.success());
    let up = brisk(
        &server.url,
        &["cp", source.to_str().unwrap(), "s3://faults/obj"],
    );
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let target = out_dir.join("copy");
    let target = target.to_str().unwrap();
    let at = 3 * MIB as u64 + 17;

    let recoverable = [
        ("reset once", Fault::ResetAt { at }, Schedule::First(1)),
        (
            "reset on every 2nd response",
            Fault::ResetAt { at },
            Schedule::EveryNth(2),
        ),
        ("two 503 SlowDown", Fault::SlowDown, Schedule::First(2)),
        (
            "a flipped byte once",
            Fault::Flip { at },
            Schedule::First(1),
        ),
        (
            "a 2 s stall once",
            Fault::Stall {
                at,
                pause: Duration::from_secs(2),
            },
            Schedule::First(1),
        ),
    ];
    for (what, fault, schedule) in recoverable {
        // `cp` downloads parts through the batch engine; `cat` reads one stream.
        let cp_schedule = schedule.for_parallel_parts();
        let proxy = runtime.block_on(FaultProxy::start(port, fault, cp_schedule));
        let cp = brisk(&proxy.endpoint, &["cp", "s3://faults/obj", target]);
        assert!(
            cp.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&cp.stderr)
        );
        assert!(
            std::fs::read(target).unwrap() == body,
            "{what}: cp is exact"
        );
        std::fs::remove_file(target).unwrap();
        assert!(proxy.applied() >= 1, "{what}: the fault happened");
        if matches!(fault, Fault::Flip { .. }) {
            continue; // a stream to stdout cannot be taken back: see the endless case below
        }
        let proxy = runtime.block_on(FaultProxy::start(port, fault, schedule));
        let cat = brisk(&proxy.endpoint, &["cat", "s3://faults/obj"]);
        assert!(
            cat.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&cat.stderr)
        );
        assert!(cat.stdout == body, "{what}: cat is exact");
    }

    // Faults without end strike a few bytes into every body: a read resumed from where it failed
    // (each range of a `cp` download is a stream resumed mid-body) must make no progress either,
    // or it rides them out.
    let at = 17;
    let endless = [
        (
            "reset on every response",
            Fault::ResetAt { at },
            Schedule::EveryNth(1),
        ),
        (
            "503 SlowDown on every connection",
            Fault::SlowDown,
            Schedule::EveryNth(1),
        ),
        (
            "a flipped byte in every response",
            Fault::Flip { at },
            Schedule::EveryNth(1),
        ),
    ];
    for (what, fault, schedule) in endless {
        let proxy = runtime.block_on(FaultProxy::start(port, fault, schedule));
        let cp = brisk(&proxy.endpoint, &["cp", "s3://faults/obj", target]);
        let stderr = String::from_utf8_lossy(&cp.stderr);
        assert!(!cp.status.success(), "{what}: cp must fail");
        assert!(stderr.starts_with("brisk: "), "{what}: {stderr}");
        assert_eq!(
            std::fs::read_dir(&out_dir).unwrap().count(),
            0,
            "{what}: no file left"
        );
        let cat = brisk(&proxy.endpoint, &["cat", "s3://faults/obj"]);
        assert!(
            !cat.status.success(),
            "{what}: cat must fail before its stream ends"
        );
        assert!(
            cat.stdout.len() < body.len() || cat.stdout != body,
            "{what}"
        );
    }
}
