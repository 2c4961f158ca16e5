//! Reading what a source reported: the input's bound, and the dispatch to
//! the parser of each source's shape (what they share is in
//! [`super::parsed`]).
//!
//! | source | input |
//! |---|---|
//! | `coderabbit` | the JSON GitHub returns for a pull request's review comments (`gh api repos/O/R/pulls/N/comments`, also `--paginate`'s arrays back to back): see [`super::coderabbit`] |
//! | `verdict` | a text holding a `verdict-json` block (or the block's JSON object itself) with a `findings`, `blockers` or `concerns` array: see [`super::reported`] |
//! | `jg` | a `review-result.json` (`blockers`, `concerns`, `nits`) or `test-result.json` (`failures`) object: see [`super::reported`] |

use std::io::Read;

pub use super::parsed::Parsed;

/// The largest input read: 16 MiB, ten times a review of a few thousand
/// comments. A larger one is refused, never read whole.
pub const MAX_INPUT: u64 = 16 * 1024 * 1024;

/// Who reported the findings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Source {
    /// A pull request's review comments, as the GitHub API returns them.
    Coderabbit,
    /// A `verdict-json` block (a pipeline agent's verdict).
    Verdict,
    /// A `review-result.json` or `test-result.json`.
    Jg,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::Coderabbit => "coderabbit",
            Source::Verdict => "verdict",
            Source::Jg => "jg",
        }
    }
}

/// Reads all of `input`, refusing more than [`MAX_INPUT`] bytes.
pub fn read_bounded(input: impl Read, name: &str) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    input
        .take(MAX_INPUT + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("reading {name}: {e}"))?;
    if bytes.len() as u64 > MAX_INPUT {
        return Err(format!(
            "{name} is larger than {} MiB ({MAX_INPUT} bytes), the most `jkz findings import` reads: import one review's comments, or split the input",
            MAX_INPUT / (1024 * 1024)
        ));
    }
    Ok(bytes)
}

/// Parses an input of `source`; an error names what is wrong and where.
pub fn parse(source: Source, bytes: &[u8]) -> Result<Parsed, String> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err("the input is empty".into());
    }
    match source {
        Source::Coderabbit => super::coderabbit::parse(bytes),
        Source::Verdict => super::reported::parse_verdict(bytes),
        Source::Jg => super::reported::parse_jg(bytes),
    }
}
