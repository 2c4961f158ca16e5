//! `git`: the subcommands that remove files the index does not hold
//! (`clean`, `stash --all`), remove a worktree (`worktree remove`), or
//! change a work tree's files or its repository state (`checkout`,
//! `reset`, `commit`, `apply`, …: a change of the directory they run in).
//! `git -C DIR` moves where they run.

use std::path::Path;

use super::expand::{Scope, Word};
use super::output::{work_tree_top, Stream};
use super::programs::patched_files;
use super::{path_of, Change, Kept, Reader};

/// Subcommands that change the files of the work tree they run in, or its
/// branch and index.
const CHANGES_WORK_TREE: &[&str] = &[
    "checkout",
    "switch",
    "restore",
    "reset",
    "merge",
    "rebase",
    "pull",
    "cherry-pick",
    "revert",
    "am",
    "rm",
    "mv",
    "commit",
    "add",
    "stash",
    "apply",
];

impl Reader {
    pub(super) fn git(&mut self, args: &[Word], stdin: &Stream, scope: &Scope) -> Option<Stream> {
        let mut cwd = scope.cwd.clone();
        let mut rest = args;
        // Global options before the subcommand.
        while let Some((w, after)) = rest.split_first() {
            let t = w.text.as_str();
            match t {
                "-C" => {
                    let dir = after.first()?;
                    cwd = if dir.unknown() {
                        None
                    } else {
                        Some(path_of(dir, cwd.as_deref())).filter(|p| p.is_absolute())
                    };
                    rest = after.get(1..).unwrap_or_default();
                }
                "-c" | "--git-dir" | "--work-tree" | "--namespace" | "--exec-path"
                | "--config-env" | "--super-prefix" => rest = after.get(1..).unwrap_or_default(),
                t if t.starts_with('-') => rest = after,
                _ => break,
            }
        }
        let (sub, args) = rest.split_first()?;
        let here = cwd.as_deref();
        match sub.text.as_str() {
            "clean" => self.git_clean(args, here),
            "stash" => self.git_stash(args, here),
            "worktree" => {
                if let [verb, more @ ..] = args {
                    if verb.text == "remove" {
                        for w in more.iter().filter(|w| !w.text.starts_with('-')) {
                            self.write(w, Change::Remove, "git worktree remove", here);
                        }
                    }
                }
            }
            "apply" => self.git_apply(args, stdin, here),
            _ => {}
        }
        if CHANGES_WORK_TREE.contains(&sub.text.as_str()) {
            // Whatever else it does, it changes the work tree (or the
            // repository) of the directory it runs in.
            match here {
                Some(dir) => self.write(
                    &Word::literal(dir.display().to_string()),
                    Change::Edit,
                    "git",
                    None,
                ),
                None => self.unknown(
                    None,
                    format!("git {} in a directory the hook cannot name", sub.text),
                ),
            }
        }
        None
    }

    /// `git clean [-x|-X] [-e PATTERN]… [-n] [--] [PATHSPEC…]`.
    fn git_clean(&mut self, args: &[Word], cwd: Option<&Path>) {
        let mut also_ignored = false;
        let mut only_ignored = false;
        let mut dry_run = false;
        let mut patterns = Vec::new();
        let mut paths = Vec::new();
        let mut options = true;
        let mut iter = args.iter();
        while let Some(w) = iter.next() {
            let t = w.text.as_str();
            if !options || !t.starts_with('-') || t == "-" {
                paths.push(w);
                continue;
            }
            match t {
                "--" => options = false,
                "-e" | "--exclude" => patterns.extend(iter.next().map(|p| p.text.clone())),
                "-n" | "--dry-run" => dry_run = true,
                t if t.starts_with("--exclude=") => patterns.push(t[10..].to_string()),
                t if t.starts_with("--") => {}
                t => {
                    // A cluster of short flags: `-fdX`, `-xdf`, `-estate`.
                    let flags = &t[1..];
                    for (k, c) in flags.char_indices() {
                        match c {
                            'x' => also_ignored = true,
                            'X' => only_ignored = true,
                            'n' => dry_run = true,
                            'e' => {
                                let value = &flags[k + 1..];
                                if value.is_empty() {
                                    patterns.extend(iter.next().map(|p| p.text.clone()));
                                } else {
                                    patterns.push(value.to_string());
                                }
                                break;
                            }
                            _ => {}
                        }
                    }
                }
            }
        }
        if dry_run {
            return;
        }
        // Which exclude patterns spare a path: with `-x`, an `-e` pattern
        // makes it ignored again, so kept; with `-X` only a negated one
        // (`!state/`) takes it out of the ignored files.
        let kept: Vec<Kept> = patterns
            .iter()
            .filter_map(|p| match (only_ignored, p.strip_prefix('!')) {
                (true, Some(negated)) => Some(negated.to_string()),
                (false, None) if also_ignored => Some(p.clone()),
                _ => None,
            })
            .map(|p| gitignore_kept(&p))
            .collect();
        let ignored = also_ignored || only_ignored;
        let by = match (only_ignored, also_ignored) {
            (true, _) => "git clean -X",
            (false, true) => "git clean -x",
            _ => "git clean",
        };
        let scopes: Vec<Word> = if paths.is_empty() {
            vec![Word::literal(".")]
        } else {
            paths.into_iter().cloned().collect()
        };
        for s in scopes {
            let w = Word {
                kept: kept.clone(),
                ..s
            };
            self.write(&w, Change::Clean { ignored }, by, cwd);
        }
    }

    /// `git stash [push|save] -a|--all [-- PATHSPEC…]`: every ignored and
    /// untracked file (of the pathspecs, else of the whole work tree) is
    /// put in the stash and removed.
    fn git_stash(&mut self, args: &[Word], cwd: Option<&Path>) {
        let (verb, rest) = match args.split_first() {
            Some((v, rest)) if !v.text.starts_with('-') => (v.text.as_str(), rest),
            _ => ("push", args),
        };
        if !matches!(verb, "push" | "save") {
            return;
        }
        let all = rest
            .iter()
            .take_while(|w| w.text != "--")
            .any(|w| w.text == "--all" || is_short(&w.text, 'a'));
        if !all {
            return;
        }
        let mut paths = Vec::new();
        if verb == "push" {
            let mut iter = rest.iter();
            let mut options = true;
            while let Some(w) = iter.next() {
                let t = w.text.as_str();
                if options && t == "--" {
                    options = false;
                } else if options && matches!(t, "-m" | "--message" | "--pathspec-from-file") {
                    iter.next();
                } else if !options || !t.starts_with('-') {
                    paths.push(w.clone());
                }
            }
        }
        if paths.is_empty() {
            let top = cwd.map(|c| work_tree_top(c).unwrap_or_else(|| c.to_path_buf()));
            match top {
                Some(top) => paths.push(Word::literal(top.display().to_string())),
                None => {
                    self.unknown(
                        None,
                        "git stash --all in a directory the hook cannot name".into(),
                    );
                    return;
                }
            }
        }
        for p in paths {
            self.write(&p, Change::Remove, "git stash --all", cwd);
        }
    }

    /// `git apply [PATCH…]`: the files the patch names when it is literal.
    fn git_apply(&mut self, args: &[Word], stdin: &Stream, cwd: Option<&Path>) {
        let mut strip = Some(1);
        let mut files = Vec::new();
        for w in args {
            let t = w.text.as_str();
            match t {
                "--check" | "--stat" | "--numstat" | "--summary" | "--cached" => return,
                t if t.starts_with("-p") => strip = t[2..].parse().ok(),
                t if t.starts_with('-') && t.len() > 1 => {}
                _ => files.push(w),
            }
        }
        let text = match (files.as_slice(), stdin) {
            ([], Stream::Text(text)) => text.clone(),
            ([], Stream::Empty) => return,
            ([], other) => {
                self.unknown(
                    cwd.map(Path::to_path_buf),
                    format!("the files a patch from {} changes", other.describe()),
                );
                return;
            }
            (files, _) => {
                let names: Vec<&str> = files.iter().map(|w| w.text.as_str()).collect();
                self.unknown(
                    cwd.map(Path::to_path_buf),
                    format!("the files the patch {} changes", names.join(" ")),
                );
                return;
            }
        };
        for name in patched_files(&text, strip) {
            self.write(&Word::literal(name), Change::Edit, "git apply", cwd);
        }
    }
}

/// True when the short-option word `t` (`-ua`) holds `flag`.
fn is_short(t: &str, flag: char) -> bool {
    t.strip_prefix('-')
        .filter(|f| !f.starts_with('-') && f.chars().all(|c| c.is_ascii_alphabetic()))
        .is_some_and(|f| f.contains(flag))
}

/// A gitignore pattern as a kept pattern: anchored when it holds a slash
/// before its end, a whole subtree either way (an ignored directory's
/// content is the directory's).
fn gitignore_kept(pattern: &str) -> Kept {
    let trimmed = pattern.trim_end_matches('/');
    Kept {
        pattern: trimmed.trim_start_matches('/').to_string(),
        anchored: trimmed.contains('/'),
        subtree: true,
    }
}
