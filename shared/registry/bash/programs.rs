//! The file utilities' writes: what each writes, edits or removes among
//! its arguments. `tee`, `sponge`, `rm`, `rmdir`, `unlink`, `shred`,
//! `truncate`, `touch`, `cp`, `mv`, `install`, `ln`, `rsync`, `dd of=`,
//! `sed -i` (and sed's `w FILE`), `perl -i`, `awk -i inplace` (and awk's
//! `print > "FILE"`), `patch`, `ed`/`ex`/`vi`/`vim`/`nvim`/`nano`/`emacs`,
//! `chmod`, `chown`, `chgrp`, `chattr`, `setfacl`, `sort -o`, `uniq IN
//! OUT`, `curl -o`, `wget -O`; interpreters' inline programs are read by
//! [`super::inline`].

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use super::expand::{Scope, Word};
use super::output::Stream;
use super::{operands, path_of, Change, Kept, Reader};

impl Reader {
    /// The writes of `name` run with `args`; what it prints when that is
    /// not just its own output (`tee` passes its input on).
    pub(super) fn program(
        &mut self,
        name: &str,
        args: &[Word],
        stdin: &Stream,
        scope: &mut Scope,
        depth: usize,
    ) -> Option<Stream> {
        let cwd = scope.cwd.clone();
        let here = cwd.as_deref();
        match name {
            "tee" | "sponge" => {
                for w in operands(args, &[]) {
                    self.write(w, Change::Write, "tee", here);
                }
                return Some(stdin.clone());
            }
            "rm" | "rmdir" | "unlink" | "srm" => {
                for w in operands(args, &[]) {
                    self.write(w, Change::Remove, "rm", here);
                }
            }
            "shred" => {
                let removes = args
                    .iter()
                    .any(|w| w.text == "--remove" || is_flag(&w.text, 'u'));
                for w in operands(args, &["-n", "-s", "--iterations", "--size"]) {
                    self.write(w, Change::Write, "shred", here);
                    if removes {
                        self.write(w, Change::Remove, "shred", here);
                    }
                }
            }
            "truncate" => {
                for w in operands(args, &["-s", "-r", "--size", "--reference"]) {
                    self.write(w, Change::Write, "truncate", here);
                }
            }
            "touch" => {
                for w in operands(args, &["-r", "-d", "-t", "--reference", "--date"]) {
                    self.write(w, Change::Edit, "touch", here);
                }
            }
            "chmod" | "chown" | "chgrp" => {
                let reference = args.iter().any(|w| w.text.starts_with("--reference"));
                let files = operands(args, &[]);
                let skip = usize::from(!reference);
                for w in files.into_iter().skip(skip) {
                    self.write(w, Change::Edit, leak(name), here);
                }
            }
            "chattr" => {
                for w in operands(args, &["-v", "-p"])
                    .into_iter()
                    .filter(|w| !w.text.starts_with(['+', '=']))
                {
                    self.write(w, Change::Edit, "chattr", here);
                }
                // `chattr -i FILE`: `-i` is a mode there, not an option.
            }
            "setfacl" => {
                for w in operands(args, &["-m", "-x", "-M", "-X", "--set", "--set-file"]) {
                    self.write(w, Change::Edit, "setfacl", here);
                }
            }
            "cp" | "install" | "ln" | "rsync" | "mv" => self.copy(name, args, here),
            "dd" => {
                for w in args {
                    if let Some(file) = w.text.strip_prefix("of=") {
                        let target = retext(w, file, 3);
                        self.write(&target, Change::Write, "dd", here);
                    }
                }
            }
            "sed" => self.sed(args, here),
            "awk" | "gawk" | "mawk" | "nawk" | "busybox-awk" => {
                self.awk(args, here, scope, depth);
            }
            "patch" => self.patch(args, stdin, here),
            "ed" | "red" | "ex" | "vi" | "vim" | "nvim" | "gvim" | "vim.tiny" | "vim.basic"
            | "nano" | "pico" | "emacs" | "micro" | "kak" | "hx" | "mcedit" => {
                self.editor(name, args, here);
            }
            "sort" => {
                let mut iter = args.iter();
                while let Some(w) = iter.next() {
                    if w.text == "-o" || w.text == "--output" {
                        if let Some(file) = iter.next() {
                            self.write(file, Change::Write, "sort -o", here);
                        }
                    } else if let Some(file) = w.text.strip_prefix("--output=") {
                        let file = retext(w, file, "--output=".len());
                        self.write(&file, Change::Write, "sort -o", here);
                    } else if let Some(file) = w.text.strip_prefix("-o").filter(|f| !f.is_empty()) {
                        let file = retext(w, file, 2);
                        self.write(&file, Change::Write, "sort -o", here);
                    }
                }
            }
            "uniq" => {
                if let [_, out] = operands(args, &["-f", "-s", "-w"]).as_slice() {
                    self.write(out, Change::Write, "uniq", here);
                }
            }
            "curl" | "wget" => self.download(name, args, here),
            _ => {
                let code = super::inline::code(name, args, stdin);
                match code {
                    Some(Ok(code)) => self.program_writes(&code, scope, depth),
                    Some(Err(from)) => {
                        self.unknown(None, format!("a {name} program read from {from}"));
                    }
                    None => {}
                }
                if name == "perl" {
                    self.perl_in_place(args, here);
                }
            }
        }
        None
    }

    /// `cp`/`mv`/`install`/`ln`/`rsync`: the destination (a file, or each
    /// source's name inside a destination directory) is written; `mv`
    /// removes its sources; `rsync --delete` removes what the destination
    /// holds beyond the sources (`--exclude` patterns kept). A source of
    /// `cp` is only read.
    fn copy(&mut self, name: &str, args: &[Word], cwd: Option<&Path>) {
        let moves = name == "mv";
        let by = leak(name);
        let mut target_dir: Option<Word> = None;
        let mut no_target_dir = false;
        let mut deletes = false;
        let mut excluded = Vec::new();
        let mut rest = Vec::new();
        let mut options = true;
        let valued: &[&str] = match name {
            "install" => &[
                "-m", "-o", "-g", "-S", "--mode", "--owner", "--group", "--suffix",
            ],
            "rsync" => &[
                "-e",
                "--rsh",
                "-f",
                "--filter",
                "--include",
                "--files-from",
                "-T",
                "--temp-dir",
                "--partial-dir",
                "--backup-dir",
                "--log-file",
                "--password-file",
                "-B",
                "--chmod",
                "--port",
                "--out-format",
                "-M",
                "--remote-option",
                "--max-size",
                "--min-size",
                "--timeout",
            ],
            _ => &["-S", "--suffix"],
        };
        let mut iter = args.iter();
        while let Some(w) = iter.next() {
            let t = w.text.as_str();
            if options && t == "--" {
                options = false;
            } else if options && (t == "-t" || t == "--target-directory") && name != "rsync" {
                target_dir = iter.next().cloned();
            } else if let Some(dir) = t.strip_prefix("--target-directory=").filter(|_| options) {
                target_dir = Some(retext(w, dir, "--target-directory=".len()));
            } else if options && (t == "-T" || t == "--no-target-directory") && name != "rsync" {
                no_target_dir = true;
            } else if options && name == "rsync" && t == "--exclude" {
                excluded.extend(iter.next().map(|w| w.text.clone()));
            } else if options && name == "rsync" && t.starts_with("--exclude=") {
                excluded.push(t["--exclude=".len()..].to_string());
            } else if options && name == "rsync" && t.starts_with("--del") {
                deletes = true;
            } else if options && t.starts_with('-') && t.len() > 1 {
                if valued.contains(&t) {
                    iter.next();
                }
            } else {
                rest.push(w);
            }
        }
        if let Some(dir) = target_dir {
            self.copy_into(&rest, &dir, moves, by, cwd);
            return;
        }
        let Some((dest, sources)) = rest.split_last() else {
            return;
        };
        if sources.is_empty() {
            if name == "ln" {
                // `ln -s TARGET`: a link named like the target, here.
                let base = dest
                    .text
                    .trim_end_matches('/')
                    .rsplit('/')
                    .next()
                    .unwrap_or("");
                if !base.is_empty() && !dest.unknown() {
                    self.write(&Word::literal(base), Change::Write, by, cwd);
                }
            }
            return;
        }
        if deletes {
            let inside = Word {
                text: format!("{}/*", dest.text.trim_end_matches('/')),
                glob: true,
                kept: excluded
                    .iter()
                    .map(|p| Kept {
                        pattern: p.clone(),
                        anchored: p.trim_end_matches('/').contains('/') || p.starts_with('/'),
                        subtree: true,
                    })
                    .collect(),
                ..(*dest).clone()
            };
            self.write(&inside, Change::Remove, "rsync --delete", cwd);
        }
        let dest_path = path_of(dest, cwd);
        let rsync_contents = name == "rsync" && sources.iter().any(|s| s.text.ends_with('/'));
        let into_dir = !no_target_dir
            && (sources.len() > 1
                || dest.text.ends_with('/')
                || crate::resolved_path::resolve(&dest_path).is_dir());
        if rsync_contents {
            self.write(dest, Change::Write, by, cwd);
        } else if into_dir {
            self.copy_into(sources, dest, moves, by, cwd);
        } else {
            self.write(dest, Change::Write, by, cwd);
            if moves {
                for s in sources {
                    self.write(s, Change::Remove, by, cwd);
                }
            }
        }
    }

    /// The writes of copying (or moving) `sources` into the directory `dir`.
    fn copy_into(
        &mut self,
        sources: &[&Word],
        dir: &Word,
        moves: bool,
        by: &'static str,
        cwd: Option<&Path>,
    ) {
        for s in sources {
            let name = Path::new(&s.text)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned());
            let target = match name {
                Some(name) if !s.unknown() => Word {
                    text: format!("{}/{name}", dir.text.trim_end_matches('/')),
                    ..dir.clone()
                },
                // `cp -r x/. dir`, or a source the hook cannot name:
                // anything in dir may change.
                _ => dir.clone(),
            };
            self.write(&target, Change::Write, by, cwd);
            if moves {
                self.write(s, Change::Remove, by, cwd);
            }
        }
    }

    /// `sed -i` edits its files; a `w FILE` command (or `s///w FILE`) in
    /// its script writes FILE.
    fn sed(&mut self, args: &[Word], cwd: Option<&Path>) {
        let in_place = args.iter().any(|w| {
            w.text.starts_with("--in-place")
                || (w.text.starts_with('-')
                    && !w.text.starts_with("--")
                    && w.text[1..].starts_with(|c: char| c.is_ascii_alphabetic())
                    && w.text[1..].contains('i'))
        });
        let mut scripts: Vec<&Word> = Vec::new();
        let mut iter = args.iter();
        while let Some(w) = iter.next() {
            if matches!(w.text.as_str(), "-e" | "--expression") {
                scripts.extend(iter.next());
            } else if w.text.starts_with("--expression=") {
                scripts.push(w);
            }
        }
        let scripted = !scripts.is_empty()
            || args.iter().any(|w| {
                matches!(w.text.as_str(), "-f" | "--file") || w.text.starts_with("--file=")
            });
        let files = operands(
            args,
            &["-e", "-f", "-l", "--expression", "--file", "--line-length"],
        );
        if !scripted {
            scripts.extend(files.first().copied());
        }
        for script in scripts {
            for c in SED_WRITE.captures_iter(&script.text) {
                let file = Word {
                    text: c[1].trim().to_string(),
                    unknown_at: script.unknown_at.map(|_| 0),
                    ..Word::default()
                };
                self.write(&file, Change::Write, "sed w", cwd);
            }
        }
        if in_place {
            let skip = usize::from(!scripted);
            for w in files.into_iter().skip(skip) {
                self.write(w, Change::Edit, "sed -i", cwd);
            }
        }
    }

    /// `awk -i inplace` edits its files; `print > "FILE"` writes FILE;
    /// `| "CMD"` and `system("CMD")` run CMD.
    fn awk(&mut self, args: &[Word], cwd: Option<&Path>, scope: &mut Scope, depth: usize) {
        let mut in_place = false;
        let mut program: Option<&Word> = None;
        let mut program_file = false;
        let mut files = Vec::new();
        let mut iter = args.iter();
        let mut options = true;
        while let Some(w) = iter.next() {
            let t = w.text.as_str();
            if options && t == "--" {
                options = false;
            } else if options && (t == "-i" || t == "--include") {
                in_place |= iter.next().is_some_and(|v| v.text.contains("inplace"));
            } else if options && (t.starts_with("-i") || t.starts_with("--include=")) {
                in_place |= t.contains("inplace");
            } else if options && matches!(t, "-f" | "--file") {
                program_file = true;
                iter.next();
            } else if options
                && matches!(
                    t,
                    "-v" | "--assign"
                        | "-F"
                        | "--field-separator"
                        | "-E"
                        | "--exec"
                        | "-l"
                        | "--load"
                )
            {
                iter.next();
            } else if options && t.starts_with('-') && t.len() > 1 {
            } else if program.is_none() && !program_file {
                program = Some(w);
            } else if !t.contains('=') || t.starts_with('/') || t.starts_with('.') {
                files.push(w);
            }
        }
        if let Some(program) = program {
            for c in AWK_WRITE.captures_iter(&program.text) {
                let target = c[2].to_string();
                if &c[1] == "|" {
                    self.script(&target, &mut scope.clone(), depth + 1, Stream::Empty);
                } else {
                    let word = Word {
                        text: target,
                        unknown_at: program.unknown_at.map(|_| 0),
                        ..Word::default()
                    };
                    self.write(&word, Change::Write, "awk", cwd);
                }
            }
            for c in AWK_SYSTEM.captures_iter(&program.text) {
                self.script(&c[1], &mut scope.clone(), depth + 1, Stream::Empty);
            }
        }
        if in_place {
            for w in files {
                self.write(w, Change::Edit, "awk -i inplace", cwd);
            }
        }
    }

    /// `perl -i` edits its files.
    fn perl_in_place(&mut self, args: &[Word], cwd: Option<&Path>) {
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
            for w in files.into_iter().skip(usize::from(!scripted)) {
                self.write(w, Change::Edit, "perl -i", cwd);
            }
        }
    }

    /// `patch [FILE [PATCHFILE]]`: FILE, or the files the patch names when
    /// it is literal (a heredoc); a patch from elsewhere changes files the
    /// hook cannot name.
    fn patch(&mut self, args: &[Word], stdin: &Stream, cwd: Option<&Path>) {
        let mut strip: Option<usize> = None;
        let mut dir: Option<Word> = None;
        let mut patch_file = false;
        let mut dry_run = false;
        let mut out_file = None;
        let mut files = Vec::new();
        let mut iter = args.iter();
        while let Some(w) = iter.next() {
            let t = w.text.as_str();
            match t {
                "--dry-run" | "-C" | "--check" => dry_run = true,
                "-i" | "--input" => {
                    patch_file = true;
                    iter.next();
                }
                "-d" | "--directory" => dir = iter.next().cloned(),
                "-o" | "--output" => out_file = iter.next().cloned(),
                "-p" | "--strip" => strip = iter.next().and_then(|n| n.text.parse().ok()),
                "-r" | "--reject-file" | "-B" | "--prefix" | "-z" | "--suffix" | "-D" | "-F"
                | "--fuzz" | "-V" => {
                    iter.next();
                }
                t if t.starts_with("-p") => strip = t[2..].parse().ok(),
                t if t.starts_with("--strip=") => strip = t[8..].parse().ok(),
                t if t.starts_with("--input=") || t.starts_with("-i") && t.len() > 2 => {
                    patch_file = true;
                }
                t if t.starts_with('-') && t.len() > 1 => {}
                _ => files.push(w),
            }
        }
        if dry_run {
            return;
        }
        let base = match &dir {
            Some(d) => Some(path_of(d, cwd)).filter(|p| p.is_absolute()),
            None => cwd.map(Path::to_path_buf),
        };
        let base = base.as_deref();
        if let Some(out) = out_file {
            self.write(&out, Change::Write, "patch -o", cwd);
            return;
        }
        if let Some(file) = files.first() {
            self.write(file, Change::Edit, "patch", base);
            return;
        }
        match stdin {
            Stream::Text(text) if !patch_file => {
                for name in patched_files(text, strip) {
                    self.write(&Word::literal(name), Change::Edit, "patch", base);
                }
            }
            Stream::Empty if !patch_file => {}
            other => {
                let from = if patch_file {
                    "a patch file".to_string()
                } else {
                    other.describe()
                };
                self.unknown(
                    base.map(Path::to_path_buf),
                    format!("the files a patch from {from} changes"),
                );
            }
        }
    }

    /// Editors change the files they open (`-R`, `view`: read only).
    fn editor(&mut self, name: &str, args: &[Word], cwd: Option<&Path>) {
        if name == "view" || args.iter().any(|w| w.text == "-R" || w.text == "-M") {
            return;
        }
        let valued: &[&str] = &[
            "-c",
            "--cmd",
            "-S",
            "-s",
            "-u",
            "-U",
            "-i",
            "-T",
            "-t",
            "-q",
            "-r",
            "--servername",
            "-p",
            "--eval",
            "--load",
            "-l",
            "--funcall",
            "-f",
        ];
        let mut iter = args.iter();
        let mut options = true;
        while let Some(w) = iter.next() {
            let t = w.text.as_str();
            if options && t == "--" {
                options = false;
            } else if options && matches!(t, "-w" | "-W") {
                // Vim's `-W FILE` writes every typed key to FILE.
                if let Some(file) = iter.next() {
                    self.write(file, Change::Write, leak(name), cwd);
                }
            } else if options && valued.contains(&t) && !(name == "ed" && t == "-s") {
                iter.next();
            } else if options && (t.starts_with('-') || t.starts_with('+')) && t.len() > 1 {
            } else {
                self.write(w, Change::Edit, leak(name), cwd);
            }
        }
    }

    /// `curl -o FILE`, `--output FILE`, `wget -O FILE`, `-P DIR`.
    fn download(&mut self, name: &str, args: &[Word], cwd: Option<&Path>) {
        let mut iter = args.iter();
        while let Some(w) = iter.next() {
            let t = w.text.as_str();
            // `-o FILE`, or a cluster ending in it (`-so FILE`).
            let short = if name == "curl" { 'o' } else { 'O' };
            let cluster = t.len() > 1
                && !t.starts_with("--")
                && t.starts_with('-')
                && t.ends_with(short)
                && t[1..].chars().all(|c| c.is_ascii_alphabetic());
            let file_flag = cluster
                || match name {
                    "curl" => t == "--output",
                    _ => t == "--output-document",
                };
            if file_flag || (name == "wget" && matches!(t, "-P" | "--directory-prefix")) {
                if let Some(file) = iter.next().filter(|f| f.text != "-") {
                    self.write(file, Change::Write, leak(name), cwd);
                }
            } else if let Some(file) = t
                .strip_prefix("--output=")
                .or_else(|| t.strip_prefix("--output-document="))
            {
                let file = retext(w, file, t.len() - file.len());
                if file.text != "-" {
                    self.write(&file, Change::Write, leak(name), cwd);
                }
            }
        }
    }
}

/// True when the short-option word `t` (`-fu`) holds the flag `flag`.
fn is_flag(t: &str, flag: char) -> bool {
    t.strip_prefix('-')
        .filter(|f| !f.starts_with('-'))
        .is_some_and(|f| f.chars().all(|c| c.is_ascii_alphabetic()) && f.contains(flag))
}

/// The part of `w` from byte `cut` on, as a word of its own.
fn retext(w: &Word, text: &str, cut: usize) -> Word {
    Word {
        text: text.to_string(),
        unknown_at: w.unknown_at.map(|at| at.saturating_sub(cut)),
        ..w.clone()
    }
}

/// A program name as the `by` of a write: the known names are static.
fn leak(name: &str) -> &'static str {
    const NAMES: &[&str] = &[
        "cp", "mv", "install", "ln", "rsync", "chmod", "chown", "chgrp", "ed", "red", "ex", "vi",
        "vim", "nvim", "gvim", "nano", "pico", "emacs", "micro", "kak", "hx", "mcedit", "curl",
        "wget",
    ];
    NAMES
        .iter()
        .find(|n| **n == name)
        .copied()
        .unwrap_or("a program")
}

/// A sed `w FILE` command, or the `w FILE` flag of `s///`.
static SED_WRITE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)(?:^|[;{}]|[0-9$/]|/[gpiIme0-9]+)\s*[wW]\s+([^;\n}]+)")
        .expect("a valid pattern")
});

/// awk's `print > "FILE"`, `>> "FILE"`, `| "CMD"`.
static AWK_WRITE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"(>>|>|\|)\s*"([^"]+)""#).expect("a valid pattern"));

/// awk's `system("CMD")`.
static AWK_SYSTEM: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"system\s*\(\s*"([^"]+)""#).expect("a valid pattern"));

/// The files a unified or context diff changes: its `+++ NAME` lines (the
/// `--- NAME` ones for a deletion), `strip` leading directories removed
/// (`-pN`; without it, only the base name, as patch does).
pub fn patched_files(text: &str, strip: Option<usize>) -> Vec<String> {
    let mut out = Vec::new();
    let mut old: Option<&str> = None;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("--- ") {
            old = Some(name);
            continue;
        }
        let Some(name) = line.strip_prefix("+++ ") else {
            continue;
        };
        let name = match (name.split('\t').next().unwrap_or(name).trim(), old) {
            ("/dev/null", Some(old)) => old.split('\t').next().unwrap_or(old).trim(),
            (name, _) => name,
        };
        let name = match strip {
            Some(n) => name.splitn(n + 1, '/').nth(n).unwrap_or(name),
            None => name.rsplit('/').next().unwrap_or(name),
        };
        if !name.is_empty() && name != "/dev/null" && !out.iter().any(|o: &String| o == name) {
            out.push(name.to_string());
        }
    }
    out
}
