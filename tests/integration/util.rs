//! The harness: run a real jkz binary in its own temp directory and report
//! the command, stdout, stderr and status when an expectation fails.

#![allow(dead_code)]

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, SystemTime};

/// How long a run may take before the harness kills it and fails the test
/// ([`Cmd::deadline`] sets another): a hang shows as a failure naming the
/// command, never as a suite that never ends.
pub const DEADLINE: Duration = Duration::from_secs(120);

/// Every binary the harness runs, with its path as cargo built it for this
/// test crate. `regression::contract` holds it to `jkz::setup::BINARIES`.
pub const BINARIES: [(&str, &str); 8] = [
    ("jkz", env!("CARGO_BIN_EXE_jkz")),
    ("jkz-truncate", env!("CARGO_BIN_EXE_jkz-truncate")),
    ("jkz-compress", env!("CARGO_BIN_EXE_jkz-compress")),
    ("jkz-pre-compact", env!("CARGO_BIN_EXE_jkz-pre-compact")),
    ("jkz-session-start", env!("CARGO_BIN_EXE_jkz-session-start")),
    ("jkz-session", env!("CARGO_BIN_EXE_jkz-session")),
    ("jkz-post-tool-use", env!("CARGO_BIN_EXE_jkz-post-tool-use")),
    ("jkz-chat", env!("CARGO_BIN_EXE_jkz-chat")),
];

/// The path of a built jkz binary.
pub fn bin(name: &str) -> PathBuf {
    match BINARIES.iter().find(|(n, _)| *n == name) {
        Some((_, path)) => PathBuf::from(path),
        None => panic!("no binary named {name}"),
    }
}

/// A scratch directory for one test; removed when dropped.
pub struct Dir {
    tmp: tempfile::TempDir,
}

impl Dir {
    pub fn new() -> Dir {
        Dir {
            tmp: tempfile::Builder::new()
                .prefix("jkz-it-")
                .tempdir()
                .expect("temp dir"),
        }
    }

    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.tmp.path().join(rel)
    }

    /// Writes a file (creating parent directories).
    pub fn write(&self, rel: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create parent");
        }
        std::fs::write(&path, contents).expect("write file");
        path
    }

    pub fn read(&self, rel: impl AsRef<Path>) -> Vec<u8> {
        std::fs::read(self.join(rel)).expect("read file")
    }

    /// A command running `name` with this directory as its working directory.
    pub fn cmd(&self, name: &str) -> Cmd {
        Cmd::new(name, self.path())
    }

    /// Every file below this directory, as relative paths, sorted.
    pub fn files(&self) -> Vec<PathBuf> {
        fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                    walk(root, &path, out);
                } else {
                    out.push(path.strip_prefix(root).expect("below root").to_path_buf());
                }
            }
        }
        let mut out = Vec::new();
        walk(self.path(), self.path(), &mut out);
        out.sort();
        out
    }
}

/// A command under construction, with a scrubbed environment.
pub struct Cmd {
    cmd: Command,
    stdin: Vec<u8>,
    shown: String,
    deadline: Duration,
}

/// `program` in `cwd` with `CLAUDE*` and `JKZ_*` scrubbed from its
/// environment: every command a test runs starts here.
pub fn scrubbed(program: impl AsRef<std::ffi::OsStr>, cwd: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.current_dir(cwd);
    for (key, _) in std::env::vars_os() {
        let key_str = key.to_string_lossy();
        if key_str.starts_with("CLAUDE") || key_str.starts_with("JKZ_") {
            cmd.env_remove(&key);
        }
    }
    cmd
}

impl Cmd {
    pub fn new(name: &str, cwd: &Path) -> Cmd {
        Cmd {
            cmd: scrubbed(bin(name), cwd),
            stdin: Vec::new(),
            shown: name.to_string(),
            deadline: DEADLINE,
        }
    }

    /// The binary `name` run by `sh -c` after `prelude` (e.g. a `ulimit`),
    /// the environment scrubbed as for [`Cmd::new`].
    pub fn under_sh(prelude: &str, name: &str, cwd: &Path) -> Cmd {
        let script = format!("{prelude} exec \"$0\" \"$@\"");
        let mut cmd = scrubbed("sh", cwd);
        cmd.arg("-c").arg(&script).arg(bin(name));
        Cmd {
            cmd,
            stdin: Vec::new(),
            shown: format!("sh -c '{script}' {name}"),
            deadline: DEADLINE,
        }
    }

    pub fn arg(mut self, arg: impl Into<OsString>) -> Cmd {
        let arg = arg.into();
        self.shown.push(' ');
        self.shown.push_str(&arg.to_string_lossy());
        self.cmd.arg(arg);
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Cmd
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        for a in args {
            self = self.arg(a);
        }
        self
    }

    pub fn env(mut self, key: &str, value: impl Into<OsString>) -> Cmd {
        let value = value.into();
        self.shown = format!("{key}={} {}", value.to_string_lossy(), self.shown);
        self.cmd.env(key, value);
        self
    }

    pub fn stdin(mut self, input: impl AsRef<[u8]>) -> Cmd {
        self.stdin = input.as_ref().to_vec();
        self
    }

    /// How long this run may take (default [`DEADLINE`]) before it is
    /// killed and the test fails.
    pub fn deadline(mut self, deadline: Duration) -> Cmd {
        self.deadline = deadline;
        self
    }

    /// Runs to completion, feeding stdin from a thread so large inputs and
    /// outputs cannot deadlock. A run still going at its deadline is killed
    /// and fails the test, naming the command.
    pub fn run(mut self) -> Run {
        self.cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = self
            .cmd
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", self.shown));
        let mut stdin = child.stdin.take().expect("piped stdin");
        let input = std::mem::take(&mut self.stdin);
        let feeder = std::thread::spawn(move || {
            // The program may exit without reading everything; that is its right.
            let _ = stdin.write_all(&input);
        });
        let pid = child.id();
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = done.send(child.wait_with_output());
        });
        let output = match finished.recv_timeout(self.deadline) {
            Ok(output) => output.expect("wait"),
            Err(_) => {
                signal(pid, rustix::process::Signal::KILL);
                panic!(
                    "did not finish within {} s, killed: {}",
                    self.deadline.as_secs_f64(),
                    self.shown
                );
            }
        };
        feeder.join().expect("stdin feeder");
        Run {
            shown: self.shown,
            output,
        }
    }
}

/// A finished run.
pub struct Run {
    pub shown: String,
    pub output: Output,
}

impl Run {
    pub fn stdout(&self) -> &[u8] {
        &self.output.stdout
    }

    pub fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }

    pub fn stderr_str(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }

    pub fn code(&self) -> Option<i32> {
        self.output.status.code()
    }

    /// Everything worth seeing when an assertion fails.
    pub fn report(&self) -> String {
        let clip = |b: &[u8]| {
            let s = String::from_utf8_lossy(b);
            if s.len() > 4000 {
                let mut end = 4000;
                while !s.is_char_boundary(end) {
                    end -= 1;
                }
                format!("{}… ({} bytes)", &s[..end], b.len())
            } else {
                s.into_owned()
            }
        };
        format!(
            "command: {}\nstatus: {}\nstdout:\n{}\nstderr:\n{}",
            self.shown,
            self.output.status,
            clip(&self.output.stdout),
            clip(&self.output.stderr)
        )
    }

    /// Asserts the exit code, printing the report otherwise.
    pub fn expect_code(self, code: i32) -> Run {
        assert_eq!(
            self.code(),
            Some(code),
            "unexpected exit code\n{}",
            self.report()
        );
        self
    }

    pub fn success(self) -> Run {
        self.expect_code(0)
    }

    /// Asserts that stderr is one line, from `program`, saying `why`.
    pub fn one_line(&self, program: &str, why: &str) -> &Run {
        let err = self.stderr_str();
        let lines: Vec<&str> = err.lines().collect();
        assert!(
            lines.len() == 1
                && lines[0].starts_with(&format!("{program}: "))
                && lines[0].contains(why),
            "expected one line from {program} saying {why:?}\n{}",
            self.report()
        );
        self
    }
}

/// The document of issue `n`'s pipeline file: `{"<n>": issue}`, beside
/// the top-level fields of `top` (an object; `null` for none).
pub fn pipeline_doc(
    n: impl std::fmt::Display,
    issue: serde_json::Value,
    top: serde_json::Value,
) -> serde_json::Value {
    let mut doc = serde_json::Map::new();
    doc.insert(n.to_string(), issue);
    if let serde_json::Value::Object(top) = top {
        doc.extend(top);
    }
    serde_json::Value::Object(doc)
}

/// Writes `doc` as issue `n`'s pipeline file, `pipeline/<n>.json` under
/// the state directory `state` (made when missing); returns its path.
pub fn write_pipeline(state: &Path, n: impl std::fmt::Display, doc: &serde_json::Value) -> PathBuf {
    let path = state.join(format!("pipeline/{n}.json"));
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("make pipeline/");
    std::fs::write(&path, doc.to_string()).expect("write a pipeline file");
    path
}

/// Sends `signal` to process `pid`; false when it could not (gone).
///
/// Tests never run the `kill` program: procps-ng 4.0's reads `kill -KILL
/// -PGID` as `kill(-1)`, every process the user may signal (the test
/// runner, the CI job, the shell), and its parsing of numbers is not
/// something a test should depend on.
pub fn signal(pid: u32, signal: rustix::process::Signal) -> bool {
    i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .is_some_and(|pid| rustix::process::kill_process(pid, signal).is_ok())
}

/// Sends `signal` to every process of the group `pgid` (see [`signal`]).
pub fn signal_group(pgid: u32, signal: rustix::process::Signal) -> bool {
    i32::try_from(pgid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .is_some_and(|pgid| rustix::process::kill_process_group(pgid, signal).is_ok())
}

/// A test that cannot run where it is (it needs root, `chattr`, a mount,
/// a program that is not installed) calls this, then returns: with `CI`
/// set it fails, saying `why`, since CI must run every test; elsewhere it
/// says `SKIPPED: why` on stderr, so a skipped test is never silent.
pub fn cannot_run(why: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "cannot run here, and CI runs every test: {why}"
    );
    eprintln!("SKIPPED: {why}");
}

/// A day, for ageing files.
pub const DAY: Duration = Duration::from_secs(86_400);

/// Sets `path`'s modification and access times to `t`: retention and `jkz
/// gc` read a file's age from them.
pub fn set_file_time(path: &Path, t: SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_times(std::fs::FileTimes::new().set_modified(t).set_accessed(t)))
        .unwrap_or_else(|e| panic!("set the times of {}: {e}", path.display()));
}

/// Makes `path` `age` old (see [`set_file_time`]).
pub fn age(path: &Path, age: Duration) {
    set_file_time(path, SystemTime::now() - age);
}

/// Removes the immutable flag when dropped, so a failing test leaves the
/// temp directory removable.
pub struct Immutable(PathBuf);

impl Immutable {
    /// `chattr +i` (root cannot write into an immutable directory, whatever
    /// the mode bits); `None` where the file system does not support it.
    pub fn set(path: &Path) -> Option<Immutable> {
        let ok = std::process::Command::new("chattr")
            .arg("+i")
            .arg(path)
            .output()
            .is_ok_and(|o| o.status.success());
        ok.then(|| Immutable(path.to_path_buf()))
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(&self.0)
            .status();
    }
}

/// Runs `git ARGS…` in `dir` and returns its stdout; fails the test, with
/// git's stderr, when git does not succeed. Hermetic: a fixed identity, no
/// system or global configuration (a developer's `commit.gpgsign` or hooks
/// path must not change what a test sees), `CLAUDE*`/`JKZ_*` scrubbed as
/// for every command.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = scrubbed("git", dir)
        .args(["-c", "user.name=jkz", "-c", "user.email=jkz@localhost"])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("git is needed for these tests");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
