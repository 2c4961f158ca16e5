//! jkz's canonical hook event: what happened, in jkz's words, whichever
//! client sent it. A client's module ([`super::claude`], [`super::codex`],
//! [`super::gemini`]) parses its own event names and fields into a
//! [`HookEvent`]; the features (`crate::registry`, `crate::compaction`,
//! `crate::tool_output`) read only this.
//!
//! The event as the client sent it stays inside ([`HookEvent::raw`]),
//! moved, never copied: a snapshot records it whole, and the client's own
//! answer is made from it (an updated tool input keeps the fields jkz did
//! not change). A large tool output is moved out of it into
//! [`ToolOutput::body`], so it is held once.

use std::path::PathBuf;

use super::view::Viewer;
use super::Client;
use crate::hook_input::HookInput;
use crate::session_id::{InvalidSessionId, SessionId};

/// The events jkz's hooks answer, by what they mean. Each client spells
/// them its own way (Claude Code's `UserPromptSubmit` is Gemini CLI's
/// `BeforeAgent`); the spelling lives in the client's module only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventName {
    SessionStart,
    UserPrompt,
    PreToolUse,
    PostToolUse,
    PreCompact,
    PostCompact,
    SessionEnd,
    /// A request to the model is about to be sent. A client passes it on
    /// only when it follows a compaction jkz has not answered yet (Gemini
    /// CLI's `BeforeModel`, whose answer can extend the request).
    ModelRequest,
}

/// Why a session started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartSource {
    Startup,
    Resume,
    Clear,
    /// After a compaction: the decision-critical state goes back in.
    Compact,
    /// A forked session (Claude Code 2.1.214 and later).
    Fork,
}

impl StartSource {
    /// The source a client names `name`.
    pub fn parse(name: &str) -> Option<StartSource> {
        match name {
            "startup" => Some(StartSource::Startup),
            "resume" => Some(StartSource::Resume),
            "clear" => Some(StartSource::Clear),
            "compact" => Some(StartSource::Compact),
            "fork" => Some(StartSource::Fork),
            _ => None,
        }
    }

    /// The name jkz records (`compact`, `resume`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            StartSource::Startup => "startup",
            StartSource::Resume => "resume",
            StartSource::Clear => "clear",
            StartSource::Compact => "compact",
            StartSource::Fork => "fork",
        }
    }
}

/// A tool, by what it does to the project.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tool {
    /// A shell command: its text, the directory it runs in when the client
    /// names one (relative to the event's `cwd`), and whether the client
    /// runs it in the background.
    Shell {
        command: String,
        dir: Option<String>,
        background: bool,
    },
    /// A read of a file; `range` when the agent chose which lines.
    Read { range: bool },
    /// An edit or a write of the one file it names.
    Edit { file: Option<String> },
    /// A patch body naming the files it adds, changes, moves or deletes.
    Patch { body: String },
    /// Any other tool (search, MCP, web, …).
    Other,
}

/// One tool call: the tool, the client's own name for it (what the ledger
/// and the guard's events record), and, after the call, its output.
#[derive(Debug)]
pub struct ToolUse {
    pub tool: Tool,
    pub name: String,
    pub output: Option<ToolOutput>,
}

/// A tool's output as the model would see it without jkz.
#[derive(Debug)]
pub struct ToolOutput {
    pub body: Body,
    /// Bytes the model sees beside the body (a shell command's `stderr`).
    pub beside: u64,
    /// How the client shows this output: its limits, what it cuts.
    pub viewer: Viewer,
    /// A read's file, when the output is one.
    pub file: Option<ReadFile>,
    /// A shell command's exit status, when the client tells it (`None`:
    /// the client's hook runs for a command that succeeded only, or does
    /// not say).
    pub exit: Option<i32>,
}

impl ToolOutput {
    /// A shell command's output that `client`'s event carries as a string
    /// at `pointer` (`/tool_response/llmContent`), moved out of the event;
    /// `None` when there is no string there (the client does not cut what
    /// is not text either).
    pub fn shell_text(
        input: &mut HookInput,
        pointer: &str,
        client: Client,
        exit: Option<i32>,
    ) -> Option<ToolOutput> {
        let (first, rest) = pointer.trim_start_matches('/').split_once('/')?;
        let serde_json::Value::String(text) =
            input.raw.get_mut(first)?.pointer_mut(&format!("/{rest}"))?
        else {
            return None;
        };
        Some(ToolOutput {
            body: Body::Inline(std::mem::take(text)),
            beside: 0,
            viewer: Viewer::shell(client),
            file: None,
            exit,
        })
    }
}

/// Where the full output is.
#[derive(Debug, PartialEq)]
pub enum Body {
    /// In the event, as text.
    Inline(String),
    /// In a file the client wrote (an output over its inline limit); the
    /// client's module opens it ([`Client::open_persisted`]).
    Persisted(PathBuf),
}

/// The file a read returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadFile {
    pub path: String,
    /// The first line returned (1-based).
    pub start: u64,
    /// The file's lines.
    pub total: u64,
}

/// What happened, with what.
#[derive(Debug)]
pub enum EventKind {
    /// `source`: `None` when the client named one jkz does not know.
    SessionStart {
        source: Option<StartSource>,
    },
    UserPrompt,
    PreToolUse(ToolUse),
    PostToolUse(ToolUse),
    /// `trigger`: `manual` or `auto`, as the client said it.
    PreCompact {
        trigger: Option<String>,
    },
    /// `summary`: the summary the compaction wrote, as the client sent it
    /// (a string, else whatever it was; `None`: not sent).
    PostCompact {
        trigger: Option<String>,
        summary: Option<serde_json::Value>,
    },
    SessionEnd,
    ModelRequest,
}

impl EventKind {
    pub fn name(&self) -> EventName {
        match self {
            EventKind::SessionStart { .. } => EventName::SessionStart,
            EventKind::UserPrompt => EventName::UserPrompt,
            EventKind::PreToolUse(_) => EventName::PreToolUse,
            EventKind::PostToolUse(_) => EventName::PostToolUse,
            EventKind::PreCompact { .. } => EventName::PreCompact,
            EventKind::PostCompact { .. } => EventName::PostCompact,
            EventKind::SessionEnd => EventName::SessionEnd,
            EventKind::ModelRequest => EventName::ModelRequest,
        }
    }
}

/// One hook event, parsed once at the edge.
#[derive(Debug)]
pub struct HookEvent {
    /// The client that sent it (detected once per hook run).
    pub client: Client,
    pub kind: EventKind,
    /// The session id as sent (validated by [`HookEvent::session`]).
    pub session_id: Option<String>,
    /// The project directory the client ran in.
    pub cwd: Option<PathBuf>,
    pub transcript_path: Option<String>,
    /// The client is in its plan mode (nothing may change).
    pub plan_mode: bool,
    /// The event as received, unknown fields included (a tool output moved
    /// out into [`ToolOutput::body`]).
    pub raw: HookInput,
    /// What the client's parse worked out for its own answer (Gemini CLI:
    /// the fingerprint or the summary digest its memo records).
    pub(crate) note: Option<String>,
}

impl HookEvent {
    pub fn name(&self) -> EventName {
        self.kind.name()
    }

    /// The session id, validated; `None` when the event has none.
    pub fn session(&self) -> Option<Result<SessionId, InvalidSessionId>> {
        self.session_id.as_deref().map(SessionId::parse)
    }

    /// The tool call of a Pre/PostToolUse event.
    pub fn tool_use(&self) -> Option<&ToolUse> {
        match &self.kind {
            EventKind::PreToolUse(t) | EventKind::PostToolUse(t) => Some(t),
            _ => None,
        }
    }

    /// The tool call's input object as the client sent it (Copilot CLI's
    /// `toolArgs`, OpenCode's `args`, every other client's `tool_input`).
    pub fn tool_input(&self) -> Option<&serde_json::Map<String, serde_json::Value>> {
        let key = match self.client {
            Client::Claude | Client::Codex | Client::Gemini => "tool_input",
            Client::Copilot => "toolArgs",
            Client::OpenCode => return super::opencode::tool_input(&self.raw),
        };
        self.raw.raw.get(key)?.as_object()
    }

    /// The event with its common fields read from `raw` (every client
    /// jkz serves names them alike: `session_id`, `cwd`,
    /// `transcript_path`, `permission_mode`).
    pub(crate) fn new(client: Client, kind: EventKind, raw: HookInput) -> HookEvent {
        HookEvent {
            client,
            kind,
            session_id: raw.text("session_id").map(str::to_string),
            cwd: raw.cwd(),
            transcript_path: raw.text("transcript_path").map(str::to_string),
            plan_mode: raw.text("permission_mode") == Some("plan"),
            raw,
            note: None,
        }
    }
}
