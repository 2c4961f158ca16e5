//! One test per fixed bug, named after the bug, with the input that broke it.
//! Grouped by the part of jkz that broke.

mod contract;
mod guard;
mod history;
mod registry;
mod run;
mod terminal;
mod ui;
mod window;
