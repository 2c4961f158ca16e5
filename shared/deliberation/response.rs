//! The hash of a response, as records store it (lowercase hex sha256), and
//! where a record's response file is. Responses are kept, and hashed, by the
//! truncation engine while they stream.

use std::path::PathBuf;

use sha2::{Digest, Sha256};

use crate::state_dir::layout::OFFLOAD_DIR;
use crate::state_dir::StateDir;

/// Lowercase hex of a digest.
pub fn hex(digest: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(digest.len() * 2);
    for b in digest {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The lowercase hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The file name in [`OFFLOAD_DIR`] of the response file a record names
/// (`response_file`): only `context-offload/<sha256>.txt`, the sha256 in
/// lowercase hex, as responses are kept. Any other name (another directory,
/// a path running elsewhere, a name not a hash) is none: a record is never
/// trusted to point outside the content-addressed store.
pub fn response_file_name(file: &str) -> Option<&str> {
    let name = file.strip_prefix(OFFLOAD_DIR)?.strip_prefix('/')?;
    let hash = name.strip_suffix(".txt")?;
    let is_sha256 =
        hash.len() == 64 && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    is_sha256.then_some(name)
}

/// Where the response file a record names is in `state`, or an error naming
/// it when [`response_file_name`] refuses it.
pub fn response_path(state: &StateDir, file: &str) -> Result<PathBuf, String> {
    match response_file_name(file) {
        Some(name) => Ok(state.join(OFFLOAD_DIR).join(name)),
        None => Err(format!(
            "the record names {file:?}, not a response file ({OFFLOAD_DIR}/<sha256>.txt)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_file_is_a_hash_in_context_offload() {
        let hash = sha256_hex(b"abc");
        let good = format!("context-offload/{hash}.txt");
        assert_eq!(
            response_file_name(&good),
            Some(&good["context-offload/".len()..])
        );
        let upper = format!("context-offload/{}.txt", hash.to_uppercase());
        let refused = [
            "".to_string(),
            format!("{hash}.txt"),
            format!("context-offload{hash}.txt"),
            format!("context-offload//{hash}.txt"),
            format!("context-offload/{hash}"),
            format!("context-offload/{hash}.txt/"),
            format!("context-offload/../{hash}.txt"),
            format!("context-offload/x/{hash}.txt"),
            format!("/context-offload/{hash}.txt"),
            format!("state/context-offload/{hash}.txt"),
            format!("context-offload/{}.txt", &hash[1..]),
            format!("context-offload/{hash}0.txt"),
            upper,
            "context-offload/.txt".to_string(),
            "context-offload/response.txt".to_string(),
            "context-offload/full-20250301T120000.123Z-4711.txt".to_string(),
            "context-offload/../../etc/passwd".to_string(),
        ];
        for file in refused {
            assert_eq!(response_file_name(&file), None, "{file:?}");
        }
    }

    #[test]
    fn hex_of_a_known_digest() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
