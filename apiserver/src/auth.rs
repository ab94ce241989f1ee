//! Bearer-token authentication.
//!
//! Tokens live in a static token file in the data directory (`tokens.csv`, mode 0600), one
//! `token,user,uid,"group1,group2"` line per identity, the format of kube-apiserver's
//! `--token-auth-file`. The server keeps only SHA-256 digests in memory and compares digests, so a
//! lookup does not leak how much of a token matched.

use std::collections::HashMap;
use std::path::Path;
use std::sync::RwLock;
use std::time::{Duration, Instant};

use rand::RngCore;
use sha2::{Digest, Sha256};

use crate::pki;

/// Who made a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
}

impl User {
    /// The caller of a public endpoint without credentials.
    pub fn anonymous() -> Self {
        User {
            name: "system:anonymous".into(),
            uid: String::new(),
            groups: vec!["system:unauthenticated".into()],
        }
    }

    /// The cluster administrator that `atoll up` and `atoll apiserver` create.
    pub fn admin() -> Self {
        User {
            name: "atoll-admin".into(),
            uid: "atoll-admin".into(),
            groups: vec!["system:masters".into(), "system:authenticated".into()],
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read or write the token file")]
    File(#[from] pki::Error),
    #[error("cannot read the token file {path}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("line {line} of the token file is not `token,user,uid[,\"groups\"]`")]
    Malformed { line: usize },
}

/// Maps bearer tokens to users: the static token file, plus short-lived tokens the server issued
/// (TokenRequest), which live in memory only and end at their expiry or at a restart.
#[derive(Default)]
pub struct Authenticator {
    by_digest: HashMap<[u8; 32], User>,
    issued: RwLock<HashMap<[u8; 32], (User, Instant)>>,
}

impl Authenticator {
    pub fn new() -> Self {
        Self::default()
    }

    /// Accepts `token` as `user`.
    pub fn insert(&mut self, token: &str, user: User) {
        self.by_digest.insert(digest(token), user);
    }

    /// The user of an `Authorization` header value, if it carries a known bearer token.
    pub fn authenticate(&self, authorization: Option<&str>) -> Option<User> {
        let token = authorization?.strip_prefix("Bearer ")?.trim();
        if token.is_empty() {
            return None;
        }
        let digest = digest(token);
        if let Some(user) = self.by_digest.get(&digest) {
            return Some(user.clone());
        }
        let issued = match self.issued.read() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        issued
            .get(&digest)
            .filter(|(_, expires)| *expires > Instant::now())
            .map(|(user, _)| user.clone())
    }

    /// Issues a token for `user` that expires after `ttl`.
    pub fn issue(&self, user: User, ttl: Duration) -> String {
        let token = new_token();
        let mut issued = match self.issued.write() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        let now = Instant::now();
        issued.retain(|_, (_, expires)| *expires > now);
        issued.insert(digest(&token), (user, now + ttl));
        token
    }

    /// Loads `tokens.csv` from `dir`, creating it with a fresh admin token on first start.
    /// Returns the authenticator and the admin token.
    pub fn load_or_create(dir: &Path) -> Result<(Self, String), Error> {
        let path = dir.join("tokens.csv");
        if !path.exists() {
            let token = new_token();
            let admin = User::admin();
            let line = format!(
                "{token},{},{},\"{}\"\n",
                admin.name,
                admin.uid,
                admin.groups.join(",")
            );
            pki::write_private(&path, line.as_bytes())?;
        }
        let text = std::fs::read_to_string(&path).map_err(|source| Error::Read {
            path: path.display().to_string(),
            source,
        })?;
        let mut auth = Authenticator::new();
        let mut admin_token = None;
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (token, user) = parse_line(line).ok_or(Error::Malformed { line: index + 1 })?;
            if admin_token.is_none() && user.groups.iter().any(|g| g == "system:masters") {
                admin_token = Some(token.to_owned());
            }
            auth.insert(token, user);
        }
        let admin_token = admin_token.ok_or(Error::Malformed { line: 0 })?;
        Ok((auth, admin_token))
    }
}

fn parse_line(line: &str) -> Option<(&str, User)> {
    let mut parts = line.splitn(4, ',');
    let token = parts.next()?.trim();
    let name = parts.next()?.trim();
    let uid = parts.next()?.trim();
    let groups = parts
        .next()
        .map(|g| {
            g.trim()
                .trim_matches('"')
                .split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if token.is_empty() || name.is_empty() {
        return None;
    }
    Some((
        token,
        User {
            name: name.to_owned(),
            uid: uid.to_owned(),
            groups,
        },
    ))
}

/// A new random bearer token (256 bits, hex).
pub fn new_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_file_is_created_once_and_authenticates() {
        let dir = tempfile::tempdir().unwrap();
        let (auth, token) = Authenticator::load_or_create(dir.path()).unwrap();
        let (again, token2) = Authenticator::load_or_create(dir.path()).unwrap();
        assert_eq!(token, token2);
        let header = format!("Bearer {token}");
        assert_eq!(auth.authenticate(Some(&header)), Some(User::admin()));
        assert_eq!(again.authenticate(Some(&header)), Some(User::admin()));
        assert_eq!(auth.authenticate(Some("Bearer wrong")), None);
        assert_eq!(auth.authenticate(Some(&token)), None, "no Bearer prefix");
        assert_eq!(auth.authenticate(None), None);
        assert_eq!(auth.authenticate(Some("Bearer ")), None);
    }

    #[test]
    fn issued_tokens_authenticate_until_they_expire() {
        let auth = Authenticator::new();
        let user = User {
            name: "system:serviceaccount:default:builder".into(),
            uid: "u".into(),
            groups: vec![],
        };
        let live = auth.issue(user.clone(), Duration::from_secs(60));
        assert_eq!(
            auth.authenticate(Some(&format!("Bearer {live}"))),
            Some(user.clone())
        );
        let expired = auth.issue(user, Duration::ZERO);
        assert_eq!(auth.authenticate(Some(&format!("Bearer {expired}"))), None);
    }
}
