//! The full, untruncated input, kept under `state/context-offload/` when a
//! run truncates: truncation protects the live window, not the audit trail.
//!
//! The file is `full-<UTC time>-<pid>.txt` (time to the millisecond, e.g.
//! `full-20250301T120000.123Z-4711.txt`): named by when and by whom, not by
//! content, because the name must be known while the input still streams
//! and a 4 GiB input is not hashed twice. It is written through an
//! [`AtomicFile`] while the input streams, so it appears whole or not at
//! all, and only once the input has exceeded the cap: an input that fits
//! leaves nothing behind. A failure here never costs the truncated output:
//! it is a warning on stderr and the marker simply names no file.

use std::io::{self, Write};
use std::path::PathBuf;

use crate::atomic::AtomicFile;
use crate::state_dir::StateDir;

/// The subdirectory of the state directory that holds full outputs.
pub const SUBDIR: &str = "context-offload";

/// A full output being written.
#[derive(Debug)]
pub struct FullOutput {
    file: Option<AtomicFile>,
}

impl FullOutput {
    /// Starts a new full output in `dir`'s `context-offload/`. `Ok(None)`
    /// when the state directory is implicit and the project has not opted in.
    pub fn start(dir: &StateDir) -> Result<Option<FullOutput>, String> {
        let offload = dir
            .ensure_subdir(SUBDIR)
            .map_err(|e| format!("cannot create {}: {e}", dir.join(SUBDIR).display()))?;
        let Some(offload) = offload else {
            return Ok(None);
        };
        let name = format!(
            "full-{}-{}.txt",
            chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ"),
            std::process::id()
        );
        let dest = offload.join(name);
        let file = AtomicFile::create(&dest)
            .map_err(|e| format!("cannot save the full output as {}: {e}", dest.display()))?;
        Ok(Some(FullOutput { file: Some(file) }))
    }

    /// Appends `bytes`; on failure warns once and gives up on the file.
    pub fn write(&mut self, bytes: &[u8], warnings: &mut dyn Write) {
        let Some(file) = &mut self.file else {
            return;
        };
        if let Err(e) = file.write_all(bytes) {
            let dest = file.dest().display().to_string();
            self.file = None; // dropping the temp file removes it
            warn(warnings, &dest, e);
        }
    }

    /// Puts the file in place; its path, or `None` (with a warning) when
    /// that failed.
    pub fn commit(self, warnings: &mut dyn Write) -> Option<PathBuf> {
        let file = self.file?;
        let dest = file.dest().to_path_buf();
        match file.commit() {
            Ok(()) => Some(dest),
            Err(e) => {
                warn(warnings, &dest.display().to_string(), e);
                None
            }
        }
    }
}

fn warn(warnings: &mut dyn Write, dest: &str, e: io::Error) {
    let _ = writeln!(
        warnings,
        "jkz-truncate: warning: cannot save the full output as {dest}: {e}; the truncated output is still printed"
    );
}
