//! GETs and HEADs run on the runtime's workers: many of them at once, on many connections, start no
//! thread (a lookup handed to `block_in_place` moves the worker's other tasks to a new thread for
//! every request, which random reads at queue depth turned into dozens of threads).

mod http_support;

use std::time::Duration;

use brisk_testkit::http::Connection;

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

#[test]
fn concurrent_gets_start_no_threads() {
    let dir = tempfile::tempdir().unwrap();
    // Idle blocking threads (from the PUTs below) end after 50 ms instead of 10 s, so that the
    // count before the GETs is the runtime's own.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_keep_alive(Duration::from_millis(50))
        .enable_all()
        .build()
        .unwrap();
    let server = http_support::start_on(dir.path(), runtime);
    let addr = server.local_addr();
    let mut client = Connection::connect(addr);
    let (r, _) = client.request("PUT", "/threads-bucket", b"");
    assert_eq!(r.status, 200);
    let pattern = vec![0x3c; 64 * 1024];
    client.send("PUT", "/threads-bucket/object", 1 << 20, &pattern);
    assert_eq!(client.receive("PUT", |_| {}).status, 200);
    std::thread::sleep(Duration::from_millis(500));

    const CONNECTIONS: usize = 8;
    let before = threads();
    let start = std::sync::Barrier::new(CONNECTIONS + 1);
    let done = std::sync::Barrier::new(CONNECTIONS + 1);
    let counted = std::sync::Barrier::new(CONNECTIONS + 1);
    let during = std::thread::scope(|s| {
        for c in 0..CONNECTIONS {
            let (start, done, counted) = (&start, &done, &counted);
            s.spawn(move || {
                let mut client = Connection::connect(addr);
                start.wait();
                for i in 0..100u64 {
                    let offset = (i * 7919 + c as u64 * 104_729) % (1 << 20);
                    let request = format!(
                        "{} /threads-bucket/object HTTP/1.1\r\nHost: 127.0.0.1\r\n\
                         Range: bytes={offset}-{}\r\n\r\n",
                        if i % 10 == 0 { "HEAD" } else { "GET" },
                        offset + 4095
                    );
                    client.send_raw(request.as_bytes());
                    let method = if i % 10 == 0 { "HEAD" } else { "GET" };
                    assert_eq!(client.receive(method, |_| {}).status, 206);
                }
                done.wait();
                counted.wait();
            });
        }
        start.wait();
        done.wait();
        // The client threads wait for the count: count them out.
        let during = threads() - CONNECTIONS;
        counted.wait();
        during
    });
    assert_eq!(
        during, before,
        "800 GETs and HEADs on 8 connections changed the thread count from {before} to {during}"
    );
    server.shutdown();
}
