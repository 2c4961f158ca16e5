//! Interpreters' inline programs: `python3 -c CODE`, `node -e`, `perl -e`,
//! `ruby -e`, `php -r`, or a program fed on the input (a heredoc, a
//! literal piped in). When the program writes at all, every string literal
//! that names a path is taken for a write, and every literal is also read
//! as a shell command (`os.system("…")`, `shell_exec('…')`).

use std::sync::LazyLock;

use regex::{Regex, RegexBuilder};

use super::expand::{Scope, Word};
use super::output::Stream;
use super::{Change, Reader};

/// The program an interpreter runs inline, or reads from its input:
/// `Ok(code)`, or `Err(where it comes from)` when the hook cannot know it
/// (`curl … | python3`); `None` for a program file or no interpreter.
pub fn code(name: &str, args: &[Word], stdin: &Stream) -> Option<Result<String, String>> {
    let flags: &[&str] = if name.starts_with("python") || name.starts_with("pypy") {
        &["-c"]
    } else if matches!(name, "node" | "nodejs" | "deno" | "bun") {
        &["-e", "--eval", "-p", "--print", "eval"]
    } else if matches!(name, "perl" | "ruby") {
        &["-e", "-E"]
    } else if name == "php" {
        &["-r", "--run"]
    } else {
        return None;
    };
    let mut codes = Vec::new();
    let mut iter = args.iter();
    while let Some(w) = iter.next() {
        let t = w.text.as_str();
        let bundled_e =
            t.starts_with('-') && !t.starts_with("--") && t.ends_with('e') && flags.contains(&"-e");
        if flags.contains(&t) || bundled_e {
            if let Some(code) = iter.next() {
                if code.unknown() {
                    return Some(Err(format!("the text {}", code.text)));
                }
                codes.push(code.text.clone());
            }
        }
    }
    if codes.is_empty() {
        // `python3 - <<EOF`, `python3 <<EOF`, `… | php`: the program is the
        // input.
        let script_file = args.iter().any(|w| !w.text.starts_with('-'));
        if script_file {
            return None;
        }
        match stdin {
            Stream::Text(text) => codes.push(text.clone()),
            Stream::Empty => return None,
            other => return Some(Err(other.describe())),
        }
    }
    Some(Ok(codes.join("\n")))
}

/// A string literal in a program.
static LITERAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#""((?:[^"\\\n]|\\.)*)"|'((?:[^'\\\n]|\\.)*)'"#).expect("a valid pattern")
});

/// A call that opens a file for writing, removes, renames, replaces or
/// copies one, changes its mode, or runs a command.
static PROGRAM_WRITE: LazyLock<Regex> = LazyLock::new(|| {
    RegexBuilder::new(
        r#"open\s*\([^)]*['"][rwax]*[wax+][bt]*['"]|\bmode\s*=\s*['"][rwax]*[wax+]|['"]\+?>{1,2}|\.write|write_text|write_bytes|writeFile|appendFile|put_contents|fwrite|fputs|unlink|remove|rename|replace|rmtree|rmSync|\brm\b|rm_r|rm_f|FileUtils|truncate|copyfile|copytree|copy2?\s*\(|copyFile|\bmove\s*\(|\bdump\s*\(|File\.write|File\.delete|\bchmod|\bchown|\btouch\s*\(|symlink|\blink\s*\(|\bexecute\s*\(|\bsystem\s*\(|popen|subprocess|execSync|spawnSync|\bexec\s*\(|shell_exec|passthru|proc_open|\bsh\s*\("#,
    )
    .build()
    .expect("a valid pattern")
});

impl Reader {
    /// An inline program's writes.
    pub(super) fn program_writes(&mut self, code: &str, scope: &Scope, depth: usize) {
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
                    || text.ends_with(".db")
                    || text.starts_with(|c: char| c.is_ascii_digit())
                        && (text.ends_with(".json") || text.contains('-'));
                if path_like {
                    self.write(
                        &Word::literal(text),
                        Change::Write,
                        "an inline program",
                        scope.cwd.as_deref(),
                    );
                }
            } else {
                self.script(text, &mut scope.clone(), depth + 1, Stream::Empty);
            }
        }
    }
}
