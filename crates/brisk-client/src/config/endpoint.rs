//! Where requests go: the endpoint URL and how a bucket is addressed on it.

use std::fmt;

use super::ConfigError;

/// Whether the endpoint is reached in clear text or over TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `http://`: plain TCP (local servers, tests, private networks).
    Http,
    /// `https://`: TLS over TCP.
    Https,
}

impl Scheme {
    /// The port used when the URL names none.
    pub fn default_port(self) -> u16 {
        match self {
            Self::Http => 80,
            Self::Https => 443,
        }
    }

    /// `http` or `https`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Https => "https",
        }
    }
}

/// A parsed endpoint URL: `scheme://host[:port]` (a trailing `/` is accepted; any other path is
/// refused, since S3 request paths start at the root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `http` or `https`.
    pub scheme: Scheme,
    /// Host name or IP address (IPv6 without brackets).
    pub host: String,
    /// TCP port.
    pub port: u16,
}

impl Endpoint {
    /// Parses an endpoint URL such as `http://127.0.0.1:9000` or `https://s3.eu-west-1.amazonaws.com`.
    pub fn parse(url: &str) -> Result<Self, ConfigError> {
        let invalid = |reason: &'static str| ConfigError::InvalidEndpoint {
            url: url.to_owned(),
            reason,
        };
        let (scheme, rest) = if let Some(rest) = url.strip_prefix("http://") {
            (Scheme::Http, rest)
        } else if let Some(rest) = url.strip_prefix("https://") {
            (Scheme::Https, rest)
        } else {
            return Err(invalid("it must start with http:// or https://"));
        };
        let authority = match rest.find('/') {
            Some(slash) if rest[slash..] != *"/" => {
                return Err(invalid("it must not have a path"));
            }
            Some(slash) => &rest[..slash],
            None => rest,
        };
        if authority.contains('@') || authority.contains('?') || authority.contains('#') {
            return Err(invalid("it must be scheme://host[:port] only"));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let end = v6
                .find(']')
                .ok_or_else(|| invalid("unclosed IPv6 bracket"))?;
            let port = &v6[end + 1..];
            let port = match port.strip_prefix(':') {
                Some(p) => Some(p),
                None if port.is_empty() => None,
                None => return Err(invalid("junk after the IPv6 address")),
            };
            (&v6[..end], port)
        } else {
            match authority.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(invalid("it has no host"));
        }
        let port = match port {
            Some(p) => p
                .parse::<u16>()
                .map_err(|_| invalid("the port is not a number in 1..=65535"))?,
            None => scheme.default_port(),
        };
        if port == 0 {
            return Err(invalid("the port is not a number in 1..=65535"));
        }
        Ok(Self {
            scheme,
            host: host.to_owned(),
            port,
        })
    }

    /// The AWS endpoint of S3 in `region`.
    pub fn aws(region: &str) -> Self {
        Self {
            scheme: Scheme::Https,
            host: format!("s3.{region}.amazonaws.com"),
            port: 443,
        }
    }

    /// The `Host` header value for `host` on this endpoint's port (the port is omitted when it is the
    /// scheme's default, as browsers and the SDKs do; SigV4 signs exactly what is sent).
    pub fn host_header(&self, host: &str) -> String {
        let bracketed = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.to_owned()
        };
        if self.port == self.scheme.default_port() {
            bracketed
        } else {
            format!("{bracketed}:{}", self.port)
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}://{}",
            self.scheme.as_str(),
            self.host_header(&self.host)
        )
    }
}

/// How a bucket appears in a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Addressing {
    /// `http://endpoint/bucket/key`: what local and self-hosted servers (MinIO, `brisk serve`) expect.
    Path,
    /// `https://bucket.endpoint/key`: what AWS recommends. Buckets whose names are not valid DNS
    /// labels (upper case, `_`, or `.` over TLS, where the certificate would not match) fall back to
    /// path style, as the SDKs do.
    VirtualHosted,
}

/// Whether `bucket` can be the first label of a host name on `scheme`.
pub fn is_virtual_host_compatible(bucket: &str, scheme: Scheme) -> bool {
    let len_ok = (3..=63).contains(&bucket.len());
    let chars_ok = bucket
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
    let edges_ok = !bucket.starts_with(['-', '.']) && !bucket.ends_with(['-', '.']);
    let dots_ok = !bucket.contains('.') || scheme == Scheme::Http;
    len_ok && chars_ok && edges_ok && dots_ok && !bucket.contains("..")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_hosts_ports_and_schemes() {
        let e = Endpoint::parse("http://127.0.0.1:9000").unwrap();
        assert_eq!(
            (e.scheme, e.host.as_str(), e.port),
            (Scheme::Http, "127.0.0.1", 9000)
        );
        let e = Endpoint::parse("https://s3.eu-west-1.amazonaws.com/").unwrap();
        assert_eq!((e.scheme, e.port), (Scheme::Https, 443));
        let e = Endpoint::parse("http://[::1]:8080").unwrap();
        assert_eq!((e.host.as_str(), e.port), ("::1", 8080));
        assert_eq!(e.host_header(&e.host), "[::1]:8080");
        assert_eq!(e.to_string(), "http://[::1]:8080");
    }

    #[test]
    fn host_header_omits_default_ports() {
        let e = Endpoint::parse("http://localhost").unwrap();
        assert_eq!(e.host_header("b.localhost"), "b.localhost");
        let e = Endpoint::parse("http://localhost:9000").unwrap();
        assert_eq!(e.host_header("localhost"), "localhost:9000");
    }

    #[test]
    fn rejects_what_is_not_an_endpoint() {
        for bad in [
            "ftp://x",
            "127.0.0.1:9000",
            "http://",
            "http://h:0",
            "http://h:99999",
            "http://h:port",
            "http://h/base",
            "http://user@h",
            "http://[::1",
        ] {
            assert!(Endpoint::parse(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn virtual_host_compatibility() {
        assert!(is_virtual_host_compatible("my-bucket", Scheme::Https));
        assert!(is_virtual_host_compatible("my.bucket", Scheme::Http));
        assert!(!is_virtual_host_compatible("my.bucket", Scheme::Https));
        assert!(!is_virtual_host_compatible("My_Bucket", Scheme::Http));
        assert!(!is_virtual_host_compatible("ab", Scheme::Http));
        assert!(!is_virtual_host_compatible("-ab", Scheme::Http));
    }
}
