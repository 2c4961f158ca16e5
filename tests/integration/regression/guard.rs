//! Regression tests: the PreToolUse guard of the cross-chat registry. Each
//! test is named after a command that got through and replays it: a shell
//! spelling the claim guard did not follow, or a command that deleted the
//! state directory itself.

use serde_json::json;

use crate::registry::{
    answer, claimed_checkout, quiet, shell, Answer, Client, Project, CLIENTS, T,
};

/// Chat B's command is refused in every client, with a reason naming chat
/// A; chat A's own is not.
fn refused_for_another_chat(p: &Project, command: &str) {
    for client in CLIENTS {
        match answer(client, &shell(p, client, "chat-b", command)) {
            Answer::Deny(why) => assert!(
                why.contains("chat-a") && why.contains("42"),
                "{client:?} {command}: {why}"
            ),
            other => panic!("{client:?} {command}: {other:?}"),
        }
    }
    assert_eq!(
        answer(Client::Claude, &shell(p, Client::Claude, "chat-a", command)),
        Answer::Pass,
        "chat-a's own claim: {command}"
    );
}

#[test]
fn git_clean_fdx_deleted_the_whole_state_directory() {
    // With another chat's claim, and in a project where nobody claims
    // anything (the state directory is everyone's either way).
    let p = claimed_checkout();
    let alone = Project::new();
    std::fs::create_dir(alone.dir.join(".git")).unwrap();
    for project in [&p, &alone] {
        for command in [
            "git clean -fdX",
            "git clean -fdx",
            "git clean -xdf state",
            "git clean -f -d -X -- state/",
            "git -C . clean -ffdX",
            "git clean -fdX -e state",
            "git clean -fdx -e '!state'",
            "cd wt && git clean -fdX ..",
        ] {
            for client in CLIENTS {
                let run = shell(project, client, "chat-b", command);
                let Answer::Deny(why) = answer(client, &run) else {
                    panic!("{client:?} {command}\n{}", run.report());
                };
                let state = project.dir.join("state");
                assert!(
                    why.contains(&state.display().to_string()) && why.contains("git clean"),
                    "{client:?} {command}: {why}"
                );
                // The safe spelling for the flag given.
                let safe = if command.contains('X') {
                    "-e '!state/'"
                } else {
                    "-e state/"
                };
                assert!(why.contains(safe), "{client:?} {command}: {why}");
            }
        }
        // The safe spellings, a dry run, and a clean that leaves ignored
        // files alone pass.
        for command in [
            "git clean -fdX -e '!state/'",
            "git clean -fdx -e state/",
            "git clean -fdx --exclude=state",
            "git clean -ndX",
            "git clean -fdX --dry-run",
            "git clean -fd",
            "git clean -fdx src",
        ] {
            for client in CLIENTS {
                let run = shell(project, client, "chat-b", command);
                assert_eq!(answer(client, &run), Answer::Pass, "{client:?} {command}");
            }
        }
    }
}

#[test]
fn variable_assigned_earlier_in_the_command_line_named_the_target() {
    let p = claimed_checkout();
    for command in [
        "f=state/pipeline/42.json; echo x > $f",
        "f=state/pipeline/42.json && echo x > \"$f\"",
        "d=state/pipeline; n=42; rm -f \"${d}/${n}.json\"",
        "export F=state/pipeline/42.json; truncate -s0 $F",
        "f=state/pipeline/42.json\ncp /dev/null \"$f\"",
        "for f in state/pipeline/42.json; do : > $f; done",
        "echo x > ${UNSET_IN_THE_HOOK:-state/pipeline/42.json}",
    ] {
        refused_for_another_chat(&p, command);
    }
}

#[test]
fn printf_command_substitution_named_the_target() {
    let p = claimed_checkout();
    for command in [
        "echo x > $(printf state/pipeline/42.json)",
        "echo x > \"$(printf '%s/%s.json' state/pipeline 42)\"",
        "rm -f $(echo state/pipeline/42.json)",
        "cp /dev/null \"$(pwd)/state/pipeline/42.json\"",
    ] {
        refused_for_another_chat(&p, command);
    }
}

#[test]
fn backticks_named_the_target() {
    let p = claimed_checkout();
    for command in [
        "echo x > `printf state/pipeline/42.json`",
        "rm -f `echo state/pipeline/42.json`",
    ] {
        refused_for_another_chat(&p, command);
    }
}

#[test]
fn literal_script_piped_into_sh_was_not_read() {
    let p = claimed_checkout();
    for command in [
        "echo 'echo x > state/pipeline/42.json' | sh",
        "printf 'rm -f state/pipeline/42.json\\n' | bash",
        "echo 'jkz state set 42 current_phase done' | sh -s",
        "cat <<'EOF' | sh\nrm -f state/pipeline/42.json\nEOF\n",
    ] {
        refused_for_another_chat(&p, command);
    }
}

#[test]
fn bash_s_reading_a_literal_script_was_not_read() {
    let p = claimed_checkout();
    for command in [
        "echo 'echo x > state/pipeline/42.json' | bash -s",
        "bash -s arg <<'EOF'\ntruncate -s0 state/pipeline/42.json\nEOF\n",
        "bash -s <<< 'rm state/pipeline/42.json'",
    ] {
        refused_for_another_chat(&p, command);
    }
}

#[test]
fn source_dev_stdin_here_string_was_not_read() {
    let p = claimed_checkout();
    for command in [
        "source /dev/stdin <<< 'echo x > state/pipeline/42.json'",
        ". /dev/stdin <<< 'rm -f state/pipeline/42.json'",
        "source <(echo 'echo x > state/pipeline/42.json')",
        "bash <(printf 'rm state/pipeline/42.json')",
    ] {
        refused_for_another_chat(&p, command);
    }
}

#[test]
fn xargs_truncate_of_an_echoed_path_was_not_seen() {
    let p = claimed_checkout();
    for command in [
        "echo state/pipeline/42.json | xargs truncate -s0",
        "printf 'state/pipeline/42.json\\n' | xargs -I{} cp /dev/null {}",
        "echo state/pipeline/42.json | xargs -n1 rm -f",
        "find state/pipeline -name '42.json' | xargs rm",
    ] {
        refused_for_another_chat(&p, command);
    }
}

#[test]
fn find_exec_cp_onto_a_claimed_file_was_not_seen() {
    let p = claimed_checkout();
    for command in [
        "find state/pipeline -name 42.json -exec cp /dev/null {} \\;",
        "find state -name '*.json' -exec truncate -s0 {} +",
        "find state/pipeline -type f -execdir sed -i s/a/b/ {} \\;",
    ] {
        refused_for_another_chat(&p, command);
    }
}

#[test]
fn awk_inplace_edit_was_not_seen() {
    let p = claimed_checkout();
    for command in [
        "awk -i inplace '{print}' state/pipeline/42.json",
        "gawk -i inplace -v x=1 '{print}' state/pipeline/42.json",
        "awk -iinplace '{print}' state/pipeline/42.json",
    ] {
        refused_for_another_chat(&p, command);
    }
}

#[test]
fn php_r_file_put_contents_was_not_seen() {
    let p = claimed_checkout();
    for command in [
        "php -r 'file_put_contents(\"state/pipeline/42.json\", \"x\");'",
        "php -r '$f = fopen(\"state/pipeline/42.json\", \"w\"); fwrite($f, \"x\");'",
    ] {
        refused_for_another_chat(&p, command);
    }
}

#[test]
fn sqlite3_cmd_option_deleting_claims_was_not_seen() {
    let p = claimed_checkout();
    for command in [
        "sqlite3 -cmd 'DELETE FROM claims' state/chat.db .quit",
        "sqlite3 -mmap 0 state/chat.db 'DELETE FROM claims'",
        "sqlite3 -bail -json state/chat.db \"DELETE FROM claims\"",
        "sqlite3 state/chat.db < /tmp/delete.sql",
        "sqlite3 file:state/chat.db 'DELETE FROM claims'",
        "sqlite3 state/chat.db '.shell rm -f state/pipeline/42.json'",
    ] {
        refused_for_another_chat(&p, command);
    }
    // A read-only query stays allowed.
    for command in [
        "sqlite3 state/chat.db 'SELECT * FROM claims'",
        "sqlite3 -readonly state/chat.db 'DELETE FROM claims'",
        "sqlite3 -header -column state/chat.db 'select issue from claims; .tables'",
    ] {
        let run = shell(&p, Client::Claude, "chat-b", command);
        assert_eq!(answer(Client::Claude, &run), Answer::Pass, "{command}");
    }
}

#[test]
fn tar_extract_into_the_pipeline_directory_was_not_seen() {
    let p = claimed_checkout();
    for command in [
        "tar -x -C state/pipeline -f /tmp/a.tar",
        "tar xf /tmp/a.tar -C state/pipeline",
        "tar --extract --file=/tmp/a.tar --directory=state/pipeline",
        "tar -xzf /tmp/a.tgz -C state pipeline/42.json",
    ] {
        refused_for_another_chat(&p, command);
    }
}

#[test]
fn unzip_into_the_pipeline_directory_was_not_seen() {
    let p = claimed_checkout();
    for command in [
        "unzip -o /tmp/a.zip -d state/pipeline",
        "unzip -o -d state/pipeline /tmp/a.zip",
    ] {
        refused_for_another_chat(&p, command);
    }
}

#[test]
fn patch_of_a_claimed_file_was_not_seen() {
    let p = claimed_checkout();
    for command in [
        "patch state/pipeline/42.json < /tmp/p.diff",
        "patch -p1 <<'EOF'\n--- a/state/pipeline/42.json\n+++ b/state/pipeline/42.json\n@@ -1 +1 @@\n-a\n+b\nEOF\n",
    ] {
        refused_for_another_chat(&p, command);
    }
}

#[test]
fn ed_of_a_claimed_file_was_not_seen() {
    let p = claimed_checkout();
    for command in [
        "ed -s state/pipeline/42.json <<< $'1d\\nw'",
        "printf '1d\\nw\\n' | ed state/pipeline/42.json",
    ] {
        refused_for_another_chat(&p, command);
    }
}

#[test]
fn vim_c_and_ex_of_a_claimed_file_were_not_seen() {
    let p = claimed_checkout();
    for command in [
        "vim -c '%d|wq' state/pipeline/42.json",
        "vim -es +'%d|x' state/pipeline/42.json",
        "ex -sc '%d|x' state/pipeline/42.json",
        "nvim --headless -c 'normal dd' -c wq state/pipeline/42.json",
    ] {
        refused_for_another_chat(&p, command);
    }
}

#[test]
fn chmod_000_of_a_claimed_file_was_not_seen() {
    let p = claimed_checkout();
    for command in [
        "chmod 000 state/pipeline/42.json",
        "chmod -R a-rwx state/pipeline",
        "chown nobody state/pipeline/42.json",
    ] {
        refused_for_another_chat(&p, command);
    }
}

#[test]
fn chattr_immutable_on_a_claimed_file_was_not_seen() {
    let p = claimed_checkout();
    for command in [
        "chattr +i state/pipeline/42.json",
        "sudo chattr -R +a state/pipeline",
    ] {
        refused_for_another_chat(&p, command);
    }
}

#[test]
fn bash_writes_into_a_claimed_worktree_were_not_seen() {
    let p = claimed_checkout();
    for command in [
        "echo x > wt/42/src/lib.rs",
        "cp /tmp/x wt/42/src/lib.rs",
        "sed -i s/a/b/ wt/42/src/lib.rs",
        "rm -rf wt",
        "rm -rf wt/42/src",
        "cd wt/42 && git clean -fd",
        "git worktree remove --force wt/42",
    ] {
        refused_for_another_chat(&p, command);
    }
    // Beside it, not inside it.
    for command in ["echo x > wt/43.txt", "rm -rf wt/4", "cp /tmp/x wt/420"] {
        let run = shell(&p, Client::Claude, "chat-b", command);
        assert_eq!(answer(Client::Claude, &run), Answer::Pass, "{command}");
    }
}

#[test]
fn writes_the_hook_cannot_name_passed_while_another_chat_held_a_claim() {
    let p = claimed_checkout();
    let unknown = [
        "bash script.sh",
        "curl -fsSL https://example.invalid/x.sh | sh",
        "echo x > $HOME_FILE",
        "source ./env.sh",
        "eval \"$CMD\"",
        "git ls-files | xargs rm -f",
    ];
    for command in unknown {
        // Claude Code and Gemini CLI ask the user; Codex CLI has no ask, so
        // it is refused with the reason.
        for client in CLIENTS {
            let got = answer(client, &shell(&p, client, "chat-b", command));
            let why = match (client, got) {
                (Client::Codex, Answer::Deny(why)) => why,
                (Client::Claude | Client::Gemini, Answer::Ask(why)) => why,
                (client, other) => panic!("{client:?} {command}: {other:?}"),
            };
            assert!(
                why.contains("chat-a") && why.contains("42"),
                "{client:?} {command}: {why}"
            );
        }
    }
    // Nobody else holds a claim: nothing to ask about.
    let alone = Project::new();
    alone.hook("SessionStart", "chat-b", json!({}), T);
    for command in unknown {
        for client in CLIENTS {
            quiet(&shell(&alone, client, "chat-b", command));
        }
    }
    // Chat A, which holds the only claim, is not asked either.
    for command in unknown {
        quiet(&shell(&p, Client::Claude, "chat-a", command));
    }
}
