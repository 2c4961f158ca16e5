//! `jkz-compress`'s command line: its arguments, its help (the exit codes
//! spelled from the constants) and its run. The rules live in
//! [`crate::compress`].

use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::LazyLock;

use clap::Parser;

use super::{
    Excerpt, Missing, Settings, Source, IO_FAILED, NO_STATE_DIR, OK, RESTORE_FAILED,
    RESTORE_PARTIAL, STORE_FAILED, USAGE,
};
use crate::exit::Failure;

/// The program's name, in its messages.
pub const PROGRAM: &str = "jkz-compress";

/// Output buffer.
const STDOUT_BUFFER: usize = 256 * 1024;

static AFTER_HELP: LazyLock<String> = LazyLock::new(|| {
    format!(
        "\
Markers look like:
  <!-- jkz:offload sha256=HEX bytes=N lines=N excerpt=N path=FILE -->
and stand for a section stored in STATE/context-offload/<sha256>.md
(write-once, content-addressed). Protected blocks are never offloaded.

State directory: which one, and why: docs/worktrees.md.

Exit codes:
  {OK}  success (also when --budget could not be met: a note goes to stderr)
  {IO_FAILED}  reading the input or writing stdout failed
  {USAGE}  bad arguments
  {NO_STATE_DIR}  sections need offloading but there is no state directory, or the
     repository's layout cannot be read (stdout empty)
  {STORE_FAILED}  the offload store could not be written, e.g. read-only (stdout empty)
  {RESTORE_FAILED}  --restore: a marker does not verify: its file is missing or altered, or a
     line starting with <!-- jkz:offload is not a marker or its attributes do
     not match its file (stdout empty). Compressing refuses such a line too,
     as --restore could not expand the output (stdout empty, nothing
     offloaded; --partial is for --restore only)
  {RESTORE_PARTIAL}  --restore --partial: some markers could not be restored; each is named
     on stderr and kept as it is, everything else is restored on stdout"
    )
});

/// Shrink a context document: sections over the threshold go to disk,
/// leaving a head excerpt and a marker line; --restore puts them back.
#[derive(Parser, Debug)]
#[command(name = PROGRAM, version, after_help = AFTER_HELP.as_str())]
pub struct CompressCli {
    /// Offload every section (outside protected blocks) larger than this.
    /// Default 16 KiB (~4k tokens): past a few screens a section stops being
    /// skimmable, and it is 8x the excerpt, so an offload saves most of it.
    /// Minimum 1024.
    #[arg(long, value_name = "BYTES", default_value_t = super::DEFAULT_THRESHOLD)]
    pub threshold: u64,

    /// Keep the head of each offloaded section, in whole lines, up to this
    /// many bytes. Default 2 KiB: the size of Claude Code's own preview of
    /// an oversized output (or half the threshold, if smaller). At most half
    /// the threshold.
    #[arg(long, value_name = "BYTES", conflicts_with = "excerpt_lines")]
    pub excerpt: Option<u64>,

    /// Keep the first N lines of each offloaded section instead (within half
    /// the threshold).
    #[arg(long, value_name = "N")]
    pub excerpt_lines: Option<u64>,

    /// Make the output fit in BYTES: if it does not at --threshold, try
    /// lower thresholds and write the first output that fits; if none does,
    /// the smallest found (never larger than without --budget), with a note
    /// on stderr (exit 0).
    #[arg(long, value_name = "BYTES")]
    pub budget: Option<u64>,

    #[command(flatten)]
    pub state: crate::state_dir::StateDirArg,

    /// Expand every marker back from its offload file (sha256 verified;
    /// nothing is written unless all markers check out).
    #[arg(long, conflicts_with_all = ["threshold", "excerpt", "excerpt_lines", "budget"])]
    pub restore: bool,

    /// With --restore: restore what can be, keep each marker that does not
    /// verify (file missing or altered, attributes edited) as it is, named
    /// on stderr, exit 6. Not for compressing, which refuses such a line.
    #[arg(long, requires = "restore")]
    pub partial: bool,

    /// Print one summary line on stderr (sections offloaded, bytes before
    /// and after, files written and already present). The default when
    /// stderr is a terminal.
    #[arg(long)]
    pub stats: bool,

    /// The document (default: standard input; `-` also means stdin).
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
}

/// Runs a parsed command line: the exit code, or why it failed.
pub fn run(cli: CompressCli) -> Result<u8, Failure> {
    // clap lets `--partial` through without `--restore` once a flag that
    // conflicts with `--restore` is given: checked here.
    if cli.partial && !cli.restore {
        return Err(Failure::new(
            USAGE,
            "--partial applies to --restore only: compress refuses a line that looks like a \
             marker but does not verify (exit 5), it never keeps one",
        ));
    }
    let state = cli.state.resolve();
    state
        .check()
        .map_err(|why| Failure::new(NO_STATE_DIR, why))?;
    let src = Source::open(cli.file.as_deref())?;
    let stats = cli.stats || io::stderr().is_terminal();
    let mut out = BufWriter::with_capacity(STDOUT_BUFFER, io::stdout().lock());
    let mut err = io::stderr().lock();
    if cli.restore {
        let missing = if cli.partial {
            Missing::Keep
        } else {
            Missing::Fail
        };
        let restored = super::restore_with(&src, &state, &mut out, missing)?;
        for line in &restored.kept {
            let _ = writeln!(err, "{PROGRAM}: {}", line.replace('\n', " "));
        }
        if stats {
            let _ = writeln!(err, "{}", restored.line());
        }
        if !restored.kept.is_empty() {
            return Err(Failure::new(
                RESTORE_PARTIAL,
                format!(
                    "{} marker(s) could not be restored and were kept; the rest of the document was restored",
                    restored.kept.len()
                ),
            ));
        }
    } else {
        let settings = Settings {
            threshold: cli.threshold,
            excerpt: Excerpt::from_flags(cli.excerpt, cli.excerpt_lines, cli.threshold),
            budget: cli.budget,
        };
        let summary = super::compress(&src, settings, &state, &mut out, &mut err)?;
        if stats {
            let _ = writeln!(err, "{}", summary.line());
        }
    }
    Ok(OK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn verify_cli() {
        CompressCli::command().debug_assert();
    }

    #[test]
    fn partial_without_restore_is_a_usage_error() {
        let cli =
            CompressCli::try_parse_from([PROGRAM, "--threshold", "1024", "--partial"]).unwrap();
        assert_eq!(run(cli).unwrap_err().code, USAGE);
    }

    #[test]
    fn clap_refuses_bad_arguments_with_the_usage_code() {
        let err = CompressCli::try_parse_from([PROGRAM, "--bogus"]).unwrap_err();
        assert_eq!(err.exit_code(), i32::from(USAGE));
    }
}
