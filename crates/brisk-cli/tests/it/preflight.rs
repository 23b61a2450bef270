//! A CORS preflight (`OPTIONS`) on a presigned URL, as a browser sends it before using the URL:
//! answered as S3 answers for a bucket without a CORS configuration, never as a signature error
//! (a preflight carries none, whatever the URL's query holds).

use brisk_testkit::http;

use crate::support::{brisk, serve};

fn options(url: &str, path_and_query: &str, origin: Option<&str>) -> (u16, String) {
    let preflight = origin.map(|o| [("Origin", o), ("Access-Control-Request-Method", "GET")]);
    let headers = preflight.as_ref().map_or(&[][..], |h| &h[..]);
    let answer = http::request("OPTIONS", &format!("{url}{path_and_query}"), headers, b"");
    let text = format!("{}{}", answer.head, String::from_utf8_lossy(&answer.body));
    (answer.status, text)
}

#[test]
fn preflight_on_a_presigned_url_is_answered_as_s3_answers_without_cors() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("data"), &[]);
    let url = server.url.as_str();
    assert!(brisk(url, &["mb", "s3://preflight"]).status.success());
    let presigned = brisk(url, &["presign", "s3://preflight/key"]);
    assert!(presigned.status.success());
    let presigned = String::from_utf8(presigned.stdout).unwrap();
    let path_and_query = presigned.trim().trim_start_matches(url);
    assert!(
        path_and_query.starts_with("/preflight/key?"),
        "{path_and_query}"
    );

    let (status, answer) = options(url, path_and_query, Some("https://example.com"));
    assert_eq!(status, 403, "{answer}");
    assert!(answer.contains("<Code>CORSResponse</Code>"), "{answer}");
    assert!(
        answer.contains("CORS is not enabled for this bucket."),
        "{answer}"
    );

    let (status, answer) = options(url, path_and_query, None);
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer.contains("Insufficient information. Origin request header needed."),
        "{answer}"
    );
}
