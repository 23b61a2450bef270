//! The server's reading of a SigV4 `Authorization` header on arbitrary bytes: the parser alone
//! (`AuthorizationHeader::parse`), then the whole header path of `Verifier::verify` (credential
//! scope, date, signed-header list, canonical request, signature) with the bytes as the
//! `Authorization` field of an otherwise well-formed request. Half of the inputs get a valid
//! `AWS4-HMAC-SHA256 Credential=...,` prefix so that the checks after the credential are reached.
//!
//! Checked: nothing panics; a header that parses prints back into one that parses to the same
//! value; and a request the client's `Signer` signs, with the fuzz bytes as the value of a signed
//! header, verifies.
#![no_main]

use brisk_wire::sigv4::verify::AuthorizationHeader;
use brisk_wire::sigv4::{AmzDate, Credentials, PayloadHash, SignableRequest, Signer, Verifier};
use libfuzzer_sys::fuzz_target;

const ACCESS_KEY: &str = "AKIDEXAMPLE";
const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
const NOW: &str = "20240301T120000Z";
const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const PREFIX: &str = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240301/us-east-1/s3/aws4_request, ";

fn credentials(id: &str) -> Option<Credentials> {
    (id == ACCESS_KEY).then(|| Credentials::new(ACCESS_KEY, SECRET))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fuzz_target!(|data: &[u8]| {
    let Some((&control, input)) = data.split_first() else {
        return;
    };
    let mut value = Vec::with_capacity(PREFIX.len() + input.len());
    if control & 1 != 0 {
        value.extend_from_slice(PREFIX.as_bytes());
    }
    value.extend_from_slice(input);

    if let Ok(text) = std::str::from_utf8(&value)
        && let Ok(parsed) = AuthorizationHeader::parse(text)
    {
        let printed = format!(
            "AWS4-HMAC-SHA256 Credential={}, SignedHeaders={}, Signature={}",
            parsed.credential,
            parsed.signed_headers,
            hex(&parsed.signature)
        );
        assert_eq!(AuthorizationHeader::parse(&printed).ok(), Some(parsed));
    }

    let now = AmzDate::parse(NOW).unwrap();
    let verifier = Verifier::new(credentials).with_region("us-east-1");
    let headers: [(&str, &[u8]); 4] = [
        ("host", b"localhost:9000"),
        ("x-amz-date", NOW.as_bytes()),
        ("x-amz-content-sha256", EMPTY_SHA256.as_bytes()),
        ("authorization", &value),
    ];
    let request = SignableRequest {
        method: "GET",
        path: "/bucket/key",
        query: "",
        headers: &headers,
    };
    let _ = verifier.verify(&request, now);

    // The same bytes as the value of a header the client signs: signer and verifier must agree.
    let signer = Signer::new(Credentials::new(ACCESS_KEY, SECRET), "us-east-1");
    let own: [(&str, &[u8]); 2] = [("host", b"localhost:9000"), ("x-amz-meta-fuzz", input)];
    let request = SignableRequest {
        method: "PUT",
        path: "/bucket/key",
        query: "",
        headers: &own,
    };
    if let Ok(signed) = signer.sign(&request, PayloadHash::Unsigned, now) {
        let mut headers: Vec<(&str, &[u8])> = own.to_vec();
        for (name, value) in signed.headers() {
            headers.push((name, value.as_bytes()));
        }
        let request = SignableRequest {
            headers: &headers,
            ..request
        };
        let verified = verifier.verify(&request, now);
        assert!(
            verified.is_ok(),
            "a signed request was refused: {verified:?}"
        );
    }
});
