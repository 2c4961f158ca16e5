//! Every binary's command line, by name: the one clap definition each
//! binary parses with, and the one its completions and man pages are made
//! from ([`crate::manual`]).

use clap::CommandFactory;

/// The command line of `binary` (one of [`crate::setup::BINARIES`]);
/// `None` for another name.
pub fn of(binary: &str) -> Option<clap::Command> {
    Some(match binary {
        "jkz" => crate::jkz_cmd::JkzCli::command(),
        "jkz-truncate" => crate::truncate::command::TruncateCli::command(),
        "jkz-compress" => crate::compress::command::CompressCli::command(),
        "jkz-session" => crate::session::SessionCli::command(),
        "jkz-pre-compact" | "jkz-session-start" | "jkz-post-tool-use" | "jkz-chat" => hook(binary),
        _ => return None,
    })
}

/// The command line of the hook `binary`: `--help` and `--version` only
/// (the event comes on stdin). Panics on a name that is not a hook's.
pub fn hook(binary: &str) -> clap::Command {
    use crate::compaction::{pre_compact, session_start};
    use crate::registry::hook as chat;
    use crate::tool_output::help as post_tool_use;
    let (program, about, long_about): (&'static str, &'static str, String) = match binary {
        "jkz-pre-compact" => (
            "jkz-pre-compact",
            pre_compact::ABOUT,
            pre_compact::long_about(),
        ),
        "jkz-session-start" => (
            "jkz-session-start",
            session_start::ABOUT,
            session_start::long_about(),
        ),
        "jkz-post-tool-use" => (
            crate::tool_output::PROGRAM,
            post_tool_use::ABOUT,
            post_tool_use::long_about(),
        ),
        "jkz-chat" => ("jkz-chat", chat::ABOUT, chat::long_about()),
        other => panic!("{other} is not one of jkz's hooks"),
    };
    // Built once per process: the hook's own, or one page of the manual.
    let long_about: &'static str = Box::leak(long_about.into_boxed_str());
    crate::hook::command(program, about, long_about)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_binary_has_its_command_line_under_its_own_name() {
        for binary in crate::setup::BINARIES {
            let cmd = of(binary).unwrap_or_else(|| panic!("{binary}"));
            assert_eq!(cmd.get_name(), binary);
            cmd.debug_assert();
        }
        assert!(of("jkz-nothing").is_none());
    }
}
