//! A full disk (a file-size limit, a tiny tmpfs): each writer fails with one
//! line and leaves every file as it was.

use super::*;
use crate::util::{Cmd, Run};

/// Runs `name args` through `sh` with `prelude` first (a limit), the
/// environment scrubbed by the harness, `stdin` fed.
fn run_sh(dir: &Dir, prelude: &str, name: &str, args: &[&std::ffi::OsStr], stdin: &[u8]) -> Run {
    Cmd::under_sh(prelude, name, dir.path())
        .args(args)
        .stdin(stdin)
        .run()
}

/// `ulimit -f` in dash counts 512-byte blocks: 64 is 32 KiB.
const FSIZE_LIMIT: &str = "trap '' XFSZ; ulimit -f 64;";

/// The error each writer gives when its write does not fit: `why` is the
/// OS's reason ("File too large" under RLIMIT_FSIZE, "No space left on
/// device" on a full filesystem). `prelude` sets the limit (or nothing,
/// when the filesystem itself is full). Old files must stay byte for byte.
fn disk_full_cases(dir: &Dir, state: &Path, prelude: &str, why: &str) {
    let st = state.as_os_str();
    let before = snapshot_tree(state);
    let unchanged = |what: &str| {
        let after = snapshot_tree(state);
        for (p, b) in &before {
            assert!(
                after.get(p) == Some(b),
                "{what}: {} changed or vanished",
                p.display()
            );
        }
        let t = temps_under(state);
        assert!(t.is_empty(), "{what}: temp files left: {t:?}");
        after
    };

    // jkz state set: exit 2, the pipeline file as it was.
    let big = "v".repeat(100 * 1024);
    run_sh(
        dir,
        prelude,
        "jkz",
        &[
            os("--state-dir"),
            st,
            os("state"),
            os("set"),
            os("7"),
            os("notes"),
            os(&big),
        ],
        b"",
    )
    .expect_code(2)
    .one_line("jkz state", why);
    let after = unchanged("state set");
    assert_eq!(after.len(), before.len());

    // jkz-session save: exit 1, the record as it was.
    let notes = json!({"decisions": (0..30).map(|k| format!("{k} {}", "d".repeat(4000))).collect::<Vec<_>>()});
    let input = dir.write("big-notes.json", notes.to_string());
    run_sh(
        dir,
        prelude,
        "jkz-session",
        &[
            os("--state-dir"),
            st,
            os("--session"),
            os("s1"),
            os("save"),
            input.as_os_str(),
        ],
        b"",
    )
    .expect_code(1)
    .one_line("jkz-session", why);
    let after = unchanged("session save");
    assert_eq!(after.len(), before.len());

    // jkz-compress: exit 4, stdout empty, no new offload.
    let doc = dir.write("big-doc.md", compress_doc(999_999));
    let ran = run_sh(
        dir,
        prelude,
        "jkz-compress",
        &[os("--state-dir"), st, doc.as_os_str()],
        b"",
    );
    let ran = ran.expect_code(4);
    ran.one_line("jkz-compress", why);
    assert!(
        ran.output.stdout.is_empty(),
        "compress printed half a document"
    );
    let after = unchanged("compress");
    assert_eq!(after.len(), before.len());

    // jkz-truncate: exit 0, the truncated output whole, a one-line warning,
    // no full output (neither whole nor half).
    let input = dir.write("big-input.txt", truncate_input(999_999));
    let ran = run_sh(
        dir,
        prelude,
        "jkz-truncate",
        &[
            os("--state-dir"),
            st,
            os("--max-bytes"),
            os("4096"),
            input.as_os_str(),
        ],
        b"",
    );
    let ran = ran.expect_code(0);
    ran.one_line("jkz-truncate", why);
    assert!(ran.output.stdout.starts_with(b"run 999999\n") && ran.output.stdout.len() <= 4096);
    let after = unchanged("truncate");
    assert_eq!(after.len(), before.len());

    // jkz-pre-compact: exit 0, the reason on stderr, the summarizer still
    // gets its instructions; old snapshots untouched, no new one.
    let event = pre_compact_event(dir.path(), "s1");
    let ran = run_sh(
        dir,
        &format!(
            "{prelude} JKZ_STATE_DIR='{}' export JKZ_STATE_DIR;",
            state.display()
        ),
        "jkz-pre-compact",
        &[],
        &event,
    );
    let ran = ran.expect_code(0);
    let err = ran.stderr_str();
    assert!(
        err.lines().all(|l| l.starts_with("jkz-pre-compact: "))
            && err
                .lines()
                .any(|l| l.contains("writing snapshot") && l.contains(why)),
        "{}: {err}",
        ran.shown
    );
    assert!(
        !ran.output.stdout.is_empty(),
        "no instructions for the summarizer"
    );
    let after = snapshot_tree(state);
    for (p, b) in &before {
        if name_of(p) == "s1.json" {
            // The nudge is small; if it fit, it counts the compaction and
            // names no snapshot.
            let v: Value = serde_json::from_slice(&after[p]).unwrap();
            if &after[p] != b {
                assert_eq!(v["last_pre_compact_snapshot"], Value::Null);
            }
        } else if name_of(p).ends_with(".jsonl") {
            // The event log is appended to, never rewritten: if the line
            // fit, it records the compaction, without a snapshot.
            let now = &after[p];
            assert!(now.starts_with(b), "pre-compact: {} rewritten", p.display());
            for line in now[b.len()..]
                .split(|&c| c == b'\n')
                .filter(|l| !l.is_empty())
            {
                let e: Value = serde_json::from_slice(line).unwrap();
                assert_eq!(
                    (e["type"].as_str(), &e["payload"]["snapshot"]),
                    (Some("session.compacted"), &Value::Null)
                );
            }
        } else {
            assert!(
                after.get(p) == Some(b),
                "pre-compact: {} changed",
                p.display()
            );
        }
    }
    assert_eq!(after.len(), before.len(), "pre-compact wrote a new file");
    assert!(temps_under(state).is_empty());
}

/// The files a disk-full run must leave intact: a pipeline, a session
/// record, a pre-compact snapshot, an offload.
fn seed_state(dir: &Dir, state: &Path, pipeline_filler: usize) {
    crate::util::write_pipeline(state, 7, &pipeline_doc(7, pipeline_filler));
    let st = state.as_os_str();
    let notes = dir.write("small-notes.md", "## Decisions\n- keep it small\n");
    run_sh(
        dir,
        "",
        "jkz-session",
        &[
            os("--state-dir"),
            st,
            os("--session"),
            os("s1"),
            os("save"),
            notes.as_os_str(),
        ],
        b"",
    )
    .expect_code(0);
    let event = pre_compact_event(dir.path(), "s1");
    run_sh(
        dir,
        &format!("JKZ_STATE_DIR='{}' export JKZ_STATE_DIR;", state.display()),
        "jkz-pre-compact",
        &[],
        &event,
    )
    .expect_code(0);
    let mut doc = String::from("# Small\n\n## One\n\n");
    while doc.len() < 17 * 1024 {
        doc.push_str("a line of a section just over the threshold\n");
    }
    let doc = dir.write("small-doc.md", doc);
    run_sh(
        dir,
        "",
        "jkz-compress",
        &[os("--state-dir"), st, doc.as_os_str()],
        b"",
    )
    .expect_code(0);
    assert_eq!(jkz::compaction::snapshot::list(state).len(), 1);
    assert_eq!(
        fs::read_dir(state.join("context-offload")).unwrap().count(),
        1
    );
}

#[test]
fn disk_full_by_file_size_limit() {
    let dir = Dir::new();
    let state = dir.join("state");
    // Pipeline data of 40 KiB: every snapshot is over the 32 KiB limit.
    seed_state(&dir, &state, 40 * 1024);
    disk_full_cases(&dir, &state, FSIZE_LIMIT, "File too large");
}

/// A tmpfs mounted for one test, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn disk_full_on_a_tiny_tmpfs() {
    let dir = Dir::new();
    let mount = dir.join("tiny");
    fs::create_dir(&mount).unwrap();
    let status = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs"])
        .arg(&mount)
        .stderr(Stdio::null())
        .status();
    if !status.is_ok_and(|s| s.success()) {
        crate::util::cannot_run("disk_full_on_a_tiny_tmpfs: mount -t tmpfs refused here (needs root); the RLIMIT_FSIZE variant ran");
        return;
    }
    let _mounted = Tmpfs(mount.clone());
    let state = mount.join("state");
    seed_state(&dir, &state, 1024);
    // Fill what is left, so the next data block written anywhere fails.
    let mut ballast = fs::File::create(mount.join("ballast")).unwrap();
    let chunk = vec![0u8; 4096];
    while ballast
        .write_all(&chunk)
        .and_then(|_| ballast.sync_all())
        .is_ok()
    {}
    disk_full_cases(&dir, &state, "", "No space left on device");
}
