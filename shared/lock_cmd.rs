//! `jkz lock acquire|release|list`: the lock commands (rules in
//! [`crate::lock`]).
//!
//! Exit codes: 0 success (acquired or renewed; released, or there was no
//! lock); 1 an I/O error; 2 usage; 3 held by another owner (acquire: after
//! `--wait`; release: refused); 4 no state directory.

use std::io::Write;
use std::time::Duration;

use crate::exit::{Failure, EXIT_FAILED, EXIT_OK, EXIT_USAGE};
use crate::lock::{self, Acquired, Released};
use crate::state_dir::StateDir;
use crate::terminal_text::inert;

/// Exit code: the lock is held by another owner.
pub const HELD: u8 = 3;

#[derive(clap::Args, Debug, Clone)]
pub struct LockArgs {
    #[command(subcommand)]
    pub command: LockCommand,
}

#[derive(clap::Subcommand, Debug, Clone)]
pub enum LockCommand {
    /// Take the lock KIND NAME (e.g. pipeline 42), or renew it for its owner.
    Acquire {
        kind: String,
        name: String,
        /// Seconds until the lock expires (an expiry past year 9999 is
        /// held until then).
        #[arg(long, value_name = "SECS", default_value_t = lock::DEFAULT_TTL)]
        ttl: u64,
        /// Who holds it. Default: HOST:PPID, the script that called jkz,
        /// whose life the lock then follows.
        #[arg(long, value_name = "ID")]
        owner: Option<String>,
        /// Wait up to SECS seconds for the lock to come free.
        #[arg(long, value_name = "SECS", default_value_t = 0.0)]
        wait: f64,
    },
    /// Release the lock KIND NAME; refused unless --owner is its owner.
    Release {
        kind: String,
        name: String,
        /// Default: HOST:PPID, as for acquire.
        #[arg(long, value_name = "ID")]
        owner: Option<String>,
    },
    /// List the locks: kind, name, owner, pid, host, expiry, state.
    List {
        /// One JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
}

/// The caller of jkz: the lock follows its life.
fn caller() -> u32 {
    std::os::unix::process::parent_id()
}

fn default_owner() -> String {
    format!("{}:{}", crate::process::hostname(), caller())
}

pub fn run(args: &LockArgs, state: &StateDir, out: &mut dyn Write) -> Result<u8, Failure> {
    let writing = |e| Failure::io(EXIT_FAILED, "writing stdout", e);
    match &args.command {
        LockCommand::Acquire {
            kind,
            name,
            ttl,
            owner,
            wait,
        } => {
            lock::validate(kind, name).map_err(|e| Failure::new(EXIT_USAGE, e))?;
            let req = lock::Request {
                kind: kind.clone(),
                name: name.clone(),
                owner: owner.clone().unwrap_or_else(default_owner),
                pid: caller(),
                ttl: Duration::from_secs(*ttl),
            };
            let wait = Duration::try_from_secs_f64(wait.max(0.0)).unwrap_or(Duration::MAX);
            match lock::acquire(state, &req, wait)
                .map_err(|e| Failure::io(EXIT_FAILED, "acquiring", e))?
            {
                Acquired::Taken { record, renewed } => {
                    let verb = if renewed { "renewed" } else { "acquired" };
                    writeln!(
                        out,
                        "{verb} {} for {} until {}",
                        inert(&record.id()),
                        inert(&record.owner),
                        inert(&record.expires)
                    )
                    .map_err(writing)?;
                    Ok(EXIT_OK)
                }
                Acquired::Busy(held) => {
                    writeln!(
                        out,
                        "{} is held by {} (pid {} on {}) until {}",
                        inert(&held.id()),
                        inert(&held.owner),
                        held.holder.pid,
                        inert(&held.holder.host),
                        inert(&held.expires)
                    )
                    .map_err(writing)?;
                    Ok(HELD)
                }
            }
        }
        LockCommand::Release { kind, name, owner } => {
            lock::validate(kind, name).map_err(|e| Failure::new(EXIT_USAGE, e))?;
            let owner = owner.clone().unwrap_or_else(default_owner);
            match lock::release(state, kind, name, &owner)
                .map_err(|e| Failure::io(EXIT_FAILED, "releasing", e))?
            {
                Released::Released => {
                    writeln!(out, "released {kind}-{name}").map_err(writing)?;
                    Ok(EXIT_OK)
                }
                Released::NotHeld => {
                    writeln!(out, "{kind}-{name} was not held").map_err(writing)?;
                    Ok(EXIT_OK)
                }
                Released::Refused(held) => Err(Failure::new(
                    HELD,
                    format!(
                        "{} is held by {}, not {owner}: not released (pass its --owner)",
                        held.id(),
                        held.owner
                    ),
                )),
            }
        }
        LockCommand::List { json } => {
            let now = chrono::Utc::now();
            let locks =
                lock::list(state).map_err(|e| Failure::io(EXIT_FAILED, "listing locks", e))?;
            if *json {
                let items: Vec<_> = locks
                    .iter()
                    .map(|r| {
                        let mut v = serde_json::to_value(r).unwrap_or_default();
                        v["state"] = r.state(now).name().into();
                        v
                    })
                    .collect();
                serde_json::to_writer_pretty(&mut *out, &items).map_err(|e| writing(e.into()))?;
                writeln!(out).map_err(writing)?;
            } else {
                writeln!(
                    out,
                    "{:<10} {:<24} {:<28} {:>8} {:<16} {:<25} STATE",
                    "KIND", "NAME", "OWNER", "PID", "HOST", "EXPIRES"
                )
                .map_err(writing)?;
                for r in &locks {
                    // Read from the lock's file: shown, never obeyed.
                    writeln!(
                        out,
                        "{:<10} {:<24} {:<28} {:>8} {:<16} {:<25} {}",
                        inert(&r.kind),
                        inert(&r.name),
                        inert(&r.owner),
                        r.holder.pid,
                        inert(&r.holder.host),
                        inert(&r.expires),
                        r.state(now).name()
                    )
                    .map_err(writing)?;
                }
            }
            out.flush().map_err(writing)?;
            Ok(EXIT_OK)
        }
    }
}
