//! Many new files made durable together: each is whole or absent after a
//! crash, and the disk flushes of all of them overlap instead of running
//! one after another.
//!
//! One file at a time, the atomic contract costs a temp file, an
//! `fdatasync`, a rename and a directory sync per file: with thousands of
//! offload files the process spends its time waiting for the disk once per
//! file (on ext4 each `fdatasync` of a new file waits for a journal commit).
//! A batch keeps the contract and pays about one flush of all the bytes:
//!
//! 1. each file is written to a temp file in the destination directory and
//!    handed to a few flushing threads, which `fdatasync` it while the next
//!    files are written (concurrent flushes share their journal commits),
//!    then rename it into place: a name never points at unflushed content;
//! 2. [`AtomicBatch::commit`] waits for the flushing threads, then syncs
//!    the directory once, so the names survive a power loss.
//!
//! A file whose write or flush failed never appears under its name (its
//! temp file is removed); the files renamed before the failure are whole.
//! One left by a killed process is a `.*.tmp` file, which `jkz gc` removes.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use tempfile::TempPath;

use crate::atomic::TEMP_SUFFIX;

/// How many flushes run at once. Flushing threads mostly wait for the disk,
/// so there can be more of them than cores; past a handful, ext4 already
/// folds the waiting flushes into one journal commit.
const FLUSHERS: usize = 4;

/// How many written files may wait for a flushing thread: each holds an
/// open file descriptor until it is flushed.
const QUEUE: usize = 32;

/// New files for one directory, written now, flushed and renamed into
/// place in the background; durable once [`commit`](AtomicBatch::commit)
/// returns.
pub struct AtomicBatch {
    dir: PathBuf,
    /// How many files were added.
    added: usize,
    flushing: Option<Flushers>,
}

/// A written file on its way to its name.
struct Written {
    file: File,
    tmp: TempPath,
    dest: PathBuf,
}

struct Flushers {
    queue: SyncSender<Written>,
    threads: Vec<JoinHandle<io::Result<()>>>,
}

impl AtomicBatch {
    /// A batch of new files in `dir` (which must exist). No thread starts
    /// until the first file is added.
    pub fn new(dir: &Path) -> AtomicBatch {
        AtomicBatch {
            dir: dir.to_path_buf(),
            added: 0,
            flushing: None,
        }
    }

    /// How many files were added.
    pub fn len(&self) -> usize {
        self.added
    }

    pub fn is_empty(&self) -> bool {
        self.added == 0
    }

    /// Writes a new file that will replace whatever is at `dest` (in this
    /// batch's directory). `write` gets the file (owner-only, empty) and
    /// writes all of it.
    pub fn add(
        &mut self,
        dest: PathBuf,
        write: impl FnOnce(&mut File) -> io::Result<()>,
    ) -> io::Result<()> {
        debug_assert_eq!(dest.parent(), Some(self.dir.as_path()));
        let prefix = match dest.file_name() {
            Some(name) => format!(".{}.", name.to_string_lossy()),
            None => ".batch.".to_string(),
        };
        let (mut file, tmp) = tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(TEMP_SUFFIX)
            .tempfile_in(&self.dir)?
            .into_parts();
        write(&mut file)?;
        self.added += 1;
        let queue = &self.flushers().queue;
        if queue.send(Written { file, tmp, dest }).is_err() {
            // Every flushing thread has stopped: one of them failed.
            return Err(self.stop_flushers().err().unwrap_or_else(|| {
                io::Error::other("the flushing threads stopped before the batch was committed")
            }));
        }
        Ok(())
    }

    /// Waits until every file is flushed and in place, then syncs the
    /// directory once. The first error any file met.
    pub fn commit(mut self) -> io::Result<()> {
        self.stop_flushers()?;
        if self.added == 0 {
            return Ok(());
        }
        File::open(&self.dir)?.sync_all()
    }

    fn flushers(&mut self) -> &Flushers {
        self.flushing.get_or_insert_with(|| {
            let (queue, files) = sync_channel::<Written>(QUEUE);
            let files = Arc::new(Mutex::new(files));
            let threads = (0..FLUSHERS)
                .map(|_| {
                    let files = Arc::clone(&files);
                    std::thread::spawn(move || flush_all(&files))
                })
                .collect();
            Flushers { queue, threads }
        })
    }

    /// Closes the queue and waits for the flushing threads; the first
    /// error any of them met.
    fn stop_flushers(&mut self) -> io::Result<()> {
        let Some(Flushers { queue, threads }) = self.flushing.take() else {
            return Ok(());
        };
        drop(queue);
        let mut result = Ok(());
        for thread in threads {
            let done = thread
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("a flushing thread panicked")));
            if result.is_ok() {
                result = done;
            }
        }
        result
    }
}

impl Drop for AtomicBatch {
    /// A batch given up on (its caller failed) still lets the files already
    /// added reach their names whole, and leaves no thread behind.
    fn drop(&mut self) {
        let _ = self.stop_flushers();
    }
}

/// A flushing thread: `fdatasync` each file it is handed, close it, rename
/// it into place. After a failure it stops taking files.
fn flush_all(files: &Mutex<Receiver<Written>>) -> io::Result<()> {
    loop {
        let next = match files.lock() {
            Ok(files) => files.recv(),
            Err(_) => return Err(io::Error::other("a flushing thread panicked")),
        };
        let Ok(Written { file, tmp, dest }) = next else {
            return Ok(()); // the queue is closed and empty
        };
        file.sync_data()?;
        drop(file);
        tmp.persist(&dest).map_err(|e| e.error)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn every_file_is_in_place_whole_and_owner_only_after_the_commit() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let mut batch = AtomicBatch::new(tmp.path());
        for i in 0..100 {
            let dest = tmp.path().join(format!("{i}.md"));
            batch
                .add(dest, |f| f.write_all(format!("file {i}\n").as_bytes()))
                .unwrap();
        }
        assert_eq!(batch.len(), 100);
        batch.commit().unwrap();
        let names = names(tmp.path());
        assert_eq!(names.len(), 100, "{names:?}");
        for i in 0..100 {
            let path = tmp.path().join(format!("{i}.md"));
            assert_eq!(
                std::fs::read(&path).unwrap(),
                format!("file {i}\n").as_bytes()
            );
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn a_commit_replaces_what_is_at_the_destination() {
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("a.md");
        std::fs::write(&dest, b"short").unwrap();
        let mut batch = AtomicBatch::new(tmp.path());
        batch.add(dest.clone(), |f| f.write_all(b"whole")).unwrap();
        batch.commit().unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"whole");
        assert_eq!(names(tmp.path()), ["a.md"]);
    }

    #[test]
    fn a_failed_write_leaves_neither_its_file_nor_a_temp_file() {
        let tmp = tempfile::tempdir().unwrap();
        let mut batch = AtomicBatch::new(tmp.path());
        batch
            .add(tmp.path().join("kept.md"), |f| f.write_all(b"x"))
            .unwrap();
        let err = batch
            .add(tmp.path().join("bad.md"), |f| {
                f.write_all(b"half")?;
                Err(io::Error::other("the source went away"))
            })
            .unwrap_err();
        assert!(err.to_string().contains("went away"));
        drop(batch);
        // What was added before the failure is in place, whole.
        assert_eq!(names(tmp.path()), ["kept.md"]);
        assert_eq!(std::fs::read(tmp.path().join("kept.md")).unwrap(), b"x");
    }

    #[test]
    fn a_failed_rename_fails_the_commit_and_leaves_no_temp_file() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("b.md")).unwrap();
        std::fs::write(tmp.path().join("b.md/inside"), b"").unwrap();
        let mut batch = AtomicBatch::new(tmp.path());
        for name in ["a.md", "b.md", "c.md"] {
            batch
                .add(tmp.path().join(name), |f| f.write_all(name.as_bytes()))
                .unwrap();
        }
        assert!(batch.commit().is_err(), "a directory cannot be replaced");
        let names = names(tmp.path());
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
        assert!(tmp.path().join("b.md/inside").exists());
        for name in ["a.md", "c.md"] {
            // Each file is whole, or absent when its flusher stopped first.
            if let Ok(bytes) = std::fs::read(tmp.path().join(name)) {
                assert_eq!(bytes, name.as_bytes());
            }
        }
    }
}
