//! What the hub needs before it serves: its namespaces, atoll's CRDs (Established), and its CA,
//! kept as a Secret in `atoll-system` so every hub replica and every restart serve with it; and
//! what it tells those who join clusters to it: how agents reach it, in a ConfigMap.

use std::time::Duration;

use atoll_api::names::{INVENTORY_NAMESPACE, SYSTEM_NAMESPACE};
use atoll_pki::CertificateAuthority;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};

use crate::Error;

/// The Secret holding the hub's gRPC CA.
pub const CA_SECRET: &str = "atoll-hub-ca";
/// The ConfigMap in which the hub publishes how agents reach it (no secrets: its addresses and
/// its CA certificate), read by `atoll agent-manifests`.
pub const ENDPOINT_CONFIG_MAP: &str = "atoll-hub-endpoint";
/// Its key holding the addresses agents may use, `https://HOST:PORT`, one a line, the first the
/// one to offer.
pub const ENDPOINT_ADDRESSES_KEY: &str = "addresses";
/// Its key holding the CA certificate (PEM) agents pin.
pub const ENDPOINT_CA_KEY: &str = "ca.crt";
/// The CA's common name.
const CA_COMMON_NAME: &str = "atoll-hub-ca";
/// Field manager of what the hub installs.
pub const FIELD_MANAGER: &str = "atoll-hub";

/// Creates the hub's namespaces and installs or updates atoll's CRDs, waiting until each is
/// Established.
pub async fn install(client: &kube::Client) -> Result<(), Error> {
    namespaces(client).await?;
    crds(client).await
}

/// Creates the hub's namespaces (what a replica that does not lead needs for the CA and the
/// Lease).
pub async fn namespaces(client: &kube::Client) -> Result<(), Error> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for name in [
        INVENTORY_NAMESPACE,
        SYSTEM_NAMESPACE,
        atoll_api::names::HOSTED_CLUSTERS_NAMESPACE,
    ] {
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        match namespaces.create(&PostParams::default(), &ns).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(source) => {
                return Err(Error::Setup {
                    what: format!("namespace {name}"),
                    source,
                });
            }
        }
    }
    Ok(())
}

/// Installs or updates atoll's CRDs, waiting until each is Established (only a leader does, so
/// that a newer replica waiting in a rolling update does not change them under an older leader).
pub async fn crds(client: &kube::Client) -> Result<(), Error> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let wanted = atoll_api::crd::all().map_err(|e| Error::Crds(e.to_string()))?;
    for crd in &wanted {
        let name = crd.metadata.name.clone().unwrap_or_default();
        crds.patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(crd),
        )
        .await
        .map_err(|source| Error::Setup {
            what: format!("CRD {name}"),
            source,
        })?;
    }
    for crd in &wanted {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let mut waited = Duration::ZERO;
        loop {
            let current = crds.get(&name).await.map_err(|source| Error::Setup {
                what: format!("CRD {name}"),
                source,
            })?;
            let established = atoll_api::crd::is_established(&current);
            if established {
                break;
            }
            if waited > Duration::from_secs(60) {
                return Err(Error::Crds(format!(
                    "CRD {name} was not Established within 60s"
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            waited += Duration::from_millis(100);
        }
    }
    Ok(())
}

/// Loads the hub's CA from its Secret, or generates and stores it on first start.
pub async fn load_or_create_ca(client: &kube::Client) -> Result<CertificateAuthority, Error> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    let setup = |source| Error::Setup {
        what: format!("Secret {SYSTEM_NAMESPACE}/{CA_SECRET}"),
        source,
    };
    for _ in 0..2 {
        if let Some(secret) = secrets.get_opt(CA_SECRET).await.map_err(setup)? {
            let data = secret.data.unwrap_or_default();
            let text = |key: &str| {
                data.get(key)
                    .and_then(|v| String::from_utf8(v.0.clone()).ok())
            };
            let (Some(cert), Some(key)) = (text("tls.crt"), text("tls.key")) else {
                return Err(Error::Crds(format!(
                    "Secret {SYSTEM_NAMESPACE}/{CA_SECRET} lacks tls.crt or tls.key; delete it to have the hub generate a new CA"
                )));
            };
            return Ok(CertificateAuthority::from_pem(&cert, &key, CA_COMMON_NAME)?);
        }
        let ca = CertificateAuthority::generate(CA_COMMON_NAME)?;
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(CA_SECRET.to_owned()),
                namespace: Some(SYSTEM_NAMESPACE.to_owned()),
                ..ObjectMeta::default()
            },
            type_: Some("kubernetes.io/tls".to_owned()),
            data: Some(
                [
                    (
                        "tls.crt".to_owned(),
                        ByteString(ca.cert_pem().as_bytes().to_vec()),
                    ),
                    ("tls.key".to_owned(), ByteString(ca.key_pem().into_bytes())),
                ]
                .into(),
            ),
            ..Secret::default()
        };
        match secrets.create(&PostParams::default(), &secret).await {
            Ok(_) => return Ok(ca),
            // Another hub replica stored one first: use that.
            Err(kube::Error::Api(e)) if e.code == 409 => continue,
            Err(source) => return Err(setup(source)),
        }
    }
    Err(Error::Crds(format!(
        "cannot create or read Secret {SYSTEM_NAMESPACE}/{CA_SECRET}"
    )))
}

/// The addresses agents may reach a hub serving gRPC on `listening` at, to offer in this order:
/// each `--grpc-host` with the port, then the listen address (loopback when it listens on every
/// address).
pub fn agent_addresses(listening: std::net::SocketAddr, grpc_hosts: &[String]) -> Vec<String> {
    let port = listening.port();
    let mut addresses: Vec<String> = grpc_hosts
        .iter()
        .map(|host| match host.parse::<std::net::Ipv6Addr>() {
            Ok(_) => format!("https://[{host}]:{port}"),
            Err(_) => format!("https://{host}:{port}"),
        })
        .collect();
    let local = if listening.ip().is_unspecified() {
        std::net::SocketAddr::new([127, 0, 0, 1].into(), port)
    } else {
        listening
    };
    addresses.push(format!("https://{local}"));
    addresses.dedup();
    addresses
}

/// Publishes how agents reach the hub (addresses and CA certificate) in ConfigMap
/// `atoll-system/atoll-hub-endpoint`, with server-side apply (every replica writes the same).
pub async fn publish_endpoint(
    client: &kube::Client,
    addresses: &[String],
    ca_pem: &str,
) -> Result<(), Error> {
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    let config_map = ConfigMap {
        metadata: ObjectMeta {
            name: Some(ENDPOINT_CONFIG_MAP.to_owned()),
            namespace: Some(SYSTEM_NAMESPACE.to_owned()),
            ..ObjectMeta::default()
        },
        data: Some(
            [
                (ENDPOINT_ADDRESSES_KEY.to_owned(), addresses.join("\n")),
                (ENDPOINT_CA_KEY.to_owned(), ca_pem.to_owned()),
            ]
            .into(),
        ),
        ..ConfigMap::default()
    };
    config_maps
        .patch(
            ENDPOINT_CONFIG_MAP,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&config_map),
        )
        .await
        .map_err(|source| Error::Setup {
            what: format!("ConfigMap {SYSTEM_NAMESPACE}/{ENDPOINT_CONFIG_MAP}"),
            source,
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_are_offered_the_grpc_hosts_first_then_the_listen_address() {
        let any: std::net::SocketAddr = "0.0.0.0:9443".parse().unwrap();
        assert_eq!(agent_addresses(any, &[]), ["https://127.0.0.1:9443"]);
        let hosts = ["hub.example.com".to_owned(), "fd00::1".to_owned()];
        assert_eq!(
            agent_addresses(any, &hosts),
            [
                "https://hub.example.com:9443",
                "https://[fd00::1]:9443",
                "https://127.0.0.1:9443"
            ]
        );
        let one: std::net::SocketAddr = "10.0.0.5:7000".parse().unwrap();
        assert_eq!(agent_addresses(one, &[]), ["https://10.0.0.5:7000"]);
    }
}
