//! `find START… EXPRESSION`: what it matches, as patterns (`START/**` or
//! `START/**/NAME` for its `-name` tests, less what `-prune` and `-not
//! -path` leave out), removed by `-delete`, handed to the commands of
//! `-exec`/`-execdir`/`-ok` in place of `{}`, written by `-fprint FILE`,
//! and printed otherwise (for a pipe into `xargs`).

use super::expand::{Scope, Word};
use super::output::Stream;
use super::shells::splice;
use super::{Change, Kept, Reader, MAX_DEPTH};

/// Tests and actions that take a value.
const VALUED: &[&str] = &[
    "-name",
    "-iname",
    "-path",
    "-ipath",
    "-wholename",
    "-iwholename",
    "-regex",
    "-iregex",
    "-lname",
    "-ilname",
    "-type",
    "-xtype",
    "-newer",
    "-anewer",
    "-cnewer",
    "-size",
    "-mtime",
    "-mmin",
    "-atime",
    "-amin",
    "-ctime",
    "-cmin",
    "-user",
    "-group",
    "-uid",
    "-gid",
    "-perm",
    "-maxdepth",
    "-mindepth",
    "-links",
    "-inum",
    "-samefile",
    "-fstype",
    "-context",
    "-used",
    "-printf",
    "-regextype",
    "-newermt",
    "-newerat",
    "-newerct",
    "-newermm",
    "-files0-from",
];

impl Reader {
    pub(super) fn find(&mut self, args: &[Word], scope: &mut Scope, depth: usize) -> Stream {
        if depth > MAX_DEPTH {
            self.unknown(None, "a find nested deeper than the hook reads".into());
            return Stream::Unknown("find".into());
        }
        let cwd = scope.cwd.clone();
        let here = cwd.as_deref();
        // Options before the start points (`-L`, `-H`, `-P`, `-D x`, `-O3`).
        let mut rest = args;
        while let Some((w, after)) = rest.split_first() {
            match w.text.as_str() {
                "-H" | "-L" | "-P" => rest = after,
                "-D" => rest = after.get(1..).unwrap_or_default(),
                t if t.starts_with("-O") => rest = after,
                _ => break,
            }
        }
        let starts: Vec<&Word> = rest
            .iter()
            .take_while(|w| !w.text.starts_with('-') && !matches!(w.text.as_str(), "(" | "!" | ","))
            .collect();
        let expression = &rest[starts.len()..];
        let starts: Vec<Word> = if starts.is_empty() {
            vec![Word::literal(".")]
        } else {
            starts.into_iter().cloned().collect()
        };
        let mut names = Vec::new();
        let mut kept = Vec::new();
        let mut deletes = false;
        let mut prints = false;
        let mut acted = false;
        let mut execs: Vec<Vec<Word>> = Vec::new();
        let mut i = 0;
        while let Some(w) = expression.get(i) {
            let t = w.text.as_str();
            let value = expression.get(i + 1);
            let negated = i > 0 && matches!(expression[i - 1].text.as_str(), "!" | "-not");
            let pruned = expression
                .get(i + 2)
                .is_some_and(|next| next.text == "-prune");
            match t {
                "-name" | "-iname" | "-path" | "-ipath" | "-wholename" | "-iwholename" => {
                    if let Some(v) = value {
                        let anchored = !t.ends_with("name") || t.ends_with("wholename");
                        let pattern = relative_to_start(&v.text, &starts);
                        if pruned || negated {
                            kept.push(Kept {
                                pattern,
                                anchored,
                                subtree: pruned,
                            });
                        } else if !anchored {
                            names.push(v.text.clone());
                        }
                    }
                    i += 2;
                    continue;
                }
                "-delete" => {
                    deletes = true;
                    acted = true;
                }
                "-exec" | "-execdir" | "-ok" | "-okdir" => {
                    let command: Vec<Word> = expression[i + 1..]
                        .iter()
                        .take_while(|w| !matches!(w.text.as_str(), ";" | "+"))
                        .cloned()
                        .collect();
                    i += command.len() + 2;
                    execs.push(command);
                    acted = true;
                    continue;
                }
                "-print" | "-print0" | "-ls" => {
                    prints = true;
                    acted = true;
                }
                "-fprint" | "-fprint0" | "-fls" | "-fprintf" => {
                    if let Some(file) = value {
                        self.write(file, Change::Write, "find -fprint", here);
                    }
                    acted = true;
                    i += if t == "-fprintf" { 3 } else { 2 };
                    continue;
                }
                t if VALUED.contains(&t) => {
                    if t == "-printf" {
                        prints = true;
                        acted = true;
                    }
                    i += 2;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
        // What it matches: each start, everything below (or the names).
        let mut matched = Vec::new();
        for start in &starts {
            let base = start.text.trim_end_matches('/');
            let base = if base.is_empty() { "/" } else { base };
            let tails: Vec<String> = if names.is_empty() {
                vec!["**".into()]
            } else {
                names.iter().map(|n| format!("**/{n}")).collect()
            };
            for tail in tails {
                matched.push(Word {
                    text: format!("{}/{tail}", base.trim_end_matches('/')),
                    glob: true,
                    kept: kept.clone(),
                    ..start.clone()
                });
            }
        }
        if deletes {
            for m in &matched {
                self.write(m, Change::Remove, "find -delete", here);
            }
        }
        for command in execs {
            for m in &matched {
                let words: Vec<Word> = command.iter().map(|w| splice(w, "{}", m)).collect();
                self.run(&words, Stream::Empty, &mut scope.clone(), depth + 1);
            }
        }
        if prints || !acted {
            Stream::Paths(matched)
        } else {
            Stream::Unknown("the output of find".into())
        }
    }
}

/// A `-path` pattern below the start points (`./state` from `.` is
/// `state`); a name pattern as it is.
fn relative_to_start(pattern: &str, starts: &[Word]) -> String {
    for s in starts {
        let start = s.text.trim_end_matches('/');
        if let Some(rest) = pattern
            .strip_prefix(start)
            .and_then(|r| r.strip_prefix('/'))
        {
            return rest.to_string();
        }
    }
    pattern.to_string()
}
