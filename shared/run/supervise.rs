//! Watching CMD while its answer streams and until its process group is
//! gone: the `--timeout`, the forwarded signals, a closed stdout.
//!
//! Each of them *stops* the run: the group gets SIGTERM (a forwarded signal:
//! that signal), then SIGKILL after [`GRACE`] if anything of it is left.
//! The first stop is the one the run ends with ([`Stop`]). A closed stdout
//! stops the run only while CMD's answer is still coming: jkz reads no more
//! of it, but an answer whose writers all close within a [`GRACE`] (it all
//! fits in the pipe) is read to its end and completes the run as usual
//! (CMD's status and exit code; nobody reads the output). Everything runs
//! on jkz's main thread, between the reads of CMD's stdout and while
//! waiting for CMD: each read first waits (`poll`) for CMD's stdout, for
//! jkz's stdout to close, for a signal, or for the next deadline.
//!
//! After SIGKILL nothing of the group writes any more: what is already in
//! the pipe is read, but a process outside the group that still holds the
//! pipe (it left the group) is not waited for. jkz then waits for the group
//! to be gone, so a `--lock` is never released while a process of CMD's
//! still works; a process that survives SIGKILL for [`KILL_WAIT`] (stuck in
//! the kernel) is reported and the lock left to expire.

use std::io::{self, Read, Stdout};
use std::os::fd::AsFd;
use std::process::{Child, ChildStdout, ExitStatus};
use std::time::{Duration, Instant};

use rustix::process::Signal;

use super::group::ProcessGroup;
use super::signals::Signals;
use crate::closed_stdout::{self, Await, Woken};

/// How long a stopped group has between SIGTERM and SIGKILL: long enough
/// for a wrapper to end its requests and flush, short enough that jkz
/// returns within about a second of its `--timeout`.
pub const GRACE: Duration = Duration::from_millis(500);

/// How long jkz waits for a group to be gone after SIGKILL.
pub const KILL_WAIT: Duration = Duration::from_secs(5);

/// The longest nap between two looks at a group whose leader exited but
/// whose other processes still run (their exits wake nobody).
const MAX_NAP: Duration = Duration::from_millis(50);

/// Why a run was stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// `--timeout` passed.
    Timeout,
    /// jkz received this signal and forwarded it.
    Signal(i32),
    /// The reader of jkz's stdout went away.
    ClosedStdout,
}

/// How the group ended.
#[derive(Debug)]
pub struct Ended {
    /// CMD's own exit status.
    pub status: ExitStatus,
    /// False when a process of the group outlived SIGKILL by [`KILL_WAIT`].
    pub group_gone: bool,
}

/// The watch over one run of CMD.
#[derive(Debug)]
pub struct Supervisor {
    group: ProcessGroup,
    signals: Signals,
    stdout: Stdout,
    deadline: Option<Instant>,
    stop: Option<Stop>,
    /// When SIGKILL follows the stop's first signal.
    kill_at: Option<Instant>,
    killed_at: Option<Instant>,
    /// CMD's exit status is collected (its pid may be reused).
    reaped: bool,
    /// When jkz noticed that its stdout was closed.
    stdout_closed_at: Option<Instant>,
}

impl Supervisor {
    /// Watches the group, stopping it `timeout` from now (none: no
    /// deadline; one past what the clock counts is none).
    pub fn new(group: ProcessGroup, signals: Signals, timeout: Option<Duration>) -> Supervisor {
        Supervisor {
            group,
            signals,
            stdout: io::stdout(),
            deadline: timeout.and_then(|t| Instant::now().checked_add(t)),
            stop: None,
            kill_at: None,
            killed_at: None,
            reaped: false,
            stdout_closed_at: None,
        }
    }

    /// The first stop, if the run was stopped.
    pub fn stop(&self) -> Option<Stop> {
        self.stop
    }

    /// CMD's stdout, read under this watch.
    pub fn reader(&mut self, pipe: ChildStdout) -> CmdOutput<'_> {
        CmdOutput {
            pipe,
            watch: self,
            bytes: 0,
            ended: false,
            writers_gone: false,
        }
    }

    /// Stops the run (the first stop is kept) and sends `signal` to the
    /// group; SIGKILL follows after [`GRACE`].
    fn begin(&mut self, stop: Stop, signal: Signal) {
        self.stop.get_or_insert(stop);
        self.group.signal(signal, !self.reaped);
        self.kill_at.get_or_insert(Instant::now() + GRACE);
    }

    /// Acts on what is due: signals that arrived, the deadline, SIGKILL.
    /// Returns when the next thing falls due, if anything will.
    fn tick(&mut self) -> Option<Instant> {
        for raw in self.signals.take() {
            let signal = Signal::from_named_raw(raw).unwrap_or(Signal::TERM);
            self.begin(Stop::Signal(raw), signal);
        }
        let now = Instant::now();
        if self.stop.is_none() && self.deadline.is_some_and(|d| now >= d) {
            self.begin(Stop::Timeout, Signal::TERM);
        }
        if self.killed_at.is_none() && self.kill_at.is_some_and(|k| now >= k) {
            self.group.signal(Signal::KILL, !self.reaped);
            self.killed_at = Some(now);
        }
        let deadline = self.deadline.filter(|_| self.stop.is_none());
        let kill = self.kill_at.filter(|_| self.killed_at.is_none());
        deadline.into_iter().chain(kill).min()
    }

    /// Waits for CMD to exit and its group to be gone, stopping the run
    /// when something asks for it meanwhile.
    pub fn wait(&mut self, child: &mut Child) -> io::Result<Ended> {
        let mut status = None;
        let mut nap = Duration::from_millis(1);
        loop {
            let next = self.tick();
            if status.is_none() {
                status = child.try_wait()?;
                self.reaped = status.is_some();
            }
            if let Some(status) = status {
                if self.group.is_gone() {
                    return Ok(Ended {
                        status,
                        group_gone: true,
                    });
                }
                if self.killed_at.is_some_and(|k| k.elapsed() >= KILL_WAIT) {
                    return Ok(Ended {
                        status,
                        group_gone: false,
                    });
                }
            }
            // CMD's exit and signals wake the wait (SIGCHLD is caught); the
            // rest of the group's exits do not, so it is looked at again
            // after a nap.
            let now = Instant::now();
            let until = match status {
                None => next,
                Some(_) => {
                    nap = (nap * 2).min(MAX_NAP);
                    Some(next.map_or(now + nap, |n| n.min(now + nap)))
                }
            };
            let wake = (self.signals.wake_fd(), Await::Bytes);
            if closed_stdout::wait(wake, None, None, until)? != Woken::Timeout {
                self.signals.drain();
            }
        }
    }
}

/// CMD's stdout, read under a [`Supervisor`]: a read returns CMD's bytes,
/// or the end once CMD's group is killed, or fails with
/// [`closed_stdout::closed`] once jkz's stdout has been closed for a
/// [`GRACE`] before the answer's end (the run is then stopped).
pub struct CmdOutput<'a> {
    pipe: ChildStdout,
    watch: &'a mut Supervisor,
    /// Bytes read.
    pub bytes: u64,
    /// The pipe's end was read (everything that held it closed it).
    pub ended: bool,
    /// Everything that held the pipe has closed it: what is left is in it.
    writers_gone: bool,
}

impl CmdOutput<'_> {
    /// jkz's stdout failed with a broken pipe before the answer's end:
    /// reads the rest of the answer (unkept) if it ends within a [`GRACE`],
    /// else stops the run.
    pub fn finish_unread(&mut self) {
        self.watch.stdout_closed_at.get_or_insert_with(Instant::now);
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match self.read(&mut buf) {
                Ok(0) => return,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }
}

impl Read for CmdOutput<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let next = self.watch.tick();
            let closing = match self.writers_gone {
                false => self.watch.stdout_closed_at.map(|t| t + GRACE),
                // The answer has ended: it is read to its end.
                true => None,
            };
            if closing.is_some_and(|c| Instant::now() >= c) {
                self.watch.begin(Stop::ClosedStdout, Signal::TERM);
                return Err(closed_stdout::closed());
            }
            let until = match self.watch.killed_at {
                // After SIGKILL: what is in the pipe now, for at most a
                // grace, and no waiting for more.
                Some(killed) if killed.elapsed() >= GRACE => return Ok(0),
                Some(_) => Some(Instant::now()),
                None => next.into_iter().chain(closing).min(),
            };
            // Once stdout is known closed it is not asked again, and the
            // answer is read only once it has ended.
            let (stdout, awaited) = match self.watch.stdout_closed_at {
                None => (Some(self.watch.stdout.as_fd()), Await::Bytes),
                Some(_) => (None, Await::Hangup),
            };
            let woken = closed_stdout::wait(
                (self.pipe.as_fd(), awaited),
                stdout,
                Some(self.watch.signals.wake_fd()),
                until,
            )?;
            match woken {
                Woken::StdoutClosed => {
                    self.watch.stdout_closed_at = Some(Instant::now());
                }
                Woken::Input => {
                    self.writers_gone |= awaited == Await::Hangup;
                    let n = self.pipe.read(buf)?;
                    self.bytes += n as u64;
                    self.ended |= n == 0 && !buf.is_empty();
                    return Ok(n);
                }
                Woken::Timeout if self.watch.killed_at.is_some() => return Ok(0),
                Woken::Wake => self.watch.signals.drain(),
                Woken::Timeout => {}
            }
        }
    }
}
