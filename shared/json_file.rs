//! Read-modify-write of a JSON object file under an advisory lock, so two
//! processes updating different fields of the same file both keep theirs.
//!
//! The lock is taken on a sibling `.<name>.lock` file (never on the data file,
//! which is replaced by rename and so is a different inode after each write).
//! Writes are atomic ([`crate::atomic`]); key order and unknown fields survive
//! because the object is edited in place (`serde_json` with `preserve_order`).
//!
//! The wait for the lock is bounded ([`LOCK_WAIT`], a hook [`HOOK_LOCK_WAIT`]):
//! a holder that is frozen (stopped with ^Z, stuck on a slow disk) must cost
//! the next writer a clear error, not a hang. A holder that dies releases the
//! lock with its last descriptor; the empty lock file left behind is harmless.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::atomic::{write_atomic_with, AtomicFile, Durability};
use crate::state_dir::read_state_file;

/// Why an update could not be made.
#[derive(Debug)]
pub enum UpdateError {
    Io(io::Error),
    /// The file exists but is not a JSON object; it is left untouched.
    NotAnObject(String),
}

impl std::fmt::Display for UpdateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UpdateError::Io(e) => e.fmt(f),
            UpdateError::NotAnObject(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for UpdateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            UpdateError::Io(e) => Some(e),
            UpdateError::NotAnObject(_) => None,
        }
    }
}

impl From<io::Error> for UpdateError {
    fn from(e: io::Error) -> Self {
        UpdateError::Io(e)
    }
}

/// The largest file [`update_object`] reads; jkz's objects are a few KiB.
pub const MAX_OBJECT_BYTES: u64 = 64 * 1024 * 1024;

/// The lock file guarding `path`.
pub fn lock_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.lock"))
}

/// Holds the exclusive advisory lock for `path` until dropped.
#[derive(Debug)]
pub struct FileLock {
    _file: File,
}

/// How long a writer waits for another's lock before it gives up: a
/// read-modify-write holds it for milliseconds, so ten seconds is a frozen
/// holder, not a busy one. `JKZ_LOCK_WAIT_MS` overrides it.
pub const LOCK_WAIT: Duration = Duration::from_secs(10);

/// How long a hook waits: it must answer promptly, and what it writes under
/// a lock (the compaction nudge) may be skipped with a warning.
pub const HOOK_LOCK_WAIT: Duration = Duration::from_secs(2);

/// [`LOCK_WAIT`], or `JKZ_LOCK_WAIT_MS` milliseconds when set.
pub fn lock_wait() -> Duration {
    std::env::var("JKZ_LOCK_WAIT_MS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .map_or(LOCK_WAIT, Duration::from_millis)
}

/// Blocks until the exclusive lock for `path` is held.
pub fn lock(path: &Path) -> io::Result<FileLock> {
    loop {
        let file = open_lock(path)?;
        file.lock()?;
        if still_named(&file, path)? {
            return Ok(FileLock { _file: file });
        }
    }
}

/// True when the lock file just locked is still the one its name leads to.
/// `jkz gc` removes a session record's lock file (holding it): a writer that
/// opened it before and locked it after holds a lock nobody else can see,
/// so it must take the new one instead.
fn still_named(file: &File, path: &Path) -> io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let held = file.metadata()?;
    Ok(std::fs::symlink_metadata(lock_path(path))
        .is_ok_and(|named| named.dev() == held.dev() && named.ino() == held.ino()))
}

/// Takes the exclusive lock for `path`, waiting at most `wait`; past it, an
/// error (`TimedOut`) naming the lock file.
pub fn lock_within(path: &Path, wait: Duration) -> io::Result<FileLock> {
    let mut file = open_lock(path)?;
    let deadline = Instant::now() + wait;
    // Polled: a blocking lock cannot be given up on.
    let mut pause = Duration::from_millis(1);
    loop {
        match file.try_lock() {
            Ok(()) if still_named(&file, path)? => return Ok(FileLock { _file: file }),
            // Removed while we waited (see `still_named`): the new one.
            Ok(()) => {
                file = open_lock(path)?;
                continue;
            }
            Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "{} is held by another process; gave up after {:.1}s",
                    lock_path(path).display(),
                    wait.as_secs_f64()
                ),
            ));
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

fn open_lock(path: &Path) -> io::Result<File> {
    // Never through a link planted as the lock file (see state_dir).
    crate::state_dir::open_lock_file(&lock_path(path))
}

/// Reads the object at `path` (empty when the file does not exist), lets `edit`
/// change it, and writes it back atomically, all under the lock. Returns what
/// `edit` returned. Nothing is written when `edit` fails.
pub fn update_object<T, E>(
    path: &Path,
    edit: impl FnOnce(&mut Map<String, Value>) -> Result<T, E>,
) -> Result<T, E>
where
    E: From<UpdateError>,
{
    update_object_with(path, Durability::Full, edit)
}

/// [`update_object`] with a chosen [`Durability`] of the write.
pub fn update_object_with<T, E>(
    path: &Path,
    durability: Durability,
    edit: impl FnOnce(&mut Map<String, Value>) -> Result<T, E>,
) -> Result<T, E>
where
    E: From<UpdateError>,
{
    update_object_within(path, durability, lock_wait(), edit)
}

/// [`update_object_with`], waiting at most `wait` for the lock.
pub fn update_object_within<T, E>(
    path: &Path,
    durability: Durability,
    wait: Duration,
    edit: impl FnOnce(&mut Map<String, Value>) -> Result<T, E>,
) -> Result<T, E>
where
    E: From<UpdateError>,
{
    let (_guard, out, bytes) = edit_locked(path, wait, edit)?;
    write_atomic_with(path, &bytes, durability).map_err(UpdateError::Io)?;
    Ok(out)
}

/// An update written and synced beside its file but not yet in place: the
/// file's lock is held until it is committed or dropped (dropped, it leaves
/// the file as it was). For a writer whose change must not show before
/// something else is in place, and that wants the writing done meanwhile.
#[derive(Debug)]
pub struct PendingUpdate {
    file: AtomicFile,
    _guard: FileLock,
}

impl PendingUpdate {
    /// Puts the update in place (a rename) and releases the lock.
    pub fn commit(self) -> io::Result<()> {
        self.file.commit()
    }

    /// Puts the update in place, then runs `after` while the lock is still
    /// held (a writer that logs what it changed: no reader that takes the
    /// lock sees the new file without its log line), then releases it.
    pub fn commit_then(self, after: impl FnOnce()) -> io::Result<()> {
        let PendingUpdate { file, _guard } = self;
        file.commit()?;
        after();
        Ok(())
    }
}

/// [`update_object_within`] up to the last step: the new content is written
/// to a temp file and synced; [`PendingUpdate::commit`] renames it into place.
pub fn prepare_update_within<T, E>(
    path: &Path,
    durability: Durability,
    wait: Duration,
    edit: impl FnOnce(&mut Map<String, Value>) -> Result<T, E>,
) -> Result<(T, PendingUpdate), E>
where
    E: From<UpdateError>,
{
    let (guard, out, bytes) = edit_locked(path, wait, edit)?;
    let prepared = AtomicFile::create(path).and_then(|mut file| {
        file.write_all(&bytes)?;
        file.sync_content()?;
        Ok(file.durability(durability))
    });
    let file = prepared.map_err(UpdateError::Io)?;
    Ok((
        out,
        PendingUpdate {
            file,
            _guard: guard,
        },
    ))
}

/// Takes the lock of `path`, reads its object (empty when the file does not
/// exist), applies `edit`, and returns the lock with `edit`'s result and the
/// new content.
fn edit_locked<T, E>(
    path: &Path,
    wait: Duration,
    edit: impl FnOnce(&mut Map<String, Value>) -> Result<T, E>,
) -> Result<(FileLock, T, Vec<u8>), E>
where
    E: From<UpdateError>,
{
    let guard = lock_within(path, wait).map_err(UpdateError::Io)?;
    let mut object = match read_state_file(path, MAX_OBJECT_BYTES) {
        Ok(bytes) if bytes.len() as u64 > MAX_OBJECT_BYTES => {
            return Err(UpdateError::NotAnObject(format!(
                "{}: larger than {MAX_OBJECT_BYTES} bytes: not read",
                path.display()
            ))
            .into())
        }
        Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(map)) => map,
            Ok(_) => {
                return Err(UpdateError::NotAnObject(format!(
                    "{}: not a JSON object",
                    path.display()
                ))
                .into())
            }
            Err(e) => {
                return Err(UpdateError::NotAnObject(format!(
                    "{}: invalid JSON: {e}",
                    path.display()
                ))
                .into())
            }
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => Map::new(),
        Err(e) => return Err(UpdateError::Io(e).into()),
    };
    let out = edit(&mut object)?;
    let object = Value::Object(object);
    // A file nested deeper than jkz parses would be lost to every later read.
    let depth = crate::json_depth::depth(&object);
    if depth > crate::json_depth::MAX_READABLE_DEPTH {
        return Err(UpdateError::Io(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "the new content nests {depth} levels, deeper than jkz reads back ({}); not written",
                crate::json_depth::MAX_READABLE_DEPTH
            ),
        ))
        .into());
    }
    let mut bytes = serde_json::to_vec_pretty(&object).expect("a JSON map serializes");
    bytes.push(b'\n');
    Ok((guard, out, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prepared_update_shows_only_once_committed_and_holds_the_lock() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("s.json");
        std::fs::write(&path, r#"{"z":1}"#).unwrap();
        let add = |o: &mut Map<String, Value>| {
            o.insert("n".into(), Value::from(2));
            Ok::<_, UpdateError>(7)
        };
        let (out, pending) =
            prepare_update_within(&path, Durability::Content, HOOK_LOCK_WAIT, add).unwrap();
        assert_eq!(out, 7);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), r#"{"z":1}"#);
        let held = lock_within(&path, Duration::ZERO).unwrap_err();
        assert_eq!(held.kind(), io::ErrorKind::TimedOut);
        pending.commit().unwrap();
        let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(v, serde_json::json!({"z": 1, "n": 2}));
        lock_within(&path, Duration::ZERO).expect("released by the commit");

        // Dropped: the file as it was, no temp file left, the lock free.
        let (_, pending) = prepare_update_within(&path, Durability::Content, HOOK_LOCK_WAIT, |o| {
            o.clear();
            Ok::<_, UpdateError>(())
        })
        .unwrap();
        drop(pending);
        let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(v, serde_json::json!({"z": 1, "n": 2}));
        let temps = std::fs::read_dir(tmp.path())
            .unwrap()
            .filter(|e| {
                let name = e.as_ref().unwrap().file_name();
                name.to_string_lossy().ends_with(crate::atomic::TEMP_SUFFIX)
            })
            .count();
        assert_eq!(temps, 0);
        lock_within(&path, Duration::ZERO).expect("released by the drop");
    }

    #[test]
    fn keeps_unknown_fields_and_order() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("s.json");
        std::fs::write(&path, r#"{"z":1,"a":{"k":[1,2]},"m":"x"}"#).unwrap();
        update_object::<_, UpdateError>(&path, |o| {
            o.insert("a2".into(), Value::from(true));
            o.insert("m".into(), Value::from("y"));
            Ok(())
        })
        .unwrap();
        let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["z", "a", "m", "a2"]);
        assert_eq!(v["m"], "y");
        assert_eq!(v["a"]["k"][1], 2);
    }

    #[test]
    fn refuses_non_objects_without_touching_them() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("s.json");
        std::fs::write(&path, "[1]").unwrap();
        let r = update_object::<(), UpdateError>(&path, |_| Ok(()));
        assert!(matches!(r, Err(UpdateError::NotAnObject(_))));
        assert_eq!(std::fs::read(&path).unwrap(), b"[1]");
    }

    #[test]
    fn a_held_lock_is_waited_for_a_bounded_time() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("p.json");
        let held = lock(&path).unwrap();
        let started = Instant::now();
        let r = update_object_within::<_, UpdateError>(
            &path,
            Durability::Full,
            Duration::from_millis(50),
            |_| Ok(()),
        );
        let Err(UpdateError::Io(e)) = r else {
            panic!("updated under a held lock")
        };
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(e.to_string().contains(".p.json.lock"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(!path.exists());
        drop(held);
        update_object_within::<_, UpdateError>(
            &path,
            Durability::Full,
            Duration::from_millis(50),
            |o| {
                o.insert("k".into(), Value::from(1));
                Ok(())
            },
        )
        .unwrap();
        assert!(path.exists());
    }

    #[test]
    fn a_lock_file_removed_by_its_holder_is_not_held_by_a_waiter() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("s.json");
        let held = lock(&path).unwrap();
        // A writer opens the lock file, then waits for it.
        let waiter = std::thread::spawn({
            let path = path.clone();
            move || {
                let got = lock_within(&path, Duration::from_secs(10)).unwrap();
                let named = std::fs::metadata(lock_path(&path)).unwrap();
                use std::os::unix::fs::MetadataExt;
                let mine = got._file.metadata().unwrap();
                (named.ino() == mine.ino(), got)
            }
        });
        std::thread::sleep(Duration::from_millis(50));
        // The holder removes the lock file (as gc does) and lets go.
        std::fs::remove_file(lock_path(&path)).unwrap();
        drop(held);
        let (same, got) = waiter.join().unwrap();
        assert!(same, "the waiter holds a lock on a removed file");
        // And it is the lock everyone else sees now.
        let err = lock_within(&path, Duration::ZERO).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        drop(got);
    }

    #[test]
    fn concurrent_updates_of_different_fields_all_land() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("p.json");
        std::thread::scope(|s| {
            for i in 0..16 {
                let path = &path;
                s.spawn(move || {
                    update_object::<_, UpdateError>(path, |o| {
                        o.insert(format!("f{i}"), Value::from(i));
                        Ok(())
                    })
                    .unwrap();
                });
            }
        });
        let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(v.as_object().unwrap().len(), 16);
    }
}
