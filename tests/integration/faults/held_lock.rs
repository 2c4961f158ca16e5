//! Regressions: a writer that found its lock held hung (`jkz-pre-compact`)
//! or failed without saying why.

use super::*;

/// Waits for `child` up to `limit`; kills it and fails when it takes longer.
fn wait_at_most(mut child: Child, limit: Duration, what: &str) -> std::process::Output {
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {limit:?} (hung on the lock)");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

/// Broke: a writer frozen while holding a session record's lock (a
/// `jkz-session save` stopped with ^Z, a process stuck on a slow disk) made
/// `jkz-pre-compact` wait for it forever, holding up compaction until the
/// client's hook timeout. The hook now waits a bounded time, skips the
/// nudge with a one-line reason, and still writes its snapshot.
#[test]
fn pre_compact_does_not_hang_on_a_held_session_lock() {
    let dir = Dir::new();
    let state = dir.join("state");
    fs::create_dir_all(state.join("session-snapshots")).unwrap();
    let record = state.join("session-snapshots/s1.json");
    fs::write(&record, r#"{"session_id":"s1","compaction_count":4}"#).unwrap();
    let held = jkz::json_file::lock(&record).unwrap();
    let mut cmd = command("jkz-pre-compact", dir.path());
    cmd.env("JKZ_STATE_DIR", &state)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = start(cmd, Some(&pre_compact_event(dir.path(), "s1")));
    let out = wait_at_most(child, Duration::from_secs(15), "jkz-pre-compact");
    drop(held);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("jkz-pre-compact: updating the session record of s1:")
            && err.contains("lock"),
        "{err}"
    );
    assert!(!out.stdout.is_empty());
    assert_eq!(
        snapshots_valid(&state),
        1,
        "the snapshot must not wait on the record"
    );
    assert_eq!(
        fs::read(&record).unwrap(),
        br#"{"session_id":"s1","compaction_count":4}"#
    );
}

/// Broke (same cause): `jkz-session save` and `jkz state set` waited forever
/// on a held lock. They now give up after a bounded wait with a one-line
/// error naming the lock file, exit code 1 and 2 as documented, file intact.
#[test]
fn writers_give_up_on_a_held_lock_with_a_clear_error() {
    let dir = Dir::new();
    let state = dir.join("state");
    crate::util::write_pipeline(&dir.join("state"), 7, &pipeline_doc(7, 10));
    dir.write("state/session-snapshots/s1.json", r#"{"session_id":"s1"}"#);
    let pipeline = state.join("pipeline/7.json");
    let record = state.join("session-snapshots/s1.json");
    let _a = jkz::json_file::lock(&pipeline).unwrap();
    let _b = jkz::json_file::lock(&record).unwrap();
    let before = snapshot_tree(&state);
    let mut set = command("jkz", dir.path());
    set.env("JKZ_LOCK_WAIT_MS", "300")
        .arg("--state-dir")
        .arg(&state)
        .args(["state", "set", "7", "current_phase", "x"])
        .stderr(Stdio::piped());
    let out = wait_at_most(start(set, None), Duration::from_secs(15), "jkz state set");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.lines().count() == 1 && err.starts_with("jkz state: ") && err.contains(".7.json.lock"),
        "{err}"
    );
    let notes = dir.write("n.md", "## Decisions\n- d\n");
    let mut save = command("jkz-session", dir.path());
    save.env("JKZ_LOCK_WAIT_MS", "300")
        .arg("--state-dir")
        .arg(&state)
        .args(["--session", "s1", "save"])
        .arg(&notes)
        .stderr(Stdio::piped());
    let out = wait_at_most(
        start(save, None),
        Duration::from_secs(15),
        "jkz-session save",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.lines().count() == 1
            && err.starts_with("jkz-session: ")
            && err.contains(".s1.json.lock"),
        "{err}"
    );
    assert_eq!(snapshot_tree(&state), before);
}
