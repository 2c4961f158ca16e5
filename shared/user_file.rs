//! Reading a file that is not jkz's own — one of git's (`.git`, `HEAD`,
//! `config`, a worktree's `gitdir`) — whole and bounded: links followed,
//! regular files only, never blocking on a FIFO. It sits below both `git`
//! and `state_dir`, which both read such files.
//!
//! Files under `state/` are read by `state_dir::read`, which adds the
//! refusals that keep a planted link or FIFO out.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
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

/// A file of git's (`.git`, `commondir`, `config`) read whole, up to `max`
/// bytes (larger is an `InvalidData` error): links followed, regular files
/// only, never blocking ([`open_user_file`]). Nothing is reported on
/// stderr: the caller says what the file was for.
pub fn read_user_file_bounded(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    let file = open_user_file(path)?;
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    whole(bytes, max)
}

/// Opens a file outside `state/` for reading: links followed, a regular
/// file only, never blocking on a FIFO.
pub(crate) fn open_user_file(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file (a FIFO, device, socket or directory)",
        ));
    }
    Ok(file)
}

/// `bytes`, read with a probe of one byte past `max`, when they are the
/// whole file; an `InvalidData` error saying so when the file is larger.
pub(crate) fn whole(bytes: Vec<u8>, max: u64) -> io::Result<Vec<u8>> {
    if bytes.len() as u64 > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {max} bytes: not read"),
        ));
    }
    Ok(bytes)
}
