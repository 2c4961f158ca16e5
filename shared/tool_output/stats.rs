//! `jkz stats`: what jkz did to tool output, per tool, per family of
//! command, per command and in total, against what the client would have
//! shown without it.
//!
//! `saved` is the client's bytes minus jkz's, counted against the client's
//! own view, never the raw size: output the client would have cut anyway is
//! no saving. It is negative when jkz showed more than the client would
//! have (for an output the client cuts to its 2 KB preview, jkz may show
//! the tail and the protected blocks the preview drops), and stays
//! negative: it is never clamped to 0. Token figures are estimates, the
//! bytes divided by 4, and are labelled so.
//!
//! A line written before the ledger had a field counts as unknown there:
//! its family and path are `-`, its signal lines are left out of the
//! signal sums (which cover only the calls that report them).

mod command;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Write};
use std::path::Path;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};

use super::ledger;
use crate::exit::Failure;
use crate::state_dir::{open_state_file, StateDir};
use crate::terminal_text::inert;
use crate::truncate::thousands;

pub use self::command::key as command_key;

/// `jkz stats`.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = AFTER_HELP)]
pub struct StatsArgs {
    /// Group the table by tool, by the reduction engine's family of
    /// command (tests, builds, git-log, …; `-` when unknown), or by command
    /// (the program and its subcommand: `cargo test`, `git log`).
    #[arg(long, value_enum, value_name = "GROUPING", default_value_t = GroupBy::Tool)]
    pub by: GroupBy,
    /// Only calls from WHEN on: a span back from now (30m, 2h, 7d), a date
    /// (2026-11-27: its midnight, UTC) or an RFC 3339 time. Lines without a
    /// readable time are left out too.
    #[arg(long, value_name = "WHEN", value_parser = crate::time_span::point_arg)]
    pub since: Option<DateTime<Utc>>,
    /// Only calls before WHEN: the same forms as --since.
    #[arg(long, value_name = "WHEN", value_parser = crate::time_span::point_arg)]
    pub until: Option<DateTime<Utc>>,
    /// Print the summary as JSON, with every grouping (tools, families,
    /// commands) whatever --by says.
    #[arg(long)]
    pub json: bool,
}

/// How the table groups the calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum GroupBy {
    /// The tool's name: Bash, Read, Grep, mcp__….
    Tool,
    /// The reduction engine's family: tests, builds, installs, git-log, git, listings, logs, generic.
    Family,
    /// The program, and its subcommand for programs that have them.
    Command,
}

const AFTER_HELP: &str = "\
The columns, in bytes of what enters the model's window:
  RAW        the tool's whole output
  CLIENT     what the client alone would have shown, by its own rules (inline up
             to its limit, else a ~2 KB preview; ~10,000 characters of a failing
             command) - never the raw size
  JKZ        what jkz showed
  SAVED      CLIENT - JKZ: counted against the client's own view, so output the
             client would have cut anyway is no saving; negative when jkz added
             text (showed more than the client would have)
  SAVED%     SAVED / CLIENT
  ≈TOKENS    SAVED / 4: bytes/4, an estimate, not a tokenizer's count
  PREVIEWED  calls the client would have cut (CLIENT < RAW)
  REPEATS    calls whose output repeated an earlier call's and became a pointer
  SIGNALS    signal lines shown / found, over the calls that report them

The ledger is state/tool-output.jsonl (and tool-output.1.jsonl, its older part).";

/// Exit code when the ledger could not be read or stdout written.
pub const EXIT_FAILURE: u8 = 1;

/// The family or path of a line that does not say.
pub const UNKNOWN: &str = "-";

/// A ledger line longer than this is not one jkz wrote: skipped as bad.
const MAX_LINE: usize = 64 * 1024;

/// Sums over a set of calls.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Totals {
    pub calls: u64,
    pub full_bytes: u64,
    /// What the client alone would have shown.
    pub client_bytes: u64,
    /// What jkz showed.
    pub jkz_bytes: u64,
    /// `client_bytes − jkz_bytes`: negative when jkz added text.
    pub saved_bytes: i64,
    /// `saved_bytes` per 100 `client_bytes`, to one decimal; `None` without any.
    pub saved_percent: Option<f64>,
    /// `saved_bytes / 4`: an estimate of tokens, not a tokenizer's count.
    pub saved_tokens_estimate: i64,
    /// Calls whose output the client would have cut (to its preview).
    pub previewed: u64,
    /// Calls whose output repeated an earlier call's and became a pointer.
    pub repeats: u64,
    /// Calls that reported their signal lines; `signals` and
    /// `signals_shown` sum over these only.
    pub signal_calls: u64,
    pub signals: u64,
    pub signals_shown: u64,
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
        self.saved_tokens_estimate = self.saved_bytes / 4;
        self.saved_percent = (self.client_bytes > 0)
            .then(|| (self.saved_bytes as f64 * 1000.0 / self.client_bytes as f64).round() / 10.0);
        self.previewed += u64::from(e.client < e.full);
        self.repeats += u64::from(e.repeat);
        if let (Some(found), Some(shown)) = (e.signals, e.signals_shown) {
            self.signal_calls += 1;
            self.signals += found;
            self.signals_shown += shown;
        }
        self.blocks_kept += e.blocks;
        self.ms_total += e.ms;
    }
}

/// The summary `jkz stats` prints.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    /// The window's start (RFC 3339); `None`: from the ledger's start.
    pub since: Option<String>,
    /// The window's end (RFC 3339), left out; `None`: to the ledger's end.
    pub until: Option<String>,
    /// Per tool, by name.
    pub tools: BTreeMap<String, Totals>,
    /// Per family of command (`-`: unknown).
    pub families: BTreeMap<String, Totals>,
    /// Per command ([`command_key`]).
    pub commands: BTreeMap<String, Totals>,
    pub total: Totals,
    /// Lines that are not ledger entries (skipped).
    pub bad_lines: u64,
    /// Calls before the window (left out).
    pub before_window: u64,
    /// Calls at or after the window's end (left out).
    pub after_window: u64,
    /// Lines without a readable time, left out of a window.
    pub undated: u64,
}

impl Summary {
    fn groups(&self, by: GroupBy) -> &BTreeMap<String, Totals> {
        match by {
            GroupBy::Tool => &self.tools,
            GroupBy::Family => &self.families,
            GroupBy::Command => &self.commands,
        }
    }
}

/// Sums per family and path (`via`), for counters: the key is
/// `(family, via)`, each `-` when the line does not say.
pub type ByFamilyAndVia = BTreeMap<(String, String), Totals>;

/// The fields of a ledger line the summary needs (the rest is skipped).
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(default)]
    ts: Option<String>,
    #[serde(borrow)]
    tool: Cow<'a, str>,
    #[serde(default)]
    call: Option<String>,
    full: u64,
    client: u64,
    jkz: u64,
    blocks: u64,
    ms: u64,
    #[serde(default)]
    via: Option<String>,
    #[serde(default)]
    family: Option<String>,
    #[serde(default)]
    signals: Option<u64>,
    #[serde(default)]
    signals_shown: Option<u64>,
    #[serde(default)]
    repeat: bool,
}

fn add_to(groups: &mut BTreeMap<String, Totals>, key: &str, e: &Line) {
    match groups.get_mut(key) {
        Some(t) => t.add(e),
        None => groups.entry(key.to_string()).or_default().add(e),
    }
}

/// Summarizes the whole ledger under `state` (see [`ledger::files`]).
pub fn summarize(state: &Path) -> io::Result<Summary> {
    summarize_since(state, None)
}

/// Summarizes the calls from `since` on (every call when `None`).
pub fn summarize_since(state: &Path, since: Option<DateTime<Utc>>) -> io::Result<Summary> {
    summarize_window(state, since, None)
}

/// Summarizes the calls from `since` on and before `until` (every call
/// when both are `None`).
pub fn summarize_window(
    state: &Path,
    since: Option<DateTime<Utc>>,
    until: Option<DateTime<Utc>>,
) -> io::Result<Summary> {
    let mut s = Summary {
        since: since.map(|t| t.to_rfc3339_opts(SecondsFormat::Secs, true)),
        until: until.map(|t| t.to_rfc3339_opts(SecondsFormat::Secs, true)),
        ..Summary::default()
    };
    let bad_lines = read_lines(state, |e| {
        if since.is_some() || until.is_some() {
            match e.ts.as_deref().map(DateTime::parse_from_rfc3339) {
                Some(Ok(ts)) if since.is_some_and(|since| ts < since) => {
                    s.before_window += 1;
                    return;
                }
                Some(Ok(ts)) if until.is_some_and(|until| ts >= until) => {
                    s.after_window += 1;
                    return;
                }
                Some(Ok(_)) => {}
                _ => {
                    s.undated += 1;
                    return;
                }
            }
        }
        s.total.add(e);
        add_to(&mut s.tools, &e.tool, e);
        add_to(&mut s.families, e.family.as_deref().unwrap_or(UNKNOWN), e);
        let call = e.call.as_deref().unwrap_or(&e.tool);
        add_to(&mut s.commands, &command_key(call), e);
    })?;
    s.bad_lines = bad_lines;
    Ok(s)
}

/// Sums the whole ledger per family and path.
pub fn by_family_and_via(state: &Path) -> io::Result<ByFamilyAndVia> {
    let mut sums = ByFamilyAndVia::new();
    read_lines(state, |e| {
        let key = (
            e.family.as_deref().unwrap_or(UNKNOWN).to_string(),
            e.via.as_deref().unwrap_or(UNKNOWN).to_string(),
        );
        sums.entry(key).or_default().add(e);
    })?;
    Ok(sums)
}

/// Hands each ledger line under `state` to `each`, older file first;
/// returns how many lines were not ledger entries.
fn read_lines(state: &Path, mut each: impl FnMut(&Line)) -> io::Result<u64> {
    let mut bad = 0;
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
                Ok(e) if n <= MAX_LINE => each(&e),
                _ => bad += 1,
            }
        }
    }
    Ok(bad)
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
    crate::time_span::check_window(args.since, args.until)
        .map_err(|e| Failure::new(crate::exit::EXIT_USAGE, e))?;
    let summary = summarize_window(state.path(), args.since, args.until).map_err(|e| {
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
        write_table(&summary, args.by, out)
    };
    written
        .and_then(|_| out.flush())
        .map_err(|e| Failure::io(EXIT_FAILURE, "writing stdout", e))?;
    Ok(0)
}

/// `n` with thousands separators and its sign.
fn signed(n: i64) -> String {
    match n < 0 {
        true => format!("-{}", thousands(n.unsigned_abs())),
        false => thousands(n.unsigned_abs()),
    }
}

const COLUMNS: usize = 11;

fn cells(name: &str, t: &Totals) -> [String; COLUMNS] {
    [
        name.to_string(),
        thousands(t.calls),
        thousands(t.full_bytes),
        thousands(t.client_bytes),
        thousands(t.jkz_bytes),
        signed(t.saved_bytes),
        t.saved_percent
            .map_or_else(|| UNKNOWN.to_string(), |p| format!("{p:.1}%")),
        signed(t.saved_tokens_estimate),
        thousands(t.previewed),
        thousands(t.repeats),
        match t.signal_calls {
            0 => UNKNOWN.to_string(),
            _ => format!("{}/{}", thousands(t.signals_shown), thousands(t.signals)),
        },
    ]
}

fn write_table(s: &Summary, by: GroupBy, out: &mut impl Write) -> io::Result<()> {
    let ledger = crate::state_dir::layout::TOOL_OUTPUT_LEDGER;
    if s.total.calls == 0 {
        match (&s.since, &s.until) {
            (None, None) => writeln!(
                out,
                "No guarded tool calls recorded (the ledger is state/{ledger})."
            )?,
            (Some(since), None) => writeln!(
                out,
                "No guarded tool calls since {since} ({} earlier in state/{ledger}).",
                thousands(s.before_window)
            )?,
            (since, Some(until)) => {
                writeln!(
                out,
                "No guarded tool calls {}before {until} ({} earlier, {} later in state/{ledger}).",
                since.as_ref().map(|t| format!("from {t} ")).unwrap_or_default(),
                thousands(s.before_window),
                thousands(s.after_window)
            )?
            }
        }
        return write_left_out(s, out);
    }
    let name = match by {
        GroupBy::Tool => "TOOL",
        GroupBy::Family => "FAMILY",
        GroupBy::Command => "COMMAND",
    };
    let header = [
        name,
        "CALLS",
        "RAW",
        "CLIENT",
        "JKZ",
        "SAVED",
        "SAVED%",
        "≈TOKENS",
        "PREVIEWED",
        "REPEATS",
        "SIGNALS",
    ];
    let mut rows: Vec<[String; COLUMNS]> = vec![header.map(str::to_string)];
    // The most used first: with --by command the table can be long.
    let mut groups: Vec<(&String, &Totals)> = s.groups(by).iter().collect();
    groups.sort_by(|a, b| b.1.calls.cmp(&a.1.calls).then_with(|| a.0.cmp(b.0)));
    for (name, t) in groups {
        // A name is whatever the ledger holds: the client's tool name, a command.
        rows.push(cells(&inert(name), t));
    }
    rows.push(cells("total", &s.total));
    let widths: Vec<usize> = (0..COLUMNS)
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
        "Bytes in the model's window. CLIENT: what the client alone would have shown \
         (never the raw size); JKZ: what jkz showed.\n\
         SAVED = CLIENT - JKZ, negative where jkz added text; ≈TOKENS = SAVED / 4 \
         (bytes/4, an estimate). More: jkz stats --help."
    )?;
    match (&s.since, &s.until) {
        (None, None) => {}
        (Some(since), None) => writeln!(
            out,
            "Calls since {since}; {} earlier left out.",
            thousands(s.before_window)
        )?,
        (since, Some(until)) => writeln!(
            out,
            "Calls {}before {until}; {} earlier, {} later left out.",
            since
                .as_ref()
                .map(|t| format!("from {t} "))
                .unwrap_or_default(),
            thousands(s.before_window),
            thousands(s.after_window)
        )?,
    }
    write_left_out(s, out)
}

/// Says which lines the summary could not count.
fn write_left_out(s: &Summary, out: &mut impl Write) -> io::Result<()> {
    if s.undated > 0 {
        writeln!(
            out,
            "{} ledger lines have no readable time and were left out of the window.",
            thousands(s.undated)
        )?;
    }
    if s.bad_lines > 0 {
        writeln!(
            out,
            "{} ledger lines could not be read and were skipped.",
            thousands(s.bad_lines)
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

    fn args(by: GroupBy, json: bool) -> StatsArgs {
        StatsArgs {
            by,
            since: None,
            until: None,
            json,
        }
    }

    fn run(args: &StatsArgs, state: &StateDir) -> String {
        let mut out = Vec::new();
        assert_eq!(stats(args, state, &mut out).unwrap(), 0);
        String::from_utf8(out).unwrap()
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

        let text = run(&args(GroupBy::Tool, false), &state);
        assert!(text.contains("-12,732"), "{text}");
        assert!(text.contains("2 ledger lines could not be read"), "{text}");
        let json = run(&args(GroupBy::Tool, true), &state);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["total"]["saved_bytes"], 27_248 - 39_980 + 71_000);
        assert_eq!(v["tools"]["Read"]["calls"], 1);
        assert_eq!(v["bad_lines"], 2);
    }

    #[test]
    fn negative_savings_stay_negative_in_bytes_percent_and_tokens() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        // The client would have shown a 2,000-byte preview; jkz showed 10,002.
        append(&state, &entry("Bash", 400_000, 2_000, 10_002)).unwrap();
        let t = summarize(tmp.path()).unwrap().total;
        assert_eq!(t.saved_bytes, -8_002);
        assert_eq!(t.saved_tokens_estimate, -2_000);
        assert_eq!(t.saved_percent, Some(-400.1));
        let text = run(&args(GroupBy::Tool, false), &state);
        let bash = text.lines().find(|l| l.starts_with("Bash")).unwrap();
        let cells: Vec<&str> = bash.split_whitespace().collect();
        assert_eq!(
            cells,
            [
                "Bash", "1", "400,000", "2,000", "10,002", "-8,002", "-400.1%", "-2,000", "1", "0",
                "-"
            ],
            "{text}"
        );
        let v: serde_json::Value =
            serde_json::from_str(&run(&args(GroupBy::Tool, true), &state)).unwrap();
        assert_eq!(v["total"]["saved_bytes"], -8_002);
        assert_eq!(v["total"]["saved_tokens_estimate"], -2_000);
    }

    #[test]
    fn a_call_the_client_shows_nothing_of_has_no_percentage() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        append(&state, &entry("Bash", 0, 0, 0)).unwrap();
        let t = summarize(tmp.path()).unwrap().total;
        assert_eq!((t.saved_bytes, t.saved_percent), (0, None));
    }

    #[test]
    fn groups_by_family_with_lines_that_do_not_say_as_unknown() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        let reduced = |family: &str, client, jkz, signals, shown, repeat| Entry {
            family: Some(family.into()),
            via: Some("wrap".into()),
            exit: Some(101),
            signals: Some(signals),
            signals_shown: Some(shown),
            repeat,
            ..entry("Bash", 50_000, client, jkz)
        };
        append(&state, &reduced("test", 10_000, 2_500, 12, 12, false)).unwrap();
        append(&state, &reduced("test", 10_000, 60, 12, 12, true)).unwrap();
        append(&state, &reduced("build", 30_000, 9_000, 400, 250, false)).unwrap();
        // Written before families existed: unknown, and no signal counts.
        append(&state, &entry("Bash", 40_000, 2_000, 19_000)).unwrap();
        let s = summarize(tmp.path()).unwrap();
        assert_eq!(
            s.families.keys().collect::<Vec<_>>(),
            ["-", "build", "test"]
        );
        let test = &s.families["test"];
        assert_eq!(test.calls, 2);
        assert_eq!(test.saved_bytes, 20_000 - 2_560);
        assert_eq!(test.repeats, 1);
        assert_eq!(
            (test.signal_calls, test.signals_shown, test.signals),
            (2, 24, 24)
        );
        let unknown = &s.families[UNKNOWN];
        assert_eq!(unknown.saved_bytes, -17_000);
        assert_eq!(unknown.signal_calls, 0);
        // The total's signals cover only the calls that report them.
        assert_eq!(s.total.signal_calls, 3);
        assert_eq!((s.total.signals_shown, s.total.signals), (274, 424));

        let text = run(&args(GroupBy::Family, false), &state);
        let rows: Vec<Vec<&str>> = text
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(rows[0][0], "FAMILY");
        assert_eq!(rows[1][0], "test", "the most used first:\n{text}");
        assert_eq!(rows[1][10], "24/24");
        let build = rows.iter().find(|r| r[0] == "build").unwrap();
        assert_eq!(build[10], "250/400");
        let unknown = rows.iter().find(|r| r[0] == "-").unwrap();
        assert_eq!((unknown[5], unknown[10]), ("-17,000", "-"));
    }

    #[test]
    fn the_table_stays_aligned() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        for (call, full, client, jkz) in [
            ("cargo test --locked", 400_000, 2_248, 19_990),
            ("git log -n 200", 136_229, 2_100, 30_000),
            ("ls", 1_000, 1_000, 1_000),
            ("cargo test -p x", 9_000_000, 2_000, 9_000),
        ] {
            let e = Entry {
                call: call.into(),
                family: Some("test".into()),
                signals: Some(3),
                signals_shown: Some(3),
                ..entry("Bash", full, client, jkz)
            };
            append(&state, &e).unwrap();
        }
        let text = run(&args(GroupBy::Command, false), &state);
        let table: Vec<&str> = text.lines().take(5).collect();
        assert_eq!(table[0].split_whitespace().next(), Some("COMMAND"));
        assert_eq!(table[1].split_whitespace().next(), Some("cargo"));
        assert!(table[4].starts_with("total"), "{text}");
        let width = table[0].chars().count();
        for row in &table {
            assert_eq!(row.chars().count(), width, "{text}");
        }
        // Every number ends where its header ends (a name may have spaces).
        let numbers = |row: &str| {
            let e = ends(row);
            e[e.len() - (COLUMNS - 1)..].to_vec()
        };
        for row in &table[1..] {
            assert_eq!(numbers(row), numbers(table[0]), "{text}");
        }
    }

    /// Where each whitespace-separated cell of `row` ends, in characters.
    fn ends(row: &str) -> Vec<usize> {
        let chars: Vec<char> = row.chars().collect();
        (0..chars.len())
            .filter(|&i| chars[i] != ' ' && chars.get(i + 1).is_none_or(|c| *c == ' '))
            .collect()
    }

    #[test]
    fn groups_by_command() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        for call in [
            "cargo test --locked",
            "cd x && cargo test",
            "git log -n 5",
            "git diff",
        ] {
            let e = Entry {
                call: call.into(),
                ..entry("Bash", 50_000, 2_000, 1_000)
            };
            append(&state, &e).unwrap();
        }
        let read = Entry {
            call: "Read".into(),
            ..entry("Read", 1, 1, 1)
        };
        append(&state, &read).unwrap();
        let s = summarize(tmp.path()).unwrap();
        assert_eq!(
            s.commands
                .iter()
                .map(|(k, t)| (k.as_str(), t.calls))
                .collect::<Vec<_>>(),
            [
                ("Read", 1),
                ("cargo test", 2),
                ("git diff", 1),
                ("git log", 1)
            ]
        );
    }

    #[test]
    fn a_window_leaves_out_older_and_undated_calls() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        let at = |ts: &str, jkz| Entry {
            ts: ts.into(),
            ..entry("Bash", 50_000, 2_000, jkz)
        };
        append(&state, &at("2026-03-09T09:59:59.999Z", 1)).unwrap();
        append(&state, &at("2026-03-09T10:00:00.000Z", 2)).unwrap();
        append(&state, &at("2026-03-09T11:30:00+01:00", 4)).unwrap(); // 10:30 UTC
        append(&state, &at("2026-03-09T12:00:00.000Z", 8)).unwrap();
        append(&state, &at("not a time", 16)).unwrap();
        let since = Some("2026-03-09T10:00:00Z".parse::<DateTime<Utc>>().unwrap());
        let s = summarize_since(tmp.path(), since).unwrap();
        assert_eq!(s.total.calls, 3);
        assert_eq!(s.total.jkz_bytes, 2 + 4 + 8);
        assert_eq!((s.before_window, s.undated), (1, 1));
        assert_eq!(s.since.as_deref(), Some("2026-03-09T10:00:00Z"));
        // Without a window every line counts, the undated one too.
        let all = summarize(tmp.path()).unwrap();
        assert_eq!(all.total.jkz_bytes, 31);
        assert_eq!((all.before_window, all.undated), (0, 0));

        let text = run(
            &StatsArgs {
                by: GroupBy::Tool,
                since,
                until: None,
                json: false,
            },
            &state,
        );
        assert!(
            text.contains("Calls since 2026-03-09T10:00:00Z; 1 earlier left out."),
            "{text}"
        );
        assert!(
            text.contains("1 ledger lines have no readable time"),
            "{text}"
        );
        let late = Some("2027-01-01T00:00:00Z".parse::<DateTime<Utc>>().unwrap());
        let text = run(
            &StatsArgs {
                by: GroupBy::Tool,
                since: late,
                until: None,
                json: false,
            },
            &state,
        );
        assert!(
            text.starts_with("No guarded tool calls since 2027-01-01T00:00:00Z (4 earlier"),
            "{text}"
        );
    }

    #[test]
    fn until_leaves_out_the_later_calls() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        let at = |ts: &str, jkz| Entry {
            ts: ts.into(),
            ..entry("Bash", 50_000, 2_000, jkz)
        };
        append(&state, &at("2026-03-09T09:00:00Z", 1)).unwrap();
        append(&state, &at("2026-03-09T10:00:00Z", 2)).unwrap();
        append(&state, &at("2026-03-09T11:00:00Z", 4)).unwrap();
        let t = |s: &str| Some(s.parse::<DateTime<Utc>>().unwrap());
        let s = summarize_window(
            tmp.path(),
            t("2026-03-09T09:30:00Z"),
            t("2026-03-09T11:00:00Z"),
        )
        .unwrap();
        assert_eq!(s.total.jkz_bytes, 2);
        assert_eq!((s.before_window, s.after_window), (1, 1));
        assert_eq!(s.until.as_deref(), Some("2026-03-09T11:00:00Z"));
        let text = run(
            &StatsArgs {
                by: GroupBy::Tool,
                since: None,
                until: t("2026-03-09T10:00:00Z"),
                json: false,
            },
            &state,
        );
        assert!(
            text.contains("Calls before 2026-03-09T10:00:00Z; 0 earlier, 2 later left out."),
            "{text}"
        );
    }

    #[test]
    fn sums_per_family_and_path_for_counters() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        let e = |family: Option<&str>, via: Option<&str>| Entry {
            family: family.map(Into::into),
            via: via.map(Into::into),
            ..entry("Bash", 5, 4, 3)
        };
        append(&state, &e(Some("test"), Some("wrap"))).unwrap();
        append(&state, &e(Some("test"), Some("wrap"))).unwrap();
        append(&state, &e(Some("test"), Some("post-tool-use"))).unwrap();
        append(&state, &e(None, None)).unwrap();
        let sums = by_family_and_via(tmp.path()).unwrap();
        let calls: Vec<(&str, &str, u64)> = sums
            .iter()
            .map(|((f, v), t)| (f.as_str(), v.as_str(), t.calls))
            .collect();
        assert_eq!(
            calls,
            [
                ("-", "-", 1),
                ("test", "post-tool-use", 1),
                ("test", "wrap", 2)
            ]
        );
        assert_eq!(sums[&("test".into(), "wrap".into())].client_bytes, 8);
    }

    #[test]
    fn an_empty_state_directory_has_nothing_to_say() {
        let tmp = tempfile::tempdir().unwrap();
        let text = run(&args(GroupBy::Tool, false), &StateDir::at(tmp.path()));
        assert!(text.starts_with("No guarded"));
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
