//! How large the process-wide budget ([`crate::BufferPool::global`]) is when nobody says.
//!
//! The one decision lives in [`choose_default_budget`], a pure function of what the process can
//! read (the `BRISK_MAX_MEMORY` variable, the cgroup's memory limit, `/proc/meminfo`), so that it is
//! tested with injected values; [`process_default_budget`] reads them once for the process.
//!
//! The rule: `BRISK_MAX_MEMORY` when set; otherwise [`DEFAULT_BUDGET_SHARE`] (a half) of the
//! memory the process may use, the cgroup's limit where one is set (v2 `memory.max`, v1
//! `memory.limit_in_bytes`) and the machine's `MemTotal` where not, but never below
//! [`DEFAULT_GLOBAL_BUDGET_BYTES`] (1 GiB, the fixed default before). Why a half: the budget caps
//! brisk's buffers only, and the process (a Python interpreter, a model, pyarrow's own memory)
//! needs the rest; a half lets one `get` of an object as large as a third of the machine work
//! with room for the copy a caller may make, and the budget is a cap, not a preallocation. Why the
//! floor: a small container keeps the budget it had, rather than one too small for 128 parts of
//! 8 MiB.

use std::fmt;
use std::sync::OnceLock;

use crate::pool::DEFAULT_GLOBAL_BUDGET_BYTES;
use crate::size::parse_size;

/// The environment variable that sets the process-wide default budget (a size such as `8GiB`).
pub const MAX_MEMORY_ENV: &str = "BRISK_MAX_MEMORY";

/// The share of the memory the process may use that the default budget takes: numerator and
/// denominator (a half).
pub const DEFAULT_BUDGET_SHARE: (u64, u64) = (1, 2);

/// Where a budget's size came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BudgetSource {
    /// An explicit setting, named: `--max-memory`, `max_memory`, `memory_budget`, `init_global`.
    Setting(&'static str),
    /// The `BRISK_MAX_MEMORY` environment variable.
    Env,
    /// A share of the cgroup v2 limit, `memory.max`.
    CgroupV2,
    /// A share of the cgroup v1 limit, `memory.limit_in_bytes`.
    CgroupV1,
    /// A share of the machine's memory, `MemTotal` of `/proc/meminfo`.
    MemTotal,
    /// Nothing could be read: [`DEFAULT_GLOBAL_BUDGET_BYTES`].
    Fallback,
}

impl BudgetSource {
    /// A short label: `"max_memory"`, `"BRISK_MAX_MEMORY"`, `"cgroup memory.max"`,
    /// `"cgroup memory.limit_in_bytes"`, `"MemTotal"`, `"default"`.
    pub fn label(&self) -> &'static str {
        match self {
            BudgetSource::Setting(name) => name,
            BudgetSource::Env => MAX_MEMORY_ENV,
            BudgetSource::CgroupV2 => "cgroup memory.max",
            BudgetSource::CgroupV1 => "cgroup memory.limit_in_bytes",
            BudgetSource::MemTotal => "MemTotal",
            BudgetSource::Fallback => "default",
        }
    }
}

impl fmt::Display for BudgetSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// A budget's size and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetChoice {
    /// The budget in bytes.
    pub bytes: usize,
    /// Where it came from.
    pub source: BudgetSource,
    /// The memory the process may use that `bytes` is a share of (cgroup limit or `MemTotal`);
    /// `None` when the budget was set, or nothing could be read.
    pub limit: Option<u64>,
}

impl BudgetChoice {
    /// A budget set explicitly by the setting `name`.
    pub fn setting(bytes: usize, name: &'static str) -> Self {
        Self {
            bytes,
            source: BudgetSource::Setting(name),
            limit: None,
        }
    }
}

impl fmt::Display for BudgetChoice {
    /// `12884901888 bytes (half of MemTotal, 25769803776 bytes)` or `268435456 bytes (--max-memory)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.limit {
            Some(limit) => {
                let (num, den) = DEFAULT_BUDGET_SHARE;
                let share = if (num, den) == (1, 2) {
                    "half".to_owned()
                } else {
                    format!("{num}/{den}")
                };
                let floor = if self.bytes == DEFAULT_GLOBAL_BUDGET_BYTES
                    && limit.saturating_mul(num) / den < self.bytes as u64
                {
                    ", at least 1 GiB"
                } else {
                    ""
                };
                write!(
                    f,
                    "{} bytes ({share} of {}, {limit} bytes{floor})",
                    self.bytes, self.source
                )
            }
            None => write!(f, "{} bytes ({})", self.bytes, self.source),
        }
    }
}

/// What the default is chosen from, as read (or, in tests, as given).
#[derive(Debug, Clone, Copy, Default)]
pub struct MemoryFacts<'a> {
    /// `BRISK_MAX_MEMORY`, if set.
    pub env: Option<&'a str>,
    /// The cgroup v2 `memory.max` text (`"max"` for no limit), if the process is in a v2 cgroup.
    pub cgroup_v2_max: Option<&'a str>,
    /// The cgroup v1 `memory.limit_in_bytes` text, if the process is in a v1 memory cgroup.
    pub cgroup_v1_limit: Option<&'a str>,
    /// The text of `/proc/meminfo`.
    pub meminfo: Option<&'a str>,
}

/// `BRISK_MAX_MEMORY` holds something that is not a size of at least 1 byte.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{MAX_MEMORY_ENV}={value:?} is not a memory budget: give a size of at least 1 byte, such as 8GiB or 512MiB"
)]
pub struct InvalidMaxMemoryEnv {
    /// The variable's value.
    pub value: String,
}

/// cgroup v1 says "no limit" with a huge number (`9223372036854771712`, `i64::MAX` rounded down to
/// a page); anything from here up is no limit even when the machine's memory is unknown.
const NO_LIMIT_FROM: u64 = 1 << 62;

/// The default budget from `facts`: `BRISK_MAX_MEMORY` if set; else [`DEFAULT_BUDGET_SHARE`] of
/// the cgroup limit (v2, then v1) if it is below the machine's memory, else of `MemTotal`; never
/// below [`DEFAULT_GLOBAL_BUDGET_BYTES`], which is also the budget when nothing can be read.
pub fn choose_default_budget(facts: &MemoryFacts<'_>) -> Result<BudgetChoice, InvalidMaxMemoryEnv> {
    if let Some(value) = facts.env.filter(|v| !v.trim().is_empty()) {
        return match parse_size(value) {
            Ok(bytes) if bytes > 0 => Ok(BudgetChoice {
                bytes,
                source: BudgetSource::Env,
                limit: None,
            }),
            _ => Err(InvalidMaxMemoryEnv {
                value: value.to_owned(),
            }),
        };
    }
    let total = facts.meminfo.and_then(mem_total);
    let below_total = |limit: u64| limit < NO_LIMIT_FROM && total.is_none_or(|t| limit < t);
    let cgroup = facts
        .cgroup_v2_max
        .and_then(cgroup_bytes)
        .filter(|&l| below_total(l))
        .map(|l| (l, BudgetSource::CgroupV2))
        .or_else(|| {
            facts
                .cgroup_v1_limit
                .and_then(cgroup_bytes)
                .filter(|&l| below_total(l))
                .map(|l| (l, BudgetSource::CgroupV1))
        });
    let Some((limit, source)) = cgroup.or(total.map(|t| (t, BudgetSource::MemTotal))) else {
        return Ok(BudgetChoice {
            bytes: DEFAULT_GLOBAL_BUDGET_BYTES,
            source: BudgetSource::Fallback,
            limit: None,
        });
    };
    let (num, den) = DEFAULT_BUDGET_SHARE;
    let share = limit.saturating_mul(num) / den;
    let bytes = usize::try_from(share)
        .unwrap_or(usize::MAX)
        .max(DEFAULT_GLOBAL_BUDGET_BYTES);
    Ok(BudgetChoice {
        bytes,
        source,
        limit: Some(limit),
    })
}

/// A cgroup limit file's bytes; `None` for `max` (no limit) or anything unreadable.
fn cgroup_bytes(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

/// `MemTotal:       24567892 kB` in bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut words = line["MemTotal:".len()..].split_whitespace();
    let n: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => n.checked_mul(1024),
        None => Some(n),
        Some(_) => None,
    }
}

/// The process's default budget, read once ([`choose_default_budget`] of this process's
/// environment, cgroup and `/proc/meminfo`).
pub fn process_default_budget() -> Result<BudgetChoice, InvalidMaxMemoryEnv> {
    static CHOICE: OnceLock<Result<BudgetChoice, InvalidMaxMemoryEnv>> = OnceLock::new();
    CHOICE
        .get_or_init(|| {
            let env = std::env::var(MAX_MEMORY_ENV).ok();
            let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
            let v2 = cgroup_v2_max(&cgroup);
            let v1 = cgroup_v1_limit(&cgroup);
            let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
            choose_default_budget(&MemoryFacts {
                env: env.as_deref(),
                cgroup_v2_max: v2.as_deref(),
                cgroup_v1_limit: v1.as_deref(),
                meminfo: meminfo.as_deref(),
            })
        })
        .clone()
}

/// The machine-sized default without `BRISK_MAX_MEMORY` (what the global pool falls back to when
/// the variable is not a size; the clients report that as an error).
pub(crate) fn process_default_without_env() -> BudgetChoice {
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let v2 = cgroup_v2_max(&cgroup);
    let v1 = cgroup_v1_limit(&cgroup);
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    choose_default_budget(&MemoryFacts {
        env: None,
        cgroup_v2_max: v2.as_deref(),
        cgroup_v1_limit: v1.as_deref(),
        meminfo: meminfo.as_deref(),
    })
    .unwrap_or(BudgetChoice {
        bytes: DEFAULT_GLOBAL_BUDGET_BYTES,
        source: BudgetSource::Fallback,
        limit: None,
    })
}

/// The smallest `memory.max` from the process's v2 cgroup (the `0::/path` line of
/// `/proc/self/cgroup`) up to the root of the mounted hierarchy: a limit on a parent binds the
/// children too. `"max"` when none is set.
fn cgroup_v2_max(proc_cgroup: &str) -> Option<String> {
    let path = proc_cgroup.lines().find_map(|l| l.strip_prefix("0::"))?;
    let mut dir = std::path::PathBuf::from("/sys/fs/cgroup");
    dir.push(path.trim().trim_start_matches('/'));
    if !dir.is_dir() {
        // A cgroup namespace without its own mount: the process's cgroup is the mount's root.
        dir = std::path::PathBuf::from("/sys/fs/cgroup");
    }
    let mut smallest: Option<u64> = None;
    let mut found = false;
    let mut at = Some(dir.as_path());
    while let Some(d) = at {
        if let Ok(text) = std::fs::read_to_string(d.join("memory.max")) {
            found = true;
            if let Some(n) = cgroup_bytes(&text) {
                smallest = Some(smallest.map_or(n, |s| s.min(n)));
            }
        }
        if d == std::path::Path::new("/sys/fs/cgroup") {
            break;
        }
        at = d.parent();
    }
    match (smallest, found) {
        (Some(n), _) => Some(n.to_string()),
        (None, true) => Some("max".to_owned()),
        (None, false) => None,
    }
}

/// `memory.limit_in_bytes` of the process's v1 memory cgroup (the `N:memory:/path` line, or one
/// whose controllers include `memory`).
fn cgroup_v1_limit(proc_cgroup: &str) -> Option<String> {
    let path = proc_cgroup.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let _id = parts.next()?;
        let controllers = parts.next()?;
        let path = parts.next()?;
        controllers
            .split(',')
            .any(|c| c == "memory")
            .then_some(path)
    })?;
    let root = std::path::Path::new("/sys/fs/cgroup/memory");
    let file = root
        .join(path.trim().trim_start_matches('/'))
        .join("memory.limit_in_bytes");
    std::fs::read_to_string(&file)
        .or_else(|_| std::fs::read_to_string(root.join("memory.limit_in_bytes")))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: usize = 1 << 30;
    const MEMINFO_24G: &str =
        "MemTotal:       25165824 kB\nMemFree:        17000000 kB\nMemAvailable:   22000000 kB\n";

    fn choose(facts: MemoryFacts<'_>) -> BudgetChoice {
        choose_default_budget(&facts).unwrap()
    }

    #[test]
    fn total_memory_gives_half_of_it() {
        let choice = choose(MemoryFacts {
            meminfo: Some(MEMINFO_24G),
            ..Default::default()
        });
        assert_eq!(choice.bytes, 12 * GIB);
        assert_eq!(choice.source, BudgetSource::MemTotal);
        assert_eq!(choice.limit, Some(24 << 30));
        assert_eq!(choice.source.label(), "MemTotal");
    }

    #[test]
    fn a_cgroup_v2_limit_below_the_machine_gives_half_of_it() {
        let choice = choose(MemoryFacts {
            cgroup_v2_max: Some("8589934592\n"),
            meminfo: Some(MEMINFO_24G),
            ..Default::default()
        });
        assert_eq!(choice.bytes, 4 * GIB);
        assert_eq!(choice.source, BudgetSource::CgroupV2);
        assert_eq!(choice.source.label(), "cgroup memory.max");
    }

    #[test]
    fn no_cgroup_limit_means_total_memory() {
        for v2 in ["max\n", "103079215104"] {
            let choice = choose(MemoryFacts {
                cgroup_v2_max: Some(v2),
                meminfo: Some(MEMINFO_24G),
                ..Default::default()
            });
            assert_eq!(
                (choice.bytes, choice.source),
                (12 * GIB, BudgetSource::MemTotal)
            );
        }
        let choice = choose(MemoryFacts {
            cgroup_v1_limit: Some("9223372036854771712\n"),
            meminfo: Some(MEMINFO_24G),
            ..Default::default()
        });
        assert_eq!(
            (choice.bytes, choice.source),
            (12 * GIB, BudgetSource::MemTotal)
        );
        // Unknown machine size: v1's "no limit" number still is none.
        let choice = choose(MemoryFacts {
            cgroup_v1_limit: Some("9223372036854771712"),
            ..Default::default()
        });
        assert_eq!(
            (choice.bytes, choice.source),
            (DEFAULT_GLOBAL_BUDGET_BYTES, BudgetSource::Fallback)
        );
    }

    #[test]
    fn a_cgroup_v1_limit_gives_half_of_it() {
        let choice = choose(MemoryFacts {
            cgroup_v1_limit: Some("6442450944\n"),
            meminfo: Some(MEMINFO_24G),
            ..Default::default()
        });
        assert_eq!(choice.bytes, 3 * GIB);
        assert_eq!(choice.source, BudgetSource::CgroupV1);
    }

    #[test]
    fn never_below_one_gib() {
        let choice = choose(MemoryFacts {
            cgroup_v2_max: Some("536870912"),
            meminfo: Some(MEMINFO_24G),
            ..Default::default()
        });
        assert_eq!(choice.bytes, GIB);
        assert_eq!(choice.source, BudgetSource::CgroupV2);
        assert_eq!(
            choice.to_string(),
            "1073741824 bytes (half of cgroup memory.max, 536870912 bytes, at least 1 GiB)"
        );
        let nothing = choose(MemoryFacts::default());
        assert_eq!(
            (nothing.bytes, nothing.source),
            (GIB, BudgetSource::Fallback)
        );
    }

    #[test]
    fn the_variable_wins_over_the_machine() {
        let choice = choose(MemoryFacts {
            env: Some("3GiB"),
            cgroup_v2_max: Some("8589934592"),
            meminfo: Some(MEMINFO_24G),
            ..Default::default()
        });
        assert_eq!(choice.bytes, 3 * GIB);
        assert_eq!(choice.source, BudgetSource::Env);
        assert_eq!(choice.source.label(), "BRISK_MAX_MEMORY");
        assert_eq!(choice.to_string(), "3221225472 bytes (BRISK_MAX_MEMORY)");
        // Below the floor too: the variable is an explicit choice.
        let small = choose(MemoryFacts {
            env: Some("64MiB"),
            ..Default::default()
        });
        assert_eq!(small.bytes, 64 << 20);
        // Empty is unset.
        let unset = choose(MemoryFacts {
            env: Some(" "),
            meminfo: Some(MEMINFO_24G),
            ..Default::default()
        });
        assert_eq!(unset.source, BudgetSource::MemTotal);
    }

    #[test]
    fn a_variable_that_is_not_a_size_is_an_error() {
        for bad in ["lots", "0", "12 parsecs"] {
            let error = choose_default_budget(&MemoryFacts {
                env: Some(bad),
                meminfo: Some(MEMINFO_24G),
                ..Default::default()
            })
            .unwrap_err();
            assert_eq!(error.value, bad);
            assert!(error.to_string().contains("BRISK_MAX_MEMORY"));
        }
    }

    #[test]
    fn an_explicit_setting_is_named() {
        let choice = BudgetChoice::setting(256 << 20, "max_memory");
        assert_eq!(choice.source.label(), "max_memory");
        assert_eq!(choice.to_string(), "268435456 bytes (max_memory)");
    }

    #[test]
    fn proc_cgroup_lines_are_found() {
        // v1: the memory controller, alone or with others; v2: no memory line, so none.
        assert!(cgroup_v1_limit("0::/user.slice\n").is_none());
        let v1 = "12:cpu,cpuacct:/a\n4:memory:/nonexistent-brisk-test\n";
        // The path does not exist here; the root file may or may not: either is a limit text.
        if let Some(text) = cgroup_v1_limit(v1) {
            assert!(cgroup_bytes(&text).is_some());
        }
        assert!(cgroup_v2_max("4:memory:/a\n").is_none());
    }
}
