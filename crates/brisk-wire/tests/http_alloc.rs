//! Allocations on the HTTP data path, counted by a counting global allocator: once a connection's
//! buffers are warm, serving another request allocates nothing, whatever its body size.

use brisk_wire::framing::{BodyDecoder, decode_all};
use brisk_wire::http::{
    ChunkedDecoder, ConnectionConfig, HttpConnection, Limits, RequestHead, ResponseHead,
};

use brisk_testkit::alloc::{CountingAllocator, Window};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

const REQUEST: &[u8] = b"PUT /bucket/some/key?partNumber=3&uploadId=abc HTTP/1.1\r\n\
Host: 127.0.0.1:9000\r\nx-amz-date: 20240101T000000Z\r\n\
x-amz-content-sha256: UNSIGNED-PAYLOAD\r\nAuthorization: AWS4-HMAC-SHA256 Credential=x/20240101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=0123456789abcdef\r\n\
Content-Length: 4096\r\n\r\n";

#[test]
fn warm_heads_parse_and_serialise_without_allocating() {
    let limits = Limits::default();
    let mut head = RequestHead::new();
    let mut out = Vec::new();
    head.parse(REQUEST, &limits).unwrap();
    head.write_to(&mut out);

    let window = Window::this_thread();
    for _ in 0..1000 {
        head.parse(REQUEST, &limits).unwrap();
        out.clear();
        head.write_to(&mut out);
        assert!(head.keep_alive());
        assert_eq!(head.body_framing().unwrap().known_length(), Some(4096));
    }
    assert_eq!(window.stop().allocations, 0);

    let mut resp = ResponseHead::with_status(200).unwrap();
    resp.headers_mut().set_content_length(1);
    resp.headers_mut().append("ETag", "\"abc\"").unwrap();
    out.clear();
    resp.write_to(&mut out);
    let window = Window::this_thread();
    for len in 0..1000u64 {
        resp.headers_mut().set_content_length(len);
        out.clear();
        resp.write_to(&mut out);
    }
    assert_eq!(window.stop().allocations, 0);
}

#[test]
fn chunked_decoding_without_trailers_does_not_allocate() {
    let mut body = Vec::new();
    for _ in 0..256 {
        body.extend_from_slice(b"400;chunk-signature=abc\r\n");
        body.extend_from_slice(&[b'x'; 0x400]);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(b"0\r\n\r\n");
    let mut decoder = ChunkedDecoder::new(&Limits::default());
    let window = Window::this_thread();
    let mut input = &body[..];
    let mut payload = 0;
    while !decoder.is_done() {
        let got = decoder.decode(input).unwrap();
        payload += got.data.len();
        input = &input[got.consumed..];
    }
    let allocations = window.stop().allocations;
    assert_eq!(payload, 256 * 1024);
    assert_eq!(allocations, 0);
    // decode_all collects into a Vec: the helper allocates, the decoder does not.
    decoder.reset();
    assert_eq!(decode_all(&mut decoder, &body).unwrap().0.len(), payload);
}

/// Serves `count` pipelined PUTs of `body_len` bytes from memory and returns the allocations it took.
fn serve_pipelined(count: usize, body_len: usize) -> u64 {
    let mut input = Vec::new();
    let body = vec![b'b'; body_len];
    for _ in 0..count {
        input.extend_from_slice(
            format!("PUT /bucket/key HTTP/1.1\r\nHost: h\r\nContent-Length: {body_len}\r\n\r\n")
                .as_bytes(),
        );
        input.extend_from_slice(&body);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Unconstrained: an in-memory stream is always ready, so tokio's cooperative budget would make
    // the task yield every 128 operations, and the scheduler allocates its yield list on first use.
    runtime.block_on(tokio::task::unconstrained(async {
        let stream = tokio::io::join(&input[..], tokio::io::sink());
        let config = ConnectionConfig {
            read_buffer_size: 4096,
            limits: Limits::default(),
            release_idle_buffer_after: None,
        };
        let mut conn = HttpConnection::with_config(stream, config);
        let mut head = RequestHead::new();
        let mut resp = ResponseHead::with_status(200).unwrap();
        resp.headers_mut().set_content_length(0);
        let mut dst = vec![0u8; body_len];
        let window = Window::this_thread();
        let mut served = 0;
        while conn.read_request_head(&mut head).await.unwrap() {
            assert_eq!(conn.read_body_into(&mut dst).await.unwrap(), body_len);
            conn.write_response(&resp, b"").await.unwrap();
            served += 1;
        }
        let allocations = window.stop().allocations;
        assert_eq!(served, count);
        allocations
    }))
}

#[test]
fn serving_more_or_larger_requests_costs_no_more_allocations() {
    let few_small = serve_pipelined(2, 1000);
    let many_small = serve_pipelined(200, 1000);
    let few_large = serve_pipelined(2, 1 << 20);
    // Whatever the warm-up costs (head buffers growing to their size), it does not grow with the
    // number of requests or the size of their bodies.
    assert_eq!(many_small, few_small, "allocations grow with request count");
    assert_eq!(few_large, few_small, "allocations grow with body size");
    // The warm-up is the request head's four buffers growing to this head's size (a few
    // reallocations each, as fields are appended).
    assert!(few_small <= 12, "warm-up took {few_small} allocations");
}
