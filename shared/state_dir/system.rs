//! The directories jkz never keeps state in, whoever names them (a
//! repository's `jkz.stateDir`, `jkz attach`): the file system's root and
//! the operating system's own directories. Run as root, jkz owns them all,
//! so "a directory of yours" is no protection there: a `jkz.stateDir` of
//! `/` would have every hook create `/chat.db` and `jkz doctor` walk the
//! whole file system.
//!
//! Two kinds: a tree (the directory and everything below it belongs to the
//! system: `/usr`, `/etc`, `/proc`, …) and a directory that holds others'
//! directories but is no one's state itself (`/`, `/home`, `/root`, `/var`,
//! `/tmp`, …: a directory below them, such as a repository in root's home,
//! is fine).

use std::path::Path;

/// Directories that belong to the system, with everything below them.
const TREES: [&str; 26] = [
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/sbin",
    "/sys",
    "/usr",
    "/var/lib",
    "/var/log",
    "/var/cache",
    "/var/spool",
    "/var/mail",
    "/var/run",
    "/var/lock",
    "/var/backups",
    "/run/lock",
    "/System",
    "/Library",
    "/Applications",
    "/private/etc",
    "/private/var/db",
];

/// Directories that hold others' directories: not a state root
/// themselves.
const HOLDERS: [&str; 13] = [
    "/", "/home", "/root", "/var", "/tmp", "/var/tmp", "/run", "/opt", "/srv", "/mnt", "/media",
    "/Users", "/private",
];

/// The system directory `dir` (an absolute path, resolved) is or lies in,
/// when it does.
pub fn system_directory(dir: &Path) -> Option<&'static str> {
    if let Some(holder) = HOLDERS.iter().find(|h| dir == Path::new(h)) {
        return Some(holder);
    }
    TREES.iter().find(|t| dir.starts_with(t)).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_and_the_systems_trees_are_refused_below_holders_is_fine() {
        for (dir, system) in [
            ("/", "/"),
            ("/etc", "/etc"),
            ("/usr/local/state", "/usr"),
            ("/proc/self", "/proc"),
            ("/root", "/root"),
            ("/home", "/home"),
            ("/lib64", "/lib64"),
            ("/var/lib/jkz", "/var/lib"),
        ] {
            assert_eq!(system_directory(Path::new(dir)), Some(system), "{dir}");
        }
        for dir in [
            "/root/repo/state",
            "/home/ana/src/app/state",
            "/tmp/jkz-state",
            "/var/tmp/x",
            "/libfoo",
            "/usrdata/state",
        ] {
            assert_eq!(system_directory(Path::new(dir)), None, "{dir}");
        }
    }
}
