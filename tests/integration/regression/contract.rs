//! Regression tests: contract.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::util::{bin, Dir, BINARIES};

fn checkout_file(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The binary list had four versions: `doctor` and `install` knew 6 of the
/// 8 binaries, and the `--help` test skipped `jkz-post-tool-use` and
/// `jkz-chat`. One list now, `jkz::setup::BINARIES`, held here against
/// the harness, `Cargo.toml`, the README's table and install.sh, and
/// followed by `jkz install`, `jkz doctor` and every binary's `--help`.
#[test]
fn every_binary_is_installed_checked_and_answers_help() {
    let library: BTreeSet<&str> = jkz::setup::BINARIES.into_iter().collect();
    assert_eq!(library.len(), jkz::setup::BINARIES.len(), "no duplicates");
    let harness: BTreeSet<&str> = BINARIES.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        harness, library,
        "the harness runs exactly the library's list"
    );

    // Cargo.toml builds exactly these (install.sh installs what cargo built).
    let manifest = std::fs::read_to_string(checkout_file("Cargo.toml")).unwrap();
    let built: BTreeSet<&str> = manifest
        .split("[[bin]]")
        .skip(1)
        .filter_map(|section| {
            let line = section.lines().find(|l| l.starts_with("name = "))?;
            Some(line.trim_start_matches("name = ").trim_matches('"'))
        })
        .collect();
    assert_eq!(built, library, "Cargo.toml's [[bin]]s");
    let install_sh = std::fs::read_to_string(checkout_file("install.sh")).unwrap();
    assert!(
        install_sh.contains("\"$staging\"/bin/*"),
        "install.sh installs every binary cargo built"
    );
    // The README's table of binaries names each one.
    let readme = std::fs::read_to_string(checkout_file("README.md")).unwrap();
    let table: BTreeSet<&str> = readme
        .lines()
        .take_while(|l| !l.starts_with("## "))
        .filter_map(|l| l.strip_prefix("| `")?.split('`').next())
        .collect();
    assert_eq!(table, library, "the README's table of binaries");

    let dir = Dir::new();
    for name in jkz::setup::BINARIES {
        let run = dir.cmd(name).arg("--help").run().success();
        assert!(run.stdout_str().contains("Usage:"), "{}", run.report());
        let run = dir.cmd(name).arg("--version").run().success();
        assert!(run.stdout_str().starts_with(name), "{}", run.report());
    }

    // Doctor names each binary missing from PATH: a prefix holding all but
    // the two hooks the old list forgot.
    let only_some = dir.join("only-some");
    std::fs::create_dir_all(&only_some).unwrap();
    for name in jkz::setup::BINARIES {
        if !matches!(name, "jkz-post-tool-use" | "jkz-chat") {
            std::os::unix::fs::symlink(bin(name), only_some.join(name)).unwrap();
        }
    }
    std::fs::create_dir_all(dir.join("project")).unwrap();
    let doctor = dir
        .cmd("jkz")
        .env("HOME", dir.join("home"))
        .env("PATH", format!("{}:/usr/bin:/bin", only_some.display()))
        .args(["doctor", "--project"])
        .arg(dir.join("project"))
        .run()
        .expect_code(1);
    assert!(
        doctor
            .stdout_str()
            .contains("FAIL not on PATH: jkz-post-tool-use, jkz-chat;"),
        "{}",
        doctor.report()
    );

    // Install refuses, changing nothing, unless every binary is next to the
    // jkz that runs it (hard links: the binary's directory is where it was
    // run from, not where a symbolic link points).
    let partial = dir.join("partial");
    std::fs::create_dir_all(&partial).unwrap();
    for name in jkz::setup::BINARIES {
        if name != "jkz-truncate" {
            link_or_copy(&bin(name), &partial.join(name));
        }
    }
    let before = dir.files();
    let out = crate::util::scrubbed(partial.join("jkz"), dir.path())
        .env("HOME", dir.join("home"))
        .env("PATH", format!("{}:/usr/bin:/bin", partial.display()))
        .args(["install", "--project"])
        .arg(dir.join("project"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("jkz-truncate is not next to jkz"), "{err}");
    assert_eq!(dir.files(), before, "nothing changed");
}

fn link_or_copy(from: &Path, to: &Path) {
    if std::fs::hard_link(from, to).is_err() {
        std::fs::copy(from, to).unwrap();
    }
}

fn state(dir: &Dir) -> crate::util::Cmd {
    dir.cmd("jkz").args(["--state-dir", "st", "state"])
}

/// `jkz state validate` called a `pr_number` of `"abc"`, `"PR-42"` or
/// `"null"` a contract error, and `jkz state set` then refused every write
/// to that issue. The contract: unparsable reads as null, the file is
/// valid, validate may warn (stderr, exit 0), writes go through.
#[test]
fn unparsable_pr_number_is_valid_and_writable() {
    for bad in ["abc", "PR-42", "null"] {
        let dir = Dir::new();
        let file = format!(
            r#"{{"9": {{"current_phase": "review", "pr_number": "{bad}"}}, "lastActivity": "t"}}"#
        );
        dir.write("st/pipeline/9.json", &file);
        let run = state(&dir).arg("validate").run().success();
        assert!(run.stdout_str().is_empty(), "{}", run.report());
        let err = run.stderr_str();
        assert_eq!(err.lines().count(), 1, "{}", run.report());
        assert!(
            err.starts_with("jkz state validate: warning: st/pipeline/9.json: pr_number: ")
                && err.contains("reads as null"),
            "{}",
            run.report()
        );
        let shown = state(&dir).args(["show", "9"]).run().success();
        let view: serde_json::Value = serde_json::from_slice(shown.stdout()).unwrap();
        assert_eq!(view["pr_number"], serde_json::Value::Null, "{bad}");
        // Writes to the issue go through, and the field is kept as written.
        state(&dir)
            .args(["set", "9", "current_phase", "qa"])
            .run()
            .success();
        let kept: serde_json::Value =
            serde_json::from_slice(&dir.read("st/pipeline/9.json")).unwrap();
        assert_eq!(kept["9"]["current_phase"], "qa");
        assert_eq!(kept["9"]["pr_number"], bad);
        // Setting it to such a value is a write like any other.
        state(&dir)
            .args(["set", "9", "pr_number", bad])
            .run()
            .success();
        // No number anywhere in the cascade: `pr` says so (exit 1).
        state(&dir).args(["pr", "9"]).run().expect_code(1);
    }
}

/// `jkz state pr 9 '#12'` was refused (exit 2): `#12` is a PR number.
#[test]
fn state_pr_accepts_a_hash_prefix() {
    let dir = Dir::new();
    dir.write("st/pipeline/9.json", r##"{"9": {"pr_number": "#7"}}"##);
    let pr = |args: &[&str], env: Option<&str>| {
        let mut cmd = state(&dir).arg("pr").args(args.iter().copied());
        if let Some(v) = env {
            cmd = cmd.env("JKZ_PR_NUMBER", v);
        }
        cmd.run()
    };
    assert_eq!(pr(&["9", "#12"], None).success().stdout_str(), "12\n");
    assert_eq!(pr(&["9"], Some("#13")).success().stdout_str(), "13\n");
    assert_eq!(pr(&["9"], None).success().stdout_str(), "7\n");
    let shown = state(&dir).args(["show", "9"]).run().success();
    let view: serde_json::Value = serde_json::from_slice(shown.stdout()).unwrap();
    assert_eq!(view["pr_number"], 7);
    // Still an error, never passed over: what is not a PR number.
    for bad in ["PR-12", "##12", "# 12"] {
        let run = pr(&["9", bad], None).expect_code(2);
        assert!(
            run.stderr_str().contains("is not a PR number"),
            "{}",
            run.report()
        );
    }
}

/// The fuzzer found a document that `jkz-compress` passed through and
/// `jkz-compress --restore` then refused: a line
/// `<!-- jkz:offload<!-- jkz:verdict-json … -->` is a jkz comment (kept
/// verbatim by compress) that looks like an offload marker but is not one.
/// Compress now refuses such an input with restore's own check and exit
/// code (5, stdout empty, nothing offloaded), so `restore(compress(x)) == x`
/// holds for everything compress accepts; valid markers still pass.
#[test]
fn compress_refuses_an_input_whose_marker_lookalike_restore_would_refuse() {
    let dir = Dir::new();
    let lookalike = r#"<!-- jkz:offload<!-- jkz:verdict-json {"verdict":"PASS"} -->"#;
    let mut doc = String::from("# Title\n## Section 0\n");
    for i in 0..200 {
        doc.push_str(&format!("line {i} of section 0 with text\n"));
    }
    let line_no = doc.lines().count() + 1;
    doc.push_str(&format!("{lookalike}\nafter it\n"));
    let compress = |input: &str, extra: &[&str]| {
        dir.cmd("jkz-compress")
            .args(["--state-dir", "st", "--threshold", "1024"])
            .args(extra)
            .stdin(input)
            .run()
    };
    let refused = compress(&doc, &[]).expect_code(5);
    assert!(refused.stdout().is_empty(), "{}", refused.report());
    let err = refused.stderr_str();
    assert_eq!(err.lines().count(), 1, "{}", refused.report());
    assert!(err.contains(&format!("line {line_no} ")), "{err}");
    assert!(err.contains("--restore would refuse it"), "{err}");
    assert!(
        !dir.path().join("st/context-offload").exists(),
        "nothing offloaded: {}",
        refused.report()
    );
    // Restore refuses the same input the same way.
    let restore = dir
        .cmd("jkz-compress")
        .args(["--state-dir", "st", "--restore"])
        .stdin(&doc)
        .run()
        .expect_code(5);
    assert!(restore.stderr_str().contains(&format!("line {line_no} ")));
    // `--partial` is for restore only.
    compress(&doc, &["--partial"]).expect_code(2);

    // Quoted in a fenced code block the line is text: compressed and
    // restored byte for byte, and compressing again changes nothing.
    let quoted = doc.replace(lookalike, &format!("```\n{lookalike}\n```"));
    let once = compress(&quoted, &[]).success().stdout_str();
    assert!(once.contains("<!-- jkz:offload sha256="), "{once}");
    assert_eq!(compress(&once, &[]).success().stdout_str(), once);
    let back = dir
        .cmd("jkz-compress")
        .args(["--state-dir", "st", "--restore"])
        .stdin(&once)
        .run()
        .success();
    assert_eq!(back.stdout_str(), quoted);
}

/// `jkz-compress --restore` took a line that looks like an offload marker
/// but does not verify (an edited `bytes=`, `lines=`, a bad sha256) for
/// plain text and exited 0 with the document still compressed. Such a line
/// is an error (exit 5, stdout empty), or is named and kept with
/// `--partial` (exit 6), exactly like a marker whose file is missing.
#[test]
fn restore_refuses_a_marker_with_edited_attributes() {
    let dir = Dir::new();
    let mut doc = String::from("# Intro\nshort\n\n");
    for section in ["One", "Two"] {
        doc.push_str(&format!("# {section}\n"));
        for i in 0..2000 {
            doc.push_str(&format!("line {i} of section {section}, a pasted log\n"));
        }
    }
    let compressed = dir
        .cmd("jkz-compress")
        .args(["--state-dir", "st"])
        .stdin(&doc)
        .run()
        .success()
        .stdout_str();
    let is_marker = |l: &&str| l.starts_with("<!-- jkz:offload sha256=");
    let lines: Vec<&str> = compressed.lines().collect();
    let first = lines.iter().position(is_marker).expect("a marker");
    let marker = lines[first];
    assert_eq!(
        compressed.lines().filter(is_marker).count(),
        2,
        "{compressed}"
    );
    let field = |name: &str| -> u64 {
        let at = marker.find(&format!(" {name}=")).unwrap() + name.len() + 2;
        marker[at..].split(' ').next().unwrap().parse().unwrap()
    };
    let (bytes, lines_attr, excerpt) = (field("bytes"), field("lines"), field("excerpt"));
    let sha = &marker["<!-- jkz:offload sha256=".len()..][..64];
    let edits = [
        // bytes= below excerpt=: the line no longer parses as a marker.
        marker.replace(&format!("bytes={bytes}"), &format!("bytes={}", excerpt - 1)),
        marker.replace(&format!("bytes={bytes}"), &format!("bytes={}", bytes + 1)),
        marker.replace(
            &format!("lines={lines_attr}"),
            &format!("lines={}", lines_attr + 1),
        ),
        marker.replace(sha, &sha.to_uppercase()),
        marker.replace(sha, &sha[..63]),
        marker.replace(" -->", " --> trailing"),
        marker.replace(" path=", " path"),
    ];
    for edited in edits {
        assert_ne!(edited, marker);
        let input = compressed.replacen(marker, &edited, 1);
        let line_no = first + 1;
        let strict = dir
            .cmd("jkz-compress")
            .args(["--state-dir", "st", "--restore"])
            .stdin(&input)
            .run()
            .expect_code(5);
        assert!(strict.stdout().is_empty(), "{}", strict.report());
        let err = strict.stderr_str();
        assert_eq!(err.lines().count(), 1, "{}", strict.report());
        assert!(err.contains(&format!("line {line_no}")), "{edited}\n{err}");

        let partial = dir
            .cmd("jkz-compress")
            .args(["--state-dir", "st", "--restore", "--partial"])
            .stdin(&input)
            .run()
            .expect_code(6);
        let out = partial.stdout_str();
        assert!(
            out.contains(&format!("{edited}\n")),
            "kept as it is: {edited}"
        );
        assert_eq!(
            out.lines().filter(is_marker).count(),
            1,
            "only the edited marker is left: {}",
            partial.report()
        );
        assert!(
            out.contains("line 1999 of section Two"),
            "the other section is restored"
        );
        assert!(
            partial.stderr_str().contains(&format!("line {line_no}")),
            "{}",
            partial.report()
        );
    }
    // Untouched, the document restores byte for byte.
    let back = dir
        .cmd("jkz-compress")
        .args(["--state-dir", "st", "--restore"])
        .stdin(&compressed)
        .run()
        .success();
    assert_eq!(back.stdout_str(), doc);
}

const SESSION: &str = "87645ed3-8263-40cb-a27c-461ca6cb6892";

/// The client's tool-results directory of the test's session, beside its
/// transcript `home/.claude/projects/p/<session>.jsonl`.
fn tool_results(dir: &Dir) -> PathBuf {
    dir.join(format!("home/.claude/projects/p/{SESSION}/tool-results"))
}

/// A Bash PostToolUse event whose output the client says it persisted at
/// `persisted` (its `stdout` in the event is cut, as the client sends it).
fn persisted_event(dir: &Dir, persisted: &Path) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "session_id": SESSION,
        "transcript_path": dir.join(format!("home/.claude/projects/p/{SESSION}.jsonl")),
        "cwd": dir.path(),
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "cargo test"},
        "tool_response": {"stdout": "x".repeat(30_000), "stderr": "", "interrupted": false,
            "isImage": false, "noOutputExpected": false,
            "persistedOutputPath": persisted, "persistedOutputSize": 400_000},
        "tool_use_id": "toolu_01"
    }))
    .unwrap()
}

/// A large output holding `secret`: what the guard must never show.
fn secret_output(secret: &str) -> String {
    let mut s = String::new();
    while s.len() < 400_000 {
        s.push_str(&format!("{secret} test module::case ... ok\n"));
    }
    s
}

/// Runs the guard on `event` in a project that opted in, with `secret` in
/// its environment; checks the tool's output is left as it stands: exit 0,
/// nothing on stdout, one line on stderr, nothing saved or counted.
fn left_as_it_stands(dir: &Dir, event: Vec<u8>, secret: &str) -> String {
    let run = dir
        .cmd("jkz-post-tool-use")
        .env("CLAUDE_PROJECT_DIR", dir.path())
        .env("JKZ_TEST_SECRET", secret)
        .stdin(event)
        .run()
        .success();
    assert!(run.stdout().is_empty(), "{}", run.report());
    let err = run.stderr_str();
    assert_eq!(err.lines().count(), 1, "{}", run.report());
    assert!(!err.contains(secret), "{}", run.report());
    assert!(err.contains("persisted output"), "{}", run.report());
    let state: Vec<PathBuf> = dir
        .files()
        .into_iter()
        .filter(|p| p.starts_with("state"))
        .collect();
    assert!(state.is_empty(), "nothing saved or counted: {state:?}");
    err
}

/// `persistedOutputPath` was read from anywhere: `/proc/self/environ` (the
/// hook's environment, secrets included) or any file outside the client's
/// tool-results directory went into the model's window and was saved under
/// `context-offload/`. Only the client's own directory is read now.
#[test]
fn persisted_output_path_outside_tool_results_is_not_read() {
    let dir = Dir::new();
    std::fs::create_dir(dir.join("state")).unwrap();
    std::fs::create_dir_all(tool_results(&dir)).unwrap();
    let secret = "SECRET-7f3a9c";
    let elsewhere = dir.write("notes/secret.txt", secret_output(secret));
    let sibling = dir.write(
        format!("home/.claude/projects/p/{SESSION}/secret.txt"),
        secret_output(secret),
    );
    for path in [
        PathBuf::from("/proc/self/environ"),
        elsewhere,
        sibling,
        tool_results(&dir).join("../secret.txt"),
        tool_results(&dir).join("../../../../../notes/secret.txt"),
    ] {
        let err = left_as_it_stands(&dir, persisted_event(&dir, &path), secret);
        assert!(err.contains("tool-results"), "{path:?}: {err}");
    }
    // Without a transcript to find the directory by, nothing is read either.
    let mut event: serde_json::Value =
        serde_json::from_slice(&persisted_event(&dir, Path::new("/proc/self/environ"))).unwrap();
    event.as_object_mut().unwrap().remove("transcript_path");
    left_as_it_stands(&dir, serde_json::to_vec(&event).unwrap(), secret);

    // The client's own file is read, as before.
    let own = dir.write(
        format!("home/.claude/projects/p/{SESSION}/tool-results/b6x.txt"),
        secret_output("PUBLIC"),
    );
    let run = dir
        .cmd("jkz-post-tool-use")
        .env("CLAUDE_PROJECT_DIR", dir.path())
        .stdin(persisted_event(&dir, &own))
        .run()
        .success();
    assert!(
        run.stdout_str().contains("[jkz: full output: "),
        "{}",
        run.report()
    );
}

/// The same through a link: a file in the tool-results directory that is a
/// link to a secret, or a directory link out of it, was followed.
#[test]
fn persisted_output_path_through_a_link_is_not_read() {
    let dir = Dir::new();
    std::fs::create_dir(dir.join("state")).unwrap();
    let results = tool_results(&dir);
    std::fs::create_dir_all(&results).unwrap();
    let secret = "SECRET-0b51de";
    let target = dir.write("notes/secret.txt", secret_output(secret));
    std::os::unix::fs::symlink(&target, results.join("link.txt")).unwrap();
    std::os::unix::fs::symlink("/proc/self/environ", results.join("environ.txt")).unwrap();
    std::os::unix::fs::symlink(dir.join("notes"), results.join("notes")).unwrap();
    let own = dir.write(
        format!("home/.claude/projects/p/{SESSION}/tool-results/own.txt"),
        secret_output(secret),
    );
    std::os::unix::fs::symlink(&own, results.join("to-own.txt")).unwrap();
    for path in [
        results.join("link.txt"),
        results.join("environ.txt"),
        results.join("notes/secret.txt"),
        results.join("to-own.txt"),
    ] {
        let err = left_as_it_stands(&dir, persisted_event(&dir, &path), secret);
        assert!(err.contains("symbolic link"), "{path:?}: {err}");
    }
}

/// A 40 MB event was refused with a message quoting 4,194,304 bytes while
/// the guard's limit is 32 MiB: the message quotes the limit it applied.
#[test]
fn oversized_input_message_quotes_the_real_limit() {
    let dir = Dir::new();
    let mut event =
        br#"{"hook_event_name": "PostToolUse", "tool_name": "mcp__x__y", "tool_response": ""#
            .to_vec();
    event.resize(40 * 1000 * 1000, b'a');
    event.extend_from_slice(b"\"}");
    let run = dir.cmd("jkz-post-tool-use").stdin(event).run().success();
    assert!(run.stdout().is_empty(), "{}", run.report());
    let err = run.stderr_str();
    assert_eq!(err.lines().count(), 1, "{}", run.report());
    let limit = jkz::tool_output::MAX_INPUT;
    assert_eq!(limit, 32 * 1024 * 1024);
    assert!(
        err.contains("larger than 33,554,432 bytes (32 MiB)"),
        "{}",
        run.report()
    );
    assert!(
        !err.contains("4,194,304") && !err.contains("4194304"),
        "{err}"
    );
}

/// Plain lines of about `bytes` bytes.
fn lines_of(bytes: usize, tag: &str) -> String {
    let mut s = String::new();
    let mut i = 0;
    while s.len() < bytes {
        s.push_str(&format!("{tag} line {i:06} of the review\n"));
        i += 1;
    }
    s
}

/// An oversized protected block straddling the tail window lost its
/// opener and first content line. The contract: a block larger than its
/// budget keeps its head, never dropped while its first line fits — on
/// every role and split, wherever it lies, whatever lies beside it. Here a
/// verdict fence of 400 KB starts before the tail window and ends inside
/// it, at the default cap (300 KiB); alone, and beside a summary sized to
/// fill the block budget (it used to be placed whole first, leaving the
/// verdict's first line no room).
#[test]
fn oversized_block_straddling_the_tail_keeps_its_opener() {
    const OPENER: &str =
        "```verdict-json\n{\"verdict\":\"FAIL\",\"blocking\":[\"parser::nested\"]}\n";
    let fence = format!("{OPENER}{}```\n", lines_of(400_000, "evidence"));
    // 230,400 bytes of block budget (three quarters of 307,200), less the
    // head/tail gap's marker and the summary's own (59 bytes each for an
    // input of seven digits), less 10: the summary fits whole, 10 bytes
    // are left.
    let summary_len = 230_400 - 2 * 59 - 10;
    let mut summary = String::from("<!-- jkz:tldr\n");
    let mut i = 0;
    loop {
        let line = format!("summary point {i:06}: keep it\n");
        if summary.len() + line.len() + "-->\n".len() > summary_len {
            break;
        }
        summary.push_str(&line);
        i += 1;
    }
    let pad = summary_len - summary.len() - "-->\n".len();
    summary.push_str(&"x".repeat(pad - 1));
    summary.push_str("\n-->\n");
    assert_eq!(summary.len(), summary_len);
    let docs = [
        format!(
            "{}{fence}{}",
            lines_of(700_000, "reasoning"),
            lines_of(20_000, "closing")
        ),
        format!(
            "{}{summary}{}{fence}{}",
            lines_of(100_000, "intro"),
            lines_of(300_000, "reasoning"),
            lines_of(20_000, "closing")
        ),
    ];
    let dir = Dir::new();
    let roles =
        std::iter::once(None).chain(jkz::truncate::roles::ROLES.iter().map(|r| Some(r.name)));
    for (d, doc) in docs.iter().enumerate() {
        assert!((1_000_000..10_000_000).contains(&doc.len()));
        let fence_at = doc.find(OPENER).unwrap();
        assert!(
            fence_at + fence.len() > doc.len() - 40_000,
            "ends in the tail window"
        );
        assert!(fence_at < doc.len() - 307_200, "starts before it");
        for role in roles.clone() {
            let mut cmd = dir.cmd("jkz-truncate").arg("--no-full-output");
            if let Some(role) = role {
                cmd = cmd.args(["--role", role]);
            }
            let run = cmd.stdin(doc.as_bytes()).run().success();
            let out = run.stdout_str();
            assert!(out.len() <= 307_200, "{} bytes", out.len());
            assert!(
                out.contains(OPENER),
                "document {d}, role {role:?}: the verdict's opener and first line are missing"
            );
            assert!(
                out.contains("[jkz-truncate: verdict-json block cut: "),
                "document {d}, role {role:?}: the cut is named"
            );
            if d == 1 {
                assert!(
                    out.contains("<!-- jkz:tldr\nsummary point 000000"),
                    "{role:?}"
                );
            }
        }
    }
}
