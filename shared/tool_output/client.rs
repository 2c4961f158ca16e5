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

/// Bash output longer than this (in characters) is persisted by the client.
pub const BASH_INLINE_CHARS: u64 = 30_000;

/// MCP output longer than this (in characters) is persisted by the client.
pub const MCP_INLINE_CHARS: u64 = 50_000;

/// The client's preview of a persisted output: its first 2,000 bytes, cut
/// after the last newline in them when there is one.
pub const PREVIEW_BYTES: usize = 2_000;

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

    /// The most characters the client shows inline; `None`: no limit.
    pub fn inline_limit(self) -> Option<u64> {
        match self {
            ToolKind::Bash => Some(BASH_INLINE_CHARS),
            ToolKind::Mcp => Some(MCP_INLINE_CHARS),
            ToolKind::Read | ToolKind::Grep => None,
        }
    }
}

/// The full output, as far as the client's rule needs it.
#[derive(Debug)]
pub struct FullOutput<'a> {
    /// Its length in bytes.
    pub bytes: u64,
    /// True when it is longer than the client shows inline (the client
    /// persisted it, or its characters exceed the limit).
    pub over_limit: bool,
    /// Its first bytes (at least [`PREVIEW_BYTES`] of them when it has
    /// that many).
    pub head: &'a [u8],
    /// Where the client saved it, when known.
    pub path: Option<&'a str>,
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
        assert_eq!(ToolKind::Read.inline_limit(), None);
    }
}
