//! The standard headers S3 stores with an object and gives back on every GET and HEAD of it:
//! `Content-Type`, `Content-Encoding`, `Content-Disposition`, `Content-Language`, `Cache-Control`
//! and `Expires`. One table names each of them for every place that writes or reads them: the
//! client's uploads and HEAD, brisk serve's PUT, GET and HEAD, and the Python binding's
//! `headers=`.
//!
//! Beside its HTTP name, each header has the GET query parameter that overrides it in one response
//! (`response-content-type`, ...) and the name Azure Blob Storage takes it under on Put Blob and
//! Put Block List (`x-ms-blob-content-type`, ...; Azure keeps no `Expires`).

/// One of the standard headers stored with an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StandardHeader {
    /// `Content-Type`.
    ContentType,
    /// `Content-Encoding` (e.g. `gzip` for bytes stored compressed).
    ContentEncoding,
    /// `Content-Disposition`.
    ContentDisposition,
    /// `Content-Language`.
    ContentLanguage,
    /// `Cache-Control`.
    CacheControl,
    /// `Expires` (an HTTP date, kept as the client's string).
    Expires,
}

impl StandardHeader {
    /// Every standard header, in the order brisk serve writes them into a response.
    pub const ALL: [StandardHeader; 6] = [
        Self::ContentType,
        Self::ContentEncoding,
        Self::ContentDisposition,
        Self::ContentLanguage,
        Self::CacheControl,
        Self::Expires,
    ];

    /// The header's name, lower case (as HTTP/2 and SigV4 canonical requests want it).
    pub const fn name(self) -> &'static str {
        match self {
            Self::ContentType => "content-type",
            Self::ContentEncoding => "content-encoding",
            Self::ContentDisposition => "content-disposition",
            Self::ContentLanguage => "content-language",
            Self::CacheControl => "cache-control",
            Self::Expires => "expires",
        }
    }

    /// The GET query parameter that overrides the stored value in one response
    /// (`response-content-type`, ...).
    pub const fn response_override(self) -> &'static str {
        match self {
            Self::ContentType => "response-content-type",
            Self::ContentEncoding => "response-content-encoding",
            Self::ContentDisposition => "response-content-disposition",
            Self::ContentLanguage => "response-content-language",
            Self::CacheControl => "response-cache-control",
            Self::Expires => "response-expires",
        }
    }

    /// The header Azure Blob Storage takes the value under on Put Blob and Put Block List
    /// (`x-ms-blob-content-type`, ...); `None` for `Expires`, which Azure does not keep.
    pub const fn azure_name(self) -> Option<&'static str> {
        match self {
            Self::ContentType => Some("x-ms-blob-content-type"),
            Self::ContentEncoding => Some("x-ms-blob-content-encoding"),
            Self::ContentDisposition => Some("x-ms-blob-content-disposition"),
            Self::ContentLanguage => Some("x-ms-blob-content-language"),
            Self::CacheControl => Some("x-ms-blob-cache-control"),
            Self::Expires => None,
        }
    }

    /// The standard header called `name` (in any case); `None` for any other header.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|h| h.name().eq_ignore_ascii_case(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_found_in_any_case() {
        for header in StandardHeader::ALL {
            assert_eq!(StandardHeader::from_name(header.name()), Some(header));
            assert_eq!(
                StandardHeader::from_name(&header.name().to_ascii_uppercase()),
                Some(header)
            );
            assert_eq!(
                header.response_override(),
                format!("response-{}", header.name())
            );
        }
        assert_eq!(
            StandardHeader::from_name("Cache-Control"),
            Some(StandardHeader::CacheControl)
        );
        assert_eq!(StandardHeader::from_name("x-amz-meta-a"), None);
        assert_eq!(StandardHeader::Expires.azure_name(), None);
    }
}
