//! `jkz doctor --probe`: proves that each hook a client would run fires and
//! answers, instead of trusting that the configuration reads right.
//!
//! A doctor that reads config files cannot see a hook that the client runs
//! but that does nothing: a wrong path, a wrong event name, a matcher the
//! client never sends, a launcher that exits before jkz starts. The probe
//! therefore runs, for every registration of jkz the client's files hold,
//! the exact command line registered there, the way the client runs it: with
//! `sh -c`, in the project directory, with the client's environment and an
//! event of the client's own shape on stdin. Then it checks the effect:
//!
//! | hook | the probe's event | fired when |
//! |---|---|---|
//! | the claim refusal (`PreToolUse`, Gemini `BeforeTool`) | an edit of a file in a worktree another live chat has claimed | the answer refuses it, naming that chat |
//! | the output guard (`PostToolUse`, Gemini `AfterTool`; Codex through its `PreToolUse` rewrite) | a ~400 KB command output with a verdict in the middle | the answer is shorter and keeps the verdict (Codex: the command is run through jkz) |
//! | the re-injection (`SessionStart` after a compaction, Gemini `BeforeModel`) | the event after a compaction | the answer carries the pipeline state |
//! | the snapshot (`PreCompact`, Gemini `PreCompress`) | a compaction about to happen | a snapshot file appeared |
//! | `PostCompact` | a summary that dropped the state | the dropped items were recorded |
//! | the registry (`jkz-chat` on the other events) | the chat's event | the chat is (or, at its end, is no longer) in the registry |
//!
//! OpenCode has no command lines: its hooks are jkz's plugin, which hands
//! each to a binary it finds by name; the probe runs that binary, found as
//! the plugin finds it, with the JSON the plugin sends.
//!
//! Every hook writes into a scratch state directory (`JKZ_STATE_DIR`, with
//! `JKZ_REGISTRY_URL` unset so no team registry is touched), made for the
//! run and removed after it: the project's own `state/` is neither read nor
//! changed. Each result is one line: fired, wrong answer (what came back),
//! or not run (why: not registered, not found, timed out).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::settings::{self, Registration};
use super::{codex, copilot, gemini, opencode, plugin, Target};
use crate::client::Client;

/// How long one hook may run before the probe calls it not run: longer
/// than any hook of jkz takes, shorter than the clients' own limits.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// One registered hook: where, for which event and matcher, what it runs.
#[derive(Clone, Debug)]
struct Entry {
    file: PathBuf,
    event: String,
    matcher: String,
    command: String,
    program: String,
    /// Set for the command (the plugin's `CLAUDE_PLUGIN_ROOT`).
    env: Vec<(String, PathBuf)>,
}

/// One line of the probe's report: true when the hook fired as it must.
pub type Line = (bool, String);

/// Probes every hook `client` would run for `project`; one line each.
pub fn run(client: Client, project: &Path) -> Vec<Line> {
    let project = std::path::absolute(project).unwrap_or_else(|_| project.to_path_buf());
    let entries = registered(client, &project);
    let expected = expected(client);
    let mut lines = Vec::new();
    let scratch = match Scratch::new(&project) {
        Ok(s) => s,
        Err(e) => {
            lines.push((
                false,
                format!("probe: no scratch state directory could be made ({e}); nothing probed"),
            ));
            return lines;
        }
    };
    for reg in expected {
        let shown = shown(reg.event, reg.matcher, reg.program);
        let found = entries
            .iter()
            .find(|e| e.event == reg.event && e.matcher == reg.matcher && e.program == reg.program);
        let Some(entry) = found else {
            lines.push((
                false,
                format!(
                    "probe {shown}: not run: {} has no such hook{}",
                    client.title(),
                    where_looked(&entries, client, &project)
                ),
            ));
            continue;
        };
        for probe in probes(client, reg) {
            let (ok, what) = scratch.probe(client, entry, probe);
            lines.push((ok, format!("probe {shown}: {what}")));
        }
    }
    // A hook of jkz's under a name the client never sends, or for a
    // matcher jkz does not use: it never fires as meant.
    for e in &entries {
        let known = expected
            .iter()
            .any(|r| r.event == e.event && r.matcher == e.matcher && r.program == e.program);
        if !known {
            lines.push((
                false,
                format!(
                    "probe {}: not run: jkz registers {} for no such event and matcher, so {} never runs it as meant ({}); run jkz install --client {} --replace",
                    shown(&e.event, &e.matcher, &e.program),
                    e.program,
                    client.title(),
                    e.file.display(),
                    client.name()
                ),
            ));
        }
    }
    lines
}

fn shown(event: &str, matcher: &str, program: &str) -> String {
    if matcher.is_empty() {
        format!("{event} → {program}")
    } else {
        format!("{event} ({matcher}) → {program}")
    }
}

fn where_looked(entries: &[Entry], client: Client, project: &Path) -> String {
    let mut files: Vec<String> = entries
        .iter()
        .map(|e| e.file.display().to_string())
        .collect();
    files.dedup();
    if files.is_empty() {
        format!(
            " (no hook of jkz in any file {} reads for {}; run jkz install --client {})",
            client.title(),
            project.display(),
            client.name()
        )
    } else {
        format!(" in {}", files.join(", "))
    }
}

/// What jkz registers for `client`.
fn expected(client: Client) -> &'static [Registration] {
    match client {
        Client::Claude => &settings::REGISTRATIONS,
        Client::Codex => &codex::REGISTRATIONS,
        Client::Gemini => &gemini::REGISTRATIONS,
        Client::Copilot => &copilot::REGISTRATIONS,
        Client::OpenCode => &opencode::REGISTRATIONS,
    }
}

/// Every hook of jkz's that `client` reads for `project`, from every file
/// it reads hooks from (and the plugin's, for Claude Code).
fn registered(client: Client, project: &Path) -> Vec<Entry> {
    let mut files: Vec<(PathBuf, Vec<(String, PathBuf)>)> = Vec::new();
    match client {
        Client::Claude => {
            let target = Target {
                claude_dir: project.join(".claude"),
                project: Some(project.to_path_buf()),
                moved_from: None,
            };
            let user = Target::resolve(None, true).ok();
            for file in plugin::settings_files(&target, user.as_ref()) {
                files.push((file, Vec::new()));
            }
            if let Some(root) = plugin::enabled(&target, user.as_ref()).and_then(|p| p.install_path)
            {
                files.push((
                    root.join("hooks").join("hooks.json"),
                    vec![("CLAUDE_PLUGIN_ROOT".into(), root)],
                ));
            }
        }
        Client::Codex => files.push((project.join(".codex").join("hooks.json"), Vec::new())),
        Client::Gemini => files.push((gemini::settings_path(project), Vec::new())),
        Client::Copilot => return copilot_entries(project),
        Client::OpenCode => return opencode_entries(project),
    }
    let mut entries = Vec::new();
    for (file, env) in files {
        let Some(map) = plugin::read_settings(&file) else {
            continue;
        };
        let Some(hooks) = map.get("hooks").and_then(Value::as_object) else {
            continue;
        };
        for (event, groups) in hooks {
            for group in groups.as_array().into_iter().flatten() {
                let matcher = group.get("matcher").and_then(Value::as_str).unwrap_or("");
                for hook in group
                    .get("hooks")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let Some(command) = hook.get("command").and_then(Value::as_str) else {
                        continue;
                    };
                    let Some(program) = jkz_program(command) else {
                        continue;
                    };
                    entries.push(Entry {
                        file: file.clone(),
                        event: event.clone(),
                        matcher: matcher.to_string(),
                        command: command.to_string(),
                        program,
                        env: env.clone(),
                    });
                }
            }
        }
    }
    entries
}

/// Every hook of jkz's in the hooks files Copilot CLI reads: the
/// project's `.github/hooks/jkz.json` and the user's.
fn copilot_entries(project: &Path) -> Vec<Entry> {
    let mut entries = Vec::new();
    for file in [copilot::file(Some(project)), copilot::file(None)]
        .into_iter()
        .flatten()
    {
        let Some(v) = crate::state_dir::read_user_file(&file)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        else {
            continue;
        };
        for (event, command) in copilot::commands(&v) {
            let program = copilot::program_of(&command);
            if !settings::HOOK_PROGRAMS.contains(&program.as_str()) {
                continue;
            }
            // The event Copilot runs it for is its key; the one jkz reads
            // is the command's own: they must agree.
            let event = match copilot::event_of(&command) {
                Some(named) if named == event => event,
                named => format!("{event} (named {})", named.unwrap_or("nothing")),
            };
            entries.push(Entry {
                file: file.clone(),
                event,
                matcher: String::new(),
                command,
                program,
                env: Vec::new(),
            });
        }
    }
    entries
}

/// The hook program of jkz a command runs: its own program, or the last
/// word after the plugin's launcher.
fn jkz_program(command: &str) -> Option<String> {
    let own = settings::command_program(command);
    if settings::HOOK_PROGRAMS.contains(&own.as_str()) {
        return Some(own);
    }
    let last = plugin::hook_program(command);
    settings::HOOK_PROGRAMS
        .contains(&last)
        .then(|| last.to_string())
}

/// What a probe asks of one hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Probe {
    /// A compaction is about to happen: a snapshot must appear.
    Snapshot,
    /// The session starts (after a compaction, a resume, a fork) or, for
    /// Gemini CLI, the first request after a compression: the state must
    /// be in the answer.
    Reinject,
    /// The summary dropped the state: the dropped items must be recorded.
    Dropped,
    /// A large command output: it must come back shaped, the verdict kept.
    Shape,
    /// An edit in a worktree another live chat has claimed: refused.
    Refuse,
    /// A chat's event: the chat must be in the registry (gone at its end).
    Registry,
}

/// The probes one registration gets.
fn probes(client: Client, reg: &Registration) -> Vec<Probe> {
    match (reg.program, reg.event) {
        ("jkz-pre-compact", _) => vec![Probe::Snapshot],
        ("jkz-session-start", "PostCompact") => vec![Probe::Dropped],
        ("jkz-session-start", _) => vec![Probe::Reinject],
        ("jkz-post-tool-use", _) => vec![Probe::Shape],
        ("jkz-chat", "PreToolUse" | "BeforeTool" | "preToolUse" | "tool.execute.before") => {
            match client {
                // Codex CLI's and Copilot CLI's way to shape a command's
                // output is the PreToolUse rewrite.
                Client::Codex | Client::Copilot => vec![Probe::Refuse, Probe::Shape],
                Client::Claude | Client::Gemini | Client::OpenCode => vec![Probe::Refuse],
            }
        }
        _ => vec![Probe::Registry],
    }
}

/// A marker only this run's state holds, so an answer that carries it
/// came from the probe's scratch state.
fn marker() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("jkz-probe-{}-{nanos}", std::process::id())
}

/// The scratch state directory and everything seeded in it.
struct Scratch {
    dir: tempfile::TempDir,
    project: PathBuf,
    marker: String,
    /// The chat holding issue 42 and the project's worktree.
    holder: String,
}

impl Scratch {
    fn new(project: &Path) -> std::io::Result<Scratch> {
        let dir = tempfile::Builder::new().prefix("jkz-probe-").tempdir()?;
        let state = dir.path().join("state");
        crate::state_dir::create_private_dir(&state)?;
        crate::state_dir::create_private_dir(&state.join("pipeline"))?;
        let marker = marker();
        let pipeline = json!({"42": {
            "current_phase": "fixing",
            "failure_context": format!("FAILED {marker}: the failure being fixed"),
        }});
        std::fs::write(
            state.join("pipeline").join("42.json"),
            serde_json::to_vec_pretty(&pipeline).expect("serializes"),
        )?;
        std::fs::write(dir.path().join("transcript.jsonl"), b"")?;
        let holder = format!("jkz-probe-holder-{}", std::process::id());
        let who = holder.clone();
        let worktree = project.display().to_string();
        let cwd = project.to_path_buf();
        let now = crate::clock::now();
        crate::registry::with_registry(
            &state,
            crate::registry::Bound::Command(Instant::now() + Duration::from_secs(5)),
            move |r| {
                r.claim(
                    &who,
                    "42",
                    Some(&worktree),
                    false,
                    &|| crate::registry::chat::Place::of(&cwd),
                    now,
                )
            },
        )
        .map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(Scratch {
            dir,
            project: project.to_path_buf(),
            marker,
            holder,
        })
    }

    fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    /// Runs `entry` with the event of `probe` and judges what it did.
    fn probe(&self, client: Client, entry: &Entry, probe: Probe) -> (bool, String) {
        let session = format!("jkz-probe-{}-{:?}", std::process::id(), probe).to_lowercase();
        if probe == Probe::Registry && is_end(&entry.event) {
            // A chat ends only after it started: start it first.
            let (name, starter) = match client {
                // Copilot's command line names its event: the start's.
                Client::Copilot => (
                    "sessionStart",
                    Entry {
                        command: entry.command.replacen("=sessionEnd ", "=sessionStart ", 1),
                        ..entry.clone()
                    },
                ),
                // The plugin's event names itself: the same binary starts it.
                Client::OpenCode => ("session.created", entry.clone()),
                Client::Claude | Client::Codex | Client::Gemini => ("SessionStart", entry.clone()),
            };
            let start = wire_event(client, self, name, "", Probe::Registry, &session);
            let _ = self.run(client, &starter, &start, &session);
        }
        if client == Client::Copilot && probe == Probe::Reinject && entry.event == "postToolUse" {
            // The first tool call after a compaction: the mark it answers.
            let mark = self
                .state()
                .join(crate::client::copilot::PENDING_DIR)
                .join(format!("{session}.compacted"));
            let made = std::fs::create_dir_all(mark.parent().expect("a parent"))
                .and_then(|()| std::fs::write(&mark, b""));
            if let Err(e) = made {
                return (false, format!("not run: {}: {e}", mark.display()));
            }
        }
        let event = wire_event(client, self, &entry.event, &entry.matcher, probe, &session);
        let before = self.snapshots();
        let ran = match self.run(client, entry, &event, &session) {
            Ok(ran) => ran,
            Err(why) => return (false, format!("not run: {why}")),
        };
        if ran.code != Some(0) {
            return (
                false,
                format!(
                    "wrong answer: exit {} (a hook of jkz always exits 0){}",
                    ran.code.map_or("by a signal".into(), |c| c.to_string()),
                    stderr_said(&ran.stderr)
                ),
            );
        }
        let stdout = String::from_utf8_lossy(&ran.stdout);
        let judged = match probe {
            Probe::Snapshot => (self.snapshots() > before)
                .then_some("fired: a snapshot was written")
                .ok_or("no snapshot was written".to_string()),
            Probe::Reinject => stdout
                .contains(&self.marker)
                .then_some("fired: the answer carries the pipeline state")
                .ok_or(format!(
                    "the answer does not carry the pipeline state ({})",
                    excerpt(&stdout)
                )),
            Probe::Dropped => self
                .dropped_recorded(&session)
                .then_some("fired: what the summary dropped was recorded")
                .ok_or("nothing was recorded of what the summary dropped".to_string()),
            Probe::Shape => self.judge_shape(client, &stdout, event.len()),
            Probe::Refuse => (stdout.contains("deny") && stdout.contains(&self.holder))
                .then_some("fired: an edit in a worktree another chat holds was refused")
                .ok_or(format!(
                    "an edit in a worktree chat {} holds was not refused ({})",
                    self.holder,
                    excerpt(&stdout)
                )),
            Probe::Registry => {
                let present = self.chat_present(&session);
                match (is_end(&entry.event), present) {
                    (false, Some(true)) => Ok("fired: the chat is in the registry"),
                    (true, Some(false)) => Ok("fired: the chat left the registry"),
                    (false, _) => Err("the chat is not in the registry".to_string()),
                    (true, _) => Err("the chat is still in the registry".to_string()),
                }
            }
        };
        match judged {
            Ok(what) => (true, what.to_string()),
            Err(why) => (
                false,
                format!("wrong answer: {why}{}", stderr_said(&ran.stderr)),
            ),
        }
    }

    fn judge_shape(
        &self,
        client: Client,
        stdout: &str,
        input: usize,
    ) -> Result<&'static str, String> {
        match client {
            Client::Codex | Client::Copilot => ((stdout.contains("updatedInput")
                || stdout.contains("modifiedArgs"))
                && stdout.contains("jkz"))
            .then_some("fired: the command is run through jkz's output guard")
            .ok_or(format!(
                "the command was not rewritten to run through jkz ({})",
                excerpt(stdout)
            )),
            Client::Claude | Client::Gemini | Client::OpenCode => {
                if !stdout.contains(&self.marker) {
                    Err(format!(
                        "the verdict in the middle of the output is not in the answer ({})",
                        excerpt(stdout)
                    ))
                } else if stdout.len() >= input {
                    Err(format!(
                        "the answer ({} bytes) is no smaller than the output ({input} bytes)",
                        stdout.len()
                    ))
                } else {
                    Ok("fired: a large output came back shaped, its verdict kept")
                }
            }
        }
    }

    fn snapshots(&self) -> usize {
        std::fs::read_dir(self.state().join("session-snapshots"))
            .map(|d| d.count())
            .unwrap_or(0)
    }

    /// True when the session's record lists the pipeline state among what
    /// the summary dropped.
    fn dropped_recorded(&self, session: &str) -> bool {
        let record = self
            .state()
            .join(crate::state_dir::layout::SESSION_RECORD_DIR)
            .join(format!("{session}.json"));
        std::fs::read(record)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .is_some_and(|v| {
                v["summary_dropped"]["dropped"]
                    .to_string()
                    .contains(&self.marker)
            })
    }

    fn chat_present(&self, session: &str) -> Option<bool> {
        let who = session.to_string();
        crate::registry::with_registry(
            &self.state(),
            crate::registry::Bound::Command(Instant::now() + Duration::from_secs(5)),
            move |r| {
                r.chats()
                    .map(|c| c.iter().any(|(chat, _)| chat.session_id == who))
            },
        )
        .ok()
        .map(|(present, _)| present)
    }

    /// Runs the registered command line as the client would.
    fn run(
        &self,
        client: Client,
        entry: &Entry,
        event: &[u8],
        session: &str,
    ) -> Result<Ran, String> {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(&entry.command)
            .current_dir(&self.project)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, _) in std::env::vars_os() {
            let k = key.to_string_lossy();
            if k.starts_with("JKZ_")
                || k.starts_with("CLAUDE")
                || k.starts_with("GEMINI_")
                || k.starts_with("CODEX_")
                || k.starts_with("COPILOT_")
            {
                cmd.env_remove(&key);
            }
        }
        for (key, value) in &entry.env {
            cmd.env(key, value);
        }
        for (key, value) in client_env(client, &self.project, session) {
            cmd.env(key, value);
        }
        cmd.env("JKZ_STATE_DIR", self.state());
        run_bounded(cmd, event)
    }
}

fn is_end(event: &str) -> bool {
    event == "SessionEnd" || event == "sessionEnd" || event == "session.deleted"
}

/// The environment `client` gives its hooks.
fn client_env(client: Client, project: &Path, session: &str) -> Vec<(&'static str, String)> {
    let dir = project.display().to_string();
    match client {
        Client::Claude => vec![("CLAUDE_PROJECT_DIR", dir)],
        Client::Codex => Vec::new(),
        // Inherited from OpenCode's process; the model's commands have it too.
        Client::OpenCode => vec![("OPENCODE", "1".to_string())],
        Client::Gemini => vec![
            ("GEMINI_PROJECT_DIR", dir.clone()),
            ("CLAUDE_PROJECT_DIR", dir),
            ("GEMINI_SESSION_ID", session.to_string()),
        ],
        // Copilot sets CLAUDE_PROJECT_DIR too (measured on 1.0.102).
        Client::Copilot => vec![
            (
                "COPILOT_HOOK_DIR",
                project.join(".github").join("hooks").display().to_string(),
            ),
            ("COPILOT_PROJECT_DIR", dir.clone()),
            ("COPILOT_CLI", "1".to_string()),
            ("CLAUDE_PROJECT_DIR", dir),
        ],
    }
}

/// The event `client` sends for `event_name`, shaped for `probe`.
fn wire_event(
    client: Client,
    scratch: &Scratch,
    event_name: &str,
    matcher: &str,
    probe: Probe,
    session: &str,
) -> Vec<u8> {
    if client == Client::Copilot {
        return copilot_wire_event(scratch, event_name, probe, session);
    }
    if client == Client::OpenCode {
        return opencode_wire_event(scratch, event_name, probe, session);
    }
    let project = &scratch.project;
    // A SessionStart registration names its source in its matcher.
    let source = if matcher.is_empty() {
        "compact"
    } else {
        matcher
    };
    let transcript = match client {
        Client::Codex => scratch
            .dir
            .path()
            .join("rollout-2026-01-01T00-00-00-jkz-probe.jsonl"),
        Client::Claude | Client::Gemini | Client::Copilot | Client::OpenCode => {
            scratch.dir.path().join("transcript.jsonl")
        }
    };
    let mut e = Map::new();
    e.insert("session_id".into(), session.into());
    e.insert("transcript_path".into(), json!(transcript));
    e.insert("cwd".into(), json!(project));
    e.insert("hook_event_name".into(), event_name.into());
    match client {
        Client::Codex => {
            e.insert("turn_id".into(), "jkz-probe-turn".into());
            e.insert("model".into(), "jkz-probe".into());
        }
        Client::Claude | Client::Gemini | Client::Copilot | Client::OpenCode => {}
    }
    let file = project.join("jkz-probe-edit.txt").display().to_string();
    let output = large_output(&scratch.marker);
    let extra = match (client, probe) {
        (_, Probe::Snapshot) => json!({"trigger": "manual", "custom_instructions": ""}),
        (Client::Gemini, Probe::Reinject) if event_name == "BeforeModel" => json!({
            "llm_request": {"messages": [
                {"role": "user", "content": "<state_snapshot>The user asked to go on.</state_snapshot>"},
                {"role": "model", "content": "Got it. Thanks for the additional context!"},
            ]}
        }),
        (_, Probe::Reinject) => json!({"source": source}),
        (_, Probe::Dropped) => json!({
            "trigger": "manual",
            "compact_summary": "The user and the assistant talked about the weather.",
        }),
        (Client::Claude, Probe::Shape) => json!({
            "tool_name": "Bash",
            "tool_input": {"command": "cargo test", "description": "run"},
            "tool_response": {"stdout": output, "stderr": "", "interrupted": false,
                "isImage": false, "noOutputExpected": false},
            "tool_use_id": "toolu_jkz_probe",
        }),
        (Client::Gemini, Probe::Shape) => json!({
            "tool_name": "run_shell_command",
            "tool_input": {"command": "cargo test"},
            "tool_response": {"llmContent": output},
        }),
        (Client::Codex, Probe::Shape) => json!({
            "tool_name": "Bash",
            "tool_input": {"command": "cargo test"},
            "tool_use_id": "call_jkz_probe",
        }),
        (Client::Claude, Probe::Refuse) => json!({
            "tool_name": "Edit",
            "tool_input": {"file_path": file, "old_string": "a", "new_string": "b"},
            "tool_use_id": "toolu_jkz_probe",
        }),
        (Client::Codex, Probe::Refuse) => json!({
            "tool_name": "apply_patch",
            "tool_input": {"command": format!("*** Begin Patch\n*** Add File: {file}\n+probe\n*** End Patch\n")},
            "tool_use_id": "call_jkz_probe",
        }),
        (Client::Copilot, Probe::Shape | Probe::Refuse) => {
            return copilot_wire_event(scratch, event_name, probe, session)
        }
        (Client::OpenCode, Probe::Shape | Probe::Refuse) => {
            return opencode_wire_event(scratch, event_name, probe, session)
        }
        (Client::Gemini, Probe::Refuse) => json!({
            "tool_name": "write_file",
            "tool_input": {"file_path": file, "content": "probe"},
        }),
        (_, Probe::Registry) => match event_name {
            "SessionStart" => json!({"source": "startup"}),
            "UserPromptSubmit" | "BeforeAgent" => json!({"prompt": "go on"}),
            "SessionEnd" => json!({"reason": "other"}),
            _ => json!({
                "tool_name": "Bash",
                "tool_input": {"command": "true"},
                "tool_response": {"stdout": "", "stderr": ""},
            }),
        },
    };
    for (k, v) in extra.as_object().expect("an object") {
        e.insert(k.clone(), v.clone());
    }
    serde_json::to_vec(&Value::Object(e)).expect("serializes")
}

/// The event jkz's OpenCode plugin sends for `event_name` (OpenCode's hook
/// or event), shaped for `probe`.
fn opencode_wire_event(
    scratch: &Scratch,
    event_name: &str,
    probe: Probe,
    session: &str,
) -> Vec<u8> {
    let file = scratch.project.join("jkz-probe-edit.txt");
    let call = |tool: &str| json!({"tool": tool, "sessionID": session, "callID": "call_jkz_probe"});
    let info = json!({"type": event_name, "properties": {"info": {"id": session}}});
    let (input, output) = match (probe, event_name) {
        (Probe::Snapshot | Probe::Dropped, _) => {
            (json!({"sessionID": session}), json!({"context": []}))
        }
        (Probe::Reinject, _) => (
            json!({"type": event_name, "properties": {"sessionID": session}}),
            json!({}),
        ),
        (Probe::Shape, _) => {
            let mut input = call("bash");
            input["args"] = json!({"command": "cargo test", "description": "run"});
            let output = json!({"title": "run", "output": large_output(&scratch.marker),
                "metadata": {"exit": 101, "truncated": false}});
            (input, output)
        }
        (Probe::Refuse, _) => (
            call("write"),
            json!({"args": {"filePath": file, "content": "probe"}}),
        ),
        (Probe::Registry, "session.created" | "session.deleted") => (info, json!({})),
        (Probe::Registry, "chat.message") => (
            json!({"sessionID": session}),
            json!({"message": {}, "parts": []}),
        ),
        (Probe::Registry, "tool.execute.before") => (
            call("bash"),
            json!({"args": {"command": "true", "description": "run"}}),
        ),
        (Probe::Registry, _) => {
            let mut input = call("bash");
            input["args"] = json!({"command": "true", "description": "run"});
            (
                input,
                json!({"title": "run", "output": "", "metadata": {"exit": 0}}),
            )
        }
    };
    let e = json!({
        "client": "opencode",
        "hook_event_name": event_name,
        "session_id": session,
        "cwd": scratch.project,
        "worktree": scratch.project,
        "input": input,
        "output": output,
    });
    serde_json::to_vec(&e).expect("serializes")
}

/// What the plugin OpenCode loads for `project` would run: each of its
/// hooks' binaries, found where the plugin looks (a binary it cannot find
/// is left by name, so running it says it was not found).
fn opencode_entries(project: &Path) -> Vec<Entry> {
    let Some(file) = opencode::installed(project) else {
        return Vec::new();
    };
    opencode::REGISTRATIONS
        .iter()
        .map(|reg| Entry {
            file: file.clone(),
            event: reg.event.to_string(),
            matcher: String::new(),
            command: match opencode::find_program(reg.program) {
                Some(path) => settings::shell_quote(&path.display().to_string()),
                None => reg.program.to_string(),
            },
            program: reg.program.to_string(),
            env: Vec::new(),
        })
        .collect()
}

/// The event Copilot CLI sends (camelCase, no event name: the command line
/// names it), shaped for `probe`.
fn copilot_wire_event(scratch: &Scratch, event_name: &str, probe: Probe, session: &str) -> Vec<u8> {
    let file = scratch.project.join("jkz-probe-edit.txt");
    let tool_result = json!({"resultType": "success",
        "textResultForLlm": "\n<shellId: 0 completed with exit code 0>"});
    let extra = match probe {
        Probe::Snapshot | Probe::Dropped => json!({
            "transcriptPath": scratch.dir.path().join("transcript.jsonl"),
            "trigger": "manual", "customInstructions": ""}),
        Probe::Reinject if event_name == "postToolUse" => json!({"toolName": "bash",
            "toolArgs": {"command": "true", "description": "run"}, "toolResult": tool_result}),
        Probe::Reinject => json!({"source": "resume", "initialPrompt": "go on"}),
        Probe::Shape => json!({"toolName": "bash",
            "toolArgs": {"command": "cargo test", "description": "run"}}),
        Probe::Refuse => json!({"toolName": "create",
            "toolArgs": {"path": file, "file_text": "probe"}}),
        Probe::Registry => match event_name {
            "sessionStart" => json!({"source": "new", "initialPrompt": "go on"}),
            "userPromptSubmitted" => json!({"prompt": "go on"}),
            "sessionEnd" => json!({"reason": "complete"}),
            "preToolUse" => json!({"toolName": "bash", "toolArgs": {"command": "true"}}),
            _ => json!({"toolName": "bash", "toolArgs": {"command": "true"},
                "toolResult": tool_result}),
        },
    };
    let mut e = Map::new();
    e.insert("sessionId".into(), session.into());
    e.insert("timestamp".into(), json!(1_795_869_901_074u64));
    e.insert("cwd".into(), json!(scratch.project));
    for (k, v) in extra.as_object().expect("an object") {
        e.insert(k.clone(), v.clone());
    }
    serde_json::to_vec(&Value::Object(e)).expect("serializes")
}

/// About 400 KB of `cargo test`'s output with a failing test in the middle
/// and the result last: what the output guard must shape and keep.
fn large_output(marker: &str) -> String {
    let mut out = String::with_capacity(420_000);
    let log = |out: &mut String, from: usize| {
        for i in from..from + 2_500 {
            out.push_str(&format!(
                "    log line {i:05} of a verbose build that nobody needs to read\n"
            ));
        }
    };
    log(&mut out, 0);
    for i in 0..3_000 {
        out.push_str(&format!("test suite::case_{i:05} ... ok\n"));
        if i == 1_500 {
            out.push_str(&format!("test suite::case_{i:05} ... FAILED ({marker})\n"));
        }
    }
    log(&mut out, 2_500);
    out.push_str("test result: FAILED. 2999 passed; 1 failed\n");
    out
}

struct Ran {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// Runs `cmd` with `stdin`, killed past [`PROBE_TIMEOUT`].
fn run_bounded(mut cmd: Command, stdin: &[u8]) -> Result<Ran, String> {
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("sh could not start ({e})"))?;
    let mut input = child.stdin.take().expect("piped stdin");
    let stdin = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        // A hook may stop reading early: a broken pipe is its business.
        let _ = input.write_all(&stdin);
    });
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let err = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() < PROBE_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(5))
            }
            _ => break None,
        }
    };
    let Some(status) = status else {
        let _ = rustix::process::kill_process_group(
            rustix::process::Pid::from_child(&child),
            rustix::process::Signal::KILL,
        );
        let _ = child.wait();
        return Err(format!(
            "no answer within {} s (killed)",
            PROBE_TIMEOUT.as_secs()
        ));
    };
    let _ = writer.join();
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    if status.code() == Some(127) {
        return Err(format!("the command was not found{}", stderr_said(&stderr)));
    }
    if status.code() == Some(126) {
        return Err(format!("the command cannot run{}", stderr_said(&stderr)));
    }
    Ok(Ran {
        code: status.code(),
        stdout,
        stderr,
    })
}

fn stderr_said(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    match text.lines().find(|l| !l.trim().is_empty()) {
        Some(line) => format!(" (stderr: {})", clipped(line.trim())),
        None => String::new(),
    }
}

fn excerpt(text: &str) -> String {
    let text = text.trim();
    if text.is_empty() {
        return "nothing on stdout".into();
    }
    format!("stdout: {}", clipped(text))
}

fn clipped(text: &str) -> String {
    let cut: String = text.chars().take(160).collect();
    if cut.len() < text.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plugin_launcher_and_a_direct_command_name_their_hook_program() {
        assert_eq!(
            jkz_program(r#""${CLAUDE_PLUGIN_ROOT}/scripts/run-hook" jkz-pre-compact"#).as_deref(),
            Some("jkz-pre-compact")
        );
        assert_eq!(
            jkz_program("/opt/jkz/bin/jkz-chat").as_deref(),
            Some("jkz-chat")
        );
        assert_eq!(jkz_program("audit-read --all"), None);
    }

    #[test]
    fn every_registration_of_every_client_gets_a_probe() {
        for client in Client::ALL {
            for reg in expected(client) {
                assert!(!probes(client, reg).is_empty(), "{client:?} {reg:?}");
            }
        }
    }

    #[test]
    fn the_large_output_holds_its_verdict_in_the_middle_and_a_last_line() {
        let out = large_output("M-1");
        assert!((380_000..460_000).contains(&out.len()), "{}", out.len());
        let at = out.find("M-1").unwrap();
        assert!(at > 100_000 && at < out.len() - 100_000);
        assert!(out.ends_with("1 failed\n"));
    }
}
