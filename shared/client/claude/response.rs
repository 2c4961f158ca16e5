//! A tool's output as Claude Code's PostToolUse hook receives it, and the
//! output jkz hands back in its place, in the shape the client expects for
//! that tool.
//!
//! Shapes (measured on Claude Code 2.1.197):
//!
//! | tool | `tool_response` | the text guarded | answered with |
//! |---|---|---|---|
//! | Bash | `{stdout, stderr, interrupted, isImage, noOutputExpected}`, plus `persistedOutputPath`, `persistedOutputSize` when the client persisted it (`stdout` is then cut to 30,000 characters) | the persisted file, else `stdout` | `updatedToolOutput`: the same object, `stdout` replaced, the persisted fields dropped |
//! | Read | `{type: "text", file: {filePath, content, numLines, startLine, totalLines}}` | `file.content` | `updatedToolOutput`: `content` and `numLines` replaced |
//! | Grep | `{mode, numFiles, filenames, content, numLines, appliedLimit}` | `content` | `updatedToolOutput`: `content` and `numLines` replaced |
//! | `mcp__*` | the content blocks, `[{type: "text", text}]` (whole, never cut) | the texts, joined by newlines | `updatedMCPToolOutput`: one text block |
//!
//! Anything else (an MCP result with an image, a Read of an image or a
//! notebook, Grep's file lists) is left alone: every field but the one
//! replaced passes through unchanged.
//!
//! The client numbers the lines of a Read's `content` itself, from
//! `startLine`, one by one (measured on 2.1.332; docs/clients.md), so a
//! replaced `content` shows true line numbers from its start only: jkz's
//! outline of a large source file ([`crate::tool_output::outline`]) keeps
//! the head as it is and writes each later line's number in its text. The
//! client still lets the agent Edit the file after such a Read (measured).

use std::path::PathBuf;

use serde_json::{json, Map, Value};

use super::shown::ToolKind;
use crate::client::event::{Body, ReadFile, ToolOutput};
use crate::client::{Client, Viewer};
use crate::hook_input::HookInput;

/// The output of `tool`'s PostToolUse event `input`, moved out of its
/// `tool_response` (which stays, the text taken from it, for
/// [`answer`]); `None` for a tool or a shape jkz leaves alone. A large
/// output is held once.
pub fn take(input: &mut HookInput, tool: &str) -> Option<ToolOutput> {
    let kind = ToolKind::of(tool)?;
    let response = input.raw.get_mut("tool_response")?;
    let (body, beside) = match kind {
        ToolKind::Bash => {
            let persisted = text(response, "persistedOutputPath").filter(|p| !p.is_empty());
            let body = match persisted {
                Some(path) => Body::Persisted(PathBuf::from(path)),
                None => Body::Inline(take_text(response.get_mut("stdout"))?),
            };
            let stderr = text(response, "stderr").map_or(0, |s| s.len());
            (body, stderr as u64)
        }
        ToolKind::Read => (
            Body::Inline(take_text(
                response.get_mut("file").and_then(|f| f.get_mut("content")),
            )?),
            0,
        ),
        ToolKind::Grep => (Body::Inline(take_text(response.get_mut("content"))?), 0),
        ToolKind::Mcp => {
            let t = mcp_text(response)?;
            // The answer rebuilds the content from the new text.
            match &mut *response {
                Value::Object(o) => {
                    o.insert("content".into(), Value::Null);
                }
                Value::String(s) => s.clear(),
                other => *other = Value::Null,
            }
            (Body::Inline(t), 0)
        }
    };
    let file = read_file(response);
    Some(ToolOutput {
        body,
        beside,
        viewer: Viewer {
            client: Client::Claude,
            kind: kind.output(),
        },
        file,
        exit: None,
    })
}

/// A Read's file: its path, the first line read and the file's lines.
fn read_file(response: &Value) -> Option<ReadFile> {
    let f = response.get("file")?;
    Some(ReadFile {
        path: f.get("filePath")?.as_str()?.to_string(),
        start: f.get("startLine")?.as_u64()?,
        total: f.get("totalLines")?.as_u64()?,
    })
}

/// The hook's answer to the PostToolUse event `input` (its output taken by
/// [`take`]): its response with the guarded text replaced by `text`.
pub fn answer(input: &HookInput, text: String) -> Value {
    let kind = input
        .text("tool_name")
        .and_then(ToolKind::of)
        .unwrap_or(ToolKind::Bash);
    let response = input.raw.get("tool_response").unwrap_or(&Value::Null);
    let lines = text.lines().count();
    let (key, updated) = match kind {
        ToolKind::Bash => {
            let mut r = response.clone();
            if let Some(o) = r.as_object_mut() {
                o.insert("stdout".into(), Value::String(text));
                // They describe the original output; kept, the client
                // could preview that file again instead of this text.
                o.remove("persistedOutputPath");
                o.remove("persistedOutputSize");
            }
            ("updatedToolOutput", r)
        }
        ToolKind::Read => {
            let mut r = response.clone();
            if let Some(f) = r.get_mut("file").and_then(Value::as_object_mut) {
                f.insert("content".into(), Value::String(text));
                f.insert("numLines".into(), json!(lines));
            }
            ("updatedToolOutput", r)
        }
        ToolKind::Grep => {
            let mut r = response.clone();
            if let Some(o) = r.as_object_mut() {
                o.insert("content".into(), Value::String(text));
                o.insert("numLines".into(), json!(lines));
            }
            ("updatedToolOutput", r)
        }
        ToolKind::Mcp => {
            let updated = match response {
                Value::String(_) => Value::String(text),
                Value::Object(o) => {
                    let mut o: Map<String, Value> = o.clone();
                    o.insert("content".into(), json!([{"type": "text", "text": text}]));
                    Value::Object(o)
                }
                _ => json!([{"type": "text", "text": text}]),
            };
            ("updatedMCPToolOutput", updated)
        }
    };
    json!({"hookSpecificOutput": {"hookEventName": "PostToolUse", key: updated}})
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// Moves a string out of a JSON value, leaving an empty one.
fn take_text(v: Option<&mut Value>) -> Option<String> {
    match v {
        Some(Value::String(s)) => Some(std::mem::take(s)),
        _ => None,
    }
}

/// The text of an MCP tool's result: a string, or content blocks (bare or
/// under `content`) that are all text, joined by newlines. `None` when any
/// block is not text: an image must reach the model as it is.
fn mcp_text(response: &Value) -> Option<String> {
    let blocks = match response {
        Value::String(s) => return Some(s.clone()),
        Value::Array(blocks) => blocks,
        Value::Object(o) => o.get("content")?.as_array()?,
        _ => return None,
    };
    let mut texts = Vec::with_capacity(blocks.len());
    for b in blocks {
        if b.get("type").and_then(Value::as_str) != Some("text") {
            return None;
        }
        texts.push(b.get("text")?.as_str()?);
    }
    Some(texts.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(v: Value) -> HookInput {
        HookInput::parse(v.to_string().as_bytes()).unwrap()
    }

    /// The output taken from `i` (a PostToolUse event), and `i` after.
    fn taken(mut i: HookInput) -> (Option<ToolOutput>, HookInput) {
        let tool = i.text("tool_name").unwrap_or_default().to_string();
        (take(&mut i, &tool), i)
    }

    #[test]
    fn bash_persisted_output_is_read_from_its_file_and_the_answer_drops_the_path() {
        let i = input(json!({
            "hook_event_name": "PostToolUse", "tool_name": "Bash",
            "tool_input": {"command": "cargo test"},
            "tool_response": {"stdout": "cut", "stderr": "warn\n", "interrupted": false,
                "isImage": false, "noOutputExpected": false, "future": 1,
                "persistedOutputPath": "/h/tool-results/x.txt", "persistedOutputSize": 400000}
        }));
        let (out, i) = taken(i);
        let out = out.unwrap();
        assert_eq!(out.body, Body::Persisted("/h/tool-results/x.txt".into()));
        assert_eq!(out.beside, 5);
        let a = answer(&i, "kept".into());
        let u = &a["hookSpecificOutput"]["updatedToolOutput"];
        assert_eq!(a["hookSpecificOutput"]["hookEventName"], "PostToolUse");
        assert_eq!(u["stdout"], "kept");
        assert_eq!(u["stderr"], "warn\n");
        assert_eq!(u["future"], 1, "unknown fields pass through");
        assert!(u.get("persistedOutputPath").is_none() && u.get("persistedOutputSize").is_none());
    }

    #[test]
    fn read_grep_and_mcp_shapes() {
        let read = input(
            json!({"hook_event_name": "PostToolUse", "tool_name": "Read",
            "tool_response": {"type": "text", "file": {"filePath": "/p/a", "content": "a\nb\nc\n",
                "numLines": 3, "startLine": 1, "totalLines": 3}}}),
        );
        let (out, read) = taken(read);
        let out = out.unwrap();
        assert_eq!(out.body, Body::Inline("a\nb\nc\n".into()));
        assert_eq!(
            out.file,
            Some(ReadFile {
                path: "/p/a".into(),
                start: 1,
                total: 3
            })
        );
        let a = answer(&read, "a\n".into());
        let f = &a["hookSpecificOutput"]["updatedToolOutput"]["file"];
        assert_eq!(
            (f["content"].as_str(), f["numLines"].as_u64()),
            (Some("a\n"), Some(1))
        );
        assert_eq!(f["totalLines"], 3);

        let grep = input(
            json!({"hook_event_name": "PostToolUse", "tool_name": "Grep",
            "tool_response": {"mode": "content", "content": "x:1:y", "numLines": 1}}),
        );
        assert_eq!(taken(grep).0.unwrap().body, Body::Inline("x:1:y".into()));
        let files = input(
            json!({"hook_event_name": "PostToolUse", "tool_name": "Grep",
            "tool_response": {"mode": "files_with_matches", "filenames": ["a"]}}),
        );
        assert!(taken(files).0.is_none());

        let mcp = input(
            json!({"hook_event_name": "PostToolUse", "tool_name": "mcp__ci__logs",
            "tool_response": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]}),
        );
        let (out, mcp) = taken(mcp);
        assert_eq!(out.unwrap().body, Body::Inline("one\ntwo".into()));
        let a = answer(&mcp, "t".into());
        assert_eq!(
            a["hookSpecificOutput"]["updatedMCPToolOutput"],
            json!([{"type": "text", "text": "t"}])
        );
        let image = input(
            json!({"hook_event_name": "PostToolUse", "tool_name": "mcp__x__y",
            "tool_response": [{"type": "text", "text": "a"}, {"type": "image", "data": "…"}]}),
        );
        assert!(taken(image).0.is_none());
        let wrapped = input(
            json!({"hook_event_name": "PostToolUse", "tool_name": "mcp__x__y",
            "tool_response": {"content": [{"type": "text", "text": "a"}], "isError": false}}),
        );
        let (out, wrapped) = taken(wrapped);
        assert!(out.is_some());
        let a = answer(&wrapped, "b".into());
        assert_eq!(
            a["hookSpecificOutput"]["updatedMCPToolOutput"]["isError"],
            false
        );
    }

    #[test]
    fn other_tools_and_events() {
        let write = input(
            json!({"hook_event_name": "PostToolUse", "tool_name": "Write",
            "tool_response": {"content": "x"}}),
        );
        assert!(taken(write).0.is_none());
        let no_response = input(json!({"hook_event_name": "PostToolUse", "tool_name": "Bash"}));
        assert!(taken(no_response).0.is_none());
    }
}
