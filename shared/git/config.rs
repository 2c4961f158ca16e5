//! A repository's own git config file, read the way git reads it, for the
//! values jkz needs on a hook's path: `core.bare`, `core.worktree`,
//! `jkz.stateDir` (see [`crate::state_dir::root`]), `jkz.registryUrl`
//! (see [`crate::team::config`]) and `extensions.objectFormat` (see
//! [`crate::git::index`]).
//!
//! Why not `git config`: a hook answers in milliseconds, and a `git`
//! process costs one or two of them; the file is small and its syntax is
//! fixed. The parser follows git's own (`config.c`: sections, subsections,
//! case-insensitive names, quoting, the four escapes, line continuations,
//! `#` and `;` comments, a key without `=` meaning true); a line git
//! refuses is refused here too, with its number. The test
//! `agrees_with_git_config` holds it to `git config --get` on the same
//! bytes.
//!
//! Only the repository's own file is read (`<common git dir>/config`):
//! `include.path` and the user's or system's files are not followed. They
//! could name a bare repository or a work tree too, but jkz writes
//! `jkz.stateDir` into the repository's own file (`jkz attach`), and that
//! is where it looks.
//!
//! Bounded: at most [`MAX_CONFIG`] bytes are read (a larger file is an
//! error, never half-read), regular files only, never blocking on a FIFO.

use std::io;
use std::path::{Path, PathBuf};

/// The most bytes of a config file read. Real ones are a few KiB; one with
/// thousands of branches or remotes stays well under this.
pub const MAX_CONFIG: u64 = 1024 * 1024;

/// What jkz reads of a repository's config. `None`: not set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepoConfig {
    /// `core.bare`.
    pub bare: Option<bool>,
    /// `core.worktree`, as written (absolute, or relative to the git dir);
    /// empty when the key has no value.
    pub worktree: Option<Vec<u8>>,
    /// `jkz.stateDir`, as written (`jkz attach` writes an absolute path);
    /// empty when the key has no value.
    pub state_dir: Option<Vec<u8>>,
    /// `jkz.registryUrl`: the team registry `jkz install --registry` records
    /// (see [`crate::team::config`]).
    pub registry_url: Option<Vec<u8>>,
    /// `extensions.objectFormat`: the size of the object ids in the index
    /// ([`crate::git::index`]).
    pub object_format: Option<Vec<u8>>,
}

/// Reads `<git_dir>/config`. A missing file is an empty config.
pub fn read(git_dir: &Path) -> Result<RepoConfig, String> {
    let path = git_dir.join("config");
    match crate::user_file::read_user_file_bounded(&path, MAX_CONFIG) {
        Ok(bytes) => parse(&bytes).map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(RepoConfig::default()),
        Err(e) => Err(format!("reading {}: {e}", path.display())),
    }
}

/// The config file of `git_dir`.
pub fn path(git_dir: &Path) -> PathBuf {
    git_dir.join("config")
}

/// Parses a config file's bytes (see the module documentation).
pub fn parse(bytes: &[u8]) -> Result<RepoConfig, String> {
    let mut config = RepoConfig::default();
    let mut bare = None;
    for entry in entries(bytes)? {
        match entry.name.as_slice() {
            b"core.bare" => bare = Some((entry.line, entry.value)),
            // A path without a value is git's empty string.
            b"core.worktree" => config.worktree = Some(entry.value.unwrap_or_default()),
            b"jkz.statedir" => config.state_dir = Some(entry.value.unwrap_or_default()),
            b"jkz.registryurl" => config.registry_url = Some(entry.value.unwrap_or_default()),
            b"extensions.objectformat" => {
                config.object_format = Some(entry.value.unwrap_or_default())
            }
            _ => {}
        }
    }
    if let Some((line, value)) = bare {
        config.bare = Some(boolean(value.as_deref()).ok_or_else(|| {
            format!("bad boolean value for core.bare on line {line} (git refuses it too)")
        })?);
    }
    Ok(config)
}

/// git's booleans: no value is true; `true`/`yes`/`on`/`1` and
/// `false`/`no`/`off`/`0`/empty (any case); another integer is true when
/// not zero. Anything else is not a boolean.
fn boolean(value: Option<&[u8]>) -> Option<bool> {
    let Some(v) = value else { return Some(true) };
    let v = String::from_utf8_lossy(v).to_ascii_lowercase();
    match v.as_str() {
        "true" | "yes" | "on" => Some(true),
        "false" | "no" | "off" | "" => Some(false),
        other => other.parse::<i64>().ok().map(|n| n != 0),
    }
}

/// One `name = value` of a config file.
#[derive(Debug, PartialEq, Eq)]
struct Entry {
    /// `section.key` or `section.subsection.key`: section and key
    /// lowercased, the subsection as written.
    name: Vec<u8>,
    /// `None` for a key without `=` (git's "true").
    value: Option<Vec<u8>>,
    line: usize,
}

/// The bytes of a config file, one character at a time as git's
/// `get_next_char` gives them: `\r\n` is `\n`, the end is a final `\n`.
struct Chars<'a> {
    bytes: &'a [u8],
    at: usize,
    eof: bool,
    line: usize,
}

impl Chars<'_> {
    fn next(&mut self) -> u8 {
        let Some(&c) = self.bytes.get(self.at) else {
            self.eof = true;
            return b'\n';
        };
        self.at += 1;
        let c = if c == b'\r' && self.bytes.get(self.at) == Some(&b'\n') {
            self.at += 1;
            b'\n'
        } else {
            c
        };
        if c == b'\n' {
            self.line += 1;
        }
        c
    }
}

fn is_space(c: u8) -> bool {
    // C's isspace in git's sane_ctype: space, \t, \n, \v, \f, \r.
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn is_key_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-'
}

/// Every entry, in order; the first line git would refuse is an error.
fn entries(bytes: &[u8]) -> Result<Vec<Entry>, String> {
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    let mut chars = Chars {
        bytes,
        at: 0,
        eof: false,
        line: 1,
    };
    let mut out = Vec::new();
    let mut section: Option<Vec<u8>> = None;
    let mut comment = false;
    let bad = |chars: &Chars| Err(format!("bad config line {}", chars.line));
    loop {
        let c = chars.next();
        if c == b'\n' {
            if chars.eof {
                return Ok(out);
            }
            comment = false;
            continue;
        }
        if comment || is_space(c) {
            continue;
        }
        if c == b'#' || c == b';' {
            comment = true;
            continue;
        }
        if c == b'[' {
            match section_name(&mut chars) {
                Some(name) if !name.is_empty() => section = Some(name),
                _ => return bad(&chars),
            }
            continue;
        }
        if !c.is_ascii_alphabetic() {
            return bad(&chars);
        }
        // A key before any section is accepted (git reads it as a name
        // without a section, which no lookup asks for).
        let line = chars.line;
        let mut name = match &section {
            Some(base) => {
                let mut name = base.clone();
                name.push(b'.');
                name
            }
            None => Vec::new(),
        };
        name.push(c.to_ascii_lowercase());
        let mut c;
        loop {
            c = chars.next();
            if chars.eof || !is_key_char(c) {
                break;
            }
            name.push(c.to_ascii_lowercase());
        }
        while c == b' ' || c == b'\t' {
            c = chars.next();
        }
        let value = if c == b'\n' {
            None
        } else if c == b'=' {
            match value(&mut chars) {
                Some(v) => Some(v),
                None => return bad(&chars),
            }
        } else {
            return bad(&chars);
        };
        out.push(Entry { name, value, line });
    }
}

/// After `[`: the section's name (lowercased), with `.subsection` when
/// given as `[section "subsection"]`; `None` for a malformed header.
fn section_name(chars: &mut Chars) -> Option<Vec<u8>> {
    let mut name = Vec::new();
    loop {
        let c = chars.next();
        if chars.eof {
            return None;
        }
        if c == b']' {
            return Some(name);
        }
        if is_space(c) {
            return extended_section(chars, name, c);
        }
        if !is_key_char(c) && c != b'.' {
            return None;
        }
        name.push(c.to_ascii_lowercase());
    }
}

/// `[section "subsection"]`: the subsection is kept as written (`\x` is x).
fn extended_section(chars: &mut Chars, mut name: Vec<u8>, mut c: u8) -> Option<Vec<u8>> {
    loop {
        if c == b'\n' {
            return None;
        }
        c = chars.next();
        if !is_space(c) {
            break;
        }
    }
    if c != b'"' {
        return None;
    }
    name.push(b'.');
    loop {
        let mut c = chars.next();
        if c == b'\n' {
            return None;
        }
        if c == b'"' {
            break;
        }
        if c == b'\\' {
            c = chars.next();
            if c == b'\n' {
                return None;
            }
        }
        name.push(c);
    }
    (chars.next() == b']').then_some(name)
}

/// A value after `=`, as git's `parse_value` reads it; `None` when git
/// refuses it (an unknown escape, a quote left open at the line's end).
fn value(chars: &mut Chars) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let (mut quote, mut comment) = (false, false);
    let mut trim_len = 0;
    loop {
        let mut c = chars.next();
        if c == b'\n' {
            if quote {
                return None;
            }
            if trim_len > 0 {
                out.truncate(trim_len);
            }
            return Some(out);
        }
        if comment {
            continue;
        }
        if is_space(c) && !quote {
            if trim_len == 0 {
                trim_len = out.len();
            }
            if !out.is_empty() {
                out.push(c);
            }
            continue;
        }
        if !quote && (c == b';' || c == b'#') {
            comment = true;
            continue;
        }
        trim_len = 0;
        if c == b'\\' {
            c = match chars.next() {
                b'\n' => continue,
                b't' => b'\t',
                b'b' => 0x08,
                b'n' => b'\n',
                c @ (b'\\' | b'"') => c,
                _ => return None,
            };
            out.push(c);
            continue;
        }
        if c == b'"' {
            quote = !quote;
            continue;
        }
        out.push(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn reads_the_three_values() {
        let c = parse(
            b"[core]\n\trepositoryformatversion = 0\n\tbare = true\n\
              [jkz]\n\tstateDir = /repo/state\n[remote \"origin\"]\n\turl = x\n",
        )
        .unwrap();
        assert_eq!(c.bare, Some(true));
        assert_eq!(c.state_dir.as_deref(), Some(&b"/repo/state"[..]));
        assert_eq!(c.worktree, None);
    }

    #[test]
    fn quoting_escapes_comments_and_case() {
        let c = parse(
            b"[JKZ] STATEDIR = \"/a b/\\\"q\\\"\" ; a comment\n[Core] Bare\n worktree=../w # c\n",
        )
        .unwrap();
        assert_eq!(c.state_dir.as_deref(), Some(&b"/a b/\"q\""[..]));
        assert_eq!(c.bare, Some(true));
        assert_eq!(c.worktree.as_deref(), Some(&b"../w"[..]));
        // A subsection is another section: [jkz "x"] is not [jkz].
        let c = parse(b"[jkz \"x\"]\nstateDir = /no\n[jkz.y]\nstateDir = /no\n").unwrap();
        assert_eq!(c.state_dir, None);
        // The last value wins.
        let c = parse(b"[jkz]\nstateDir = /a\n[jkz]\nstateDir = /b\n").unwrap();
        assert_eq!(c.state_dir.as_deref(), Some(&b"/b"[..]));
    }

    #[test]
    fn what_git_refuses_is_refused_with_its_line() {
        for (bytes, line) in [
            (&b"[core]\n=v\n"[..], 2),
            (b"[core\nbare = true\n", 2),
            (b"[core]\nbare = \"open\n", 3),
            (b"[core]\nbare = \\q\n", 2),
            (b"[core]\nbare = maybe\n", 2),
        ] {
            let err = parse(bytes).unwrap_err();
            assert!(err.contains(&format!("line {line}")), "{err}");
        }
    }

    /// `git config --get KEY` on `file`: `Ok(value)` (`<unset>` when
    /// not set), `Err` when git refuses the file.
    fn git_get(file: &Path, key: &str) -> Result<Vec<u8>, ()> {
        let out = Command::new("git")
            .args(["config", "--no-includes", "--file"])
            .arg(file)
            .args(["--get", key])
            .output()
            .expect("git is needed for this test");
        match out.status.code() {
            Some(0) => {
                let mut v = out.stdout;
                v.pop(); // the newline git adds
                Ok(v)
            }
            Some(1) => Ok(b"<unset>".to_vec()),
            _ => Err(()),
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(96))]
        /// The oracle: `git config --get` on the same bytes (git is needed
        /// by the layout tests anyway; without it this test fails).
        #[test]
        fn agrees_with_git_config(
            lines in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::strategy::Just("[jkz]".to_string()),
                    proptest::strategy::Just("[JKZ]".to_string()),
                    proptest::strategy::Just("[jkz \"sub\"]".to_string()),
                    proptest::strategy::Just("[core]".to_string()),
                    "(statedir|stateDir|bare|other)[ \t]{0,2}(=[ \t]{0,2}[a-z/ \"#;\\\\tnb]{0,12})?[ \t]{0,2}",
                    "[#;][ a-z]{0,5}",
                    proptest::strategy::Just(String::new()),
                ],
                0..8,
            ),
            crlf in proptest::bool::ANY,
        ) {
            let text = lines.join(if crlf { "\r\n" } else { "\n" });
            let tmp = tempfile::tempdir().unwrap();
            let file = tmp.path().join("config");
            std::fs::write(&file, &text).unwrap();
            let ours = parse(text.as_bytes());
            match (ours, git_get(&file, "jkz.stateDir")) {
                (Ok(c), Ok(theirs)) => {
                    let ours = c.state_dir.unwrap_or_else(|| b"<unset>".to_vec());
                    proptest::prop_assert_eq!(
                        String::from_utf8_lossy(&ours),
                        String::from_utf8_lossy(&theirs),
                        "{:?}", text
                    );
                }
                (Err(_), Err(())) => {}
                // core.bare's value is only checked when asked for: git
                // reads a file with a bad boolean until core.bare is read.
                (Err(e), Ok(_)) if e.contains("core.bare") => {}
                (ours, theirs) => proptest::prop_assert!(
                    false, "{:?}: ours {:?}, git {:?}", text, ours, theirs
                ),
            }
        }
    }
}
