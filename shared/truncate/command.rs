//! `jkz-truncate`'s command line: its arguments, its help (caps, roles and
//! exit codes spelled from the constants that apply them) and its run. The
//! rules themselves live in [`crate::truncate`].

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::PathBuf;
use std::sync::LazyLock;

use clap::Parser;

use super::full_output::Keep;
use super::record;
use super::{roles, Mode, Settings, CAP_VARIABLE, EXIT_IO};
use crate::client::{Client, Viewer};
use crate::closed_stdout::UntilStdoutCloses;
use crate::deliberation::Context;
use crate::exit::{Failure, EXIT_USAGE};
use crate::tool_output::reduce_call::{reduce_call, Call};

/// The program's name, in its messages.
pub const PROGRAM: &str = "jkz-truncate";

/// Output buffer: large, so the kept slices go out in few writes.
const STDOUT_BUFFER: usize = 1 << 20;

static AFTER_HELP: LazyLock<String> = LazyLock::new(|| {
    format!(
        "\
Caps: --max-bytes N > {CAP_VARIABLE} > --mode
({caps}). A cap of 0 passes the input through, and
so does a cap larger than the input. A filter fails open: an empty
JKZ_MAX_OUTPUT_BYTES counts as unset, an invalid one is a one-line warning
and the mode's cap is used; only a bad flag is a usage error (exit 2).
Input no longer than the cap is printed unchanged. Longer input becomes:
head, every protected block placed that is not in head or tail (input
order), tail, with one marker line per gap:
  [jkz-truncate: 1,234,567 bytes (20,311 lines) omitted; full output: PATH]

How the budget is divided: head and tail together always keep at least a
quarter of the cap (split by the head share), so the last lines survive
however many blocks there are. Protected blocks share the other three
quarters (kinds, highest first: verdict-json, compact-plan, plan-digest,
decisions, tldr, accumulated-patterns, other jkz: signals):
  1. the newest block of each kind, highest kind first, whole if it fits;
  2. the newest blocks that did not fit share what is left equally, each
     cut to its head (its first whole lines); the marker after the head
     says how much of the block is omitted, e.g.
     [jkz-truncate: tldr block cut: 156,494 bytes (2,414 lines) of it
     omitted; full output: PATH]
  3. older blocks, newest first within a kind, whole or cut to their head.
A block is dropped only when not even its first line fits. Each placed
block costs its new bytes plus one marker line; what blocks leave goes to
head and tail. The output never exceeds the cap; a cap too small for one
marker line gets the head alone, no marker.
E.g. --max-bytes 3000 on 5,000 verdict comments: about 20 of the newest
verdicts, and head and tail share at least 750 bytes.

A heading section (## TL;DR, setext TL;DR + ===== …) protects its own
text, up to the next heading of any level; its subsections are ordinary
text unless they name a kind themselves.

Head share by role (--head-share overrides):
{}
Full output: when the input is truncated, it is saved whole to
STATE/context-offload/full-<UTC time>-<pid>.txt, STATE being the state
directory (found from JKZ_STATE_DIR or CLAUDE_PROJECT_DIR: docs/worktrees.md).
Failing to save it is a warning, never a lost output. A kept copy holds at
most {limit} bytes (1 GiB); one cut there, or one whose input stopped early
(the reader of stdout went away), is named
full-<UTC time>-<pid>-incomplete.txt.

--record (the flags of `jkz run`: --role, --issue, --phase, --pr,
--iteration, --model, --endpoint, --service, --mode) keeps the whole answer
for the audit trail instead, truncated or not, and writes one deliberation
record, STATE/deliberations/<UTC time>-<issue or none>-<role>-<pid>.json,
as `jkz run` does, without command, exit code or duration: status ok, or
failed for an empty answer or one not read to its end (its
response_incomplete says why). An answer of at most {inline} bytes of UTF-8
that is not truncated is kept inline in the record; any other is kept as
STATE/context-offload/<sha256>.txt, the file the markers name. List and
read records with `jkz deliberations`. Without a state directory the
output is still printed, with a one-line warning.

Exit codes (with --run: the command's own status instead, unless reading
or writing failed):
  0  success, also when the reader of stdout went away (broken pipe): the
     reading stops there, and what was read is kept, marked incomplete
  {EXIT_IO}  the input could not be read or stdout could not be written
  {EXIT_USAGE}  usage error (bad flag or value)",
        roles::table(),
        caps = Mode::caps_text(),
        inline = crate::thousands::thousands(crate::deliberation::INLINE_MAX as u64),
        limit = crate::thousands::thousands(super::full_output::KEEP_LIMIT),
    )
});

/// Caps a stream to a byte budget, keeping its head and tail and every
/// protected block that fits.
#[derive(Parser, Debug)]
#[command(name = PROGRAM, version, after_help = AFTER_HELP.as_str())]
pub struct TruncateCli {
    /// Default cap when neither --max-bytes nor JKZ_MAX_OUTPUT_BYTES is set.
    #[arg(long, value_enum, default_value_t = Mode::Primary)]
    pub mode: Mode,

    /// Who answered (--role also picks the head share, see below; unknown
    /// roles split evenly). Recorded with --record; the flags other than
    /// --role need it.
    #[command(flatten)]
    pub context: Context,

    /// Keep the whole answer and one deliberation record of it in
    /// STATE/deliberations/ (as `jkz run` does); the markers name the
    /// answer's file, STATE/context-offload/<sha256>.txt.
    #[arg(long, conflicts_with = "no_full_output")]
    pub record: bool,

    /// The external service that answered (recorded with --record).
    #[arg(long, value_name = "S")]
    pub service: Option<String>,

    /// Output cap in bytes (0: no truncation). Default: JKZ_MAX_OUTPUT_BYTES,
    /// else the mode's cap.
    #[arg(long, value_name = "N")]
    pub max_bytes: Option<u64>,

    /// Head's share of the head+tail budget, 0.0 to 1.0; overrides --role.
    #[arg(long, value_name = "F", value_parser = parse_share)]
    pub head_share: Option<f64>,

    #[command(flatten)]
    pub state: crate::state_dir::StateDirArg,

    /// Do not save the full input when truncating.
    #[arg(long)]
    pub no_full_output: bool,

    /// Input file (default: stdin).
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,

    /// Run COMMAND with $SHELL -c (a POSIX shell, else /bin/sh) and reduce
    /// its stdout and stderr together by what they are (the engine of `jkz
    /// reduce`: every error, warning, failing test, anchor, summary and
    /// protected block kept; the whole output kept on disk), for the view
    /// of the client --for names; exit with the command's status (its code,
    /// or 128 + the signal that ended it). Its stdin, directory and
    /// environment are jkz-truncate's. Each call is one line of the savings
    /// ledger (jkz stats).
    #[arg(long, value_name = "COMMAND", conflicts_with_all = ["file", "record"])]
    pub run: Option<String>,

    /// FILE (or stdin) is what COMMAND printed: reduce it as --run would,
    /// without running anything (Claude Code's rewritten Bash calls run the
    /// command in the client's own shell, its output into FILE).
    #[arg(long, value_name = "COMMAND", conflicts_with_all = ["run", "record"])]
    pub ran: Option<String>,

    /// As --ran, the command (and the session) read from PATH, a JSON
    /// note `{"command": …, "session": …}` the Bash wrap writes beside the
    /// output file (removed once read), so the command is never a quoted
    /// argument of the rewritten call.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["run", "ran", "record"])]
    pub command_file: Option<PathBuf>,

    /// With --ran or --command-file: the command's exit code.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub exit_code: Option<i32>,

    /// With --run or --ran: the client whose view the output replaces
    /// (its budget, and what the ledger counts against).
    #[arg(long = "for", value_enum, value_name = "CLIENT", default_value_t = Client::Claude)]
    pub viewer: Client,

    /// With --run or --ran: the chat's session, for repeats across calls.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
}

fn parse_share(s: &str) -> Result<f64, String> {
    let f: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number"))?;
    if (0.0..=1.0).contains(&f) {
        Ok(f)
    } else {
        Err(format!("{s} is outside 0.0..=1.0"))
    }
}

/// Parses the process's arguments; a usage error ends the process (exit 2,
/// clap's message), as does `--help` (exit 0).
pub fn parse() -> TruncateCli {
    let cli = TruncateCli::parse();
    if !cli.record {
        if let Some(flag) = record_only_flag(&cli) {
            use clap::CommandFactory;
            TruncateCli::command()
                .error(
                    clap::error::ErrorKind::ArgumentConflict,
                    format!("{flag} is recorded only with --record"),
                )
                .exit();
        }
    }
    cli
}

/// A flag given that only a record uses.
fn record_only_flag(cli: &TruncateCli) -> Option<&'static str> {
    let c = &cli.context;
    [
        ("--issue", c.issue.is_some()),
        ("--phase", c.phase.is_some()),
        ("--pr", c.pr.is_some()),
        ("--iteration", c.iteration.is_some()),
        ("--model", c.model.is_some()),
        ("--endpoint", c.endpoint.is_some()),
        ("--service", cli.service.is_some()),
    ]
    .into_iter()
    .find_map(|(flag, given)| given.then_some(flag))
}

/// Runs a parsed command line: the exit code, or why it failed.
pub fn run(cli: TruncateCli) -> Result<u8, Failure> {
    let mode = cli.mode;
    let head_share = roles::resolve_head_share(cli.head_share, cli.context.role.as_deref());
    let mut stderr = io::stderr().lock();
    let cap = super::cap_from_env(cli.max_bytes, mode, PROGRAM, &mut stderr);
    let state = cli.state.resolve();
    if let Err(why) = state.check() {
        // A filter in a pipe: the output still goes through, unkept.
        let _ = writeln!(stderr, "jkz-truncate: {why}; nothing is kept on disk");
    }
    let settings = Settings {
        cap,
        head_share,
        full_output: (!cli.no_full_output && !cli.record)
            .then(|| Keep::WhenTruncated(state.clone())),
        program: PROGRAM,
    };
    let stdout = BufWriter::with_capacity(STDOUT_BUFFER, io::stdout().lock());
    let caller = cli.record.then(|| record::Caller {
        context: cli.context.clone(),
        service: cli.service.clone(),
        mode,
    });
    let go = |input: &mut dyn Read, name: &str| match &caller {
        None => super::truncate(input, stdout, &settings, name, &mut stderr),
        Some(caller) => {
            record::truncate_and_record(input, stdout, &settings, name, &mut stderr, &state, caller)
        }
    };
    if cli.run.is_some() || cli.ran.is_some() || cli.command_file.is_some() {
        return reduced(&cli, &state, &mut stderr);
    }
    // A closed stdout stops the reading (see `crate::closed_stdout`).
    match &cli.file {
        Some(path) => {
            let name = path.display().to_string();
            let file = File::open(path)
                .map_err(|e| Failure::io(EXIT_IO, format_args!("cannot open {name}"), e))?;
            go(&mut UntilStdoutCloses::new(file, io::stdout()), &name)?;
        }
        None => {
            super::grow_pipe(io::stdin());
            let stdin = io::stdin().lock();
            go(&mut UntilStdoutCloses::new(stdin, io::stdout()), "stdin")?;
        }
    }
    Ok(crate::exit::EXIT_OK)
}

/// `--run` and `--ran`: the output reduced by what it is, for the client
/// that shows it ([`crate::tool_output::reduce_call`]).
fn reduced(
    cli: &TruncateCli,
    state: &crate::state_dir::StateDir,
    stderr: &mut dyn Write,
) -> Result<u8, Failure> {
    let started = std::time::Instant::now();
    let table = crate::reduce::cmd::project_table(state, stderr);
    let note = cli
        .command_file
        .as_deref()
        .and_then(|p| command_note(p, stderr));
    let command = cli
        .run
        .as_deref()
        .or(cli.ran.as_deref())
        .or(note.as_ref().map(|n| n.0.as_str()));
    let session = cli
        .session
        .as_deref()
        .or(note.as_ref().and_then(|n| n.1.as_deref()));
    let mut call = Call {
        tool: "Bash",
        command,
        exit_code: cli.exit_code,
        via: "wrap",
        viewer: Viewer::shell(cli.viewer),
        session,
        state,
        kept_at: None,
        budget: cli.max_bytes.filter(|&b| b > 0).map(|b| b as usize),
        started,
        exit_later: cli.run.is_some(),
    };
    let mut out = io::stdout().lock();
    let write = |out: &mut io::StdoutLock, bytes: &[u8]| match out
        .write_all(bytes)
        .and_then(|()| out.flush())
    {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            Err(Failure::io(EXIT_IO, "writing stdout", e))
        }
        _ => Ok(()),
    };
    if let Some(command) = &cli.run {
        let (mut child, reader) = super::run_command::start(command).map_err(|e| {
            Failure::io(
                EXIT_IO,
                format_args!("cannot run {command:?} with a shell"),
                e,
            )
        })?;
        super::grow_pipe(&reader);
        let mut reader = reader;
        let outcome = reduce_call(&mut reader, &call, &table, stderr);
        // The pipe's reading end is dropped before the wait, so a command
        // still writing gets SIGPIPE, never a hang.
        drop(reader);
        let status = child
            .wait()
            .map_err(|e| Failure::io(EXIT_IO, format_args!("waiting for {command:?}"), e))?;
        let mut outcome =
            outcome.map_err(|e| Failure::io(EXIT_IO, "reading the command's output", e))?;
        let code = super::run_command::exit_code(status);
        outcome.exited(i32::from(code), state, stderr);
        write(&mut out, &outcome.view)?;
        return Ok(code);
    }
    // --ran: the output is in FILE (or on stdin).
    let Some(path) = &cli.file else {
        let stdin = io::stdin();
        let mut input = stdin.lock();
        let outcome = reduce_call(&mut input, &call, &table, stderr)
            .map_err(|e| Failure::io(EXIT_IO, "reading stdin", e))?;
        write(&mut out, &outcome.view)?;
        return Ok(crate::exit::EXIT_OK);
    };
    let name = path.display().to_string();
    let mut file = File::open(path)
        .map_err(|e| Failure::io(EXIT_IO, format_args!("cannot open {name}"), e))?;
    // A file the wrap wrote into the state directory's offload directory is
    // the kept output itself.
    let ours = ours(state, path);
    call.kept_at = ours.as_deref();
    match reduce_call(&mut file, &call, &table, stderr) {
        Ok(outcome) => {
            if let Some(ours) = &ours {
                if outcome.entry.kept.as_deref().map(std::path::Path::new) != Some(ours.as_path()) {
                    let _ = std::fs::remove_file(ours);
                }
            }
            write(&mut out, &outcome.view)?;
        }
        Err(e) => {
            // Fail open: the output as it is.
            let _ = writeln!(stderr, "{PROGRAM}: reducing {name}: {e}; the output stands");
            let mut raw = File::open(path)
                .map_err(|e| Failure::io(EXIT_IO, format_args!("cannot open {name}"), e))?;
            io::copy(&mut raw, &mut out).map_err(|e| Failure::io(EXIT_IO, "writing stdout", e))?;
        }
    }
    Ok(crate::exit::EXIT_OK)
}

/// The command and session of a `--command-file` note, which is removed
/// once read (a note that does not read is a warning: the output is still
/// reduced, by what it looks like).
fn command_note(
    path: &std::path::Path,
    stderr: &mut dyn Write,
) -> Option<(String, Option<String>)> {
    let read = std::fs::read(path);
    let _ = std::fs::remove_file(path);
    let parsed = read.map_err(|e| e.to_string()).and_then(|bytes| {
        serde_json::from_slice::<crate::tool_output::wrap::CommandNote>(&bytes)
            .map(|n| (n.command.to_string(), n.session.map(str::to_string)))
            .map_err(|e| e.to_string())
    });
    match parsed {
        Ok(n) => Some(n),
        Err(e) => {
            let _ = writeln!(stderr, "{PROGRAM}: {}: {e}", path.display());
            None
        }
    }
}

/// `path`, absolute, when it is a file in `state`'s offload directory.
fn ours(state: &crate::state_dir::StateDir, path: &std::path::Path) -> Option<PathBuf> {
    let offload = state.join(crate::state_dir::layout::OFFLOAD_DIR);
    let offload = std::fs::canonicalize(offload).ok()?;
    let path = std::fs::canonicalize(path).ok()?;
    (path.parent() == Some(offload.as_path()) && path.is_file()).then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn verify_cli() {
        TruncateCli::command().debug_assert();
    }

    #[test]
    fn a_bad_flag_exits_with_the_usage_code_help_names() {
        let err = TruncateCli::try_parse_from([PROGRAM, "--bogus"]).unwrap_err();
        assert_eq!(err.exit_code(), i32::from(EXIT_USAGE));
    }

    #[test]
    fn share_must_be_a_fraction() {
        assert_eq!(parse_share("0.25"), Ok(0.25));
        assert!(parse_share("1.5").is_err());
        assert!(parse_share("-0.1").is_err());
        assert!(parse_share("half").is_err());
    }
}
