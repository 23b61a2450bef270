//! Fault injection: a tiny S3 stand-in in the test process (brisk-testkit's `fake_s3`) answers with
//! scripted failures (503, a connection dropped mid-body, an object changed between requests,
//! silence, a closed keep-alive connection) and records what the client sent, so retries, resumed
//! reads and timeouts are checked request by request.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use brisk_client::{Client, Credentials, Error, PayloadSigning, RetryPolicy};
use brisk_testkit::fake_s3::{Action, FakeS3, Script, Seen};
use brisk_wire::http::RequestHead;

/// Starts the stand-in; returns its endpoint and the log of requests.
async fn stand_in(script: Script) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let server = FakeS3::start(script).await;
    (server.endpoint, server.seen)
}

fn client(endpoint: &str, retry: RetryPolicy, read_timeout: Duration) -> Client {
    Client::builder()
        .endpoint(endpoint)
        .credentials(Credentials::new("AKID", "SECRET"))
        .region("us-east-1")
        .retry(retry)
        .read_timeout(read_timeout)
        .build()
        .unwrap()
}

fn fast_retries(max_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        initial_backoff: Duration::from_millis(2),
        max_backoff: Duration::from_millis(20),
    }
}

fn slow_down() -> Action {
    Action::Respond {
        status: 503,
        headers: vec![("x-amz-request-id", "RID503".into())],
        body: b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>".to_vec(),
    }
}

fn object(body: &[u8], etag: &str) -> Action {
    Action::Respond {
        status: 200,
        headers: vec![("etag", etag.into())],
        body: body.to_vec(),
    }
}

const LIMIT: Duration = Duration::from_secs(20);

async fn bounded<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(LIMIT, future)
        .await
        .expect("test took longer than its limit")
}

#[tokio::test]
async fn slow_down_then_success_is_retried() {
    bounded(async {
        let (endpoint, seen) = stand_in(Arc::new(|i, _: &RequestHead| {
            if i == 0 {
                slow_down()
            } else {
                object(b"payload", "\"e1\"")
            }
        }))
        .await;
        let c = client(&endpoint, fast_retries(3), LIMIT);
        let got = c.get_bytes("bucket", "key").await.unwrap();
        assert_eq!(&got[..], b"payload");
        let m = c.metrics();
        assert_eq!((m.requests_sent, m.retries), (2, 1));
        // The 503 body was read, so the retry went over the same connection.
        assert_eq!(m.connections_opened, 1);
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2);
        assert!(
            seen.iter()
                .all(|s| s.method == "GET" && s.target == "/bucket/key")
        );
    })
    .await;
}

#[tokio::test]
async fn retries_are_bounded_and_the_last_error_is_typed() {
    bounded(async {
        let (endpoint, seen) = stand_in(Arc::new(|_, _: &RequestHead| slow_down())).await;
        let c = client(&endpoint, fast_retries(4), LIMIT);
        let err = c.get_bytes("bucket", "key").await.unwrap_err();
        let Error::Throttled(service) = &err else {
            panic!("expected Throttled, got {err:?}");
        };
        assert_eq!(service.code, "SlowDown");
        assert_eq!(service.request_id.as_deref(), Some("RID503"));
        assert_eq!(seen.lock().unwrap().len(), 4);
        assert_eq!(c.metrics().retries, 3);
    })
    .await;
}

#[tokio::test]
async fn errors_that_cannot_change_are_not_retried() {
    bounded(async {
        let (endpoint, seen) = stand_in(Arc::new(|_, _: &RequestHead| Action::Respond {
            status: 404,
            headers: vec![],
            body: b"<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message><Key>key</Key></Error>".to_vec(),
        }))
        .await;
        let c = client(&endpoint, fast_retries(5), LIMIT);
        assert!(matches!(c.get_bytes("bucket", "key").await, Err(Error::NoSuchKey(_))));
        assert_eq!(seen.lock().unwrap().len(), 1);
    })
    .await;
}

fn object_bytes() -> Vec<u8> {
    (0..100_000u32).map(|i| (i % 251) as u8).collect()
}

/// A GET cut off after 40,000 bytes; the continuation answers `resume` for the rest.
fn cut_then(resume: fn(&RequestHead, &[u8]) -> Action) -> Script {
    Arc::new(move |i, head: &RequestHead| {
        let full = object_bytes();
        if i == 0 {
            Action::CutOff {
                status: 200,
                declared: full.len(),
                headers: vec![("etag", "\"v1\"".into())],
                body: full[..40_000].to_vec(),
            }
        } else {
            resume(head, &full)
        }
    })
}

fn partial_if_unchanged(head: &RequestHead, full: &[u8]) -> Action {
    if head.headers().get_str("if-match") != Some("\"v1\"") {
        return Action::Respond {
            status: 412,
            headers: vec![],
            body: b"<Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message></Error>".to_vec(),
        };
    }
    let range = head.headers().get_str("range").unwrap();
    let (from, to) = range
        .strip_prefix("bytes=")
        .unwrap()
        .split_once('-')
        .unwrap();
    let (from, to): (usize, usize) = (from.parse().unwrap(), to.parse().unwrap());
    Action::Respond {
        status: 206,
        headers: vec![
            ("etag", "\"v1\"".into()),
            ("content-range", format!("bytes {from}-{to}/{}", full.len())),
        ],
        body: full[from..=to].to_vec(),
    }
}

#[tokio::test]
async fn a_read_cut_mid_body_resumes_pinned_to_the_etag() {
    bounded(async {
        let (endpoint, seen) = stand_in(cut_then(partial_if_unchanged)).await;
        let c = client(&endpoint, fast_retries(3), LIMIT);
        let got = c.get_bytes("bucket", "key").await.unwrap();
        assert!(got[..] == object_bytes()[..]);
        assert_eq!(c.metrics().resumed_reads, 1);
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[1].range.as_deref(), Some("bytes=40000-99999"));
        assert_eq!(seen[1].if_match.as_deref(), Some("\"v1\""));
        assert_ne!(seen[0].connection, seen[1].connection);
    })
    .await;
}

#[tokio::test]
async fn a_resumed_range_read_asks_only_for_its_own_bytes() {
    bounded(async {
        let (endpoint, seen) = stand_in(Arc::new(|i, head: &RequestHead| {
            let full = object_bytes();
            if i == 0 {
                // The first ranged GET (bytes 10000..=59999) is cut after 5,000 bytes.
                let mut action = partial_if_unchanged_v1(head, &full);
                if let Action::Respond { body, headers, .. } = &mut action {
                    return Action::CutOff {
                        status: 206,
                        declared: body.len(),
                        headers: std::mem::take(headers),
                        body: body[..5000].to_vec(),
                    };
                }
                action
            } else {
                partial_if_unchanged(head, &full)
            }
        }))
        .await;
        let c = client(&endpoint, fast_retries(3), LIMIT);
        let mut dst = vec![0u8; 50_000];
        let n = c
            .get_range_into("bucket", "key", 10_000, &mut dst)
            .await
            .unwrap();
        assert_eq!(n, 50_000);
        assert!(dst[..] == object_bytes()[10_000..60_000]);
        let seen = seen.lock().unwrap();
        assert_eq!(seen[0].range.as_deref(), Some("bytes=10000-59999"));
        assert_eq!(seen[1].range.as_deref(), Some("bytes=15000-59999"));
        assert_eq!(seen[1].if_match.as_deref(), Some("\"v1\""));
    })
    .await;
}

/// A 206 for the requested range, without checking `If-Match` (the first request carries none).
fn partial_if_unchanged_v1(head: &RequestHead, full: &[u8]) -> Action {
    let mut pinned = RequestHead::with_request_line(head.method(), head.target()).unwrap();
    for (name, value) in head.headers().iter() {
        pinned.headers_mut().append(name, value).unwrap();
    }
    pinned.headers_mut().set("if-match", "\"v1\"").unwrap();
    partial_if_unchanged(&pinned, full)
}

#[tokio::test]
async fn an_object_changed_between_requests_is_not_mixed() {
    bounded(async {
        let (endpoint, _seen) = stand_in(cut_then(|_, _| Action::Respond {
            status: 412,
            headers: vec![],
            body: b"<Error><Code>PreconditionFailed</Code><Message>changed</Message></Error>"
                .to_vec(),
        }))
        .await;
        let c = client(&endpoint, fast_retries(3), LIMIT);
        let mut dst = vec![0u8; 100_000];
        let err = c.get_into("bucket", "key", &mut dst).await.unwrap_err();
        assert!(
            matches!(err, Error::ObjectChanged { ref etag } if etag == "\"v1\""),
            "{err:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_cut_read_without_retries_is_a_clear_error() {
    bounded(async {
        let (endpoint, seen) = stand_in(cut_then(partial_if_unchanged)).await;
        let c = client(&endpoint, RetryPolicy::none(), LIMIT);
        let err = c.get_bytes("bucket", "key").await.unwrap_err();
        assert!(
            matches!(
                err,
                Error::Http(brisk_wire::http::HttpError::UnexpectedEof {
                    expected: 100_000,
                    received: 40_000
                })
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("40000 of 100000"), "{err}");
        assert_eq!(seen.lock().unwrap().len(), 1);
    })
    .await;
}

#[tokio::test]
async fn a_silent_server_times_out() {
    bounded(async {
        let (endpoint, seen) = stand_in(Arc::new(|_, _: &RequestHead| Action::Silence)).await;
        let c = client(&endpoint, fast_retries(2), Duration::from_millis(200));
        let err = c.head("bucket", "key").await.unwrap_err();
        assert!(
            matches!(
                err,
                Error::Http(brisk_wire::http::HttpError::HeadTimeout { .. })
            ),
            "{err:?}"
        );
        assert_eq!(seen.lock().unwrap().len(), 2);
    })
    .await;
}

/// Three GETs, `pause` apart, from a server that closes each connection after its answer (no
/// retries configured): every one is answered. Returns the client's metrics and the requests the
/// server saw.
async fn gets_from_a_server_that_closes(pause: Duration) -> (brisk_client::ClientMetrics, usize) {
    let (endpoint, seen) = stand_in(Arc::new(|_, _: &RequestHead| Action::RespondAndClose {
        status: 200,
        body: b"ok".to_vec(),
    }))
    .await;
    let c = client(&endpoint, RetryPolicy::none(), LIMIT);
    for _ in 0..3 {
        assert_eq!(&c.get_bytes("bucket", "key").await.unwrap()[..], b"ok");
        tokio::time::sleep(pause).await;
    }
    let seen = seen.lock().unwrap().len();
    (c.metrics(), seen)
}

#[tokio::test]
async fn a_keep_alive_connection_closed_by_the_server_is_replaced() {
    bounded(async {
        // Idle long enough to be probed before reuse, as between requests seconds apart.
        let (m, seen) = gets_from_a_server_that_closes(Duration::from_millis(150)).await;
        // Each closed connection was noticed before use: no request was sent on one.
        assert_eq!(m.connections_opened, 3, "{m:?}");
        assert_eq!(m.connections_discarded, 2, "{m:?}");
        assert_eq!(m.requests_sent, 3, "{m:?}");
        assert_eq!(seen, 3);
    })
    .await;
}

#[tokio::test]
async fn a_connection_closed_right_after_its_answer_fails_one_attempt_and_is_replaced() {
    bounded(async {
        // The close has arrived, but a connection this recently used is not probed: it is
        // reused, fails before any answer, and the request goes again on a new connection (not a
        // retry: none are configured).
        let (m, seen) = gets_from_a_server_that_closes(Duration::from_millis(20)).await;
        assert_eq!(m.connections_opened, 3, "{m:?}");
        assert_eq!(m.connections_discarded, 0, "{m:?}");
        assert_eq!(m.connections_reused, 2, "{m:?}");
        assert_eq!(seen, 3);
    })
    .await;
}

#[tokio::test]
async fn connecting_to_nothing_fails_clearly() {
    bounded(async {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let c = client(&format!("http://127.0.0.1:{port}"), fast_retries(2), LIMIT);
        let err = c.head("bucket", "key").await.unwrap_err();
        assert!(matches!(err, Error::Connect { .. }), "{err:?}");
        assert!(err.to_string().contains(&port.to_string()), "{err}");
        assert_eq!(c.metrics().retries, 1);
    })
    .await;
}

/// A stand-in for one multipart upload: created as `UP1`, each part answered with `part()`, aborted
/// (DELETE) and completed as S3 answers them; anything else is refused.
fn multipart_upload(part: fn() -> Action) -> Script {
    Arc::new(move |_, head: &RequestHead| {
        let target = head.target();
        let xml = |body: &[u8]| Action::Respond {
            status: 200,
            headers: vec![],
            body: body.to_vec(),
        };
        match head.method() {
            "POST" if target.ends_with("?uploads=") => xml(b"<InitiateMultipartUploadResult><Bucket>bucket</Bucket><Key>key</Key><UploadId>UP1</UploadId></InitiateMultipartUploadResult>"),
            "PUT" => part(),
            "DELETE" => Action::Respond {
                status: 204,
                headers: vec![],
                body: vec![],
            },
            "POST" => xml(b"<CompleteMultipartUploadResult><Bucket>bucket</Bucket><Key>key</Key><ETag>\"whole-2\"</ETag></CompleteMultipartUploadResult>"),
            _ => Action::Respond {
                status: 400,
                headers: vec![],
                body: b"<Error><Code>Unexpected</Code><Message>unexpected request</Message></Error>".to_vec(),
            },
        }
    })
}

#[tokio::test]
async fn a_failed_multipart_upload_is_aborted() {
    bounded(async {
        let (endpoint, seen) = stand_in(multipart_upload(|| Action::Respond {
            status: 500,
            headers: vec![],
            body: b"<Error><Code>InternalError</Code><Message>disk on fire</Message></Error>"
                .to_vec(),
        }))
        .await;
        let c = client(&endpoint, RetryPolicy::none(), LIMIT);
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("f");
        std::fs::write(&source, vec![7u8; 11 * 1024 * 1024]).unwrap();
        let options = brisk_client::TransferOptions {
            part_size: 5 * 1024 * 1024,
            parts_in_flight: 1,
            ..brisk_client::TransferOptions::default()
        };
        let err = c
            .upload("bucket", "key", &source, options)
            .await
            .unwrap_err();
        assert!(matches!(err, Error::ServerError(_)), "{err:?}");
        let seen = seen.lock().unwrap();
        let methods: Vec<&str> = seen.iter().map(|s| s.method.as_str()).collect();
        assert_eq!(methods, ["POST", "PUT", "DELETE"]);
        assert_eq!(seen[1].target, "/bucket/key?partNumber=1&uploadId=UP1");
        assert_eq!(seen[2].target, "/bucket/key?uploadId=UP1");
    })
    .await;
}

/// A create-only multipart upload (`if_none_match_any`) sends `If-None-Match: *` on its
/// CompleteMultipartUpload (and not before: the parts go to the upload, not to the key); a
/// completion refused with 412 leaves the upload at the service (S3 keeps it), so it is aborted,
/// from a file as from an `ObjectWriter`.
#[tokio::test]
async fn a_refused_conditional_completion_is_aborted() {
    bounded(async {
        let (endpoint, seen) = stand_in(Arc::new(|_, head: &RequestHead| {
            let target = head.target();
            let conditional = head.headers().get_str("if-none-match") == Some("*");
            let completion = head.method() == "POST" && target.ends_with("?uploadId=UP1");
            let answer = |status, body: &[u8]| Action::Respond {
                status,
                headers: vec![("etag", "\"p\"".into())],
                body: body.to_vec(),
            };
            let unexpected = |why: &str| {
                let body = format!("<Error><Code>Unexpected</Code><Message>{why}</Message></Error>");
                answer(400, body.as_bytes())
            };
            match head.method() {
                _ if conditional && !completion => unexpected("If-None-Match before the completion"),
                "POST" if target.ends_with("?uploads=") => answer(200, b"<InitiateMultipartUploadResult><Bucket>bucket</Bucket><Key>key</Key><UploadId>UP1</UploadId></InitiateMultipartUploadResult>"),
                "PUT" => answer(200, b""),
                "DELETE" => answer(204, b""),
                "POST" if conditional => answer(412, b"<Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message><Condition>If-None-Match</Condition></Error>"),
                _ => unexpected("a completion without If-None-Match"),
            }
        }))
        .await;
        let c = client(&endpoint, RetryPolicy::none(), LIMIT);
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("f");
        let body = vec![7u8; 6 * 1024 * 1024];
        std::fs::write(&source, &body).unwrap();
        let options = brisk_client::TransferOptions {
            part_size: 5 * 1024 * 1024,
            parts_in_flight: 1,
            if_none_match_any: true,
            ..brisk_client::TransferOptions::default()
        };
        let err = c
            .upload("bucket", "key", &source, options.clone())
            .await
            .unwrap_err();
        assert!(matches!(err, Error::PreconditionFailed(_)), "{err:?}");
        let mut w = c.object_writer("bucket", "key", options).unwrap();
        w.write(&body).await.unwrap();
        let err = w.finish().await.unwrap_err();
        assert!(matches!(err, Error::PreconditionFailed(_)), "{err:?}");
        let seen = seen.lock().unwrap();
        let requests: Vec<String> = seen
            .iter()
            .map(|s| format!("{} {}", s.method, s.target))
            .collect();
        let one_upload = [
            "POST /bucket/key?uploads=",
            "PUT /bucket/key?partNumber=1&uploadId=UP1",
            "PUT /bucket/key?partNumber=2&uploadId=UP1",
            "POST /bucket/key?uploadId=UP1",
            "DELETE /bucket/key?uploadId=UP1",
        ];
        let mut file = requests[..5].to_vec();
        file[1..3].sort();
        assert_eq!(file, one_upload, "from a file");
        assert_eq!(requests[5..], one_upload, "from a writer");
    })
    .await;
}

/// A write cancelled while the writer's CreateMultipartUpload is in flight does not lose the
/// upload it creates: the creation goes on as a task of its own, and the failed writer's `finish`
/// (or its drop) aborts that upload once its id arrives.
#[tokio::test]
async fn a_write_cancelled_while_the_upload_is_created_still_aborts_it() {
    bounded(async {
        let (endpoint, seen) = stand_in(Arc::new(|_, head: &RequestHead| {
            match (head.method(), head.target().ends_with("?uploads=")) {
                ("POST", true) => Action::RespondLate {
                    delay: Duration::from_millis(300),
                    body: b"<InitiateMultipartUploadResult><Bucket>bucket</Bucket><Key>key</Key><UploadId>UP1</UploadId></InitiateMultipartUploadResult>".to_vec(),
                },
                ("DELETE", _) => Action::Respond {
                    status: 204,
                    headers: vec![],
                    body: vec![],
                },
                _ => Action::Respond {
                    status: 400,
                    headers: vec![],
                    body: b"<Error><Code>Unexpected</Code><Message>unexpected request</Message></Error>".to_vec(),
                },
            }
        }))
        .await;
        let c = client(&endpoint, RetryPolicy::none(), LIMIT);
        let options = brisk_client::TransferOptions {
            part_size: 5 * 1024 * 1024,
            ..brisk_client::TransferOptions::default()
        };
        let body = vec![3u8; 6 * 1024 * 1024];
        for finish in [true, false] {
            seen.lock().unwrap().clear();
            let mut w = c.object_writer("bucket", "key", options.clone()).unwrap();
            // Cancelled while the creation waits for its late answer.
            let written =
                tokio::time::timeout(Duration::from_millis(50), w.write(&body)).await;
            assert!(written.is_err(), "the write waits for the creation");
            if finish {
                let err = w.finish().await.unwrap_err();
                assert!(err.to_string().contains("cancelled"), "{err}");
            } else {
                drop(w);
                let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
                while seen.lock().unwrap().len() < 2 && tokio::time::Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
            let requests: Vec<String> = seen
                .lock()
                .unwrap()
                .iter()
                .map(|s| format!("{} {}", s.method, s.target))
                .collect();
            assert_eq!(
                requests,
                ["POST /bucket/key?uploads=", "DELETE /bucket/key?uploadId=UP1"],
                "finish: {finish}"
            );
        }
    })
    .await;
}

#[tokio::test]
async fn a_large_body_waits_for_100_continue_and_is_not_sent_when_refused() {
    bounded(async {
        let (endpoint, seen) = stand_in(Arc::new(|i, _: &RequestHead| {
            if i == 0 {
                Action::RefuseBeforeBody {
                    status: 403,
                    body: b"<Error><Code>AccessDenied</Code><Message>no</Message></Error>".to_vec(),
                }
            } else {
                object(b"", "\"put\"")
            }
        }))
        .await;
        let c = client(&endpoint, RetryPolicy::none(), LIMIT);
        let body = vec![5u8; brisk_client::client::EXPECT_CONTINUE_THRESHOLD];
        let err = c.put("bucket", "key", &body).await.unwrap_err();
        assert!(matches!(err, Error::AccessDenied(_)), "{err:?}");
        // Refused before the body: the server saw the head and not one byte of the body (asserted
        // below), whatever the scheduling delays on a loaded machine.
        // The same body again: the server says 100 Continue and receives all of it.
        c.put("bucket", "key", &body).await.unwrap();
        // A small body does not ask.
        c.put("bucket", "small", b"tiny").await.unwrap();
        let seen = seen.lock().unwrap();
        assert_eq!(seen[0].expect.as_deref(), Some("100-continue"));
        assert_eq!(seen[0].body_received, 0);
        assert_eq!(seen[1].expect.as_deref(), Some("100-continue"));
        assert_eq!(seen[1].body_received, body.len() as u64);
        assert_eq!(seen[2].expect, None);
        // The refused exchange left its connection unusable (the body was never sent); the next
        // request opened a new one.
        assert_ne!(seen[0].connection, seen[1].connection);
        assert_eq!(seen[1].connection, seen[2].connection);
    })
    .await;
}

#[tokio::test]
async fn the_parts_of_a_created_upload_do_not_wait_for_100_continue() {
    bounded(async {
        let (endpoint, seen) = stand_in(multipart_upload(|| object(b"", "\"part\""))).await;
        let c = client(&endpoint, RetryPolicy::none(), LIMIT);
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("f");
        std::fs::write(&source, vec![7u8; 11 * 1024 * 1024]).unwrap();
        // Signed parts go from blocks, unsigned ones from the file (`sendfile`, aws-chunked).
        for payload_signing in [PayloadSigning::Signed, PayloadSigning::Unsigned] {
            let options = brisk_client::TransferOptions {
                part_size: 5 * 1024 * 1024,
                payload_signing,
                ..brisk_client::TransferOptions::default()
            };
            c.upload("bucket", "key", &source, options).await.unwrap();
        }
        // A single PUT of the same size still asks first.
        let body = vec![5u8; 6 * 1024 * 1024];
        c.put("bucket", "one", &body).await.unwrap();
        let seen = seen.lock().unwrap();
        let puts: Vec<_> = seen.iter().filter(|s| s.method == "PUT").collect();
        assert_eq!(
            puts.len(),
            3 + 3 + 1,
            "three parts per upload, then the PUT"
        );
        for part in &puts[..6] {
            assert_eq!(part.expect, None, "{}", part.target);
            assert!(part.body_received >= 1024 * 1024, "{}", part.target);
        }
        assert_eq!(puts[6].expect.as_deref(), Some("100-continue"));
        assert_eq!(puts[6].body_received, body.len() as u64);
    })
    .await;
}

/// A GET answered with `body` and a CRC32C header computed over `stored`, checking that the client
/// asked for the stored checksum.
fn object_with_crc32c(body: &'static [u8], stored: &'static [u8]) -> Script {
    Arc::new(move |_, head: &RequestHead| {
        assert_eq!(
            head.headers().get_str("x-amz-checksum-mode"),
            Some("ENABLED"),
            "a whole-object GET asks for the stored checksum"
        );
        Action::Respond {
            status: 200,
            headers: vec![
                ("etag", "\"e1\"".into()),
                (
                    "x-amz-checksum-crc32c",
                    brisk_client::UploadChecksum::Crc32c.compute(stored),
                ),
            ],
            body: body.to_vec(),
        }
    })
}

#[tokio::test]
async fn damaged_bytes_are_an_error_not_data() {
    bounded(async {
        let (endpoint, _) = stand_in(object_with_crc32c(b"hellO world", b"hello world")).await;
        let c = client(&endpoint, fast_retries(1), LIMIT);
        let err = c.get_bytes("bucket", "key").await.unwrap_err();
        match &err {
            Error::ChecksumMismatch {
                algorithm,
                expected,
                computed,
                ..
            } => {
                assert_eq!(*algorithm, "CRC32C");
                assert_ne!(expected, computed);
            }
            other => panic!("expected ChecksumMismatch, got {other:?}"),
        }
        assert!(err.to_string().contains("bucket/key"), "{err}");
        let mut buf = [0u8; 64];
        let err = c.get_into("bucket", "key", &mut buf).await.unwrap_err();
        assert!(matches!(err, Error::ChecksumMismatch { .. }), "{err:?}");
    })
    .await;
}

/// `upload_object_stream` from a source whose bytes do not match its stored checksum: the
/// mismatch is found as the source ends, before the upload completes, and the upload is aborted
/// (no CompleteMultipartUpload is sent, so no damaged object appears).
#[tokio::test]
async fn a_copy_from_a_damaged_source_is_aborted_not_completed() {
    bounded(async {
        const SIZE: usize = 6 * 1024 * 1024 + 17;
        let (endpoint, seen) = stand_in(Arc::new(|_, head: &RequestHead| {
            let target = head.target().to_owned();
            match head.method() {
                "GET" => {
                    let mut body = vec![7u8; SIZE];
                    let stored = brisk_client::UploadChecksum::Crc32c.compute(&body);
                    body[SIZE - 1] = 8;
                    Action::Respond {
                        status: 200,
                        headers: vec![("etag", "\"e1\"".into()), ("x-amz-checksum-crc32c", stored)],
                        body,
                    }
                }
                "POST" if target.ends_with("?uploads=") => Action::Respond {
                    status: 200,
                    headers: vec![],
                    body: b"<InitiateMultipartUploadResult><Bucket>dst</Bucket><Key>copy</Key><UploadId>UP3</UploadId></InitiateMultipartUploadResult>".to_vec(),
                },
                "PUT" => object(b"", "\"part\""),
                "DELETE" => Action::Respond {
                    status: 204,
                    headers: vec![],
                    body: vec![],
                },
                _ => Action::Respond {
                    status: 400,
                    headers: vec![],
                    body: b"<Error><Code>Unexpected</Code><Message>unexpected request</Message></Error>".to_vec(),
                },
            }
        }))
        .await;
        let c = client(&endpoint, RetryPolicy::none(), LIMIT);
        let source = c.get_stream("src", "object").await.unwrap();
        let options = brisk_client::TransferOptions {
            part_size: 5 * 1024 * 1024,
            parts_in_flight: 1,
            ..brisk_client::TransferOptions::default()
        };
        let err = c
            .upload_object_stream("dst", "copy", source, options)
            .await
            .unwrap_err();
        assert!(matches!(err, Error::ChecksumMismatch { .. }), "{err:?}");
        let seen = seen.lock().unwrap();
        let requests: Vec<(&str, &str)> = seen
            .iter()
            .map(|s| (s.method.as_str(), s.target.as_str()))
            .collect();
        assert!(
            !requests
                .iter()
                .any(|(m, t)| *m == "POST" && t.contains("uploadId")),
            "no completion: {requests:?}"
        );
        assert_eq!(
            requests.last(),
            Some(&("DELETE", "/dst/copy?uploadId=UP3")),
            "{requests:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn intact_bytes_with_a_checksum_are_returned() {
    bounded(async {
        let (endpoint, _) = stand_in(object_with_crc32c(b"hello world", b"hello world")).await;
        let c = client(&endpoint, fast_retries(1), LIMIT);
        assert_eq!(
            &c.get_bytes("bucket", "key").await.unwrap()[..],
            b"hello world"
        );
        let mut buf = [0u8; 64];
        assert_eq!(c.get_into("bucket", "key", &mut buf).await.unwrap(), 11);
    })
    .await;
}

#[tokio::test]
async fn composite_checksums_of_multipart_objects_are_not_mistaken_for_damage() {
    bounded(async {
        let (endpoint, _) = stand_in(Arc::new(|_, _: &RequestHead| Action::Respond {
            status: 200,
            headers: vec![
                ("etag", "\"e1-2\"".into()),
                ("x-amz-checksum-crc32c", "AAAAAA==-2".into()),
                ("x-amz-checksum-type", "COMPOSITE".into()),
            ],
            body: b"two parts".to_vec(),
        }))
        .await;
        let c = client(&endpoint, fast_retries(1), LIMIT);
        assert_eq!(
            &c.get_bytes("bucket", "key").await.unwrap()[..],
            b"two parts"
        );
    })
    .await;
}

/// A multipart object of three parts (40,000 + 40,000 + 17,000 bytes) stored with a COMPOSITE
/// CRC32C, as other tools' multipart uploads store it: HEAD gives `<base64>-3`, HEAD with
/// `partNumber=1` the first part's size and the part count, ranged GETs the bytes (one byte
/// flipped in every GET when `damaged`).
fn composite_object(part_sizes: [usize; 3], damaged: bool) -> (Script, Vec<u8>) {
    use brisk_wire::checksum::{ChecksumAlgorithm, Checksummer, CompositeChecksum};
    let full: Vec<u8> = (0..part_sizes.iter().sum::<usize>())
        .map(|i| (i * 31 + i / 1000) as u8)
        .collect();
    let mut composite = CompositeChecksum::new(ChecksumAlgorithm::Crc32c).unwrap();
    let mut at = 0;
    for size in part_sizes {
        composite
            .push_part(&Checksummer::checksum(
                ChecksumAlgorithm::Crc32c,
                &full[at..at + size],
            ))
            .unwrap();
        at += size;
    }
    let stored = composite.finish().to_string();
    let object = full.clone();
    let script: Script = Arc::new(move |_, head: &RequestHead| {
        if head.method() == "HEAD" && head.target().contains("partNumber=1") {
            return Action::Respond {
                status: 206,
                headers: vec![
                    ("etag", "\"v1\"".into()),
                    ("x-amz-mp-parts-count", "3".into()),
                ],
                body: vec![0; part_sizes[0]],
            };
        }
        if head.method() == "HEAD" {
            return Action::Respond {
                status: 200,
                headers: vec![
                    ("etag", "\"v1\"".into()),
                    ("x-amz-checksum-crc32c", stored.clone()),
                    ("x-amz-checksum-type", "COMPOSITE".into()),
                ],
                body: vec![0; object.len()],
            };
        }
        let mut action = if head.headers().get_str("range").is_none() {
            // A whole-object GET (get_bytes, get_into) carries the checksum like the HEAD.
            Action::Respond {
                status: 200,
                headers: vec![
                    ("etag", "\"v1\"".into()),
                    ("x-amz-checksum-crc32c", stored.clone()),
                    ("x-amz-checksum-type", "COMPOSITE".into()),
                ],
                body: object.clone(),
            }
        } else {
            partial_if_unchanged(head, &object)
        };
        if let (true, Action::Respond { body, .. }) = (damaged, &mut action) {
            let middle = body.len() / 2;
            body[middle] ^= 0x20;
        }
        action
    });
    (script, full)
}

/// `get_bytes` and `get_into` of the 3-part composite object at `bucket/key` both fail with
/// `ChecksumMismatch`.
async fn whole_reads_fail_the_composite(c: &brisk_client::Client, into: &mut [u8]) {
    for err in [
        c.get_bytes("bucket", "key").await.map(|_| ()).unwrap_err(),
        c.get_into("bucket", "key", into)
            .await
            .map(|_| ())
            .unwrap_err(),
    ] {
        assert!(
            matches!(&err, Error::ChecksumMismatch { expected, .. } if expected.ends_with("-3")),
            "{err:?}"
        );
    }
}

/// Whole reads into memory of an object whose parts are whole MiB check the composite from the
/// CRCs of the 1 MiB blocks taken as the body landed (no second pass over the buffer); the answer
/// is the same as over the bytes: intact passes, one flipped byte is `ChecksumMismatch`.
#[tokio::test]
async fn whole_reads_check_composites_of_whole_mebibyte_parts_from_the_blocks_as_they_land() {
    bounded(async {
        const MIB: usize = 1 << 20;
        let (script, full) = composite_object([2 * MIB, 2 * MIB, 300_000], false);
        let (endpoint, seen) = stand_in(script).await;
        let c = client(&endpoint, fast_retries(1), LIMIT);
        assert!(c.get_bytes("bucket", "key").await.unwrap()[..] == full[..]);
        let mut into = vec![0u8; full.len() + 5];
        assert_eq!(
            c.get_into("bucket", "key", &mut into).await.unwrap(),
            full.len()
        );
        assert!(into[..full.len()] == full[..]);
        // The part layout was asked for once, and kept for the second read of the same version.
        let layout_heads = seen
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.method == "HEAD" && r.target.contains("partNumber=1"))
            .count();
        assert_eq!(layout_heads, 1);

        let (script, _) = composite_object([2 * MIB, 2 * MIB, 300_000], true);
        let (endpoint, _) = stand_in(script).await;
        let c = client(&endpoint, fast_retries(1), LIMIT);
        whole_reads_fail_the_composite(&c, &mut into).await;
    })
    .await;
}

/// `download` rebuilds a composite (per-part) checksum from ranges cut on the part boundaries it
/// learns from `partNumber=1`, `get_bytes` and `get_into` over the bytes in memory: intact bytes
/// pass, damaged bytes fail with `ChecksumMismatch` (and `download` leaves no file); parts of
/// unequal size are not checked (and not mistaken for damage).
#[tokio::test]
async fn downloads_check_composite_checksums_part_by_part() {
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("copy");
        // Ranges of 16,000 bytes: parts of 40,000 need ranges cut at 32,000 → 40,000 (two ranges
        // per GET here: 8 ranges over 3 workers).
        let options = brisk_client::TransferOptions {
            part_size: 16_000,
            parts_in_flight: 3,
            ..Default::default()
        };

        let (script, full) = composite_object([40_000, 40_000, 17_000], false);
        let (endpoint, seen) = stand_in(script).await;
        let c = client(&endpoint, fast_retries(1), LIMIT);
        c.download("bucket", "key", &target, options.clone())
            .await
            .unwrap();
        assert!(std::fs::read(&target).unwrap() == full);
        let seen = seen.lock().unwrap().clone();
        assert!(
            seen.iter()
                .any(|r| r.method == "HEAD" && r.target.contains("partNumber=1"))
        );
        // A GET may span several ranges (and so cross a part boundary): the sums are cut at the
        // boundaries, not the requests. Together the GETs read every byte once.
        let mut ranges: Vec<(usize, usize)> = seen
            .iter()
            .filter_map(|r| r.range.as_deref())
            .map(|range| {
                let (from, to) = range
                    .strip_prefix("bytes=")
                    .unwrap()
                    .split_once('-')
                    .unwrap();
                (from.parse().unwrap(), to.parse().unwrap())
            })
            .collect();
        ranges.sort();
        let mut next = 0;
        for (from, to) in ranges {
            assert_eq!(from, next, "the GETs leave a gap or overlap at {from}");
            next = to + 1;
        }
        assert_eq!(next, full.len());
        std::fs::remove_file(&target).unwrap();

        // get_bytes and get_into check the composite over the bytes in memory.
        assert!(c.get_bytes("bucket", "key").await.unwrap()[..] == full[..]);
        let mut into = vec![0u8; full.len()];
        assert_eq!(
            c.get_into("bucket", "key", &mut into).await.unwrap(),
            full.len()
        );

        let (script, _) = composite_object([40_000, 40_000, 17_000], true);
        let (endpoint, _) = stand_in(script).await;
        let c = client(&endpoint, fast_retries(1), LIMIT);
        whole_reads_fail_the_composite(&c, &mut into).await;
        let err = c
            .download("bucket", "key", &target, options.clone())
            .await
            .unwrap_err();
        match &err {
            Error::ChecksumMismatch {
                algorithm,
                expected,
                ..
            } => {
                assert_eq!(*algorithm, "CRC32C");
                assert!(expected.ends_with("-3"), "{expected}");
            }
            other => panic!("expected ChecksumMismatch, got {other:?}"),
        }
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "no file left"
        );

        // Part 1 is not the size of the others (the parts count disagrees with the size): the
        // composite cannot be rebuilt, so the download is not checked, and succeeds.
        let (script, full) = composite_object([30_000, 50_000, 17_000], false);
        let (endpoint, _) = stand_in(script).await;
        let c = client(&endpoint, fast_retries(1), LIMIT);
        c.download("bucket", "key", &target, options).await.unwrap();
        assert!(std::fs::read(&target).unwrap() == full);
    })
    .await;
}

/// A single-part object of 50,000 bytes with `etag` and `headers` on its HEAD; ranged GETs serve
/// its bytes, one byte flipped in each when `damaged`.
fn plain_object(
    etag: String,
    headers: Vec<(&'static str, String)>,
    damaged: bool,
) -> (Script, Vec<u8>) {
    let full: Vec<u8> = (0..50_000usize).map(|i| (i * 13 + i / 777) as u8).collect();
    let object = full.clone();
    let script: Script = Arc::new(move |_, head: &RequestHead| {
        let mut all = headers.clone();
        all.push(("etag", etag.clone()));
        if head.method() == "HEAD" {
            return Action::Respond {
                status: 200,
                headers: all,
                body: vec![0; object.len()],
            };
        }
        let range = head.headers().get_str("range").unwrap();
        let (from, to) = range
            .strip_prefix("bytes=")
            .unwrap()
            .split_once('-')
            .unwrap();
        let (from, to): (usize, usize) = (from.parse().unwrap(), to.parse().unwrap());
        let mut body = object[from..=to].to_vec();
        if damaged {
            body[0] ^= 0x20;
        }
        Action::Respond {
            status: 206,
            headers: vec![
                ("etag", etag.clone()),
                (
                    "content-range",
                    format!("bytes {from}-{to}/{}", object.len()),
                ),
            ],
            body,
        }
    });
    (script, full)
}

/// SHA-256 checksums (single-part objects) are checked in a second pass over the file; an MD5
/// ETag only when asked (`verify_md5_etag`): intact bytes pass, damaged bytes fail with
/// `ChecksumMismatch` and leave no file.
#[tokio::test]
async fn downloads_check_sha256_and_on_request_md5_etags_in_a_second_pass() {
    use brisk_wire::checksum::{ChecksumAlgorithm, Checksummer, Md5};
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("copy");
        let options = brisk_client::TransferOptions {
            part_size: 16_000,
            ..Default::default()
        };
        let (_, full) = plain_object(String::new(), vec![], false);
        let sha = Checksummer::checksum(ChecksumAlgorithm::Sha256, &full).to_base64();
        let md5 = {
            let mut m = Md5::new();
            m.update(&full);
            format!("\"{}\"", m.finalize().to_hex())
        };
        let sha_headers = vec![("x-amz-checksum-sha256", sha.clone())];

        for damaged in [false, true] {
            let (script, _) = plain_object("\"v1\"".into(), sha_headers.clone(), damaged);
            let (endpoint, _) = stand_in(script).await;
            let c = client(&endpoint, fast_retries(1), LIMIT);
            let got = c.download("bucket", "key", &target, options.clone()).await;
            if damaged {
                let err = got.unwrap_err();
                assert!(
                    matches!(&err, Error::ChecksumMismatch { algorithm, expected, .. }
                        if *algorithm == "SHA256" && *expected == sha),
                    "{err:?}"
                );
                assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
            } else {
                got.unwrap();
                assert!(std::fs::read(&target).unwrap() == full);
                std::fs::remove_file(&target).unwrap();
            }
        }

        // No stored checksum, an MD5 ETag: damage passes unless the ETag check is asked for.
        let (script, _) = plain_object(md5.clone(), vec![], true);
        let (endpoint, _) = stand_in(script).await;
        let c = client(&endpoint, fast_retries(1), LIMIT);
        c.download("bucket", "key", &target, options.clone()).await.unwrap();
        assert!(std::fs::read(&target).unwrap() != full, "not checked by default");
        std::fs::remove_file(&target).unwrap();
        let checked = brisk_client::TransferOptions {
            verify_md5_etag: true,
            ..options.clone()
        };
        let err = c
            .download("bucket", "key", &target, checked.clone())
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::ChecksumMismatch { algorithm, .. } if algorithm.starts_with("MD5")),
            "{err:?}"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let (script, _) = plain_object(md5, vec![], false);
        let (endpoint, _) = stand_in(script).await;
        let c = client(&endpoint, fast_retries(1), LIMIT);
        c.download("bucket", "key", &target, checked).await.unwrap();
        assert!(std::fs::read(&target).unwrap() == full);
    })
    .await;
}

/// Reads a stream to its end in 7,000-byte steps.
async fn read_stream(stream: &mut brisk_client::ObjectStream) -> Result<Vec<u8>, Error> {
    let mut got = Vec::new();
    let mut buf = vec![0u8; 7_000];
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(got);
        }
        got.extend_from_slice(&buf[..n]);
    }
}

#[tokio::test]
async fn a_stream_cut_mid_body_resumes_pinned_to_the_etag() {
    bounded(async {
        let (endpoint, seen) = stand_in(cut_then(partial_if_unchanged)).await;
        let c = client(&endpoint, fast_retries(3), LIMIT);
        let mut stream = c.get_stream("bucket", "key").await.unwrap();
        let got = read_stream(&mut stream).await.unwrap();
        assert!(got == object_bytes());
        assert_eq!(c.metrics().resumed_reads, 1);
        let seen = seen.lock().unwrap();
        assert_eq!(seen[1].range.as_deref(), Some("bytes=40000-99999"));
        assert_eq!(seen[1].if_match.as_deref(), Some("\"v1\""));
    })
    .await;
}

#[tokio::test]
async fn a_stream_of_damaged_bytes_ends_in_an_error() {
    bounded(async {
        let (endpoint, _) = stand_in(object_with_crc32c(b"hellO world", b"hello world")).await;
        let c = client(&endpoint, fast_retries(1), LIMIT);
        let mut stream = c.get_stream("bucket", "key").await.unwrap();
        let err = read_stream(&mut stream).await.unwrap_err();
        assert!(matches!(err, Error::ChecksumMismatch { .. }), "{err:?}");
    })
    .await;
}

/// Yields `good` bytes of data, then an I/O error.
struct FailingReader {
    good: usize,
}

impl tokio::io::AsyncRead for FailingReader {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        if self.good == 0 {
            return std::task::Poll::Ready(Err(std::io::Error::other("source went away")));
        }
        let n = self.good.min(buf.remaining());
        buf.put_slice(&vec![3u8; n]);
        self.good -= n;
        std::task::Poll::Ready(Ok(()))
    }
}

/// The same source as a blocking reader, for `upload_from_read`.
impl std::io::Read for FailingReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.good == 0 {
            return Err(std::io::Error::other("source went away"));
        }
        let n = self.good.min(buf.len());
        buf[..n].fill(3);
        self.good -= n;
        Ok(n)
    }
}

#[tokio::test]
async fn a_failing_upload_stream_aborts_its_multipart_upload() {
    bounded(async {
        let (endpoint, seen) = stand_in(Arc::new(|_, head: &RequestHead| {
            match head.method() {
                "POST" if head.target().ends_with("?uploads=") => Action::Respond {
                    status: 200,
                    headers: vec![],
                    body: b"<InitiateMultipartUploadResult><Bucket>bucket</Bucket><Key>key</Key><UploadId>UP2</UploadId></InitiateMultipartUploadResult>".to_vec(),
                },
                "PUT" => Action::Respond {
                    status: 200,
                    headers: vec![("etag", "\"p\"".into())],
                    body: vec![],
                },
                "DELETE" => Action::Respond {
                    status: 204,
                    headers: vec![],
                    body: vec![],
                },
                _ => Action::Respond {
                    status: 400,
                    headers: vec![],
                    body: b"<Error><Code>Unexpected</Code><Message>unexpected request</Message></Error>".to_vec(),
                },
            }
        }))
        .await;
        let c = client(&endpoint, RetryPolicy::none(), LIMIT);
        let options = brisk_client::TransferOptions {
            part_size: 5 * 1024 * 1024,
            parts_in_flight: 1,
            ..brisk_client::TransferOptions::default()
        };
        let mut reader = FailingReader {
            good: 6 * 1024 * 1024,
        };
        let err = c
            .upload_reader("bucket", "key", &mut reader, options.clone())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("source went away"), "{err}");
        // And from a blocking reader, read on the blocking pool.
        let blocking = FailingReader {
            good: 6 * 1024 * 1024,
        };
        let err = c
            .upload_from_read("bucket", "key", blocking, options)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("source went away"), "{err}");
        let seen = seen.lock().unwrap();
        let methods: Vec<&str> = seen.iter().map(|s| s.method.as_str()).collect();
        let aborts = seen
            .iter()
            .filter(|s| s.method == "DELETE" && s.target == "/bucket/key?uploadId=UP2")
            .count();
        assert_eq!(methods.first(), Some(&"POST"));
        assert_eq!(methods.last(), Some(&"DELETE"));
        assert_eq!(aborts, 2, "each failed upload aborted: {methods:?}");
    })
    .await;
}

/// CompleteMultipartUpload is answered once the server has assembled the object, which may take far
/// longer than the read timeout: the upload still succeeds, while an ordinary request answered as
/// late fails with the read timeout.
#[tokio::test]
async fn a_late_complete_answer_is_waited_for_but_a_late_get_is_not() {
    bounded(async {
        const LATE: Duration = Duration::from_millis(1500);
        let (endpoint, seen) = stand_in(Arc::new(|_, head: &RequestHead| {
            let target = head.target().to_owned();
            match head.method() {
                "POST" if target.ends_with("?uploads=") => Action::Respond {
                    status: 200,
                    headers: vec![],
                    body: b"<InitiateMultipartUploadResult><Bucket>bucket</Bucket><Key>key</Key><UploadId>UP1</UploadId></InitiateMultipartUploadResult>".to_vec(),
                },
                "PUT" => object(b"", "\"part\""),
                "POST" => Action::RespondLate {
                    delay: LATE,
                    body: b"<CompleteMultipartUploadResult><Bucket>bucket</Bucket><Key>key</Key><ETag>\"done-2\"</ETag></CompleteMultipartUploadResult>".to_vec(),
                },
                _ => Action::RespondLate {
                    delay: LATE,
                    body: b"late".to_vec(),
                },
            }
        }))
        .await;
        let c = client(&endpoint, RetryPolicy::none(), Duration::from_millis(300));
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("f");
        std::fs::write(&source, vec![7u8; 6 * 1024 * 1024]).unwrap();
        let options = brisk_client::TransferOptions {
            part_size: 5 * 1024 * 1024,
            parts_in_flight: 1,
            ..brisk_client::TransferOptions::default()
        };
        let uploaded = c.upload("bucket", "key", &source, options).await.unwrap();
        assert_eq!(uploaded.etag.as_deref(), Some("\"done-2\""));
        assert_eq!(uploaded.parts, 2);
        let err = c.get_bytes("bucket", "key").await.unwrap_err();
        assert!(
            matches!(
                err,
                Error::Http(brisk_wire::http::HttpError::HeadTimeout { .. })
            ),
            "{err:?}"
        );
        let seen = seen.lock().unwrap();
        let methods: Vec<&str> = seen.iter().map(|s| s.method.as_str()).collect();
        assert_eq!(methods, ["POST", "PUT", "PUT", "POST", "GET"]);
    })
    .await;
}
