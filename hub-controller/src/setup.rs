//! What the hub needs before it serves: its namespaces, atoll's CRDs (Established), and its CA,
//! kept as a Secret in `atoll-system` so every hub replica and every restart serve with it.

use std::time::Duration;

use atoll_api::names::{INVENTORY_NAMESPACE, SYSTEM_NAMESPACE};
use atoll_pki::CertificateAuthority;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};

use crate::Error;

/// The Secret holding the hub's gRPC CA.
pub const CA_SECRET: &str = "atoll-hub-ca";
/// The CA's common name.
const CA_COMMON_NAME: &str = "atoll-hub-ca";
/// Field manager of what the hub installs.
pub const FIELD_MANAGER: &str = "atoll-hub";

/// Creates the hub's namespaces and installs or updates atoll's CRDs, waiting until each is
/// Established.
pub async fn install(client: &kube::Client) -> Result<(), Error> {
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
