//! CMD's process group: `jkz run` starts CMD as the leader of a new group,
//! so that ending CMD ends everything it started (its children, their
//! children, a job it left in the background), and a `--lock` follows the
//! whole group, not just CMD.
//!
//! A process that leaves the group itself (`setsid`, `setpgid`) is no longer
//! CMD's: it is neither signalled nor waited for.

use std::process::Child;

use rustix::io::Errno;
use rustix::process::{kill_process, kill_process_group, test_kill_process_group, Pid, Signal};

use crate::process::{group_liveness, Liveness};

/// The process group CMD leads.
#[derive(Debug)]
pub struct ProcessGroup {
    leader: Pid,
}

impl ProcessGroup {
    /// The group `child` leads (it was started with `process_group(0)`).
    pub fn led_by(child: &Child) -> ProcessGroup {
        ProcessGroup {
            leader: Pid::from_child(child),
        }
    }

    /// Its id, the leader's pid.
    pub fn id(&self) -> u32 {
        self.leader.as_raw_pid().unsigned_abs()
    }

    /// Sends `signal` to every process of the group. When the group is
    /// empty but the leader is not reaped yet (`leader_unreaped`), it may
    /// have left the group: it gets the signal alone. (A reaped leader's
    /// pid may be reused; it is never signalled on its own.)
    pub fn signal(&self, signal: Signal, leader_unreaped: bool) {
        match kill_process_group(self.leader, signal) {
            Err(Errno::SRCH) if leader_unreaped => {
                let _ = kill_process(self.leader, signal);
            }
            _ => {}
        }
    }

    /// True once no process of the group runs (zombies not counted, where
    /// `/proc` tells them apart). Asked once the leader is reaped: an
    /// unreaped leader is a member.
    pub fn is_gone(&self) -> bool {
        match test_kill_process_group(self.leader) {
            Err(Errno::SRCH) => true,
            // Members remain, maybe only zombies nobody reaped yet.
            _ => group_liveness(self.id()) == Liveness::Gone,
        }
    }
}
