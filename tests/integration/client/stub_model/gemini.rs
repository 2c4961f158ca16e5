//! Gemini, as Gemini CLI speaks it (`GOOGLE_GEMINI_BASE_URL`):
//! `POST /v1beta/models/M:streamGenerateContent` answered as a
//! `text/event-stream` of one `data:` event, `…:generateContent` as one
//! JSON response (Gemini CLI's compression summarizer uses it),
//! `…:countTokens` with a small count.

use serde_json::{json, Value};

use super::{Request, Response, ToolOutput, Turn};

pub(super) fn answer(request: &Request, act: &Turn, input_tokens: u64) -> Response {
    let answer = response(act, input_tokens);
    if request.is_streamed() {
        Response::events(format!("data: {answer}\r\n\r\n"))
    } else {
        Response::json(&answer)
    }
}

pub(super) fn token_count() -> Response {
    Response::json(&json!({"totalTokens": 10}))
}

pub(super) fn not_found() -> Value {
    json!({"error": {"code": 404, "message": "not found", "status": "NOT_FOUND"}})
}

/// A `GenerateContentResponse`. The usage is small: the tests force a
/// compression by a low `model.compressionThreshold`, not by the counts.
fn response(act: &Turn, input_tokens: u64) -> Value {
    json!({
        "candidates": [{"content": {"role": "model", "parts": [part(act)]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": input_tokens, "candidatesTokenCount": 5,
                          "totalTokenCount": input_tokens + 5},
        "modelVersion": "gemini-2.5-flash"
    })
}

fn part(act: &Turn) -> Value {
    match act {
        Turn::Text(text) => json!({ "text": text }),
        Turn::Call { name, input } => json!({"functionCall": {"name": name, "args": input}}),
        Turn::Patch(patch) => {
            json!({"functionCall": {"name": "apply_patch", "args": {"input": patch}}})
        }
        Turn::Reporting { turn, .. } => part(turn),
    }
}

/// Appends the text parts of one content.
pub(super) fn collect_parts(content: &Value, out: &mut String) {
    for p in content["parts"].as_array().into_iter().flatten() {
        if let Some(t) = p["text"].as_str() {
            out.push_str(t);
            out.push('\n');
        }
    }
}

/// Every text part of the contents (not the system instruction).
pub(super) fn all_text(body: &Value) -> String {
    let mut out = String::new();
    for c in body["contents"].as_array().into_iter().flatten() {
        collect_parts(c, &mut out);
    }
    out
}

/// The function responses, each as its JSON text.
pub(super) fn tool_outputs(contents: &[Value]) -> Vec<ToolOutput> {
    contents
        .iter()
        .flat_map(|c| c["parts"].as_array().into_iter().flatten())
        .filter_map(|p| p.get("functionResponse"))
        .map(|r| ToolOutput {
            text: r.to_string(),
            is_error: false,
        })
        .collect()
}
