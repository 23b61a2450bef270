//! Sizes on the command line (`256MiB`) and in listings (`1.5 MiB`).

/// Parses `64KiB`, `1MiB`, `4096`, `1GiB`: one parser for the CLI and the Python package.
pub use brisk_mem::parse_size;

/// A size as the AWS CLI's `--human-readable` prints it: `512 Bytes`, `1.5 KiB`, `2.0 MiB`.
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} Bytes");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes_match_the_aws_cli() {
        assert_eq!(human(0), "0 Bytes");
        assert_eq!(human(1023), "1023 Bytes");
        assert_eq!(human(1536), "1.5 KiB");
        assert_eq!(human(48 << 20), "48.0 MiB");
        assert_eq!(human(3 << 30), "3.0 GiB");
    }
}
