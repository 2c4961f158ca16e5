//! A truncated answer kept whole as a deliberation record's response:
//! `jkz-truncate --record`, and the part of `jkz run` that keeps an answer.
//! The record of a pipe is the same record as `jkz run`'s ([`crate::run`]), without `command`, `exit_code`
//! and `duration_ms` (a pipe knows none of them); its status is `ok`, or
//! `failed` when the answer is empty or could not be read to its end.

use std::io::{Read, Write};
use std::path::Path;

use super::full_output::Keep;
use super::{KeptResponse, Mode, Settings, Summary};
use crate::deliberation::{self, verdict::OutputTail, Context, Record, Status, INLINE_MAX};
use crate::exit::Failure;
use crate::state_dir::StateDir;

/// Who answered, as the flags say.
#[derive(Clone, Debug, Default)]
pub struct Caller {
    pub context: Context,
    pub service: Option<String>,
    pub mode: Mode,
}

/// Who says the warnings.
const PROGRAM: &str = "jkz-truncate";

/// Truncates `input` into `output` as [`super::truncate`] does, keeping
/// the whole answer (the file the markers name) and one record of it in
/// `state/deliberations/`. A record or response that cannot be kept is a
/// one-line warning on stderr, never a lost output.
pub fn truncate_and_record(
    input: impl Read,
    output: impl Write,
    settings: &Settings,
    source: &str,
    warnings: &mut dyn Write,
    state: &StateDir,
    caller: &Caller,
) -> Result<Summary, Failure> {
    let started = chrono::Utc::now();
    let mut record = Record::new(&caller.context, Status::Ok, started);
    record.service = caller.service.clone();
    record.mode = Some(caller.mode.name().to_string());
    let id = deliberation::record_id(&record, started, std::process::id());
    let records = deliberation::records_dir(state, PROGRAM);
    let settings = Settings {
        full_output: response_keep(state, PROGRAM),
        ..settings.clone()
    };
    let mut output = OutputTail::new(output);
    let (streamed, kept) = super::truncate_keeping(input, &mut output, &settings, source, warnings);
    record.verdict = output.verdict();
    let read_to_its_end = match &kept {
        Some(Ok(k)) => k.stopped.is_none(),
        Some(Err(_)) => true,
        None => false,
    };
    let read = match &streamed {
        Ok(summary) => Some(summary.input_bytes),
        // The output failed after the whole input was read and kept.
        Err(_) if read_to_its_end => None,
        Err(_) => {
            record.status = Status::Failed;
            None
        }
    };
    if is_empty(kept.as_ref(), read) {
        record.status = Status::Failed;
    }
    set_response(&mut record, kept, PROGRAM);
    // Mined for patterns and feedback as it is written.
    if let Some(path) = deliberation::keep_record(records.as_deref(), &id, &record, PROGRAM) {
        crate::patterns::in_run::after_record(&path, &record, PROGRAM);
    }
    streamed
}

/// How the truncation engine keeps a response for a record (see
/// [`super::full_output`]): in the state directory's
/// `context-offload/`, inline up to [`INLINE_MAX`]. `None` when there is no
/// state directory, or (with a one-line warning from `program`) when
/// `context-offload/` cannot be made.
pub fn response_keep(state: &StateDir, program: &str) -> Option<Keep> {
    match state.ensure_subdir(crate::state_dir::layout::OFFLOAD_DIR) {
        Ok(offload) => offload.map(|offload| Keep::Response {
            offload,
            inline_max: INLINE_MAX,
        }),
        Err(e) => {
            eprintln!(
                "{program}: warning: {}: {e}; the full response cannot be kept",
                state.join(crate::state_dir::layout::OFFLOAD_DIR).display()
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
            record.response_incomplete = kept.incomplete();
            record.response_bytes = kept.bytes;
            record.response_sha256 = kept.sha256;
            record.response = kept.inline;
            record.response_file = kept.file.as_deref().and_then(Path::file_name).map(|name| {
                format!(
                    "{}/{}",
                    crate::state_dir::layout::OFFLOAD_DIR,
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
