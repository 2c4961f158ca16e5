//! A large source file's Read, as an outline: its head as the client shows
//! it, then its declarations, each after its true line number.
//!
//! The client numbers the lines of a read's text itself, from the read's
//! first line ([`crate::client::ReadFile::start`]), one by one (its module
//! says where it was measured): the head keeps its true numbers, and every
//! outline line carries its own in its text (`L412 | pub fn reduce_with(`),
//! after a line saying so. The client still lets the agent edit the file
//! after such a read, and the whole file is the file itself: a range of it
//! is one read with an offset and a limit away.
//!
//! A declaration is found by a grammar-light scan per language (by the
//! file's extension): a line that starts a function, type, class, module,
//! trait or impl, at the indentation where such things are declared. The
//! scan never parses; a line it misses is still in the file.

use regex::Regex;

use crate::client_text::client_len;

/// The most characters of one outline line's text.
const LINE_MAX: usize = 160;

/// The head's share of the budget when the outline needs the rest.
const HEAD_SHARE_MIN: f64 = 0.25;

/// The languages the scan knows, by extension, and what starts a
/// declaration in each.
fn pattern(path: &str) -> Option<&'static str> {
    let ext = path.rsplit_once('.').map(|(_, e)| e)?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "rs" => {
            r"^\s{0,8}(pub(\([^)]*\))?\s+)?((async|const|unsafe|extern\s+\S+|default)\s+)*(fn|struct|enum|trait|impl|mod|type|union|macro_rules!)\b"
        }
        "py" | "pyi" => r"^\s{0,8}(async\s+)?(def|class)\s",
        "js" | "jsx" | "mjs" | "cjs" | "ts" | "tsx" | "mts" | "cts" => {
            r"^\s{0,4}(export\s+)?(default\s+)?(declare\s+)?(abstract\s+)?(async\s+)?(function\b|class\s|interface\s|type\s+\w+\s*(<[^=]*>)?\s*=|enum\s|namespace\s|const\s+\w+\s*=\s*(async\s*)?(\([^)]*\)|\w+)\s*=>)"
        }
        "go" => r"^(func|type)\s",
        "java" | "kt" | "kts" | "scala" | "cs" | "swift" => {
            r"^\s{0,8}((public|private|protected|internal|static|final|abstract|override|open|sealed|data|inline|suspend|async|partial|virtual|fileprivate|export)\s+)*(class|interface|enum|record|struct|object|trait|fun|func|def|protocol|extension)\s"
        }
        "c" | "h" | "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" => {
            r"^((struct|class|enum|union|namespace|typedef)\b|#define\s|[A-Za-z_][\w:<>,\s\*&]*\s[\*&]*[A-Za-z_][\w:~]*\s*\([^;]*$)"
        }
        "rb" => r"^\s{0,6}(def|class|module)\s",
        "php" => {
            r"^\s{0,4}((public|private|protected|static|abstract|final)\s+)*(function|class|interface|trait|enum)\s"
        }
        "lua" => r"^\s{0,4}(local\s+)?function\s",
        "sh" | "bash" | "zsh" => r"^\s{0,4}(function\s+[\w:-]+|[\w:-]+\s*\(\s*\))",
        "ex" | "exs" => r"^\s{0,6}(defp?|defmodule|defmacro)\s",
        _ => return None,
    })
}

/// True when a Read of `path` may be outlined.
pub fn knows(path: &str) -> bool {
    pattern(path).is_some()
}

/// The outlined view of `content` (the Read of `path`, lines from 1, of a
/// file of `total_lines` lines) within `budget` characters; `None` when the
/// scan finds no declaration past what the head shows, or nothing would
/// be gained (the caller then cuts the head as before).
pub fn outline(path: &str, content: &str, total_lines: u64, budget: usize) -> Option<String> {
    let re = Regex::new(pattern(path)?).ok()?;
    let lines: Vec<&str> = content.split_inclusive('\n').collect();
    let declarations: Vec<(usize, &str)> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| re.is_match(l.trim_end()))
        .map(|(i, l)| (i + 1, l.trim_end()))
        .collect();
    let line_of = |(n, text): (usize, &str)| {
        let text = if client_len(text) > LINE_MAX {
            let cut: String = text.chars().take(LINE_MAX).collect();
            format!("{cut}…")
        } else {
            text.to_string()
        };
        format!("L{n} | {text}\n")
    };
    // The room: the head takes what the outline leaves, at least its share.
    let note_room = 400;
    let room = budget.saturating_sub(note_room);
    let head_min = (room as f64 * HEAD_SHARE_MIN) as usize;
    let all: Vec<String> = declarations.iter().map(|&d| line_of(d)).collect();
    let all_cost: usize = all.iter().map(|l| client_len(l)).sum();
    let outline_room = all_cost.min(room.saturating_sub(head_min));
    let mut head_end = 0;
    let mut head_cost = 0;
    for l in &lines {
        let c = client_len(l);
        if head_cost + c > room - outline_room {
            break;
        }
        head_cost += c;
        head_end += 1;
    }
    if head_end == 0 {
        return None;
    }
    let past: Vec<usize> = (0..declarations.len())
        .filter(|&i| declarations[i].0 > head_end)
        .collect();
    if past.is_empty() {
        return None;
    }
    // Past its room, the outline keeps its first declarations and its last
    // (two from the front for one from the back) and says how many between
    // are not listed.
    let skip_note = 120;
    let (mut lo, mut hi, mut cost) = (0, past.len(), 0);
    while lo < hi {
        let from_front = lo <= 2 * (past.len() - hi);
        let i = if from_front { past[lo] } else { past[hi - 1] };
        let reserve = if hi - lo > 1 { skip_note } else { 0 };
        let c = client_len(&all[i]);
        if cost + c + reserve > outline_room {
            break;
        }
        cost += c;
        if from_front {
            lo += 1;
        } else {
            hi -= 1;
        }
    }
    let read_lines = lines.len();
    let mut out = String::with_capacity(head_cost + cost + note_room);
    for l in &lines[..head_end] {
        out.push_str(l);
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!(
        "[jkz: lines {}-{read_lines} of this file ({total_lines} lines) are not shown. \
         Below, its declarations after line {head_end}: each line is `L<number> | <text>`, \
         <number> being the file's own line number (the numbers the client puts before \
         these lines are not). Read a range with offset = line number, limit = line count.]\n",
        head_end + 1
    ));
    for &i in &past[..lo] {
        out.push_str(&all[i]);
    }
    if lo < hi {
        let before = if lo > 0 {
            declarations[past[lo - 1]].0
        } else {
            head_end
        };
        let after = past.get(hi).map_or(read_lines, |&i| declarations[i].0);
        out.push_str(&format!(
            "[jkz: {} more declarations between L{before} and L{after} not listed]\n",
            hi - lo
        ));
    }
    for &i in &past[hi..] {
        out.push_str(&all[i]);
    }
    (client_len(&out) < client_len(content)).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rust_file(functions: usize) -> String {
        let mut s = String::from("//! A module.\n\nuse std::io;\n\n");
        for i in 0..functions {
            s.push_str(&format!(
                "/// Does thing {i}.\npub fn thing_{i:04}(x: u32) -> u32 {{\n    let y = x + {i};\n    let z = y * 2;\n    y + z\n}}\n\n"
            ));
        }
        s
    }

    #[test]
    fn each_declaration_past_the_head_carries_its_true_line_number() {
        let content = rust_file(300);
        let lines: Vec<&str> = content.lines().collect();
        let view = outline("src/big.rs", &content, lines.len() as u64, 20_000).unwrap();
        assert!(client_len(&view) <= 20_000, "{}", client_len(&view));
        assert!(view.starts_with("//! A module.\n"));
        let mut listed = 0;
        for l in view.lines().filter(|l| l.starts_with('L')) {
            let (n, text) = l[1..].split_once(" | ").unwrap();
            let n: usize = n.parse().unwrap();
            assert_eq!(lines[n - 1], text, "line {n}");
            listed += 1;
        }
        assert!(listed > 50, "{listed}");
        assert!(view.contains("are not shown"), "{view}");
    }

    #[test]
    fn an_outline_past_its_room_keeps_the_first_and_last_and_counts_the_rest() {
        let content = rust_file(3000);
        let n = content.lines().count() as u64;
        let view = outline("src/big.rs", &content, n, 20_000).unwrap();
        assert!(client_len(&view) <= 20_000, "{}", client_len(&view));
        assert!(view.contains("pub fn thing_2999("), "the last declaration");
        assert!(view.contains("more declarations between L"), "{view}");
    }

    #[test]
    fn a_language_the_scan_does_not_know_or_a_file_without_declarations_is_not_outlined() {
        assert!(outline("notes.txt", &"words\n".repeat(5000), 5000, 20_000).is_none());
        assert!(outline("data.rs", &"    1, 2, 3,\n".repeat(5000), 5000, 20_000).is_none());
    }

    #[test]
    fn the_scan_finds_declarations_in_each_language() {
        for (path, line) in [
            ("a.rs", "pub(crate) async fn run() {"),
            ("a.rs", "impl<T> Drop for Guard<T> {"),
            ("a.py", "    async def fetch(self, url):"),
            ("a.py", "class Parser(Base):"),
            ("a.ts", "export default async function main() {"),
            ("a.ts", "export const handler = async (req) => {"),
            ("a.ts", "interface Props {"),
            ("a.go", "func (s *Server) Serve(l net.Listener) error {"),
            ("a.java", "  public static final class Builder {"),
            ("a.kt", "suspend fun load(): Data {"),
            (
                "a.c",
                "static int parse_header(const char *buf, size_t len)",
            ),
            ("a.rb", "  def initialize(name)"),
            ("a.sh", "build_all() {"),
            ("a.lua", "local function helper(x)"),
        ] {
            let re = Regex::new(pattern(path).unwrap()).unwrap();
            assert!(re.is_match(line), "{path}: {line}");
        }
        for (path, line) in [
            ("a.rs", "    let f = fn_call();"),
            ("a.py", "    return define(x)"),
            ("a.c", "    return parse(x);"),
            ("a.go", "    func := 3"),
        ] {
            let re = Regex::new(pattern(path).unwrap()).unwrap();
            assert!(!re.is_match(line), "{path}: {line}");
        }
    }
}
