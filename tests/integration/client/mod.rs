//! Real-client tests: each real coding-agent client, installed from npm at
//! a pinned version, run headless in a temp project with its own `HOME`
//! against the [`stub_model`] on 127.0.0.1; no other network.
//!
//! # The harness
//!
//! A test reads the same for every client:
//!
//! ```text
//! let model = StubModel::start(Arc::new(|r: &Request| Turn::Text("Done.".into())));
//! let project = CodexCli::project(&model); // or ClaudeCode::, GeminiCli::, CopilotCli::, OpenCode::
//! project.install_jkz();                    // jkz install --client codex --project …
//! let run = project.run("Build it.", &[]);  // one headless turn, bounded in time
//! run.assert_ok();
//! let last = model.model_requests().pop().unwrap();
//! let outputs = last.tool_outputs();        // the same reader for every wire format
//! ```
//!
//! What differs between clients is one adapter each, an implementation of
//! [`RealClient`] in `adapter/<client>.rs` (see [`adapter`]): its npm
//! package and pinned version ([`NpmClient`], installed on first use into
//! the target directory under a lock file), what points it at the stub
//! model offline (files in its `HOME`, environment), its headless command
//! line, and how to tell its compaction summarizer's request. Adding a
//! client is one such file and one line in
//! `adapter/mod.rs`; a client speaking a wire format the stub model does
//! not speak yet adds one file in `stub_model/` as well.
//!
//! Without npm the tests FAIL saying what to install: they never skip
//! silently.

#![allow(dead_code)] // A harness: other tests use what this one does not.

pub mod adapter;
pub mod pipeline;
pub mod stub_model;

mod codex;
mod compaction;
mod copilot;
mod gemini;
mod opencode;
mod output_guard;
mod output_reduced;
mod plugin;
mod post_compact;
mod probe_pre_tool_use;
mod registry;
mod session;
mod tool_output;
mod worktrees;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::OpenOptions;
use std::io::Read;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

use stub_model::{Request, StubModel, Turn};

/// One real client, as the tests drive it: everything a test needs to know
/// about a client that is not the same for all of them.
pub trait RealClient: Sized + 'static {
    /// Its npm package and pinned version.
    const NPM: NpmClient;
    /// Its name for `jkz install --client`.
    const JKZ_CLIENT: &'static str;
    /// Its project configuration directory, where `jkz install` registers.
    const CONFIG_DIR: &'static str;
    /// How long one headless run may take before it is killed.
    const RUN_TIMEOUT: Duration;
    /// Prefixes of the environment variables it reads (keys, base URLs,
    /// homes): removed, so nothing of the developer's shell leaks in.
    const OWN_ENV: &'static [&'static str];

    /// Writes what the client needs to reach the model offline before its
    /// first run: its configuration in the project's `HOME`, trust.
    fn prepare(project: &Project<Self>);

    /// The environment that points it at the stub model.
    fn offline_env(project: &Project<Self>) -> Vec<(&'static str, OsString)>;

    /// The arguments of one headless turn for `prompt`.
    fn headless(prompt: &str) -> Vec<String>;

    /// True for its compaction summarizer's request.
    fn is_summarizing(r: &Request) -> bool;

    /// True for a request the client makes on its own beside the
    /// conversation (OpenCode's title for a new session): [`Self::model`]
    /// answers it with a short text, so a test's script sees only the
    /// conversation's turns.
    fn is_aside(_r: &Request) -> bool {
        false
    }

    /// The stub model running `script` for this client's conversation
    /// turns, its asides answered apart.
    fn model(script: impl Fn(&Request) -> Turn + Send + Sync + 'static) -> StubModel {
        StubModel::start(std::sync::Arc::new(move |r: &Request| {
            if Self::is_aside(r) {
                Turn::Text("Issue 42".into())
            } else {
                script(r)
            }
        }))
    }

    /// The conversation's requests `model` received, without the asides.
    fn turns(model: &StubModel) -> Vec<Request> {
        model
            .model_requests()
            .into_iter()
            .filter(|r| !Self::is_aside(r))
            .collect()
    }

    /// A fresh project for this client, talking to `model`.
    fn project(model: &StubModel) -> Project<Self> {
        Project::new(model)
    }

    /// Its program, installed on first use.
    fn bin() -> PathBuf {
        installed(&Self::NPM)
    }
}

/// The cargo target directory (`CARGO_TARGET_DIR`, else `<crate>/target`).
pub fn target_dir() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    match std::env::var_os("CARGO_TARGET_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => manifest.join(dir),
        None => manifest.join("target"),
    }
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
    /// The variable naming its home (its `--version` gets an empty one, so
    /// it writes nothing into the developer's).
    pub home_var: &'static str,
}

/// `client`'s program, installed (once per test process) by [`npm_install`].
fn installed(client: &'static NpmClient) -> PathBuf {
    static CELLS: Mutex<BTreeMap<&str, &'static OnceLock<PathBuf>>> = Mutex::new(BTreeMap::new());
    let cell = *CELLS
        .lock()
        .expect("install cells")
        .entry(client.dir)
        .or_insert_with(|| Box::leak(Box::new(OnceLock::new())));
    cell.get_or_init(|| npm_install(client)).clone()
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
    if installed_version(client, &bin).as_deref() == Some(client.version) {
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
    let version = installed_version(client, &bin);
    assert_eq!(
        version.as_deref(),
        Some(client.version),
        "after npm install, {} reports version {version:?}",
        bin.display()
    );
    bin
}

/// The version an installed program reports: the first word of its
/// `--version` that starts with a digit (`2.1.332 (Claude Code)`,
/// `codex-cli 0.169.0`); `None` when it is not installed.
fn installed_version(client: &NpmClient, bin: &Path) -> Option<String> {
    if !bin.exists() {
        return None;
    }
    let home = tempfile::tempdir().ok()?;
    let out = run_bounded(
        Command::new(bin)
            .arg("--version")
            .env(client.home_var, home.path()),
        // Gemini CLI starts slowly on a loaded machine.
        Duration::from_secs(120),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .find(|w| w.starts_with(|c: char| c.is_ascii_digit()))
        // `GitHub Copilot CLI 1.0.102.` ends its sentence.
        .map(|w| w.trim_end_matches('.').to_string())
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

/// A temp project with its own `HOME`, where client `C` talks to one stub
/// model.
pub struct Project<C> {
    dir: tempfile::TempDir,
    home: tempfile::TempDir,
    model_url: String,
    client: PhantomData<C>,
}

/// One headless client run.
pub struct ClientRun {
    pub shown: String,
    pub finished: Finished,
    /// Stdout as JSON, when it was (`--output-format json`).
    pub result: Option<Value>,
}

impl ClientRun {
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

    pub fn succeeded(&self) -> bool {
        self.finished.status.is_some_and(|s| s.success())
    }

    /// Asserts the run succeeded (panics with the report otherwise).
    pub fn assert_ok(&self) {
        assert!(self.succeeded(), "the client failed\n{}", self.report());
    }

    /// The JSON result of a successful run.
    pub fn json(&self) -> Value {
        self.assert_ok();
        self.result
            .clone()
            .unwrap_or_else(|| panic!("stdout is not the JSON result\n{}", self.report()))
    }

    /// The session id of a successful run's JSON result.
    pub fn session_id(&self) -> String {
        self.json()["session_id"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| panic!("no session_id in the result\n{}", self.report()))
    }
}

impl<C: RealClient> Project<C> {
    pub fn new(model: &StubModel) -> Project<C> {
        let mk = |prefix: String| {
            tempfile::Builder::new()
                .prefix(&prefix)
                .tempdir()
                .expect("temp dir")
        };
        let project = Project {
            dir: mk(format!("jkz-{}-", C::JKZ_CLIENT)),
            home: mk(format!("jkz-{}-home-", C::JKZ_CLIENT)),
            model_url: model.url(),
            client: PhantomData,
        };
        C::prepare(&project);
        project
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The client's `HOME` (and whatever it keeps there).
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// The stub model's `http://127.0.0.1:PORT`.
    pub fn model_url(&self) -> &str {
        &self.model_url
    }

    /// Writes a file of the project (creating parent directories).
    pub fn write(&self, rel: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("create parent");
        std::fs::write(&path, contents).expect("write");
        path
    }

    /// `jkz install --client C --project DIR`, as a user runs it, which
    /// must succeed.
    pub fn install_jkz(&self) {
        let out = Command::new(crate::util::bin("jkz"))
            .current_dir(self.path())
            .env("HOME", self.home())
            .env("PATH", path_with_jkz())
            .args(["install", "--client", C::JKZ_CLIENT, "--project"])
            .arg(self.path())
            .output()
            .expect("run jkz install");
        assert!(
            out.status.success(),
            "jkz install --client {}: {}{}",
            C::JKZ_CLIENT,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The client in the project, offline against the stub model, with
    /// jkz's binaries first on `PATH`.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(C::bin());
        cmd.current_dir(self.path());
        for (key, _) in std::env::vars_os() {
            let k = key.to_string_lossy();
            if k.starts_with("CLAUDE")
                || k.starts_with("JKZ_")
                || C::OWN_ENV.iter().any(|p| k.starts_with(p))
                || k.to_ascii_lowercase().ends_with("_proxy")
            {
                cmd.env_remove(&key);
            }
        }
        cmd.env("NO_PROXY", "127.0.0.1,localhost")
            .env("PATH", path_with_jkz())
            .envs(C::offline_env(self));
        cmd
    }

    /// One headless turn: `prompt`, then `extra` arguments.
    pub fn run(&self, prompt: &str, extra: &[&str]) -> ClientRun {
        self.run_in(self.path(), prompt, extra)
    }

    /// [`Project::run`] with `env` set besides the adapter's (a client
    /// setting a test needs, e.g. a smaller context window).
    pub fn run_with_env(&self, prompt: &str, extra: &[&str], env: &[(&str, &str)]) -> ClientRun {
        let mut cmd = self.command();
        cmd.args(C::headless(prompt))
            .args(extra)
            .envs(env.iter().copied());
        let set: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let shown = format!(
            "{} {} {prompt:.60?} {}",
            set.join(" "),
            C::NPM.bin,
            extra.join(" ")
        );
        self.finish(shown, &mut cmd)
    }

    /// [`Project::run`] in another directory (a worktree of the project's
    /// repository), with the same `HOME` and model.
    pub fn run_in(&self, dir: &Path, prompt: &str, extra: &[&str]) -> ClientRun {
        let mut cmd = self.command();
        // A client may take its directory from `PWD`, as a shell would
        // have set it.
        cmd.current_dir(dir)
            .env("PWD", dir)
            .args(C::headless(prompt))
            .args(extra);
        let shown = format!("{} {prompt:.60?} {}", C::NPM.bin, extra.join(" "));
        self.finish(shown, &mut cmd)
    }

    /// The client with `args` (e.g. `plugin install …`), in the project
    /// with the same environment as [`Project::run`].
    pub fn cli(&self, args: &[&str]) -> ClientRun {
        let mut cmd = self.command();
        cmd.args(args);
        self.finish(format!("{} {}", C::NPM.bin, args.join(" ")), &mut cmd)
    }

    fn finish(&self, shown: String, cmd: &mut Command) -> ClientRun {
        let finished = run_bounded(cmd, C::RUN_TIMEOUT);
        let result = serde_json::from_slice(&finished.stdout).ok();
        ClientRun {
            shown,
            finished,
            result,
        }
    }
}

/// `PATH` with the built jkz binaries first: slash commands and the model's
/// shell calls run them by name, as an installed jkz would be found.
pub fn path_with_jkz() -> std::ffi::OsString {
    let bins = crate::util::bin("jkz-session")
        .parent()
        .expect("the binaries' directory")
        .to_path_buf();
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(bins).chain(std::env::split_paths(&rest)))
        .expect("PATH entries without ':'")
}
