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
//!
//! # Kept as a response
//!
//! With [`Keep::Response`] (`jkz run`, `jkz-truncate --record`) the whole
//! input is kept whatever its length, for a deliberation record, and the
//! file the markers name is the record's response file: one file, written
//! once. The writer thread hashes (sha256) each chunk before writing it,
//! and the temp file is synced and renamed to `<sha256>.txt` at the end
//! (content-addressed, write-once: the same answer twice is one file),
//! before any marker is written. Unlike a full output it is synced (its
//! content, before the rename): a record names it, and a write-once file
//! left short by a power loss would never be repaired. An input that is not truncated is never
//! handed to the thread: it is all in memory already, and is kept inline
//! (valid UTF-8 of at most `inline_max` bytes) or written to its file at
//! the end ([`Keeper`]).
//!
//! # Bounded, and marked when it is not the whole input
//!
//! A kept copy holds at most [`KEEP_LIMIT`] bytes (1 GiB), however long the
//! input runs: a runaway producer fills the window's cap, never the disk.
//! The bytes past the bound are read (the output still needs the input's
//! tail) but not kept. A copy cut at the bound, or one whose input stopped
//! early (its reader went away, a read failed), says so: a full output is
//! named `full-<UTC time>-<pid>-incomplete.txt`, a response says why
//! ([`Kept::incomplete`]), and its record shows it.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::{self, JoinHandle};

use sha2::{Digest, Sha256};

use crate::atomic::AtomicFile;
use crate::state_dir::StateDir;

use super::head_tail::Chunk;
pub use crate::deliberation::response::hex;

use crate::state_dir::layout::OFFLOAD_DIR;

/// Chunks that may wait for the writer before the reading side waits.
pub const QUEUE: usize = 4;

/// The most bytes a kept copy (a full output, a response) holds: 1 GiB,
/// far past any window's cap, small enough that a runaway producer cannot
/// fill the disk.
pub const KEEP_LIMIT: u64 = 1 << 30;

/// Where and how the full input is kept.
#[derive(Clone, Debug)]
pub enum Keep {
    /// Only when the input is truncated, as `full-<UTC time>-<pid>.txt` in
    /// this state directory's `context-offload/` (`jkz-truncate`).
    WhenTruncated(StateDir),
    /// Always, hashed: inline when it is not truncated and is valid UTF-8
    /// of at most `inline_max` bytes, else as `<sha256>.txt` in `offload`
    /// (which must exist). The markers name that file.
    Response { offload: PathBuf, inline_max: usize },
}

/// A response kept whole.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Kept {
    pub bytes: u64,
    /// Lowercase hex.
    pub sha256: String,
    /// The response itself, when it is kept inline.
    pub inline: Option<String>,
    /// `offload/<sha256>.txt`, when it is kept as a file.
    pub file: Option<PathBuf>,
    /// The bytes of the input seen: more than `bytes` when the input passed
    /// the bound ([`KEEP_LIMIT`]) and only its head is kept.
    pub seen: u64,
    /// Why the input was not read to its end, when it was not (it stopped
    /// early: its reader went away, a read failed).
    pub stopped: Option<String>,
}

impl Kept {
    /// Why this is not the whole input, when it is not (one line).
    pub fn incomplete(&self) -> Option<String> {
        incompleteness(self.stopped.as_deref(), self.bytes, self.seen)
    }
}

/// Why a kept copy of `kept` bytes, of `seen` read, is not the whole input
/// (`stopped`: why the input ended early, if it did); `None` when it is.
fn incompleteness(stopped: Option<&str>, kept: u64, seen: u64) -> Option<String> {
    let stopped = stopped.map(|why| format!("the input stopped early ({why})"));
    let cut = (seen > kept).then(|| {
        format!(
            "only its first {} of {} bytes are kept (the bound on a kept copy)",
            crate::thousands::thousands(kept),
            crate::thousands::thousands(seen),
        )
    });
    match (stopped, cut) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    }
}

/// Hashes a response as it comes and holds it in memory, or (once it is
/// longer than `inline_max`) writes it to a temp file in `offload` that
/// [`Keeper::finish`] renames to `<sha256>.txt`. Past `limit` bytes the
/// response is counted, not kept.
#[derive(Debug)]
pub struct Keeper {
    offload: PathBuf,
    inline_max: usize,
    limit: u64,
    hasher: Sha256,
    /// Bytes kept (and hashed).
    bytes: u64,
    /// Bytes pushed.
    seen: u64,
    held: Vec<u8>,
    file: Option<AtomicFile>,
}

impl Keeper {
    pub fn new(offload: PathBuf, inline_max: usize, limit: u64) -> Keeper {
        Keeper {
            offload,
            inline_max,
            limit,
            hasher: Sha256::new(),
            bytes: 0,
            seen: 0,
            held: Vec::new(),
            file: None,
        }
    }

    /// Takes the next bytes of the response.
    pub fn push(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.seen += bytes.len() as u64;
        let room = usize::try_from(self.limit - self.bytes).unwrap_or(usize::MAX);
        let bytes = &bytes[..bytes.len().min(room)];
        if bytes.is_empty() {
            return Ok(());
        }
        self.hasher.update(bytes);
        self.bytes += bytes.len() as u64;
        if self.file.is_none() && self.held.len() + bytes.len() <= self.inline_max {
            self.held.extend_from_slice(bytes);
            return Ok(());
        }
        self.spill()?.write_all(bytes)
    }

    /// The response file, started (with what was held) on first use.
    fn spill(&mut self) -> io::Result<&mut AtomicFile> {
        if self.file.is_none() {
            let mut file = AtomicFile::create(self.offload.join("response.txt"))?;
            file.write_all(&self.held)?;
            self.held = Vec::new();
            self.file = Some(file);
        }
        Ok(self.file.as_mut().expect("just set"))
    }

    /// Where the response is: inline when it was held and is UTF-8 (and
    /// `inline` allows it), else in its content-addressed file. `stopped`:
    /// why the input ended early, if it did.
    pub fn finish(mut self, inline: bool, stopped: Option<&str>) -> io::Result<Kept> {
        let sha256 = hex(&std::mem::take(&mut self.hasher).finalize());
        let stopped = stopped.map(str::to_string);
        if self.file.is_none() && inline {
            match String::from_utf8(std::mem::take(&mut self.held)) {
                Ok(text) => {
                    return Ok(Kept {
                        bytes: self.bytes,
                        sha256,
                        inline: Some(text),
                        file: None,
                        seen: self.seen,
                        stopped,
                    })
                }
                // Not text: kept as a file, whatever its size.
                Err(e) => self.held = e.into_bytes(),
            }
        }
        let path = self.offload.join(format!("{sha256}.txt"));
        self.spill()?.flush()?;
        let mut file = self.file.take().expect("spilled");
        // Synced before the rename: the record naming it is synced next, and
        // the write-once store never repairs a file left short by a power
        // loss. (The directory is not: a lost name is a missing file the
        // same answer writes again, never a short one.)
        file.sync_content()?;
        // Already there: the same answer, kept before.
        file.commit_new_unsynced_as(&path)?;
        Ok(Kept {
            bytes: self.bytes,
            sha256,
            inline: None,
            file: Some(path),
            seen: self.seen,
            stopped,
        })
    }
}

/// What the writer thread writes to.
#[derive(Debug)]
enum Dest {
    /// A timestamped full output.
    Plain(Capped),
    /// A response, hashed as it is written.
    Hashed(Keeper),
}

/// A full output's file, which keeps at most `limit` bytes of what it is
/// given.
#[derive(Debug)]
struct Capped {
    file: AtomicFile,
    limit: u64,
    written: u64,
    seen: u64,
}

impl Capped {
    fn push(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.seen += bytes.len() as u64;
        let room = usize::try_from(self.limit - self.written).unwrap_or(usize::MAX);
        let bytes = &bytes[..bytes.len().min(room)];
        self.written += bytes.len() as u64;
        self.file.write_all(bytes)
    }
}

/// The name of a full output that is not the whole input:
/// `full-…-<pid>-incomplete.txt` beside `dest`.
fn incomplete_name(dest: &Path) -> PathBuf {
    let stem = dest.file_stem().unwrap_or_default().to_string_lossy();
    dest.with_file_name(format!("{stem}-incomplete.txt"))
}

/// A new full output's file name: `full-<UTC time>-<pid>.txt`.
fn full_name() -> String {
    format!(
        "full-{}-{}.txt",
        chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ"),
        std::process::id()
    )
}

/// A full output to be written at once from an input held whole, without
/// a writer thread: for an input already in memory, starting the thread
/// cost more than the write (on a busy machine, up to a millisecond).
#[derive(Debug)]
pub struct WholeOutput {
    dest: PathBuf,
}

impl WholeOutput {
    /// Where a new full output in `dir`'s `context-offload/` will go;
    /// `Ok(None)` when the state directory is implicit and the project has
    /// not opted in.
    pub fn plan(dir: &StateDir) -> Result<Option<WholeOutput>, String> {
        let offload = dir
            .ensure_subdir(OFFLOAD_DIR)
            .map_err(|e| format!("cannot create {}: {e}", dir.join(OFFLOAD_DIR).display()))?;
        Ok(offload.map(|offload| WholeOutput {
            dest: absolute(offload.join(full_name())),
        }))
    }

    pub fn path(&self) -> &Path {
        &self.dest
    }

    /// Writes `bytes` (at most [`KEEP_LIMIT`] of them: a longer input is
    /// never held whole) and puts the file in place: its path, or why not.
    pub fn write(self, bytes: &[u8]) -> Result<PathBuf, String> {
        let mut file = AtomicFile::create(&self.dest).map_err(|e| message(&self.dest, &e))?;
        let kept = &bytes[..bytes
            .len()
            .min(usize::try_from(KEEP_LIMIT).unwrap_or(usize::MAX))];
        file.write_all(kept)
            .and_then(|()| file.commit_unsynced())
            .map_err(|e| message(&self.dest, &e))?;
        Ok(self.dest)
    }
}

/// A full output being written by its writer thread.
#[derive(Debug)]
pub struct FullOutput {
    /// The final name; for a response, its directory's `<sha256>.txt`
    /// (only for messages: the hash is known at the end).
    dest: PathBuf,
    /// `None` once the writer has stopped (after an error) or at commit.
    chunks: Option<SyncSender<Chunk>>,
    written: Receiver<Chunk>,
    /// Gives back what was written to, or the first write error (a temp
    /// file is then already removed).
    writer: JoinHandle<io::Result<Dest>>,
}

impl FullOutput {
    /// Starts a new full output as `keep` says, keeping at most `limit`
    /// bytes. `Ok(None)` when the state directory is implicit and the
    /// project has not opted in.
    pub fn start(keep: &Keep, limit: u64) -> Result<Option<FullOutput>, String> {
        let (dest, target) = match keep {
            Keep::WhenTruncated(dir) => {
                let offload = dir.ensure_subdir(OFFLOAD_DIR).map_err(|e| {
                    format!("cannot create {}: {e}", dir.join(OFFLOAD_DIR).display())
                })?;
                let Some(offload) = offload else {
                    return Ok(None);
                };
                let dest = absolute(offload.join(full_name()));
                let file = AtomicFile::create(&dest).map_err(|e| message(&dest, &e))?;
                let file = Capped {
                    file,
                    limit,
                    written: 0,
                    seen: 0,
                };
                (dest, Dest::Plain(file))
            }
            Keep::Response { offload, .. } => {
                let dest = offload.join("<sha256>.txt");
                let mut keeper = Keeper::new(offload.clone(), 0, limit);
                keeper.spill().map_err(|e| message(&dest, &e))?;
                (dest, Dest::Hashed(keeper))
            }
        };
        let (chunks, to_write) = mpsc::sync_channel::<Chunk>(QUEUE);
        let (give_back, written) = mpsc::channel();
        let writer = thread::Builder::new()
            .name("full-output".into())
            .spawn(move || write_all(target, to_write, give_back))
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

    /// The name the file takes when it is committed whole (a response's
    /// ends in `<sha256>.txt`, known only then).
    pub fn path(&self) -> &Path {
        &self.dest
    }

    /// Gives up the file: waits for the writer and removes what it wrote,
    /// so nothing is left behind (`jkz reduce` keeps the whole output only
    /// when it shows less than all of it).
    pub fn discard(mut self) {
        self.chunks = None;
        // Its temp file goes with what the thread gives back.
        let _ = self.writer.join();
    }

    /// A chunk the writer is done with, for reuse.
    pub fn written(&self) -> Option<Chunk> {
        self.written.try_recv().ok()
    }

    /// Waits for the writer and puts the file in place: its path (and, for
    /// a response, where and what it is), or why not, in one line.
    /// `stopped`: why the input ended early, if it did (the copy is then
    /// marked incomplete, as is one cut at its bound).
    pub fn commit(mut self, stopped: Option<&str>) -> Result<(PathBuf, Option<Kept>), String> {
        self.chunks = None; // the writer ends once the queue is empty
        let outcome = match self.writer.join() {
            Ok(written) => written.and_then(|dest| match dest {
                Dest::Plain(capped) if stopped.is_none() && capped.written == capped.seen => capped
                    .file
                    .commit_unsynced()
                    .map(|()| (self.dest.clone(), None)),
                Dest::Plain(capped) => {
                    let name = incomplete_name(&self.dest);
                    capped
                        .file
                        .commit_new_unsynced_as(&name)
                        .map(|_| (name, None))
                }
                Dest::Hashed(keeper) => keeper
                    .finish(false, stopped)
                    .map(|kept| (kept.file.clone().expect("a file"), Some(kept))),
            }),
            Err(_) => Err(io::Error::other("the writer thread panicked")),
        };
        outcome.map_err(|e| message(&self.dest, &e))
    }
}

/// The writer thread: writes each chunk, gives it back, and stops at the
/// first error (dropping, and so removing, the temp file).
fn write_all(
    mut dest: Dest,
    chunks: Receiver<Chunk>,
    give_back: mpsc::Sender<Chunk>,
) -> io::Result<Dest> {
    for chunk in chunks {
        match &mut dest {
            Dest::Plain(file) => file.push(chunk.bytes())?,
            Dest::Hashed(keeper) => keeper.push(chunk.bytes())?,
        }
        // The reading side may have finished already; then nobody reuses it.
        let _ = give_back.send(chunk);
    }
    Ok(dest)
}

/// `path` from the root: the markers name it, and a marker is read from
/// wherever its reader stands (a state directory found outside a
/// repository is relative to the current directory).
fn absolute(path: PathBuf) -> PathBuf {
    std::path::absolute(&path).unwrap_or(path)
}

fn message(dest: &Path, e: &io::Error) -> String {
    format!("cannot save the full output as {}: {e}", dest.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keep_all(pieces: &[&[u8]], inline_max: usize, inline: bool) -> (tempfile::TempDir, Kept) {
        let dir = tempfile::tempdir().unwrap();
        let mut keeper = Keeper::new(dir.path().to_path_buf(), inline_max, KEEP_LIMIT);
        for p in pieces {
            keeper.push(p).unwrap();
        }
        let kept = keeper.finish(inline, None).unwrap();
        (dir, kept)
    }

    fn sha(bytes: &[u8]) -> String {
        hex(&Sha256::digest(bytes))
    }

    #[test]
    fn small_text_is_inline_larger_or_binary_is_a_content_addressed_file() {
        let (dir, k) = keep_all(&[b"hello ", b"world"], 16, true);
        assert_eq!(k.inline.as_deref(), Some("hello world"));
        assert_eq!((k.bytes, k.sha256), (11, sha(b"hello world")));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

        let (dir, k) = keep_all(&[b"0123456789", b"0123456789", b"x"], 16, true);
        assert_eq!(k.inline, None);
        let path = dir
            .path()
            .join(format!("{}.txt", sha(b"01234567890123456789x")));
        assert_eq!(k.file.as_deref(), Some(&*path));
        assert_eq!(std::fs::read(&path).unwrap(), b"01234567890123456789x");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temp file left"
        );

        let (_dir, k) = keep_all(&[b"\xff\xfe"], 16, true);
        assert!(k.inline.is_none() && k.file.is_some());
        let (_dir, k) = keep_all(&[], 16, true);
        assert_eq!((k.bytes, k.inline.as_deref()), (0, Some("")));
        // Not inline when the caller needs a file (a truncated answer).
        let (_dir, k) = keep_all(&[b"short"], 16, false);
        assert_eq!(std::fs::read(k.file.unwrap()).unwrap(), b"short");
    }

    #[test]
    fn the_same_answer_twice_is_one_file() {
        let dir = tempfile::tempdir().unwrap();
        for _ in 0..2 {
            let mut keeper = Keeper::new(dir.path().to_path_buf(), 0, KEEP_LIMIT);
            keeper.push(b"the same answer").unwrap();
            let kept = keeper.finish(false, None).unwrap();
            assert_eq!(
                std::fs::read(kept.file.unwrap()).unwrap(),
                b"the same answer"
            );
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_response_past_its_bound_is_cut_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        for pieces in [
            &[&b"0123456789"[..], b"abc"][..],
            &[b"0123", b"456789ab", b"c"],
        ] {
            let mut keeper = Keeper::new(dir.path().to_path_buf(), 64, 10);
            for p in pieces {
                keeper.push(p).unwrap();
            }
            let kept = keeper.finish(true, None).unwrap();
            assert_eq!(kept.inline.as_deref(), Some("0123456789"));
            assert_eq!((kept.bytes, &*kept.sha256), (10, &*sha(b"0123456789")));
            let why = kept.incomplete().unwrap();
            assert!(why.contains("first 10 of 13 bytes"), "{why}");
        }
        // Exactly at the bound is whole; a stopped input says why.
        let mut keeper = Keeper::new(dir.path().to_path_buf(), 64, 10);
        keeper.push(b"0123456789").unwrap();
        let kept = keeper.finish(true, Some("stdout was closed")).unwrap();
        assert_eq!(
            kept.incomplete().as_deref(),
            Some("the input stopped early (stdout was closed)")
        );
    }

    #[test]
    fn a_full_output_past_its_bound_is_cut_and_named_incomplete() {
        use super::super::head_tail::Chunk;
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::at(dir.path());
        std::fs::create_dir_all(dir.path().join(OFFLOAD_DIR)).unwrap();
        let keep = Keep::WhenTruncated(state);
        for (limit, stopped, whole) in [
            (1 << 20, None, true),
            (5, None, false),
            (1 << 20, Some("stdout was closed"), false),
        ] {
            let mut full = FullOutput::start(&keep, limit).unwrap().unwrap();
            assert!(full.write(Chunk::of(b"0123456789")).is_none());
            let (path, kept) = full.commit(stopped).unwrap();
            assert!(kept.is_none());
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            assert_eq!(name.ends_with("-incomplete.txt"), !whole, "{name}");
            let want: &[u8] = if limit == 5 { b"01234" } else { b"0123456789" };
            assert_eq!(std::fs::read(&path).unwrap(), want);
            std::fs::remove_file(path).unwrap();
        }
    }
}
