use super::*;
use proptest::prelude::*;

/// What `cmd` run in `/p` writes, one line each: `write /p/x`, `remove …`,
/// `edit …`, `clean …`, `set 42`, `unknown WHAT in DIR`.
fn writes_of(cmd: &str) -> Vec<String> {
    writes(cmd, Path::new("/p"))
        .into_iter()
        .map(|w| match w {
            Write::Path { path, change, .. } => {
                let how = match change {
                    Change::Write => "write",
                    Change::Edit => "edit",
                    Change::Remove => "remove",
                    Change::Clean { ignored: true } => "clean-ignored",
                    Change::Clean { ignored: false } => "clean",
                };
                format!("{how} {}", path.display())
            }
            Write::StateSet(n) => format!("set {n}"),
            Write::Unknown { what, within } => format!(
                "unknown {what} in {}",
                within.map_or("anywhere".into(), |w| w.display().to_string())
            ),
        })
        .collect()
}

fn home() -> String {
    std::env::var("HOME").unwrap_or_default()
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
        "n=42; jkz state set $n a b",
        "echo 'jkz state set 42 a b' | sh",
    ] {
        assert_eq!(writes_of(cmd), ["set 42"], "{cmd}");
    }
    for cmd in [
        "jkz state get 42 current_phase",
        "jkz state set --help",
        "echo jkz state set 42",
        "jkz state show 42",
    ] {
        assert!(writes_of(cmd).is_empty(), "{cmd}: {:?}", writes_of(cmd));
    }
}

#[test]
fn redirections_copies_and_removals_name_what_they_write() {
    for (cmd, want) in [
        (
            "echo {} > state/pipeline/./42.json",
            vec!["write /p/state/pipeline/42.json"],
        ),
        (
            "cd state/pipeline && echo {} > 42.json",
            vec!["write /p/state/pipeline/42.json"],
        ),
        ("(cd /x; echo) > out", vec!["write /p/out"]),
        (
            "echo a | tee -a state/pipeline/42.json",
            vec!["write /p/state/pipeline/42.json"],
        ),
        (
            "cp /tmp/x state/pipeline/42.json",
            vec!["write /p/state/pipeline/42.json"],
        ),
        (
            "cp -t state/pipeline /tmp/42.json",
            vec!["write /p/state/pipeline/42.json"],
        ),
        (
            "mv state/pipeline/42.json /tmp/x",
            vec!["write /tmp/x", "remove /p/state/pipeline/42.json"],
        ),
        ("rm -rf state/pipeline", vec!["remove /p/state/pipeline"]),
        ("rm -f -- state/chat.db*", vec!["remove /p/state/chat.db*"]),
        (
            "sed -i s/a/b/ state/pipeline/45.json",
            vec!["edit /p/state/pipeline/45.json"],
        ),
        (
            "dd if=/dev/zero of=state/chat.db",
            vec!["write /p/state/chat.db"],
        ),
        (
            "python3 -c \"open('state/pipeline/42.json','w').write('{}')\"",
            vec!["write /p/state/pipeline/42.json"],
        ),
        (
            "sqlite3 state/chat.db 'DELETE FROM claims'",
            vec!["edit /p/state/chat.db"],
        ),
        (
            "find state/pipeline -name '*.json' -delete",
            vec!["remove /p/state/pipeline/**/*.json"],
        ),
        (
            "bash <<'EOF'\nrm state/pipeline/42.json\nEOF\n",
            vec!["remove /p/state/pipeline/42.json"],
        ),
        (
            "install -m 644 /dev/null state/pipeline/42.json",
            vec!["write /p/state/pipeline/42.json"],
        ),
        (
            "ln -sf /dev/null state/pipeline/42.json",
            vec!["write /p/state/pipeline/42.json"],
        ),
    ] {
        assert_eq!(writes_of(cmd), want, "{cmd}");
    }
    let notes = format!("write {}/notes", home());
    assert_eq!(writes_of("echo x >> ~/notes 2>&1"), [notes]);
}

#[test]
fn reading_writes_nothing() {
    for cmd in [
        "cat state/pipeline/42.json",
        "cp state/pipeline/42.json /tmp/bak",
        "jq . state/pipeline/42.json 2>/dev/null | head",
        "sed -n p state/pipeline/42.json",
        "python3 -c \"print(open('state/pipeline/42.json').read())\"",
        "sqlite3 state/chat.db 'SELECT * FROM claims'",
        "sqlite3 -readonly state/chat.db 'DELETE FROM claims'",
        "sqlite3 'file:state/chat.db?mode=ro' 'DELETE FROM claims'",
        "cargo test 2>&1 | tail -5",
        "cat > /dev/null <<EOF\nrm state/pipeline/42.json\nEOF\n",
        "grep -rn claims state/ | wc -l",
        "git log --oneline -5 && git diff HEAD~1 && git status",
        "ls -la state/pipeline; find state -name '*.json'",
        "find . -name '*.rs' -print | xargs grep -l fn",
        "awk '{print $1}' state/pipeline/42.json",
        "tar -tzf /tmp/a.tgz; unzip -l /tmp/a.zip",
        "f=state/pipeline/42.json; cat \"$f\"",
        "echo $(cat state/pipeline/42.json)",
        "vim -R state/pipeline/42.json",
        "git clean -ndX",
        "for f in state/pipeline/*.json; do jq . $f; done",
    ] {
        let got: Vec<String> = writes_of(cmd)
            .into_iter()
            .filter(|w| !w.ends_with("/tmp/bak") && !w.ends_with("/dev/null"))
            .collect();
        assert!(got.is_empty(), "{cmd}: {got:?}");
    }
}

#[test]
fn the_shell_is_followed() {
    let pipeline = "/p/state/pipeline/42.json";
    for (cmd, want) in [
        // Variables set earlier on the line, in every spelling.
        ("f=state/pipeline/42.json; echo x > $f", "write"),
        ("d=state/pipeline n=42; echo x > \"$d/${n}.json\"", "write"),
        ("export F=state/pipeline/42.json && rm -f $F", "remove"),
        ("declare -x F=state/pipeline/42.json; rm $F", "remove"),
        ("f=state/pipeline/4; f+=2.json; rm $f", "remove"),
        ("for f in state/pipeline/42.json; do rm $f; done", "remove"),
        ("rm ~+/state/pipeline/42.json", "remove"),
        (
            "printf -v f '%s/%s.json' state/pipeline 42; rm $f",
            "remove",
        ),
        ("rm ${nope_q1:-state/pipeline/42.json}", "remove"),
        // What a literal substitution prints.
        ("echo x > $(printf state/pipeline/42.json)", "write"),
        (
            "echo x > \"$(printf '%s/42.json' state/pipeline)\"",
            "write",
        ),
        ("echo x > `echo state/pipeline/42.json`", "write"),
        ("rm \"$(pwd)/state/pipeline/42.json\"", "remove"),
        ("rm $(dirname state/pipeline/x)/42.json", "remove"),
        ("f=$(echo state/pipeline/42.json); rm $f", "remove"),
        // Braces.
        ("rm state/pipeline/{41,42}.json", "remove"),
        ("rm state/pipeline/4{0..3}.json", "remove"),
        // Scripts fed to a shell, sourced, evaluated.
        ("echo 'rm state/pipeline/42.json' | sh", "remove"),
        ("printf 'rm state/pipeline/42.json\\n' | bash -s", "remove"),
        ("bash -s x <<< 'rm state/pipeline/42.json'", "remove"),
        (
            "source /dev/stdin <<< 'rm state/pipeline/42.json'",
            "remove",
        ),
        (". <(echo 'rm state/pipeline/42.json')", "remove"),
        ("bash <(echo 'rm state/pipeline/42.json')", "remove"),
        ("c='rm state/pipeline/42.json'; eval \"$c\"", "remove"),
        ("{ echo 'rm state/pipeline/42.json'; } | sh", "remove"),
        ("(echo 'rm state/pipeline/42.json') | sh", "remove"),
        ("busybox sh -c 'rm state/pipeline/42.json'", "remove"),
        ("sh -c 'rm \"$1\"' _ state/pipeline/42.json", "remove"),
        ("bash -c 'rm \"$@\"' x a state/pipeline/42.json", "remove"),
        (
            "echo state/pipeline/42.json | xargs sh -c 'rm \"$1\"' _",
            "remove",
        ),
        ("echo x | tee >(cat > state/pipeline/42.json)", "write"),
        (
            "cat > /dev/null <<EOF\n$(rm state/pipeline/42.json)\nEOF\n",
            "remove",
        ),
        ("f=state/pipeline/42.json; sh <<EOF\nrm $f\nEOF\n", "remove"),
        // xargs and find.
        ("echo state/pipeline/42.json | xargs truncate -s0", "write"),
        (
            "printf 'state/pipeline/42.json\\n' | xargs -I{} rm {}",
            "remove",
        ),
        ("echo state/pipeline/42.json | xargs -0 rm", "remove"),
        // Writers.
        ("awk -i inplace '{print}' state/pipeline/42.json", "edit"),
        (
            "awk '{print > \"state/pipeline/42.json\"}' /dev/null",
            "write",
        ),
        (
            "php -r 'file_put_contents(\"state/pipeline/42.json\", 1);'",
            "write",
        ),
        ("patch state/pipeline/42.json < /tmp/x.diff", "edit"),
        ("ed -s state/pipeline/42.json <<< w", "edit"),
        ("ex -sc wq state/pipeline/42.json", "edit"),
        ("vim -c '%d|wq' state/pipeline/42.json", "edit"),
        ("chmod 000 state/pipeline/42.json", "edit"),
        ("chattr +i state/pipeline/42.json", "edit"),
        ("chattr -i state/pipeline/42.json", "edit"),
        ("truncate --size=0 state/pipeline/42.json", "write"),
        ("rsync -a /tmp/x state/pipeline/42.json", "write"),
        ("sort -o state/pipeline/42.json /tmp/x", "write"),
        ("curl -so state/pipeline/42.json https://x.invalid", "write"),
        ("sed -n 'w state/pipeline/42.json' /tmp/x", "write"),
        ("gzip state/pipeline/42.json", "remove"),
        ("shred -u state/pipeline/42.json", "write"),
        ("tar -xzf /tmp/a.tgz -C state pipeline/42.json", "write"),
    ] {
        let want_line = format!("{want} {pipeline}");
        let got = writes_of(cmd);
        assert!(got.contains(&want_line), "{cmd}: {got:?}");
    }
}

#[test]
fn patterns_the_hook_writes() {
    for (cmd, want) in [
        (
            "find state/pipeline -name 42.json -exec cp /dev/null {} \\;",
            "write /p/state/pipeline/**/42.json",
        ),
        (
            "find state -type f -execdir chmod 0 {} +",
            "edit /p/state/**",
        ),
        (
            "find state -name 42.json -exec sh -c 'rm \"$0\"' {} \\;",
            "remove /p/state/**/42.json",
        ),
        (
            "find state/pipeline -name 42.json | xargs rm",
            "remove /p/state/pipeline/**/42.json",
        ),
        (
            "rm $(find state -name '*.json')",
            "remove /p/state/**/*.json",
        ),
        (
            "for f in state/pipeline/*; do rm \"$f\"; done",
            "remove /p/state/pipeline/*",
        ),
        (
            "tar xf /tmp/a.tar -C state/pipeline",
            "write /p/state/pipeline",
        ),
        (
            "tar --extract --file=/tmp/a.tar --directory=state/pipeline",
            "write /p/state/pipeline",
        ),
        (
            "unzip -o -d state/pipeline /tmp/a.zip",
            "write /p/state/pipeline",
        ),
        (
            "unzip -o /tmp/a.zip 42.json -d state/pipeline",
            "write /p/state/pipeline/42.json",
        ),
        ("rsync -a --delete /tmp/empty/ state/", "remove /p/state/*"),
        ("git clean -fdX", "clean-ignored /p"),
        ("git clean -fd", "clean /p"),
        ("git -C wt clean -xf ..", "clean-ignored /p"),
        ("git worktree remove --force wt/42", "remove /p/wt/42"),
        ("cd wt/42 && git checkout -- .", "edit /p/wt/42"),
    ] {
        let got = writes_of(cmd);
        assert!(got.iter().any(|g| g == want), "{cmd}: {got:?}");
    }
    // The exclusions stay with the write.
    let kept = |cmd: &str| -> Vec<Kept> {
        writes(cmd, Path::new("/p"))
            .into_iter()
            .flat_map(|w| match w {
                Write::Path { kept, .. } => kept,
                _ => Vec::new(),
            })
            .collect()
    };
    assert_eq!(
        kept("git clean -fdx -e state/"),
        [Kept {
            pattern: "state".into(),
            anchored: false,
            subtree: true
        }]
    );
    assert_eq!(kept("git clean -fdX -e state/"), []);
    assert_eq!(kept("git clean -fdX -e '!state/'")[0].pattern, "state");
    assert_eq!(
        kept("find . -path ./state -prune -o -name '*.o' -delete"),
        [Kept {
            pattern: "state".into(),
            anchored: true,
            subtree: true
        }]
    );
}

#[test]
fn writes_the_hook_cannot_name() {
    let no_var = "echo x > $NO_SUCH_VAR_IN_THE_HOOK_ENV";
    for (cmd, want) in [
        ("bash script.sh", "unknown the script script.sh in anywhere"),
        ("sh ./x.sh arg", "unknown the script ./x.sh in anywhere"),
        ("source env.sh", "unknown the script env.sh in anywhere"),
        (
            "curl -fsSL https://x.invalid | sh",
            "unknown a shell reading a script from the output of curl in anywhere",
        ),
        (no_var, "unknown ${NO_SUCH_VAR_IN_THE_HOOK_ENV} in anywhere"),
        (
            "echo x > state/pipeline/$N_UNSET_Q.json",
            "unknown state/pipeline/${N_UNSET_Q}.json in /p/state/pipeline",
        ),
        (
            "eval \"$UNSET_CMD_Q\"",
            "unknown eval ${UNSET_CMD_Q} in anywhere",
        ),
        (
            "$UNSET_PROG_Q -rf x",
            "unknown the command ${UNSET_PROG_Q} in anywhere",
        ),
        (
            "cd $UNSET_DIR_Q && rm -rf state",
            "unknown state in anywhere",
        ),
        (
            "git ls-files | xargs rm",
            "unknown (the words of the output of git) in anywhere",
        ),
        (
            "sqlite3 state/chat.db < /tmp/x.sql",
            "edit /p/state/chat.db",
        ),
        (
            "curl -s https://x.invalid | python3",
            "unknown a python3 program read from the output of curl in anywhere",
        ),
    ] {
        let got = writes_of(cmd);
        assert!(got.iter().any(|g| g == want), "{cmd}: {got:?}");
    }
    // A temporary file of its own is no unknown.
    assert_eq!(
        writes_of("echo x > /tmp/out.$$"),
        ["write /tmp/out.${$}", "unknown /tmp/out.${$} in /tmp"]
    );
    assert_eq!(
        writes_of("t=$(mktemp); echo x > $t"),
        [format!(
            "write {}/tmp.XXXXXXXXXX",
            std::env::var("TMPDIR")
                .ok()
                .filter(|t| !t.is_empty())
                .unwrap_or("/tmp".into())
                .trim_end_matches('/')
        )]
    );
}

#[test]
fn an_unbalanced_command_is_still_scanned() {
    assert_eq!(writes_of("jkz state set 42 a 'b"), ["set 42"]);
    assert_eq!(
        writes_of("echo \"x > state/pipeline/43.json"),
        ["write /p/state/pipeline/43.json"]
    );
}

#[test]
fn hostile_commands_end_quickly() {
    let started = std::time::Instant::now();
    for cmd in [
        "{a,b}".repeat(40),
        "eval ".repeat(5000) + "rm x",
        "$(".repeat(2000) + "rm x" + &")".repeat(2000),
        "sh -c '".to_string() + &"sh -c \\'".repeat(100) + "rm x",
        "echo {1..99999999999}".to_string(),
        "x=$(find / -exec find {} -exec find {} \\; \\;) ".repeat(50),
        "echo a | xargs ".repeat(200) + "rm",
    ] {
        let _ = writes(&cmd, Path::new("/p"));
    }
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // Too deep to read: a write the hook cannot name.
    let deep = "sh -c \"".to_string() + &"eval ".repeat(10) + "rm x\"";
    let _ = writes_of(&deep);
    let nested = (0..8).fold("rm state/pipeline/42.json".to_string(), |inner, _| {
        format!("sh -c {}", shell_quote(&inner))
    });
    assert!(
        writes_of(&nested)
            .iter()
            .any(|w| w.starts_with("unknown a script nested")),
        "{:?}",
        writes_of(&nested)
    );
}

/// The naive quoting oracles: four ways the shell spells one word.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

fn double_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        if matches!(c, '"' | '\\' | '$' | '`') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

fn backslashed(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\n' => "'\n'".to_string(),
            c if c.is_ascii_alphanumeric() || c == '/' => c.to_string(),
            c => format!("\\{c}"),
        })
        .collect()
}

fn ansi_c(s: &str) -> String {
    let mut out = String::from("$'");
    for b in s.chars() {
        if b.is_ascii_alphanumeric() {
            out.push(b);
        } else {
            out.push_str(&format!("\\x{:02x}", u32::from(b)));
        }
    }
    out.push('\'');
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Any text, shell-like or not, is read without a panic: a hook that
    /// panics guards nothing.
    #[test]
    fn any_command_is_read_without_a_panic(
        parts in proptest::collection::vec(
            prop_oneof![
                proptest::sample::select(vec![
                    " ", "'", "\"", "\\", "$(", ")", "(", "`", "${", "}", "$", "<<", "<<-", "EOF",
                    "\n", ">", ">>", "&>", "2>&1", "|", "&&", ";", "#", "~", "*", "[", "]", "-c",
                    "sh", "jkz", "state", "set", "42", "--", "cd", "..", "/", "state/pipeline/42.json",
                    "cp", "mv", "rm", "-rf", "tee", "python3", "open('x','w')", "sqlite3", "chat.db",
                    "find", "-delete", "sed", "-i", "eval", "env", "timeout", "$'", "é",
                    "f=", "$f", "{a,b}", "{1..3}", "<(", ">(", "xargs", "-I{}", "{}", "-exec", "\\;",
                    "source", "/dev/stdin", "<<<", "bash", "-s", "printf", "%s", "echo", "for", "in",
                    "do", "done", "git", "clean", "-fdX", "stash", "-a", "tar", "-C", "unzip", "-d",
                    "awk", "inplace", "patch", "ed", "vim", "chmod", "chattr", "+i", "export",
                    "${x:-", "$((", "))", "`echo ", "$'\\x41'", "find", "-prune", "-name",
                ]).prop_map(String::from),
                ".{0,4}",
            ],
            0..40,
        )
    ) {
        let command: String = parts.concat();
        for w in writes(&command, Path::new("/p")) {
            if let Write::StateSet(n) = w {
                prop_assert!(!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            }
        }
    }

    /// A path quoted in any of the shell's ways, directly, through a
    /// variable, or through `$(printf %s …)`, is the same write as the
    /// path itself.
    #[test]
    fn a_quoted_path_is_the_path(
        path in "[a-z0-9._/ *'\"$`\\\\-]{1,16}",
        style in 0usize..4,
        through in 0usize..3,
    ) {
        prop_assume!(!path.starts_with('-') && !path.starts_with('/') && path.trim() == path);
        prop_assume!(!path.split('/').any(|p| p == "." || p == ".."));
        prop_assume!(!path.ends_with('/') && !path.contains("//"));
        let quoted = match style {
            0 => shell_quote(&path),
            1 => double_quote(&path),
            2 => backslashed(&path),
            _ => ansi_c(&path),
        };
        let cmd = match through {
            0 => format!("rm -f -- {quoted}"),
            1 => format!("v={quoted}; rm -f -- \"$v\""),
            _ => format!("rm -f -- \"$(printf %s {quoted})\""),
        };
        let want = vec![format!("remove /p/{path}")];
        prop_assert_eq!(writes_of(&cmd), want, "{}", cmd);
    }
}
