//! Spans of time as people write them on a command line and in `jkz.toml`:
//! a number and a unit, `45s`, `30m`, `2h`, `7d`, `2w` (several may follow
//! each other: `1h30m`), and points in time: such a span back from now, a
//! date, or an RFC 3339 time. Every `--since` and `--until` of every
//! command, and the observer's `since`, read a point in time through
//! [`parse_point`], so each takes the same forms.

use std::time::Duration;

use chrono::{DateTime, Utc};

/// Parses a span: one or more `<number><unit>`, unit `s`, `m`, `h`, `d` or
/// `w`; the number may have a fraction (`1.5h`).
pub fn parse_span(text: &str) -> Result<Duration, String> {
    let bad = || {
        format!(
            "{:?} is not a span of time: expected a number and a unit (s, m, h, d, w), e.g. 30m, 2h, 7d",
            crate::pipeline::shorten(text, 40)
        )
    };
    let mut rest = text.trim();
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let number: f64 = rest[..digits].parse().map_err(|_| bad())?;
        let mut chars = rest[digits..].chars();
        let unit = match chars.next() {
            Some('s') => 1.0,
            Some('m') => 60.0,
            Some('h') => 3600.0,
            Some('d') => 86_400.0,
            Some('w') => 7.0 * 86_400.0,
            _ => return Err(bad()),
        };
        total += number * unit;
        rest = chars.as_str().trim_start();
    }
    Duration::try_from_secs_f64(total).map_err(|_| bad())
}

/// The forms [`parse_point`] takes, as `--help` says them.
pub const POINT_FORMS: &str =
    "a span back from now (30m, 2h, 7d), a date (2026-11-27: its midnight, UTC) or an RFC 3339 time";

/// A point in time: a span back from `now` (`2h`: two hours ago), a date
/// (`2026-03-09`: its midnight, UTC) or an RFC 3339 time
/// (`2026-03-09T12:00:00Z`).
pub fn parse_point(text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    let trimmed = text.trim();
    if let Ok(at) = DateTime::parse_from_rfc3339(trimmed) {
        return Ok(at.with_timezone(&Utc));
    }
    if let Ok(day) = chrono::NaiveDate::parse_from_str(trimmed, "%Y-%m-%d") {
        return Ok(day.and_time(chrono::NaiveTime::MIN).and_utc());
    }
    let span = parse_span(text).map_err(|_| {
        format!(
            "{:?} is not a point in time: expected a span back from now (e.g. 2h, 7d), a date (e.g. 2026-03-09) or an RFC 3339 time (e.g. 2026-03-09T12:00:00Z)",
            crate::pipeline::shorten(text, 40)
        )
    })?;
    let span = chrono::Duration::from_std(span).unwrap_or(chrono::Duration::MAX);
    Ok(now
        .checked_sub_signed(span)
        .unwrap_or(DateTime::<Utc>::MIN_UTC))
}

/// [`parse_point`] against the clock when the arguments are parsed: the
/// value parser of every `--since` and `--until`.
pub fn point_arg(text: &str) -> Result<DateTime<Utc>, String> {
    parse_point(text, Utc::now())
}

/// `until` must not come before `since`: a window that holds nothing is a
/// mistake said, not an empty answer.
pub fn check_window(
    since: Option<DateTime<Utc>>,
    until: Option<DateTime<Utc>>,
) -> Result<(), String> {
    match (since, until) {
        (Some(since), Some(until)) if until < since => Err(format!(
            "--until {} is before --since {}",
            until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            since.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        )),
        _ => Ok(()),
    }
}

/// A span for people: `42s`, `5m 3s`, `2h 10m`, `3d 4h`.
pub fn format_span(span: Duration) -> String {
    let s = span.as_secs();
    match s {
        0..60 if span.as_millis() < 10_000 && span.subsec_millis() > 0 => {
            format!("{:.1}s", span.as_secs_f64())
        }
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m {}s", s / 60, s % 60),
        3600..86_400 => format!("{}h {}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d {}h", s / 86_400, s % 86_400 / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn spans() {
        assert_eq!(parse_span("45s"), Ok(Duration::from_secs(45)));
        assert_eq!(parse_span("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_span("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_span("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_span("7d"), Ok(Duration::from_secs(7 * 86_400)));
        assert_eq!(parse_span("2w"), Ok(Duration::from_secs(14 * 86_400)));
        for bad in ["", "7", "d", "7x", "-1h", "1e9999h", "7d!", "..h"] {
            assert!(parse_span(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn points_take_spans_dates_and_rfc3339_times() {
        let now = Utc.with_ymd_and_hms(2026, 3, 9, 12, 0, 0).unwrap();
        assert_eq!(parse_point("2h", now), Ok(now - chrono::Duration::hours(2)));
        assert_eq!(
            parse_point("30m", now),
            Ok(now - chrono::Duration::minutes(30))
        );
        assert_eq!(parse_point("7d", now), Ok(now - chrono::Duration::days(7)));
        assert_eq!(
            parse_point("2026-03-01T00:00:00+01:00", now),
            Ok(Utc.with_ymd_and_hms(2026, 2, 28, 23, 0, 0).unwrap())
        );
        assert_eq!(
            parse_point(" 2026-11-27 ", now),
            Ok(Utc.with_ymd_and_hms(2026, 11, 27, 0, 0, 0).unwrap())
        );
        for bad in [
            "yesterday",
            "",
            "h",
            "-1h",
            "2026-13-01",
            "2026-02-30",
            "27.11.2026",
        ] {
            assert!(parse_point(bad, now).is_err(), "{bad}");
        }
        assert_eq!(parse_point("99999999w", now), Ok(DateTime::<Utc>::MIN_UTC));
    }

    #[test]
    fn a_window_ends_after_it_starts() {
        let at = |h| Some(Utc.with_ymd_and_hms(2026, 3, 9, h, 0, 0).unwrap());
        assert!(check_window(at(1), at(2)).is_ok());
        assert!(check_window(at(2), at(2)).is_ok());
        assert!(check_window(None, at(2)).is_ok());
        let err = check_window(at(3), at(2)).unwrap_err();
        assert!(err.contains("before --since"), "{err}");
    }

    #[test]
    fn formatting() {
        assert_eq!(format_span(Duration::from_millis(1234)), "1.2s");
        assert_eq!(format_span(Duration::from_secs(42)), "42s");
        assert_eq!(format_span(Duration::from_secs(303)), "5m 3s");
        assert_eq!(format_span(Duration::from_secs(7800)), "2h 10m");
        assert_eq!(
            format_span(Duration::from_secs(3 * 86_400 + 4 * 3600)),
            "3d 4h"
        );
    }
}
