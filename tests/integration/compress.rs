//! `jkz-compress` through the real binary: edge inputs, a large section, a
//! broken store, and the documented exit codes.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::util::{bin, Dir};

const MARKER: &str = "<!-- jkz:offload sha256=";

/// A document with one large section under `# Big` and a protected block.
fn large_doc(lines: usize) -> String {
    let mut s = String::from("# Intro\nshort\n\n# Big\n");
    for i in 0..lines {
        s.push_str(&format!("line {i} of a long pasted log, é 漢字\n"));
    }
    s.push_str("<!-- jkz:verdict-json {\"verdict\":\"FAIL\"} -->\n# End\nbye\n");
    s
}

fn markers(out: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(out)
        .lines()
        .filter(|l| l.starts_with(MARKER))
        .map(str::to_string)
        .collect()
}

/// The sha256 a marker line names.
fn sha_of(marker: &str) -> String {
    marker[MARKER.len()..MARKER.len() + 64].to_string()
}

#[test]
fn empty_input_gives_empty_output_and_creates_nothing() {
    let dir = Dir::new();
    let run = dir.cmd("jkz-compress").run().success();
    assert!(run.stdout().is_empty(), "{}", run.report());
    assert!(dir.files().is_empty());
    let run = dir.cmd("jkz-compress").arg("--restore").run().success();
    assert!(run.stdout().is_empty());
}

#[test]
fn small_document_passes_through_without_a_state_dir() {
    let dir = Dir::new();
    let doc = "# A\nsmall\n```\n# code\n```\n";
    let run = dir.cmd("jkz-compress").stdin(doc).run().success();
    assert_eq!(run.stdout(), doc.as_bytes());
    assert!(!dir.join("state").exists());
}

#[test]
fn input_with_no_headings_is_offloaded_and_restored() {
    let dir = Dir::new();
    let doc = "a line of a log without any heading\n".repeat(2000);
    dir.write("doc.md", &doc);
    let run = dir
        .cmd("jkz-compress")
        .args(["--state-dir", "st", "doc.md"])
        .run()
        .success();
    let found = markers(run.stdout());
    assert_eq!(found.len(), 1, "{}", run.report());
    assert!(run.stdout().len() < 4096);
    assert!(
        run.stdout().starts_with(b"a line of a log"),
        "head excerpt kept"
    );
    let stored = dir.join(format!("st/context-offload/{}.md", sha_of(&found[0])));
    assert_eq!(std::fs::read(stored).unwrap(), doc.as_bytes());
    let back = dir
        .cmd("jkz-compress")
        .args(["--state-dir", "st", "--restore"])
        .stdin(run.stdout())
        .run()
        .success();
    assert_eq!(back.stdout(), doc.as_bytes());
}

#[test]
fn unterminated_fence_round_trips_and_marker_is_not_in_the_fence() {
    let dir = Dir::new();
    let mut doc = String::from("# Code\nintro\n```rust\n");
    for i in 0..3000 {
        doc.push_str(&format!("let x{i} = {i}; // # not a heading\n"));
    }
    dir.write("doc.md", &doc);
    let once = dir
        .cmd("jkz-compress")
        .args(["--state-dir", "st", "doc.md"])
        .run()
        .success();
    let out = once.stdout_str();
    // The excerpt stops before the open fence, so the marker is a comment.
    assert!(
        out.starts_with("# Code\nintro\n<!-- jkz:offload"),
        "{}",
        once.report()
    );
    let twice = dir
        .cmd("jkz-compress")
        .args(["--state-dir", "st"])
        .stdin(once.stdout())
        .run()
        .success();
    assert_eq!(twice.stdout(), once.stdout(), "idempotent");
    let back = dir
        .cmd("jkz-compress")
        .args(["--state-dir", "st", "--restore"])
        .stdin(once.stdout())
        .run()
        .success();
    assert_eq!(back.stdout(), doc.as_bytes());
}

#[test]
fn protected_block_over_the_threshold_is_never_offloaded() {
    let dir = Dir::new();
    let plan: String = (0..2000).map(|i| format!("{i}. step\n")).collect();
    let doc = format!("# Plan\n<compact-plan>\n{plan}</compact-plan>\n");
    let run = dir
        .cmd("jkz-compress")
        .args(["--state-dir", "st", "--threshold", "1024"])
        .stdin(&doc)
        .run()
        .success();
    assert_eq!(run.stdout(), doc.as_bytes());
}

/// Streams a document with one section of about `bytes` bytes into a file.
fn write_big(path: &Path, bytes: usize) -> Vec<u8> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let head = b"# Huge\n";
    f.write_all(head).unwrap();
    let line = "a pasted log line, with some é and 漢字 in it, 0123456789\n";
    for _ in 0..bytes / line.len() {
        f.write_all(line.as_bytes()).unwrap();
    }
    f.write_all(b"## TL;DR\nkeep\n").unwrap();
    f.flush().unwrap();
    std::fs::read(path).unwrap()
}

fn big_section_round_trip(bytes: usize) {
    let dir = Dir::new();
    let doc = write_big(&dir.join("doc.md"), bytes);
    let out = dir.join("out.md");
    let status = Command::new(bin("jkz-compress"))
        .args(["--state-dir", "st", "doc.md"])
        .current_dir(dir.path())
        .stdout(std::fs::File::create(&out).unwrap())
        .status()
        .unwrap();
    assert!(status.success());
    let compressed = std::fs::read(&out).unwrap();
    assert!(compressed.len() < 4096, "{} bytes", compressed.len());
    assert!(compressed.ends_with(b"## TL;DR\nkeep\n"));
    let restored = Command::new(bin("jkz-compress"))
        .args(["--state-dir", "st", "--restore", "out.md"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(restored.status.success());
    assert!(restored.stdout == doc, "restored document differs");
}

/// A section of 200 MB: larger than every internal bound (line reader
/// buffer, scanner block bound, copy buffers) by orders of magnitude.
#[test]
fn section_of_200_mb_round_trips() {
    big_section_round_trip(200 << 20);
}

fn compressed_in(dir: &Dir) -> (String, Vec<u8>) {
    dir.write("doc.md", large_doc(3000));
    let run = dir
        .cmd("jkz-compress")
        .args(["--state-dir", "st", "doc.md"])
        .run()
        .success();
    let found = markers(run.stdout());
    assert_eq!(found.len(), 1, "{}", run.report());
    (sha_of(&found[0]), run.stdout().to_vec())
}

#[test]
fn restore_with_a_deleted_file_names_the_marker_and_writes_nothing() {
    let dir = Dir::new();
    let (sha, out) = compressed_in(&dir);
    std::fs::remove_file(dir.join(format!("st/context-offload/{sha}.md"))).unwrap();
    let run = dir
        .cmd("jkz-compress")
        .args(["--state-dir", "st", "--restore"])
        .stdin(&out)
        .run()
        .expect_code(5);
    assert!(run.stdout().is_empty());
    let line = 1 + String::from_utf8_lossy(&out)
        .lines()
        .position(|l| l.starts_with(MARKER))
        .unwrap();
    let err = run.stderr_str();
    assert!(
        err.contains(&sha) && err.contains(&format!("line {line} ")) && err.contains("not found"),
        "{err}"
    );
}

#[test]
fn restore_with_a_modified_file_names_the_marker_and_writes_nothing() {
    let dir = Dir::new();
    let (sha, out) = compressed_in(&dir);
    let path = dir.join(format!("st/context-offload/{sha}.md"));
    let mut content = std::fs::read(&path).unwrap();
    content[100] ^= 1; // same size, different content
    std::fs::write(&path, content).unwrap();
    let run = dir
        .cmd("jkz-compress")
        .args(["--state-dir", "st", "--restore"])
        .stdin(&out)
        .run()
        .expect_code(5);
    assert!(run.stdout().is_empty());
    assert!(run.stderr_str().contains("altered") && run.stderr_str().contains(&sha));
}

#[test]
fn read_only_offload_directory_fails_with_nothing_written() {
    use std::os::unix::fs::PermissionsExt;
    let dir = Dir::new();
    dir.write("doc.md", large_doc(3000));
    let store = dir.join("st/context-offload");
    std::fs::create_dir_all(&store).unwrap();
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o500)).unwrap();
    if std::fs::write(store.join("probe"), b"").is_ok() {
        // Root ignores permission bits: make the store unwritable another
        // way (a file where the directory should be), same code path.
        std::fs::remove_file(store.join("probe")).unwrap();
        std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::remove_dir(&store).unwrap();
        std::fs::write(&store, b"not a directory").unwrap();
    }
    let run = dir
        .cmd("jkz-compress")
        .args(["--state-dir", "st", "doc.md"])
        .run()
        .expect_code(4);
    assert!(run.stdout().is_empty(), "{}", run.report());
    assert!(
        run.stderr_str().contains("nothing was written"),
        "{}",
        run.report()
    );
}

#[test]
fn no_state_dir_exits_3_and_creates_nothing() {
    let dir = Dir::new();
    dir.write("doc.md", large_doc(3000));
    let run = dir.cmd("jkz-compress").arg("doc.md").run().expect_code(3);
    assert!(run.stdout().is_empty());
    assert!(run.stderr_str().contains("--state-dir"), "{}", run.report());
    assert!(!dir.join("state").exists());
    // An existing ./state is an opt-in; JKZ_STATE_DIR is explicit.
    std::fs::create_dir(dir.join("state")).unwrap();
    dir.cmd("jkz-compress").arg("doc.md").run().success();
    assert_eq!(
        std::fs::read_dir(dir.join("state/context-offload"))
            .unwrap()
            .count(),
        1
    );
    dir.cmd("jkz-compress")
        .arg("doc.md")
        .env("JKZ_STATE_DIR", dir.join("env"))
        .run()
        .success();
    assert!(dir.join("env/context-offload").is_dir());
}

#[test]
fn same_content_same_file_and_repeat_runs_agree() {
    let dir = Dir::new();
    let (_, first) = compressed_in(&dir);
    let again = dir
        .cmd("jkz-compress")
        .args(["--state-dir", "st", "doc.md"])
        .run()
        .success();
    assert_eq!(again.stdout(), first.as_slice());
    assert_eq!(
        std::fs::read_dir(dir.join("st/context-offload"))
            .unwrap()
            .count(),
        1
    );
}

#[test]
fn budget_offloads_largest_first_and_reports_when_it_cannot_fit() {
    let dir = Dir::new();
    let mut doc = String::from("# Doc\n");
    for (name, lines) in [("small", 60), ("medium", 200), ("large", 800)] {
        doc.push_str(&format!("## {name}\n"));
        doc.push_str(&"some text in this section\n".repeat(lines));
        doc.push_str("<!-- jkz:decisions keep -->\n");
    }
    dir.write("doc.md", &doc);
    // Nothing is over the default threshold except "large".
    let base = dir
        .cmd("jkz-compress")
        .args(["--state-dir", "st", "doc.md"])
        .run()
        .success();
    assert_eq!(markers(base.stdout()).len(), 1);
    let fit = dir
        .cmd("jkz-compress")
        .args(["--state-dir", "st", "--budget", "7000", "doc.md"])
        .run()
        .success();
    assert!(fit.stdout().len() <= 7000, "{}", fit.report());
    assert_eq!(
        markers(fit.stdout()).len(),
        2,
        "medium goes next, small stays"
    );
    assert!(fit.stderr_str().is_empty());
    let tight = dir
        .cmd("jkz-compress")
        .args(["--state-dir", "st", "--budget", "10", "doc.md"])
        .run()
        .success();
    assert!(
        tight.stderr_str().contains("cannot fit the budget of 10"),
        "{}",
        tight.report()
    );
    // Small sections stay: the floor is twice the excerpt (4096 bytes).
    assert_eq!(markers(tight.stdout()).len(), 2, "{}", tight.report());
    assert_eq!(
        tight
            .stdout_str()
            .matches("<!-- jkz:decisions keep -->")
            .count(),
        3
    );
}

#[test]
fn bad_arguments_exit_2() {
    let dir = Dir::new();
    let run = dir
        .cmd("jkz-compress")
        .args(["--threshold", "10"])
        .run()
        .expect_code(2);
    assert!(run.stderr_str().contains("minimum"));
    dir.cmd("jkz-compress")
        .args(["--threshold", "4096", "--excerpt", "4000"])
        .run()
        .expect_code(2);
    dir.cmd("jkz-compress")
        .args(["--excerpt", "10", "--excerpt-lines", "2"])
        .run()
        .expect_code(2);
    dir.cmd("jkz-compress")
        .args(["--restore", "--budget", "10"])
        .run()
        .expect_code(2);
}

#[test]
fn help_documents_every_flag_and_exit_code() {
    let run = Dir::new().cmd("jkz-compress").arg("--help").run().success();
    let help = run.stdout_str();
    for needle in [
        "--threshold",
        "--excerpt",
        "--excerpt-lines",
        "--budget",
        "--state-dir",
        "--restore",
        "16384",
        "Exit codes",
        "5  --restore",
    ] {
        assert!(help.contains(needle), "--help lacks {needle}\n{help}");
    }
}
