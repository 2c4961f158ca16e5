//! Atomic file writes: a uniquely named temp file in the destination's
//! directory, fsync, rename, fsync of the directory. A reader sees the old
//! file or the new one, never half of one; two writers never corrupt each
//! other (the last rename wins whole). Files are created owner-only (0600).
//!
//! The directory sync only makes the new name durable at once (see
//! [`Durability`]); a writer whose file may be lost to a power loss, but
//! must never be half there, can leave it out.
//!
//! Temp files are named `.<file name>.<random>.tmp`; one left behind by a
//! killed process is removed by `jkz gc`. Each is created with an exclusive
//! `flock` its writer holds while the file is open ([`create_temp`]): `jkz gc`
//! removes no temp file whose lock it cannot take, so a slow writer (a model
//! silent for an hour in the middle of its answer) keeps its file, and the
//! lock goes with the writer's death, so a killed writer's file does not.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

/// The suffix of every temp file jkz creates.
pub const TEMP_SUFFIX: &str = ".tmp";

/// A new owner-only temp file `.<name>.<random>.tmp` in `dir`, locked
/// (`flock`, exclusive) for as long as it is open: the sign to `jkz gc` that
/// a writer is still at it.
pub fn create_temp(dir: &Path, name: &std::ffi::OsStr) -> io::Result<NamedTempFile> {
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".{}.", name.to_string_lossy()))
        .suffix(TEMP_SUFFIX)
        .tempfile_in(dir)?;
    tmp.as_file().lock()?;
    Ok(tmp)
}

/// A file being written; it appears at its destination only on [`commit`].
/// Dropped without commit, it leaves nothing behind.
///
/// [`commit`]: AtomicFile::commit
#[derive(Debug)]
pub struct AtomicFile {
    tmp: NamedTempFile,
    dest: PathBuf,
    durability: Durability,
    /// Nothing was written since the last [`sync_content`](AtomicFile::sync_content).
    synced: bool,
}

/// What is on disk when a commit returns. Either way the content is synced
/// before the rename, so after a power loss the destination holds the old
/// file or the whole new one, never half of one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// The content and the new name (the directory is synced too): the
    /// commit survives a power loss right after it returns.
    #[default]
    Full,
    /// The content only: the rename reaches the disk with the filesystem's
    /// next journal commit, so a power loss within seconds may undo the
    /// commit (never half of it). Saves a directory sync, which on a busy
    /// disk waits for a whole journal commit (milliseconds).
    Content,
}

impl AtomicFile {
    /// Starts writing `dest`, whose directory must exist.
    pub fn create(dest: impl Into<PathBuf>) -> io::Result<AtomicFile> {
        let dest = dest.into();
        let dir = parent_dir(&dest);
        let name = dest
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
        let tmp = create_temp(dir, name)?;
        Ok(AtomicFile {
            tmp,
            dest,
            durability: Durability::Full,
            synced: false,
        })
    }

    /// Sets what a commit makes durable (default [`Durability::Full`]).
    pub fn durability(mut self, durability: Durability) -> AtomicFile {
        self.durability = durability;
        self
    }

    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Syncs what was written so far to disk now, so that a later commit
    /// finds little or nothing left to sync (nothing at all when nothing
    /// was written since: it then skips its sync).
    pub fn sync_content(&mut self) -> io::Result<()> {
        self.tmp.as_file().sync_data()?;
        self.synced = true;
        Ok(())
    }

    /// The sync before a rename: `fdatasync`, unless nothing was written
    /// since the last one.
    fn sync_before_rename(&self) -> io::Result<()> {
        match self.synced {
            true => Ok(()),
            false => self.tmp.as_file().sync_data(),
        }
    }

    /// Flushes, syncs and renames into place, replacing any existing file.
    ///
    /// The sync is `fdatasync`: the content and what it takes to read it back
    /// (the size, the blocks), not the timestamps, which would cost one more
    /// journal commit and matter to no reader.
    pub fn commit(self) -> io::Result<()> {
        let dir = parent_dir(&self.dest).to_path_buf();
        self.sync_before_rename()?;
        self.tmp.persist(&self.dest).map_err(|e| e.error)?;
        self.durability.sync_dir(&dir)
    }

    /// Renames into place like [`commit`](AtomicFile::commit), without
    /// forcing anything to disk. For bulky copies that are records, not
    /// state (the full output `jkz-truncate` keeps): while the system runs,
    /// a reader still sees the whole file or none under its name; after a
    /// power loss the file may be missing or short.
    pub fn commit_unsynced(self) -> io::Result<()> {
        self.tmp
            .persist(&self.dest)
            .map(|_| ())
            .map_err(|e| e.error)
    }

    /// Like [`commit`](AtomicFile::commit), but keeps an existing destination
    /// (write-once content-addressed files). Returns false when it existed.
    pub fn commit_new(self) -> io::Result<bool> {
        let dir = parent_dir(&self.dest).to_path_buf();
        self.sync_before_rename()?; // as in `commit`
        match self.tmp.persist_noclobber(&self.dest) {
            Ok(_) => {
                self.durability.sync_dir(&dir)?;
                Ok(true)
            }
            Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e.error),
        }
    }
}

impl AtomicFile {
    /// [`commit_new`](AtomicFile::commit_new) under a name known only once the
    /// content is written (a content address). `dest` must be in the same
    /// directory as the destination given to [`create`](AtomicFile::create).
    pub fn commit_new_as(mut self, dest: impl Into<PathBuf>) -> io::Result<bool> {
        let dest = dest.into();
        if parent_dir(&dest) != parent_dir(&self.dest) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "commit_new_as: destination in another directory",
            ));
        }
        self.dest = dest;
        self.commit_new()
    }
}

impl AtomicFile {
    /// [`commit_new_as`](AtomicFile::commit_new_as) without forcing anything
    /// to disk (see [`commit_unsynced`](AtomicFile::commit_unsynced)): for
    /// bulky content-addressed copies. Returns false when `dest` existed.
    pub fn commit_new_unsynced_as(mut self, dest: impl Into<PathBuf>) -> io::Result<bool> {
        let dest = dest.into();
        if parent_dir(&dest) != parent_dir(&self.dest) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "commit_new_unsynced_as: destination in another directory",
            ));
        }
        self.dest = dest;
        match self.tmp.persist_noclobber(&self.dest) {
            Ok(_) => Ok(true),
            Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e.error),
        }
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.synced = false;
        self.tmp.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.synced = false;
        self.tmp.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.tmp.flush()
    }
}

/// Replaces `dest` with `bytes`, atomically, the new file having permission
/// bits `mode` from the moment it appears: they are set on the temp file
/// before the rename, so a writer killed at any point never leaves `dest`
/// with other permissions.
pub fn write_atomic_mode(dest: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut file = AtomicFile::create(dest)?;
    file.tmp
        .as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))?;
    file.write_all(bytes)?;
    file.commit()
}

/// Replaces `dest` with `bytes`, atomically.
pub fn write_atomic(dest: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(dest, bytes, Durability::Full)
}

/// [`write_atomic`] with a chosen [`Durability`].
pub fn write_atomic_with(dest: &Path, bytes: &[u8], durability: Durability) -> io::Result<()> {
    let mut file = AtomicFile::create(dest)?.durability(durability);
    file.write_all(bytes)?;
    file.commit()
}

/// Writes `dest` only if it does not exist yet. Returns false when it did.
pub fn write_new_atomic(dest: &Path, bytes: &[u8]) -> io::Result<bool> {
    if dest.exists() {
        return Ok(false);
    }
    let mut file = AtomicFile::create(dest)?;
    file.write_all(bytes)?;
    file.commit_new()
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

impl Durability {
    fn sync_dir(self, dir: &Path) -> io::Result<()> {
        match self {
            Durability::Full => File::open(dir)?.sync_all(),
            Durability::Content => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_commit_syncs_whatever_was_written_after_an_early_sync() {
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("f.json");
        let mut file = AtomicFile::create(&dest).unwrap();
        file.write_all(b"ab").unwrap();
        assert!(!file.synced);
        file.sync_content().unwrap();
        assert!(file.synced, "nothing left for the commit to sync");
        file.write_all(b"cd").unwrap();
        assert!(!file.synced, "the commit must sync what came after");
        file.commit().unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"abcd");
    }

    #[test]
    fn replaces_whole_and_leaves_no_temp() {
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("a.json");
        write_atomic(&dest, b"old").unwrap();
        write_atomic(&dest, b"new").unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"new");
        let names: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("a.json")]);
        let mode = std::fs::metadata(&dest).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn the_mode_is_set_before_the_file_appears() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("settings.json");
        write_atomic_mode(&dest, b"{}", 0o640).unwrap();
        let mode = std::fs::metadata(&dest).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
    }

    #[test]
    fn uncommitted_file_never_appears() {
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("b");
        let mut f = AtomicFile::create(&dest).unwrap();
        f.write_all(b"partial").unwrap();
        drop(f);
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    }

    #[test]
    fn commit_new_as_names_the_file_after_writing() {
        let tmp = tempfile::tempdir().unwrap();
        let mut f = AtomicFile::create(tmp.path().join("pending")).unwrap();
        f.write_all(b"abc").unwrap();
        assert!(f.commit_new_as(tmp.path().join("abc.md")).unwrap());
        assert_eq!(std::fs::read(tmp.path().join("abc.md")).unwrap(), b"abc");
        let f = AtomicFile::create(tmp.path().join("pending")).unwrap();
        assert!(f.commit_new_as(tmp.path().join("sub/abc.md")).is_err());
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
    }

    #[test]
    fn unsynced_commit_replaces_whole_and_leaves_no_temp() {
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("full.txt");
        write_atomic(&dest, b"old").unwrap();
        let mut f = AtomicFile::create(&dest).unwrap();
        f.write_all(b"new ").unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"old", "not before commit");
        f.write_all(b"copy").unwrap();
        f.commit_unsynced().unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"new copy");
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
    }

    #[test]
    fn write_once_keeps_the_first() {
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("c");
        assert!(write_new_atomic(&dest, b"one").unwrap());
        assert!(!write_new_atomic(&dest, b"two").unwrap());
        assert_eq!(std::fs::read(&dest).unwrap(), b"one");
    }
}
