//! `--include` / `--exclude` as the AWS CLI applies them: every path is included to begin with, then
//! each filter, in the order given on the command line, includes or excludes the paths its pattern
//! matches; the last filter that matches decides. Patterns are shell globs (`*` matches any run of
//! characters including `/`, `?` one character, `[abc]` / `[!abc]` a set), matched against the path
//! relative to the source directory or prefix.

/// Whether a filter includes or excludes what it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterKind {
    Include,
    Exclude,
}

/// The filters of one command, in command-line order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filters {
    rules: Vec<(FilterKind, String)>,
}

impl Filters {
    pub fn new(rules: Vec<(FilterKind, String)>) -> Self {
        Self { rules }
    }

    /// Whether `relative` (a path relative to the source root, `/`-separated) is selected.
    pub fn selects(&self, relative: &str) -> bool {
        let mut included = true;
        for (kind, pattern) in &self.rules {
            if glob_match(pattern.as_bytes(), relative.as_bytes()) {
                included = *kind == FilterKind::Include;
            }
        }
        included
    }
}

/// fnmatch-style matching without special treatment of `/` (as Python's `fnmatch`, which the AWS CLI
/// uses). Iterative with one backtrack point for `*`, so time is O(pattern × text) at worst.
pub fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    star = Some((p, t));
                    p += 1;
                    continue;
                }
                b'?' => {
                    p += 1;
                    t += 1;
                    continue;
                }
                b'[' => {
                    if let Some((matched, next)) = match_set(&pattern[p..], text[t]) {
                        if matched {
                            p += next;
                            t += 1;
                            continue;
                        }
                    } else if text[t] == b'[' {
                        // An unclosed `[` is a literal, as in fnmatch.
                        p += 1;
                        t += 1;
                        continue;
                    }
                }
                c if c == text[t] => {
                    p += 1;
                    t += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((sp, st)) => {
                p = sp + 1;
                t = st + 1;
                star = Some((sp, st + 1));
            }
            None => return false,
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// Matches `c` against the set starting at `set[0] == b'['`: `Some((matched, length of the set))`,
/// or `None` when the set is not closed.
fn match_set(set: &[u8], c: u8) -> Option<(bool, usize)> {
    let mut i = 1;
    let negated = matches!(set.get(i), Some(b'!') | Some(b'^'));
    if negated {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    while i < set.len() {
        if set[i] == b']' && !first {
            return Some((matched != negated, i + 1));
        }
        first = false;
        if i + 2 < set.len() && set[i + 1] == b'-' && set[i + 2] != b']' {
            if (set[i]..=set[i + 2]).contains(&c) {
                matched = true;
            }
            i += 3;
        } else {
            if set[i] == c {
                matched = true;
            }
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, t: &str) -> bool {
        glob_match(p.as_bytes(), t.as_bytes())
    }

    #[test]
    fn globs_match_like_fnmatch() {
        assert!(m("*", "a/b/c.txt"));
        assert!(m("*.txt", "dir/a.txt"));
        assert!(!m("*.txt", "a.txt.gz"));
        assert!(m("a?c", "abc"));
        assert!(!m("a?c", "ac"));
        assert!(m("[ab]*", "b1"));
        assert!(!m("[!ab]*", "b1"));
        assert!(m("[0-9].log", "7.log"));
        assert!(m("dir/*", "dir/x/y"));
        assert!(m("[x", "[x"));
        assert!(m("", ""));
        assert!(!m("", "a"));
        assert!(m("**a", "bba"));
    }

    #[test]
    fn the_last_matching_filter_wins() {
        use FilterKind::*;
        let f = Filters::new(vec![
            (Exclude, "*".into()),
            (Include, "*.txt".into()),
            (Exclude, "secret/*".into()),
        ]);
        assert!(f.selects("a.txt"));
        assert!(f.selects("dir/b.txt"));
        assert!(!f.selects("c.bin"));
        assert!(!f.selects("secret/d.txt"));
        // Order matters: an include before the exclude-all is overridden.
        let g = Filters::new(vec![(Include, "*.txt".into()), (Exclude, "*".into())]);
        assert!(!g.selects("a.txt"));
        assert!(Filters::default().selects("anything"));
    }
}
