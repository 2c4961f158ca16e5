//! Concurrency: locks and half-open circuits under real racing processes.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{bin, Dir};

/// `jkz --state-dir STATE ARGS…`, spawned, not waited for.
fn spawn(dir: &Dir, args: &[&str]) -> Child {
    let mut cmd = Command::new(bin("jkz"));
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy();
        if k.starts_with("CLAUDE") || k.starts_with("JKZ_") {
            cmd.env_remove(&key);
        }
    }
    cmd.current_dir(dir.path())
        .arg("--state-dir")
        .arg(dir.join("state"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn thirty_two_lock_racers_hold_it_one_at_a_time() {
    let dir = Dir::new();
    dir.write("inside", "0\n");
    dir.write("total", "0\n");
    // Each racer takes the lock, checks nobody else is inside, bumps the
    // shared counter (a lost update would show in the total), leaves.
    let script = format!(
        "set -e; j='{}'; \
         \"$j\" --state-dir state lock acquire pipeline 1 --owner \"racer-$1\" --wait 120 >/dev/null; \
         n=$(cat inside); [ \"$n\" = 0 ] || echo \"racer $1 saw $n inside\" >> violations; \
         echo 1 > inside; t=$(cat total); sleep 0.005; echo $((t + 1)) > total; echo 0 > inside; \
         \"$j\" --state-dir state lock release pipeline 1 --owner \"racer-$1\" >/dev/null",
        bin("jkz").display()
    );
    let racers: Vec<Child> = (0..32)
        .map(|i| {
            Command::new("sh")
                .current_dir(dir.path())
                .args(["-c", &script, "racer", &i.to_string()])
                .env_remove("JKZ_STATE_DIR")
                .spawn()
                .unwrap()
        })
        .collect();
    for mut r in racers {
        assert!(r.wait().unwrap().success());
    }
    assert!(
        !dir.join("violations").exists(),
        "{}",
        String::from_utf8_lossy(&dir.read("violations"))
    );
    assert_eq!(String::from_utf8_lossy(&dir.read("total")).trim(), "32");
    assert!(
        !dir.join("state/locks/pipeline-1.json").exists(),
        "released at the end"
    );
}

#[test]
fn sixteen_runs_racing_a_half_open_circuit_start_exactly_one_probe() {
    let dir = Dir::new();
    // Three failures open the circuit; with no cooldown the next run probes.
    for _ in 0..3 {
        let mut c = spawn(&dir, &["run", "--service", "codex", "--", "false"]);
        assert_eq!(c.wait().unwrap().code(), Some(1));
    }
    let status = std::fs::read_to_string(dir.join("state/circuit/codex.json")).unwrap();
    assert!(status.contains("\"open\""), "{status}");
    // The probe blocks until released, so every racer meets it half-open.
    let cmd = "echo $$ >> starts; while [ ! -e release ]; do sleep 0.02; done; echo answer";
    let mut runs: Vec<Child> = (0..16)
        .map(|_| {
            spawn(
                &dir,
                &[
                    "run",
                    "--service",
                    "codex",
                    "--cooldown",
                    "0",
                    "--",
                    "sh",
                    "-c",
                    cmd,
                ],
            )
        })
        .collect();
    let mut codes = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while codes.len() < 15 && Instant::now() < deadline {
        runs.retain_mut(|r| match r.try_wait().unwrap() {
            Some(status) => {
                codes.push(status.code());
                false
            }
            None => true,
        });
        std::thread::sleep(Duration::from_millis(10));
    }
    dir.write("release", "");
    for mut r in runs {
        codes.push(r.wait().unwrap().code());
    }
    let starts = String::from_utf8_lossy(&dir.read("starts")).lines().count();
    assert_eq!(starts, 1, "exactly one probe started CMD");
    codes.sort();
    let mut expected = vec![Some(75); 15];
    expected.insert(0, Some(0));
    assert_eq!(codes, expected);
    let status = std::fs::read_to_string(dir.join("state/circuit/codex.json")).unwrap();
    assert!(
        status.contains("\"closed\""),
        "the probe succeeded: {status}"
    );
}

#[test]
fn a_held_lock_stops_jkz_run_a_stranger_cannot_release_it_and_a_dead_holders_lock_is_reclaimed() {
    let dir = Dir::new();
    let jkz = |args: &[&str]| {
        dir.cmd("jkz")
            .arg("--state-dir")
            .arg(dir.join("state"))
            .args(args.iter().copied())
    };
    jkz(&["lock", "acquire", "pipeline", "42", "--owner", "alice"])
        .run()
        .success();
    let busy = jkz(&[
        "run",
        "--lock",
        "pipeline:42",
        "--",
        "sh",
        "-c",
        "echo started > ran",
    ])
    .run()
    .expect_code(76);
    assert!(!dir.join("ran").exists(), "{}", busy.report());
    assert!(busy.stderr_str().contains("alice"), "{}", busy.report());
    jkz(&["lock", "acquire", "pipeline", "42", "--owner", "bob"])
        .run()
        .expect_code(3);
    jkz(&["lock", "release", "pipeline", "42", "--owner", "bob"])
        .run()
        .expect_code(3);
    jkz(&["lock", "release", "pipeline", "42", "--owner", "alice"])
        .run()
        .success();
    // jkz run holds the lock while CMD runs, and releases it after.
    let inside = jkz(&[
        "run",
        "--lock",
        "pipeline:42",
        "--",
        "cat",
        "state/locks/pipeline-42.json",
    ])
    .run()
    .success();
    assert!(
        inside.stdout_str().contains("\"owner\": \"run:"),
        "{}",
        inside.report()
    );
    assert!(!dir.join("state/locks/pipeline-42.json").exists());
    // A lock taken by a script that has exited: its pid is gone, so the lock
    // is free for the next owner at once, TTL or not.
    let script = format!(
        "'{}' --state-dir state lock acquire worktree w1 --owner gone --ttl 3600",
        bin("jkz").display()
    );
    let status = Command::new("sh")
        .current_dir(dir.path())
        .args(["-c", &script])
        .env_remove("JKZ_STATE_DIR")
        .status()
        .unwrap();
    assert!(status.success());
    let listed = jkz(&["lock", "list"]).run().success();
    assert!(
        listed.stdout_str().contains("owner gone"),
        "{}",
        listed.report()
    );
    jkz(&["lock", "acquire", "worktree", "w1", "--owner", "next"])
        .run()
        .success();
}

#[test]
fn an_open_circuit_short_circuits_with_75_and_a_record_until_reset() {
    let dir = Dir::new();
    let jkz = |args: &[&str]| {
        dir.cmd("jkz")
            .arg("--state-dir")
            .arg(dir.join("state"))
            .args(args.iter().copied())
    };
    // An empty answer is a failure too.
    for cmd in ["exit 1", "true", "exit 2"] {
        jkz(&["run", "--service", "gemini", "--", "sh", "-c", cmd]).run();
    }
    let short = jkz(&[
        "run",
        "--service",
        "gemini",
        "--",
        "sh",
        "-c",
        "echo ran > ran",
    ])
    .run()
    .expect_code(75);
    assert!(!dir.join("ran").exists());
    assert_eq!(short.stderr_str().lines().count(), 1, "{}", short.report());
    let status = jkz(&["circuit", "status"]).run().success();
    assert!(status.stdout_str().contains("gemini") && status.stdout_str().contains("open"));
    let list = jkz(&["deliberations", "list"]).run().success();
    assert!(
        list.stdout_str().contains("short-circuited"),
        "{}",
        list.report()
    );
    // The wrapper's fallback: a smaller model, a 100 KiB cap.
    let big = "y".repeat(300_000);
    let file = dir.write("big.txt", &big);
    let fallback = jkz(&["run", "--mode", "fallback", "--", "cat"])
        .arg(&file)
        .run()
        .success();
    assert!(fallback.stdout().len() <= 102_400 && fallback.stdout().len() > 90_000);
    jkz(&["circuit", "reset", "gemini"]).run().success();
    jkz(&["run", "--service", "gemini", "--", "echo", "back"])
        .run()
        .success();
}

#[test]
fn lock_acquire_wait_inf_or_1e30_waits_without_a_deadline_instead_of_panicking() {
    let dir = Dir::new();
    for wait in ["inf", "1e30"] {
        let taken = dir
            .cmd("jkz")
            .arg("--state-dir")
            .arg(dir.join("state"))
            .args([
                "lock", "acquire", "pipeline", "7", "--owner", "me", "--wait", wait,
            ])
            .run()
            .success();
        assert!(taken.stderr_str().is_empty(), "{}", taken.report());
        dir.cmd("jkz")
            .arg("--state-dir")
            .arg(dir.join("state"))
            .args(["lock", "release", "pipeline", "7", "--owner", "me"])
            .run()
            .success();
    }
}

#[test]
fn an_open_circuit_without_a_readable_opening_time_lets_the_next_run_probe() {
    let dir = Dir::new();
    for (service, opened_at) in [("codex", None), ("gemini", Some("not a time"))] {
        let mut circuit = serde_json::json!({
            "service": service,
            "state": "open",
            "consecutive_failures": 3,
        });
        if let Some(t) = opened_at {
            circuit["opened_at"] = t.into();
        }
        dir.write(
            format!("state/circuit/{service}.json"),
            serde_json::to_vec(&circuit).unwrap(),
        );
        let probe = dir
            .cmd("jkz")
            .arg("--state-dir")
            .arg(dir.join("state"))
            .args(["run", "--service", service, "--", "echo", "answer"])
            .run()
            .success();
        assert_eq!(probe.stdout(), b"answer\n", "{}", probe.report());
        let after =
            std::fs::read_to_string(dir.join(format!("state/circuit/{service}.json"))).unwrap();
        assert!(after.contains("\"closed\""), "the probe succeeded: {after}");
    }
}

#[test]
fn jkz_run_lock_is_renewed_while_a_call_outlasts_its_ttl() {
    let dir = Dir::new();
    let mut long_call = Command::new(bin("jkz"))
        .current_dir(dir.path())
        .arg("--state-dir")
        .arg(dir.join("state"))
        .args(["run", "--lock", "pipeline:9", "--lock-ttl", "1", "--"])
        .args(["sh", "-c", "sleep 3; echo done"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Past the 1 s TTL, the call still running: the lock is still its.
    std::thread::sleep(Duration::from_millis(2200));
    let second = dir
        .cmd("jkz")
        .arg("--state-dir")
        .arg(dir.join("state"))
        .args(["lock", "acquire", "pipeline", "9", "--owner", "second"])
        .run()
        .expect_code(3);
    assert!(second.report().contains("run:"), "{}", second.report());
    assert!(long_call.wait().unwrap().success());
    assert!(!dir.join("state/locks/pipeline-9.json").exists());
}
