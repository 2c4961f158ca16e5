//! Gemini CLI's compaction paths: PreCompress, which fires before every
//! turn ([`pre_compress`]), and the re-injection into the request after a
//! compression ([`before_model`]). Gemini's contract itself (event and tool
//! names, the answer shapes, the per-session memo) is `crate::client::gemini`.

pub mod before_model;
pub mod pre_compress;
