//! Member records: one Secret `cluster-<name>` per member cluster in `atoll-system`, holding the
//! hashes of its join secret and credential (with the credential's expiry, and the one it
//! replaced while that still works), its cluster ID, and whether it was accepted. The hub never
//! stores a credential itself.

use std::collections::BTreeMap;

use atoll_api::inventory::ClusterProfile;
use atoll_api::names::{INVENTORY_NAMESPACE, SYSTEM_NAMESPACE};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams};

use jiff::Timestamp;

use crate::digest::Digest;

/// The Secret type of a member record.
pub const SECRET_TYPE: &str = "atoll.dev/member-cluster";
/// Label naming the member cluster a record belongs to; selects every record.
pub const LABEL_CLUSTER: &str = "atoll.dev/cluster";
/// Label saying whether the cluster was accepted (`"true"`).
pub const LABEL_ACCEPTED: &str = "atoll.dev/accepted";
/// Label on the record of a hosted cluster: the UID of the HostedCluster that made it, so that
/// a HostedCluster never takes over, nor removes, a cluster it did not make.
pub const LABEL_HOSTED_BY: &str = "atoll.dev/hosted-cluster-uid";

/// A member record as stored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record {
    /// The cluster's name.
    pub name: String,
    /// Whether it was accepted.
    pub accepted: bool,
    /// Hash of the join secret.
    pub join_secret: Option<Digest>,
    /// Hash of the issued credential.
    pub credential: Option<Digest>,
    /// When the credential stops working (`None`: never, for credentials issued before expiry).
    pub credential_expires: Option<Timestamp>,
    /// The credential the current one replaced, and until when it still works.
    pub previous: Option<(Digest, Timestamp)>,
    /// The cluster ID given at join (empty in a hosted cluster's record until its agent joins).
    pub cluster_id: String,
    /// The UID of the HostedCluster whose control plane this cluster is, if the hub runs it.
    pub hosted_by: Option<String>,
}

/// The resourceVersion of a stored object as a number (0 when it has none or is not numeric).
pub fn version(meta: &ObjectMeta) -> u64 {
    meta.resource_version
        .as_deref()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The name of the record Secret of cluster `name`.
pub fn secret_name(name: &str) -> String {
    format!("cluster-{name}")
}

impl Record {
    /// The record as a Secret.
    pub fn to_secret(&self) -> Secret {
        let mut data = BTreeMap::new();
        let mut put = |key: &str, value: String| {
            data.insert(key.to_owned(), ByteString(value.into_bytes()));
        };
        if let Some(d) = &self.join_secret {
            put("join-secret-sha256", d.to_hex());
        }
        if let Some(d) = &self.credential {
            put("credential-sha256", d.to_hex());
        }
        if let Some(at) = &self.credential_expires {
            put("credential-expires", at.to_string());
        }
        if let Some((d, until)) = &self.previous {
            put("previous-credential-sha256", d.to_hex());
            put("previous-credential-expires", until.to_string());
        }
        put("cluster-id", self.cluster_id.clone());
        let mut labels = BTreeMap::from([
            (LABEL_CLUSTER.to_owned(), self.name.clone()),
            (LABEL_ACCEPTED.to_owned(), self.accepted.to_string()),
        ]);
        if let Some(uid) = &self.hosted_by {
            labels.insert(LABEL_HOSTED_BY.to_owned(), uid.clone());
        }
        Secret {
            metadata: ObjectMeta {
                name: Some(secret_name(&self.name)),
                namespace: Some(SYSTEM_NAMESPACE.to_owned()),
                labels: Some(labels),
                ..ObjectMeta::default()
            },
            type_: Some(SECRET_TYPE.to_owned()),
            data: Some(data),
            ..Secret::default()
        }
    }

    /// A merge patch of the Secret's data that makes it this record's (keys it lacks removed).
    pub fn data_patch(&self) -> serde_json::Value {
        let mut data = serde_json::Map::new();
        for key in [
            "join-secret-sha256",
            "credential-sha256",
            "credential-expires",
            "previous-credential-sha256",
            "previous-credential-expires",
        ] {
            data.insert(key.to_owned(), serde_json::Value::Null);
        }
        for (key, value) in self.to_secret().data.unwrap_or_default() {
            data.insert(key, serde_json::to_value(value).unwrap_or_default());
        }
        serde_json::json!({ "data": data })
    }

    /// Reads a record Secret; `None` when it is not one.
    pub fn from_secret(secret: &Secret) -> Option<Self> {
        if secret.type_.as_deref() != Some(SECRET_TYPE) {
            return None;
        }
        let labels = secret.metadata.labels.as_ref()?;
        let name = labels.get(LABEL_CLUSTER)?.clone();
        let data = secret.data.as_ref();
        let text = |key: &str| {
            data.and_then(|d| d.get(key))
                .and_then(|v| String::from_utf8(v.0.clone()).ok())
        };
        Some(Self {
            name,
            accepted: labels.get(LABEL_ACCEPTED).map(String::as_str) == Some("true"),
            join_secret: text("join-secret-sha256").and_then(|h| Digest::from_hex(&h)),
            credential: text("credential-sha256").and_then(|h| Digest::from_hex(&h)),
            credential_expires: text("credential-expires").and_then(|t| t.parse().ok()),
            previous: text("previous-credential-sha256")
                .and_then(|h| Digest::from_hex(&h))
                .zip(text("previous-credential-expires").and_then(|t| t.parse().ok())),
            cluster_id: text("cluster-id").unwrap_or_default(),
            hosted_by: labels.get(LABEL_HOSTED_BY).cloned(),
        })
    }
}

/// Why an administrator's action on a member cluster failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cluster {0:?} has not asked to join this hub")]
    NotFound(String),
    #[error("cannot reach the hub's API server")]
    Api(#[source] kube::Error),
}

fn api_error(name: &str, e: kube::Error) -> Error {
    match &e {
        kube::Error::Api(status) if status.code == 404 => Error::NotFound(name.to_owned()),
        _ => Error::Api(e),
    }
}

/// Accepts a cluster that asked to join (`atoll cluster accept`): its agent receives its
/// credential at its next attempt.
pub async fn accept(client: kube::Client, name: &str) -> Result<(), Error> {
    let api: Api<Secret> = Api::namespaced(client, SYSTEM_NAMESPACE);
    let patch = serde_json::json!({"metadata": {"labels": {LABEL_ACCEPTED: "true"}}});
    api.patch(
        &secret_name(name),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .map(|_| ())
    .map_err(|e| api_error(name, e))
}

/// Removes a member cluster (`atoll cluster remove`): its credential stops working at once, and
/// the hub deletes its ClusterProfile and its namespace with the Works in it. Its agent must join
/// again to come back.
pub async fn remove(client: kube::Client, name: &str) -> Result<(), Error> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    let profiles: Api<ClusterProfile> = Api::namespaced(client, INVENTORY_NAMESPACE);
    let record = secrets
        .delete(&secret_name(name), &DeleteParams::default())
        .await
        .map(|_| ())
        .map_err(|e| api_error(name, e));
    let profile = profiles
        .delete(name, &DeleteParams::default())
        .await
        .map(|_| ())
        .map_err(|e| api_error(name, e));
    match (record, profile) {
        (Err(Error::NotFound(_)), Err(Error::NotFound(n))) => Err(Error::NotFound(n)),
        (Err(e @ Error::Api(_)), _) | (_, Err(e @ Error::Api(_))) => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::sha256;

    #[test]
    fn records_round_trip_through_secrets() {
        let record = Record {
            name: "east".into(),
            accepted: true,
            join_secret: Some(sha256(b"join")),
            credential: Some(sha256(b"cred")),
            credential_expires: Some("2027-01-01T00:00:00Z".parse().unwrap()),
            previous: Some((sha256(b"old"), "2026-12-01T00:00:00Z".parse().unwrap())),
            cluster_id: "id-east".into(),
            hosted_by: None,
        };
        let secret = record.to_secret();
        assert_eq!(secret.metadata.name.as_deref(), Some("cluster-east"));
        assert_eq!(Record::from_secret(&secret), Some(record));
        let stored = serde_json::to_string(&secret).unwrap();
        assert!(!stored.contains("cred\""));
    }
}
