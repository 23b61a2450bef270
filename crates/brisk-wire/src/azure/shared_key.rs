//! Shared Key authorization for the Blob service, in the layout of service version 2009-09-19 and
//! later:
//!
//! ```text
//! VERB \n
//! Content-Encoding \n Content-Language \n Content-Length \n Content-MD5 \n Content-Type \n Date \n
//! If-Modified-Since \n If-Match \n If-None-Match \n If-Unmodified-Since \n Range \n
//! CanonicalizedHeaders      x-ms-* headers, "name:value\n" each
//! CanonicalizedResource     "/" account path, then "\nname:value" per query parameter
//! ```
//!
//! signed with HMAC-SHA256 under the base64-decoded account key and sent as
//! `Authorization: SharedKey account:base64(signature)`.
//!
//! The service rebuilds this string from the request it receives, so every rule here is about what it
//! sees:
//!
//! * A Content-Length of `0` is an empty line (since version 2015-02-21).
//! * Header values are signed without the whitespace around them, which HTTP parsers drop; whitespace
//!   inside a value is kept. A header sent twice is signed once, its values joined by `,`.
//! * `x-ms-*` names are lower-cased and sorted the way the service sorts them, which is not byte order
//!   (see `collation`).
//! * The path is signed exactly as sent (percent-encoded). An emulator's path-style URL carries the
//!   account as its first segment, so the account appears twice:
//!   `/devstoreaccount1/devstoreaccount1/container/blob`.
//! * Query parameters are signed decoded, with lower-cased names sorted by byte, and the values of a
//!   parameter given several times sorted and joined by `,`. A literal `+` is signed as `+` (as
//!   Microsoft's SDKs do); send `%2B` (brisk-client's `push_query` does) since servers disagree on what it means.

use std::borrow::Cow;
use std::fmt;

use crate::checksum::engine::Sha256;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use percent_encoding::percent_decode_str;

use super::collation;

type HmacSha256 = Hmac<Sha256>;

/// The standard headers of the string to sign, in order: one line each, empty when absent.
const STANDARD_HEADERS: [&str; 11] = [
    "content-encoding",
    "content-language",
    "content-length",
    "content-md5",
    "content-type",
    "date",
    "if-modified-since",
    "if-match",
    "if-none-match",
    "if-unmodified-since",
    "range",
];

/// The prefix of the headers that are signed by name.
const MS_PREFIX: &[u8] = b"x-ms-";

/// Why an account name or key was refused. The key itself is never part of the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AzureKeyError {
    /// The account name is empty.
    #[error("the storage account name is empty")]
    EmptyAccount,
    /// The account key is not standard, padded base64 (as the portal and `az` print it).
    #[error("the storage account key is not valid base64")]
    InvalidBase64,
    /// The account key decodes to no bytes.
    #[error("the storage account key is empty")]
    EmptyKey,
}

/// A storage account's name and key, ready to sign.
///
/// The key is kept only as an HMAC state already keyed with it, which each signature clones instead of
/// keying a new one; `Debug` shows the account alone.
#[derive(Clone)]
pub struct SharedKeyCredential {
    account: String,
    mac: HmacSha256,
}

impl SharedKeyCredential {
    /// The credential of `account` whose key is `base64_key` (standard alphabet, padded; surrounding
    /// whitespace is ignored).
    pub fn new(account: impl Into<String>, base64_key: &str) -> Result<Self, AzureKeyError> {
        let account = account.into();
        if account.is_empty() {
            return Err(AzureKeyError::EmptyAccount);
        }
        let key = STANDARD
            .decode(base64_key.trim())
            .map_err(|_| AzureKeyError::InvalidBase64)?;
        if key.is_empty() {
            return Err(AzureKeyError::EmptyKey);
        }
        let mac = HmacSha256::new_from_slice(&key).expect("HMAC accepts keys of any length");
        Ok(Self { account, mac })
    }

    /// The storage account name.
    pub fn account(&self) -> &str {
        &self.account
    }

    /// `base64(HMAC-SHA256(key, string_to_sign))`: the signature of a Shared Key string to sign or of a
    /// SAS string to sign.
    pub fn sign(&self, string_to_sign: &str) -> String {
        let mut mac = self.mac.clone();
        mac.update(string_to_sign.as_bytes());
        STANDARD.encode(mac.finalize().into_bytes())
    }

    /// The `Authorization` header value for `request`: `SharedKey {account}:{signature}`.
    pub fn authorization(&self, request: &AzureRequest<'_>) -> String {
        let signature = self.sign(&string_to_sign(&self.account, request));
        format!("SharedKey {}:{signature}", self.account)
    }
}

impl fmt::Debug for SharedKeyCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedKeyCredential")
            .field("account", &self.account)
            .finish_non_exhaustive()
    }
}

/// A request as it will be sent, for signing.
#[derive(Debug, Clone, Copy)]
pub struct AzureRequest<'a> {
    /// The HTTP method, as sent (`GET`, `PUT`, ...).
    pub method: &'a str,
    /// The path as sent, percent-encoded, starting with `/`. For path-style emulator URLs it includes
    /// the account: `/devstoreaccount1/container/blob`.
    pub path: &'a str,
    /// The raw query as sent (components percent-encoded), without `?`; may be empty.
    pub query: &'a str,
    /// Every header that will be sent (names in any case), including `x-ms-date`, `x-ms-version` and
    /// `Content-Length`.
    pub headers: &'a [(&'a str, &'a str)],
}

/// The Shared Key string to sign of `request` for `account` (the layout of service version 2009-09-19
/// and later; see the module documentation for each rule).
pub fn string_to_sign(account: &str, request: &AzureRequest<'_>) -> String {
    let mut out = String::with_capacity(256 + request.path.len() + request.query.len());
    out.push_str(request.method);
    out.push('\n');
    for name in STANDARD_HEADERS {
        let value = header_value(request.headers, name);
        if !(name == "content-length" && value == "0") {
            out.push_str(&value);
        }
        out.push('\n');
    }
    push_canonicalized_headers(request.headers, &mut out);
    push_canonicalized_resource(account, request.path, request.query, &mut out);
    out
}

/// A header value as the service reads it: without surrounding spaces and tabs.
fn trim_value(value: &str) -> &str {
    value.trim_matches([' ', '\t'])
}

/// The value of header `name` (lower case), the values of repeated headers joined by `,`.
fn header_value<'a>(headers: &[(&str, &'a str)], name: &str) -> Cow<'a, str> {
    let mut value = Cow::Borrowed("");
    let mut found = false;
    for (_, v) in headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case(name)) {
        let v = trim_value(v);
        if found {
            let joined = value.to_mut();
            joined.push(',');
            joined.push_str(v);
        } else {
            value = Cow::Borrowed(v);
            found = true;
        }
    }
    value
}

/// Appends `name:value\n` for each `x-ms-*` header, names lower-cased, in the service's order.
fn push_canonicalized_headers(headers: &[(&str, &str)], out: &mut String) {
    let mut ms: Vec<(String, String)> = Vec::with_capacity(headers.len());
    for (name, value) in headers {
        let name = name.trim();
        let is_ms = name
            .as_bytes()
            .get(..MS_PREFIX.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(MS_PREFIX));
        if !is_ms {
            continue;
        }
        let name = name.to_ascii_lowercase();
        let value = trim_value(value);
        match ms.iter_mut().find(|(n, _)| *n == name) {
            Some((_, joined)) => {
                joined.push(',');
                joined.push_str(value);
            }
            None => ms.push((name, value.to_owned())),
        }
    }
    ms.sort_by(|(a, _), (b, _)| collation::compare(a, b));
    for (name, value) in &ms {
        out.push_str(name);
        out.push(':');
        out.push_str(value);
        out.push('\n');
    }
}

fn decode(component: &str) -> Cow<'_, str> {
    percent_decode_str(component).decode_utf8_lossy()
}

/// Appends `/{account}{path}` and `\nname:value[,value...]` for each query parameter.
fn push_canonicalized_resource(account: &str, path: &str, query: &str, out: &mut String) {
    out.push('/');
    out.push_str(account);
    out.push_str(if path.is_empty() { "/" } else { path });
    let mut params: Vec<(String, Cow<'_, str>)> = query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(name).to_lowercase(), decode(value))
        })
        .collect();
    params.sort();
    let mut previous: Option<&str> = None;
    for (name, value) in &params {
        if previous == Some(name.as_str()) {
            out.push(',');
        } else {
            out.push('\n');
            out.push_str(name);
            out.push(':');
        }
        out.push_str(value);
        previous = Some(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The well-known key of the storage emulator (Azurite's `EMULATOR_ACCOUNT_KEY_STR`).
    const EMULATOR_KEY: &str =
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
    const DATE: &str = "Fri, 26 Jun 2015 23:39:12 GMT";

    fn sts(method: &str, path: &str, query: &str, headers: &[(&str, &str)]) -> String {
        string_to_sign(
            "myaccount",
            &AzureRequest {
                method,
                path,
                query,
                headers,
            },
        )
    }

    /// Microsoft's example in "Authorize with Shared Key": Get Container Metadata.
    #[test]
    fn documented_get_container_metadata_example() {
        let headers = [("x-ms-date", DATE), ("x-ms-version", "2015-02-21")];
        assert_eq!(
            sts(
                "GET",
                "/mycontainer",
                "restype=container&comp=metadata&timeout=20",
                &headers
            ),
            "GET\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:Fri, 26 Jun 2015 23:39:12 GMT\n\
             x-ms-version:2015-02-21\n/myaccount/mycontainer\ncomp:metadata\nrestype:container\n\
             timeout:20"
        );
    }

    /// The documented Create Container example for version 2015-02-21 and later: a Content-Length of 0
    /// is an empty line (earlier versions signed `0`).
    #[test]
    fn documented_zero_content_length_example() {
        let headers = [
            ("x-ms-version", "2015-02-21"),
            ("Content-Length", "0"),
            ("x-ms-date", DATE),
        ];
        assert_eq!(
            sts(
                "PUT",
                "/mycontainer",
                "restype=container&timeout=30",
                &headers
            ),
            "PUT\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:Fri, 26 Jun 2015 23:39:12 GMT\n\
             x-ms-version:2015-02-21\n/myaccount/mycontainer\nrestype:container\ntimeout:30"
        );
    }

    /// The documented canonicalized resources: repeated parameters are one sorted, comma-joined line;
    /// a secondary endpoint signs the primary account with the plain path.
    #[test]
    fn documented_canonicalized_resources() {
        let mut out = String::new();
        push_canonicalized_resource(
            "myaccount",
            "/mycontainer",
            "restype=container&comp=list&include=snapshots&include=metadata&include=uncommittedblobs",
            &mut out,
        );
        assert_eq!(
            out,
            "/myaccount/mycontainer\ncomp:list\ninclude:metadata,snapshots,uncommittedblobs\n\
             restype:container"
        );
        out.clear();
        push_canonicalized_resource("myaccount", "/mycontainer/myblob", "", &mut out);
        assert_eq!(out, "/myaccount/mycontainer/myblob");
    }

    #[test]
    fn emulator_paths_sign_the_account_twice() {
        let headers = [("x-ms-date", DATE), ("x-ms-version", "2025-11-05")];
        let s = string_to_sign(
            "devstoreaccount1",
            &AzureRequest {
                method: "HEAD",
                path: "/devstoreaccount1/c/a%20b",
                query: "",
                headers: &headers,
            },
        );
        assert!(
            s.ends_with("\n/devstoreaccount1/devstoreaccount1/c/a%20b"),
            "{s:?}"
        );
    }

    #[test]
    fn standard_headers_fill_their_lines_in_order() {
        let headers = [
            ("Range", "bytes=0-9"),
            ("If-Unmodified-Since", "U"),
            ("If-None-Match", "\"n\""),
            ("If-Match", "\"m\""),
            ("If-Modified-Since", "M"),
            ("Date", "D"),
            ("Content-Type", "text/plain"),
            ("Content-MD5", "md5=="),
            ("Content-Length", "11"),
            ("Content-Language", "de"),
            ("CONTENT-ENCODING", " gzip\t"),
            ("Host", "example"),
            ("x-ms-version", "2025-11-05"),
        ];
        assert_eq!(
            sts("PUT", "/c/b", "", &headers),
            "PUT\ngzip\nde\n11\nmd5==\ntext/plain\nD\nM\n\"m\"\n\"n\"\nU\nbytes=0-9\n\
             x-ms-version:2025-11-05\n/myaccount/c/b"
        );
    }

    #[test]
    fn ms_headers_are_lowered_trimmed_joined_and_sorted() {
        let headers = [
            ("X-MS-Version", "2025-11-05"),
            ("x-ms-meta-Note", "  a  b \t"),
            ("x-ms-date", DATE),
            ("x-msx-other", "not signed"),
            ("x-ms-meta-a1", "1"),
            ("x-ms-meta-a_", "2"),
            ("x-ms-meta-dup", "x"),
            ("X-Ms-Meta-Dup", "y"),
            ("x-ms-meta-empty", ""),
        ];
        assert_eq!(
            sts("GET", "/c", "", &headers),
            "GET\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:Fri, 26 Jun 2015 23:39:12 GMT\n\
             x-ms-meta-a_:2\nx-ms-meta-a1:1\nx-ms-meta-dup:x,y\nx-ms-meta-empty:\n\
             x-ms-meta-note:a  b\nx-ms-version:2025-11-05\n/myaccount/c"
        );
    }

    #[test]
    fn query_components_are_decoded_lowered_and_grouped() {
        let mut out = String::new();
        push_canonicalized_resource(
            "a",
            "/c/b",
            "comp=block&blockid=YS%2Bb%2Fc%3D%3D&Timeout=5&flag&&prefix=d%20e%2Bf&x=a+b&x=%C3%A9",
            &mut out,
        );
        assert_eq!(
            out,
            "/a/c/b\nblockid:YS+b/c==\ncomp:block\nflag:\nprefix:d e+f\ntimeout:5\nx:a+b,é"
        );
        out.clear();
        push_canonicalized_resource("a", "", "comp=list", &mut out);
        assert_eq!(out, "/a/\ncomp:list");
    }

    #[test]
    fn authorization_is_shared_key_with_the_hmac_of_the_string_to_sign() {
        let credential = SharedKeyCredential::new("devstoreaccount1", EMULATOR_KEY).unwrap();
        // base64(HMAC-SHA256(base64decode(EMULATOR_KEY), "GET\n...")) computed with Python's hmac.
        let string = "GET\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:Fri, 26 Jun 2015 23:39:12 GMT\n\
                      x-ms-version:2015-02-21\n/devstoreaccount1/devstoreaccount1/mycontainer\n\
                      comp:metadata\nrestype:container\ntimeout:20";
        let expected = "8qkllG2KRigfHAuoixCLQgQEAuR65sidBFzzvqadckM=";
        assert_eq!(credential.sign(string), expected);
        let headers = [("x-ms-date", DATE), ("x-ms-version", "2015-02-21")];
        let request = AzureRequest {
            method: "GET",
            path: "/devstoreaccount1/mycontainer",
            query: "restype=container&comp=metadata&timeout=20",
            headers: &headers,
        };
        assert_eq!(string_to_sign("devstoreaccount1", &request), string);
        assert_eq!(
            credential.authorization(&request),
            format!("SharedKey devstoreaccount1:{expected}")
        );
    }

    #[test]
    fn bad_keys_are_refused_and_never_printed() {
        assert_eq!(
            SharedKeyCredential::new("a", "not base64!").unwrap_err(),
            AzureKeyError::InvalidBase64
        );
        assert_eq!(
            SharedKeyCredential::new("a", "").unwrap_err(),
            AzureKeyError::EmptyKey
        );
        assert_eq!(
            SharedKeyCredential::new("", EMULATOR_KEY).unwrap_err(),
            AzureKeyError::EmptyAccount
        );
        let credential =
            SharedKeyCredential::new("devstoreaccount1", &format!(" {EMULATOR_KEY}\n")).unwrap();
        assert_eq!(credential.account(), "devstoreaccount1");
        let debug = format!("{credential:?}");
        assert!(debug.contains("devstoreaccount1"));
        assert!(!debug.contains("Eby8") && !debug.contains("mac"), "{debug}");
    }
}
