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

pub mod batch;
pub mod budget;
pub mod command;
pub mod marker;
pub mod marker_lines;
pub mod offload;
pub mod plan;
pub mod restore;
pub mod source;

use std::io::{self, Write};

use crate::exit::Failure;
use crate::state_dir::StateDir;

pub use plan::Excerpt;
pub use source::Source;

/// Where offloaded sections live, below the state directory.
use crate::state_dir::layout::OFFLOAD_DIR;

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

/// Exit codes (one table, also in `--help` and docs/exit-codes.md).
pub const OK: u8 = 0;
/// Reading the input or writing stdout failed.
pub const IO_FAILED: u8 = 1;
/// Bad arguments (clap's own code).
pub const USAGE: u8 = crate::exit::EXIT_USAGE;
/// Sections need offloading but no state directory is available.
pub const NO_STATE_DIR: u8 = 3;
/// The offload store could not be written (read-only, disk full, …).
pub const STORE_FAILED: u8 = 4;
/// `--restore`: a marker's file is missing or altered.
pub const RESTORE_FAILED: u8 = 5;
/// `--restore --partial`: some markers could not be restored and were kept
/// as they are; the rest of the document was restored.
pub const RESTORE_PARTIAL: u8 = 6;

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

/// What a compression did, for the summary line (`--stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Sections (runs) offloaded, each now a marker.
    pub offloaded: usize,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Offload files written by this run.
    pub written: usize,
    /// Offload files that were already there (touched, not written).
    pub present: usize,
}

impl Summary {
    /// The one summary line, without a newline.
    pub fn line(&self) -> String {
        let percent = match self.bytes_in {
            0 => 100.0,
            n => self.bytes_out as f64 * 100.0 / n as f64,
        };
        format!(
            "jkz-compress: {} section(s) offloaded, {} -> {} bytes ({percent:.1}%); {} file(s) written, {} already present",
            self.offloaded, self.bytes_in, self.bytes_out, self.written, self.present
        )
    }
}

/// Compresses `src` to `out`. Notes (an unmet budget) go to `notes`.
pub fn compress(
    src: &Source,
    settings: Settings,
    state: &StateDir,
    out: &mut impl Write,
    notes: &mut impl Write,
) -> Result<Summary, Failure> {
    settings.validate()?;
    let store = Store::new(state)?;
    let mut summary = Summary {
        bytes_in: src.len(),
        ..Summary::default()
    };
    let read_err = |name: &str, e| Failure::io(IO_FAILED, format!("reading {name}"), e);
    let mut outline = plan::outline(src).map_err(|e| read_err(src.name(), e))?;
    // Never write what restore would refuse: a line that looks like a
    // marker in the input must be one that verifies.
    restore::refuse_unrestorable(src, state, std::mem::take(&mut outline.markers))?;
    let Some(budget) = settings.budget else {
        let plan = store
            .plan(src, &outline, settings.threshold, settings.excerpt)
            .map_err(|e| read_err(src.name(), e))?;
        summary.bytes_out = store.write(src, &plan, out, &mut summary)?;
        return Ok(summary);
    };
    // The search of `budget.rs`, round by round; `doc` is the document a
    // round works on: the input, then the previous round's output.
    let floor = settings.floor().min(settings.threshold);
    let mut doc = None::<Source>;
    let mut buf = vec![0; source::COPY_BUFFER];
    let mut first = Some(outline);
    loop {
        let current = doc.as_ref().unwrap_or(src);
        let err = |e| read_err(current.name(), e);
        let outline = match first.take() {
            Some(outline) => outline,
            None => plan::outline(current).map_err(err)?,
        };
        let mut counts = budget::LineCounts::default();
        let mut smallest: Option<(plan::Plan, u64)> = None;
        for threshold in budget::ladder(settings.threshold, floor) {
            let candidate = store
                .plan(current, &outline, threshold, settings.excerpt)
                .map_err(err)?;
            let len = budget::exact_len(current, &candidate, store.path_len, &mut counts, &mut buf)
                .map_err(err)?;
            if len <= budget {
                summary.bytes_out = store.write(current, &candidate, out, &mut summary)?;
                return Ok(summary);
            }
            if smallest.as_ref().is_none_or(|(_, least)| len < *least) {
                smallest = Some((candidate, len));
            }
        }
        let (best, len) = smallest.expect("the ladder has at least one step");
        let stop = best.offloads.is_empty() || (doc.is_some() && len >= current.len());
        if stop {
            let _ = writeln!(
                notes,
                "jkz-compress: cannot fit the budget of {budget} bytes: the output is {} bytes, the \
                 smallest found ({} of them in protected blocks and markers, which are never \
                 offloaded; thresholds tried: {} down to {floor})",
                if doc.is_some() { current.len() } else { len },
                outline.kept_bytes(),
                settings.threshold
            );
            summary.bytes_out = match doc {
                // The previous round's output is the answer.
                Some(ref done) => {
                    let mut copy = |chunk: &[u8]| out.write_all(chunk);
                    done.for_each_chunk(0, done.len(), &mut buf, &mut copy)
                        .and_then(|()| out.flush())
                        .map_err(|e| {
                            Failure::io(IO_FAILED, "writing the compressed document", e)
                        })?;
                    done.len()
                }
                None => store.write(current, &best, out, &mut summary)?,
            };
            return Ok(summary);
        }
        let mut next = tempfile::tempfile()
            .map(io::BufWriter::new)
            .map_err(|e| Failure::io(IO_FAILED, "creating a temp file", e))?;
        let len = store.write(current, &best, &mut next, &mut summary)?;
        let file = next
            .into_inner()
            .map_err(|e| Failure::io(IO_FAILED, "writing a temp file", e.into_error()))?;
        doc = Some(Source::from_temp(file, len, src.name()));
    }
}

/// The offload store of one run: where files go and how markers name them.
struct Store<'a> {
    state: &'a StateDir,
    /// The absolute offload directory, as markers name it.
    marker_dir: String,
    /// The length of a marker's `path=` value.
    path_len: usize,
}

impl<'a> Store<'a> {
    fn new(state: &'a StateDir) -> Result<Store<'a>, Failure> {
        let marker_dir = source::absolute(&state.join(OFFLOAD_DIR))
            .display()
            .to_string();
        if marker_dir.contains(['\n', '\r']) {
            return Err(Failure::new(
                USAGE,
                format!("the offload directory {marker_dir:?} has a line break in its name"),
            ));
        }
        let path_len = marker_dir.len() + 1 + 64 + ".md".len();
        Ok(Store {
            state,
            marker_dir,
            path_len,
        })
    }

    fn plan(
        &self,
        src: &Source,
        outline: &plan::Outline,
        threshold: u64,
        excerpt: Excerpt,
    ) -> io::Result<plan::Plan> {
        plan::plan(src, outline, threshold, excerpt)
    }

    /// Stores the plan's offloads, then writes its output to `out`; adds
    /// what it did to `summary` and returns the bytes written.
    fn write(
        &self,
        src: &Source,
        plan: &plan::Plan,
        out: &mut impl Write,
        summary: &mut Summary,
    ) -> Result<u64, Failure> {
        let described = if plan.offloads.is_empty() {
            Vec::new()
        } else {
            let dir = self.offload_dir(plan.offloads.len())?;
            let stored = offload::store(src, plan, &dir).map_err(|e| {
                Failure::io(
                    STORE_FAILED,
                    format!(
                        "writing an offload file in {}; nothing was written",
                        dir.display()
                    ),
                    e,
                )
            })?;
            summary.offloaded += plan.offloads.len();
            summary.written += stored.written;
            summary.present += stored.present;
            stored.offloads
        };
        offload::write_output(src, plan, &described, &self.marker_dir, out)
            .and_then(|len| out.flush().map(|()| len))
            .map_err(|e| Failure::io(IO_FAILED, "writing the compressed document", e))
    }

    fn offload_dir(&self, sections: usize) -> Result<std::path::PathBuf, Failure> {
        match self.state.ensure_subdir(OFFLOAD_DIR) {
            Ok(Some(dir)) => Ok(dir),
            Ok(None) => Err(Failure::new(
                NO_STATE_DIR,
                format!(
                    "{sections} section(s) are over the threshold, nothing was written: {}",
                    self.state.missing()
                ),
            )),
            Err(e) => Err(Failure::io(
                STORE_FAILED,
                format!(
                    "creating {}; nothing was written",
                    self.state.join(OFFLOAD_DIR).display()
                ),
                e,
            )),
        }
    }
}

pub use restore::{restore, restore_with, Missing, Restored};

#[cfg(test)]
mod props;
