//! `atoll agent-manifests`: everything a member cluster needs to join the hub, as one YAML
//! stream for `kubectl apply -f -`. The objects are those of `manifests/agent/base` (embedded, so
//! the two cannot drift), plus the ConfigMap that names the hub and the cluster, and the bootstrap
//! Secret with the hub's CA and a fresh join token.

use anyhow::Context as _;
use atoll_hub::setup::{ENDPOINT_ADDRESSES_KEY, ENDPOINT_CA_KEY, ENDPOINT_CONFIG_MAP};
use k8s_openapi::api::core::v1::ConfigMap;

use crate::client::explain;
use crate::tokens::{self, Ttl};

use atoll_hub::agents::Join;

// What `atoll agent-manifests` was asked for.
#[derive(clap::Args)]
pub struct Args {
    /// The member cluster's name on the hub (a DNS label; it names its namespace there).
    #[arg(long, value_name = "NAME")]
    pub cluster: String,
    /// The ClusterSet the cluster joins straight into (its join token is scoped to it); it must
    /// exist.
    #[arg(long, value_name = "SET")]
    pub clusterset: Option<String>,
    /// How long the join token in the manifests works: e.g. 30m, 24h, 7d; 0 for no expiry.
    #[arg(long, default_value = "24h", value_parser = tokens::parse_ttl)]
    pub ttl: Ttl,
    /// The address the member's agent reaches the hub's gRPC server at, `https://HOST:PORT`
    /// [default: the first address the hub publishes: its first `--grpc-host`, else its listen
    /// address].
    #[arg(long, value_name = "https://HOST:PORT")]
    pub hub_address: Option<String>,
    /// The agent's container image [default: the one in manifests/agent].
    #[arg(long, value_name = "IMAGE")]
    pub image: Option<String>,
}

/// `atoll agent-manifests`: checks the input, reads how agents reach the hub, creates a join
/// token, and prints the manifests. Nothing is stored on the hub unless all of it succeeds but the
/// printing.
pub async fn manifests(client: kube::Client, args: Args) -> anyhow::Result<()> {
    check_cluster_name(&args.cluster)?;
    if let Some(address) = &args.hub_address {
        check_hub_address(address)?;
    }
    if let Some(image) = &args.image
        && image.trim().is_empty()
    {
        anyhow::bail!("--image: the image is empty");
    }
    let (published, ca) = endpoint(client.clone()).await?;
    let hub_address = match args.hub_address {
        Some(address) => address,
        None => {
            let first = published.first().cloned().with_context(|| {
                format!(
                    "ConfigMap {}/{ENDPOINT_CONFIG_MAP} on the hub names no address; pass --hub-address",
                    atoll_api::names::SYSTEM_NAMESPACE
                )
            })?;
            if first.contains("://127.") || first.contains("://[::1]") {
                eprintln!(
                    "the hub serves agents at {first}, a loopback address: only a cluster on this machine reaches it; pass --hub-address for others"
                );
            }
            first
        }
    };
    if let Some(set) = &args.clusterset {
        tokens::require_cluster_set(client.clone(), set).await?;
    }
    let description = format!("agent of cluster {} (atoll agent-manifests)", args.cluster);
    let (token, expires) =
        atoll_hub::bootstrap::create(client, args.ttl.0, &description, args.clusterset.as_deref())
            .await
            .map_err(|e| explain(e, "cannot create a bootstrap token"))?;
    let join = Join {
        cluster: &args.cluster,
        hub_address: &hub_address,
        hub_ca_pem: &ca,
        token: &token.to_string(),
        image: args.image.as_deref(),
    };
    let expiry = match expires {
        Some(at) => format!("its join token ({}) works until {at}", token.id()),
        None => format!("its join token ({}) never expires", token.id()),
    };
    print!(
        "# The atoll agent of member cluster {}, joining the hub at {hub_address}; {expiry}.\n# Apply it to the member: kubectl apply -f -\n{}",
        args.cluster,
        render(&join)?
    );
    eprintln!("manifests for cluster {} printed; {expiry}", args.cluster);
    Ok(())
}

/// Refuses a cluster name the hub would refuse at the join.
fn check_cluster_name(name: &str) -> anyhow::Result<()> {
    if !atoll_api::inventory::is_dns_label(name) {
        anyhow::bail!(
            "--cluster: {name:?} is not a DNS label (RFC 1123: at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit)"
        );
    }
    if atoll_api::names::is_reserved_cluster_name(name) {
        anyhow::bail!(
            "--cluster: {name:?} is reserved on the hub (it names a system namespace); choose another"
        );
    }
    Ok(())
}

/// Refuses a hub address the agent could not dial.
fn check_hub_address(address: &str) -> anyhow::Result<()> {
    let uri: http::Uri = address
        .parse()
        .map_err(|e| anyhow::anyhow!("--hub-address: {address:?} is not a URL: {e}"))?;
    if uri.scheme_str() != Some("https") || uri.host().is_none() {
        anyhow::bail!("--hub-address: {address:?} is not https://HOST:PORT");
    }
    Ok(())
}

/// The addresses and CA certificate the hub publishes for agents.
async fn endpoint(client: kube::Client) -> anyhow::Result<(Vec<String>, String)> {
    let namespace = atoll_api::names::SYSTEM_NAMESPACE;
    let config_maps: kube::Api<ConfigMap> = kube::Api::namespaced(client, namespace);
    let found = config_maps
        .get_opt(ENDPOINT_CONFIG_MAP)
        .await
        .map_err(|e| explain(e, &format!("cannot read ConfigMap {namespace}/{ENDPOINT_CONFIG_MAP}")))?
        .with_context(|| {
            format!(
                "the hub has not published how agents reach it (ConfigMap {namespace}/{ENDPOINT_CONFIG_MAP} is missing): is its hub running, and may it write ConfigMaps in {namespace}?"
            )
        })?;
    let data = found.data.unwrap_or_default();
    let ca = data
        .get(ENDPOINT_CA_KEY)
        .filter(|pem| pem.contains("BEGIN CERTIFICATE"))
        .cloned()
        .with_context(|| {
            format!("ConfigMap {namespace}/{ENDPOINT_CONFIG_MAP} holds no CA certificate in {ENDPOINT_CA_KEY:?}")
        })?;
    let addresses = data
        .get(ENDPOINT_ADDRESSES_KEY)
        .map(|text| {
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    Ok((addresses, ca))
}

/// The manifests, as one YAML stream: the agent's objects with the ConfigMap and the bootstrap
/// Secret before its Deployment.
pub fn render(join: &Join<'_>) -> anyhow::Result<String> {
    let mut out = String::new();
    for object in &atoll_hub::agents::objects(join)? {
        out.push_str("---\n");
        out.push_str(&serde_yaml_ng::to_string(object)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use atoll_hub::agents::{BOOTSTRAP_SECRET, CA_KEY, CONFIG_MAP, TOKEN_KEY};
    use base64::Engine as _;
    use serde_json::Value;

    fn join() -> Join<'static> {
        Join {
            cluster: "east",
            hub_address: "https://hub.example.com:9443",
            hub_ca_pem: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
            token: "abcdef.0123456789abcdef",
            image: None,
        }
    }

    fn documents(text: &str) -> Vec<Value> {
        serde_yaml_ng::Deserializer::from_str(text)
            .map(|d| serde::Deserialize::deserialize(d).unwrap())
            .collect()
    }

    #[test]
    fn the_manifests_hold_the_agents_objects_and_what_it_reads_at_start() {
        let all = documents(&render(&join()).unwrap());
        let kinds: Vec<&str> = all.iter().map(|o| o["kind"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "Namespace",
                "ServiceAccount",
                "ClusterRole",
                "ClusterRoleBinding",
                "ConfigMap",
                "Secret",
                "Deployment"
            ]
        );
        let config_map = &all[4];
        assert_eq!(
            config_map["data"]["ATOLL_HUB"],
            "https://hub.example.com:9443"
        );
        assert_eq!(config_map["data"]["ATOLL_CLUSTER_NAME"], "east");
        let secret = &all[5];
        let decode = |key: &str| {
            let text = secret["data"][key].as_str().unwrap();
            String::from_utf8(
                base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .unwrap(),
            )
            .unwrap()
        };
        assert_eq!(decode(TOKEN_KEY), "abcdef.0123456789abcdef\n");
        assert!(decode(CA_KEY).starts_with("-----BEGIN CERTIFICATE-----"));
        // The Deployment reads exactly these: its ConfigMap, its Secret as files under the mount.
        let pod = &all[6]["spec"]["template"]["spec"];
        let container = &pod["containers"][0];
        assert_eq!(container["envFrom"][0]["configMapRef"]["name"], CONFIG_MAP);
        assert_eq!(pod["volumes"][0]["secret"]["secretName"], BOOTSTRAP_SECRET);
        let mount = container["volumeMounts"][0]["mountPath"].as_str().unwrap();
        let env = |name: &str| {
            container["env"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["name"] == name)
                .map(|e| e["value"].as_str().unwrap().to_owned())
        };
        assert_eq!(env("ATOLL_HUB_CA"), Some(format!("{mount}/{CA_KEY}")));
        assert_eq!(
            env("ATOLL_BOOTSTRAP_TOKEN_FILE"),
            Some(format!("{mount}/{TOKEN_KEY}"))
        );
    }

    #[test]
    fn an_image_replaces_the_default_one() {
        let mut j = join();
        j.image = Some("registry.example.com/atoll:dev");
        let all = documents(&render(&j).unwrap());
        let deployment = all.iter().find(|o| o["kind"] == "Deployment").unwrap();
        assert_eq!(
            deployment["spec"]["template"]["spec"]["containers"][0]["image"],
            "registry.example.com/atoll:dev"
        );
    }

    #[test]
    fn bad_names_and_addresses_are_refused_naming_the_flag() {
        assert!(check_cluster_name("east").is_ok());
        let e = check_cluster_name("East_1").unwrap_err().to_string();
        assert!(
            e.starts_with("--cluster: \"East_1\" is not a DNS label"),
            "{e}"
        );
        let e = check_cluster_name("atoll-system").unwrap_err().to_string();
        assert!(e.contains("reserved"), "{e}");
        assert!(check_hub_address("https://hub.example.com:9443").is_ok());
        let e = check_hub_address("hub:9443").unwrap_err().to_string();
        assert!(e.starts_with("--hub-address:"), "{e}");
        let e = check_hub_address("http://hub:9443")
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not https://HOST:PORT"), "{e}");
    }
}
