//! `jkz-compress` through the real binary: edge inputs, a large section, a
//! broken store, and the documented exit codes.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::util::{self, bin, Dir};

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
        "--partial",
        "--stats",
        "6  --restore --partial",
    ] {
        assert!(help.contains(needle), "--help lacks {needle}\n{help}");
    }
}

/// The same command with `--state-dir st`, run in `dir`.
fn compress_in(dir: &Dir, args: &[&str]) -> crate::util::Cmd {
    dir.cmd("jkz-compress")
        .args(["--state-dir", "st"])
        .args(args)
}

const NOT_MONOTONE: &str = include_str!("fixtures/budget-not-monotone.md");

/// The fixture: three sections of eight subsections of ~5 KB, between the
/// floor (4 KiB) and the default threshold (16 KiB). At the default each
/// section goes whole behind one excerpt; at the floor every subsection
/// leaves an excerpt of its own, an output eight times larger. A budget
/// neither can meet used to keep the floor's output.
#[test]
fn budget_never_makes_the_output_larger_than_no_budget() {
    let dir = Dir::new();
    dir.write("doc.md", NOT_MONOTONE);
    let plain = compress_in(&dir, &["doc.md"]).run().success();
    let at_floor = compress_in(&dir, &["--threshold", "4096", "doc.md"])
        .run()
        .success();
    assert!(
        at_floor.stdout().len() > 4 * plain.stdout().len(),
        "the fixture is not monotone in the threshold: {} at the floor, {} at the default",
        at_floor.stdout().len(),
        plain.stdout().len()
    );
    for budget in ["10", "5000", "6000"] {
        let run = compress_in(&dir, &["--budget", budget, "doc.md"])
            .run()
            .success();
        assert_eq!(
            run.stdout(),
            plain.stdout(),
            "--budget {budget}\n{}",
            run.report()
        );
        assert!(
            run.stderr_str().contains("cannot fit the budget"),
            "{}",
            run.report()
        );
        let again = compress_in(&dir, &["--budget", budget])
            .stdin(run.stdout())
            .run()
            .success();
        assert_eq!(
            again.stdout(),
            run.stdout(),
            "idempotent with --budget {budget}"
        );
    }
    // A budget that the default misses but a lower threshold meets.
    let roomy = plain.stdout().len() + 40_000;
    let run = compress_in(&dir, &["--budget", &roomy.to_string(), "doc.md"])
        .run()
        .success();
    assert_eq!(
        run.stdout(),
        plain.stdout(),
        "the default fits: nothing to search"
    );
    let tight = (plain.stdout().len() - 1).to_string();
    let run = compress_in(&dir, &["--budget", &tight, "doc.md"])
        .run()
        .success();
    assert!(
        run.stdout().len() <= plain.stdout().len(),
        "{}",
        run.report()
    );
    let back = compress_in(&dir, &["--restore"])
        .stdin(run.stdout())
        .run()
        .success();
    assert_eq!(back.stdout(), NOT_MONOTONE.as_bytes());
}

/// A compress that finds its offload file already there used to leave it
/// untouched, so its times stayed old and `jkz gc` removed it as idle: the
/// document just compressed could no longer be restored.
#[test]
fn gc_keeps_an_offload_file_that_a_compress_just_reused() {
    let dir = Dir::new();
    let (sha, _) = compressed_in(&dir);
    let file = dir.join(format!("st/context-offload/{sha}.md"));
    util::age(&file, util::DAY * 30);
    let again = compress_in(&dir, &["doc.md"]).run().success();
    let modified = std::fs::metadata(&file).unwrap().modified().unwrap();
    assert!(
        modified.elapsed().unwrap() < std::time::Duration::from_secs(3600),
        "the reused file was not touched"
    );
    dir.cmd("jkz")
        .args(["gc", "--state-dir", "st"])
        .run()
        .success();
    assert!(file.exists(), "gc removed a file a compress had just used");
    let back = compress_in(&dir, &["--restore"])
        .stdin(again.stdout())
        .run()
        .success();
    assert_eq!(back.stdout(), large_doc(3000).as_bytes());
}

/// With every offload file present, a second run writes no file at all:
/// under a file-size limit of 0 blocks (any write to a file fails), it
/// still succeeds, and says so with --stats.
#[test]
fn a_second_run_writes_no_file() {
    let dir = Dir::new();
    dir.write("doc.md", NOT_MONOTONE);
    let first = compress_in(&dir, &["--stats", "--threshold", "4096", "doc.md"])
        .run()
        .success();
    let err = first.stderr_str();
    assert!(
        err.contains("24 section(s) offloaded")
            && err.contains("24 file(s) written, 0 already present"),
        "{}",
        first.report()
    );
    let inodes = |dir: &Dir| -> Vec<u64> {
        use std::os::unix::fs::MetadataExt;
        let mut v: Vec<u64> = std::fs::read_dir(dir.join("st/context-offload"))
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().ino())
            .collect();
        v.sort();
        v
    };
    let before = inodes(&dir);
    let script = format!(
        "trap '' XFSZ; ulimit -f 0; exec {} --stats --state-dir st --threshold 4096 doc.md",
        crate::util::bin("jkz-compress").display()
    );
    let second = Command::new("sh")
        .args(["-c", &script])
        .current_dir(dir.path())
        .env_remove("JKZ_STATE_DIR")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{err}");
    assert_eq!(second.stdout, first.stdout());
    assert!(
        err.contains("0 file(s) written, 24 already present"),
        "{err}"
    );
    assert_eq!(inodes(&dir), before, "files were replaced");
}

/// A second marker with the same sha256 skipped the size check: with
/// `bytes=99999999 excerpt=0` 86 KB went to stdout before exit 1, with
/// `bytes=10` the section was silently cut to 10 bytes (exit 0).
#[test]
fn restore_checks_a_repeated_marker_against_its_file() {
    let dir = Dir::new();
    let (_, out) = compressed_in(&dir);
    let text = String::from_utf8(out).unwrap();
    let marker = text.lines().find(|l| l.starts_with(MARKER)).unwrap();
    let bytes = marker
        .split(" bytes=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    let excerpt = marker
        .split(" excerpt=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    for lie in ["99999999", "10"] {
        let forged = marker
            .replace(&format!(" bytes={bytes} "), &format!(" bytes={lie} "))
            .replace(&format!(" excerpt={excerpt} "), " excerpt=0 ");
        let doc = format!("{text}{forged}\n");
        let run = compress_in(&dir, &["--restore"])
            .stdin(&doc)
            .run()
            .expect_code(5);
        assert!(run.stdout().is_empty(), "{}", run.report());
        assert!(
            run.stderr_str().contains(&format!("the marker says {lie}")),
            "{}",
            run.report()
        );
        // --partial restores the honest marker and keeps the forged one.
        let partial = compress_in(&dir, &["--restore", "--partial"])
            .stdin(&doc)
            .run()
            .expect_code(6);
        let expected = format!("{}{forged}\n", large_doc(3000));
        assert_eq!(partial.stdout_str(), expected, "{}", partial.report());
    }
}

/// An offload file removed (say by `jkz gc`, when only a document outside
/// `state/` used it) made the whole restore fail with an empty stdout.
/// `--partial` restores the rest, keeps that marker and names it.
#[test]
fn restore_partial_keeps_the_marker_of_a_missing_file() {
    let dir = Dir::new();
    dir.write("doc.md", NOT_MONOTONE);
    let once = compress_in(&dir, &["--threshold", "4096", "doc.md"])
        .run()
        .success();
    let found = markers(once.stdout());
    assert_eq!(found.len(), 24);
    let gone = sha_of(&found[5]);
    let path = dir.join(format!("st/context-offload/{gone}.md"));
    let content = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let strict = compress_in(&dir, &["--restore"])
        .stdin(once.stdout())
        .run()
        .expect_code(5);
    assert!(strict.stdout().is_empty());
    let partial = compress_in(&dir, &["--restore", "--partial", "--stats"])
        .stdin(once.stdout())
        .run()
        .expect_code(6);
    let err = partial.stderr_str();
    assert!(
        err.contains(&gone) && err.contains("not found") && err.contains("the marker was kept"),
        "{}",
        partial.report()
    );
    assert!(
        err.contains("23 section(s) restored, 1 kept as markers"),
        "{err}"
    );
    assert_eq!(markers(partial.stdout()), vec![found[5].clone()]);
    // Only that section is short of the original, by what its file held.
    let excerpt: usize = found[5]
        .split(" excerpt=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        partial.stdout().len(),
        NOT_MONOTONE.len() - content.len() + excerpt + found[5].len() + 1
    );
    // With the file back, the partial output restores whole.
    std::fs::write(&path, &content).unwrap();
    let whole = compress_in(&dir, &["--restore"])
        .stdin(partial.stdout())
        .run()
        .success();
    assert_eq!(whole.stdout(), NOT_MONOTONE.as_bytes());
}

#[test]
fn stats_line_only_when_asked_or_on_a_terminal() {
    let dir = Dir::new();
    dir.write("doc.md", large_doc(3000));
    let quiet = compress_in(&dir, &["doc.md"]).run().success();
    assert!(quiet.stderr_str().is_empty(), "{}", quiet.report());
    let size = large_doc(3000).len();
    let stats = compress_in(&dir, &["--stats", "doc.md"]).run().success();
    assert_eq!(
        stats.stderr_str(),
        format!(
            "jkz-compress: 1 section(s) offloaded, {size} -> {} bytes ({:.1}%); 0 file(s) written, 1 already present\n",
            stats.stdout().len(),
            stats.stdout().len() as f64 * 100.0 / size as f64
        )
    );
    // stderr on a terminal (script(1) gives the command one).
    if Command::new("script").arg("--version").output().is_err() {
        util::cannot_run(
            "no script(1) here (apt-get install bsdutils): the terminal case is not checked",
        );
        return;
    }
    let shown = Command::new("script")
        .args(["-qec"])
        .arg(format!(
            "{} --state-dir st doc.md > out.md",
            crate::util::bin("jkz-compress").display()
        ))
        .arg("/dev/null")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(shown.status.success());
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(text.contains("1 section(s) offloaded"), "{text}");
}

/// Release notes: a `## TL;DR` with a nested `### Details`, then one setext
/// section per release (`v1.2.0` underlined with `-`), each with a few
/// subsections.
fn release_notes(releases: usize) -> String {
    let mut s = String::from(
        "Release notes\n=============\n\n## TL;DR\n\nUpgrade to 3.0: the config format changed.\n\n### Details\n\n",
    );
    for i in 0..600 {
        s.push_str(&format!(
            "detail {i}: a key that moved, and where it went now\n"
        ));
    }
    for r in (0..releases).rev() {
        s.push_str(&format!("\nv1.{r}.0\n------\n\n"));
        for part in ["Added", "Fixed"] {
            s.push_str(&format!("### {part}\n\n"));
            for i in 0..250 {
                s.push_str(&format!(
                    "- 1.{r}.0 {part} item {i}: what changed for users\n"
                ));
            }
            s.push('\n');
        }
    }
    s
}

/// The protected `## TL;DR` section ran to the next heading of its level,
/// and setext headings were text, so it held every release after it: a
/// release-notes document was kept verbatim (894 KB in the reported case).
/// Now its nested `### Details` and each setext release are sections like
/// any other; the TL;DR itself stays.
#[test]
fn release_notes_under_a_tldr_compress_like_any_other_document() {
    let dir = Dir::new();
    let doc = release_notes(36);
    assert!(doc.len() > 800_000, "{}", doc.len());
    dir.write("notes.md", &doc);
    let once = compress_in(&dir, &["notes.md"]).run().success();
    let out = once.stdout_str();
    assert!(
        out.len() * 10 < doc.len(),
        "{} of {} bytes kept",
        out.len(),
        doc.len()
    );
    assert!(out.starts_with(
        "Release notes\n=============\n\n## TL;DR\n\nUpgrade to 3.0: the config format changed.\n\n### Details\n"
    ), "{}", once.report());
    for r in 0..36 {
        assert!(
            out.contains(&format!("\nv1.{r}.0\n------\n")),
            "release {r}'s heading lost"
        );
    }
    assert!(markers(once.stdout()).len() > 36, "{}", once.report());
    let twice = compress_in(&dir, &[]).stdin(once.stdout()).run().success();
    assert_eq!(twice.stdout(), once.stdout(), "idempotent");
    let back = compress_in(&dir, &["--restore"])
        .stdin(once.stdout())
        .run()
        .success();
    assert!(back.stdout() == doc.as_bytes(), "restore(compress(x)) != x");
}

/// Markers written before setext headings were headings: an excerpt could
/// keep a setext heading's text line and offload its underline. Such a
/// document still restores byte for byte, and compressing it (twice)
/// changes nothing it should not.
#[test]
fn markers_made_before_setext_headings_still_restore_and_compress_idempotently() {
    use sha2::{Digest, Sha256};
    let dir = Dir::new();
    let store = dir.join("st/context-offload");
    std::fs::create_dir_all(&store).unwrap();
    let mut section = String::from("# Notes\nv1.0\n----\n");
    for i in 0..2000 {
        section.push_str(&format!("line {i} of the old release notes\n"));
    }
    // The text line kept, its underline offloaded; then both kept.
    for excerpt in [
        "# Notes\nv1.0\n".len(),
        "# Notes\nv1.0\n----\nline 0 of the old release notes\n".len(),
    ] {
        let sha = format!("{:x}", Sha256::digest(section.as_bytes()));
        let path = store.join(format!("{sha}.md"));
        std::fs::write(&path, &section).unwrap();
        let old = format!(
            "{}<!-- jkz:offload sha256={sha} bytes={} lines={} excerpt={excerpt} path={} -->\n",
            &section[..excerpt],
            section.len(),
            section.lines().count(),
            path.display()
        );
        let back = compress_in(&dir, &["--restore"])
            .stdin(&old)
            .run()
            .success();
        assert_eq!(back.stdout_str(), section, "excerpt {excerpt}");
        let once = compress_in(&dir, &[]).stdin(&old).run().success();
        let twice = compress_in(&dir, &[]).stdin(once.stdout()).run().success();
        assert_eq!(
            twice.stdout(),
            once.stdout(),
            "excerpt {excerpt}: idempotent"
        );
        let back = compress_in(&dir, &["--restore"])
            .stdin(once.stdout())
            .run()
            .success();
        assert_eq!(
            back.stdout_str(),
            section,
            "excerpt {excerpt}: restore after compress"
        );
    }
}
