#![allow(dead_code)] // A harness: other tests use what this one does not.

//! A Gemini API server of our own on 127.0.0.1, for the real Gemini CLI
//! (`GOOGLE_GEMINI_BASE_URL`): `POST /v1beta/models/M:streamGenerateContent`
//! (answered as `text/event-stream`, one `data:` event),
//! `…:generateContent` (one JSON response; Gemini CLI's compression
//! summarizer uses it), `…:countTokens`; anything else 404. Every request is
//! recorded (read by [`super::model_server::read_request`]).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use super::model_server::{read_request, respond, Recorded};

/// What the model answers to one request.
#[derive(Clone, Debug)]
pub enum Reply {
    Text(String),
    Call { name: String, args: Value },
}

/// Decides the reply to each `generateContent` / `streamGenerateContent`.
pub type Responder = Arc<dyn Fn(&Recorded) -> Reply + Send + Sync>;

/// A request as Gemini CLI sent it.
pub trait GeminiRequest {
    /// A model turn of the chat (`streamGenerateContent`).
    fn is_turn(&self) -> bool;
    /// The compression summarizer's request (its system instruction asks
    /// for a `<state_snapshot>`).
    fn is_summarizing(&self) -> bool;
    /// Every text part of `contents`, joined by newlines.
    fn contents_text(&self) -> String;
    /// The function responses in `contents`, as JSON text, in order.
    fn function_responses(&self) -> Vec<String>;
}

impl GeminiRequest for Recorded {
    fn is_turn(&self) -> bool {
        self.path.contains(":streamGenerateContent")
    }

    fn is_summarizing(&self) -> bool {
        self.path.contains(":generateContent")
            && self.body["systemInstruction"]
                .to_string()
                .contains("<state_snapshot>")
    }

    fn contents_text(&self) -> String {
        let mut out = String::new();
        for c in self.body["contents"].as_array().into_iter().flatten() {
            for p in c["parts"].as_array().into_iter().flatten() {
                if let Some(t) = p["text"].as_str() {
                    out.push_str(t);
                    out.push('\n');
                }
            }
        }
        out
    }

    fn function_responses(&self) -> Vec<String> {
        self.body["contents"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|c| c["parts"].as_array().into_iter().flatten())
            .filter(|p| p.get("functionResponse").is_some())
            .map(|p| p["functionResponse"].to_string())
            .collect()
    }
}

/// A running server; stops accepting when dropped.
pub struct GeminiServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
    stop: Arc<AtomicBool>,
}

impl GeminiServer {
    pub fn start(responder: Responder) -> GeminiServer {
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
        GeminiServer {
            addr,
            requests,
            stop,
        }
    }

    /// `http://127.0.0.1:PORT`, for `GOOGLE_GEMINI_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().expect("requests lock").clone()
    }
}

impl Drop for GeminiServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
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
    let path = recorded.path.clone();
    if path.contains(":countTokens") {
        return respond(
            &mut conn,
            "200 OK",
            "application/json",
            &json!({"totalTokens": 10}).to_string(),
        );
    }
    let stream = path.contains(":streamGenerateContent");
    if recorded.method != "POST" || !(stream || path.contains(":generateContent")) {
        let body = json!({"error": {"code": 404, "message": "not found", "status": "NOT_FOUND"}});
        return respond(
            &mut conn,
            "404 Not Found",
            "application/json",
            &body.to_string(),
        );
    }
    let answer = response(&responder(&recorded));
    if stream {
        let events = format!("data: {answer}\r\n\r\n");
        respond(&mut conn, "200 OK", "text/event-stream", &events)
    } else {
        respond(&mut conn, "200 OK", "application/json", &answer.to_string())
    }
}

/// A `GenerateContentResponse` for a reply. The usage is small: compression
/// is forced by a low `model.compressionThreshold`, not by the counts.
pub fn response(reply: &Reply) -> Value {
    let part = match reply {
        Reply::Text(text) => json!({"text": text}),
        Reply::Call { name, args } => json!({"functionCall": {"name": name, "args": args}}),
    };
    json!({
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 5, "totalTokenCount": 105},
        "modelVersion": "gemini-2.5-flash"
    })
}
