//! A team registry's address, `postgres://USER@HOST:PORT/DATABASE?…` (or
//! `postgresql://`), and the connection settings jkz makes of it.
//!
//! The password never has to be in the URL: as libpq does, jkz takes it from
//! `PGPASSWORD`, else from the password file (`PGPASSFILE`, else
//! `~/.pgpass`, see [`super::pgpass`]). A URL that holds one is accepted from
//! the environment (`JKZ_REGISTRY_URL`), never written to a file and never
//! shown: every message masks it ([`RegistryUrl::masked`]). The user defaults
//! to `PGUSER`, else the login name; `sslmode` to `PGSSLMODE`, else
//! `prefer`, and the CA to `sslrootcert`, else `PGSSLROOTCERT`, else
//! `~/.postgresql/root.crt` ([`super::tls`]: libpq's modes, `disable` to
//! `verify-full`). The client itself knows only `disable`, `prefer` and
//! `require`, so jkz takes `sslmode` and `sslrootcert` out of the URL it
//! hands the client and applies them itself.

use std::str::FromStr;
use std::time::Duration;

use super::tls::{Mode, Tls};

/// The URL schemes accepted.
const SCHEMES: [&str; 2] = ["postgres://", "postgresql://"];

/// A parsed, checked registry URL.
#[derive(Clone, PartialEq, Eq)]
pub struct RegistryUrl {
    raw: String,
}

impl std::fmt::Debug for RegistryUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RegistryUrl({})", self.masked())
    }
}

impl std::fmt::Display for RegistryUrl {
    /// The URL with its password masked.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.masked())
    }
}

/// How long one caller may spend on the database: the connection, each
/// statement (enforced by the server, `statement_timeout`), and the whole
/// operation (enforced here: past it the caller stops waiting).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    pub connect: Duration,
    pub statement: Duration,
    pub total: Duration,
}

/// A hook's connection timeout: a hook must never hold up the client.
pub const HOOK_CONNECT: Duration = Duration::from_millis(300);
/// A hook's statement timeout.
pub const HOOK_STATEMENT: Duration = Duration::from_millis(500);
/// A command's connection timeout.
pub const COMMAND_CONNECT: Duration = Duration::from_secs(3);

impl Budget {
    /// A hook's: connect within 300 ms, each statement within 500 ms, the
    /// whole operation within 800 ms; past that the hook fails open.
    pub fn hook() -> Budget {
        Budget {
            connect: HOOK_CONNECT,
            statement: HOOK_STATEMENT,
            total: HOOK_CONNECT + HOOK_STATEMENT,
        }
    }

    /// A command's: connect within 3 s; a statement (which may wait for
    /// another writer's lock) as long as any jkz writer waits for a lock
    /// (`JKZ_LOCK_WAIT_MS`, 10 s by default); the whole operation within
    /// the sum and a second more.
    pub fn command() -> Budget {
        let statement = crate::json_file::lock_wait().max(Duration::from_millis(1));
        Budget {
            connect: COMMAND_CONNECT,
            statement,
            total: COMMAND_CONNECT + statement + Duration::from_secs(1),
        }
    }
}

impl RegistryUrl {
    /// Checks `raw`: a `postgres://` URL the client can parse, with no
    /// `sslmode` this build cannot honour. The error says what is wrong,
    /// without the password.
    pub fn parse(raw: &str) -> Result<RegistryUrl, String> {
        let raw = raw.trim();
        let url = RegistryUrl {
            raw: raw.to_string(),
        };
        if !SCHEMES.iter().any(|s| raw.starts_with(s)) {
            return Err(format!(
                "{:?} is not a PostgreSQL URL: write postgres://USER@HOST:PORT/DATABASE (the password goes in PGPASSWORD or ~/.pgpass)",
                url.masked()
            ));
        }
        let config = postgres::Config::from_str(&url.for_client()).map_err(|e| {
            format!(
                "{}: not a valid PostgreSQL URL ({e}): write postgres://USER@HOST:PORT/DATABASE",
                url.masked()
            )
        })?;
        if authority(&raw[scheme_len(raw)..]).matches('@').count() > 1 {
            return Err(format!(
                "{}: more than one '@' before the host: write an '@' in a user name or password as %40 (better: the password in PGPASSWORD or ~/.pgpass)",
                url.masked()
            ));
        }
        if config.get_hosts().is_empty() {
            return Err(format!(
                "{}: names no host: write postgres://USER@HOST:PORT/DATABASE",
                url.masked()
            ));
        }
        if let Some(mode) = query_value(raw, "sslmode") {
            Mode::parse(&mode).map_err(|why| format!("{}: sslmode: {why}", url.masked()))?;
        }
        Ok(url)
    }

    /// True when the URL itself holds a password (`user:pw@` or
    /// `?password=`).
    pub fn has_password(&self) -> bool {
        postgres::Config::from_str(&self.for_client()).is_ok_and(|c| c.get_password().is_some())
    }

    /// The URL as given, password included: only for the connection.
    pub fn expose(&self) -> &str {
        &self.raw
    }

    /// The URL with any password replaced by `***`, for every message.
    pub fn masked(&self) -> String {
        mask(&self.raw)
    }

    /// The client's settings: the URL's, then the libpq environment
    /// (`PGUSER`, `PGPASSWORD`, the password file, `PGSSLMODE`) for what it
    /// leaves out, then jkz's bounds (`budget`) and `application_name=jkz`.
    pub fn config(&self, budget: Budget) -> Result<postgres::Config, String> {
        self.config_with(budget, |name| std::env::var(name).ok())
    }

    /// [`RegistryUrl::config`] with the environment given (tests).
    pub fn config_with(
        &self,
        budget: Budget,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<postgres::Config, String> {
        let env = |name: &str| env(name).filter(|v| !v.is_empty());
        let mut config = postgres::Config::from_str(&self.for_client())
            .map_err(|e| format!("{}: not a valid PostgreSQL URL ({e})", self.masked()))?;
        if config.get_user().is_none() {
            if let Some(user) = env("PGUSER") {
                config.user(&user);
            }
        }
        config.ssl_mode(self.tls_with(&env)?.mode.negotiation());
        if config.get_password().is_none() {
            if let Some(pw) = env("PGPASSWORD") {
                config.password(pw);
            } else if let Some(pw) = super::pgpass::lookup(&config, &env) {
                config.password(pw);
            }
        }
        config.connect_timeout(budget.connect);
        config.keepalives(true);
        config.keepalives_idle(Duration::from_secs(30));
        config.tcp_user_timeout(budget.total);
        if config.get_application_name().is_none() {
            config.application_name("jkz");
        }
        let bounds = format!(
            "-c statement_timeout={} -c lock_timeout={} -c idle_in_transaction_session_timeout={}",
            budget.statement.as_millis().max(1),
            budget.statement.as_millis().max(1),
            budget.total.as_millis().max(1) + 1000,
        );
        let options = match config.get_options() {
            Some(theirs) if !theirs.trim().is_empty() => format!("{theirs} {bounds}"),
            _ => bounds,
        };
        config.options(&options);
        Ok(config)
    }

    /// The TLS settings: the URL's `sslmode` and `sslrootcert`, else the
    /// libpq environment's (`PGSSLMODE`, `PGSSLROOTCERT`,
    /// `~/.postgresql/root.crt`); `prefer` by default.
    pub fn tls(&self) -> Result<Tls, String> {
        self.tls_with(&|name: &str| std::env::var(name).ok().filter(|v| !v.is_empty()))
    }

    /// [`RegistryUrl::tls`] with the environment given (tests).
    pub fn tls_with(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<Tls, String> {
        Tls::resolve(
            query_value(&self.raw, "sslmode").as_deref(),
            query_value(&self.raw, "sslrootcert").as_deref(),
            env,
        )
        .map_err(|why| format!("{}: {why}", self.masked()))
    }

    /// The URL the client parses: without `sslmode` and `sslrootcert`,
    /// which jkz applies itself (the client knows neither `verify-ca`,
    /// `verify-full` nor a CA file).
    fn for_client(&self) -> String {
        let Some((base, query)) = self.raw.split_once('?') else {
            return self.raw.clone();
        };
        let kept: Vec<&str> = query
            .split('&')
            .filter(|pair| !matches!(pair.split('=').next(), Some("sslmode" | "sslrootcert")))
            .collect();
        if kept.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", kept.join("&"))
        }
    }

    /// The database's name as the server will see it (for messages).
    pub fn database(&self) -> Option<String> {
        postgres::Config::from_str(&self.for_client())
            .ok()
            .and_then(|c| c.get_dbname().map(str::to_string))
    }
}

/// The value the URL's query string gives `key` (the last, as the client
/// reads it), percent-decoded.
fn query_value(raw: &str, key: &str) -> Option<String> {
    let (_, query) = raw.split_once('?')?;
    query
        .split('&')
        .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
        .rev()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| percent_decode(v))
}

/// `%XX` escapes (and `+`, as a space is written in a query) decoded; a
/// stray `%` is kept as it is.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The length of `raw`'s scheme (`postgres://`), 0 when it has none jkz reads.
fn scheme_len(raw: &str) -> usize {
    SCHEMES
        .iter()
        .find(|s| raw.starts_with(**s))
        .map_or(0, |s| s.len())
}

/// The authority of a URL without its scheme: up to the path or the query.
fn authority(rest: &str) -> &str {
    &rest[..rest.find(['/', '?']).unwrap_or(rest.len())]
}

/// `raw` with the password of its credentials (everything before the
/// authority's last `@`, so an unencoded `@` in a password never shows)
/// and of a `password=` query parameter replaced by `***`.
pub fn mask(raw: &str) -> String {
    let Some(scheme) = SCHEMES.iter().find(|s| raw.starts_with(**s)) else {
        // Not a URL jkz reads; still never echo what may be a secret.
        return match raw.split_once('@') {
            Some((_, rest)) => format!("***@{rest}"),
            None => raw.to_string(),
        };
    };
    let rest = &raw[scheme.len()..];
    let mut out = String::from(*scheme);
    let after_creds = match authority(rest).rfind('@') {
        Some(at) => {
            let (creds, after) = (&rest[..at], &rest[at + 1..]);
            match creds.split_once(':') {
                Some((user, _)) => {
                    out.push_str(user);
                    out.push_str(":***@");
                }
                None => {
                    out.push_str(creds);
                    out.push('@');
                }
            }
            after
        }
        None => rest,
    };
    match after_creds.split_once('?') {
        Some((path, query)) => {
            out.push_str(path);
            out.push('?');
            let pairs: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some(("password", _)) => "password=***".to_string(),
                    _ => pair.to_string(),
                })
                .collect();
            out.push_str(&pairs.join("&"));
        }
        None => out.push_str(after_creds),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use postgres::config::SslMode;

    #[test]
    fn passwords_are_masked_wherever_the_client_would_read_one() {
        for (raw, shown) in [
            (
                "postgres://jkz:s3cret@db:5432/jkz",
                "postgres://jkz:***@db:5432/jkz",
            ),
            ("postgres://jkz@db/jkz", "postgres://jkz@db/jkz"),
            (
                "postgresql://db/jkz?user=a&password=s3cret&sslmode=disable",
                "postgresql://db/jkz?user=a&password=***&sslmode=disable",
            ),
            ("postgres://a:b:c@h/d", "postgres://a:***@h/d"),
            ("mysql://u:pw@h/d", "***@h/d"),
            (
                "postgres://jkz:s3cret@pw@127.0.0.1:1/jkzr",
                "postgres://jkz:***@127.0.0.1:1/jkzr",
            ),
            ("postgres://jkz@db/a@b", "postgres://jkz@db/a@b"),
        ] {
            assert_eq!(mask(raw), shown, "{raw}");
            assert!(!mask(raw).contains("s3cret"));
        }
    }

    #[test]
    fn a_url_is_checked_before_any_connection() {
        assert!(RegistryUrl::parse("postgres://jkz@127.0.0.1:5432/jkz").is_ok());
        let e = RegistryUrl::parse("mysql://u:hunter2@h/d").unwrap_err();
        assert!(
            e.contains("not a PostgreSQL URL") && !e.contains("hunter2"),
            "{e}"
        );
        let e = RegistryUrl::parse("postgres://u:hunter2@h:notaport/d").unwrap_err();
        assert!(e.contains("not a valid") && !e.contains("hunter2"), "{e}");
        let e = RegistryUrl::parse("postgres://jkz:hunter2@pw@h/d").unwrap_err();
        assert!(
            e.contains("%40") && !e.contains("hunter2") && !e.contains("pw@"),
            "{e}"
        );
        let e = RegistryUrl::parse("postgres://u:hunter2@h/d?sslmode=on").unwrap_err();
        assert!(e.contains("sslmode") && e.contains("verify-full"), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
        for mode in [
            "disable",
            "allow",
            "prefer",
            "require",
            "verify-ca",
            "verify-full",
        ] {
            RegistryUrl::parse(&format!(
                "postgres://h/d?sslmode={mode}&sslrootcert=/ca.pem"
            ))
            .unwrap_or_else(|e| panic!("{mode}: {e}"));
        }
        let u = RegistryUrl::parse("postgres://u:pw@h/d").unwrap();
        assert!(u.has_password());
        assert!(!RegistryUrl::parse("postgres://u@h/d")
            .unwrap()
            .has_password());
    }

    #[test]
    fn the_libpq_environment_fills_what_the_url_leaves_out() {
        let url = RegistryUrl::parse("postgres://h/d").unwrap();
        let env = |name: &str| match name {
            "PGUSER" => Some("team".to_string()),
            "PGPASSWORD" => Some("from-env".to_string()),
            "PGSSLMODE" => Some("disable".to_string()),
            _ => None,
        };
        let c = url.config_with(Budget::hook(), env).unwrap();
        assert_eq!(c.get_user(), Some("team"));
        assert_eq!(c.get_password(), Some(&b"from-env"[..]));
        assert_eq!(c.get_ssl_mode(), SslMode::Disable);
        assert_eq!(c.get_connect_timeout(), Some(&HOOK_CONNECT));
        assert!(c
            .get_options()
            .unwrap()
            .contains("-c statement_timeout=500"));
        // The URL's own settings win.
        let url = RegistryUrl::parse("postgres://me:pw@h/d?sslmode=prefer").unwrap();
        let c = url.config_with(Budget::hook(), env).unwrap();
        assert_eq!(c.get_user(), Some("me"));
        assert_eq!(c.get_password(), Some(&b"pw"[..]));
        assert_eq!(c.get_ssl_mode(), SslMode::Prefer);
        // verify-full: the client is asked to require TLS; jkz verifies.
        let strict = |name: &str| match name {
            "PGSSLMODE" => Some("verify-full".to_string()),
            "PGSSLROOTCERT" => Some("/etc/jkz/ca.pem".to_string()),
            _ => None,
        };
        let url = RegistryUrl::parse("postgres://h/d").unwrap();
        let c = url.config_with(Budget::hook(), strict).unwrap();
        assert_eq!(c.get_ssl_mode(), SslMode::Require);
        let tls = url.tls_with(&strict).unwrap();
        assert_eq!(tls.mode, Mode::VerifyFull);
        assert_eq!(
            tls.root_file(),
            Some(std::path::Path::new("/etc/jkz/ca.pem"))
        );
        let e = url
            .config_with(Budget::hook(), |n: &str| {
                (n == "PGSSLMODE").then(|| "verify-full".to_string())
            })
            .unwrap_err();
        assert!(
            e.contains("verify-full") && e.contains("PGSSLROOTCERT"),
            "{e}"
        );
    }

    #[test]
    fn sslmode_and_sslrootcert_are_read_from_the_url_and_kept_from_the_client() {
        let url = RegistryUrl::parse(
            "postgres://u@h/d?sslmode=verify-ca&application_name=x&sslrootcert=%2Fetc%2Fmy%20ca.pem",
        )
        .unwrap();
        assert_eq!(url.for_client(), "postgres://u@h/d?application_name=x");
        let none = |_: &str| None;
        let tls = url.tls_with(&none).unwrap();
        assert_eq!(tls.mode, Mode::VerifyCa);
        assert_eq!(
            tls.root_file(),
            Some(std::path::Path::new("/etc/my ca.pem"))
        );
        let c = url.config_with(Budget::hook(), none).unwrap();
        assert_eq!(c.get_ssl_mode(), SslMode::Require);
        assert_eq!(c.get_application_name(), Some("x"));
        assert_eq!(url.database().as_deref(), Some("d"));
        assert_eq!(
            RegistryUrl::parse("postgres://u@h/d?sslmode=require")
                .unwrap()
                .for_client(),
            "postgres://u@h/d"
        );
        assert_eq!(percent_decode("a%2"), "a%2");
        assert_eq!(percent_decode("%41%zz"), "A%zz");
    }
}
