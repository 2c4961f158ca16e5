#![allow(dead_code)] // A harness: other tests use what this one does not.

//! A model server of our own on 127.0.0.1: just enough of the Messages API
//! for the real Claude Code client. HTTP/1.1, one request per connection
//! (`Connection: close`), every request recorded so a test can assert on
//! what the client sent.
//!
//! `POST /v1/messages` is answered by the test's [`Responder`] as a
//! `text/event-stream` (or as one JSON message when `"stream"` is not true);
//! `POST /v1/messages/count_tokens` with a small JSON count; anything else 404.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

/// The most bytes of a request accepted (headers plus body).
const MAX_REQUEST: usize = 64 * 1024 * 1024;

/// Every socket read and write gives up after this long.
const IO_TIMEOUT: Duration = Duration::from_secs(30);

/// One request as received.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// The body parsed as JSON (`Value::Null` when it was not JSON).
    pub body: Value,
}

impl Recorded {
    /// True for a model turn (`POST /v1/messages`, not `count_tokens`).
    pub fn is_message(&self) -> bool {
        self.method == "POST"
            && (self.path == "/v1/messages" || self.path.starts_with("/v1/messages?"))
    }

    /// The whole body as text, for "does the request carry X" assertions.
    pub fn text(&self) -> String {
        self.body.to_string()
    }

    /// Every text the messages (and the system prompt) carry, joined.
    pub fn all_text(&self) -> String {
        let mut out = String::new();
        collect_text(&self.body["system"], &mut out);
        collect_text(&self.body["messages"], &mut out);
        out
    }

    /// The text of the last user message.
    pub fn last_user_text(&self) -> String {
        let mut out = String::new();
        if let Some(m) = self.body["messages"]
            .as_array()
            .and_then(|ms| ms.iter().rev().find(|m| m["role"] == "user"))
        {
            collect_text(&m["content"], &mut out);
        }
        out
    }
}

fn collect_text(v: &Value, out: &mut String) {
    match v {
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Value::Array(items) => items.iter().for_each(|i| collect_text(i, out)),
        Value::Object(o) => {
            for key in ["text", "content"] {
                if let Some(inner) = o.get(key) {
                    collect_text(inner, out);
                }
            }
        }
        _ => {}
    }
}

/// What the model answers to one `/v1/messages` request.
#[derive(Clone, Debug)]
pub enum Reply {
    Text(String),
    ToolUse { name: String, input: Value },
}

/// Decides the reply to each model request.
pub type Responder = Arc<dyn Fn(&Recorded) -> Reply + Send + Sync>;

/// A running model server; stops accepting when dropped.
pub struct ModelServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
    stop: Arc<AtomicBool>,
}

impl ModelServer {
    /// Starts a server on an ephemeral loopback port.
    pub fn start(responder: Responder) -> ModelServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local addr");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        {
            let requests = Arc::clone(&requests);
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(conn) = conn else { continue };
                    let requests = Arc::clone(&requests);
                    let responder = Arc::clone(&responder);
                    std::thread::spawn(move || {
                        let _ = serve(conn, &requests, &responder);
                    });
                }
            });
        }
        ModelServer {
            addr,
            requests,
            stop,
        }
    }

    /// `http://127.0.0.1:PORT`, for `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().expect("requests lock").clone()
    }

    /// The model turns received so far.
    pub fn messages(&self) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(Recorded::is_message)
            .collect()
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
    }
}

fn serve(
    conn: TcpStream,
    requests: &Mutex<Vec<Recorded>>,
    responder: &Responder,
) -> std::io::Result<()> {
    let recorded = read_request(&conn)?;
    requests
        .lock()
        .expect("requests lock")
        .push(recorded.clone());
    let mut conn = conn;
    if recorded.path.starts_with("/v1/messages/count_tokens") {
        return respond(
            &mut conn,
            "200 OK",
            "application/json",
            &json!({"input_tokens": 42}).to_string(),
        );
    }
    if !recorded.is_message() {
        let body =
            json!({"type": "error", "error": {"type": "not_found_error", "message": "not found"}});
        return respond(
            &mut conn,
            "404 Not Found",
            "application/json",
            &body.to_string(),
        );
    }
    let reply = responder(&recorded);
    if recorded.body["stream"] == true {
        respond(
            &mut conn,
            "200 OK",
            "text/event-stream",
            &event_stream(&reply),
        )
    } else {
        respond(
            &mut conn,
            "200 OK",
            "application/json",
            &whole_message(&reply).to_string(),
        )
    }
}

/// Reads one HTTP/1.1 request from `conn` (bounded, with timeouts): every
/// model server of these tests records requests this way.
pub fn read_request(conn: &TcpStream) -> std::io::Result<Recorded> {
    conn.set_read_timeout(Some(IO_TIMEOUT))?;
    conn.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let mut length = 0usize;
    let mut chunked = false;
    let mut header_bytes = 0usize;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 {
            break;
        }
        header_bytes += h.len();
        if header_bytes > 1024 * 1024 {
            return Err(std::io::Error::other("headers too large"));
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((name, value)) = h.split_once(':') {
            let name = name.trim().to_ascii_lowercase();
            let value = value.trim();
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
    Ok(Recorded {
        method,
        path,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
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

pub fn respond(conn: &mut TcpStream, status: &str, kind: &str, body: &str) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nrequest-id: req_jkz\r\nconnection: close\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes())?;
    conn.write_all(body.as_bytes())?;
    conn.flush()
}

/// Each reply needs its own message id: the client groups the conversation
/// into API rounds by assistant message id, and `/compact` refuses ("Not
/// enough messages to compact") with fewer than two groups.
fn message_start() -> Value {
    static NEXT_ID: AtomicU64 = AtomicU64::new(1);
    let id = format!("msg_jkz_{}", NEXT_ID.fetch_add(1, Ordering::SeqCst));
    json!({"id": id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
           "content": [], "stop_reason": null, "stop_sequence": null,
           "usage": {"input_tokens": 100, "output_tokens": 1}})
}

/// A tool-use id unique in this process: a conversation with two tool calls
/// must not give both the same id (the client then drops the second).
fn tool_use_id() -> String {
    static NEXT_TOOL_USE: AtomicU64 = AtomicU64::new(1);
    format!("toolu_jkz{}", NEXT_TOOL_USE.fetch_add(1, Ordering::SeqCst))
}

/// The Messages API event stream for a reply.
pub fn event_stream(reply: &Reply) -> String {
    let mut events = vec![json!({"type": "message_start", "message": message_start()})];
    let stop_reason = match reply {
        Reply::Text(text) => {
            events.push(json!({"type": "content_block_start", "index": 0,
                               "content_block": {"type": "text", "text": ""}}));
            events.push(json!({"type": "content_block_delta", "index": 0,
                               "delta": {"type": "text_delta", "text": text}}));
            "end_turn"
        }
        Reply::ToolUse { name, input } => {
            events.push(json!({"type": "content_block_start", "index": 0,
                               "content_block": {"type": "tool_use", "id": tool_use_id(), "name": name, "input": {}}}));
            events.push(json!({"type": "content_block_delta", "index": 0,
                               "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}));
            "tool_use"
        }
    };
    events.push(json!({"type": "content_block_stop", "index": 0}));
    events.push(json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                       "usage": {"output_tokens": 20}}));
    events.push(json!({"type": "message_stop"}));
    let mut out = String::new();
    for e in events {
        out.push_str(&format!(
            "event: {}\ndata: {e}\n\n",
            e["type"].as_str().unwrap_or("")
        ));
    }
    out
}

/// The same reply as one non-streamed message.
pub fn whole_message(reply: &Reply) -> Value {
    let mut m = message_start();
    let (content, stop) = match reply {
        Reply::Text(text) => (json!([{"type": "text", "text": text}]), "end_turn"),
        Reply::ToolUse { name, input } => (
            json!([{"type": "tool_use", "id": tool_use_id(), "name": name, "input": input}]),
            "tool_use",
        ),
    };
    m["content"] = content;
    m["stop_reason"] = json!(stop);
    m["usage"]["output_tokens"] = json!(20);
    m
}
