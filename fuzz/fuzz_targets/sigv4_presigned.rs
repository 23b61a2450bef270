//! The server's reading of a presigned URL's query (`X-Amz-Algorithm`, `-Credential`, `-Date`,
//! `-Expires`, `-SignedHeaders`, `-Signature`) on arbitrary bytes, through `Verifier::verify` as the
//! server calls it. Half of the inputs start with valid algorithm, credential and date parameters so
//! that the expiry, signed-header and signature checks are reached.
//!
//! Checked: nothing panics; and a URL the client's `Signer::presign` makes, for a path, a query of
//! the request's own and a lifetime taken from the fuzz bytes, verifies at every second of its
//! lifetime and is refused as expired one second after it.
#![no_main]

use std::time::Duration;

use brisk_wire::sigv4::{
    AccessDeniedReason, AmzDate, AuthError, Credentials, PayloadHash, SignableRequest, Signer,
    Verifier,
};
use libfuzzer_sys::fuzz_target;
use percent_encoding::percent_decode_str;

const ACCESS_KEY: &str = "AKIDEXAMPLE";
const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
const SIGNED_AT: &str = "20240301T120000Z";
const PREFIX: &str = "X-Amz-Algorithm=AWS4-HMAC-SHA256\
    &X-Amz-Credential=AKIDEXAMPLE%2F20240301%2Fus-east-1%2Fs3%2Faws4_request\
    &X-Amz-Date=20240301T120000Z&";
const METHODS: [&str; 4] = ["GET", "PUT", "HEAD", "DELETE"];
const HOST: [(&str, &[u8]); 1] = [("host", b"localhost:9000")];

fn credentials(id: &str) -> Option<Credentials> {
    (id == ACCESS_KEY).then(|| Credentials::new(ACCESS_KEY, SECRET))
}

/// Whether a query of the request's own names an `X-Amz-*` parameter, which would take the place of
/// the signer's (the verifier reads the first of each name).
fn names_auth_parameter(query: &str) -> bool {
    query.split('&').any(|pair| {
        let name = pair.split_once('=').map_or(pair, |(n, _)| n);
        let name = percent_decode_str(name).decode_utf8_lossy();
        name.get(..6)
            .is_some_and(|p| p.eq_ignore_ascii_case("x-amz-"))
    })
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 5 {
        return;
    }
    let (control, input) = data.split_at(5);
    let text = String::from_utf8_lossy(input);
    let verifier = Verifier::new(credentials).with_region("us-east-1");
    let signed_at = AmzDate::parse(SIGNED_AT).unwrap();
    let method = METHODS[usize::from(control[0] >> 1) % METHODS.len()];

    // The fuzz bytes as the whole query string of a request.
    let query = if control[0] & 1 != 0 {
        format!("{PREFIX}{text}")
    } else {
        text.clone().into_owned()
    };
    let request = SignableRequest {
        method,
        path: "/bucket/key",
        query: &query,
        headers: &HOST,
    };
    let _ = verifier.verify(&request, signed_at);

    // The fuzz bytes as a path and a query of the request's own, presigned by the client.
    let (key, own_query) = text.split_once('?').unwrap_or((&text, ""));
    if names_auth_parameter(own_query) {
        return;
    }
    let path = format!("/bucket/{key}");
    let request = SignableRequest {
        method,
        path: &path,
        query: own_query,
        headers: &HOST,
    };
    let raw = u32::from_le_bytes([control[1], control[2], control[3], control[4]]);
    let lifetime = 1 + u64::from(raw) % (7 * 24 * 3600);
    let signer = Signer::new(Credentials::new(ACCESS_KEY, SECRET), "us-east-1");
    let presigned = signer
        .presign(&request, Duration::from_secs(lifetime), signed_at)
        .expect("a lifetime of 1 s to 7 days is accepted");
    let used = SignableRequest {
        query: &presigned.query,
        ..request
    };
    let within = (u64::from(raw) / 7) % (lifetime + 1);
    let at = signed_at.add_seconds(within as i64).unwrap();
    match verifier.verify(&used, at) {
        Ok(verified) => {
            assert!(verified.presigned);
            assert_eq!(verified.payload, PayloadHash::Unsigned);
            assert_eq!(verified.signature, presigned.signature);
        }
        Err(e) => panic!("a presigned URL was refused {within} s into its {lifetime} s: {e:?}"),
    }
    let after = signed_at.add_seconds(lifetime as i64 + 1).unwrap();
    let expired = verifier.verify(&used, after);
    assert!(
        matches!(
            expired,
            Err(AuthError::AccessDenied(AccessDeniedReason::Expired { .. }))
        ),
        "a presigned URL was not expired 1 s after its lifetime: {expired:?}"
    );
});
