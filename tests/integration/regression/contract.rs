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
    let first = lines.iter().position(|l| is_marker(&l)).expect("a marker");
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
