//! brisk's SigV4 against botocore's (`S3SigV4Auth` and `S3SigV4QueryAuth`) on 1 200 generated
//! requests with awkward keys, queries, headers, tokens, methods and regions: the signatures must be
//! identical. botocore runs in `tests/botocore_sign.py` (JSON over stdin/stdout) under the interpreter
//! named by `BRISK_PYTHON`, else `<workspace>/.venv/bin/python`.

use std::time::Duration;

use crate::python_peer;
use crate::sigv4_support::{Case, Kind, generate};
use brisk_wire::sigv4::Signer;
use serde::{Deserialize, Serialize};

/// How many requests are compared (the brief asks for at least 1 000).
const CASES: usize = 1200;

#[derive(Serialize)]
struct BotoCase<'a> {
    kind: &'static str,
    method: &'a str,
    path: &'a str,
    params: &'a [(String, String)],
    headers: &'a [(String, String)],
    access_key: &'a str,
    secret_key: &'a str,
    token: Option<&'a str>,
    region: &'a str,
    timestamp: &'a str,
    payload_hash: String,
    expires: u64,
}

#[derive(Deserialize)]
struct BotoResult {
    signature: String,
    canonical_request: String,
    signed: String,
}

#[derive(Deserialize)]
struct BotoOutput {
    results: Vec<BotoResult>,
}

/// Runs the helper, failing loudly (never skipping) when botocore is unavailable.
fn run_botocore(input: &[u8]) -> BotoOutput {
    let setup_hint = format!(
        "botocore is needed to cross-check SigV4: tried {}. Create the venv with `scripts/test` \
         (or `python3 -m venv .venv && .venv/bin/pip install botocore` in the workspace root), or set \
         BRISK_PYTHON to an interpreter that can `import botocore`.",
        python_peer::python().display()
    );
    let script = python_peer::script("botocore_sign.py");
    let out = python_peer::run(
        &[script.as_os_str()],
        input.to_vec(),
        "botocore helper",
        &setup_hint,
    );
    serde_json::from_slice(&out).expect("helper output is JSON")
}

fn boto_case(case: &Case) -> BotoCase<'_> {
    BotoCase {
        kind: match case.kind {
            Kind::Header => "header",
            Kind::Presign => "presign",
        },
        method: &case.method,
        path: &case.path,
        params: &case.params,
        headers: &case.headers,
        access_key: &case.access_key,
        secret_key: &case.secret_key,
        token: case.token.as_deref(),
        region: &case.region,
        timestamp: case.time.as_str(),
        payload_hash: case.payload.header_value(),
        expires: case.expires,
    }
}

/// brisk's signature and canonical request for a case.
fn brisk_sign(case: &Case) -> (String, String) {
    let headers = case.header_refs();
    let request = case.request(&headers);
    let signer = Signer::new(case.credentials(), &case.region);
    match case.kind {
        Kind::Header => {
            let s = signer.sign(&request, case.payload, case.time).unwrap();
            (s.signature_hex(), s.canonical_request().into_owned())
        }
        Kind::Presign => {
            let p = signer
                .presign(&request, Duration::from_secs(case.expires), case.time)
                .unwrap();
            (hex::encode(p.signature), p.canonical_request().to_owned())
        }
    }
}

#[test]
fn signatures_match_botocore_on_generated_requests() {
    let cases = generate(0x5167_0004, CASES);
    let presigned = cases.iter().filter(|c| c.kind == Kind::Presign).count();
    assert!(presigned > CASES / 5 && presigned < CASES - CASES / 5);
    let input = serde_json::json!({ "cases": cases.iter().map(boto_case).collect::<Vec<_>>() });
    let output = run_botocore(serde_json::to_string(&input).unwrap().as_bytes());
    assert_eq!(output.results.len(), cases.len());

    let mut mismatches = 0;
    let mut first = None;
    for (i, (case, boto)) in cases.iter().zip(&output.results).enumerate() {
        let (signature, canonical) = brisk_sign(case);
        if signature != boto.signature {
            mismatches += 1;
            first.get_or_insert_with(|| {
                format!(
                    "case {i}: {case:#?}\n--- brisk canonical request ---\n{canonical}\n\
                     --- botocore canonical request ---\n{}\n--- botocore signed ---\n{}",
                    boto.canonical_request, boto.signed
                )
            });
        }
    }
    assert_eq!(
        mismatches,
        0,
        "{mismatches} of {} signatures differ from botocore; first:\n{}",
        cases.len(),
        first.unwrap_or_default()
    );
}
