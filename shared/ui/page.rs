//! The one page of `jkz ui`: plain HTML, CSS and JavaScript in
//! `page.html`, embedded in the binary (no CDN, no network, no build step).

/// The page, as served at `/`.
pub const PAGE: &str = include_str!("page.html");
