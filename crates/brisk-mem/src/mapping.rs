//! Anonymous mappings for large buffers, backed by transparent huge pages where the kernel has them
//! free.
//!
//! # Why huge pages
//!
//! A fresh buffer costs one page fault per 4 KiB the first time it is written, and on the VMs brisk is
//! measured on those faults cost more than the socket's copy into the buffer: making 1 GiB of 4 KiB
//! pages resident costs about 0.44 CPU s (`MAP_POPULATE`), against 0.11–0.16 s for the same GiB in
//! 2 MiB pages, 512 times fewer faults (docs/memory.md, "Huge pages"; BENCHMARKS-log.md). For an in-memory
//! GET of 1 GiB that is most of the client's CPU.
//!
//! # Where the kernel offers them, and at what price
//!
//! `/sys/kernel/mm/transparent_hugepage/enabled` says whether anonymous memory gets huge pages:
//!
//! - `always`: every suitably aligned 2 MiB range does, when the kernel has a free 2 MiB block; when it
//!   has none the fault falls back to 4 KiB pages (unless `defrag` is `always`). Aligning the buffer is
//!   all there is to do.
//! - `madvise` (the common default): only ranges marked `MADV_HUGEPAGE` do, and for those a fault that
//!   finds no free 2 MiB block compacts memory first (`defrag` `madvise`, also the default): measured
//!   at 1.0–1.3 CPU s per GiB, worse than 4 KiB pages. So this module marks only as many 2 MiB ranges
//!   as the kernel has free 2 MiB blocks, and of those at most half ([`grantable_huge_pages`]), counted
//!   in `/proc/buddyinfo` just before: on a machine whose free memory is fragmented the buffer gets
//!   4 KiB pages, at today's cost, and never the compaction's.
//! - `never`, or no such file: 4 KiB pages.
//!
//! # Where they cost more: VMs that give free memory back
//!
//! A VM whose kernel reports free blocks of 2 MiB to the hypervisor (virtio-balloon free page
//! reporting, `page_reporting_order` 9, as on the Firecracker VMs brisk is measured on) lets the host
//! discard those blocks' memory; the first touch of a huge page made from one then faults in the
//! host too. There a fresh process's 1 GiB GET cost 1.1–1.5 CPU s/GiB in huge pages against 0.6–0.7
//! in 4 KiB pages, and won (0.5–0.67) only once it reused blocks it had freed moments before
//! (BENCHMARKS-log.md, "Huge pages"). So where reporting is active brisk keeps 4 KiB pages by default.
//!
//! Smaller folios escape it. Kernels from 6.8 on can give anonymous memory folios of 16 KiB to
//! 1 MiB (multi-size THP, `hugepages-<size>kB/enabled`, all `never` by default); those come from
//! free lists below the reporting order, which the host still backs. Where the 2 MiB size is off
//! and a smaller one is `madvise` (or `always`), brisk marks its ranges on a reporting VM too: a
//! fresh 1 GiB in 64 KiB folios cost 0.14–0.15 CPU s against 0.35–0.38 in 4 KiB pages, seconds
//! after the last free (BENCHMARKS-log.md, "Small folios on a VM that reports free memory"). The
//! 2 MiB size has to be off: a marked range gets a 2 MiB folio first wherever that size is allowed.
//!
//! `BRISK_HUGE_PAGES=off` in the environment turns huge pages off for the process, `on` uses them
//! wherever the kernel offers them, reporting or not (read once); the benchmarks compare the two in
//! one run that way.
//!
//! # Memory accounting
//!
//! Only whole 2 MiB ranges inside the buffer are marked, so a buffer's resident memory is still its
//! length rounded up to 4 KiB: the budget's figure. To place those ranges on 2 MiB boundaries the
//! mapping reserves up to 2 MiB more *address space* in front of the buffer, which is never touched and
//! never resident.

use std::io;
use std::ops::{Deref, DerefMut};
use std::sync::OnceLock;

use memmap2::{Advice, MmapMut, MmapOptions};

/// The size of a transparent huge page on x86-64 and (with 4 KiB base pages) aarch64.
pub(crate) const HUGE_PAGE_SIZE: usize = 2 * 1024 * 1024;

/// The base page size assumed when touching pages by hand (the fallback for kernels without
/// `MADV_POPULATE_WRITE`); touching more often than every page is harmless.
const BASE_PAGE_SIZE: usize = 4096;

/// The order of a 2 MiB block in the buddy allocator (2^9 pages of 4 KiB).
const HUGE_PAGE_ORDER: usize = 9;

/// How the kernel hands transparent huge pages to anonymous memory, from
/// `/sys/kernel/mm/transparent_hugepage/enabled`, or `Never` when brisk is told not to use them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HugePageMode {
    /// Every aligned range may get huge pages without asking.
    Always,
    /// Only ranges marked with `MADV_HUGEPAGE`.
    Madvise,
    /// Marked ranges get folios smaller than 2 MiB and never 2 MiB ones: the kernel's 2 MiB size is
    /// off and a smaller one is on. Every whole range is marked, without counting free 2 MiB blocks
    /// (the folios come from the smaller free lists).
    SmallFolios,
    /// None (THP `never`, no THP support, or `BRISK_HUGE_PAGES=off`).
    Never,
}

impl HugePageMode {
    /// Parse the `enabled` file: the selected mode is the bracketed word, e.g.
    /// `always [madvise] never`.
    fn parse(enabled: &str) -> Self {
        let selected = enabled
            .split_whitespace()
            .find(|word| word.starts_with('['))
            .unwrap_or("");
        match selected {
            "[always]" => HugePageMode::Always,
            "[madvise]" => HugePageMode::Madvise,
            _ => HugePageMode::Never,
        }
    }

    /// The setting of one folio size (`hugepages-<size>kB/enabled`): its bracketed word, where
    /// `inherit` takes the top-level mode `inherited`.
    fn parse_size(enabled: &str, inherited: Self) -> Self {
        if enabled.split_whitespace().any(|word| word == "[inherit]") {
            inherited
        } else {
            HugePageMode::parse(enabled)
        }
    }

    /// The mode of one folio size, from its file under `/sys/kernel/mm/transparent_hugepage`;
    /// `None` where the kernel has no such file (before 6.8, or a size it does not offer).
    fn kernel_size(path: &str, top: Self) -> Option<Self> {
        let mut buf = [0u8; 256];
        read_small_file(path, &mut buf).map(|text| HugePageMode::parse_size(text, top))
    }

    /// What the kernel offers anonymous memory: the mode of its 2 MiB size (the top-level
    /// `enabled` file, unless the size's own file says otherwise), and whether a smaller size is
    /// on for marked ranges.
    fn kernel_sizes() -> (Self, bool) {
        let mut buf = [0u8; 256];
        let top = read_small_file("/sys/kernel/mm/transparent_hugepage/enabled", &mut buf)
            .map(HugePageMode::parse)
            .unwrap_or(HugePageMode::Never);
        let pmd = HugePageMode::kernel_size(PMD_SIZE_ENABLED, top).unwrap_or(top);
        let small = SMALL_SIZES_ENABLED.iter().any(|path| {
            matches!(
                HugePageMode::kernel_size(path, top),
                Some(HugePageMode::Always | HugePageMode::Madvise)
            )
        });
        (pmd, small)
    }

    /// The mode the kernel offers: its 2 MiB size's where that is on, else small folios where a
    /// smaller size is.
    fn kernel() -> Self {
        let (pmd, small) = HugePageMode::kernel_sizes();
        HugePageMode::from_sizes(pmd, small)
    }

    /// The mode for a 2 MiB size in mode `pmd` and smaller sizes on (`small`) or not.
    fn from_sizes(pmd: Self, small: bool) -> Self {
        match (pmd, small) {
            (HugePageMode::Never, true) => HugePageMode::SmallFolios,
            (pmd, _) => pmd,
        }
    }

    /// The mode for this process, read once: `BRISK_HUGE_PAGES=off` or `on`, else the kernel's,
    /// except on a VM that hands its free 2 MiB blocks back to the host, where only small folios
    /// are used (see the module docs).
    pub(crate) fn current() -> Self {
        static MODE: OnceLock<HugePageMode> = OnceLock::new();
        *MODE.get_or_init(|| match std::env::var("BRISK_HUGE_PAGES") {
            Ok(v) if v.eq_ignore_ascii_case("off") => HugePageMode::Never,
            Ok(v) if v.eq_ignore_ascii_case("on") => HugePageMode::kernel(),
            _ if free_page_reporting_takes_huge_blocks() => match HugePageMode::kernel() {
                HugePageMode::SmallFolios => HugePageMode::SmallFolios,
                _ => HugePageMode::Never,
            },
            _ => HugePageMode::kernel(),
        })
    }
}

/// The 2 MiB size's own setting (kernels from 6.8 on; `inherit` by default).
const PMD_SIZE_ENABLED: &str = "/sys/kernel/mm/transparent_hugepage/hugepages-2048kB/enabled";

/// The settings of the folio sizes below 2 MiB that anonymous memory may get with 4 KiB base pages
/// (orders 2 to 8), as constant paths so that reading them allocates nothing.
const SMALL_SIZES_ENABLED: [&str; 7] = [
    "/sys/kernel/mm/transparent_hugepage/hugepages-16kB/enabled",
    "/sys/kernel/mm/transparent_hugepage/hugepages-32kB/enabled",
    "/sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled",
    "/sys/kernel/mm/transparent_hugepage/hugepages-128kB/enabled",
    "/sys/kernel/mm/transparent_hugepage/hugepages-256kB/enabled",
    "/sys/kernel/mm/transparent_hugepage/hugepages-512kB/enabled",
    "/sys/kernel/mm/transparent_hugepage/hugepages-1024kB/enabled",
];

/// Whether the kernel reports free blocks of 2 MiB or smaller to a hypervisor (virtio-balloon free
/// page reporting), which then takes their memory back: a huge page made of such a block costs a
/// fault in the host as well, measured at 1.1–1.5 CPU s per GiB against 0.6–0.7 for 4 KiB pages
/// taken from the smaller free lists (BENCHMARKS-log.md, "Huge pages"). True when
/// `page_reporting_order` is at most 9 and the kernel has reported memory (`reported_kib`, where
/// the kernel has that counter) or the balloon driver is loaded.
fn free_page_reporting_takes_huge_blocks() -> bool {
    // No heap allocation here either (constant paths, stack buffers): see `read_small_file`.
    let mut buf = [0u8; 64];
    let order = read_small_file(
        "/sys/module/page_reporting/parameters/page_reporting_order",
        &mut buf,
    )
    .and_then(|text| text.trim().parse::<usize>().ok());
    if order.is_none_or(|order| order > HUGE_PAGE_ORDER) {
        return false;
    }
    let mut buf = [0u8; 64];
    match read_small_file(
        "/sys/module/page_reporting/parameters/reported_kib",
        &mut buf,
    ) {
        Some(text) => text.trim().parse::<u64>().is_ok_and(|kib| kib > 0),
        // Without the counter: a bound balloon driver exposes its `module` link beside its devices.
        None => std::path::Path::new("/sys/bus/virtio/drivers/virtio_balloon/module").exists(),
    }
}

/// The free 2 MiB blocks in `/proc/buddyinfo` text: every zone's free blocks of order 9 and up, each
/// counted as the 2 MiB blocks it holds.
fn free_huge_blocks(buddyinfo: &str) -> usize {
    buddyinfo
        .lines()
        .map(|line| {
            // "Node 0, zone   Normal  10544  11799 ...": the counts follow the zone's name.
            line.split_whitespace()
                .skip(4)
                .enumerate()
                .filter(|(order, _)| *order >= HUGE_PAGE_ORDER)
                .filter_map(|(order, count)| {
                    let count: usize = count.parse().ok()?;
                    Some(count << (order - HUGE_PAGE_ORDER))
                })
                .sum::<usize>()
        })
        .sum()
}

/// How many of `wanted` 2 MiB ranges may be marked `MADV_HUGEPAGE` now without making a fault
/// compact memory: at most half the free 2 MiB blocks the kernel reports, so that the figure, read a
/// moment before the faults, still holds when other allocations come in between. None when
/// `/proc/buddyinfo` cannot be read.
fn grantable_huge_pages(wanted: usize) -> usize {
    // Room for 64 zones' lines: more than any machine's node and zone count.
    let mut buf = [0u8; 8192];
    match read_small_file("/proc/buddyinfo", &mut buf) {
        Some(text) => wanted.min(free_huge_blocks(text) / 2),
        None => 0,
    }
}

/// Read a small text file into `buf` without allocating (a large buffer is taken on paths that count
/// their heap allocations: `tests/allocations.rs`). `None` when it cannot be opened or read, is not
/// UTF-8, or does not fit (then its last line may be cut, so it is not used).
fn read_small_file<'a>(path: &str, buf: &'a mut [u8]) -> Option<&'a str> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).ok()?;
    let mut filled = 0;
    loop {
        if filled == buf.len() {
            return None;
        }
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    std::str::from_utf8(&buf[..filled]).ok()
}

/// An anonymous private read-write mapping of exactly `len` bytes (as a slice), its 2 MiB-aligned
/// ranges backed by huge pages where the kernel offers them free (see the module docs).
pub(crate) struct AnonMapping {
    map: MmapMut,
    /// Where the buffer starts inside `map`: the first 2 MiB boundary, when huge pages are wanted.
    offset: usize,
    len: usize,
    /// The length it was mapped with: `len` unless [`set_len`](Self::set_len) showed less.
    capacity: usize,
    /// How many bytes from the start are known resident (populated): a range below it needs no
    /// populating, which for a mapping used again is all of it.
    resident: usize,
    huge_ranges: usize,
}

impl AnonMapping {
    /// Map `len` bytes; with `populate`, make every page resident (and zero) before returning, so
    /// that the first write to the buffer takes no page faults.
    ///
    /// Fails only when the address space or the kernel's map count is exhausted.
    pub(crate) fn new(len: usize, populate: bool) -> io::Result<Self> {
        let mode = if len < HUGE_PAGE_SIZE {
            HugePageMode::Never
        } else {
            HugePageMode::current()
        };
        Self::with_mode(len, populate, mode)
    }

    fn with_mode(len: usize, populate: bool, mode: HugePageMode) -> io::Result<Self> {
        if len < HUGE_PAGE_SIZE || mode == HugePageMode::Never {
            let mut options = MmapOptions::new();
            options.len(len);
            if populate {
                options.populate();
            }
            let map = options.map_anon()?;
            return Ok(AnonMapping {
                map,
                offset: 0,
                len,
                capacity: len,
                resident: if populate { len } else { 0 },
                huge_ranges: 0,
            });
        }
        // Room to start the buffer on a 2 MiB boundary; the slack in front is never touched.
        let map = MmapOptions::new()
            .len(len + HUGE_PAGE_SIZE - BASE_PAGE_SIZE)
            .map_anon()?;
        let address = map.as_ptr() as usize;
        let offset = address.next_multiple_of(HUGE_PAGE_SIZE) - address;
        let whole_ranges = len / HUGE_PAGE_SIZE;
        // Marks the first `ranges` 2 MiB ranges; a refusal (a kernel built without THP) leaves
        // 4 KiB pages, with nothing to undo.
        let mark = |ranges: usize| {
            let refused = ranges > 0
                && map
                    .advise_range(Advice::HugePage, offset, ranges * HUGE_PAGE_SIZE)
                    .is_err();
            if refused { 0 } else { ranges }
        };
        let huge_ranges = match mode {
            HugePageMode::Always => whole_ranges,
            HugePageMode::SmallFolios => mark(whole_ranges),
            HugePageMode::Madvise => mark(grantable_huge_pages(whole_ranges)),
            HugePageMode::Never => unreachable!("handled above"),
        };
        let mut mapping = AnonMapping {
            map,
            offset,
            len,
            capacity: len,
            resident: 0,
            huge_ranges,
        };
        if populate {
            mapping.populate();
        }
        Ok(mapping)
    }

    /// Make the buffer's pages resident: `MADV_POPULATE_WRITE` (Linux 5.14), or one write per page
    /// on kernels without it.
    fn populate(&mut self) {
        self.resident = self.len;
        if self.len == 0
            || self
                .map
                .advise_range(Advice::PopulateWrite, self.offset, self.len)
                .is_ok()
        {
            return;
        }
        for page in self.chunks_mut(BASE_PAGE_SIZE) {
            // A write of the zero the page already holds: the fault is the point (`black_box` keeps
            // the value opaque to the optimiser).
            page[0] = std::hint::black_box(0);
        }
    }

    /// Make the pages under `range` (byte positions in the buffer, clamped to it) resident, as
    /// [`populate`](Self::populate) does for the whole buffer. The bytes do not change: pages
    /// already resident are left as they are, and where the kernel lacks `MADV_POPULATE_WRITE` each
    /// page is written with the byte it holds. A range inside the prefix populated before (all of
    /// a mapping used again, once its first use populated it) costs nothing: asking the kernel
    /// again walks the page tables, about a tenth of the socket's copy (`perf`: `follow_page_pte`).
    pub(crate) fn populate_range(&mut self, range: std::ops::Range<usize>) {
        let end = range.end.min(self.len);
        // The buffer starts on a page boundary, so positions round to pages within it.
        let start = range.start - range.start % BASE_PAGE_SIZE;
        if start >= end || end <= self.resident {
            return;
        }
        if start <= self.resident {
            self.resident = end;
        }
        if self
            .map
            .advise_range(Advice::PopulateWrite, self.offset + start, end - start)
            .is_ok()
        {
            return;
        }
        for page in self[start..end].chunks_mut(BASE_PAGE_SIZE) {
            // A write of the byte the page holds: the fault is the point (`black_box` keeps the
            // write from being optimised away).
            page[0] = std::hint::black_box(page[0]);
        }
    }

    /// The most bytes the buffer may show ([`set_len`](Self::set_len)): the length it was mapped
    /// with, every page of which may be resident.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Show the first `len` bytes of the mapping as the buffer (at most its
    /// [`capacity`](Self::capacity)). Pages past `len` keep whatever is resident there, so a
    /// shorter buffer may hold more memory than its length: the caller's reservation is the
    /// capacity's.
    pub(crate) fn set_len(&mut self, len: usize) {
        assert!(
            len <= self.capacity,
            "a mapping of {} bytes cannot show {len}",
            self.capacity
        );
        self.len = len;
    }

    /// How many 2 MiB ranges of the buffer were marked for huge pages (under THP `always`, every whole
    /// range: the kernel backs them when it can).
    pub(crate) fn huge_ranges(&self) -> usize {
        self.huge_ranges
    }
}

impl Deref for AnonMapping {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.map[self.offset..self.offset + self.len]
    }
}

impl DerefMut for AnonMapping {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.map[self.offset..self.offset + self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_selected_mode_is_the_bracketed_word() {
        assert_eq!(
            HugePageMode::parse("always [madvise] never\n"),
            HugePageMode::Madvise
        );
        assert_eq!(
            HugePageMode::parse("[always] madvise never\n"),
            HugePageMode::Always
        );
        assert_eq!(
            HugePageMode::parse("always madvise [never]\n"),
            HugePageMode::Never
        );
        assert_eq!(HugePageMode::parse(""), HugePageMode::Never);
    }

    #[test]
    fn a_folio_size_that_inherits_takes_the_top_level_mode() {
        let sizes = "always inherit [madvise] never\n";
        assert_eq!(
            HugePageMode::parse_size(sizes, HugePageMode::Never),
            HugePageMode::Madvise
        );
        let inherits = "always [inherit] madvise never\n";
        for top in [
            HugePageMode::Always,
            HugePageMode::Madvise,
            HugePageMode::Never,
        ] {
            assert_eq!(HugePageMode::parse_size(inherits, top), top);
        }
        assert_eq!(
            HugePageMode::parse_size("always inherit madvise [never]\n", HugePageMode::Always),
            HugePageMode::Never
        );
        // Small folios only where the 2 MiB size is off: where it is on, a marked range would get
        // 2 MiB folios first.
        use HugePageMode::{Always, Madvise, Never, SmallFolios};
        assert_eq!(HugePageMode::from_sizes(Never, true), SmallFolios);
        assert_eq!(HugePageMode::from_sizes(Never, false), Never);
        assert_eq!(HugePageMode::from_sizes(Madvise, true), Madvise);
        assert_eq!(HugePageMode::from_sizes(Always, true), Always);
        assert_eq!(HugePageMode::from_sizes(Madvise, false), Madvise);
        // This machine's files give one of those.
        let (pmd, small) = HugePageMode::kernel_sizes();
        assert_eq!(HugePageMode::kernel(), HugePageMode::from_sizes(pmd, small));
    }

    #[test]
    fn free_huge_blocks_counts_order_nine_and_up_in_every_zone() {
        let buddyinfo = "\
Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3
Node 0, zone    DMA32    121    140    112     95     87     62     30     17      8      3    742
Node 0, zone   Normal  10544  11799   3557   7433   1515   6637   3129   1601    843    372   2064
";
        // Order 9 counts once, order 10 (4 MiB) twice.
        assert_eq!(
            free_huge_blocks(buddyinfo),
            (1 + 2 * 3) + (3 + 2 * 742) + (372 + 2 * 2064)
        );
        assert_eq!(free_huge_blocks(""), 0);
        let mut buf = [0u8; 8192];
        if let Some(text) = read_small_file("/proc/buddyinfo", &mut buf) {
            assert!(text.contains("zone"), "{text}");
        }
        assert_eq!(free_huge_blocks("Node 0, zone Normal 1 2 3\n"), 0);
    }

    #[test]
    fn a_mapping_is_exactly_its_length_and_zeroed_in_every_mode() {
        for mode in [
            HugePageMode::Always,
            HugePageMode::Madvise,
            HugePageMode::SmallFolios,
            HugePageMode::Never,
        ] {
            for len in [0, 5, HUGE_PAGE_SIZE - 1, 3 * HUGE_PAGE_SIZE + 4097] {
                for populate in [false, true] {
                    let mut map = AnonMapping::with_mode(len, populate, mode).unwrap();
                    assert_eq!(map.len(), len, "{mode:?} {len} {populate}");
                    assert!(map.iter().all(|&b| b == 0));
                    if len > 0 {
                        map[len - 1] = 7;
                        map[0] = 1;
                        assert_eq!((map[0], map[len - 1]), (1, 7));
                    }
                }
            }
        }
    }

    #[test]
    fn large_mappings_start_on_a_huge_page_boundary() {
        for mode in [
            HugePageMode::Always,
            HugePageMode::Madvise,
            HugePageMode::SmallFolios,
        ] {
            let map = AnonMapping::with_mode(3 * HUGE_PAGE_SIZE + 4097, true, mode).unwrap();
            assert_eq!(map.as_ptr() as usize % HUGE_PAGE_SIZE, 0, "{mode:?}");
            assert!(map.huge_ranges() <= 3);
        }
        for mode in [HugePageMode::Always, HugePageMode::SmallFolios] {
            let map = AnonMapping::with_mode(3 * HUGE_PAGE_SIZE + 4097, true, mode).unwrap();
            assert_eq!(map.huge_ranges(), 3, "{mode:?}: every whole range");
        }
        let map = AnonMapping::with_mode(3 * HUGE_PAGE_SIZE, true, HugePageMode::Never).unwrap();
        assert_eq!(map.huge_ranges(), 0);
    }

    /// How many folios smaller than 2 MiB the kernel has faulted into anonymous memory since boot,
    /// every size together (`hugepages-<size>kB/stats/anon_fault_alloc`; 0 without them).
    fn small_folio_faults() -> usize {
        SMALL_SIZES_ENABLED
            .iter()
            .filter_map(|enabled| {
                let stats = enabled.replace("/enabled", "/stats/anon_fault_alloc");
                std::fs::read_to_string(stats)
                    .ok()?
                    .trim()
                    .parse::<usize>()
                    .ok()
            })
            .sum()
    }

    /// The `AnonHugePages` of the mapping holding `address`, in KiB, from `/proc/self/smaps`.
    fn anon_huge_kib_at(address: usize) -> Option<usize> {
        smaps_kib_at(address, "AnonHugePages:")
    }

    /// A `/proc/self/smaps` field (`Rss:`, `AnonHugePages:`) of the mapping holding `address`,
    /// in KiB.
    fn smaps_kib_at(address: usize, field: &str) -> Option<usize> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            let first = line.split_whitespace().next().unwrap_or("");
            if let Some((start, end)) = first.split_once('-')
                && let (Ok(start), Ok(end)) = (
                    usize::from_str_radix(start, 16),
                    usize::from_str_radix(end, 16),
                )
            {
                inside = start <= address && address < end;
            } else if inside && let Some(kib) = line.strip_prefix(field) {
                return kib.trim().trim_end_matches("kB").trim().parse().ok();
            }
        }
        None
    }

    /// Populating a range makes its pages resident and leaves every byte as it was, including
    /// those already written in its first page; a range past the end is clamped.
    #[test]
    fn populating_a_range_makes_it_resident_and_changes_no_byte() {
        const MIB: usize = 1 << 20;
        let len = 4 * MIB + 123;
        let mut map = AnonMapping::with_mode(len, false, HugePageMode::Never).unwrap();
        // Its own flags, so that the kernel does not merge it with a neighbouring mapping (another
        // test's) whose pages would count in its `Rss`.
        map.map.advise(Advice::DontFork).unwrap();
        let address = map.as_ptr() as usize;
        let rss = || smaps_kib_at(address, "Rss:").unwrap();
        assert!(rss() < 64, "{} KiB resident before any write", rss());
        map[10] = 1;
        map[5000] = 2;
        map.populate_range(5001..2 * MIB);
        assert!(rss() >= 2 * MIB / 1024 - 4, "{} KiB resident", rss());
        assert!(rss() < 3 * MIB / 1024, "{} KiB resident", rss());
        map.populate_range(3 * MIB..len + 4096);
        assert!(rss() >= 3 * MIB / 1024, "{} KiB resident", rss());
        assert_eq!((map[10], map[5000]), (1, 2));
        let nonzero = map.iter().filter(|&&b| b != 0).count();
        assert_eq!(nonzero, 2);
    }

    /// The resident prefix grows only with ranges that join it, so a range asked for again is
    /// skipped only when all of it was populated before; a mapping kept for reuse keeps it.
    #[test]
    fn the_populated_prefix_grows_with_ranges_that_join_it() {
        const MIB: usize = 1 << 20;
        let mut map = AnonMapping::with_mode(4 * MIB, false, HugePageMode::Never).unwrap();
        assert_eq!(map.resident, 0);
        map.populate_range(MIB..2 * MIB);
        assert_eq!(map.resident, 0, "a range past the prefix does not join it");
        map.populate_range(100..MIB + 5);
        assert_eq!(map.resident, MIB + 5);
        map.populate_range(MIB..3 * MIB);
        assert_eq!(map.resident, 3 * MIB);
        map.set_len(MIB);
        map.set_len(4 * MIB);
        assert_eq!(map.resident, 3 * MIB);
        map.populate_range(0..8 * MIB);
        assert_eq!(map.resident, 4 * MIB, "clamped to the buffer");
        let populated = AnonMapping::with_mode(MIB, true, HugePageMode::Never).unwrap();
        assert_eq!(populated.resident, MIB);
    }

    #[test]
    fn where_the_kernel_grants_huge_pages_the_buffer_is_in_them() {
        // The kernel's own mode, whatever this process would choose by default.
        let mode = HugePageMode::kernel();
        let small_folios_before = small_folio_faults();
        let map = AnonMapping::with_mode(4 * HUGE_PAGE_SIZE, true, mode).unwrap();
        let huge_kib = anon_huge_kib_at(map.as_ptr() as usize).unwrap_or(0);
        if map.huge_ranges() == 0 {
            eprintln!("no huge pages here (mode {mode:?}): the buffer has 4 KiB pages");
            return;
        }
        if mode == HugePageMode::SmallFolios {
            // `smaps` counts 2 MiB folios alone; the kernel counts the smaller ones per size. A 2 MiB
            // range takes at least two of them (other tests' faults only add to the count).
            let faults = small_folio_faults() - small_folios_before;
            assert!(
                faults >= 2 * map.huge_ranges(),
                "{} ranges marked, {faults} small folios faulted in",
                map.huge_ranges()
            );
            return;
        }
        assert!(
            huge_kib >= map.huge_ranges() * HUGE_PAGE_SIZE / 1024 / 2,
            "{} ranges marked, {huge_kib} KiB in huge pages",
            map.huge_ranges()
        );
    }
}
