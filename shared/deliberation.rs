//! Deliberation records: the audit trail of every agent invocation.
//!
//! Truncation protects the live window, not the audit trail: `jkz run` and
//! `jkz-truncate --record` keep each invocation's complete, untruncated
//! answer in `state/deliberations/<UTC time>-<issue or none>-<role>-<pid>.json`,
//! so that weeks later "what did the Judge say on iteration 2?" has an exact
//! answer (`jkz deliberations show --issue N --role judge --iteration 2`).
//!
//! # The record
//!
//! One JSON object, written once, atomically (temp file, fdatasync, rename;
//! the directory is not synced, see [`write`]):
//! `role`, `timestamp`, `status` (`ok`, `failed`, `timeout`,
//! `short-circuited`), `issue`, `pr`, `phase`, `iteration`, `model`,
//! `endpoint`, `service`, `mode`, `command` (argv; null for a pipe),
//! `exit_code`, `duration_ms` (null for a pipe), `tokens`, `verdict`, then
//! the response: `response_bytes`, `response_sha256`, and either `response`
//! (the text itself, when it is valid UTF-8 of at most [`INLINE_MAX`] bytes)
//! or `response_file` (`context-offload/<sha256>.txt`, relative to the state
//! directory: content-addressed, write-once).
//!
//! A response file is written while the answer streams (memory stays
//! bounded) and renamed into place before the record is written, so a run
//! killed at any moment leaves the record and its response whole or absent
//! (at worst a whole response file that no record names yet, or a temp
//! file `jkz gc` removes). `jkz gc` never removes a record, nor a response
//! file a record names.
//!
//! `tokens` is never invented: it is what the wrapper reported through
//! [`USAGE_FILE_VARIABLE`] (see [`usage`]), else null. `verdict` is the
//! `verdict` field of the last `verdict-json` block of what was printed (the
//! truncated output, where the newest verdict is placed first), else null.
//!
//! Listing reads an index, not the records: see [`index`].

pub mod index;
pub mod pipe;
pub mod response;
pub mod show;
pub mod usage;
pub mod verdict;

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::atomic::{AtomicFile, Durability};
use crate::state_dir::{StateDir, DELIBERATIONS_DIR};
use crate::truncate::full_output::Keep;
use crate::truncate::KeptResponse;

pub use usage::USAGE_FILE_VARIABLE;

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
    /// Not started: the service's circuit was open.
    ShortCircuited,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Failed => "failed",
            Status::Timeout => "timeout",
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
            duration_ms: None,
            tokens: None,
            verdict: None,
            response_bytes: 0,
            response_sha256: response::sha256_hex(b""),
            response_file: None,
            response: None,
            response_error: None,
        }
    }
}

/// `state/deliberations/`, or `None` (with a one-line warning from
/// `program`) when no record can be kept: a missing state directory, or one
/// that cannot be written, never stops an answer.
pub fn records_dir(state: &StateDir, program: &str) -> Option<PathBuf> {
    match dir(state) {
        Ok(Some(dir)) => Some(dir),
        Ok(None) => {
            eprintln!(
                "{program}: warning: no state directory at {}: no deliberation record is kept (run `jkz install`, or name one with --state-dir or JKZ_STATE_DIR)",
                state.path().display()
            );
            None
        }
        Err(e) => {
            eprintln!(
                "{program}: warning: {}: {e}; no deliberation record is kept",
                state.join(DELIBERATIONS_DIR).display()
            );
            None
        }
    }
}

/// Writes `record` into `dir` (see [`write`]); a failure is a one-line
/// warning from `program`.
pub fn keep_record(dir: Option<&Path>, id: &str, record: &Record, program: &str) {
    if let Some(dir) = dir {
        if let Err(e) = write(dir, id, record) {
            eprintln!("{program}: warning: the deliberation record {id} could not be written: {e}");
        }
        crate::events::sources::agent_finished(dir, id, record);
    }
}

/// How the truncation engine keeps a response for a record (see
/// [`truncate::full_output`]): in the state directory's
/// `context-offload/`, inline up to [`INLINE_MAX`]. `None` when there is no
/// state directory, or (with a one-line warning from `program`) when
/// `context-offload/` cannot be made.
pub fn response_keep(state: &StateDir, program: &str) -> Option<Keep> {
    match state.ensure_subdir(crate::compress::OFFLOAD_DIR) {
        Ok(offload) => offload.map(|offload| Keep::Response {
            offload,
            inline_max: INLINE_MAX,
        }),
        Err(e) => {
            eprintln!(
                "{program}: warning: {}: {e}; the full response cannot be kept",
                state.join(crate::compress::OFFLOAD_DIR).display()
            );
            None
        }
    }
}

/// Puts the kept response into `record` (its file named relative to the
/// state directory), or, when it could not be kept, says why on stderr
/// and in the record.
pub fn set_response(record: &mut Record, kept: Option<KeptResponse>, program: &str) {
    match kept {
        Some(Ok(kept)) => {
            record.response_bytes = kept.bytes;
            record.response_sha256 = kept.sha256;
            record.response = kept.inline;
            record.response_file = kept.file.as_deref().and_then(Path::file_name).map(|name| {
                format!(
                    "{}/{}",
                    crate::compress::OFFLOAD_DIR,
                    name.to_string_lossy()
                )
            });
        }
        Some(Err(why)) => {
            eprintln!("{program}: warning: {why}; the record names no response");
            record.response_error = Some(why);
        }
        None => {}
    }
}

/// Whether an answer is empty (a failure): no bytes, or only whitespace
/// when it is short enough to be inline. `kept` is the kept response;
/// without one, `read` is how many bytes were read.
pub fn is_empty(kept: Option<&KeptResponse>, read: Option<u64>) -> bool {
    match kept {
        Some(Ok(k)) => k.bytes == 0 || k.inline.as_deref().is_some_and(|r| r.trim().is_empty()),
        _ => read.is_none_or(|n| n == 0),
    }
}

/// `state/deliberations/`, created when the state directory may be written
/// (see [`StateDir::ensure`]); `None` when there is none.
pub fn dir(state: &StateDir) -> io::Result<Option<PathBuf>> {
    state.ensure_subdir(DELIBERATIONS_DIR)
}

/// A file-name-safe rendering of a role: `[A-Za-z0-9._-]`, at most 64
/// bytes, `none` when absent or empty.
fn name_part(role: Option<&str>) -> String {
    let safe: String = role
        .unwrap_or("")
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '_' | '-' => c,
            _ => '_',
        })
        .take(64)
        .collect();
    match safe.trim_start_matches('.') {
        "" => "none".to_string(),
        s => s.to_string(),
    }
}

/// The record's id (its file name without `.json`):
/// `<UTC time>-<issue or none>-<role>-<pid>`.
pub fn record_id(record: &Record, started: chrono::DateTime<chrono::Utc>, pid: u32) -> String {
    let issue = record
        .issue
        .map_or_else(|| "none".to_string(), |n| n.to_string());
    format!(
        "{}-{issue}-{}-{pid}",
        started.format("%Y%m%dT%H%M%S%.3fZ"),
        name_part(record.role.as_deref())
    )
}

/// Writes `record` into `dir` atomically, its content synced before the
/// rename, under `id` (or `id-2`, `id-3`, … when that is taken), and adds
/// it to the index. Returns the record's path.
///
/// The directory is not synced ([`Durability::Content`]): a power loss
/// within seconds of the write may lose the newest record, never leave half
/// of one. The sync it saves is a journal commit on every agent call
/// (0.15–0.2 ms on the reference machine, milliseconds on a busy disk), and
/// the response file the record names is not synced either.
pub fn write(dir: &Path, id: &str, record: &Record) -> io::Result<PathBuf> {
    let mut bytes = serde_json::to_vec_pretty(record).map_err(io::Error::other)?;
    bytes.push(b'\n');
    for n in 1u32.. {
        let name = match n {
            1 => format!("{id}.json"),
            n => format!("{id}-{n}.json"),
        };
        let path = dir.join(&name);
        let mut file = AtomicFile::create(&path)?.durability(Durability::Content);
        file.write_all(&bytes)?;
        if file.commit_new()? {
            let entry = index::Entry::of(name.trim_end_matches(".json"), record);
            // The index is a cache: a failed append is rebuilt by the next list.
            let _ = index::append(dir, &[entry]);
            return Ok(path);
        }
    }
    unreachable!("some name is free")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_file_names() {
        let t = chrono::DateTime::parse_from_rfc3339("2025-03-01T12:00:00.123Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let mut r = Record::new(&Context::default(), Status::Ok, t);
        assert_eq!(record_id(&r, t, 7), "20250301T120000.123Z-none-none-7");
        r.issue = Some(42);
        r.role = Some("../security reviewer".into());
        assert_eq!(
            record_id(&r, t, 7),
            "20250301T120000.123Z-42-_security_reviewer-7"
        );
    }
}
