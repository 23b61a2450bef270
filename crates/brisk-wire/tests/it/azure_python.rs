//! brisk's Azure wire code against Microsoft's Python SDK (azure-storage-blob): the Shared Key string
//! to sign and `Authorization` of 400 generated requests (awkward blob names, block ids, listing
//! queries, metadata headers that sort differently by byte and by the service's collation, ranges,
//! zero and non-zero lengths), service SAS tokens for blobs and containers, and the CRC-64 of
//! `x-ms-content-crc64`. The SDK runs in `tests/azure_sign.py` (JSON over stdin/stdout) under the
//! interpreter named by `BRISK_PYTHON`, else `<workspace>/.venv/bin/python`.
//!
//! The generated requests are the ones a client sends: values without surrounding whitespace (the SDK
//! signs it, the service does not see it), lower-case query names, ranges as `x-ms-range` (the SDK
//! never signs the standard `Range` line), and `+` percent-encoded in queries. The unit tests of
//! `brisk_wire::azure::shared_key` cover the rest against Microsoft's documented examples.

use crate::python_peer;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use brisk_wire::azure::{self, API_VERSION, AzureRequest, ServiceSas, SharedKeyCredential};
use serde::Deserialize;
use serde_json::{Value, json};
use time::OffsetDateTime;

/// How many requests are signed by both.
const SHARED_KEY_CASES: usize = 400;
/// How many SAS tokens are issued by both.
const SAS_CASES: usize = 80;

/// The storage emulator's well-known key (Azurite's `EMULATOR_ACCOUNT_KEY_STR`).
const EMULATOR_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
const EMULATOR_ACCOUNT: &str = "devstoreaccount1";

#[derive(Deserialize)]
struct SignedBySdk {
    string_to_sign: String,
    authorization: String,
}

#[derive(Deserialize)]
struct SasBySdk {
    string_to_sign: String,
    token: String,
}

#[derive(Deserialize)]
struct Crc64BySdk {
    crc: u64,
    header: String,
}

#[derive(Deserialize)]
struct SdkOutput {
    shared_key: Vec<SignedBySdk>,
    sas: Vec<SasBySdk>,
    crc64: Vec<Crc64BySdk>,
}

/// Runs the helper, failing loudly (never skipping) when the SDK is unavailable.
fn run_sdk(shared_key: Vec<Value>, sas: Vec<Value>, crc64: Vec<String>) -> SdkOutput {
    let input = json!({
        "version": API_VERSION,
        "shared_key": shared_key,
        "sas": sas,
        "crc64": crc64,
    })
    .to_string()
    .into_bytes();
    let setup_hint = format!(
        "azure-storage-blob is needed to cross-check the Azure wire code: tried {}. Create the venv \
         with `scripts/test`, or set BRISK_PYTHON to an interpreter that can \
         `import azure.storage.blob, azure.storage.extensions`.",
        python_peer::python().display()
    );
    let script = python_peer::script("azure_sign.py");
    let out = python_peer::run(&[script.as_os_str()], input, "the SDK helper", &setup_hint);
    serde_json::from_slice(&out).expect("helper output is JSON")
}

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T: ?Sized>(&mut self, items: &[&'a T]) -> &'a T {
        items[self.below(items.len())]
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }

    fn bytes_between(&mut self, min: usize, max: usize) -> Vec<u8> {
        let len = min + self.below(max - min + 1);
        self.bytes(len)
    }

    fn string(&mut self, alphabet: &str, min: usize, max: usize) -> String {
        let chars: Vec<char> = alphabet.chars().collect();
        let len = min + self.below(max - min + 1);
        (0..len).map(|_| chars[self.below(chars.len())]).collect()
    }
}

/// Blob names with the characters that trip encoders: spaces, `+`, `%`, reserved delimiters,
/// non-ASCII (two-, three- and four-byte UTF-8) and virtual directories.
fn blob_name(rng: &mut Rng) -> String {
    const PIECES: &[&str] = &[
        "a", "Z", "7", "-", "_", ".", "~", " ", "+", "%", "%20", "&", "=", "?", "#", ";", ",", "!",
        "*", "'", "(", ")", "@", "$", ":", "[", "]", "é", "漢", "😀", "/", "dir/", "file.txt",
    ];
    let parts = 1 + rng.below(8);
    (0..parts).map(|_| rng.pick(PIECES)).collect()
}

/// Metadata names made of every character a header name may hold, so that `-`, `_`, digits,
/// letters and punctuation meet in the service's collation.
fn meta_name(rng: &mut Rng) -> String {
    let suffix = rng.string("abcXYZ019-_!#$%&'*+.^`|~", 1, 6);
    format!("x-ms-meta-{suffix}")
}

/// A header value as a client sends it: printable ASCII, no surrounding whitespace, sometimes
/// inner runs of spaces, sometimes empty.
fn header_value(rng: &mut Rng) -> String {
    if rng.chance(5) {
        return String::new();
    }
    let mut value = rng.string(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \t!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
        1,
        24,
    );
    value = value.trim_matches([' ', '\t']).to_owned();
    if value.is_empty() {
        "v".to_owned()
    } else {
        value
    }
}

fn http_date(rng: &mut Rng) -> String {
    let t =
        OffsetDateTime::from_unix_timestamp(1_500_000_000 + rng.below(400_000_000) as i64).unwrap();
    httpdate::fmt_http_date(t.into())
}

/// Mixed-case spellings of a header name; the SDK and the service match standard headers in any case.
fn spell(rng: &mut Rng, name: &str) -> String {
    match rng.below(3) {
        0 => name.to_owned(),
        1 => name.to_ascii_uppercase(),
        _ => name
            .split('-')
            .map(|w| {
                let mut w = w.to_owned();
                if let Some(first) = w.get_mut(..1) {
                    first.make_ascii_uppercase();
                }
                w
            })
            .collect::<Vec<_>>()
            .join("-"),
    }
}

/// An `x-ms-*` name with its suffix in mixed case (the prefix itself lower-case, as every client
/// sends it).
fn spell_ms(rng: &mut Rng, name: &str) -> String {
    let suffix = &name["x-ms-".len()..];
    format!("x-ms-{}", spell(rng, suffix))
}

struct SharedKeyCase {
    account: String,
    key: String,
    method: &'static str,
    path: String,
    query: String,
    headers: Vec<(String, String)>,
}

fn generate_shared_key(rng: &mut Rng) -> SharedKeyCase {
    let emulator = rng.chance(50);
    let (account, key) = if emulator {
        (EMULATOR_ACCOUNT.to_owned(), EMULATOR_KEY.to_owned())
    } else {
        let account = rng.string("abcdefghijklmnopqrstuvwxyz0123456789", 3, 24);
        let key = STANDARD.encode(rng.bytes(64));
        (account, key)
    };
    let root = if emulator && rng.chance(70) {
        format!("/{account}")
    } else {
        String::new()
    };
    let container = rng.string("abcdefghijklmnopqrstuvwxyz0123456789-", 3, 20);
    // Encoded as the client sends it: SigV4's key path (unreserved characters and `/` kept).
    let blob_path = format!(
        "{root}/{container}{}",
        brisk_wire::sigv4::encode_key_path(&blob_name(&mut *rng))
    );
    let container_path = format!("{root}/{container}");

    let mut query: Vec<(String, String)> = Vec::new();
    let mut headers: Vec<(String, String)> = Vec::new();
    let length = |rng: &mut Rng| {
        if rng.chance(30) {
            "0".to_owned()
        } else {
            (1 + rng.below(1 << 26)).to_string()
        }
    };
    let (method, path) = match rng.below(9) {
        0 => {
            headers.push(("x-ms-blob-type".into(), "BlockBlob".into()));
            headers.push((spell(rng, "content-length"), length(rng)));
            headers.push((
                spell(rng, "content-type"),
                "application/octet-stream".into(),
            ));
            if rng.chance(50) {
                headers.push((spell(rng, "content-md5"), STANDARD.encode(rng.bytes(16))));
            }
            if rng.chance(50) {
                let crc = azure::crc64(&rng.bytes(32));
                headers.push(("x-ms-content-crc64".into(), azure::crc64_header_value(crc)));
            }
            ("PUT", blob_path)
        }
        1 => {
            let id = STANDARD.encode(rng.bytes_between(3, 48));
            query.push(("comp".into(), "block".into()));
            query.push(("blockid".into(), id));
            headers.push((spell(rng, "content-length"), length(rng)));
            ("PUT", blob_path)
        }
        2 => {
            query.push(("comp".into(), "blocklist".into()));
            headers.push((spell(rng, "content-length"), length(rng)));
            headers.push((spell(rng, "content-type"), "application/xml".into()));
            headers.push(("x-ms-blob-content-type".into(), "text/plain".into()));
            ("PUT", blob_path)
        }
        3 => {
            let start = rng.below(1 << 30);
            let end = start + rng.below(1 << 24);
            headers.push(("x-ms-range".into(), format!("bytes={start}-{end}")));
            if rng.chance(40) {
                headers.push((spell(rng, "if-match"), "\"0x8DC0000000000001\"".into()));
            }
            if rng.chance(20) {
                headers.push((spell(rng, "if-none-match"), "*".into()));
            }
            if rng.chance(20) {
                headers.push((spell(rng, "if-modified-since"), http_date(rng)));
            }
            if rng.chance(20) {
                headers.push((spell(rng, "if-unmodified-since"), http_date(rng)));
            }
            ("GET", blob_path)
        }
        4 => ("HEAD", blob_path),
        5 => {
            query.push(("restype".into(), "container".into()));
            query.push(("comp".into(), "list".into()));
            for (name, value) in [
                ("prefix", blob_name(rng)),
                ("marker", STANDARD.encode(rng.bytes_between(1, 40))),
                ("maxresults", (1 + rng.below(5000)).to_string()),
                ("delimiter", "/".into()),
                ("include", "metadata".into()),
            ] {
                if rng.chance(60) {
                    query.push((name.into(), value));
                }
            }
            ("GET", container_path)
        }
        6 => {
            query.push(("comp".into(), "list".into()));
            if rng.chance(50) {
                query.push(("prefix".into(), blob_name(rng)));
            }
            if rng.chance(50) {
                query.push(("marker".into(), rng.string("abcdef0123456789/+=", 1, 20)));
            }
            ("GET", format!("{root}/"))
        }
        7 => {
            if rng.chance(50) {
                headers.push(("x-ms-delete-snapshots".into(), "include".into()));
            }
            ("DELETE", blob_path)
        }
        _ => {
            query.push(("restype".into(), "container".into()));
            headers.push((spell(rng, "content-length"), "0".into()));
            ("PUT", container_path)
        }
    };
    if rng.chance(30) {
        query.push(("timeout".into(), (1 + rng.below(60)).to_string()));
    }
    for _ in 0..rng.below(5) {
        let name = meta_name(rng);
        if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(&name)) {
            let value = header_value(rng);
            headers.push((spell_ms(rng, &name), value));
        }
    }
    headers.push((spell_ms(rng, "x-ms-date"), http_date(rng)));
    headers.push((spell_ms(rng, "x-ms-version"), API_VERSION.into()));
    if rng.chance(30) {
        headers.push((
            "x-ms-client-request-id".into(),
            rng.string("0123456789abcdef-", 8, 36),
        ));
    }
    if rng.chance(20) {
        headers.push((spell(rng, "date"), http_date(rng)));
    }
    if rng.chance(30) {
        headers.push((spell(rng, "content-language"), "en-GB".into()));
    }
    if rng.chance(20) {
        headers.push((spell(rng, "content-encoding"), "gzip".into()));
    }
    for (name, value) in [
        ("host", "127.0.0.1:10000"),
        ("user-agent", "brisk"),
        ("accept", "application/xml"),
        ("x-msx-unsigned", "not an x-ms- header"),
    ] {
        if rng.chance(40) {
            headers.push((spell(rng, name), value.into()));
        }
    }
    // Neither the order of the headers nor that of the query parameters may matter.
    for i in (1..headers.len()).rev() {
        headers.swap(i, rng.below(i + 1));
    }
    for i in (1..query.len()).rev() {
        query.swap(i, rng.below(i + 1));
    }
    let query = query
        .iter()
        .map(|(n, v)| format!("{n}={}", encode_query_value(v)))
        .collect::<Vec<_>>()
        .join("&");
    SharedKeyCase {
        account,
        key,
        method,
        path,
        query,
        headers,
    }
}

impl SharedKeyCase {
    fn json(&self) -> Value {
        json!({
            "account": self.account,
            "key": self.key,
            "method": self.method,
            "path": self.path,
            "query": self.query,
            "headers": self.headers,
        })
    }

    fn sign(&self) -> (String, String) {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let request = AzureRequest {
            method: self.method,
            path: &self.path,
            query: &self.query,
            headers: &headers,
        };
        let credential = SharedKeyCredential::new(&self.account, &self.key).unwrap();
        (
            azure::string_to_sign(&self.account, &request),
            credential.authorization(&request),
        )
    }
}

#[test]
fn shared_key_matches_the_sdk_on_generated_requests() {
    let mut rng = Rng(0x0A2E_5167_0001);
    let cases: Vec<SharedKeyCase> = (0..SHARED_KEY_CASES)
        .map(|_| generate_shared_key(&mut rng))
        .collect();
    let output = run_sdk(
        cases.iter().map(SharedKeyCase::json).collect(),
        vec![],
        vec![],
    );
    assert_eq!(output.shared_key.len(), cases.len());

    // The generator must reach what it is for: collation-sensitive metadata, zero lengths, ranges.
    let strings: Vec<String> = cases.iter().map(|c| c.sign().0).collect();
    assert!(
        strings
            .iter()
            .any(|s| s.contains("x-ms-meta-") && s.contains("x-ms-range:"))
    );
    assert!(
        strings
            .iter()
            .any(|s| s.contains("\nblockid:") && s.contains('+'))
    );
    assert!(cases.iter().any(|c| c.path.contains("%F0%9F%98%80")));

    let mut mismatches = 0;
    let mut first = None;
    for (i, (case, sdk)) in cases.iter().zip(&output.shared_key).enumerate() {
        let (string_to_sign, authorization) = case.sign();
        if string_to_sign != sdk.string_to_sign || authorization != sdk.authorization {
            mismatches += 1;
            first.get_or_insert_with(|| {
                format!(
                    "case {i}: {} {}?{}\nheaders: {:?}\n--- brisk ---\n{string_to_sign}\n{authorization}\n\
                     --- SDK ---\n{}\n{}",
                    case.method,
                    case.path,
                    case.query,
                    case.headers,
                    sdk.string_to_sign,
                    sdk.authorization
                )
            });
        }
    }
    assert_eq!(
        mismatches,
        0,
        "{mismatches} of {} requests are signed differently from the SDK; first:\n{}",
        cases.len(),
        first.unwrap_or_default()
    );
}

struct SasCase {
    account: String,
    key: String,
    container: String,
    blob: Option<String>,
    /// As handed to brisk: shuffled, sometimes with repeats.
    permissions: String,
    /// As handed to the SDK, which signs the string it is given: in the service's order.
    canonical_permissions: String,
    start: Option<i64>,
    expiry: i64,
    protocol: Option<&'static str>,
}

fn generate_sas(rng: &mut Rng) -> SasCase {
    let (account, key) = if rng.chance(50) {
        (EMULATOR_ACCOUNT.to_owned(), EMULATOR_KEY.to_owned())
    } else {
        (
            rng.string("abcdefghijklmnopqrstuvwxyz0123456789", 3, 24),
            STANDARD.encode(rng.bytes(64)),
        )
    };
    let blob = rng.chance(70).then(|| blob_name(rng));
    let letters = if blob.is_some() {
        "racwdxytmei"
    } else {
        azure::sas::PERMISSION_ORDER
    };
    let mut granted: Vec<char> = letters.chars().filter(|_| rng.chance(40)).collect();
    if granted.is_empty() {
        granted.push('r');
    }
    let canonical_permissions: String = granted.iter().collect();
    if rng.chance(30) {
        granted.push(granted[0]);
    }
    for i in (1..granted.len()).rev() {
        granted.swap(i, rng.below(i + 1));
    }
    let start = rng
        .chance(60)
        .then(|| 1_600_000_000 + rng.below(300_000_000) as i64);
    let expiry = start.unwrap_or(1_700_000_000) + 1 + rng.below(10_000_000) as i64;
    let protocol = match rng.below(3) {
        0 => None,
        1 => Some("https"),
        _ => Some("https,http"),
    };
    SasCase {
        account,
        key,
        container: rng.string("abcdefghijklmnopqrstuvwxyz0123456789-", 3, 20),
        blob,
        permissions: granted.into_iter().collect(),
        canonical_permissions,
        start,
        expiry,
        protocol,
    }
}

impl SasCase {
    fn json(&self) -> Value {
        json!({
            "account": self.account,
            "key": self.key,
            "container": self.container,
            "blob": self.blob,
            "permissions": self.canonical_permissions,
            "start": self.start,
            "expiry": self.expiry,
            "protocol": self.protocol,
        })
    }

    fn sas(&self) -> ServiceSas<'_> {
        let at = |t| OffsetDateTime::from_unix_timestamp(t).unwrap();
        ServiceSas {
            container: &self.container,
            blob: self.blob.as_deref(),
            permissions: &self.permissions,
            start: self.start.map(at),
            expiry: at(self.expiry),
            protocol: self.protocol,
        }
    }
}

/// A token's `name=value` pairs, sorted: the order of SAS fields does not matter, their encoding does.
fn pairs(token: &str) -> Vec<&str> {
    let mut pairs: Vec<&str> = token.split('&').collect();
    pairs.sort_unstable();
    pairs
}

#[test]
fn sas_tokens_match_the_sdk() {
    let mut rng = Rng(0x0A2E_5A50_0002);
    let cases: Vec<SasCase> = (0..SAS_CASES).map(|_| generate_sas(&mut rng)).collect();
    assert!(cases.iter().any(|c| c.blob.is_none()) && cases.iter().any(|c| c.blob.is_some()));
    let output = run_sdk(vec![], cases.iter().map(SasCase::json).collect(), vec![]);
    assert_eq!(output.sas.len(), cases.len());
    for (i, (case, sdk)) in cases.iter().zip(&output.sas).enumerate() {
        let sas = case.sas();
        sas.validate().unwrap();
        let credential = SharedKeyCredential::new(&case.account, &case.key).unwrap();
        assert_eq!(
            sas.string_to_sign(&case.account),
            sdk.string_to_sign,
            "case {i}: string to sign"
        );
        let token = sas.token(&credential);
        assert_eq!(pairs(&token), pairs(&sdk.token), "case {i}: token");
    }
}

#[test]
fn crc64_matches_the_sdk() {
    let lengths = [
        0usize, 1, 7, 8, 9, 15, 16, 63, 64, 65, 255, 256, 4095, 4096, 65_537, 1_048_583,
    ];
    let mut rng = Rng(0x0A2E_C64C_0003);
    let mut buffers: Vec<Vec<u8>> = lengths.iter().map(|&n| rng.bytes(n)).collect();
    buffers.push(b"123456789".to_vec());
    let output = run_sdk(
        vec![],
        vec![],
        buffers.iter().map(|b| STANDARD.encode(b)).collect(),
    );
    assert_eq!(output.crc64.len(), buffers.len());
    for (buffer, sdk) in buffers.iter().zip(&output.crc64) {
        let len = buffer.len();
        assert_eq!(azure::crc64(buffer), sdk.crc, "CRC-64 of {len} bytes");
        assert_eq!(
            azure::crc64_header_value(sdk.crc),
            sdk.header,
            "header of {len} bytes"
        );
        assert_eq!(azure::parse_crc64_header(&sdk.header), Some(sdk.crc));
        let mut streaming = azure::Crc64::new();
        for chunk in buffer.chunks(1 + len / 7) {
            streaming.update(chunk);
        }
        assert_eq!(
            streaming.finish(),
            sdk.crc,
            "streamed CRC-64 of {len} bytes"
        );
    }
    assert_eq!(output.crc64.last().unwrap().crc, 0xae8b_1486_0a79_9888);
}

/// A query value as the client's `push_query` sends it: everything but the unreserved characters
/// escaped, so `+` is `%2B` (Azurite reads a literal `+` as a space).
fn encode_query_value(value: &str) -> String {
    const UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~');
    percent_encoding::utf8_percent_encode(value, UNRESERVED).to_string()
}
