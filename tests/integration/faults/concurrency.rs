//! 32 writers at once: no snapshot, nudge, field or note is lost.

use super::*;

/// One writer of a concurrent run.
enum Writer {
    PreCompact {
        session: String,
    },
    StateSet {
        issue: usize,
        field: String,
        value: String,
    },
    SessionSave {
        session: String,
        input: PathBuf,
    },
}

/// Starts every writer before waiting for any, then checks each exited 0
/// with nothing on stderr.
fn run_all(dir: &Dir, state: &Path, writers: &[Writer]) {
    let children: Vec<(String, Child)> = writers
        .iter()
        .map(|w| {
            let (shown, mut cmd, stdin) = match w {
                Writer::PreCompact { session } => {
                    let mut cmd = command("jkz-pre-compact", dir.path());
                    cmd.env("JKZ_STATE_DIR", state);
                    (
                        "jkz-pre-compact".to_string(),
                        cmd,
                        Some(pre_compact_event(dir.path(), session)),
                    )
                }
                Writer::StateSet {
                    issue,
                    field,
                    value,
                } => {
                    let mut cmd = command("jkz", dir.path());
                    cmd.arg("--state-dir")
                        .arg(state)
                        .args(["state", "set"])
                        .arg(issue.to_string())
                        .arg(field)
                        .arg(value);
                    (format!("jkz state set {issue} {field} {value}"), cmd, None)
                }
                Writer::SessionSave { session, input } => {
                    let mut cmd = command("jkz-session", dir.path());
                    cmd.arg("--state-dir")
                        .arg(state)
                        .args(["--session", session, "save"])
                        .arg(input);
                    (format!("jkz-session --session {session} save"), cmd, None)
                }
            };
            cmd.stderr(Stdio::piped());
            (shown, start(cmd, stdin.as_deref()))
        })
        .collect();
    for (shown, child) in children {
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && err.is_empty(),
            "{shown}: {}\n{err}",
            out.status
        );
    }
    let t = temps_under(state);
    assert!(t.is_empty(), "temp files after clean runs: {t:?}");
}

#[test]
fn concurrent_pre_compact_loses_no_snapshot() {
    let dir = Dir::new();
    let state = dir.join("state");
    for n in 1..=5 {
        crate::util::write_pipeline(&dir.join("state"), n, &pipeline_doc(n, 1024));
    }
    let writers: Vec<Writer> = (0..32)
        .map(|_| Writer::PreCompact {
            session: "s1".into(),
        })
        .collect();
    run_all(&dir, &state, &writers);
    assert_eq!(snapshots_valid(&state), 32, "a snapshot was lost");
    assert_eq!(
        record(&state, "s1")["compaction_count"],
        32,
        "a nudge was lost"
    );
}

/// A git that does not answer within the hook's 2 s must not make hooks of
/// one session lose their nudges to each other: the record's lock is taken
/// once git has answered or been given up on, and held for milliseconds.
#[test]
fn concurrent_pre_compact_with_slow_git_loses_no_nudge() {
    use std::os::unix::fs::PermissionsExt;
    let dir = Dir::new();
    let state = dir.join("state");
    crate::util::write_pipeline(&dir.join("state"), 1, &pipeline_doc(1, 1024));
    let shim = dir.join("slow-git/git");
    dir.write("slow-git/git", "#!/bin/sh\nexec sleep 4\n");
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = std::env::join_paths(std::iter::once(dir.join("slow-git")).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let event = pre_compact_event(dir.path(), "s1");
    let hooks: Vec<Child> = (0..4)
        .map(|_| {
            let mut cmd = command("jkz-pre-compact", dir.path());
            cmd.env("JKZ_STATE_DIR", &state)
                .env("PATH", &path)
                .stderr(Stdio::piped());
            start(cmd, Some(&event))
        })
        .collect();
    for hook in hooks {
        let out = hook.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && !err.contains("gave up"), "{err}");
    }
    assert_eq!(snapshots_valid(&state), 4, "a snapshot was lost");
    assert_eq!(
        record(&state, "s1")["compaction_count"],
        4,
        "a nudge was lost"
    );
    // The slow git was the one run (and given up on).
    let newest = &jkz::compaction::snapshot::list(&state)[0];
    let snap = parse_json(&state.join(newest)).unwrap();
    assert!(
        snap["git"]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("timed out"),
        "{}",
        snap["git"]
    );
}

#[test]
fn concurrent_state_set_loses_no_field() {
    let dir = Dir::new();
    let state = dir.join("state");
    // No state/pipeline/ yet: the writers also race to create it.
    let writers: Vec<Writer> = (0..32)
        .map(|k| Writer::StateSet {
            issue: 9,
            field: format!("field_{k}"),
            value: format!("value {k}"),
        })
        .collect();
    run_all(&dir, &state, &writers);
    let v = parse_json(&state.join("pipeline/9.json")).unwrap();
    for k in 0..32 {
        assert_eq!(
            v["9"][format!("field_{k}")],
            format!("value {k}"),
            "field_{k} lost"
        );
    }
}

#[test]
fn concurrent_session_saves_merge() {
    let dir = Dir::new();
    let state = dir.join("state");
    let mut writers = Vec::new();
    for k in 0..32 {
        let input = dir.write(
            format!("in/{k}.md"),
            format!("## Decisions\n- decision {k}\n\n## Next steps\n- step {k}\n"),
        );
        let session = if k % 2 == 0 {
            "shared".to_string()
        } else {
            format!("own-{k}")
        };
        writers.push(Writer::SessionSave { session, input });
    }
    run_all(&dir, &state, &writers);
    let shared = record(&state, "shared");
    assert_eq!(
        shared["saves"], 16,
        "a save into the shared session was lost"
    );
    let mut decisions = texts(&shared["notes"]["decisions"]);
    decisions.sort();
    let mut want: Vec<String> = (0..32)
        .step_by(2)
        .map(|k| format!("decision {k}"))
        .collect();
    want.sort();
    assert_eq!(decisions, want);
    // next_steps is replaced whole by each save: the last writer's, alone.
    let steps = texts(&shared["notes"]["next_steps"]);
    assert!(
        steps.len() == 1 && (0..32).step_by(2).any(|k| steps[0] == format!("step {k}")),
        "{steps:?}"
    );
    for k in (1..32).step_by(2) {
        let own = record(&state, &format!("own-{k}"));
        assert_eq!(own["saves"], 1);
        assert_eq!(texts(&own["notes"]["decisions"]), [format!("decision {k}")]);
    }
}

#[test]
fn concurrent_mixed_writers() {
    let dir = Dir::new();
    let state = dir.join("state");
    crate::util::write_pipeline(&dir.join("state"), 9, &pipeline_doc(9, 1024));
    let mut writers = Vec::new();
    let (mut hooks, mut sets, mut saves) = (0, 0, 0);
    for k in 0..32 {
        writers.push(match k % 3 {
            0 => {
                hooks += 1;
                Writer::PreCompact {
                    session: "mix".into(),
                }
            }
            1 => {
                sets += 1;
                Writer::StateSet {
                    issue: 9,
                    field: format!("field_{k}"),
                    value: format!("value {k}"),
                }
            }
            _ => {
                saves += 1;
                let input = dir.write(
                    format!("in/{k}.md"),
                    format!("## Decisions\n- decision {k}\n"),
                );
                Writer::SessionSave {
                    session: "mix".into(),
                    input,
                }
            }
        });
    }
    run_all(&dir, &state, &writers);
    assert_eq!(snapshots_valid(&state), hooks);
    let rec = record(&state, "mix");
    assert_eq!(rec["compaction_count"], hooks as u64, "a nudge was lost");
    assert_eq!(rec["saves"], saves as u64, "a save was lost");
    assert_eq!(texts(&rec["notes"]["decisions"]).len(), saves);
    let v = parse_json(&state.join("pipeline/9.json")).unwrap();
    let fields = (0..32)
        .filter(|k| k % 3 == 1)
        .filter(|k| v["9"][format!("field_{k}")] == format!("value {k}"))
        .count();
    assert_eq!(fields, sets, "a field was lost");
    assert_eq!(v["9"]["current_phase"], "building");
}
