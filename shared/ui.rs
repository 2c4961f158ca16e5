//! `jkz ui`: a live observer of every pipeline, in the browser.
//!
//! A web server on 127.0.0.1 over the state directory: one page embedded in
//! the binary ([`page`]) and the JSON API behind it ([`api`], [`history`]),
//! and the metrics for Prometheus at `/metrics`. It reads the state with the
//! project's safe reader only, and writes its own two files,
//! `watch-list.json` and `live-session.json` ([`own_files`]), atomically;
//! besides, like every jkz reader of the event log, it keeps the log's
//! derived files current (`events/index.db`, `metrics.db`) and appends the
//! events of direct writes to pipeline files it sees
//! ([`crate::events::reconcile`]); a person's pin or reject of a learned
//! pattern goes through the patterns' writer into `memory.db` and its
//! feedback log ([`patterns`]). Nothing under `state/pipeline/` is ever
//! written.
//!
//! Security ([`server`]): bound to loopback only; a request whose `Host` or
//! `Origin` is not the server's own is refused (a page the user visits
//! elsewhere, or a DNS-rebinding name, must not read or change the state);
//! every request needs the per-start token printed with the URL (another
//! user on the machine can reach the port, but must not read the state the
//! directory's 0700 keeps from them): the printed URL trades it for a
//! session cookie, a scraper sends it as `Authorization: Bearer`;
//! request paths name issues and records by validated ids, never by path.
//!
//! Live updates ([`poll`]): the state is polled every [`poll::INTERVAL`],
//! not watched. Pipeline files are written by bash scripts in place as well
//! as by jkz through renames, the state root may be a link or a network
//! mount, and a poll of 10,000 files costs a few milliseconds: polling sees
//! every kind of write everywhere, with no extra dependency and no watch
//! limits to run out of. A change bumps a version that the page hears over
//! server-sent events (`/api/events`) and refetches what it shows.
//!
//! Exit codes:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | stopped by SIGINT (Ctrl-C), SIGTERM or SIGHUP; `live-session.json` no longer names it |
//! | 1 | the server could not start (port taken, no runtime) |
//! | 2 | usage: bad arguments |
//! | 4 | no state directory |

pub mod api;
pub mod history;
pub mod own_files;
pub mod page;
pub mod patterns;
pub mod poll;
pub mod server;

use std::io::Write;
use std::time::Duration;

use clap::Args;

use crate::exit::Failure;
use crate::state_dir::StateDir;

/// The arguments of `jkz ui`.
#[derive(Args, Debug, Clone)]
pub struct UiArgs {
    /// The port on 127.0.0.1 (default: a free one, printed on start).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub port: u16,
    /// Open the page in the default browser (xdg-open, or open on macOS).
    #[arg(long)]
    pub open: bool,
    /// A pipeline with no activity for this many seconds (or whose
    /// heartbeat_pid is gone) is marked stale.
    #[arg(long, value_name = "SECONDS", default_value_t = 1800)]
    pub stale_after: u64,
    /// Serve /metrics to anyone who can reach 127.0.0.1 (other users on
    /// this machine too), for a scraper that cannot send the token; every
    /// other route still needs it.
    #[arg(long)]
    pub metrics_public: bool,
}

/// Runs `jkz ui` until the process is stopped.
pub fn run(args: &UiArgs, state: &StateDir, out: &mut impl Write) -> Result<u8, Failure> {
    let config = server::Config {
        port: args.port,
        stale_after: Duration::from_secs(args.stale_after),
        metrics_public: args.metrics_public,
    };
    server::serve(config, state.clone(), |url| {
        // Printed before anything else, flushed: scripts and tests wait for it.
        let _ = writeln!(out, "jkz ui: {url}");
        let _ = out.flush();
        if args.open {
            open_in_browser(url);
        }
    })
}

fn open_in_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    if let Err(e) = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        eprintln!("jkz ui: could not run {opener} to open the page ({e}); open {url} yourself");
    }
}
