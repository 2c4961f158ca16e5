//! What Claude Code itself puts in the model's window for a tool's output,
//! without jkz: the rules measured on the client (2.1.197, again on 2.1.332; docs/tool-output-guard.md
//! has the table and `tests/integration/client/tool_output.rs` re-measures
//! them). The savings ledger counts against these, never against the raw
//! output size: output the client would never have shown is no saving.
//!
//! - Bash: up to 30,000 characters inline, whole; more is persisted to a
//!   file and the model sees a `<persisted-output>` note with a preview of
//!   the first 2 KB (about 2,250 characters in all).
//! - MCP tools: up to 50,000 characters inline (measured: 50,000 inline,
//!   60,000 persisted); more is persisted with the same 2 KB preview.
//! - Read and Grep: inline, whole (Read adds a line-number prefix to each
//!   line, for the client's text and jkz's alike, so neither counts it;
//!   Grep's own default limit of 250 lines applies before any hook).
//! - A failing Bash command: its first and last 5,000 characters
//!   ([`bash`]).

use crate::client::view::{FullOutput, OutputKind};
use crate::reduce::{ClientCut, DEFAULT_BUDGET, FAILURE_BUDGET};

/// Bash output longer than this (in characters) is persisted by the client.
pub const BASH_INLINE_CHARS: u64 = 30_000;

/// MCP output longer than this (in characters) is persisted by the client.
pub const MCP_INLINE_CHARS: u64 = 50_000;

/// The client's preview of a persisted output: its first 2,000 bytes, cut
/// after the last newline in them when there is one.
pub const PREVIEW_BYTES: usize = 2_000;

/// Claude Code's cut of a failing Bash command's output (measured on
/// 2.1.332, docs/clients.md): after `Exit code N⏎`, the output's first
/// [`FAILURE_READ`] characters, whole when that text is at most
/// [`FAILURE_WHOLE`] characters, else its first and last [`FAILURE_END`].
pub const FAILURE_READ: usize = 30_000;
pub const FAILURE_WHOLE: usize = 11_024;
pub const FAILURE_END: usize = 5_000;

/// The tools jkz guards, as the client treats them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolKind {
    Bash,
    Read,
    Grep,
    Mcp,
}

impl ToolKind {
    /// The kind of a tool by its name (`mcp__server__tool` for MCP tools);
    /// `None` for tools jkz leaves alone.
    pub fn of(tool_name: &str) -> Option<ToolKind> {
        match tool_name {
            "Bash" => Some(ToolKind::Bash),
            "Read" => Some(ToolKind::Read),
            "Grep" => Some(ToolKind::Grep),
            n if n.starts_with("mcp__") => Some(ToolKind::Mcp),
            _ => None,
        }
    }

    /// The kind of output it is, as the client's view tells kinds apart.
    pub fn output(self) -> OutputKind {
        match self {
            ToolKind::Bash => OutputKind::Shell,
            ToolKind::Mcp => OutputKind::Mcp,
            ToolKind::Read | ToolKind::Grep => OutputKind::Text,
        }
    }
}

/// The most characters the client shows inline of an output of `kind`;
/// `None`: no limit.
pub fn inline_limit(kind: OutputKind) -> Option<u64> {
    match kind {
        OutputKind::Shell => Some(BASH_INLINE_CHARS),
        OutputKind::Mcp => Some(MCP_INLINE_CHARS),
        OutputKind::Text => None,
    }
}

/// The budget of jkz's view: on a failing command, what the client shows
/// of one whole ([`FAILURE_BUDGET`]).
pub fn budget(kind: OutputKind, exit_code: Option<i32>) -> usize {
    match (kind, failing(exit_code)) {
        (OutputKind::Shell, true) => FAILURE_BUDGET,
        _ => DEFAULT_BUDGET,
    }
}

/// How the client cuts an output of `kind` ([`bash`] for a command's).
pub fn cut(kind: OutputKind, exit_code: Option<i32>) -> Option<ClientCut> {
    match kind {
        OutputKind::Shell => Some(bash(exit_code)),
        OutputKind::Mcp => Some(ClientCut::head(MCP_INLINE_CHARS as usize, PREVIEW_BYTES)),
        OutputKind::Text => None,
    }
}

/// How Claude Code shows a Bash command's output: whole up to 30,000
/// characters, else a 2 KB preview; a failing command's as
/// [`FAILURE_READ`] says.
pub fn bash(exit_code: Option<i32>) -> ClientCut {
    match exit_code {
        Some(code) if code != 0 => {
            let exit_line = format!("Exit code {code}\n").len();
            ClientCut {
                whole: FAILURE_WHOLE - exit_line,
                read: FAILURE_READ,
                head: FAILURE_END - exit_line,
                tail: FAILURE_END,
            }
        }
        _ => ClientCut::head(BASH_INLINE_CHARS as usize, PREVIEW_BYTES),
    }
}

/// The characters Claude Code shows of a failing command's output of
/// `chars` characters, with its `Exit code N` line and its marker.
pub fn failure_shown(chars: u64, exit_code: Option<i32>) -> u64 {
    let exit_line = format!("Exit code {}\n", exit_code.unwrap_or(1)).len() as u64;
    let read = exit_line + chars.min(FAILURE_READ as u64);
    if read <= FAILURE_WHOLE as u64 {
        return read;
    }
    let marker = format!("\n\n... [{} characters truncated] ...\n\n", read - 10_000);
    2 * FAILURE_END as u64 + marker.len() as u64
}

/// Bytes the client alone puts in the window for an output of `kind`,
/// `bytes` bytes and `chars` characters whose first bytes are `head`.
pub fn client_bytes(
    kind: OutputKind,
    bytes: u64,
    chars: u64,
    head: &[u8],
    exit_code: Option<i32>,
) -> u64 {
    match kind {
        OutputKind::Shell if failing(exit_code) => failure_shown(bytes, exit_code),
        OutputKind::Shell | OutputKind::Mcp => shown_bytes(&FullOutput {
            bytes,
            over_limit: inline_limit(kind).is_some_and(|l| chars > l),
            head,
            path: None,
        }),
        OutputKind::Text => bytes,
    }
}

/// Bytes the client adds to jkz's view: its `Exit code N` line on a
/// failing command.
pub fn added(kind: OutputKind, exit_code: Option<i32>) -> u64 {
    match kind {
        OutputKind::Shell if failing(exit_code) => {
            format!("Exit code {}\n", exit_code.unwrap_or(0)).len() as u64
        }
        _ => 0,
    }
}

fn failing(exit_code: Option<i32>) -> bool {
    exit_code.is_some_and(|c| c != 0)
}

/// The bytes the client puts in the window for this output, without jkz.
pub fn shown_bytes(output: &FullOutput) -> u64 {
    if !output.over_limit {
        return output.bytes;
    }
    let preview = preview(output.head);
    let path = output.path.unwrap_or(TYPICAL_PATH);
    let note = format!(
        "<persisted-output>\nOutput too large ({}). Full output saved to: {path}\n\nPreview (first 2KB):\n",
        size_text(output.bytes)
    );
    (note.len() + preview.len() + "\n...\n</persisted-output>".len()) as u64
}

/// A persisted output's path as the client writes it, for when the hook
/// input does not say (MCP tools): `~/.claude/projects/<project>/<session
/// id>/tool-results/<id>.json` in a typical home and project.
const TYPICAL_PATH: &str = "/home/user/.claude/projects/-home-user-project/00000000-0000-0000-0000-000000000000/tool-results/toolu_00000000000000000000000000.json";

/// The preview of `head`: its first [`PREVIEW_BYTES`], up to the last
/// newline in them when there is one.
pub fn preview(head: &[u8]) -> &[u8] {
    let first = &head[..head.len().min(PREVIEW_BYTES)];
    if head.len() <= PREVIEW_BYTES {
        return first;
    }
    match memchr::memrchr(b'\n', first) {
        Some(i) => &first[..i],
        None => first,
    }
}

/// `30.3KB`, `47.7MB`: the size as the client's note writes it.
fn size_text(bytes: u64) -> String {
    let kb = bytes as f64 / 1024.0;
    if kb < 1024.0 {
        format!("{kb:.1}KB")
    } else {
        format!("{:.1}MB", kb / 1024.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_output_is_shown_whole() {
        let head = vec![b'x'; 3000];
        let out = FullOutput {
            bytes: 29_000,
            over_limit: false,
            head: &head,
            path: None,
        };
        assert_eq!(shown_bytes(&out), 29_000);
    }

    /// Measured on 2.1.332: a failing command's long output reaches the
    /// model as its first and last 5,000 characters around the client's
    /// marker, 10,040 in all, after the `Exit code N` line.
    #[test]
    fn a_failing_long_output_shows_its_two_ends() {
        for chars in [31_000, 400_000] {
            assert_eq!(
                client_bytes(OutputKind::Shell, chars, chars, &[], Some(101)),
                10_040
            );
        }
        assert_eq!(
            added(OutputKind::Shell, Some(101)),
            "Exit code 101\n".len() as u64
        );
        assert_eq!(added(OutputKind::Shell, Some(0)), 0);
        assert_eq!(budget(OutputKind::Shell, Some(101)), FAILURE_BUDGET);
    }

    #[test]
    fn a_persisted_output_costs_what_the_client_showed() {
        // Measured on 2.1.197: a 400,000-byte test run (40-byte lines after a
        // 25-byte first line) reached the model as 2,248 characters.
        let mut head = String::from("HEADMARK start of output\n");
        for i in 0..100 {
            head.push_str(&format!("test some::module::case_{i:08} ... ok\n"));
        }
        assert_eq!(preview(head.as_bytes()).len(), 25 + 49 * 40 - 1);
        let path = "/tmp/measure/runs/off-400000/home/.claude/projects/-tmp-measure-runs-off-400000-proj/720a3a64-2250-469a-8427-1750961a095f/tool-results/bsyqri8w6.txt";
        let out = FullOutput {
            bytes: 400_000,
            over_limit: true,
            head: head.as_bytes(),
            path: Some(path),
        };
        assert_eq!(shown_bytes(&out), 2248);
        assert_eq!(size_text(400_000), "390.6KB");
        assert_eq!(size_text(31_000), "30.3KB");
        assert_eq!(size_text(50_000_000), "47.7MB");
    }

    #[test]
    fn preview_of_short_or_lineless_heads() {
        assert_eq!(preview(b"abc\n"), b"abc\n");
        let flat = vec![b'x'; 5000];
        assert_eq!(preview(&flat).len(), PREVIEW_BYTES);
    }

    #[test]
    fn kinds() {
        assert_eq!(ToolKind::of("Bash"), Some(ToolKind::Bash));
        assert_eq!(ToolKind::of("mcp__ci__logs"), Some(ToolKind::Mcp));
        assert_eq!(ToolKind::of("Write"), None);
        assert_eq!(inline_limit(ToolKind::Read.output()), None);
    }
}
