//! The one integration-test crate: every test here runs the real jkz binaries
//! in a temp directory of its own, with `CLAUDE_*` and `JKZ_*` scrubbed from
//! the environment.

mod audit;
mod bash_wrap;
mod client;
mod codex_hooks;
mod compress;
mod copilot;
mod docs;
mod doctor_probe;
mod events;
mod examples;
mod faults;
mod findings;
mod hooks;
mod hooks_disagreed_on_the_session;
mod hostile;
mod install;
mod install_clients;
mod install_codex;
mod install_gemini;
mod install_worktrees;
mod opencode;
mod patterns;
mod post_compact;
mod postgres;
mod races;
mod readers;
mod reduce;
mod reduce_corpus;
mod registry;
mod regression;
mod session;
mod state;
mod stats;
mod team;
mod team_pooler;
mod team_replica;
mod team_tls;
mod tool_output;
mod truncate;
mod ui;
mod ui_browser;
mod util;
mod worktrees;
