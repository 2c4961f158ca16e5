//! Token usage, as the wrapper reports it: never guessed.
//!
//! `jkz run` names an empty temp file in the command's environment as
//! [`USAGE_FILE_VARIABLE`]. A wrapper that knows what the call cost writes
//! one JSON object there, e.g. `{"input_tokens": 1200, "output_tokens": 340}`
//! (any fields: the object is stored as the record's `tokens`, verbatim). A
//! wrapper that writes nothing gets `tokens: null`; anything but a JSON
//! object is a one-line warning and `null`.

use std::io;
use std::path::Path;

use serde_json::Value;

/// The environment variable naming the usage file.
pub const USAGE_FILE_VARIABLE: &str = "JKZ_USAGE_FILE";

/// The largest usage file read.
pub const MAX_USAGE: u64 = 64 * 1024;

/// A fresh, empty usage file in the system's temp directory (removed when
/// the returned path is dropped).
pub fn create() -> io::Result<tempfile::TempPath> {
    Ok(tempfile::Builder::new()
        .prefix("jkz-usage-")
        .suffix(".json")
        .tempfile()?
        .into_temp_path())
}

/// What the wrapper reported: `Ok(None)` when it wrote nothing.
pub fn read(path: &Path) -> Result<Option<Value>, String> {
    let bytes = match crate::state_dir::read_whole_state_file(path, MAX_USAGE) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{USAGE_FILE_VARIABLE} {}: {e}", path.display())),
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(v @ Value::Object(_)) => Ok(Some(v)),
        _ => Err(format!(
            "{USAGE_FILE_VARIABLE} {}: not a JSON object (e.g. {{\"input_tokens\": 1200, \"output_tokens\": 340}}); tokens left null",
            path.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_object_is_usage() {
        let path = create().unwrap();
        assert_eq!(read(&path), Ok(None));
        std::fs::write(&path, br#"{"input_tokens": 5, "output_tokens": 7}"#).unwrap();
        assert_eq!(
            read(&path).unwrap().unwrap()["output_tokens"],
            serde_json::json!(7)
        );
        std::fs::write(&path, b"1234").unwrap();
        assert!(read(&path).is_err());
    }
}
