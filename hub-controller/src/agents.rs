//! The objects that run an agent: those of `manifests/agent/base` (embedded, so the two cannot
//! drift), plus the ConfigMap that names the hub and the cluster, and the bootstrap Secret with
//! the hub's CA and a join token. `atoll agent-manifests` prints them for a member cluster; the
//! hosted clusters of `Kubernetes` mode run the same Deployment beside their control plane.

use base64::Engine as _;
use serde_json::{Value, json};

/// The agent's objects as `kubectl apply -k manifests/agent` deploys them, without the
/// ConfigMap its kustomization generates.
const AGENT_YAML: &str = include_str!("../../manifests/agent/base/agent.yaml");
/// The ConfigMap the agent's Deployment takes its environment from.
pub const CONFIG_MAP: &str = "atoll-agent";
/// The Secret mounted at `/etc/atoll` in the agent's Deployment.
pub const BOOTSTRAP_SECRET: &str = "atoll-agent-bootstrap";
/// Its keys: the files `ATOLL_HUB_CA` and `ATOLL_BOOTSTRAP_TOKEN_FILE` name.
pub const CA_KEY: &str = "hub-ca.crt";
/// The bootstrap token's key.
pub const TOKEN_KEY: &str = "bootstrap-token";

/// What goes into the agent's objects besides its fixed ones.
pub struct Join<'a> {
    /// The member cluster's name on the hub.
    pub cluster: &'a str,
    /// The hub's gRPC address, `https://HOST:PORT`.
    pub hub_address: &'a str,
    /// The hub's CA, PEM.
    pub hub_ca_pem: &'a str,
    /// A bootstrap token.
    pub token: &'a str,
    /// The agent's image, replacing the default one.
    pub image: Option<&'a str>,
}

/// Why the embedded agent manifests cannot be used (a defect of the build, caught by tests).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("manifests/agent/base/agent.yaml is not YAML")]
    Yaml(#[source] serde_yaml_ng::Error),
    #[error("manifests/agent/base/agent.yaml has no Deployment")]
    NoDeployment,
}

/// The agent's objects, in the order they apply: its namespace, ServiceAccount and RBAC, the
/// ConfigMap and the bootstrap Secret, then its Deployment.
pub fn objects(join: &Join<'_>) -> Result<Vec<Value>, Error> {
    let mut objects = Vec::new();
    for document in serde_yaml_ng::Deserializer::from_str(AGENT_YAML) {
        let object: Value = serde::Deserialize::deserialize(document).map_err(Error::Yaml)?;
        if object.is_null() {
            continue;
        }
        objects.push(object);
    }
    let namespace = atoll_api::names::SYSTEM_NAMESPACE;
    let config_map = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CONFIG_MAP, "namespace": namespace},
        "data": {
            "ATOLL_HUB": join.hub_address,
            "ATOLL_CLUSTER_NAME": join.cluster,
        },
    });
    let encode = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    let secret = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": BOOTSTRAP_SECRET, "namespace": namespace},
        "type": "Opaque",
        "data": {
            CA_KEY: encode(join.hub_ca_pem),
            TOKEN_KEY: encode(&format!("{}\n", join.token)),
        },
    });
    let deployment = objects
        .iter()
        .position(|o| o["kind"] == "Deployment")
        .ok_or(Error::NoDeployment)?;
    if let Some(image) = join.image {
        for container in objects[deployment]["spec"]["template"]["spec"]["containers"]
            .as_array_mut()
            .into_iter()
            .flatten()
        {
            container["image"] = json!(image);
        }
    }
    objects.insert(deployment, secret);
    objects.insert(deployment, config_map);
    Ok(objects)
}

/// The default image of the agent (that of `manifests/agent`).
pub fn default_image() -> String {
    objects(&Join {
        cluster: "",
        hub_address: "",
        hub_ca_pem: "",
        token: "",
        image: None,
    })
    .ok()
    .and_then(|all| {
        all.iter()
            .find(|o| o["kind"] == "Deployment")
            .and_then(|d| d["spec"]["template"]["spec"]["containers"][0]["image"].as_str())
            .map(str::to_owned)
    })
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_manifests_hold_a_deployment_with_an_image() {
        assert!(default_image().contains("atoll"), "{}", default_image());
    }
}
