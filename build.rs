//! Compiles the built-in filter table (`shared/reduce/filters.toml`) into
//! Rust, checked by the same parser a project's `jkz.toml` goes through
//! (`shared/reduce/table.rs`): a table that does not parse is a build
//! error, and `jkz reduce`, which runs once per command, does not spend
//! its time parsing 1,000 lines of TOML on every call.
//!
//! With each rule go its needles: strings one of which every line the rule
//! matches contains (`"error"`, `"Error"`, `"ERROR"` for an error rule), read
//! from the pattern's syntax tree. `jkz reduce` then compiles a rule only
//! when a line holds one of them: most outputs meet a tenth of the rules,
//! and compiling all of them was most of a call's time.

#[path = "shared/reduce/table.rs"]
#[allow(dead_code)]
mod table;

use std::collections::BTreeSet;
use std::fmt::Write as _;

use regex_syntax::hir::{Class, Hir, HirKind};
use table::{Family, Is, Rule, Source};

fn main() {
    println!("cargo::rerun-if-changed=shared/reduce/filters.toml");
    println!("cargo::rerun-if-changed=shared/reduce/table.rs");
    let doc: toml::Table = table::BUILT_IN
        .parse()
        .unwrap_or_else(|e| panic!("shared/reduce/filters.toml is not TOML: {e}"));
    let families = table::parse_families(&doc, None)
        .unwrap_or_else(|e| panic!("shared/reduce/filters.toml: {e}"));
    let mut out = String::from(
        "// The built-in filter table, compiled from filters.toml by build.rs.\n\
         fn built_in_families() -> Vec<Family> {\n    vec![\n",
    );
    for family in &families {
        family_code(family, &mut out);
    }
    out.push_str("    ]\n}\n");
    let dir = std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(std::path::Path::new(&dir).join("filters.rs"), out)
        .expect("write the compiled filter table");
}

fn family_code(f: &Family, out: &mut String) {
    let _ = writeln!(
        out,
        "        family({:?}, {:?}, &{:?}, &{:?}, &{:?}, {:?}, {:?}, {:?}, {:?}, vec![",
        f.name,
        f.description,
        f.commands,
        f.sniff,
        f.include,
        f.context,
        f.whole,
        f.templates,
        key(&f.source),
    );
    for rule in &f.rules {
        rule_code(rule, out);
    }
    out.push_str("        ]),\n");
}

fn rule_code(r: &Rule, out: &mut String) {
    let examples: Vec<String> = r
        .examples
        .iter()
        .map(|e| format!("({:?}, {})", e.line, is_code(&e.is)))
        .collect();
    let _ = writeln!(
        out,
        "            rule({:?}, {}, {}, {}, {}, {:?}, {:?}, vec![{}], {:?}, {}),",
        r.pattern,
        is_code(&r.is),
        r.after,
        option_code(&r.next),
        option_code(&r.run),
        r.through,
        r.continued,
        examples.join(", "),
        key(&r.source),
        needles(&r.pattern).map_or("None".into(), |n| format!("Some(&{n:?})")),
    );
}

/// The needles of a pattern (see the module docs); `None` when it can
/// match a line without any literal of two bytes or more.
fn needles(pattern: &str) -> Option<Vec<String>> {
    let hir = regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(pattern)
        .unwrap_or_else(|e| panic!("{pattern:?} does not parse: {e}"));
    let (set, _) = required(&hir)?;
    if set.iter().any(|n| n.len() < 2) {
        return None;
    }
    set.into_iter().map(|n| String::from_utf8(n).ok()).collect()
}

/// The most needles one node may stand for (a class of case variants, an
/// alternation of words); past it the node requires nothing.
const MAX_NEEDLES: usize = 32;

/// Strings one of which every match of `hir` contains, or `None`; and
/// whether every match is exactly one of them (a literal, a small class,
/// an alternation or concatenation of such), so neighbours can join them
/// (`[Ee]` and `xit` make `Exit` and `exit`).
fn required(hir: &Hir) -> Option<(BTreeSet<Vec<u8>>, bool)> {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => None,
        HirKind::Literal(lit) => Some((BTreeSet::from([lit.0.to_vec()]), true)),
        HirKind::Class(class) => class_needles(class).map(|set| (set, true)),
        HirKind::Repetition(rep) if rep.min >= 1 => {
            let (set, exact) = required(&rep.sub)?;
            Some((set, exact && rep.min == 1 && rep.max == Some(1)))
        }
        HirKind::Repetition(_) => None,
        HirKind::Capture(cap) => required(&cap.sub),
        HirKind::Concat(subs) => {
            let mut best: Option<BTreeSet<Vec<u8>>> = None;
            let mut run: Option<BTreeSet<Vec<u8>>> = None;
            // Whether `run` is every child so far, joined.
            let mut whole = true;
            let consider = |set: BTreeSet<Vec<u8>>, best: &mut Option<BTreeSet<Vec<u8>>>| {
                let better = best.as_ref().is_none_or(|b| {
                    (shortest(&set), std::cmp::Reverse(set.len()))
                        > (shortest(b), std::cmp::Reverse(b.len()))
                });
                if better {
                    *best = Some(set);
                }
            };
            for sub in subs {
                match required(sub) {
                    Some((set, true)) => {
                        run = Some(match run.take() {
                            Some(prev) => joined(&prev, &set).unwrap_or_else(|| {
                                whole = false;
                                set
                            }),
                            None => set,
                        });
                        if let Some(r) = &run {
                            consider(r.clone(), &mut best);
                        }
                    }
                    other => {
                        whole = false;
                        run = None;
                        if let Some((set, _)) = other {
                            consider(set, &mut best);
                        }
                    }
                }
            }
            let exact = whole && run.is_some() && run == best;
            best.map(|set| (set, exact))
        }
        HirKind::Alternation(subs) => {
            let mut all = BTreeSet::new();
            let mut exact = true;
            for sub in subs {
                let (set, e) = required(sub)?;
                exact &= e;
                all.extend(set);
            }
            (all.len() <= MAX_NEEDLES).then_some((all, exact))
        }
    }
}

/// Every string of `a` followed by every string of `b`, when there are not
/// too many.
fn joined(a: &BTreeSet<Vec<u8>>, b: &BTreeSet<Vec<u8>>) -> Option<BTreeSet<Vec<u8>>> {
    if a.len() * b.len() > MAX_NEEDLES {
        return None;
    }
    Some(
        a.iter()
            .flat_map(|x| b.iter().map(move |y| [x.as_slice(), y].concat()))
            .collect(),
    )
}

fn shortest(set: &BTreeSet<Vec<u8>>) -> usize {
    set.iter().map(Vec::len).min().unwrap_or(0)
}

/// A small class stands for each of its members.
fn class_needles(class: &Class) -> Option<BTreeSet<Vec<u8>>> {
    let mut out = BTreeSet::new();
    match class {
        Class::Unicode(c) => {
            for range in c.iter() {
                for ch in range.start()..=range.end() {
                    if out.len() >= MAX_NEEDLES {
                        return None;
                    }
                    out.insert(ch.to_string().into_bytes());
                }
            }
        }
        Class::Bytes(c) => {
            for range in c.iter() {
                for b in range.start()..=range.end() {
                    if out.len() >= MAX_NEEDLES {
                        return None;
                    }
                    out.insert(vec![b]);
                }
            }
        }
    }
    Some(out)
}

fn is_code(is: &Is) -> String {
    match is {
        Is::Signal(kind) => format!("Is::Signal(SignalKind::{kind:?})"),
        Is::Collapse(label) => format!("Is::Collapse({label:?}.into())"),
        Is::Context => "Is::Context".into(),
    }
}

fn option_code(is: &Option<Is>) -> String {
    is.as_ref()
        .map_or("None".into(), |is| format!("Some({})", is_code(is)))
}

fn key(source: &Source) -> &str {
    assert!(source.file.is_none(), "the built-in table has no file");
    &source.key
}
