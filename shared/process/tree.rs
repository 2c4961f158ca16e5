//! This process's ancestors, read from `/proc` (Linux): the parent, its
//! parent, and so on up to the top of the tree. The registry asks which of
//! them is a chat's client ([`crate::registry::identity`]).
//!
//! Bounded: at most [`MAX_DEPTH`] ancestors are read, each one small file
//! (`/proc/<pid>/stat`, and `cmdline` only where [`Ancestor::args`] is
//! asked); no subprocess. A tree deeper than that is an answer of its own
//! ([`Tree::TooDeep`]), never taken for the top.

use std::io::Read;

/// The most ancestors read. A shell in a terminal is a handful of levels
/// below the top; a pipeline script run by an agent run by a chat, a dozen
/// or two.
pub const MAX_DEPTH: usize = 64;

/// The most bytes of a command line read.
const MAX_CMDLINE: u64 = 64 * 1024;

/// One ancestor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ancestor {
    pub pid: u32,
    /// The kernel's name for it (`comm`: the program's file name, at most
    /// 15 bytes, unless the process renamed itself).
    pub name: String,
    /// Its start time (clock ticks since boot), so a reused pid is told
    /// from the process it replaced.
    pub start: u64,
}

impl Ancestor {
    /// Its command line's arguments (`argv`, program first); empty when
    /// they cannot be read.
    pub fn args(&self) -> Vec<Vec<u8>> {
        let Ok(file) = std::fs::File::open(format!("/proc/{}/cmdline", self.pid)) else {
            return Vec::new();
        };
        let mut bytes = Vec::new();
        if file.take(MAX_CMDLINE).read_to_end(&mut bytes).is_err() {
            return Vec::new();
        }
        bytes
            .split(|&b| b == 0)
            .filter(|a| !a.is_empty())
            .map(<[u8]>::to_vec)
            .collect()
    }
}

/// What the walk found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tree {
    /// Every ancestor up to the top, nearest first.
    Whole(Vec<Ancestor>),
    /// More than [`MAX_DEPTH`] ancestors: the first ones, nearest first.
    TooDeep(Vec<Ancestor>),
    /// No `/proc` here: the tree cannot be read.
    Unreadable,
}

/// This process's ancestors.
pub fn ancestors() -> Tree {
    if std::fs::metadata("/proc/self/stat").is_err() {
        return Tree::Unreadable;
    }
    let mut found = Vec::new();
    let mut pid = std::os::unix::process::parent_id();
    while pid != 0 {
        if found.len() == MAX_DEPTH {
            return Tree::TooDeep(found);
        }
        // An ancestor that exits while the tree is read ends it there: the
        // orphans below it now hang from the top.
        let Some((ancestor, parent)) = read(pid) else {
            break;
        };
        found.push(ancestor);
        pid = parent;
    }
    Tree::Whole(found)
}

/// `pid`'s name, start time and parent, from `/proc/<pid>/stat`: `pid
/// (comm) state ppid …`, the start time being field 22; `comm` may hold
/// spaces and parentheses, so the fields are counted from the last `)`.
fn read(pid: u32) -> Option<(Ancestor, u32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text.get(open + 1..close)?.to_string();
    let mut fields = text.get(close + 1..)?.split_ascii_whitespace();
    let parent = fields.nth(1)?.parse().ok()?;
    // After the parent, fields 5..=21, then the start time.
    let start = fields.nth(17)?.parse().ok()?;
    Some((Ancestor { pid, name, start }, parent))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walk_reaches_the_top_through_the_parent() {
        let Tree::Whole(found) = ancestors() else {
            assert!(std::env::var_os("CI").is_none(), "/proc is needed on CI");
            return;
        };
        let parent = std::os::unix::process::parent_id();
        assert_eq!(found.first().map(|a| a.pid), Some(parent));
        assert_eq!(
            found[0].start,
            crate::process::start_time(parent).unwrap(),
            "the same start time as the holder check reads"
        );
        assert!(found.len() <= MAX_DEPTH);
        // The top's parent is 0: the last one read is the top.
        let (_, top_parent) = read(found.last().unwrap().pid).unwrap();
        assert_eq!(top_parent, 0);
    }

    #[test]
    fn a_name_with_spaces_and_parentheses_is_read_whole() {
        use std::os::unix::process::CommandExt;
        if std::fs::metadata("/proc/self/stat").is_err() {
            return;
        }
        // A program whose file name holds `) (`: comm is taken from it.
        let dir = tempfile::tempdir().unwrap();
        let odd = dir.path().join("a) (b c");
        std::fs::copy("/bin/sleep", &odd).unwrap();
        let mut child = std::process::Command::new(&odd)
            .arg0("x")
            .arg("30")
            .spawn()
            .unwrap();
        let read_back = read(child.id());
        child.kill().unwrap();
        child.wait().unwrap();
        let (ancestor, parent) = read_back.unwrap();
        assert_eq!(ancestor.name, "a) (b c");
        assert_eq!(parent, std::process::id());
        let me = Ancestor {
            pid: std::process::id(),
            name: String::new(),
            start: 0,
        };
        assert!(!me.args().is_empty(), "this process's own command line");
    }
}
