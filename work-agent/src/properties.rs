//! The member cluster's ClusterProperties (`about.k8s.io`): the agent installs the CRD when the
//! cluster lacks it, makes sure `cluster.clusterset.k8s.io` exists (default: the UID of the
//! `kube-system` namespace), reads them all for its heartbeats, and writes or removes
//! `clusterset.k8s.io` as the hub decides.

use std::time::Duration;

use atoll_api::inventory::{ClusterProperty, ClusterPropertySpec};
use atoll_api::names::{PROPERTY_CLUSTER_ID, PROPERTY_CLUSTER_SET};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams};

use crate::{Error, FIELD_MANAGER};

/// The CRDs the agent needs in its own cluster.
const MEMBER_CRDS: &[&str] = &[
    "clusterproperties.about.k8s.io",
    "appliedworks.multicluster.x-k8s.io",
];

/// Installs the member-side CRDs (ClusterProperty, AppliedWork) unless the cluster serves them,
/// and waits until they are Established.
pub async fn install_crds(client: &kube::Client) -> Result<(), Error> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let all = atoll_api::crd::all().map_err(|e| Error::Crd(e.to_string()))?;
    for crd in all
        .iter()
        .filter(|c| MEMBER_CRDS.contains(&c.metadata.name.as_deref().unwrap_or_default()))
    {
        let name = crd.metadata.name.clone().unwrap_or_default();
        if api
            .get_opt(&name)
            .await
            .map_err(Error::member(&name))?
            .is_none()
        {
            api.patch(
                &name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(crd),
            )
            .await
            .map_err(Error::member(&name))?;
        }
        for _ in 0..600 {
            let current = api.get(&name).await.map_err(Error::member(&name))?;
            let established = atoll_api::crd::is_established(&current);
            if established {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    Ok(())
}

/// The cluster's ID, creating `cluster.clusterset.k8s.io` from the `kube-system` UID when absent.
pub async fn ensure_cluster_id(client: &kube::Client) -> Result<String, Error> {
    let api: Api<ClusterProperty> = Api::all(client.clone());
    if let Some(existing) = api
        .get_opt(PROPERTY_CLUSTER_ID)
        .await
        .map_err(Error::member(PROPERTY_CLUSTER_ID))?
    {
        return Ok(existing.spec.value);
    }
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let uid = namespaces
        .get("kube-system")
        .await
        .map_err(Error::member("namespace kube-system"))?
        .metadata
        .uid
        .ok_or_else(|| Error::Crd("namespace kube-system has no UID".to_owned()))?;
    write(client, PROPERTY_CLUSTER_ID, &uid).await?;
    tracing::info!(cluster_id = %uid, "wrote ClusterProperty {PROPERTY_CLUSTER_ID} from the kube-system namespace UID");
    Ok(uid)
}

/// Every ClusterProperty of the cluster, by name.
pub async fn list(client: &kube::Client) -> Result<Vec<(String, String)>, Error> {
    let api: Api<ClusterProperty> = Api::all(client.clone());
    let list = api
        .list(&ListParams::default())
        .await
        .map_err(Error::member("ClusterProperties"))?;
    let mut out: Vec<(String, String)> = list
        .into_iter()
        .map(|p| (p.metadata.name.unwrap_or_default(), p.spec.value))
        .collect();
    out.sort();
    Ok(out)
}

/// Writes `clusterset.k8s.io` (or removes it when `set` is empty), as the hub decided.
pub async fn set_cluster_set(client: &kube::Client, set: &str) -> Result<bool, Error> {
    let api: Api<ClusterProperty> = Api::all(client.clone());
    let current = api
        .get_opt(PROPERTY_CLUSTER_SET)
        .await
        .map_err(Error::member(PROPERTY_CLUSTER_SET))?;
    match (current, set.is_empty()) {
        (None, true) => Ok(false),
        (Some(p), false) if p.spec.value == set => Ok(false),
        (Some(_), true) => {
            api.delete(PROPERTY_CLUSTER_SET, &DeleteParams::default())
                .await
                .map_err(Error::member(PROPERTY_CLUSTER_SET))?;
            tracing::info!("left the ClusterSet: removed ClusterProperty {PROPERTY_CLUSTER_SET}");
            Ok(true)
        }
        (_, false) => {
            write(client, PROPERTY_CLUSTER_SET, set).await?;
            tracing::info!(cluster_set = %set, "joined a ClusterSet: wrote ClusterProperty {PROPERTY_CLUSTER_SET}");
            Ok(true)
        }
    }
}

async fn write(client: &kube::Client, name: &str, value: &str) -> Result<(), Error> {
    let api: Api<ClusterProperty> = Api::all(client.clone());
    let property = ClusterProperty {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        spec: ClusterPropertySpec {
            value: value.to_owned(),
        },
        status: None,
    };
    api.patch(
        name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&property),
    )
    .await
    .map_err(Error::member(name))?;
    Ok(())
}
