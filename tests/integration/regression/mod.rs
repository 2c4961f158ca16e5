//! One test per fixed bug, named after the bug, with the input that broke it.
//! Grouped by the part of jkz that broke.

mod contract;
mod history;
mod patterns;
mod registry;
mod run;
