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
