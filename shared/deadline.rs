//! The one deadline a hook process lives by.
//!
//! A client gives each hook a time budget; jkz keeps its own well inside
//! it ([`HOOK_BUDGET`], counted from the hook's start in [`crate::hook::main`]).
//! Waits that could otherwise run long — a segment's lock held by another
//! writer, a file read from a slow mount — take what is left of it
//! ([`bounded`], [`check`]), so no single wait can spend the budget of the
//! whole hook. A command a person runs has no such deadline: its waits keep
//! their own bounds.

use std::io;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A hook's whole budget, from its start: every client waits longer.
pub const HOOK_BUDGET: Duration = Duration::from_secs(2);

static HOOK_DEADLINE: OnceLock<Instant> = OnceLock::new();

/// Marks this process as a hook that started now. Later calls keep the
/// first start.
pub fn start_hook() {
    let _ = HOOK_DEADLINE.set(Instant::now() + HOOK_BUDGET);
}

/// When this process, a hook, must be done; `None` for a command.
pub fn hook_deadline() -> Option<Instant> {
    HOOK_DEADLINE.get().copied()
}

/// `wait`, or what is left of the hook's budget when that is less.
pub fn bounded(wait: Duration) -> Duration {
    bounded_by(hook_deadline(), wait, Instant::now())
}

fn bounded_by(deadline: Option<Instant>, wait: Duration, now: Instant) -> Duration {
    deadline.map_or(wait, |d| wait.min(d.saturating_duration_since(now)))
}

/// An error when the hook's budget is spent: the caller skips `what` and
/// says so, instead of starting work the client will not wait for.
pub fn check(what: &str) -> io::Result<()> {
    check_by(hook_deadline(), what, Instant::now())
}

fn check_by(deadline: Option<Instant>, what: &str, now: Instant) -> io::Result<()> {
    match deadline {
        Some(d) if now >= d => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "the hook's {} s budget was spent before {what}: skipped",
                HOOK_BUDGET.as_secs()
            ),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_keeps_its_own_wait_and_a_hook_gets_what_is_left() {
        let now = Instant::now();
        let wait = Duration::from_millis(250);
        assert_eq!(bounded_by(None, wait, now), wait);
        let late = now + Duration::from_millis(40);
        assert_eq!(bounded_by(Some(late), wait, now), Duration::from_millis(40));
        assert_eq!(
            bounded_by(Some(now + Duration::from_secs(1)), wait, now),
            wait
        );
        assert_eq!(bounded_by(Some(now), wait, late), Duration::ZERO);
    }

    #[test]
    fn a_spent_budget_is_an_error_naming_what_was_skipped() {
        let now = Instant::now();
        assert!(check_by(None, "reading HEAD", now).is_ok());
        assert!(check_by(Some(now + Duration::from_millis(1)), "reading HEAD", now).is_ok());
        let err = check_by(Some(now), "reading HEAD", now).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(err.to_string().contains("before reading HEAD"), "{err}");
    }
}
