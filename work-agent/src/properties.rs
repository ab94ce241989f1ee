//! The member cluster's ClusterProperties (`about.k8s.io`): the agent installs the CRD when the
//! cluster lacks it, makes sure `cluster.clusterset.k8s.io` exists (default: the UID of the
//! `kube-system` namespace), reads them all for its heartbeats, and writes or removes
//! `clusterset.k8s.io` as the hub decides.

use std::time::Duration;

use atoll_api::names::{PROPERTY_CLUSTER_ID, PROPERTY_CLUSTER_SET};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
};

use crate::{Error, FIELD_MANAGER};

/// The CRDs the agent needs in its own cluster.
const MEMBER_CRDS: &[&str] = &[
    "clusterproperties.about.k8s.io",
    "appliedworks.multicluster.x-k8s.io",
];

/// The member's ClusterProperties, at the version its CRD serves: `v1beta1` (what atoll
/// installs and upstream's about-api ships now) or, on a cluster whose older CRD serves only
/// `v1alpha1`, that one (the two differ only in version).
#[derive(Clone)]
pub struct Properties {
    api: Api<DynamicObject>,
    resource: ApiResource,
}

/// The ClusterProperty version to use, of those the CRD serves.
pub fn version_to_use(crd: &CustomResourceDefinition) -> Option<&'static str> {
    let served: Vec<&str> = crd
        .spec
        .versions
        .iter()
        .filter(|v| v.served)
        .map(|v| v.name.as_str())
        .collect();
    ["v1beta1", "v1alpha1"]
        .into_iter()
        .find(|v| served.contains(v))
}

/// Installs the member-side CRDs (ClusterProperty, AppliedWork) unless the cluster serves them,
/// and waits until they are Established; the cluster's ClusterProperties.
pub async fn install_crds(client: &kube::Client) -> Result<Properties, Error> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let all = atoll_api::crd::all().map_err(|e| Error::Crd(e.to_string()))?;
    let mut version = None;
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
                if name == MEMBER_CRDS[0] {
                    version = version_to_use(&current);
                }
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let version = version.ok_or_else(|| {
        Error::Crd(format!(
            "CustomResourceDefinition {} serves neither v1beta1 nor v1alpha1",
            MEMBER_CRDS[0]
        ))
    })?;
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("about.k8s.io", version, "ClusterProperty"),
        "clusterproperties",
    );
    Ok(Properties {
        api: Api::all_with(client.clone(), &resource),
        resource,
    })
}

impl Properties {
    async fn value(&self, name: &str) -> Result<Option<String>, Error> {
        Ok(self
            .api
            .get_opt(name)
            .await
            .map_err(Error::member(name))?
            .map(|p| value_of(&p)))
    }

    /// The cluster's ID, creating `cluster.clusterset.k8s.io` from the `kube-system` UID when
    /// absent.
    pub async fn ensure_cluster_id(&self, client: &kube::Client) -> Result<String, Error> {
        if let Some(existing) = self.value(PROPERTY_CLUSTER_ID).await? {
            return Ok(existing);
        }
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let uid = namespaces
            .get("kube-system")
            .await
            .map_err(Error::member("namespace kube-system"))?
            .metadata
            .uid
            .ok_or_else(|| Error::Crd("namespace kube-system has no UID".to_owned()))?;
        self.write(PROPERTY_CLUSTER_ID, &uid).await?;
        tracing::info!(cluster_id = %uid, "wrote ClusterProperty {PROPERTY_CLUSTER_ID} from the kube-system namespace UID");
        Ok(uid)
    }

    /// Every ClusterProperty of the cluster, by name.
    pub async fn list(&self) -> Result<Vec<(String, String)>, Error> {
        let list = self
            .api
            .list(&ListParams::default())
            .await
            .map_err(Error::member("ClusterProperties"))?;
        let mut out: Vec<(String, String)> = list
            .into_iter()
            .map(|p| (p.metadata.name.clone().unwrap_or_default(), value_of(&p)))
            .collect();
        out.sort();
        Ok(out)
    }

    /// Writes `clusterset.k8s.io` (or removes it when `set` is empty), as the hub decided.
    pub async fn set_cluster_set(&self, set: &str) -> Result<bool, Error> {
        match (self.value(PROPERTY_CLUSTER_SET).await?, set.is_empty()) {
            (None, true) => Ok(false),
            (Some(value), false) if value == set => Ok(false),
            (Some(_), true) => {
                self.api
                    .delete(PROPERTY_CLUSTER_SET, &DeleteParams::default())
                    .await
                    .map_err(Error::member(PROPERTY_CLUSTER_SET))?;
                tracing::info!(
                    "left the ClusterSet: removed ClusterProperty {PROPERTY_CLUSTER_SET}"
                );
                Ok(true)
            }
            (_, false) => {
                self.write(PROPERTY_CLUSTER_SET, set).await?;
                tracing::info!(cluster_set = %set, "joined a ClusterSet: wrote ClusterProperty {PROPERTY_CLUSTER_SET}");
                Ok(true)
            }
        }
    }

    async fn write(&self, name: &str, value: &str) -> Result<(), Error> {
        let mut property = DynamicObject::new(name, &self.resource);
        property.data = serde_json::json!({"spec": {"value": value}});
        self.api
            .patch(
                name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&property),
            )
            .await
            .map_err(Error::member(name))?;
        Ok(())
    }
}

fn value_of(property: &DynamicObject) -> String {
    property.data["spec"]["value"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The bytes of properties a Join or Heartbeat carries at most: three quarters of the hub's cap,
/// leaving room for the rest of the message.
pub const SENT_MAX_BYTES: usize = atoll_proto::HEARTBEAT_MAX_BYTES / 4 * 3;

/// The properties that fit in `budget` bytes (names and values), the well-known ones first and
/// the others by name; and the names of those left out.
pub fn fit(
    mut properties: Vec<(String, String)>,
    budget: usize,
) -> (Vec<(String, String)>, Vec<String>) {
    let well_known = |name: &str| name == PROPERTY_CLUSTER_ID || name == PROPERTY_CLUSTER_SET;
    properties.sort_by(|a, b| (!well_known(&a.0), &a.0).cmp(&(!well_known(&b.0), &b.0)));
    let mut used = 0;
    let mut kept = Vec::new();
    let mut left_out = Vec::new();
    for (name, value) in properties {
        let size = name.len() + value.len();
        if used + size <= budget {
            used += size;
            kept.push((name, value));
        } else {
            left_out.push(name);
        }
    }
    kept.sort();
    (kept, left_out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_fit_the_budget_well_known_ones_first() {
        let properties = vec![
            ("a.example.com".to_owned(), "x".repeat(60)),
            (PROPERTY_CLUSTER_ID.to_owned(), "id".to_owned()),
            ("b.example.com".to_owned(), "y".repeat(10)),
        ];
        let (kept, left_out) = fit(properties, 60);
        let names: Vec<&str> = kept.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, vec!["b.example.com", PROPERTY_CLUSTER_ID]);
        assert_eq!(left_out, vec!["a.example.com".to_owned()]);
    }
}
