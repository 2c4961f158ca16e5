//! The one way jkz reads a file that is not its own: a repository's git
//! files (`.git`, `HEAD`, `commondir`, a worktree's `gitdir`, `config`),
//! `jkz.toml`, a client's settings, `.gitignore`, `~/.pgpass`, a CA file.
//! Every such read goes through [`read_user_file_bounded`]. It sits below
//! both `git` and `state_dir`, which both read such files.
//!
//! What makes it safe on a hook's path, whatever was put in the file's
//! place (a FIFO would block a plain read forever, a link to `/dev/zero`
//! would be read until memory runs out):
//!
//! - links are followed (dotfile managers make them), but the target is
//!   looked at first (`stat`): anything but a regular file is refused
//!   before it is opened, so no device is ever opened;
//! - the open itself uses `O_NONBLOCK`, so a FIFO swapped in between the
//!   look and the open returns at once instead of waiting for a writer;
//! - then `fstat` on the open file: anything but a regular file is
//!   refused, so that swap is caught too;
//! - at most `max + 1` bytes are read: a larger file is an error saying
//!   so, never half-read;
//! - in a hook, within its deadline ([`crate::deadline`]): the read is
//!   skipped once the budget is spent. (A `read` that the kernel itself
//!   blocks, on a hung network mount, cannot be cut short from here.)
//!
//! Errors say what was found in the file's place and what to do; the
//! caller names the file and what it was for. Nothing is said on stderr
//! here. Files under `state/` are read by `state_dir::read`, which adds the
//! refusals that keep a planted link out.

use std::fs::{File, FileType, Metadata, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// `open(2)`'s `O_NONBLOCK`: opening a FIFO returns at once instead of
/// waiting for a writer. Regular files ignore it. (No libc crate: the Linux
/// value, the same on the architectures jkz is built for.)
#[cfg(all(
    any(target_os = "linux", target_os = "android"),
    not(any(target_arch = "mips", target_arch = "mips64", target_arch = "sparc64"))
))]
pub(crate) const O_NONBLOCK: i32 = 0o4000;
#[cfg(not(all(
    any(target_os = "linux", target_os = "android"),
    not(any(target_arch = "mips", target_arch = "mips64", target_arch = "sparc64"))
)))]
pub(crate) const O_NONBLOCK: i32 = 0;

/// A file that is not jkz's own, read whole, up to `max` bytes (larger is
/// an `InvalidData` error): links followed, regular files only, never
/// blocking ([`open_user_file`]). Nothing is reported on stderr: the
/// caller says what the file was for.
///
/// In a hook, nothing is opened once its budget is spent, and a read that
/// goes on past it (a slow mount handing out a large file) stops between
/// chunks with a `TimedOut` error ([`crate::deadline::check`]).
pub fn read_user_file_bounded(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    let reading = || format!("reading {}", path.display());
    crate::deadline::check(&reading())?;
    let (mut file, len) = open_regular(path)?;
    let limit = max.saturating_add(1);
    let mut bytes = Vec::with_capacity(len.min(limit) as usize);
    loop {
        let got = (&mut file)
            .take(CHUNK.min(limit - bytes.len() as u64))
            .read_to_end(&mut bytes)?;
        if got == 0 || bytes.len() as u64 >= limit {
            break;
        }
        crate::deadline::check(&format!("{} was read whole", reading()))?;
    }
    whole(bytes, max)
}

/// How much is read between two looks at the hook's deadline.
const CHUNK: u64 = 64 * 1024;

/// Opens a file outside `state/` for reading: links followed, a regular
/// file only (looked at before the open and checked again on the open
/// file), never blocking on a FIFO.
pub(crate) fn open_user_file(path: &Path) -> io::Result<File> {
    open_regular(path).map(|(file, _)| file)
}

fn open_regular(path: &Path) -> io::Result<(File, u64)> {
    // Looked at first, so that no device (a tape that rewinds, a terminal)
    // is ever opened; the check on the open file below catches a swap.
    refuse_unless_regular(&std::fs::metadata(path)?)?;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    refuse_unless_regular(&meta)?;
    Ok((file, meta.len()))
}

fn refuse_unless_regular(meta: &Metadata) -> io::Result<()> {
    if meta.is_file() {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{}, not a regular file: jkz reads only regular files here, so it was not opened (replace it with a regular file)",
            what_it_is(&meta.file_type())
        ),
    ))
}

/// What a file that is not a regular one is, as a message says it.
pub(crate) fn what_it_is(kind: &FileType) -> &'static str {
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else {
        "a special file"
    }
}

/// `bytes`, read with a probe of one byte past `max`, when they are the
/// whole file; an `InvalidData` error saying so when the file is larger.
pub(crate) fn whole(bytes: Vec<u8>, max: u64) -> io::Result<Vec<u8>> {
    if bytes.len() as u64 > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {max} bytes, more than such a file ever holds: not read (look at what it holds)"),
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success());
    }

    #[test]
    fn regular_files_are_read_up_to_the_bound() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("HEAD");
        std::fs::write(&file, b"ref: refs/heads/main\n").unwrap();
        assert_eq!(
            read_user_file_bounded(&file, 21).unwrap(),
            b"ref: refs/heads/main\n"
        );
        let err = read_user_file_bounded(&file, 20).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
        assert!(err.to_string().contains("larger than 20 bytes"), "{err}");
        // A link to a regular file is followed.
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(read_user_file_bounded(&link, 64).unwrap().len(), 21);
        let gone = read_user_file_bounded(&tmp.path().join("gone"), 64).unwrap_err();
        assert_eq!(gone.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn a_fifo_a_device_or_a_directory_is_refused_at_once() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("HEAD");
        mkfifo(&fifo);
        let zero = tmp.path().join(".git");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let started = Instant::now();
        for (path, what) in [
            (&fifo, "a FIFO"),
            (&zero, "a character device"),
            (&tmp.path().to_path_buf(), "a directory"),
        ] {
            let err = read_user_file_bounded(path, 1 << 30).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
            assert!(err.to_string().starts_with(what), "{err}");
            assert!(err.to_string().contains("replace it"), "{err}");
        }
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
