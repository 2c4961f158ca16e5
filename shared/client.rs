//! The clients jkz answers hooks for — Claude Code, Codex CLI, Gemini CLI,
//! GitHub Copilot CLI, OpenCode —
//! and the one edge where their contracts meet jkz's.
//!
//! One set of binaries serves every client (see `docs/clients.md`). A hook
//! run tells its client once ([`Client::detect`]), from the event itself
//! and the environment the client gives it, never from configuration:
//! - Gemini CLI names its events differently (`PreCompress`, `BeforeTool`,
//!   `AfterTool`, `BeforeModel`, `BeforeAgent`, …) and sets
//!   `GEMINI_PROJECT_DIR` / `GEMINI_SESSION_ID` for its hooks;
//! - GitHub Copilot CLI's hooks get `COPILOT_HOOK_DIR`, and jkz's
//!   registration names the event in `JKZ_COPILOT_EVENT` (its camelCase
//!   events do not; it also sets `CLAUDE_PROJECT_DIR`, so that variable
//!   never tells Claude Code);
//! - OpenCode's events come from jkz's plugin, which says so
//!   (`"client": "opencode"`): its environment is its model's commands' too;
//! - Codex CLI's events carry a `turn_id` (Claude Code's never do), except
//!   `SessionStart`, whose `transcript_path` is a Codex rollout file
//!   (`…/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`, measured on Codex
//!   0.169.0);
//! - anything else is Claude Code, the contract jkz has always spoken.
//!
//! Then the client's module parses the event into jkz's canonical
//! [`HookEvent`] ([`Client::parse`]), the feature answers with jkz's
//! canonical [`Answer`], and the client's module renders that in its own
//! contract ([`Client::render`]). Where a feature needs to know what a
//! client can do (ask the user, replace an output, how much of an output
//! it shows), it asks a method here, which answers with data; features
//! never name a client.
//!
//! Every `match` on [`Client`] is exhaustive (no `_`, no `==`): a new
//! client does not compile until each place has decided what it does
//! (docs/development.md, "Adding a client").

use std::path::{Path, PathBuf};

use crate::hook::Warnings;
use crate::hook_input::HookInput;

pub mod answer;
pub mod claude;
pub mod codex;
pub mod copilot;
pub mod edge;
pub mod event;
pub mod gemini;
pub mod help;
pub mod opencode;
pub mod view;

pub use answer::Answer;
pub use event::{
    Body, EventKind, EventName, HookEvent, ReadFile, StartSource, Tool, ToolOutput, ToolUse,
};
pub use view::{OutputKind, Viewer};

/// A client jkz answers hooks for, and installs into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Client {
    /// Claude Code (`.claude/settings.json`, or the plugin).
    Claude,
    /// Codex CLI (`.codex/hooks.json`).
    Codex,
    /// Gemini CLI (`.gemini/settings.json`).
    Gemini,
    /// GitHub Copilot CLI (`.github/hooks/jkz.json`).
    Copilot,
    /// OpenCode (the plugin `.opencode/plugins/jkz.js`).
    #[value(name = "opencode")]
    OpenCode,
}

/// What a client's module made of an event.
#[derive(Debug)]
pub enum Parsed {
    Event(Box<HookEvent>),
    /// An event jkz does not know, by the name the client gave it (its
    /// JSON text: `"Stop"`, `7`), or none at all.
    Unknown(Option<String>),
}

/// What a client lets a hook do with a tool's output once it ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputControl {
    /// Replace what the model sees.
    Replace,
    /// Only add text after it, before the client's own cut (`cut`) makes
    /// what the model sees.
    Append(crate::reduce::ClientCut),
    /// Nothing.
    Nothing,
}

/// How the Bash wrap rewrites a shell call for a client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShellWrap {
    /// The command stays inline in the client's own shell (which keeps its
    /// aliases and the directory a `cd` moved to, and whose permission
    /// check reads the rewrite's words), its output into a file.
    Inline,
    /// The client runs the rewrite in a fresh shell: `jkz-truncate --run`.
    FreshShell,
}

impl Client {
    /// Every client, in the order `jkz --help` lists them.
    pub const ALL: [Client; 5] = [
        Client::Claude,
        Client::Codex,
        Client::Gemini,
        Client::Copilot,
        Client::OpenCode,
    ];

    /// The client that sent `input`, read with the process environment.
    pub fn detect(input: &HookInput) -> Client {
        Self::detect_with(input, |name| {
            std::env::var_os(name).is_some_and(|v| !v.is_empty())
        })
    }

    /// [`Client::detect`] with the environment as a predicate (set and not
    /// empty), so tests need not touch the process's own.
    pub fn detect_with(input: &HookInput, env_set: impl Fn(&str) -> bool) -> Client {
        if opencode::sent(input) {
            Client::OpenCode
        } else if gemini::sent(input, &env_set) {
            Client::Gemini
        } else if copilot::sent(input, &env_set) {
            Client::Copilot
        } else if codex::sent(input) {
            Client::Codex
        } else {
            Client::Claude
        }
    }

    /// The client the process environment names before the event is read,
    /// when it names one (Gemini CLI's and Copilot CLI's hook variables).
    pub fn from_env() -> Option<Client> {
        if gemini::env_says() {
            Some(Client::Gemini)
        } else {
            copilot::env_says().then_some(Client::Copilot)
        }
    }

    /// The name users type (`--client codex`) and jkz prints.
    pub fn name(self) -> &'static str {
        match self {
            Client::Claude => "claude",
            Client::Codex => "codex",
            Client::Gemini => "gemini",
            Client::Copilot => "copilot",
            Client::OpenCode => "opencode",
        }
    }

    /// The client's own name, as its users know it.
    pub fn title(self) -> &'static str {
        match self {
            Client::Claude => "Claude Code",
            Client::Codex => "Codex CLI",
            Client::Gemini => "Gemini CLI",
            Client::Copilot => "Copilot CLI",
            Client::OpenCode => "OpenCode",
        }
    }

    /// The client's spelling of `name` (`BeforeTool` for Gemini CLI's
    /// [`EventName::PreToolUse`]); `None` when it has no such event.
    pub fn spelling(self, name: EventName) -> Option<&'static str> {
        match self {
            Client::Claude | Client::Codex => claude::spelling(name),
            Client::Gemini => gemini::spelling(name),
            Client::Copilot => copilot::spelling(name),
            Client::OpenCode => opencode::spelling(name),
        }
    }

    /// `input` as jkz's canonical event, read for `hook`: its default
    /// event is taken when the input names none (a client calls each hook
    /// only for the events it is registered for), and a tool's output is
    /// moved out of the event only for a hook that reads it.
    pub fn parse(self, input: HookInput, hook: &edge::Hook) -> Parsed {
        match self {
            Client::Claude => claude::parse(input, hook),
            Client::Codex => codex::parse(input, hook),
            Client::Gemini => gemini::parse(input, hook),
            Client::Copilot => copilot::parse(input, hook),
            Client::OpenCode => opencode::parse(input, hook),
        }
    }

    /// The client's own bookkeeping before a feature answers `event`:
    /// `false` when there is nothing to do (Gemini CLI fires some events
    /// before every turn; its memo says whether this one needs work).
    pub fn goes_on(self, event: &mut HookEvent, warnings: &mut Warnings) -> bool {
        match self {
            Client::Claude | Client::Codex | Client::OpenCode => true,
            Client::Gemini => gemini::goes_on(event, warnings),
            Client::Copilot => copilot::goes_on(event, warnings),
        }
    }

    /// `answer` to `event` in the client's contract: what the hook prints
    /// on stdout (`None`: nothing).
    pub fn render(
        self,
        event: &HookEvent,
        answer: Answer,
        warnings: &mut Warnings,
    ) -> Option<String> {
        match self {
            Client::Claude => claude::render(event, answer),
            Client::Codex => codex::render(event, answer, warnings),
            Client::Gemini => gemini::render(event, answer, warnings),
            Client::Copilot => copilot::render(event, answer, warnings),
            Client::OpenCode => opencode::render(event, answer),
        }
    }

    /// True when a hook can leave a tool call to the user (Codex CLI's
    /// hooks cannot: its `ask` is an error it ignores; OpenCode's plugin
    /// can only refuse; so a question is rendered as a refusal that says
    /// why).
    pub fn can_ask(self) -> bool {
        match self {
            Client::Claude | Client::Gemini | Client::Copilot => true,
            Client::Codex | Client::OpenCode => false,
        }
    }

    /// What a hook may do with `tool`'s output once it ran.
    pub fn output_control(self, tool: &Tool) -> OutputControl {
        match self {
            Client::Claude => OutputControl::Replace,
            // Its PostToolUse takes no updated output: its own cut stands.
            Client::Codex => OutputControl::Nothing,
            // Its postToolUse can replace the result, but gets only the
            // 889-character note of an output over ~20 KiB: the guard works
            // in preToolUse instead (the Bash wrap).
            Client::Copilot => OutputControl::Nothing,
            // Its tool.execute.after replaces what the model reads; other
            // tools than the shell cap their own output (50 KB for a read).
            Client::OpenCode => match tool {
                Tool::Shell { .. } => OutputControl::Replace,
                Tool::Read { .. } | Tool::Edit { .. } | Tool::Patch { .. } | Tool::Other => {
                    OutputControl::Nothing
                }
            },
            Client::Gemini => match tool {
                Tool::Shell { .. } => OutputControl::Append(gemini::SHELL_CUT),
                Tool::Read { .. } | Tool::Edit { .. } | Tool::Patch { .. } | Tool::Other => {
                    OutputControl::Nothing
                }
            },
        }
    }

    /// How the Bash wrap may rewrite `event`'s shell call; `None` when the
    /// client would not run the rewrite as it would the original.
    pub fn shell_wrap(self, event: &HookEvent, project: &Path) -> Option<ShellWrap> {
        match self {
            Client::Claude => {
                claude::bash_pre_approved(event, project).then_some(ShellWrap::Inline)
            }
            // OpenCode runs the rewritten arguments (measured); above about
            // 200 KB its own capture of an output was partial, so the
            // whole output reaches jkz only through the wrap.
            Client::Codex | Client::Gemini | Client::Copilot | Client::OpenCode => {
                Some(ShellWrap::FreshShell)
            }
        }
    }

    /// An older variable that also turns the Bash wrap off for this client.
    pub fn older_wrap_switch(self) -> Option<&'static str> {
        match self {
            Client::Claude | Client::Gemini | Client::Copilot | Client::OpenCode => None,
            Client::Codex => Some(codex::OLD_OPT_OUT),
        }
    }

    /// Opens the output a client persisted at `path` for `event`, from its
    /// own directory only; why not, in one line.
    pub fn open_persisted(self, event: &HookEvent, path: &Path) -> Result<std::fs::File, String> {
        match self {
            Client::Claude => claude::persisted::open_for(event, path),
            Client::Codex | Client::Gemini | Client::Copilot | Client::OpenCode => Err(format!(
                "persisted output {} not read: {} persists none jkz reads",
                path.display(),
                self.title()
            )),
        }
    }

    /// True when the client's PreCompact fires before every turn, so a
    /// hook should not start work ahead of knowing it is needed.
    pub fn pre_compact_every_turn(self) -> bool {
        match self {
            Client::Claude | Client::Codex | Client::Copilot | Client::OpenCode => false,
            Client::Gemini => true,
        }
    }

    /// True when the process named `name` (by the kernel) is this
    /// client's; `args` reads its command line, asked for only when the
    /// name does not tell. Each client's module says which process runs
    /// its hooks and its model's commands.
    pub fn is_process(self, name: &str, args: &dyn Fn() -> Vec<Vec<u8>>) -> bool {
        match self {
            Client::Claude => claude::is_process(name),
            Client::Codex => codex::is_process(name),
            Client::Gemini => gemini::is_process(name, args),
            Client::Copilot => copilot::is_process(name),
            Client::OpenCode => opencode::is_process(name),
        }
    }

    /// The client whose process is named `name` by the kernel (`args`, its
    /// command line, as for [`Client::is_process`]); `None` for any other
    /// program (a shell, a build tool, `node` running something else).
    pub fn of_process(name: &str, args: &dyn Fn() -> Vec<Vec<u8>>) -> Option<Client> {
        Client::ALL.into_iter().find(|c| c.is_process(name, args))
    }
}

/// Why a command starting with the program `first` is left as it is by
/// the Bash wrap, when a client intercepts it itself (Codex CLI's
/// `apply_patch`).
pub fn intercepted(first: &str) -> Option<&'static str> {
    Client::ALL.into_iter().find_map(|c| match c {
        Client::Claude | Client::Gemini | Client::Copilot | Client::OpenCode => None,
        Client::Codex => codex::intercepts(first),
    })
}

/// The files a patch body in `text` names (Codex CLI's `apply_patch`
/// format, which can also reach a shell as a here-document), relative to
/// where it runs.
pub fn patched_files(text: &str) -> Vec<PathBuf> {
    Client::ALL
        .into_iter()
        .flat_map(|c| match c {
            Client::Claude | Client::Gemini | Client::Copilot | Client::OpenCode => Vec::new(),
            Client::Codex => codex::patched_files(text),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(json: &str) -> HookInput {
        HookInput::parse(json.as_bytes()).unwrap()
    }

    #[test]
    fn tells_the_clients_apart() {
        let no_env = |_: &str| false;
        let claude = input(r#"{"session_id":"s","hook_event_name":"PreCompact"}"#);
        assert_eq!(Client::detect_with(&claude, no_env), Client::Claude);
        let codex = input(r#"{"session_id":"s","hook_event_name":"PreCompact","turn_id":"t1"}"#);
        assert_eq!(Client::detect_with(&codex, no_env), Client::Codex);
        // Codex's SessionStart has no turn_id (measured on 0.169.0).
        let codex_start = input(
            r#"{"session_id":"s","hook_event_name":"SessionStart","source":"compact",
                "transcript_path":"/h/.codex/sessions/2026/11/25/rollout-2026-11-25T15-42-22-01a2.jsonl"}"#,
        );
        assert_eq!(Client::detect_with(&codex_start, no_env), Client::Codex);
        let claude_start = input(
            r#"{"session_id":"s","hook_event_name":"SessionStart","source":"compact",
                "transcript_path":"/h/.claude/projects/-p/0b5e.jsonl"}"#,
        );
        assert_eq!(Client::detect_with(&claude_start, no_env), Client::Claude);
        let gemini = input(r#"{"session_id":"s","hook_event_name":"PreCompress"}"#);
        assert_eq!(Client::detect_with(&gemini, no_env), Client::Gemini);
        let gemini_start = input(r#"{"session_id":"s","hook_event_name":"SessionStart"}"#);
        assert_eq!(
            Client::detect_with(&gemini_start, |v| v == "GEMINI_SESSION_ID"),
            Client::Gemini
        );
    }

    /// Each client names the canonical events its own way, and reads its
    /// own names back to the same event.
    #[test]
    fn every_client_spells_and_reads_back_every_event() {
        use EventName::*;
        for client in Client::ALL {
            for name in [
                SessionStart,
                UserPrompt,
                PreToolUse,
                PostToolUse,
                PreCompact,
                PostCompact,
                SessionEnd,
                ModelRequest,
            ] {
                let Some(spelled) = client.spelling(name) else {
                    continue;
                };
                let json = format!(r#"{{"session_id":"s","hook_event_name":"{spelled}"}}"#);
                match client.parse(input(&json), &edge::Hook::ANY) {
                    Parsed::Event(e) => assert_eq!(e.name(), name, "{client:?} {spelled}"),
                    Parsed::Unknown(n) => panic!("{client:?} does not read {spelled}: {n:?}"),
                }
            }
            match client.parse(input(r#"{"hook_event_name":"Stop"}"#), &edge::Hook::ANY) {
                Parsed::Unknown(Some(n)) => assert_eq!(n, r#""Stop""#),
                other => panic!("{client:?}: {other:?}"),
            }
            let pre_compact = edge::Hook {
                default: Some(PreCompact),
                ..edge::Hook::ANY
            };
            match client.parse(input(r#"{"session_id":"s"}"#), &pre_compact) {
                Parsed::Event(e) => assert_eq!(e.name(), PreCompact),
                other => panic!("{client:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn capabilities_are_data() {
        assert!(Client::Claude.can_ask() && Client::Gemini.can_ask());
        assert!(!Client::Codex.can_ask());
        let shell = Tool::Shell {
            command: "ls".into(),
            dir: None,
            background: false,
        };
        assert_eq!(
            Client::Claude.output_control(&shell),
            OutputControl::Replace
        );
        assert_eq!(Client::Codex.output_control(&shell), OutputControl::Nothing);
        assert!(matches!(
            Client::Gemini.output_control(&shell),
            OutputControl::Append(_)
        ));
        assert_eq!(
            Client::Gemini.output_control(&Tool::Other),
            OutputControl::Nothing
        );
        assert_eq!(
            intercepted("apply_patch"),
            Some("Codex intercepts apply_patch")
        );
        assert_eq!(intercepted("cargo"), None);
        let args = || vec![b"node".to_vec(), b"/usr/lib/gemini.js".to_vec()];
        assert!(Client::Gemini.is_process("node", &args));
        assert!(!Client::Claude.is_process("node", &args));
        assert!(Client::Codex.is_process("codex", &Vec::new));
        assert!(!Client::Codex.is_process("codex-x", &Vec::new));
    }

    #[test]
    fn clients_are_told_by_their_process_name() {
        for (name, client) in [
            ("claude", Client::Claude),
            ("claude-fake", Client::Claude),
            ("codex", Client::Codex),
            ("gemini", Client::Gemini),
            ("copilot", Client::Copilot),
            ("opencode", Client::OpenCode),
        ] {
            assert_eq!(Client::of_process(name, &Vec::new), Some(client), "{name}");
        }
        for name in ["bash", "cargo", "codex-x", "sh", "node"] {
            assert_eq!(Client::of_process(name, &Vec::new), None, "{name}");
        }
        // Gemini CLI run by node: told by its script, after node's options.
        let gemini = || {
            vec![
                b"node".to_vec(),
                b"--max-old-space-size=8192".to_vec(),
                b"/usr/lib/node_modules/@google/gemini-cli/bundle/gemini.js".to_vec(),
            ]
        };
        assert_eq!(Client::of_process("node", &gemini), Some(Client::Gemini));
        let other = || vec![b"node".to_vec(), b"/srv/app.js".to_vec()];
        assert_eq!(Client::of_process("node", &other), None);
    }
}
