//! The content-addressed store (`state/context-offload/<sha256>.md`) and the
//! writing of a planned output.
//!
//! Every offload file is written before a single byte goes to stdout: when
//! the store cannot be written (a read-only directory, a full disk) the
//! caller gets an error and stdout stays empty, never half a document.
//!
//! Files are write-once: the name is the sha256 of the content, so a file
//! that is already there with the right size is not written again. It is
//! touched instead (its times set to now): a document that uses it again
//! keeps it alive for `jkz gc`, which judges by modification time. New files
//! are written as one [`AtomicBatch`]: each whole or absent after a crash,
//! their disk flushes overlapping.

use std::collections::HashSet;
use std::fs::{self, File, FileTimes};
use std::io::{self, Write};
use std::path::Path;
use std::time::SystemTime;

use sha2::{Digest, Sha256};

use super::batch::AtomicBatch;
use super::marker::{count_lines, Marker};
use super::plan::{Item, Offload, Piece, Plan};
use super::source::{Source, COPY_BUFFER};
use crate::state_dir::open_state_file;

/// What [`store`] did.
#[derive(Debug, Default)]
pub struct Stored {
    /// `markers[i]` stands for `plan.offloads[i]`.
    pub markers: Vec<Marker>,
    /// Files written by this run.
    pub written: usize,
    /// Files that were already there (touched, not written).
    pub present: usize,
}

/// Makes sure each offload of `plan` is in `dir` and returns their markers,
/// whose `path=` is `<marker_dir>/<sha256>.md`.
pub fn store(src: &Source, plan: &Plan, dir: &Path, marker_dir: &str) -> io::Result<Stored> {
    let mut buf = vec![0; COPY_BUFFER];
    let mut batch = AtomicBatch::new(dir);
    let mut stored = Stored::default();
    // The same content twice in one document: one file. (Only new files
    // are remembered: an existing one is found again on disk.)
    let mut writing = HashSet::new();
    for offload in &plan.offloads {
        let (marker, digest) = describe(src, offload, marker_dir, &mut buf)?;
        if !writing.contains(&digest) {
            let dest = dir.join(format!("{}.md", marker.sha256));
            if reuse(&dest, offload.len) {
                stored.present += 1;
            } else {
                batch.add(dest, |file| write_offload(src, offload, file, &mut buf))?;
                writing.insert(digest);
                stored.written += 1;
            }
        }
        stored.markers.push(marker);
    }
    batch.commit()?;
    Ok(stored)
}

/// Hashes an offload's content and counts its lines: its marker and hash.
fn describe(
    src: &Source,
    offload: &Offload,
    marker_dir: &str,
    buf: &mut [u8],
) -> io::Result<(Marker, [u8; 32])> {
    let mut hasher = Sha256::new();
    let mut newlines = 0u64;
    let mut last = None;
    for_each_piece(src, offload, buf, |chunk| {
        hasher.update(chunk);
        newlines += memchr::memchr_iter(b'\n', chunk).count() as u64;
        last = chunk.last().copied().or(last);
        Ok(())
    })?;
    let digest: [u8; 32] = hasher.finalize().into();
    let sha256: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let marker = Marker {
        path: format!("{marker_dir}/{sha256}.md"),
        sha256,
        bytes: offload.len,
        lines: count_lines(newlines, offload.len, last),
        excerpt: offload.excerpt,
    };
    Ok((marker, digest))
}

/// True when `dest` is already a regular file of `len` bytes, which is then
/// touched (the name is the content's hash, so the content is the same).
/// Anything else there — nothing, another size, a link, a FIFO, a file that
/// cannot be touched — is replaced by a fresh copy.
fn reuse(dest: &Path, len: u64) -> bool {
    let listed = fs::symlink_metadata(dest);
    if !listed.is_ok_and(|m| m.is_file() && m.len() == len) {
        return false;
    }
    let touched = open_state_file(dest).and_then(|file| {
        let meta = file.metadata()?;
        if !meta.is_file() || meta.len() != len {
            return Ok(false);
        }
        let now = SystemTime::now();
        file.set_times(FileTimes::new().set_accessed(now).set_modified(now))?;
        Ok(true)
    });
    touched.unwrap_or(false)
}

fn write_offload(
    src: &Source,
    offload: &Offload,
    file: &mut File,
    buf: &mut [u8],
) -> io::Result<()> {
    for_each_piece(src, offload, buf, |chunk| file.write_all(chunk))
}

/// Calls `sink` on an offload's content, in order.
fn for_each_piece(
    src: &Source,
    offload: &Offload,
    buf: &mut [u8],
    mut sink: impl FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<()> {
    for &piece in &offload.pieces {
        match piece {
            Piece::Input { start, end } => src.for_each_chunk(start, end, buf, &mut sink)?,
            Piece::Newline => sink(b"\n")?,
        }
    }
    Ok(())
}

/// Writes the planned output; `markers[i]` stands for `plan.offloads[i]`.
/// Returns the number of bytes written.
pub fn write_output(
    src: &Source,
    plan: &Plan,
    markers: &[Marker],
    out: &mut impl Write,
) -> io::Result<u64> {
    let mut buf = vec![0; COPY_BUFFER];
    let mut written = 0;
    for item in &plan.items {
        match *item {
            Item::Text(Piece::Input { start, end }) | Item::Kept { start, end } => {
                src.for_each_chunk(start, end, &mut buf, |chunk| out.write_all(chunk))?;
                written += end - start;
            }
            Item::Text(Piece::Newline) => {
                out.write_all(b"\n")?;
                written += 1;
            }
            Item::Offload(i) => {
                let line = markers[i].line();
                out.write_all(line.as_bytes())?;
                written += line.len() as u64;
            }
        }
    }
    Ok(written)
}
