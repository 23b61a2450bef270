//! The order Azure Storage sorts canonicalized `x-ms-*` headers in.
//!
//! The documentation says "lexicographically", but the service compares names the way Windows'
//! culture-invariant string comparison does, and a signer that sorts bytes disagrees with it as soon as
//! names mix `-`, `_` and digits (`x-ms-meta-a_1` against `x-ms-meta-a1` against `x-ms-meta-a-1`).
//! Microsoft's SDKs carry the service's weight tables; this is the same comparison written as what the
//! tables say:
//!
//! 1. First, hyphens, apostrophes and the other unlisted ASCII characters are ignored, and the rest
//!    compare by [`PRIMARY_ORDER`], case-insensitively; a name that runs out first sorts first.
//! 2. If that ties, the names are walked together position by position, and at the first position
//!    where one holds a hyphen or apostrophe and the other does not (or has ended), the one without
//!    sorts first (an apostrophe before a hyphen; an ended name before either).
//!
//! Header names are ASCII tokens; other bytes sort after every ASCII character, by value. Names equal
//! under both rules (only possible with characters header names cannot contain) fall back to byte order
//! so that sorting is deterministic.

use std::cmp::Ordering;

/// The characters that count at the first level, lowest first. Letters are matched case-insensitively;
/// every ASCII character not listed here is ignored at that level.
const PRIMARY_ORDER: &[u8] = b"!#$%&*.^_`|~+0123456789abcdefghijklmnopqrstuvwxyz";

/// Weights of the first level: 0 ignores the byte, 1 marks the end of the name.
const fn primary_weights() -> [u16; 256] {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < PRIMARY_ORDER.len() {
        let weight = 2 + i as u16;
        table[PRIMARY_ORDER[i] as usize] = weight;
        table[PRIMARY_ORDER[i].to_ascii_uppercase() as usize] = weight;
        i += 1;
    }
    let mut byte = 0x80;
    while byte < 256 {
        table[byte] = 0x100 + byte as u16;
        byte += 1;
    }
    table
}

static PRIMARY: [u16; 256] = primary_weights();

fn primary(name: &[u8]) -> impl Iterator<Item = u16> + '_ {
    name.iter()
        .map(|&b| PRIMARY[usize::from(b)])
        .filter(|&w| w != 0)
}

/// The second level's weight of the byte at a position: `None` past the end.
fn secondary(byte: Option<&u8>) -> u16 {
    match byte {
        None => 1,
        Some(b'\'') => 2,
        Some(b'-') => 3,
        Some(_) => 0,
    }
}

/// Compares two header names as the service does.
pub(crate) fn compare(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    primary(a)
        .cmp(primary(b))
        .then_with(|| {
            for i in 0.. {
                let (x, y) = (secondary(a.get(i)), secondary(b.get(i)));
                if x == 1 && y == 1 {
                    break;
                }
                if x != y {
                    // The side without a hyphen or apostrophe here sorts first.
                    return match (x, y) {
                        (0, _) => Ordering::Less,
                        (_, 0) => Ordering::Greater,
                        _ => x.cmp(&y),
                    };
                }
            }
            Ordering::Equal
        })
        .then_with(|| a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(names: &[&str]) -> Vec<String> {
        let mut names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        names.sort_by(|a, b| compare(a, b));
        names
    }

    #[test]
    fn ordinary_names_sort_as_bytes_do() {
        assert_eq!(
            sorted(&["x-ms-version", "x-ms-date", "x-ms-blob-type", "x-ms-meta-b"]),
            ["x-ms-blob-type", "x-ms-date", "x-ms-meta-b", "x-ms-version"]
        );
    }

    #[test]
    fn underscore_sorts_before_digits_and_letters() {
        // Byte order would put '1' (0x31) before '_' (0x5F).
        assert_eq!(
            sorted(&["x-ms-meta-a1", "x-ms-meta-a_", "x-ms-meta-aa"]),
            ["x-ms-meta-a_", "x-ms-meta-a1", "x-ms-meta-aa"]
        );
    }

    #[test]
    fn hyphens_count_only_to_break_ties() {
        // Byte order would put "x-ms-meta-a-c" first ('-' is 0x2D).
        assert_eq!(
            sorted(&["x-ms-meta-a-c", "x-ms-meta-ab"]),
            ["x-ms-meta-ab", "x-ms-meta-a-c"]
        );
        // Equal without hyphens: the name whose hyphen comes later sorts first.
        assert_eq!(
            sorted(&["x-ms-meta-a-bc", "x-ms-meta-ab-c", "x-ms-meta-abc"]),
            ["x-ms-meta-abc", "x-ms-meta-ab-c", "x-ms-meta-a-bc"]
        );
        assert_eq!(compare("x-ms-a'b", "x-ms-a-b"), Ordering::Less);
    }

    #[test]
    fn a_prefix_sorts_first_and_case_is_ignored() {
        assert_eq!(compare("x-ms-meta", "x-ms-meta-x"), Ordering::Less);
        assert_eq!(compare("x-ms-meta-", "x-ms-meta"), Ordering::Greater);
        assert_eq!(
            compare("x-ms-Meta-A", "x-ms-meta-b"),
            Ordering::Less,
            "case-insensitive at the first level"
        );
        assert_eq!(compare("x-ms-a", "x-ms-a"), Ordering::Equal);
    }
}
