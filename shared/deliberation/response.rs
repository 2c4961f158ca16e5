//! The full response, kept while it streams: hashed (sha256), held in
//! memory up to [`INLINE_MAX`](super::INLINE_MAX) bytes, and past that
//! written to a temp file in `state/context-offload/` that becomes
//! `<sha256>.txt` at the end (write-once: the same answer twice is one file).
//!
//! The hashing and writing run on a thread of their own, fed the bytes the
//! truncation engine reads ([`ResponseSink::push`]), so they overlap with
//! the engine's scan. At most [`QUEUE`] buffers wait for the thread; the
//! reading side then waits: memory stays bounded when the disk is slower
//! than the pipe.
//!
//! The response file is renamed into place without an fsync, like the
//! engine's full output (see `truncate::full_output`): while the system
//! runs no reader sees half of it, and forcing hundreds of megabytes to disk
//! on every agent call would cost more than the call's truncation. After a
//! power loss it may be short; `jkz deliberations show` then reports the
//! mismatch with the record's sha256 instead of printing a wrong answer.

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::{self, JoinHandle};

use sha2::{Digest, Sha256};

use crate::atomic::AtomicFile;

/// Buffers that may wait for the writer before the reading side waits.
pub const QUEUE: usize = 4;

/// Where a response ended up.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stored {
    pub bytes: u64,
    pub sha256: String,
    /// The response itself, when it is kept inline.
    pub inline: Option<String>,
    /// `context-offload/<sha256>.txt`, relative to the state directory.
    pub file: Option<String>,
}

/// The lowercase hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

pub fn hex(digest: &[u8]) -> String {
    let mut s = String::with_capacity(digest.len() * 2);
    for b in digest {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// A response being kept by its writer thread.
pub struct ResponseSink {
    chunks: Option<SyncSender<Vec<u8>>>,
    recycled: Receiver<Vec<u8>>,
    writer: JoinHandle<io::Result<Stored>>,
}

impl ResponseSink {
    /// Starts keeping a response; `offload` is the state directory's
    /// `context-offload/` (it must exist).
    pub fn start(offload: PathBuf, inline_max: usize) -> io::Result<ResponseSink> {
        let (chunks, to_write) = mpsc::sync_channel::<Vec<u8>>(QUEUE);
        let (give_back, recycled) = mpsc::channel();
        let writer = thread::Builder::new()
            .name("response".into())
            .spawn(move || keep(to_write, give_back, offload, inline_max))?;
        Ok(ResponseSink {
            chunks: Some(chunks),
            recycled,
            writer,
        })
    }

    /// Queues a copy of the next bytes of the response.
    pub fn push(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let Some(chunks) = &self.chunks else { return };
        let mut buf = self.recycled.try_recv().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(bytes);
        if chunks.send(buf).is_err() {
            // The thread ended early (it panicked); finish reports it.
            self.chunks = None;
        }
    }

    /// Waits for the thread: where the response is, or why it is not.
    pub fn finish(mut self) -> io::Result<Stored> {
        self.chunks = None;
        match self.writer.join() {
            Ok(outcome) => outcome,
            Err(_) => Err(io::Error::other("the response writer panicked")),
        }
    }
}

/// The writer thread. After a write error it keeps hashing (and draining
/// the queue, so the reader never blocks) and reports the error at the end.
fn keep(
    chunks: Receiver<Vec<u8>>,
    give_back: mpsc::Sender<Vec<u8>>,
    offload: PathBuf,
    inline_max: usize,
) -> io::Result<Stored> {
    let mut hasher = Sha256::new();
    let mut inline: Vec<u8> = Vec::new();
    let mut file: Option<AtomicFile> = None;
    let mut failed: Option<io::Error> = None;
    let mut total = 0u64;
    let placeholder = offload.join("response.txt");
    for chunk in chunks {
        hasher.update(&chunk);
        total += chunk.len() as u64;
        if failed.is_none() {
            let outcome = if file.is_none() && inline.len() + chunk.len() <= inline_max {
                inline.extend_from_slice(&chunk);
                Ok(())
            } else {
                spill(&mut file, &placeholder, &mut inline).and_then(|f| f.write_all(&chunk))
            };
            if let Err(e) = outcome {
                failed = Some(e);
                file = None; // dropped: the temp file goes
            }
        }
        let _ = give_back.send(chunk);
    }
    if let Some(e) = failed {
        return Err(e);
    }
    let sha256 = hex(&hasher.finalize());
    if file.is_none() {
        match String::from_utf8(inline) {
            Ok(text) => {
                return Ok(Stored {
                    bytes: total,
                    sha256,
                    inline: Some(text),
                    file: None,
                })
            }
            // Not text: kept as a file, whatever its size.
            Err(e) => inline = e.into_bytes(),
        }
    }
    spill(&mut file, &placeholder, &mut inline)?;
    let mut file = file.take().expect("spilled");
    file.flush()?;
    let name = format!("{sha256}.txt");
    // Already there: the same answer, kept before.
    file.commit_new_unsynced_as(offload.join(&name))?;
    Ok(Stored {
        bytes: total,
        sha256,
        inline: None,
        file: Some(format!("{}/{name}", crate::compress::OFFLOAD_DIR)),
    })
}

/// The response file, started (with what was held inline) on first use.
fn spill<'a>(
    file: &'a mut Option<AtomicFile>,
    placeholder: &std::path::Path,
    inline: &mut Vec<u8>,
) -> io::Result<&'a mut AtomicFile> {
    if file.is_none() {
        let mut f = AtomicFile::create(placeholder)?;
        f.write_all(inline)?;
        *inline = Vec::new();
        *file = Some(f);
    }
    Ok(file.as_mut().expect("just set"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keep_all(pieces: &[&[u8]], inline_max: usize) -> (tempfile::TempDir, Stored) {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = ResponseSink::start(dir.path().to_path_buf(), inline_max).unwrap();
        for p in pieces {
            sink.push(p);
        }
        let stored = sink.finish().unwrap();
        (dir, stored)
    }

    #[test]
    fn small_text_is_inline_larger_or_binary_is_a_content_addressed_file() {
        let (dir, s) = keep_all(&[b"hello ", b"world"], 16);
        assert_eq!(s.inline.as_deref(), Some("hello world"));
        assert_eq!(s.sha256, sha256_hex(b"hello world"));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

        let (dir, s) = keep_all(&[b"0123456789", b"0123456789", b"x"], 16);
        assert_eq!(s.inline, None);
        let name = format!("{}.txt", sha256_hex(b"01234567890123456789x"));
        assert_eq!(s.file.as_deref(), Some(&*format!("context-offload/{name}")));
        assert_eq!(
            std::fs::read(dir.path().join(&name)).unwrap(),
            b"01234567890123456789x"
        );
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temp file left"
        );

        let (_dir, s) = keep_all(&[b"\xff\xfe"], 16);
        assert!(s.inline.is_none() && s.file.is_some());
        let (_dir, s) = keep_all(&[], 16);
        assert_eq!((s.bytes, s.inline.as_deref()), (0, Some("")));
    }
}
