//! Noticing, while an input is read, that the reader of stdout went away.
//!
//! `jkz-truncate` and `jkz run` print nothing until their input ends (only
//! then is it known whether it fits the cap), so a closed stdout would show
//! only at the very end, as a broken pipe on the first write: an endless
//! input would be read (and kept) forever for nobody. Instead each read
//! first waits (`poll`) for the input *and* for stdout: the write end of a
//! pipe whose reader is gone reports `POLLERR`. The reading then stops with
//! a broken-pipe error ([`closed`]): the truncation engine keeps what was
//! read, marked incomplete, prints nothing, and the program ends as a
//! broken pipe ends it (exit 0, no message).
//!
//! A stdout that is a file or a terminal never reports it; nothing changes
//! for them.

use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd};
use std::time::Instant;

use rustix::event::{poll, PollFd, PollFlags, Timespec};

/// What a [`wait`] waits for on its input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Await {
    /// Bytes (or the end, or an error) to read.
    Bytes,
    /// The end of what there is to read: no writer is left (`POLLHUP`),
    /// everything ever written is in the pipe.
    Hangup,
}

/// What ended a [`wait`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Woken {
    /// The input has what was awaited.
    Input,
    /// The reader of stdout went away.
    StdoutClosed,
    /// The wake descriptor is readable (a signal arrived), or a signal
    /// interrupted the wait.
    Wake,
    /// `until` passed.
    Timeout,
}

/// The error a reading that stopped for a closed stdout ends with (a
/// broken pipe, so the program ends as a broken pipe ends it).
pub fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "stdout was closed by its reader")
}

/// Waits until `input` has what `awaited` says, `stdout` is closed, `wake`
/// is readable, or `until` passes (never, when `None`).
pub fn wait(
    (input, awaited): (BorrowedFd<'_>, Await),
    stdout: Option<BorrowedFd<'_>>,
    wake: Option<BorrowedFd<'_>>,
    until: Option<Instant>,
) -> io::Result<Woken> {
    let events = match awaited {
        Await::Bytes => PollFlags::IN,
        // No events asked: POLLHUP (and POLLERR) are always reported.
        Await::Hangup => PollFlags::empty(),
    };
    let mut fds = vec![PollFd::from_borrowed_fd(input, events)];
    // No events asked: POLLERR (and POLLHUP) are always reported.
    let out_at = stdout.map(|fd| {
        fds.push(PollFd::from_borrowed_fd(fd, PollFlags::empty()));
        fds.len() - 1
    });
    let wake_at = wake.map(|fd| {
        fds.push(PollFd::from_borrowed_fd(fd, PollFlags::IN));
        fds.len() - 1
    });
    let timeout = until.map(|until| {
        let left = until.saturating_duration_since(Instant::now());
        Timespec::try_from(left).unwrap_or(Timespec {
            tv_sec: i64::MAX,
            tv_nsec: 0,
        })
    });
    match poll(&mut fds, timeout.as_ref()) {
        Ok(_) => {}
        Err(rustix::io::Errno::INTR) => return Ok(Woken::Wake),
        Err(e) => return Err(e.into()),
    }
    if out_at.is_some_and(|i| fds[i].revents().contains(PollFlags::ERR)) {
        return Ok(Woken::StdoutClosed);
    }
    if wake_at.is_some_and(|i| !fds[i].revents().is_empty()) {
        return Ok(Woken::Wake);
    }
    if !fds[0].revents().is_empty() {
        return Ok(Woken::Input);
    }
    Ok(Woken::Timeout)
}

/// An input whose reads stop with [`closed`] once the reader of `stdout`
/// went away (`jkz-truncate`'s).
pub struct UntilStdoutCloses<R, W> {
    input: R,
    stdout: W,
}

impl<R: Read + AsFd, W: AsFd> UntilStdoutCloses<R, W> {
    pub fn new(input: R, stdout: W) -> Self {
        UntilStdoutCloses { input, stdout }
    }
}

impl<R: Read + AsFd, W: AsFd> Read for UntilStdoutCloses<R, W> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let input = (self.input.as_fd(), Await::Bytes);
            match wait(input, Some(self.stdout.as_fd()), None, None)? {
                Woken::StdoutClosed => return Err(closed()),
                Woken::Input => return self.input.read(buf),
                Woken::Wake | Woken::Timeout => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_pipe_whose_reader_is_gone_is_closed_and_a_file_never_is() {
        let (input, mut feed) = std::io::pipe().unwrap();
        let (out_reader, out) = std::io::pipe().unwrap();
        feed.write_all(b"abc").unwrap();
        let mut reader = UntilStdoutCloses::new(input, out);
        let mut buf = [0u8; 8];
        assert_eq!(reader.read(&mut buf).unwrap(), 3);
        drop(out_reader);
        let err = reader.read(&mut buf).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);

        let file = tempfile::tempfile().unwrap();
        let (input, feed) = std::io::pipe().unwrap();
        drop(feed);
        let mut reader = UntilStdoutCloses::new(input, file);
        assert_eq!(reader.read(&mut buf).unwrap(), 0, "the end of the input");
    }

    #[test]
    fn a_wait_ends_at_its_deadline_and_on_a_wake() {
        let (input, _feed) = std::io::pipe().unwrap();
        let (wake, mut waker) = std::io::pipe().unwrap();
        let soon = Instant::now() + std::time::Duration::from_millis(5);
        let input = (input.as_fd(), Await::Bytes);
        let woken = wait(input, None, Some(wake.as_fd()), Some(soon)).unwrap();
        assert_eq!(woken, Woken::Timeout);
        waker.write_all(b"x").unwrap();
        let woken = wait(input, None, Some(wake.as_fd()), None).unwrap();
        assert_eq!(woken, Woken::Wake);
    }

    #[test]
    fn a_hangup_is_awaited_past_the_bytes() {
        let (input, mut feed) = std::io::pipe().unwrap();
        feed.write_all(b"abc").unwrap();
        let soon = Instant::now() + std::time::Duration::from_millis(5);
        let bytes = (input.as_fd(), Await::Bytes);
        let hangup = (input.as_fd(), Await::Hangup);
        assert_eq!(wait(bytes, None, None, Some(soon)).unwrap(), Woken::Input);
        assert_eq!(
            wait(hangup, None, None, Some(soon)).unwrap(),
            Woken::Timeout
        );
        drop(feed);
        assert_eq!(wait(hangup, None, None, None).unwrap(), Woken::Input);
    }
}
