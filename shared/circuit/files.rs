//! Circuits as files: `state/circuit/<service>.json`, the local backend.
//! Every change is a read-modify-write of the circuit file under its
//! writers' lock ([`crate::json_file::lock_within`]), logged to the event
//! log when the circuit opens or closes.

use std::io;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::record::{closed, parse_record, validate, Circuit, State};
use crate::atomic::write_atomic;
use crate::events::{emit, Event};
use crate::json_file::{lock_wait, lock_within};
use crate::state_dir::{read_whole_state_file, StateDir, CIRCUIT_DIR};

const MAX_CIRCUIT_FILE: u64 = 64 * 1024;

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

/// Reads a circuit file; a missing or unreadable-as-circuit file is a
/// closed circuit.
fn read(path: &Path, service: &str) -> io::Result<Circuit> {
    match read_whole_state_file(path, MAX_CIRCUIT_FILE) {
        Ok(bytes) => Ok(parse_record(&bytes, service)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(closed(service)),
        Err(e) => Err(e),
    }
}

fn write(path: &Path, circuit: &Circuit) -> io::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(circuit).map_err(io::Error::other)?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}

/// Applies `edit` to the circuit file of `service` (a valid name) under
/// its lock, writing it back when `edit` says it changed it.
pub fn update<T: Send + 'static>(
    state: &StateDir,
    service: &str,
    edit: impl FnOnce(&mut Circuit) -> (T, bool) + Send + 'static,
) -> io::Result<T> {
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

/// The circuits in `state/circuit/` (one, when `service` is given: a valid
/// name), by name.
pub fn status(state: &StateDir, service: Option<&str>) -> io::Result<Vec<Circuit>> {
    let dir = state.join(CIRCUIT_DIR);
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
