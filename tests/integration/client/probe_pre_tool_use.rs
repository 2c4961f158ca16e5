//! What the pinned Claude Code does with a `PreToolUse` rewrite of a Bash
//! command (`updatedInput`) and with a `PostToolUse` replacement of a Read
//! (`updatedToolOutput`): the measurements behind "PreToolUse rewrites and
//! Read replacement" in docs/clients.md.
//!
//! Every test here is a measurement, ignored by default (a few seconds per
//! client run, up to a minute a test); run them with
//! `cargo test --test integration client::probe_pre_tool_use -- --ignored --nocapture`.
//! Each prints what it saw and asserts the findings jkz's Bash rewrite and
//! Read outline rely on, so a client version that behaves otherwise fails
//! here before it misleads a user.
//!
//! The hooks are throwaway shell scripts ([`Probe::hook`]): each keeps the
//! input of its Nth call and answers it with a prepared JSON answer. The
//! commands the model runs are small scripts that leave a marker file, so a
//! case tells which command really ran.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::adapter::ClaudeCode;
use super::stub_model::{Request, StubModel, ToolOutput, Turn};
use super::{ClientRun, Project, RealClient};

/// The tool calls (inputs) of the model's own turns, as the request's
/// history carries them.
fn tool_uses(r: &Request) -> Vec<Value> {
    let mut out = Vec::new();
    for m in r.body["messages"].as_array().into_iter().flatten() {
        if m["role"] != "assistant" {
            continue;
        }
        for b in m["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_use" {
                out.push(b["input"].clone());
            }
        }
    }
    out
}

/// POSIX single quotes: the shell hands `s` over byte for byte.
fn sq(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn bash(command: &str) -> Turn {
    Turn::Call {
        name: "Bash".into(),
        input: json!({"command": command, "description": "probe"}),
    }
}

fn tool(name: &str, input: Value) -> Turn {
    Turn::Call {
        name: name.into(),
        input,
    }
}

/// A PreToolUse answer that rewrites the command, with an optional decision.
fn rewrite(command: &str, decision: Option<&str>) -> Value {
    let mut out = json!({"hookEventName": "PreToolUse", "updatedInput": {"command": command}});
    if let Some(d) = decision {
        out["permissionDecision"] = json!(d);
    }
    json!({ "hookSpecificOutput": out })
}

/// The rewrite shapes measured. `file` holds the original's output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// `{ eval 'ORIGINAL'; } >'F' 2>&1; s=$?; cat 'F'; (exit $s)`
    BraceEval,
    /// The same, with `trap 'cat F' EXIT` around it, so an `exit` in the
    /// original still prints its output.
    BraceEvalTrap,
    /// `exec 3>&1 4>&2 >'F' 2>&1; ORIGINAL⏎s=$?; exec 1>&3 2>&4 3>&- 4>&-; cat 'F'; (exit $s)`:
    /// the original's words stay visible to the client's permission check.
    Exec,
    /// The same, with `trap 'exec 1>&3 2>&4; cat F' EXIT` around it.
    ExecTrap,
}

fn wrapped(shape: Shape, original: &str, file: &str) -> String {
    let f = sq(file);
    match shape {
        Shape::BraceEval => {
            format!("{{ eval {}; }} >{f} 2>&1; s=$?; cat {f}; (exit $s)", sq(original))
        }
        Shape::BraceEvalTrap => format!(
            "trap {} EXIT; {{ eval {}; }} >{f} 2>&1; s=$?; trap - EXIT; cat {f}; (exit $s)",
            sq(&format!("cat {f}")),
            sq(original)
        ),
        Shape::Exec => format!(
            "exec 3>&1 4>&2 >{f} 2>&1; {original}\ns=$?; exec 1>&3 2>&4 3>&- 4>&-; cat {f}; (exit $s)"
        ),
        Shape::ExecTrap => format!(
            "trap {} EXIT; exec 3>&1 4>&2 >{f} 2>&1; {original}\ns=$?; trap - EXIT; \
             exec 1>&3 2>&4 3>&- 4>&-; cat {f}; (exit $s)",
            sq(&format!("exec 1>&3 2>&4; cat {f}"))
        ),
    }
}

/// A temp project, its own `HOME`, and a model that answers the request
/// carrying N tool results with step N of its script (then "Done.").
struct Probe {
    server: StubModel,
    project: Project<ClaudeCode>,
    steps: Arc<Mutex<Vec<Turn>>>,
}

/// One finished run.
struct Ran {
    shown: Vec<ToolOutput>,
    /// The model's own tool calls, as the last request's history carries them.
    calls: Vec<Value>,
    result: Value,
    report: String,
}

impl Probe {
    fn new() -> Probe {
        let steps: Arc<Mutex<Vec<Turn>>> = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::clone(&steps);
        let server = StubModel::start(Arc::new(move |r: &Request| {
            let n = r.tool_outputs().len();
            let steps = script.lock().unwrap();
            steps
                .get(n)
                .cloned()
                .unwrap_or_else(|| Turn::Text("Done.".into()))
        }));
        let project = ClaudeCode::project(&server);
        std::fs::create_dir(project.home().join("probe")).unwrap();
        // Permission rules in the project's settings count only in a trusted
        // workspace ("Ignoring 1 permissions.allow entry …: this workspace
        // has not been trusted"); hooks run either way.
        let dir = project.path().canonicalize().unwrap();
        let trust = json!({"projects": {dir.to_string_lossy(): {"hasTrustDialogAccepted": true}}});
        std::fs::write(project.home().join(".claude.json"), trust.to_string()).unwrap();
        Probe {
            server,
            project,
            steps,
        }
    }

    /// Where the markers, programs and hook records live (outside the
    /// project, so the client's file checks never see them).
    fn dir(&self) -> PathBuf {
        self.project.home().join("probe")
    }

    fn path(&self, name: &str) -> String {
        self.dir().join(name).display().to_string()
    }

    fn script(&self, steps: Vec<Turn>) {
        *self.steps.lock().unwrap() = steps;
    }

    /// An executable script in the probe directory; returns its path.
    fn program(&self, name: &str, body: &str) -> String {
        let path = self.dir().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.display().to_string()
    }

    /// A program that leaves the marker `NAME.marker` and prints `NAME`.
    fn marking(&self, name: &str) -> String {
        let marker = self.path(&format!("{name}.marker"));
        self.program(
            &format!("{name}.sh"),
            &format!("touch {}; printf {name}", sq(&marker)),
        )
    }

    /// `filter.sh`: leaves `filter.marker`, copies stdin to stdout.
    fn filter(&self) -> String {
        let marker = self.path("filter.marker");
        self.program("filter.sh", &format!("touch {}; cat", sq(&marker)))
    }

    fn ran(&self, name: &str) -> bool {
        self.dir().join(format!("{name}.marker")).exists()
    }

    /// A hook command: keeps each call's input as `NAME/in-N.json`, waits
    /// `sleep` seconds, then prints `answers[N]` (or, past the list, the
    /// last answer when `repeat`; `None` prints nothing).
    fn hook(&self, name: &str, answers: &[Option<Value>], repeat: bool, sleep: u32) -> Value {
        let d = self.dir().join(name);
        std::fs::create_dir(&d).unwrap();
        for (i, a) in answers.iter().enumerate() {
            if let Some(a) = a {
                std::fs::write(d.join(format!("answer-{i}.json")), a.to_string()).unwrap();
            }
        }
        if repeat {
            if let Some(Some(a)) = answers.last() {
                std::fs::write(d.join("answer.json"), a.to_string()).unwrap();
            }
        }
        let d = sq(&d.display().to_string());
        let wait = if sleep > 0 {
            format!("sleep {sleep}\n")
        } else {
            String::new()
        };
        let script = self.program(
            &format!("{name}.hook"),
            &format!(
                "d={d}\nn=$(ls \"$d\" | grep -c '^in-')\ncat > \"$d/in-$n.json\"\n{wait}\
                 if [ -f \"$d/answer-$n.json\" ]; then cat \"$d/answer-$n.json\"; \
                 elif [ -f \"$d/answer.json\" ]; then cat \"$d/answer.json\"; fi\nexit 0"
            ),
        );
        json!({"type": "command", "command": script, "timeout": 30})
    }

    /// The inputs a hook received, in call order.
    fn inputs(&self, name: &str) -> Vec<Value> {
        let d = self.dir().join(name);
        let mut out = Vec::new();
        for i in 0.. {
            match std::fs::read(d.join(format!("in-{i}.json"))) {
                Ok(b) => out.push(serde_json::from_slice(&b).expect("hook input is JSON")),
                Err(_) => break,
            }
        }
        out
    }

    /// Writes `.claude/settings.json`: `hooks` and `permissions`.
    fn settings(&self, hooks: Value, permissions: Value) {
        let s = json!({"hooks": hooks, "permissions": permissions});
        self.project.write(".claude/settings.json", s.to_string());
    }

    /// Runs one `claude -p` turn with `extra` arguments.
    fn run(&self, extra: &[&str]) -> Ran {
        let run: ClientRun = self.project.run("Run the probe.", extra);
        let report = run.report();
        assert!(
            run.finished.status.is_some_and(|s| s.success()),
            "claude failed\n{report}"
        );
        let last = self
            .server
            .model_requests()
            .into_iter()
            .max_by_key(|r| r.tool_outputs().len())
            .unwrap_or_else(|| panic!("no model request\n{report}"));
        Ran {
            shown: last.tool_outputs(),
            calls: tool_uses(&last),
            result: run.result.clone().unwrap_or(Value::Null),
            report,
        }
    }
}

/// What one Bash call with a PreToolUse answer came to.
struct Outcome {
    shown: ToolOutput,
    orig: bool,
    new: bool,
    filter: bool,
    pre: Vec<Value>,
    post: Vec<Value>,
    result: Value,
    report: String,
}

/// The model runs `orig.sh` once; the PreToolUse hook answers with
/// `answer(probe)`; `permissions(probe)` goes into the project's settings.
fn one_bash(
    permissions: impl Fn(&Probe) -> Value,
    original: impl Fn(&Probe) -> String,
    answer: impl Fn(&Probe) -> Option<Value>,
    args: &[&str],
) -> Outcome {
    let p = Probe::new();
    p.marking("orig");
    p.marking("new");
    p.filter();
    p.program("fail.sh", "printf FAIL; exit 3");
    let hooks = json!({
        "PreToolUse": [{"matcher": "Bash", "hooks": [p.hook("pre", &[answer(&p)], true, 0)]}],
        "PostToolUse": [{"matcher": "", "hooks": [p.hook("post", &[], false, 0)]}],
        "PostToolUseFailure": [{"matcher": "", "hooks": [p.hook("postfail", &[], false, 0)]}],
    });
    p.settings(hooks, permissions(&p));
    p.script(vec![bash(&original(&p))]);
    let ran = p.run(args);
    let shown = ran.shown.first().cloned().unwrap_or_else(|| ToolOutput {
        text: String::new(),
        is_error: false,
    });
    Outcome {
        shown,
        orig: p.ran("orig"),
        new: p.ran("new"),
        filter: p.ran("filter"),
        pre: p.inputs("pre"),
        post: p.inputs("post"),
        result: ran.result,
        report: ran.report,
    }
}

fn rule(p: &Probe, program: &str) -> String {
    format!("Bash({}:*)", p.path(program))
}

const HARNESS: &[&str] = &["--allowedTools", "Bash"];
const DEFAULT: &[&str] = &["--permission-mode", "default"];

#[test]
#[ignore = "a measurement of the real client (about 40 s): PreToolUse rewrites and permissions"]
fn measure_a_rewritten_bash_command_and_its_permission() {
    let orig = |p: &Probe| p.path("orig.sh");
    let new = |p: &Probe| Some(rewrite(&p.path("new.sh"), None));
    let allow_orig = |p: &Probe| json!({"allow": [rule(p, "orig.sh")]});
    let none = |_: &Probe| json!({});
    let deny_orig = |p: &Probe| json!({"deny": [rule(p, "orig.sh")]});
    let piped = |p: &Probe| format!("{} |& {}", p.path("orig.sh"), p.path("filter.sh"));
    let brace = |p: &Probe| wrapped(Shape::BraceEval, &p.path("orig.sh"), &p.path("orig.out"));
    let exec = |p: &Probe| wrapped(Shape::Exec, &p.path("orig.sh"), &p.path("orig.out"));
    let exec_trap = |p: &Probe| wrapped(Shape::ExecTrap, &p.path("orig.sh"), &p.path("orig.out"));
    let brace_trap = |p: &Probe| {
        wrapped(
            Shape::BraceEvalTrap,
            &p.path("orig.sh"),
            &p.path("orig.out"),
        )
    };

    let mut rows = Vec::new();
    let mut row = |what: &str, o: &Outcome| {
        let text: String = o.shown.text.chars().take(110).collect();
        rows.push(format!(
            "| {what} | {} | {} | {} | {} | {:?} |",
            yes(o.orig),
            yes(o.new),
            yes(o.filter),
            yes(o.shown.is_error),
            text.replace('\n', "⏎")
        ));
    };

    // The harness's mode: --allowedTools Bash. NEW runs instead of the
    // original; updatedInput replaces the whole input (the description is
    // gone) and PostToolUse sees NEW.
    let o = one_bash(none, orig, new, HARNESS);
    row("--allowedTools Bash; updatedInput, no decision", &o);
    assert!(o.new && !o.orig, "{}", o.report);
    assert_eq!(o.shown.text, "new", "{}", o.report);
    assert_eq!(o.pre[0]["permission_mode"], "default", "{}", o.report);
    assert_eq!(
        o.post[0]["tool_input"],
        json!({"command": o.pre[0]["tool_input"]["command"].as_str().unwrap().replace("orig.sh", "new.sh")}),
        "PostToolUse sees NEW, and only what updatedInput named\n{}",
        o.report
    );

    // Default mode, the original allowed by a rule: without a hook it runs.
    let o = one_bash(allow_orig, orig, |_| None, DEFAULT);
    row("default, allow rule for ORIG; no answer", &o);
    assert!(o.orig && !o.shown.is_error, "{}", o.report);

    // … rewritten without a decision: the permission is judged on NEW,
    // which no rule allows: refused, nothing runs.
    let o = one_bash(allow_orig, orig, new, DEFAULT);
    row(
        "default, allow rule for ORIG; updatedInput NEW, no decision",
        &o,
    );
    assert!(!o.orig && !o.new, "{}", o.report);
    assert!(o.shown.is_error, "{}", o.report);
    assert_eq!(
        o.shown.text, "This command requires approval",
        "{}",
        o.report
    );

    // Nothing allows the original: without a hook it is refused …
    let o = one_bash(none, orig, |_| None, DEFAULT);
    row("default, no rule; no answer", &o);
    assert!(!o.orig, "{}", o.report);
    assert_eq!(
        o.shown.text, "This command requires approval",
        "{}",
        o.report
    );
    // … rewritten without a decision to a command the client allows by
    // itself (read-only `printf`), it runs: only NEW is judged.
    let o = one_bash(
        none,
        orig,
        |_| Some(rewrite("printf read-only", None)),
        DEFAULT,
    );
    row(
        "default, no rule; updatedInput `printf read-only`, no decision",
        &o,
    );
    assert!(!o.orig && o.shown.text == "read-only", "{}", o.report);

    // … with "allow": NEW runs.
    let allow_new = |p: &Probe| Some(rewrite(&p.path("new.sh"), Some("allow")));
    let o = one_bash(allow_orig, orig, allow_new, DEFAULT);
    row("default, allow rule for ORIG; allow + updatedInput NEW", &o);
    assert!(o.new && !o.orig, "{}", o.report);

    // … and with "allow" NEW runs even when nothing allows the original:
    // the hook's allow grants what the user never did.
    let o = one_bash(none, orig, allow_new, DEFAULT);
    row("default, no rule; allow + updatedInput NEW", &o);
    assert!(o.new && !o.orig, "{}", o.report);

    // "ask" in -p: refused.
    let ask_new = |p: &Probe| Some(rewrite(&p.path("new.sh"), Some("ask")));
    let o = one_bash(allow_orig, orig, ask_new, DEFAULT);
    row("default, allow rule for ORIG; ask + updatedInput NEW", &o);
    assert!(!o.orig && !o.new, "{}", o.report);
    assert_eq!(
        o.shown.text, "Hook PreToolUse:Bash asked for confirmation for this tool",
        "{}",
        o.report
    );

    // "defer" in -p: the turn ends, the call handed back unrun.
    let defer_new = |p: &Probe| Some(rewrite(&p.path("new.sh"), Some("defer")));
    let o = one_bash(allow_orig, orig, defer_new, DEFAULT);
    row("default, allow rule for ORIG; defer + updatedInput NEW", &o);
    assert!(!o.orig && !o.new, "{}", o.report);
    assert_eq!(o.result["stop_reason"], "tool_deferred", "{}", o.report);

    // A pipe into a filter the user allowed: each part judged by its own
    // rule; runs.
    let allow_both = |p: &Probe| json!({"allow": [rule(p, "orig.sh"), rule(p, "filter.sh")]});
    let o = one_bash(
        allow_both,
        orig,
        |p| Some(rewrite(&piped(p), None)),
        DEFAULT,
    );
    row(
        "default, allow rules for ORIG and FILTER; `ORIG |& FILTER`, no decision",
        &o,
    );
    assert!(o.orig && o.filter && !o.shown.is_error, "{}", o.report);
    assert_eq!(o.shown.text, "orig", "{}", o.report);

    // A pipe loses the original's exit status: a failing original reads
    // as a success (no "Exit code", PostToolUse rather than
    // PostToolUseFailure).
    let o = one_bash(
        none,
        |p| p.path("fail.sh"),
        |p| {
            Some(rewrite(
                &format!("{} |& {}", p.path("fail.sh"), p.path("filter.sh")),
                None,
            ))
        },
        HARNESS,
    );
    row(
        "--allowedTools Bash; `FAILING |& FILTER` (exit 3), no decision",
        &o,
    );
    assert!(
        o.filter && !o.shown.is_error && o.shown.text == "FAIL",
        "{}",
        o.report
    );
    assert_eq!(o.post.len(), 1, "{}", o.report);

    // The same pipe without a rule for the filter: refused.
    let o = one_bash(
        allow_orig,
        orig,
        |p| Some(rewrite(&piped(p), None)),
        DEFAULT,
    );
    row(
        "default, allow rule for ORIG only; `ORIG |& FILTER`, no decision",
        &o,
    );
    assert!(!o.orig && !o.filter, "{}", o.report);
    assert!(o.shown.text.contains("requires approval"), "{}", o.report);

    // The brace-eval wrap in default mode: the client's static check
    // refuses it whatever the rules say.
    let o = one_bash(
        allow_orig,
        orig,
        |p| Some(rewrite(&brace(p), None)),
        DEFAULT,
    );
    row(
        "default, allow rule for ORIG; brace-eval wrap, no decision",
        &o,
    );
    assert!(!o.orig, "{}", o.report);
    assert_eq!(
        o.shown.text, "Contains brace with quote character (expansion obfuscation)",
        "{}",
        o.report
    );

    // The exec wrap in default mode: refused too.
    let o = one_bash(allow_orig, orig, |p| Some(rewrite(&exec(p), None)), DEFAULT);
    row("default, allow rule for ORIG; exec wrap, no decision", &o);
    assert!(!o.orig, "{}", o.report);
    assert_eq!(
        o.shown.text, "This command can't be checked before it runs",
        "{}",
        o.report
    );

    // The trap variants: refused the same way.
    let o = one_bash(
        allow_orig,
        orig,
        |p| Some(rewrite(&brace_trap(p), None)),
        DEFAULT,
    );
    row(
        "default, allow rule for ORIG; brace-eval+trap wrap, no decision",
        &o,
    );
    assert!(!o.orig, "{}", o.report);
    assert_eq!(
        o.shown.text, "Contains brace with quote character (expansion obfuscation)",
        "{}",
        o.report
    );
    let o = one_bash(
        allow_orig,
        orig,
        |p| Some(rewrite(&exec_trap(p), None)),
        DEFAULT,
    );
    row(
        "default, allow rule for ORIG; exec+trap wrap, no decision",
        &o,
    );
    assert!(!o.orig, "{}", o.report);
    assert_eq!(
        o.shown.text, "This command can't be checked before it runs",
        "{}",
        o.report
    );

    // A deny rule for the original, Bash otherwise allowed: without a hook
    // it is refused …
    let o = one_bash(deny_orig, orig, |_| None, HARNESS);
    row("--allowedTools Bash, deny rule for ORIG; no answer", &o);
    assert!(
        !o.orig && o.shown.text.ends_with("has been denied."),
        "{}",
        o.report
    );

    // … the brace-eval wrap hides it from the rule: it runs.
    let o = one_bash(deny_orig, orig, |p| Some(rewrite(&brace(p), None)), HARNESS);
    row(
        "--allowedTools Bash, deny rule for ORIG; brace-eval wrap, no decision",
        &o,
    );
    assert!(o.orig && !o.shown.is_error, "{}", o.report);

    let o = one_bash(
        deny_orig,
        orig,
        |p| Some(rewrite(&brace_trap(p), None)),
        HARNESS,
    );
    row(
        "--allowedTools Bash, deny rule for ORIG; brace-eval+trap wrap, no decision",
        &o,
    );
    assert!(o.orig && !o.shown.is_error, "{}", o.report);

    // … a wrap that leaves the original's words in the command keeps the
    // rule in force: the pipe, and the exec wrap.
    let o = one_bash(deny_orig, orig, |p| Some(rewrite(&piped(p), None)), HARNESS);
    row(
        "--allowedTools Bash, deny rule for ORIG; `ORIG |& FILTER`, no decision",
        &o,
    );
    assert!(
        !o.orig && o.shown.text.ends_with("has been denied."),
        "{}",
        o.report
    );
    let o = one_bash(deny_orig, orig, |p| Some(rewrite(&exec(p), None)), HARNESS);
    row(
        "--allowedTools Bash, deny rule for ORIG; exec wrap, no decision",
        &o,
    );
    assert!(
        !o.orig && o.shown.text.ends_with("has been denied."),
        "{}",
        o.report
    );
    let o = one_bash(
        deny_orig,
        orig,
        |p| Some(rewrite(&exec_trap(p), None)),
        HARNESS,
    );
    row(
        "--allowedTools Bash, deny rule for ORIG; exec+trap wrap, no decision",
        &o,
    );
    assert!(
        !o.orig && o.shown.text.ends_with("has been denied."),
        "{}",
        o.report
    );
    // … and without the rule it runs.
    let o = one_bash(none, orig, |p| Some(rewrite(&exec_trap(p), None)), HARNESS);
    row("--allowedTools Bash; exec+trap wrap, no decision", &o);
    assert!(o.orig && o.shown.text == "orig", "{}", o.report);

    // Deny rules are judged on NEW only: a rule against the original does
    // not stop a rewrite to something else, even with "allow".
    let o = one_bash(deny_orig, orig, allow_new, DEFAULT);
    row("default, deny rule for ORIG; allow + updatedInput NEW", &o);
    assert!(o.new && !o.orig, "{}", o.report);

    // Plan mode: the input says so; a read-only command still runs.
    let o = one_bash(
        none,
        |_| "printf hi".into(),
        |_| None,
        &["--permission-mode", "plan"],
    );
    row("plan mode; `printf hi`, no answer", &o);
    assert_eq!(o.pre[0]["permission_mode"], "plan", "{}", o.report);
    assert_eq!(o.shown.text, "hi", "{}", o.report);

    println!("| case | ORIG ran | NEW ran | FILTER ran | is_error | the model saw |");
    println!("|---|---|---|---|---|---|");
    for r in rows {
        println!("{r}");
    }
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// Two PreToolUse hooks in one matcher group, each answering once.
fn two_hooks(
    first: impl Fn(&Probe) -> Option<Value>,
    first_sleep: u32,
    second: impl Fn(&Probe) -> Option<Value>,
    second_sleep: u32,
    args: &[&str],
) -> (Probe, Ran) {
    let p = Probe::new();
    p.marking("orig");
    p.marking("a");
    p.marking("b");
    let hooks = json!({
        "PreToolUse": [{"matcher": "Bash", "hooks": [
            p.hook("first", &[first(&p)], false, first_sleep),
            p.hook("second", &[second(&p)], false, second_sleep),
        ]}],
    });
    p.settings(hooks, json!({}));
    p.script(vec![bash(&p.path("orig.sh"))]);
    let ran = p.run(args);
    (p, ran)
}

#[test]
#[ignore = "a measurement of the real client (about 20 s): two PreToolUse answers for one call"]
fn measure_two_pre_tool_use_answers() {
    let deny = |_: &Probe| {
        Some(json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "deny", "permissionDecisionReason": "DENIED-BY-A"}}))
    };
    let to = |name: &'static str, decision: Option<&'static str>| {
        move |p: &Probe| Some(rewrite(&p.path(&format!("{name}.sh")), decision))
    };
    let nothing = |_: &Probe| None;
    let mut rows = Vec::new();
    let mut row = |what: &str, p: &Probe, ran: &Ran| {
        let s = ran
            .shown
            .first()
            .map(|s| s.text.clone())
            .unwrap_or_default();
        rows.push(format!(
            "| {what} | {} | {} | {} | {s:?} |",
            yes(p.ran("orig")),
            yes(p.ran("a")),
            yes(p.ran("b"))
        ));
    };

    // A refusal and a rewrite: the refusal wins, in either order.
    for (what, (p, ran)) in [
        (
            "deny; rewrite to B",
            two_hooks(deny, 0, to("b", None), 0, HARNESS),
        ),
        (
            "rewrite to B; deny",
            two_hooks(to("b", None), 0, deny, 0, HARNESS),
        ),
    ] {
        row(what, &p, &ran);
        assert!(!p.ran("orig") && !p.ran("b"), "{}", ran.report);
        assert_eq!(
            ran.shown[0].text, "PreToolUse:Bash hook error: DENIED-BY-A",
            "{}",
            ran.report
        );
    }

    // Two rewrites: the one that answers last runs, whatever the order of
    // registration.
    let (p, ran) = two_hooks(to("a", None), 1, to("b", None), 0, HARNESS);
    row("rewrite to A (answers 1 s later); rewrite to B", &p, &ran);
    assert!(p.ran("a") && !p.ran("b"), "{}", ran.report);
    let (p, ran) = two_hooks(to("a", None), 0, to("b", None), 1, HARNESS);
    row("rewrite to A; rewrite to B (answers 1 s later)", &p, &ran);
    assert!(p.ran("b") && !p.ran("a"), "{}", ran.report);

    // allow + rewrite, and a hook that says nothing: the rewrite runs.
    let (p, ran) = two_hooks(to("a", Some("allow")), 0, nothing, 0, DEFAULT);
    row("allow + rewrite to A; nothing (default mode)", &p, &ran);
    assert!(p.ran("a") && !p.ran("orig"), "{}", ran.report);

    // Decisions and rewrites merge apart: one hook's allow approves the
    // other's later rewrite, unchecked (no rule allows b.sh).
    let (p, ran) = two_hooks(to("a", Some("allow")), 0, to("b", None), 1, DEFAULT);
    row(
        "allow + rewrite to A; rewrite to B, no decision (answers 1 s later; default mode)",
        &p,
        &ran,
    );
    assert!(p.ran("b") && !p.ran("a"), "{}", ran.report);

    println!("| the two answers | ORIG ran | A ran | B ran | the model saw |");
    println!("|---|---|---|---|---|");
    for r in rows {
        println!("{r}");
    }
}

/// The calls of [`measure_a_rewritten_command_in_the_clients_shell`].
const SHELL_CALLS: [&str; 5] = [
    "mkdir -p sub && cd sub",
    "pwd",
    "sh -c 'echo boom; exit 3'",
    "myfunc; myalias",
    "echo out1; echo err1 >&2; echo out2; exit 4",
];

/// Runs [`SHELL_CALLS`], each rewritten to `shape` (`None`: as they are).
fn shell_calls(shape: Option<Shape>) -> (Probe, Ran) {
    let p = Probe::new();
    // The user's shell startup file: the client snapshots its functions
    // and aliases into the shell each command runs in.
    let rc = "myfunc() { echo FUNC-OK; }\nalias myalias='echo ALIAS-OK'\n";
    for f in [".bashrc", ".zshrc"] {
        std::fs::write(p.project.home().join(f), rc).unwrap();
    }
    let answers: Vec<Option<Value>> = SHELL_CALLS
        .iter()
        .enumerate()
        .map(|(i, c)| {
            shape.map(|s| {
                let mut a = rewrite(&wrapped(s, c, &p.path(&format!("out-{i}"))), None);
                a["hookSpecificOutput"]["updatedInput"]["description"] = json!("probe");
                a
            })
        })
        .collect();
    let hooks = json!({
        "PreToolUse": [{"matcher": "Bash", "hooks": [p.hook("pre", &answers, false, 0)]}],
        "PostToolUse": [{"matcher": "", "hooks": [p.hook("post", &[], false, 0)]}],
        "PostToolUseFailure": [{"matcher": "", "hooks": [p.hook("postfail", &[], false, 0)]}],
    });
    p.settings(hooks, json!({}));
    p.script(SHELL_CALLS.iter().map(|c| bash(c)).collect());
    let ran = p.run(HARNESS);
    assert_eq!(ran.shown.len(), SHELL_CALLS.len(), "{}", ran.report);
    (p, ran)
}

#[test]
#[ignore = "a measurement of the real client (about 30 s): a rewritten command in the client's shell"]
fn measure_a_rewritten_command_in_the_clients_shell() {
    let (plain_probe, plain) = shell_calls(None);
    let (p, brace) = shell_calls(Some(Shape::BraceEval));
    let sub = |p: &Probe| {
        let dir = p.project.path().canonicalize().unwrap();
        dir.join("sub").display().to_string()
    };
    let sub_of_plain = sub(&plain_probe);
    let expected = [
        ("(Bash completed with no output)", false),
        (sub_of_plain.as_str(), false),
        ("Exit code 3\nboom", true),
        ("FUNC-OK\nALIAS-OK", false),
        ("Exit code 4\nout1\nerr1\nout2", true),
    ];
    let seen = |r: &Ran| {
        r.shown
            .iter()
            .map(|s| (s.text.clone(), s.is_error))
            .collect::<Vec<_>>()
    };
    let want = |e: &[(&str, bool)]| {
        e.iter()
            .map(|(t, b)| (t.to_string(), *b))
            .collect::<Vec<_>>()
    };
    println!("as they are: {:?}", seen(&plain));
    assert_eq!(seen(&plain), want(&expected), "{}", plain.report);
    let expected_in = |p: &Probe| {
        let mut e = want(&expected);
        e[1].0 = sub(p);
        e
    };

    // The brace-eval wrap: the same, except that an `exit` in the original
    // ends the shell before `cat`: its output is lost.
    println!("brace-eval wrap: {:?}", seen(&brace));
    let mut lost = expected_in(&p);
    lost[4] = ("Exit code 4".into(), true);
    assert_eq!(seen(&brace), lost, "{}", brace.report);

    // PostToolUse and PostToolUseFailure see the rewritten command; the
    // model's history keeps its own.
    let post = p.inputs("post");
    let fail = p.inputs("postfail");
    println!(
        "PostToolUse tool_input.command: {}\nPostToolUseFailure: {}",
        post[0]["tool_input"]["command"], fail[0]["tool_input"]["command"]
    );
    assert!(
        post[0]["tool_input"]["command"]
            .as_str()
            .is_some_and(|c| c.starts_with("{ eval 'mkdir -p sub && cd sub'; } >")),
        "{}",
        brace.report
    );
    assert!(
        fail[0]["tool_input"]["command"]
            .as_str()
            .is_some_and(|c| c.starts_with("{ eval 'sh -c '\\''echo boom; exit 3'\\'''; } >")),
        "{}",
        brace.report
    );
    assert_eq!(fail[0]["error"], "Exit code 3\nboom", "{}", brace.report);
    assert_eq!(fail[0]["tool_response"], Value::Null, "{}", brace.report);
    let calls: Vec<&str> = brace
        .calls
        .iter()
        .filter_map(|c| c["command"].as_str())
        .collect();
    assert_eq!(calls, SHELL_CALLS, "{}", brace.report);

    // The exec wrap loses it the same way; with an EXIT trap that prints
    // the kept output, neither wrap loses anything.
    for (shape, loses) in [
        (Shape::Exec, true),
        (Shape::BraceEvalTrap, false),
        (Shape::ExecTrap, false),
    ] {
        let (p, ran) = shell_calls(Some(shape));
        println!("{shape:?}: {:?}", seen(&ran));
        let mut e = expected_in(&p);
        if loses {
            e[4] = ("Exit code 4".into(), true);
        }
        assert_eq!(seen(&ran), e, "{shape:?}\n{}", ran.report);
    }
}

/// `n` characters of numbered lines, never ending in a newline.
fn output(n: usize) -> String {
    let mut s = String::with_capacity(n + 64);
    let mut i = 0;
    while s.len() < n {
        s.push_str(&format!("L{i:06} {}\n", "x".repeat(38)));
        i += 1;
    }
    s.truncate(n);
    if s.ends_with('\n') {
        s.pop();
        s.push('x');
    }
    s
}

/// What the client shows the model for a command that printed `out` and
/// exited `code` (not 0), as measured: the first 30,000 characters of the
/// output, trailing white space trimmed, after `Exit code N⏎`; when that is
/// over 11,024 characters, its first and last 5,000 around a marker that
/// counts what is left out.
fn failure_view(out: &str, code: i32) -> String {
    let kept: String = out.chars().take(30_000).collect();
    let whole = format!("Exit code {code}\n{}", kept.trim_end());
    let n = whole.chars().count();
    if n <= 11_024 {
        return whole;
    }
    let head: String = whole.chars().take(5_000).collect();
    let tail: String = whole.chars().skip(n - 5_000).collect();
    format!(
        "{head}\n\n... [{} characters truncated] ...\n\n{tail}",
        n - 10_000
    )
}

#[test]
#[ignore = "a measurement of the real client (about 10 s): what a failing command shows"]
fn measure_what_a_failing_command_shows() {
    let sizes = [9_000, 11_012, 11_013, 12_000, 30_000, 31_000, 400_000];
    let p = Probe::new();
    let mut steps = Vec::new();
    for n in sizes {
        let file = p.path(&format!("out-{n}"));
        std::fs::write(&file, output(n)).unwrap();
        steps.push(bash(&format!("cat {}; false", sq(&file))));
    }
    let ok = p.path("ok-29000");
    std::fs::write(&ok, output(29_000)).unwrap();
    steps.push(bash(&format!("cat {}", sq(&ok))));
    p.script(steps);
    let ran = p.run(HARNESS);
    println!("| output (chars), exit 1 | shown (chars) | cut |");
    println!("|---|---|---|");
    for (i, n) in sizes.iter().enumerate() {
        let s = &ran.shown[i];
        let cut = s
            .text
            .find("\n\n... [")
            .map(|at| s.text[at..].lines().nth(2).unwrap_or("").to_string())
            .unwrap_or_else(|| "whole".into());
        println!("| {n} | {} | {cut} |", s.text.chars().count());
        assert!(s.is_error, "{}", ran.report);
        assert_eq!(s.text, failure_view(&output(*n), 1), "{n} characters");
    }
    let s = &ran.shown[sizes.len()];
    println!("| 29000, exit 0 | {} | whole |", s.text.chars().count());
    assert!(!s.is_error);
    assert_eq!(s.text, output(29_000));
}

/// `big.rs`: `lines` lines, a function every 40.
fn source(lines: usize) -> String {
    let mut s = String::new();
    for i in 1..=lines {
        if i % 40 == 1 {
            s.push_str(&format!("pub fn function_{i:05}(x: u32) -> u32 {{\n"));
        } else if i % 40 == 0 {
            s.push_str("}\n");
        } else {
            s.push_str(&format!("    let v{i:05} = x + {i}; // body line {i:05}\n"));
        }
    }
    s
}

const OUTLINE: &str = "OUTLINE fn function_00001 at 1\nOUTLINE fn function_00041 at 41";

/// A PostToolUse answer replacing a Read's content, in the Read's own
/// shape (`file` as the hook input's `tool_response` has it).
fn outline(file: &str, start: u64, total: u64) -> Value {
    json!({"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": {
        "type": "text",
        "file": {"filePath": file, "content": OUTLINE, "numLines": 2, "startLine": start, "totalLines": total}}}})
}

/// Runs `steps` on a project with `big.rs` of `lines` lines; the
/// PostToolUse Read hook answers `read_answers`, call by call.
fn reads(
    lines: usize,
    read_answers: impl Fn(&str) -> Vec<Option<Value>>,
    steps: &[Value],
) -> (Probe, Ran, String) {
    let p = Probe::new();
    let file = p.project.write("big.rs", source(lines));
    let file = file.canonicalize().unwrap().display().to_string();
    let hooks = json!({
        "PostToolUse": [{"matcher": "Read", "hooks": [p.hook("read", &read_answers(&file), false, 0)]}],
        "PostToolUseFailure": [{"matcher": "", "hooks": [p.hook("fail", &[], false, 0)]}],
    });
    p.settings(hooks, json!({}));
    let at = |v: &Value| {
        let mut v = v.clone();
        if v["tool"] != "Bash" {
            v["input"]["file_path"] = json!(file);
        }
        tool(v["tool"].as_str().unwrap(), v["input"].clone())
    };
    p.script(steps.iter().map(at).collect());
    let ran = p.run(&["--allowedTools", "Read,Edit,Bash"]);
    (p, ran, file)
}

/// Line 300 of `big.rs`, and what the Edits make of it.
const LINE_300: &str = "    let v00300 = x + 300; // body line 00300";
const EDITED: &str = "    let v00300 = x + 3000; // EDITED";

fn read(extra: Value) -> Value {
    let mut input = json!({});
    for (k, v) in extra.as_object().unwrap() {
        input[k] = v.clone();
    }
    json!({"tool": "Read", "input": input})
}

fn edit() -> Value {
    json!({"tool": "Edit", "input": {"old_string": LINE_300, "new_string": EDITED}})
}

fn edited(p: &Probe) -> bool {
    let now = std::fs::read_to_string(p.project.path().join("big.rs")).unwrap();
    now.contains(EDITED) && !now.contains(LINE_300)
}

#[test]
#[ignore = "a measurement of the real client (about 20 s): a Read replaced by an outline, then Edit"]
fn measure_a_replaced_read_and_edit() {
    let numbered = |s: &str, from: usize| {
        s.split('\n')
            .enumerate()
            .map(|(i, l)| format!("{}\t{l}", i + from))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let updated = "has been updated successfully.";
    let current = "(file state is current in your context — no need to Read it back)";

    // The Read's tool_response, as the hook receives it.
    let (p, ran, file) = reads(400, |_| vec![None], &[read(json!({}))]);
    let input = &p.inputs("read")[0];
    println!("Read tool_response (content cut): {}", {
        let mut r = input["tool_response"].clone();
        r["file"]["content"] = json!("…");
        r
    });
    assert_eq!(input["tool_response"]["type"], "text");
    assert_eq!(
        input["tool_response"]["file"],
        json!({"filePath": file, "content": source(400), "numLines": 401,
               "startLine": 1, "totalLines": 401}),
        "{}",
        ran.report
    );
    assert_eq!(ran.shown[0].text, numbered(&source(400), 1));

    // The outline in the Read's shape replaces the content; the client
    // numbers its lines from startLine. An Edit of a line the model never
    // saw succeeds, and the client says the model's view is current.
    // A second Read (the hook passing) shows the whole file.
    let (p, ran, _) = reads(
        400,
        |f| vec![Some(outline(f, 1, 401))],
        &[read(json!({})), edit(), read(json!({}))],
    );
    println!("outlined Read: {:?}", ran.shown[0].text);
    println!("then Edit: {:?}", ran.shown[1].text);
    assert_eq!(ran.shown[0].text, numbered(OUTLINE, 1), "{}", ran.report);
    assert!(
        ran.shown[1].text.ends_with(&format!("{updated} {current}")),
        "{}",
        ran.report
    );
    assert!(edited(&p), "{}", ran.report);
    assert!(ran.shown[2].text.contains(EDITED), "{}", ran.report);
    assert!(
        ran.shown[2].text.starts_with("1\tpub fn function_00001"),
        "{}",
        ran.report
    );

    // A plain string as updatedToolOutput is ignored: the whole file shows.
    let string = json!({"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": OUTLINE}});
    let (_, ran, _) = reads(400, |_| vec![Some(string.clone())], &[read(json!({}))]);
    println!(
        "plain-string answer: {} characters shown",
        ran.shown[0].text.len()
    );
    assert_eq!(
        ran.shown[0].text,
        numbered(&source(400), 1),
        "{}",
        ran.report
    );

    // Edit with no Read at all: succeeds.
    let (p, ran, _) = reads(400, |_| vec![], &[edit()]);
    println!("Edit without Read: {:?}", ran.shown[0].text);
    assert!(
        !ran.shown[0].is_error && ran.shown[0].text.ends_with(updated),
        "{}",
        ran.report
    );
    assert!(edited(&p), "{}", ran.report);

    // A partial Read (lines 90-109), outlined with its startLine kept, then
    // an Edit outside the range: succeeds.
    let (p, ran, _) = reads(
        400,
        |f| vec![Some(outline(f, 90, 401))],
        &[read(json!({"offset": 90, "limit": 20})), edit()],
    );
    println!("outlined partial Read: {:?}", ran.shown[0].text);
    println!("then Edit: {:?}", ran.shown[1].text);
    assert_eq!(ran.shown[0].text, numbered(OUTLINE, 90), "{}", ran.report);
    assert!(ran.shown[1].text.ends_with(updated), "{}", ran.report);
    assert!(edited(&p), "{}", ran.report);

    // Size: a 245,000-byte file is shown whole; over 256 KiB the Read fails
    // (PostToolUseFailure, no PostToolUse) with the client's own message.
    let (_, ran, _) = reads(5_500, |_| vec![None], &[read(json!({}))]);
    println!(
        "Read of {} bytes: {} characters shown",
        source(5_500).len(),
        ran.shown[0].text.len()
    );
    assert_eq!(
        ran.shown[0].text,
        numbered(&source(5_500), 1),
        "{}",
        ran.report
    );
    let (p, ran, _) = reads(6_600, |_| vec![None], &[read(json!({}))]);
    println!(
        "Read of {} bytes: {:?}",
        source(6_600).len(),
        ran.shown[0].text
    );
    assert!(ran.shown[0].is_error, "{}", ran.report);
    assert!(
        ran.shown[0]
            .text
            .contains("exceeds maximum allowed size (256KB)"),
        "{}",
        ran.report
    );
    assert!(p.inputs("read").is_empty(), "{}", ran.report);
    assert_eq!(p.inputs("fail").len(), 1, "{}", ran.report);

    // … unless the Read says allow_large: then PostToolUse runs, and the
    // outline replaces it.
    let (p, ran, _) = reads(
        6_600,
        |f| vec![Some(outline(f, 1, 6_601))],
        &[read(json!({"allow_large": true}))],
    );
    println!("allow_large Read, outlined: {:?}", ran.shown[0].text);
    assert_eq!(ran.shown[0].text, numbered(OUTLINE, 1), "{}", ran.report);
    assert_eq!(
        p.inputs("read")[0]["tool_response"]["file"]["numLines"],
        6_601
    );

    // The file changed on disk after the outlined Read: the Edit applies,
    // with a note.
    let append = json!({"tool": "Bash", "input": {"command": "echo '// appended' >> big.rs", "description": "probe"}});
    let (p, ran, _) = reads(
        400,
        |f| vec![Some(outline(f, 1, 401))],
        &[read(json!({})), append, edit()],
    );
    println!(
        "Edit after the file changed on disk: {:?}",
        ran.shown[2].text
    );
    assert!(
        ran.shown[2].text.starts_with("The file ") && ran.shown[2].text.contains(
            "has been updated successfully. (note: the file had been modified on disk since you last read it"
        ),
        "{}",
        ran.report
    );
    assert!(edited(&p), "{}", ran.report);
}
