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

/// A Work as the hub writes it and an agent reports on it: the server reads the field a write
/// cannot change (the status through the main resource, the spec through `/status`) as stored
/// bytes, and every answer and read still shows the whole object.
#[tokio::test]
async fn writes_that_leave_the_spec_or_the_status_keep_it_and_answer_it_whole() {
    tokio::time::timeout(TIMEOUT * 2, spec_and_status_writes())
        .await
        .expect("the test finished in time");
}

async fn spec_and_status_writes() {
    use kube::api::{DeleteParams, DynamicObject};
    let server = TestServer::start(StorageKind::Sqlite).await.unwrap();
    let client = server.client().await.unwrap();
    install_crds(&client).await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace = Namespace {
        metadata: meta(NAMESPACE),
        ..Default::default()
    };
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    let works: Api<Work> = Api::namespaced(client.clone(), NAMESPACE);
    let raw: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        NAMESPACE,
        &kube::api::ApiResource::erase::<Work>(&()),
    );
    let configmap = |value: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "settings", "namespace": "shop"}, "data": {"mode": value}})
    };
    let work = |value: &str| {
        json!({"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "Work",
               "metadata": {"name": "app", "namespace": NAMESPACE},
               "spec": {"workload": {"manifests": [configmap(value)]}}})
    };
    let applied = |generation: i64| {
        json!({"status": {
            "conditions": [{"type": "Applied", "status": "True", "reason": "AppliedManifestWorkComplete",
                            "message": "applied", "observedGeneration": generation,
                            "lastTransitionTime": "2026-12-05T00:00:00Z"}],
            "manifestConditions": [{
                "identifier": {"ordinal": 0, "group": "", "version": "v1", "kind": "ConfigMap",
                               "resource": "configmaps", "name": "settings", "namespace": "shop"},
                "conditions": [{"type": "Applied", "status": "True", "reason": "Applied",
                                "message": "applied", "observedGeneration": generation,
                                "lastTransitionTime": "2026-12-05T00:00:00Z"}]}]}})
    };
    let hub = PatchParams::apply("hub").force();
    let agent = PatchParams::apply("agent");
    let as_json = |o: &DynamicObject| serde_json::to_value(o).unwrap();

    let created = raw
        .patch("app", &hub, &Patch::Apply(work("one")))
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));

    // The agent's status, by merge patch: the answer has the spec it left alone.
    let reported = as_json(
        &raw.patch_status("app", &agent, &Patch::Merge(applied(1)))
            .await
            .unwrap(),
    );
    assert_eq!(reported["spec"], work("one")["spec"], "{reported}");
    assert_eq!(reported["status"], applied(1)["status"], "{reported}");
    assert_eq!(reported["metadata"]["generation"], 1);

    // The hub's update of the spec, by server-side apply: the status stays, in the answer too.
    let updated = as_json(
        &raw.patch("app", &hub, &Patch::Apply(work("two")))
            .await
            .unwrap(),
    );
    assert_eq!(updated["spec"], work("two")["spec"], "{updated}");
    assert_eq!(updated["status"], applied(1)["status"], "{updated}");
    assert_eq!(updated["metadata"]["generation"], 2);

    // The same two writes answered with metadata only, as the hub asks for them.
    let meta_only = raw
        .patch_metadata("app", &hub, &Patch::Apply(work("three")))
        .await
        .unwrap();
    assert_eq!(meta_only.metadata.generation, Some(3));
    let mut request = kube::core::Request::new(format!(
        "/apis/multicluster.x-k8s.io/v1alpha1/namespaces/{NAMESPACE}/works"
    ))
    .patch_subresource(
        "status",
        "app",
        &PatchParams::default(),
        &Patch::Merge(applied(3)),
    )
    .unwrap();
    request.headers_mut().insert(
        http::header::ACCEPT,
        http::HeaderValue::from_static(
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json",
        ),
    );
    let answer: serde_json::Value =
        serde_json::from_str(&client.request_text(request).await.unwrap()).unwrap();
    assert_eq!(answer["kind"], "PartialObjectMetadata", "{answer}");
    assert!(answer.get("spec").is_none() && answer.get("status").is_none());

    let read = as_json(&raw.get("app").await.unwrap());
    assert_eq!(read["spec"], work("three")["spec"], "{read}");
    assert_eq!(read["status"], applied(3)["status"], "{read}");
    assert_eq!(read["metadata"]["generation"], 3);
    let managers: Vec<(String, String)> = read["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["manager"].as_str().unwrap().to_owned(),
                e["subresource"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert!(
        managers.contains(&("hub".into(), String::new()))
            && managers.contains(&("agent".into(), "status".into())),
        "both writers keep their fields: {managers:?}"
    );

    // A merge patch of the main resource cannot change the status, and one of the status cannot
    // change the spec.
    let patched = as_json(
        &raw.patch(
            "app",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"labels": {"team": "shop"}}, "status": {"conditions": []}}),
            ),
        )
        .await
        .unwrap(),
    );
    assert_eq!(patched["status"], applied(3)["status"], "{patched}");
    assert_eq!(patched["metadata"]["labels"]["team"], "shop");
    let patched = as_json(
        &raw.patch_status(
            "app",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"workload": {"manifests": []}}, "status": {"conditions": []}}),
            ),
        )
        .await
        .unwrap(),
    );
    assert_eq!(patched["spec"], work("three")["spec"], "{patched}");
    assert_eq!(patched["status"]["conditions"], json!([]), "{patched}");
    assert_eq!(patched["metadata"]["generation"], 3);

    // Nor can a replace: of the main resource, the status; of the status, the spec.
    let mut whole = raw.get("app").await.unwrap();
    whole.data["status"] = json!({"conditions": [{"type": "Applied", "status": "False",
        "reason": "Replaced", "message": "m", "lastTransitionTime": "2026-12-05T00:00:00Z"}]});
    whole.metadata.labels = Some([("team".to_owned(), "web".to_owned())].into());
    let replaced = as_json(
        &raw.replace("app", &PostParams::default(), &whole)
            .await
            .unwrap(),
    );
    assert_eq!(replaced["status"]["conditions"], json!([]), "{replaced}");
    assert_eq!(replaced["metadata"]["labels"]["team"], "web");
    whole.metadata.resource_version = replaced["metadata"]["resourceVersion"]
        .as_str()
        .map(str::to_owned);
    whole.data["spec"] = json!({"workload": {"manifests": []}});
    let replaced = as_json(
        &raw.replace_status("app", &PostParams::default(), &whole)
            .await
            .unwrap(),
    );
    assert_eq!(replaced["spec"], work("three")["spec"], "{replaced}");
    assert_eq!(replaced["status"]["conditions"][0]["reason"], "Replaced");
    assert_eq!(replaced["metadata"]["generation"], 3);

    // The typed client reads what was stored.
    let typed = works.get("app").await.unwrap();
    assert_eq!(typed.spec.workload.manifests.len(), 1);
    assert_eq!(typed.status.unwrap().conditions[0].reason, "Replaced");

    // The write that ends a deleted Work (its last finalizer removed) answers it whole.
    raw.patch(
        "app",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": ["example.com/hold"]}})),
    )
    .await
    .unwrap();
    raw.delete("app", &DeleteParams::default()).await.unwrap();
    let last = as_json(
        &raw.patch(
            "app",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap(),
    );
    assert_eq!(last["spec"], work("three")["spec"], "{last}");
    assert_eq!(
        last["status"]["conditions"][0]["reason"], "Replaced",
        "{last}"
    );
    assert!(raw.get_opt("app").await.unwrap().is_none());
}

/// Where a write must read the whole object (a CEL rule at the schema's root weighs the spec
/// against the status), it does: a spec write checks the stored status, a status write the
/// stored spec.
#[tokio::test]
async fn a_root_rule_sees_the_field_a_write_leaves() {
    tokio::time::timeout(TIMEOUT * 2, root_rule_sees_both())
        .await
        .expect("the test finished in time");
}

async fn root_rule_sees_both() {
    let server = TestServer::start(StorageKind::Sqlite).await.unwrap();
    let client = server.client().await.unwrap();
    let quotas = example_resource(
        &client,
        "Quota",
        "quotas",
        json!({"type": "object",
            "x-kubernetes-validations": [{
                "rule": "!has(self.status) || !has(self.spec) || self.status.used <= self.spec.limit",
                "message": "used is over the limit"}],
            "properties": {
                "spec": {"type": "object", "properties": {"limit": {"type": "integer"}}},
                "status": {"type": "object", "properties": {"used": {"type": "integer"}}}}}),
    )
    .await;
    let quota = |limit: i64| {
        json!({"apiVersion": "example.com/v1", "kind": "Quota",
               "metadata": {"name": "q"}, "spec": {"limit": limit}})
    };
    let owner = PatchParams::apply("owner").force();
    quotas
        .patch("q", &owner, &Patch::Apply(quota(10)))
        .await
        .unwrap();
    quotas
        .patch_status(
            "q",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"used": 8}})),
        )
        .await
        .unwrap();

    let over = quotas
        .patch_status(
            "q",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"used": 12}})),
        )
        .await
        .expect_err("a status over the stored spec's limit is refused");
    assert!(
        over.to_string().contains("used is over the limit"),
        "{over}"
    );
    let under = quotas
        .patch("q", &owner, &Patch::Apply(quota(5)))
        .await
        .expect_err("a limit under the stored status is refused");
    assert!(
        under.to_string().contains("used is over the limit"),
        "{under}"
    );
    let merged = quotas
        .patch(
            "q",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"limit": 4}})),
        )
        .await
        .expect_err("so is one by merge patch");
    assert!(
        merged.to_string().contains("used is over the limit"),
        "{merged}"
    );

    let read = quotas.get("q").await.unwrap();
    assert_eq!(read.data["spec"]["limit"], 10);
    assert_eq!(read.data["status"]["used"], 8);
}

/// Creates (or replaces the schema of) the namespaced `example.com/v1` kind `kind`, with a
/// status subresource, and waits for it to be served.
async fn example_resource(
    client: &Client,
    kind: &str,
    plural: &str,
    schema: serde_json::Value,
) -> Api<kube::api::DynamicObject> {
    use kube::api::{ApiResource, GroupVersionKind};
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = format!("{plural}.example.com");
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": schema}}]}});
    crds.patch(
        &name,
        &PatchParams::apply("test").force(),
        &Patch::Apply(crd),
    )
    .await
    .unwrap();
    let established = await_condition(crds, &name, conditions::is_crd_established());
    tokio::time::timeout(TIMEOUT, established)
        .await
        .unwrap()
        .unwrap();
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", kind),
        plural,
    );
    Api::default_namespaced_with(client.clone(), &resource)
}

#[tokio::test]
async fn a_root_required_field_a_status_write_leaves_is_found_as_stored() {
    tokio::time::timeout(TIMEOUT * 2, required_field_found_as_stored())
        .await
        .expect("the test finished in time");
}

async fn required_field_found_as_stored() {
    let server = TestServer::start(StorageKind::Sqlite).await.unwrap();
    let client = server.client().await.unwrap();
    let schema = |required: serde_json::Value| {
        json!({"type": "object", "required": required, "properties": {
            "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
            "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}})
    };
    let gates = example_resource(&client, "Gate", "gates", schema(json!([]))).await;
    let gate = |name: &str, spec: Option<i64>| {
        let mut gate =
            json!({"apiVersion": "example.com/v1", "kind": "Gate", "metadata": {"name": name}});
        if let Some(size) = spec {
            gate["spec"] = json!({"size": size});
        }
        serde_json::from_value::<kube::api::DynamicObject>(gate).unwrap()
    };
    let post = PostParams::default();
    gates.create(&post, &gate("full", Some(3))).await.unwrap();
    gates.create(&post, &gate("bare", None)).await.unwrap();
    // The kind now requires a spec: "bare", stored before, has none.
    example_resource(&client, "Gate", "gates", schema(json!(["spec"]))).await;
    let mut refused = None;
    for _ in 0..100 {
        match gates.create(&post, &gate("probe", None)).await {
            Err(e) => {
                refused = Some(e);
                break;
            }
            Ok(_) => {
                gates.delete("probe", &Default::default()).await.unwrap();
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    let refused = refused.expect("a Gate without a spec is refused once the schema requires it");
    assert!(
        refused.to_string().contains("spec: Required value"),
        "{refused}"
    );

    let ready = json!({"status": {"ready": true}});
    let written = gates
        .patch_status("full", &PatchParams::default(), &Patch::Merge(&ready))
        .await
        .expect("a status write over a stored spec meets the required spec");
    assert_eq!(written.data["spec"]["size"], 3);
    assert_eq!(written.data["status"]["ready"], true);
    let applied = json!({"apiVersion": "example.com/v1", "kind": "Gate",
                         "metadata": {"name": "full"}, "status": {"ready": false}});
    gates
        .patch_status(
            "full",
            &PatchParams::apply("agent").force(),
            &Patch::Apply(&applied),
        )
        .await
        .expect("so does a status apply");
    let read = gates.get("full").await.unwrap();
    assert_eq!(read.data["spec"]["size"], 3);
    assert_eq!(read.data["status"]["ready"], false);

    let missing = gates
        .patch_status("bare", &PatchParams::default(), &Patch::Merge(&ready))
        .await
        .expect_err("a status write over an object with no spec still misses it");
    assert!(
        missing.to_string().contains("spec: Required value"),
        "{missing}"
    );
    let bare = gates.get("bare").await.unwrap();
    assert!(bare.data.get("status").is_none(), "{:?}", bare.data);
}
