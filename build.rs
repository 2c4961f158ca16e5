//! Compiles the built-in filter table (`shared/reduce/filters.toml`) into
//! Rust, checked by the same parser a project's `jkz.toml` goes through
//! (`shared/reduce/table.rs`): a table that does not parse is a build
//! error, and `jkz reduce`, which runs once per command, does not spend
//! its time parsing 1,000 lines of TOML on every call.

#[path = "shared/reduce/table.rs"]
#[allow(dead_code)]
mod table;

use std::fmt::Write as _;

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
        "            rule({:?}, {}, {}, {}, {}, {:?}, {:?}, vec![{}], {:?}),",
        r.pattern,
        is_code(&r.is),
        r.after,
        option_code(&r.next),
        option_code(&r.run),
        r.through,
        r.continued,
        examples.join(", "),
        key(&r.source),
    );
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
