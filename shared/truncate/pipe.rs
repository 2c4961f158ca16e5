//! Sizing the pipe `jkz-truncate` reads from.

/// The pipe size asked for when the input is a pipe: 1 MiB, the most an
/// unprivileged process may set by default (`/proc/sys/fs/pipe-max-size`).
pub const PIPE_SIZE: usize = 1 << 20;

/// Grows the pipe `fd` reads from to [`PIPE_SIZE`], when it is a pipe and
/// the system allows it (otherwise nothing changes). With the default 64
/// KiB, writer and reader take turns every 64 KiB: on 2 cores, `cat 512
/// MiB | jkz-truncate` measured 0.48 s wall and 0.47 s CPU with it, 0.22 s
/// and 0.34 s with 1 MiB.
pub fn grow_pipe(fd: impl std::os::fd::AsFd) {
    let _ = rustix::pipe::fcntl_setpipe_size(fd, PIPE_SIZE);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pipe_grows_and_anything_else_is_left_alone() {
        let (read, _write) = rustix::pipe::pipe().unwrap();
        let before = rustix::pipe::fcntl_getpipe_size(&read).unwrap();
        grow_pipe(&read);
        let after = rustix::pipe::fcntl_getpipe_size(&read).unwrap();
        let max: usize = std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(PIPE_SIZE);
        assert!(
            after == PIPE_SIZE || (after == before && max < PIPE_SIZE),
            "{before} -> {after} (max {max})"
        );
        let file = tempfile::tempfile().unwrap();
        grow_pipe(&file); // not a pipe: nothing happens, nothing fails
    }
}
