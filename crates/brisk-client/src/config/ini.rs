//! The INI dialect of `~/.aws/credentials` and `~/.aws/config`, as the AWS CLI and SDKs read it.
//!
//! - `[section]` headers; the config file names profiles `[profile name]` (except `[default]`),
//!   the credentials file names them `[name]`. Other section kinds (`[sso-session x]`,
//!   `[services x]`) are kept under their full header text and ignored by the profile lookup.
//! - `key = value` pairs; keys are case-sensitive, surrounding whitespace is trimmed.
//! - Lines starting with `#` or `;` are comments; so is ` #`/` ;` after a value (the SDKs strip an
//!   inline comment only when whitespace precedes it, so `secret#x` keeps its `#`).
//! - A key with an empty value followed by indented `sub = value` lines is a nested block, as in
//!   `s3 =\n  endpoint_url = http://...`; its entries are stored as `s3.endpoint_url`.
//!
//! Parsing is lenient where the SDKs are (lines that are neither are skipped) so that a file written
//! for newer tools still loads, but a value outside any section is an error since it can never apply.

use std::collections::HashMap;

/// Why an AWS configuration file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IniError {
    /// A `key = value` line appears before the first `[section]` header.
    #[error("line {line}: `{text}` is outside any [section]")]
    OutsideSection { line: usize, text: String },
    /// A section header lacks its closing `]`.
    #[error("line {line}: section header `{text}` lacks its closing `]`")]
    UnclosedSection { line: usize, text: String },
}

/// A parsed file: section name → key → value. Later duplicates override earlier ones, as in the SDKs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IniFile {
    sections: HashMap<String, HashMap<String, String>>,
}

impl IniFile {
    /// Parses the text of a credentials or config file.
    pub fn parse(text: &str) -> Result<Self, IniError> {
        let mut sections: HashMap<String, HashMap<String, String>> = HashMap::new();
        let mut current: Option<String> = None;
        // The key whose empty value opened a nested block, while indented lines follow it.
        let mut nested_parent: Option<String> = None;
        for (index, raw) in text.lines().enumerate() {
            let line_no = index + 1;
            let indented = raw.starts_with([' ', '\t']);
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
                continue;
            }
            if line.starts_with('[') {
                let Some(end) = line.find(']') else {
                    return Err(IniError::UnclosedSection {
                        line: line_no,
                        text: line.to_owned(),
                    });
                };
                let name = line[1..end].trim().to_owned();
                sections.entry(name.clone()).or_default();
                current = Some(name);
                nested_parent = None;
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            let Some(section) = current.as_ref() else {
                return Err(IniError::OutsideSection {
                    line: line_no,
                    text: line.to_owned(),
                });
            };
            let key = key.trim();
            let value = strip_inline_comment(value.trim());
            let entries = sections.entry(section.clone()).or_default();
            match (&nested_parent, indented) {
                (Some(parent), true) => {
                    entries.insert(format!("{parent}.{key}"), value.to_owned());
                }
                _ => {
                    nested_parent = value.is_empty().then(|| key.to_owned());
                    entries.insert(key.to_owned(), value.to_owned());
                }
            }
        }
        Ok(Self { sections })
    }

    /// The entries of the section whose header text is exactly `name`.
    pub fn section(&self, name: &str) -> Option<&HashMap<String, String>> {
        self.sections.get(name)
    }

    /// The profile `profile` of a config file: `[default]` for `default` (also accepting
    /// `[profile default]`), `[profile name]` otherwise.
    pub fn config_profile(&self, profile: &str) -> Option<&HashMap<String, String>> {
        let prefixed = self.sections.get(&format!("profile {profile}"));
        if profile == "default" {
            self.sections.get("default").or(prefixed)
        } else {
            prefixed
        }
    }

    /// The profile `profile` of a credentials file: `[name]`.
    pub fn credentials_profile(&self, profile: &str) -> Option<&HashMap<String, String>> {
        self.sections.get(profile)
    }
}

/// Removes a ` # comment` or ` ; comment` from the end of a value.
fn strip_inline_comment(value: &str) -> &str {
    let bytes = value.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if (b == b'#' || b == b';') && i > 0 && bytes[i - 1].is_ascii_whitespace() {
            return value[..i].trim_end();
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_sections_keys_and_comments() {
        let file = IniFile::parse(
            "# leading comment\n\
             [default]\n\
             aws_access_key_id = AKIDDEFAULT\n\
             ; another comment\n\
             aws_secret_access_key=secret/with+chars#kept ; trailing comment\n\
             \n\
             [work]\n\
             aws_access_key_id =   AKIDWORK   \n",
        )
        .unwrap();
        let default = file.credentials_profile("default").unwrap();
        assert_eq!(default["aws_access_key_id"], "AKIDDEFAULT");
        assert_eq!(default["aws_secret_access_key"], "secret/with+chars#kept");
        assert_eq!(
            file.credentials_profile("work").unwrap()["aws_access_key_id"],
            "AKIDWORK"
        );
        assert!(file.credentials_profile("missing").is_none());
    }

    #[test]
    fn config_profiles_use_the_profile_prefix() {
        let file = IniFile::parse(
            "[default]\nregion = eu-west-1\n[profile dev]\nregion = us-west-2\n[dev]\nregion = wrong\n",
        )
        .unwrap();
        assert_eq!(
            file.config_profile("default").unwrap()["region"],
            "eu-west-1"
        );
        assert_eq!(file.config_profile("dev").unwrap()["region"], "us-west-2");
        let only_prefixed = IniFile::parse("[profile default]\nregion = ap-south-1\n").unwrap();
        assert_eq!(
            only_prefixed.config_profile("default").unwrap()["region"],
            "ap-south-1"
        );
    }

    #[test]
    fn nested_blocks_become_dotted_keys() {
        let file = IniFile::parse(
            "[profile local]\n\
             region = us-east-1\n\
             s3 =\n\
             \x20 endpoint_url = http://127.0.0.1:9000\n\
             \x20 addressing_style = path\n\
             output = json\n",
        )
        .unwrap();
        let profile = file.config_profile("local").unwrap();
        assert_eq!(profile["s3.endpoint_url"], "http://127.0.0.1:9000");
        assert_eq!(profile["s3.addressing_style"], "path");
        assert_eq!(profile["output"], "json");
        assert_eq!(profile["region"], "us-east-1");
    }

    #[test]
    fn later_duplicates_override() {
        let file = IniFile::parse("[a]\nk = 1\n[b]\nk = 2\n[a]\nk = 3\n").unwrap();
        assert_eq!(file.section("a").unwrap()["k"], "3");
        assert_eq!(file.section("b").unwrap()["k"], "2");
    }

    #[test]
    fn rejects_values_outside_sections_and_unclosed_headers() {
        assert_eq!(
            IniFile::parse("k = v\n[a]\n"),
            Err(IniError::OutsideSection {
                line: 1,
                text: "k = v".into()
            })
        );
        assert!(matches!(
            IniFile::parse("[a\nk = v\n"),
            Err(IniError::UnclosedSection { line: 1, .. })
        ));
    }

    #[test]
    fn handles_crlf_and_tabs() {
        let file = IniFile::parse("[default]\r\n\taws_access_key_id\t=\tAKID\r\n").unwrap();
        assert_eq!(
            file.section("default").unwrap()["aws_access_key_id"],
            "AKID"
        );
    }
}
