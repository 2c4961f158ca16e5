//! How jkz opens its SQLite databases (`state/chat.db`, `memory.db`,
//! `cr-history.db`, the event index, the metrics), written once: the open
//! flags and the busy timeout, the switch to WAL, the checks made before a
//! file is opened, and the whole opening of a database jkz derives from
//! other files and can build anew.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{Connection, ErrorCode, OpenFlags, Transaction};

/// Opens `path` to read and write, creating it when missing; a statement
/// waits up to `busy` for another connection's lock.
pub fn open_writable(path: &Path, busy: Duration) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(busy)?;
    Ok(conn)
}

/// Opens `path` to read only (nothing is created; SQLite may create the
/// `-wal` and `-shm` companions, as any reader of a WAL database does); a
/// statement waits up to `busy` for another connection's lock.
pub fn open_read_only(path: &Path, busy: Duration) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(busy)?;
    Ok(conn)
}

/// True when `e` met another connection's lock.
pub fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// Switches the database to WAL mode. The switch takes an exclusive lock
/// that the busy handler does not always wait for: it is retried every
/// 5 ms while the database is busy, until `deadline`.
pub fn switch_to_wal(conn: &Connection, deadline: Instant) -> rusqlite::Result<()> {
    loop {
        match conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0)) {
            Ok(_) => return Ok(()),
            Err(e) if Instant::now() < deadline && is_busy(&e) => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(e),
        }
    }
}

/// The time left until `deadline`, at least a millisecond (a busy timeout
/// of zero would mean "wait forever" to some callers' eyes; here it is
/// the shortest wait).
pub fn left(deadline: Instant) -> Duration {
    deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1))
}

/// Refuses a database to write whose path is a symbolic link: jkz never
/// writes through a link in `state/`. The error is the line to show.
pub fn refuse_link(path: &Path) -> Result<(), String> {
    match fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        true => Err(format!(
            "{} is a symbolic link: refused (jkz never writes through a link in state/); remove it",
            path.display()
        )),
        false => Ok(()),
    }
}

/// Whether there is a database at `path` to read: false when there is
/// none; an error (the line to show) when something other than a regular
/// file stands in its place.
pub fn file_to_read(path: &Path) -> Result<bool, String> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Ok(m) if !m.is_file() => Err(format!(
            "{} is not a regular file: not read",
            path.display()
        )),
        _ => Ok(true),
    }
}

/// What opening a derived database found: a database jkz builds from other
/// files (the event log, say) and can therefore build anew.
pub enum Derived {
    Ready(Connection),
    /// Damaged, or written by another version: to build anew, for the
    /// reason given.
    Rebuild(String),
}

/// Opens (creating when missing) the derived database at `path`, of
/// schema `version`: in WAL mode with `synchronous=NORMAL`; an empty file
/// is given its schema by `create`, in one transaction. A file that is not
/// a database, is damaged or has another version is [`Derived::Rebuild`];
/// the only error is another process holding it busy past `busy`.
pub fn open_derived(
    path: &Path,
    busy: Duration,
    version: i64,
    create: impl FnOnce(&Transaction) -> rusqlite::Result<()>,
) -> rusqlite::Result<Derived> {
    if fs::symlink_metadata(path).is_ok_and(|m| !m.is_file()) {
        return Ok(Derived::Rebuild("not a regular file".into()));
    }
    let conn = match Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    ) {
        Ok(conn) => conn,
        Err(e) => return Ok(Derived::Rebuild(one_line(&e))),
    };
    conn.busy_timeout(busy)?;
    let prepared = (|| -> rusqlite::Result<Option<String>> {
        let found: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if found == version {
            conn.pragma_update(None, "synchronous", "NORMAL")?;
            return Ok(None);
        }
        let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
        if found != 0 || tables != 0 {
            return Ok(Some(format!(
                "written by another version of jkz (schema {found}, this jkz reads {version})"
            )));
        }
        conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0))?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        let tx = conn.unchecked_transaction()?;
        // Another process may have created it meanwhile.
        let found: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if found == 0 {
            create(&tx)?;
            tx.pragma_update(None, "user_version", version)?;
        }
        tx.commit()?;
        Ok(None)
    })();
    match prepared {
        Ok(None) => Ok(Derived::Ready(conn)),
        Ok(Some(why)) => Ok(Derived::Rebuild(why)),
        Err(e) if is_busy(&e) => Err(e),
        Err(e) => Ok(Derived::Rebuild(format!("unreadable ({})", one_line(&e)))),
    }
}

/// A SQLite error on one line.
pub fn one_line(e: &rusqlite::Error) -> String {
    e.to_string().replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(tx: &Transaction) -> rusqlite::Result<()> {
        tx.execute_batch("CREATE TABLE t (x INTEGER);")
    }

    #[test]
    fn a_derived_database_is_made_once_and_another_version_is_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.db");
        let busy = Duration::from_secs(5);
        let Derived::Ready(conn) = open_derived(&path, busy, 3, create).unwrap() else {
            panic!("not made");
        };
        conn.execute("INSERT INTO t VALUES (1)", []).unwrap();
        drop(conn);
        let Derived::Ready(conn) = open_derived(&path, busy, 3, |_| panic!("made twice")).unwrap()
        else {
            panic!("not opened");
        };
        let n: i64 = conn
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1);
        drop(conn);
        let Derived::Rebuild(why) = open_derived(&path, busy, 4, create).unwrap() else {
            panic!("another version opened");
        };
        assert!(why.contains("schema 3, this jkz reads 4"), "{why}");
        fs::write(
            &path,
            b"not a database at all, but long enough to be read as one",
        )
        .unwrap();
        assert!(matches!(
            open_derived(&path, busy, 3, create).unwrap(),
            Derived::Rebuild(_)
        ));
    }

    #[test]
    fn links_and_non_files_are_refused_with_their_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.db");
        assert_eq!(file_to_read(&path), Ok(false));
        assert_eq!(refuse_link(&path), Ok(()));
        fs::create_dir(&path).unwrap();
        let why = file_to_read(&path).unwrap_err();
        assert!(
            why.ends_with("x.db is not a regular file: not read"),
            "{why}"
        );
        let link = dir.path().join("link.db");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let why = refuse_link(&link).unwrap_err();
        assert!(why.contains("link.db is a symbolic link: refused"), "{why}");
    }
}
