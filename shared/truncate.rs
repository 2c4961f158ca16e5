//! `jkz-truncate`: cap a stream to a byte budget, keeping its head and tail
//! and every protected block that fits.
//!
//! The output is the head, then each chosen protected block not already in
//! the head or tail (input order), then the tail; every gap between them is
//! one marker line (see [`marker_line`]). Input no longer than the cap comes
//! out byte for byte; longer input comes out at most cap bytes long, always.
//!
//! # Budget
//!
//! Let `M` be the longest marker this input could need (the input length
//! written into both counts, plus the full-output path). Protected blocks are
//! placed first ([`select`]) in three quarters of the cap, each with a
//! marker's worth of room (a longer one for a block cut to its head: the
//! marker after its head names the block; and for a block placed whole
//! inside a cut block's omitted part, whose gap after it names that block
//! too, paid by whichever of the two is placed later) and one marker
//! reserved for the head/tail gap; head and tail keep at least the last quarter. What remains
//! is split between head and tail by the head share, and both are cut on
//! line boundaries when that is cheap, on character boundaries otherwise
//! ([`crate::cut`]). Every gap lies next to a placed block or between head
//! and tail, so the markers always fit in what was reserved. A budget used
//! by a block that also lies in the head or tail is not handed back: the
//! output may then be shorter than the cap.
//!
//! A cap smaller than `M` cannot hold even one marker: the output is then
//! the head alone, cut to the cap, with no marker (the full output is still
//! saved when a state directory is available).
//!
//! # Streaming
//!
//! The input is read straight into the chunks of a [`HeadTailBuffer`](head_tail::HeadTailBuffer),
//! handed out from there in line batches and scanned for blocks by the one
//! grammar ([`BlockScanner`](crate::blocks::BlockScanner)) while still in the cache. Held in memory: the
//! first `cap + 8` bytes, the last `cap + 320 KiB + 8` bytes (enough to copy
//! out the head of a block that ends in the latest batch and started in it
//! or on the line before), the heads of up to three open blocks whose start
//! is about to leave that window (an open fence, comment or tag block, an
//! open section, a line longer than a batch: three quarters of a cap each),
//! and the candidate blocks ([`select::Pool`], a few caps at most). All
//! cap arithmetic saturates: a cap larger than the input passes it through.
//! Nothing is written to the
//! output until the end of the input, because only then is it known
//! whether the input fits. Chunks leaving the window (which happens only
//! once the input is longer than the cap) go to the full output's writer
//! thread ([`full_output`]), and the rest of them at the end.

pub use crate::thousands::thousands;

mod assemble;
mod cap;
pub mod command;
pub mod full_output;
pub mod head_tail;
mod marker;
mod pipe;
pub mod record;
pub mod roles;
pub mod run_command;
pub mod select;
mod stream;
mod warning;

#[cfg(test)]
mod prop_tests;

pub use self::cap::{cap_from_env, resolve_cap, Mode, CAP_VARIABLE};
pub use self::marker::{cut_marker_line, marker_line};
pub use self::pipe::{grow_pipe, PIPE_SIZE};
pub use self::stream::{truncate, truncate_keeping, KeptResponse, Settings, Summary, EXIT_IO};
pub use self::warning::warn;
