//! Every request brisk signs verifies with brisk's verifier, and tampering with any signed part makes
//! verification fail with the error S3 would return.

use std::collections::HashMap;
use std::time::Duration;

use crate::sigv4_support::{Case, Kind, generate};
use brisk_wire::framing::{BodyDecoder, FramingError, decode_all};
use brisk_wire::sigv4::error::AccessDeniedReason;
use brisk_wire::sigv4::{
    AmzDate, AuthError, Credentials, PayloadHash, SignableRequest, Signer, UnsignedChunkEncoder,
    Verifier,
};

/// A request as the server receives it: owned method, path, query and headers.
#[derive(Debug, Clone)]
struct Received {
    method: String,
    path: String,
    query: String,
    headers: Vec<(String, Vec<u8>)>,
}

impl Received {
    fn verify<P: brisk_wire::sigv4::CredentialsProvider>(
        &self,
        verifier: &Verifier<P>,
        now: AmzDate,
    ) -> Result<brisk_wire::sigv4::VerifiedRequest, AuthError> {
        let headers: Vec<(&str, &[u8])> = self
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_slice()))
            .collect();
        verifier.verify(
            &SignableRequest {
                method: &self.method,
                path: &self.path,
                query: &self.query,
                headers: &headers,
            },
            now,
        )
    }

    fn set_header(&mut self, name: &str, value: &str) {
        for (n, v) in &mut self.headers {
            if n.eq_ignore_ascii_case(name) {
                *v = value.as_bytes().to_vec();
                return;
            }
        }
        self.headers.push((name.into(), value.as_bytes().to_vec()));
    }

    fn header(&self, name: &str) -> Option<String> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
    }
}

/// Signs a case the way a client would send it.
fn sign_case(case: &Case) -> Received {
    let headers = case.header_refs();
    let request = case.request(&headers);
    let signer = Signer::new(case.credentials(), &case.region);
    let mut received = Received {
        method: case.method.clone(),
        path: case.path.clone(),
        query: case.raw_query.clone(),
        headers: case
            .headers
            .iter()
            .map(|(n, v)| (n.clone(), v.as_bytes().to_vec()))
            .collect(),
    };
    match case.kind {
        Kind::Header => {
            let signed = signer.sign(&request, case.payload, case.time).unwrap();
            for (n, v) in signed.headers() {
                received.headers.push((n.into(), v.as_bytes().to_vec()));
            }
        }
        Kind::Presign => {
            let p = signer
                .presign(&request, Duration::from_secs(case.expires), case.time)
                .unwrap();
            received.query = p.query;
        }
    }
    received
}

fn verifier_for(case: &Case) -> Verifier<HashMap<String, Credentials>> {
    let mut map = HashMap::new();
    map.insert(case.access_key.clone(), case.credentials());
    Verifier::new(map)
}

fn is_mismatch(r: &Result<brisk_wire::sigv4::VerifiedRequest, AuthError>) -> bool {
    matches!(r, Err(AuthError::SignatureDoesNotMatch { .. }))
}

#[test]
fn every_signed_request_verifies() {
    for (i, case) in generate(0xB015_0001, 600).iter().enumerate() {
        let received = sign_case(case);
        let verified = received
            .verify(&verifier_for(case), case.time.add_seconds(1).unwrap())
            .unwrap_or_else(|e| panic!("case {i} {case:#?} failed: {e}"));
        assert_eq!(verified.access_key_id, case.access_key);
        match case.kind {
            Kind::Header => assert_eq!(verified.payload, case.payload),
            Kind::Presign => {
                assert!(verified.presigned);
                assert_eq!(verified.payload, PayloadHash::Unsigned);
            }
        }
    }
}

#[test]
fn tampering_with_any_signed_part_fails_the_signature() {
    for (i, case) in generate(0xB015_0002, 300).iter().enumerate() {
        let verifier = verifier_for(case);
        let now = case.time;
        let good = sign_case(case);
        let mut tampered: Vec<(&str, Received)> = Vec::new();

        let mut r = good.clone();
        r.method = if r.method.eq_ignore_ascii_case("GET") {
            "PUT"
        } else {
            "GET"
        }
        .into();
        tampered.push(("method", r));

        let mut r = good.clone();
        r.path.push('x');
        tampered.push(("path", r));

        let mut r = good.clone();
        r.query = if r.query.is_empty() {
            "extra=1".into()
        } else {
            format!("{}&extra=1", r.query)
        };
        tampered.push(("query parameter added", r));

        if let Some(eq) = case.raw_query.find('=') {
            let mut r = good.clone();
            r.query.insert(eq + 1, 'Z');
            tampered.push(("query value", r));
        }

        let mut r = good.clone();
        let host = r.header("host").unwrap();
        r.set_header("host", &format!("{host}.evil"));
        tampered.push(("host header", r));

        if case.kind == Kind::Header {
            let mut r = good.clone();
            let other = if case.payload == PayloadHash::Unsigned {
                PayloadHash::of(b"x")
            } else {
                PayloadHash::Unsigned
            };
            r.set_header("x-amz-content-sha256", &other.header_value());
            tampered.push(("payload hash", r));

            let mut r = good.clone();
            let auth = r.header("authorization").unwrap();
            let last = auth.chars().last().unwrap();
            let flipped = if last == '0' { '1' } else { '0' };
            r.set_header(
                "authorization",
                &format!("{}{flipped}", &auth[..auth.len() - 1]),
            );
            tampered.push(("signature", r));
        } else {
            let mut r = good.clone();
            let at = r.query.rfind("X-Amz-Signature=").unwrap() + 16;
            let c = if &r.query[at..at + 1] == "0" {
                "1"
            } else {
                "0"
            };
            r.query.replace_range(at..at + 1, c);
            tampered.push(("signature", r));
        }

        for (what, r) in &tampered {
            let got = r.verify(&verifier, now);
            assert!(is_mismatch(&got), "case {i}: tampered {what} gave {got:?}");
        }

        // The date: one second later is still within the skew, but signed differently.
        let later = case.time.add_seconds(1).unwrap();
        let mut r = good.clone();
        match case.kind {
            Kind::Header => r.set_header("x-amz-date", later.as_str()),
            Kind::Presign => {
                r.query = r.query.replace(case.time.as_str(), later.as_str());
            }
        }
        let got = r.verify(&verifier, now);
        if later.date_str() == case.time.date_str() {
            assert!(is_mismatch(&got), "case {i}: tampered date gave {got:?}");
        } else {
            assert!(got.is_err(), "case {i}: date across midnight accepted");
        }
    }
}

fn simple_case(kind: Kind, token: Option<&str>) -> Case {
    let mut case = generate(7, 1).remove(0);
    case.kind = kind;
    case.token = token.map(Into::into);
    case.time = AmzDate::parse("20240301T120000Z").unwrap();
    case.expires = 3600;
    case
}

#[test]
fn header_signing_errors_map_to_s3_codes() {
    let case = simple_case(Kind::Header, Some("session-token"));
    let verifier = verifier_for(&case);
    let good = sign_case(&case);
    let now = case.time;

    let skewed = good.verify(&verifier, now.add_seconds(15 * 60 + 1).unwrap());
    assert!(
        matches!(skewed, Err(AuthError::RequestTimeTooSkewed { .. })),
        "{skewed:?}"
    );
    assert!(
        good.verify(&verifier, now.add_seconds(15 * 60).unwrap())
            .is_ok()
    );
    assert!(
        good.verify(&verifier, now.add_seconds(-15 * 60).unwrap())
            .is_ok()
    );

    let unknown = good.verify(&Verifier::new(HashMap::new()), now);
    assert!(
        matches!(unknown, Err(AuthError::InvalidAccessKeyId { .. })),
        "{unknown:?}"
    );

    let mut r = good.clone();
    r.headers
        .retain(|(n, _)| !n.eq_ignore_ascii_case("x-amz-security-token"));
    let got = r.verify(&verifier, now);
    assert_eq!(got.unwrap_err().s3_code(), "MissingSecurityHeader");

    let mut r = good.clone();
    r.set_header("x-amz-security-token", "other-token");
    assert_eq!(
        r.verify(&verifier, now).unwrap_err(),
        AuthError::InvalidToken
    );

    let mut r = good.clone();
    r.headers.push(("X-Amz-Meta-Added".into(), b"1".to_vec()));
    assert!(matches!(
        r.verify(&verifier, now),
        Err(AuthError::AccessDenied(
            AccessDeniedReason::HeadersNotSigned { .. }
        ))
    ));

    let mut r = good.clone();
    r.headers
        .retain(|(n, _)| !n.eq_ignore_ascii_case("x-amz-date"));
    assert_eq!(
        r.verify(&verifier, now).unwrap_err(),
        AuthError::AccessDenied(AccessDeniedReason::MissingDate)
    );

    let wrong_region = good.verify(&verifier_for(&case).with_region("xx-nowhere-1"), now);
    assert_eq!(
        wrong_region.unwrap_err().s3_code(),
        "AuthorizationHeaderMalformed"
    );

    let auth = good.header("authorization").unwrap();
    for bad in [
        "AWS AKIAIOSFODNN7EXAMPLE:frJIUN8DYpKDtOLCwo//yllqDzg=".to_string(),
        auth.replace("Credential=", "Credentials="),
        auth.replace("SignedHeaders=", "Signed="),
        auth.replace("/aws4_request", "/aws5_request"),
        auth.replace(", Signature=", ", Signature=zz"),
        format!("{auth}, Signature=00"),
        auth.replace("host;", "Host;"),
        "AWS4-HMAC-SHA256".to_string(),
    ] {
        let mut r = good.clone();
        r.set_header("authorization", &bad);
        let got = r.verify(&verifier, now).unwrap_err();
        assert_eq!(
            got.s3_code(),
            "AuthorizationHeaderMalformed",
            "{bad}: {got}"
        );
        assert_eq!(got.http_status(), 400);
    }

    // The mismatch error carries what the server computed.
    let mut r = good.clone();
    r.path.push('x');
    match r.verify(&verifier, now).unwrap_err() {
        AuthError::SignatureDoesNotMatch {
            canonical_request,
            string_to_sign,
        } => {
            assert!(canonical_request.contains(&r.path));
            assert!(string_to_sign.starts_with("AWS4-HMAC-SHA256\n20240301T120000Z\n"));
        }
        other => panic!("{other:?}"),
    }

    let mut r = good.clone();
    r.headers
        .retain(|(n, _)| !n.eq_ignore_ascii_case("authorization"));
    assert_eq!(
        r.verify(&verifier, now).unwrap_err(),
        AuthError::AccessDenied(AccessDeniedReason::MissingAuthentication)
    );
}

#[test]
fn presigned_urls_expire_and_bound_their_lifetime() {
    let case = simple_case(Kind::Presign, None);
    let verifier = verifier_for(&case);
    let good = sign_case(&case);
    let t = case.time;
    assert!(good.verify(&verifier, t.add_seconds(3600).unwrap()).is_ok());
    let expired = good
        .verify(&verifier, t.add_seconds(3601).unwrap())
        .unwrap_err();
    assert!(
        expired.to_string().contains("Request has expired"),
        "{expired}"
    );
    assert_eq!(expired.s3_code(), "AccessDenied");
    let early = good.verify(&verifier, t.add_seconds(-(15 * 60) - 1).unwrap());
    assert!(matches!(
        early,
        Err(AuthError::AccessDenied(
            AccessDeniedReason::NotYetValid { .. }
        ))
    ));

    for (from, to) in [
        ("X-Amz-Expires=3600", "X-Amz-Expires=604801"),
        ("X-Amz-Expires=3600", "X-Amz-Expires=-1"),
        ("X-Amz-Expires=3600", "X-Amz-Expires=abc"),
        (
            "X-Amz-Algorithm=AWS4-HMAC-SHA256",
            "X-Amz-Algorithm=AWS4-HMAC-SHA1",
        ),
        ("X-Amz-Date=", "X-Amz-Date=2024"),
        ("%2Faws4_request", "%2Faws4_reqXest"),
        ("X-Amz-Signature=", "X-Amz-Signature=00"),
    ] {
        let mut r = good.clone();
        assert!(r.query.contains(from));
        r.query = r.query.replacen(from, to, 1);
        let got = r.verify(&verifier, t).unwrap_err();
        assert_eq!(
            got.s3_code(),
            "AuthorizationQueryParametersError",
            "{to}: {got}"
        );
    }

    // A lifetime of zero seconds is valid syntax that expired at once: S3
    // answers 403 AccessDenied "Request has expired", not a parameter error.
    let mut r = good.clone();
    r.query = r.query.replacen("X-Amz-Expires=3600", "X-Amz-Expires=0", 1);
    let got = r.verify(&verifier, t).unwrap_err();
    assert_eq!(got.s3_code(), "AccessDenied", "{got}");
    assert!(got.to_string().contains("Request has expired"), "{got}");

    // Temporary credentials: the token travels in the query and must match.
    let case = simple_case(Kind::Presign, Some("tok"));
    let good = sign_case(&case);
    assert!(good.query.contains("X-Amz-Security-Token=tok"));
    assert!(good.verify(&verifier_for(&case), t).is_ok());
    let mut r = good.clone();
    r.query = r
        .query
        .replace("X-Amz-Security-Token=tok", "X-Amz-Security-Token=tak");
    assert_eq!(
        r.verify(&verifier_for(&case), t).unwrap_err(),
        AuthError::InvalidToken
    );
}

#[test]
fn literal_payload_hash_is_checked_while_streaming() {
    let body = vec![7u8; 100_000];
    let mut case = simple_case(Kind::Header, None);
    case.payload = PayloadHash::of(&body);
    let verified = sign_case(&case)
        .verify(&verifier_for(&case), case.time)
        .unwrap();
    let mut check = verified.payload_hash_verifier().unwrap();
    for piece in body.chunks(4096) {
        check.update(piece);
    }
    check.finish().unwrap();

    let mut check = verified.payload_hash_verifier().unwrap();
    check.update(&body[1..]);
    let err = check.finish().unwrap_err();
    assert_eq!(err.s3_code(), "XAmzContentSHA256Mismatch");
    assert!(verified.chunked_decoder(0).is_none());

    let mut r = sign_case(&case);
    r.set_header("x-amz-content-sha256", "not-a-hash");
    assert_eq!(
        r.verify(&verifier_for(&case), case.time)
            .unwrap_err()
            .s3_code(),
        "InvalidArgument"
    );
}

/// Client signs a streaming upload; server verifies the request, then the body.
#[test]
fn signed_streaming_upload_round_trips_and_detects_tampering() {
    let payload: Vec<u8> = (0..50_000u32).map(|i| (i * 31 % 251) as u8).collect();
    let chunk = 16 * 1024;
    for trailer in [false, true] {
        let mut case = simple_case(Kind::Header, None);
        case.payload = if trailer {
            PayloadHash::StreamingSignedTrailer
        } else {
            PayloadHash::StreamingSigned
        };
        let headers = case.header_refs();
        let signer = Signer::new(case.credentials(), &case.region);
        let signed = signer
            .sign(&case.request(&headers), case.payload, case.time)
            .unwrap();
        let mut chain = signed.chunk_signer();
        let mut body = Vec::new();
        for piece in payload.chunks(chunk) {
            body.extend_from_slice(chain.sign_chunk(piece).as_bytes());
            body.extend_from_slice(piece);
            body.extend_from_slice(b"\r\n");
        }
        if trailer {
            body.extend(
                chain
                    .final_chunk_with_trailers(&[("x-amz-checksum-crc32c", "AAAAAA==")])
                    .unwrap(),
            );
        } else {
            body.extend_from_slice(chain.final_chunk().as_bytes());
        }
        let expected_len = if trailer {
            brisk_wire::sigv4::chunked::signed_trailer_encoded_length(
                payload.len() as u64,
                chunk as u64,
                &[("x-amz-checksum-crc32c", 8)],
            )
        } else {
            brisk_wire::sigv4::chunked::signed_encoded_length(payload.len() as u64, chunk as u64)
        };
        assert_eq!(body.len() as u64, expected_len);

        let received = sign_case_with(&case, &signed);
        let verified = received.verify(&verifier_for(&case), case.time).unwrap();
        let mut decoder = verified.chunked_decoder(payload.len() as u64).unwrap();
        let (decoded, _) = decode_all(&mut decoder, &body).unwrap();
        assert!(decoder.is_done());
        assert_eq!(decoded, payload);
        if trailer {
            assert_eq!(decoder.trailer("x-amz-checksum-crc32c"), Some("AAAAAA=="));
        }

        // One payload byte, one signature digit: each fails the chain.
        let data_at = body.iter().position(|&b| b == b'\n').unwrap() + 100;
        let sig_at = body
            .windows(16)
            .position(|w| w == b"chunk-signature=")
            .unwrap()
            + 16
            + 5;
        for at in [data_at, sig_at] {
            let mut bad = body.clone();
            bad[at] = if bad[at] == b'0' { b'1' } else { b'0' };
            let mut decoder = verified.chunked_decoder(payload.len() as u64).unwrap();
            assert_eq!(
                decode_all(&mut decoder, &bad).unwrap_err(),
                FramingError::SignatureMismatch
            );
        }
        // A declared length that disagrees with the body.
        let mut decoder = verified.chunked_decoder(payload.len() as u64 + 1).unwrap();
        assert!(matches!(
            decode_all(&mut decoder, &body).unwrap_err(),
            FramingError::LengthMismatch { .. }
        ));
    }
}

fn sign_case_with(case: &Case, signed: &brisk_wire::sigv4::SignedRequest) -> Received {
    let mut headers: Vec<(String, Vec<u8>)> = case
        .headers
        .iter()
        .map(|(n, v)| (n.clone(), v.as_bytes().to_vec()))
        .collect();
    for (n, v) in signed.headers() {
        headers.push((n.into(), v.as_bytes().to_vec()));
    }
    Received {
        method: case.method.clone(),
        path: case.path.clone(),
        query: case.raw_query.clone(),
        headers,
    }
}

#[test]
fn unsigned_trailer_upload_round_trips() {
    let mut case = simple_case(Kind::Header, None);
    case.payload = PayloadHash::StreamingUnsignedTrailer;
    let received = sign_case(&case);
    let verified = received.verify(&verifier_for(&case), case.time).unwrap();
    let payload = b"hello, unsigned world";
    let mut body = Vec::new();
    for piece in payload.chunks(5) {
        body.extend_from_slice(UnsignedChunkEncoder::chunk_header(piece.len() as u64).as_bytes());
        body.extend_from_slice(piece);
        body.extend_from_slice(b"\r\n");
    }
    body.extend(
        UnsignedChunkEncoder::final_chunk_with_trailers(&[("x-amz-checksum-crc32", "NSRBwg==")])
            .unwrap(),
    );
    let mut decoder = verified.chunked_decoder(payload.len() as u64).unwrap();
    let (decoded, _) = decode_all(&mut decoder, &body).unwrap();
    assert_eq!(decoded, payload);
    assert_eq!(decoder.trailer("x-amz-checksum-crc32"), Some("NSRBwg=="));
}

/// Per-request cost of signing and verifying with a cached signing key, printed rather than asserted.
/// Run with `cargo test --release -p brisk-wire --test it sigv4_roundtrip:: -- --ignored --nocapture`.
#[test]
#[ignore = "measurement, run on demand in release mode"]
fn measure_sign_and_verify_cost() {
    use std::time::Instant;
    const ROUNDS: u32 = 20_000;
    let case = simple_case(Kind::Header, None);
    let headers = case.header_refs();
    let request = case.request(&headers);
    let signer = Signer::new(case.credentials(), &case.region);
    let started = Instant::now();
    for _ in 0..ROUNDS {
        std::hint::black_box(signer.sign(&request, case.payload, case.time).unwrap());
    }
    let sign_us = started.elapsed().as_secs_f64() * 1e6 / f64::from(ROUNDS);
    let received = sign_case(&case);
    let verifier = verifier_for(&case);
    let started = Instant::now();
    for _ in 0..ROUNDS {
        std::hint::black_box(received.verify(&verifier, case.time).unwrap());
    }
    let verify_us = started.elapsed().as_secs_f64() * 1e6 / f64::from(ROUNDS);
    println!("header signing {sign_us:.2} µs/request, verifying {verify_us:.2} µs/request");
}

/// The S3 streaming example end to end on the server side: the example request verifies, and its
/// body decodes through the decoder the verification hands out.
#[test]
fn aws_streaming_example_verifies_end_to_end() {
    let mut body = Vec::new();
    body.extend_from_slice(b"10000;chunk-signature=ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648\r\n");
    body.extend_from_slice(&[b'a'; 65536]);
    body.extend_from_slice(b"\r\n400;chunk-signature=0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497\r\n");
    body.extend_from_slice(&[b'a'; 1024]);
    body.extend_from_slice(b"\r\n0;chunk-signature=b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9\r\n\r\n");
    let headers: [(&str, &[u8]); 8] = [
        ("Host", b"s3.amazonaws.com"),
        ("x-amz-date", b"20130524T000000Z"),
        ("x-amz-storage-class", b"REDUCED_REDUNDANCY"),
        (
            "Authorization",
            b"AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,\
              SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;\
              x-amz-decoded-content-length;x-amz-storage-class,\
              Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9",
        ),
        (
            "x-amz-content-sha256",
            b"STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
        ),
        ("Content-Encoding", b"aws-chunked"),
        ("x-amz-decoded-content-length", b"66560"),
        ("Content-Length", b"66824"),
    ];
    let request = SignableRequest {
        method: "PUT",
        path: "/examplebucket/chunkObject.txt",
        query: "",
        headers: &headers,
    };
    let verifier = Verifier::new(|akid: &str| {
        (akid == "AKIAIOSFODNN7EXAMPLE")
            .then(|| Credentials::new(akid, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"))
    })
    .with_region("us-east-1");
    let now = AmzDate::parse("20130524T000500Z").unwrap();
    let verified = verifier.verify(&request, now).unwrap();
    assert_eq!(verified.payload, PayloadHash::StreamingSigned);
    let mut decoder = verified.chunked_decoder(66560).unwrap();
    let (payload, used) = decode_all(&mut decoder, &body).unwrap();
    assert!(decoder.is_done());
    assert_eq!((payload.len(), used), (66560, 66824));
    assert!(payload.iter().all(|&b| b == b'a'));
}
