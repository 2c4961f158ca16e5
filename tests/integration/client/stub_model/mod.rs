//! The stub model: one server of our own on 127.0.0.1 that speaks the wire
//! format of every real client the tests drive, so a test scripts what the
//! model does next once and reads back what the client sent the same way
//! whatever the client.
//!
//! | wire format | requests answered | clients |
//! |---|---|---|
//! | [Anthropic Messages](anthropic) | `POST /v1/messages` (streamed or whole), `…/count_tokens` | Claude Code |
//! | [OpenAI Responses](responses) | `POST /v1/responses` (streamed) | Codex CLI |
//! | [Gemini](gemini) | `POST /v1beta/models/M:streamGenerateContent`, `…:generateContent`, `…:countTokens` | Gemini CLI |
//! | [OpenAI Chat Completions](chat_completions) | `POST …/chat/completions` (streamed or whole) | Copilot CLI, OpenCode |
//!
//! Every model request is answered by the test's [`Script`]: one [`Turn`]
//! (text, a tool call, Codex's freeform patch), rendered in the request's
//! own wire format. Every request, answered or not, goes into one log
//! ([`StubModel::requests`]); [`Request`] reads the conversation out of any
//! of the formats. HTTP/1.1, one request per connection (`Connection:
//! close`), bounded reads with timeouts.

pub mod anthropic;
pub mod chat_completions;
pub mod gemini;
pub mod responses;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

/// The most bytes of a request accepted (headers plus body).
const MAX_REQUEST: usize = 64 * 1024 * 1024;

/// Every socket read and write gives up after this long.
const IO_TIMEOUT: Duration = Duration::from_secs(30);

/// What the usage of a reply reports as input tokens unless the turn says
/// otherwise ([`Turn::reporting`]).
const DEFAULT_INPUT_TOKENS: u64 = 100;

/// The wire format of a model request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    Messages,
    Responses,
    Gemini,
    ChatCompletions,
}

impl Wire {
    /// The format whose model turn `method path` is (`None`: not a model
    /// turn, e.g. a token count).
    fn of_turn(method: &str, path: &str) -> Option<Wire> {
        let path = path.split('?').next().unwrap_or_default();
        if method != "POST" {
            return None;
        }
        if path == "/v1/messages" {
            Some(Wire::Messages)
        } else if path == "/v1/responses" {
            Some(Wire::Responses)
        } else if path.starts_with("/v1beta/models/")
            && (path.ends_with(":streamGenerateContent") || path.ends_with(":generateContent"))
        {
            Some(Wire::Gemini)
        } else if path.ends_with("/chat/completions") {
            Some(Wire::ChatCompletions)
        } else {
            None
        }
    }
}

/// What the model does next.
#[derive(Clone, Debug)]
pub enum Turn {
    /// An assistant message.
    Text(String),
    /// A call of the client's tool `name` with `input` (its arguments).
    Call { name: String, input: Value },
    /// Codex's freeform `apply_patch` with this patch body. The other
    /// formats have no freeform tool: they carry it as a call of
    /// `apply_patch` with `{"input": patch}`.
    Patch(String),
    /// `turn`, with a usage reporting `input_tokens`: how a test makes a
    /// client that compacts on reported usage (Codex) compact.
    Reporting { input_tokens: u64, turn: Box<Turn> },
}

impl Turn {
    /// This turn with a usage reporting `input_tokens`.
    pub fn reporting(self, input_tokens: u64) -> Turn {
        Turn::Reporting {
            input_tokens,
            turn: Box::new(self.act().0.clone()),
        }
    }

    /// What the model does (never [`Turn::Reporting`]) and the input tokens
    /// its usage reports.
    pub fn act(&self) -> (&Turn, u64) {
        match self {
            Turn::Reporting { input_tokens, turn } => (turn.act().0, *input_tokens),
            act => (act, DEFAULT_INPUT_TOKENS),
        }
    }
}

/// Decides what the model does for each model request.
pub type Script = Arc<dyn Fn(&Request) -> Turn + Send + Sync>;

/// One request as received.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// The body parsed as JSON (`Value::Null` when it was not JSON).
    pub body: Value,
}

/// The output of one tool call, as the client sent it back to the model.
#[derive(Clone, Debug)]
pub struct ToolOutput {
    /// Its text (Gemini: the whole `functionResponse` as JSON text).
    pub text: String,
    /// Whether the client marked it an error (only Messages has the flag).
    pub is_error: bool,
}

impl Request {
    /// The wire format of this model request (`None`: not a model turn).
    pub fn wire(&self) -> Option<Wire> {
        Wire::of_turn(&self.method, &self.path)
    }

    /// A request the script answers.
    pub fn is_model_turn(&self) -> bool {
        self.wire().is_some()
    }

    /// The client asked for the answer as a stream (Gemini CLI streams its
    /// chat turns and asks its utility prompts, the summarizer among them,
    /// for a whole answer).
    pub fn is_streamed(&self) -> bool {
        match self.wire() {
            Some(Wire::Gemini) => self.path.contains(":streamGenerateContent"),
            Some(_) => self.body["stream"] == true,
            None => false,
        }
    }

    /// The whole body as text, for "does the request carry X" assertions.
    pub fn text(&self) -> String {
        self.body.to_string()
    }

    /// The conversation's items as the wire format carries them: the
    /// messages (Messages, Chat Completions), the input items (Responses),
    /// the contents (Gemini).
    pub fn items(&self) -> Vec<Value> {
        let key = match self.wire() {
            Some(Wire::Messages | Wire::ChatCompletions) => "messages",
            Some(Wire::Responses) => "input",
            Some(Wire::Gemini) => "contents",
            None => return Vec::new(),
        };
        self.body[key].as_array().cloned().unwrap_or_default()
    }

    /// Every text the conversation carries, joined by newlines: messages
    /// and the system prompt (Messages), input items with tool calls and
    /// outputs (Responses), text parts of the contents (Gemini), messages
    /// and tool-call arguments (Chat Completions).
    pub fn all_text(&self) -> String {
        match self.wire() {
            Some(Wire::Messages) => anthropic::all_text(&self.body),
            Some(Wire::Responses) => responses::all_text(&self.body),
            Some(Wire::Gemini) => gemini::all_text(&self.body),
            Some(Wire::ChatCompletions) => chat_completions::all_text(&self.body),
            None => String::new(),
        }
    }

    /// The text of the last user message.
    pub fn last_user_text(&self) -> String {
        let wire = self.wire();
        let is_user = |i: &&Value| match wire {
            // Its tool outputs are items too, without a role.
            Some(Wire::Responses) => i["type"] == "message" && i["role"] == "user",
            _ => i["role"] == "user",
        };
        let mut out = String::new();
        if let Some(last) = self.items().iter().rev().find(is_user) {
            match wire {
                Some(Wire::Gemini) => gemini::collect_parts(last, &mut out),
                Some(Wire::Responses) => collect_text(&last["content"], RICH, &mut out),
                _ => collect_text(&last["content"], PLAIN, &mut out),
            }
        }
        out
    }

    /// The outputs of the tool calls in the conversation, in order.
    pub fn tool_outputs(&self) -> Vec<ToolOutput> {
        match self.wire() {
            Some(Wire::Messages) => anthropic::tool_outputs(&self.items()),
            Some(Wire::Responses) => responses::tool_outputs(&self.items()),
            Some(Wire::Gemini) => gemini::tool_outputs(&self.items()),
            Some(Wire::ChatCompletions) => chat_completions::tool_outputs(&self.items()),
            None => Vec::new(),
        }
    }

    /// How many tools the client offers the model in this request (a
    /// client's summarizing request often offers none).
    pub fn tools_offered(&self) -> usize {
        self.body["tools"].as_array().map_or(0, Vec::len)
    }
}

/// `requests` numbered, each as `view` shows it: what a failing assertion
/// prints of a conversation.
pub fn numbered(requests: &[Request], view: impl Fn(&Request) -> String) -> String {
    requests
        .iter()
        .enumerate()
        .map(|(i, r)| format!("--- request {i}:\n{}", view(r)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A content that is a string, or a list of parts whose texts join.
pub(super) fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    }
}

/// The keys of the parts that carry a message's text.
pub(super) const PLAIN: &[&str] = &["text", "content"];

/// [`PLAIN`], and the keys of tool calls and their outputs.
pub(super) const RICH: &[&str] = &["text", "content", "output", "input", "arguments"];

/// Appends every string under `v`, one a line, descending into objects by
/// `keys` only.
pub(super) fn collect_text(v: &Value, keys: &[&str], out: &mut String) {
    match v {
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Value::Array(items) => items.iter().for_each(|i| collect_text(i, keys, out)),
        Value::Object(o) => {
            for key in keys {
                if let Some(inner) = o.get(*key) {
                    collect_text(inner, keys, out);
                }
            }
        }
        _ => {}
    }
}

/// A unique number in this process: ids of messages, responses and tool
/// calls must differ across replies (Claude Code groups its conversation by
/// message id; a repeated tool-call id makes a client drop the call).
fn next_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::SeqCst)
}

/// A response: status line, content type and body.
pub(super) struct Response {
    pub status: &'static str,
    pub kind: &'static str,
    pub body: String,
}

impl Response {
    pub(super) fn json(body: &Value) -> Response {
        Response {
            status: "200 OK",
            kind: "application/json",
            body: body.to_string(),
        }
    }

    pub(super) fn events(body: String) -> Response {
        Response {
            status: "200 OK",
            kind: "text/event-stream",
            body,
        }
    }

    fn not_found(body: &Value) -> Response {
        Response {
            status: "404 Not Found",
            kind: "application/json",
            body: body.to_string(),
        }
    }
}

/// A running stub model; stops accepting when dropped.
pub struct StubModel {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
}

impl StubModel {
    /// Starts a stub model on an ephemeral loopback port.
    pub fn start(script: Script) -> StubModel {
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
                    let (requests, script) = (Arc::clone(&requests), Arc::clone(&script));
                    std::thread::spawn(move || {
                        let _ = serve(conn, &requests, &script);
                    });
                }
            });
        }
        StubModel {
            addr,
            requests,
            stop,
        }
    }

    /// `http://127.0.0.1:PORT` (a client adapter adds the path prefix its
    /// client expects, e.g. `/v1`).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().expect("requests lock").clone()
    }

    /// The model turns received so far (the requests the script answered).
    pub fn model_requests(&self) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(Request::is_model_turn)
            .collect()
    }
}

impl Drop for StubModel {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
    }
}

fn serve(conn: TcpStream, requests: &Mutex<Vec<Request>>, script: &Script) -> std::io::Result<()> {
    let request = read_request(&conn)?;
    requests
        .lock()
        .expect("requests lock")
        .push(request.clone());
    let response = answer(&request, script);
    let mut conn = conn;
    let head = format!(
        "HTTP/1.1 {}\r\ncontent-type: {}\r\ncontent-length: {}\r\nrequest-id: req_jkz\r\nconnection: close\r\n\r\n",
        response.status,
        response.kind,
        response.body.len()
    );
    conn.write_all(head.as_bytes())?;
    conn.write_all(response.body.as_bytes())?;
    conn.flush()
}

fn answer(request: &Request, script: &Script) -> Response {
    let path = request.path.split('?').next().unwrap_or_default();
    if request.method == "POST" && path == "/v1/messages/count_tokens" {
        return anthropic::token_count();
    }
    if request.method == "POST" && path.ends_with(":countTokens") {
        return gemini::token_count();
    }
    let Some(wire) = request.wire() else {
        return Response::not_found(&if path.starts_with("/v1beta/") {
            gemini::not_found()
        } else {
            anthropic::not_found()
        });
    };
    let turn = script(request);
    let (act, input_tokens) = turn.act();
    match wire {
        Wire::Messages => anthropic::answer(request, act, input_tokens),
        Wire::Responses => responses::answer(act, input_tokens),
        Wire::Gemini => gemini::answer(request, act, input_tokens),
        Wire::ChatCompletions => chat_completions::answer(request, act, input_tokens),
    }
}

/// Reads one HTTP/1.1 request from `conn` (bounded, with timeouts).
fn read_request(conn: &TcpStream) -> std::io::Result<Request> {
    conn.set_read_timeout(Some(IO_TIMEOUT))?;
    conn.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let (mut length, mut chunked, mut header_bytes) = (0usize, false, 0usize);
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
    Ok(Request {
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

/// Server-sent events, one `data:` line each, the event named by its
/// `type` when `named` (Messages and Responses name theirs).
pub(super) fn sse(events: &[Value], named: bool) -> String {
    events
        .iter()
        .map(|e| match e["type"].as_str() {
            Some(kind) if named => format!("event: {kind}\ndata: {e}\n\n"),
            _ => format!("data: {e}\n\n"),
        })
        .collect()
}
