//! Hook input on arbitrary bytes: parsing never panics (deep nesting
//! included), and a session id that is accepted is safe as a file name.
#![no_main]

use jkz::hook_input::HookInput;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(input) = HookInput::parse(data) else {
        return;
    };
    let _ = (input.event_name(), input.trigger(), input.source(), input.cwd());
    if let Some(Ok(id)) = input.session_id() {
        let id = id.as_str();
        assert!(!id.is_empty() && id.len() <= 128);
        assert!(id != "." && id != "..");
        assert!(!id.contains('/') && !id.contains('\0'));
    }
});
