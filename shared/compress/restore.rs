//! `--restore`: every marker is expanded back from its offload file.
//!
//! Two passes. The first finds the markers and verifies every file (present,
//! right size, right sha256) before anything is written, so a missing or
//! altered file fails the whole restore with stdout empty. The second copies
//! the document, putting each file's content (after the inline excerpt) in
//! place of its marker line.
//!
//! A marker is recognized the way compress wrote it: a whole line in the
//! exact marker format that the protected-block scanner reads as a jkz
//! comment. Compress never puts a marker inside a fence, so a marker quoted
//! in a code block is left alone, as is any near miss.

use std::collections::HashMap;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use sha2::{Digest, Sha256};

use super::marker::Marker;
use super::source::{for_each_chunk, Source, COPY_BUFFER};
use super::{OFFLOAD_DIR, RESTORE_FAILED};
use crate::blocks::{BlockScanner, Event, Form};
use crate::cli::Failure;
use crate::lines::LineReader;
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

/// Restores `src` to `out`. Errors: `io_code` for reading and writing,
/// [`RESTORE_FAILED`] for a marker whose file is missing or altered.
pub fn restore(
    src: &Source,
    state: &StateDir,
    out: &mut impl Write,
    io_code: u8,
) -> Result<(), Failure> {
    let read_err = |e| Failure::io(io_code, format!("reading {}", src.name()), e);
    let markers = find_markers(src).map_err(read_err)?;
    let store = state.join(OFFLOAD_DIR);
    let mut verified: HashMap<String, (PathBuf, Option<u8>)> = HashMap::new();
    let mut found = Vec::with_capacity(markers.len());
    for (start, end, line, marker) in markers {
        let (file, last) = match verified.get(&marker.sha256) {
            Some(v) => v.clone(),
            None => {
                let v = verify(&marker, line, &store.join(format!("{}.md", marker.sha256)))?;
                verified.insert(marker.sha256.clone(), v.clone());
                v
            }
        };
        let newline_added = marker.excerpt > 0 && {
            let mut b = [0u8];
            crate::state_dir::open_state_file(&file)
                .and_then(|f| f.read_exact_at(&mut b, marker.excerpt - 1))
                .map_err(|e| {
                    Failure::io(RESTORE_FAILED, format!("reading {}", file.display()), e)
                })?;
            b[0] != b'\n'
        };
        found.push(Found {
            start,
            end,
            line,
            marker,
            file,
            last,
            newline_added,
        });
    }
    let segments = segments(src, &found).map_err(|e| match e {
        Broken::Io(e) => read_err(e),
        Broken::Marker(f) => f,
    })?;
    let mut buf = vec![0; COPY_BUFFER];
    for segment in segments {
        let (copied, what) = match segment {
            Segment::Input { start, end } => (
                src.for_each_chunk(start, end, &mut buf, |c| out.write_all(c)),
                src.name().to_string(),
            ),
            Segment::File {
                found: i,
                start,
                end,
            } => {
                let path = &found[i].file;
                let copied = crate::state_dir::open_state_file(path)
                    .and_then(|f| for_each_chunk(&f, start, end, &mut buf, |c| out.write_all(c)));
                (copied, path.display().to_string())
            }
        };
        copied.map_err(|e| Failure::io(io_code, format!("copying {what} to the output"), e))?;
    }
    Ok(())
}

/// Every marker line in the input: start, end, line number, marker.
pub(super) fn find_markers(src: &Source) -> io::Result<Vec<(u64, u64, u64, Marker)>> {
    let mut reader = LineReader::new(src.reader());
    let mut scanner = BlockScanner::new();
    let mut events = Vec::new();
    let mut found = Vec::new();
    let (mut batch_start, mut lines_before) = (0u64, 0u64);
    while let Some(batch) = reader.next_batch()? {
        scanner.scan(batch, &mut events);
        let batch_end = batch_start + batch.len() as u64;
        for event in events.drain(..) {
            let Event::Block(b) = event else { continue };
            if b.form != Form::Comment || b.start < batch_start || b.end > batch_end {
                continue;
            }
            let line = &batch[(b.start - batch_start) as usize..(b.end - batch_start) as usize];
            if memchr::memchr(b'\n', line).is_some_and(|nl| nl + 1 != line.len()) {
                continue; // a comment over several lines
            }
            if let Some(marker) = Marker::parse(line) {
                let before = &batch[..(b.start - batch_start) as usize];
                let line_no = lines_before + memchr::memchr_iter(b'\n', before).count() as u64 + 1;
                found.push((b.start, b.end, line_no, marker));
            }
        }
        lines_before += memchr::memchr_iter(b'\n', batch).count() as u64;
        batch_start = batch_end;
    }
    // A marker is complete on its line: `finish` can only report open
    // (unterminated) comments, which are never markers.
    Ok(found)
}

/// Finds and checks a marker's file: the state directory's copy first, then
/// the marker's `path=`. Returns the file and its last byte.
fn verify(
    marker: &Marker,
    line: u64,
    in_store: &std::path::Path,
) -> Result<(PathBuf, Option<u8>), Failure> {
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
        return Err(Failure::new(
            RESTORE_FAILED,
            format!(
                "{}: offload file not found (looked for {}); nothing was written",
                what(),
                tried.join(" and ")
            ),
        ));
    };
    let io_err = |e| {
        Failure::io(
            RESTORE_FAILED,
            format!("{}: reading {}", what(), path.display()),
            e,
        )
    };
    let len = file.metadata().map_err(io_err)?.len();
    let mut hasher = Sha256::new();
    let mut last = None;
    let mut buf = vec![0; COPY_BUFFER];
    for_each_chunk(&file, 0, len, &mut buf, |c| {
        hasher.update(c);
        last = c.last().copied().or(last);
        Ok(())
    })
    .map_err(io_err)?;
    let actual = format!("{:x}", hasher.finalize());
    if len != marker.bytes || actual != marker.sha256 {
        return Err(Failure::new(
            RESTORE_FAILED,
            format!(
                "{}: {} was altered ({} bytes, sha256={}; the marker says {} bytes); nothing was written",
                what(),
                path.display(),
                len,
                actual,
                marker.bytes
            ),
        ));
    }
    Ok((path, last))
}

enum Broken {
    Io(io::Error),
    Marker(Failure),
}

/// The output as input stretches and file stretches. A newline written
/// after an excerpt that ended inside a line is dropped again here: it is
/// the last byte before its marker line.
fn segments(src: &Source, found: &[Found]) -> Result<Vec<Segment>, Broken> {
    let mut segments = Vec::with_capacity(2 * found.len() + 1);
    let mut at = 0;
    for (i, f) in found.iter().enumerate() {
        segments.push(Segment::Input {
            start: at,
            end: f.start,
        });
        if f.newline_added {
            drop_newline(src, found, &mut segments).map_err(|e| match e {
                Some(e) => Broken::Io(e),
                None => Broken::Marker(Failure::new(
                    RESTORE_FAILED,
                    format!(
                        "marker on line {} (sha256={}): the line before it is not the end of its excerpt; nothing was written",
                        f.line, f.marker.sha256
                    ),
                )),
            })?;
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
