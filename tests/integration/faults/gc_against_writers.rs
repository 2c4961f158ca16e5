//! `jkz gc` against writers: it removes only what it judged.

use super::*;

use crate::util::{age, DAY};

/// Regression: gc picked its targets by modification time, scanned for
/// seconds, then removed them without looking again: a `jkz-session save`
/// in between reported success and was lost. Here the save comes exactly
/// between gc's judgement and its removal.
#[test]
fn gc_never_removes_a_session_record_saved_after_it_was_judged() {
    let dir = Dir::new();
    let state = dir.join("state");
    let save = |session: &str, decision: &str| {
        dir.cmd("jkz-session")
            .arg("--state-dir")
            .arg(&state)
            .args(["--session", session, "save"])
            .stdin(format!("## Decisions\n- {decision}\n"))
            .run()
            .success();
    };
    save("old", "first");
    save("new", "other");
    let record = state.join("session-snapshots/old.json");
    age(&record, DAY * 31);
    let judged = jkz::gc::plan(&state, SystemTime::now());
    assert!(
        judged.iter().any(|d| d.path == record),
        "the record is judged old: {judged:?}"
    );
    save("old", "saved while gc runs");
    for d in &judged {
        jkz::gc::remove_judged(d).unwrap();
    }
    let text = fs::read_to_string(&record).expect("the record saved after the judgement is kept");
    assert!(text.contains("saved while gc runs"), "{text}");
    // And a whole run of the real gc keeps it too (it is fresh now).
    dir.cmd("jkz")
        .arg("--state-dir")
        .arg(&state)
        .arg("gc")
        .run()
        .success();
    assert!(fs::read_to_string(&record)
        .unwrap()
        .contains("saved while gc runs"));
}

/// Regression: the reference scan read only the first 4 MiB of each recent
/// state file, so an offloaded file named further in was removed as
/// unreferenced (and the scan held all those MiB of every file at once).
#[test]
fn gc_keeps_an_offload_file_named_past_the_first_4_mib() {
    let dir = Dir::new();
    let state = dir.join("state");
    let name = format!("{}.md", "cd".repeat(32));
    let offload = dir.write(
        format!("state/context-offload/{name}"),
        "offloaded section\n",
    );
    let unnamed = dir.write(
        format!("state/context-offload/{}.md", "ef".repeat(32)),
        "nobody names me\n",
    );
    age(&offload, DAY * 8);
    age(&unnamed, DAY * 8);
    let mut snapshot = b"{\"pad\": \"".to_vec();
    snapshot.resize(5 << 20, b'x');
    snapshot
        .extend_from_slice(format!("\", \"ref\": \"state/context-offload/{name}\"}}").as_bytes());
    dir.write("state/pre-compact-20250101T000000.000Z-1.json", &snapshot);
    let run = dir
        .cmd("jkz")
        .arg("--state-dir")
        .arg(&state)
        .arg("gc")
        .run()
        .success();
    assert!(
        offload.exists(),
        "a referenced offload file removed\n{}",
        run.report()
    );
    assert!(!unnamed.exists(), "{}", run.report());
}

/// Regression: gc removed `.*.tmp` files in `state/pipeline/` and
/// `state/deliberations/`, which the README says it never touches. Now
/// `deliberations/` is left whole, and in `pipeline/` only the temp files
/// of jkz's own pipeline writer go.
#[test]
fn gc_leaves_deliberations_and_other_writers_temp_files_alone() {
    let dir = Dir::new();
    let state = dir.join("state");
    let kept = [
        "state/deliberations/.round-2.json.x81Kq0.tmp",
        "state/deliberations/.7.json.x81Kq0.tmp",
        "state/pipeline/.notes.md.x81Kq0.tmp",
        "state/pipeline/.7-compact-plan.md.x81Kq0.tmp",
    ];
    let removed = "state/pipeline/.7.json.x81Kq0.tmp";
    for rel in kept.iter().chain([&removed]) {
        let path = dir.write(rel, "partial");
        age(&path, Duration::from_secs(3600));
    }
    let run = dir
        .cmd("jkz")
        .arg("--state-dir")
        .arg(&state)
        .arg("gc")
        .run()
        .success();
    for rel in kept {
        assert!(dir.join(rel).exists(), "{rel} removed\n{}", run.report());
    }
    assert!(!dir.join(removed).exists(), "{}", run.report());
}
