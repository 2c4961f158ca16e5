//! Anthropic Messages, as Claude Code speaks it: `POST /v1/messages`
//! answered as a `text/event-stream` (or as one JSON message when
//! `"stream"` is not true), `POST /v1/messages/count_tokens` with a small
//! count.

use serde_json::{json, Value};

use super::{collect_text, content_text, next_id, sse, Request, Response, ToolOutput, Turn, PLAIN};

pub(super) fn answer(request: &Request, act: &Turn, input_tokens: u64) -> Response {
    if request.body["stream"] == true {
        Response::events(event_stream(act, input_tokens))
    } else {
        Response::json(&whole_message(act, input_tokens))
    }
}

pub(super) fn token_count() -> Response {
    Response::json(&json!({"input_tokens": 42}))
}

pub(super) fn not_found() -> Value {
    json!({"type": "error", "error": {"type": "not_found_error", "message": "not found"}})
}

/// Each reply needs its own message id: the client groups the conversation
/// into API rounds by assistant message id, and `/compact` refuses ("Not
/// enough messages to compact") with fewer than two groups.
fn message_start(input_tokens: u64) -> Value {
    json!({"id": format!("msg_jkz_{}", next_id()), "type": "message", "role": "assistant",
           "model": "claude-sonnet-4-5", "content": [], "stop_reason": null, "stop_sequence": null,
           "usage": {"input_tokens": input_tokens, "output_tokens": 1}})
}

/// The content block of a turn and the stop reason it ends with.
fn block(act: &Turn) -> (Value, &'static str) {
    match act {
        Turn::Text(text) => (json!({"type": "text", "text": text}), "end_turn"),
        Turn::Call { name, input } => (
            json!({"type": "tool_use", "id": format!("toolu_jkz{}", next_id()), "name": name, "input": input}),
            "tool_use",
        ),
        Turn::Patch(patch) => block(&Turn::Call {
            name: "apply_patch".into(),
            input: json!({ "input": patch }),
        }),
        Turn::Reporting { turn, .. } => block(turn),
    }
}

fn event_stream(act: &Turn, input_tokens: u64) -> String {
    let (mut block, stop_reason) = block(act);
    // The block starts empty; its content follows as one delta.
    let delta = if block["type"] == "text" {
        let text = block["text"].take();
        block["text"] = json!("");
        json!({"type": "text_delta", "text": text})
    } else {
        let input = block["input"].take();
        block["input"] = json!({});
        json!({"type": "input_json_delta", "partial_json": input.to_string()})
    };
    sse(
        &[
            json!({"type": "message_start", "message": message_start(input_tokens)}),
            json!({"type": "content_block_start", "index": 0, "content_block": block}),
            json!({"type": "content_block_delta", "index": 0, "delta": delta}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                   "usage": {"output_tokens": 20}}),
            json!({"type": "message_stop"}),
        ],
        true,
    )
}

fn whole_message(act: &Turn, input_tokens: u64) -> Value {
    let mut m = message_start(input_tokens);
    let (block, stop_reason) = block(act);
    m["content"] = json!([block]);
    m["stop_reason"] = json!(stop_reason);
    m["usage"]["output_tokens"] = json!(20);
    m
}

/// The system prompt and every message's text.
pub(super) fn all_text(body: &Value) -> String {
    let mut out = String::new();
    collect_text(&body["system"], PLAIN, &mut out);
    collect_text(&body["messages"], PLAIN, &mut out);
    out
}

/// The `tool_result` blocks of every message.
pub(super) fn tool_outputs(messages: &[Value]) -> Vec<ToolOutput> {
    messages
        .iter()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| ToolOutput {
            text: content_text(&b["content"]),
            is_error: b["is_error"] == true,
        })
        .collect()
}
