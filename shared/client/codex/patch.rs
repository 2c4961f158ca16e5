//! The files a Codex `apply_patch` call changes, read from its patch body.
//!
//! Codex CLI's edit tool is `apply_patch`: the PreToolUse event carries the
//! whole patch in `tool_input.command` (measured on Codex 0.169.0), and the
//! same body can reach a shell as `apply_patch <<'EOF' … EOF`. The files it
//! touches are named on header lines:
//!
//! ```text
//! *** Begin Patch
//! *** Add File: notes/new.md
//! +text
//! *** Update File: src/lib.rs
//! *** Move to: src/core.rs
//! @@ fn main
//! -old
//! +new
//! *** Delete File: old.txt
//! *** End Patch
//! ```
//!
//! A header is a line that, with surrounding blanks trimmed (Codex's own
//! parser is that lenient), starts with one of the four markers; its path
//! is the rest of the line, trimmed. A content line (`+…`, `-…`, ` …`)
//! starting with `***` after its first character is not a header, so text a
//! patch adds never names a file. Reading errs towards naming: a context
//! line that is itself a header after trimming is taken as one, since the
//! refusal is a hint to the model, and a refused edit costs it one retry.

use memchr::memchr;

/// The header markers, each followed by a path.
pub const MARKERS: [(&str, PatchOp); 4] = [
    ("*** Add File: ", PatchOp::Add),
    ("*** Update File: ", PatchOp::Update),
    ("*** Delete File: ", PatchOp::Delete),
    ("*** Move to: ", PatchOp::MoveTo),
];

/// What a header does to its file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchOp {
    /// `*** Add File:` creates it.
    Add,
    /// `*** Update File:` changes it (in place, or moved by a following
    /// `*** Move to:`).
    Update,
    /// `*** Delete File:` removes it.
    Delete,
    /// `*** Move to:` is the new name of the file being updated.
    MoveTo,
}

/// One file a patch changes, as the patch spells its path (relative to
/// the session's working directory, or absolute).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatchedFile<'a> {
    pub op: PatchOp,
    pub path: &'a str,
}

/// Every file `patch` names on a header line, in order (duplicates kept).
pub fn patched_files(patch: &str) -> Vec<PatchedFile<'_>> {
    let bytes = patch.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    while start <= bytes.len() {
        let end = memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |i| start + i);
        if let Some(file) = header(&patch[start..end]) {
            out.push(file);
        }
        start = end + 1;
    }
    out
}

/// True when `text` holds a patch body (a shell command running
/// `apply_patch` with a heredoc, or the tool's own input).
pub fn looks_like_patch(text: &str) -> bool {
    text.contains("*** Begin Patch")
}

/// The file one line names, when it is a header.
fn header(line: &str) -> Option<PatchedFile<'_>> {
    let line = line.trim_matches(|c: char| c.is_ascii_whitespace());
    // The markers end in a space the trim may have taken with an empty path.
    MARKERS.iter().find_map(|(marker, op)| {
        let path = line.strip_prefix(marker)?.trim();
        (!path.is_empty()).then_some(PatchedFile { op: *op, path })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn every_header_names_its_file() {
        let patch = "*** Begin Patch\n\
                     *** Add File: notes/new.md\n\
                     +*** Update File: not/a/header.rs\n\
                     *** Update File: src/lib.rs\r\n\
                     *** Move to: src/core.rs\n\
                     @@ fn main\n\
                     -old\n\
                     +new\n\
                     \x20 *** Delete File:   old file.txt  \n\
                     *** Delete File:\n\
                     *** End Patch";
        let files = patched_files(patch);
        assert_eq!(
            files,
            [
                PatchedFile {
                    op: PatchOp::Add,
                    path: "notes/new.md"
                },
                PatchedFile {
                    op: PatchOp::Update,
                    path: "src/lib.rs"
                },
                PatchedFile {
                    op: PatchOp::MoveTo,
                    path: "src/core.rs"
                },
                PatchedFile {
                    op: PatchOp::Delete,
                    path: "old file.txt"
                },
            ]
        );
        assert!(patched_files("").is_empty());
        assert!(patched_files("echo hi").is_empty());
        assert!(looks_like_patch("apply_patch <<'EOF'\n*** Begin Patch\n"));
    }

    /// The oracle: lines split by the standard library, each tried against
    /// each marker with plain string operations (an index, not
    /// `strip_prefix`: the oracle spells the rule differently on purpose).
    #[allow(clippy::manual_strip)]
    fn naive(patch: &str) -> Vec<(PatchOp, String)> {
        let mut out = Vec::new();
        for line in patch.split('\n') {
            let t = line.trim_matches(|c: char| c.is_ascii_whitespace());
            for (marker, op) in MARKERS {
                if t.starts_with(marker) {
                    let p = t[marker.len()..].trim().to_string();
                    if !p.is_empty() {
                        out.push((op, p));
                    }
                }
            }
        }
        out
    }

    /// Patches made of headers, content lines and noise, with every kind of
    /// line ending and blank, multi-byte paths included.
    fn patch() -> impl Strategy<Value = String> {
        let line = prop_oneof![
            "(\\*\\*\\* (Add|Update|Delete) File: |\\*\\*\\* Move to: )[ a-zé/._\u{1F600}-]{0,12}",
            "[ +-]\\*\\*\\* (Add|Update) File: [a-z]{0,4}",
            "[ \t]{0,2}\\*\\*\\* (Begin|End) Patch[ \r]{0,2}",
            "\\*\\*\\*( Add| Update)?( File)?:?[ a-z]{0,3}",
            ".{0,10}",
        ];
        (
            proptest::collection::vec(line, 0..12),
            proptest::collection::vec(prop_oneof!["\n", "\r\n", " \n", "\t\r\n"], 12),
        )
            .prop_map(|(lines, ends)| {
                lines
                    .iter()
                    .zip(ends.iter().cycle())
                    .map(|(l, e)| format!("{l}{e}"))
                    .collect()
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        #[test]
        fn headers_match_the_oracle(text in patch()) {
            let got: Vec<(PatchOp, String)> = patched_files(&text)
                .into_iter()
                .map(|f| (f.op, f.path.to_string()))
                .collect();
            prop_assert_eq!(got, naive(&text));
        }

        #[test]
        fn any_text_matches_the_oracle(text in "\\PC{0,80}") {
            let got: Vec<(PatchOp, String)> = patched_files(&text)
                .into_iter()
                .map(|f| (f.op, f.path.to_string()))
                .collect();
            prop_assert_eq!(got, naive(&text));
        }
    }
}
