//! One deliberation record, as stored: who was asked about what
//! ([`Context`]), what came of it ([`Status`]), and the response (see the
//! field list in [`super`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::response;

/// The largest response kept inline in its record: 64 KiB, a long review or
/// verdict, so most records are one small file; anything larger (or not
/// UTF-8) goes to a content-addressed file beside the offloaded sections.
pub const INLINE_MAX: usize = 64 * 1024;

/// The largest record file read: an inline response of [`INLINE_MAX`] bytes
/// can grow up to six times when escaped into JSON.
pub const MAX_RECORD: u64 = 8 * INLINE_MAX as u64 + 64 * 1024;

/// What came of an invocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Exit 0 and a non-empty answer.
    Ok,
    /// A non-zero exit (or a signal), an empty answer, or a command that
    /// could not be started.
    Failed,
    /// Killed by `jkz run --timeout`.
    Timeout,
    /// Ended by a signal `jkz run` received and forwarded (`signal`), or
    /// because the reader of jkz's stdout went away.
    Interrupted,
    /// Not started: the service's circuit was open.
    ShortCircuited,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Failed => "failed",
            Status::Timeout => "timeout",
            Status::Interrupted => "interrupted",
            Status::ShortCircuited => "short-circuited",
        }
    }
}

/// Who was asked, about what: the flags `jkz run` and `jkz-truncate
/// --record` share.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct Context {
    /// The pipeline role answering (judge, builder, …); also picks the head
    /// share of the truncated output.
    #[arg(long, value_name = "ROLE")]
    pub role: Option<String>,
    /// The issue this invocation works on.
    #[arg(long, value_name = "N")]
    pub issue: Option<u64>,
    /// The pipeline phase (planning, review, …).
    #[arg(long, value_name = "P")]
    pub phase: Option<String>,
    /// The pull request, if any.
    #[arg(long, value_name = "N")]
    pub pr: Option<u64>,
    /// The iteration of this phase (1, 2, …).
    #[arg(long, value_name = "K")]
    pub iteration: Option<u64>,
    /// The model asked.
    #[arg(long, value_name = "M")]
    pub model: Option<String>,
    /// The endpoint asked (a URL, a provider).
    #[arg(long, value_name = "E")]
    pub endpoint: Option<String>,
}

/// One record, as stored (field order is the file's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub role: Option<String>,
    /// RFC 3339, UTC, milliseconds.
    pub timestamp: String,
    pub status: Status,
    pub issue: Option<u64>,
    pub pr: Option<u64>,
    pub phase: Option<String>,
    pub iteration: Option<u64>,
    pub model: Option<String>,
    pub endpoint: Option<String>,
    #[serde(default)]
    pub service: Option<String>,
    #[serde(default)]
    pub mode: Option<String>,
    pub command: Option<Vec<String>>,
    pub exit_code: Option<i32>,
    /// The signal `jkz run` received and forwarded to CMD (`SIGTERM`, …),
    /// when one interrupted the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    pub duration_ms: Option<u64>,
    pub tokens: Option<Value>,
    #[serde(default)]
    pub verdict: Option<String>,
    pub response_bytes: u64,
    pub response_sha256: String,
    #[serde(default)]
    pub response_file: Option<String>,
    #[serde(default)]
    pub response: Option<String>,
    /// Why the response could not be kept, when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_error: Option<String>,
    /// Why the kept response is not the whole answer, when it is not: the
    /// reading stopped early, or the answer passed the bound on a kept copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_incomplete: Option<String>,
    /// The patterns `jkz run --inject-patterns` put before CMD's input
    /// (`P12`, …), best first; only for such a run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patterns_injected: Option<Vec<String>>,
}

impl Record {
    /// A record for `context`, with no response yet.
    pub fn new(
        context: &Context,
        status: Status,
        started: chrono::DateTime<chrono::Utc>,
    ) -> Record {
        Record {
            role: context.role.clone(),
            timestamp: started.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            status,
            issue: context.issue,
            pr: context.pr,
            phase: context.phase.clone(),
            iteration: context.iteration,
            model: context.model.clone(),
            endpoint: context.endpoint.clone(),
            service: None,
            mode: None,
            command: None,
            exit_code: None,
            signal: None,
            duration_ms: None,
            tokens: None,
            verdict: None,
            response_bytes: 0,
            response_sha256: response::sha256_hex(b""),
            response_file: None,
            response: None,
            response_error: None,
            response_incomplete: None,
            patterns_injected: None,
        }
    }
}
