//! What a command prints, as far as the hook can tell without running it:
//! the literal output of `echo`, `printf`, `cat` of a heredoc, `pwd`,
//! `basename`, `dirname`, `realpath`, `mktemp`, `seq`, `git rev-parse
//! --show-toplevel`, and the paths `find` matches. That output becomes a
//! `$(…)`'s value, a piped shell's script, `xargs`' arguments; anything
//! else prints what the hook cannot know.

use std::path::Path;

use super::expand::Word;

/// A stream of bytes between commands: what one prints, what one reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Nothing (a command the shell tool runs reads no terminal).
    Empty,
    Text(String),
    /// The paths a `find` prints, one a line: patterns.
    Paths(Vec<Word>),
    /// What the hook cannot know, and where it comes from (`curl …`).
    Unknown(String),
}

impl Stream {
    /// This stream followed by `next` (two commands printing in turn).
    pub fn then(self, next: Stream) -> Stream {
        match (self, next) {
            (Stream::Empty, s) | (s, Stream::Empty) => s,
            (Stream::Text(mut a), Stream::Text(b)) => {
                a.push_str(&b);
                Stream::Text(a)
            }
            (Stream::Paths(mut a), Stream::Paths(b)) => {
                a.extend(b);
                Stream::Paths(a)
            }
            (Stream::Unknown(what), _) | (_, Stream::Unknown(what)) => Stream::Unknown(what),
            (Stream::Text(_), Stream::Paths(_)) | (Stream::Paths(_), Stream::Text(_)) => {
                Stream::Unknown("text and paths mixed".into())
            }
        }
    }

    /// Where it comes from, for a reason the model or the user reads.
    pub fn describe(&self) -> String {
        match self {
            Stream::Empty => "nothing".into(),
            Stream::Text(_) => "literal text".into(),
            Stream::Paths(_) => "a list of paths".into(),
            Stream::Unknown(what) => what.clone(),
        }
    }
}

/// The output of `name` run with `args` and `stdin` in `cwd`, when the
/// hook can tell it; `None` when it cannot.
pub fn of(name: &str, args: &[Word], stdin: &Stream, cwd: Option<&Path>) -> Option<Stream> {
    if args.iter().any(Word::unknown) {
        return None;
    }
    let texts: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
    let text = |s: String| Some(Stream::Text(s));
    match name {
        "echo" => text(echo(&texts)),
        "printf" => printf(&texts).map(Stream::Text),
        "cat" if texts.iter().all(|t| *t == "-") => Some(stdin.clone()),
        "cat" if texts.iter().all(|t| *t == "/dev/null") => Some(Stream::Empty),
        "true" | ":" | "cd" | "pushd" | "popd" | "export" | "unset" | "set" | "shopt" => {
            Some(Stream::Empty)
        }
        "pwd" => cwd.map(|c| Stream::Text(format!("{}\n", c.display()))),
        "basename" => {
            let (path, suffix) = match texts.as_slice() {
                [p] => (*p, None),
                [p, s] if !p.starts_with('-') => (*p, Some(*s)),
                _ => return None,
            };
            let trimmed = path.trim_end_matches('/');
            let base = trimmed.rsplit('/').next().unwrap_or(trimmed);
            let base = suffix
                .and_then(|s| base.strip_suffix(s).filter(|b| !b.is_empty()))
                .unwrap_or(base);
            text(format!("{base}\n"))
        }
        "dirname" => match texts.as_slice() {
            [p] => {
                let trimmed = p.trim_end_matches('/');
                let dir = match trimmed.rfind('/') {
                    Some(0) => "/",
                    Some(k) => &trimmed[..k],
                    None => ".",
                };
                text(format!("{dir}\n"))
            }
            _ => None,
        },
        "realpath" | "readlink" => {
            let resolving = name == "realpath"
                || texts
                    .iter()
                    .any(|t| matches!(*t, "-f" | "-e" | "-m" | "--canonicalize"));
            let operands: Vec<&&str> = texts.iter().filter(|t| !t.starts_with('-')).collect();
            match (resolving, operands.as_slice(), cwd) {
                (true, [p], Some(cwd)) => {
                    let path = crate::resolved_path::resolve(&cwd.join(p));
                    text(format!("{}\n", path.display()))
                }
                _ => None,
            }
        }
        "mktemp" => mktemp(&texts, cwd).map(Stream::Text),
        "seq" => seq(&texts).map(Stream::Text),
        "git" if texts == ["rev-parse", "--show-toplevel"] => cwd
            .and_then(work_tree_top)
            .map(|top| Stream::Text(format!("{}\n", top.display()))),
        _ => None,
    }
}

/// The top of the git work tree holding `dir`: the nearest directory, from
/// `dir` up, with a `.git` entry (a plain look at the disk, no `git`).
pub fn work_tree_top(dir: &Path) -> Option<std::path::PathBuf> {
    dir.ancestors()
        .take(256)
        .find(|d| d.join(".git").symlink_metadata().is_ok())
        .map(Path::to_path_buf)
}

/// `echo [-neE] ARGS`.
fn echo(args: &[&str]) -> String {
    let mut newline = true;
    let mut escapes = false;
    let mut rest = args;
    while let Some((first, after)) = rest.split_first() {
        let flags = first
            .strip_prefix('-')
            .filter(|f| !f.is_empty() && f.chars().all(|c| matches!(c, 'n' | 'e' | 'E')));
        let Some(flags) = flags else { break };
        for c in flags.chars() {
            match c {
                'n' => newline = false,
                'e' => escapes = true,
                _ => escapes = false,
            }
        }
        rest = after;
    }
    let joined = rest.join(" ");
    let mut out = if escapes {
        let (text, stop) = backslash_escapes(&joined);
        if stop {
            return text;
        }
        text
    } else {
        joined
    };
    if newline {
        out.push('\n');
    }
    out
}

/// `\n`, `\t`, `\\`, `\0NNN`/`\NNN`, `\xHH` in `echo -e` and `printf`'s
/// format and `%b`; `true` when `\c` ends the output there.
fn backslash_escapes(s: &str) -> (String, bool) {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            out.push('\\');
            break;
        };
        let decoded = match e {
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            'a' => '\x07',
            'b' => '\x08',
            'f' => '\x0c',
            'v' => '\x0b',
            'e' => '\x1b',
            '\\' => '\\',
            'c' => return (out, true),
            'x' => {
                let mut digits = String::new();
                while digits.len() < 2 && chars.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                    digits.extend(chars.next());
                }
                match u32::from_str_radix(&digits, 16)
                    .ok()
                    .and_then(char::from_u32)
                {
                    Some(c) => c,
                    None => {
                        out.push_str("\\x");
                        continue;
                    }
                }
            }
            '0'..='7' => {
                let mut digits = e.to_string();
                while digits.len() < 4 && chars.peek().is_some_and(|c| ('0'..='7').contains(c)) {
                    digits.extend(chars.next());
                }
                char::from_u32(u32::from_str_radix(&digits, 8).unwrap_or(0) & 0xff).unwrap_or('\0')
            }
            other => {
                out.push('\\');
                other
            }
        };
        out.push(decoded);
    }
    (out, false)
}

/// `printf FORMAT ARGS…`: `%s`, `%b`, `%d`/`%i`, `%c`, `%%` with flags,
/// width and precision, the format reused while arguments remain.
pub fn printf(args: &[&str]) -> Option<String> {
    let (format, mut rest) = match args.split_first()? {
        (&"--", after) => after.split_first()?,
        other => other,
    };
    if format.starts_with('-') && format.len() > 1 {
        // `-v VAR` and other options: not an output.
        return None;
    }
    let mut out = String::new();
    // At most a bounded number of passes over the format.
    for _ in 0..1024 {
        let used_before = rest.len();
        let chars: Vec<char> = format.chars().collect();
        let mut i = 0;
        let mut literal = String::new();
        while i < chars.len() {
            let c = chars[i];
            if c != '%' {
                literal.push(c);
                i += 1;
                continue;
            }
            out.push_str(&backslash_escapes(&std::mem::take(&mut literal)).0);
            i += 1;
            let start = i;
            while i < chars.len() && "-+ #0".contains(chars[i]) {
                i += 1;
            }
            let flags: String = chars[start..i].iter().collect();
            let w0 = i;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            let width: usize = chars[w0..i].iter().collect::<String>().parse().unwrap_or(0);
            let mut precision = None;
            if i < chars.len() && chars[i] == '.' {
                i += 1;
                let p0 = i;
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
                precision = Some(
                    chars[p0..i]
                        .iter()
                        .collect::<String>()
                        .parse::<usize>()
                        .unwrap_or(0),
                );
            }
            let conv = *chars.get(i)?;
            i += 1;
            if conv == '%' {
                out.push('%');
                continue;
            }
            let arg = rest.first().copied();
            rest = rest.get(1..).unwrap_or_default();
            let field = match conv {
                's' | 'q' => {
                    let s = arg.unwrap_or("");
                    match precision {
                        Some(p) => s.chars().take(p).collect(),
                        None => s.to_string(),
                    }
                }
                'b' => backslash_escapes(arg.unwrap_or("")).0,
                'c' => arg
                    .and_then(|a| a.chars().next())
                    .map(String::from)
                    .unwrap_or_default(),
                'd' | 'i' | 'u' => arg.unwrap_or("0").trim().parse::<i64>().ok()?.to_string(),
                _ => return None,
            };
            let pad = width.saturating_sub(field.chars().count());
            if flags.contains('-') {
                out.push_str(&field);
                out.push_str(&" ".repeat(pad));
            } else if flags.contains('0') && matches!(conv, 'd' | 'i' | 'u') {
                out.push_str(&"0".repeat(pad));
                out.push_str(&field);
            } else {
                out.push_str(&" ".repeat(pad));
                out.push_str(&field);
            }
        }
        let (tail, stop) = backslash_escapes(&literal);
        out.push_str(&tail);
        if stop || rest.is_empty() || rest.len() == used_before {
            break;
        }
    }
    Some(out)
}

/// `mktemp [-d] [-p DIR | --tmpdir[=DIR] | -t] [TEMPLATE]`: the name it
/// makes, its random part left as `X`s.
fn mktemp(args: &[&str], cwd: Option<&Path>) -> Option<String> {
    let mut dir: Option<String> = None;
    let mut template = None;
    let mut in_tmp = false;
    let mut iter = args.iter();
    while let Some(a) = iter.next() {
        match *a {
            "-p" | "--tmpdir" => {
                dir = iter.next().map(|d| d.to_string());
                in_tmp = true;
            }
            "-t" => in_tmp = true,
            a if a.starts_with("--tmpdir=") => {
                dir = Some(a["--tmpdir=".len()..].to_string());
                in_tmp = true;
            }
            a if a.starts_with("--suffix=") => {}
            a if a.starts_with('-') => {}
            a => template = Some(a.to_string()),
        }
    }
    let tmp = || {
        std::env::var("TMPDIR")
            .ok()
            .filter(|t| !t.is_empty())
            .unwrap_or("/tmp".into())
    };
    let name = template.clone().unwrap_or_else(|| "tmp.XXXXXXXXXX".into());
    let path = match (template.is_some() && !in_tmp, dir) {
        (true, _) => match cwd {
            Some(cwd) if !name.starts_with('/') => cwd.join(&name).display().to_string(),
            _ => name,
        },
        (false, Some(d)) => format!("{}/{name}", d.trim_end_matches('/')),
        (false, None) => format!("{}/{name}", tmp().trim_end_matches('/')),
    };
    Some(format!("{path}\n"))
}

/// `seq [FIRST [STEP]] LAST`, integers only, at most a thousand lines.
fn seq(args: &[&str]) -> Option<String> {
    let nums: Vec<i64> = args.iter().map(|a| a.parse().ok()).collect::<Option<_>>()?;
    let (first, step, last) = match nums.as_slice() {
        [l] => (1, 1, *l),
        [f, l] => (*f, 1, *l),
        [f, s, l] => (*f, *s, *l),
        _ => return None,
    };
    if step == 0 {
        return None;
    }
    let mut out = String::new();
    let mut n = first;
    for _ in 0..1000 {
        if (step > 0 && n > last) || (step < 0 && n < last) {
            return Some(out);
        }
        out.push_str(&format!("{n}\n"));
        n += step;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(name: &str, args: &[&str]) -> Option<Stream> {
        let words: Vec<Word> = args.iter().map(|a| Word::literal(*a)).collect();
        of(name, &words, &Stream::Empty, Some(Path::new("/p")))
    }

    fn text(s: &str) -> Option<Stream> {
        Some(Stream::Text(s.into()))
    }

    #[test]
    fn literal_outputs() {
        assert_eq!(out("echo", &["-n", "a", "b"]), text("a b"));
        assert_eq!(out("echo", &["-e", "a\\nb"]), text("a\nb\n"));
        assert_eq!(
            out("printf", &["%s/%s.json", "state/pipeline", "42"]),
            text("state/pipeline/42.json")
        );
        assert_eq!(out("printf", &["%s\\n", "a", "b"]), text("a\nb\n"));
        assert_eq!(
            out("printf", &["%05d|%-3s|%.2s", "42", "x", "abc"]),
            text("00042|x  |ab")
        );
        assert_eq!(out("printf", &["-v", "x", "%s", "y"]), None);
        assert_eq!(out("pwd", &[]), text("/p\n"));
        assert_eq!(out("basename", &["/a/b.json", ".json"]), text("b\n"));
        assert_eq!(out("dirname", &["a/b/c"]), text("a/b\n"));
        assert_eq!(out("seq", &["2", "4"]), text("2\n3\n4\n"));
        assert_eq!(out("mktemp", &["-p", "/x"]), text("/x/tmp.XXXXXXXXXX\n"));
        assert_eq!(out("ls", &[]), None);
        let unknown = Word {
            text: "$X".into(),
            unknown_at: Some(0),
            ..Word::default()
        };
        assert_eq!(of("echo", &[unknown], &Stream::Empty, None), None);
    }
}
