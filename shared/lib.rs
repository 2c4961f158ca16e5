//! jkz: the library behind every jkz binary.
//!
//! Each binary's `main` only parses arguments, calls into this crate and maps
//! the result to an exit code. Every rule — where state lives, how a file is
//! written, what a protected block is — lives here, once.

pub mod atomic;
pub mod blocks;
pub mod circuit;
pub mod circuit_cmd;
pub mod cli;
pub mod compaction;
pub mod compress;
pub mod cut;
pub mod deliberation;
pub mod gc;
pub mod git;
pub mod hook;
pub mod hook_input;
pub mod json_depth;
pub mod json_file;
pub mod lines;
pub mod lock;
pub mod lock_cmd;
pub mod pipeline;
pub mod process;
pub mod registry;
pub mod run;
pub mod session;
pub mod session_id;
pub mod session_snapshot;
pub mod setup;
pub mod state_cmd;
pub mod state_dir;
pub mod tool_output;
pub mod truncate;
