//! What went wrong with a team registry, in words a user can act on. Every
//! message names the registry by its masked URL: a password is never shown.

use std::time::Duration;

use postgres::error::SqlState;

/// The kind of failure, for callers that treat some differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The URL or the settings around it cannot be used.
    Config,
    /// No connection (refused, unknown host, timed out connecting).
    Unreachable,
    /// The server did not answer within the caller's bound.
    TimedOut,
    /// The server refused the user or the password.
    Auth,
    /// The database's schema is newer than this jkz knows.
    NewerSchema,
    /// A statement failed (a table missing, a statement timeout, …).
    Query,
}

/// A team-registry failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TeamError {
    pub kind: Kind,
    /// The registry's URL, password masked (empty when there is no URL yet).
    pub url: String,
    /// What happened and what to do.
    pub what: String,
}

impl std::fmt::Display for TeamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.url.is_empty() {
            f.write_str(&self.what)
        } else {
            write!(f, "team registry {}: {}", self.url, self.what)
        }
    }
}

impl std::error::Error for TeamError {}

impl From<TeamError> for std::io::Error {
    fn from(e: TeamError) -> std::io::Error {
        std::io::Error::other(e.to_string())
    }
}

impl TeamError {
    pub fn new(kind: Kind, url: &str, what: impl Into<String>) -> TeamError {
        TeamError {
            kind,
            url: url.to_string(),
            what: what.into(),
        }
    }

    /// The caller's bound passed without an answer.
    pub fn timed_out(url: &str, after: Duration) -> TeamError {
        TeamError::new(
            Kind::TimedOut,
            url,
            format!(
                "no answer within {} ms (the server is down, hung or overloaded, or the network drops packets); nothing was changed by this call",
                after.as_millis()
            ),
        )
    }

    /// A client error, classified, with what to do.
    pub fn of(url: &str, e: &postgres::Error, connecting: bool) -> TeamError {
        let one_line = |s: String| s.replace(['\n', '\r'], " ");
        if let Some(db) = e.as_db_error() {
            let msg = one_line(db.message().to_string());
            let code = db.code();
            if *code == SqlState::INVALID_PASSWORD
                || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
            {
                return TeamError::new(
                    Kind::Auth,
                    url,
                    format!("{msg}: check the user in the URL, and the password in PGPASSWORD or ~/.pgpass (jkz never stores one)"),
                );
            }
            if *code == SqlState::INVALID_CATALOG_NAME {
                return TeamError::new(
                    Kind::Unreachable,
                    url,
                    format!("{msg}: create it (createdb, or CREATE DATABASE) or fix the URL"),
                );
            }
            if *code == SqlState::UNDEFINED_TABLE || *code == SqlState::UNDEFINED_COLUMN {
                return TeamError::new(
                    Kind::Query,
                    url,
                    format!("{msg}: the registry's tables are damaged; `jkz registry migrate` recreates what is missing"),
                );
            }
            if *code == SqlState::QUERY_CANCELED || *code == SqlState::LOCK_NOT_AVAILABLE {
                return TeamError::new(
                    Kind::TimedOut,
                    url,
                    format!("{msg} (a statement outlasted jkz's bound: the server is overloaded, or another writer holds the row)"),
                );
            }
            return TeamError::new(Kind::Query, url, msg);
        }
        let mut why = e.to_string();
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            let text = s.to_string();
            if !why.contains(&text) {
                why.push_str(": ");
                why.push_str(&text);
            }
            source = s.source();
        }
        let why = one_line(why);
        if why.contains("password missing") {
            return TeamError::new(
                Kind::Auth,
                url,
                format!("{why}: the server asks for a password; put it in PGPASSWORD or ~/.pgpass (jkz never stores one)"),
            );
        }
        if why.contains("server does not support TLS") {
            return TeamError::new(
                Kind::Unreachable,
                url,
                format!("{why}: the URL or PGSSLMODE asks for TLS (sslmode=require or verify-*) and the server has ssl off; \
                         turn ssl on at the server, or use sslmode=prefer on a network you trust"),
            );
        }
        let kind = if connecting || e.is_closed() {
            Kind::Unreachable
        } else {
            Kind::Query
        };
        TeamError::new(kind, url, why)
    }
}
