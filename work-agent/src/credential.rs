//! What the agent keeps in its own cluster so that a restart does not join again: the Secret
//! `atoll-system/atoll-agent` with the hub's address, the cluster's name, the join secret of a
//! pending join and, once accepted, the cluster's credential.

use std::collections::BTreeMap;

use atoll_api::names::SYSTEM_NAMESPACE;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, ObjectMeta, Patch, PatchParams};
use rand::Rng as _;

use crate::FIELD_MANAGER;

/// The Secret the agent keeps its state in.
pub const SECRET_NAME: &str = "atoll-agent";

/// The agent's stored state.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Stored {
    /// The hub it belongs to.
    pub hub: String,
    /// The cluster's name on that hub.
    pub cluster_name: String,
    /// The secret of its join request.
    pub join_secret: String,
    /// Its credential, once accepted.
    pub credential: Option<String>,
}

impl std::fmt::Debug for Stored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stored")
            .field("hub", &self.hub)
            .field("cluster_name", &self.cluster_name)
            .field("credential", &self.credential.as_ref().map(|_| "****"))
            .finish()
    }
}

impl Stored {
    /// A fresh state for a first join.
    pub fn new(hub: &str, cluster_name: &str) -> Self {
        const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
        let mut rng = rand::rng();
        Self {
            hub: hub.to_owned(),
            cluster_name: cluster_name.to_owned(),
            join_secret: (0..32)
                .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
                .collect(),
            credential: None,
        }
    }
}

/// Reads the stored state; `None` when there is none.
pub async fn load(client: &kube::Client) -> kube::Result<Option<Stored>> {
    let api: Api<Secret> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    let Some(secret) = api.get_opt(SECRET_NAME).await? else {
        return Ok(None);
    };
    let data = secret.data.unwrap_or_default();
    let text = |key: &str| {
        data.get(key)
            .and_then(|v| String::from_utf8(v.0.clone()).ok())
            .unwrap_or_default()
    };
    let credential = text("credential");
    Ok(Some(Stored {
        hub: text("hub"),
        cluster_name: text("cluster-name"),
        join_secret: text("join-secret"),
        credential: (!credential.is_empty()).then_some(credential),
    }))
}

/// Stores the state, creating the namespace when needed.
pub async fn save(client: &kube::Client, stored: &Stored) -> kube::Result<()> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if namespaces.get_opt(SYSTEM_NAMESPACE).await?.is_none() {
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(SYSTEM_NAMESPACE.to_owned()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        namespaces
            .patch(
                SYSTEM_NAMESPACE,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&ns),
            )
            .await?;
    }
    let mut data = BTreeMap::new();
    let mut put = |k: &str, v: &str| {
        data.insert(k.to_owned(), ByteString(v.as_bytes().to_vec()));
    };
    put("hub", &stored.hub);
    put("cluster-name", &stored.cluster_name);
    put("join-secret", &stored.join_secret);
    put(
        "credential",
        stored.credential.as_deref().unwrap_or_default(),
    );
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(SECRET_NAME.to_owned()),
            namespace: Some(SYSTEM_NAMESPACE.to_owned()),
            ..ObjectMeta::default()
        },
        type_: Some("atoll.dev/agent-credential".to_owned()),
        data: Some(data),
        ..Secret::default()
    };
    let api: Api<Secret> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    api.patch(
        SECRET_NAME,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&secret),
    )
    .await
    .map(|_| ())
}
