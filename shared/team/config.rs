//! Which backend holds the registry, the locks and the circuits: chosen
//! once per process from, first that applies,
//!
//! 1. `JKZ_REGISTRY_URL` (a `postgres://` URL; it may hold a password:
//!    the environment is not a file, and every message masks it);
//! 2. `jkz.registryUrl` in the repository's own git config (`<common git
//!    dir>/config`, shared by its worktrees; `jkz install --registry URL`
//!    writes it). Never a committed file: whoever can change a committed
//!    file (a branch checked out for review) must not decide where the
//!    team's hooks send `PGPASSWORD`. A password there is refused too:
//!    it belongs in `PGPASSWORD` or `~/.pgpass`;
//!
//! else the local backend: `state/chat.db`, `state/locks/`,
//! `state/circuit/`, exactly as without team mode. A URL that cannot be
//! used is an error, never a silent fall back to the local backend (that
//! would split the team's claims in two).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use super::url::RegistryUrl;

/// The environment variable naming the team registry.
pub const REGISTRY_URL_ENV: &str = "JKZ_REGISTRY_URL";

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
    /// The repository's git config file.
    GitConfig(PathBuf),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Env => f.write_str(REGISTRY_URL_ENV),
            Origin::GitConfig(p) => write!(f, "{} jkz.registryUrl", p.display()),
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
    let Some(common) = common_git_dir(project_root(state_root))? else {
        return Ok(Backend::Local);
    };
    let file = crate::git::config::path(&common);
    let Some(raw) = crate::git::config::read(&common)?.registry_url else {
        return Ok(Backend::Local);
    };
    let raw = String::from_utf8(raw)
        .map_err(|_| format!("{}: jkz.registryUrl is not UTF-8 text", file.display()))?;
    let url = RegistryUrl::parse(&raw)
        .map_err(|why| format!("{}: jkz.registryUrl: {why}", file.display()))?;
    if url.has_password() {
        return Err(format!(
            "{}: jkz.registryUrl holds a password: remove it from the URL and put it in PGPASSWORD or ~/.pgpass",
            file.display()
        ));
    }
    Ok(Backend::Team(url, Origin::GitConfig(file)))
}

/// The common git directory of the repository holding `project`, `None`
/// outside a repository.
fn common_git_dir(project: &Path) -> Result<Option<PathBuf>, String> {
    // The parent of a relative `state` is the empty path: here.
    let project = match project.as_os_str().is_empty() {
        true => Path::new("."),
        false => project,
    };
    let start = std::path::absolute(project).map_err(|e| format!("{}: {e}", project.display()))?;
    let start = crate::resolved_path::resolve(&start);
    match crate::git::repository::locate(&start)? {
        crate::git::repository::Location::Inside { common, .. } => Ok(Some(common)),
        crate::git::repository::Location::Outside => Ok(None),
    }
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

/// The git config file [`record`] writes for `project`: its repository's
/// own; an error (saying what to do instead) outside a repository.
pub fn config_file_for(project: &Path) -> Result<PathBuf, String> {
    match common_git_dir(project)? {
        Some(common) => Ok(crate::git::config::path(&common)),
        None => Err(format!(
            "{} is in no git repository: jkz records the team registry in the repository's git config; \
             set {REGISTRY_URL_ENV} instead",
            project.display()
        )),
    }
}

/// Records `url` as `jkz.registryUrl` in the git config of the repository
/// holding `project` (through `git config`, so the file stays git's). A URL
/// with a password is refused; so is a project outside a repository (then
/// `JKZ_REGISTRY_URL` is the way).
pub fn record(project: &Path, url: &RegistryUrl) -> Result<(PathBuf, Recorded), String> {
    if url.has_password() {
        return Err(password_refusal(url));
    }
    let file = config_file_for(project)?;
    let common = file.parent().unwrap_or(Path::new("."));
    let wanted = url.expose();
    if crate::git::config::read(common)?.registry_url.as_deref() == Some(wanted.as_bytes()) {
        return Ok((file, Recorded::Unchanged));
    }
    let run = std::process::Command::new("git")
        .arg("config")
        .arg("--file")
        .arg(&file)
        .args(["jkz.registryUrl", wanted])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("running git config: {e}"))?;
    if !run.status.success() {
        return Err(format!(
            "git config --file {} jkz.registryUrl: {}",
            file.display(),
            String::from_utf8_lossy(&run.stderr).trim()
        ));
    }
    Ok((file, Recorded::Written))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A git repository with a `state/`, its config holding `config` lines
    /// under `[jkz]` (none: no such section); a `jkz.toml` beside it.
    fn project_with(config: Option<&str>, toml: Option<&str>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let git = std::process::Command::new("git")
            .args(["init", "-q"])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(git.success());
        std::fs::create_dir(dir.path().join("state")).unwrap();
        if let Some(lines) = config {
            let path = dir.path().join(".git/config");
            let mut text = std::fs::read_to_string(&path).unwrap();
            text.push_str(&format!("[jkz]\n{lines}\n"));
            std::fs::write(path, text).unwrap();
        }
        if let Some(t) = toml {
            std::fs::write(dir.path().join(crate::slo::config::CONFIG_FILE), t).unwrap();
        }
        dir
    }

    #[test]
    fn the_environment_wins_over_git_config_and_no_url_is_local() {
        let dir = project_with(Some("registryUrl = postgres://jkz@repo/jkz"), None);
        let state = dir.path().join("state");
        let none = |_: &str| None;
        match choose(&state, none).unwrap() {
            Backend::Team(url, Origin::GitConfig(_)) => {
                assert_eq!(url.expose(), "postgres://jkz@repo/jkz")
            }
            other => panic!("{other:?}"),
        }
        let env = |n: &str| (n == REGISTRY_URL_ENV).then(|| "postgres://u:pw@env/jkz".to_string());
        match choose(&state, env).unwrap() {
            Backend::Team(url, Origin::Env) => assert!(url.has_password()),
            other => panic!("{other:?}"),
        }
        let plain = project_with(None, None);
        assert_eq!(
            choose(&plain.path().join("state"), none).unwrap(),
            Backend::Local
        );
        let outside = tempfile::tempdir().unwrap();
        assert_eq!(
            choose(&outside.path().join("state"), none).unwrap(),
            Backend::Local
        );
    }

    #[test]
    fn a_committed_jkz_toml_never_chooses_the_registry() {
        // Neither a URL there (whoever changes a committed file would
        // decide where PGPASSWORD goes) nor a typo elsewhere in the file
        // (the local registry's refusals must hold).
        let none = |_: &str| None;
        for toml in [
            "[registry]\nurl = \"postgres://jkz@attacker/jkz\"\n",
            "[slo]\nwindow = 7d\n",
        ] {
            let dir = project_with(None, Some(toml));
            assert_eq!(
                choose(&dir.path().join("state"), none).unwrap(),
                Backend::Local,
                "{toml}"
            );
        }
    }

    #[test]
    fn a_bad_or_secret_bearing_url_is_an_error_never_the_local_backend() {
        let none = |_: &str| None;
        for (line, says) in [
            ("registryUrl = postgres://u:pw@h/d", "holds a password"),
            ("registryUrl = mysql://h/d", "not a PostgreSQL URL"),
            ("registryUrl", "not a PostgreSQL URL"),
        ] {
            let dir = project_with(Some(line), None);
            let e = choose(&dir.path().join("state"), none).unwrap_err();
            assert!(e.contains(says), "{line}: {e}");
            assert!(e.contains("jkz.registryUrl"), "{line}: {e}");
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
    fn recording_a_url_writes_git_config_and_is_read_back() {
        let url = RegistryUrl::parse("postgres://jkz@db:5432/jkz").unwrap();
        let dir = project_with(None, None);
        let before = std::fs::read_to_string(dir.path().join(".git/config")).unwrap();
        assert_eq!(record(dir.path(), &url).unwrap().1, Recorded::Written);
        assert_eq!(record(dir.path(), &url).unwrap().1, Recorded::Unchanged);
        let after = std::fs::read_to_string(dir.path().join(".git/config")).unwrap();
        assert!(after.starts_with(&before), "{after}");
        let none = |_: &str| None;
        match choose(&dir.path().join("state"), none).unwrap() {
            Backend::Team(got, Origin::GitConfig(_)) => assert_eq!(got, url),
            other => panic!("{other:?}"),
        }
        let secret = RegistryUrl::parse("postgres://jkz:pw@db/jkz").unwrap();
        assert!(record(dir.path(), &secret)
            .unwrap_err()
            .contains("PGPASSWORD"));
        let outside = tempfile::tempdir().unwrap();
        let e = record(outside.path(), &url).unwrap_err();
        assert!(e.contains(REGISTRY_URL_ENV), "{e}");
    }
}
