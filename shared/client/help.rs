//! What a hook's `--help` says about each client: how the hook is
//! registered there, and how its answer reads in that client's contract.
//!
//! A hook's help is the feature's own, client-neutral text with one
//! paragraph per client put in ([`clients`]); each client's module writes
//! its own paragraphs (`help` in it), so the features never name a client
//! and a new client adds its paragraphs where it adds everything else.

use super::{claude, codex, copilot, gemini, opencode, Client};

/// A hook binary of jkz, as its help tells it apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookProgram {
    /// `jkz-pre-compact`: the snapshot, and the summarizer's instructions.
    PreCompact,
    /// `jkz-session-start`: the re-injection.
    SessionStart,
    /// `jkz-post-tool-use`: the output guard after a tool call.
    PostToolUse,
    /// `jkz-chat`: the cross-chat registry, and the Bash wrap.
    Chat,
}

impl HookProgram {
    pub const ALL: [HookProgram; 4] = [
        HookProgram::PreCompact,
        HookProgram::SessionStart,
        HookProgram::PostToolUse,
        HookProgram::Chat,
    ];

    /// The binary's name (what a client's registration runs).
    pub fn name(self) -> &'static str {
        match self {
            HookProgram::PreCompact => "jkz-pre-compact",
            HookProgram::SessionStart => "jkz-session-start",
            HookProgram::PostToolUse => "jkz-post-tool-use",
            HookProgram::Chat => "jkz-chat",
        }
    }
}

/// `client`'s paragraph of `program`'s help; `None` when it has nothing
/// to say there.
pub fn paragraph(client: Client, program: HookProgram) -> Option<String> {
    match client {
        Client::Claude => claude::help::paragraph(program),
        Client::Codex => codex::help::paragraph(program),
        Client::Gemini => gemini::help::paragraph(program),
        Client::Copilot => copilot::help::paragraph(program),
        Client::OpenCode => opencode::help::paragraph(program),
    }
}

/// Every client's paragraph of `program`'s help, in [`Client::ALL`]'s
/// order, each after an empty line: what a help text puts after its own
/// paragraphs.
pub fn clients(program: HookProgram) -> String {
    Client::ALL
        .into_iter()
        .filter_map(|c| paragraph(c, program))
        .map(|p| format!("\n\n{p}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::setup::settings::Registration;

    /// What `jkz install --client CLIENT` registers.
    fn registered(client: Client) -> &'static [Registration] {
        match client {
            Client::Claude => &crate::setup::settings::REGISTRATIONS,
            Client::Codex => &crate::setup::codex::REGISTRATIONS,
            Client::Gemini => &crate::setup::gemini::REGISTRATIONS,
            Client::Copilot => &crate::setup::copilot::REGISTRATIONS,
            Client::OpenCode => &crate::setup::opencode::REGISTRATIONS,
        }
    }

    /// A client's paragraph of a hook's help names every event (and
    /// matcher) jkz registers the hook for in that client, so the help
    /// cannot drift from what install does; a client that registers a
    /// hook says so in its paragraph, opening with its name.
    #[test]
    fn each_paragraph_names_what_install_registers() {
        for client in Client::ALL {
            for program in HookProgram::ALL {
                let regs: Vec<&Registration> = registered(client)
                    .iter()
                    .filter(|r| r.program == program.name())
                    .collect();
                let Some(text) = paragraph(client, program) else {
                    assert!(
                        regs.is_empty(),
                        "{client:?} registers {} but its help says nothing of it",
                        program.name()
                    );
                    continue;
                };
                assert!(
                    text.starts_with(client.title()),
                    "{client:?} {}: {text}",
                    program.name()
                );
                // Words are wrapped at spaces: compare them unwrapped.
                let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
                for reg in regs {
                    assert!(
                        flat.contains(reg.event),
                        "{client:?} {}: {} missing from {text}",
                        program.name(),
                        reg.event
                    );
                    assert!(
                        flat.contains(reg.matcher),
                        "{client:?} {}: matcher {} missing from {text}",
                        program.name(),
                        reg.matcher
                    );
                }
                assert!(
                    !text.ends_with('\n') && !text.contains("\n\n"),
                    "{client:?} {}: one paragraph",
                    program.name()
                );
                assert!(
                    text.lines().all(|l| l.chars().count() <= 80),
                    "{client:?} {}: a line over 80 characters",
                    program.name()
                );
            }
        }
    }

    #[test]
    fn every_hook_program_is_a_binary_jkz_installs() {
        for program in HookProgram::ALL {
            assert!(
                crate::setup::BINARIES.contains(&program.name()),
                "{}",
                program.name()
            );
        }
        let all = clients(HookProgram::Chat);
        assert!(all.starts_with("\n\n"), "{all}");
        assert_eq!(
            all.matches("\n\n").count(),
            Client::ALL
                .into_iter()
                .filter(|&c| paragraph(c, HookProgram::Chat).is_some())
                .count()
        );
    }
}
