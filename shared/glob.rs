//! Shell wildcard patterns (`*`, `?`, `[…]`, `[!…]`) matched against one
//! name, the way the shell expands them: what a `rm state/pipeline/*.json`
//! reaches, or which guarded name a pattern covers.

/// Whether the shell pattern `pattern` (`*`, `?`, `[…]`, `[!…]`) matches
/// all of `name`. One pass with a single backtrack point per `*` (the
/// classic wildcard walk), so a pattern of many stars costs O(len²), never
/// exponential time.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // The element at `p[i]`: how many chars it spans and whether it takes `c`.
    let element = |i: usize, c: char| -> (usize, bool) {
        match p[i] {
            '?' => (1, true),
            '[' => {
                let body = &p[i + 1..];
                let Some(close) = body.iter().skip(1).position(|&x| x == ']').map(|k| k + 1) else {
                    return (1, c == '[');
                };
                let (negated, set) = match body[..close].split_first() {
                    Some((&('!' | '^'), set)) => (true, set),
                    _ => (false, &body[..close]),
                };
                let mut hit = false;
                let mut k = 0;
                while k < set.len() {
                    if k + 2 < set.len() && set[k + 1] == '-' {
                        hit |= set[k] <= c && c <= set[k + 2];
                        k += 3;
                    } else {
                        hit |= set[k] == c;
                        k += 1;
                    }
                }
                (close + 2, hit != negated)
            }
            other => (1, other == c),
        }
    };
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ni));
            pi += 1;
            continue;
        }
        if pi < p.len() {
            let (width, ok) = element(pi, n[ni]);
            if ok {
                pi += width;
                ni += 1;
                continue;
            }
        }
        match star {
            // The last star takes one more char.
            Some((sp, sn)) => {
                star = Some((sp, sn + 1));
                pi = sp + 1;
                ni = sn + 1;
            }
            None => return false,
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_as_the_shell_does() {
        for (p, n) in [
            ("*", "42.json"),
            ("4*.json", "42.json"),
            ("4?.json", "42.json"),
            ("[0-9]*", "42.json"),
            ("[!a]2", "42"),
            ("chat.db*", "chat.db"),
            ("st*", "state"),
        ] {
            assert!(glob_match(p, n), "{p} {n}");
        }
        for (p, n) in [("*.o", "state"), ("4?.json", "4.json"), ("[!4]2", "42")] {
            assert!(!glob_match(p, n), "{p} {n}");
        }
        // Many stars over a long name that does not match: no blow-up.
        assert!(!glob_match(&"*a".repeat(40), &"a".repeat(39)));
        assert!(glob_match("[a", "[a"));
    }
}
