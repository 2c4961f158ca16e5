//! The HTTP server: axum on a single-threaded tokio runtime, bound to
//! 127.0.0.1, with the request rules every route shares ([`guard`]).
//!
//! Every route answers only its user: the per-start token, printed with the
//! URL, is the credential. The printed URL (`/?token=…`) trades it for an
//! HttpOnly, SameSite=Strict cookie and redirects to the clean URL, so the
//! page, its API calls and its event stream carry the cookie and no script
//! on the page ever sees the token; a scraper or a script sends it as
//! `Authorization: Bearer`. The state directory is 0700; without this,
//! anyone on the machine could read it through the loopback port.

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

/// A header a script may carry the token in, besides
/// `Authorization: Bearer` (the one the API named first).
pub const TOKEN_HEADER: &str = "x-jkz-token";

/// How the server was asked to run.
#[derive(Clone, Debug)]
pub struct Config {
    pub port: u16,
    pub stale_after: Duration,
    /// `/metrics` answers without the token (`--metrics-public`).
    pub metrics_public: bool,
}

struct Shared {
    state: StateDir,
    config: Config,
    token: String,
    /// The session cookie's name, with the port in it: a browser sends a
    /// host's cookies to every port on it, so two servers on one machine
    /// must not overwrite each other's.
    cookie: String,
    /// `127.0.0.1:PORT` and `localhost:PORT`: the only `Host` values served.
    hosts: [String; 2],
    table: Arc<std::sync::RwLock<Arc<Table>>>,
    versions: watch::Receiver<Version>,
    snapshots: SnapshotCache,
    /// Serializes watch-list changes (read-modify-write).
    watch_list: std::sync::Mutex<()>,
}

type AppState = Arc<Shared>;

/// How often the server looks whether it was asked to stop.
const STOP_POLL: Duration = Duration::from_millis(100);

/// Binds, prints the URL through `started`, and serves until stopped by
/// SIGINT, SIGTERM or SIGHUP; then `live-session.json` no longer names it.
pub fn serve(config: Config, state: StateDir, started: impl FnOnce(&str)) -> Result<u8, Failure> {
    // Caught before the server is recorded, so no stop can leave the record
    // behind. Open event streams never end by themselves: the server stops
    // at once, not after its connections.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    for signal in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .map_err(|e| Failure::io(EXIT_FAILED, "catching the stop signals", e))?;
    }
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
        let recorded = state.clone();
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
            cookie: format!("jkz-ui-{port}"),
            table,
            versions: rx,
            snapshots: SnapshotCache::default(),
            watch_list: std::sync::Mutex::new(()),
        });
        started(&format!("{base}?token={token}"));
        let stopped = async {
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                tokio::time::sleep(STOP_POLL).await;
            }
        };
        let served = tokio::select! {
            served = axum::serve(listener, router(shared)) => served,
            () = stopped => Ok(()),
        };
        if let Err(e) = own_files::clear_live_session(&recorded, session.pid) {
            eprintln!("jkz ui: could not remove live-session.json: {e}");
        }
        served.map_err(|e| Failure::io(EXIT_FAILED, "serving", e))?;
        Ok(EXIT_OK)
    })
}

/// The routes, each added through [`RouteTable`] so that [`routes`] lists
/// exactly what the server answers (the tests hold every one of them to
/// the token).
fn route_table() -> RouteTable {
    RouteTable::default()
        .get("/", page)
        .get("/api/pipelines", pipelines)
        .get("/api/issues/{issue}", issue)
        .get("/api/deliberations/{id}", deliberation)
        .get("/api/now", now)
        .get("/api/watch-list", watch_list)
        .post("/api/watch-list", set_watch_list)
        .get("/api/patterns", patterns)
        .post("/api/patterns/{id}", act_on_pattern)
        .get("/api/events", events)
        .get("/api/timeline/{issue}", timeline)
        .get("/api/metrics", metrics)
        .get(PROMETHEUS_PATH, prometheus)
}

/// Every route the server answers: `(method, path)`, the path with its
/// `{parameters}`.
pub fn routes() -> Vec<(&'static str, &'static str)> {
    route_table().listed
}

/// Where Prometheus scrapes.
pub const PROMETHEUS_PATH: &str = "/metrics";

#[derive(Default)]
struct RouteTable {
    router: Router<AppState>,
    listed: Vec<(&'static str, &'static str)>,
}

impl RouteTable {
    fn get<H, T>(mut self, path: &'static str, handler: H) -> Self
    where
        H: axum::handler::Handler<T, AppState>,
        T: 'static,
    {
        self.router = self.router.route(path, get(handler));
        self.listed.push(("GET", path));
        self
    }

    fn post<H, T>(mut self, path: &'static str, handler: H) -> Self
    where
        H: axum::handler::Handler<T, AppState>,
        T: 'static,
    {
        self.router = self.router.route(path, axum::routing::post(handler));
        self.listed.push(("POST", path));
        self
    }
}

fn router(shared: AppState) -> Router {
    route_table()
        .router
        .fallback(|| async { error(StatusCode::NOT_FOUND, "no such page") })
        .layer(middleware::from_fn_with_state(shared.clone(), guard))
        .with_state(shared)
}

/// The rules every request passes first: `Host` must be the server's own,
/// `Origin` (when sent) its own origin, and every route, the unknown ones
/// too, needs the token (the printed URL trades it for the cookie); only
/// `/metrics` may be opened to everyone, by `--metrics-public`.
async fn guard(State(s): State<AppState>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    if !host.is_some_and(|h| s.hosts.iter().any(|ok| ok == h)) {
        return secured(error(
            StatusCode::FORBIDDEN,
            "refused: Host is not this server",
        ));
    }
    let origin = headers.get(header::ORIGIN);
    if let Some(origin) = origin {
        let own = origin
            .to_str()
            .ok()
            .and_then(|o| o.strip_prefix("http://"))
            .is_some_and(|o| s.hosts.iter().any(|ok| ok == o));
        if !own {
            return secured(error(
                StatusCode::FORBIDDEN,
                "refused: Origin is not this server",
            ));
        }
    }
    let reads = req.method() == Method::GET || req.method() == Method::HEAD;
    if reads && req.uri().path() == "/" {
        if let Some(given) = query_token(req.uri().query()) {
            return secured(if same_token(given.as_bytes(), s.token.as_bytes()) {
                sign_in(&s)
            } else {
                unauthorized()
            });
        }
    }
    let allowed = match credential(&s, headers) {
        Some(Credential::Token) => true,
        // A browser sends its own Origin with every change; a change
        // carrying the cookie but no Origin did not come from this page.
        Some(Credential::Cookie) => reads || origin.is_some(),
        None => reads && s.config.metrics_public && req.uri().path() == PROMETHEUS_PATH,
    };
    if !allowed {
        return secured(unauthorized());
    }
    secured(next.run(req).await)
}

/// The headers every answer carries, a refusal as much as the page.
fn secured(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// The printed URL, opened: the token becomes the session cookie and the
/// browser goes on to the clean URL, so the token leaves the address bar
/// and no script on the page can read it.
fn sign_in(s: &Shared) -> Response {
    let cookie = format!(
        "{}={}; HttpOnly; SameSite=Strict; Path=/",
        s.cookie, s.token
    );
    let mut response = StatusCode::SEE_OTHER.into_response();
    let h = response.headers_mut();
    h.insert(header::LOCATION, HeaderValue::from_static("/"));
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        h.insert(header::SET_COOKIE, v);
    }
    response
}

fn unauthorized() -> Response {
    let mut response = error(
        StatusCode::UNAUTHORIZED,
        "needs the token: open the URL `jkz ui` printed (it signs this browser in), or send Authorization: Bearer TOKEN",
    );
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"jkz ui\""),
    );
    response
}

/// How a request proved it comes from the server's user.
enum Credential {
    /// The token itself, in a header: a script or a scraper.
    Token,
    /// The session cookie the printed URL set: the page.
    Cookie,
}

fn credential(s: &Shared, headers: &HeaderMap) -> Option<Credential> {
    let want = s.token.as_bytes();
    let bearer = headers
        .get_all(header::AUTHORIZATION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| v.strip_prefix("Bearer "));
    let header = headers
        .get_all(TOKEN_HEADER)
        .iter()
        .filter_map(|v| v.to_str().ok());
    if bearer
        .chain(header)
        .any(|given| same_token(given.trim().as_bytes(), want))
    {
        return Some(Credential::Token);
    }
    let cookies = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='));
    for (name, value) in cookies {
        if name == s.cookie && same_token(value.as_bytes(), want) {
            return Some(Credential::Cookie);
        }
    }
    None
}

/// `token=…` in the query of the printed URL.
fn query_token(query: Option<&str>) -> Option<&str> {
    query?.split('&').find_map(|p| p.strip_prefix("token="))
}

/// Compared in constant time: how long a guess matched must not show in
/// how long the answer took.
fn same_token(given: &[u8], want: &[u8]) -> bool {
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

/// The metrics in Prometheus' text format, over the default window, and
/// the tool-output ledger's counters.
async fn prometheus(State(s): State<AppState>) -> Response {
    let window = crate::metrics::DEFAULT_WINDOW;
    let read = move || -> Result<_, (u16, String)> {
        let report = super::history::metrics(&s.state, window, Utc::now())?;
        let ledger = crate::tool_output::stats::by_family_and_via(s.state.path())
            .map_err(|e| (500, format!("reading the tool-output ledger: {e}")))?;
        Ok((report, ledger))
    };
    match blocking(read).await {
        Ok((report, ledger)) => (
            [(
                header::CONTENT_TYPE,
                crate::metrics::prometheus::CONTENT_TYPE,
            )],
            crate::metrics::prometheus::exposition(&report, &ledger),
        )
            .into_response(),
        Err((code, message)) => error(
            StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            &message,
        ),
    }
}

/// 128 random bits, hex: the token every request must carry.
fn new_token() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
