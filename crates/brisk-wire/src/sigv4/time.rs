//! The SigV4 timestamp: `YYYYMMDD'T'HHMMSS'Z'` in UTC (`x-amz-date`, `X-Amz-Date`, the string to sign)
//! and its first eight characters, the scope date.
//!
//! Signing and verifying functions take an [`AmzDate`]; none of them reads the clock.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::error::SigningError;

/// Length of `YYYYMMDDTHHMMSSZ`.
const AMZ_DATE_LEN: usize = 16;

/// An instant with one-second resolution, pre-formatted the way SigV4 writes it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct AmzDate {
    unix_seconds: i64,
    text: [u8; AMZ_DATE_LEN],
}

impl AmzDate {
    /// The instant `unix_seconds` after 1970-01-01T00:00:00Z. Fails for years outside 0000..=9999, which
    /// the format cannot express.
    pub fn from_unix_seconds(unix_seconds: i64) -> Result<Self, SigningError> {
        let t = ::time::OffsetDateTime::from_unix_timestamp(unix_seconds)
            .map_err(|_| SigningError::TimeOutOfRange)?;
        let year = t.year();
        if !(0..=9999).contains(&year) {
            return Err(SigningError::TimeOutOfRange);
        }
        let mut text = [0u8; AMZ_DATE_LEN];
        let mut put = |at: usize, value: u32, width: usize| {
            let mut v = value;
            for i in (0..width).rev() {
                text[at + i] = b'0' + (v % 10) as u8;
                v /= 10;
            }
        };
        put(0, year as u32, 4);
        put(4, u32::from(u8::from(t.month())), 2);
        put(6, u32::from(t.day()), 2);
        put(9, u32::from(t.hour()), 2);
        put(11, u32::from(t.minute()), 2);
        put(13, u32::from(t.second()), 2);
        text[8] = b'T';
        text[15] = b'Z';
        Ok(Self { unix_seconds, text })
    }

    /// The instant `time`, truncated to whole seconds.
    pub fn from_system_time(time: SystemTime) -> Result<Self, SigningError> {
        let secs = match time.duration_since(UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_secs()).map_err(|_| SigningError::TimeOutOfRange)?,
            Err(e) => {
                let back = e.duration();
                let whole =
                    i64::try_from(back.as_secs()).map_err(|_| SigningError::TimeOutOfRange)?;
                // Truncate towards the past so the formatted second contains the instant.
                -whole - i64::from(back.subsec_nanos() > 0)
            }
        };
        Self::from_unix_seconds(secs)
    }

    /// Parses `YYYYMMDDTHHMMSSZ` (exactly; SigV4 allows no other form).
    pub fn parse(text: &str) -> Option<Self> {
        let b = text.as_bytes();
        if b.len() != AMZ_DATE_LEN || b[8] != b'T' || b[15] != b'Z' {
            return None;
        }
        let num = |range: std::ops::Range<usize>| -> Option<u32> {
            b[range].iter().try_fold(0u32, |acc, &c| {
                c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
            })
        };
        let year = i32::try_from(num(0..4)?).ok()?;
        let month = ::time::Month::try_from(u8::try_from(num(4..6)?).ok()?).ok()?;
        let day = u8::try_from(num(6..8)?).ok()?;
        let date = ::time::Date::from_calendar_date(year, month, day).ok()?;
        let time = ::time::Time::from_hms(
            u8::try_from(num(9..11)?).ok()?,
            u8::try_from(num(11..13)?).ok()?,
            u8::try_from(num(13..15)?).ok()?,
        )
        .ok()?;
        let secs = date.with_time(time).assume_utc().unix_timestamp();
        Self::from_unix_seconds(secs).ok()
    }

    /// Seconds since the Unix epoch.
    pub fn unix_seconds(&self) -> i64 {
        self.unix_seconds
    }

    /// `YYYYMMDDTHHMMSSZ`.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.text).expect("ASCII digits")
    }

    /// `YYYYMMDD`, the date of the credential scope.
    pub fn date_str(&self) -> &str {
        &self.as_str()[..8]
    }

    /// The instant `seconds` later (earlier when negative); `None` outside the years 0000..=9999.
    pub fn add_seconds(&self, seconds: i64) -> Option<Self> {
        Self::from_unix_seconds(self.unix_seconds.checked_add(seconds)?).ok()
    }

    /// The absolute distance between two instants.
    pub fn distance(&self, other: &Self) -> Duration {
        Duration::from_secs(self.unix_seconds.abs_diff(other.unix_seconds))
    }
}

impl fmt::Debug for AmzDate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for AmzDate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_the_aws_example_instant() {
        // 2013-05-24T00:00:00Z, the instant of every S3 SigV4 documentation example.
        let d = AmzDate::from_unix_seconds(1_369_353_600).unwrap();
        assert_eq!(d.as_str(), "20130524T000000Z");
        assert_eq!(d.date_str(), "20130524");
        assert_eq!(AmzDate::parse("20130524T000000Z"), Some(d));
    }

    #[test]
    fn parse_round_trips_and_rejects_malformed_text() {
        let d = AmzDate::from_unix_seconds(1_700_000_123).unwrap();
        assert_eq!(AmzDate::parse(d.as_str()), Some(d));
        for bad in [
            "",
            "20130524T000000",
            "20130524 000000Z",
            "2013052AT000000Z",
            "20131324T000000Z",
            "20130230T000000Z",
            "20130524T250000Z",
            "20130524T000000z",
            "+0130524T000000Z",
        ] {
            assert_eq!(AmzDate::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn system_time_is_truncated_to_the_second() {
        let t = UNIX_EPOCH + Duration::from_millis(1_369_353_600_999);
        assert_eq!(
            AmzDate::from_system_time(t).unwrap().as_str(),
            "20130524T000000Z"
        );
        let before = UNIX_EPOCH - Duration::from_millis(500);
        assert_eq!(
            AmzDate::from_system_time(before).unwrap().as_str(),
            "19691231T235959Z"
        );
    }

    #[test]
    fn distance_and_offsets() {
        let a = AmzDate::parse("20130524T000000Z").unwrap();
        let b = a.add_seconds(901).unwrap();
        assert_eq!(b.as_str(), "20130524T001501Z");
        assert_eq!(a.distance(&b), Duration::from_secs(901));
        assert_eq!(b.distance(&a), Duration::from_secs(901));
        assert!(AmzDate::from_unix_seconds(i64::MAX).is_err());
    }
}
