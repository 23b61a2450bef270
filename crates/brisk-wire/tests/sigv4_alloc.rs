//! Allocations of verifying one signed request, counted by a counting global allocator: what the
//! server pays on every request before it reads a byte of the body. A signed GET with the headers an
//! SDK sends is held to a fixed budget; a change that allocates per header again fails here.

use std::collections::HashMap;

use brisk_wire::sigv4::{AmzDate, Credentials, PayloadHash, SignableRequest, Signer, Verifier};

use brisk_testkit::alloc::{CountingAllocator, count};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// The most allocations one verification of the GET below may make. It makes 9: the canonical
/// request, the string to sign, the credentials the provider hands out, ... (14 while an empty
/// query was given a buffer and the credential scope was formatted per request). It made 47
/// when every header name was lower-cased into a copy, each signed header's values went into a
/// `Vec` of their own and the credential scope was copied into four strings; a per-header
/// allocation again would pass the budget by about 10.
const VERIFY_BUDGET: u64 = 9;

#[test]
fn verifying_a_signed_get_allocates_a_bounded_few_times() {
    let credentials = Credentials::new("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY");
    let signer = Signer::new(credentials.clone(), "us-east-1");
    let time = AmzDate::from_unix_seconds(1_764_000_000).unwrap();
    // What boto3 sends with a ranged GET, besides what the signer adds.
    let headers: Vec<(&str, &[u8])> = vec![
        ("host", b"127.0.0.1:9000"),
        (
            "user-agent",
            b"Boto3/1.44.5 md/Botocore#1.44.5 ua/2.1 os/linux#6.1",
        ),
        ("accept-encoding", b"identity"),
        ("range", b"bytes=262144-524287"),
        (
            "amz-sdk-invocation-id",
            b"5f1c0e4e-9d1b-4a6f-8a0e-2f4b1c3d5e6f",
        ),
        ("amz-sdk-request", b"attempt=1; max=5"),
        ("x-amz-checksum-mode", b"ENABLED"),
    ];
    let request = SignableRequest {
        method: "GET",
        path: "/bucket/some/object/key.bin",
        query: "",
        headers: &headers,
    };
    let signed = signer.sign(&request, PayloadHash::Unsigned, time).unwrap();
    let mut received = headers.clone();
    received.extend(signed.headers().map(|(n, v)| (n, v.as_bytes())));
    let request = SignableRequest {
        headers: &received,
        ..request
    };
    let mut provider = HashMap::new();
    provider.insert("AKIDEXAMPLE".to_owned(), credentials);
    let verifier = Verifier::new(provider);
    verifier.verify(&request, time).unwrap();

    let (verified, counts) = count(|| verifier.verify(&request, time).unwrap());
    let used = counts.allocations;
    drop(verified);
    println!("allocations per verified GET: {used}");
    assert!(
        used <= VERIFY_BUDGET,
        "verifying a signed GET made {used} allocations (budget {VERIFY_BUDGET})"
    );
}

/// The most allocations signing the ranged GET brisk's client sends may make. It makes 7 (the
/// grouped headers, the canonical request, the signed-headers list, the string to sign, the
/// `Authorization` value, ...); 16 while an empty query was given a buffer, the credential scope
/// was formatted per request, the canonical request was copied into text to keep and the
/// `Authorization` value grew in steps; 20 when every header name was lower-cased into a copy even
/// when it was lower case already.
const SIGN_BUDGET: u64 = 7;

#[test]
fn signing_a_ranged_get_allocates_a_bounded_few_times() {
    let credentials = Credentials::new("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY");
    let signer = Signer::new(credentials, "us-east-1");
    let time = AmzDate::from_unix_seconds(1_764_000_000).unwrap();
    // The headers brisk's client signs on a ranged GET, in lower case as it sends them.
    let headers: Vec<(&str, &[u8])> = vec![
        ("host", b"127.0.0.1:9000"),
        ("range", b"bytes=262144-524287"),
    ];
    let request = SignableRequest {
        method: "GET",
        path: "/bucket/some/object/key.bin",
        query: "",
        headers: &headers,
    };
    signer.sign(&request, PayloadHash::Unsigned, time).unwrap();
    let (signed, counts) = count(|| signer.sign(&request, PayloadHash::Unsigned, time).unwrap());
    let used = counts.allocations;
    drop(signed);
    println!("allocations per signed GET: {used}");
    assert!(
        used <= SIGN_BUDGET,
        "signing a ranged GET made {used} allocations (budget {SIGN_BUDGET})"
    );
}
