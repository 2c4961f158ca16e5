//! The full, untruncated input, kept under `state/context-offload/` when a
//! run truncates: truncation protects the live window, not the audit trail.
//!
//! The file is `full-<UTC time>-<pid>.txt` (time to the millisecond, e.g.
//! `full-20250301T120000.123Z-4711.txt`): named by when and by whom, not by
//! content, because the name must be known while the input still streams
//! and a 4 GiB input is not hashed twice. It is started only once the input
//! is known to be longer than the cap, so an input that fits leaves nothing
//! behind. A failure here never costs the truncated output: it is a warning
//! on stderr and the marker simply names no file.
//!
//! # Written beside the reading, renamed without fsync
//!
//! A writer thread takes the truncator's filled tail chunks as they leave
//! the window ([`FullOutput::write`]) and hands each back once it is
//! written ([`FullOutput::written`]), so reading and scanning the input
//! overlap with writing the copy, no byte is copied in user space, and no
//! buffer is allocated per write. At most [`QUEUE`] chunks wait for the
//! writer; the reading side then waits, which keeps memory bounded when the
//! disk is slower than the pipe.
//!
//! The file is written to a temp file beside its final name and renamed
//! into place at the end, but never fsynced. The copy is an audit trail,
//! not pipeline state: forcing hundreds of megabytes to disk on every call
//! of an agent would cost more than the truncation itself (on the
//! reference machine, writing 512 MiB takes 0.30 s, with fsync 0.73 s).
//! What that means: while the system runs, a reader never sees half a file
//! under its final name; after a power loss the copy may be missing or
//! short (the marker may then name a file that is not there).

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::{self, JoinHandle};

use crate::atomic::AtomicFile;
use crate::state_dir::StateDir;

use super::head_tail::Chunk;

/// The subdirectory of the state directory that holds full outputs.
pub use crate::state_dir::layout::OFFLOAD_DIR as SUBDIR;

/// Chunks that may wait for the writer before the reading side waits.
pub const QUEUE: usize = 4;

/// A full output being written by its writer thread.
#[derive(Debug)]
pub struct FullOutput {
    dest: PathBuf,
    /// `None` once the writer has stopped (after an error) or at commit.
    chunks: Option<SyncSender<Chunk>>,
    written: Receiver<Chunk>,
    /// Gives back the temp file, or the first write error (the temp file
    /// is then already removed).
    writer: JoinHandle<io::Result<AtomicFile>>,
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
        let file = AtomicFile::create(&dest).map_err(|e| message(&dest, &e))?;
        let (chunks, to_write) = mpsc::sync_channel::<Chunk>(QUEUE);
        let (give_back, written) = mpsc::channel();
        let writer = thread::Builder::new()
            .name("full-output".into())
            .spawn(move || write_all(file, to_write, give_back))
            .map_err(|e| message(&dest, &e))?;
        Ok(Some(FullOutput {
            dest,
            chunks: Some(chunks),
            written,
            writer,
        }))
    }

    /// Queues the next chunk of the input (chunks come in input order,
    /// without gaps, from offset 0), waiting while [`QUEUE`] chunks wait.
    /// After a write error the chunk comes straight back.
    pub fn write(&mut self, chunk: Chunk) -> Option<Chunk> {
        let Some(chunks) = &self.chunks else {
            return Some(chunk);
        };
        match chunks.send(chunk) {
            Ok(()) => None,
            Err(mpsc::SendError(chunk)) => {
                // The writer stopped on an error; commit reports it.
                self.chunks = None;
                Some(chunk)
            }
        }
    }

    /// A chunk the writer is done with, for reuse.
    pub fn written(&self) -> Option<Chunk> {
        self.written.try_recv().ok()
    }

    /// Waits for the writer and puts the file in place; its path, or `None`
    /// (with a warning) when writing or renaming failed.
    pub fn commit(mut self, warnings: &mut dyn Write) -> Option<PathBuf> {
        self.chunks = None; // the writer ends once the queue is empty
        let outcome = match self.writer.join() {
            Ok(written) => written.and_then(AtomicFile::commit_unsynced),
            Err(_) => Err(io::Error::other("the writer thread panicked")),
        };
        match outcome {
            Ok(()) => Some(self.dest),
            Err(e) => {
                let _ = writeln!(
                    warnings,
                    "jkz-truncate: warning: {}; the truncated output is still printed",
                    message(&self.dest, &e)
                );
                None
            }
        }
    }
}

/// The writer thread: writes each chunk, gives it back, and stops at the
/// first error (dropping, and so removing, the temp file).
fn write_all(
    mut file: AtomicFile,
    chunks: Receiver<Chunk>,
    give_back: mpsc::Sender<Chunk>,
) -> io::Result<AtomicFile> {
    for chunk in chunks {
        file.write_all(chunk.bytes())?;
        // The reading side may have finished already; then nobody reuses it.
        let _ = give_back.send(chunk);
    }
    Ok(file)
}

fn message(dest: &Path, e: &io::Error) -> String {
    format!("cannot save the full output as {}: {e}", dest.display())
}
