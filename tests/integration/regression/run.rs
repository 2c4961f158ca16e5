//! Regression tests: run.
//!
//! `jkz run`'s process group, its signals and a closed stdout (issue 23),
//! and lock TTLs. The commands write the pids of what they start to files,
//! and each test proves those processes are gone; time bounds are generous
//! and only prove that nothing hangs.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use rustix::process::Signal;
use serde_json::Value;

use crate::util::{bin, scrubbed, Dir};

/// Longer than any of these runs takes; shorter than the bug made them.
const NO_HANG: Duration = Duration::from_secs(20);

/// `jkz --state-dir DIR/state` with the arguments.
fn jkz(dir: &Dir) -> crate::util::Cmd {
    dir.cmd("jkz").arg("--state-dir").arg(dir.join("state"))
}

/// The same, as a raw command, for runs a test must signal or read from.
fn jkz_command(dir: &Dir) -> Command {
    let mut cmd = scrubbed(bin("jkz"), dir.path());
    cmd.arg("--state-dir").arg(dir.join("state"));
    cmd
}

/// Whether the process `pid` is gone: no longer in `/proc`, or a zombie
/// (it will never run again).
fn gone(pid: u32) -> bool {
    assert!(
        Path::new("/proc/self/stat").exists(),
        "these tests read /proc to prove processes are gone; this system has none"
    );
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            let state = stat[stat.rfind(')').unwrap() + 1..]
                .split_whitespace()
                .next();
            matches!(state, Some("Z" | "X"))
        }
    }
}

/// The pid a command wrote to `name`, waiting for it to be written.
fn pid_in(dir: &Dir, name: &str) -> u32 {
    let path = dir.join(name);
    let start = Instant::now();
    loop {
        if let Some(pid) = std::fs::read_to_string(&path)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            start.elapsed() < NO_HANG,
            "{} was never written",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits for `child`, failing past [`NO_HANG`] (after killing it and the
/// processes `also`, so a failure leaves nothing running).
fn wait_bounded(child: &mut Child, what: &str, also: &[u32]) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > NO_HANG {
            let _ = child.kill();
            for pid in also {
                crate::util::signal(*pid, Signal::TERM);
            }
            panic!("{what} did not end within {NO_HANG:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The deliberation records, parsed.
fn records(dir: &Dir) -> Vec<Value> {
    let mut names: Vec<_> = std::fs::read_dir(dir.join("state/deliberations"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    names.sort();
    names
        .iter()
        .map(|p| serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap())
        .collect()
}

/// The state of the lock `kind name` in `jkz lock list --json` (`None`: no
/// such lock).
fn lock_state(dir: &Dir, kind: &str, name: &str) -> Option<String> {
    let listed = jkz(dir).args(["lock", "list", "--json"]).run().success();
    let locks: Value = serde_json::from_slice(listed.stdout()).unwrap();
    locks
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["kind"] == kind && l["name"] == name)
        .map(|l| l["state"].as_str().unwrap().to_string())
}

#[test]
fn timeout_ends_the_whole_process_group() {
    // Was: only sh was killed; the background sleep ran on, holding the
    // pipe, and jkz waited for it (60 s here).
    let dir = Dir::new();
    let started = Instant::now();
    let r = jkz(&dir)
        .args(["run", "--timeout", "1", "--", "sh", "-c"])
        .arg("sleep 60 & echo $! > bg; echo $$ > cmd; echo started; sleep 60")
        .run()
        .expect_code(124);
    assert!(started.elapsed() < NO_HANG, "{}", r.report());
    assert!(gone(pid_in(&dir, "cmd")), "CMD runs on\n{}", r.report());
    assert!(gone(pid_in(&dir, "bg")), "its background job runs on");
    assert_eq!(r.stdout_str(), "started\n", "what was read is printed");
    assert!(r.stderr_str().contains("--timeout 1s"), "{}", r.report());
    let recs = records(&dir);
    assert_eq!(recs[0]["status"], "timeout");
    assert_eq!(recs[0]["response"], "started\n");
}

#[test]
fn timeout_does_not_wait_for_a_pipe_held_outside_the_group() {
    // A process that left CMD's group keeps CMD's stdout open: it is not
    // CMD's any more, and jkz does not wait for it.
    let dir = Dir::new();
    let started = Instant::now();
    let r = jkz(&dir)
        .args(["run", "--timeout", "1", "--", "sh", "-c"])
        .arg("setsid sh -c 'echo $$ > escaped; exec sleep 60' 2>/dev/null & sleep 60")
        .run();
    let escaped = pid_in(&dir, "escaped");
    crate::util::signal(escaped, Signal::TERM);
    r.expect_code(124);
    assert!(started.elapsed() < NO_HANG);
}

#[test]
fn lock_is_held_until_the_group_is_gone() {
    // Was: the lock was released as soon as CMD was killed, while the rest
    // of its group still worked. Here a background job (nothing holds CMD's
    // stdout) that ignores SIGTERM tries to take the lock every 50 ms until
    // SIGKILL ends it: every try must be refused (exit 3), and after the
    // run the lock is free.
    let dir = Dir::new();
    std::fs::create_dir_all(dir.join("state")).unwrap();
    let script = r#"
        (trap '' TERM
         sh -c 'echo $PPID' > stubborn
         n=0
         while [ $n -lt 200 ]; do
           "$JKZ" --state-dir "$STATE" lock acquire pipeline 51 --owner intruder >/dev/null
           echo $? >> tries
           n=$((n + 1))
           sleep 0.05
         done) >/dev/null &
        exec sleep 60 >/dev/null
    "#;
    let r = jkz(&dir)
        .env("JKZ", bin("jkz"))
        .env("STATE", dir.join("state"))
        .args(["run", "--timeout", "1", "--lock", "pipeline:51", "--"])
        .args(["sh", "-c", script])
        .run()
        .expect_code(124);
    assert!(gone(pid_in(&dir, "stubborn")), "{}", r.report());
    let tries = String::from_utf8(dir.read("tries")).unwrap();
    assert!(!tries.is_empty());
    assert!(
        tries.lines().all(|code| code == "3"),
        "the lock was taken while CMD's group ran: {tries:?}"
    );
    assert_eq!(lock_state(&dir, "pipeline", "51"), None, "released after");
}

#[test]
fn sigterm_is_forwarded_and_recorded() {
    // Was: SIGTERM (or SIGINT, SIGHUP) killed jkz alone; CMD ran on, no
    // record was written, and the lock read "owner gone" beside it.
    let dir = Dir::new();
    std::fs::create_dir_all(dir.join("state")).unwrap();
    for (signal, sent_signal, number) in [
        ("TERM", Signal::TERM, 15),
        ("INT", Signal::INT, 2),
        ("HUP", Signal::HUP, 1),
    ] {
        for f in ["bg", "cmd"] {
            let _ = std::fs::remove_file(dir.join(f));
        }
        let mut child = jkz_command(&dir)
            .args(["run", "--lock", "pipeline:52", "--", "sh", "-c"])
            .arg("sleep 60 & echo $! > bg; echo partial; echo $$ > cmd; wait")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (cmd, bg) = (pid_in(&dir, "cmd"), pid_in(&dir, "bg"));
        assert_eq!(lock_state(&dir, "pipeline", "52").as_deref(), Some("held"));
        assert!(crate::util::signal(child.id(), sent_signal));
        let status = wait_bounded(
            &mut child,
            &format!("jkz run after SIG{signal}"),
            &[cmd, bg],
        );
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        assert_eq!(status.code(), Some(128 + number), "SIG{signal}: {stderr}");
        assert!(
            stderr.contains(&format!("SIG{signal} received")),
            "{stderr}"
        );
        assert!(
            gone(cmd) && gone(bg),
            "CMD's group runs on after SIG{signal}"
        );
        assert_eq!(lock_state(&dir, "pipeline", "52"), None, "released after");
        let recs = records(&dir);
        let last = recs.last().unwrap();
        assert_eq!(last["status"], "interrupted", "{last}");
        assert_eq!(last["signal"], format!("SIG{signal}"), "{last}");
        assert_eq!(last["response"], "partial\n", "what was read is kept");
    }
    assert_eq!(records(&dir).len(), 3);
}

#[test]
fn closed_stdout_stops_jkz_run() {
    // Was: `jkz run -- yes | head -1` read on after head was gone; the kept
    // copy grew by hundreds of MB a second.
    let dir = Dir::new();
    std::fs::create_dir_all(dir.join("state")).unwrap();
    let mut child = jkz_command(&dir)
        .args(["run", "--", "sh", "-c", "echo $$ > cmd; exec yes"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let cmd = pid_in(&dir, "cmd");
    // Once jkz has read past the cap (its copy of the answer is on disk),
    // the reader goes away.
    let offload = dir.join("state/context-offload");
    let start = Instant::now();
    while std::fs::read_dir(&offload).map_or(true, |mut d| d.next().is_none()) {
        assert!(start.elapsed() < NO_HANG, "jkz run never kept a copy");
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(child.stdout.take());
    let status = wait_bounded(&mut child, "jkz run with its stdout closed", &[cmd]);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(
        status.code(),
        Some(0),
        "a broken pipe is a normal end: {stderr}"
    );
    assert_eq!(stderr, "", "and says nothing");
    assert!(gone(cmd), "CMD runs on");
    let recs = records(&dir);
    assert_eq!(recs[0]["status"], "interrupted");
    let why = recs[0]["response_incomplete"].as_str().unwrap();
    assert!(why.contains("stdout was closed"), "{why}");
    let kept = recs[0]["response_bytes"].as_u64().unwrap();
    assert!(kept > 307_200, "what was read is kept: {kept} bytes");
    let file = dir
        .join("state")
        .join(recs[0]["response_file"].as_str().unwrap());
    let answer = std::fs::read(file).unwrap();
    assert_eq!(answer.len() as u64, kept);
    assert!(answer.chunks(2).all(|c| c == b"y\n" || c == b"y"));

    // Passed through (--max-bytes 0): head gets its line, then leaves.
    let piped = format!(
        "'{}' --state-dir '{}' run --max-bytes 0 -- yes | head -1",
        bin("jkz").display(),
        dir.join("state").display()
    );
    let mut child = scrubbed("sh", dir.path())
        .args(["-c", &piped])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(wait_bounded(&mut child, "jkz run … | head -1", &[]).success());
    assert_eq!(out, "y\n");
}

#[test]
fn closed_stdout_stops_jkz_truncate() {
    // Was: `yes | jkz-truncate | head -1` read (and kept) on for nobody.
    // Here the input never ends; the reader of stdout goes away.
    let dir = Dir::new();
    std::fs::create_dir_all(dir.join("state")).unwrap();
    let mut child = scrubbed(bin("jkz-truncate"), dir.path())
        .arg("--state-dir")
        .arg(dir.join("state"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = Vec::new();
    for i in 0..100_000 {
        input.extend_from_slice(format!("line {i} of an endless input\n").as_bytes());
    }
    let mut stdin = child.stdin.take().unwrap();
    // Written whole: jkz-truncate has read all but its pipe's worth of it.
    stdin.write_all(&input).unwrap();
    drop(child.stdout.take());
    let status = wait_bounded(&mut child, "jkz-truncate with its stdout closed", &[]);
    drop(stdin);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(
        status.code(),
        Some(0),
        "a broken pipe is a normal end: {stderr}"
    );
    assert_eq!(stderr, "");
    let offload = dir.join("state/context-offload");
    let kept: Vec<_> = std::fs::read_dir(&offload).unwrap().flatten().collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    let name = kept[0].file_name().to_string_lossy().into_owned();
    assert!(
        name.starts_with("full-") && name.ends_with("-incomplete.txt"),
        "{name}"
    );
    let bytes = std::fs::read(kept[0].path()).unwrap();
    assert!(bytes.len() > 307_200, "more than the cap was read");
    assert!(input.starts_with(&bytes), "what was read, as it was read");

    // Passed through (--max-bytes 0): head gets its line, then leaves.
    let piped = format!(
        "yes | '{}' --max-bytes 0 | head -1",
        bin("jkz-truncate").display()
    );
    let mut child = scrubbed("sh", dir.path())
        .args(["-c", &piped])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(wait_bounded(&mut child, "yes | jkz-truncate | head -1", &[]).success());
    assert_eq!(out, "y\n");
}

#[test]
fn timeout_nan_is_a_usage_error() {
    // Was: `--timeout nan` was taken as 0, `inf` as no timeout.
    let dir = Dir::new();
    for bad in [
        "nan", "NaN", "inf", "-inf", "infinity", "-1", "-0.5", "soon",
    ] {
        let r = jkz(&dir)
            .arg("run")
            .arg(format!("--timeout={bad}"))
            .args(["--", "sh", "-c", "touch started"])
            .run()
            .expect_code(2);
        assert!(r.stderr_str().contains(bad), "{}", r.report());
        assert!(
            !dir.join("started").exists(),
            "CMD ran with --timeout {bad}"
        );
    }
    jkz(&dir)
        .args(["run", "--timeout", "0.5", "--", "true"])
        .run()
        .success();
}

#[test]
fn lock_ttl_past_year_9999_is_not_instantly_expired() {
    // Was: the expiry was stamped as year +262143, which the reader
    // rejects: the lock read as expired at once and a second owner took it.
    let dir = Dir::new();
    std::fs::create_dir_all(dir.join("state")).unwrap();
    jkz(&dir)
        .args(["lock", "acquire", "pipeline", "61", "--owner", "a"])
        .args(["--ttl", "300000000000"])
        .run()
        .success();
    assert_eq!(lock_state(&dir, "pipeline", "61").as_deref(), Some("held"));
    jkz(&dir)
        .args(["lock", "acquire", "pipeline", "61", "--owner", "b"])
        .run()
        .expect_code(3);

    let script = r#""$JKZ" --state-dir "$STATE" lock acquire pipeline 62 --owner b; echo $? > got"#;
    jkz(&dir)
        .env("JKZ", bin("jkz"))
        .env("STATE", dir.join("state"))
        .args(["run", "--lock", "pipeline:62", "--lock-ttl", "300000000000"])
        .args(["--", "sh", "-c", script])
        .run()
        .success();
    assert_eq!(dir.read("got"), b"3\n", "a second owner took the lock");
}

/// A warning raised inside `jkz run` (an invalid `JKZ_MAX_OUTPUT_BYTES`)
/// named `jkz-truncate`, a program the user never started. It names the
/// program that is running.
#[test]
fn warnings_inside_jkz_run_said_jkz_truncate() {
    let dir = Dir::new();
    let run = jkz(&dir)
        .env("JKZ_MAX_OUTPUT_BYTES", "abc")
        .args(["run", "--", "echo", "hi"])
        .run()
        .success();
    let stderr = run.stderr_str();
    assert!(
        stderr.contains("jkz run: warning: JKZ_MAX_OUTPUT_BYTES="),
        "{}",
        run.report()
    );
    assert!(!stderr.contains("jkz-truncate"), "{}", run.report());
}
