//! Which paths a checkout's git index tracks below one directory, read from
//! the index file itself (`<git dir>/index`, git's `DIRC` format): no `git`
//! process, so a hook can ask on every call ([`crate::state_dir::tracked`]
//! asks whether the state directory is tracked).
//!
//! The format, as `gitformat-index(5)` lays it out: a 12-byte header
//! (`DIRC`, the version, the entry count), the entries sorted by path, then
//! extensions and a trailing hash. An entry is 40 bytes of stat data, the
//! object id (20 bytes for SHA-1, 32 for SHA-256: the repository's
//! `extensions.objectFormat` says which), 2 bytes of flags (3 and later: 2
//! more when the extended bit is set), then the path:
//! - versions 2 and 3: the path and a NUL, padded with NULs to a multiple
//!   of 8 bytes from the entry's start;
//! - version 4: prefix-compressed, without padding: a varint saying how
//!   many bytes to drop from the end of the previous entry's path, then the
//!   rest of this path and a NUL.
//!
//! A split index (`core.splitIndex`) keeps most entries in
//! `<git dir>/sharedindex.<hash>`, which the `link` extension names, with a
//! bitmap of the shared entries deleted since; both are read.
//!
//! Bounded: an index larger than [`MAX_INDEX`] bytes is an error, never half
//! read; a path longer than [`MAX_PATH`] is an error; the file is streamed
//! through one buffer (memory stays a few KiB whatever its size) and, when
//! the index is not split, the read stops at the first path sorted after
//! the directory asked about.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// The largest index read: a repository with a million files has an index
/// of about 100 MiB.
pub const MAX_INDEX: u64 = 256 * 1024 * 1024;

/// The longest path an entry may hold.
pub const MAX_PATH: usize = 64 * 1024;

/// The size of an object id in the index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectFormat {
    Sha1,
    Sha256,
}

impl ObjectFormat {
    /// From `extensions.objectFormat` (absent: SHA-1).
    pub fn from_config(value: Option<&[u8]>) -> Result<ObjectFormat, String> {
        match value.map(|v| v.to_ascii_lowercase()) {
            None => Ok(ObjectFormat::Sha1),
            Some(v) if v == b"sha1" => Ok(ObjectFormat::Sha1),
            Some(v) if v == b"sha256" => Ok(ObjectFormat::Sha256),
            Some(v) => Err(format!(
                "unknown extensions.objectFormat {:?}",
                String::from_utf8_lossy(&v)
            )),
        }
    }

    fn len(self) -> usize {
        match self {
            ObjectFormat::Sha1 => 20,
            ObjectFormat::Sha256 => 32,
        }
    }
}

/// The tracked paths found below a directory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tracked {
    /// The first paths found, in index order, at most the number asked for.
    pub first: Vec<Vec<u8>>,
    /// How many there are in all (the same path at several merge stages
    /// counts once).
    pub count: usize,
}

/// The paths `<git_dir>/index` tracks that are `dir` or lie below it
/// (`dir` relative to the checkout's top, `/`-separated, without a trailing
/// `/`; empty: every path), keeping the first `keep` of them by name. No
/// index file: nothing is tracked.
pub fn tracked_below(
    git_dir: &Path,
    format: ObjectFormat,
    dir: &[u8],
    keep: usize,
) -> Result<Tracked, String> {
    tracked_below_through(git_dir, format, dir, keep, WINDOW)
}

/// [`tracked_below`] through a window of `window` bytes (tests: tiny ones).
fn tracked_below_through(
    git_dir: &Path,
    format: ObjectFormat,
    dir: &[u8],
    keep: usize,
    window: usize,
) -> Result<Tracked, String> {
    let path = git_dir.join("index");
    let shown = || path.display().to_string();
    let file = match open(&path) {
        Ok(Some(f)) => f,
        Ok(None) => return Ok(Tracked::default()),
        Err(e) => return Err(format!("reading {}: {e}", shown())),
    };
    // Only a split index needs its extensions, past every entry.
    let may_be_split = has_shared_index(git_dir);
    let mut found = Found::new(dir, keep);
    let link = read_index(file, window, format, &mut |_, name| {
        found.offer(name, !may_be_split)
    })
    .map_err(|e| format!("{}: {e}", shown()))?;
    if let Some(link) = link {
        let shared = git_dir.join(format!("sharedindex.{}", hex(&link.shared)));
        let file = match open(&shared) {
            Ok(Some(f)) => f,
            Ok(None) => {
                return Err(format!(
                    "{}: names {}, which is missing",
                    shown(),
                    shared.display()
                ))
            }
            Err(e) => return Err(format!("reading {}: {e}", shared.display())),
        };
        let deleted = link.deleted;
        read_index(file, window, format, &mut |at, name| {
            if !deleted.contains(at) {
                found.offer(name, false);
            }
            Step::Next
        })
        .map_err(|e| format!("{}: {e}", shared.display()))?;
    }
    Ok(found.into_tracked())
}

/// [`tracked_below`] on the bytes of one index file, read whole (a split
/// index's shared entries are not read): the fuzz target's entry.
pub fn tracked_in_bytes(
    bytes: &[u8],
    format: ObjectFormat,
    dir: &[u8],
    keep: usize,
) -> Result<Tracked, String> {
    let mut found = Found::new(dir, keep);
    read_index(
        (bytes, bytes.len() as u64),
        WINDOW,
        format,
        &mut |_, name| found.offer(name, true),
    )?;
    Ok(found.into_tracked())
}

/// The paths kept and counted so far, and whether the read may stop.
struct Found<'a> {
    dir: &'a [u8],
    /// `dir/`: every path below it starts with this.
    dir_slash: Vec<u8>,
    keep: usize,
    tracked: Tracked,
    /// The last path counted: an entry at several merge stages repeats it.
    last: Option<Vec<u8>>,
}

impl<'a> Found<'a> {
    fn new(dir: &'a [u8], keep: usize) -> Found<'a> {
        let mut dir_slash = dir.to_vec();
        dir_slash.push(b'/');
        Found {
            dir,
            dir_slash,
            keep,
            tracked: Tracked::default(),
            last: None,
        }
    }

    /// Counts `name` when it is below the directory; says to stop when
    /// `may_stop` and `name` sorts after every path below it.
    fn offer(&mut self, name: &[u8], may_stop: bool) -> Step {
        // A split index stores a replaced entry without its name.
        if name.is_empty() {
            return Step::Next;
        }
        if is_below(name, self.dir) {
            let repeated = self.last.as_deref() == Some(name);
            if !repeated {
                self.tracked.count += 1;
                if self.tracked.first.len() < self.keep {
                    self.tracked.first.push(name.to_vec());
                }
                self.last = Some(name.to_vec());
            }
            return Step::Next;
        }
        if may_stop && sorts_after_all_below(name, &self.dir_slash) {
            return Step::Stop;
        }
        Step::Next
    }

    fn into_tracked(mut self) -> Tracked {
        // A split index's own entries come before the shared ones here,
        // not in path order.
        self.tracked.first.sort();
        self.tracked
    }
}

/// True when `name` is `dir` or lies below it.
fn is_below(name: &[u8], dir: &[u8]) -> bool {
    dir.is_empty()
        || name == dir
        || (name.len() > dir.len() && name.starts_with(dir) && name[dir.len()] == b'/')
}

/// True when `name`, not below the directory whose path and `/` are
/// `dir_slash`, sorts after every path below it (git sorts paths
/// bytewise): it is past `dir/` and does not start with it. Nothing sorts
/// after every path of the whole tree (`dir_slash` is `/`).
fn sorts_after_all_below(name: &[u8], dir_slash: &[u8]) -> bool {
    dir_slash != b"/" && name > dir_slash && !name.starts_with(dir_slash)
}

/// What a caller wants after an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Next,
    Stop,
}

/// The `link` extension of a split index: the shared index's hash and the
/// shared entries deleted since it was written.
struct Link {
    shared: Vec<u8>,
    deleted: Bitmap,
}

/// Opens an index file: a regular file of at most [`MAX_INDEX`] bytes;
/// `None` when there is none.
fn open(path: &Path) -> io::Result<Option<(File, u64)>> {
    let file = match crate::user_file::open_user_file(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let size = file.metadata()?.len();
    if size > MAX_INDEX {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{size} bytes, more than the {MAX_INDEX} jkz reads"),
        ));
    }
    Ok(Some((file, size)))
}

/// True when the git directory holds a shared index: only then can its
/// index be split.
fn has_shared_index(git_dir: &Path) -> bool {
    std::fs::read_dir(git_dir).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            e.file_name()
                .as_encoded_bytes()
                .starts_with(b"sharedindex.")
        })
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads one index file, giving each entry's position and path to `each`
/// until it says stop; returns the `link` extension when the file has one
/// (and was read to its end).
fn read_index<R: Read>(
    (file, size): (R, u64),
    window: usize,
    format: ObjectFormat,
    each: &mut dyn FnMut(usize, &[u8]) -> Step,
) -> Result<Option<Link>, String> {
    let mut r = Window::new(file, size, window);
    let header = r.take(12)?;
    if &header[..4] != b"DIRC" {
        return Err("not a git index (no DIRC signature)".into());
    }
    let version = u32::from_be_bytes(header[4..8].try_into().expect("4 bytes"));
    let count = u32::from_be_bytes(header[8..12].try_into().expect("4 bytes")) as usize;
    if !(2..=4).contains(&version) {
        return Err(format!("index version {version}, jkz reads 2, 3 and 4"));
    }
    let hash = format.len();
    // ctime, mtime, dev, ino, mode, uid, gid, size (4 bytes each), the
    // object id, the flags.
    let fixed = 40 + hash + 2;
    // Version 4's paths are built on the previous one; 2 and 3 are read in
    // place.
    let mut name: Vec<u8> = Vec::new();
    for at in 0..count {
        let head = r.look(fixed)?;
        let flags = u16::from_be_bytes([head[fixed - 2], head[fixed - 1]]);
        let extended = flags & 0x4000 != 0;
        if extended && version < 3 {
            return Err(format!("entry {at}: extended flags in a version 2 index"));
        }
        let start = fixed + if extended { 2 } else { 0 };
        let step = if version == 4 {
            r.skip(start)?;
            let strip = r.varint()?;
            let keep = usize::try_from(strip)
                .ok()
                .and_then(|strip| name.len().checked_sub(strip))
                .ok_or_else(|| {
                    format!("entry {at}: drops more of the previous path than it has")
                })?;
            name.truncate(keep);
            let suffix = r.until_nul(0)?;
            if name.len() + suffix.len() > MAX_PATH {
                return Err(format!("a path longer than {MAX_PATH} bytes"));
            }
            name.extend_from_slice(suffix);
            let used = suffix.len() + 1;
            r.skip(used)?;
            each(at, &name)
        } else {
            // The length in the flags is exact below 0xfff; a longer path
            // is found by its NUL. NULs pad the entry to a multiple of 8.
            let len = usize::from(flags & 0xfff);
            let len = if len < 0xfff {
                let entry = r.look(start + len + 1)?;
                if entry[start + len] != 0 {
                    return Err(format!(
                        "entry {at}: its path is not the length its flags say"
                    ));
                }
                len
            } else {
                r.until_nul(start)?.len()
            };
            let total = (start + len + 8) & !7;
            let entry = r.look(total)?;
            let step = each(at, &entry[start..start + len]);
            r.skip(total)?;
            step
        };
        if step == Step::Stop {
            return Ok(None);
        }
    }
    // Extensions, up to the trailing hash.
    let mut link = None;
    while r.left() > hash as u64 {
        let head = r.take(8)?;
        let signature: [u8; 4] = head[..4].try_into().expect("4 bytes");
        let len = u64::from(u32::from_be_bytes(head[4..8].try_into().expect("4 bytes")));
        if len > r.left() {
            return Err("an extension runs past the end of the file".into());
        }
        let len = usize::try_from(len).map_err(|_| "an extension too large")?;
        if &signature == b"link" {
            let shared = r.take(hash)?.to_vec();
            let rest = len
                .checked_sub(hash)
                .ok_or("a link extension shorter than a hash")?;
            let deleted = if rest > 0 {
                let before = r.left();
                let deleted = Bitmap::read(&mut r)?;
                let used = usize::try_from(before - r.left()).map_err(|_| "a bitmap too large")?;
                r.skip(rest.checked_sub(used).ok_or("a link extension overruns")?)?;
                deleted
            } else {
                Bitmap::default()
            };
            link = Some(Link { shared, deleted });
        } else {
            r.skip(len)?;
        }
    }
    Ok(link)
}

/// The file through one window: the bytes looked at are in memory, the
/// rest is read as the window moves on. Memory: the window, which grows
/// only to hold one entry (at most [`MAX_PATH`] and its header).
struct Window<R> {
    file: R,
    buf: Vec<u8>,
    /// The window is `buf[at..end]`.
    at: usize,
    end: usize,
    /// Bytes of the file not yet in `buf`.
    unread: u64,
}

/// The window's usual size.
const WINDOW: usize = 256 * 1024;

fn short() -> String {
    "cut short (the file ends inside an entry)".into()
}

impl<R: Read> Window<R> {
    fn new(file: R, size: u64, window: usize) -> Window<R> {
        Window {
            file,
            buf: vec![0; window.max(1)],
            at: 0,
            end: 0,
            unread: size,
        }
    }

    /// Bytes of the file after the window's start.
    fn left(&self) -> u64 {
        (self.end - self.at) as u64 + self.unread
    }

    /// The next `n` bytes, without moving past them.
    fn look(&mut self, n: usize) -> Result<&[u8], String> {
        if self.end - self.at < n {
            self.fill(n)?;
        }
        Ok(&self.buf[self.at..self.at + n])
    }

    /// The next `n` bytes, moving past them.
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        self.look(n)?;
        let at = self.at;
        self.at += n;
        Ok(&self.buf[at..at + n])
    }

    fn skip(&mut self, mut n: usize) -> Result<(), String> {
        if n as u64 > self.left() {
            return Err(short());
        }
        let here = n.min(self.end - self.at);
        self.at += here;
        n -= here;
        // Past the window: whole windows read and dropped.
        while n > 0 {
            self.fill(1)?;
            let here = n.min(self.end - self.at);
            self.at += here;
            n -= here;
        }
        Ok(())
    }

    /// Makes the window hold at least `n` bytes (the file has them).
    fn fill(&mut self, n: usize) -> Result<(), String> {
        if n as u64 > self.left() {
            return Err(short());
        }
        self.buf.copy_within(self.at..self.end, 0);
        self.end -= self.at;
        self.at = 0;
        if self.buf.len() < n {
            self.buf.resize(n, 0);
        }
        while self.end < n {
            let room =
                (self.buf.len() - self.end).min(usize::try_from(self.unread).unwrap_or(usize::MAX));
            let got = self
                .file
                .read(&mut self.buf[self.end..self.end + room])
                .map_err(|e| e.to_string())?;
            if got == 0 {
                return Err(short());
            }
            self.end += got;
            self.unread -= got as u64;
        }
        Ok(())
    }

    /// The bytes from `from` (after the window's start) up to the next NUL,
    /// without moving: at most [`MAX_PATH`] of them.
    fn until_nul(&mut self, from: usize) -> Result<&[u8], String> {
        let mut want = from + 256;
        loop {
            let have = want.min(usize::try_from(self.left()).unwrap_or(usize::MAX));
            let bytes = self.look(have)?;
            if let Some(i) = memchr::memchr(0, &bytes[from.min(have)..]) {
                let at = self.at;
                return Ok(&self.buf[at + from..at + from + i]);
            }
            if have < want || have - from > MAX_PATH {
                return Err(if have < want {
                    short()
                } else {
                    format!("a path longer than {MAX_PATH} bytes")
                });
            }
            want = want.saturating_mul(2).min(from + MAX_PATH + 1);
        }
    }

    fn byte(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    /// git's offset varint (`varint.c`): 7 bits a byte, high bit set on
    /// every byte but the last, each continuation adding one.
    fn varint(&mut self) -> Result<u64, String> {
        let mut c = self.byte()?;
        let mut value = u64::from(c & 0x7f);
        while c & 0x80 != 0 {
            c = self.byte()?;
            value = value
                .checked_add(1)
                .and_then(|v| v.checked_mul(128))
                .map(|v| v | u64::from(c & 0x7f))
                .filter(|&v| v <= MAX_PATH as u64)
                .ok_or("a path length out of range")?;
        }
        Ok(value)
    }
}

/// A set of entry positions, read from git's EWAH bitmap (`ewah/ewah_io.c`):
/// the bit count, the number of 64-bit words, the words, the position of
/// the last run word. Each run word says how many words of all-zero or
/// all-one bits follow (bits 1–32) and how many literal words come after
/// them (bits 33–63).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Bitmap {
    /// `(first, count)` of each run of ones, in order.
    ones: Vec<(usize, usize)>,
}

impl Bitmap {
    fn read<R: Read>(r: &mut Window<R>) -> Result<Bitmap, String> {
        let u32_at = |r: &mut Window<R>| -> Result<u32, String> {
            Ok(u32::from_be_bytes(r.take(4)?.try_into().expect("4 bytes")))
        };
        let u64_at = |r: &mut Window<R>| -> Result<u64, String> {
            Ok(u64::from_be_bytes(r.take(8)?.try_into().expect("8 bytes")))
        };
        u32_at(r)?; // bit count
        let words = u64::from(u32_at(r)?);
        if words.saturating_mul(8) > r.left() {
            return Err("a bitmap runs past the end of the file".into());
        }
        fn push(ones: &mut Vec<(usize, usize)>, first: usize, count: usize) {
            match ones.last_mut() {
                Some((f, c)) if *f + *c == first => *c += count,
                _ => ones.push((first, count)),
            }
        }
        let mut ones = Vec::new();
        let mut bit = 0usize;
        let mut left = words;
        while left > 0 {
            let run = u64_at(r)?;
            left -= 1;
            let run_bit = run & 1 == 1;
            let run_words = ((run >> 1) & 0xffff_ffff) as usize;
            let literals = run >> 33;
            let run_bits = run_words.checked_mul(64).ok_or("a bitmap too large")?;
            if run_bit && run_bits > 0 {
                push(&mut ones, bit, run_bits);
            }
            bit = bit.checked_add(run_bits).ok_or("a bitmap too large")?;
            if literals > left {
                return Err("a bitmap's literal words run past its end".into());
            }
            for _ in 0..literals {
                let word = u64_at(r)?;
                left -= 1;
                for b in 0..64 {
                    if word >> b & 1 == 1 {
                        push(&mut ones, bit + b, 1);
                    }
                }
                bit += 64;
            }
        }
        u32_at(r)?; // the last run word's position
        Ok(Bitmap { ones })
    }

    fn contains(&self, at: usize) -> bool {
        let i = self.ones.partition_point(|&(first, _)| first <= at);
        i > 0 && {
            let (first, count) = self.ones[i - 1];
            at < first + count
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An index file as git writes one, from sorted paths: the naive
    /// writer the reader is checked against.
    fn write_index(
        version: u32,
        format: ObjectFormat,
        paths: &[Vec<u8>],
        extended: &[bool],
    ) -> Vec<u8> {
        let mut out = b"DIRC".to_vec();
        out.extend_from_slice(&version.to_be_bytes());
        out.extend_from_slice(&(paths.len() as u32).to_be_bytes());
        let mut previous: &[u8] = b"";
        for (i, path) in paths.iter().enumerate() {
            let start = out.len();
            out.extend(std::iter::repeat_n(0xabu8, 40 + format.len()));
            let ext = version >= 3 && extended.get(i).copied().unwrap_or(false);
            let len = path.len().min(0xfff) as u16;
            let flags = len | if ext { 0x4000 } else { 0 };
            out.extend_from_slice(&flags.to_be_bytes());
            if ext {
                out.extend_from_slice(&0x2000u16.to_be_bytes());
            }
            if version == 4 {
                let common = previous
                    .iter()
                    .zip(path.iter())
                    .take_while(|(a, b)| a == b)
                    .count();
                encode_varint((previous.len() - common) as u64, &mut out);
                out.extend_from_slice(&path[common..]);
                out.push(0);
            } else {
                out.extend_from_slice(path);
                out.push(0);
                while !(out.len() - start).is_multiple_of(8) {
                    out.push(0);
                }
            }
            previous = path;
        }
        // An extension jkz skips, then the trailing hash.
        out.extend_from_slice(b"TREE");
        out.extend_from_slice(&3u32.to_be_bytes());
        out.extend_from_slice(b"abc");
        out.extend(std::iter::repeat_n(0u8, format.len()));
        out
    }

    fn encode_varint(mut value: u64, out: &mut Vec<u8>) {
        let mut bytes = vec![(value & 0x7f) as u8];
        while value >> 7 != 0 {
            value = (value >> 7) - 1;
            bytes.push(0x80 | (value & 0x7f) as u8);
        }
        bytes.reverse();
        out.extend_from_slice(&bytes);
    }

    /// The oracle: every path below `dir`, counted once.
    fn naive(paths: &[Vec<u8>], dir: &[u8]) -> Vec<Vec<u8>> {
        let mut below: Vec<Vec<u8>> = paths
            .iter()
            .filter(|p| {
                dir.is_empty()
                    || p.as_slice() == dir
                    || (p.starts_with(dir) && p.get(dir.len()) == Some(&b'/'))
            })
            .cloned()
            .collect();
        below.dedup();
        below
    }

    fn read_bytes(
        bytes: &[u8],
        format: ObjectFormat,
        dir: &[u8],
        keep: usize,
    ) -> Result<Tracked, String> {
        read_through(bytes, format, dir, keep, WINDOW)
    }

    /// The same through a window of `window` bytes: tiny ones cross every
    /// edge of the window code.
    fn read_through(
        bytes: &[u8],
        format: ObjectFormat,
        dir: &[u8],
        keep: usize,
        window: usize,
    ) -> Result<Tracked, String> {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("index"), bytes).unwrap();
        tracked_below_through(tmp.path(), format, dir, keep, window)
    }

    fn path_strategy() -> impl Strategy<Value = Vec<u8>> {
        // Few distinct components, so prefixes, `state`, `state-x`,
        // `state/…` and long shared prefixes all occur.
        let part = prop_oneof![
            Just(b"state".to_vec()),
            Just(b"state-x".to_vec()),
            Just(b"stat".to_vec()),
            Just(b"a".to_vec()),
            Just(b"pipeline".to_vec()),
            Just(b"1.json".to_vec()),
            // Longer than the 12 bits of a v2/v3 entry's length.
            Just(vec![b'x'; 0x1003]),
            proptest::collection::vec(1u8..=255, 1..6).prop_map(|v| v
                .into_iter()
                .map(|b| if b == b'/' { b'_' } else { b })
                .collect()),
        ];
        proptest::collection::vec(part, 1..5).prop_map(|parts| parts.join(&b'/'))
    }

    proptest! {
        #[test]
        fn reads_what_the_naive_oracle_finds(
            mut paths in proptest::collection::vec(path_strategy(), 0..40),
            version in 2u32..=4,
            sha256 in any::<bool>(),
            extended in proptest::collection::vec(any::<bool>(), 40),
            dir in prop_oneof![Just(b"state".to_vec()), Just(b"a/state".to_vec()), Just(Vec::new()), path_strategy()],
            keep in 0usize..6,
            window in prop_oneof![Just(1usize), 2usize..80, Just(WINDOW)],
        ) {
            paths.sort();
            // An entry at two merge stages repeats its path.
            if let Some(p) = paths.first().cloned() {
                paths.insert(0, p);
            }
            let format = if sha256 { ObjectFormat::Sha256 } else { ObjectFormat::Sha1 };
            let bytes = write_index(version, format, &paths, &extended);
            let got = read_through(&bytes, format, &dir, keep, window).unwrap();
            let want = naive(&paths, &dir);
            prop_assert_eq!(got.count, want.len());
            prop_assert_eq!(got.first, want.into_iter().take(keep).collect::<Vec<_>>());
        }

        #[test]
        fn any_bytes_are_an_answer_or_an_error_never_a_panic(
            bytes in proptest::collection::vec(any::<u8>(), 0..400),
            version in 2u32..=4,
        ) {
            let mut file = b"DIRC".to_vec();
            file.extend_from_slice(&version.to_be_bytes());
            file.extend_from_slice(&bytes);
            let _ = read_bytes(&file, ObjectFormat::Sha1, b"state", 3);
        }
    }

    #[test]
    fn a_cut_file_or_a_foreign_one_is_an_error() {
        let paths = vec![b"state/pipeline/1.json".to_vec()];
        let bytes = write_index(2, ObjectFormat::Sha1, &paths, &[]);
        let err = read_bytes(&bytes[..30], ObjectFormat::Sha1, b"state", 3).unwrap_err();
        assert!(err.contains("cut short"), "{err}");
        let err =
            read_bytes(b"PACK\0\0\0\x02\0\0\0\0", ObjectFormat::Sha1, b"state", 3).unwrap_err();
        assert!(err.contains("DIRC"), "{err}");
        let mut v5 = bytes.clone();
        v5[7] = 5;
        let err = read_bytes(&v5, ObjectFormat::Sha1, b"state", 3).unwrap_err();
        assert!(err.contains("version 5"), "{err}");
        // No index: nothing tracked.
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(
            tracked_below(tmp.path(), ObjectFormat::Sha1, b"state", 3).unwrap(),
            Tracked::default()
        );
    }

    /// The index git itself writes, in each version and object format, and
    /// split: the reader agrees with `git ls-files`.
    #[test]
    fn agrees_with_git_ls_files() {
        use std::process::Command;
        let git = |dir: &Path, args: &[&str]| {
            let out = Command::new("git")
                .arg("-C")
                .arg(dir)
                .args(args)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .output();
            match out {
                Ok(o) if o.status.success() => Some(o.stdout),
                Ok(o) => panic!("git {args:?}: {}", String::from_utf8_lossy(&o.stderr)),
                Err(_) => None,
            }
        };
        let tmp = tempfile::tempdir().unwrap();
        if git(tmp.path(), &["--version"]).is_none() {
            assert!(std::env::var_os("CI").is_none(), "git is needed on CI");
            eprintln!("no git here: the index reader cannot be held to it");
            return;
        }
        for (format, version, split) in [
            ("sha1", "2", false),
            ("sha1", "3", false),
            ("sha1", "4", false),
            ("sha256", "4", false),
            ("sha1", "2", true),
            ("sha1", "4", true),
        ] {
            let repo = tmp.path().join(format!("{format}-{version}-{split}"));
            std::fs::create_dir(&repo).unwrap();
            git(&repo, &["init", "-q", &format!("--object-format={format}")]);
            for rel in [
                "a.txt",
                "state-x/keep",
                "state/pipeline/1.json",
                "state/pipeline/2.json",
                "state/chat.db",
                "state0",
                "zz/state/1.json",
            ] {
                let path = repo.join(rel);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, rel).unwrap();
            }
            git(&repo, &["add", "."]);
            git(&repo, &["update-index", "--index-version", version]);
            if split {
                git(&repo, &["update-index", "--split-index"]);
                // Changes after the split: one removed, one added.
                git(&repo, &["rm", "-q", "--cached", "state/pipeline/2.json"]);
                std::fs::write(repo.join("state/new.json"), "{}").unwrap();
                git(&repo, &["add", "state/new.json"]);
                assert!(has_shared_index(&repo.join(".git")));
            }
            let listed = git(&repo, &["ls-files", "--", "state"]).unwrap();
            let want: Vec<Vec<u8>> = listed
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .map(<[u8]>::to_vec)
                .collect();
            let format = ObjectFormat::from_config(Some(format.as_bytes())).unwrap();
            let got = tracked_below(&repo.join(".git"), format, b"state", 100).unwrap();
            assert_eq!(got.first, want, "{}", repo.display());
            assert_eq!(got.count, want.len(), "{}", repo.display());
            // After git's own fix, nothing.
            git(&repo, &["rm", "-r", "-q", "--cached", "state"]);
            let got = tracked_below(&repo.join(".git"), format, b"state", 100).unwrap();
            assert_eq!(got, Tracked::default(), "{}", repo.display());
        }
    }
}
