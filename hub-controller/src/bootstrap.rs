//! Bootstrap tokens: what an agent presents to join the hub.
//!
//! A token reads `<id>.<secret>` (6 and 16 characters of `[a-z0-9]`, as kubeadm's do). It is
//! stored as a Secret `bootstrap-token-<id>` in `atoll-system` holding the id, a SHA-256 hash of
//! the secret, the expiry and the ClusterSet it is scoped to, if any; the secret itself is shown
//! once, when the token is created. One token may join many clusters until it expires or is
//! deleted. Only a token scoped to a ClusterSet lets a cluster join straight into that set.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, RwLock};

use atoll_api::names::SYSTEM_NAMESPACE;
use jiff::Timestamp;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};
use rand::Rng as _;

use crate::digest::{Digest, sha256};

/// The Secret type of a stored bootstrap token.
pub const SECRET_TYPE: &str = "atoll.dev/bootstrap-token";
/// Label selecting every bootstrap token Secret.
pub const LABEL: &str = "atoll.dev/bootstrap-token";

const ID_LEN: usize = 6;
const SECRET_LEN: usize = 16;
const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";

/// Why a presented bootstrap token does not let a cluster join.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Rejection {
    #[error(
        "the bootstrap token is malformed: want <id>.<secret>, 6 and 16 characters of [a-z0-9]"
    )]
    Malformed,
    #[error("bootstrap token {0} is unknown or was deleted")]
    Unknown(String),
    #[error("bootstrap token {id} expired at {expired}")]
    Expired { id: String, expired: Timestamp },
}

/// A bootstrap token in full, as the administrator hands it to an agent.
#[derive(Clone, PartialEq, Eq)]
pub struct Token {
    id: String,
    secret: String,
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Token({}.****)", self.id)
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.id, self.secret)
    }
}

impl Token {
    /// A new random token.
    pub fn generate() -> Self {
        Self {
            id: random_string(ID_LEN),
            secret: random_string(SECRET_LEN),
        }
    }

    /// Parses `<id>.<secret>`.
    pub fn parse(text: &str) -> Result<Self, Rejection> {
        let (id, secret) = text.trim().split_once('.').ok_or(Rejection::Malformed)?;
        let valid =
            |s: &str, len: usize| s.len() == len && s.bytes().all(|b| ALPHABET.contains(&b));
        if !valid(id, ID_LEN) || !valid(secret, SECRET_LEN) {
            return Err(Rejection::Malformed);
        }
        Ok(Self {
            id: id.to_owned(),
            secret: secret.to_owned(),
        })
    }

    /// The public part, which names the stored Secret.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The Secret that stores this token: its id, the hash of its secret, its expiry and the
    /// ClusterSet it is scoped to.
    pub fn to_secret(
        &self,
        expires: Option<Timestamp>,
        description: &str,
        cluster_set: Option<&str>,
    ) -> Secret {
        let mut data = BTreeMap::new();
        data.insert("token-id".to_owned(), bytes(&self.id));
        data.insert(
            "token-secret-sha256".to_owned(),
            bytes(&sha256(self.secret.as_bytes()).to_hex()),
        );
        if let Some(expires) = expires {
            data.insert("expiration".to_owned(), bytes(&expires.to_string()));
        }
        if !description.is_empty() {
            data.insert("description".to_owned(), bytes(description));
        }
        if let Some(set) = cluster_set {
            data.insert("clusterset".to_owned(), bytes(set));
        }
        Secret {
            metadata: ObjectMeta {
                name: Some(secret_name(&self.id)),
                namespace: Some(SYSTEM_NAMESPACE.to_owned()),
                labels: Some(BTreeMap::from([(LABEL.to_owned(), "true".to_owned())])),
                ..ObjectMeta::default()
            },
            type_: Some(SECRET_TYPE.to_owned()),
            data: Some(data),
            ..Secret::default()
        }
    }

    /// Checks this token against its stored Secret (`None` when there is none) at `now`;
    /// returns what the Secret says of it.
    pub fn verify(
        &self,
        stored: Option<&Secret>,
        now: Timestamp,
    ) -> Result<StoredToken, Rejection> {
        let unknown = || Rejection::Unknown(self.id.clone());
        let stored = stored
            .filter(|s| s.type_.as_deref() == Some(SECRET_TYPE))
            .ok_or_else(unknown)?;
        let info = StoredToken::from_secret(stored).ok_or_else(unknown)?;
        let hash = Digest::from_hex(&info.secret_sha256).ok_or_else(unknown)?;
        if !hash.matches(self.secret.as_bytes()) || info.id != self.id {
            return Err(unknown());
        }
        match info.expires {
            Some(expired) if expired <= now => Err(Rejection::Expired {
                id: self.id.clone(),
                expired,
            }),
            _ => Ok(info),
        }
    }
}

/// What a stored token Secret says, without its secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredToken {
    /// The token's id.
    pub id: String,
    /// Hex SHA-256 of the token's secret.
    pub secret_sha256: String,
    /// When it stops working; `None` for never.
    pub expires: Option<Timestamp>,
    /// What the token is for.
    pub description: String,
    /// The ClusterSet a cluster joining with it goes into, if any.
    pub cluster_set: Option<String>,
}

impl StoredToken {
    /// Reads a token Secret; `None` when it is not one.
    pub fn from_secret(secret: &Secret) -> Option<Self> {
        let data = secret.data.as_ref()?;
        let text = |key: &str| {
            data.get(key)
                .and_then(|v| String::from_utf8(v.0.clone()).ok())
        };
        Some(Self {
            id: text("token-id")?,
            secret_sha256: text("token-secret-sha256")?,
            expires: text("expiration").and_then(|t| t.parse().ok()),
            description: text("description").unwrap_or_default(),
            cluster_set: text("clusterset").filter(|s| !s.is_empty()),
        })
    }
}

/// The token Secrets a watch has seen, by Secret name: a join finds its token here without a
/// read of the API server, as kube-apiserver's bootstrap token authenticator reads its Secrets
/// from an informer. A token not found here is read from the API server (it may be newer than
/// the watch), so a miss never refuses a join; a deleted token leaves when its deletion is seen.
#[derive(Debug, Default)]
pub struct Tokens {
    known: RwLock<HashMap<String, Arc<Secret>>>,
}

impl Tokens {
    /// The Secret of that name, if the watch has seen it.
    pub fn get(&self, name: &str) -> Option<Arc<Secret>> {
        self.read().get(name).cloned()
    }

    /// A token Secret created or changed.
    pub fn apply(&self, secret: Secret) {
        if let Some(name) = secret.metadata.name.clone() {
            self.write().insert(name, Arc::new(secret));
        }
    }

    /// A token Secret deleted.
    pub fn delete(&self, secret: &Secret) {
        if let Some(name) = &secret.metadata.name {
            self.write().remove(name);
        }
    }

    /// Every token Secret, after the watch listed them again (one deleted meanwhile goes).
    pub fn replace(&self, secrets: Vec<Secret>) {
        let known = secrets
            .into_iter()
            .filter_map(|s| Some((s.metadata.name.clone()?, Arc::new(s))))
            .collect();
        *self.write() = known;
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Arc<Secret>>> {
        self.known
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, Arc<Secret>>> {
        self.known
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The name of the Secret that stores token `id`.
pub fn secret_name(id: &str) -> String {
    format!("bootstrap-token-{id}")
}

/// Creates a token on the hub, valid for `ttl` (forever when `None`) and scoped to `cluster_set`
/// if given, and returns it in full.
pub async fn create(
    client: kube::Client,
    ttl: Option<std::time::Duration>,
    description: &str,
    cluster_set: Option<&str>,
) -> kube::Result<(Token, Option<Timestamp>)> {
    let token = Token::generate();
    let expires = ttl.and_then(|ttl| {
        let span = jiff::SignedDuration::try_from(ttl).ok()?;
        let now = Timestamp::from_second(Timestamp::now().as_second()).ok()?;
        now.checked_add(span).ok()
    });
    let api: Api<Secret> = Api::namespaced(client, SYSTEM_NAMESPACE);
    api.create(
        &PostParams::default(),
        &token.to_secret(expires, description, cluster_set),
    )
    .await?;
    Ok((token, expires))
}

/// Deletes token `id` (given alone or as a full token); clusters that joined with it stay.
pub async fn delete(client: kube::Client, id_or_token: &str) -> kube::Result<()> {
    let id = id_or_token.split('.').next().unwrap_or_default();
    let api: Api<Secret> = Api::namespaced(client, SYSTEM_NAMESPACE);
    api.delete(&secret_name(id), &DeleteParams::default())
        .await
        .map(|_| ())
}

/// Every stored token, without secrets.
pub async fn list(client: kube::Client) -> kube::Result<Vec<StoredToken>> {
    let api: Api<Secret> = Api::namespaced(client, SYSTEM_NAMESPACE);
    let secrets = api.list(&ListParams::default().labels(LABEL)).await?;
    Ok(secrets
        .iter()
        .filter_map(StoredToken::from_secret)
        .collect())
}

fn bytes(s: &str) -> ByteString {
    ByteString(s.as_bytes().to_vec())
}

fn random_string(len: usize) -> String {
    let mut rng = rand::rng();
    (0..len)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_tokens_follow_the_watch_and_a_new_list_drops_the_deleted() {
        let tokens = Tokens::default();
        let (a, b) = (Token::generate(), Token::generate());
        let name = |t: &Token| secret_name(t.id());
        tokens.apply(a.to_secret(None, "a", None));
        tokens.apply(b.to_secret(None, "b", Some("prod")));
        let seen = tokens.get(&name(&b)).expect("b is known");
        let scope = b.verify(Some(&seen), Timestamp::now()).unwrap().cluster_set;
        assert_eq!(scope.as_deref(), Some("prod"));
        // A changed Secret replaces the one seen before.
        tokens.apply(b.to_secret(None, "b", None));
        let seen = tokens.get(&name(&b)).unwrap();
        assert_eq!(
            b.verify(Some(&seen), Timestamp::now()).unwrap().cluster_set,
            None
        );
        tokens.delete(&a.to_secret(None, "a", None));
        assert!(tokens.get(&name(&a)).is_none());
        // A list after a broken watch: what it lacks was deleted meanwhile.
        tokens.apply(a.to_secret(None, "a", None));
        tokens.replace(vec![b.to_secret(None, "b", None)]);
        assert!(tokens.get(&name(&a)).is_none());
        assert!(tokens.get(&name(&b)).is_some());
    }

    #[test]
    fn generated_tokens_parse_and_differ() {
        let a = Token::generate();
        let b = Token::generate();
        assert_ne!(a, b);
        assert_eq!(Token::parse(&a.to_string()).unwrap(), a);
        assert_eq!(format!("{a:?}"), format!("Token({}.****)", a.id()));
    }

    #[test]
    fn malformed_tokens_are_rejected() {
        for bad in [
            "",
            "abcdef",
            "abcdef.",
            "ABCDEF.0123456789abcdef",
            "abcdef.0123456789abcde",
            "abc.0123456789abcdef",
        ] {
            assert_eq!(Token::parse(bad), Err(Rejection::Malformed), "{bad:?}");
        }
    }

    #[test]
    fn the_stored_secret_holds_only_a_hash() {
        let token = Token::parse("abcdef.0123456789abcdef").unwrap();
        let secret = token.to_secret(None, "test", Some("prod"));
        let stored = serde_json::to_string(&secret).unwrap();
        assert!(!stored.contains("0123456789abcdef"));
        let info = StoredToken::from_secret(&secret).unwrap();
        assert_eq!(info.id, "abcdef");
        assert_eq!(info.description, "test");
        assert_eq!(info.cluster_set.as_deref(), Some("prod"));
        assert_eq!(token.verify(Some(&secret), Timestamp::now()), Ok(info));
    }

    #[test]
    fn wrong_unknown_and_expired_tokens_are_rejected() {
        let token = Token::parse("abcdef.0123456789abcdef").unwrap();
        let other = Token::parse("abcdef.aaaaaaaaaaaaaaaa").unwrap();
        let expires: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let secret = token.to_secret(Some(expires), "", None);
        let before: Timestamp = "2025-12-31T23:59:59Z".parse().unwrap();
        assert!(token.verify(Some(&secret), before).is_ok());
        assert_eq!(
            token.verify(Some(&secret), expires),
            Err(Rejection::Expired {
                id: "abcdef".into(),
                expired: expires
            })
        );
        assert_eq!(
            other.verify(Some(&secret), before),
            Err(Rejection::Unknown("abcdef".into()))
        );
        assert_eq!(
            token.verify(None, before),
            Err(Rejection::Unknown("abcdef".into()))
        );
    }
}
