//! The one way jkz opens a file to read it: bounded, never blocking, and
//! below the state directory never through a symbolic link.
//!
//! A repository can commit `state/`, and `jkz install` keeps an existing one,
//! so anything in it may have been planted: a link `pipeline/1-compact-plan.md
//! -> /proc/self/environ` would send the hook's environment to the model, a
//! FIFO would block a hook forever, a link to `/dev/zero` would be read until
//! memory runs out. So every file read under `state/` (pipeline files, their
//! companions, snapshots, session records, offload files, and whatever later
//! features read) goes through [`open_state_file`]:
//!
//! - opened with `O_NOFOLLOW` (a link in the last component fails, it is
//!   never followed) and `O_NONBLOCK` (opening a FIFO returns at once);
//! - then `fstat` on the open file: anything but a regular file is refused,
//!   so a swap between a check and the open is caught too;
//! - a file in one of jkz's subdirectories (`pipeline/`, `session-snapshots/`,
//!   `context-offload/`, `deliberations/`, `circuit/`, `locks/`) whose
//!   subdirectory is itself a link is refused as well. The state root may be
//!   a link: where state lives is the user's choice.
//!
//! `O_NONBLOCK` stays set on the returned file: Linux ignores it for regular
//! files (the only kind returned), so reads behave as without it.
//!
//! A refused entry is reported on stderr, once per path and process, in one
//! line (`program: refused PATH: why`), and the caller gets an error of kind
//! `InvalidInput`; `jkz doctor` lists every such entry ([`refused_entries`]).
//!
//! The writing side has one opener too, [`open_state_file_to_append`]: a
//! file appended to (the savings ledger, the deliberation index) or locked
//! (every `.<name>.lock`) is opened the same way, so a FIFO planted there
//! cannot hang a hook either.
//!
//! The user's own files outside `state/` (`.claude/settings.json`,
//! `.gitignore`) may be links (dotfile managers make them); they are read
//! with [`read_user_file`]: links followed, but still bounded, regular files
//! only, never blocking. A file the client wrote in a directory of its own
//! (a tool's persisted output) is opened with [`open_file_below`]: only
//! below that directory, through no link, never blocking.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::O_NOFOLLOW;
use crate::user_file::{whole, O_NONBLOCK};

/// Opens a file under `state/` for reading: a regular file, not through a
/// symbolic link, without blocking (see the module documentation). A refused
/// entry is reported on stderr and returned as an `InvalidInput` error.
pub fn open_state_file(path: &Path) -> io::Result<File> {
    open_regular(path).map(|(file, _)| file)
}

/// Opens a file under `state/` to append to it or to lock it, creating it
/// owner-only when missing: not through a symbolic link, without blocking
/// (`O_NONBLOCK`: a FIFO with no reader fails at once), and only a regular
/// file (`fstat` on the open file). A refused entry is an `InvalidInput`
/// error saying why, for the caller to report with what it was writing.
pub fn open_state_file_to_append(path: &Path) -> io::Result<File> {
    check_parent(path)?;
    let planted = || match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Some(symbolic_link()),
        Ok(meta) if !meta.is_file() => Some(not_a_regular_file()),
        _ => None,
    };
    // Where O_NONBLOCK is not known, look first (see `open_regular`).
    if O_NONBLOCK == 0 {
        if let Some(e) = planted() {
            return Err(e);
        }
    }
    let file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(O_NONBLOCK | O_NOFOLLOW)
        .open(path)
        // ELOOP for a link, ENXIO for a FIFO, EISDIR for a directory: name it.
        .map_err(|e| planted().unwrap_or(e))?;
    if !file.metadata()?.is_file() {
        return Err(not_a_regular_file());
    }
    Ok(file)
}

/// Appends `lines` (whole lines, each ending in `\n`) to the log at `path`
/// in one write ([`open_state_file_to_append`]). When the log ends in a line
/// torn by a crash, a newline goes first, so the torn line is the only one
/// lost and the new ones stay readable.
pub fn append_lines(path: &Path, lines: &[u8]) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::FileExt;
    let mut file = open_state_file_to_append(path)?;
    let len = file.metadata()?.len();
    let mut last = [b'\n'];
    if len > 0 {
        file.read_exact_at(&mut last, len - 1)?;
    }
    if last[0] == b'\n' {
        return file.write_all(lines);
    }
    let mut bytes = Vec::with_capacity(lines.len() + 1);
    bytes.push(b'\n');
    bytes.extend_from_slice(lines);
    file.write_all(&bytes)
}

/// Opens a file the client wrote in a directory of its own (a tool's
/// output it persisted) for reading: only a regular file strictly below
/// `dir`, reached through no symbolic link below `dir` (where `dir` itself
/// is, links included, is the client's business), never blocking.
///
/// `path` must name `dir` as its prefix, followed by plain components (no
/// `..`). Checked three ways: resolved, `path` must be `dir` resolved plus
/// those components (a link anywhere below `dir` resolves elsewhere); the
/// open itself refuses a link in the last component (`O_NOFOLLOW`); and
/// after the open, the file opened must be the one `path` resolves to now
/// (same device and inode), so a swap between the checks and the open is
/// caught too. Errors say which rule was broken; nothing is reported on
/// stderr here.
pub fn open_file_below(dir: &Path, path: &Path) -> io::Result<File> {
    let refused = |why: String| io::Error::new(io::ErrorKind::InvalidInput, why);
    let outside = || {
        refused(format!(
            "not a file in {} (the only directory read)",
            dir.display()
        ))
    };
    let rel = path.strip_prefix(dir).map_err(|_| outside())?;
    let plain = rel
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)));
    if !path.is_absolute() || rel.as_os_str().is_empty() || !plain {
        return Err(outside());
    }
    let real_dir = fs::canonicalize(dir)?;
    let expected = real_dir.join(rel);
    let resolves_in_place = || -> io::Result<fs::Metadata> {
        if fs::canonicalize(path)? != expected {
            return Err(refused(format!(
                "reached through a symbolic link (it resolves outside {})",
                dir.display()
            )));
        }
        fs::symlink_metadata(&expected)
    };
    resolves_in_place()?;
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK | O_NOFOLLOW)
        .open(&expected)
    {
        Ok(file) => file,
        Err(_) if is_link(&expected) => {
            return Err(refused("a symbolic link: not followed".to_string()))
        }
        Err(e) => return Err(e),
    };
    let opened = file.metadata()?;
    if !opened.is_file() {
        return Err(refused(
            "not a regular file (a FIFO, device, socket or directory)".to_string(),
        ));
    }
    use std::os::unix::fs::MetadataExt;
    let now = resolves_in_place()?;
    if (now.dev(), now.ino()) != (opened.dev(), opened.ino()) {
        return Err(refused(
            "replaced while it was being opened: not read".to_string(),
        ));
    }
    Ok(file)
}

/// [`open_state_file`], also returning the file's size.
fn open_regular(path: &Path) -> io::Result<(File, u64)> {
    let refused = |e: io::Error| {
        if e.kind() == io::ErrorKind::InvalidInput {
            report_refused(path, &e);
        }
        e
    };
    check_parent(path).map_err(refused)?;
    // Where O_NONBLOCK is known, the open itself cannot block; elsewhere
    // look first (a swap in between is still caught below).
    if O_NONBLOCK == 0 {
        let meta = fs::symlink_metadata(path)?;
        if meta.file_type().is_symlink() {
            return Err(refused(symbolic_link()));
        }
        if !meta.is_file() {
            return Err(refused(not_a_regular_file()));
        }
    }
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK | O_NOFOLLOW)
        .open(path)
    {
        Ok(file) => file,
        // ELOOP (FreeBSD: EMLINK) for a link under O_NOFOLLOW: name it.
        Err(_) if is_link(path) => return Err(refused(symbolic_link())),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(refused(not_a_regular_file()));
    }
    Ok((file, meta.len()))
}

/// A file in one of jkz's state subdirectories must not be reached through
/// that subdirectory being a link.
fn check_parent(path: &Path) -> io::Result<()> {
    let Some(parent) = path.parent() else {
        return Ok(());
    };
    let is_subdir = parent
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| super::layout::SUBDIRS.contains(&n));
    if is_subdir && is_link(parent) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "its directory {} is a symbolic link: jkz reads nothing in the state directory through a link (remove the link)",
                parent.display()
            ),
        ));
    }
    Ok(())
}

/// A state subdirectory about to be listed for reading: an error (reported
/// on stderr, see [`open_state_file`]) when it is a symbolic link, as the
/// files listed would be read through it.
pub fn check_listed_dir(dir: &Path) -> io::Result<()> {
    if is_link(dir) {
        let e = io::Error::new(
            io::ErrorKind::InvalidInput,
            "a symbolic link: jkz reads nothing in the state directory through a link (remove the link)",
        );
        report_refused(dir, &e);
        return Err(e);
    }
    Ok(())
}

fn is_link(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// Reads a state file (see [`open_state_file`]), at most `max + 1` bytes so
/// the caller can tell a file larger than `max` from one of exactly `max`.
pub fn read_state_file(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    read_state_file_into(path, max, &mut bytes)?;
    Ok(bytes)
}

/// [`read_state_file`] into a buffer the caller reuses; returns the length.
pub fn read_state_file_into(path: &Path, max: u64, buf: &mut Vec<u8>) -> io::Result<usize> {
    read_bounded(path, max, buf)
}

/// [`read_state_file`] for a caller that wants the whole file or nothing: a
/// file larger than `max` is an `InvalidData` error saying so.
pub fn read_whole_state_file(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    read_bounded(path, max, &mut bytes)?;
    whole(bytes, max)
}

/// The most bytes [`read_user_file`] reads: settings and ignore files are a
/// few KiB.
pub const MAX_USER_FILE: u64 = 16 * 1024 * 1024;

/// Reads one of the user's own files outside `state/` (`.claude/settings.json`,
/// `.gitignore`, `jkz.toml`, an installed slash command) whole, at most
/// [`MAX_USER_FILE`] bytes, through the one reader of files that are not
/// jkz's ([`crate::user_file::read_user_file_bounded`]): links followed,
/// only a regular file, never blocking; larger is an `InvalidData` error.
/// A refused one (a FIFO, a device, a directory) is said on stderr as a
/// refused state file is: many callers pass over an unreadable settings
/// file without a word.
pub fn read_user_file(path: &Path) -> io::Result<Vec<u8>> {
    crate::user_file::read_user_file_bounded(path, MAX_USER_FILE).inspect_err(|e| {
        if e.kind() == io::ErrorKind::InvalidInput {
            report_refused(path, e);
        }
    })
}

fn read_bounded(path: &Path, max: u64, buf: &mut Vec<u8>) -> io::Result<usize> {
    let (file, len) = open_regular(path)?;
    let limit = max.saturating_add(1);
    // Room for the whole file (and the probe for its end) up front: one read
    // instead of a series of growing ones. The size is a hint; the limit rules.
    buf.reserve(len.min(limit) as usize + 1);
    file.take(limit).read_to_end(buf)
}

/// Reads many small state files, one after another, into one buffer it
/// keeps: the reading loop of `jkz-pre-compact`, which reads thousands.
///
/// For a file its directory listing already reported regular, a read is one
/// `open`, one `read` and one `close`: a read that returns less than asked
/// is the end of the file (it is, for a regular file on Linux), so there is
/// neither a `stat` for the size nor a second read to see the end. The open
/// still uses `O_NONBLOCK | O_NOFOLLOW`, so a FIFO swapped in after the
/// listing cannot block it (it reads as empty), a link swapped in is not
/// followed, and the bound holds against anything. Any other file goes the
/// way of [`read_state_file`]: checked to be regular, read to its end.
#[derive(Default)]
pub struct SmallFileReader {
    /// Zero-filled once, then reused: its length is its usable size.
    buf: Vec<u8>,
}

impl SmallFileReader {
    /// What a read starts with; it grows (doubling) up to `max + 1`.
    const FIRST_SIZE: usize = 64 * 1024;

    /// Reads the file at `path`: at most `max + 1` bytes, so the caller can
    /// tell a file larger than `max` from one of exactly `max`.
    /// `listed_regular` says the directory listing reported it a regular file.
    pub fn read(&mut self, path: &Path, listed_regular: bool, max: u64) -> io::Result<&[u8]> {
        let mut file = if listed_regular {
            OpenOptions::new()
                .read(true)
                .custom_flags(O_NONBLOCK | O_NOFOLLOW)
                .open(path)?
        } else {
            open_regular(path)?.0
        };
        let limit = usize::try_from(max).unwrap_or(usize::MAX).saturating_add(1);
        let mut len = 0;
        while len < limit {
            if len == self.buf.len() {
                let size = (len * 2).max(Self::FIRST_SIZE).min(limit);
                self.buf.resize(size, 0);
            }
            // Never past the limit, whatever size an earlier file grew to.
            let end = self.buf.len().min(limit);
            let room = end - len;
            let n = match file.read(&mut self.buf[len..end]) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            len += n;
            if n == 0 || (listed_regular && n < room) {
                break;
            }
        }
        Ok(&self.buf[..len])
    }
}

fn not_a_regular_file() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "not a regular file (a FIFO, device, socket or directory): jkz reads only regular files in the state directory (remove it)",
    )
}

fn symbolic_link() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "a symbolic link: jkz reads nothing in the state directory through a link (remove the link)",
    )
}

/// Says on stderr, once per path in this process, that `path` was refused.
pub(crate) fn report_refused(path: &Path, why: &io::Error) {
    static REPORTED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    let mut reported = REPORTED.lock().unwrap_or_else(|e| e.into_inner());
    if reported.iter().any(|p| p == path) {
        return;
    }
    reported.push(path.to_path_buf());
    drop(reported);
    let program = std::env::args_os()
        .next()
        .map(PathBuf::from)
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "jkz".into());
    let line = format!("{program}: refused {}: {why}", path.display()).replace(['\n', '\r'], " ");
    eprintln!("{line}");
}

/// An entry below the state directory that jkz refuses to read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefusedEntry {
    pub path: PathBuf,
    /// What it is: "a symbolic link", "a FIFO", "a device", "a socket".
    pub what: &'static str,
}

/// The most entries [`refused_entries`] looks at: a bound on the walk of a
/// state directory grown huge (it is a report, not a cleaner).
const MAX_WALKED: usize = 200_000;

/// Every entry below `root` (not `root` itself, which may be a link) that is
/// not a regular file or a directory: what readers refuse. Links are not
/// followed; at most [`MAX_WALKED`] entries are looked at.
pub fn refused_entries(root: &Path) -> Vec<RefusedEntry> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    let mut walked = 0;
    while let Some(dir) = dirs.pop() {
        for e in fs::read_dir(&dir).into_iter().flatten().flatten() {
            walked += 1;
            if walked > MAX_WALKED {
                return out;
            }
            let Ok(kind) = e.file_type() else { continue };
            let what = if kind.is_dir() {
                dirs.push(e.path());
                continue;
            } else if kind.is_file() {
                continue;
            } else if kind.is_symlink() {
                "a symbolic link"
            } else if kind.is_fifo() {
                "a FIFO"
            } else if kind.is_socket() {
                "a socket"
            } else {
                "a device"
            };
            out.push(RefusedEntry {
                path: e.path(),
                what,
            });
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_feedback_line_swallowed_the_next_feedback() {
        use std::io::Write;
        // An append behind a line torn by a crash was glued to it, and the
        // reader dropped both.
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("log.jsonl");
        append_lines(&log, b"{\"a\":1}\n").unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&log)
            .unwrap()
            .write_all(b"{\"torn")
            .map(|_| ())
            .unwrap();
        append_lines(&log, b"{\"b\":2}\n").unwrap();
        append_lines(&log, b"{\"c\":3}\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "{\"a\":1}\n{\"torn\n{\"b\":2}\n{\"c\":3}\n"
        );
    }

    /// A named pipe at `path`, with no writer.
    fn mkfifo(path: &Path) -> PathBuf {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success());
        path.to_path_buf()
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = mkfifo(&tmp.path().join("7.json"));
        // Without a writer, a plain open would block forever here.
        let err = read_state_file(&fifo, 1024).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
        let err = read_user_file(&fifo).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
        let regular = tmp.path().join("8.json");
        std::fs::write(&regular, b"{}").unwrap();
        assert_eq!(read_state_file(&regular, 1024).unwrap(), b"{}");
        assert_eq!(
            read_state_file(&regular, 1).unwrap().len(),
            2,
            "max + 1 bytes"
        );
        assert_eq!(read_whole_state_file(&regular, 2).unwrap(), b"{}");
        let err = read_whole_state_file(&regular, 1).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
    }

    #[test]
    fn links_are_refused_in_state_and_followed_for_user_files() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("secret");
        std::fs::write(&target, b"API_KEY=x").unwrap();
        let link = tmp.path().join("1-compact-plan.md");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = read_state_file(&link, 1024).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(read_user_file(&link).unwrap(), b"API_KEY=x");
        // A link to a device: refused either way, never read.
        let zero = tmp.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        assert!(read_state_file(&zero, 1 << 30).is_err());
        let err = read_user_file(&zero).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        // A directory in a file's place.
        let dir = tmp.path().join("d.json");
        std::fs::create_dir(&dir).unwrap();
        assert!(read_state_file(&dir, 10).is_err());
        let mut reader = SmallFileReader::default();
        for listed in [true, false] {
            assert!(reader.read(&link, listed, 1024).is_err());
            assert!(reader.read(&zero, listed, 1 << 30).is_err());
        }
    }

    #[test]
    fn a_linked_state_subdirectory_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("7.json"), b"{}").unwrap();
        let state = tmp.path().join("state");
        std::fs::create_dir(&state).unwrap();
        std::os::unix::fs::symlink(&elsewhere, state.join("pipeline")).unwrap();
        let err = read_state_file(&state.join("pipeline/7.json"), 10).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        // The root itself may be a link.
        let root_link = tmp.path().join("root-link");
        std::os::unix::fs::symlink(&elsewhere, &root_link).unwrap();
        assert_eq!(
            read_state_file(&root_link.join("7.json"), 10).unwrap(),
            b"{}"
        );
    }

    #[test]
    fn refused_entries_lists_what_is_not_a_file_or_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let s = tmp.path();
        std::fs::create_dir_all(s.join("pipeline")).unwrap();
        std::fs::write(s.join("pipeline/1.json"), b"{}").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", s.join("pipeline/2.json")).unwrap();
        mkfifo(&s.join("pipeline/3.json"));
        std::os::unix::fs::symlink("/tmp", s.join("context-offload")).unwrap();
        let got: Vec<_> = refused_entries(s)
            .into_iter()
            .map(|r| (r.path.strip_prefix(s).unwrap().to_path_buf(), r.what))
            .collect();
        assert_eq!(
            got,
            [
                (PathBuf::from("context-offload"), "a symbolic link"),
                (PathBuf::from("pipeline/2.json"), "a symbolic link"),
                (PathBuf::from("pipeline/3.json"), "a FIFO"),
            ]
        );
    }

    #[test]
    fn the_small_file_reader_reads_every_size_whole_and_bounded() {
        let tmp = tempfile::tempdir().unwrap();
        let mut reader = SmallFileReader::default();
        let first = SmallFileReader::FIRST_SIZE;
        // Sizes around each buffer size the reader passes through.
        for size in [
            0,
            1,
            2,
            first - 1,
            first,
            first + 1,
            2 * first,
            3 * first + 7,
        ] {
            let path = tmp.path().join(format!("{size}.json"));
            let bytes: Vec<u8> = (0..size).map(|i| (i * 7 % 251) as u8).collect();
            std::fs::write(&path, &bytes).unwrap();
            for listed_regular in [true, false] {
                let read = reader.read(&path, listed_regular, 1 << 20).unwrap();
                assert!(read == bytes, "size {size}, listed {listed_regular}");
                // Bounded at max + 1: enough to tell "more than max".
                for max in [size.saturating_sub(1), 0, 10, first] {
                    let read = reader.read(&path, listed_regular, max as u64).unwrap();
                    assert_eq!(read.len(), size.min(max + 1), "size {size}, max {max}");
                    assert_eq!(read, &bytes[..read.len()]);
                }
            }
        }
        // After the buffer grew for a large file, a small bound still holds.
        let big = tmp.path().join(format!("{}.json", 3 * first + 7));
        assert_eq!(reader.read(&big, true, 10).unwrap().len(), 11);
    }

    #[test]
    fn the_small_file_reader_never_blocks_on_a_fifo() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = mkfifo(&tmp.path().join("7.json"));
        let mut reader = SmallFileReader::default();
        // Not listed as regular: checked, and refused.
        let err = reader.read(&fifo, false, 1024).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
        // Swapped in after a listing that said regular: read without a
        // writer, it is empty at once (the caller finds no JSON there).
        assert_eq!(reader.read(&fifo, true, 1024).unwrap(), b"");
    }
}
