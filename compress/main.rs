//! `jkz-compress`: parse arguments, call `jkz::compress`, map the result to
//! an exit code.

use std::io::{self, BufWriter};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use jkz::cli::Failure;
use jkz::compress::{self, Excerpt, Settings, Source};
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
  5  --restore: a marker's file is missing or altered (stdout empty)";

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

    /// Offload the largest sections first until the output fits in BYTES; if
    /// protected blocks and excerpts make that impossible, get as close as
    /// possible and say so on stderr (exit 0).
    #[arg(long, value_name = "BYTES")]
    budget: Option<u64>,

    /// The state directory (offloads go to DIR/context-offload/).
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,

    /// Expand every marker back from its offload file (sha256 verified;
    /// nothing is written unless all markers check out).
    #[arg(long, conflicts_with_all = ["threshold", "excerpt", "excerpt_lines", "budget"])]
    restore: bool,

    /// The document (default: standard input; `-` also means stdin).
    #[arg(value_name = "FILE")]
    file: Option<PathBuf>,
}

fn run(cli: Cli) -> Result<u8, Failure> {
    let state = StateDir::resolve(cli.state_dir.as_deref(), None);
    let src = Source::open(cli.file.as_deref(), compress::IO_FAILED)?;
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(256 * 1024, stdout.lock());
    if cli.restore {
        compress::restore(&src, &state, &mut out, compress::IO_FAILED)?;
        io::Write::flush(&mut out)
            .map_err(|e| Failure::io(compress::IO_FAILED, "writing the restored document", e))?;
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
        compress::compress(&src, settings, &state, &mut out, &mut io::stderr())?;
    }
    Ok(compress::OK)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    jkz::cli::exit("jkz-compress", run(cli))
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
