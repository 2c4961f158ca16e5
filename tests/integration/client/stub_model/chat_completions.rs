//! OpenAI Chat Completions, as Copilot CLI and OpenCode speak it to a
//! custom provider: `POST …/chat/completions` answered, when `"stream"` is
//! true, as server-sent `chat.completion.chunk`s ending in `data: [DONE]`,
//! otherwise as one `chat.completion`.
//!
//! A streamed tool call comes as OpenAI's own do: its first delta carries
//! the call's `index`, `id`, `type` and `function.name` with empty
//! arguments, the arguments follow in fragments that only parse once
//! joined, and the last chunk's `finish_reason` is `"tool_calls"`. A
//! client that reassembles OpenAI's streams reassembles these.

use serde_json::{json, Value};

use super::{collect_text, content_text, next_id, sse, Request, Response, ToolOutput, Turn};

/// The keys of a message's text and of its tool calls' arguments.
const KEYS: &[&str] = &["text", "content", "tool_calls", "function", "arguments"];

/// How many fragments a streamed text or tool-call arguments come in.
const FRAGMENTS: usize = 3;

pub(super) fn answer(request: &Request, act: &Turn, input_tokens: u64) -> Response {
    let model = request.body["model"]
        .as_str()
        .unwrap_or("jkz-stub")
        .to_string();
    let id = format!("chatcmpl-jkz-{}", next_id());
    let usage = json!({"prompt_tokens": input_tokens, "completion_tokens": 5,
                       "total_tokens": input_tokens + 5});
    let message = message(act);
    let finish = if message.get("tool_calls").is_some() {
        "tool_calls"
    } else {
        "stop"
    };
    if request.body["stream"] != true {
        return Response::json(&json!({
            "id": id, "object": "chat.completion", "created": 1_700_000_000, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage
        }));
    }
    let chunk = |delta: Value, finish: Option<&str>| {
        json!({"id": id, "object": "chat.completion.chunk", "created": 1_700_000_000,
               "model": model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut chunks = Vec::new();
    if let Some(calls) = message["tool_calls"].as_array() {
        chunks.push(chunk(json!({"role": "assistant", "content": null}), None));
        for (index, call) in calls.iter().enumerate() {
            let arguments = call["function"]["arguments"].as_str().unwrap_or_default();
            chunks.push(chunk(
                json!({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                       "function": {"name": call["function"]["name"], "arguments": ""}}]}),
                None,
            ));
            for fragment in fragments(arguments) {
                chunks.push(chunk(
                    json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}),
                    None,
                ));
            }
        }
    } else {
        chunks.push(chunk(json!({"role": "assistant", "content": ""}), None));
        for fragment in fragments(message["content"].as_str().unwrap_or_default()) {
            chunks.push(chunk(json!({ "content": fragment }), None));
        }
    }
    chunks.push(chunk(json!({}), Some(finish)));
    if request.body["stream_options"]["include_usage"] == true {
        chunks.push(
            json!({"id": id, "object": "chat.completion.chunk", "created": 1_700_000_000,
                           "model": model, "choices": [], "usage": usage}),
        );
    }
    Response::events(sse(&chunks, false) + "data: [DONE]\n\n")
}

/// The assistant message of a turn, as a whole `chat.completion` carries it.
fn message(act: &Turn) -> Value {
    let call = |name: &str, input: &Value| {
        json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": format!("call_jkz_{}", next_id()), "type": "function",
            "function": {"name": name, "arguments": input.to_string()}
        }]})
    };
    match act {
        Turn::Text(text) => json!({"role": "assistant", "content": text}),
        Turn::Call { name, input } => call(name, input),
        Turn::Patch(patch) => call("apply_patch", &json!({ "input": patch })),
        Turn::Reporting { turn, .. } => message(turn),
    }
}

/// `text` cut into [`FRAGMENTS`] pieces at character boundaries.
fn fragments(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let size = chars.len().div_ceil(FRAGMENTS).max(1);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// Every message's text and tool-call arguments.
pub(super) fn all_text(body: &Value) -> String {
    let mut out = String::new();
    collect_text(&body["messages"], KEYS, &mut out);
    out
}

/// The `tool` messages' contents.
pub(super) fn tool_outputs(messages: &[Value]) -> Vec<ToolOutput> {
    messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| ToolOutput {
            text: content_text(&m["content"]),
            is_error: false,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::sync::Arc;

    use serde_json::{json, Value};

    use super::super::{StubModel, Turn, Wire};

    /// One HTTP/1.1 POST with a plain socket; the status line, the
    /// content type and the body.
    fn post(model: &StubModel, path: &str, body: &Value) -> (String, String, String) {
        let addr = model.url().trim_start_matches("http://").to_string();
        let mut conn = TcpStream::connect(&addr).expect("connect to the stub model");
        let body = body.to_string();
        write!(
            conn,
            "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
             content-length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut response = String::new();
        conn.read_to_string(&mut response).unwrap();
        let (head, body) = response.split_once("\r\n\r\n").expect("a head and a body");
        let status = head.lines().next().unwrap_or_default().to_string();
        let kind = head
            .lines()
            .find_map(|l| l.strip_prefix("content-type: "))
            .unwrap_or_default()
            .to_string();
        (status, kind, body.to_string())
    }

    /// A streamed answer reassembled as OpenAI's clients do it: content
    /// joined, tool calls gathered by `index` with their argument
    /// fragments joined, the last `finish_reason`, the usage.
    #[derive(Debug, Default)]
    struct Reassembled {
        ids: Vec<String>,
        content: String,
        calls: Vec<(String, String, String)>,
        fragments: usize,
        finish_reason: Option<String>,
        usage: Option<Value>,
    }

    fn reassemble(events: &str) -> Reassembled {
        let data: Vec<&str> = events
            .split("\n\n")
            .filter(|e| !e.is_empty())
            .map(|e| {
                e.strip_prefix("data: ")
                    .unwrap_or_else(|| panic!("not a data event: {e:?}"))
            })
            .collect();
        assert_eq!(
            data.last(),
            Some(&"[DONE]"),
            "the stream ends with [DONE]: {events}"
        );
        let mut r = Reassembled::default();
        for chunk in &data[..data.len() - 1] {
            let chunk: Value = serde_json::from_str(chunk).expect("each chunk is JSON");
            assert_eq!(chunk["object"], "chat.completion.chunk", "{chunk}");
            r.ids
                .push(chunk["id"].as_str().unwrap_or_default().to_string());
            if !chunk["usage"].is_null() {
                r.usage = Some(chunk["usage"].clone());
            }
            for choice in chunk["choices"].as_array().unwrap() {
                let delta = &choice["delta"];
                if let Some(text) = delta["content"].as_str() {
                    r.content.push_str(text);
                }
                for call in delta["tool_calls"].as_array().into_iter().flatten() {
                    let i = call["index"]
                        .as_u64()
                        .expect("every tool-call delta has an index")
                        as usize;
                    if r.calls.len() <= i {
                        r.calls.resize(i + 1, Default::default());
                    }
                    if let Some(id) = call["id"].as_str() {
                        r.calls[i].0 = id.to_string();
                    }
                    if let Some(name) = call["function"]["name"].as_str() {
                        r.calls[i].1.push_str(name);
                    }
                    if let Some(arguments) = call["function"]["arguments"].as_str() {
                        r.calls[i].2.push_str(arguments);
                        r.fragments += usize::from(!arguments.is_empty());
                    }
                }
                if let Some(reason) = choice["finish_reason"].as_str() {
                    r.finish_reason = Some(reason.to_string());
                }
            }
        }
        r
    }

    #[test]
    fn stub_model_streams_a_chat_completions_tool_call_and_a_final_answer() {
        let input =
            json!({"command": "cat build.log | tail -n 40", "description": "Show the build's end"});
        let call_input = input.clone();
        let model = StubModel::start(Arc::new(move |r| {
            if r.tool_outputs().is_empty() {
                Turn::Call {
                    name: "bash".into(),
                    input: call_input.clone(),
                }
            } else {
                Turn::Text("The build failed: PEAR-FAILURE in src/pay.rs.".into())
            }
        }));
        let tools = json!([{"type": "function", "function": {"name": "bash",
                            "parameters": {"type": "object"}}}]);
        let first = json!({"model": "jkz-test", "stream": true, "stream_options": {"include_usage": true},
                           "tools": tools,
                           "messages": [{"role": "system", "content": "You are a coding agent."},
                                        {"role": "user", "content": "Why did the build fail?"}]});
        let (status, kind, events) = post(&model, "/v1/chat/completions", &first);
        assert_eq!(status, "HTTP/1.1 200 OK");
        assert_eq!(kind, "text/event-stream");
        let call = reassemble(&events);
        assert_eq!(
            call.finish_reason.as_deref(),
            Some("tool_calls"),
            "{events}"
        );
        assert_eq!(call.calls.len(), 1, "{events}");
        let (id, name, arguments) = &call.calls[0];
        assert!(id.starts_with("call_"), "{events}");
        assert_eq!(name, "bash");
        assert!(
            call.fragments > 1,
            "the arguments come in fragments: {events}"
        );
        let parsed: Value = serde_json::from_str(arguments).expect("the joined arguments parse");
        assert_eq!(parsed, input);
        assert!(call.content.is_empty(), "{events}");
        assert!(
            call.ids.windows(2).all(|w| w[0] == w[1]),
            "one id per completion: {events}"
        );
        assert_eq!(
            call.usage.as_ref().map(|u| &u["prompt_tokens"]),
            Some(&json!(100))
        );

        // The client runs the tool and sends its output back.
        let mut second = first.clone();
        second["messages"].as_array_mut().unwrap().extend([
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function",
                   "function": {"name": name, "arguments": arguments}}]}),
            json!({"role": "tool", "tool_call_id": id, "content": "error: PEAR-FAILURE in src/pay.rs"}),
        ]);
        let (_, _, events) = post(&model, "/v1/chat/completions", &second);
        let text = reassemble(&events);
        assert_eq!(
            text.content,
            "The build failed: PEAR-FAILURE in src/pay.rs."
        );
        assert_eq!(text.finish_reason.as_deref(), Some("stop"), "{events}");
        assert!(text.calls.is_empty(), "{events}");
        assert_ne!(text.ids[0], call.ids[0], "each completion its own id");

        // Whole, when not streamed.
        let mut whole = second.clone();
        whole["stream"] = json!(false);
        let (_, kind, body) = post(&model, "/v1/chat/completions", &whole);
        assert_eq!(kind, "application/json");
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["object"], "chat.completion");
        assert_eq!(body["choices"][0]["finish_reason"], "stop");
        assert_eq!(
            body["choices"][0]["message"]["content"],
            "The build failed: PEAR-FAILURE in src/pay.rs."
        );

        // The log reads the conversation back.
        let (status, _, _) = post(&model, "/v1/models", &json!({}));
        assert_eq!(status, "HTTP/1.1 404 Not Found");
        assert_eq!(model.requests().len(), 4);
        let requests = model.model_requests();
        assert_eq!(requests.len(), 3);
        let r = &requests[1];
        assert_eq!(r.wire(), Some(Wire::ChatCompletions));
        assert!(r.is_streamed() && !requests[2].is_streamed());
        assert_eq!(r.tools_offered(), 1);
        assert_eq!(r.last_user_text(), "Why did the build fail?\n");
        let outputs = r.tool_outputs();
        assert_eq!(outputs.len(), 1);
        assert_eq!(outputs[0].text, "error: PEAR-FAILURE in src/pay.rs");
        let all = r.all_text();
        assert!(
            all.contains("You are a coding agent.") && all.contains("cat build.log"),
            "{all}"
        );
    }
}
