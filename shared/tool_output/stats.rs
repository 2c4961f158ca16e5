//! `jkz stats`: what the tool-output guard did, per tool and in total,
//! against what the client would have shown without it.
//!
//! `saved` is the client's bytes minus jkz's: negative when jkz showed more
//! than the client would have, which is the case for every output the
//! client cuts to its 2 KB preview (jkz then shows the head, the tail and
//! the protected blocks the preview drops, within the cap). `previewed`
//! counts those calls. Raw output the client would never have shown is no
//! saving and is not counted as one.

use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::ledger;
use crate::exit::Failure;
use crate::state_dir::{open_state_file, StateDir};
use crate::terminal_text::inert;
use crate::truncate::thousands;

/// `jkz stats`.
#[derive(clap::Args, Debug, Clone)]
pub struct StatsArgs {
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Exit code when the ledger could not be read or stdout written.
pub const EXIT_FAILURE: u8 = 1;

/// A ledger line longer than this is not one jkz wrote: skipped as bad.
const MAX_LINE: usize = 64 * 1024;

/// Sums over a set of calls.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    pub calls: u64,
    pub full_bytes: u64,
    pub client_bytes: u64,
    pub jkz_bytes: u64,
    pub saved_bytes: i64,
    /// Calls whose output the client would have cut to its 2 KB preview.
    pub previewed: u64,
    pub blocks_kept: u64,
    pub ms_total: u64,
}

impl Totals {
    fn add(&mut self, e: &Line) {
        self.calls += 1;
        self.full_bytes += e.full;
        self.client_bytes += e.client;
        self.jkz_bytes += e.jkz;
        self.saved_bytes += e.client as i64 - e.jkz as i64;
        self.previewed += u64::from(e.client < e.full);
        self.blocks_kept += e.blocks;
        self.ms_total += e.ms;
    }
}

/// The summary `jkz stats` prints.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Per tool, by name.
    pub tools: BTreeMap<String, Totals>,
    pub total: Totals,
    /// Lines that are not ledger entries (skipped).
    pub bad_lines: u64,
}

/// The fields of a ledger line the summary needs (the rest is skipped).
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow)]
    tool: std::borrow::Cow<'a, str>,
    full: u64,
    client: u64,
    jkz: u64,
    blocks: u64,
    ms: u64,
}

/// Summarizes the ledger files under `state` (see [`ledger::files`]).
pub fn summarize(state: &Path) -> io::Result<Summary> {
    let mut summary = Summary::default();
    let mut buf = Vec::with_capacity(512);
    for path in ledger::files(state) {
        let mut reader = BufReader::with_capacity(1 << 16, open_state_file(&path)?);
        loop {
            buf.clear();
            let n = read_line(&mut reader, &mut buf)?;
            if n == 0 {
                break;
            }
            let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
            if line.is_empty() {
                continue;
            }
            match serde_json::from_slice::<Line>(line) {
                Ok(e) if n <= MAX_LINE => {
                    summary.total.add(&e);
                    match summary.tools.get_mut(e.tool.as_ref()) {
                        Some(t) => t.add(&e),
                        None => {
                            let mut t = Totals::default();
                            t.add(&e);
                            summary.tools.insert(e.tool.into_owned(), t);
                        }
                    }
                }
                _ => summary.bad_lines += 1,
            }
        }
    }
    Ok(summary)
}

/// Reads one line into `buf`, keeping at most [`MAX_LINE`] + 1 of its
/// bytes; returns the bytes consumed (0 at the end).
fn read_line(reader: &mut impl BufRead, buf: &mut Vec<u8>) -> io::Result<usize> {
    let mut consumed = 0;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(consumed);
        }
        let (take, done) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = (MAX_LINE + 1).saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..take.min(room)]);
        reader.consume(take);
        consumed += take;
        if done {
            return Ok(consumed);
        }
    }
}

/// `jkz stats`: prints the summary of `state`'s ledger.
pub fn stats(args: &StatsArgs, state: &StateDir, out: &mut impl Write) -> Result<u8, Failure> {
    let summary = summarize(state.path()).map_err(|e| {
        Failure::io(
            EXIT_FAILURE,
            format_args!("reading the ledger in {}", state.path().display()),
            e,
        )
    })?;
    let written = if args.json {
        serde_json::to_writer_pretty(&mut *out, &summary)
            .map_err(io::Error::other)
            .and_then(|_| writeln!(out))
    } else {
        write_table(&summary, out)
    };
    written
        .and_then(|_| out.flush())
        .map_err(|e| Failure::io(EXIT_FAILURE, "writing stdout", e))?;
    Ok(0)
}

fn write_table(s: &Summary, out: &mut impl Write) -> io::Result<()> {
    if s.total.calls == 0 {
        writeln!(
            out,
            "No guarded tool calls recorded (the ledger is state/{}).",
            crate::state_dir::layout::TOOL_OUTPUT_LEDGER
        )?;
        return Ok(());
    }
    let header = [
        "TOOL",
        "CALLS",
        "FULL",
        "CLIENT",
        "JKZ",
        "SAVED",
        "PREVIEWED",
        "BLOCKS",
    ];
    let mut rows: Vec<[String; 8]> = vec![header.map(str::to_string)];
    let row = |name: &str, t: &Totals| {
        let saved = if t.saved_bytes < 0 {
            format!("-{}", thousands(t.saved_bytes.unsigned_abs()))
        } else {
            thousands(t.saved_bytes as u64)
        };
        [
            name.to_string(),
            thousands(t.calls),
            thousands(t.full_bytes),
            thousands(t.client_bytes),
            thousands(t.jkz_bytes),
            saved,
            thousands(t.previewed),
            thousands(t.blocks_kept),
        ]
    };
    for (name, t) in &s.tools {
        // A tool's name is whatever the client's hook input said.
        rows.push(row(&inert(name), t));
    }
    rows.push(row("total", &s.total));
    let widths: Vec<usize> = (0..8)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    for r in &rows {
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if i == 0 {
                    format!("{c:<w$}", w = widths[i])
                } else {
                    format!("{c:>w$}", w = widths[i])
                }
            })
            .collect();
        writeln!(out, "{}", cells.join("  "))?;
    }
    writeln!(
        out,
        "Bytes in the model's window: CLIENT without jkz, JKZ with it; SAVED = CLIENT - JKZ \
         (negative: jkz showed head, tail and protected blocks where the client showed a \
         2 KB preview; PREVIEWED counts those calls)."
    )?;
    if s.bad_lines > 0 {
        writeln!(
            out,
            "{} ledger lines could not be read and were skipped.",
            s.bad_lines
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool_output::ledger::{append, Entry};

    fn entry(tool: &str, full: u64, client: u64, jkz: u64) -> Entry {
        Entry {
            ts: "t".into(),
            tool: tool.into(),
            call: "c".into(),
            full,
            client,
            jkz,
            blocks: 1,
            ms: 2,
            ..Entry::default()
        }
    }

    #[test]
    fn sums_per_tool_and_in_total_against_the_client() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        append(&state, &entry("Bash", 400_000, 2_248, 19_990)).unwrap();
        append(&state, &entry("Bash", 25_000, 25_000, 19_990)).unwrap();
        append(&state, &entry("Read", 90_000, 90_000, 19_000)).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(state.join(crate::state_dir::layout::TOOL_OUTPUT_LEDGER))
            .unwrap()
            .write_all(b"not json\n{\"tool\":1}\n\n")
            .unwrap();
        let s = summarize(tmp.path()).unwrap();
        let bash = &s.tools["Bash"];
        assert_eq!(bash.calls, 2);
        assert_eq!(bash.client_bytes, 27_248);
        assert_eq!(bash.saved_bytes, 27_248 - 39_980);
        assert_eq!(bash.previewed, 1);
        assert_eq!(s.tools["Read"].saved_bytes, 71_000);
        assert_eq!(s.total.calls, 3);
        assert_eq!(s.total.saved_bytes, 27_248 - 39_980 + 71_000);
        assert_eq!(s.bad_lines, 2);

        let mut text = Vec::new();
        stats(&StatsArgs { json: false }, &state, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("-12,732"), "{text}");
        let mut json = Vec::new();
        stats(&StatsArgs { json: true }, &state, &mut json).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(v["total"]["saved_bytes"], 27_248 - 39_980 + 71_000);
        assert_eq!(v["tools"]["Read"]["calls"], 1);
    }

    #[test]
    fn an_empty_state_directory_has_nothing_to_say() {
        let tmp = tempfile::tempdir().unwrap();
        let mut text = Vec::new();
        stats(
            &StatsArgs { json: false },
            &StateDir::at(tmp.path()),
            &mut text,
        )
        .unwrap();
        assert!(String::from_utf8(text).unwrap().starts_with("No guarded"));
    }

    #[test]
    fn an_overlong_line_is_skipped_not_held() {
        let mut long = vec![b'x'; 3 * MAX_LINE];
        long.extend_from_slice(b"\n{}\n");
        let mut r = BufReader::with_capacity(7, &long[..]);
        let mut buf = Vec::new();
        assert_eq!(read_line(&mut r, &mut buf).unwrap(), 3 * MAX_LINE + 1);
        assert_eq!(buf.len(), MAX_LINE + 1);
        buf.clear();
        assert_eq!(read_line(&mut r, &mut buf).unwrap(), 3);
        assert_eq!(buf, b"{}\n");
    }
}
