//! Hostile input for every binary: bad stdin (truncated, invalid, huge, deeply
//! nested JSON, NUL and non-UTF-8 bytes), ids and issue numbers that try to
//! escape, non-UTF-8 arguments and environment values, symbolic links planted
//! inside `state/`, a `state/` that is a file or cannot be written. Each case
//! checks the exit code of that binary's table, a reason on stderr, and that
//! nothing changed outside `state/` (the project around it and a sibling
//! "outside" directory are listed before and after, links not followed).

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::util::{self, Cmd, Dir, Immutable, Run};

/// A temp dir holding a project `p/` (with `state/`) and a sibling `outside/`.
struct World {
    dir: Dir,
}

impl World {
    fn new() -> World {
        let dir = Dir::new();
        std::fs::create_dir_all(dir.join("p/state")).unwrap();
        std::fs::create_dir_all(dir.join("outside")).unwrap();
        std::fs::write(dir.join("outside/keep.txt"), "outside data").unwrap();
        std::fs::write(dir.join("p/README"), "project file").unwrap();
        World { dir }
    }

    fn project(&self) -> PathBuf {
        self.dir.join("p")
    }

    fn state(&self) -> PathBuf {
        self.dir.join("p/state")
    }

    fn outside(&self) -> PathBuf {
        self.dir.join("outside")
    }

    /// A command run in the project directory.
    fn cmd(&self, name: &str) -> Cmd {
        Cmd::new(name, &self.project())
    }

    /// Everything outside `p/state/`: path, and content or link target.
    fn outside_state(&self) -> Vec<(PathBuf, String)> {
        let mut out = Vec::new();
        listing(self.dir.path(), self.dir.path(), &self.state(), &mut out);
        out.sort();
        out
    }

    /// How many PreCompact snapshots `state/` holds.
    fn snapshots(&self) -> usize {
        std::fs::read_dir(self.state())
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("pre-compact-"))
            .count()
    }

    fn pipeline(&self, n: u32, extra: Value) {
        let mut data = json!({"current_phase": "building", "pending_decisions": ["decide"]});
        for (k, v) in extra.as_object().unwrap() {
            data[k] = v.clone();
        }
        util::write_pipeline(&self.state(), n, &util::pipeline_doc(n, data, Value::Null));
    }
}

fn listing(root: &Path, dir: &Path, skip: &Path, out: &mut Vec<(PathBuf, String)>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = e.path();
        if path == skip {
            continue;
        }
        let rel = path.strip_prefix(root).unwrap().to_path_buf();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.file_type().is_symlink() {
            let to = std::fs::read_link(&path).unwrap();
            out.push((rel, format!("-> {}", to.display())));
        } else if meta.is_dir() {
            out.push((rel, format!("dir {:o}", meta.permissions().mode() & 0o777)));
            listing(root, &path, skip, out);
        } else {
            let bytes = std::fs::read(&path).unwrap();
            out.push((rel, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
}

/// Runs `cmd`, asserting its exit code, a reason on stderr (one line, or
/// clap's usage block starting `error:`), and nothing changed outside state/.
fn refused(world: &World, cmd: Cmd, code: i32, reason: &str) -> Run {
    let before = world.outside_state();
    let run = cmd.run().expect_code(code);
    assert_eq!(world.outside_state(), before, "{}", run.report());
    let err = run.stderr_str();
    let first = err.lines().next().unwrap_or("");
    if first.starts_with("error:") {
        // clap: the reason, then its usage lines.
        assert!(first.contains(reason), "{}", run.report());
    } else {
        assert_eq!(err.lines().count(), 1, "one line\n{}", run.report());
        assert!(err.contains(reason), "want {reason:?}\n{}", run.report());
    }
    run
}

/// A hook run: exit 0, each reason on stderr one line of its own (the first
/// containing `reason`; none at all when `reason` is empty), nothing changed
/// outside state/.
fn hook(world: &World, name: &str, stdin: &[u8], reason: &str) -> Run {
    let before = world.outside_state();
    let run = world.cmd(name).stdin(stdin).run().success();
    assert_eq!(world.outside_state(), before, "{}", run.report());
    let err = run.stderr_str();
    assert!(
        err.lines().all(|l| l.starts_with(&format!("{name}: "))),
        "{}",
        run.report()
    );
    if reason.is_empty() {
        assert_eq!(err, "", "{}", run.report());
    } else {
        assert!(err.contains(reason), "want {reason:?}\n{}", run.report());
    }
    run
}

fn nested(levels: usize) -> String {
    format!("{}1{}", "[".repeat(levels), "]".repeat(levels))
}

fn event(world: &World, session: &str) -> Value {
    json!({
        "session_id": session, "cwd": world.project(), "hook_event_name": "PreCompact",
        "trigger": "manual", "source": "compact",
    })
}

/// [`event`] as the compaction hook `hook_name` is registered for: each
/// ignores another hook's event.
fn event_for(world: &World, hook_name: &str, session: &str) -> Value {
    let mut e = event(world, session);
    if hook_name == "jkz-session-start" {
        e["hook_event_name"] = json!("SessionStart");
    }
    e
}

/// Ids that try to become paths, or look like safe ones and are not.
const ESCAPING_IDS: &[&str] = &[
    "..",
    ".",
    "../outside/x",
    "/etc/passwd",
    "a/b",
    "%2e%2e",
    "%2e%2e%2foutside",
    "\u{2025}",         // two dot leader, looks like ..
    "\u{ff0e}\u{ff0e}", // fullwidth full stops
    "a\u{2215}b",       // division slash, looks like /
    "s\u{0}x",          // NUL
    "line\nbreak",
];

#[test]
fn hooks_survive_hostile_stdin() {
    let world = World::new();
    world.pipeline(1, json!({}));
    let mut huge = br#"{"session_id":"s","pad":""#.to_vec();
    huge.resize(5 * 1024 * 1024, b'a');
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", Vec::new(), "empty hook input"),
        ("truncated", br#"{"session_id":"ab"#.to_vec(), "not JSON"),
        ("invalid", b"{session_id: 1}".to_vec(), "not JSON"),
        ("raw NUL", b"{\"session_id\":\"a\0b\"}".to_vec(), "not JSON"),
        (
            "non-UTF-8",
            b"{\"session_id\":\"\xff\xfe\"}".to_vec(),
            "not JSON",
        ),
        (
            "100,000 [",
            "[".repeat(100_000).into_bytes(),
            "recursion limit",
        ),
        (
            "100,000 {\"a\":",
            "{\"a\":".repeat(100_000).into_bytes(),
            "recursion limit",
        ),
        ("over 4 MiB", huge, "larger than"),
    ];
    for hook_name in ["jkz-pre-compact", "jkz-session-start"] {
        // Input that is not the event: one line, nothing printed, nothing
        // written (no snapshot either).
        for (name, stdin, reason) in &cases {
            let run = hook(&world, hook_name, stdin, reason);
            assert_eq!(run.stdout_str(), "", "{name}\n{}", run.report());
            assert_eq!(
                run.stderr_str().lines().count(),
                1,
                "{name}\n{}",
                run.report()
            );
        }
        assert_eq!(world.snapshots(), 0, "{hook_name}");
    }
    // The event with a session id that is not one: the compaction is
    // still served (no session record is kept).
    let long_id = "x".repeat(10_000);
    for id in ESCAPING_IDS.iter().copied().chain([long_id.as_str()]) {
        for hook_name in ["jkz-pre-compact", "jkz-session-start"] {
            let stdin = event_for(&world, hook_name, id).to_string().into_bytes();
            let run = hook(&world, hook_name, &stdin, "invalid session id");
            if hook_name == "jkz-pre-compact" {
                assert!(run.stdout_str().contains("decide"), "{}", run.report());
            }
        }
    }
    // Nothing but snapshots was written: no session record for any of them.
    assert!(!world.state().join("session-snapshots").exists());
}

#[test]
fn hooks_take_hostile_cwd_and_environment() {
    let world = World::new();
    world.pipeline(1, json!({}));
    // A cwd that is not the project: the implicit state/ there does not
    // exist, so nothing is written anywhere.
    for cwd in ["/", "../..", "/nonexistent\u{0}x", ""] {
        let mut e = event(&world, "s");
        e["cwd"] = json!(cwd);
        for hook_name in ["jkz-pre-compact", "jkz-session-start"] {
            let before = world.outside_state();
            let other = Dir::new();
            let run = Cmd::new(hook_name, other.path())
                .stdin(e.to_string())
                .run()
                .success();
            assert_eq!(world.outside_state(), before, "{}", run.report());
            assert_eq!(other.files(), Vec::<PathBuf>::new(), "{}", run.report());
        }
    }
    // A session id from the environment that is not UTF-8 is refused, not
    // ignored (regression: it was skipped as if unset).
    let mut e = event(&world, "s");
    e.as_object_mut().unwrap().remove("session_id");
    let before = world.outside_state();
    let run = world
        .cmd("jkz-pre-compact")
        .env(
            "CLAUDE_CODE_SESSION_ID",
            OsString::from_vec(b"ab\xffcd".to_vec()),
        )
        .stdin(e.to_string())
        .run()
        .success();
    assert!(
        run.stderr_str().contains("invalid session id"),
        "{}",
        run.report()
    );
    assert_eq!(world.outside_state(), before);
    assert!(!world.state().join("session-snapshots").exists());
    // Non-UTF-8 project and state directories are just paths.
    for var in ["CLAUDE_PROJECT_DIR", "JKZ_STATE_DIR"] {
        let d = Dir::new();
        let name = OsString::from_vec(b"proj\xff".to_vec());
        let target = d.path().join(&name);
        if var == "CLAUDE_PROJECT_DIR" {
            // The project opted in: the project directory only locates state/.
            std::fs::create_dir_all(target.join("state")).unwrap();
        }
        let run = Cmd::new("jkz-pre-compact", d.path())
            .env(var, target.clone())
            .stdin(event(&world, "s").to_string())
            .run()
            .success();
        let state = if var == "JKZ_STATE_DIR" {
            target.clone()
        } else {
            target.join("state")
        };
        let snaps = std::fs::read_dir(&state)
            .unwrap_or_else(|e| panic!("{e}\n{}", run.report()))
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("pre-compact-"))
            .count();
        assert_eq!(snaps, 1, "{}", run.report());
    }
}

#[test]
fn deeply_nested_pipeline_files_crash_nothing() {
    let world = World::new();
    // The deepest a pipeline file can be and still be read back: the
    // file's object and the issue's data take two levels.
    world.pipeline(1, json!({}));
    let deep: Value = serde_json::from_str(&nested(125)).unwrap();
    world.pipeline(2, json!({ "sub_issues": deep, "started_at": deep }));
    std::fs::write(world.state().join("pipeline/3.json"), "[".repeat(100_000)).unwrap();
    let e = event(&world, "s").to_string();
    let run = hook(&world, "jkz-pre-compact", e.as_bytes(), "");
    assert!(run.stdout_str().contains("decide"), "{}", run.report());
    let e = event_for(&world, "jkz-session-start", "s").to_string();
    let run = hook(&world, "jkz-session-start", e.as_bytes(), "");
    assert!(
        run.stdout_str().contains("snapshot pre-compact-"),
        "{}",
        run.report()
    );

    let jkz = |args: &[&str]| world.cmd("jkz").args(args).run();
    jkz(&["state", "show", "2"]).success();
    jkz(&["state", "list"]).success();
    // Unreadable, not missing: exit 2.
    let run = jkz(&["state", "show", "3"]).expect_code(2);
    assert!(
        run.stderr_str().contains("recursion limit"),
        "{}",
        run.report()
    );
    let run = jkz(&["state", "validate"]).expect_code(1);
    assert!(run.stdout_str().contains("3.json"), "{}", run.report());

    // Regression: a save recorded the deep view two levels further down,
    // making the session record unreadable: the next save failed and every
    // note in it was lost to load.
    for i in 0..2 {
        let run = world
            .cmd("jkz-session")
            .args(["--session", "deep", "save"])
            .stdin(format!("## Decisions\n- decision {i}\n"))
            .run()
            .success();
        assert!(
            run.stdout_str().contains("saved session deep"),
            "{}",
            run.report()
        );
    }
    let record = std::fs::read(world.state().join("session-snapshots/deep.json")).unwrap();
    let record: Value = serde_json::from_slice(&record).expect("the record reads back");
    assert_eq!(record["saves"], 2);
    let run = world
        .cmd("jkz-session")
        .args(["--session", "deep", "load"])
        .run()
        .success();
    assert!(run.stdout_str().contains("decision 1"), "{}", run.report());
}

#[test]
fn state_set_json_nested_too_deep_to_read_back_is_refused() {
    let world = World::new();
    let set = |value: &str| {
        world
            .cmd("jkz")
            .args(["state", "set", "7", "steps", "--json", value])
    };
    // 125 levels fit (file object + issue data + 125 = 127).
    let ok: Value = json!({ "a": serde_json::from_str::<Value>(&nested(124)).unwrap() });
    set(&ok.to_string()).run().success();
    let file = world.state().join("pipeline/7.json");
    let before = std::fs::read(&file).unwrap();
    serde_json::from_slice::<Value>(&before).expect("reads back");
    // Regression: 126 levels were written, and the file never read again.
    let too_deep = json!({ "a": serde_json::from_str::<Value>(&nested(125)).unwrap() });
    refused(&world, set(&too_deep.to_string()), 1, "at most 125");
    assert_eq!(std::fs::read(&file).unwrap(), before);
    world
        .cmd("jkz")
        .args(["state", "get", "7", "steps"])
        .run()
        .success();
    // Not JSON at all, or nested past the parser: refused, the message one
    // short line (regression: the whole VALUE was echoed back).
    for bad in [
        "[".repeat(100_000),
        "{\"a\":".to_string(),
        "tru".to_string(),
    ] {
        let run = refused(&world, set(&bad), 1, "VALUE is not JSON");
        assert!(run.stderr_str().len() < 400, "{}", run.report());
    }
    assert_eq!(std::fs::read(&file).unwrap(), before);
}

#[test]
fn escaping_issue_numbers_are_usage_errors() {
    let world = World::new();
    let bad_issues = [
        "..",
        "../1",
        "/etc/passwd",
        "1/..",
        "%2e%2e",
        "\u{ff11}",   // fullwidth digit one
        "\u{0663}",   // arabic-indic three
        "1\u{2215}2", // division slash
        "-1",
        "+1",
        " 1",
        "",
        "123456789012345678901",
    ];
    for issue in bad_issues {
        for args in [
            // `--`: so that "-1" reaches the issue number's validation.
            vec!["state", "set", "--", issue, "current_phase", "x"],
            vec!["state", "get", "--", issue, "current_phase"],
            vec!["state", "show", "--", issue],
        ] {
            refused(&world, world.cmd("jkz").args(args), 2, "invalid");
        }
    }
    assert_eq!(std::fs::read_dir(world.state()).unwrap().count(), 0);
}

#[test]
fn non_utf8_arguments_are_refused_or_taken_as_paths() {
    let world = World::new();
    let bad = OsString::from_vec(b"x\xffy".to_vec());
    // Strings: clap refuses them (usage, exit 2).
    let cases: Vec<(&str, Vec<OsString>)> = vec![
        (
            "jkz",
            vec![
                "state".into(),
                "set".into(),
                "1".into(),
                "f".into(),
                bad.clone(),
            ],
        ),
        (
            "jkz",
            vec![
                "state".into(),
                "set".into(),
                "1".into(),
                bad.clone(),
                "v".into(),
            ],
        ),
        (
            "jkz-session",
            vec!["--session".into(), bad.clone(), "save".into()],
        ),
        ("jkz-truncate", vec!["--role".into(), bad.clone()]),
    ];
    for (bin, args) in cases {
        refused(&world, world.cmd(bin).args(args), 2, "invalid UTF-8");
    }
    // A session id from the environment: refused too (regression: it was
    // skipped as if unset, and the notes went to "anonymous").
    let run = refused(
        &world,
        world
            .cmd("jkz-session")
            .env("CLAUDE_SESSION_ID", bad.clone())
            .arg("save")
            .stdin("## Decisions\n- x\n"),
        2,
        "invalid session id",
    );
    drop(run);
    assert!(!world.state().join("session-snapshots").exists());
    // Paths: any bytes name a file.
    let name = world.project().join(&bad);
    std::fs::write(&name, "## Decisions\n- from a strange name\n").unwrap();
    let run = world
        .cmd("jkz-session")
        .args([
            OsString::from("--session"),
            "s".into(),
            "save".into(),
            name.clone().into(),
        ])
        .run()
        .success();
    assert!(run.stdout_str().contains("1 decisions"), "{}", run.report());
    let run = world
        .cmd("jkz-truncate")
        .args([
            OsString::from("--max-bytes"),
            "0".into(),
            name.clone().into(),
        ])
        .run()
        .success();
    assert_eq!(run.stdout(), std::fs::read(&name).unwrap());
    let run = world.cmd("jkz-compress").arg(name.clone()).run().success();
    assert_eq!(run.stdout(), std::fs::read(&name).unwrap());
    // A missing file: exit 1, one line naming it.
    let missing = world
        .project()
        .join(OsString::from_vec(b"missing\xff".to_vec()));
    refused(
        &world,
        world.cmd("jkz-truncate").arg(missing.clone()),
        1,
        "missing",
    );
    refused(
        &world,
        world.cmd("jkz-compress").arg(missing.clone()),
        1,
        "missing",
    );
    refused(
        &world,
        world
            .cmd("jkz-session")
            .args([OsString::from("save"), missing.into()]),
        1,
        "missing",
    );
}

#[test]
fn session_save_refuses_hostile_input() {
    let world = World::new();
    let save = |stdin: Vec<u8>| {
        world
            .cmd("jkz-session")
            .args(["--session", "s", "save"])
            .stdin(stdin)
    };
    let mut big = b"## Decisions\n- ".to_vec();
    big.resize(2 << 20, b'a');
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"{\"decisions\": [\"a\"".to_vec(), "invalid JSON input"),
        (
            format!("{{\"decisions\":{}", "[".repeat(100_000)).into_bytes(),
            "recursion limit",
        ),
        (
            br#"{"decisions": [["nested"]]}"#.to_vec(),
            "non-string item",
        ),
        (b"## Decisions\n- \xff\xfe\n".to_vec(), "not UTF-8"),
        (big, "save notes, not transcripts"),
        (b"\0\0\0".to_vec(), "no known section"),
    ];
    for (stdin, reason) in cases {
        refused(&world, save(stdin), 2, reason);
    }
    assert!(!world.state().join("session-snapshots").exists());
    // NUL inside otherwise good text is kept as text, escaped in the JSON.
    save(b"## Decisions\n- a\0b\n".to_vec()).run().success();
    let record: Value = serde_json::from_slice(
        &std::fs::read(world.state().join("session-snapshots/s.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(record["notes"]["decisions"][0]["text"], "a\u{0}b");
    let long = "x".repeat(10_000);
    // (An argument cannot hold a NUL byte; the hooks test that one.)
    let ids = ESCAPING_IDS.iter().copied().filter(|id| !id.contains('\0'));
    for id in ids.chain([long.as_str()]) {
        let cmd = world
            .cmd("jkz-session")
            .args(["--session", id, "save"])
            .stdin("## Decisions\n- x\n");
        refused(&world, cmd, 2, "invalid session id");
        let cmd = world.cmd("jkz-session").args(["--session", id, "load"]);
        refused(&world, cmd, 2, "invalid session id");
    }
}

#[test]
fn filters_pass_nul_and_non_utf8_bytes_through() {
    let world = World::new();
    let mut doc: Vec<u8> = Vec::new();
    for i in 0..2000u32 {
        doc.extend_from_slice(format!("line {i} \0 \u{e9} ").as_bytes());
        doc.extend_from_slice(b"\xff\xfe ");
        doc.extend_from_slice(b"\xc3\n");
    }
    doc.extend_from_slice(
        format!("<!-- jkz:verdict-json {} -->\n", "[".repeat(100_000)).as_bytes(),
    );
    doc.extend_from_slice(b"tail\0\n");
    // Under the cap: byte for byte.
    let run = world
        .cmd("jkz-truncate")
        .arg("--max-bytes")
        .arg("0")
        .stdin(&doc)
        .run()
        .success();
    assert_eq!(run.stdout(), &doc[..]);
    // Over it: within the cap, head intact, exit 0.
    let run = world
        .cmd("jkz-truncate")
        .args(["--max-bytes", "4096", "--no-full-output"])
        .stdin(&doc)
        .run()
        .success();
    assert!(run.stdout().len() <= 4096, "{}", run.report());
    assert!(doc.starts_with(&run.stdout()[..100]));
    // compress round-trips such bytes exactly.
    let mut big = b"# Intro\n".to_vec();
    big.extend_from_slice(b"## Huge\n");
    big.extend(doc.iter().copied());
    let run = world.cmd("jkz-compress").stdin(&big).run().success();
    assert!(run.stdout().len() < big.len(), "{}", run.report());
    let back = world
        .cmd("jkz-compress")
        .arg("--restore")
        .stdin(run.stdout())
        .run()
        .success();
    assert_eq!(back.stdout(), &big[..]);
}

#[test]
fn restore_never_trusts_a_marker_path() {
    let world = World::new();
    let fake = format!(
        "<!-- jkz:offload sha256={} bytes=12 lines=1 excerpt=0 path={} -->\n",
        "0".repeat(64),
        world.outside().join("keep.txt").display()
    );
    refused(
        &world,
        world.cmd("jkz-compress").arg("--restore").stdin(fake),
        5,
        "altered",
    );
}

/// Links planted inside state/ pointing outside: never written through.
#[test]
fn links_inside_state_are_never_followed_for_writing() {
    let big_doc = {
        let mut d = b"# Doc\n## Big\n".to_vec();
        d.extend(std::iter::repeat_n(b"word word word\n", 3000).flatten());
        d
    };
    let outside_dir = |w: &World| w.outside();

    // state/context-offload -> outside/
    let world = World::new();
    symlink(outside_dir(&world), world.state().join("context-offload")).unwrap();
    let run = refused(
        &world,
        world.cmd("jkz-compress").stdin(&big_doc),
        4,
        "symbolic link",
    );
    assert!(run.stdout().is_empty());
    let before = world.outside_state();
    let run = world
        .cmd("jkz-truncate")
        .args(["--max-bytes", "1000"])
        .stdin(&big_doc)
        .run()
        .success();
    assert!(
        run.stderr_str().contains("symbolic link"),
        "{}",
        run.report()
    );
    assert!(!run.stdout().is_empty() && run.stdout().len() <= 1000);
    assert_eq!(world.outside_state(), before);

    // state/pipeline -> outside/
    let world = World::new();
    symlink(outside_dir(&world), world.state().join("pipeline")).unwrap();
    refused(
        &world,
        world
            .cmd("jkz")
            .args(["state", "set", "1", "current_phase", "x"]),
        2,
        "symbolic link",
    );

    // state/session-snapshots -> outside/
    let world = World::new();
    symlink(outside_dir(&world), world.state().join("session-snapshots")).unwrap();
    refused(
        &world,
        world
            .cmd("jkz-session")
            .args(["--session", "s", "save"])
            .stdin("## Decisions\n- x\n"),
        1,
        "symbolic link",
    );
    let e = event(&world, "s").to_string();
    hook(&world, "jkz-pre-compact", e.as_bytes(), "symbolic link");

    // A lock file planted as a link to a file that does not exist yet:
    // opening it would create the target.
    let world = World::new();
    std::fs::create_dir_all(world.state().join("pipeline")).unwrap();
    std::fs::create_dir_all(world.state().join("session-snapshots")).unwrap();
    symlink(
        world.outside().join("created-by-pipeline-lock"),
        world.state().join("pipeline/.1.json.lock"),
    )
    .unwrap();
    symlink(
        world.outside().join("created-by-session-lock"),
        world.state().join("session-snapshots/.s.json.lock"),
    )
    .unwrap();
    refused(
        &world,
        world
            .cmd("jkz")
            .args(["state", "set", "1", "current_phase", "x"]),
        2,
        "symbolic link",
    );
    refused(
        &world,
        world
            .cmd("jkz-session")
            .args(["--session", "s", "save"])
            .stdin("## Decisions\n- x\n"),
        1,
        "symbolic link",
    );
    hook(&world, "jkz-pre-compact", e.as_bytes(), "symbolic link");
    assert!(!world.outside().join("created-by-pipeline-lock").exists());
    assert!(!world.outside().join("created-by-session-lock").exists());

    // A data file that is a link: refused, never read through (a record
    // linked to another file would copy that file's JSON into state); the
    // link and its target stay as they were.
    let world = World::new();
    std::fs::create_dir_all(world.state().join("session-snapshots")).unwrap();
    let target = world.outside().join("record.json");
    std::fs::write(&target, r#"{"mine": 1}"#).unwrap();
    let record = world.state().join("session-snapshots/s.json");
    symlink(&target, &record).unwrap();
    let run = world
        .cmd("jkz-session")
        .args(["--session", "s", "save"])
        .stdin("## Decisions\n- x\n")
        .run()
        .expect_code(1);
    assert!(
        run.stderr_str().contains("refused") && run.stderr_str().contains("symbolic link"),
        "{}",
        run.report()
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), r#"{"mine": 1}"#);
    let meta = std::fs::symlink_metadata(&record).unwrap();
    assert!(meta.file_type().is_symlink());

    // A snapshot name already taken by a link: write-once keeps the link
    // and writes nothing through it.
    let world = World::new();
    let taken = world
        .state()
        .join("pre-compact-20250101T000000.000Z-1.json");
    symlink(world.outside().join("snap-target"), &taken).unwrap();
    let mut f = jkz::atomic::AtomicFile::create(&taken).unwrap();
    std::io::Write::write_all(&mut f, b"{}").unwrap();
    assert!(!f.commit_new().unwrap());
    assert!(!world.outside().join("snap-target").exists());
}

/// The state root may be a link: the user chose where state lives.
#[test]
fn a_state_root_link_is_the_users_choice() {
    let world = World::new();
    let real = world.outside().join("real-state");
    std::fs::create_dir(&real).unwrap();
    let link = world.project().join("linked-state");
    symlink(&real, &link).unwrap();
    world
        .cmd("jkz")
        .arg("--state-dir")
        .arg(&link)
        .args(["state", "set", "1", "current_phase", "x"])
        .run()
        .success();
    assert!(real.join("pipeline/1.json").is_file());
}

/// gc removes files: never through a linked subdirectory.
#[test]
fn gc_does_not_remove_files_through_a_linked_subdirectory() {
    let world = World::new();
    for name in ["a.json", "b.json", "c.md"] {
        let path = world.outside().join(name);
        std::fs::write(&path, "{}").unwrap();
        util::age(&path, util::DAY * 90);
    }
    symlink(world.outside(), world.state().join("session-snapshots")).unwrap();
    symlink(world.outside(), world.state().join("context-offload")).unwrap();
    let before = world.outside_state();
    let run = world.cmd("jkz").arg("gc").run().success();
    assert_eq!(world.outside_state(), before, "{}", run.report());
    assert!(
        run.stdout_str().contains("in 0 file(s)"),
        "{}",
        run.report()
    );
}

/// `state` is a file: every binary says so; hooks still exit 0.
#[test]
fn a_state_that_is_a_file() {
    let world = World::new();
    std::fs::remove_dir(world.state()).unwrap();
    std::fs::write(world.state(), "not a directory").unwrap();
    let big = format!("# D\n## Big\n{}", "word word\n".repeat(5000));
    let e = event(&world, "s").to_string();
    for explicit in [false, true] {
        let with = |cmd: Cmd| {
            if explicit {
                cmd.env("JKZ_STATE_DIR", world.state())
            } else {
                cmd
            }
        };
        let why = "not a directory";
        refused(
            &world,
            with(world.cmd("jkz").args(["state", "set", "1", "f", "v"])),
            2,
            why,
        );
        refused(
            &world,
            with(world.cmd("jkz-session").args(["--session", "s", "save"]))
                .stdin("## Decisions\n- x\n"),
            1,
            why,
        );
        refused(&world, with(world.cmd("jkz-compress")).stdin(&big), 4, why);
        refused(&world, with(world.cmd("jkz").arg("gc")), 1, why);
        let before = world.outside_state();
        let run = with(world.cmd("jkz-truncate").args(["--max-bytes", "1000"]))
            .stdin(&big)
            .run()
            .success();
        assert!(run.stderr_str().contains(why), "{}", run.report());
        assert_eq!(world.outside_state(), before);
        let run = with(world.cmd("jkz-pre-compact"))
            .stdin(e.clone())
            .run()
            .success();
        assert!(run.stderr_str().contains(why), "{}", run.report());
        assert_eq!(run.stderr_str().lines().count(), 1, "{}", run.report());
        with(world.cmd("jkz-session-start"))
            .stdin(event_for(&world, "jkz-session-start", "s").to_string())
            .run()
            .success();
        assert_eq!(world.outside_state(), before);
    }
}

/// A state directory nothing can be written into (immutable: the honest
/// read-only test when running as root).
#[test]
fn a_state_that_cannot_be_written() {
    let world = World::new();
    world.pipeline(1, json!({}));
    let Some(_guard) = Immutable::set(&world.state()) else {
        util::cannot_run("chattr +i is not supported here: read-only state/ not tested");
        return;
    };
    // Prove the directory really refuses writes, as root.
    assert!(std::fs::write(world.state().join("probe"), "x").is_err());
    let big = format!("# D\n## Big\n{}", "word word\n".repeat(5000));
    let why = "Operation not permitted";
    refused(
        &world,
        world
            .cmd("jkz-session")
            .args(["--session", "s", "save"])
            .stdin("## Decisions\n- x\n"),
        1,
        why,
    );
    refused(&world, world.cmd("jkz-compress").stdin(&big), 4, why);
    let e = event(&world, "s").to_string();
    let run = hook(&world, "jkz-pre-compact", e.as_bytes(), why);
    assert!(run.stdout_str().contains("decide"), "{}", run.report());
    // It reads the state, and appends session.started to the event log:
    // that write is refused too, and said.
    let e = event_for(&world, "jkz-session-start", "s").to_string();
    hook(&world, "jkz-session-start", e.as_bytes(), why);
    let before = world.outside_state();
    let run = world
        .cmd("jkz-truncate")
        .args(["--max-bytes", "1000"])
        .stdin(&big)
        .run()
        .success();
    assert!(run.stderr_str().contains(why), "{}", run.report());
    assert_eq!(world.outside_state(), before);
}

/// Everything each binary creates under state/ is owner-only.
#[test]
fn every_file_under_state_is_owner_only() {
    let dir = Dir::new();
    let state = dir.join("fresh/state");
    let run = |cmd: Cmd| cmd.env("JKZ_STATE_DIR", &state).run().success();
    let big = format!("# D\n## Big\n{}", "word word\n".repeat(5000));
    run(dir
        .cmd("jkz")
        .args(["state", "set", "1", "current_phase", "x"]));
    run(dir
        .cmd("jkz-session")
        .args(["--session", "s", "save"])
        .stdin("## Decisions\n- x\n"));
    run(dir
        .cmd("jkz-pre-compact")
        .stdin(json!({"session_id": "s2", "trigger": "auto"}).to_string()));
    run(dir
        .cmd("jkz-truncate")
        .args(["--max-bytes", "1000"])
        .stdin(&big));
    run(dir.cmd("jkz-compress").stdin(&big));
    let mut found = Vec::new();
    listing(&state, &state, Path::new("/"), &mut found);
    let mut kinds = std::collections::BTreeSet::new();
    for (rel, _) in &found {
        let meta = std::fs::symlink_metadata(state.join(rel)).unwrap();
        let mode = meta.permissions().mode() & 0o777;
        let want = if meta.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(mode, want, "{} is {mode:o}", rel.display());
        kinds.insert(rel.components().next().unwrap().as_os_str().to_owned());
    }
    let mode = std::fs::metadata(&state).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    // Every writer left something: pipeline, sessions, snapshot, offloads.
    for want in ["pipeline", "session-snapshots", "context-offload"] {
        assert!(kinds.contains(std::ffi::OsStr::new(want)), "{found:?}");
    }
    assert!(found
        .iter()
        .any(|(p, _)| p.to_string_lossy().starts_with("pre-compact-")));
    assert!(found
        .iter()
        .any(|(p, _)| p.to_string_lossy().contains("full-")));
    assert!(found
        .iter()
        .any(|(p, _)| p.to_string_lossy().ends_with(".lock")));
}

/// Runs `cmd` with a watchdog: a process still running after 60 s fails the
/// test (a hook must answer, not hang).
fn within_deadline(cmd: Cmd) -> Run {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(cmd.run());
    });
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .expect("the command hung on a FIFO in state/ (gave up after 60 s)")
}

/// A named pipe planted where jkz reads a data file used to block the hooks
/// forever in `open` (no writer ever comes).
#[test]
fn a_fifo_in_state_never_hangs_a_hook() {
    let world = World::new();
    world.pipeline(6, json!({}));
    let state = world.state();
    std::fs::create_dir_all(state.join("session-snapshots")).unwrap();
    let fifos = [
        state.join("pipeline/7.json"),
        state.join("pipeline/6-compact-plan.md"),
        state.join("session-snapshots/fifo-session.json"),
        state.join("pre-compact-20991231T235959.999Z-1.json"),
    ];
    for fifo in &fifos {
        let status = std::process::Command::new("mkfifo")
            .arg(fifo)
            .status()
            .unwrap();
        assert!(status.success(), "mkfifo {}", fifo.display());
    }
    let before = world.outside_state();
    let input = serde_json::to_vec(&event(&world, "fifo-session")).unwrap();
    let run = within_deadline(world.cmd("jkz-pre-compact").stdin(&input)).success();
    assert!(run.stdout_str().contains("decide"), "{}", run.report());
    let mut start = event(&world, "fifo-session");
    start["hook_event_name"] = json!("SessionStart");
    start["source"] = json!("compact");
    let start = serde_json::to_vec(&start).unwrap();
    within_deadline(world.cmd("jkz-session-start").stdin(&start)).success();
    // `jkz state`'s table: 2 when the state could not be read.
    let run = within_deadline(world.cmd("jkz").args(["state", "show", "7"]));
    assert_eq!(run.code(), Some(2), "{}", run.report());
    assert!(
        run.stderr_str().contains("not a regular file"),
        "{}",
        run.report()
    );
    within_deadline(
        world
            .cmd("jkz-session")
            .args(["--session", "other", "load"]),
    )
    .success();
    assert_eq!(before, world.outside_state());
    for fifo in &fifos {
        let kind = std::fs::symlink_metadata(fifo).unwrap().file_type();
        assert!(
            std::os::unix::fs::FileTypeExt::is_fifo(&kind),
            "{} replaced",
            fifo.display()
        );
    }
}

/// Shell commands built to make the PreToolUse guard's reader work without
/// end (brace bombs, scripts nested thousands deep, half a megabyte of
/// `eval`, a pipeline of xargs into xargs): the hook answers at once each,
/// prints a decision or nothing, and one too deep to read is a question,
/// not a pass, while another chat holds a claim.
#[test]
fn hostile_shell_commands_never_stall_the_guard() {
    let p = crate::registry::claimed_checkout();
    let deep = (0..12).fold("rm -f state/pipeline/42.json".to_string(), |inner, _| {
        format!("sh -c '{}'", inner.replace('\'', "'\\''"))
    });
    let commands = [
        "{a,b}".repeat(60),
        "echo {1..99999999999} > x".to_string(),
        "eval ".repeat(100_000) + "rm x",
        "$(".repeat(20_000) + "rm x" + &")".repeat(20_000),
        "echo a | xargs ".repeat(2_000) + "rm",
        "x=$(find / -exec find {} -exec find {} \\; \\;); ".repeat(500),
        "f=a; ".repeat(20_000) + "echo x > $f",
        "'".repeat(300_000),
        deep.clone(),
    ];
    for command in &commands {
        let event = p.event(
            "PreToolUse",
            "chat-b",
            json!({"tool_name": "Bash", "tool_input": {"command": command}}),
        );
        let started = std::time::Instant::now();
        let run = within_deadline(
            p.cmd("jkz-chat")
                .env("JKZ_TEST_NOW", (crate::registry::T + 10).to_string())
                .stdin(event.to_string()),
        )
        .success();
        // A debug build on a busy machine: the bound is generous, the
        // point is that it is one.
        assert!(
            started.elapsed() < std::time::Duration::from_secs(2),
            "{:?} for a command of {} bytes",
            started.elapsed(),
            command.len()
        );
        assert!(
            run.stdout().is_empty() || run.stdout_str().contains("permissionDecision"),
            "{}",
            run.report()
        );
    }
    let run = crate::registry::shell(&p, crate::registry::Client::Claude, "chat-b", &deep);
    assert!(
        matches!(
            crate::registry::answer(crate::registry::Client::Claude, &run),
            crate::registry::Answer::Ask(_)
        ),
        "{}",
        run.report()
    );
}
