//! Circuit breakers: `state/circuit/<service>.json`, one per external model
//! service (`codex`, `gemini`, `api-ollama-com`, …), so that a pipeline stops
//! calling a service that keeps failing and switches to its fallback.
//!
//! ```text
//!   closed ──N consecutive failures──▶ open ──cooldown──▶ half-open
//!     ▲                                 ▲                    │ one probe
//!     └────────── probe succeeds ───────┼──── probe fails ───┘
//! ```
//!
//! - *closed*: every run goes through; a failure (non-zero exit, timeout,
//!   empty answer) counts, a success resets the count. The N-th consecutive
//!   failure (default [`DEFAULT_THRESHOLD`]) opens the circuit.
//! - *open*: `jkz run --service S` does not start its command: it exits with
//!   [`EXIT_OPEN`] and one line on stderr, so the wrapper switches to its
//!   fallback model. After the cooldown (default [`DEFAULT_COOLDOWN`] s) the
//!   next run half-opens the circuit and is its probe.
//! - *half-open*: exactly one probe runs; every other run is short-circuited
//!   while it does. The probe's success closes the circuit, its failure opens
//!   it again for another cooldown. A probe whose process is gone (crashed,
//!   killed) or that started more than [`PROBE_MAX_AGE`] ago is lost: the
//!   next run becomes the probe.
//!
//! Every decision is a read-modify-write of the circuit file under its
//! writers' lock ([`crate::json_file::lock_within`]), so of any number of
//! runs racing a half-open circuit exactly one becomes the probe. In team
//! mode ([`crate::team`]) the circuits live in PostgreSQL ([`postgres`]),
//! the same decisions ([`record`]) on the same records, each in a
//! transaction holding the service's advisory lock. This file chooses the
//! backend; neither backend knows the other.

mod files;
mod postgres;
mod record;

use std::io;

use chrono::Utc;

use crate::state_dir::StateDir;
use crate::team::Backend;

pub use record::{
    closed, parse_record, validate, Admission, Circuit, Policy, Probe, State, DEFAULT_COOLDOWN,
    DEFAULT_THRESHOLD, EXIT_OPEN, PROBE_MAX_AGE,
};

/// Applies `edit` to the circuit of `service` in its backend, under its
/// lock, writing it back when `edit` says it changed it.
fn update<T: Send + 'static>(
    state: &StateDir,
    service: &str,
    edit: impl FnOnce(&mut Circuit) -> (T, bool) + Send + 'static,
) -> io::Result<T> {
    validate(service).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    if let Backend::Team(url, _) = crate::team::backend(state.path()).map_err(io::Error::other)? {
        return Ok(postgres::update(&url, service, edit)?);
    }
    files::update(state, service, edit)
}

/// Decides whether the run `me` may start its command now.
pub fn admit(state: &StateDir, service: &str, policy: Policy, me: u32) -> io::Result<Admission> {
    let service_name = service.to_string();
    update(state, service, move |c| {
        c.admit(&service_name, policy, me, Utc::now())
    })
}

/// Records the outcome of a run that was let through (`admission`),
/// returning the circuit as it now is.
pub fn report(
    state: &StateDir,
    service: &str,
    policy: Policy,
    admission: &Admission,
    me: u32,
    success: bool,
) -> io::Result<Circuit> {
    let admission = admission.clone();
    update(state, service, move |c| {
        let changed = c.report(policy, &admission, me, success, Utc::now());
        (c.clone(), changed)
    })
}

/// Closes the circuit of `service` and clears its count.
pub fn reset(state: &StateDir, service: &str) -> io::Result<Circuit> {
    let service_name = service.to_string();
    update(state, service, move |c| {
        c.reset(&service_name, Utc::now());
        (c.clone(), true)
    })
}

/// The circuits (one, when `service` is given), by name.
pub fn status(state: &StateDir, service: Option<&str>) -> io::Result<Vec<Circuit>> {
    if let Some(s) = service {
        validate(s).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    }
    if let Backend::Team(url, _) = crate::team::backend(state.path()).map_err(io::Error::other)? {
        return Ok(postgres::status(&url, service)?);
    }
    files::status(state, service)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn opens_after_n_failures_probes_once_and_closes_on_success() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::at(dir.path());
        let me = std::process::id();
        let policy = Policy {
            threshold: 3,
            cooldown: Duration::ZERO,
        };
        let slow = Policy {
            threshold: 3,
            cooldown: Duration::from_secs(3600),
        };
        for i in 0..3 {
            let a = admit(&state, "codex", slow, me).unwrap();
            assert_eq!(a, Admission::Through, "run {i}");
            report(&state, "codex", slow, &a, me, false).unwrap();
        }
        assert!(matches!(
            admit(&state, "codex", slow, me).unwrap(),
            Admission::ShortCircuit(_)
        ));
        // Cooldown over: one probe; everyone else waits while it runs.
        let probe = admit(&state, "codex", policy, me).unwrap();
        assert_eq!(probe, Admission::Probe);
        assert!(matches!(
            admit(&state, "codex", policy, me).unwrap(),
            Admission::ShortCircuit(_)
        ));
        // It fails: open again.
        let c = report(&state, "codex", policy, &probe, me, false).unwrap();
        assert_eq!(c.state, State::Open);
        let probe = admit(&state, "codex", policy, me).unwrap();
        assert_eq!(probe, Admission::Probe);
        let c = report(&state, "codex", policy, &probe, me, true).unwrap();
        assert_eq!((c.state, c.consecutive_failures), (State::Closed, 0));
    }

    #[test]
    fn a_success_resets_the_count_and_a_lost_probe_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::at(dir.path());
        let me = std::process::id();
        let policy = Policy {
            threshold: 2,
            cooldown: Duration::ZERO,
        };
        let a = admit(&state, "gemini", policy, me).unwrap();
        report(&state, "gemini", policy, &a, me, false).unwrap();
        let c = report(&state, "gemini", policy, &a, me, true).unwrap();
        assert_eq!(c.consecutive_failures, 0);
        report(&state, "gemini", policy, &a, me, false).unwrap();
        let c = report(&state, "gemini", policy, &a, me, false).unwrap();
        assert_eq!(c.state, State::Open);
        if std::fs::metadata("/proc/self/stat").is_ok() {
            let mut child = std::process::Command::new("true").spawn().unwrap();
            let dead = child.id();
            child.wait().unwrap();
            assert_eq!(
                admit(&state, "gemini", policy, dead).unwrap(),
                Admission::Probe
            );
            // Its probe died: the next run takes over.
            assert_eq!(
                admit(&state, "gemini", policy, me).unwrap(),
                Admission::Probe
            );
        }
        let c = reset(&state, "gemini").unwrap();
        assert_eq!(c.state, State::Closed);
        assert_eq!(status(&state, None).unwrap().len(), 1);
    }
}
