//! The hash of a response, as records store it (lowercase hex sha256).
//! Responses are kept by the truncation engine while they stream
//! ([`crate::truncate::full_output::Keeper`]).

use sha2::{Digest, Sha256};

pub use crate::truncate::full_output::hex;

/// The lowercase hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_of_a_known_digest() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
