// Placeholder: replaced by the issue that builds this binary.
fn main() -> std::process::ExitCode {
    eprintln!("not built yet");
    std::process::ExitCode::from(2)
}
