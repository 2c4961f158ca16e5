//! Who holds something (a lock, a circuit's probe) and whether that holder
//! still runs on this host.
//!
//! A holder is a pid on a host, plus the pid's start time where the system
//! reports it (Linux: `/proc/<pid>/stat`, field 22, in clock ticks since
//! boot), so a pid reused by an unrelated process after the holder died does
//! not count as the holder. On a system without `/proc` liveness is
//! [`Liveness::Unknown`]: a holder is then never presumed dead, only its
//! TTL ends it.

pub mod tree;

use std::fs;

use serde::{Deserialize, Serialize};

/// A process that holds something.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    pub pid: u32,
    pub host: String,
    /// The pid's start time (clock ticks since boot), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_start: Option<u64>,
}

impl Holder {
    /// The process `pid` on this host.
    pub fn local(pid: u32) -> Holder {
        Holder {
            pid,
            host: hostname(),
            pid_start: start_time(pid),
        }
    }

    /// True when this holder is known to be gone: it ran on this host and
    /// its pid no longer runs (or now belongs to another process).
    pub fn is_gone(&self) -> bool {
        self.host == hostname() && liveness(self.pid, self.pid_start) == Liveness::Gone
    }
}

/// Whether a process runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    Alive,
    Gone,
    /// No way to tell on this system.
    Unknown,
}

/// The environment variable that names this machine in place of its host
/// name: for tests (two "machines" on one box) and for containers whose
/// host name is random; see [`hostname`].
pub const HOST_ENV: &str = "JKZ_HOST";

/// This host's name: `$JKZ_HOST` when set (tests and containers), else the
/// kernel's, else `/etc/hostname`, else `$HOSTNAME`, else `localhost`.
/// Locks, circuit probes and, in team mode, chats and claims record it; a
/// pid is only ever judged on the host that recorded it.
pub fn hostname() -> String {
    if let Some(host) = std::env::var(HOST_ENV)
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
    {
        return host;
    }
    let read = |p: &str| {
        fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    read("/proc/sys/kernel/hostname")
        .or_else(|| read("/etc/hostname"))
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "localhost".to_string())
}

/// Field 22 of `/proc/<pid>/stat`, with the process state (field 3).
fn stat(pid: u32) -> Option<(char, u64)> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold anything.
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    // Fields 4..=21 come before the start time.
    let start = fields.nth(18)?.parse().ok()?;
    Some((state, start))
}

/// The start time of `pid`, when the system reports it.
pub fn start_time(pid: u32) -> Option<u64> {
    stat(pid).map(|(_, start)| start)
}

/// Whether `pid` (started at `start`, when known) runs. A zombie (exited,
/// not yet reaped) is gone: it will never release anything.
pub fn liveness(pid: u32, start: Option<u64>) -> Liveness {
    if fs::metadata("/proc/self/stat").is_err() {
        return Liveness::Unknown;
    }
    match stat(pid) {
        None => Liveness::Gone,
        Some(('Z' | 'X', _)) => Liveness::Gone,
        Some((_, now)) if start.is_some_and(|s| s != now) => Liveness::Gone,
        Some(_) => Liveness::Alive,
    }
}

/// Whether a process of the group `pgid` still runs, zombies not counted
/// (an exited process its parent has not reaped yet will never run again;
/// a parent that never reaps would otherwise keep the group alive forever).
/// `Unknown` without `/proc`.
pub fn group_liveness(pgid: u32) -> Liveness {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Liveness::Unknown;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(text) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue; // gone since the listing
        };
        // After the command name: state, ppid, pgrp.
        let Some(rest) = text.rfind(')').map(|i| &text[i + 1..]) else {
            continue;
        };
        let mut fields = rest.split_ascii_whitespace();
        let state = fields.next().and_then(|s| s.chars().next());
        let group = fields.nth(1).and_then(|g| g.parse::<u32>().ok());
        if group == Some(pgid) && !matches!(state, Some('Z' | 'X')) {
            return Liveness::Alive;
        }
    }
    Liveness::Gone
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_reaped_child_is_gone() {
        let me = Holder::local(std::process::id());
        assert!(!me.is_gone());
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let start = start_time(pid);
        child.wait().unwrap();
        if fs::metadata("/proc/self/stat").is_ok() {
            assert_eq!(liveness(pid, start), Liveness::Gone);
            // Another host's pid is never presumed gone.
            let remote = Holder {
                pid,
                host: format!("{}-elsewhere", hostname()),
                pid_start: start,
            };
            assert!(!remote.is_gone());
            // A reused pid (another start time) is not the holder.
            let reused = Holder {
                pid: std::process::id(),
                host: hostname(),
                pid_start: me.pid_start.map(|s| s + 1),
            };
            assert!(reused.is_gone());
        }
    }

    #[test]
    fn a_group_lives_while_a_member_runs_and_zombies_do_not_count() {
        use std::os::unix::process::CommandExt;
        if fs::metadata("/proc/self/stat").is_err() {
            eprintln!("no /proc here: group liveness cannot be tested");
            assert!(std::env::var_os("CI").is_none(), "no /proc on CI");
            return;
        }
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = child.id();
        assert_eq!(group_liveness(pgid), Liveness::Alive);
        child.kill().unwrap();
        // Killed, not reaped yet: a zombie once the kill lands.
        let zombie = (0..2000).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(1));
            stat(pgid).is_some_and(|(state, _)| state == 'Z')
        });
        assert!(zombie, "the killed child never became a zombie");
        assert_eq!(group_liveness(pgid), Liveness::Gone);
        child.wait().unwrap();
        assert_eq!(group_liveness(pgid), Liveness::Gone);
    }
}
