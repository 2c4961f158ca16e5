//! The PostgreSQL password file, read as libpq reads it, so that a team
//! registry's password lives where PostgreSQL users already keep it and
//! never in a file jkz writes.
//!
//! The file is `PGPASSFILE`, else `~/.pgpass`; each line is
//! `host:port:database:user:password`, `*` matches anything, `\:` and `\\`
//! escape, `#` starts a comment; the first line matching the connection
//! wins. As libpq does, a file that its group or others can read is
//! ignored (with no password taken from it).

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use postgres::config::Host;

/// The largest password file read.
const MAX_PGPASS: u64 = 1024 * 1024;

/// The password the file gives for `config`'s first host, port, database
/// and user, if any.
pub fn lookup(config: &postgres::Config, env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let path = match env("PGPASSFILE") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env("HOME")?).join(".pgpass"),
    };
    let meta = std::fs::metadata(&path).ok()?;
    if !meta.is_file() || meta.permissions().mode() & 0o077 != 0 || meta.len() > MAX_PGPASS {
        return None;
    }
    let bytes = crate::user_file::read_user_file_bounded(&path, MAX_PGPASS).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let host = match config.get_hosts().first()? {
        Host::Tcp(h) => h.clone(),
        Host::Unix(_) => "localhost".to_string(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let user = config
        .get_user()
        .map(str::to_string)
        .or_else(|| env("PGUSER"))
        .or_else(|| env("USER"))?;
    let database = config
        .get_dbname()
        .map(str::to_string)
        .unwrap_or_else(|| user.clone());
    find(&text, [&host, &port, &database, &user])
}

/// The password of the first line of `text` whose four fields match
/// `wanted` (host, port, database, user).
pub fn find(text: &str, wanted: [&str; 4]) -> Option<String> {
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields = split(line);
        if fields.len() < 5 {
            continue;
        }
        let matches = wanted
            .iter()
            .zip(&fields)
            .all(|(want, field)| field == "*" || field == want);
        if matches {
            return Some(fields[4..].join(":"));
        }
    }
    None
}

/// A line's fields: split at unescaped `:`, with `\:` and `\\` unescaped.
fn split(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    fields.last_mut().expect("a field").push(next);
                }
            }
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut().expect("a field").push(c),
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_matching_line_wins_with_wildcards_and_escapes() {
        let text = "# team\n\
                    db:5432:other:jkz:nope\n\
                    db:*:jkz:jkz:p\\:w\\\\d\n\
                    *:*:*:*:fallback\n";
        assert_eq!(
            find(text, ["db", "5432", "jkz", "jkz"]).as_deref(),
            Some("p:w\\d")
        );
        assert_eq!(
            find(text, ["elsewhere", "1", "x", "y"]).as_deref(),
            Some("fallback")
        );
        assert_eq!(
            find("db:5432:jkz:jkz\n", ["db", "5432", "jkz", "jkz"]),
            None
        );
    }

    #[test]
    fn a_file_others_can_read_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        std::fs::write(&file, "*:*:*:*:secret\n").unwrap();
        let config: postgres::Config = "postgres://jkz@db/jkz".parse().unwrap();
        let env = |name: &str| (name == "PGPASSFILE").then(|| file.display().to_string());
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(lookup(&config, &env), None);
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(lookup(&config, &env).as_deref(), Some("secret"));
    }
}
