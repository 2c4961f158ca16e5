//! The content-addressed store (`state/context-offload/<sha256>.md`) and the
//! writing of a planned output.
//!
//! Every offload file is written before a single byte goes to stdout: when
//! the store cannot be written (a read-only directory, a full disk) the
//! caller gets an error and stdout stays empty, never half a document.

use std::io::{self, Write};
use std::path::Path;

use sha2::{Digest, Sha256};

use super::marker::{count_lines, Marker};
use super::plan::{Item, Offload, Piece, Plan};
use super::source::{Source, COPY_BUFFER};
use crate::atomic::AtomicFile;

/// Writes each offload of `plan` into `dir` (write-once: an existing file of
/// the same content is kept) and returns their markers, whose `path=` is
/// `<marker_dir>/<sha256>.md`.
pub fn store(src: &Source, plan: &Plan, dir: &Path, marker_dir: &str) -> io::Result<Vec<Marker>> {
    let mut buf = vec![0; COPY_BUFFER];
    plan.offloads
        .iter()
        .map(|offload| store_one(src, offload, dir, marker_dir, &mut buf))
        .collect()
}

fn store_one(
    src: &Source,
    offload: &Offload,
    dir: &Path,
    marker_dir: &str,
    buf: &mut [u8],
) -> io::Result<Marker> {
    // The name is the hash, known only at the end: write under a temp name.
    let mut file = AtomicFile::create(dir.join("offload.md"))?;
    let mut hasher = Sha256::new();
    let mut newlines = 0u64;
    let mut last = None;
    let mut take = |chunk: &[u8]| -> io::Result<()> {
        hasher.update(chunk);
        newlines += memchr::memchr_iter(b'\n', chunk).count() as u64;
        last = chunk.last().copied().or(last);
        file.write_all(chunk)
    };
    for &piece in &offload.pieces {
        match piece {
            Piece::Input { start, end } => src.for_each_chunk(start, end, buf, &mut take)?,
            Piece::Newline => take(b"\n")?,
        }
    }
    let sha256 = format!("{:x}", hasher.finalize());
    file.commit_new_as(dir.join(format!("{sha256}.md")))?;
    Ok(Marker {
        path: format!("{marker_dir}/{sha256}.md"),
        sha256,
        bytes: offload.len,
        lines: count_lines(newlines, offload.len, last),
        excerpt: offload.excerpt,
    })
}

/// Writes the planned output; `markers[i]` stands for `plan.offloads[i]`.
pub fn write_output(
    src: &Source,
    plan: &Plan,
    markers: &[Marker],
    out: &mut impl Write,
) -> io::Result<()> {
    let mut buf = vec![0; COPY_BUFFER];
    for item in &plan.items {
        match *item {
            Item::Text(Piece::Input { start, end }) | Item::Kept { start, end } => {
                src.for_each_chunk(start, end, &mut buf, |chunk| out.write_all(chunk))?
            }
            Item::Text(Piece::Newline) => out.write_all(b"\n")?,
            Item::Offload(i) => out.write_all(markers[i].line().as_bytes())?,
        }
    }
    Ok(())
}
