//! The findings history, `state/cr-history.db`: review findings reconciled
//! across the iterations of a fix cycle.
//!
//! A fix cycle is reviewed again and again — by CodeRabbit on the pull
//! request, by the pipeline's reviewer and QA agents (their `verdict-json`),
//! by `review-result.json` and `test-result.json` artifacts — and each round
//! repeats most of the last. What an agent needs is the difference: what is
//! new, what is still open, what was resolved, what came back. And what a
//! compaction must keep is exactly the open part; resolved findings are
//! safe to drop.
//!
//! - [`import`], [`coderabbit`], [`reported`], [`parsed`]: what each
//!   source's input looks like, read within a bound, refused whole when
//!   malformed;
//! - [`identity`]: when two reported findings are the same finding (file
//!   and normalized message);
//! - [`status`]: new, open, resolved, reintroduced, dismissed;
//! - [`store`]: the SQLite history, one transaction per import;
//! - [`cli`]: `jkz findings`, `jkz findings import`, `jkz findings dismiss`;
//! - [`explain`]: near-misses, for `--explain`;
//! - [`run_import`]: what `jkz run` imports from the verdicts it records;
//! - [`compaction`]: what the compaction hooks say of findings;
//! - [`observer`]: an issue's findings by iteration, for `jkz ui`.

pub mod cli;
pub mod coderabbit;
pub mod compaction;
pub mod explain;
pub mod finding;
pub mod identity;
pub mod import;
pub mod observer;
pub mod parsed;
pub mod reported;
pub mod run_import;
pub mod status;
pub mod store;

pub use finding::{Reported, Severity};
pub use import::Source;
pub use status::Status;
pub use store::{Store, StoreError};
