//! `kill -9` during each kind of write: every file under `state/` parses
//! and is the old or the new version afterwards.

use super::*;

/// A pre-compact snapshot or session record: JSON, whole, of its kind.
fn valid_compaction_file(path: &Path, pipelines: usize) -> Result<(), String> {
    let v = parse_json(path)?;
    let name = name_of(path);
    if name.starts_with("pre-compact-") {
        if v["jkz_snapshot"] != 1 {
            return Err("no jkz_snapshot".into());
        }
        let n = v["pipelines"].as_array().map_or(0, Vec::len);
        if n != pipelines {
            return Err(format!("{n} pipelines, expected {pipelines}"));
        }
    } else if path.parent().map(name_of).as_deref() == Some("session-snapshots") {
        if !v["compaction_count"].is_u64() {
            return Err("no compaction_count".into());
        }
    } else if path.parent().map(name_of).as_deref() == Some("pipeline") {
        // Read, never written, by the hook.
    } else {
        return Err("unexpected file".into());
    }
    Ok(())
}

#[test]
fn kill_during_pre_compact_snapshot() {
    let mut rng = Rng::from_env("kill_during_pre_compact_snapshot");
    let dir = Dir::new();
    let state = dir.join("state");
    const PIPELINES: usize = 40;
    for n in 1..=PIPELINES {
        crate::util::write_pipeline(&dir.join("state"), n, &pipeline_doc(n, 8 * 1024));
    }
    let record = state.join("session-snapshots/s1.json");
    let event = pre_compact_event(dir.path(), "s1");
    let spawn = |_: usize| {
        let mut cmd = command("jkz-pre-compact", dir.path());
        cmd.env("JKZ_STATE_DIR", &state);
        start(cmd, Some(&event))
    };
    let window = time_run(spawn(0));
    let mut count = 1;
    let mut seen = std::collections::BTreeSet::new();
    let runs = 160 * rounds();
    let stats = kill_loop(&mut rng, runs, window, spawn, |i, _| {
        let temps = survey(&state, |p| valid_compaction_file(p, PIPELINES));
        // No snapshot is ever lost: all are fresh, so retention keeps all.
        let now: std::collections::BTreeSet<String> = jkz::compaction::snapshot::list(&state)
            .into_iter()
            .collect();
        assert!(now.is_superset(&seen), "run {i}: a snapshot disappeared");
        seen = now;
        let rec = parse_json(&record).unwrap();
        let now = rec["compaction_count"].as_u64().unwrap();
        assert!(
            now == count || now == count + 1,
            "run {i}: compaction_count {now}, was {count}: neither old nor new"
        );
        count = now;
        // The nudge comes after the snapshot: the one it names is there.
        if let Some(snap) = rec["last_pre_compact_snapshot"].as_str() {
            assert!(state.join(snap).is_file(), "run {i}: {snap} missing");
        }
        temps
    });
    let snapshots = jkz::compaction::snapshot::list(&state).len() as u64;
    assert!(
        snapshots >= count,
        "{snapshots} snapshots for {count} nudges"
    );
    let temps = gc_cleans_temps(&dir, &state);
    report("pre-compact", &stats, temps);
    // Lock files left by killed runs do not block the next one.
    assert!(time_run(spawn(0)) < Duration::from_secs(10));
    let rec = parse_json(&record).unwrap();
    assert_eq!(rec["compaction_count"].as_u64(), Some(count + 1));
    assert!(stats.killed >= runs / 2, "{stats:?}");
}

#[test]
fn kill_during_state_set() {
    let mut rng = Rng::from_env("kill_during_state_set");
    let dir = Dir::new();
    let state = dir.join("state");
    let path = state.join("pipeline/7.json");
    let ballast = "b".repeat(1 << 20);
    let mut doc = pipeline_doc(7, 0);
    doc["7"]["ballast"] = json!(ballast);
    doc["7"]["current_phase"] = json!("phase-start");
    doc["unknown_sibling"] = json!({"kept": [1, 2, 3]});
    dir.write(
        "state/pipeline/7.json",
        serde_json::to_vec_pretty(&doc).unwrap(),
    );
    let spawn = |i: usize| {
        let mut cmd = command("jkz", dir.path());
        cmd.args(["--state-dir"])
            .arg(&state)
            .args(["state", "set", "7", "current_phase"])
            .arg(format!("phase-{i}"));
        start(cmd, None)
    };
    let window = time_run(spawn(0));
    let mut old_bytes = fs::read(&path).unwrap();
    let mut old_phase = "phase-0".to_string();
    let runs = 150 * rounds();
    let stats = kill_loop(
        &mut rng,
        runs,
        window,
        |i| spawn(i + 1),
        |i, _| {
            let new = format!("phase-{}", i + 1);
            let temps = survey(&state, |p| parse_json(p).map(|_| ()));
            let bytes = fs::read(&path).unwrap();
            let v: Value = serde_json::from_slice(&bytes).unwrap();
            let phase = v["7"]["current_phase"].as_str().unwrap().to_string();
            if phase == old_phase {
                assert!(
                    bytes == old_bytes,
                    "run {i}: old value but not the old file"
                );
            } else {
                assert_eq!(phase, new, "run {i}: neither the old value nor the new");
                // One write: both stamps from it, everything else as it was.
                assert_eq!(v["7"]["last_updated"], v["lastActivity"], "run {i}");
                assert_eq!(v["7"]["ballast"].as_str(), Some(ballast.as_str()));
                assert_eq!(v["unknown_sibling"]["kept"][2], 3);
                old_phase = phase;
                old_bytes = bytes;
            }
            temps
        },
    );
    let temps = gc_cleans_temps(&dir, &state);
    report("state set", &stats, temps);
    let out = dir
        .cmd("jkz")
        .arg("--state-dir")
        .arg(&state)
        .args(["state", "set", "7", "current_phase", "after"])
        .run();
    out.success();
    assert!(stats.killed >= runs / 2, "{stats:?}");
}

/// Session save input: one big decision (so the record is large and the
/// write takes a while) and a next step, both naming the run.
fn save_input(i: usize) -> String {
    json!({
        "decisions": [format!("d-{i} {}", "w".repeat(3900))],
        "next_steps": format!("n-{i}"),
    })
    .to_string()
}

#[test]
fn kill_during_session_save() {
    let mut rng = Rng::from_env("kill_during_session_save");
    let dir = Dir::new();
    let state = dir.join("state");
    let record = state.join("session-snapshots/s1.json");
    let runs = 150 * rounds();
    for i in 0..=101 + runs {
        dir.write(format!("in/{i}.json"), save_input(i));
    }
    let spawn = |i: usize| {
        let mut cmd = command("jkz-session", dir.path());
        cmd.arg("--state-dir")
            .arg(&state)
            .args(["--session", "s1", "save"])
            .arg(dir.join(format!("in/{i}.json")));
        start(cmd, None)
    };
    // Fill the record to its item bound so each save writes ~400 KB.
    for i in 0..100 {
        assert!(spawn(i).wait().unwrap().success());
    }
    let window = time_run(spawn(100));
    let mut old_bytes = fs::read(&record).unwrap();
    let runs = 150 * rounds();
    let stats = kill_loop(
        &mut rng,
        runs,
        window,
        |i| spawn(101 + i),
        |i, _| {
            let temps = survey(&state, |p| parse_json(p).map(|_| ()));
            let bytes = fs::read(&record).unwrap();
            if bytes == old_bytes {
                return temps;
            }
            let old: Value = serde_json::from_slice(&old_bytes).unwrap();
            let new: Value = serde_json::from_slice(&bytes)
                .unwrap_or_else(|e| panic!("run {i}: record is not JSON: {e}"));
            assert_eq!(new["saves"], old["saves"].as_u64().unwrap() + 1, "run {i}");
            // The merge rule: the new item in front, the older ones after it
            // (a repeated one moves, the oldest drop at the bound); next_steps
            // replaced whole. Items compared by their `d-N` tag.
            let tags = |v: &Value| -> Vec<String> {
                v["notes"]["decisions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| {
                        d["text"]
                            .as_str()
                            .unwrap()
                            .split(' ')
                            .next()
                            .unwrap()
                            .to_string()
                    })
                    .collect()
            };
            let n = 101 + i;
            let tag = format!("d-{n}");
            let mut want = vec![tag.clone()];
            want.extend(tags(&old).into_iter().filter(|t| *t != tag));
            want.truncate(jkz::session::notes::MAX_ITEMS);
            assert_eq!(tags(&new), want, "run {i}");
            let steps = texts(&new["notes"]["next_steps"]);
            assert_eq!(steps, [format!("n-{n}")], "run {i}");
            old_bytes = bytes;
            temps
        },
    );
    let temps = gc_cleans_temps(&dir, &state);
    report("session save", &stats, temps);
    assert!(spawn(0).wait().unwrap().success());
    assert!(stats.killed >= runs / 2, "{stats:?}");
}

#[test]
fn kill_during_compress_offload() {
    let mut rng = Rng::from_env("kill_during_compress_offload");
    let dir = Dir::new();
    let state = dir.join("state");
    let runs = 140 * rounds();
    for i in 0..=runs {
        dir.write(format!("doc/{i}.md"), compress_doc(i));
    }
    let spawn = |i: usize| {
        let mut cmd = command("jkz-compress", dir.path());
        cmd.arg("--state-dir")
            .arg(&state)
            .arg(dir.join(format!("doc/{i}.md")));
        start(cmd, None)
    };
    let window = time_run(spawn(0));
    let offload = |p: &Path| -> Result<(), String> {
        let name = name_of(p);
        let Some(hex) = name.strip_suffix(".md") else {
            return Err("unexpected file".into());
        };
        let bytes = fs::read(p).map_err(|e| e.to_string())?;
        if sha256_hex(&bytes) != hex {
            return Err(format!(
                "content ({} bytes) does not hash to its name",
                bytes.len()
            ));
        }
        Ok(())
    };
    let stats = kill_loop(
        &mut rng,
        runs,
        window,
        |i| spawn(i + 1),
        |_, _| survey(&state, offload),
    );
    let temps = gc_cleans_temps(&dir, &state);
    report("compress offload", &stats, temps);
    // Whatever a kill left, a rerun completes the store and restores whole.
    let doc = compress_doc(runs);
    let out = dir
        .cmd("jkz-compress")
        .arg("--state-dir")
        .arg(&state)
        .arg(dir.join(format!("doc/{runs}.md")))
        .run()
        .success();
    let back = dir
        .cmd("jkz-compress")
        .arg("--state-dir")
        .arg(&state)
        .arg("--restore")
        .stdin(out.stdout())
        .run()
        .success();
    assert_eq!(back.stdout(), doc.as_bytes());
    assert!(stats.killed >= runs / 2, "{stats:?}");
}

#[test]
fn kill_during_truncate_full_output() {
    let mut rng = Rng::from_env("kill_during_truncate_full_output");
    let dir = Dir::new();
    let state = dir.join("state");
    let runs = 140 * rounds();
    for i in 0..=runs {
        dir.write(format!("in/{i}.txt"), truncate_input(i));
    }
    let spawn = |i: usize| {
        let mut cmd = command("jkz-truncate", dir.path());
        cmd.arg("--state-dir")
            .arg(&state)
            .args(["--max-bytes", "4096"])
            .arg(dir.join(format!("in/{i}.txt")));
        start(cmd, None)
    };
    let window = time_run(spawn(0));
    let mut complete = 0;
    let full_output = |p: &Path, complete: &mut usize| -> Result<(), String> {
        let name = name_of(p);
        if !(name.starts_with("full-") && name.ends_with(".txt")) {
            return Err("unexpected file".into());
        }
        let bytes = fs::read(p).map_err(|e| e.to_string())?;
        let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
        let run: usize = std::str::from_utf8(first)
            .ok()
            .and_then(|l| l.strip_prefix("run "))
            .and_then(|n| n.parse().ok())
            .ok_or("no run header")?;
        if bytes != truncate_input(run) {
            return Err(format!("incomplete: {} bytes", bytes.len()));
        }
        *complete += 1;
        // Checked: remove it, so the disk holds one run's worth at a time.
        fs::remove_file(p).map_err(|e| e.to_string())
    };
    let stats = kill_loop(
        &mut rng,
        runs,
        window,
        |i| spawn(i + 1),
        |_, _| survey(&state, |p| full_output(p, &mut complete)),
    );
    let temps = gc_cleans_temps(&dir, &state);
    report("truncate full output", &stats, temps);
    eprintln!("truncate: {complete} complete full outputs checked");
    assert!(stats.killed >= runs / 2, "{stats:?}");
}
