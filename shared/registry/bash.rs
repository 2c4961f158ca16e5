//! What a Bash command writes, as far as the registry cares: the files and
//! directories it creates, changes, moves or removes, and the issues it
//! sets with `jkz state set N`.
//!
//! Best effort, by design. A shell command cannot be decided without running
//! it (a variable set by an earlier call, a script file, a program that
//! writes where it likes); this reads the ordinary spellings: quoting,
//! `--`, global flags before a subcommand, `VAR=… cmd`, `env`/`sudo`/
//! `timeout` wrappers, `sh -c '…'` and `eval` (read again, a few levels
//! deep), `$(…)`, redirections (`>`, `>>`, `&>`, `>|`), `cd DIR && …` (the
//! later commands' relative paths follow), `tee`, `cp`/`mv`/`install`/`ln`/
//! `rsync` onto a file or into a directory, `mv` and `rm`/`rmdir`/`unlink`/
//! `shred`/`truncate`/`touch` of their operands, `sed -i`, `perl -i`, `dd
//! of=`, `find … -delete`, `sqlite3 DB 'UPDATE …'`, and inline programs
//! (`python3 -c`, `node -e`, `perl -e`, `ruby -e`, or a heredoc fed to one)
//! that name a path and open it for writing, remove or rename it. Reading
//! (`cat`, `cp FROM elsewhere`, `sqlite3 DB 'SELECT …'`) is no write.
//!
//! The registry's real lock is the writer ([`super::writer`]): this only
//! lets the PreToolUse hook warn the model before it tries.

use std::path::{Component, Path, PathBuf};
use std::sync::LazyLock;

use regex::{Regex, RegexBuilder};

/// What a command writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Write {
    /// `jkz state set N …`: issue N's pipeline state (canonical N).
    StateSet(String),
    /// A file or directory the command creates, changes, moves or removes:
    /// absolute, `.` and `..` removed lexically, links not yet followed. A
    /// part the hook could not expand (`$UNSET`) stays as written.
    Path(PathBuf),
}

/// How deep `sh -c`, `eval`, `$(…)` and inline programs are read again.
const MAX_DEPTH: usize = 4;

/// Commands longer than this are only scanned by patterns, never parsed:
/// a hook answers in milliseconds.
const MAX_PARSED: usize = 256 * 1024;

/// What `command`, run in `cwd`, writes.
pub fn writes(command: &str, cwd: &Path) -> Vec<Write> {
    let mut out = Vec::new();
    analyze(command, Some(cwd.to_path_buf()), 0, &mut out);
    out.dedup();
    out
}

fn analyze(script: &str, cwd: Option<PathBuf>, depth: usize, out: &mut Vec<Write>) {
    if depth > MAX_DEPTH {
        return;
    }
    let lexed = if script.len() > MAX_PARSED {
        None
    } else {
        lex(script)
    };
    let Some(tokens) = lexed else {
        // Unbalanced quotes, or too long: the patterns still see it.
        scan(script, cwd.as_deref(), out);
        return;
    };
    let mut cwd_stack: Vec<Option<PathBuf>> = Vec::new();
    let mut cwd = cwd;
    let mut command = Simple::default();
    for token in tokens {
        match token {
            Token::Word(w) => command.words.push(w),
            Token::Redirect(op, target) => command.redirects.push((op, target)),
            Token::Sep(sep) => {
                simple(&std::mem::take(&mut command), &mut cwd, depth, out);
                match sep {
                    Sep::Open => cwd_stack.push(cwd.clone()),
                    Sep::Close => {
                        if let Some(outer) = cwd_stack.pop() {
                            cwd = outer;
                        }
                    }
                    Sep::Next => {}
                }
            }
        }
    }
    simple(&command, &mut cwd, depth, out);
}

/// A word as the shell would pass it: quotes removed, known variables
/// expanded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Word {
    text: String,
    /// A part could not be expanded (`$UNSET`, `$(…)`): the text holds it as
    /// written.
    unknown: bool,
    /// Unquoted `*`, `?` or `[`.
    glob: bool,
    /// `$(…)` and `` `…` `` bodies inside the word, to read as commands.
    substitutions: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Redirect {
    /// `>`, `>>`, `>|`, `&>`, `&>>`, `<>`, `>&` onto a file.
    Write,
    /// `<`, `<&`, `>&N` (a descriptor), `<<<` with its word.
    Other,
    /// `<<WORD` / `<<-WORD`: the body is the command's input.
    HereDoc,
    /// `<<<WORD`: the word is the command's input.
    HereString,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sep {
    /// `;`, `&&`, `||`, `|`, `&`, a newline.
    Next,
    /// `(`: a subshell; a `cd` inside ends at its `)`.
    Open,
    Close,
}

#[derive(Debug)]
enum Token {
    Word(Word),
    /// A redirection and its target word (for a heredoc: its body).
    Redirect(Redirect, Word),
    Sep(Sep),
}

#[derive(Debug, Default)]
struct Simple {
    words: Vec<Word>,
    redirects: Vec<(Redirect, Word)>,
}

/// The tokens of `script`, or `None` when its quotes do not balance.
fn lex(script: &str) -> Option<Vec<Token>> {
    let chars: Vec<char> = script.chars().collect();
    let mut lexer = Lexer {
        s: &chars,
        i: 0,
        tokens: Vec::new(),
        heredocs: Vec::new(),
        strip_tabs: false,
    };
    lexer.run()?;
    Some(lexer.tokens)
}

struct Lexer<'a> {
    s: &'a [char],
    i: usize,
    tokens: Vec<Token>,
    /// Heredocs whose bodies start after the current line: (token index,
    /// delimiter, strip leading tabs).
    heredocs: Vec<(usize, String, bool)>,
    /// The last heredoc operator was `<<-`.
    strip_tabs: bool,
}

impl Lexer<'_> {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.s.get(self.i + ahead).copied()
    }

    fn starts(&self, text: &str) -> bool {
        text.chars()
            .enumerate()
            .all(|(k, c)| self.peek(k) == Some(c))
    }

    fn run(&mut self) -> Option<()> {
        let mut pending_redirect: Option<Redirect> = None;
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\r' => self.i += 1,
                '\\' if self.peek(1) == Some('\n') => self.i += 2,
                '\n' => {
                    self.i += 1;
                    self.tokens.push(Token::Sep(Sep::Next));
                    self.read_heredoc_bodies();
                }
                '#' => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.i += 1;
                    }
                }
                ';' | '&' | '|' | '(' | ')' if pending_redirect.is_none() => {
                    if c == '&' && self.peek(1) == Some('>') {
                        self.i += if self.starts("&>>") { 3 } else { 2 };
                        pending_redirect = Some(Redirect::Write);
                        continue;
                    }
                    let sep = match c {
                        '(' => Sep::Open,
                        ')' => Sep::Close,
                        _ => Sep::Next,
                    };
                    self.i += 1;
                    // `&&`, `||`, `;;`, `|&`.
                    if matches!(self.peek(0), Some('&' | '|' | ';')) && sep == Sep::Next {
                        self.i += 1;
                    }
                    self.tokens.push(Token::Sep(sep));
                }
                '<' | '>' if pending_redirect.is_none() => {
                    pending_redirect = Some(self.redirect_op());
                }
                _ => {
                    // A descriptor number before a redirection: `2>`.
                    if c.is_ascii_digit() && pending_redirect.is_none() {
                        let mut k = 0;
                        while self.peek(k).is_some_and(|c| c.is_ascii_digit()) {
                            k += 1;
                        }
                        if matches!(self.peek(k), Some('<' | '>')) {
                            self.i += k;
                            continue;
                        }
                    }
                    let word = self.word()?;
                    match pending_redirect.take() {
                        None => self.tokens.push(Token::Word(word)),
                        Some(Redirect::HereDoc) => {
                            let index = self.tokens.len();
                            self.heredocs
                                .push((index, word.text.clone(), self.strip_tabs));
                            self.tokens
                                .push(Token::Redirect(Redirect::HereDoc, Word::default()));
                        }
                        Some(Redirect::Write)
                            if word.text == "-"
                                || word.text.bytes().all(|b| b.is_ascii_digit()) =>
                        {
                            // `>&2`, `>&-`: a descriptor, not a file.
                            self.tokens.push(Token::Redirect(Redirect::Other, word));
                        }
                        Some(op) => self.tokens.push(Token::Redirect(op, word)),
                    }
                }
            }
        }
        Some(())
    }

    /// Reads a redirection operator at `<` or `>`.
    fn redirect_op(&mut self) -> Redirect {
        for (op, kind) in [
            ("<<<", Redirect::HereString),
            ("<<-", Redirect::HereDoc),
            ("<<", Redirect::HereDoc),
            ("<>", Redirect::Write),
            ("<&", Redirect::Other),
            ("<", Redirect::Other),
            (">>", Redirect::Write),
            (">|", Redirect::Write),
            (">&", Redirect::Write),
            (">", Redirect::Write),
        ] {
            if self.starts(op) {
                self.i += op.chars().count();
                self.strip_tabs = op == "<<-";
                return kind;
            }
        }
        unreachable!("called at < or >")
    }

    /// After a newline: the bodies of the heredocs opened on the line just
    /// ended, each up to its delimiter line.
    fn read_heredoc_bodies(&mut self) {
        for (index, delimiter, strip) in std::mem::take(&mut self.heredocs) {
            let mut body = String::new();
            loop {
                let start = self.i;
                while self.peek(0).is_some_and(|c| c != '\n') {
                    self.i += 1;
                }
                let line: String = self.s[start..self.i].iter().collect();
                let at_end = self.peek(0).is_none();
                if self.peek(0) == Some('\n') {
                    self.i += 1;
                }
                let compared = if strip {
                    line.trim_start_matches('\t')
                } else {
                    &line
                };
                if compared == delimiter || at_end && line.is_empty() {
                    break;
                }
                body.push_str(compared);
                body.push('\n');
                if at_end {
                    break;
                }
            }
            if let Some(Token::Redirect(_, word)) = self.tokens.get_mut(index) {
                word.text = body;
            }
        }
    }

    /// One word, up to an unquoted blank or operator.
    fn word(&mut self) -> Option<Word> {
        let mut w = Word::default();
        let at_start = self.i;
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\r' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>' => break,
                '\\' => {
                    match self.peek(1) {
                        Some('\n') => {}
                        Some(next) => w.text.push(next),
                        None => {}
                    }
                    self.i += 2;
                }
                '\'' => {
                    self.i += 1;
                    loop {
                        match self.peek(0)? {
                            '\'' => break,
                            c => w.text.push(c),
                        }
                        self.i += 1;
                    }
                    self.i += 1;
                }
                '"' => {
                    self.i += 1;
                    loop {
                        match self.peek(0)? {
                            '"' => break,
                            '\\' => {
                                match self.peek(1)? {
                                    c @ ('$' | '`' | '"' | '\\') => w.text.push(c),
                                    '\n' => {}
                                    c => {
                                        w.text.push('\\');
                                        w.text.push(c);
                                    }
                                }
                                self.i += 2;
                            }
                            '$' | '`' => self.expansion(&mut w)?,
                            c => {
                                w.text.push(c);
                                self.i += 1;
                            }
                        }
                    }
                    self.i += 1;
                }
                '$' if self.peek(1) == Some('\'') => {
                    self.i += 2;
                    loop {
                        match self.peek(0)? {
                            '\'' => break,
                            '\\' => {
                                let c = self.peek(1)?;
                                w.text.push(match c {
                                    'n' => '\n',
                                    't' => '\t',
                                    other => other,
                                });
                                self.i += 2;
                            }
                            c => {
                                w.text.push(c);
                                self.i += 1;
                            }
                        }
                    }
                    self.i += 1;
                }
                '$' | '`' => self.expansion(&mut w)?,
                '~' if self.i == at_start && matches!(self.peek(1), None | Some('/')) => {
                    match std::env::var("HOME") {
                        Ok(home) if !home.is_empty() => w.text.push_str(&home),
                        _ => {
                            w.text.push('~');
                            w.unknown = true;
                        }
                    }
                    self.i += 1;
                }
                '*' | '?' | '[' => {
                    w.glob = true;
                    w.text.push(c);
                    self.i += 1;
                }
                c => {
                    w.text.push(c);
                    self.i += 1;
                }
            }
        }
        Some(w)
    }

    /// `$NAME`, `${NAME}`, `$(…)`, `$((…))` or `` `…` `` at the cursor.
    fn expansion(&mut self, w: &mut Word) -> Option<()> {
        if self.peek(0) == Some('`') {
            self.i += 1;
            let start = self.i;
            while self.peek(0)? != '`' {
                if self.peek(0) == Some('\\') {
                    self.i += 1;
                }
                self.i += 1;
            }
            w.substitutions
                .push(self.s[start..self.i].iter().collect::<String>());
            self.i += 1;
            w.text.push_str("$(…)");
            w.unknown = true;
            return Some(());
        }
        // At `$`.
        match self.peek(1) {
            Some('(') => {
                let arithmetic = self.peek(2) == Some('(');
                self.i += 2;
                let start = self.i;
                let mut depth = 1;
                while depth > 0 {
                    match self.peek(0)? {
                        '(' => depth += 1,
                        ')' => depth -= 1,
                        '\'' => {
                            self.i += 1;
                            while self.peek(0)? != '\'' {
                                self.i += 1;
                            }
                        }
                        '\\' => self.i += 1,
                        _ => {}
                    }
                    self.i += 1;
                }
                if !arithmetic {
                    w.substitutions
                        .push(self.s[start..self.i - 1].iter().collect::<String>());
                }
                w.text.push_str("$(…)");
                w.unknown = true;
            }
            Some('{') => {
                self.i += 2;
                let start = self.i;
                while self.peek(0)? != '}' {
                    self.i += 1;
                }
                let inner: String = self.s[start..self.i].iter().collect();
                self.i += 1;
                self.variable(&inner, w);
            }
            Some(c) if c == '_' || c.is_ascii_alphabetic() => {
                self.i += 1;
                let start = self.i;
                while self
                    .peek(0)
                    .is_some_and(|c| c == '_' || c.is_ascii_alphanumeric())
                {
                    self.i += 1;
                }
                let name: String = self.s[start..self.i].iter().collect();
                self.variable(&name, w);
            }
            _ => {
                // `$?`, `$1`, a lone `$`.
                w.text.push('$');
                self.i += 1;
            }
        }
        Some(())
    }

    /// A variable's value from this process's environment (the hook runs
    /// with the client's, as the Bash tool's commands do), else its name as
    /// written.
    fn variable(&mut self, name: &str, w: &mut Word) {
        let simple =
            !name.is_empty() && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric());
        match std::env::var(name).ok().filter(|_| simple) {
            Some(value) => w.text.push_str(&value),
            None => {
                w.text.push('$');
                w.text.push_str(name);
                w.unknown = true;
            }
        }
    }
}

/// Commands that run the rest of their arguments as a command, with the
/// options of theirs that take a value.
const WRAPPERS: &[(&str, &[&str])] = &[
    ("command", &[]),
    ("builtin", &[]),
    ("exec", &["-a"]),
    ("nohup", &[]),
    ("time", &[]),
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
    ("stdbuf", &["-i", "-o", "-e"]),
    ("timeout", &["-s", "-k", "--signal", "--kill-after"]),
    ("chronic", &[]),
    ("unbuffer", &[]),
    (
        "xargs",
        &[
            "-I",
            "-i",
            "-n",
            "-P",
            "-d",
            "-a",
            "-E",
            "-L",
            "-l",
            "-s",
            "--delimiter",
            "--arg-file",
        ],
    ),
];

/// Shell words that may start a simple command without being one.
const KEYWORDS: &[&str] = &[
    "!", "{", "}", "if", "then", "elif", "else", "fi", "do", "done", "while", "until",
];

/// What one simple command writes; a `cd` moves `cwd` for the commands after.
fn simple(command: &Simple, cwd: &mut Option<PathBuf>, depth: usize, out: &mut Vec<Write>) {
    let mut stdin_text: Option<&str> = None;
    for (op, target) in &command.redirects {
        match op {
            Redirect::Write => out.push(Write::Path(path_of(target, cwd.as_deref()))),
            Redirect::HereDoc | Redirect::HereString => stdin_text = Some(&target.text),
            Redirect::Other => {}
        }
        for body in &target.substitutions {
            analyze(body, cwd.clone(), depth + 1, out);
        }
    }
    for w in &command.words {
        for body in &w.substitutions {
            analyze(body, cwd.clone(), depth + 1, out);
        }
    }
    let words = strip_prefix(&command.words);
    let Some((first, args)) = words.split_first() else {
        return;
    };
    let name = first.text.rsplit('/').next().unwrap_or_default();
    let here = cwd.as_deref();
    let path = |w: &Word| Write::Path(path_of(w, here));
    match name {
        "cd" | "pushd" => {
            let target = args
                .iter()
                .find(|w| !w.text.starts_with('-') || w.text == "-");
            *cwd = match target {
                None => std::env::var_os("HOME").map(PathBuf::from),
                Some(w) if w.unknown || w.text == "-" => None,
                Some(w) => match path_of(w, here) {
                    p if p.is_absolute() => Some(p),
                    _ => None,
                },
            };
        }
        "popd" => *cwd = None,
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "ash" | "mksh" | "busybox" => {
            let mut script = None;
            let mut takes_script = false;
            let mut iter = args.iter();
            while let Some(w) = iter.next() {
                if takes_script {
                    script = Some(w.text.clone());
                    break;
                }
                let t = w.text.as_str();
                if matches!(t, "-o" | "+o" | "-O" | "+O") {
                    iter.next();
                } else if let Some(flags) = t.strip_prefix('-').or_else(|| t.strip_prefix('+')) {
                    takes_script = !flags.starts_with('-') && flags.contains('c');
                } else if t != "sh" || name != "busybox" {
                    // A script file: not read.
                    break;
                }
            }
            match (script, stdin_text) {
                (Some(script), _) => analyze(&script, cwd.clone(), depth + 1, out),
                (None, Some(text)) => analyze(text, cwd.clone(), depth + 1, out),
                (None, None) => {}
            }
        }
        "eval" => {
            let joined: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
            analyze(&joined.join(" "), cwd.clone(), depth + 1, out);
        }
        "jkz" => {
            if let Some(issue) = jkz_state_set(args) {
                out.push(Write::StateSet(issue));
            }
        }
        "tee" | "sponge" => out.extend(operands(args, &[]).into_iter().map(path)),
        "rm" | "rmdir" | "unlink" | "shred" | "srm" => out.extend(
            operands(args, &["-n", "-s", "--iterations"])
                .into_iter()
                .map(path),
        ),
        "truncate" => out.extend(
            operands(args, &["-s", "-r", "--size", "--reference"])
                .into_iter()
                .map(path),
        ),
        "touch" => out.extend(
            operands(args, &["-r", "-d", "-t", "--reference", "--date"])
                .into_iter()
                .map(path),
        ),
        "cp" | "install" | "ln" | "rsync" | "mv" => copy(name == "mv", args, here, out),
        "sed" => {
            let in_place = args.iter().any(|w| {
                w.text.starts_with("--in-place")
                    || (w.text.starts_with('-')
                        && !w.text.starts_with("--")
                        && w.text[1..].starts_with(|c: char| c.is_ascii_alphabetic())
                        && w.text[1..].contains('i'))
            });
            if in_place {
                let scripted = args.iter().any(|w| {
                    matches!(w.text.as_str(), "-e" | "-f")
                        || w.text.starts_with("--expression")
                        || w.text.starts_with("--file")
                });
                let files = operands(
                    args,
                    &["-e", "-f", "-l", "--expression", "--file", "--line-length"],
                );
                let skip = usize::from(!scripted);
                out.extend(files.into_iter().skip(skip).map(path));
            }
        }
        "dd" => {
            for w in args {
                if let Some(file) = w.text.strip_prefix("of=") {
                    let target = Word {
                        text: file.to_string(),
                        ..w.clone()
                    };
                    out.push(path(&target));
                }
            }
        }
        "find" => {
            let deletes = args.iter().any(|w| w.text == "-delete")
                || args.windows(2).any(|p| {
                    matches!(p[0].text.as_str(), "-exec" | "-execdir" | "-ok")
                        && matches!(
                            p[1].text.rsplit('/').next(),
                            Some("rm" | "mv" | "shred" | "truncate")
                        )
                });
            // `-name '*.o'` cannot reach a pipeline file or the registry.
            let names: Vec<&str> = args
                .windows(2)
                .filter(|p| matches!(p[0].text.as_str(), "-name" | "-iname"))
                .map(|p| p[1].text.as_str())
                .collect();
            let reaches = names.is_empty()
                || names.iter().any(|n| {
                    [
                        "chat.db",
                        "pipeline",
                        "state",
                        "1.json",
                        "1-compact-plan.md",
                    ]
                    .iter()
                    .any(|guarded| crate::glob::glob_match(n, guarded))
                        || n.ends_with(".json")
                        || n.contains('[')
                });
            if deletes && reaches {
                let starts = args.iter().take_while(|w| {
                    !w.text.starts_with('-') && !matches!(w.text.as_str(), "(" | "!")
                });
                out.extend(starts.map(path));
            }
        }
        "sqlite3" => {
            let positional = operands(
                args,
                &["-cmd", "-separator", "-newline", "-nullvalue", "-init"],
            );
            let read_only = args.iter().any(|w| w.text == "-readonly");
            if let Some((db, sql)) = positional.split_first() {
                let sql: Vec<&str> = sql.iter().map(|w| w.text.as_str()).collect();
                let sql = if sql.is_empty() {
                    stdin_text.map(str::to_string)
                } else {
                    Some(sql.join(" "))
                };
                let writes = sql.is_none_or(|sql| SQL_WRITE.is_match(&sql));
                if writes && !read_only {
                    out.push(path(db));
                }
            }
        }
        _ => {
            if let Some(code) = inline_code(name, args, stdin_text) {
                program_writes(&code, cwd.clone(), depth, out);
            }
            if name == "perl" {
                let in_place = args.iter().any(|w| {
                    let t = w.text.as_str();
                    t.starts_with('-')
                        && !t.starts_with("--")
                        && !t.starts_with("-M")
                        && !t.starts_with("-m")
                        && !t.starts_with("-I")
                        && t[1..]
                            .chars()
                            .take_while(char::is_ascii_alphabetic)
                            .any(|c| c == 'i')
                });
                if in_place {
                    let files = operands(args, &["-e", "-E", "-I", "-M", "-m"]);
                    let scripted = args
                        .iter()
                        .any(|w| w.text.contains('e') && w.text.starts_with('-'));
                    out.extend(files.into_iter().skip(usize::from(!scripted)).map(path));
                }
            }
        }
    }
}

/// The words after assignments (`A=1`), keywords (`if`, `then`, `!`) and
/// wrappers (`env -u X`, `sudo -u u`, `timeout 5`, `xargs -n1`).
fn strip_prefix(words: &[Word]) -> &[Word] {
    let mut rest = words;
    loop {
        let Some((first, after)) = rest.split_first() else {
            return rest;
        };
        let t = first.text.as_str();
        let assignment = t.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty()
                && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
                && !name.starts_with(|c: char| c.is_ascii_digit())
        });
        if assignment || KEYWORDS.contains(&t) {
            rest = after;
            continue;
        }
        let name = t.rsplit('/').next().unwrap_or_default();
        let Some((wrapper, valued)) = WRAPPERS.iter().find(|(w, _)| *w == name) else {
            return rest;
        };
        rest = after;
        // The wrapper's own options (and, for `timeout`, its duration).
        let mut duration_left = *wrapper == "timeout";
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
            if duration_left {
                duration_left = false;
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

/// `cp`/`mv`/`install`/`ln`/`rsync`: the destination (a file, or each
/// source's name inside a destination directory) is written; `mv` also
/// removes its sources. A source of `cp` is only read.
fn copy(moves: bool, args: &[Word], cwd: Option<&Path>, out: &mut Vec<Write>) {
    let mut target_dir: Option<Word> = None;
    let mut no_target_dir = false;
    let mut rest = Vec::new();
    let mut options = true;
    let mut iter = args.iter();
    while let Some(w) = iter.next() {
        let t = w.text.as_str();
        if options && t == "--" {
            options = false;
        } else if options && (t == "-t" || t == "--target-directory") {
            target_dir = iter.next().cloned();
        } else if let Some(dir) = t.strip_prefix("--target-directory=").filter(|_| options) {
            target_dir = Some(Word {
                text: dir.to_string(),
                ..w.clone()
            });
        } else if options && (t == "-T" || t == "--no-target-directory") {
            no_target_dir = true;
        } else if options && t.starts_with('-') && t.len() > 1 {
            // Other options; `-S SUFFIX` (backups) takes a value.
            if t == "-S" || t == "--suffix" || t == "-e" {
                iter.next();
            }
        } else {
            rest.push(w);
        }
    }
    if let Some(dir) = target_dir {
        out.extend(copy_into(&rest, &dir, moves, cwd));
        return;
    }
    let Some((dest, sources)) = rest.split_last() else {
        return;
    };
    if sources.is_empty() {
        return;
    }
    let dest_path = path_of(dest, cwd);
    let into_dir = !no_target_dir
        && (sources.len() > 1
            || dest.text.ends_with('/')
            || crate::resolved_path::resolve(&dest_path).is_dir());
    if into_dir {
        out.extend(copy_into(sources, dest, moves, cwd));
    } else {
        out.push(Write::Path(dest_path));
        if moves {
            out.extend(sources.iter().map(|s| Write::Path(path_of(s, cwd))));
        }
    }
}

/// The writes of copying (or moving) `sources` into the directory `dir`.
fn copy_into(sources: &[&Word], dir: &Word, moves: bool, cwd: Option<&Path>) -> Vec<Write> {
    let dir = path_of(dir, cwd);
    let mut out = Vec::new();
    for s in sources {
        let from = path_of(s, cwd);
        match from.file_name() {
            Some(name) => out.push(Write::Path(dir.join(name))),
            // `cp -r x/. dir`: everything in dir may change.
            None => out.push(Write::Path(dir.clone())),
        }
        if moves {
            out.push(Write::Path(from));
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

/// The program an interpreter runs inline (`python3 -c CODE`, `node -e`,
/// `perl -e`, `ruby -e`, `php -r`), or reads from a heredoc.
fn inline_code(name: &str, args: &[Word], stdin_text: Option<&str>) -> Option<String> {
    let flags: &[&str] = if name.starts_with("python") || name.starts_with("pypy") {
        &["-c"]
    } else if matches!(name, "node" | "nodejs" | "deno" | "bun") {
        &["-e", "--eval", "-p", "--print", "eval"]
    } else if matches!(name, "perl" | "ruby") {
        &["-e", "-E"]
    } else if name == "php" {
        &["-r"]
    } else {
        return None;
    };
    let mut codes = Vec::new();
    let mut iter = args.iter();
    while let Some(w) = iter.next() {
        let t = w.text.as_str();
        if flags.contains(&t)
            || (t.starts_with('-')
                && !t.starts_with("--")
                && t.ends_with('e')
                && flags.contains(&"-e"))
        {
            if let Some(code) = iter.next() {
                codes.push(code.text.clone());
            }
        }
    }
    if codes.is_empty() {
        // `python3 - <<EOF`, `python3 <<EOF`: the program is the input.
        let script_file = args.iter().any(|w| !w.text.starts_with('-'));
        if !script_file {
            codes.extend(stdin_text.map(str::to_string));
        }
    }
    (!codes.is_empty()).then(|| codes.join("\n"))
}

/// A string literal in a program.
static LITERAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#""((?:[^"\\\n]|\\.)*)"|'((?:[^'\\\n]|\\.)*)'"#).expect("a valid pattern")
});

/// A call that opens a file for writing, removes, renames or replaces one.
static PROGRAM_WRITE: LazyLock<Regex> = LazyLock::new(|| {
    RegexBuilder::new(
        r#"open\s*\([^)]*['"][rwax]*[wax+][bt]*['"]|\bmode\s*=\s*['"][rwax]*[wax+]|\.write|write_text|write_bytes|writeFile|appendFile|unlink|remove|rename|replace|rmtree|rmSync|\brm\b|truncate|copyfile|copy2?\s*\(|copyFile|\bmove\s*\(|\bdump\s*\(|File\.write|File\.delete|\bsystem\s*\(|popen|subprocess|execSync|spawnSync|\bexec\s*\(|\bsh\s*\("#,
    )
    .build()
    .expect("a valid pattern")
});

/// SQL that changes a database.
static SQL_WRITE: LazyLock<Regex> = LazyLock::new(|| {
    RegexBuilder::new(r"\b(insert|update|delete|replace|drop|alter|create|vacuum|reindex|attach|pragma\s+\w+\s*=|\.restore|\.import)\b")
        .case_insensitive(true)
        .build()
        .expect("a valid pattern")
});

/// An inline program's writes: when it writes at all, every string literal
/// naming a path is taken for a write; every literal is also read as a shell
/// command (`os.system("…")`, `subprocess.run("…", shell=True)`).
fn program_writes(code: &str, cwd: Option<PathBuf>, depth: usize, out: &mut Vec<Write>) {
    if !PROGRAM_WRITE.is_match(code) {
        return;
    }
    for c in LITERAL.captures_iter(code) {
        let Some(text) = c.get(1).or_else(|| c.get(2)).map(|m| m.as_str()) else {
            continue;
        };
        if text.is_empty() {
            continue;
        }
        if !text.contains(char::is_whitespace) {
            // Only what looks like a path: `'w'`, `'{}'` are not files.
            let path_like = text.contains('/')
                || text.starts_with(crate::state_dir::layout::CHAT_DB)
                || text.starts_with(|c: char| c.is_ascii_digit())
                    && (text.ends_with(".json") || text.contains('-'));
            if !path_like {
                continue;
            }
            let word = Word {
                text: text.to_string(),
                ..Word::default()
            };
            out.push(Write::Path(path_of(&word, cwd.as_deref())));
        } else {
            analyze(text, cwd.clone(), depth + 1, out);
        }
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
        let word = Word {
            text: c[1].to_string(),
            ..Word::default()
        };
        out.push(Write::Path(path_of(&word, cwd)));
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
mod tests {
    use super::*;
    use proptest::strategy::Strategy;

    fn paths(cmd: &str) -> Vec<String> {
        writes(cmd, Path::new("/p"))
            .into_iter()
            .map(|w| match w {
                Write::Path(p) => p.display().to_string(),
                Write::StateSet(n) => format!("set {n}"),
            })
            .collect()
    }

    #[test]
    fn ordinary_spellings_of_jkz_state_set() {
        for cmd in [
            "jkz state set 42 current_phase building",
            "jkz state set \"42\" current_phase building",
            "jkz state set '042' a b",
            "jkz state set -- 42 a b",
            "jkz state --state-dir state set 42 a b",
            "jkz --state-dir=state state set --json 42 a '[1]'",
            "/usr/local/bin/jkz state set 42 a b",
            "FOO=1 env -u X timeout 5 jkz state set 42 a b",
            "sh -c 'jkz state set 42 a b'",
            "bash -lc \"cd /tmp && jkz state set 42 a b\"",
            "eval 'jkz state set 42 a b'",
            "echo $(jkz state set 42 a b)",
            "if true; then jkz state set 42 a b; fi",
        ] {
            assert_eq!(paths(cmd), ["set 42"], "{cmd}");
        }
        for cmd in [
            "jkz state get 42 current_phase",
            "jkz state set --help",
            "echo jkz state set 42",
            "jkz state show 42",
        ] {
            assert!(paths(cmd).is_empty(), "{cmd}: {:?}", paths(cmd));
        }
    }

    #[test]
    fn redirections_copies_and_removals_name_what_they_write() {
        for (cmd, want) in [
            (
                "echo {} > state/pipeline/./42.json",
                vec!["/p/state/pipeline/42.json"],
            ),
            (
                "cd state/pipeline && echo {} > 42.json",
                vec!["/p/state/pipeline/42.json"],
            ),
            ("(cd /x; echo) > out", vec!["/p/out"]),
            (
                "echo a | tee -a state/pipeline/42.json",
                vec!["/p/state/pipeline/42.json"],
            ),
            (
                "cp /tmp/x state/pipeline/42.json",
                vec!["/p/state/pipeline/42.json"],
            ),
            (
                "cp -t state/pipeline /tmp/42.json",
                vec!["/p/state/pipeline/42.json"],
            ),
            (
                "mv state/pipeline/42.json /tmp/x",
                vec!["/tmp/x", "/p/state/pipeline/42.json"],
            ),
            ("rm -rf state/pipeline", vec!["/p/state/pipeline"]),
            ("rm -f -- state/chat.db*", vec!["/p/state/chat.db*"]),
            (
                "sed -i s/a/b/ state/pipeline/45.json",
                vec!["/p/state/pipeline/45.json"],
            ),
            ("dd if=/dev/zero of=state/chat.db", vec!["/p/state/chat.db"]),
            (
                "echo x >> ~/notes 2>&1",
                vec![&format!(
                    "{}/notes",
                    std::env::var("HOME").unwrap_or_default()
                )],
            ),
            (
                "python3 -c \"open('state/pipeline/42.json','w').write('{}')\"",
                vec!["/p/state/pipeline/42.json"],
            ),
            (
                "sqlite3 state/chat.db 'DELETE FROM claims'",
                vec!["/p/state/chat.db"],
            ),
            (
                "find state/pipeline -name '*.json' -delete",
                vec!["/p/state/pipeline"],
            ),
            (
                "bash <<'EOF'\nrm state/pipeline/42.json\nEOF\n",
                vec!["/p/state/pipeline/42.json"],
            ),
        ] {
            assert_eq!(paths(cmd), want, "{cmd}");
        }
        for cmd in [
            "cat state/pipeline/42.json",
            "cp state/pipeline/42.json /tmp/bak",
            "jq . state/pipeline/42.json 2>/dev/null | head",
            "sed -n p state/pipeline/42.json",
            "python3 -c \"print(open('state/pipeline/42.json').read())\"",
            "sqlite3 state/chat.db 'SELECT * FROM claims'",
            "cargo test 2>&1 | tail -5",
            "cat > /dev/null <<EOF\nrm state/pipeline/42.json\nEOF\n",
        ] {
            let got: Vec<String> = paths(cmd)
                .into_iter()
                .filter(|p| p != "/tmp/bak" && p != "/dev/null")
                .collect();
            assert!(got.is_empty(), "{cmd}: {got:?}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// Any text, shell-like or not, is read without a panic: a hook
        /// that panics guards nothing.
        #[test]
        fn any_command_is_read_without_a_panic(
            parts in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::sample::select(vec![
                        " ", "'", "\"", "\\", "$(", ")", "(", "`", "${", "}", "$", "<<", "<<-", "EOF",
                        "\n", ">", ">>", "&>", "2>&1", "|", "&&", ";", "#", "~", "*", "[", "]", "-c",
                        "sh", "jkz", "state", "set", "42", "--", "cd", "..", "/", "state/pipeline/42.json",
                        "cp", "mv", "rm", "-rf", "tee", "python3", "open('x','w')", "sqlite3", "chat.db",
                        "find", "-delete", "sed", "-i", "eval", "env", "timeout", "$'", "é",
                    ]).prop_map(String::from),
                    ".{0,4}",
                ],
                0..40,
            )
        ) {
            let command: String = parts.concat();
            let _ = writes(&command, Path::new("/p"));
        }
    }

    #[test]
    fn an_unbalanced_command_is_still_scanned() {
        assert_eq!(paths("jkz state set 42 a 'b"), ["set 42"],);
        assert_eq!(
            paths("echo \"x > state/pipeline/43.json"),
            ["/p/state/pipeline/43.json"]
        );
    }
}
