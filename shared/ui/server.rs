//! The HTTP server: axum on a single-threaded tokio runtime, bound to
//! 127.0.0.1, with the request rules every route shares ([`guard`]).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path as UrlPath, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use chrono::Utc;
use serde::Deserialize;
use serde_json::json;
use tokio::sync::watch;

use super::api::{self, SnapshotCache};
use super::own_files::{self, LiveSession};
use super::page::PAGE;
use super::poll::{self, Poller, Table, Version};
use crate::exit::{Failure, EXIT_FAILED, EXIT_OK};
use crate::pipeline::IssueNumber;
use crate::state_dir::StateDir;

/// The header that carries the per-start token on a change.
pub const TOKEN_HEADER: &str = "x-jkz-token";

/// How the server was asked to run.
#[derive(Clone, Debug)]
pub struct Config {
    pub port: u16,
    pub stale_after: Duration,
}

struct Shared {
    state: StateDir,
    config: Config,
    token: String,
    /// `127.0.0.1:PORT` and `localhost:PORT`: the only `Host` values served.
    hosts: [String; 2],
    table: Arc<std::sync::RwLock<Arc<Table>>>,
    versions: watch::Receiver<Version>,
    snapshots: SnapshotCache,
    /// Serializes watch-list changes (read-modify-write).
    watch_list: std::sync::Mutex<()>,
}

type AppState = Arc<Shared>;

/// Binds, prints the URL through `started`, and serves until stopped.
pub fn serve(config: Config, state: StateDir, started: impl FnOnce(&str)) -> Result<u8, Failure> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| Failure::io(EXIT_FAILED, "starting the runtime", e))?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", config.port))
            .await
            .map_err(|e| {
                Failure::io(EXIT_FAILED, format!("binding 127.0.0.1:{}", config.port), e)
            })?;
        let port = listener
            .local_addr()
            .map_err(|e| Failure::io(EXIT_FAILED, "reading the bound address", e))?
            .port();
        let token = new_token().map_err(|e| Failure::io(EXIT_FAILED, "making a token", e))?;
        let base = format!("http://127.0.0.1:{port}/");
        let session = LiveSession {
            pid: u64::from(std::process::id()),
            port,
            url: base.clone(),
            started_at: Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        };
        if let Err(e) = own_files::write_live_session(&state, &session) {
            eprintln!("jkz ui: not recording the server in live-session.json: {e}");
        }
        let mut poller = Poller::new(state.clone());
        let first = poller.poll().unwrap_or(0);
        let table = poller.table();
        let (tx, rx) = watch::channel(first);
        poll::spawn(poller, move |v| {
            let _ = tx.send(v);
        });
        let shared = Arc::new(Shared {
            state,
            config,
            hosts: [format!("127.0.0.1:{port}"), format!("localhost:{port}")],
            token: token.clone(),
            table,
            versions: rx,
            snapshots: SnapshotCache::default(),
            watch_list: std::sync::Mutex::new(()),
        });
        started(&format!("{base}?token={token}"));
        axum::serve(listener, router(shared))
            .await
            .map_err(|e| Failure::io(EXIT_FAILED, "serving", e))?;
        Ok(EXIT_OK)
    })
}

fn router(shared: AppState) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/api/pipelines", get(pipelines))
        .route("/api/issues/{issue}", get(issue))
        .route("/api/deliberations/{id}", get(deliberation))
        .route("/api/now", get(now))
        .route("/api/watch-list", get(watch_list).post(set_watch_list))
        .route("/api/patterns", get(patterns))
        .route("/api/patterns/{id}", axum::routing::post(act_on_pattern))
        .route("/api/events", get(events))
        .route("/api/timeline/{issue}", get(timeline))
        .route("/api/metrics", get(metrics))
        .route("/metrics", get(prometheus))
        .fallback(|| async { error(StatusCode::NOT_FOUND, "no such page") })
        .layer(middleware::from_fn_with_state(shared.clone(), guard))
        .with_state(shared)
}

/// The rules every request passes first: `Host` must be the server's own,
/// `Origin` (when sent) its own origin, and anything but GET needs the token.
async fn guard(State(s): State<AppState>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    if !host.is_some_and(|h| s.hosts.iter().any(|ok| ok == h)) {
        return error(StatusCode::FORBIDDEN, "refused: Host is not this server");
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let own = origin
            .to_str()
            .ok()
            .and_then(|o| o.strip_prefix("http://"))
            .is_some_and(|o| s.hosts.iter().any(|ok| ok == o));
        if !own {
            return error(StatusCode::FORBIDDEN, "refused: Origin is not this server");
        }
    }
    if req.method() != Method::GET && req.method() != Method::HEAD && !has_token(&s, headers) {
        return error(
            StatusCode::FORBIDDEN,
            "refused: a change needs the token printed with the URL",
        );
    }
    let mut response = next.run(req).await;
    let h = response.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    response
}

fn has_token(s: &Shared, headers: &HeaderMap) -> bool {
    let given = headers
        .get(TOKEN_HEADER)
        .map(HeaderValue::as_bytes)
        .unwrap_or_default();
    let want = s.token.as_bytes();
    // Compared in constant time.
    given.len() == want.len()
        && given
            .iter()
            .zip(want)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({ "error": message }))).into_response()
}

fn json_bytes(bytes: Vec<u8>) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], bytes).into_response()
}

fn table(s: &Shared) -> Arc<Table> {
    Arc::clone(&s.table.read().unwrap_or_else(|e| e.into_inner()))
}

/// Runs blocking state reads off the runtime's one thread.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f)
        .await
        .expect("the task does not panic")
}

async fn page() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:",
            ),
        ],
        PAGE,
    )
        .into_response()
}

async fn pipelines(State(s): State<AppState>) -> Response {
    let bytes =
        blocking(move || api::pipelines(&s.state, &table(&s), s.config.stale_after, Utc::now()))
            .await;
    json_bytes(bytes)
}

async fn issue(State(s): State<AppState>, UrlPath(raw): UrlPath<String>) -> Response {
    let Ok(n) = IssueNumber::parse(&raw) else {
        return error(StatusCode::BAD_REQUEST, "not an issue number");
    };
    let v = blocking(move || {
        api::issue(
            &s.state,
            &table(&s),
            &s.snapshots,
            &n,
            s.config.stale_after,
            Utc::now(),
        )
    })
    .await;
    Json(v).into_response()
}

async fn deliberation(State(s): State<AppState>, UrlPath(id): UrlPath<String>) -> Response {
    match blocking(move || api::deliberation(&s.state, &id)).await {
        Ok(v) => Json(v).into_response(),
        Err((code, message)) => error(
            StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            &message,
        ),
    }
}

async fn now(State(s): State<AppState>) -> Response {
    Json(blocking(move || api::now(&s.state, Utc::now())).await).into_response()
}

async fn watch_list(State(s): State<AppState>) -> Response {
    Json(blocking(move || own_files::read_watch_list(&s.state)).await).into_response()
}

#[derive(Deserialize)]
struct PinRequest {
    issue: String,
    pinned: bool,
}

async fn set_watch_list(State(s): State<AppState>, body: axum::body::Bytes) -> Response {
    let Ok(req) = serde_json::from_slice::<PinRequest>(&body) else {
        return error(
            StatusCode::BAD_REQUEST,
            "expected {\"issue\": \"N\", \"pinned\": true|false}",
        );
    };
    let Ok(issue) = IssueNumber::parse(&req.issue) else {
        return error(StatusCode::BAD_REQUEST, "not an issue number");
    };
    let result = blocking(move || {
        let _one_at_a_time = s.watch_list.lock().unwrap_or_else(|e| e.into_inner());
        own_files::set_pinned(&s.state, &issue, req.pinned)
    })
    .await;
    match result {
        Ok(list) => Json(list).into_response(),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

async fn patterns(State(s): State<AppState>) -> Response {
    Json(blocking(move || super::patterns::list(&s.state, Utc::now())).await).into_response()
}

#[derive(Deserialize)]
struct PatternRequest {
    action: super::patterns::Action,
}

async fn act_on_pattern(
    State(s): State<AppState>,
    UrlPath(id): UrlPath<String>,
    body: axum::body::Bytes,
) -> Response {
    let Ok(req) = serde_json::from_slice::<PatternRequest>(&body) else {
        return error(
            StatusCode::BAD_REQUEST,
            "expected {\"action\": \"pin\"|\"unpin\"|\"reject\"}",
        );
    };
    match blocking(move || super::patterns::act(&s.state, &id, req.action, Utc::now())).await {
        Ok(v) => Json(v).into_response(),
        Err((code, message)) => error(
            StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            &message,
        ),
    }
}

/// Server-sent events: `change` with the new version, each time the poll
/// sees one (and once at the start, so a page knows where it stands).
async fn events(State(s): State<AppState>) -> Response {
    let rx = s.versions.clone();
    let stream = futures_util::stream::unfold((rx, true), |(mut rx, first)| async move {
        if !first {
            rx.changed().await.ok()?;
        }
        let v = *rx.borrow_and_update();
        let event = Event::default().event("change").data(v.to_string());
        Some((Ok::<Event, Infallible>(event), (rx, false)))
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

async fn timeline(State(s): State<AppState>, UrlPath(raw): UrlPath<String>) -> Response {
    let Ok(n) = IssueNumber::parse(&raw) else {
        return error(StatusCode::BAD_REQUEST, "not an issue number");
    };
    match blocking(move || super::history::timeline(&s.state, &n, Utc::now())).await {
        Ok(v) => Json(v).into_response(),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, &e),
    }
}

#[derive(Deserialize)]
struct Window {
    since: Option<String>,
}

async fn metrics(
    State(s): State<AppState>,
    axum::extract::Query(w): axum::extract::Query<Window>,
) -> Response {
    let since = w
        .since
        .unwrap_or_else(|| crate::metrics::DEFAULT_WINDOW.into());
    match blocking(move || super::history::metrics(&s.state, &since, Utc::now())).await {
        Ok(report) => Json(report).into_response(),
        Err((code, message)) => error(
            StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            &message,
        ),
    }
}

/// The metrics in Prometheus' text format, over the default window.
async fn prometheus(State(s): State<AppState>) -> Response {
    let window = crate::metrics::DEFAULT_WINDOW;
    match blocking(move || super::history::metrics(&s.state, window, Utc::now())).await {
        Ok(report) => (
            [(
                header::CONTENT_TYPE,
                crate::metrics::prometheus::CONTENT_TYPE,
            )],
            crate::metrics::prometheus::exposition(&report),
        )
            .into_response(),
        Err((code, message)) => error(
            StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            &message,
        ),
    }
}

/// 128 random bits, hex: the token a change must carry.
fn new_token() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
