//! Which backend holds the registry, the locks and the circuits: chosen
//! once per process from, first that applies,
//!
//! 1. `JKZ_REGISTRY_URL` (a `postgres://` URL; it may hold a password:
//!    the environment is not a file, and every message masks it);
//! 2. `url` in the `[registry]` table of `jkz.toml`, the project's
//!    committed settings beside the state directory (`jkz install
//!    --registry URL` writes it); a password there is refused: the file is
//!    committed, the password belongs in `PGPASSWORD` or `~/.pgpass`;
//!
//! else the local backend: `state/chat.db`, `state/locks/`,
//! `state/circuit/`, exactly as without team mode. A URL that cannot be
//! used is an error, never a silent fall back to the local backend (that
//! would split the team's claims in two).

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use toml::{Table, Value};

use super::url::RegistryUrl;

/// The environment variable naming the team registry.
pub const REGISTRY_URL_ENV: &str = "JKZ_REGISTRY_URL";
/// The project's settings file, beside the state directory.
pub const CONFIG_FILE: &str = "jkz.toml";

/// Where the registry, locks and circuits live.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Backend {
    /// `state/chat.db`, `state/locks/`, `state/circuit/`.
    Local,
    /// PostgreSQL, shared by every machine with the same URL.
    Team(RegistryUrl, Origin),
}

/// Where a team URL came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    Env,
    File(PathBuf),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Env => f.write_str(REGISTRY_URL_ENV),
            Origin::File(p) => write!(f, "{} [registry] url", p.display()),
        }
    }
}

/// The project's root for a state directory: the directory holding it.
pub fn project_root(state_root: &Path) -> &Path {
    state_root.parent().unwrap_or(Path::new(""))
}

/// The backend for the state directory `state_root`, chosen once per
/// process (and state directory); the error is one line saying what to fix.
pub fn backend(state_root: &Path) -> Result<Backend, String> {
    static CHOSEN: OnceLock<Mutex<HashMap<PathBuf, Result<Backend, String>>>> = OnceLock::new();
    let chosen = CHOSEN.get_or_init(Default::default);
    let mut chosen = chosen.lock().unwrap_or_else(|p| p.into_inner());
    chosen
        .entry(state_root.to_path_buf())
        .or_insert_with(|| choose(state_root, |name| std::env::var(name).ok()))
        .clone()
}

/// [`backend`] without the cache, with the environment given (tests).
pub fn choose(state_root: &Path, env: impl Fn(&str) -> Option<String>) -> Result<Backend, String> {
    if let Some(raw) = env(REGISTRY_URL_ENV).filter(|v| !v.trim().is_empty()) {
        let url = RegistryUrl::parse(&raw).map_err(|why| format!("{REGISTRY_URL_ENV}: {why}"))?;
        return Ok(Backend::Team(url, Origin::Env));
    }
    let file = project_root(state_root).join(CONFIG_FILE);
    match file_url(&file)? {
        Some(url) => Ok(Backend::Team(url, Origin::File(file))),
        None => Ok(Backend::Local),
    }
}

/// Reads `jkz.toml`, `None` when missing.
fn read_table(file: &Path) -> Result<Option<Table>, String> {
    let bytes = match crate::state_dir::read_user_file(file) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: unreadable: {e}", file.display())),
    };
    let text =
        String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text", file.display()))?;
    text.parse::<Table>().map(Some).map_err(|e| {
        format!(
            "{}: not valid TOML: {}",
            file.display(),
            e.to_string().trim().replace('\n', " ")
        )
    })
}

/// The `[registry] url` of `file`, checked.
fn file_url(file: &Path) -> Result<Option<RegistryUrl>, String> {
    let Some(table) = read_table(file)? else {
        return Ok(None);
    };
    let registry = match table.get("registry") {
        None => return Ok(None),
        Some(Value::Table(t)) => t,
        Some(_) => {
            return Err(format!(
                "{}: registry must be a table ([registry] with url = \"postgres://…\")",
                file.display()
            ))
        }
    };
    if let Some(key) = registry.keys().find(|k| *k != "url") {
        return Err(format!(
            "{}: registry.{key}: unknown key (the [registry] table takes url only)",
            file.display()
        ));
    }
    let Some(raw) = registry.get("url") else {
        return Ok(None);
    };
    let Some(raw) = raw.as_str() else {
        return Err(format!(
            "{}: registry.url must be a string (\"postgres://USER@HOST:PORT/DATABASE\")",
            file.display()
        ));
    };
    let url = RegistryUrl::parse(raw)
        .map_err(|why| format!("{}: registry.url: {why}", file.display()))?;
    if url.has_password() {
        return Err(format!(
            "{}: registry.url holds a password, in a file that is committed: remove it from the URL and put it in PGPASSWORD or ~/.pgpass",
            file.display()
        ));
    }
    Ok(Some(url))
}

/// Why a URL is not written to a file: it holds a password.
pub fn password_refusal(url: &RegistryUrl) -> String {
    format!(
        "{url} holds a password: jkz never writes a password to a file; \
         give the URL without it and put the password in PGPASSWORD or ~/.pgpass (host:port:database:user:password, mode 0600)"
    )
}

/// What [`record`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Recorded {
    Written,
    Unchanged,
}

/// Records `url` as `[registry] url` in `project/jkz.toml`, keeping the
/// rest of the file as it is (created when missing). A URL with a password
/// is refused; so is a file whose edit cannot be proven to change only that
/// key (then the user edits it by hand).
pub fn record(project: &Path, url: &RegistryUrl) -> Result<(PathBuf, Recorded), String> {
    if url.has_password() {
        return Err(password_refusal(url));
    }
    let file = project.join(CONFIG_FILE);
    let wanted = url.expose().to_string();
    let quoted = format!("\"{}\"", wanted.replace('\\', "\\\\").replace('"', "\\\""));
    let old = read_table(&file)?;
    let (text, mode) = match &old {
        None => (
            format!(
                "# jkz's project settings (committed).\n\n\
                 # Team mode: the registry, claims, locks and circuits in PostgreSQL.\n\
                 # The password goes in PGPASSWORD or ~/.pgpass, never here.\n\
                 [registry]\nurl = {quoted}\n"
            ),
            0o644,
        ),
        Some(t) => {
            if t.get("registry")
                .and_then(|r| r.get("url"))
                .and_then(Value::as_str)
                == Some(wanted.as_str())
            {
                return Ok((file, Recorded::Unchanged));
            }
            let current = String::from_utf8(
                crate::state_dir::read_user_file(&file)
                    .map_err(|e| format!("{}: {e}", file.display()))?,
            )
            .map_err(|_| format!("{}: not UTF-8 text", file.display()))?;
            let mode = std::fs::metadata(&file)
                .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o7777)
                .unwrap_or(0o644);
            (with_url(&current, &quoted), mode)
        }
    };
    // Proven: the new file parses, says this URL, and holds nothing else new.
    let mut expect = old.unwrap_or_default();
    let registry = expect
        .entry("registry")
        .or_insert_with(|| Value::Table(Table::new()));
    let by_hand = || {
        format!(
            "{}: could not add the URL without touching the rest of the file: add it by hand:\n[registry]\nurl = {quoted}",
            file.display()
        )
    };
    match registry {
        Value::Table(r) => {
            r.insert("url".into(), Value::String(wanted.clone()));
        }
        _ => return Err(by_hand()),
    }
    match text.parse::<Table>() {
        Ok(new) if new == expect => {}
        _ => return Err(by_hand()),
    }
    crate::atomic::write_atomic_mode(&file, text.as_bytes(), mode)
        .map_err(|e| format!("writing {}: {e}", file.display()))?;
    Ok((file, Recorded::Written))
}

/// `text` with `url = quoted` in its `[registry]` table: the line replaced,
/// or added under the header, or a new table at the end.
fn with_url(text: &str, quoted: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let header = |l: &str| l.trim_start().starts_with('[');
    let is_registry = |l: &str| {
        let t = l.trim();
        t == "[registry]"
            || (t.starts_with("[registry]")
                && t["[registry]".len()..].trim_start().starts_with('#'))
    };
    let mut out: Vec<String> = Vec::new();
    let mut done = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        out.push(line.to_string());
        i += 1;
        if done || !is_registry(line) {
            continue;
        }
        // Inside [registry]: replace its url, or add one under the header.
        let start = out.len();
        let mut replaced = false;
        while i < lines.len() && !header(lines[i]) {
            let l = lines[i];
            let key = l.trim_start();
            if !replaced
                && key.starts_with("url")
                && key["url".len()..].trim_start().starts_with('=')
            {
                out.push(format!("url = {quoted}"));
                replaced = true;
            } else {
                out.push(l.to_string());
            }
            i += 1;
        }
        if !replaced {
            out.insert(start, format!("url = {quoted}"));
        }
        done = true;
    }
    let mut text = out.join("\n");
    if !done {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&format!("[registry]\nurl = {quoted}"));
    }
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project_with(toml: Option<&str>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("state")).unwrap();
        if let Some(t) = toml {
            std::fs::write(dir.path().join(CONFIG_FILE), t).unwrap();
        }
        dir
    }

    #[test]
    fn the_environment_wins_over_the_file_and_no_url_is_local() {
        let dir = project_with(Some("[registry]\nurl = \"postgres://jkz@file/jkz\"\n"));
        let state = dir.path().join("state");
        let none = |_: &str| None;
        match choose(&state, none).unwrap() {
            Backend::Team(url, Origin::File(_)) => {
                assert_eq!(url.expose(), "postgres://jkz@file/jkz")
            }
            other => panic!("{other:?}"),
        }
        let env = |n: &str| (n == REGISTRY_URL_ENV).then(|| "postgres://u:pw@env/jkz".to_string());
        match choose(&state, env).unwrap() {
            Backend::Team(url, Origin::Env) => assert!(url.has_password()),
            other => panic!("{other:?}"),
        }
        let empty = project_with(Some("[slo]\nwindow = \"7d\"\n"));
        assert_eq!(
            choose(&empty.path().join("state"), none).unwrap(),
            Backend::Local
        );
        let bare = project_with(None);
        assert_eq!(
            choose(&bare.path().join("state"), none).unwrap(),
            Backend::Local
        );
    }

    #[test]
    fn a_bad_or_secret_bearing_file_is_an_error_never_the_local_backend() {
        let none = |_: &str| None;
        for (text, says) in [
            (
                "[registry]\nurl = \"postgres://u:pw@h/d\"\n",
                "holds a password",
            ),
            (
                "[registry]\nurl = \"mysql://h/d\"\n",
                "not a PostgreSQL URL",
            ),
            ("[registry]\nurl = 5\n", "must be a string"),
            ("[registry]\nuri = \"postgres://h/d\"\n", "unknown key"),
            ("registry = 1\n", "must be a table"),
            ("[registry\n", "not valid TOML"),
        ] {
            let dir = project_with(Some(text));
            let e = choose(&dir.path().join("state"), none).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
            assert!(!e.contains("pw@"), "{e}");
        }
        let e = choose(Path::new("/x/state"), |n: &str| {
            (n == REGISTRY_URL_ENV).then(|| "postgres://u:hunter2@h:port/d".to_string())
        })
        .unwrap_err();
        assert!(
            e.starts_with(REGISTRY_URL_ENV) && !e.contains("hunter2"),
            "{e}"
        );
    }

    #[test]
    fn recording_a_url_changes_only_that_key() {
        let url = RegistryUrl::parse("postgres://jkz@db:5432/jkz").unwrap();
        let fresh = project_with(None);
        assert_eq!(record(fresh.path(), &url).unwrap().1, Recorded::Written);
        assert_eq!(record(fresh.path(), &url).unwrap().1, Recorded::Unchanged);
        let none = |_: &str| None;
        assert!(matches!(
            choose(&fresh.path().join("state"), none).unwrap(),
            Backend::Team(..)
        ));
        for before in [
            "# mine\n[slo]\nwindow = \"7d\"\n",
            "[registry] # team\nurl = \"postgres://old@h/d\" # old\n\n[slo]\nwindow = \"1d\"\n",
            "[registry]\n\n[slo]\nwindow = \"1d\"\n",
        ] {
            let dir = project_with(Some(before));
            record(dir.path(), &url).unwrap();
            let after = std::fs::read_to_string(dir.path().join(CONFIG_FILE)).unwrap();
            assert!(
                after.contains("url = \"postgres://jkz@db:5432/jkz\""),
                "{after}"
            );
            assert!(after.contains("window"), "{after}");
            assert!(!after.contains("old@"), "{after}");
        }
        // Dotted keys elsewhere cannot be edited safely: by hand.
        let dir = project_with(Some("registry.url = \"postgres://old@h/d\"\n"));
        let e = record(dir.path(), &url).unwrap_err();
        assert!(e.contains("by hand"), "{e}");
        let secret = RegistryUrl::parse("postgres://u:hunter2@h/d").unwrap();
        let e = record(fresh.path(), &secret).unwrap_err();
        assert!(e.contains("PGPASSWORD") && !e.contains("hunter2"), "{e}");
    }
}
