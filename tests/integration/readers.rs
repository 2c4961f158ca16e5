//! Every reader of the state directory against what may be planted there: a
//! symbolic link (to a secret, to `/dev/zero`), a FIFO, a directory. Nothing
//! is read through a link, nothing but a regular file is read, nothing
//! blocks, memory stays bounded; a refused entry is said in one line.
//!
//! Each run has a deadline (a hang fails the test instead of stalling it)
//! and runs under `ulimit -v` (reading `/dev/zero` to the end fails fast
//! instead of taking the machine's memory).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::util::{self, bin, Dir};

/// What no output and no file under `state/` may ever contain.
const SECRET: &str = "SECRET-4f1c9e-NEVER-SHOWN";

/// Virtual memory allowed to each run, in KiB (a debug binary with its
/// threads fits easily; reading `/dev/zero` whole does not).
const MEMORY_KIB: u64 = 2 * 1024 * 1024;

struct Out {
    shown: String,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Out {
    fn report(&self) -> String {
        format!(
            "command: {}\nstatus: {:?}\nstdout:\n{}\nstderr:\n{}",
            self.shown, self.code, self.stdout, self.stderr
        )
    }
}

/// Runs `program args` in `cwd` under the memory limit, with `stdin`, and
/// fails the test when it does not finish within 30 s.
fn run(cwd: &Path, program: &str, args: &[String], stdin: &[u8], env: &[(&str, &str)]) -> Out {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("ulimit -v {MEMORY_KIB}; exec \"$0\" \"$@\""))
        .arg(bin(program))
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy();
        if k.starts_with("CLAUDE") || k.starts_with("JKZ_") {
            cmd.env_remove(&key);
        }
    }
    // The user's own settings must not leak into `doctor`/`install`.
    cmd.env("HOME", cwd.join("home"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let shown = format!("{program} {}", args.join(" "));
    let mut child = cmd.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    let stdin = stdin.to_vec();
    std::thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    let (tx, rx) = std::sync::mpsc::channel();
    let id = child.id();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let output = match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(output) => output.unwrap(),
        Err(_) => {
            crate::util::signal(id, rustix::process::Signal::KILL);
            panic!("{shown} hung (killed after 30 s)");
        }
    };
    Out {
        shown,
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// What is planted at a path a reader reads.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Planted {
    /// A symbolic link to a file outside holding the secret.
    LinkToSecret,
    Fifo,
    /// A symbolic link to `/dev/zero`.
    LinkToDevZero,
    Directory,
}

const ALL: [Planted; 4] = [
    Planted::LinkToSecret,
    Planted::Fifo,
    Planted::LinkToDevZero,
    Planted::Directory,
];

fn plant(path: &Path, what: Planted, secret: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    match what {
        Planted::LinkToSecret => std::os::unix::fs::symlink(secret, path).unwrap(),
        Planted::LinkToDevZero => std::os::unix::fs::symlink("/dev/zero", path).unwrap(),
        Planted::Directory => std::fs::create_dir(path).unwrap(),
        Planted::Fifo => {
            let status = Command::new("mkfifo").arg(path).status().unwrap();
            assert!(status.success());
        }
    }
}

/// A project `p/` with a state directory holding one ordinary pipeline file,
/// and a secret outside it.
struct Project {
    dir: Dir,
}

impl Project {
    fn new() -> Project {
        let dir = Dir::new();
        dir.write(
            "p/state/pipeline/6.json",
            json!({"6": {"current_phase": "building", "pending_decisions": ["decide"]}})
                .to_string(),
        );
        dir.write(
            "outside/secret.json",
            json!({"7": {"current_phase": SECRET, "approved_plan": SECRET}, "x": SECRET})
                .to_string(),
        );
        std::fs::create_dir_all(dir.join("home")).unwrap();
        Project { dir }
    }

    fn project(&self) -> PathBuf {
        self.dir.join("p")
    }

    fn state(&self) -> PathBuf {
        self.dir.join("p/state")
    }

    fn secret(&self) -> PathBuf {
        self.dir.join("outside/secret.json")
    }

    /// Every regular file under `state/` (links not followed) and its text.
    fn state_texts(&self) -> Vec<(PathBuf, String)> {
        let mut out = Vec::new();
        let mut dirs = vec![self.state()];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let t = e.file_type().unwrap();
                if t.is_dir() {
                    dirs.push(e.path());
                } else if t.is_file() {
                    let text = String::from_utf8_lossy(&std::fs::read(e.path()).unwrap()).into();
                    out.push((e.path(), text));
                }
            }
        }
        out
    }
}

fn hook_event(project: &Path, event: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "session_id": "m", "cwd": project, "hook_event_name": event,
        "trigger": "manual", "source": "compact",
    }))
    .unwrap()
}

/// A PostToolUse event whose output is big enough to be counted in the
/// savings ledger.
fn post_tool_use(project: &Path) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "session_id": "m", "cwd": project, "hook_event_name": "PostToolUse",
        "tool_name": "Bash", "tool_input": {"command": "make test"},
        "tool_response": {"stdout": "ok\n".repeat(200_000), "stderr": "",
            "interrupted": false, "isImage": false},
        "tool_use_id": "toolu_01",
    }))
    .unwrap()
}

/// A reader: what it runs, the paths (relative to the project) it reads,
/// and the exit codes its table allows when one of them is refused.
struct Reader {
    program: &'static str,
    args: Vec<String>,
    stdin: Vec<u8>,
    paths: Vec<&'static str>,
    codes: &'static [i32],
    /// The paths are the user's own files (links followed by design).
    user_files: bool,
    /// Skips what is not a regular file while listing, without reading it:
    /// nothing to refuse, so nothing said (`jkz gc`'s reference scan).
    skips_unread: bool,
}

fn readers(project: &Path) -> Vec<Reader> {
    let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    let snapshot = "state/pre-compact-20991231T235959.999Z-1.json";
    let marker = format!(
        "# Doc\n<!-- jkz:offload sha256={} bytes=12 lines=1 excerpt=0 path={} -->\n",
        "ab".repeat(32),
        project.join("named-by-marker.md").display()
    );
    let project_arg = project.display().to_string();
    vec![
        Reader {
            program: "jkz-pre-compact",
            args: vec![],
            stdin: hook_event(project, "PreCompact"),
            paths: vec![
                "state/pipeline/7.json",
                "state/pipeline/6-compact-plan.md",
                "state/pipeline/6-compact-plan.json",
                "state/session-snapshots/m.json",
            ],
            codes: &[0],
            user_files: false,
            skips_unread: false,
        },
        Reader {
            program: "jkz-session-start",
            args: vec![],
            stdin: hook_event(project, "SessionStart"),
            paths: vec![snapshot, "state/session-snapshots/m.json"],
            codes: &[0],
            user_files: false,
            skips_unread: false,
        },
        Reader {
            program: "jkz",
            args: s(&["state", "show", "7"]),
            stdin: vec![],
            paths: vec!["state/pipeline/7.json"],
            codes: &[1, 2],
            user_files: false,
            skips_unread: false,
        },
        Reader {
            program: "jkz",
            args: s(&["state", "validate"]),
            stdin: vec![],
            paths: vec!["state/pipeline/7.json"],
            codes: &[1, 2],
            user_files: false,
            skips_unread: false,
        },
        Reader {
            program: "jkz",
            args: s(&["state", "list"]),
            stdin: vec![],
            paths: vec!["state/pipeline/7.json"],
            codes: &[0, 1, 2],
            user_files: false,
            skips_unread: false,
        },
        Reader {
            program: "jkz-session",
            args: s(&["--session", "m", "save"]),
            stdin: b"## Decisions\n- keep it\n".to_vec(),
            paths: vec!["state/session-snapshots/m.json", "state/pipeline/7.json"],
            codes: &[0, 1],
            user_files: false,
            skips_unread: false,
        },
        Reader {
            program: "jkz-session",
            args: s(&["--session", "m", "load"]),
            stdin: vec![],
            paths: vec!["state/session-snapshots/m.json"],
            codes: &[0, 1],
            user_files: false,
            skips_unread: false,
        },
        Reader {
            program: "jkz-compress",
            args: s(&["--restore"]),
            stdin: marker.into_bytes(),
            paths: vec![
                "state/context-offload/abababababababababababababababababababababababababababababababab.md",
                "named-by-marker.md",
            ],
            codes: &[5],
            user_files: false,
            skips_unread: false,
        },
        // Writers that append to or lock a state file: the same refusals.
        Reader {
            program: "jkz-post-tool-use",
            args: vec![],
            stdin: post_tool_use(project),
            paths: vec!["state/tool-output.jsonl"],
            codes: &[0],
            user_files: false,
            skips_unread: false,
        },
        Reader {
            program: "jkz",
            args: s(&["run", "--", "echo", "an answer"]),
            stdin: vec![],
            paths: vec!["state/deliberations/index.jsonl"],
            codes: &[0],
            user_files: false,
            skips_unread: false,
        },
        Reader {
            program: "jkz",
            args: s(&["lock", "acquire", "pipeline", "1", "--owner", "me"]),
            stdin: vec![],
            paths: vec!["state/locks/.pipeline-1.json.lock"],
            codes: &[1],
            user_files: false,
            skips_unread: false,
        },
        Reader {
            program: "jkz",
            args: s(&["gc"]),
            stdin: vec![],
            paths: vec!["state/pipeline/7.json", snapshot],
            codes: &[0],
            user_files: false,
            skips_unread: true,
        },
        Reader {
            program: "jkz",
            args: vec!["doctor".into(), "--project".into(), project_arg.clone()],
            stdin: vec![],
            paths: vec!["state/pipeline/7.json"],
            codes: &[0, 1],
            user_files: false,
            skips_unread: false,
        },
        Reader {
            program: "jkz",
            args: vec!["doctor".into(), "--project".into(), project_arg.clone()],
            stdin: vec![],
            paths: vec![".claude/settings.json", ".gitignore"],
            codes: &[0, 1],
            user_files: true,
            skips_unread: false,
        },
        Reader {
            program: "jkz",
            args: vec!["install".into(), "--project".into(), project_arg],
            stdin: vec![],
            paths: vec![".claude/settings.json", ".gitignore"],
            codes: &[1],
            user_files: true,
            skips_unread: false,
        },
    ]
}

/// Acceptance: every reader, every path it reads, each of a link, a FIFO,
/// `/dev/zero` and a directory there. No hang, no leak, bounded memory, an
/// exit code from the reader's table, and the refusal said.
#[test]
fn every_reader_refuses_a_link_a_fifo_dev_zero_and_a_directory() {
    let count = readers(Path::new("/p")).len();
    for i in 0..count {
        let paths = readers(Path::new("/p")).swap_remove(i).paths;
        for rel in paths {
            for what in ALL {
                let project = Project::new();
                // The hook input and the marker name this project's paths.
                let reader = readers(&project.project()).swap_remove(i);
                // The user's own files may be links (followed by design).
                if reader.user_files && what == Planted::LinkToSecret {
                    continue;
                }
                let path = project.project().join(rel);
                plant(&path, what, &project.secret());
                // An idle offload file, so that gc scans for references.
                let idle = project.dir.write("p/state/context-offload/idle.md", "x");
                util::age(&idle, util::DAY * 8);
                let out = run(
                    &project.project(),
                    reader.program,
                    &reader.args,
                    &reader.stdin,
                    &[],
                );
                let case = format!("{what:?} at {rel}\n{}", out.report());
                assert!(
                    out.code.is_some_and(|c| reader.codes.contains(&c)),
                    "exit code not in {:?}: {case}",
                    reader.codes
                );
                assert!(!out.stdout.contains(SECRET), "secret on stdout: {case}");
                assert!(!out.stderr.contains(SECRET), "secret on stderr: {case}");
                for (file, text) in project.state_texts() {
                    assert!(
                        !text.contains(SECRET),
                        "secret in {}: {case}",
                        file.display()
                    );
                }
                let said = format!("{}{}", out.stdout, out.stderr);
                assert!(
                    reader.skips_unread
                        || said.contains("refused")
                        || said.contains("not a regular file")
                        || said.contains("symbolic link"),
                    "the refusal is not said: {case}"
                );
                // Never replaced or followed: the planted entry is as it was.
                let meta = std::fs::symlink_metadata(&path).unwrap();
                match what {
                    Planted::Directory => assert!(meta.is_dir(), "{case}"),
                    Planted::Fifo => assert!(
                        std::os::unix::fs::FileTypeExt::is_fifo(&meta.file_type()),
                        "{case}"
                    ),
                    _ => assert!(meta.file_type().is_symlink(), "{case}"),
                }
            }
        }
    }
}

/// Regression: `state/pipeline/1-compact-plan.md -> /proc/self/environ` made
/// `jkz-pre-compact` print the hook's environment (API keys included) as the
/// approved plan, and `jkz-session-start` repeat it; a link at `7.json`
/// copied its target into the snapshot.
#[test]
fn a_linked_compact_plan_never_sends_the_environment_to_the_model() {
    let project = Project::new();
    let state = project.state();
    std::os::unix::fs::symlink(
        "/proc/self/environ",
        state.join("pipeline/6-compact-plan.md"),
    )
    .unwrap();
    std::os::unix::fs::symlink(project.secret(), state.join("pipeline/7.json")).unwrap();
    let env = [("ANTHROPIC_API_KEY", SECRET)];
    let out = run(
        &project.project(),
        "jkz-pre-compact",
        &[],
        &hook_event(&project.project(), "PreCompact"),
        &env,
    );
    assert_eq!(out.code, Some(0), "{}", out.report());
    assert!(out.stdout.contains("decide"), "{}", out.report());
    assert!(!out.stdout.contains(SECRET), "{}", out.report());
    for name in ["6-compact-plan.md", "7.json"] {
        let line = out.stderr.lines().find(|l| l.contains(name));
        assert!(
            line.is_some_and(|l| l.contains("refused") && l.contains("symbolic link")),
            "{name} not reported as refused\n{}",
            out.report()
        );
    }
    for (file, text) in project.state_texts() {
        assert!(!text.contains(SECRET), "secret in {}", file.display());
    }
    let out = run(
        &project.project(),
        "jkz-session-start",
        &[],
        &hook_event(&project.project(), "SessionStart"),
        &env,
    );
    assert_eq!(out.code, Some(0), "{}", out.report());
    assert!(!out.stdout.contains(SECRET), "{}", out.report());
    // `jkz doctor` lists both.
    let out = run(
        &project.project(),
        "jkz",
        &["doctor".into(), "--project".into(), ".".into()],
        &[],
        &[],
    );
    for name in ["6-compact-plan.md", "7.json"] {
        assert!(
            out.stdout
                .lines()
                .any(|l| l.contains(name) && l.contains("symbolic link")),
            "doctor does not list {name}\n{}",
            out.report()
        );
    }
}

/// Regression: a FIFO at `state/pipeline/7.json` hung `jkz state validate`
/// and `jkz doctor`; a link to `/dev/zero` there made them read until out
/// of memory; a FIFO at `.claude/settings.json` or `.gitignore` hung
/// `jkz doctor` and `jkz install`; a FIFO offload file (or one a marker's
/// `path=` names) hung `jkz-compress --restore`.
#[test]
fn fifos_and_devices_hang_nothing_and_exhaust_nothing() {
    let cases: [(&str, Planted, &str, &[&str]); 10] = [
        ("state/pipeline/7.json", Planted::Fifo, "jkz", &["state", "validate"]),
        ("state/pipeline/7.json", Planted::Fifo, "jkz", &["doctor", "--project", "."]),
        ("state/pipeline/7.json", Planted::LinkToDevZero, "jkz", &["state", "validate"]),
        ("state/pipeline/7.json", Planted::LinkToDevZero, "jkz", &["doctor", "--project", "."]),
        (".claude/settings.json", Planted::Fifo, "jkz", &["doctor", "--project", "."]),
        (".claude/settings.json", Planted::Fifo, "jkz", &["install", "--project", "."]),
        (".gitignore", Planted::Fifo, "jkz", &["doctor", "--project", "."]),
        (".gitignore", Planted::Fifo, "jkz", &["install", "--project", "."]),
        (
            "state/context-offload/abababababababababababababababababababababababababababababababab.md",
            Planted::Fifo,
            "jkz-compress",
            &["--restore"],
        ),
        ("named-by-marker.md", Planted::Fifo, "jkz-compress", &["--restore"]),
    ];
    for (rel, what, program, args) in cases {
        let project = Project::new();
        plant(&project.project().join(rel), what, &project.secret());
        let marker = format!(
            "<!-- jkz:offload sha256={} bytes=12 lines=1 excerpt=0 path={} -->\n",
            "ab".repeat(32),
            project.project().join("named-by-marker.md").display()
        );
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let out = run(&project.project(), program, &args, marker.as_bytes(), &[]);
        let case = format!("{what:?} at {rel}\n{}", out.report());
        // Finished (`run` fails on a hang), not killed for its memory, and
        // with a failure or a report, never a crash.
        assert!(out.code.is_some_and(|c| c < 100), "{case}");
        assert!(
            format!("{}{}", out.stdout, out.stderr).contains("not a regular file")
                || out.stderr.contains("refused"),
            "{case}"
        );
        if program == "jkz-compress" {
            assert_eq!(out.code, Some(5), "{case}");
            assert!(out.stdout.is_empty(), "{case}");
        }
    }
}
