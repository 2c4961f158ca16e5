//! Regression tests: the commands that read the state directory, and the
//! hooks, behaving one way. Each test is named after what broke.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::util::{bin, git, Dir};

/// `git -C dir ARGS`, which must succeed.
/// A git repository with one commit and no state directory.
fn repository() -> Dir {
    let dir = Dir::new();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    dir.write("README", "a project\n");
    git(dir.path(), &["add", "README"]);
    git(dir.path(), &["commit", "-q", "-m", "first"]);
    dir
}

/// A project with a state directory and some history in it: an issue set
/// and a deliberation recorded.
fn project() -> Dir {
    let dir = repository();
    std::fs::create_dir(dir.join("state")).unwrap();
    dir.cmd("jkz")
        .args(["state", "set", "1", "current_phase", "building"])
        .run()
        .success();
    dir.cmd("jkz")
        .args([
            "run", "--role", "judge", "--issue", "1", "--", "echo", "PASS",
        ])
        .run()
        .success();
    dir
}

#[test]
fn readers_disagreed_when_there_was_no_state_directory() {
    // They printed an empty table and exited 0, or said so and exited 1,
    // or exited 2 (slo): now one line, where and why and how, and exit 4.
    let dir = repository();
    let readers: &[&[&str]] = &[
        &["state", "list"],
        &["state", "show", "1"],
        &["state", "get", "1", "current_phase"],
        &["state", "pr", "1"],
        &["state", "validate"],
        &["deliberations", "list"],
        &["deliberations", "show", "--issue", "1"],
        &["chats"],
        &["stats"],
        &["findings", "--issue", "1"],
        &["events"],
        &["metrics"],
        &["patterns", "list"],
        &["slo", "check"],
        &["gc"],
        &["circuit", "status"],
        &["lock", "list"],
        &["release", "1", "--session", "s1"],
        // A writer where the user named no state directory.
        &["state", "set", "1", "current_phase", "building"],
        &["claim", "1", "--session", "s1"],
    ];
    let mut said = None;
    for args in readers {
        let run = dir
            .cmd("jkz")
            .args(args.iter().copied())
            .run()
            .expect_code(4);
        assert_eq!(run.stdout_str(), "", "{}", run.report());
        let err = run.stderr_str();
        assert_eq!(err.lines().count(), 1, "{}", run.report());
        let (program, message) = err.trim_end().split_once(": ").unwrap();
        assert!(program.starts_with("jkz "), "{}", run.report());
        for part in [
            "no state directory at ",
            "(the checkout ",
            "run `jkz install`",
            "--state-dir or JKZ_STATE_DIR",
        ] {
            assert!(message.contains(part), "{part}\n{}", run.report());
        }
        match &said {
            None => said = Some(message.to_string()),
            Some(first) => assert_eq!(message, first, "{}", run.report()),
        }
    }
    assert!(!dir.join("state").exists());
    // A writer creates a state directory the user named.
    dir.cmd("jkz")
        .args(["--state-dir", "named", "state", "set", "1", "x", "y"])
        .run()
        .success();
    assert!(dir.join("named/pipeline/1.json").is_file());
}

#[test]
fn slo_check_without_a_state_directory_exited_as_a_bad_jkz_toml() {
    let dir = repository();
    dir.cmd("jkz")
        .args(["slo", "check"])
        .run()
        .expect_code(4)
        .one_line("jkz slo", "no state directory");
    // A bad jkz.toml keeps its own code.
    std::fs::create_dir(dir.join("state")).unwrap();
    dir.write("jkz.toml", "[slo\nbroken");
    dir.cmd("jkz")
        .args(["slo", "check"])
        .run()
        .expect_code(2)
        .one_line("jkz slo", "not valid TOML");
}

#[test]
fn since_took_a_date_only_for_deliberations_list() {
    let dir = project();
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    for command in [
        &["deliberations", "list"][..],
        &["events"],
        &["metrics"],
        &["stats"],
    ] {
        for since in ["2h", "30m", "7d", today.as_str(), "2026-01-01T00:00:00Z"] {
            let run = dir
                .cmd("jkz")
                .args(command.iter().copied())
                .args(["--since", since, "--until", "2999-01-01"])
                .run()
                .success();
            assert_eq!(run.stderr_str(), "", "{}", run.report());
        }
        // A date after the events leaves them out; one before keeps them.
        let run = dir
            .cmd("jkz")
            .args(command.iter().copied())
            .args(["--since", "2999-01-01"])
            .run()
            .success();
        assert!(!run.stdout_str().contains("judge"), "{}", run.report());
        dir.cmd("jkz")
            .args(command.iter().copied())
            .args(["--since", "2h", "--until", "2000-01-01"])
            .run()
            .expect_code(2)
            .one_line(
                &format!("jkz {}", command[0]),
                "--until 2000-01-01T00:00:00Z is before --since",
            );
        let run = dir
            .cmd("jkz")
            .args(command.iter().copied())
            .args(["--since", "27.11.2026"])
            .run()
            .expect_code(2);
        assert!(
            run.stderr_str().contains("a date (e.g. 2026-03-09)"),
            "{}",
            run.report()
        );
    }
    // The dates count: the deliberation and its events are today's.
    let listed = dir
        .cmd("jkz")
        .args(["deliberations", "list", "--json", "--since", &today])
        .run()
        .success();
    let listed: Vec<Value> = serde_json::from_str(&listed.stdout_str()).unwrap();
    assert_eq!(listed.len(), 1);
    let events = dir
        .cmd("jkz")
        .args(["events", "--json", "--since", &today])
        .run()
        .success();
    assert!(events.stdout_str().contains("agent.finished"));
}

#[test]
fn metrics_json_conflicted_with_format() {
    let dir = project();
    // A window given as two times: the output carries no wall clock.
    let window = ["--since", "2026-01-01", "--until", "2999-01-01T00:00:00Z"];
    let json = dir
        .cmd("jkz")
        .args(["metrics", "--json"])
        .args(window)
        .run()
        .success();
    let format = dir
        .cmd("jkz")
        .args(["metrics", "--format", "json"])
        .args(window)
        .run()
        .success();
    let both = dir
        .cmd("jkz")
        .args(["metrics", "--json", "--format", "json"])
        .args(window)
        .run()
        .success();
    assert_eq!(json.stdout_str(), format.stdout_str());
    assert_eq!(json.stdout_str(), both.stdout_str());
    let report: Value = serde_json::from_str(&json.stdout_str()).unwrap();
    assert_eq!(report["since"], "2026-01-01T00:00:00Z");
    assert_eq!(report["until"], "2999-01-01T00:00:00Z");
    dir.cmd("jkz")
        .args(["metrics", "--json", "--format", "prometheus"])
        .run()
        .expect_code(2)
        .one_line("jkz metrics", "--json is --format json");
}

#[test]
fn doctor_gc_slo_check_and_session_list_had_no_json() {
    let dir = project();
    let json_of = |program: &str, args: &[&str], code: i32| -> Value {
        let run = dir
            .cmd(program)
            .env("HOME", dir.join("home"))
            .args(args.iter().copied())
            .run()
            .expect_code(code);
        assert!(run.stdout_str().ends_with("}\n") || run.stdout_str().ends_with("]\n"));
        serde_json::from_str(&run.stdout_str()).unwrap_or_else(|e| panic!("{e}\n{}", run.report()))
    };
    // Doctor: jkz is not installed here, so some checks fail.
    let doctor = json_of("jkz", &["doctor", "--json"], 1);
    let checks = doctor["checks"].as_array().unwrap();
    assert_eq!(doctor["ok"], false);
    let failed = checks.iter().filter(|c| c["status"] == "fail").count();
    assert!(failed > 0);
    assert_eq!(doctor["failed"], failed);
    assert!(
        checks
            .iter()
            .any(|c| c["status"] == "ok" && c["text"].as_str().unwrap().starts_with("state: ")),
        "{doctor}"
    );
    let gc = json_of("jkz", &["gc", "--json", "--dry-run"], 0);
    assert_eq!(gc["dry_run"], true);
    assert_eq!(gc["files"], gc["removed"].as_array().unwrap().len());
    assert!(gc["freed_bytes"].is_u64(), "{gc}");
    let slo = json_of("jkz", &["slo", "check", "--json"], 0);
    assert_eq!(slo["met"], true);
    assert_eq!(slo["from"], Value::Null);
    let objectives = slo["objectives"].as_array().unwrap();
    assert_eq!(objectives[0]["key"], "slo.completion_rate_min");
    assert_eq!(objectives[0]["standing"], "no-data");
    assert_eq!(objectives[0]["target_value"], 0.8);
    assert_eq!(objectives[0]["measured_value"], Value::Null);
    dir.cmd("jkz-session")
        .args(["--session", "s1", "save"])
        .stdin("## Decisions\n- keep the cache\n")
        .run()
        .success();
    let sessions = json_of("jkz-session", &["--session", "s1", "list", "--json"], 0);
    assert_eq!(sessions[0]["session_id"], "s1");
    assert_eq!(sessions[0]["current"], true);
    assert_eq!(sessions[0]["branch"], "main");
    assert!(sessions[0]["saved_at"].as_str().unwrap().ends_with('Z'));
}

#[test]
fn pre_compact_given_input_that_is_not_json_snapshotted_and_printed_the_summary_text() {
    let dir = Dir::new();
    std::fs::create_dir(dir.join("state")).unwrap();
    let other_event = json!({"hook_event_name": "Stop", "session_id": "s1", "cwd": dir.path()});
    for hook in [
        "jkz-pre-compact",
        "jkz-session-start",
        "jkz-post-tool-use",
        "jkz-chat",
    ] {
        for input in [
            "not json".to_string(),
            "[1, 2]".to_string(),
            other_event.to_string(),
        ] {
            let run = dir
                .cmd(hook)
                .env("CLAUDE_PROJECT_DIR", dir.path())
                .stdin(&input)
                .run()
                .success();
            assert_eq!(run.stdout_str(), "", "{input}\n{}", run.report());
            assert_eq!(
                run.stderr_str().lines().count(),
                1,
                "{input}\n{}",
                run.report()
            );
            assert!(
                run.stderr_str().starts_with(&format!("{hook}: ")),
                "{}",
                run.report()
            );
            assert_eq!(
                dir.files(),
                Vec::<std::path::PathBuf>::new(),
                "{hook} wrote for {input}\n{}",
                run.report()
            );
        }
    }
}

/// Reads `jkz ui`'s first line (its URL) within 30 s.
fn ui_url(child: &mut std::process::Child) -> String {
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("jkz ui printed its URL");
    line.trim_end()
        .strip_prefix("jkz ui: ")
        .unwrap_or_else(|| panic!("{line:?}"))
        .to_string()
}

#[test]
fn live_session_json_named_a_ui_server_after_it_stopped() {
    let dir = Dir::new();
    std::fs::create_dir(dir.join("state")).unwrap();
    let live = dir.join("state/live-session.json");
    for (signal, sent_signal) in [
        ("INT", rustix::process::Signal::INT),
        ("TERM", rustix::process::Signal::TERM),
        ("HUP", rustix::process::Signal::HUP),
    ] {
        let mut child = Command::new(bin("jkz"))
            .args(["ui", "--port", "0", "--state-dir"])
            .arg(dir.join("state"))
            .env_remove("JKZ_STATE_DIR")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let url = ui_url(&mut child);
        let recorded: Value = serde_json::from_slice(&std::fs::read(&live).unwrap()).unwrap();
        assert_eq!(recorded["pid"], child.id());
        // An open event stream (a browser tab) must not hold the stop up.
        let port: u16 = url["http://127.0.0.1:".len()..]
            .split('/')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let token = url.split("token=").nth(1).unwrap();
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(
            stream,
            "GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: jkz-ui-{port}={token}\r\n\r\n"
        )
        .unwrap();
        let mut first = [0u8; 12];
        std::io::Read::read_exact(&mut stream, &mut first).unwrap();
        assert_eq!(&first, b"HTTP/1.1 200");
        assert!(crate::util::signal(child.id(), sent_signal));
        let started = Instant::now();
        let exit = loop {
            if let Some(exit) = child.try_wait().unwrap() {
                break exit;
            }
            if started.elapsed() > Duration::from_secs(20) {
                let _ = child.kill();
                panic!("jkz ui did not stop on SIG{signal}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(exit.code(), Some(0), "SIG{signal}");
        assert!(!live.exists(), "live-session.json left after SIG{signal}");
    }
}

#[test]
fn claim_accepted_a_worktree_that_does_not_exist() {
    let dir = repository();
    std::fs::create_dir(dir.join("state")).unwrap();
    git(
        dir.path(),
        &["worktree", "add", "-q", "../wt-i42", "-b", "i42"],
    );
    let worktree = dir.path().parent().unwrap().join("wt-i42");
    let other = repository();
    let claim = |path: &Path| {
        dir.cmd("jkz")
            .args(["claim", "42", "--session", "pipeline-42", "--worktree"])
            .arg(path)
            .run()
    };
    for (path, why) in [
        (dir.join("wt/i42-typo"), "does not exist"),
        (dir.join("README"), "not a directory"),
        (other.path().to_path_buf(), "another repository"),
    ] {
        claim(&path).expect_code(2).one_line("jkz claim", why);
    }
    // Nothing was claimed by the refusals.
    let chats: Vec<Value> = serde_json::from_str(
        &dir.cmd("jkz")
            .args(["chats", "--json"])
            .run()
            .success()
            .stdout_str(),
    )
    .unwrap();
    assert!(
        chats
            .iter()
            .all(|c| c["claims"].as_array().is_none_or(Vec::is_empty)),
        "{chats:?}"
    );
    // A linked worktree of this repository is claimed.
    let run = claim(&worktree).success();
    assert!(
        run.stdout_str().contains("claimed issue 42 with worktree"),
        "{}",
        run.report()
    );
    let _ = std::fs::remove_dir_all(&worktree);
}

#[test]
fn max_output_bytes_zero_reached_the_wrong_process_in_the_docs() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/truncate.md"))
            .unwrap();
    assert!(
        !doc.contains("JKZ_MAX_OUTPUT_BYTES=0 run-builder"),
        "the old form"
    );
    let line = doc
        .lines()
        .find(|l| l.contains("JKZ_MAX_OUTPUT_BYTES=0 jkz-truncate"))
        .expect("the example sets the variable on jkz-truncate");
    // As the docs write it, with a builder whose output is over every cap.
    let dir = Dir::new();
    let script = line
        .split('#')
        .next()
        .unwrap()
        .replace("run-builder", "seq 1 200000");
    let out = Command::new("sh")
        .arg("-c")
        .arg(&script)
        .current_dir(dir.path())
        .env(
            "PATH",
            format!(
                "{}:/usr/bin:/bin",
                bin("jkz-truncate").parent().unwrap().display()
            ),
        )
        .env_remove("JKZ_MAX_OUTPUT_BYTES")
        .output()
        .unwrap();
    let whole = Command::new("seq").args(["1", "200000"]).output().unwrap();
    assert!(whole.stdout.len() > 1_000_000);
    assert_eq!(out.stdout, whole.stdout, "{script}: the output was cut");
}

#[test]
fn offload_marker_was_shown_relative_in_the_docs() {
    let dir = Dir::new();
    std::fs::create_dir(dir.join("state")).unwrap();
    let big: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
    let run = dir
        .cmd("jkz-truncate")
        .args(["--max-bytes", "2000"])
        .stdin(&big)
        .run()
        .success();
    let marker = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.split("full output: ").nth(1))
            .map(|p| p.trim_end_matches(']').to_string())
            .collect()
    };
    let real = marker(&run.stdout_str());
    assert_eq!(real.len(), 1, "{}", run.report());
    assert!(real[0].starts_with('/'), "{real:?}");
    assert!(Path::new(&real[0]).is_file());
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/truncate.md"))
            .unwrap();
    let shown = marker(&doc);
    assert!(!shown.is_empty());
    for path in shown {
        assert!(path.starts_with('/'), "docs/truncate.md shows {path}");
    }
}

#[test]
fn readme_ran_jkz_run_without_the_iteration_it_then_showed() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let command = |starts: &str| -> Vec<String> {
        let line = readme
            .lines()
            .find(|l| l.starts_with(starts))
            .unwrap_or_else(|| panic!("README: {starts}"));
        line.split('#')
            .next()
            .unwrap()
            .split_whitespace()
            .map(String::from)
            .collect()
    };
    let run_line = command("jkz run ");
    let show_line = command("jkz deliberations show ");
    let dir = repository();
    std::fs::create_dir(dir.join("state")).unwrap();
    let wrapper = dir.write(
        "codex-judge.sh",
        "#!/bin/sh\necho \"verdict for $1: PASS\"\n",
    );
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let args: Vec<String> = run_line[1..]
        .iter()
        .map(|a| {
            if a == "codex-judge.sh" {
                wrapper.display().to_string()
            } else {
                a.clone()
            }
        })
        .collect();
    dir.cmd("jkz").args(&args).run().success();
    let shown = dir.cmd("jkz").args(&show_line[1..]).run().success();
    assert_eq!(shown.stdout_str(), "verdict for 42: PASS\n");
}
