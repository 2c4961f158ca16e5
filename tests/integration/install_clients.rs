//! `jkz install` / `uninstall` / `doctor` across clients: each client's
//! registration is independent of the others' (the state directory and its
//! `.gitignore` line go only with the last), a symlinked configuration file
//! stays a link and comes back byte for byte, a dangling one is refused, a
//! second registration of jkz for the same client is refused unless
//! `--replace`, and install says every hook it registered.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::util::{bin, Cmd, Dir, Run};

pub(crate) const CLIENTS: [&str; 3] = ["claude", "codex", "gemini"];

pub(crate) fn path_var() -> String {
    format!("{}:/usr/bin:/bin", bin("jkz").parent().unwrap().display())
}

/// A project (a checkout: `.git` is enough to find it) and a home.
fn project() -> Dir {
    let dir = Dir::new();
    std::fs::create_dir_all(dir.join("project/.git")).unwrap();
    std::fs::create_dir_all(dir.join("home")).unwrap();
    dir
}

/// `jkz` in the project, with the binaries on PATH and the test's home.
pub(crate) fn jkz(dir: &Dir, args: &[&str]) -> Run {
    Cmd::new("jkz", &dir.join("project"))
        .env("HOME", dir.join("home"))
        .env("PATH", path_var())
        .args(args.iter().copied())
        .run()
}

fn for_client(dir: &Dir, sub: &str, client: &str) -> Run {
    let project = dir.join("project").display().to_string();
    jkz(dir, &[sub, "--client", client, "--project", &project])
}

/// Every order of `items`.
fn orders(items: &[&'static str]) -> Vec<Vec<&'static str>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut all = Vec::new();
    for (i, first) in items.iter().enumerate() {
        let mut rest = items.to_vec();
        rest.remove(i);
        for mut tail in orders(&rest) {
            tail.insert(0, first);
            all.push(tail);
        }
    }
    all
}

/// After each step, every client still installed is whole, and the
/// pipeline state can be written.
fn installed_ones_work(dir: &Dir, installed: &[&str], step: &str, issue: usize) {
    for client in installed {
        let run = for_client(dir, "doctor", client);
        assert!(
            run.code() == Some(0) && !run.stdout_str().contains("FAIL"),
            "after {step}: jkz doctor --client {client}\n{}",
            run.report()
        );
    }
    if !installed.is_empty() {
        let n = issue.to_string();
        let run = jkz(dir, &["state", "set", &n, "current_phase", "building"]);
        assert_eq!(run.code(), Some(0), "after {step}: {}", run.report());
        assert!(
            String::from_utf8_lossy(&dir.read("project/.gitignore")).contains("/state/"),
            "after {step}: the /state/ line went"
        );
    }
}

#[test]
fn uninstalling_one_client_removed_the_state_the_others_use() {
    // As it broke: Claude Code and Codex CLI (or Gemini CLI) installed, the
    // other one uninstalled while state/ is still empty.
    for other in ["codex", "gemini"] {
        let dir = project();
        for_client(&dir, "install", "claude").success();
        for_client(&dir, "install", other).success();
        let run = for_client(&dir, "uninstall", other).success();
        assert!(dir.join("project/state").is_dir(), "{}", run.report());
        assert!(
            run.stdout_str().contains(&format!(
                "kept {} and its /state/ line in .gitignore: jkz is still registered here for Claude Code ({})",
                dir.join("project/state").display(),
                dir.join("project/.claude/settings.json").display()
            )),
            "{}",
            run.report()
        );
        assert!(
            !run.stdout_str().contains("removed empty"),
            "{}",
            run.report()
        );
        installed_ones_work(&dir, &["claude"], &format!("uninstall {other}"), 1);
        // The last one out takes state/ and its line with it, when state/
        // holds nothing.
        let dir = project();
        for_client(&dir, "install", "claude").success();
        for_client(&dir, "install", other).success();
        for_client(&dir, "uninstall", other).success();
        let run = for_client(&dir, "uninstall", "claude").success();
        assert!(!dir.join("project/state").exists(), "{}", run.report());
        assert!(!dir.join("project/.gitignore").exists(), "{}", run.report());
    }
}

#[test]
fn install_and_uninstall_in_every_order_leave_the_other_clients_working() {
    for install_order in orders(&CLIENTS) {
        for uninstall_order in orders(&CLIENTS) {
            let dir = project();
            let mut installed: Vec<&str> = Vec::new();
            let mut issue = 0;
            let shown = format!("install {install_order:?}, uninstall {uninstall_order:?}");
            for client in &install_order {
                for_client(&dir, "install", client).success();
                installed.push(client);
                issue += 1;
                installed_ones_work(
                    &dir,
                    &installed,
                    &format!("{shown}: install {client}"),
                    issue,
                );
            }
            for client in &uninstall_order {
                let run = for_client(&dir, "uninstall", client).success();
                installed.retain(|c| c != client);
                issue += 1;
                installed_ones_work(
                    &dir,
                    &installed,
                    &format!("{shown}: uninstall {client}"),
                    issue,
                );
                if !installed.is_empty() {
                    assert!(
                        dir.join("project/state").is_dir(),
                        "{shown}: {}",
                        run.report()
                    );
                }
            }
            // Nothing of any client's registration is left; the state the
            // pipelines wrote is kept, and so is its line.
            for rel in [".claude", ".codex", ".gemini"] {
                assert!(!dir.join("project").join(rel).exists(), "{shown}: {rel}");
            }
            assert!(dir.join("project/state/pipeline").is_dir(), "{shown}");
        }
    }
}

/// A file or link below `root`, as uninstall must give it back: a link by
/// where it points, a file by its bytes.
#[derive(Debug, PartialEq, Eq)]
enum Entry {
    Link(PathBuf),
    File(Vec<u8>),
}

fn entries(root: &Path) -> BTreeMap<PathBuf, Entry> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Entry>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = e.path();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            let kind = e.file_type().unwrap();
            if kind.is_symlink() {
                out.insert(rel, Entry::Link(std::fs::read_link(&path).unwrap()));
            } else if kind.is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(rel, Entry::File(std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// The files each client's install edits, relative to the project.
fn config_files(client: &str) -> &'static [&'static str] {
    match client {
        "claude" => &[".claude/settings.json", ".gitignore"],
        "codex" => &[".codex/hooks.json", ".codex/config.toml", ".gitignore"],
        _ => &[".gemini/settings.json", ".gitignore"],
    }
}

/// What a user's own file holds before jkz: their formatting, no final
/// newline where that is allowed.
fn users_own(rel: &str) -> &'static str {
    match rel {
        ".gitignore" => "target\n*.log",
        ".codex/config.toml" => "# mine\nmodel = \"o3\"   # the big one\n",
        _ => "{\n    \"model\": \"mine\"\n}",
    }
}

#[test]
fn symlinked_config_files_became_regular_files() {
    for client in CLIENTS {
        let dir = project();
        for rel in config_files(client) {
            let real = dir.write(format!("dotfiles/{rel}"), users_own(rel));
            let link = dir.join("project").join(rel);
            std::fs::create_dir_all(link.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(&real, &link).unwrap();
        }
        let before = entries(dir.path());
        let run = for_client(&dir, "install", client).success();
        for rel in config_files(client) {
            let link = dir.join("project").join(rel);
            assert!(
                std::fs::symlink_metadata(&link)
                    .unwrap()
                    .file_type()
                    .is_symlink(),
                "{client}: {rel} is no longer a link\n{}",
                run.report()
            );
            let written = std::fs::read(dir.join("dotfiles").join(rel)).unwrap();
            assert_ne!(
                written,
                users_own(rel).as_bytes(),
                "{client}: {rel} not written through"
            );
        }
        let run = for_client(&dir, "doctor", client);
        assert_eq!(run.code(), Some(0), "{client}: {}", run.report());
        let run = for_client(&dir, "uninstall", client).success();
        assert_eq!(entries(dir.path()), before, "{client}: {}", run.report());
    }
}

#[test]
fn a_dangling_settings_link_was_replaced() {
    for client in CLIENTS {
        for rel in config_files(client) {
            let dir = project();
            let link = dir.join("project").join(rel);
            std::fs::create_dir_all(link.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(dir.join("dotfiles/missing"), &link).unwrap();
            let before = entries(dir.path());
            let run = for_client(&dir, "install", client);
            assert_eq!(run.code(), Some(1), "{client} {rel}: {}", run.report());
            assert!(
                run.stderr_str().contains(&format!(
                    "{} is a symbolic link to {}, which does not exist",
                    link.display(),
                    dir.join("dotfiles/missing").display()
                )),
                "{client} {rel}: {}",
                run.report()
            );
            assert_eq!(entries(dir.path()), before, "{client} {rel}: changed");
            let run = for_client(&dir, "uninstall", client);
            assert_eq!(run.code(), Some(1), "{client} {rel}: {}", run.report());
            assert_eq!(entries(dir.path()), before, "{client} {rel}: changed");
        }
    }
}

#[test]
fn uninstall_gives_every_users_file_back_byte_for_byte() {
    for client in CLIENTS {
        let dir = project();
        for rel in config_files(client) {
            dir.write(format!("project/{rel}"), users_own(rel));
        }
        let before = entries(dir.path());
        for_client(&dir, "install", client).success();
        assert_ne!(entries(dir.path()), before);
        for_client(&dir, "uninstall", client).success();
        assert_eq!(entries(dir.path()), before, "{client}");
    }
}

#[test]
fn install_said_it_registered_two_events_while_it_registered_eleven() {
    for client in CLIENTS {
        let dir = project();
        let run = for_client(&dir, "install", client).success();
        let out = run.stdout_str();
        let registered: Vec<&str> = out.lines().filter_map(|l| l.strip_prefix("  ")).collect();
        // Every hook the file now holds is named, once, as doctor names it.
        let file = match client {
            "claude" => ".claude/settings.json",
            "codex" => ".codex/hooks.json",
            _ => ".gemini/settings.json",
        };
        let hooks: serde_json::Value =
            serde_json::from_slice(&dir.read(format!("project/{file}"))).unwrap();
        let mut in_file = Vec::new();
        for (event, groups) in hooks["hooks"].as_object().unwrap() {
            for group in groups.as_array().unwrap() {
                for hook in group["hooks"].as_array().unwrap() {
                    let program = hook["command"]
                        .as_str()
                        .unwrap()
                        .rsplit('/')
                        .next()
                        .unwrap();
                    in_file.push(match group["matcher"].as_str().unwrap_or("") {
                        "" => format!("{event} → {program}"),
                        m => format!("{event} ({m}) → {program}"),
                    });
                }
            }
        }
        let mut said: Vec<String> = registered.iter().map(|s| s.to_string()).collect();
        said.sort();
        in_file.sort();
        assert_eq!(said, in_file, "{client}: {}", run.report());
        assert!(
            out.contains(&format!("registered {} hooks in ", in_file.len())),
            "{client}: {out}"
        );
        let doctor = for_client(&dir, "doctor", client).success();
        for line in &said {
            assert!(
                doctor.stdout_str().contains(line.as_str()),
                "{client}: {line}\n{}",
                doctor.report()
            );
        }
    }
}

#[test]
fn installing_at_project_and_user_level_both_succeeded() {
    // Project first, then the user's: refused, naming the project's and
    // how to switch; --replace moves it.
    let dir = project();
    jkz(&dir, &["install"]).success();
    let settings = dir.read("project/.claude/settings.json");
    let run = jkz(&dir, &["install", "--user"]);
    assert_eq!(run.code(), Some(1), "{}", run.report());
    let err = run.stderr_str();
    assert!(
        err.contains(&format!(
            "jkz is already registered for Claude Code in this project's settings {}",
            dir.join("project/.claude/settings.json").display()
        )) && err.contains("jkz install --user --replace"),
        "{}",
        run.report()
    );
    assert!(!dir.join("home/.claude").exists(), "{}", run.report());
    assert_eq!(dir.read("project/.claude/settings.json"), settings);
    let run = jkz(&dir, &["install", "--user", "--replace"]).success();
    assert!(
        run.stdout_str()
            .contains("--replace: took jkz's hooks out of this project's settings"),
        "{}",
        run.report()
    );
    assert!(
        !dir.join("project/.claude/settings.json").exists(),
        "{}",
        run.report()
    );
    assert!(dir.join("home/.claude/settings.json").is_file());
    // The project stays opted in (state/), for the user's hooks to write.
    assert!(dir.join("project/state").is_dir());
    let doctor = jkz(&dir, &["doctor"]).success();
    assert!(
        !doctor.stdout_str().contains("more than once"),
        "{}",
        doctor.report()
    );

    // The user's first, then the project's: the project opts in (state/)
    // and registers nothing of its own, since the user's hooks run here;
    // the line says so and how to move it; --replace moves it back.
    std::fs::remove_dir_all(dir.join("project/state")).unwrap();
    let run = jkz(&dir, &["install"]).success();
    assert!(
        run.stdout_str().contains(&format!(
            "jkz is registered for your user in {} (every project)",
            dir.join("home/.claude/settings.json").display()
        )) && run.stdout_str().contains("`jkz install --replace`"),
        "{}",
        run.report()
    );
    assert!(dir.join("project/state").is_dir(), "{}", run.report());
    assert!(
        !dir.join("project/.claude/settings.json").exists(),
        "{}",
        run.report()
    );
    let doctor = jkz(&dir, &["doctor"]).success();
    assert!(
        !doctor.stdout_str().contains("more than once"),
        "{}",
        doctor.report()
    );
    jkz(&dir, &["install", "--replace"]).success();
    assert!(
        !dir.join("home/.claude").exists(),
        "the user install is undone"
    );
    jkz(&dir, &["doctor"]).success();

    // Hooks someone put in the project's local settings count too.
    let dir = project();
    dir.write(
        "project/.claude/settings.local.json",
        json!({"hooks": {"PreCompact": [{"matcher": "", "hooks": [
            {"type": "command", "command": "jkz-pre-compact"}]}]}, "model": "x"})
        .to_string(),
    );
    let run = jkz(&dir, &["install"]);
    assert_eq!(run.code(), Some(1), "{}", run.report());
    assert!(
        run.stderr_str().contains("this project's local settings"),
        "{}",
        run.report()
    );
    jkz(&dir, &["install", "--replace"]).success();
    let local: serde_json::Value =
        serde_json::from_slice(&dir.read("project/.claude/settings.local.json")).unwrap();
    assert_eq!(local, json!({"model": "x"}));
    jkz(&dir, &["doctor"]).success();

    // Codex CLI and Gemini CLI: a user-wide hooks file holding jkz's.
    for (client, user_file) in [
        ("codex", ".codex/hooks.json"),
        ("gemini", ".gemini/settings.json"),
    ] {
        let dir = project();
        dir.write(
            format!("home/{user_file}"),
            json!({"hooks": {"SessionEnd": [{"matcher": "", "hooks": [
                {"type": "command", "command": "/opt/jkz/jkz-chat"}]}]}})
            .to_string(),
        );
        let run = for_client(&dir, "install", client);
        assert_eq!(run.code(), Some(1), "{client}: {}", run.report());
        assert!(
            run.stderr_str()
                .contains(&dir.join("home").join(user_file).display().to_string())
                && run
                    .stderr_str()
                    .contains(&format!("jkz install --client {client} --replace")),
            "{client}: {}",
            run.report()
        );
        assert!(
            !dir.join("project/state").exists(),
            "{client}: nothing changed"
        );
        let project = dir.join("project").display().to_string();
        jkz(
            &dir,
            &[
                "install",
                "--client",
                client,
                "--project",
                &project,
                "--replace",
            ],
        )
        .success();
        let user: serde_json::Value =
            serde_json::from_slice(&dir.read(format!("home/{user_file}"))).unwrap();
        assert_eq!(user, json!({}), "{client}");
        for_client(&dir, "doctor", client).success();
    }
}

#[test]
fn doctor_client_codex_checked_less_than_the_others() {
    let dir = project();
    for_client(&dir, "install", "codex").success();
    for_client(&dir, "doctor", "codex").success();
    // What the others check and Codex's doctor did not: the state
    // directory's mode, its .gitignore line, the pipeline files.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        dir.join("project/state"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    dir.write("project/state/pipeline/7.json", "[1]");
    dir.write("project/.gitignore", "target\n");
    let run = for_client(&dir, "doctor", "codex");
    assert_eq!(run.code(), Some(1), "{}", run.report());
    let out = run.stdout_str();
    for fail in ["has mode 755", "state/ is not in", "7.json"] {
        assert!(
            out.lines()
                .any(|l| l.starts_with("FAIL") && l.contains(fail)),
            "{fail}\n{out}"
        );
    }
}

#[test]
fn codex_install_wrote_an_absolute_path_into_a_committed_file() {
    let dir = project();
    // An older jkz's absolute value is re-pointed, and still uninstalled.
    let prompt = dir.join("project/state/codex-compact-prompt.md");
    dir.write(
        "project/.codex/config.toml",
        format!(
            "experimental_compact_prompt_file = \"{}\"\n",
            prompt.display()
        ),
    );
    let run = for_client(&dir, "install", "codex").success();
    let config = String::from_utf8(dir.read("project/.codex/config.toml")).unwrap();
    assert_eq!(
        config,
        "experimental_compact_prompt_file = \"../state/codex-compact-prompt.md\"\n",
        "{}",
        run.report()
    );
    // It names the prompt as Codex reads it: relative to .codex/.
    let named = jkz::setup::codex::named_by(
        &dir.join("project/.codex"),
        "../state/codex-compact-prompt.md",
    );
    assert_eq!(named, prompt);
    assert!(prompt.is_file());
    for_client(&dir, "doctor", "codex").success();
    for_client(&dir, "uninstall", "codex").success();
    assert!(
        !dir.join("project/.codex/config.toml").exists() || {
            let left = String::from_utf8(dir.read("project/.codex/config.toml")).unwrap();
            !left.contains("experimental_compact_prompt_file")
        }
    );
}
