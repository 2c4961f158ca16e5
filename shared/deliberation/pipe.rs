//! `jkz-truncate --record`: the deliberation record of a pipe. The same
//! record as `jkz run`'s ([`crate::run`]), without `command`, `exit_code`
//! and `duration_ms` (a pipe knows none of them); its status is `ok`, or
//! `failed` when the answer is empty or could not be read to its end.

use std::io::{Read, Write};

use crate::exit::Failure;
use crate::state_dir::StateDir;
use crate::truncate::{self, Mode, Settings, Summary};

use super::{verdict::OutputTail, Context, Record, Status};

/// Who answered, as the flags say.
#[derive(Clone, Debug, Default)]
pub struct Caller {
    pub context: Context,
    pub service: Option<String>,
    pub mode: Mode,
}

/// Who says the warnings.
const PROGRAM: &str = "jkz-truncate";

/// Truncates `input` into `output` as [`truncate::truncate`] does, keeping
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
    let id = super::record_id(&record, started, std::process::id());
    let records = super::records_dir(state, PROGRAM);
    let settings = Settings {
        full_output: super::response_keep(state, PROGRAM),
        ..settings.clone()
    };
    let mut output = OutputTail::new(output);
    let (streamed, kept) =
        truncate::truncate_keeping(input, &mut output, &settings, source, warnings);
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
    if super::is_empty(kept.as_ref(), read) {
        record.status = Status::Failed;
    }
    super::set_response(&mut record, kept, PROGRAM);
    super::keep_record(records.as_deref(), &id, &record, PROGRAM);
    streamed
}
