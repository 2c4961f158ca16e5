//! Commands that run other commands: shells (`sh -c`, `bash -s`, a script
//! on the input, a script file), `source` and `.`, `eval`, `xargs`,
//! `watch`. A literal script is read again as a command line of its own;
//! one the hook cannot read (a file, a download, a variable) is a write it
//! cannot name.

use super::expand::{Scope, Word};
use super::output::Stream;
use super::{Reader, MAX_DEPTH};

/// At most this many items `xargs` reads from its input.
const MAX_ITEMS: usize = 256;

impl Reader {
    /// `sh`, `bash`, … (`busybox sh`, `su -c`): the script it runs.
    pub(super) fn shell(
        &mut self,
        name: &str,
        args: &[Word],
        stdin: &Stream,
        scope: &mut Scope,
        depth: usize,
    ) -> Stream {
        let mut args = args;
        if name == "busybox" {
            match args.split_first() {
                Some((applet, rest)) if matches!(applet.text.as_str(), "sh" | "ash" | "bash") => {
                    args = rest;
                }
                // `busybox rm …`: the applet is the command.
                Some(_) => return self.run(args, stdin.clone(), scope, depth + 1),
                None => return Stream::Empty,
            }
        }
        let mut command = false;
        let mut from_input = false;
        let mut operand: Option<&Word> = None;
        let mut iter = args.iter();
        while let Some(w) = iter.next() {
            let t = w.text.as_str();
            if name == "su" {
                // `su [-] [-c CMD] [USER]`.
                if t == "-c" || t == "--command" {
                    command = true;
                    operand = iter.next();
                    break;
                }
                if let Some(cmd) = t.strip_prefix("--command=") {
                    let script = Word::literal(cmd);
                    return self.shell_script(&script, &[], stdin, scope, depth);
                }
                continue;
            }
            if t == "--" || t == "-" {
                operand = iter.next();
                break;
            }
            if matches!(t, "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file") {
                iter.next();
                continue;
            }
            if t.starts_with("--") {
                continue;
            }
            if let Some(flags) = t.strip_prefix('-').or_else(|| t.strip_prefix('+')) {
                if !flags.is_empty() {
                    command |= flags.contains('c');
                    from_input |= flags.contains('s');
                    continue;
                }
            }
            operand = Some(w);
            break;
        }
        if name == "su" && !command {
            return Stream::Unknown("an interactive shell".into());
        }
        match (command, operand) {
            (true, Some(script)) => {
                let at = args
                    .iter()
                    .position(|w| std::ptr::eq(w, script))
                    .map_or(args.len(), |k| k + 1);
                let params = if name == "su" { &[][..] } else { &args[at..] };
                self.shell_script(script, params, stdin, scope, depth)
            }
            (true, None) => Stream::Empty,
            (false, Some(_)) if from_input => {
                self.input_script(stdin, &mut scope.clone(), depth, "a shell")
            }
            (false, Some(file)) => self.script_file(file, stdin, &mut scope.clone(), depth),
            (false, None) => self.input_script(stdin, &mut scope.clone(), depth, "a shell"),
        }
    }

    /// `sh -c SCRIPT`: read in a child shell (its assignments and `cd` do
    /// not come back).
    /// The words after the script are its `$0`, `$1`, ….
    fn shell_script(
        &mut self,
        script: &Word,
        params: &[Word],
        stdin: &Stream,
        scope: &Scope,
        depth: usize,
    ) -> Stream {
        if script.unknown() {
            self.unknown(None, format!("the script {}", script.text));
            return Stream::Unknown(format!("the script {}", script.text));
        }
        let mut child = scope.clone();
        child.positional(params);
        self.script(&script.text, &mut child, depth + 1, stdin.clone())
    }

    /// A script read from a file: `/dev/stdin` and `<(…)` are known when
    /// their content is; any other file is one the hook does not read.
    fn script_file(
        &mut self,
        file: &Word,
        stdin: &Stream,
        scope: &mut Scope,
        depth: usize,
    ) -> Stream {
        if matches!(
            file.text.as_str(),
            "/dev/stdin" | "/dev/fd/0" | "/proc/self/fd/0" | "-"
        ) {
            return self.input_script(stdin, scope, depth, "a script");
        }
        if let Some(fed) = &file.feeds {
            return self.input_script(fed, scope, depth, "a script");
        }
        self.unknown(None, format!("the script {}", file.text));
        Stream::Unknown(format!("the script {}", file.text))
    }

    /// A script read from `input`.
    fn input_script(
        &mut self,
        input: &Stream,
        scope: &mut Scope,
        depth: usize,
        reader: &str,
    ) -> Stream {
        match input {
            Stream::Text(text) => self.script(text, scope, depth + 1, Stream::Empty),
            Stream::Empty => Stream::Empty,
            other => {
                let from = other.describe();
                self.unknown(None, format!("{reader} reading a script from {from}"));
                Stream::Unknown(format!("a script from {from}"))
            }
        }
    }

    /// `source FILE` / `. FILE`: read in this shell (its assignments and
    /// `cd` stay).
    pub(super) fn source(
        &mut self,
        args: &[Word],
        stdin: &Stream,
        scope: &mut Scope,
        depth: usize,
    ) -> Stream {
        match args.first() {
            Some(file) => self.script_file(file, stdin, scope, depth),
            None => Stream::Empty,
        }
    }

    /// `eval ARGS…`: the words joined, read as a command line in this shell.
    pub(super) fn eval(&mut self, args: &[Word], scope: &mut Scope, depth: usize) -> Stream {
        let joined: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
        let joined = joined.join(" ");
        if args.iter().any(Word::unknown) {
            self.unknown(None, format!("eval {joined}"));
            return Stream::Unknown(format!("eval {joined}"));
        }
        self.script(&joined, scope, depth + 1, Stream::Empty)
    }

    /// `watch [OPTIONS] COMMAND…`: COMMAND run by `sh -c`.
    pub(super) fn watch(&mut self, args: &[Word], scope: &mut Scope, depth: usize) -> Stream {
        let mut rest = args;
        while let Some((w, after)) = rest.split_first() {
            let t = w.text.as_str();
            if matches!(t, "-n" | "--interval" | "-q" | "--equexit") {
                rest = after.get(1..).unwrap_or_default();
            } else if t.starts_with('-') && t.len() > 1 {
                rest = after;
            } else {
                break;
            }
        }
        if rest.is_empty() {
            return Stream::Empty;
        }
        self.eval(rest, &mut scope.clone(), depth)
    }

    /// `xargs [OPTIONS] [COMMAND…]`: COMMAND (`echo` by default) run with
    /// the words of its input as more arguments, or each input line put in
    /// place of `-I`'s string.
    pub(super) fn xargs(
        &mut self,
        args: &[Word],
        stdin: &Stream,
        scope: &mut Scope,
        depth: usize,
    ) -> Stream {
        if depth > MAX_DEPTH {
            self.unknown(None, "an xargs nested deeper than the hook reads".into());
            return Stream::Unknown("xargs".into());
        }
        let mut replace: Option<String> = None;
        let mut delimiter: Option<char> = None;
        let mut from_file: Option<String> = None;
        let mut i = 0;
        while let Some(w) = args.get(i) {
            let t = w.text.as_str();
            let next = args.get(i + 1);
            let mut step = 1;
            match t {
                "--" => {
                    i += 1;
                    break;
                }
                "-I" => {
                    replace = next.map(|w| w.text.clone());
                    step = 2;
                }
                "-i" | "--replace" => replace = Some("{}".into()),
                "-0" | "--null" => delimiter = Some('\0'),
                "-d" | "--delimiter" => {
                    delimiter = next.and_then(|d| delimiter_of(&d.text));
                    step = 2;
                }
                "-a" | "--arg-file" => {
                    from_file = next.map(|f| f.text.clone());
                    step = 2;
                }
                "-n" | "-L" | "-P" | "-s" | "-E" | "--max-args" | "--max-lines" | "--max-procs"
                | "--max-chars" | "--eof" | "--process-slot-var" => step = 2,
                t if t.starts_with("--replace=") => replace = Some(t[10..].to_string()),
                t if t.starts_with("--delimiter=") => delimiter = delimiter_of(&t[12..]),
                t if t.starts_with("--arg-file=") => from_file = Some(t[11..].to_string()),
                t if t.starts_with("-I") => replace = Some(t[2..].to_string()),
                t if t.starts_with("-i") => {
                    replace = Some(
                        Some(&t[2..])
                            .filter(|r| !r.is_empty())
                            .unwrap_or("{}")
                            .into(),
                    );
                }
                t if t.starts_with("-d") && t.len() > 2 => delimiter = delimiter_of(&t[2..]),
                t if t.starts_with("-a") && t.len() > 2 => from_file = Some(t[2..].to_string()),
                t if t.starts_with('-') && t.len() > 1 => {}
                _ => break,
            }
            i += step;
        }
        let command: Vec<Word> = match args.get(i..) {
            Some(rest) if !rest.is_empty() => rest.to_vec(),
            _ => vec![Word::literal("echo")],
        };
        let input = match from_file {
            Some(f) if matches!(f.as_str(), "-" | "/dev/stdin") => stdin.clone(),
            Some(f) => Stream::Unknown(format!("the file {f}")),
            None => stdin.clone(),
        };
        let items: Vec<Word> = match &input {
            Stream::Text(text) => {
                let parts: Vec<&str> = match delimiter {
                    Some(d) => text.split(d).collect(),
                    None => text.split_whitespace().collect(),
                };
                parts
                    .into_iter()
                    .map(|p| p.trim_end_matches('\n'))
                    .filter(|p| !p.is_empty())
                    .take(MAX_ITEMS)
                    .map(|p| Word::literal(unquote(p)))
                    .collect()
            }
            Stream::Paths(paths) => paths.iter().take(MAX_ITEMS).cloned().collect(),
            Stream::Empty => Vec::new(),
            Stream::Unknown(from) => vec![Word {
                text: format!("(the words of {from})"),
                unknown_at: Some(0),
                ..Word::default()
            }],
        };
        match replace {
            Some(r) if !r.is_empty() => {
                for item in &items {
                    let words: Vec<Word> = command.iter().map(|w| splice(w, &r, item)).collect();
                    self.run(&words, Stream::Empty, &mut scope.clone(), depth + 1);
                }
            }
            _ => {
                let mut words = command;
                words.extend(items);
                self.run(&words, Stream::Empty, &mut scope.clone(), depth + 1);
            }
        }
        Stream::Unknown("the output of xargs".into())
    }
}

/// `-d`'s delimiter: one character, or an escape (`\n`, `\t`, `\0`).
fn delimiter_of(text: &str) -> Option<char> {
    match text {
        "\\n" => Some('\n'),
        "\\t" => Some('\t'),
        "\\0" => Some('\0'),
        t => t.chars().next(),
    }
}

/// An xargs item without the quotes xargs itself removes.
fn unquote(item: &str) -> String {
    let bytes = item.as_bytes();
    if bytes.len() >= 2
        && (bytes[0] == b'"' || bytes[0] == b'\'')
        && bytes[bytes.len() - 1] == bytes[0]
    {
        item[1..item.len() - 1].to_string()
    } else {
        item.to_string()
    }
}

/// `w` with each `r` in it replaced by `item` (`xargs -I`, `find -exec`'s
/// `{}`): unknown from where the item went in, when the item is.
pub(super) fn splice(w: &Word, r: &str, item: &Word) -> Word {
    let Some(at) = w.text.find(r) else {
        return w.clone();
    };
    Word {
        text: w.text.replace(r, &item.text),
        unknown_at: match (w.unknown_at, item.unknown_at) {
            (Some(a), _) if a < at => Some(a),
            (_, Some(b)) => Some(at + b),
            (a, None) => a,
        },
        glob: w.glob || item.glob,
        kept: if item.kept.is_empty() {
            w.kept.clone()
        } else {
            item.kept.clone()
        },
        feeds: None,
    }
}
