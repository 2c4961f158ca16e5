//! Bugs of the test harness itself.

use std::path::Path;

/// The examples test ended each example's process group with the `kill`
/// program, `kill -KILL -PGID`; procps-ng 4.0 reads that as `kill(-1,
/// SIGKILL)`, every process the user may signal, so a run of the suite
/// killed the CI job and the shell it ran in. Tests signal processes with
/// `util::signal` and `util::signal_group` (the system call) only.
#[test]
fn the_examples_test_killed_every_process_through_the_kill_program() {
    fn scan(dir: &Path, found: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                scan(&path, found);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for (n, line) in text.lines().enumerate() {
                    // Spelled in two pieces so this file does not match.
                    if line.contains(concat!("Command::new(", "\"kill\")")) {
                        found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                    }
                }
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for dir in ["tests", "shared"] {
        scan(&root.join(dir), &mut found);
    }
    assert!(
        found.is_empty(),
        "the kill program is run:\n{}",
        found.join("\n")
    );

    // The replacement signals the group it is given and nothing else.
    let mut outside = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let mut group = std::process::Command::new("sleep");
    std::os::unix::process::CommandExt::process_group(&mut group, 0);
    let mut inside = group.arg("30").spawn().unwrap();
    assert!(crate::util::signal_group(
        inside.id(),
        rustix::process::Signal::KILL
    ));
    assert!(!inside.wait().unwrap().success());
    assert_eq!(
        outside.try_wait().unwrap(),
        None,
        "a process outside the group was signalled"
    );
    outside.kill().unwrap();
    outside.wait().unwrap();
}
