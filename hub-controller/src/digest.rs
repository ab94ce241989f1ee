//! SHA-256 digests of secrets: the hub stores and compares only these.

use sha2::{Digest as _, Sha256};

/// A SHA-256 digest.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Digest([u8; 32]);

impl std::fmt::Debug for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "sha256:{}", &self.to_hex()[..12])
    }
}

/// The SHA-256 digest of `data`.
pub fn sha256(data: &[u8]) -> Digest {
    Digest(Sha256::digest(data).into())
}

impl Digest {
    /// Lower-case hex.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Parses lower- or upper-case hex; `None` unless it is 64 hex digits.
    pub fn from_hex(hex: &str) -> Option<Self> {
        let hex = hex.trim().as_bytes();
        if hex.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, pair) in hex.chunks(2).enumerate() {
            let text = std::str::from_utf8(pair).ok()?;
            out[i] = u8::from_str_radix(text, 16).ok()?;
        }
        Some(Self(out))
    }

    /// Whether `secret` hashes to this digest, compared in constant time.
    pub fn matches(&self, secret: &[u8]) -> bool {
        let other = sha256(secret);
        self.0
            .iter()
            .zip(other.0.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_matches() {
        let d = sha256(b"secret");
        assert_eq!(Digest::from_hex(&d.to_hex()), Some(d));
        assert!(d.matches(b"secret"));
        assert!(!d.matches(b"secreT"));
        assert_eq!(Digest::from_hex("zz"), None);
        assert_eq!(
            d.to_hex(),
            "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b"
        );
    }
}
