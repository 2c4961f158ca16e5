//! How a path a command writes reaches a path the guard protects. The
//! written path may be a pattern: shell wildcards in its components (`*`,
//! `?`, `[…]`) and `**` (any number of directories, what `find` walks).
//! The answer says whether it is the protected path, above it (so removing
//! it removes the protected one), or may lie below it.

use std::path::{Component, Path};

use super::bash::Kept;
use crate::glob::glob_match;

/// How a written path (a pattern) reaches a protected one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reach {
    None,
    /// Something the pattern matches lies strictly inside the protected
    /// path.
    Below,
    /// The pattern matches a directory above the protected path.
    Above,
    /// The pattern matches the protected path itself.
    Exact,
}

/// The components of `path` as text (`/` dropped).
fn parts(path: &Path) -> Vec<String> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(p) => Some(p.to_string_lossy().into_owned()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect()
}

fn is_pattern(part: &str) -> bool {
    part == "**" || part.contains(['*', '?', '['])
}

/// How `written` (absolute; a pattern when `pattern`) reaches `target`
/// (absolute, resolved).
pub fn reach(written: &Path, pattern: bool, target: &Path) -> Reach {
    let w = parts(written);
    let t = parts(target);
    let literal = if pattern {
        w.iter().take_while(|p| !is_pattern(p)).count()
    } else {
        w.len()
    };
    let (base, pat) = w.split_at(literal);
    let common = base.len().min(t.len());
    if base[..common] != t[..common] {
        return Reach::None;
    }
    if base.len() > t.len() {
        // All that is written lies inside the target.
        return Reach::Below;
    }
    let rest = &t[base.len()..];
    if pat.is_empty() {
        return if rest.is_empty() {
            Reach::Exact
        } else {
            Reach::Above
        };
    }
    walk(pat, rest)
}

/// The pattern `pat` against `rest`, as a small automaton: its states are
/// positions in `pat` (a `**` may stay put).
fn walk(pat: &[String], rest: &[String]) -> Reach {
    let close = |states: &mut Vec<bool>| {
        for i in 0..pat.len() {
            if states[i] && pat[i] == "**" {
                states[i + 1] = true;
            }
        }
    };
    let mut states = vec![false; pat.len() + 1];
    states[0] = true;
    close(&mut states);
    let mut above = false;
    for part in rest {
        // What was consumed so far, a parent of the target, matches.
        if states[pat.len()] {
            above = true;
        }
        let mut next = vec![false; pat.len() + 1];
        for i in 0..pat.len() {
            if !states[i] {
                continue;
            }
            if pat[i] == "**" {
                next[i] = true;
            } else if glob_match(&pat[i], part) {
                next[i + 1] = true;
            }
        }
        close(&mut next);
        states = next;
        if !states.iter().any(|s| *s) {
            return if above { Reach::Above } else { Reach::None };
        }
    }
    if states[pat.len()] {
        Reach::Exact
    } else if above {
        Reach::Above
    } else if states[..pat.len()].iter().any(|s| *s) {
        Reach::Below
    } else {
        Reach::None
    }
}

/// True when `kept` leaves `target` alone: a pattern written below `base`
/// (`-e state/` of `git clean`, `-path ./state -prune` of `find`) matches
/// it, or, for a pattern that keeps a whole subtree, one of its parents
/// below `base`.
pub fn is_kept(kept: &[Kept], base: &Path, target: &Path) -> bool {
    if kept.is_empty() {
        return false;
    }
    let Ok(rel) = target.strip_prefix(base) else {
        return false;
    };
    let rel = parts(rel);
    kept.iter().any(|k| {
        let pattern = k.pattern.trim_end_matches('/');
        let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
        let levels: Vec<usize> = if k.subtree {
            (1..=rel.len()).collect()
        } else {
            vec![rel.len()]
        };
        levels.into_iter().filter(|&n| n > 0).any(|n| {
            if k.anchored {
                let path = rel[..n].join("/");
                glob_match(pattern.trim_start_matches('/'), &path)
                    || glob_match(pattern, &format!("./{path}"))
            } else {
                glob_match(pattern, &rel[n - 1])
            }
        })
    })
}

/// The literal directory a pattern starts from: its components up to the
/// first with a wildcard.
pub fn pattern_base(written: &Path) -> std::path::PathBuf {
    let mut base = std::path::PathBuf::from("/");
    for p in parts(written) {
        if is_pattern(&p) {
            break;
        }
        base.push(p);
    }
    base
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn r(written: &str, target: &str) -> Reach {
        let pattern = written.contains(['*', '?', '[']);
        reach(Path::new(written), pattern, Path::new(target))
    }

    #[test]
    fn literal_paths() {
        assert_eq!(r("/p/state", "/p/state"), Reach::Exact);
        assert_eq!(r("/p", "/p/state/chat.db"), Reach::Above);
        assert_eq!(r("/p/state/pipeline/42.json", "/p/state"), Reach::Below);
        assert_eq!(r("/p/wt/4", "/p/wt/42"), Reach::None);
        assert_eq!(r("/", "/p"), Reach::Above);
    }

    #[test]
    fn patterns() {
        assert_eq!(r("/p/*", "/p/state/chat.db"), Reach::Above);
        assert_eq!(r("/p/s*", "/p/state"), Reach::Exact);
        assert_eq!(r("/p/*.o", "/p/state/chat.db"), Reach::None);
        assert_eq!(r("/p/state/*.db", "/p/state/chat.db"), Reach::Exact);
        assert_eq!(
            r("/p/state/**/42.json", "/p/state/pipeline/42.json"),
            Reach::Exact
        );
        assert_eq!(r("/p/state/**/42.json", "/p/state/pipeline"), Reach::Below);
        assert_eq!(r("/p/**", "/p/state/chat.db"), Reach::Exact);
        assert_eq!(r("/p/**", "/p"), Reach::Exact);
        assert_eq!(r("/p/**/*.o", "/p/wt/42"), Reach::Below);
        assert_eq!(r("/p/**/*.o", "/q"), Reach::None);
        assert_eq!(r("/p/x/**", "/p"), Reach::Below);
    }

    #[test]
    fn kept_patterns() {
        let kept = |pattern: &str, anchored, subtree| Kept {
            pattern: pattern.into(),
            anchored,
            subtree,
        };
        let base = Path::new("/p");
        let db = Path::new("/p/state/chat.db");
        assert!(is_kept(&[kept("state/", false, true)], base, db));
        assert!(is_kept(&[kept("./state", true, true)], base, db));
        assert!(!is_kept(&[kept("./state", true, false)], base, db));
        assert!(is_kept(&[kept("*/chat.db", true, false)], base, db));
        assert!(!is_kept(&[kept("src", false, true)], base, db));
    }

    /// The naive oracle: every concrete path of a few components, matched
    /// component by component (with `**` taking any number).
    fn naive_match(pat: &[&str], t: &[&str]) -> bool {
        match pat.split_first() {
            None => t.is_empty(),
            Some((&"**", rest)) => (0..=t.len()).any(|k| naive_match(rest, &t[k..])),
            Some((p, rest)) => !t.is_empty() && glob_match(p, t[0]) && naive_match(rest, &t[1..]),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// `Exact` exactly when the oracle matches the target; `Above`
        /// when it matches a parent; `Below` when it matches something
        /// inside the target.
        #[test]
        fn reach_agrees_with_a_naive_matcher(
            pat in proptest::collection::vec(
                proptest::sample::select(vec!["a", "b", "*", "**", "a*", "?", "[ab]"]), 1..4),
            target in proptest::collection::vec(
                proptest::sample::select(vec!["a", "b", "ab", "c"]), 0..4),
        ) {
            let written = format!("/r/{}", pat.join("/"));
            let t = format!("/r/{}", target.join("/"));
            let got = reach(Path::new(&written), true, Path::new(t.trim_end_matches('/')));
            let exact = naive_match(&pat, &target);
            let above = (0..target.len()).any(|k| naive_match(&pat, &target[..k]));
            let names = ["a", "b", "ab", "c"];
            let mut suffixes: Vec<Vec<&str>> = names.iter().map(|n| vec![*n]).collect();
            for _ in 0..2 {
                let longer: Vec<Vec<&str>> = suffixes
                    .iter()
                    .flat_map(|s| names.iter().map(move |n| [s.clone(), vec![*n]].concat()))
                    .collect();
                suffixes.extend(longer);
            }
            let below = suffixes.iter().any(|s| {
                let mut longer = target.clone();
                longer.extend(s.iter().copied());
                naive_match(&pat, &longer)
            });
            let want = if exact {
                Reach::Exact
            } else if above {
                Reach::Above
            } else if below {
                Reach::Below
            } else {
                Reach::None
            };
            prop_assert_eq!(got, want, "{} vs {}", written, t);
        }
    }
}
