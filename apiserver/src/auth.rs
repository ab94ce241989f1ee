//! Bearer-token authentication.
//!
//! Tokens live in a static token file in the data directory (`tokens.csv`, mode 0600), one
//! `token,user,uid,"group1,group2"` line per identity, the format of kube-apiserver's
//! `--token-auth-file`. The server keeps only SHA-256 digests in memory and compares digests, so a
//! lookup does not leak how much of a token matched.
//!
//! Tokens the server issues (TokenRequest, `kubectl create token`) are JWTs signed (HS256) with
//! a key kept in the data directory (`sa.key`, mode 0600): they hold who they stand for and
//! until when, so they survive restarts, and a cluster restored from a backup (which carries
//! the key) accepts them too.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use rand::RngCore;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::pki;

/// The token file in the data directory.
pub const TOKEN_FILE: &str = "tokens.csv";
/// The key that signs issued tokens, in the data directory.
pub const SIGNING_KEY_FILE: &str = "sa.key";
/// The `iss` of issued tokens.
const ISSUER: &str = "https://kubernetes.default.svc";
/// The audience of the API itself (kube-apiserver's default `--api-audiences`, its issuer): a
/// token is accepted by the API only when issued for it.
pub const API_AUDIENCE: &str = ISSUER;

/// Who made a request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    /// What an authenticator or impersonation adds (`authentication.kubernetes.io/...`).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl User {
    /// Whether the caller presented no credentials.
    pub fn is_anonymous(&self) -> bool {
        self.name == "system:anonymous"
    }

    /// The caller of a public endpoint without credentials.
    pub fn anonymous() -> Self {
        User {
            name: "system:anonymous".into(),
            uid: String::new(),
            groups: vec!["system:unauthenticated".into()],
            ..User::default()
        }
    }

    /// The cluster administrator that `atoll up` and `atoll apiserver` create.
    pub fn admin() -> Self {
        User {
            name: "atoll-admin".into(),
            uid: "atoll-admin".into(),
            groups: vec!["system:masters".into(), "system:authenticated".into()],
            ..User::default()
        }
    }
}

/// The user a connection's client certificate names (the TLS handshake verified it against the
/// cluster CA): its common name, its organizations as groups and `system:authenticated`, as
/// kube-apiserver's x509 authenticator maps them. Set on every request of the connection.
#[derive(Clone, Debug)]
pub struct ClientCertificate(pub User);

impl ClientCertificate {
    /// The user of a verified DER certificate, `None` when it names no one (no common name).
    pub fn of(der: &[u8]) -> Option<Self> {
        let subject = pki::client::subject_of(der)?;
        if subject.user.is_empty() {
            return None;
        }
        let mut groups = subject.groups;
        groups.push("system:authenticated".into());
        let fingerprint: String = Sha256::digest(der)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Some(ClientCertificate(User {
            name: subject.user,
            uid: String::new(),
            groups,
            extra: BTreeMap::from([(
                "authentication.kubernetes.io/credential-id".to_owned(),
                vec![format!("X509SHA256={fingerprint}")],
            )]),
        }))
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
    #[error("the token signing key {path} is not 64 hexadecimal digits")]
    SigningKey { path: String },
}

/// Maps bearer tokens to users: the static token file, plus the tokens the server issued
/// (TokenRequest), which it recognizes by their signature until they expire.
pub struct Authenticator {
    by_digest: HashMap<[u8; 32], User>,
    signing_key: [u8; 32],
}

impl Default for Authenticator {
    fn default() -> Self {
        Self::new()
    }
}

impl Authenticator {
    /// No static tokens, and a fresh signing key.
    pub fn new() -> Self {
        let mut signing_key = [0u8; 32];
        rand::rng().fill_bytes(&mut signing_key);
        Authenticator {
            by_digest: HashMap::new(),
            signing_key,
        }
    }

    /// Accepts `token` as `user`.
    pub fn insert(&mut self, token: &str, user: User) {
        self.by_digest.insert(digest(token), user);
    }

    /// The user of an `Authorization` header value, if it carries a bearer token this server
    /// accepts for its API.
    pub fn authenticate(&self, authorization: Option<&str>) -> Option<User> {
        let token = authorization?.strip_prefix("Bearer ")?.trim();
        self.review(token, &[]).ok().map(|(user, _)| user)
    }

    /// Who `token` is, for one of `audiences` (the API's when empty), and which of them it is
    /// valid for, as a TokenReview answers; or why it is not accepted. Tokens of the token file
    /// know no audience: they are the API's only (upstream's audience-agnostic authenticators).
    /// Issued tokens are valid for the audiences they were issued for; one without an `aud`
    /// claim (issued before atoll recorded them) is the API's.
    pub fn review(&self, token: &str, audiences: &[String]) -> Result<(User, Vec<String>), String> {
        let token = token.trim();
        if token.is_empty() {
            return Err("invalid bearer token".into());
        }
        let asked: Vec<String> = if audiences.is_empty() {
            vec![API_AUDIENCE.to_owned()]
        } else {
            audiences.to_vec()
        };
        let (user, holds) = match self.by_digest.get(&digest(token)) {
            Some(user) => (user.clone(), vec![API_AUDIENCE.to_owned()]),
            None => self
                .verify_issued(token)
                .ok_or_else(|| "invalid bearer token".to_owned())?,
        };
        let valid: Vec<String> = asked
            .iter()
            .filter(|a| holds.contains(a))
            .cloned()
            .collect();
        if valid.is_empty() {
            return Err(format!(
                "token audiences {holds:?} is invalid for the target audiences {asked:?}"
            ));
        }
        Ok((user, valid))
    }

    /// Issues a token for `user`, valid for `audiences`, that expires after `ttl`.
    pub fn issue(&self, user: User, ttl: Duration, audiences: &[String]) -> String {
        let now = unix_now();
        let claims = json!({
            "iss": ISSUER,
            "aud": audiences,
            "sub": user.name,
            "uid": user.uid,
            "groups": user.groups,
            "iat": now,
            "nbf": now,
            "exp": now.saturating_add(ttl.as_secs()),
            "jti": uuid::Uuid::new_v4().to_string(),
        });
        let encode = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        let signed = format!(
            "{}.{}",
            encode(br#"{"alg":"HS256","typ":"JWT"}"#),
            encode(claims.to_string().as_bytes())
        );
        let signature = hmac_sha256(&self.signing_key, signed.as_bytes());
        format!("{signed}.{}", encode(&signature))
    }

    /// The user of a token this server (or one with the same key) issued, if its signature
    /// holds and it has not expired, with the audiences it was issued for.
    fn verify_issued(&self, token: &str) -> Option<(User, Vec<String>)> {
        let (signed, signature) = token.rsplit_once('.')?;
        let (_, claims) = signed.split_once('.')?;
        let decode = |text: &str| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(text)
                .ok()
        };
        let expected = hmac_sha256(&self.signing_key, signed.as_bytes());
        let given = decode(signature)?;
        // Compared in constant time, so that a guess learns nothing from the answer's timing.
        if given.len() != expected.len()
            || given
                .iter()
                .zip(expected)
                .fold(0u8, |diff, (a, b)| diff | (a ^ b))
                != 0
        {
            return None;
        }
        let claims: serde_json::Value = serde_json::from_slice(&decode(claims)?).ok()?;
        if claims["exp"].as_u64()? <= unix_now() {
            return None;
        }
        let audiences = match &claims["aud"] {
            Value::Null => vec![API_AUDIENCE.to_owned()],
            Value::String(audience) => vec![audience.clone()],
            Value::Array(audiences) => audiences
                .iter()
                .filter_map(|a| a.as_str().map(str::to_owned))
                .collect(),
            _ => return None,
        };
        let user = User {
            name: claims["sub"].as_str()?.to_owned(),
            uid: claims["uid"].as_str().unwrap_or_default().to_owned(),
            groups: claims["groups"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|g| g.as_str().map(str::to_owned))
                .collect(),
            ..User::default()
        };
        Some((user, audiences))
    }

    /// Loads `tokens.csv` and the signing key `sa.key` from `dir`, creating them on first start
    /// (the token file with a fresh admin token). Returns the authenticator and the admin token.
    pub fn load_or_create(dir: &Path) -> Result<(Self, String), Error> {
        let signing_key = load_or_create_signing_key(&dir.join(SIGNING_KEY_FILE))?;
        let path = dir.join(TOKEN_FILE);
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
        let mut auth = Authenticator {
            by_digest: HashMap::new(),
            signing_key,
        };
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
            ..User::default()
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

/// Reads the signing key (64 hex digits), creating it on first start.
fn load_or_create_signing_key(path: &Path) -> Result<[u8; 32], Error> {
    if !path.exists() {
        pki::write_private(path, format!("{}\n", new_token()).as_bytes())?;
    }
    let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
        path: path.display().to_string(),
        source,
    })?;
    let malformed = || Error::SigningKey {
        path: path.display().to_string(),
    };
    let hex = text.trim().as_bytes();
    if hex.len() != 64 {
        return Err(malformed());
    }
    let mut key = [0u8; 32];
    for (byte, pair) in key.iter_mut().zip(hex.chunks(2)) {
        let pair = std::str::from_utf8(pair).map_err(|_| malformed())?;
        *byte = u8::from_str_radix(pair, 16).map_err(|_| malformed())?;
    }
    Ok(key)
}

/// HMAC-SHA256 (RFC 2104) of `message` under a 32-byte key.
fn hmac_sha256(key: &[u8; 32], message: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(key);
    let mut inner = Sha256::new();
    inner.update(block.map(|b| b ^ 0x36));
    inner.update(message);
    let mut outer = Sha256::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
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
            ..User::default()
        };
        let api = [API_AUDIENCE.to_owned()];
        let live = auth.issue(user.clone(), Duration::from_secs(60), &api);
        assert_eq!(
            auth.authenticate(Some(&format!("Bearer {live}"))),
            Some(user.clone())
        );
        let expired = auth.issue(user, Duration::ZERO, &api);
        assert_eq!(auth.authenticate(Some(&format!("Bearer {expired}"))), None);
    }

    #[test]
    fn issued_tokens_survive_a_restart_and_need_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let (auth, _) = Authenticator::load_or_create(dir.path()).unwrap();
        let user = User {
            name: "system:serviceaccount:default:builder".into(),
            uid: "u1".into(),
            groups: vec!["system:serviceaccounts".into()],
            ..User::default()
        };
        let token = auth.issue(
            user.clone(),
            Duration::from_secs(600),
            &[API_AUDIENCE.into()],
        );
        let header = format!("Bearer {token}");
        let (again, _) = Authenticator::load_or_create(dir.path()).unwrap();
        assert_eq!(again.authenticate(Some(&header)), Some(user));
        // Another server's key does not accept it, nor does a token with a changed claim.
        assert_eq!(Authenticator::new().authenticate(Some(&header)), None);
        let (head, rest) = token.split_once('.').unwrap();
        let (_, signature) = rest.split_once('.').unwrap();
        let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(br#"{"sub":"atoll-admin","groups":["system:masters"],"exp":99999999999}"#);
        let forged = format!("Bearer {head}.{claims}.{signature}");
        assert_eq!(again.authenticate(Some(&forged)), None);
    }

    #[test]
    fn tokens_are_valid_for_the_audiences_they_were_issued_for() {
        let dir = tempfile::tempdir().unwrap();
        let (auth, admin) = Authenticator::load_or_create(dir.path()).unwrap();
        let user = User {
            name: "system:serviceaccount:default:builder".into(),
            ..User::default()
        };
        let vault = auth.issue(user.clone(), Duration::from_secs(600), &["vault".into()]);
        // Not the API's: refused by it, and by a review for the API.
        assert_eq!(auth.authenticate(Some(&format!("Bearer {vault}"))), None);
        assert_eq!(
            auth.review(&vault, &[]).unwrap_err(),
            r#"token audiences ["vault"] is invalid for the target audiences ["https://kubernetes.default.svc"]"#
        );
        let asked = ["other".to_owned(), "vault".to_owned()];
        assert_eq!(
            auth.review(&vault, &asked),
            Ok((user.clone(), vec!["vault".to_owned()]))
        );

        let both = auth.issue(
            user.clone(),
            Duration::from_secs(600),
            &["vault".into(), API_AUDIENCE.into()],
        );
        assert_eq!(
            auth.authenticate(Some(&format!("Bearer {both}"))),
            Some(user.clone())
        );

        // The token file's tokens are the API's only.
        assert!(auth.review(&admin, &[]).is_ok());
        assert!(auth.review(&admin, &["vault".into()]).is_err());

        // A token issued before audiences were recorded is the API's.
        let claims = json!({"sub": user.name, "exp": unix_now() + 600});
        let encode = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        let signed = format!(
            "{}.{}",
            encode(br#"{"alg":"HS256","typ":"JWT"}"#),
            encode(claims.to_string().as_bytes())
        );
        let old = format!(
            "{signed}.{}",
            encode(&hmac_sha256(&auth.signing_key, signed.as_bytes()))
        );
        assert_eq!(
            auth.authenticate(Some(&format!("Bearer {old}"))),
            Some(user)
        );
    }

    #[test]
    fn hmac_matches_the_rfc_4231_vector() {
        // RFC 4231 test case 2 uses a 4-byte key; HMAC pads keys with zeros to the block size,
        // so the same key zero-padded to 32 bytes gives the same MAC.
        let mut key = [0u8; 32];
        key[..4].copy_from_slice(b"Jefe");
        let mac = hmac_sha256(&key, b"what do ya want for nothing?");
        let hex: String = mac.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
