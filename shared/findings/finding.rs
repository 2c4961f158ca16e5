//! A finding as a source reports it, before it is stored, and the severity
//! scale every source is mapped onto.

use serde::Serialize;

/// How bad a finding is, worst first. Every source's words are mapped onto
/// these four ([`Severity::parse`]); a finding whose source gives no
/// severity, or one jkz does not know, is unrated (ranked between minor and
/// nit).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Must be fixed before merging: `critical`, `blocker`, `p0`, CodeRabbit's 🔴.
    Critical,
    /// A real defect: `major`, `high`, `p1`, `error`, `bug`, CodeRabbit's
    /// "Potential issue" and 🟠.
    Major,
    /// Worth fixing: `minor`, `medium`, `p2`, `warning`, `concern`,
    /// CodeRabbit's "Refactor suggestion", "Verification agent" and 🟡.
    Minor,
    /// Cosmetic: `nit`, `nitpick`, `low`, `p3`, `trivial`, `info`, `style`,
    /// CodeRabbit's 🧹 and 🔵.
    Nit,
}

/// The rank of an unrated finding in "most severe first".
pub const UNRATED_RANK: i64 = 3;

impl Severity {
    /// The severity a word names (case, spaces and punctuation ignored),
    /// if jkz knows it.
    pub fn parse(word: &str) -> Option<Severity> {
        let key: String = word
            .chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect();
        Some(match key.as_str() {
            "critical" | "blocker" | "blocking" | "p0" | "fatal" | "severe" | "showstopper" => {
                Severity::Critical
            }
            "major" | "high" | "p1" | "error" | "bug" | "potentialissue" | "important" => {
                Severity::Major
            }
            "minor" | "medium" | "p2" | "moderate" | "warning" | "warn" | "concern"
            | "refactorsuggestion" | "verificationagent" => Severity::Minor,
            "nit" | "nitpick" | "nits" | "low" | "p3" | "trivial" | "info" | "style"
            | "optional" | "note" => Severity::Nit,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Severity::Critical => "critical",
            Severity::Major => "major",
            Severity::Minor => "minor",
            Severity::Nit => "nit",
        }
    }

    /// 0 for critical … 4 for nit; unrated is [`UNRATED_RANK`].
    pub fn rank(severity: Option<Severity>) -> i64 {
        match severity {
            Some(Severity::Critical) => 0,
            Some(Severity::Major) => 1,
            Some(Severity::Minor) => 2,
            None => UNRATED_RANK,
            Some(Severity::Nit) => 4,
        }
    }
}

/// The largest message kept (in bytes, cut at a character boundary): a
/// finding's message is its headline.
pub const MAX_MESSAGE: usize = 2_000;

/// The largest detail, suggestion or reply kept.
pub const MAX_TEXT: usize = 8 * 1024;

/// The most replies kept per finding.
pub const MAX_REPLIES: usize = 20;

/// One finding as reported by a source in one import.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reported {
    /// The file, normalized ([`super::identity::normalize_path`]).
    pub file: String,
    pub line: Option<u32>,
    /// The headline: what the identity is made of.
    pub message: String,
    /// The rest of what the reviewer wrote, for display.
    pub detail: Option<String>,
    pub severity: Option<Severity>,
    /// A suggested change (CodeRabbit's committable suggestion or diff),
    /// for display; never part of the identity.
    pub suggestion: Option<String>,
    /// Who reported it (CodeRabbit's `user.login`).
    pub author: Option<String>,
    /// The source's own id for it (a review comment's `id`).
    pub reference: Option<String>,
    /// The replies in its thread, each `login: text`.
    pub replies: Vec<String>,
}

/// `s` cut to at most `max` bytes at a character boundary, with `…` when
/// cut.
pub fn bounded(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn severities_parse_from_many_words() {
        assert_eq!(Severity::parse("🔴 Critical"), Some(Severity::Critical));
        assert_eq!(Severity::parse("BLOCKER"), Some(Severity::Critical));
        assert_eq!(Severity::parse("⚠️ Potential issue"), Some(Severity::Major));
        assert_eq!(
            Severity::parse("Refactor suggestion"),
            Some(Severity::Minor)
        );
        assert_eq!(Severity::parse("🧹 Nitpick"), Some(Severity::Nit));
        assert_eq!(Severity::parse("whatever"), None);
        assert!(Severity::rank(Some(Severity::Critical)) < Severity::rank(None));
        assert!(Severity::rank(None) < Severity::rank(Some(Severity::Nit)));
    }

    #[test]
    fn bounded_cuts_at_a_character() {
        assert_eq!(bounded("abc", 3), "abc");
        let cut = bounded("ééééé", 6);
        assert!(cut.len() <= 6 && cut.ends_with('…'), "{cut}");
    }
}
