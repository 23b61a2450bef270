//! Deterministic generator of awkward S3 requests, shared by the SigV4 integration tests.
#![allow(dead_code)]

use brisk_wire::sigv4::{AmzDate, Credentials, PayloadHash, SignableRequest, encode_key_path};

/// SplitMix64: a tiny, fixed, well-mixed generator so the cases are the same on every run.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Whether the case is header-signed or presigned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Header,
    Presign,
}

/// One generated request with everything needed to sign it in brisk and in botocore.
#[derive(Debug, Clone)]
pub struct Case {
    pub kind: Kind,
    pub method: String,
    /// Percent-encoded path as sent.
    pub path: String,
    /// Decoded query parameters (what botocore is given).
    pub params: Vec<(String, String)>,
    /// The raw query string brisk is given: the same parameters, encoded in varied legal ways.
    pub raw_query: String,
    pub headers: Vec<(String, String)>,
    pub access_key: String,
    pub secret_key: String,
    pub token: Option<String>,
    pub region: String,
    pub time: AmzDate,
    pub payload: PayloadHash,
    pub expires: u64,
}

impl Case {
    pub fn credentials(&self) -> Credentials {
        match &self.token {
            Some(t) => Credentials::with_session_token(&self.access_key, &self.secret_key, t),
            None => Credentials::new(&self.access_key, &self.secret_key),
        }
    }

    pub fn header_refs(&self) -> Vec<(&str, &[u8])> {
        self.headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_bytes()))
            .collect()
    }

    pub fn request<'a>(&'a self, headers: &'a [(&'a str, &'a [u8])]) -> SignableRequest<'a> {
        SignableRequest {
            method: &self.method,
            path: &self.path,
            query: &self.raw_query,
            headers,
        }
    }
}

const KEY_PIECES: &[&str] = &[
    "photos",
    "2024",
    "a b",
    "a  b",
    "+",
    "=",
    "%",
    "%41",
    "~",
    "..",
    ".",
    "/",
    "//",
    "é",
    "日本語",
    "🙂",
    "?",
    "#",
    "&",
    ";",
    ":",
    "@",
    "!",
    "*",
    "'",
    "(",
    ")",
    "$",
    ",",
    "[",
    "]",
    "\\",
    "^",
    "`",
    "{",
    "}",
    "|",
    "\"",
    "<",
    ">",
    "file.txt",
    "-_.",
    "x",
    "A",
    "Z9",
    " ",
    "\u{7f}",
];

const PARAM_NAMES: &[&str] = &[
    "prefix",
    "max-keys",
    "list-type",
    "continuation-token",
    "uploadId",
    "partNumber",
    "versionId",
    "x-id",
    "acl",
    "tagging",
    "delimiter",
    "marker",
    "encoding-type",
    "start-after",
    "response-content-disposition",
    "a b",
    "é",
    "k+",
    "~k",
    "x%y",
    "Caps",
    "n=m",
    "q&r",
];

const PARAM_VALUES: &[&str] = &[
    "",
    "",
    "1",
    "1000",
    "abc/def",
    "a b",
    "a+b",
    "a=b",
    "a&b",
    "100%",
    "~tilde",
    "é日本",
    "/:@!$'()*,;",
    "[]{}|\\^`\"<>",
    "#frag",
    "attachment; filename=\"x y.txt\"",
    "-_.~",
    "?",
    "🙂",
    "2",
];

const HEADER_VALUES: &[&str] = &[
    "text/plain",
    "  leading",
    "trailing  ",
    "  both   sides  ",
    "inner    runs   of  spaces",
    "tab\tinside",
    " \t mixed \t blanks \t ",
    "bytes=0-9",
    "\"etag-value\"",
    "é unicode 日本",
    "a,b,c",
    "v=1;  q=0.5",
    "",
    "x",
    "max-age=0, no-cache",
    "REDUCED_REDUNDANCY",
];

const HEADER_NAMES: &[&str] = &[
    "Content-Type",
    "content-type",
    "Content-MD5",
    "Range",
    "If-Match",
    "if-none-match",
    "Cache-Control",
    "Content-Disposition",
    "x-amz-meta-Foo",
    "X-Amz-Meta-foo",
    "x-amz-meta-bar",
    "X-AMZ-ACL",
    "x-amz-storage-class",
    "x-amz-checksum-crc32c",
    "x-amz-trailer",
    "x-amz-decoded-content-length",
    "Content-Encoding",
    "Content-Length",
    "X-Custom_Header",
];

const REGIONS: &[&str] = &[
    "us-east-1",
    "eu-west-3",
    "ap-southeast-2",
    "us-gov-west-1",
    "auto",
    "garage",
];
const METHODS: &[&str] = &["GET", "PUT", "POST", "HEAD", "DELETE", "get", "Put"];
const HOSTS: &[&str] = &[
    "examplebucket.s3.amazonaws.com",
    "s3.eu-west-3.amazonaws.com",
    "127.0.0.1:9000",
    "localhost",
    "bucket.example.com:8443",
];
const SECRET_CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn random_key(rng: &mut Rng) -> String {
    if rng.chance(4) {
        // Very long keys (S3 allows 1024 bytes of UTF-8).
        return "k€y/".repeat(1 + rng.below(200));
    }
    let mut key = String::new();
    for _ in 0..1 + rng.below(8) {
        let piece: &&str = rng.pick(KEY_PIECES);
        key.push_str(piece);
    }
    key
}

fn random_path(rng: &mut Rng) -> String {
    let key = random_key(rng);
    match rng.below(10) {
        // Virtual-hosted style.
        0..=4 => encode_key_path(&key),
        // Path style.
        5..=7 => format!("/bucket-{}{}", rng.below(100), encode_key_path(&key)),
        // Raw paths that other encoders produce: lower-case escapes, sub-delims left as they are.
        8 => {
            let mut p = String::from("/");
            for b in key.bytes() {
                if b.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=:@".contains(&b) {
                    p.push(char::from(b));
                } else {
                    p.push_str(&format!("%{b:02x}"));
                }
            }
            p
        }
        _ => "/".to_string(),
    }
}

/// Encodes one query component in one of several legal ways.
fn encode_component(rng: &mut Rng, text: &str, is_value: bool) -> String {
    let style = rng.below(4);
    let mut out = String::new();
    for b in text.bytes() {
        let unreserved = b.is_ascii_alphanumeric() || b"-._~".contains(&b);
        let raw_ok = b"/:@!$'()*,;".contains(&b) || (is_value && b == b'=');
        match style {
            0 if unreserved => out.push(char::from(b)),
            1 if unreserved => out.push(char::from(b)),
            2 if unreserved && rng.chance(70) => out.push(char::from(b)),
            3 if unreserved || raw_ok => out.push(char::from(b)),
            1 => out.push_str(&format!("%{b:02x}")),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn random_params(rng: &mut Rng, unique: bool) -> Vec<(String, String)> {
    let mut params: Vec<(String, String)> = Vec::new();
    for _ in 0..rng.below(5) {
        let name = (*rng.pick(PARAM_NAMES)).to_string();
        let value = (*rng.pick(PARAM_VALUES)).to_string();
        if unique && params.iter().any(|(n, _)| *n == name) {
            continue;
        }
        params.push((name.clone(), value));
        if !unique && rng.chance(15) {
            params.push((name, (*rng.pick(PARAM_VALUES)).to_string()));
        }
    }
    params
}

fn raw_query(rng: &mut Rng, params: &[(String, String)]) -> String {
    let mut q = String::new();
    for (i, (n, v)) in params.iter().enumerate() {
        if i > 0 {
            q.push('&');
        }
        q.push_str(&encode_component(rng, n, false));
        if !v.is_empty() || rng.chance(50) {
            q.push('=');
            q.push_str(&encode_component(rng, v, true));
        }
    }
    q
}

fn random_headers(rng: &mut Rng) -> Vec<(String, String)> {
    let host_name = *rng.pick(&["Host", "host", "HOST"]);
    let mut headers = vec![(host_name.to_string(), rng.pick(HOSTS).to_string())];
    for _ in 0..rng.below(6) {
        let name = rng.pick(HEADER_NAMES).to_string();
        let value = rng.pick(HEADER_VALUES).to_string();
        let at = rng.below(headers.len() + 1);
        headers.insert(at, (name, value));
    }
    headers
}

fn random_secret(rng: &mut Rng) -> String {
    (0..40)
        .map(|_| char::from(*rng.pick(SECRET_CHARS)))
        .collect()
}

/// `n` cases from `seed`, about a third of them presigned.
pub fn generate(seed: u64, n: usize) -> Vec<Case> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|_| {
            let kind = if rng.chance(35) {
                Kind::Presign
            } else {
                Kind::Header
            };
            let params = random_params(&mut rng, kind == Kind::Presign);
            let raw_query = raw_query(&mut rng, &params);
            let payload = match rng.below(6) {
                0 => PayloadHash::of(b""),
                1 => PayloadHash::of(&rng.next_u64().to_le_bytes()),
                2 => PayloadHash::Unsigned,
                3 => PayloadHash::StreamingSigned,
                4 => PayloadHash::StreamingSignedTrailer,
                _ => PayloadHash::StreamingUnsignedTrailer,
            };
            let token = rng
                .chance(30)
                .then(|| format!("FQoGZXIvYXdzE{}/+=", random_secret(&mut rng)));
            // Between 2001 and 2033.
            let secs = 1_000_000_000 + (rng.next_u64() % 1_000_000_000) as i64;
            Case {
                kind,
                method: rng.pick(METHODS).to_string(),
                path: random_path(&mut rng),
                params,
                raw_query,
                headers: random_headers(&mut rng),
                access_key: format!("AKIA{:016X}", rng.next_u64()),
                secret_key: random_secret(&mut rng),
                token,
                region: rng.pick(REGIONS).to_string(),
                time: AmzDate::from_unix_seconds(secs).unwrap(),
                payload,
                expires: 1 + rng.next_u64() % 604_800,
            }
        })
        .collect()
}
