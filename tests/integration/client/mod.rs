//! Real-client tests: the pinned Claude Code binary, driven against our own
//! model server on 127.0.0.1 ([`model_server`]).
//!
//! [`claude_bin`] installs `@anthropic-ai/claude-code@CLAUDE_CODE_VERSION`
//! into `<target>/claude-code/` on first use (guarded by a lock file, so
//! parallel tests install once). Without npm the tests FAIL with a message
//! saying what to install: they never skip silently.
//!
//! The Gemini CLI suite ([`gemini`]) has its own installer (`gemini_bin`)
//! and model server ([`gemini_server`]).
//!
//! [`Project`] is a temp project with its own `HOME`; [`Project::claude`]
//! runs one `claude -p` turn with a hard timeout and the offline environment
//! the client needs.

#![allow(dead_code)] // A harness: other tests use what this one does not.

pub mod codex_server;
pub mod gemini_server;
pub mod model_server;

mod codex;
mod compaction;
mod gemini;
mod output_reduced;
mod plugin;
mod post_compact;
mod probe_pre_tool_use;
mod registry;
mod session;
mod tool_output;
mod worktrees;

use std::fs::OpenOptions;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The pinned client version.
pub const CLAUDE_CODE_VERSION: &str = "2.1.332";

/// How long one `claude` run may take before it is killed.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(90);

/// The cargo target directory (`CARGO_TARGET_DIR`, else `<crate>/target`).
pub fn target_dir() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    match std::env::var_os("CARGO_TARGET_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => manifest.join(dir),
        None => manifest.join("target"),
    }
}

/// The pinned `claude` binary, installed on first use.
pub fn claude_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(install).clone()
}

fn install() -> PathBuf {
    npm_install(&NpmClient {
        name: "Claude Code",
        dir: "claude-code",
        bin: "claude",
        package: "@anthropic-ai/claude-code",
        version: CLAUDE_CODE_VERSION,
        installed_version,
    })
}

/// A client the tests install from npm into the target directory.
pub struct NpmClient {
    /// As the messages name it.
    pub name: &'static str,
    /// Its directory under the target directory (and `<dir>.lock` beside it).
    pub dir: &'static str,
    /// Its program in `node_modules/.bin/`.
    pub bin: &'static str,
    pub package: &'static str,
    /// The pinned version.
    pub version: &'static str,
    /// The version an installed program reports (`None`: not installed).
    pub installed_version: fn(&Path) -> Option<String>,
}

/// Installs `client` on first use (under a lock file: other test processes,
/// or a parallel `cargo test`, may be installing too) and returns its
/// program, checked to report the pinned version.
pub fn npm_install(client: &NpmClient) -> PathBuf {
    let prefix = target_dir().join(client.dir);
    let bin = prefix.join("node_modules/.bin").join(client.bin);
    std::fs::create_dir_all(&prefix).expect("create the client's install directory");
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(target_dir().join(format!("{}.lock", client.dir)))
        .expect("open the install lock");
    lock.lock().expect("take the install lock");
    if (client.installed_version)(&bin).as_deref() == Some(client.version) {
        return bin;
    }
    let package = format!("{}@{}", client.package, client.version);
    let out = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--prefix"])
        .arg(&prefix)
        .arg(&package)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "the {} tests need npm (Node.js) to install {package}: running npm failed: {e}. \
                 Install Node.js and npm, then run cargo test again.",
                client.name
            )
        });
    assert!(
        out.status.success(),
        "npm install {package} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let version = (client.installed_version)(&bin);
    assert_eq!(
        version.as_deref(),
        Some(client.version),
        "after npm install, {} reports version {version:?}",
        bin.display()
    );
    bin
}

fn installed_version(bin: &Path) -> Option<String> {
    if !bin.exists() {
        return None;
    }
    let tmp = tempfile::tempdir().ok()?;
    let out = run_bounded(
        Command::new(bin).arg("--version").env("HOME", tmp.path()),
        Duration::from_secs(30),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace().next().map(str::to_string)
}

/// A finished (or killed) process.
pub struct Finished {
    pub status: Option<std::process::ExitStatus>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub timed_out: bool,
}

/// Runs `cmd` with stdin closed, killing it after `timeout`.
pub fn run_bounded(cmd: &mut Command, timeout: Duration) -> Finished {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout")));
    let err = drain(Box::new(child.stderr.take().expect("stderr")));
    let deadline = Instant::now() + timeout;
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                timed_out = true;
                let _ = child.kill();
                break child.wait().ok();
            }
        }
    };
    Finished {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        timed_out,
    }
}

/// A project directory with its own `HOME`, talking to one model server.
pub struct Project {
    pub dir: tempfile::TempDir,
    pub home: tempfile::TempDir,
    pub base_url: String,
}

/// One `claude -p` run.
pub struct ClaudeRun {
    pub shown: String,
    pub finished: Finished,
    /// The `--output-format json` result, when stdout was one.
    pub result: Option<Value>,
}

impl ClaudeRun {
    pub fn report(&self) -> String {
        format!(
            "command: {}\nstatus: {:?} (timed out: {})\nstdout:\n{}\nstderr:\n{}",
            self.shown,
            self.finished.status,
            self.finished.timed_out,
            String::from_utf8_lossy(&self.finished.stdout),
            String::from_utf8_lossy(&self.finished.stderr)
        )
    }

    /// The session id of a successful run (panics with the report otherwise).
    pub fn session_id(&self) -> String {
        assert!(
            self.finished.status.is_some_and(|s| s.success()),
            "claude failed\n{}",
            self.report()
        );
        self.result
            .as_ref()
            .and_then(|r| r["session_id"].as_str())
            .map(str::to_string)
            .unwrap_or_else(|| panic!("no session_id in the result\n{}", self.report()))
    }
}

impl Project {
    pub fn new(base_url: String) -> Project {
        let mk = |prefix| {
            tempfile::Builder::new()
                .prefix(prefix)
                .tempdir()
                .expect("temp dir")
        };
        Project {
            dir: mk("jkz-client-"),
            home: mk("jkz-home-"),
            base_url,
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a file of the project (creating parent directories).
    pub fn write(&self, rel: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("create parent");
        std::fs::write(&path, contents).expect("write");
        path
    }

    /// Writes `.claude/settings.json` with `hooks` as its `hooks` object.
    pub fn register_hooks(&self, hooks: Value) {
        let settings = serde_json::json!({ "hooks": hooks });
        self.write(".claude/settings.json", settings.to_string());
    }

    /// Runs `claude -p PROMPT --output-format json [extra…]` in the project.
    pub fn claude(&self, prompt: &str, extra: &[&str]) -> ClaudeRun {
        self.claude_in(self.path(), prompt, extra)
    }

    /// [`Project::claude`] in another directory (a worktree of the
    /// project's repository), with the same `HOME` and model server.
    pub fn claude_in(&self, dir: &Path, prompt: &str, extra: &[&str]) -> ClaudeRun {
        let mut cmd = self.offline_claude();
        cmd.current_dir(dir);
        cmd.arg("-p")
            .arg(prompt)
            .args(["--output-format", "json"])
            .args(extra);
        let shown = format!("claude -p {prompt:?} {}", extra.join(" "));
        let finished = run_bounded(&mut cmd, RUN_TIMEOUT);
        let result = serde_json::from_slice(&finished.stdout).ok();
        ClaudeRun {
            shown,
            finished,
            result,
        }
    }

    /// Runs `claude ARGS…` (e.g. `plugin install …`) in the project, with
    /// the same `HOME` and environment as [`Project::claude`].
    pub fn claude_cli(&self, args: &[&str]) -> ClaudeRun {
        let finished = run_bounded(self.offline_claude().args(args), RUN_TIMEOUT);
        ClaudeRun {
            shown: format!("claude {}", args.join(" ")),
            finished,
            result: None,
        }
    }

    /// `claude` in the project, its `HOME`, offline against the model server.
    fn offline_claude(&self) -> Command {
        let mut cmd = Command::new(claude_bin());
        cmd.current_dir(self.path());
        for (key, _) in std::env::vars_os() {
            let k = key.to_string_lossy();
            if k.starts_with("CLAUDE")
                || k.starts_with("ANTHROPIC")
                || k.starts_with("JKZ_")
                || k.to_ascii_lowercase().ends_with("_proxy")
            {
                cmd.env_remove(&key);
            }
        }
        cmd.env("HOME", self.home.path())
            .env("ANTHROPIC_BASE_URL", &self.base_url)
            .env("ANTHROPIC_API_KEY", "sk-jkz-test")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("PATH", path_with_jkz());
        cmd
    }
}

/// `PATH` with the built jkz binaries first: slash commands and the model's
/// Bash calls run them by name, as an installed jkz would be found.
pub fn path_with_jkz() -> std::ffi::OsString {
    let bins = crate::util::bin("jkz-session")
        .parent()
        .expect("the binaries' directory")
        .to_path_buf();
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(bins).chain(std::env::split_paths(&rest)))
        .expect("PATH entries without ':'")
}
