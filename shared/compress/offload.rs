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
//! written while the next offloads are hashed, and all of them made durable
//! with about one flush per 32 MiB instead of one per file.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::fs::{self, File, FileTimes};
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
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
    /// `offloads[i]` describes `plan.offloads[i]`: what its marker says
    /// besides what the plan knows, kept small (a document can have
    /// thousands of offloads; the marker lines are made as they are written).
    pub offloads: Vec<Described>,
    /// Files written by this run.
    pub written: usize,
    /// Files that were already there (touched, not written).
    pub present: usize,
}

/// An offload's hash and line count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Described {
    pub sha256: [u8; 32],
    pub lines: u64,
}

impl Described {
    /// The hash in lower-case hex: the file's name without `.md`.
    pub fn hex(&self) -> String {
        let mut hex = String::with_capacity(64);
        for b in self.sha256 {
            let _ = write!(hex, "{b:02x}");
        }
        hex
    }

    /// The marker of `offload`, whose file is in `marker_dir`.
    pub fn marker(&self, offload: &Offload, marker_dir: &str) -> Marker {
        let sha256 = self.hex();
        Marker {
            path: format!("{marker_dir}/{sha256}.md"),
            sha256,
            bytes: offload.len,
            lines: self.lines,
            excerpt: offload.excerpt,
        }
    }
}

/// Makes sure each offload of `plan` is in `dir` and describes each.
pub fn store(src: &Source, plan: &Plan, dir: &Path) -> io::Result<Stored> {
    let mut buf = vec![0; COPY_BUFFER];
    let mut batch = AtomicBatch::new(dir);
    let mut stored = Stored::default();
    // The same content twice in one document: one file. (Only new files
    // are remembered: an existing one is found again on disk.)
    let mut writing = HashSet::new();
    // An offload that fits in a buffer is read once: hashed there, then
    // handed to the batch's writing thread if its file is new.
    let mut held = batch.buffer()?;
    for offload in &plan.offloads {
        let small = load(src, offload, &mut held)?;
        let described = if small {
            describe(offload, |sink| sink(&held))?
        } else {
            describe(offload, |sink| for_each_piece(src, offload, &mut buf, sink))?
        };
        if !writing.contains(&described.sha256) {
            let dest = dir.join(format!("{}.md", described.hex()));
            if reuse(&dest, offload.len) {
                stored.present += 1;
            } else {
                if small {
                    let next = batch.buffer()?;
                    batch.add_bytes(dest, std::mem::replace(&mut held, next))?;
                } else {
                    batch.add(dest, |file| write_offload(src, offload, file, &mut buf))?;
                }
                writing.insert(described.sha256);
                stored.written += 1;
            }
        }
        stored.offloads.push(described);
    }
    batch.commit()?;
    Ok(stored)
}

/// Reads an offload's content into `held` when it is at most
/// [`COPY_BUFFER`] bytes (true), else leaves `held` empty (false).
fn load(src: &Source, offload: &Offload, held: &mut Vec<u8>) -> io::Result<bool> {
    held.clear();
    if offload.len > COPY_BUFFER as u64 {
        return Ok(false);
    }
    held.resize(offload.len as usize, 0);
    let mut at = 0;
    for &piece in &offload.pieces {
        let n = piece.len() as usize;
        let dest = &mut held[at..at + n];
        match piece {
            Piece::Input { start, .. } => src.read_exact_at(dest, start)?,
            Piece::Newline => dest.copy_from_slice(b"\n"),
        }
        at += n;
    }
    debug_assert_eq!(at, held.len());
    Ok(true)
}

/// Hashes an offload's content, which `feed` passes to the sink it is
/// given, and counts its lines.
fn describe(
    offload: &Offload,
    feed: impl FnOnce(&mut dyn FnMut(&[u8]) -> io::Result<()>) -> io::Result<()>,
) -> io::Result<Described> {
    let mut hasher = Sha256::new();
    let mut newlines = 0u64;
    let mut last = None;
    feed(&mut |chunk: &[u8]| {
        hasher.update(chunk);
        newlines += memchr::memchr_iter(b'\n', chunk).count() as u64;
        last = chunk.last().copied().or(last);
        Ok(())
    })?;
    Ok(Described {
        sha256: hasher.finalize().into(),
        lines: count_lines(newlines, offload.len, last),
    })
}

/// True when `dest` is already a regular file of `len` bytes, which is then
/// touched (the name is the content's hash, so the content is the same).
/// Anything else there — nothing, another size, a link, a FIFO, a file that
/// cannot be touched, a file no longer under that name once touched (moved
/// aside by `jkz gc`) — is replaced by a fresh copy.
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
        // Touched, but still the file of that name? `jkz gc` may have moved
        // it aside meanwhile to remove it: then a fresh copy is written.
        let named = fs::symlink_metadata(dest)?;
        Ok(named.dev() == meta.dev() && named.ino() == meta.ino())
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

/// Writes the planned output; `stored.offloads[i]` describes
/// `plan.offloads[i]`, whose file is in `marker_dir`. Returns the number of
/// bytes written.
pub fn write_output(
    src: &Source,
    plan: &Plan,
    stored: &[Described],
    marker_dir: &str,
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
                let line = stored[i].marker(&plan.offloads[i], marker_dir).line();
                out.write_all(line.as_bytes())?;
                written += line.len() as u64;
            }
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::super::props::check;
    use super::*;
    use crate::compress::Settings;

    /// Offloads just under, at and just over the size read once into a
    /// buffer (the rest are streamed twice), and the same content twice:
    /// all round-trip, and compressing again changes nothing.
    #[test]
    fn offloads_at_the_buffer_size_boundary_round_trip() {
        let mut doc = String::new();
        let mut sizes = Vec::new();
        for size in (COPY_BUFFER - 2..=COPY_BUFFER + 2).chain([COPY_BUFFER]) {
            let head = format!("# Section of {size} bytes\n");
            let line = format!("a line of the section of {size} bytes\n");
            let mut section = head.clone();
            while section.len() + line.len() <= size {
                section.push_str(&line);
            }
            section.push_str(&"x".repeat(size - section.len() - 1));
            section.push('\n');
            assert_eq!(section.len(), size);
            sizes.push(size as u64);
            doc.push_str(&section);
        }
        let out = check(doc.as_bytes(), Settings::default()).expect("nothing looks like a marker");
        let out = String::from_utf8(out).unwrap();
        let offloaded: Vec<u64> = out
            .lines()
            .filter_map(|line| Marker::parse(line.as_bytes()))
            .map(|m| m.bytes)
            .collect();
        assert_eq!(offloaded, sizes, "{out}");
    }
}
