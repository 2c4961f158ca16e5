//! One test per fixed bug, named after the bug, with the input that broke it.
//! Grouped by the part of jkz that broke.

mod contract;
mod guard;
mod harness;
mod history;
mod identity;
mod patterns;
mod pipeline_script;
mod readers;
mod registry;
mod run;
mod stores;
mod terminal;
mod tracked_state;
mod ui;
mod unix_manners;
mod window;
