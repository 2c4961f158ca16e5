//! `jkz deliberations list` and `jkz deliberations show`.
//!
//! An agent's answer and every field of its record are text from outside:
//! the list shows them through [`inert`], and `show` prints the answer
//! byte for byte into a pipe or a file but, to a terminal, through
//! [`InertWriter`] (its lines kept, every control character shown).
//!
//! Exit codes: 0 success; 1 an I/O error, or a response that does not match
//! its record's sha256 (nothing of it is printed); 2 usage; 3 no record
//! matches; 4 no state directory.

use std::io::{self, IsTerminal, Read, Write};
use std::path::Path;

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

use super::index::{self, Entry};
use super::response::hex;
use crate::exit::{Failure, EXIT_OK};
use crate::state_dir::{open_state_file, StateDir, DELIBERATIONS_DIR};
use crate::terminal_text::{inert, inert_lines, InertWriter};

/// `jkz deliberations`' exit code for an I/O error, or a response that
/// does not match its record (docs/exit-codes.md).
pub const EXIT_FAILED: u8 = 1;

/// `jkz deliberations`' exit code when no record matches.
pub const EXIT_NOT_FOUND: u8 = 3;

#[derive(clap::Subcommand, Debug, Clone)]
pub enum DeliberationsCommand {
    /// A table of the records (time, issue, role, phase, iteration, status,
    /// verdict, response size, id), oldest first.
    List(ListArgs),
    /// Print one record's full response, byte for byte, verified against its
    /// sha256: by id, or the newest matching --issue/--role/--iteration.
    Show(ShowArgs),
}

/// `jkz deliberations`: the audit trail of agent invocations.
#[derive(clap::Args, Debug, Clone)]
pub struct DeliberationsArgs {
    #[command(subcommand)]
    pub command: DeliberationsCommand,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ListArgs {
    #[arg(long, value_name = "N")]
    pub issue: Option<u64>,
    #[arg(long, value_name = "R")]
    pub role: Option<String>,
    #[arg(long, value_name = "P")]
    pub phase: Option<String>,
    /// Only records from WHEN on: a span back from now (30m, 2h, 7d), a
    /// date (2026-11-27: its midnight, UTC) or an RFC 3339 time.
    #[arg(long, value_name = "WHEN", value_parser = crate::time_span::point_arg)]
    pub since: Option<DateTime<Utc>>,
    /// Only records before WHEN: the same forms as --since.
    #[arg(long, value_name = "WHEN", value_parser = crate::time_span::point_arg)]
    pub until: Option<DateTime<Utc>>,
    /// One JSON array of the index entries instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ShowArgs {
    /// A record id (its file name, with or without `.json`).
    #[arg(value_name = "ID", conflicts_with_all = ["issue", "role", "iteration"], required_unless_present = "issue")]
    pub id: Option<String>,
    #[arg(long, value_name = "N")]
    pub issue: Option<u64>,
    #[arg(long, value_name = "R")]
    pub role: Option<String>,
    #[arg(long, value_name = "K")]
    pub iteration: Option<u64>,
}

fn entries(state: &StateDir, warnings: &mut dyn Write) -> Result<Vec<Entry>, Failure> {
    let dir = state.join(DELIBERATIONS_DIR);
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    index::load(&dir, warnings)
        .map_err(|e| Failure::io(EXIT_FAILED, format!("reading {}", dir.display()), e))
}

/// `jkz deliberations list`.
pub fn list(
    args: &ListArgs,
    state: &StateDir,
    out: &mut dyn Write,
    warnings: &mut dyn Write,
) -> Result<u8, Failure> {
    crate::time_span::check_window(args.since, args.until)
        .map_err(|e| Failure::new(crate::exit::EXIT_USAGE, e))?;
    let all = entries(state, warnings)?;
    let chosen: Vec<&Entry> = all
        .iter()
        .filter(|e| args.issue.is_none_or(|n| e.issue == Some(n)))
        .filter(|e| {
            args.role
                .as_ref()
                .is_none_or(|r| e.role.as_ref() == Some(r))
        })
        .filter(|e| {
            args.phase
                .as_ref()
                .is_none_or(|p| e.phase.as_ref() == Some(p))
        })
        .filter(|e| {
            let at = DateTime::parse_from_rfc3339(&e.timestamp);
            args.since.is_none_or(|since| at.is_ok_and(|t| t >= since))
                && args.until.is_none_or(|until| at.is_ok_and(|t| t < until))
        })
        .collect();
    let writing = |e| Failure::io(EXIT_FAILED, "writing stdout", e);
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &chosen).map_err(|e| writing(e.into()))?;
        writeln!(out).map_err(writing)?;
        return out.flush().map(|()| EXIT_OK).map_err(writing);
    }
    let dash = || "-".to_string();
    let opt = |v: Option<u64>| v.map_or_else(dash, |n| n.to_string());
    let text = |v: &Option<String>| v.as_deref().map_or_else(dash, |s| inert(s).into_owned());
    let mut rows = vec![[
        "TIME", "ISSUE", "ROLE", "PHASE", "ITER", "STATUS", "VERDICT", "SIZE", "ID",
    ]
    .map(String::from)];
    for e in &chosen {
        rows.push([
            inert(e.timestamp.get(..19).unwrap_or(&e.timestamp)).replace('T', " "),
            opt(e.issue),
            text(&e.role),
            text(&e.phase),
            opt(e.iteration),
            e.status.name().to_string(),
            text(&e.verdict),
            crate::thousands::thousands(e.bytes),
            inert(&e.id).into_owned(),
        ]);
    }
    let mut widths = [0usize; 9];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in &rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i == 8 {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$}  ", w = widths[i]));
            }
        }
        writeln!(out, "{}", line.trim_end()).map_err(writing)?;
    }
    out.flush().map_err(writing)?;
    Ok(EXIT_OK)
}

/// `jkz deliberations show`.
pub fn show(
    args: &ShowArgs,
    state: &StateDir,
    out: &mut dyn Write,
    warnings: &mut dyn Write,
) -> Result<u8, Failure> {
    let dir = state.join(DELIBERATIONS_DIR);
    let id = match &args.id {
        Some(id) => {
            let name = Path::new(id)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            name.trim_end_matches(".json").to_string()
        }
        None => {
            let all = entries(state, warnings)?;
            let matching: Vec<&Entry> = all
                .iter()
                .filter(|e| e.issue == args.issue)
                .filter(|e| {
                    args.role
                        .as_ref()
                        .is_none_or(|r| e.role.as_ref() == Some(r))
                })
                .filter(|e| args.iteration.is_none_or(|k| e.iteration == Some(k)))
                .collect();
            let Some(newest) = matching.last() else {
                return Err(Failure::new(
                    EXIT_NOT_FOUND,
                    "no deliberation record matches",
                ));
            };
            if matching.len() > 1 {
                let _ = writeln!(
                    warnings,
                    "jkz deliberations: {} records match; showing the newest, {} (list them with `jkz deliberations list --issue N`)",
                    matching.len(),
                    inert(&newest.id)
                );
            }
            newest.id.clone()
        }
    };
    let record = match index::read_record(&dir, &id) {
        Ok(r) => r,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(Failure::new(
                EXIT_NOT_FOUND,
                format!("no deliberation record {id} in {}", dir.display()),
            ))
        }
        Err(e) => return Err(Failure::io(EXIT_FAILED, format!("reading {id}"), e)),
    };
    let writing = |e| Failure::io(EXIT_FAILED, "writing stdout", e);
    let mismatch = |what: &str| {
        Failure::new(
            EXIT_FAILED,
            format!(
                "the response of {id} ({what}) does not match its record (sha256 {}, {} bytes): not printed",
                record.response_sha256, record.response_bytes
            ),
        )
    };
    let to_terminal = io::stdout().is_terminal();
    if let Some(text) = &record.response {
        if hex(&Sha256::digest(text.as_bytes())) != record.response_sha256
            || text.len() as u64 != record.response_bytes
        {
            return Err(mismatch("inline"));
        }
        let shown = if to_terminal {
            inert_lines(text)
        } else {
            text.into()
        };
        out.write_all(shown.as_bytes()).map_err(writing)?;
        return out.flush().map(|()| EXIT_OK).map_err(writing);
    }
    let Some(file) = &record.response_file else {
        return Err(Failure::new(
            EXIT_FAILED,
            format!(
                "{id} keeps no response ({})",
                record
                    .response_error
                    .as_deref()
                    .unwrap_or("none was recorded")
            ),
        ));
    };
    // Only a kept response in context-offload/ is ever named; anything else
    // is refused.
    let path = super::response::response_path(state, file)
        .map_err(|e| Failure::new(EXIT_FAILED, format!("{id}: {e}")))?;
    let open = || {
        open_state_file(&path)
            .map_err(|e| Failure::io(EXIT_FAILED, format!("reading {}", path.display()), e))
    };
    // Verified first, printed second: a damaged answer is never half printed.
    let (sha, len) = copy(open()?, &mut io::sink())
        .map_err(|e| Failure::io(EXIT_FAILED, format!("reading {}", path.display()), e))?;
    if sha != record.response_sha256 || len != record.response_bytes {
        return Err(mismatch(file));
    }
    let (sha, _) = if to_terminal {
        let mut shown = InertWriter::new(&mut *out);
        let copied = copy(open()?, &mut shown).map_err(writing)?;
        shown.finish().map_err(writing)?;
        copied
    } else {
        copy(open()?, out).map_err(writing)?
    };
    if sha != record.response_sha256 {
        return Err(mismatch("changed while printed"));
    }
    out.flush().map_err(writing)?;
    Ok(EXIT_OK)
}

/// Copies `from` to `to`, returning its sha256 and length.
fn copy(mut from: impl Read, to: &mut dyn Write) -> io::Result<(String, u64)> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
        to.write_all(&buf[..n])?;
        total += n as u64;
    }
    Ok((hex(&hasher.finalize()), total))
}
