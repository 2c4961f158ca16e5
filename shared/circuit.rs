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
//! mode ([`crate::team`]) the circuits live in PostgreSQL
//! ([`crate::team::circuits`]), the same decisions on the same records, each
//! in a transaction holding the service's advisory lock.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::atomic::write_atomic;
use crate::events::{emit, Event};
use crate::json_file::{lock_wait, lock_within};
use crate::process::Holder;
use crate::state_dir::{read_whole_state_file, StateDir, CIRCUIT_DIR};

/// Consecutive failures that open a closed circuit.
pub const DEFAULT_THRESHOLD: u32 = 3;
/// Seconds an open circuit waits before it lets a probe through.
pub const DEFAULT_COOLDOWN: u64 = 60;
/// A probe running longer than this is presumed lost.
pub const PROBE_MAX_AGE: Duration = Duration::from_secs(30 * 60);
/// `jkz run`'s exit code when the circuit is open: the command was not
/// started (75, `EX_TEMPFAIL`: try again later, or use the fallback).
pub const EXIT_OPEN: u8 = 75;

const MAX_CIRCUIT_FILE: u64 = 64 * 1024;

/// The three states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    #[default]
    Closed,
    Open,
    HalfOpen,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::Closed => "closed",
            State::Open => "open",
            State::HalfOpen => "half-open",
        }
    }
}

/// The run let through a half-open circuit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    #[serde(flatten)]
    pub holder: Holder,
    /// RFC 3339, UTC.
    pub started_at: String,
}

/// One service's circuit, as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Circuit {
    pub service: String,
    #[serde(default)]
    pub state: State,
    #[serde(default)]
    pub consecutive_failures: u32,
    /// When it last opened (RFC 3339, UTC).
    #[serde(default)]
    pub opened_at: Option<String>,
    #[serde(default)]
    pub probe: Option<Probe>,
    /// When the state or the count last changed.
    #[serde(default)]
    pub updated_at: Option<String>,
}

impl Circuit {
    fn new(service: &str) -> Circuit {
        Circuit {
            service: service.to_string(),
            state: State::Closed,
            consecutive_failures: 0,
            opened_at: None,
            probe: None,
            updated_at: None,
        }
    }
}

/// How a circuit opens and recovers.
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    pub threshold: u32,
    pub cooldown: Duration,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            threshold: DEFAULT_THRESHOLD,
            cooldown: Duration::from_secs(DEFAULT_COOLDOWN),
        }
    }
}

/// Whether a run may start its command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Admission {
    /// The circuit is closed.
    Through,
    /// The circuit was half-open (or just became so): this run is its probe.
    Probe,
    /// Open, or half-open with a probe running: one line saying why.
    ShortCircuit(String),
}

/// A service name is `[A-Za-z0-9._-]`, at most 128 bytes, not starting
/// with `.`: it names a file.
pub fn validate(service: &str) -> Result<(), String> {
    match crate::file_name::is_safe_visible(service) {
        true => Ok(()),
        false => Err(format!(
            "service '{service}': use letters, digits, '.', '_' and '-' (e.g. codex, api-ollama-com)"
        )),
    }
}

fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn parse(t: &Option<String>) -> Option<DateTime<Utc>> {
    t.as_deref()
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
}

fn circuit_path(state: &StateDir, service: &str) -> io::Result<PathBuf> {
    validate(service).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let dir = state.ensure_subdir(CIRCUIT_DIR)?.ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("the circuit of {service}: {}", state.missing()),
        )
    })?;
    Ok(dir.join(format!("{service}.json")))
}

/// A circuit read from its stored JSON; anything else is a closed circuit.
pub fn parse_record(bytes: &[u8], service: &str) -> Circuit {
    serde_json::from_slice(bytes).unwrap_or_else(|_| Circuit::new(service))
}

/// A new, closed circuit (as a missing file or row reads).
pub fn closed(service: &str) -> Circuit {
    Circuit::new(service)
}

/// Reads a circuit file; a missing or unreadable-as-circuit file is a
/// closed circuit.
fn read(path: &Path, service: &str) -> io::Result<Circuit> {
    match read_whole_state_file(path, MAX_CIRCUIT_FILE) {
        Ok(bytes) => Ok(parse_record(&bytes, service)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Circuit::new(service)),
        Err(e) => Err(e),
    }
}

fn write(path: &Path, circuit: &Circuit) -> io::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(circuit).map_err(io::Error::other)?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}

/// Applies `edit` to the circuit of `service` under its lock, writing it
/// back when `edit` says it changed it.
fn update<T: Send + 'static>(
    state: &StateDir,
    service: &str,
    edit: impl FnOnce(&mut Circuit) -> (T, bool) + Send + 'static,
) -> io::Result<T> {
    validate(service).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    if let crate::team::Backend::Team(url, _) =
        crate::team::backend(state.path()).map_err(io::Error::other)?
    {
        return Ok(crate::team::circuits::update(&url, service, edit)?);
    }
    let path = circuit_path(state, service)?;
    let _guard = lock_within(&path, lock_wait())?;
    let mut circuit = read(&path, service)?;
    let before = circuit.state;
    let (out, changed) = edit(&mut circuit);
    if changed {
        write(&path, &circuit)?;
        log_change(state, before, &circuit);
    }
    Ok(out)
}

/// Logs that a circuit changed state from `before`: `circuit.opened` when it opened,
/// `circuit.closed` when it closed; half-opening is not an event (the
/// probe's outcome is).
fn log_change(state: &StateDir, before: State, after: &Circuit) {
    let kind = match (before, after.state) {
        (b, State::Open) if b != State::Open => "circuit.opened",
        (b, State::Closed) if b != State::Closed => "circuit.closed",
        _ => return,
    };
    let event = Event::new(kind).payload(json!({
        "service": after.service,
        "failures": after.consecutive_failures,
    }));
    emit(state, event);
}

/// Decides whether the run `me` may start its command now.
pub fn admit(state: &StateDir, service: &str, policy: Policy, me: u32) -> io::Result<Admission> {
    let service_name = service.to_string();
    update(state, service, move |c| {
        let service = service_name.as_str();
        let now = Utc::now();
        match c.state {
            State::Closed => (Admission::Through, false),
            State::Open => {
                let cooldown =
                    chrono::Duration::from_std(policy.cooldown).unwrap_or(chrono::Duration::MAX);
                // Without a readable opening time the cooldown counts as
                // over: else the circuit would stay open forever.
                let until = parse(&c.opened_at).map(|opened| {
                    opened
                        .checked_add_signed(cooldown)
                        .unwrap_or(DateTime::<Utc>::MAX_UTC)
                });
                if let Some(until) = until.filter(|until| now < *until) {
                    let why = format!(
                        "circuit {service} is open ({} consecutive failures); it half-opens at {}",
                        c.consecutive_failures,
                        stamp(until)
                    );
                    return (Admission::ShortCircuit(why), false);
                }
                become_probe(c, me, now);
                (Admission::Probe, true)
            }
            State::HalfOpen => {
                let lost = match &c.probe {
                    None => true,
                    Some(p) => {
                        let old = parse(&Some(p.started_at.clone())).is_none_or(|t| {
                            (now - t).to_std().is_ok_and(|age| age > PROBE_MAX_AGE)
                        });
                        old || p.holder.is_gone()
                    }
                };
                if !lost {
                    let p = c.probe.as_ref().expect("a live probe");
                    let why = format!(
                        "circuit {service} is half-open and its probe (pid {} on {}) is still running",
                        p.holder.pid, p.holder.host
                    );
                    return (Admission::ShortCircuit(why), false);
                }
                become_probe(c, me, now);
                (Admission::Probe, true)
            }
        }
    })
}

fn become_probe(c: &mut Circuit, me: u32, now: DateTime<Utc>) {
    c.state = State::HalfOpen;
    c.probe = Some(Probe {
        holder: Holder::local(me),
        started_at: stamp(now),
    });
    c.updated_at = Some(stamp(now));
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
        let now = Utc::now();
        let is_my_probe = admission == Admission::Probe
            && c.state == State::HalfOpen
            && c.probe
                .as_ref()
                .is_some_and(|p| p.holder == Holder::local(me));
        let changed = if is_my_probe {
            c.probe = None;
            if success {
                c.state = State::Closed;
                c.consecutive_failures = 0;
            } else {
                c.state = State::Open;
                c.consecutive_failures = c.consecutive_failures.saturating_add(1);
                c.opened_at = Some(stamp(now));
            }
            true
        } else if c.state == State::Closed {
            // A run that started before the circuit opened (or after a
            // reset) counts only while it is closed: once open, the probe
            // decides.
            match success {
                true if c.consecutive_failures == 0 => false,
                true => {
                    c.consecutive_failures = 0;
                    true
                }
                false => {
                    c.consecutive_failures = c.consecutive_failures.saturating_add(1);
                    if c.consecutive_failures >= policy.threshold.max(1) {
                        c.state = State::Open;
                        c.opened_at = Some(stamp(now));
                    }
                    true
                }
            }
        } else {
            false
        };
        if changed {
            c.updated_at = Some(stamp(now));
        }
        (c.clone(), changed)
    })
}

/// Closes the circuit of `service` and clears its count.
pub fn reset(state: &StateDir, service: &str) -> io::Result<Circuit> {
    let service_name = service.to_string();
    update(state, service, move |c| {
        *c = Circuit::new(&service_name);
        c.updated_at = Some(stamp(Utc::now()));
        (c.clone(), true)
    })
}

/// The circuits in `state/circuit/` (one, when `service` is given), by name.
pub fn status(state: &StateDir, service: Option<&str>) -> io::Result<Vec<Circuit>> {
    let dir = state.join(CIRCUIT_DIR);
    if let Some(s) = service {
        validate(s).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    }
    if let crate::team::Backend::Team(url, _) =
        crate::team::backend(state.path()).map_err(io::Error::other)?
    {
        return Ok(crate::team::circuits::status(&url, service)?);
    }
    if let Some(s) = service {
        return Ok(vec![read(&dir.join(format!("{s}.json")), s)?]);
    }
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    crate::state_dir::check_listed_dir(&dir)?;
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        let Some(service) = name.strip_suffix(".json") else {
            continue;
        };
        if validate(service).is_ok() {
            out.push(read(&dir.join(&name), service)?);
        }
    }
    out.sort_by(|a, b| a.service.cmp(&b.service));
    Ok(out)
}

#[cfg(test)]
mod tests {
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
