#![allow(dead_code)] // A harness: other tests use what this one does not.

//! A model server of our own on 127.0.0.1 for Codex CLI: just enough of
//! the Responses API (`POST /v1/responses`, streamed as server-sent
//! events: `response.created`, one `response.output_item.done`,
//! `response.completed` with the usage the test chooses). HTTP/1.1, one
//! request per connection; every request recorded.
//!
//! The usage reported is how a test forces an automatic compaction: a
//! reply whose `total_tokens` exceeds `model_auto_compact_token_limit`
//! makes Codex compact before its next request.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

const MAX_REQUEST: usize = 64 * 1024 * 1024;
const IO_TIMEOUT: Duration = Duration::from_secs(30);

/// One `/v1/responses` request as received.
#[derive(Clone, Debug)]
pub struct Request {
    pub path: String,
    pub body: Value,
}

impl Request {
    /// The input items (the conversation as Codex sends it).
    pub fn input(&self) -> Vec<Value> {
        self.body["input"].as_array().cloned().unwrap_or_default()
    }

    /// Codex's summarizing request: it offers the model no tools.
    pub fn is_summarizing(&self) -> bool {
        self.body["tools"].as_array().is_none_or(Vec::is_empty)
    }

    /// Every text of the input, joined (messages, tool calls, tool outputs).
    pub fn all_text(&self) -> String {
        let mut out = String::new();
        for item in self.input() {
            collect(&item, &mut out);
        }
        out
    }

    /// The text of the last user message.
    pub fn last_user_text(&self) -> String {
        let mut out = String::new();
        if let Some(m) = self
            .input()
            .iter()
            .rev()
            .find(|i| i["type"] == "message" && i["role"] == "user")
        {
            collect(&m["content"], &mut out);
        }
        out
    }

    /// The outputs of the tool calls in the input, in order.
    pub fn tool_outputs(&self) -> Vec<String> {
        self.input()
            .iter()
            .filter(|i| {
                matches!(
                    i["type"].as_str(),
                    Some("function_call_output" | "custom_tool_call_output")
                )
            })
            .map(|i| match &i["output"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect()
    }
}

fn collect(v: &Value, out: &mut String) {
    match v {
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Value::Array(items) => items.iter().for_each(|i| collect(i, out)),
        Value::Object(o) => {
            for key in ["text", "content", "output", "input", "arguments"] {
                if let Some(inner) = o.get(key) {
                    collect(inner, out);
                }
            }
        }
        _ => {}
    }
}

/// What the model answers to one request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// An assistant message.
    Text(String),
    /// A function call (`exec_command` with `{"cmd": …}` runs a shell).
    Call { name: String, arguments: Value },
    /// An `apply_patch` call (Codex's freeform tool) with this patch body.
    Patch(String),
}

/// Decides the reply to each request, and the tokens its usage reports.
pub type Responder = Arc<dyn Fn(&Request) -> (Reply, u64) + Send + Sync>;

/// A running server; stops accepting when dropped.
pub struct CodexServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
}

impl CodexServer {
    pub fn start(responder: Responder) -> CodexServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local addr");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        {
            let (requests, stop) = (Arc::clone(&requests), Arc::clone(&stop));
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(conn) = conn else { continue };
                    let (requests, responder) = (Arc::clone(&requests), Arc::clone(&responder));
                    std::thread::spawn(move || {
                        let _ = serve(conn, &requests, &responder);
                    });
                }
            });
        }
        CodexServer {
            addr,
            requests,
            stop,
        }
    }

    /// `http://127.0.0.1:PORT/v1`, for the provider's `base_url`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every `/v1/responses` request so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().expect("requests lock").clone()
    }
}

impl Drop for CodexServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
    }
}

fn serve(
    conn: TcpStream,
    requests: &Mutex<Vec<Request>>,
    responder: &Responder,
) -> std::io::Result<()> {
    conn.set_read_timeout(Some(IO_TIMEOUT))?;
    conn.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let (mut length, mut chunked) = (0usize, false);
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 {
            break;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((name, value)) = h.split_once(':') {
            let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
            if name == "content-length" {
                length = value.parse().unwrap_or(0);
            } else if name == "transfer-encoding" && value.eq_ignore_ascii_case("chunked") {
                chunked = true;
            }
        }
    }
    let body = if chunked {
        read_chunked(&mut reader)?
    } else {
        if length > MAX_REQUEST {
            return Err(std::io::Error::other("request too large"));
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        body
    };
    let mut conn = conn;
    if method != "POST" || !path.starts_with("/v1/responses") {
        return respond(&mut conn, "404 Not Found", "application/json", "{}");
    }
    let request = Request {
        path,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    let index = {
        let mut all = requests.lock().expect("requests lock");
        all.push(request.clone());
        all.len() - 1
    };
    let (reply, tokens) = responder(&request);
    respond(
        &mut conn,
        "200 OK",
        "text/event-stream",
        &event_stream(index, &reply, tokens),
    )
}

fn read_chunked(reader: &mut impl BufRead) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        reader.read_line(&mut size)?;
        let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
            .map_err(std::io::Error::other)?;
        if size == 0 {
            let mut trailer = String::new();
            reader.read_line(&mut trailer)?;
            return Ok(body);
        }
        if body.len() + size > MAX_REQUEST {
            return Err(std::io::Error::other("request too large"));
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..])?;
        let mut crlf = [0; 2];
        reader.read_exact(&mut crlf)?;
    }
}

fn respond(conn: &mut TcpStream, status: &str, kind: &str, body: &str) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes())?;
    conn.write_all(body.as_bytes())?;
    conn.flush()
}

/// The Responses API event stream of one reply (ids unique per request).
pub fn event_stream(index: usize, reply: &Reply, tokens: u64) -> String {
    let id = format!("resp_jkz_{index}");
    let item = match reply {
        Reply::Text(text) => json!({
            "type": "message", "role": "assistant", "id": format!("msg_jkz_{index}"),
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]
        }),
        Reply::Call { name, arguments } => json!({
            "type": "function_call", "id": format!("fc_jkz_{index}"),
            "call_id": format!("call_jkz_{index}"), "name": name,
            "arguments": arguments.to_string(), "status": "completed"
        }),
        Reply::Patch(patch) => json!({
            "type": "custom_tool_call", "id": format!("ctc_jkz_{index}"),
            "call_id": format!("call_jkz_{index}"), "name": "apply_patch",
            "input": patch, "status": "completed"
        }),
    };
    let events = [
        json!({"type": "response.created", "response": {"id": id}}),
        json!({"type": "response.output_item.done", "item": item}),
        json!({"type": "response.completed", "response": {"id": id, "usage": {
            "input_tokens": tokens, "input_tokens_details": null,
            "output_tokens": 5, "output_tokens_details": null,
            "total_tokens": tokens + 5
        }}}),
    ];
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
        .collect()
}
