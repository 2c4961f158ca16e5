//! One bounded conversation with the team registry: connect, check (or
//! bring up to date) the schema, run the caller's statements, within the
//! caller's [`Budget`].
//!
//! The client is synchronous, and its connection timeout covers only the
//! TCP handshake: a server that accepts and then never answers (hung,
//! stopped with SIGSTOP, a black-holing proxy) would hold a caller forever.
//! So the conversation runs on a thread of its own and the caller waits
//! for it at most `budget.total`; past that it gives up with
//! [`TeamError::timed_out`] (a hook then fails open, a command exits
//! non-zero) and the abandoned thread ends with the process. The server
//! bounds each statement itself (`statement_timeout`, `lock_timeout`), so
//! a slow statement fails on its own and frees its locks.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::error::{Kind, TeamError};
use super::schema;
use super::url::{Budget, RegistryUrl};

/// What the conversation does with the schema before the caller's work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schema {
    /// A writer: an older schema (or none) is migrated first.
    Migrate,
    /// A reader that must change nothing (the observer, `jkz doctor`): the
    /// version is checked, never changed.
    ReadOnly,
    /// A writer whose first statement reads the version itself (a round
    /// trip saved on every hook and lock): the connection opens unchecked,
    /// and the caller settles it with [`Conn::settle`] when that read found
    /// no table, or another version, or before any statement that does not
    /// read it ([`Conn::checked`]).
    Folded,
}

/// An open connection, for the caller's statements.
pub struct Conn {
    pub client: postgres::Client,
    /// The masked URL, for messages.
    pub url: String,
    /// The schema version found (after migrating, for a writer).
    pub version: i32,
    /// Whether `version` was read from the database (not yet, for
    /// [`Schema::Folded`]).
    pub checked: bool,
}

impl Conn {
    /// A client error as a [`TeamError`] naming this registry.
    pub fn err(&self, e: postgres::Error) -> TeamError {
        TeamError::of(&self.url, &e, false)
    }

    /// Checks the schema (migrating an older one) unless done already: for
    /// [`Schema::Folded`], before a statement that does not read the
    /// version itself.
    pub fn checked(&mut self) -> Result<(), TeamError> {
        if self.checked {
            return Ok(());
        }
        schema::migrate(&mut self.client, &self.url, false)?;
        self.version = schema::SCHEMA_VERSION;
        self.checked = true;
        Ok(())
    }

    /// After a folded read of the version (`found`: `None` when the table
    /// is missing) that was not the current one: ends the transaction the
    /// read was in (if any), migrates an older schema or refuses a newer
    /// one. True when the caller should run its statements again.
    pub fn settle(&mut self, found: Option<i32>) -> Result<bool, TeamError> {
        if self.checked || found == Some(schema::SCHEMA_VERSION) {
            self.checked = true;
            return Ok(false);
        }
        self.client
            .batch_execute("ROLLBACK")
            .map_err(|e| TeamError::of(&self.url, &e, false))?;
        self.checked()?;
        Ok(true)
    }
}

/// Opens a connection within `budget.connect` and checks the schema.
pub fn open(url: &RegistryUrl, budget: Budget, schema: Schema) -> Result<Conn, TeamError> {
    let shown = url.masked();
    let config = url
        .config(budget)
        .map_err(|why| TeamError::new(Kind::Config, "", why))?;
    let tls = url
        .tls()
        .map_err(|why| TeamError::new(Kind::Config, "", why))?;
    let mut client = config
        .connect(tls.connector())
        .map_err(|e| TeamError::of(&shown, &e, true))?;
    let version = match schema {
        Schema::Migrate => {
            schema::migrate(&mut client, &shown, false)?;
            schema::SCHEMA_VERSION
        }
        Schema::ReadOnly => schema::check(&mut client, &shown)?,
        Schema::Folded => schema::SCHEMA_VERSION,
    };
    Ok(Conn {
        client,
        url: shown,
        version,
        checked: schema != Schema::Folded,
    })
}

/// Runs `op` on a fresh connection to `url`, on a thread of its own, and
/// waits for it at most `budget.total + extra` (`extra`: a wait the caller
/// asked for, as `jkz lock acquire --wait`; `None` waits without a bound).
pub fn with_conn<T, F>(
    url: &RegistryUrl,
    budget: Budget,
    schema: Schema,
    extra: Option<Duration>,
    op: F,
) -> Result<T, TeamError>
where
    T: Send + 'static,
    F: FnOnce(&mut Conn) -> Result<T, TeamError> + Send + 'static,
{
    let url = url.clone();
    let shown = url.masked();
    let limit = extra.map(|e| budget.total.saturating_add(e));
    bounded(&shown, limit, move || {
        let mut conn = open(&url, budget, schema)?;
        op(&mut conn)
    })
}

/// The most conversations one process keeps waiting on the database at
/// once: a long-running observer facing a hung server stops opening new
/// ones (each given up on still holds a thread until its socket closes).
const MAX_WAITING: usize = 8;

/// Conversations whose thread still runs (answered or given up on).
static RUNNING: AtomicUsize = AtomicUsize::new(0);

/// Counts one running conversation while it lives.
struct Running;

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Runs `f` on its own thread and waits at most `limit` (`None`: without a
/// bound) for its answer.
pub fn bounded<T, F>(shown: &str, limit: Option<Duration>, f: F) -> Result<T, TeamError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, TeamError> + Send + 'static,
{
    if RUNNING.fetch_add(1, Ordering::SeqCst) >= MAX_WAITING {
        RUNNING.fetch_sub(1, Ordering::SeqCst);
        return Err(TeamError::new(
            Kind::TimedOut,
            shown,
            format!("{MAX_WAITING} earlier conversations with it are still waiting for an answer: not starting another"),
        ));
    }
    let running = Running;
    let (tx, rx) = mpsc::sync_channel(1);
    let started = Instant::now();
    std::thread::Builder::new()
        .name("jkz-team-registry".into())
        .spawn(move || {
            let _running = running;
            let _ = tx.send(f());
        })
        .map_err(|e| {
            TeamError::new(
                Kind::Unreachable,
                shown,
                format!("could not start a thread for it: {e}"),
            )
        })?;
    let answer = match limit {
        Some(limit) => rx.recv_timeout(limit).map_err(|e| match e {
            mpsc::RecvTimeoutError::Timeout => TeamError::timed_out(shown, started.elapsed()),
            mpsc::RecvTimeoutError::Disconnected => gone(shown),
        }),
        None => rx.recv().map_err(|_| gone(shown)),
    };
    answer?
}

fn gone(shown: &str) -> TeamError {
    TeamError::new(
        Kind::Query,
        shown,
        "the conversation with it ended without an answer (a bug in jkz: please report it)",
    )
}

/// `s` as an SQL string literal: `E'…'` with `\` and `'` doubled, which
/// reads the same whatever `standard_conforming_strings` says (the client
/// speaks UTF-8, and text holds no NUL).
pub fn literal(s: &str) -> String {
    format!("E'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_literal_reads_back_as_the_text_whatever_it_holds() {
        assert_eq!(literal("plain"), "E'plain'");
        assert_eq!(literal(r"it's a \ back"), r"E'it''s a \\ back'");
        assert_eq!(
            literal("'; DROP TABLE jkz_locks; --"),
            "E'''; DROP TABLE jkz_locks; --'"
        );
    }

    #[test]
    fn a_listener_that_never_answers_is_given_up_on_within_the_bound() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        // Accepts (the kernel does), never answers.
        let url = RegistryUrl::parse(&format!("postgres://jkz@127.0.0.1:{port}/jkz")).unwrap();
        let started = Instant::now();
        let e = with_conn(
            &url,
            Budget::hook(),
            Schema::Migrate,
            Some(Duration::ZERO),
            |_| Ok(()),
        )
        .expect_err("no answer");
        assert_eq!(e.kind, Kind::TimedOut, "{e}");
        assert!(started.elapsed() < Duration::from_secs(5), "{e}");
        assert!(e.to_string().contains("no answer within"), "{e}");
        drop(listener);
    }
}
