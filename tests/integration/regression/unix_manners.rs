//! Regression tests: what a Unix user expects of an installed tool (a
//! build that shows it is working, completions, man pages). Each test is
//! named after what was missing.

use std::collections::BTreeSet;
use std::path::Path;

use crate::install::{checkout_file, fake_cargo};
use crate::util::Dir;

/// Every page `jkz man` must write: each binary's, and each subcommand's
/// (`jkz-state-set`), `help` aside.
fn expected_pages() -> BTreeSet<String> {
    fn walk(cmd: &clap::Command, name: &str, out: &mut BTreeSet<String>) {
        out.insert(format!("{name}.1"));
        for sub in cmd.get_subcommands() {
            if sub.get_name() != "help" && !sub.is_hide_set() {
                walk(sub, &format!("{name}-{}", sub.get_name()), out);
            }
        }
    }
    let mut pages = BTreeSet::new();
    for binary in jkz::setup::BINARIES {
        walk(&jkz::commands::of(binary).unwrap(), binary, &mut pages);
    }
    pages
}

fn names_in(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

fn jkz_subcommands() -> Vec<String> {
    jkz::commands::of("jkz")
        .unwrap()
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect()
}

#[test]
fn there_were_no_shell_completions_or_man_pages() {
    let dir = Dir::new();
    for shell in ["bash", "zsh", "fish"] {
        let run = dir.cmd("jkz").args(["completions", shell]).run().success();
        let script = run.stdout_str();
        assert!(script.len() > 1000, "{shell}\n{}", run.report());
        for sub in jkz_subcommands() {
            assert!(script.contains(&sub), "{shell} lacks {sub}");
        }
        let truncate = dir
            .cmd("jkz")
            .args(["completions", shell, "--binary", "jkz-truncate"])
            .run()
            .success();
        assert!(truncate.stdout_str().contains("max-bytes"), "{shell}");
    }
    dir.cmd("jkz")
        .args(["completions", "tcsh"])
        .run()
        .expect_code(2);
    dir.cmd("jkz")
        .args(["completions", "bash", "--binary", "cargo"])
        .run()
        .expect_code(2)
        .one_line("jkz completions", "not one of jkz's binaries");
    let run = dir
        .cmd("jkz")
        .args(["man", "--dir", "share/man/man1"])
        .run()
        .success();
    let pages = names_in(&dir.join("share/man/man1"));
    assert_eq!(pages, expected_pages());
    assert_eq!(run.stdout_str().lines().count(), pages.len());
    let page = String::from_utf8(dir.read("share/man/man1/jkz-claim.1")).unwrap();
    assert!(page.contains(".SH NAME"), "{page}");
    assert!(page.contains("worktree"), "{page}");
}

#[test]
fn install_sh_was_silent_while_it_built_and_installed_no_completions_or_man_pages() {
    let dir = Dir::new();
    let checkout = dir.join("checkout");
    std::fs::create_dir_all(&checkout).unwrap();
    std::fs::copy(checkout_file("install.sh"), checkout.join("install.sh")).unwrap();
    dir.write("checkout/.gitignore", "/target\n");
    let fakebin = fake_cargo(&dir);
    // A prefix that is a bin/: the share/ beside it; another: inside it.
    for (prefix, share) in [("usr/bin", "usr/share"), ("opt/jkz", "opt/jkz/share")] {
        let out = std::process::Command::new("bash")
            .arg(checkout.join("install.sh"))
            .arg("--prefix")
            .arg(dir.join(prefix))
            .current_dir(dir.path())
            .env("HOME", dir.join("home"))
            .env("PATH", format!("{}:/usr/bin:/bin", fakebin.display()))
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("JKZ_STATE_DIR")
            .output()
            .unwrap();
        let shown = format!(
            "status {}\nstdout:\n{}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{shown}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("building jkz"), "{shown}");
        assert!(
            stdout.contains("installed completions (bash, zsh, fish)"),
            "{shown}"
        );
        // cargo's own progress reaches the terminal: it is not quietened.
        let calls = std::fs::read_to_string(fakebin.join("cargo-args")).unwrap();
        let install = calls.lines().find(|l| l.starts_with("install")).unwrap();
        assert!(
            !install.split(' ').any(|a| a == "--quiet" || a == "-q"),
            "{install}"
        );
        let share = dir.join(share);
        for binary in jkz::setup::BINARIES {
            for (file, starts) in [
                (
                    format!("bash-completion/completions/{binary}"),
                    String::new(),
                ),
                (
                    format!("zsh/site-functions/_{binary}"),
                    format!("#compdef {binary}"),
                ),
                (
                    format!("fish/vendor_completions.d/{binary}.fish"),
                    String::new(),
                ),
            ] {
                let text = std::fs::read_to_string(share.join(&file))
                    .unwrap_or_else(|e| panic!("{file}: {e}\n{shown}"));
                assert!(text.starts_with(&starts), "{file}");
                assert!(text.contains(binary), "{file}");
            }
        }
        let bash = std::fs::read_to_string(share.join("bash-completion/completions/jkz")).unwrap();
        for sub in jkz_subcommands() {
            assert!(bash.contains(&sub), "bash completion lacks {sub}");
        }
        assert_eq!(names_in(&share.join("man/man1")), expected_pages());
        let pages = expected_pages().len();
        assert!(
            stdout.contains(&format!("installed {pages} man pages to")),
            "{shown}"
        );
    }
}
