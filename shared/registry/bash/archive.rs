//! Archives and compressors: `tar -x` writes into its directory (`-C DIR`,
//! else where it runs), the members it names or whatever the archive
//! holds; `tar -c`/`-r`/`-u` writes the archive file; `unzip` writes into
//! `-d DIR`; `gzip FILE` and its kin replace FILE with a compressed one.

use std::path::Path;

use super::expand::Word;
use super::{Change, Reader};

impl Reader {
    /// `tar`, in the bundled (`tar xzf A -C D`), short (`-x -C D`) and long
    /// (`--extract --directory=D`) spellings.
    pub(super) fn tar(&mut self, args: &[Word], cwd: Option<&Path>) {
        let mut t = Tar::default();
        let mut i = 0;
        while let Some(w) = args.get(i) {
            let text = w.text.as_str();
            if i == 0 && !text.is_empty() && text.chars().all(|c| c.is_ascii_alphabetic()) {
                // Old style: each letter's value follows, in order.
                let mut next = 1;
                for c in text.chars() {
                    if t.letter(c, args.get(next)) {
                        next += 1;
                    }
                }
                i = next;
                continue;
            }
            if let Some(long) = text.strip_prefix("--") {
                let (key, attached) = match long.split_once('=') {
                    Some((k, v)) => (k, Some(Word::literal(v))),
                    None => (long, None),
                };
                let separate = attached.is_none() && LONG_VALUED.contains(&key);
                let value =
                    attached.or_else(|| separate.then(|| args.get(i + 1).cloned()).flatten());
                t.long(key, value);
                i += 1 + usize::from(separate);
                continue;
            }
            if let Some(flags) = text.strip_prefix('-').filter(|f| !f.is_empty()) {
                let chars: Vec<char> = flags.chars().collect();
                let mut consumed = 0;
                for (k, c) in chars.iter().enumerate() {
                    if takes_value(*c) {
                        // `-fFILE`, `-CDIR`: the value attached; else the
                        // next word.
                        let attached: String = chars[k + 1..].iter().collect();
                        if attached.is_empty() {
                            t.letter(*c, args.get(i + 1));
                            consumed = 1;
                        } else {
                            t.letter(*c, Some(&Word::literal(attached)));
                        }
                        break;
                    }
                    t.letter(*c, None);
                }
                i += 1 + consumed;
                continue;
            }
            t.members.push(w.clone());
            i += 1;
        }
        if t.create {
            if let Some(a) = t.archive.filter(|a| a.text != "-") {
                self.write(&a, Change::Write, "tar", cwd);
            }
            if t.removes {
                for m in &t.members {
                    self.write(m, Change::Remove, "tar --remove-files", cwd);
                }
            }
            return;
        }
        if !t.extract || t.to_stdout {
            return;
        }
        let into = t.dir.unwrap_or_else(|| Word::literal("."));
        self.write_members(&into, &t.members, "tar -x", cwd);
    }

    /// What an archive extracted into `into` writes: the members named, or
    /// anything in `into`.
    fn write_members(
        &mut self,
        into: &Word,
        members: &[Word],
        by: &'static str,
        cwd: Option<&Path>,
    ) {
        if members.is_empty() {
            self.write(into, Change::Write, by, cwd);
        }
        for m in members {
            let target = Word {
                text: format!("{}/{}", into.text.trim_end_matches('/'), m.text),
                unknown_at: into
                    .unknown_at
                    .or(m.unknown_at.map(|at| at + into.text.len() + 1)),
                glob: into.glob || m.glob || by == "unzip",
                ..Word::default()
            };
            self.write(&target, Change::Write, by, cwd);
        }
    }

    /// `unzip [OPTIONS] ARCHIVE [MEMBER…] [-x XMEMBER…] [-d DIR]`.
    pub(super) fn unzip(&mut self, args: &[Word], cwd: Option<&Path>) {
        let mut dir: Option<Word> = None;
        let mut operands = Vec::new();
        let mut excluding = false;
        let mut iter = args.iter();
        while let Some(w) = iter.next() {
            let t = w.text.as_str();
            match t {
                "-d" => dir = iter.next().cloned(),
                "-x" => excluding = true,
                "-P" => {
                    iter.next();
                }
                // Listing, testing, printing to stdout: nothing written.
                "-l" | "-v" | "-t" | "-p" | "-z" | "-Z" | "-c" => return,
                t if t.starts_with("-d") && t.len() > 2 => {
                    dir = Some(Word::literal(&t[2..]));
                }
                t if t.starts_with('-') && t.len() > 1 => {
                    if t[1..].contains(['l', 't', 'p', 'c']) && !t[1..].contains('o') {
                        return;
                    }
                }
                _ if excluding => {}
                _ => operands.push(w),
            }
        }
        let into = dir.unwrap_or_else(|| Word::literal("."));
        let members: Vec<Word> = operands
            .get(1..)
            .unwrap_or_default()
            .iter()
            .map(|w| (*w).clone())
            .collect();
        self.write_members(&into, &members, "unzip", cwd);
    }

    /// `gzip FILE`, `xz -d FILE.xz`, …: FILE replaced by its (de)compressed
    /// twin, unless kept (`-k`) or sent to stdout (`-c`).
    pub(super) fn compressor(&mut self, name: &str, args: &[Word], cwd: Option<&Path>) {
        let flag = |c: char, long: &str| {
            args.iter().any(|w| {
                w.text == long
                    || w.text
                        .strip_prefix('-')
                        .filter(|f| !f.starts_with('-'))
                        .is_some_and(|f| f.contains(c))
            })
        };
        if flag('c', "--stdout") || flag('t', "--test") || flag('l', "--list") {
            return;
        }
        let keeps = flag('k', "--keep") || (name.contains("zstd") && !flag('\0', "--rm"));
        let by = "a compressor";
        for w in args.iter().filter(|w| !w.text.starts_with('-')) {
            if !keeps {
                self.write(w, Change::Remove, by, cwd);
            }
            // The twin: written next to it, its name told by the suffix.
            let twin = match w.text.rsplit_once('.') {
                Some((stem, _))
                    if name.starts_with("un") || name == "gunzip" || flag('d', "--decompress") =>
                {
                    stem.to_string()
                }
                _ => format!("{}.z", w.text),
            };
            let twin = Word {
                text: twin,
                ..w.clone()
            };
            self.write(&twin, Change::Write, by, cwd);
        }
    }
}

/// What one `tar` command line says.
#[derive(Default)]
struct Tar {
    extract: bool,
    create: bool,
    to_stdout: bool,
    removes: bool,
    archive: Option<Word>,
    dir: Option<Word>,
    members: Vec<Word>,
}

/// Long options that take the next word as their value when not given
/// one with `=`.
const LONG_VALUED: &[&str] = &[
    "file",
    "directory",
    "files-from",
    "exclude-from",
    "use-compress-program",
    "transform",
    "xform",
    "owner",
    "group",
    "mode",
    "format",
    "blocking-factor",
    "newer",
    "after-date",
    "label",
    "exclude",
    "to-command",
    "info-script",
    "new-volume-script",
    "rsh-command",
    "tape-length",
    "suffix",
    "backup",
    "record-size",
];

/// Short option letters that take a value.
fn takes_value(c: char) -> bool {
    matches!(
        c,
        'f' | 'C' | 'b' | 'K' | 'N' | 'g' | 'V' | 'T' | 'X' | 'H' | 'I' | 'L'
    )
}

impl Tar {
    /// The short option `c`, with `value` when it takes one; true when it
    /// did.
    fn letter(&mut self, c: char, value: Option<&Word>) -> bool {
        match c {
            'x' => self.extract = true,
            'c' | 'r' | 'u' | 'A' => self.create = true,
            'O' => self.to_stdout = true,
            'f' => self.archive = value.cloned(),
            'C' => self.dir = value.cloned(),
            _ => {}
        }
        takes_value(c)
    }

    /// The long option `key` with its `value`.
    fn long(&mut self, key: &str, value: Option<Word>) {
        match key {
            "extract" | "get" => self.extract = true,
            "create" | "append" | "update" | "catenate" | "concatenate" | "delete" => {
                self.create = true
            }
            "to-stdout" | "to-command" => self.to_stdout = true,
            "remove-files" => self.removes = true,
            "file" => self.archive = value,
            "directory" => self.dir = value,
            _ => {}
        }
    }
}
