//! Event ids: sortable by time and unique across processes.
//!
//! `<µs since the epoch, 13 hex digits>-<pid, 8 hex digits>-<counter, 4 hex
//! digits>`, e.g. `0641b1a7d3c2e-00004d2a-0000`: fixed width, so string
//! order is time order; the pid tells processes apart, the counter events
//! of one process within one microsecond. Within a process the time never
//! goes backwards: a clock set back keeps the last time (and counts on), so
//! a process's events stay in the order it wrote them.

use std::sync::Mutex;

use chrono::{DateTime, Utc};

/// The id's time part for `at`: every id of an event at or after `at`
/// sorts at or after it (`jkz events --since`).
pub fn lower_bound(at: DateTime<Utc>) -> String {
    format!("{:013x}", at.timestamp_micros().max(0))
}

/// The next id of this process for an event at `now`, and the time it
/// stands for (`now`, or the last time when the clock went backwards).
pub fn next(now: DateTime<Utc>) -> (String, DateTime<Utc>) {
    static CLOCK: Mutex<IdClock> = Mutex::new(IdClock::new());
    let mut clock = CLOCK.lock().unwrap_or_else(|e| e.into_inner());
    clock.next(now, std::process::id())
}

/// The last time and counter one process handed out.
struct IdClock {
    micros: i64,
    counter: u32,
}

impl IdClock {
    const fn new() -> IdClock {
        IdClock {
            micros: i64::MIN,
            counter: 0,
        }
    }

    fn next(&mut self, now: DateTime<Utc>, pid: u32) -> (String, DateTime<Utc>) {
        let mut micros = now.timestamp_micros().max(0);
        let counter = if micros > self.micros {
            0
        } else if self.counter < 0xffff {
            micros = self.micros;
            self.counter + 1
        } else {
            micros = self.micros + 1;
            0
        };
        (self.micros, self.counter) = (micros, counter);
        let at = DateTime::from_timestamp_micros(micros).unwrap_or(now);
        (format!("{micros:013x}-{pid:08x}-{counter:04x}"), at)
    }
}

/// The time an id stands for, when it is one of jkz's.
pub fn time_of(id: &str) -> Option<DateTime<Utc>> {
    let hex = id.get(..13)?;
    let micros = i64::from_str_radix(hex, 16).ok()?;
    DateTime::from_timestamp_micros(micros)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn ids_sort_like_time_and_never_repeat() {
        let t = Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
        let mut clock = IdClock::new();
        let mut ids = Vec::new();
        for i in 0..70_000 {
            ids.push(clock.next(t + chrono::Duration::microseconds(i / 10), 7).0);
        }
        // The clock goes back: still after every earlier id.
        ids.push(clock.next(t - chrono::Duration::hours(1), 7).0);
        // 70,000 in one microsecond: the counter overflows into the next.
        for _ in 0..70_000 {
            ids.push(clock.next(t, 7).0);
        }
        let mut sorted = ids.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted, ids);
        assert!(ids[0] >= lower_bound(t) && ids[0] < lower_bound(t + chrono::Duration::seconds(1)));
        assert_eq!(time_of(&ids[0]), Some(t));
        assert_eq!(ids[0].len(), 13 + 1 + 8 + 1 + 4);
    }
}
