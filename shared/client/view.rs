//! How a client shows a tool's output to its model, without jkz: a
//! capability each client's module provides, so the reduction and the
//! savings ledger ask it and never name a client.
//!
//! - what jkz's view may take ([`Viewer::budget`]);
//! - how the client cuts what it does not show whole ([`Viewer::cut`]):
//!   the lines it would keep are the lines jkz's view keeps first;
//! - what it would have put in the window ([`Viewer::client_bytes`]): the
//!   count every saving is measured against;
//! - how its agent reads a range of a kept file ([`Viewer::reader`]).

use super::{claude, codex, copilot, gemini, opencode, Client};
use crate::reduce::{ClientCut, Reader, DEFAULT_BUDGET};

/// What kind of output it is, as far as a client treats kinds apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputKind {
    /// A shell command's.
    Shell,
    /// An MCP tool's.
    Mcp,
    /// Another tool's text (a read, a search).
    Text,
}

/// One client's view of one kind of output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Viewer {
    pub client: Client,
    pub kind: OutputKind,
}

/// A full output, as far as a client's rule for what it shows needs it.
#[derive(Debug)]
pub struct FullOutput<'a> {
    /// Its length in bytes.
    pub bytes: u64,
    /// True when it is longer than the client shows inline (the client
    /// persisted it, or its characters exceed the limit).
    pub over_limit: bool,
    /// Its first bytes (at least [`Viewer::head_bytes`] of them when it
    /// has that many).
    pub head: &'a [u8],
    /// Where the client saved it, when known.
    pub path: Option<&'a str>,
}

impl Viewer {
    /// `client`'s view of a shell command's output.
    pub fn shell(client: Client) -> Viewer {
        Viewer {
            client,
            kind: OutputKind::Shell,
        }
    }

    /// The budget of jkz's view, in client characters.
    pub fn budget(self, exit_code: Option<i32>) -> usize {
        match self.client {
            Client::Claude => claude::shown::budget(self.kind, exit_code),
            Client::Codex | Client::Gemini | Client::OpenCode => DEFAULT_BUDGET,
            Client::Copilot => copilot::VIEW_BUDGET,
        }
    }

    /// How the client shows an output it may cut (`None`: whole, whatever
    /// its size): the engine reduces a longer one whatever it saves, and
    /// keeps first the signal lines the client would show.
    pub fn cut(self, exit_code: Option<i32>) -> Option<ClientCut> {
        match self.client {
            Client::Claude => claude::shown::cut(self.kind, exit_code),
            Client::Codex => Some(codex::SHELL_CUT),
            Client::Gemini => Some(gemini::SHELL_CUT),
            Client::Copilot => Some(copilot::SHELL_CUT),
            Client::OpenCode => Some(opencode::SHELL_CUT),
        }
    }

    /// Bytes the client alone puts in the window for an output of `bytes`
    /// bytes and `chars` characters whose first bytes are `head`.
    pub fn client_bytes(self, bytes: u64, chars: u64, head: &[u8], exit_code: Option<i32>) -> u64 {
        match self.client {
            Client::Claude => claude::shown::client_bytes(self.kind, bytes, chars, head, exit_code),
            Client::Codex => codex::shell_shown(bytes),
            Client::Gemini => gemini::shell_shown(chars, bytes),
            Client::Copilot => copilot::shell_shown(chars, bytes),
            Client::OpenCode => opencode::shell_shown(bytes),
        }
    }

    /// Bytes the client adds to jkz's view (Claude Code's `Exit code N`
    /// line on a failing command).
    pub fn added(self, exit_code: Option<i32>) -> u64 {
        match self.client {
            Client::Claude => claude::shown::added(self.kind, exit_code),
            Client::Codex | Client::Gemini | Client::Copilot | Client::OpenCode => 0,
        }
    }

    /// True when the client tells its model a shell command's exit status
    /// (OpenCode shows the output only: jkz's view then says it).
    pub fn shows_exit_status(self) -> bool {
        match self.client {
            Client::Claude | Client::Codex | Client::Gemini | Client::Copilot => true,
            Client::OpenCode => false,
        }
    }

    /// How the client's agent reads a range of a file.
    pub fn reader(self) -> Reader {
        match self.client {
            Client::Claude => Reader::ClaudeRead,
            Client::Codex | Client::Copilot | Client::OpenCode => Reader::Shell,
            Client::Gemini => Reader::GeminiReadFile,
        }
    }

    /// The most characters the client shows inline (`None`: no limit).
    pub fn inline_limit(self) -> Option<u64> {
        match self.client {
            Client::Claude => claude::shown::inline_limit(self.kind),
            Client::Codex => Some(codex::SHELL_KEEPS),
            Client::Gemini => Some(gemini::SHELL_KEEPS),
            Client::Copilot => Some(copilot::SHELL_KEEPS),
            Client::OpenCode => Some(opencode::SHELL_KEEPS),
        }
    }

    /// The bytes the client shows of `output` (a tool's output that jkz
    /// did not touch), its own notes included.
    pub fn shown_bytes(self, output: &FullOutput) -> u64 {
        match self.client {
            Client::Claude => claude::shown::shown_bytes(output),
            Client::Codex => codex::shell_shown(output.bytes),
            Client::Gemini if output.over_limit => gemini::SHELL_KEEPS + gemini::SHELL_NOTE,
            Client::Gemini => output.bytes,
            Client::Copilot if output.over_limit => copilot::SHELL_NOTE,
            Client::Copilot => output.bytes,
            Client::OpenCode => opencode::shell_shown(output.bytes),
        }
    }

    /// How many of an output's first bytes the client's own view is made
    /// from (a persisted output's preview): what a reader keeps for
    /// [`Viewer::shown_bytes`].
    pub fn head_bytes(self) -> usize {
        match self.client {
            Client::Claude => claude::shown::PREVIEW_BYTES + 1,
            Client::Codex | Client::Gemini | Client::OpenCode => 0,
            Client::Copilot => copilot::SHELL_PREVIEW + 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_each_client_shows_alone() {
        let head = vec![b'x'; 3000];
        let claude = Viewer::shell(Client::Claude);
        assert_eq!(claude.client_bytes(20_000, 20_000, &head, Some(0)), 20_000);
        assert!(claude.client_bytes(400_000, 400_000, &head, Some(0)) < 2_500);
        assert_eq!(
            claude.client_bytes(5_000, 5_000, &head, Some(2)),
            5_000 + 12
        );
        let codex = Viewer::shell(Client::Codex);
        assert_eq!(codex.client_bytes(30_000, 30_000, &head, Some(1)), 30_000);
        assert_eq!(
            codex.client_bytes(400_000, 400_000, &head, Some(1)),
            codex::shell_shown(400_000)
        );
        assert_eq!(codex::shell_shown(400_000), 40_214);
        assert_eq!(
            Viewer::shell(Client::Gemini).client_bytes(50_000, 50_000, &head, None),
            gemini::SHELL_KEEPS + gemini::SHELL_NOTE
        );
    }

    /// How each client's agent reads a range of a kept file: the tool it
    /// has for it.
    #[test]
    fn each_client_reads_a_range_with_its_own_tool() {
        use crate::reduce::Reader;
        for (client, reader) in [
            (Client::Claude, Reader::ClaudeRead),
            (Client::Codex, Reader::Shell),
            (Client::Gemini, Reader::GeminiReadFile),
            (Client::Copilot, Reader::Shell),
            (Client::OpenCode, Reader::Shell),
        ] {
            assert_eq!(Viewer::shell(client).reader(), reader, "{client:?}");
        }
    }

    /// Each client's view is data: a budget, a cut, how its agent reads a
    /// range.
    #[test]
    fn every_client_has_a_view_of_a_shell_output() {
        for client in Client::ALL {
            let v = Viewer::shell(client);
            assert!(v.budget(Some(0)) >= crate::reduce::MIN_BUDGET);
            assert!(v.cut(Some(1)).is_some(), "{client:?}");
            assert!(v.inline_limit().is_some(), "{client:?}");
        }
    }
}
