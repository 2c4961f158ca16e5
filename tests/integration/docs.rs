//! The README is the front door and `docs/` holds the rest: no link between
//! them may be dead, and the front door stays small enough to read.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn checkout() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every page in docs/.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![checkout().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(checkout().join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// The lines of a markdown page outside fenced code.
fn prose_lines(text: &str) -> Vec<&str> {
    let mut fence: Option<char> = None;
    let mut lines = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        let marker = ['`', '~']
            .into_iter()
            .find(|c| trimmed.starts_with(&c.to_string().repeat(3)));
        match (fence, marker) {
            (None, Some(c)) => fence = Some(c),
            (Some(open), Some(c)) if open == c => fence = None,
            (None, None) => lines.push(line),
            _ => {}
        }
    }
    lines
}

/// Every `](target)` on the page, outside code fences and inline code.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    for line in prose_lines(text) {
        // Inline code may hold `](` that is no link.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            if let Some(end) = rest.find(')') {
                targets.push(rest[..end].to_string());
                rest = &rest[end..];
            }
        }
    }
    targets
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces
/// as hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(page: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(page).unwrap();
    prose_lines(&text)
        .into_iter()
        .filter_map(|line| {
            let hashes = line.len() - line.trim_start_matches('#').len();
            (1..=6).contains(&hashes).then(|| anchor(&line[hashes..]))
        })
        .collect()
}

#[test]
fn every_relative_link_in_the_readme_and_docs_resolves() {
    let mut dead = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for target in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (file, fragment) = match target.split_once('#') {
                Some((file, fragment)) => (file, Some(fragment)),
                None => (target.as_str(), None),
            };
            let file = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            if !file.exists() {
                dead.push(format!("{}: {target}: no such file", page.display()));
                continue;
            }
            if let Some(fragment) = fragment {
                if !anchors(&file).contains(fragment) {
                    dead.push(format!("{}: {target}: no such heading", page.display()));
                }
            }
        }
    }
    assert!(checked > 40, "the link scan found only {checked} links");
    assert!(dead.is_empty(), "dead links:\n{}", dead.join("\n"));
}

#[test]
fn the_readme_is_a_front_door_with_the_set_up_commands_on_its_first_screen() {
    let readme = std::fs::read_to_string(checkout().join("README.md")).unwrap();
    assert!(
        readme.len() <= 20_480,
        "README.md is {} bytes; move detail into docs/ (at most 20,480)",
        readme.len()
    );
    let first_screen: String = readme.lines().take(30).collect::<Vec<_>>().join("\n");
    for command in ["./install.sh", "cargo test --locked", "jkz install"] {
        assert!(
            first_screen.contains(command),
            "README.md's first 30 lines do not show `{command}`"
        );
    }
    let pages = pages().len() - 1;
    assert!(pages >= 5, "docs/ has {pages} pages");
    assert!(
        checkout().join("docs/README.md").exists(),
        "docs/ has an index"
    );
}
