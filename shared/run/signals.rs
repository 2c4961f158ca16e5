//! The signals `jkz run` forwards to CMD's process group: SIGTERM, SIGINT
//! and SIGHUP.
//!
//! CMD runs in a process group of its own (see [`super::group`]), so a
//! signal meant for the run (a Ctrl-C at the terminal, a supervisor's
//! SIGTERM to jkz) reaches jkz alone. From just before CMD starts, these
//! three no longer end jkz: each sets its flag and wakes the supervisor
//! through a self-pipe ([`signal_hook`]), which forwards it to the group,
//! waits for the group to end, and lets the record be written and the lock
//! be released before jkz exits with 128+N. SIGCHLD wakes the supervisor
//! too, so it learns at once that CMD exited.

use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use signal_hook::consts::{SIGCHLD, SIGHUP, SIGINT, SIGTERM};

/// The signals forwarded, with their names.
pub const FORWARDED: [(i32, &str); 3] =
    [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT"), (SIGHUP, "SIGHUP")];

/// The name of a forwarded signal (`SIGTERM`), else `signal N`.
pub fn name(signal: i32) -> String {
    FORWARDED
        .iter()
        .find(|(s, _)| *s == signal)
        .map_or_else(|| format!("signal {signal}"), |(_, n)| n.to_string())
}

/// The forwarded signals, caught: which arrived, and a descriptor that is
/// readable once one (or SIGCHLD) did.
#[derive(Debug)]
pub struct Signals {
    wake: UnixStream,
    arrived: [Arc<AtomicBool>; 3],
}

impl Signals {
    /// Catches the forwarded signals and SIGCHLD, for the rest of the
    /// process's life.
    pub fn catch() -> io::Result<Signals> {
        let (wake, waker) = UnixStream::pair()?;
        wake.set_nonblocking(true)?;
        let arrived: [Arc<AtomicBool>; 3] = Default::default();
        for ((signal, _), flag) in FORWARDED.iter().zip(&arrived) {
            // The flag first, then the wake-up: a woken reader finds it set.
            signal_hook::flag::register(*signal, Arc::clone(flag))?;
            signal_hook::low_level::pipe::register(*signal, waker.try_clone()?)?;
        }
        signal_hook::low_level::pipe::register(SIGCHLD, waker)?;
        Ok(Signals { wake, arrived })
    }

    /// Readable once a signal arrived since the last [`Signals::drain`].
    pub fn wake_fd(&self) -> BorrowedFd<'_> {
        self.wake.as_fd()
    }

    /// Empties the wake descriptor once it woke a wait. The caller looks
    /// at [`Signals::take`] before it waits again, so a signal whose
    /// wake-up this drains is never missed.
    pub fn drain(&mut self) {
        let mut buf = [0u8; 64];
        while matches!((&self.wake).read(&mut buf), Ok(n) if n > 0) {}
    }

    /// The forwarded signals that arrived since the last call (no system
    /// call: it runs before every read of CMD's answer).
    pub fn take(&mut self) -> Vec<i32> {
        FORWARDED
            .iter()
            .zip(&self.arrived)
            .filter(|(_, flag)| flag.swap(false, Ordering::SeqCst))
            .map(|((signal, _), _)| *signal)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(name(SIGTERM), "SIGTERM");
        assert_eq!(name(SIGHUP), "SIGHUP");
        assert_eq!(name(99), "signal 99");
    }
}
