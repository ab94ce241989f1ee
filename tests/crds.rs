//! atoll's own CRDs (`manifests/crds/*.yaml`) against atoll's API server: each is accepted and
//! becomes Established, and one object of each kind round-trips through kube-rs with the types of
//! atoll-api.

use std::fmt::Debug;
use std::path::PathBuf;
use std::time::Duration;

use atoll_api::clusterset::{ClusterSet, ClusterSetSpec};
use atoll_api::crd::CRD_DIR;
use atoll_api::hosted::{
    ApiServerSpec, HostedCluster, HostedClusterSpec, HostedLimits, HostedMode, HostedStorage,
    StorageBackend,
};
use atoll_api::inventory::{
    self, ClusterManager, ClusterProfile, ClusterProfileSpec, ClusterPropertySpec,
};
use atoll_api::names::{CLUSTER_MANAGER_NAME, PROPERTY_CLUSTER_ID};
use atoll_api::placement::{ClusterSelector, WorkPlacement, WorkPlacementSpec};
use atoll_api::work::{AppliedWork, AppliedWorkSpec, Manifest, Work, WorkSpec, WorkloadTemplate};
use atoll_apiserver::StorageKind;
use atoll_tests::TestServer;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::{conditions, wait::await_condition};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(60);
const NAMESPACE: &str = "crds-test";

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        ..ObjectMeta::default()
    }
}

/// Creates `object` and reads it back; the spec must survive unchanged.
async fn round_trip<K>(api: Api<K>, object: K, spec: impl Fn(&K) -> serde_json::Value)
where
    K: Resource + Clone + Debug + Serialize + DeserializeOwned,
    K::DynamicType: Default,
{
    let kind = K::kind(&Default::default()).into_owned();
    let created = api
        .create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|e| panic!("create {kind}: {e}"));
    let name = created
        .meta()
        .name
        .clone()
        .expect("created object has a name");
    let read = api
        .get(&name)
        .await
        .unwrap_or_else(|e| panic!("get {kind} {name}: {e}"));
    assert_eq!(
        spec(&read),
        spec(&object),
        "{kind} {name}: spec changed on the way"
    );
    assert!(read.meta().uid.is_some(), "{kind} {name} has no uid");
}

async fn install_crds(client: &Client) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(CRD_DIR);
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    paths.sort();
    assert_eq!(paths.len(), 8, "expected 8 CRD files in {CRD_DIR}");
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for path in &paths {
        let crd: CustomResourceDefinition =
            serde_yaml_ng::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let name = crd.metadata.name.clone().unwrap();
        crds.patch(
            &name,
            &PatchParams::apply("atoll-tests").force(),
            &Patch::Apply(&crd),
        )
        .await
        .unwrap_or_else(|e| panic!("apply CRD {name}: {e}"));
    }
    for path in &paths {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let established = await_condition(crds.clone(), &name, conditions::is_crd_established());
        tokio::time::timeout(TIMEOUT, established)
            .await
            .unwrap_or_else(|_| panic!("CRD {name} not Established in time"))
            .unwrap();
    }
}

#[tokio::test]
async fn atoll_crds_are_established_and_serve_their_kinds() {
    tokio::time::timeout(TIMEOUT * 2, crds_serve_their_kinds())
        .await
        .expect("the test finished in time");
}

async fn crds_serve_their_kinds() {
    let server = TestServer::start(StorageKind::Memory).await.unwrap();
    let client = server.client().await.unwrap();
    install_crds(&client).await;

    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: meta(NAMESPACE),
                ..Default::default()
            },
        )
        .await
        .unwrap();

    let profile = ClusterProfile {
        metadata: meta("member-1"),
        spec: ClusterProfileSpec {
            display_name: Some("member-1".into()),
            cluster_manager: ClusterManager {
                name: CLUSTER_MANAGER_NAME.into(),
            },
        },
        status: None,
    };
    let profiles: Api<ClusterProfile> = Api::namespaced(client.clone(), NAMESPACE);
    round_trip(profiles.clone(), profile, |o: &ClusterProfile| {
        json!(o.spec)
    })
    .await;
    let status = json!({"status": {
        "conditions": [{"type": "ControlPlaneHealthy", "status": "True", "reason": "Heartbeat",
                        "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
        "version": {"kubernetes": "v1.35.0"},
        "properties": [{"name": PROPERTY_CLUSTER_ID, "value": "5f6c1b2e"}],
    }});
    profiles
        .patch_status("member-1", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("write ClusterProfile status");
    let read = profiles.get("member-1").await.unwrap();
    let status = read.status.expect("ClusterProfile has a status");
    assert_eq!(status.conditions[0].type_, "ControlPlaneHealthy");
    assert_eq!(
        status.version.and_then(|v| v.kubernetes).as_deref(),
        Some("v1.35.0")
    );
    assert_eq!(status.properties[0].value, "5f6c1b2e");

    let property = inventory::ClusterProperty {
        metadata: meta(PROPERTY_CLUSTER_ID),
        spec: ClusterPropertySpec {
            value: "5f6c1b2e-7a1d-4c1e-9b0e-2d6f1d9c0a11".into(),
        },
        status: None,
    };
    round_trip(
        Api::all(client.clone()),
        property,
        |o: &inventory::ClusterProperty| json!(o.spec),
    )
    .await;
    // The same object through the served, not stored, version.
    let alpha: Api<inventory::v1alpha1::ClusterProperty> = Api::all(client.clone());
    let read = alpha
        .get(PROPERTY_CLUSTER_ID)
        .await
        .expect("get ClusterProperty as v1alpha1");
    assert_eq!(read.spec.value, "5f6c1b2e-7a1d-4c1e-9b0e-2d6f1d9c0a11");

    let deployment = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "nginx"}]}}},
    });
    let work = Work {
        metadata: meta("web"),
        spec: WorkSpec {
            workload: WorkloadTemplate {
                manifests: vec![Manifest(deployment.clone())],
            },
            ..WorkSpec::default()
        },
        status: None,
    };
    round_trip(
        Api::namespaced(client.clone(), NAMESPACE),
        work,
        |o: &Work| json!(o.spec),
    )
    .await;

    let applied = AppliedWork {
        metadata: meta("hub-web"),
        spec: AppliedWorkSpec {
            work_name: "web".into(),
            work_namespace: NAMESPACE.into(),
        },
        status: None,
    };
    round_trip(Api::all(client.clone()), applied, |o: &AppliedWork| {
        json!(o.spec)
    })
    .await;

    let set = ClusterSet {
        metadata: meta("prod"),
        spec: ClusterSetSpec {
            description: Some("production clusters".into()),
        },
        status: None,
    };
    round_trip(Api::all(client.clone()), set, |o: &ClusterSet| {
        json!(o.spec)
    })
    .await;

    let placement = WorkPlacement {
        metadata: meta("web"),
        spec: WorkPlacementSpec {
            manifests: vec![Manifest(deployment)],
            cluster_selector: ClusterSelector {
                cluster_set: Some("prod".into()),
                ..Default::default()
            },
            ..WorkPlacementSpec::default()
        },
        status: None,
    };
    round_trip(
        Api::namespaced(client.clone(), NAMESPACE),
        placement,
        |o: &WorkPlacement| json!(o.spec),
    )
    .await;

    let work_override: atoll_api::placement::WorkOverride = serde_json::from_value(json!({
        "apiVersion": "atoll.dev/v1alpha1", "kind": "WorkOverride",
        "metadata": {"name": "mirror"},
        "spec": {
            "placements": {"namespaces": [NAMESPACE]},
            "overrides": [{"image": {"registry": "mirror.example.com"}}],
        },
    }))
    .unwrap();
    round_trip(
        Api::all(client.clone()),
        work_override,
        |o: &atoll_api::placement::WorkOverride| json!(o.spec),
    )
    .await;

    let hosted = HostedCluster {
        metadata: meta("edge-1"),
        spec: HostedClusterSpec {
            mode: HostedMode::Process,
            kubernetes_version: Some("v1.35.0".into()),
            cluster_set: Some("edge".into()),
            labels: [("region".to_owned(), "eu".to_owned())].into(),
            api_server: Some(ApiServerSpec {
                port: Some(16443),
                extra_sans: vec!["edge-1.example.com".into()],
                service_type: Some(atoll_api::hosted::ServiceType::NodePort),
            }),
            storage: Some(HostedStorage {
                backend: StorageBackend::Memory,
                ..HostedStorage::default()
            }),
            limits: Some(HostedLimits {
                storage_bytes: Some(json!("64Mi")),
                objects: Some(1000),
                requests_in_flight: Some(50),
            }),
            suspended: true,
            availability: atoll_api::hosted::Availability::HighlyAvailable,
            images: Some(atoll_api::hosted::HostedImages {
                kube_api_server: Some("mirror.example.com/kube-apiserver:v1.35.0".into()),
                ..Default::default()
            }),
            addons: Some(atoll_api::hosted::HostedAddons {
                kube_proxy: Some(atoll_api::hosted::Addon {
                    enabled: false,
                    image: None,
                }),
                core_dns: Some(atoll_api::hosted::Addon {
                    enabled: true,
                    image: Some("mirror.example.com:5000/coredns/coredns:v1.13.1".into()),
                }),
            }),
            network: Some(atoll_api::hosted::HostedNetwork {
                pod_cidr: Some("10.244.0.0/16".into()),
                service_cidr: Some("10.100.0.0/16".into()),
                dns_service_ip: Some("10.100.0.53".into()),
            }),
        },
        status: None,
    };
    round_trip(
        Api::namespaced(client.clone(), NAMESPACE),
        hosted,
        |o: &HostedCluster| json!(o.spec),
    )
    .await;
}
