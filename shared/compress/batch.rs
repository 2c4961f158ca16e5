//! Many new files made durable together: each is whole or absent after a
//! crash, and all of them cost about one flush of their bytes.
//!
//! One file at a time, the atomic contract costs a temp file, an
//! `fdatasync`, a rename and a directory sync per file: with thousands of
//! offload files the process waits for the disk once per file, and each
//! wait is several round trips (the data, the inode, a cache flush; on ext4
//! a journal commit). A batch keeps the contract with one flush per group
//! of files:
//!
//! 1. each file is written to a temp file in the destination directory and
//!    closed, by a writing thread while the caller prepares the next one
//!    (hashing it, for the offload store); nothing waits for the disk;
//! 2. every [`Limits`] worth of files, the group goes to a flushing thread
//!    (while the next files are written), which makes the file system's
//!    dirty data durable in one call (`syncfs` on Linux; elsewhere one
//!    `fdatasync` per file), then renames each file into place: a name
//!    never points at unflushed content;
//! 3. [`AtomicBatch::commit`] hands over the last group, waits for the
//!    flushing thread, then syncs the directory once, so the names survive
//!    a power loss.
//!
//! `syncfs` also flushes what other programs left dirty on the same file
//! system; on a disk that is cheaper than a flush per file as soon as there
//! are more than a few files, and the kernel writes that data out within
//! seconds anyway.
//!
//! A file whose write or flush failed never appears under its name (its
//! temp file is removed); the files renamed before the failure are whole.
//! One left by a killed process is a `.*.tmp` file, which `jkz gc` removes.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use tempfile::TempPath;

/// When a group of written files goes to be flushed: at `files` files or
/// `bytes` bytes, whichever comes first.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Bounds the memory of a group (a path per file) and, without
    /// `syncfs`, how long one flush call runs.
    pub files: usize,
    /// Lets the disk write one group while the next is written: smaller
    /// groups overlap more, but each costs a cache flush.
    pub bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            files: 256,
            bytes: 32 << 20,
        }
    }
}

/// How many content buffers [`AtomicBatch::add_bytes`] keeps in use at
/// once: one being filled by the caller, one waiting, one being written.
const BUFFERS: usize = 2;

/// New files for one directory, written to temp files by a writing thread
/// (while the caller prepares the next ones), flushed and renamed into
/// place by a flushing thread; durable once
/// [`commit`](AtomicBatch::commit) returns.
pub struct AtomicBatch {
    dir: PathBuf,
    limits: Limits,
    /// How many files were added.
    added: usize,
    /// How many content buffers are out (with the caller or the writer).
    buffers: usize,
    writing: Option<Writer>,
}

/// What the writing thread is handed.
enum Job {
    /// Content to write to a new file at `dest`; the buffer comes back.
    Bytes { dest: PathBuf, bytes: Vec<u8> },
    /// A file the caller wrote itself.
    Written { file: Written, len: u64 },
}

/// A written file on its way to its name.
struct Written {
    tmp: TempPath,
    dest: PathBuf,
}

struct Writer {
    jobs: SyncSender<Job>,
    /// Buffers whose content is written, for the caller to fill again.
    spare: Receiver<Vec<u8>>,
    thread: JoinHandle<io::Result<()>>,
}

/// The flushing thread and the queue of groups it flushes. The queue holds
/// one group, so at most three exist at once (one being written, one
/// waiting, one being flushed).
struct Flusher {
    queue: SyncSender<Vec<Written>>,
    thread: JoinHandle<io::Result<()>>,
}

impl AtomicBatch {
    /// A batch of new files in `dir` (which must exist). No thread starts
    /// until the first file is added.
    pub fn new(dir: &Path) -> AtomicBatch {
        AtomicBatch::with_limits(dir, Limits::default())
    }

    pub fn with_limits(dir: &Path, limits: Limits) -> AtomicBatch {
        AtomicBatch {
            dir: dir.to_path_buf(),
            limits,
            added: 0,
            buffers: 0,
            writing: None,
        }
    }

    /// How many files were added.
    pub fn len(&self) -> usize {
        self.added
    }

    pub fn is_empty(&self) -> bool {
        self.added == 0
    }

    /// An empty buffer to fill with a file's content for
    /// [`add_bytes`](AtomicBatch::add_bytes): a new one while fewer than
    /// a few are out, else the next one the writing thread is done with
    /// (so the memory held is a few of the largest contents).
    pub fn buffer(&mut self) -> io::Result<Vec<u8>> {
        if self.buffers < BUFFERS {
            self.buffers += 1;
            return Ok(Vec::new());
        }
        let spare = self.writer().spare.recv();
        match spare {
            Ok(mut bytes) => {
                bytes.clear();
                Ok(bytes)
            }
            Err(_) => Err(self.writer_failure()),
        }
    }

    /// A new file at `dest` (in this batch's directory) holding `bytes`
    /// (from [`buffer`](AtomicBatch::buffer)), replacing whatever is there;
    /// written by the writing thread.
    pub fn add_bytes(&mut self, dest: PathBuf, bytes: Vec<u8>) -> io::Result<()> {
        debug_assert_eq!(dest.parent(), Some(self.dir.as_path()));
        self.added += 1;
        self.send(Job::Bytes { dest, bytes })
    }

    /// Writes a new file that will replace whatever is at `dest` (in this
    /// batch's directory), here and now: for content too large to hold.
    /// `write` gets the file (owner-only, empty) and writes all of it.
    pub fn add(
        &mut self,
        dest: PathBuf,
        write: impl FnOnce(&mut File) -> io::Result<()>,
    ) -> io::Result<()> {
        debug_assert_eq!(dest.parent(), Some(self.dir.as_path()));
        let (mut file, tmp) = temp_file(&self.dir, &dest)?;
        write(&mut file)?;
        let len = file.metadata()?.len();
        drop(file);
        self.added += 1;
        self.send(Job::Written {
            file: Written { tmp, dest },
            len,
        })
    }

    /// Waits until every file is written, flushed and in place, then syncs
    /// the directory once. The first error any file met.
    pub fn commit(mut self) -> io::Result<()> {
        self.stop_writer()?;
        if self.added == 0 {
            return Ok(());
        }
        File::open(&self.dir)?.sync_all()
    }

    fn send(&mut self, job: Job) -> io::Result<()> {
        if self.writer().jobs.send(job).is_err() {
            return Err(self.writer_failure());
        }
        Ok(())
    }

    /// The writing thread, started on first use.
    fn writer(&mut self) -> &Writer {
        self.writing.get_or_insert_with(|| {
            let (jobs, queue) = sync_channel::<Job>(1);
            let (done, spare) = sync_channel::<Vec<u8>>(BUFFERS);
            let (dir, limits) = (self.dir.clone(), self.limits);
            let thread = std::thread::spawn(move || write_all(&dir, limits, &queue, &done));
            Writer {
                jobs,
                spare,
                thread,
            }
        })
    }

    /// The error that stopped the writing thread.
    fn writer_failure(&mut self) -> io::Error {
        self.stop_writer().err().unwrap_or_else(|| {
            io::Error::other("the writing thread stopped before the batch was committed")
        })
    }

    /// Closes the writing thread's queue and waits for it (it hands over
    /// its last group and waits for the flushing thread); the first error.
    fn stop_writer(&mut self) -> io::Result<()> {
        let Some(Writer { jobs, thread, .. }) = self.writing.take() else {
            return Ok(());
        };
        drop(jobs);
        thread
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the writing thread panicked")))
    }
}

impl Drop for AtomicBatch {
    /// A batch given up on (its caller failed) still lets the files already
    /// added reach their names whole, and leaves no thread behind.
    fn drop(&mut self) {
        let _ = self.stop_writer();
    }
}

/// A new empty temp file (owner-only) beside `dest`.
fn temp_file(dir: &Path, dest: &Path) -> io::Result<(File, TempPath)> {
    let name = dest.file_name().unwrap_or("batch".as_ref());
    Ok(crate::atomic::create_temp(dir, name)?.into_parts())
}

/// The writing thread: writes each file it is handed to a temp file,
/// gathers them into groups for the flushing thread. After a failure it
/// stops taking jobs; at the end it waits for the flushing thread.
fn write_all(
    dir: &Path,
    limits: Limits,
    jobs: &Receiver<Job>,
    spare: &SyncSender<Vec<u8>>,
) -> io::Result<()> {
    let mut flusher = None::<Flusher>;
    let written = write_groups(dir, limits, jobs, spare, &mut flusher);
    let flushed = match flusher {
        Some(Flusher { queue, thread }) => {
            drop(queue);
            thread
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the flushing thread panicked")))
        }
        None => Ok(()),
    };
    // A failed flush makes the queue refuse groups, which fails the
    // writing too: the flush's error is the one to tell.
    flushed.and(written)
}

fn write_groups(
    dir: &Path,
    limits: Limits,
    jobs: &Receiver<Job>,
    spare: &SyncSender<Vec<u8>>,
    flusher: &mut Option<Flusher>,
) -> io::Result<()> {
    let mut group = Vec::new();
    let mut group_bytes = 0;
    let mut hand_over = |group: &mut Vec<Written>| -> io::Result<()> {
        let flusher = flusher.get_or_insert_with(|| {
            let (queue, groups) = sync_channel::<Vec<Written>>(1);
            let dir = dir.to_path_buf();
            let thread = std::thread::spawn(move || flush_all(&dir, &groups));
            Flusher { queue, thread }
        });
        flusher
            .queue
            .send(std::mem::take(group))
            .map_err(|_| io::Error::other("the flushing thread stopped"))
    };
    while let Ok(job) = jobs.recv() {
        let (file, len) = match job {
            Job::Written { file, len } => (file, len),
            Job::Bytes { dest, bytes } => {
                let (mut file, tmp) = temp_file(dir, &dest)?;
                file.write_all(&bytes)?;
                drop(file);
                let len = bytes.len() as u64;
                // The caller may have stopped asking for buffers.
                let _ = spare.try_send(bytes);
                (Written { tmp, dest }, len)
            }
        };
        group.push(file);
        group_bytes += len;
        if group.len() >= limits.files || group_bytes >= limits.bytes {
            hand_over(&mut group)?;
            group_bytes = 0;
        }
    }
    if !group.is_empty() {
        hand_over(&mut group)?;
    }
    Ok(())
}

/// The flushing thread: for each group, make its files' content durable,
/// then rename each into place. After a failure it stops taking groups (the
/// files of the failed group and of any later one are removed when their
/// temp paths drop).
fn flush_all(dir: &Path, groups: &Receiver<Vec<Written>>) -> io::Result<()> {
    let dir = File::open(dir)?;
    while let Ok(group) = groups.recv() {
        make_durable(&dir, &group)?;
        for Written { tmp, dest } in group {
            tmp.persist(&dest).map_err(|e| e.error)?;
        }
    }
    Ok(())
}

/// Makes the content of every file of `group` durable: one `syncfs` of the
/// file system holding `dir`.
#[cfg(target_os = "linux")]
fn make_durable(dir: &File, _group: &[Written]) -> io::Result<()> {
    rustix::fs::syncfs(dir).map_err(io::Error::from)
}

/// Makes the content of every file of `group` durable: one `fdatasync`
/// each (no `syncfs` here).
#[cfg(not(target_os = "linux"))]
fn make_durable(_dir: &File, group: &[Written]) -> io::Result<()> {
    for written in group {
        File::open(&written.tmp)?.sync_data()?;
    }
    Ok(())
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

    /// Whole, owner-only... and no temp file left: what every batch must
    /// leave, whatever its group sizes.
    fn check_in_place(dir: &Path, contents: &[(String, Vec<u8>)]) {
        let mut expected: Vec<String> = contents.iter().map(|(n, _)| n.clone()).collect();
        expected.sort();
        assert_eq!(names(dir), expected);
        for (name, bytes) in contents {
            assert_eq!(&std::fs::read(dir.join(name)).unwrap(), bytes, "{name}");
        }
    }

    #[test]
    fn tiny_groups_and_reused_buffers_put_every_file_in_place_whole() {
        let tiny = [
            Limits {
                files: 1,
                bytes: u64::MAX,
            },
            Limits {
                files: usize::MAX,
                bytes: 1,
            },
            Limits {
                files: 3,
                bytes: 50,
            },
            Limits::default(),
        ];
        for limits in tiny {
            let tmp = tempfile::tempdir().unwrap();
            let mut batch = AtomicBatch::with_limits(tmp.path(), limits);
            let mut contents = Vec::new();
            for i in 0..40 {
                // Long and short contents alternate, so a reused buffer
                // that kept its old bytes would show.
                let bytes = format!("file {i}\n").repeat(if i % 2 == 0 { 30 } else { 1 });
                let name = format!("{i}.md");
                let dest = tmp.path().join(&name);
                if i % 5 == 4 {
                    let b = bytes.clone();
                    batch.add(dest, |f| f.write_all(b.as_bytes())).unwrap();
                } else {
                    let mut buf = batch.buffer().unwrap();
                    assert!(buf.is_empty(), "a buffer comes back empty");
                    buf.extend_from_slice(bytes.as_bytes());
                    batch.add_bytes(dest, buf).unwrap();
                }
                contents.push((name, bytes.into_bytes()));
            }
            assert_eq!(batch.len(), 40);
            batch.commit().unwrap();
            check_in_place(tmp.path(), &contents);
        }
    }

    #[test]
    fn buffers_are_reused_not_multiplied() {
        let tmp = tempfile::tempdir().unwrap();
        let mut batch = AtomicBatch::with_limits(tmp.path(), Limits { files: 2, bytes: 1 });
        let mut seen = std::collections::HashSet::new();
        for i in 0..50 {
            let mut buf = batch.buffer().unwrap();
            buf.reserve(4096);
            seen.insert(buf.as_ptr() as usize);
            buf.extend_from_slice(format!("{i}").as_bytes());
            batch
                .add_bytes(tmp.path().join(format!("{i}.md")), buf)
                .unwrap();
        }
        batch.commit().unwrap();
        assert!(seen.len() <= BUFFERS, "{} buffers for 50 files", seen.len());
        assert_eq!(names(tmp.path()).len(), 50);
    }

    #[test]
    fn a_failed_write_in_the_writing_thread_fails_the_batch_and_leaves_no_temp_file() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("offload");
        std::fs::create_dir(&dir).unwrap();
        let mut batch = AtomicBatch::with_limits(&dir, Limits { files: 1, bytes: 1 });
        let mut buf = batch.buffer().unwrap();
        buf.extend_from_slice(b"kept");
        batch.add_bytes(dir.join("kept.md"), buf).unwrap();
        // Wait until the first file is in place, then take the directory
        // away: the next temp file cannot be created.
        let kept = dir.join("kept.md");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !kept.exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "kept.md never appeared"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        std::fs::rename(&dir, tmp.path().join("moved")).unwrap();
        let mut failed = None;
        for i in 0..10 {
            let added = batch.buffer().and_then(|mut buf| {
                buf.extend_from_slice(b"lost");
                batch.add_bytes(dir.join(format!("{i}.md")), buf)
            });
            if let Err(e) = added {
                failed = Some(e);
                break;
            }
        }
        let err = match failed {
            Some(e) => e,
            None => batch.commit().unwrap_err(),
        };
        assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
        assert_eq!(names(&tmp.path().join("moved")), ["kept.md"]);
        assert_eq!(
            std::fs::read(tmp.path().join("moved/kept.md")).unwrap(),
            b"kept"
        );
    }

    #[test]
    fn a_failed_rename_in_an_early_group_fails_the_batch_and_leaves_no_temp_file() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("1.md")).unwrap();
        std::fs::write(tmp.path().join("1.md/inside"), b"").unwrap();
        let mut batch = AtomicBatch::with_limits(
            tmp.path(),
            Limits {
                files: 2,
                bytes: u64::MAX,
            },
        );
        let mut result = Ok(());
        for i in 0..20 {
            let name = format!("{i}.md");
            result = batch.buffer().and_then(|mut buf| {
                buf.extend_from_slice(name.as_bytes());
                batch.add_bytes(tmp.path().join(&name), buf)
            });
            if result.is_err() {
                break;
            }
        }
        let result = result.and_then(|()| batch.commit());
        assert!(result.is_err(), "a directory cannot be replaced");
        let names = names(tmp.path());
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
        assert!(tmp.path().join("1.md/inside").exists());
        for i in (0..20).filter(|&i| i != 1) {
            let name = format!("{i}.md");
            if let Ok(bytes) = std::fs::read(tmp.path().join(&name)) {
                assert_eq!(bytes, name.as_bytes());
            }
        }
    }
}
