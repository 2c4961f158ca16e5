//! `sqlite3 [OPTIONS] DB [SQL…]`: a change of DB unless every statement it
//! runs is known and only reads (`SELECT`, `EXPLAIN`, a `PRAGMA` without a
//! value, `.tables`, `.schema`, …), or it opens DB read-only (`-readonly`,
//! `file:…?mode=ro`). The SQL comes from its arguments, `-cmd`, or its
//! input; SQL from elsewhere (`-init FILE`, `< file.sql`, `.read`) is
//! taken for a change. Dot-commands that write files or run commands
//! (`.output FILE`, `.backup FILE`, `.shell CMD`) are read too.

use std::sync::LazyLock;

use regex::{Regex, RegexBuilder};

use super::expand::{Scope, Word};
use super::output::Stream;
use super::{Change, Reader};

/// Options that take a value (`-heap`, `-lookaside` and `-pagecache` take
/// two).
const VALUED: &[&str] = &[
    "separator",
    "newline",
    "nullvalue",
    "mmap",
    "vfs",
    "escape",
    "maxsize",
    "nonce",
    "A",
    "heap",
    "lookaside",
    "pagecache",
];

/// SQL that changes a database, or a function of the command line tool
/// that writes a file or loads code.
static SQL_WRITE: LazyLock<Regex> = LazyLock::new(|| {
    RegexBuilder::new(
        r"\b(insert|update|delete|replace\s+into|drop|alter|create|vacuum|reindex|attach|detach|analyze|writefile|edit|load_extension)\b|\bpragma\s+\w+\s*[=(]",
    )
    .case_insensitive(true)
    .build()
    .expect("a valid pattern")
});

/// Pragmas that change the database even with no value.
static PRAGMA_CHANGE: LazyLock<Regex> = LazyLock::new(|| {
    RegexBuilder::new(
        r"\bpragma\s+(\w+\.)?(optimize|incremental_vacuum|shrink_memory|wal_checkpoint)\b",
    )
    .case_insensitive(true)
    .build()
    .expect("a valid pattern")
});

/// Pragmas that take an argument in parentheses and only read.
static PRAGMA_READ: LazyLock<Regex> = LazyLock::new(|| {
    RegexBuilder::new(r"\bpragma\s+(\w+\.)?(table_info|table_xinfo|table_list|index_list|index_info|index_xinfo|foreign_key_list|foreign_key_check|integrity_check|quick_check)\s*\(")
        .case_insensitive(true)
        .build()
        .expect("a valid pattern")
});

/// Dot-commands that only read or only change the display.
const READ_DOTS: &[&str] = &[
    "tables",
    "table",
    "schema",
    "fullschema",
    "indexes",
    "indices",
    "headers",
    "header",
    "mode",
    "dump",
    "show",
    "help",
    "quit",
    "exit",
    "databases",
    "width",
    "nullvalue",
    "separator",
    "timer",
    "eqp",
    "explain",
    "print",
    "stats",
    "dbinfo",
    "lint",
    "changes",
    "echo",
    "bail",
    "prompt",
    "scanstats",
    "version",
    "vfsinfo",
    "vfslist",
    "vfsname",
    "sha3sum",
    "expert",
];

impl Reader {
    pub(super) fn sqlite3(&mut self, args: &[Word], stdin: &Stream, scope: &Scope, depth: usize) {
        let cwd = scope.cwd.clone();
        let mut read_only = false;
        let mut sql: Vec<&Word> = Vec::new();
        let mut sql_from_elsewhere = false;
        let mut operands: Vec<&Word> = Vec::new();
        let mut options = true;
        let mut iter = args.iter();
        while let Some(w) = iter.next() {
            let t = w.text.as_str();
            let option = t.strip_prefix("--").or_else(|| t.strip_prefix('-'));
            match option.filter(|o| options && !o.is_empty()) {
                None if options && t == "--" => options = false,
                None => operands.push(w),
                Some("readonly") => read_only = true,
                Some("cmd") => sql.extend(iter.next()),
                Some("init") => {
                    sql_from_elsewhere = true;
                    iter.next();
                }
                Some(o) if VALUED.contains(&o) => {
                    iter.next();
                    if matches!(o, "heap" | "lookaside" | "pagecache") {
                        iter.next();
                    }
                }
                Some(_) => {}
            }
        }
        let Some((db, rest)) = operands.split_first() else {
            return;
        };
        sql.extend(rest.iter().copied());
        let (db_text, uri_read_only) = database(&db.text);
        if db_text.is_empty() || db_text == ":memory:" {
            return;
        }
        // Without SQL operands, the input is read too (after `-cmd`).
        let known: Option<String> = if sql.iter().any(|w| w.unknown()) {
            None
        } else {
            let mut parts: Vec<&str> = sql.iter().map(|w| w.text.as_str()).collect();
            match (rest.is_empty(), stdin) {
                (false, _) | (true, Stream::Empty) => Some(parts.join("\n")),
                (true, Stream::Text(text)) => {
                    parts.push(text);
                    Some(parts.join("\n"))
                }
                (true, _) => None,
            }
        };
        let mut reads_only = !sql_from_elsewhere && known.is_some();
        if let Some(text) = &known {
            reads_only &= self.dot_commands(text, cwd.as_deref(), scope, depth);
            reads_only &= statements_only_read(text);
        }
        if !(read_only || uri_read_only || reads_only) {
            let db = Word {
                text: db_text,
                ..(*db).clone()
            };
            self.write(&db, Change::Edit, "sqlite3", cwd.as_deref());
        }
    }

    /// The dot-commands of `text`: their writes; true when all of them only
    /// read.
    fn dot_commands(
        &mut self,
        text: &str,
        cwd: Option<&std::path::Path>,
        scope: &Scope,
        depth: usize,
    ) -> bool {
        let mut only_read = true;
        for line in text.lines().map(str::trim_start) {
            let Some(dot) = line.strip_prefix('.') else {
                continue;
            };
            let (name, rest) = dot.split_once(char::is_whitespace).unwrap_or((dot, ""));
            let rest = rest.trim();
            let last_word = rest.split_whitespace().last().unwrap_or("");
            match name {
                n if READ_DOTS.contains(&n) => {}
                "output" | "once" | "log" | "trace" => {
                    if !rest.is_empty()
                        && !rest.starts_with(['|', '-'])
                        && rest != "stdout"
                        && rest != "off"
                    {
                        let file = Word::literal(last_word.trim_matches(['\'', '"']));
                        self.write(&file, Change::Write, "sqlite3 .output", cwd);
                    } else if let Some(cmd) = rest.strip_prefix('|') {
                        self.script(cmd, &mut scope.clone(), depth + 1, Stream::Empty);
                    }
                }
                "backup" | "save" | "clone" => {
                    let file = Word::literal(last_word.trim_matches(['\'', '"']));
                    self.write(&file, Change::Write, "sqlite3 .backup", cwd);
                }
                "shell" | "system" => {
                    self.script(rest, &mut scope.clone(), depth + 1, Stream::Empty);
                    only_read = false;
                }
                _ => only_read = false,
            }
        }
        only_read
    }
}

/// The database a `sqlite3` operand names (`file:` URIs read), and whether
/// the URI opens it read-only.
fn database(operand: &str) -> (String, bool) {
    let Some(uri) = operand.strip_prefix("file:") else {
        return (operand.to_string(), false);
    };
    let (path, query) = uri.split_once('?').unwrap_or((uri, ""));
    let path = path.strip_prefix("//").map_or(path, |p| {
        // `file://localhost/abs` or `file:///abs`.
        p.find('/').map_or(p, |k| &p[k..])
    });
    let read_only = query
        .split('&')
        .any(|kv| kv == "mode=ro" || kv == "immutable=1");
    (path.to_string(), read_only)
}

/// True when every SQL statement of `text` (its dot-commands aside) only
/// reads.
fn statements_only_read(text: &str) -> bool {
    let sql: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('.'))
        .collect::<Vec<_>>()
        .join("\n");
    let sql = strip_comments(&sql);
    if PRAGMA_READ.is_match(&sql) {
        let without = PRAGMA_READ.replace_all(&sql, "select (");
        return only_reads(&without);
    }
    only_reads(&sql)
}

fn only_reads(sql: &str) -> bool {
    if SQL_WRITE.is_match(sql) || PRAGMA_CHANGE.is_match(sql) {
        return false;
    }
    sql.split(';').map(str::trim).all(|stmt| {
        let first = stmt
            .split(|c: char| !c.is_ascii_alphabetic())
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        // A dot-command inside SQL is a syntax error: it changes nothing.
        stmt.is_empty()
            || stmt.starts_with('.')
            || matches!(
                first.as_str(),
                "select" | "explain" | "values" | "with" | "pragma"
            )
    })
}

/// `sql` without its `--` and `/* */` comments and string literals'
/// contents (a `'DELETE'` string is no statement).
fn strip_comments(sql: &str) -> String {
    let mut out = String::new();
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '-' if chars.peek() == Some(&'-') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
                out.push(' ');
            }
            '\'' | '"' => {
                out.push(c);
                for d in chars.by_ref() {
                    if d == c {
                        break;
                    }
                }
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_sql() {
        for sql in [
            "SELECT * FROM claims",
            "select issue from claims; .tables",
            "PRAGMA table_info(claims)",
            "PRAGMA journal_mode",
            "WITH x AS (SELECT 1) SELECT * FROM x",
            "SELECT 'DELETE FROM claims'",
            "-- DELETE\nSELECT 1",
        ] {
            assert!(statements_only_read(sql), "{sql}");
        }
        for sql in [
            "DELETE FROM claims",
            "select 1; delete from claims",
            "PRAGMA journal_mode=DELETE",
            "PRAGMA wal_checkpoint(TRUNCATE)",
            "WITH x AS (SELECT 1) DELETE FROM claims",
            "SELECT writefile('x', 'y')",
            "VACUUM",
        ] {
            assert!(!statements_only_read(sql), "{sql}");
        }
        assert_eq!(
            database("file:state/chat.db?mode=ro"),
            ("state/chat.db".into(), true)
        );
        assert_eq!(database("file:///p/chat.db"), ("/p/chat.db".into(), false));
    }
}
