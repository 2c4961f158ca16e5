//! OpenAI Responses, as Codex CLI speaks it: `POST /v1/responses`, streamed
//! as `response.created`, one `response.output_item.done`,
//! `response.completed` with the usage the turn reports.
//!
//! The usage is how a test forces Codex to compact: a reply whose
//! `total_tokens` exceeds `model_auto_compact_token_limit` makes it compact
//! before its next request ([`Turn::reporting`]).

use serde_json::{json, Value};

use super::{collect_text, next_id, sse, Response, ToolOutput, Turn, RICH};

pub(super) fn answer(act: &Turn, input_tokens: u64) -> Response {
    let n = next_id();
    let id = format!("resp_jkz_{n}");
    let events = [
        json!({"type": "response.created", "response": {"id": id}}),
        json!({"type": "response.output_item.done", "item": item(act, n)}),
        json!({"type": "response.completed", "response": {"id": id, "usage": {
            "input_tokens": input_tokens, "input_tokens_details": null,
            "output_tokens": 5, "output_tokens_details": null,
            "total_tokens": input_tokens + 5
        }}}),
    ];
    Response::events(sse(&events, true))
}

fn item(act: &Turn, n: u64) -> Value {
    match act {
        Turn::Text(text) => json!({
            "type": "message", "role": "assistant", "id": format!("msg_jkz_{n}"),
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]
        }),
        Turn::Call { name, input } => json!({
            "type": "function_call", "id": format!("fc_jkz_{n}"),
            "call_id": format!("call_jkz_{n}"), "name": name,
            "arguments": input.to_string(), "status": "completed"
        }),
        Turn::Patch(patch) => json!({
            "type": "custom_tool_call", "id": format!("ctc_jkz_{n}"),
            "call_id": format!("call_jkz_{n}"), "name": "apply_patch",
            "input": patch, "status": "completed"
        }),
        Turn::Reporting { turn, .. } => item(turn, n),
    }
}

/// Every text of the input items: messages, tool calls, tool outputs.
pub(super) fn all_text(body: &Value) -> String {
    let mut out = String::new();
    collect_text(&body["input"], RICH, &mut out);
    out
}

/// The outputs of the function and custom tool calls.
pub(super) fn tool_outputs(input: &[Value]) -> Vec<ToolOutput> {
    input
        .iter()
        .filter(|i| {
            matches!(
                i["type"].as_str(),
                Some("function_call_output" | "custom_tool_call_output")
            )
        })
        .map(|i| ToolOutput {
            text: match &i["output"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            },
            is_error: false,
        })
        .collect()
}
