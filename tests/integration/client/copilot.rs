//! Real-client tests for GitHub Copilot CLI ([`CopilotCli`]): the pinned
//! `copilot` binary, run headless (`copilot -p`) against the stub model's
//! Chat Completions, with jkz installed by `jkz install --client copilot`.

use std::process::{Command, Stdio};
use std::sync::Arc;

use serde_json::json;

use super::adapter::CopilotCli;
use super::pipeline::issue_42_in_a_fix_cycle;
use super::stub_model::{Request, StubModel, Turn};
use super::{Project, RealClient};
use crate::util::bin;
use jkz::thousands::thousands;

fn with_pipeline(server: &StubModel) -> Project<CopilotCli> {
    let project = CopilotCli::project(server);
    issue_42_in_a_fix_cycle(&project);
    project
}

fn bash(command: &str) -> Turn {
    Turn::Call {
        name: "bash".into(),
        input: json!({"command": command, "description": "run"}),
    }
}

/// What the model receives of a 400 KB shell output, without jkz and with
/// it: Copilot saves an output over ~20 KB to a file and shows the model
/// its first 500 characters, so a verdict and a TL;DR in the middle and
/// the last line are lost; jkz's `preToolUse` guard (`modifiedArgs`) runs
/// the command through `jkz-truncate --run`, its view under Copilot's
/// limit, so all three reach the model.
#[test]
fn copilot_shell_output_keeps_the_verdict_tldr_and_last_line() {
    let mut big = String::new();
    for i in 0..4300 {
        big.push_str(&format!("compiling unit {i}: ok, nothing to report here\n"));
    }
    big.push_str(
        "<!-- jkz:verdict-json {\"verdict\":\"FAIL\",\"blocking\":\"GUAVA-BLOCKER in src/pay.rs\"} -->\n",
    );
    big.push_str("<tldr>\nKIWI-TLDR: the payment rounding is wrong\n</tldr>\n");
    for i in 0..4300 {
        big.push_str(&format!("linking unit {i}: ok, nothing to report here\n"));
    }
    big.push_str("LAST-LINE: 8600 units built\n");
    assert!((390_000..420_000).contains(&big.len()), "{}", big.len());
    let measure = |with_jkz: bool| {
        let server = StubModel::start(Arc::new(|r: &Request| match r.tool_outputs().len() {
            0 => bash("cat build.log"),
            _ => Turn::Text("Done.".into()),
        }));
        let project = with_pipeline(&server);
        project.write("build.log", &big);
        if with_jkz {
            project.install_jkz();
        }
        let run = project.run("Build it.", &[]);
        run.assert_ok();
        let last = server.model_requests().pop().expect("requests");
        let outputs: Vec<String> = last.tool_outputs().into_iter().map(|o| o.text).collect();
        assert_eq!(outputs.len(), 1, "{outputs:?}\n{}", run.report());
        (outputs[0].clone(), run.report())
    };
    let (without, _) = measure(false);
    let (with, report) = measure(true);
    let mut table =
        String::from("| in what the model receives | without jkz | with jkz |\n|---|---|---|\n");
    for (name, marker) in [
        ("verdict (`jkz:verdict-json`)", "GUAVA-BLOCKER"),
        ("TL;DR (`<tldr>`)", "KIWI-TLDR"),
        ("last line", "LAST-LINE"),
    ] {
        let mark = |s: &str| if s.contains(marker) { "kept" } else { "lost" };
        table.push_str(&format!(
            "| {name} | {} | {} |\n",
            mark(&without),
            mark(&with)
        ));
    }
    table.push_str(&format!(
        "| characters | {} | {} |\n",
        thousands(without.chars().count() as u64),
        thousands(with.chars().count() as u64)
    ));
    eprintln!(
        "Copilot CLI {}, a {} byte shell output:\n{table}",
        CopilotCli::NPM.version,
        big.len()
    );
    assert!(
        !without.contains("GUAVA-BLOCKER") && !without.contains("LAST-LINE"),
        "Copilot's own cut kept the middle: the test no longer measures anything\n{table}"
    );
    for marker in ["GUAVA-BLOCKER", "KIWI-TLDR", "LAST-LINE"] {
        assert!(
            with.contains(marker),
            "{marker}\n{table}\n{report}\n{with:.3000}"
        );
    }
    // jkz's view fits under Copilot's limit: Copilot saved nothing.
    assert!(!with.contains("Output too large"), "{with:.2000}");
}

/// Another live chat holds issue 42 and its worktree: the Copilot
/// session's edit in that worktree is refused before it runs, the model
/// reads why, and the file is unchanged.
#[test]
fn copilot_contested_edit_is_refused_with_the_holders_name() {
    let server = StubModel::start(Arc::new(|r: &Request| match r.tool_outputs().len() {
        0 => Turn::Call {
            name: "edit".into(),
            input: json!({"path": r.last_user_text().lines().last().unwrap_or_default().trim(),
                          "old_str": "helo world", "new_str": "hello world"}),
        },
        _ => Turn::Text("Stopping here.".into()),
    }));
    let project = with_pipeline(&server);
    project.install_jkz();
    let greeting = project.write("wt/i42/src/greeting.txt", "helo world\n");
    let wt = project.path().join("wt/i42");
    let start = json!({"session_id": "chat-a", "cwd": project.path(),
                       "hook_event_name": "SessionStart", "source": "startup"});
    let mut hook = Command::new(bin("jkz-chat"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    hook.stdin
        .take()
        .unwrap()
        .write_all(start.to_string().as_bytes())
        .unwrap();
    assert!(hook.wait().unwrap().success());
    let claim = Command::new(bin("jkz"))
        .current_dir(project.path())
        .args(["claim", "42", "--worktree"])
        .arg(&wt)
        .args(["--session", "chat-a"])
        .output()
        .unwrap();
    assert!(
        claim.status.success(),
        "{}",
        String::from_utf8_lossy(&claim.stderr)
    );

    let prompt = format!("Fix the greeting of issue 42 in\n{}", greeting.display());
    let run = project.run(&prompt, &[]);
    run.assert_ok();
    assert_eq!(std::fs::read_to_string(&greeting).unwrap(), "helo world\n");
    let last = server.model_requests().pop().expect("requests");
    let outputs: Vec<String> = last.tool_outputs().into_iter().map(|o| o.text).collect();
    assert_eq!(outputs.len(), 1, "{outputs:?}\n{}", run.report());
    assert!(
        outputs[0].contains("Denied by preToolUse hook") && outputs[0].contains("chat-a"),
        "not refused with jkz's reason: {}\n{}",
        outputs[0],
        run.report()
    );
}
