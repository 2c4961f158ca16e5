//! What a Bash command writes, as far as the registry cares: the files and
//! directories it creates, changes, removes or moves away (and how), the
//! issues it sets with `jkz state set N`, and the writes it makes where the
//! hook cannot tell (a script from elsewhere, a variable from the
//! environment).
//!
//! The command is read the way the shell reads it, without running
//! anything: quoting, `--`, `VAR=… cmd`, wrappers (`env`, `sudo`,
//! `timeout`, …), variables assigned earlier on the same command line
//! (`f=…; echo x > $f`, `export`, `for f in …`), brace expansion, what a
//! literal `$(…)` or `` `…` `` prints (`$(printf …)`, `$(pwd)`), scripts
//! read again a few levels deep (`sh -c`, `bash -s`, `eval`, `source` or
//! `.` of `/dev/stdin` or `<(…)`, a literal script piped or fed into a
//! shell, heredocs), `xargs` (with the words piped into it), `find`
//! (`-delete`, `-exec`, what it prints), `cd DIR && …` (later relative paths
//! follow), redirections, and the programs that write files: see
//! [`programs`], [`archive`], [`sql`], [`git`], [`inline`]. Reading (`cat`,
//! `cp FROM elsewhere`, `sqlite3 DB 'SELECT …'`) is no write.
//!
//! Where a write's target cannot be known it is a [`Write::Unknown`], with
//! the directory it is known to lie in when there is one: the guard asks
//! the user about it when another chat's claim could be there. A program
//! that writes where it likes (`make`, `./x.sh`, a script file a shell
//! runs) is seen only as far as its command line says.
//!
//! Bounded: scripts are read again at most [`MAX_DEPTH`] levels deep, at
//! most [`BUDGET`] bytes of script in all, one word expands to at most
//! [`expand::MAX_FIELDS`] words. No process is started.
//!
//! The registry's real lock is the writer ([`super::writer`]): this only
//! lets the PreToolUse hook stop the model before it tries.

mod archive;
mod expand;
mod find;
mod git;
mod inline;
mod lex;
mod output;
mod programs;
mod shells;
mod sql;

use std::path::{Component, Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

use expand::{expand, expand_one, Scope, Value, Word};
use lex::{lex, Atom, RawWord, Redirect, Sep, Token};
use output::Stream;

/// What a command writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Write {
    /// `jkz state set N …`: issue N's pipeline state (canonical N).
    StateSet(String),
    /// A path the command changes: absolute (relative only when the
    /// directory it ran in is not known), `.` and `..` removed lexically,
    /// links not yet followed; a pattern when it holds wildcards (`**`:
    /// any number of directories). A part the hook could not expand
    /// (`$UNSET`) stays as written.
    Path {
        path: PathBuf,
        change: Change,
        /// `path` is a pattern (unquoted wildcards, or what `find` matches).
        glob: bool,
        /// What a pattern leaves out (`find -prune`, `git clean -e`).
        kept: Vec<Kept>,
        /// The command that does it (`rm`, `git clean -X`, `a redirection`),
        /// for the reason the model reads.
        by: &'static str,
    },
    /// A write whose target the hook cannot know: `what`, as written, and
    /// the directory it lies in when that much is known (`None`: anywhere).
    Unknown {
        what: String,
        within: Option<PathBuf>,
    },
}

/// What a command does to a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Writes it: creates, overwrites, truncates or replaces a file (a
    /// redirection, `cp`/`mv`/`install`/`ln`/`rsync` onto it, `dd of=`,
    /// `truncate`, `tee`); for a directory, writes files into it (`tar -C`,
    /// `unzip -d`).
    Write,
    /// Changes it in place, or its attributes (`sed -i`, `patch`, `ed`,
    /// `vim`, `sqlite3` SQL, `chmod`, `chattr`, `touch`).
    Edit,
    /// Removes it, or moves it away, with everything below it (`rm -r`,
    /// `mv` of the source, `find -delete`, `git stash --all`).
    Remove,
    /// `git clean`: removes the untracked files below it, never going into
    /// another repository (a linked worktree); with `ignored` (`-x`, `-X`)
    /// the ignored ones too.
    Clean { ignored: bool },
}

/// A pattern of paths a removal leaves alone, below the written path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kept {
    pub pattern: String,
    /// Matched against the path below the written one (`-path ./state`,
    /// `-e /state`), else against each name (`-name state`, `-e state/`).
    pub anchored: bool,
    /// Everything below a match is left alone too (`-prune`, `git clean
    /// -e`), not only the match (`-not -path`).
    pub subtree: bool,
}

/// How deep `sh -c`, `eval`, `$(…)`, piped scripts and inline programs are
/// read again.
pub const MAX_DEPTH: usize = 4;

/// Commands longer than this are only scanned by patterns, never parsed:
/// a hook answers in milliseconds.
const MAX_PARSED: usize = 256 * 1024;

/// The bytes of script one command may have the hook read in all, its
/// nested scripts included.
pub const BUDGET: usize = 1024 * 1024;

/// What `command`, run in `cwd`, writes, each write once, in order.
pub fn writes(command: &str, cwd: &Path) -> Vec<Write> {
    let mut reader = Reader {
        out: Vec::new(),
        budget: BUDGET,
    };
    let mut scope = Scope::at(Some(cwd.to_path_buf()));
    reader.script(command, &mut scope, 0, Stream::Empty);
    let mut out: Vec<Write> = Vec::with_capacity(reader.out.len());
    for w in reader.out {
        if !out.contains(&w) {
            out.push(w);
        }
    }
    out
}

/// Reads a command line and what it runs, collecting the writes.
struct Reader {
    out: Vec<Write>,
    /// Bytes of script it may still read.
    budget: usize,
}

/// One simple command as written: its words and redirections.
#[derive(Debug, Default)]
struct Simple {
    words: Vec<RawWord>,
    redirects: Vec<(Redirect, Option<u32>, RawWord)>,
}

/// A compound command being read: what it prints so far goes to whatever
/// follows its end (`( … ) | sh`, `{ …; } | sh`, `for …; do …; done | sh`).
struct Frame {
    outer: Stream,
    /// `(`: a subshell, whose `cd` and assignments end with it.
    subshell: Option<Scope>,
}

/// Words that open a compound command, and the words that close them.
const OPENERS: [&str; 4] = ["{", "do", "if", "case"];
const CLOSERS: [&str; 4] = ["}", "done", "fi", "esac"];

impl Reader {
    /// Reads `text` run in `scope` with `stdin`, at `depth`; returns what it
    /// prints.
    fn script(&mut self, text: &str, scope: &mut Scope, depth: usize, stdin: Stream) -> Stream {
        if depth > MAX_DEPTH {
            self.unknown(None, "a script nested deeper than the hook reads".into());
            return Stream::Unknown("a script nested too deep".into());
        }
        if text.len() > MAX_PARSED.min(self.budget) {
            // Too long to parse: the patterns still see it.
            scan(text, scope.cwd.as_deref(), &mut self.out);
            self.unknown(None, "a command longer than the hook reads".into());
            return Stream::Unknown("a command too long to read".into());
        }
        self.budget -= text.len();
        let Some(tokens) = lex(text) else {
            // Unbalanced quotes: the shell runs none of it, the patterns
            // still look.
            scan(text, scope.cwd.as_deref(), &mut self.out);
            return Stream::Unknown("a command that does not parse".into());
        };
        let mut frames: Vec<Frame> = Vec::new();
        let mut finished: Option<Stream> = None;
        let mut command = Simple::default();
        let mut piped: Option<Stream> = None;
        let mut printed_all = Stream::Empty;
        let mut tokens = tokens.into_iter().peekable();
        loop {
            let token = tokens.next();
            let sep = match token {
                Some(Token::Word(w)) => {
                    command.words.push(w);
                    continue;
                }
                Some(Token::Redirect(op, fd, w)) => {
                    command.redirects.push((op, fd, w));
                    continue;
                }
                Some(Token::Sep(sep)) => Some(sep),
                None => None,
            };
            let mut cmd = std::mem::take(&mut command);
            // Compound commands: `{ … }`, `do … done`, `if … fi`, `case … esac`.
            let first = cmd.words.first().and_then(RawWord::literal);
            if first.as_deref().is_some_and(|w| OPENERS.contains(&w)) {
                frames.push(Frame {
                    outer: std::mem::replace(&mut printed_all, Stream::Empty),
                    subshell: None,
                });
                if first.as_deref() == Some("{") {
                    cmd.words.remove(0);
                }
            }
            let closes =
                cmd.words.len() == 1 && first.as_deref().is_some_and(|w| CLOSERS.contains(&w));
            let input = piped.take().unwrap_or_else(|| stdin.clone());
            let printed = if closes {
                let group = match frames.pop() {
                    Some(frame) if frame.subshell.is_none() => {
                        std::mem::replace(&mut printed_all, frame.outer)
                    }
                    Some(frame) => {
                        frames.push(frame);
                        Stream::Empty
                    }
                    None => Stream::Empty,
                };
                let redirected = self.redirections(&cmd, scope, depth).1;
                if redirected {
                    Stream::Empty
                } else {
                    group
                }
            } else if cmd.words.is_empty() && cmd.redirects.is_empty() {
                finished.take().unwrap_or(Stream::Empty)
            } else if cmd.words.is_empty() && finished.is_some() {
                // `( … ) > file`: the group's output goes to the file.
                finished = None;
                self.redirections(&cmd, scope, depth);
                Stream::Empty
            } else {
                finished = None;
                self.simple(&cmd, scope, input, depth)
            };
            match sep {
                Some(Sep::Pipe) => piped = Some(printed),
                _ => printed_all = std::mem::replace(&mut printed_all, Stream::Empty).then(printed),
            }
            match sep {
                Some(Sep::Open) => frames.push(Frame {
                    outer: std::mem::replace(&mut printed_all, Stream::Empty),
                    subshell: Some(scope.clone()),
                }),
                Some(Sep::Close) => {
                    if let Some(Frame {
                        outer,
                        subshell: Some(saved),
                    }) = frames.pop_if(|f| f.subshell.is_some())
                    {
                        *scope = saved;
                        finished = Some(std::mem::replace(&mut printed_all, outer));
                    }
                }
                Some(Sep::Next | Sep::Pipe) => {}
                None => break,
            }
        }
        // Unclosed frames print into what encloses them.
        while let Some(frame) = frames.pop() {
            printed_all = frame.outer.then(printed_all);
        }
        printed_all
    }

    /// The writes of `cmd`'s redirections; returns its input (a file it
    /// reads, a heredoc, a here-string), when it has one, and whether its
    /// output goes to a file.
    fn redirections(
        &mut self,
        cmd: &Simple,
        scope: &Scope,
        depth: usize,
    ) -> (Option<Stream>, bool) {
        let mut input = None;
        let mut to_file = false;
        for (op, fd, target) in &cmd.redirects {
            match op {
                Redirect::Write => {
                    for w in self.expand(target, scope, depth) {
                        self.write(&w, Change::Write, "a redirection", scope.cwd.as_deref());
                    }
                    to_file |= fd.is_none_or(|fd| fd == 1);
                }
                Redirect::Read if fd.is_none_or(|fd| fd == 0) => {
                    let words = self.expand(target, scope, depth);
                    input = Some(match words.as_slice() {
                        [w] if w.text == "/dev/null" => Stream::Empty,
                        [w] if w.feeds.is_some() => w.feeds.clone().unwrap_or(Stream::Empty),
                        [w] => Stream::Unknown(format!("the file {}", w.text)),
                        _ => Stream::Unknown("an input the hook cannot name".into()),
                    });
                }
                Redirect::HereDoc => {
                    let w = self.expand_one(target, scope, depth);
                    input = Some(if w.unknown() {
                        Stream::Unknown("a heredoc the hook cannot expand".into())
                    } else {
                        Stream::Text(w.text)
                    });
                }
                Redirect::HereString => {
                    let w = self.expand_one(target, scope, depth);
                    input = Some(if w.unknown() {
                        Stream::Unknown(format!("the text {}", w.text))
                    } else {
                        Stream::Text(format!("{}\n", w.text))
                    });
                }
                Redirect::Read | Redirect::Descriptor => {}
            }
        }
        (input, to_file)
    }

    /// Reads one simple command run with `stdin` (what a pipe feeds it);
    /// returns what it prints.
    fn simple(&mut self, cmd: &Simple, scope: &mut Scope, stdin: Stream, depth: usize) -> Stream {
        let assigned = cmd
            .words
            .iter()
            .take_while(|w| assignment(w).is_some())
            .count();
        let mut env = Vec::new();
        for w in &cmd.words[..assigned] {
            let Some((name, append, raw)) = assignment(w) else {
                continue;
            };
            let value = self.value(&raw, scope, depth);
            let value = match (append, scope.lookup(&name), value) {
                (false, _, v) => v,
                (true, Value::Text(a), Value::Text(b)) => Value::Text(a + &b),
                (true, Value::Unset, v) => v,
                (true, _, _) => Value::Unknown,
            };
            env.push((name, value));
        }
        let (input, to_file) = self.redirections(cmd, scope, depth);
        let stdin = input.unwrap_or(stdin);
        let words: Vec<Word> = cmd.words[assigned..]
            .iter()
            .flat_map(|w| self.expand(w, scope, depth))
            .collect();
        if words.is_empty() {
            for (name, value) in env {
                scope.vars.insert(name, value);
            }
            return Stream::Empty;
        }
        // `A=x cmd`: the command's environment, which the scripts it runs
        // see; it ends with the command.
        let saved: Vec<(String, Option<Value>)> = env
            .into_iter()
            .map(|(name, value)| {
                let before = scope.vars.insert(name.clone(), value);
                (name, before)
            })
            .collect();
        let printed = self.run(&words, stdin, scope, depth);
        for (name, before) in saved {
            match before {
                Some(v) => scope.vars.insert(name, v),
                None => scope.vars.remove(&name),
            };
        }
        if to_file {
            Stream::Empty
        } else {
            printed
        }
    }

    /// Runs the expanded command `words` with `stdin`: the writes of the
    /// program it names; returns what it prints.
    fn run(&mut self, words: &[Word], stdin: Stream, scope: &mut Scope, depth: usize) -> Stream {
        let words = strip_prefix(words);
        let Some((first, args)) = words.split_first() else {
            return Stream::Empty;
        };
        if first.unknown() {
            self.unknown(None, format!("the command {}", first.text));
            return Stream::Unknown(format!("the command {}", first.text));
        }
        let name = first.text.rsplit('/').next().unwrap_or_default();
        let cwd = scope.cwd.clone();
        let here = cwd.as_deref();
        let printed = match name {
            "cd" | "pushd" => {
                let target = args
                    .iter()
                    .find(|w| !w.text.starts_with('-') || w.text == "-");
                scope.cwd = match target {
                    None => std::env::var_os("HOME").map(PathBuf::from),
                    Some(w) if w.unknown() || w.text == "-" => None,
                    Some(w) => Some(path_of(w, here)).filter(|p| p.is_absolute()),
                };
                Some(Stream::Empty)
            }
            "popd" => {
                scope.cwd = None;
                Some(Stream::Empty)
            }
            "export" | "declare" | "typeset" | "local" | "readonly" => {
                for w in args.iter().filter(|w| !w.text.starts_with('-')) {
                    if let Some((name, value)) = w.text.split_once('=') {
                        let value = if w.unknown_at.is_some_and(|at| at > name.len()) {
                            Value::Unknown
                        } else {
                            Value::Text(value.to_string())
                        };
                        scope.vars.insert(name.to_string(), value);
                    }
                }
                Some(Stream::Empty)
            }
            "unset" => {
                for w in args.iter().filter(|w| !w.text.starts_with('-')) {
                    scope.vars.insert(w.text.clone(), Value::Unset);
                }
                Some(Stream::Empty)
            }
            "read" | "mapfile" | "readarray" => {
                for w in args.iter().filter(|w| !w.text.starts_with('-')) {
                    scope.vars.insert(w.text.clone(), Value::Unknown);
                }
                Some(Stream::Empty)
            }
            "for" | "select" => {
                if let [var, in_word, values @ ..] = args {
                    let known = in_word.text == "in" && !values.iter().any(Word::unknown);
                    let value = if known {
                        Value::Fields(values.to_vec())
                    } else {
                        Value::Unknown
                    };
                    scope.vars.insert(var.text.clone(), value);
                } else if let [var] = args {
                    scope.vars.insert(var.text.clone(), Value::Unknown);
                }
                Some(Stream::Empty)
            }
            "printf" if args.first().is_some_and(|w| w.text == "-v") => {
                if let [_, var, rest @ ..] = args {
                    let texts: Vec<&str> = rest.iter().map(|w| w.text.as_str()).collect();
                    let value = match output::printf(&texts) {
                        Some(text) if !rest.iter().any(Word::unknown) => Value::Text(text),
                        _ => Value::Unknown,
                    };
                    scope.vars.insert(var.text.clone(), value);
                }
                Some(Stream::Empty)
            }
            "jkz" => {
                if let Some(issue) = jkz_state_set(args) {
                    self.out.push(Write::StateSet(issue));
                }
                None
            }
            "sh" | "bash" | "dash" | "zsh" | "ksh" | "ash" | "mksh" | "busybox" | "su" => {
                Some(self.shell(name, args, &stdin, scope, depth))
            }
            "source" | "." => Some(self.source(args, &stdin, scope, depth)),
            "eval" => Some(self.eval(args, scope, depth)),
            "xargs" => Some(self.xargs(args, &stdin, scope, depth)),
            "watch" => Some(self.watch(args, scope, depth)),
            "find" => Some(self.find(args, scope, depth)),
            "git" => self.git(args, &stdin, scope),
            "sqlite3" => {
                self.sqlite3(args, &stdin, scope, depth);
                None
            }
            "tar" | "bsdtar" | "gtar" => {
                self.tar(args, here);
                None
            }
            "unzip" => {
                self.unzip(args, here);
                None
            }
            "gzip" | "gunzip" | "bzip2" | "bunzip2" | "xz" | "unxz" | "lzma" | "unlzma"
            | "zstd" | "unzstd" | "lz4" | "compress" | "uncompress" => {
                self.compressor(name, args, here);
                None
            }
            _ => self.program(name, args, &stdin, scope, depth),
        };
        printed
            .or_else(|| output::of(name, args, &stdin, scope.cwd.as_deref()))
            .unwrap_or_else(|| Stream::Unknown(format!("the output of {name}")))
    }

    /// The words `raw` expands to in `scope`; the `$(…)` in it are read as
    /// scripts of their own (in a subshell).
    fn expand(&mut self, raw: &RawWord, scope: &Scope, depth: usize) -> Vec<Word> {
        let mut run = |body: &str| self.script(body, &mut scope.clone(), depth + 1, Stream::Empty);
        expand(raw, scope, &mut run)
    }

    fn expand_one(&mut self, raw: &RawWord, scope: &Scope, depth: usize) -> Word {
        let mut run = |body: &str| self.script(body, &mut scope.clone(), depth + 1, Stream::Empty);
        expand_one(raw, scope, &mut run)
    }

    /// An assignment's value.
    fn value(&mut self, raw: &RawWord, scope: &Scope, depth: usize) -> Value {
        let w = self.expand_one(raw, scope, depth);
        if w.unknown() {
            Value::Unknown
        } else {
            Value::Text(w.text)
        }
    }

    /// `w`, changed by `by` (`change`), seen from `cwd`. A word the hook
    /// could not fully expand is also a write it cannot name, within the
    /// directory its known part names.
    fn write(&mut self, w: &Word, change: Change, by: &'static str, cwd: Option<&Path>) {
        self.out.push(Write::Path {
            path: path_of(w, cwd),
            change,
            glob: w.glob,
            kept: w.kept.clone(),
            by,
        });
        let relative_in_unknown = cwd.is_none() && !w.text.starts_with('/');
        if w.unknown() || relative_in_unknown {
            let within = match w.unknown_at {
                Some(at) => known_dir(&w.text, at, cwd),
                None => None,
            };
            self.unknown(within, w.text.clone());
        }
    }

    fn unknown(&mut self, within: Option<PathBuf>, what: String) {
        self.out.push(Write::Unknown { what, within });
    }
}

/// The directory the known start of `text` (before byte `at`) names, seen
/// from `cwd`: `None` when the unknown part could lead anywhere (it starts
/// the word, or `..` follows it).
fn known_dir(text: &str, at: usize, cwd: Option<&Path>) -> Option<PathBuf> {
    let (known, unknown) = text.split_at(at.min(text.len()));
    if known.is_empty() || unknown.split('/').any(|p| p == "..") {
        return None;
    }
    let dir = match known.rfind('/') {
        Some(k) => &known[..=k],
        None => "",
    };
    let word = Word::literal(if dir.is_empty() { "." } else { dir });
    let path = path_of(&word, cwd);
    path.is_absolute().then_some(path)
}

/// `NAME=value` or `NAME+=value` as written (the name unquoted): the name,
/// whether it appends, and the value's atoms.
fn assignment(w: &RawWord) -> Option<(String, bool, RawWord)> {
    let mut name = String::new();
    for (k, a) in w.atoms.iter().enumerate() {
        match a {
            Atom::Char {
                c: '=',
                quoted: false,
            } if !name.is_empty() => {
                let append = name.ends_with('+');
                let name = name.trim_end_matches('+').to_string();
                let valid = !name.is_empty()
                    && !name.starts_with(|c: char| c.is_ascii_digit())
                    && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric());
                return valid.then(|| {
                    (
                        name,
                        append,
                        RawWord {
                            atoms: w.atoms[k + 1..].to_vec(),
                        },
                    )
                });
            }
            Atom::Char { c, quoted: false }
                if *c == '_' || *c == '+' || c.is_ascii_alphanumeric() =>
            {
                name.push(*c)
            }
            _ => return None,
        }
    }
    None
}

/// Commands that run the rest of their arguments as a command, with the
/// options of theirs that take a value.
const WRAPPERS: &[(&str, &[&str])] = &[
    ("command", &[]),
    ("builtin", &[]),
    ("exec", &["-a"]),
    ("nohup", &[]),
    ("time", &[]),
    ("setsid", &[]),
    (
        "sudo",
        &[
            "-u", "-g", "-C", "-D", "-h", "-p", "-R", "-r", "-t", "-T", "-U",
        ],
    ),
    ("doas", &["-u", "-C"]),
    (
        "env",
        &["-u", "-C", "-S", "--unset", "--chdir", "--split-string"],
    ),
    ("nice", &["-n", "--adjustment"]),
    ("ionice", &["-c", "-n", "-p", "-P", "-u"]),
    ("taskset", &[]),
    ("stdbuf", &["-i", "-o", "-e"]),
    ("timeout", &["-s", "-k", "--signal", "--kill-after"]),
    ("chronic", &[]),
    ("unbuffer", &[]),
    ("fakeroot", &[]),
];

/// Shell words that may start a simple command without being one.
const KEYWORDS: &[&str] = &[
    "!", "{", "}", "if", "then", "elif", "else", "fi", "do", "done", "while", "until", "case",
    "esac", "function",
];

/// The words after keywords (`if`, `then`, `!`) and wrappers (`env -u X`,
/// `sudo -u u`, `timeout 5`).
fn strip_prefix(words: &[Word]) -> &[Word] {
    let mut rest = words;
    loop {
        let Some((first, after)) = rest.split_first() else {
            return rest;
        };
        let t = first.text.as_str();
        if KEYWORDS.contains(&t) && !first.unknown() {
            rest = after;
            continue;
        }
        let name = t.rsplit('/').next().unwrap_or_default();
        let Some((wrapper, valued)) = WRAPPERS.iter().find(|(w, _)| *w == name) else {
            return rest;
        };
        rest = after;
        // The wrapper's own options (and, for `timeout`, its duration;
        // for `taskset`, its mask).
        let mut operand_left = matches!(*wrapper, "timeout" | "taskset");
        while let Some((w, after)) = rest.split_first() {
            let t = w.text.as_str();
            if t == "--" {
                rest = after;
                break;
            }
            if t.starts_with('-') && t.len() > 1 {
                rest = after;
                if valued.contains(&t) {
                    rest = rest.get(1..).unwrap_or_default();
                }
                continue;
            }
            if *wrapper == "env" && t.contains('=') {
                rest = after;
                continue;
            }
            if operand_left {
                operand_left = false;
                rest = after;
                continue;
            }
            break;
        }
    }
}

/// The operands of a command: its arguments that are not options (a `--`
/// ends the options); `valued` options take the next word as their value.
fn operands<'a>(args: &'a [Word], valued: &[&str]) -> Vec<&'a Word> {
    let mut out = Vec::new();
    let mut options = true;
    let mut skip_next = false;
    for w in args {
        if skip_next {
            skip_next = false;
            continue;
        }
        let t = w.text.as_str();
        if options && t == "--" {
            options = false;
        } else if options && t.starts_with('-') && t.len() > 1 {
            skip_next = valued.contains(&t);
        } else {
            out.push(w);
        }
    }
    out
}

/// `jkz [GLOBAL…] state [GLOBAL…] set [OPTIONS…] [--] N …`: the canonical N.
fn jkz_state_set(args: &[Word]) -> Option<String> {
    // Global options may come anywhere before the issue; `--state-dir`
    // takes a value.
    let mut positional = Vec::new();
    let mut options = true;
    let mut iter = args.iter();
    while let Some(w) = iter.next() {
        let t = w.text.as_str();
        if options && t == "--" {
            options = false;
        } else if options && t == "--state-dir" {
            iter.next();
        } else if options && t.starts_with('-') && t.len() > 1 {
            if matches!(t, "-h" | "--help" | "-V" | "--version") {
                return None;
            }
        } else {
            positional.push(w);
        }
    }
    match positional.as_slice() {
        [state, set, issue, ..] if state.text == "state" && set.text == "set" => {
            crate::pipeline::IssueNumber::parse(issue.text.trim())
                .ok()
                .map(|n| n.as_str().to_string())
        }
        _ => None,
    }
}

/// `jkz … state set N` anywhere in a text, for what could not be parsed.
static STATE_SET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?:^|[\s;&|(`'"])(?:\S*/)?jkz\s(?:[^;&|\n]*?\s)?state\s(?:[^;&|\n]*?\s)?set\s+(?:--\s+)?['"]?0*([0-9]{1,20})\b"#)
        .expect("a valid pattern")
});

/// A redirection or `tee` into `…/pipeline/N.json` (or a companion), or
/// into `…/chat.db`, for what could not be parsed.
static REDIRECT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?:>>?|\btee(?:\s+-a)?)\s*['"]?(\S*(?:\bpipeline/0*[0-9]{1,20}(?:\.json|-)|chat\.db)[^\s'";&|]*)"#)
        .expect("a valid pattern")
});

/// The patterns over a command that could not be parsed.
fn scan(text: &str, cwd: Option<&Path>, out: &mut Vec<Write>) {
    for c in STATE_SET.captures_iter(text) {
        let digits = c[1].trim_start_matches('0');
        if !digits.is_empty() {
            out.push(Write::StateSet(digits.to_string()));
        }
    }
    for c in REDIRECT.captures_iter(text) {
        out.push(Write::Path {
            path: path_of(&Word::literal(&c[1]), cwd),
            change: Change::Write,
            glob: false,
            kept: Vec::new(),
            by: "a redirection",
        });
    }
}

/// `w` as a path: absolute against `cwd` (kept relative when `cwd` is not
/// known), with `.` and `..` removed lexically.
fn path_of(w: &Word, cwd: Option<&Path>) -> PathBuf {
    let raw = Path::new(&w.text);
    let joined = match cwd {
        Some(cwd) if raw.is_relative() => cwd.join(raw),
        _ => raw.to_path_buf(),
    };
    let mut clean = PathBuf::new();
    for part in joined.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                // Above the root is the root; above a relative start stays.
                if !clean.pop() && clean.as_os_str().is_empty() {
                    clean.push("..");
                }
            }
            other => clean.push(other),
        }
    }
    clean
}

#[cfg(test)]
mod tests;
