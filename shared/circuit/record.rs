//! What a circuit is and how it moves: the record both backends store (a
//! file in `state/circuit/`, [`super::files`]; a row of `jkz_circuits`,
//! [`super::postgres`]) and the transitions every run applies to it
//! ([`Circuit::admit`], [`Circuit::report`], [`Circuit::reset`]), so the
//! two backends decide alike.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::process::Holder;

/// Consecutive failures that open a closed circuit.
pub const DEFAULT_THRESHOLD: u32 = 3;
/// Seconds an open circuit waits before it lets a probe through.
pub const DEFAULT_COOLDOWN: u64 = 60;
/// A probe running longer than this is presumed lost.
pub const PROBE_MAX_AGE: Duration = Duration::from_secs(30 * 60);
/// `jkz run`'s exit code when the circuit is open: the command was not
/// started (75, `EX_TEMPFAIL`: try again later, or use the fallback).
pub const EXIT_OPEN: u8 = 75;

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

/// A circuit read from its stored JSON; anything else is a closed circuit.
pub fn parse_record(bytes: &[u8], service: &str) -> Circuit {
    serde_json::from_slice(bytes).unwrap_or_else(|_| Circuit::new(service))
}

/// A new, closed circuit (as a missing file or row reads).
pub fn closed(service: &str) -> Circuit {
    Circuit::new(service)
}

impl Circuit {
    /// Whether the run `me` may start its command at `now` (the rule of
    /// [`super::admit`]); true when that changed the circuit.
    pub fn admit(
        &mut self,
        service: &str,
        policy: Policy,
        me: u32,
        now: DateTime<Utc>,
    ) -> (Admission, bool) {
        let c = self;
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
    }

    /// Records at `now` the outcome of a run that was let through
    /// (`admission`) (the rule of [`super::report`]); true when that
    /// changed the circuit.
    pub fn report(
        &mut self,
        policy: Policy,
        admission: &Admission,
        me: u32,
        success: bool,
        now: DateTime<Utc>,
    ) -> bool {
        let c = self;
        let is_my_probe = *admission == Admission::Probe
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
        changed
    }

    /// Closes the circuit of `service` at `now` and clears its count.
    pub fn reset(&mut self, service: &str, now: DateTime<Utc>) {
        *self = Circuit::new(service);
        self.updated_at = Some(stamp(now));
    }
}

fn become_probe(c: &mut Circuit, me: u32, now: DateTime<Utc>) {
    c.state = State::HalfOpen;
    c.probe = Some(Probe {
        holder: Holder::local(me),
        started_at: stamp(now),
    });
    c.updated_at = Some(stamp(now));
}
