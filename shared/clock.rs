//! The clock of the registry, the findings and the observer: Unix seconds;
//! and the event log's clock ([`log_now`]).
//!
//! `JKZ_TEST_NOW` (Unix seconds) replaces the system clock. It exists for
//! tests only — "stale after 5 minutes" cannot be waited for in a test —
//! and is documented as such; nothing but the registry's clock reads it.
//!
//! `JKZ_TEST_LOG_NOW` (RFC 3339) replaces the event log's clock, and is
//! honoured by debug builds only (the test suite's): a writer whose clock
//! is a day behind (a late writer, skew, a jump) and two readers that agree
//! on "now" to the second cannot be had from the system clock.

use std::time::{SystemTime, UNIX_EPOCH};

/// The environment variable that fixes the registry's clock (tests only).
pub const TEST_CLOCK_ENV: &str = "JKZ_TEST_NOW";

/// Now, in Unix seconds: `JKZ_TEST_NOW` when it holds an integer, else the
/// system clock.
pub fn now() -> i64 {
    if let Some(fixed) = std::env::var(TEST_CLOCK_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<i64>().ok())
    {
        return fixed;
    }
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Now, in Unix milliseconds, for what is judged finer than a second (how
/// fresh the team registry's local replica is): `JKZ_TEST_NOW` seconds
/// when set, as [`now`], else the system clock.
pub fn now_ms() -> i64 {
    if let Some(fixed) = std::env::var(TEST_CLOCK_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<i64>().ok())
    {
        return fixed.saturating_mul(1000);
    }
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The variable that fixes the event log's clock (debug builds, tests only).
pub const TEST_LOG_CLOCK_ENV: &str = "JKZ_TEST_LOG_NOW";

/// Now, for the event log: the time a new event carries, and the end of the
/// window `jkz metrics` reports on. In a debug build, `JKZ_TEST_LOG_NOW`
/// when it holds an RFC 3339 time; else the system clock.
pub fn log_now() -> chrono::DateTime<chrono::Utc> {
    #[cfg(debug_assertions)]
    if let Some(fixed) = std::env::var(TEST_LOG_CLOCK_ENV)
        .ok()
        .and_then(|v| chrono::DateTime::parse_from_rfc3339(v.trim()).ok())
    {
        return fixed.with_timezone(&chrono::Utc);
    }
    chrono::Utc::now()
}

/// `secs` (Unix seconds) as `2026-11-23T16:01:02Z`.
pub fn timestamp(secs: i64) -> String {
    chrono::DateTime::from_timestamp(secs, 0)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|| secs.to_string())
}

/// A duration in seconds as people say it: `42s`, `7m`, `3h`, `2d`.
pub fn ago(secs: i64) -> String {
    let secs = secs.max(0);
    match secs {
        0..=119 => format!("{secs}s"),
        120..=7199 => format!("{}m", secs / 60),
        7200..=172_799 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_and_ages_read_as_people_write_them() {
        assert_eq!(timestamp(0), "1970-01-01T00:00:00Z");
        assert_eq!(ago(5), "5s");
        assert_eq!(ago(300), "5m");
        assert_eq!(ago(7200), "2h");
        assert_eq!(ago(-3), "0s");
    }
}
