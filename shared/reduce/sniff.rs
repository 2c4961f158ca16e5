//! The family of an output whose command says nothing (a script, a pipe
//! from elsewhere): read from its first lines. Each family's `sniff`
//! patterns are counted over those lines; the family with the most matching
//! lines wins (the earlier in the table on a tie), and none when no line
//! matches. Compiled only when a call needs it.

use super::matcher::Matcher;
use super::table::{Family, FilterTable};

/// How many first lines are read, and at most how many bytes of them: a
/// screenful says what an output is.
pub const SNIFF_LINES: usize = 64;
pub const SNIFF_BYTES: usize = 16 * 1024;

/// The family `lines` (the output's first lines, no line ends) look like.
pub fn sniff<'t>(table: &'t FilterTable, lines: &[&[u8]]) -> Option<&'t Family> {
    let mut owners = Vec::new();
    let mut patterns = Vec::new();
    for (i, family) in table.families.iter().enumerate() {
        for p in &family.sniff {
            owners.push(i);
            patterns.push(p.as_str());
        }
    }
    // A pattern that does not compile was reported by `jkz filters test`;
    // here an output is never refused for it.
    let set = Matcher::new(patterns.iter().copied()).ok()?;
    let mut hits = vec![0usize; table.families.len()];
    for line in lines {
        let mut seen = vec![false; table.families.len()];
        set.each(line, |p| {
            seen[owners[p]] = true;
            true
        });
        for (h, s) in hits.iter_mut().zip(seen) {
            *h += usize::from(s);
        }
    }
    let (best, &count) = hits
        .iter()
        .enumerate()
        .max_by(|(i, a), (j, b)| a.cmp(b).then(j.cmp(i)))?;
    (count > 0).then(|| &table.families[best])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sniffed(text: &str) -> Option<String> {
        let lines: Vec<&[u8]> = text.lines().map(str::as_bytes).collect();
        sniff(&FilterTable::built_in(), &lines).map(|f| f.name.clone())
    }

    #[test]
    fn the_first_lines_name_the_family() {
        assert_eq!(
            sniffed("\nrunning 3 tests\ntest a ... ok\n").as_deref(),
            Some("tests")
        );
        assert_eq!(
            sniffed("   Compiling x v0.1.0\nerror[E0425]: cannot find value `y`\n").as_deref(),
            Some("builds")
        );
        assert_eq!(
            sniffed("commit 4820cf0c1d9e8b7a6f5e4d3c2b1a09f8e7d6c5b4\nAuthor: A <a@b>\n")
                .as_deref(),
            Some("git-log")
        );
        assert_eq!(
            sniffed("2025-03-04T12:00:01Z INFO up\n2025-03-04T12:00:02Z INFO still up\n")
                .as_deref(),
            Some("logs")
        );
        assert_eq!(sniffed("hello\nworld\n"), None);
        assert_eq!(sniffed(""), None);
    }
}
