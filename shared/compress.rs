//! `jkz-compress`: shrink a context document by moving oversized sections to
//! disk, keeping a head excerpt and a marker inline; `--restore` puts them
//! back, byte for byte.
//!
//! The structure comes from the one protected-block grammar
//! ([`crate::blocks`]); see [`plan`] for the model and the rules that make
//! `compress(compress(x)) == compress(x)` and `restore(compress(x)) == x`.
//!
//! Memory: the input is read twice (spooled to a temp file when it is stdin)
//! and never held whole; what is kept is the outline (one entry per heading
//! and per protected block) and fixed copy buffers.

pub mod marker;
pub mod offload;
pub mod plan;
pub mod restore;
pub mod source;

use std::io::Write;

use crate::cli::Failure;
use crate::state_dir::StateDir;

pub use plan::Excerpt;
pub use source::Source;

/// Where offloaded sections live, below the state directory.
pub const OFFLOAD_DIR: &str = "context-offload";

/// Default `--threshold`: 16 KiB, about 4,000 tokens — a few screens, past
/// which a section stops being skimmable; eight times the default excerpt,
/// so an offload always removes most of a section.
pub const DEFAULT_THRESHOLD: u64 = 16 * 1024;

/// Default `--excerpt`: 2 KiB, the size of the preview Claude Code itself
/// shows for an oversized tool output — enough to tell what a section is.
pub const DEFAULT_EXCERPT: u64 = 2 * 1024;

/// The smallest threshold: below it a marker line (about 200 bytes) and an
/// excerpt stop being much smaller than what they replace.
pub const MIN_THRESHOLD: u64 = 1024;

/// Exit codes (one table, also in `--help` and the README).
pub const OK: u8 = 0;
/// Reading the input or writing stdout failed.
pub const IO_FAILED: u8 = 1;
/// Bad arguments (clap uses 2 as well).
pub const USAGE: u8 = 2;
/// Sections need offloading but no state directory is available.
pub const NO_STATE_DIR: u8 = 3;
/// The offload store could not be written (read-only, disk full, …).
pub const STORE_FAILED: u8 = 4;
/// `--restore`: a marker's file is missing or altered.
pub const RESTORE_FAILED: u8 = 5;

/// What to compress with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    pub threshold: u64,
    pub excerpt: Excerpt,
    pub budget: Option<u64>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            threshold: DEFAULT_THRESHOLD,
            excerpt: Excerpt::Bytes(DEFAULT_EXCERPT),
            budget: None,
        }
    }
}

impl Settings {
    /// Checks the rules the plan relies on: a threshold of at least
    /// [`MIN_THRESHOLD`] and an excerpt of at most half of it.
    pub fn validate(&self) -> Result<(), Failure> {
        if self.threshold < MIN_THRESHOLD {
            return Err(Failure::new(
                USAGE,
                format!(
                    "--threshold {} is below the minimum of {MIN_THRESHOLD} bytes",
                    self.threshold
                ),
            ));
        }
        if let Excerpt::Bytes(b) = self.excerpt {
            if b > self.threshold / 2 {
                return Err(Failure::new(
                    USAGE,
                    format!(
                        "--excerpt {b} is more than half of --threshold {}: an offload must save at least half",
                        self.threshold
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The lowest threshold `--budget` may go down to.
    fn floor(&self) -> u64 {
        match self.excerpt {
            Excerpt::Bytes(b) => MIN_THRESHOLD.max(2 * b),
            Excerpt::Lines(_) => MIN_THRESHOLD,
        }
    }
}

/// Compresses `src` to `out`. Notes (an unmet budget) go to `notes`.
pub fn compress(
    src: &Source,
    settings: Settings,
    state: &StateDir,
    out: &mut impl Write,
    notes: &mut impl Write,
) -> Result<(), Failure> {
    settings.validate()?;
    let read_err = |e| Failure::io(IO_FAILED, format!("reading {}", src.name()), e);
    let outline = plan::outline(src).map_err(read_err)?;
    let store = state.join(OFFLOAD_DIR);
    let marker_dir = source::absolute(&store).display().to_string();
    if marker_dir.contains(['\n', '\r']) {
        return Err(Failure::new(
            USAGE,
            format!("the offload directory {marker_dir:?} has a line break in its name"),
        ));
    }
    let path_len = marker_dir.len() + 1 + 64 + ".md".len();
    let make = |threshold| {
        plan::plan(src, &outline, threshold, settings.excerpt, path_len).map_err(read_err)
    };
    let mut chosen = make(settings.threshold)?;
    if let Some(budget) = settings.budget.filter(|&b| chosen.estimated_len > b) {
        // Lower the threshold, so the largest runs go first, to the highest
        // one that fits; the floor when none does.
        let floor = settings.floor().min(settings.threshold);
        let lowest = make(floor)?;
        if lowest.estimated_len > budget {
            let _ = writeln!(
                notes,
                "jkz-compress: cannot fit the budget of {budget} bytes: the output is about {} bytes \
                 ({} in protected blocks, which are never offloaded, and the rest in excerpts and \
                 markers of every section over {floor} bytes)",
                lowest.estimated_len,
                outline.kept_bytes()
            );
            chosen = lowest;
        } else {
            let (mut fits, mut over) = (floor, settings.threshold);
            let mut best = lowest;
            while over - fits > 1 {
                let mid = fits + (over - fits) / 2;
                let candidate = make(mid)?;
                if candidate.estimated_len <= budget {
                    (fits, best) = (mid, candidate);
                } else {
                    over = mid;
                }
            }
            chosen = best;
        }
    }
    let markers = if chosen.offloads.is_empty() {
        Vec::new()
    } else {
        let dir = match state.ensure_subdir(OFFLOAD_DIR) {
            Ok(Some(dir)) => dir,
            Ok(None) => {
                return Err(Failure::new(
                    NO_STATE_DIR,
                    format!(
                        "{} section(s) are over the threshold but there is no state directory to \
                         offload them to ({} does not exist and was not named explicitly); pass \
                         --state-dir DIR, set JKZ_STATE_DIR, or run `jkz install`; nothing was written",
                        chosen.offloads.len(),
                        state.path().display()
                    ),
                ))
            }
            Err(e) => {
                return Err(Failure::io(
                    STORE_FAILED,
                    format!("creating {}; nothing was written", store.display()),
                    e,
                ))
            }
        };
        offload::store(src, &chosen, &dir, &marker_dir).map_err(|e| {
            Failure::io(
                STORE_FAILED,
                format!(
                    "writing an offload file in {}; nothing was written",
                    dir.display()
                ),
                e,
            )
        })?
    };
    offload::write_output(src, &chosen, &markers, out)
        .and_then(|()| out.flush())
        .map_err(|e| Failure::io(IO_FAILED, "writing the compressed document", e))
}

pub use restore::restore;

#[cfg(test)]
mod props;
