//! `--restore`: every marker is expanded back from its offload file.
//!
//! Two passes. The first finds the markers and verifies every file (present,
//! right size, right sha256) before anything is written, so a missing or
//! altered file fails the whole restore with stdout empty. The second copies
//! the document, putting each file's content (after the inline excerpt) in
//! place of its marker line.
//!
//! A marker is a line the protected-block scanner reads as a jkz comment
//! and that [looks like one](super::marker::looks_like_marker) (starts with
//! `<!-- jkz:offload`). It must be in the exact format compress writes and
//! its attributes must match its file (sha256, bytes, lines): anything else
//! is refused like a missing file, never passed through as plain text.
//! Compress never puts a marker inside a fence, so a marker quoted in a code
//! block is content and left alone.

use std::collections::HashMap;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::marker::{count_lines, Marker, PREFIX};
use super::marker_lines::{find_markers, MarkerLine};
use super::source::{for_each_chunk, Source, COPY_BUFFER};
use super::{IO_FAILED, RESTORE_FAILED};
use crate::exit::Failure;
use crate::state_dir::layout::OFFLOAD_DIR;
use crate::state_dir::StateDir;

/// A marker found in the input, with its verified file.
#[derive(Debug)]
struct Found {
    /// The marker line `start..end` in the input, and its 1-based number.
    start: u64,
    end: u64,
    line: u64,
    marker: Marker,
    file: PathBuf,
    /// The file's last byte, and whether a newline was written after the
    /// excerpt (its last inline byte is not a newline).
    last: Option<u8>,
    newline_added: bool,
}

/// What `out` gets, in order.
#[derive(Debug)]
enum Segment {
    Input { start: u64, end: u64 },
    File { found: usize, start: u64, end: u64 },
}

/// What to do with a marker whose file is missing or altered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missing {
    /// Fail the whole restore, writing nothing ([`RESTORE_FAILED`]).
    Fail,
    /// Restore everything else and keep that marker line as it is
    /// (`--restore --partial`).
    Keep,
}

/// What a restore did.
#[derive(Debug, Default)]
pub struct Restored {
    /// Markers put back.
    pub restored: usize,
    /// One line for each marker kept (with [`Missing::Keep`]): its line,
    /// hash and what was wrong.
    pub kept: Vec<String>,
    pub bytes_in: u64,
    pub bytes_out: u64,
}

impl Restored {
    /// The one summary line (`--stats`), without a newline.
    pub fn line(&self) -> String {
        format!(
            "jkz-compress: {} section(s) restored, {} kept as markers, {} -> {} bytes",
            self.restored,
            self.kept.len(),
            self.bytes_in,
            self.bytes_out
        )
    }
}

/// Restores `src` to `out` (flushed before returning). Errors:
/// [`IO_FAILED`] for reading and writing, [`RESTORE_FAILED`] for a marker
/// whose file is missing or altered.
pub fn restore(src: &Source, state: &StateDir, out: &mut impl Write) -> Result<Restored, Failure> {
    restore_with(src, state, out, Missing::Fail)
}

/// [`restore`], choosing what a missing or altered file does.
///
/// Every marker is checked against the file it names, every time: the
/// content of a file is hashed once however many markers name it, but each
/// marker's own `bytes=` must be that file's size.
pub fn restore_with(
    src: &Source,
    state: &StateDir,
    out: &mut impl Write,
    missing: Missing,
) -> Result<Restored, Failure> {
    let io_code = IO_FAILED;
    let read_err = |e| Failure::io(io_code, format!("reading {}", src.name()), e);
    let markers = find_markers(src).map_err(read_err)?;
    let Checked {
        found,
        segments,
        kept,
    } = check(src, state, markers, missing)?;
    let mut restored = Restored {
        bytes_in: src.len(),
        kept,
        ..Restored::default()
    };
    let mut buf = vec![0; COPY_BUFFER];
    for segment in segments {
        let (copied, what) = match segment {
            Segment::Input { start, end } => (
                src.for_each_chunk(start, end, &mut buf, |c| out.write_all(c))
                    .map(|()| end - start),
                src.name().to_string(),
            ),
            Segment::File {
                found: i,
                start,
                end,
            } => {
                let path = &found[i].file;
                let copied = crate::state_dir::open_state_file(path)
                    .and_then(|f| for_each_chunk(&f, start, end, &mut buf, |c| out.write_all(c)))
                    .map(|()| end - start);
                restored.restored += 1;
                (copied, path.display().to_string())
            }
        };
        restored.bytes_out +=
            copied.map_err(|e| Failure::io(io_code, format!("copying {what} to the output"), e))?;
    }
    out.flush()
        .map_err(|e| Failure::io(io_code, "writing the restored document", e))?;
    Ok(restored)
}

/// What [`check`] found: the verified markers, the output as stretches of
/// the input and of files, and one line for each marker kept.
struct Checked {
    found: Vec<Found>,
    segments: Vec<Segment>,
    kept: Vec<String>,
}

/// Restore's first pass after finding the markers: verifies every marker
/// (it parses, its file is there with the content, size and lines it says,
/// the line before it ends its excerpt) without writing anything. A marker
/// that does not verify fails the whole check ([`RESTORE_FAILED`]) or, with
/// [`Missing::Keep`], is kept and named.
///
/// Compress runs it too ([`refuse_unrestorable`]), so it never writes a
/// document restore would refuse.
fn check(
    src: &Source,
    state: &StateDir,
    markers: Vec<MarkerLine>,
    missing: Missing,
) -> Result<Checked, Failure> {
    let read_err = |e| Failure::io(IO_FAILED, format!("reading {}", src.name()), e);
    let store = state.join(OFFLOAD_DIR);
    let mut hashed: HashMap<(String, String), Verified> = HashMap::new();
    let mut found = Vec::with_capacity(markers.len());
    let mut kept = Vec::new();
    // A marker that cannot be restored: an error, or a note and kept.
    let refuse = |what: String, kept: &mut Vec<String>| match missing {
        Missing::Fail => Err(Failure::new(
            RESTORE_FAILED,
            format!("{what}; nothing was written"),
        )),
        Missing::Keep => {
            kept.push(format!("{what}; the marker was kept"));
            Ok(())
        }
    };
    for MarkerLine {
        start,
        end,
        line,
        parsed,
    } in markers
    {
        let marker = match parsed {
            Ok(marker) => marker,
            Err(why) => {
                let what = format!(
                    "line {line} looks like an offload marker (it starts with `{PREFIX}`) but is not one: {why}"
                );
                refuse(what, &mut kept)?;
                continue;
            }
        };
        let key = (marker.sha256.clone(), marker.path.clone());
        let verified = match hashed.get(&key) {
            Some(v) => Ok(v.clone()),
            None => verify(&marker, line, &store.join(format!("{}.md", marker.sha256))),
        };
        let verified = match verified {
            Ok(v) => v,
            Err(what) => {
                refuse(what, &mut kept)?;
                continue;
            }
        };
        hashed.insert(key, verified.clone());
        let what = || format!("marker on line {line} (sha256={})", marker.sha256);
        if verified.len != marker.bytes {
            let reason = format!(
                "{}: {} has {} bytes (the right content for this hash), the marker says {}",
                what(),
                verified.path.display(),
                verified.len,
                marker.bytes
            );
            refuse(reason, &mut kept)?;
            continue;
        }
        if verified.lines != marker.lines {
            let reason = format!(
                "{}: {} has {} lines (the right content for this hash), the marker says {}",
                what(),
                verified.path.display(),
                verified.lines,
                marker.lines
            );
            refuse(reason, &mut kept)?;
            continue;
        }
        let newline_added = match excerpt_ends_inside_a_line(&verified.path, marker.excerpt) {
            Ok(added) => added,
            Err(e) => {
                let reason = format!("{}: reading {}: {e}", what(), verified.path.display());
                refuse(reason, &mut kept)?;
                continue;
            }
        };
        found.push(Found {
            start,
            end,
            line,
            marker,
            file: verified.path,
            last: verified.last,
            newline_added,
        });
    }
    let segments = segments(src, &found, missing, &mut kept).map_err(|e| match e {
        Broken::Io(e) => read_err(e),
        Broken::Marker(f) => f,
    })?;
    Ok(Checked {
        found,
        segments,
        kept,
    })
}

/// Compress's side of the contract: refuses an input holding a line that
/// looks like a marker but that restore would refuse (the lines found by
/// compress's own scan, checked by [`check`], the same rule as
/// `--restore`), with restore's exit code, [`RESTORE_FAILED`]. Valid
/// markers (a compressed document compressed again) pass. Free when no
/// line looks like a marker.
pub(super) fn refuse_unrestorable(
    src: &Source,
    state: &StateDir,
    markers: Vec<MarkerLine>,
) -> Result<(), Failure> {
    if markers.is_empty() {
        return Ok(());
    }
    match check(src, state, markers, Missing::Fail) {
        Ok(_) => Ok(()),
        Err(mut f) if f.code == RESTORE_FAILED => {
            let why = f
                .message
                .strip_suffix("; nothing was written")
                .unwrap_or(&f.message);
            f.message = format!(
                "{}: {why}. --restore would refuse it, so nothing was compressed or written: \
                 fix the line or its file, remove the line, or put it in a fenced code block to \
                 keep it as text",
                src.name()
            );
            Err(f)
        }
        Err(f) => Err(f),
    }
}

/// Whether the excerpt before a marker ends inside a line, so compress
/// wrote a newline after it: the last inline byte of the file's content.
fn excerpt_ends_inside_a_line(file: &Path, excerpt: u64) -> io::Result<bool> {
    if excerpt == 0 {
        return Ok(false);
    }
    let mut b = [0u8];
    crate::state_dir::open_state_file(file)?.read_exact_at(&mut b, excerpt - 1)?;
    Ok(b[0] != b'\n')
}

/// A marker's file, found and hashed: it holds the content its name says.
#[derive(Clone, Debug)]
struct Verified {
    path: PathBuf,
    len: u64,
    /// Its lines, counted as the marker's `lines=` counts them.
    lines: u64,
    last: Option<u8>,
}

/// Finds a marker's file (the state directory's copy first, then the
/// marker's `path=`) and checks that its content hashes to the marker's
/// sha256. The error is the reason, naming the marker.
fn verify(marker: &Marker, line: u64, in_store: &Path) -> Result<Verified, String> {
    let named = PathBuf::from(&marker.path);
    let what = || format!("marker on line {line} (sha256={})", marker.sha256);
    let candidates = if named == in_store {
        vec![in_store.to_path_buf()]
    } else {
        vec![in_store.to_path_buf(), named]
    };
    let Some((path, file)) = candidates.iter().find_map(|p| {
        crate::state_dir::open_state_file(p)
            .ok()
            .map(|f| (p.clone(), f))
    }) else {
        let tried: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
        return Err(format!(
            "{}: offload file not found (looked for {})",
            what(),
            tried.join(" and ")
        ));
    };
    let io_err = |e: io::Error| format!("{}: reading {}: {e}", what(), path.display());
    let len = file.metadata().map_err(io_err)?.len();
    let mut hasher = Sha256::new();
    let mut last = None;
    let mut newlines = 0u64;
    let mut buf = vec![0; COPY_BUFFER];
    for_each_chunk(&file, 0, len, &mut buf, |c| {
        hasher.update(c);
        newlines += memchr::memchr_iter(b'\n', c).count() as u64;
        last = c.last().copied().or(last);
        Ok(())
    })
    .map_err(io_err)?;
    let actual = format!("{:x}", hasher.finalize());
    if actual != marker.sha256 {
        return Err(format!(
            "{}: {} was altered ({} bytes, sha256={}; the marker says {} bytes)",
            what(),
            path.display(),
            len,
            actual,
            marker.bytes
        ));
    }
    Ok(Verified {
        path,
        len,
        lines: count_lines(newlines, len, last),
        last,
    })
}

enum Broken {
    Io(io::Error),
    Marker(Failure),
}

/// The output as input stretches and file stretches. A newline written
/// after an excerpt that ended inside a line is dropped again here: it is
/// the last byte before its marker line.
fn segments(
    src: &Source,
    found: &[Found],
    missing: Missing,
    kept: &mut Vec<String>,
) -> Result<Vec<Segment>, Broken> {
    let mut segments = Vec::with_capacity(2 * found.len() + 1);
    let mut at = 0;
    for (i, f) in found.iter().enumerate() {
        segments.push(Segment::Input {
            start: at,
            end: f.start,
        });
        if f.newline_added {
            match drop_newline(src, found, &mut segments) {
                Ok(()) => {}
                Err(Some(e)) => return Err(Broken::Io(e)),
                Err(None) => {
                    let what = format!(
                        "marker on line {} (sha256={}): the line before it is not the end of its excerpt",
                        f.line, f.marker.sha256
                    );
                    if missing == Missing::Fail {
                        return Err(Broken::Marker(Failure::new(
                            RESTORE_FAILED,
                            format!("{what}; nothing was written"),
                        )));
                    }
                    kept.push(format!("{what}; the marker was kept"));
                    segments.push(Segment::Input {
                        start: f.start,
                        end: f.end,
                    });
                    at = f.end;
                    continue;
                }
            }
        }
        segments.push(Segment::File {
            found: i,
            start: f.marker.excerpt,
            end: f.marker.bytes,
        });
        at = f.end;
    }
    segments.push(Segment::Input {
        start: at,
        end: src.len(),
    });
    Ok(segments)
}

/// Removes the last output byte, which must be a newline. `Err(None)` when
/// it is not there.
fn drop_newline(
    src: &Source,
    found: &[Found],
    segments: &mut [Segment],
) -> Result<(), Option<io::Error>> {
    for segment in segments.iter_mut().rev() {
        match segment {
            Segment::Input { start, end } if *end > *start => {
                let mut b = [0u8];
                src.read_exact_at(&mut b, *end - 1).map_err(Some)?;
                return if b[0] == b'\n' {
                    *end -= 1;
                    Ok(())
                } else {
                    Err(None)
                };
            }
            Segment::File {
                found: i,
                start,
                end,
            } if *end > *start => {
                return if found[*i].last == Some(b'\n') {
                    *end -= 1;
                    Ok(())
                } else {
                    Err(None)
                };
            }
            _ => {}
        }
    }
    Err(None)
}
