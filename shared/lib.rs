//! jkz: the library behind every jkz binary.
//!
//! Each binary's `main` only parses arguments, calls into this crate and maps
//! the result to an exit code. Every rule — where state lives, how a file is
//! written, what a protected block is — lives here, once.

// Features: what each binary and `jkz` subcommand does.
pub mod circuit_cmd;
pub mod commands;
pub mod compaction;
pub mod compress;
pub mod deadline;
pub mod deliberation;
pub mod events;
pub mod findings;
pub mod gc;
pub mod jkz_cmd;
pub mod lock_cmd;
pub mod manual;
pub mod metrics;
pub mod patterns;
pub mod reduce;
pub mod registry;
pub mod run;
pub mod session;
pub mod setup;
pub mod slo;
pub mod state_cmd;
pub mod tool_output;
pub mod truncate;
#[cfg(feature = "ui")]
pub mod ui;

// Contracts: the records jkz shares with pipelines, hooks and the client.
pub mod circuit;
pub mod client;
pub mod clock;
pub mod hook_input;
pub mod lock;
pub mod pipeline;
pub mod session_id;
pub mod session_record;
pub mod state_dir;
pub mod team;

// Plumbing: byte-level and file-level building blocks.
pub mod atomic;
pub mod blocks;
pub mod byte_cap;
pub mod client_text;
pub mod closed_stdout;
pub mod cut;
pub mod exit;
pub mod file_name;
pub mod git;
pub mod glob;
pub mod hook;
pub mod jkz_toml;
pub mod json_depth;
pub mod json_file;
pub mod json_output;
pub mod json_type;
pub mod lines;
pub mod outside_text;
pub mod process;
pub mod resolved_path;
pub mod sqlite;
pub mod terminal_text;
pub mod thousands;
pub mod time_span;
pub mod user_file;
