//! jkz: the library behind every jkz binary.
//!
//! Each binary's `main` only parses arguments, calls into this crate and maps
//! the result to an exit code. Every rule — where state lives, how a file is
//! written, what a protected block is — lives here, once.

pub mod atomic;
pub mod blocks;
pub mod cli;
pub mod cut;
pub mod json_file;
pub mod lines;
pub mod session_id;
pub mod state_dir;
pub mod truncate;
