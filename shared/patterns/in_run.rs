//! The two calls a deliberation makes into the patterns: before CMD starts,
//! the section `jkz run --inject-patterns` gives it; after a record is
//! written (`jkz run`, `jkz-truncate --record` call [`after_record`] with
//! its path), the mining of that record.
//!
//! Both fail open: a `memory.db` that cannot be used is a one-line warning,
//! and the run goes on (without patterns; the record is mined by the next
//! `jkz patterns mine`).

use std::io::Write;
use std::path::Path;

use chrono::{DateTime, Utc};

use super::inject::{self, Injection, Request};
use super::mine::{self, RecordFacts};
use super::store::Memory;
use crate::deliberation::{Context, Record};
use crate::state_dir::StateDir;

/// The environment variable naming the file that holds the section (for
/// wrappers that take the prompt as an argument).
pub const PATTERNS_FILE_VARIABLE: &str = "JKZ_PATTERNS_FILE";

/// What CMD gets.
#[derive(Debug, Default)]
pub struct Prepared {
    /// The section and a blank line, put before CMD's stdin (empty: none).
    pub stdin_prefix: Vec<u8>,
    /// The file [`PATTERNS_FILE_VARIABLE`] names: the section, or empty
    /// (removed when dropped).
    pub file: Option<tempfile::TempPath>,
    /// The ids injected, best first (`P12`, …).
    pub ids: Vec<String>,
}

/// The section for a run of `context` within `budget` bytes, logged as an
/// injection for its issue (recorded as `record`).
pub fn prepare(
    state: &StateDir,
    context: &Context,
    budget: usize,
    record: &str,
    started: DateTime<Utc>,
    program: &str,
) -> Prepared {
    let mut prepared = Prepared::default();
    let section = match section(state, context, budget, record, started, program) {
        Ok(Some((text, ids))) => {
            prepared.ids = inject::tags(&ids);
            text
        }
        Ok(None) => String::new(),
        Err(why) => {
            eprintln!("{program}: warning: {why}; CMD gets no patterns");
            String::new()
        }
    };
    let file = tempfile::Builder::new()
        .prefix("jkz-patterns-")
        .suffix(".md")
        .tempfile()
        .and_then(|mut f| {
            f.write_all(section.as_bytes())?;
            f.flush()?;
            Ok(f.into_temp_path())
        });
    match file {
        Ok(path) => prepared.file = Some(path),
        Err(e) => eprintln!(
            "{program}: warning: the file for {PATTERNS_FILE_VARIABLE} could not be written: {e}"
        ),
    }
    if !section.is_empty() {
        prepared.stdin_prefix = section.into_bytes();
        prepared.stdin_prefix.push(b'\n');
    }
    prepared
}

fn section(
    state: &StateDir,
    context: &Context,
    budget: usize,
    record: &str,
    started: DateTime<Utc>,
    program: &str,
) -> Result<Option<(String, Vec<i64>)>, String> {
    let memory = super::open(state, program, &mut std::io::stderr()).map_err(|e| e.message)?;
    let req = Request {
        role: context.role.as_deref(),
        issue: context.issue,
        budget,
        now: started,
        half_life: super::score::half_life(program),
    };
    match inject::compose(&memory, &req).map_err(|e| e.message)? {
        Injection::Section { text, ids } => {
            if let Err(e) = inject::record(
                &memory,
                &ids,
                context.issue,
                context.role.as_deref(),
                Some(record),
                started,
            ) {
                eprintln!(
                    "{program}: warning: the injection could not be logged ({e}); no verdict will judge it"
                );
            }
            Ok(Some((text, ids)))
        }
        Injection::Nothing => {
            eprintln!("{program}: no pattern to inject yet; CMD gets none");
            Ok(None)
        }
        Injection::TooSmall { needs } => {
            eprintln!(
                "{program}: a --pattern-budget of {budget} bytes is too small for one pattern (the smallest section needs {needs}); CMD gets none"
            );
            Ok(None)
        }
    }
}

/// Mines the record just written at `path` (see [`mine`]): its patterns
/// and its verdict's feedback. Opens `memory.db` only when the response
/// may hold either.
pub fn after_record(path: &Path, record: &Record, program: &str) {
    let (Some(dir), Some(id)) = (path.parent(), path.file_stem().and_then(|s| s.to_str())) else {
        return;
    };
    let Some(state) = dir.parent() else {
        return;
    };
    let text = match mine::response_text(state, record) {
        Ok(text) => text,
        Err(e) => {
            eprintln!(
                "{program}: warning: the response of {id} could not be read for patterns: {e}"
            );
            return;
        }
    };
    let candidates = super::extract::may_hold_patterns(&text);
    let verdict = mine::feedback_verdict(&text, record.issue);
    if !candidates && (verdict.is_none() || !Memory::db_path(state).exists()) {
        return;
    }
    let facts = RecordFacts::of(id, record);
    let mut warnings: Vec<String> = Vec::new();
    let result = super::open(&StateDir::at(state), program, &mut std::io::stderr()).and_then(|m| {
        m.write(|m| {
            mine::mine_one(m, &facts, &text, &mut |w| warnings.push(w)).map(|c| (c, Vec::new()))
        })
    });
    for w in warnings {
        eprintln!("{program}: warning: {w}");
    }
    if let Err(e) = result {
        eprintln!(
            "{program}: warning: {id} could not be mined for patterns ({e}); `jkz patterns mine` will"
        );
    }
}
