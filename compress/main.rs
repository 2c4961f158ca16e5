//! `jkz-compress`: parse arguments, call `jkz::compress`, map the result to
//! an exit code.

use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use jkz::compress::{self, Excerpt, Missing, Settings, Source};
use jkz::exit::Failure;
use jkz::state_dir::StateDir;

const AFTER_HELP: &str = "\
Markers look like:
  <!-- jkz:offload sha256=HEX bytes=N lines=N excerpt=N path=FILE -->
and stand for a section stored in STATE/context-offload/<sha256>.md
(write-once, content-addressed). Protected blocks are never offloaded.

State directory, first that applies: --state-dir, JKZ_STATE_DIR,
$CLAUDE_PROJECT_DIR/state, ./state (the last two only if they exist).

Exit codes:
  0  success (also when --budget could not be met: a note goes to stderr)
  1  reading the input or writing stdout failed
  2  bad arguments
  3  sections need offloading but there is no state directory (stdout empty)
  4  the offload store could not be written, e.g. read-only (stdout empty)
  5  --restore: a marker's file is missing or altered (stdout empty)
  6  --restore --partial: some markers could not be restored; each is named
     on stderr and kept as it is, everything else is restored on stdout";

/// Shrink a context document: sections over the threshold go to disk,
/// leaving a head excerpt and a marker line; --restore puts them back.
#[derive(Parser, Debug)]
#[command(name = "jkz-compress", version, after_help = AFTER_HELP)]
struct Cli {
    /// Offload every section (outside protected blocks) larger than this.
    /// Default 16 KiB (~4k tokens): past a few screens a section stops being
    /// skimmable, and it is 8x the excerpt, so an offload saves most of it.
    /// Minimum 1024.
    #[arg(long, value_name = "BYTES", default_value_t = compress::DEFAULT_THRESHOLD)]
    threshold: u64,

    /// Keep the head of each offloaded section, in whole lines, up to this
    /// many bytes. Default 2 KiB: the size of Claude Code's own preview of
    /// an oversized output (or half the threshold, if smaller). At most half
    /// the threshold.
    #[arg(long, value_name = "BYTES", conflicts_with = "excerpt_lines")]
    excerpt: Option<u64>,

    /// Keep the first N lines of each offloaded section instead (within half
    /// the threshold).
    #[arg(long, value_name = "N")]
    excerpt_lines: Option<u64>,

    /// Make the output fit in BYTES: if it does not at --threshold, try
    /// lower thresholds and write the first output that fits; if none does,
    /// the smallest found (never larger than without --budget), with a note
    /// on stderr (exit 0).
    #[arg(long, value_name = "BYTES")]
    budget: Option<u64>,

    /// The state directory (offloads go to DIR/context-offload/).
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,

    /// Expand every marker back from its offload file (sha256 verified;
    /// nothing is written unless all markers check out).
    #[arg(long, conflicts_with_all = ["threshold", "excerpt", "excerpt_lines", "budget"])]
    restore: bool,

    /// With --restore: restore what can be, keep the marker of each section
    /// whose file is missing or altered (named on stderr), exit 6.
    #[arg(long, requires = "restore")]
    partial: bool,

    /// Print one summary line on stderr (sections offloaded, bytes before
    /// and after, files written and already present). The default when
    /// stderr is a terminal.
    #[arg(long)]
    stats: bool,

    /// The document (default: standard input; `-` also means stdin).
    #[arg(value_name = "FILE")]
    file: Option<PathBuf>,
}

fn run(cli: Cli) -> Result<u8, Failure> {
    let state = StateDir::resolve(cli.state_dir.as_deref(), None);
    let src = Source::open(cli.file.as_deref(), compress::IO_FAILED)?;
    let stats = cli.stats || io::stderr().is_terminal();
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(256 * 1024, stdout.lock());
    if cli.restore {
        let missing = if cli.partial {
            Missing::Keep
        } else {
            Missing::Fail
        };
        let restored =
            compress::restore_with(&src, &state, &mut out, compress::IO_FAILED, missing)?;
        out.flush()
            .map_err(|e| Failure::io(compress::IO_FAILED, "writing the restored document", e))?;
        let mut err = io::stderr().lock();
        for line in &restored.kept {
            let _ = writeln!(err, "jkz-compress: {}", line.replace('\n', " "));
        }
        if stats {
            let _ = writeln!(err, "{}", restored.line());
        }
        if !restored.kept.is_empty() {
            return Err(Failure::new(
                compress::RESTORE_PARTIAL,
                format!(
                    "{} marker(s) could not be restored and were kept; the rest of the document was restored",
                    restored.kept.len()
                ),
            ));
        }
    } else {
        let excerpt = match (cli.excerpt, cli.excerpt_lines) {
            (_, Some(n)) => Excerpt::Lines(n),
            (b, None) => {
                Excerpt::Bytes(b.unwrap_or(compress::DEFAULT_EXCERPT.min(cli.threshold / 2)))
            }
        };
        let settings = Settings {
            threshold: cli.threshold,
            excerpt,
            budget: cli.budget,
        };
        let summary = compress::compress(&src, settings, &state, &mut out, &mut io::stderr())?;
        if stats {
            let _ = writeln!(io::stderr(), "{}", summary.line());
        }
    }
    Ok(compress::OK)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    jkz::exit::exit("jkz-compress", run(cli))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn verify_cli() {
        Cli::command().debug_assert();
    }
}
