//! kube-rs 5 against a running atoll API server over HTTPS: discovery, typed and dynamic CRUD,
//! watchers through a compaction, a Controller with `owns` and a finalizer, and the status codes
//! of bad requests. Each test starts its own server on a free loopback port.

use std::sync::Arc;
use std::time::Duration;

use atoll_apiserver::StorageKind;
use atoll_tests::{TestServer, eventually};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::{ApiResource, GroupVersionKind, PartialObjectMeta};
use kube::discovery::{self, Discovery, Scope};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::finalizer::{Event as Finalizer, finalizer};
use kube::runtime::{WatchStreamExt, conditions, wait::await_condition, watcher};
use kube::{Client, CustomResource, CustomResourceExt, Resource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(60);

/// A custom resource for the controller and dynamic tests.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "example.com",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus",
    shortname = "wd",
    printcolumn = r#"{"name":"Size","type":"integer","jsonPath":".spec.size"}"#
)]
pub struct WidgetSpec {
    pub size: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
pub struct WidgetStatus {
    pub configmap: String,
}

fn cm(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "data": data.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
    }))
    .unwrap()
}

async fn server() -> (TestServer, Client) {
    let server = TestServer::start(StorageKind::Sqlite).await.unwrap();
    let client = server.client().await.unwrap();
    (server, client)
}

async fn install_widget_crd(client: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = Widget::crd();
    crds.patch(
        "widgets.example.com",
        &PatchParams::apply("atoll-tests").force(),
        &Patch::Apply(&crd),
    )
    .await
    .unwrap();
    let established = await_condition(
        crds,
        "widgets.example.com",
        conditions::is_crd_established(),
    );
    tokio::time::timeout(TIMEOUT, established)
        .await
        .unwrap()
        .unwrap();
}

fn api_error(err: kube::Error) -> kube::core::Status {
    match err {
        kube::Error::Api(status) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn discovery_sees_builtins_and_crds_as_they_come_and_go() {
    tokio::time::timeout(TIMEOUT, async {
        let (_server, client) = server().await;
        let version = client.apiserver_version().await.unwrap();
        assert_eq!(
            (version.major.as_str(), version.minor.as_str()),
            ("1", "35")
        );

        let discovery = Discovery::new(client.clone()).run().await.unwrap();
        let groups: Vec<String> = discovery.groups().map(|g| g.name().to_owned()).collect();
        for group in [
            "",
            "apps",
            "apiextensions.k8s.io",
            "coordination.k8s.io",
            "rbac.authorization.k8s.io",
        ] {
            assert!(
                groups.iter().any(|g| g == group),
                "{group} missing from {groups:?}"
            );
        }
        let (deploy, caps) = discovery
            .resolve_gvk(&GroupVersionKind::gvk("apps", "v1", "Deployment"))
            .unwrap();
        assert_eq!(deploy.plural, "deployments");
        assert_eq!(caps.scope, Scope::Namespaced);
        assert!(!discovery.has_group("example.com"));

        install_widget_crd(&client).await;
        let discovery = Discovery::new(client.clone()).run().await.unwrap();
        let (widget, caps) = discovery
            .resolve_gvk(&GroupVersionKind::gvk("example.com", "v1", "Widget"))
            .expect("the new CRD is discovered");
        assert_eq!(widget.plural, "widgets");
        assert!(
            caps.subresources
                .iter()
                .any(|(r, _)| r.plural == "widgets/status" || r.plural == "status")
        );
        // The aggregated form carries it too.
        let aggregated = Discovery::new(client.clone())
            .run_aggregated()
            .await
            .unwrap();
        assert!(aggregated.has_group("example.com"));
        assert!(aggregated.has_group("apps"));

        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        crds.delete("widgets.example.com", &DeleteParams::default())
            .await
            .unwrap();
        let discovery = Discovery::new(client.clone()).run().await.unwrap();
        assert!(
            !discovery.has_group("example.com"),
            "a deleted CRD leaves discovery"
        );
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn typed_crud_with_conflicts_generation_and_patches() {
    tokio::time::timeout(TIMEOUT, async {
        let (_server, client) = server().await;
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");

        let created = cms.create(&PostParams::default(), &cm("demo", &[("a", "1")])).await.unwrap();
        let uid = created.uid().unwrap();
        let rv1 = created.resource_version().unwrap();
        assert!(created.creation_timestamp().is_some());
        assert_eq!(created.meta().generation, None, "ConfigMaps carry no generation, as upstream");

        let err = api_error(cms.create(&PostParams::default(), &cm("demo", &[])).await.unwrap_err());
        assert_eq!((err.code, err.reason.as_str()), (409, "AlreadyExists"));
        assert_eq!(err.message, "configmaps \"demo\" already exists");

        // Replace with the current resourceVersion works; with the stale one it conflicts.
        let mut next = created.clone();
        next.data = Some([("a".to_string(), "2".to_string())].into());
        let replaced = cms.replace("demo", &PostParams::default(), &next).await.unwrap();
        assert_ne!(replaced.resource_version().unwrap(), rv1);
        assert_eq!(replaced.uid().unwrap(), uid);
        let err = api_error(cms.replace("demo", &PostParams::default(), &next).await.unwrap_err());
        assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
        assert!(err.message.contains("the object has been modified"), "{}", err.message);

        // A write that changes nothing keeps the RV.
        let labelled = cms
            .patch("demo", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"app": "demo"}}})))
            .await
            .unwrap();
        let same = cms
            .patch("demo", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"app": "demo"}}})))
            .await
            .unwrap();
        assert_eq!(same.resource_version(), labelled.resource_version(), "a no-op write must not move resourceVersion");

        // JSON patch, including the finalizer helper's `test` against an absent key.
        let patched = cms
            .patch(
                "demo",
                &PatchParams::default(),
                &Patch::Json::<()>(serde_json::from_value(json!([
                    {"op": "test", "path": "/metadata/finalizers", "value": null},
                    {"op": "add", "path": "/data/b", "value": "3"}
                ])).unwrap()),
            )
            .await
            .unwrap();
        assert_eq!(patched.data.as_ref().unwrap()["b"], "3");

        // Server-side apply: create, take ownership, conflict, force, removal of dropped fields.
        let apply = |data: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": data});
        let first = cms
            .patch("applied", &PatchParams::apply("team-a"), &Patch::Apply(apply(json!({"x": "1", "y": "1"}))))
            .await
            .unwrap();
        assert_eq!(first.data.as_ref().unwrap().len(), 2);
        let managers: Vec<_> = first.managed_fields().iter().filter_map(|m| m.manager.clone()).collect();
        assert_eq!(managers, ["team-a"]);
        let err = api_error(
            cms.patch("applied", &PatchParams::apply("team-b"), &Patch::Apply(apply(json!({"x": "2"}))))
                .await
                .unwrap_err(),
        );
        assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
        assert!(err.message.contains("conflict with \"team-a\""), "{}", err.message);
        assert!(err.message.contains(".data.x"), "{}", err.message);
        let forced = cms
            .patch("applied", &PatchParams::apply("team-b").force(), &Patch::Apply(apply(json!({"x": "2"}))))
            .await
            .unwrap();
        assert_eq!(forced.data.as_ref().unwrap()["x"], "2");
        let dropped = cms
            .patch("applied", &PatchParams::apply("team-a"), &Patch::Apply(apply(json!({"x": "2"}))))
            .await
            .unwrap();
        assert!(!dropped.data.as_ref().unwrap().contains_key("y"), "team-a stopped applying y");
        let again = cms
            .patch("applied", &PatchParams::apply("team-a"), &Patch::Apply(apply(json!({"x": "2"}))))
            .await
            .unwrap();
        assert_eq!(again.resource_version(), dropped.resource_version(), "a no-op apply writes nothing");

        // Lists: selectors and paging.
        for i in 0..5 {
            let mut c = cm(&format!("page-{i}"), &[]);
            c.metadata.labels = Some([("tier".to_string(), if i % 2 == 0 { "web" } else { "db" }.to_string())].into());
            cms.create(&PostParams::default(), &c).await.unwrap();
        }
        let web = cms.list(&ListParams::default().labels("tier=web")).await.unwrap();
        assert_eq!(web.items.len(), 3);
        let not_web = cms.list(&ListParams::default().labels("tier notin (web),tier")).await.unwrap();
        assert_eq!(not_web.items.len(), 2);
        let by_name = cms.list(&ListParams::default().fields("metadata.name=page-1")).await.unwrap();
        assert_eq!(by_name.items.len(), 1);
        let mut names = Vec::new();
        let mut params = ListParams::default().limit(2);
        loop {
            let page = cms.list(&params).await.unwrap();
            assert!(page.metadata.resource_version.is_some());
            names.extend(page.items.iter().map(|c| c.name_any()));
            match page.metadata.continue_ {
                Some(token) if !token.is_empty() => params = params.continue_token(&token),
                _ => break,
            }
        }
        assert_eq!(
            names.len(),
            8,
            "demo, applied, 5 pages and the cluster's CA: {names:?}"
        );

        // generateName.
        let mut generated = cm("", &[]);
        generated.metadata.name = None;
        generated.metadata.generate_name = Some("gen-".into());
        let generated = cms.create(&PostParams::default(), &generated).await.unwrap();
        assert!(generated.name_any().starts_with("gen-") && generated.name_any().len() == 9);

        // Delete and deletecollection.
        cms.delete("demo", &DeleteParams::default()).await.unwrap();
        let err = api_error(cms.get("demo").await.unwrap_err());
        assert_eq!((err.code, err.reason.as_str()), (404, "NotFound"));
        assert!(cms.get_opt("demo").await.unwrap().is_none());
        cms.delete_collection(&DeleteParams::default(), &ListParams::default().labels("tier")).await.unwrap();
        assert_eq!(cms.list(&ListParams::default().labels("tier")).await.unwrap().items.len(), 0);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn dynamic_crud_on_a_custom_resource_with_schema_status_and_scale() {
    tokio::time::timeout(TIMEOUT, async {
        let (_server, client) = server().await;
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        let crd: CustomResourceDefinition = serde_json::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "gadgets.example.org"},
            "spec": {
                "group": "example.org",
                "scope": "Cluster",
                "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                "versions": [
                    {"name": "v1beta1", "served": true, "storage": false,
                     "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {"replicas": {"type": "integer"}, "mode": {"type": "string", "default": "fast", "enum": ["fast", "slow"]}}}}}}},
                    {"name": "v1", "served": true, "storage": true,
                     "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                     "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "required": ["replicas"], "properties": {"replicas": {"type": "integer", "minimum": 0}, "mode": {"type": "string", "default": "fast", "enum": ["fast", "slow"]}}},
                        "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}}}}
                ]
            }
        }))
        .unwrap();
        let created = crds.create(&PostParams::default(), &crd).await.unwrap();
        let conditions = created.status.unwrap().conditions.unwrap();
        assert!(conditions.iter().any(|c| c.type_ == "Established" && c.status == "True"));

        let (resource, caps) = discovery::pinned_kind(&client, &GroupVersionKind::gvk("example.org", "v1", "Gadget"))
            .await
            .unwrap();
        assert_eq!(caps.scope, Scope::Cluster);
        let gadgets: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let mut obj = DynamicObject::new("g1", &resource);
        obj.data = json!({"spec": {"replicas": 2, "unknown": true}, "status": {"replicas": 9}});
        let g1 = gadgets.create(&PostParams::default(), &obj).await.unwrap();
        assert_eq!(g1.data["spec"]["mode"], "fast", "defaults are applied");
        assert!(g1.data["spec"].get("unknown").is_none(), "unknown fields are pruned");
        assert!(g1.data.get("status").is_none(), "status is ignored on create with a status subresource");

        // Schema validation: 422 with the field path; nothing changes.
        let bad = gadgets
            .patch("g1", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": "many"}})))
            .await
            .unwrap_err();
        let status = api_error(bad);
        assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
        assert!(status.message.contains("spec.replicas"), "{}", status.message);
        assert!(status.message.contains("must be of type integer"), "{}", status.message);
        let mut missing = DynamicObject::new("g2", &resource);
        missing.data = json!({"spec": {}});
        let status = api_error(gadgets.create(&PostParams::default(), &missing).await.unwrap_err());
        assert_eq!(status.code, 422);
        assert!(status.message.contains("spec.replicas: Required value"), "{}", status.message);
        assert_eq!(gadgets.get("g1").await.unwrap().data["spec"]["replicas"], 2);

        // Status subresource: only status changes, generation stays.
        let with_status = gadgets
            .patch_status("g1", &PatchParams::default(), &Patch::Merge(json!({"status": {"replicas": 2}, "spec": {"replicas": 7}})))
            .await
            .unwrap();
        assert_eq!(with_status.data["status"]["replicas"], 2);
        assert_eq!(with_status.data["spec"]["replicas"], 2);
        assert_eq!(with_status.metadata.generation, Some(1));

        // Scale subresource answers autoscaling/v1 Scale.
        let scale = gadgets.get_scale("g1").await.unwrap();
        assert_eq!(scale.spec.unwrap().replicas, Some(2));
        gadgets
            .patch_scale("g1", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 5}})))
            .await
            .unwrap();
        let scaled = gadgets.get("g1").await.unwrap();
        assert_eq!(scaled.data["spec"]["replicas"], 5);
        assert_eq!(scaled.metadata.generation, Some(2));
        let labelled = gadgets
            .patch("g1", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"tier": "gold"}}})))
            .await
            .unwrap();
        assert_eq!(labelled.metadata.generation, Some(2), "a metadata-only change keeps generation");

        // The same object at the other served version.
        let (beta, _) = discovery::pinned_kind(&client, &GroupVersionKind::gvk("example.org", "v1beta1", "Gadget"))
            .await
            .unwrap();
        let beta_api: Api<DynamicObject> = Api::all_with(client.clone(), &beta);
        let as_beta = beta_api.get("g1").await.unwrap();
        assert_eq!(as_beta.types.unwrap().api_version, "example.org/v1beta1");

        // Strategic merge patch is for built-in kinds only.
        let status = api_error(
            gadgets
                .patch("g1", &PatchParams::default(), &Patch::Strategic(json!({"spec": {"replicas": 1}})))
                .await
                .unwrap_err(),
        );
        assert_eq!((status.code, status.reason.as_str()), (415, "UnsupportedMediaType"));

        // Deleting the CRD deletes its objects.
        crds.delete("gadgets.example.org", &DeleteParams::default()).await.unwrap();
        let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("example.org", "v1", "Gadget"), "gadgets");
        let gone: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
        let status = api_error(gone.get("g1").await.unwrap_err());
        assert_eq!(status.code, 404);
        crds.create(&PostParams::default(), &crd).await.unwrap();
        let again: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
        assert!(again.list(&ListParams::default()).await.unwrap().items.is_empty(), "objects of a deleted CRD do not come back");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn watcher_relists_after_compaction_and_carries_on() {
    tokio::time::timeout(TIMEOUT, async {
        let (server, client) = server().await;
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        let secrets: Api<k8s_openapi::api::core::v1::Secret> =
            Api::namespaced(client.clone(), "default");
        cms.create(&PostParams::default(), &cm("before", &[]))
            .await
            .unwrap();

        // A watch from a compacted revision gets an in-band 410.
        let list = cms.list(&ListParams::default()).await.unwrap();
        let old_rv = list.metadata.resource_version.clone().unwrap();
        cms.create(&PostParams::default(), &cm("bump", &[]))
            .await
            .unwrap();
        server.server.compact().await.unwrap();
        let mut stream = cms
            .watch(&WatchParams::default().timeout(5), &old_rv)
            .await
            .unwrap()
            .boxed();
        match stream.try_next().await.unwrap() {
            Some(WatchEvent::Error(status)) => {
                assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
            }
            other => panic!("expected an in-band 410, got {other:?}"),
        }

        // A watcher whose watch ends every second re-lists after compaction and carries on.
        let config = watcher::Config::default().timeout(1);
        let events = watcher(cms.clone(), config).boxed();
        let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let inits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (seen2, inits2) = (seen.clone(), inits.clone());
        let task = tokio::spawn(async move {
            let mut events = events;
            while let Some(event) = events.next().await {
                match event {
                    Ok(watcher::Event::Init) => {
                        inits2.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                    Ok(watcher::Event::Apply(cm) | watcher::Event::InitApply(cm)) => {
                        seen2.lock().unwrap().push(cm.name_any());
                    }
                    _ => {}
                }
            }
        });
        assert!(
            eventually(TIMEOUT, || async {
                seen.lock().unwrap().contains(&"before".to_string())
            })
            .await
        );
        cms.create(&PostParams::default(), &cm("during", &[]))
            .await
            .unwrap();
        assert!(
            eventually(TIMEOUT, || async {
                seen.lock().unwrap().contains(&"during".to_string())
            })
            .await
        );
        // Move the store on elsewhere, then compact past what the watcher has seen.
        for i in 0..5 {
            let s: k8s_openapi::api::core::v1::Secret =
                serde_json::from_value(json!({"metadata": {"name": format!("s{i}")}})).unwrap();
            secrets.create(&PostParams::default(), &s).await.unwrap();
        }
        server.server.compact().await.unwrap();
        assert!(
            eventually(TIMEOUT, || async {
                inits.load(std::sync::atomic::Ordering::SeqCst) >= 2
            })
            .await,
            "the watcher re-listed after its revision was compacted"
        );
        cms.create(&PostParams::default(), &cm("after", &[]))
            .await
            .unwrap();
        assert!(
            eventually(TIMEOUT, || async {
                seen.lock().unwrap().contains(&"after".to_string())
            })
            .await,
            "the watcher carries on after the re-list"
        );
        task.abort();
    })
    .await
    .unwrap();
}

struct Ctx {
    client: Client,
}

#[derive(Debug, thiserror::Error)]
enum ReconcileError {
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error(transparent)]
    Finalizer(#[from] Box<kube::runtime::finalizer::Error<kube::Error>>),
}

async fn reconcile(widget: Arc<Widget>, ctx: Arc<Ctx>) -> Result<Action, ReconcileError> {
    let ns = widget.namespace().unwrap();
    let widgets: Api<Widget> = Api::namespaced(ctx.client.clone(), &ns);
    finalizer(&widgets, "example.com/cleanup", widget, |event| async {
        let cms: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ns);
        match event {
            Finalizer::Apply(widget) => {
                let name = format!("{}-config", widget.name_any());
                let owner = widget.controller_owner_ref(&()).unwrap();
                let child = json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name, "ownerReferences": [owner]},
                    "data": {"size": widget.spec.size.to_string()},
                });
                cms.patch(&name, &PatchParams::apply("widget-controller").force(), &Patch::Apply(child)).await?;
                widgets
                    .patch_status(
                        &widget.name_any(),
                        &PatchParams::apply("widget-controller").force(),
                        &Patch::Apply(json!({"apiVersion": "example.com/v1", "kind": "Widget", "status": {"configmap": name}})),
                    )
                    .await?;
                Ok(Action::await_change())
            }
            Finalizer::Cleanup(widget) => {
                let name = format!("{}-config", widget.name_any());
                match cms.delete(&name, &DeleteParams::default()).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(s)) if s.code == 404 => {}
                    Err(err) => return Err(err),
                }
                Ok(Action::await_change())
            }
        }
    })
    .await
    .map_err(|e| ReconcileError::Finalizer(Box::new(e)))
}

fn error_policy(_: Arc<Widget>, _: &ReconcileError, _: Arc<Ctx>) -> Action {
    Action::requeue(Duration::from_millis(200))
}

#[tokio::test]
async fn controller_with_owns_and_a_finalizer_reconciles_custom_resources() {
    tokio::time::timeout(TIMEOUT, async {
        let (_server, client) = server().await;
        install_widget_crd(&client).await;
        let namespaces: Api<Namespace> = Api::all(client.clone());
        namespaces
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": "team"}})).unwrap(),
            )
            .await
            .unwrap();
        let widgets: Api<Widget> = Api::namespaced(client.clone(), "team");
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "team");
        let controller = Controller::new(
            Api::<Widget>::all(client.clone()),
            watcher::Config::default(),
        )
        .owns(
            Api::<ConfigMap>::all(client.clone()),
            watcher::Config::default(),
        )
        .run(
            reconcile,
            error_policy,
            Arc::new(Ctx {
                client: client.clone(),
            }),
        )
        .for_each(|_| async {});
        let controller = tokio::spawn(controller);

        widgets
            .create(
                &PostParams::default(),
                &Widget::new(
                    "w1",
                    WidgetSpec {
                        size: 3,
                        color: None,
                    },
                ),
            )
            .await
            .unwrap();
        assert!(
            eventually(TIMEOUT, || async {
                let w = widgets.get("w1").await.unwrap();
                w.status
                    .as_ref()
                    .is_some_and(|s| s.configmap == "w1-config")
                    && w.finalizers().contains(&"example.com/cleanup".to_string())
                    && cms.get_opt("w1-config").await.unwrap().is_some()
            })
            .await,
            "the controller created the child and set status and its finalizer"
        );
        // `owns`: deleting the child wakes the owner's reconcile, which recreates it.
        cms.delete("w1-config", &DeleteParams::default())
            .await
            .unwrap();
        assert!(
            eventually(TIMEOUT, || async {
                cms.get_opt("w1-config").await.unwrap().is_some()
            })
            .await,
            "the owned ConfigMap is recreated"
        );
        // Deleting the widget runs cleanup, then the finalizer goes and so does the object.
        widgets
            .delete("w1", &DeleteParams::default())
            .await
            .unwrap();
        assert!(
            eventually(TIMEOUT, || async {
                widgets.get_opt("w1").await.unwrap().is_none()
                    && cms.get_opt("w1-config").await.unwrap().is_none()
            })
            .await,
            "cleanup ran and the widget is gone"
        );
        controller.abort();
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn metadata_watches_and_streaming_lists() {
    tokio::time::timeout(TIMEOUT, async {
        let (_server, client) = server().await;
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        cms.create(&PostParams::default(), &cm("m1", &[]))
            .await
            .unwrap();
        let list = cms.list_metadata(&ListParams::default()).await.unwrap();
        let names: Vec<_> = list.items.iter().map(|i| i.name_any()).collect();
        assert_eq!(names, ["kube-root-ca.crt", "m1"]);
        // A write answered with the object's metadata only (the hub's writes ask for that).
        let patched = cms
            .patch_metadata(
                "m1",
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({"metadata": {"labels": {"tier": "web"}}})),
            )
            .await
            .unwrap();
        assert_eq!(
            patched.types.as_ref().unwrap().kind,
            "PartialObjectMetadata"
        );
        assert_eq!(
            patched.labels().get("tier").map(String::as_str),
            Some("web")
        );
        assert_eq!(cms.get("m1").await.unwrap().labels()["tier"], "web");

        let metadata: Api<PartialObjectMeta<ConfigMap>> =
            Api::namespaced(client.clone(), "default");
        let mut meta = watcher(
            metadata,
            watcher::Config::default().fields("metadata.name=m1"),
        )
        .applied_objects()
        .boxed();
        let first = meta.try_next().await.unwrap().unwrap();
        assert_eq!(first.metadata.name.as_deref(), Some("m1"));

        let mut streaming =
            watcher(cms.clone(), watcher::Config::default().streaming_lists()).boxed();
        let mut init_done = false;
        while let Some(event) = streaming.try_next().await.unwrap() {
            if matches!(event, watcher::Event::InitDone) {
                init_done = true;
                break;
            }
        }
        assert!(
            init_done,
            "a streaming list ends its initial events with a bookmark"
        );
        cms.create(&PostParams::default(), &cm("m2", &[]))
            .await
            .unwrap();
        loop {
            if let Some(watcher::Event::Apply(cm)) = streaming.try_next().await.unwrap() {
                assert_eq!(cm.name_any(), "m2");
                break;
            }
        }
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn namespace_deletion_empties_the_namespace_then_removes_it() {
    tokio::time::timeout(TIMEOUT, async {
        let (_server, client) = server().await;
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let ns = namespaces
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": "doomed"}})).unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(ns.status.unwrap().phase.as_deref(), Some("Active"));
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "doomed");
        cms.create(&PostParams::default(), &cm("inside", &[]))
            .await
            .unwrap();
        let mut held = cm("held", &[]);
        held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
        cms.create(&PostParams::default(), &held).await.unwrap();

        namespaces
            .delete("doomed", &DeleteParams::default())
            .await
            .unwrap();
        let terminating = namespaces.get("doomed").await.unwrap();
        assert_eq!(
            terminating.status.unwrap().phase.as_deref(),
            Some("Terminating")
        );
        let status = api_error(
            cms.create(&PostParams::default(), &cm("late", &[]))
                .await
                .unwrap_err(),
        );
        assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
        assert!(
            eventually(TIMEOUT, || async {
                cms.get_opt("inside").await.unwrap().is_none()
            })
            .await
        );
        // The finalizer holds its object, and so the namespace.
        let held = cms.get("held").await.unwrap();
        assert!(held.metadata.deletion_timestamp.is_some());
        assert!(namespaces.get_opt("doomed").await.unwrap().is_some());
        // Adding a finalizer to a terminating object is refused.
        let status = api_error(
            cms.patch(
                "held",
                &PatchParams::default(),
                &Patch::Merge(
                    json!({"metadata": {"finalizers": ["example.com/hold", "x.io/more"]}}),
                ),
            )
            .await
            .unwrap_err(),
        );
        assert_eq!(status.code, 422);
        cms.patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
        assert!(
            eventually(TIMEOUT, || async {
                namespaces.get_opt("doomed").await.unwrap().is_none()
            })
            .await,
            "the namespace goes once it is empty"
        );
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn dry_run_writes_store_nothing() {
    tokio::time::timeout(TIMEOUT, async {
        let (_server, client) = server().await;
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        let dry = PostParams {
            dry_run: true,
            ..Default::default()
        };
        let would_be = cms.create(&dry, &cm("dry", &[("a", "1")])).await.unwrap();
        assert_eq!(would_be.name_any(), "dry");
        assert!(would_be.uid().is_some());
        assert!(
            cms.get_opt("dry").await.unwrap().is_none(),
            "a dry-run create stores nothing"
        );

        let real = cms
            .create(&PostParams::default(), &cm("real", &[("a", "1")]))
            .await
            .unwrap();
        let patched = cms
            .patch(
                "real",
                &PatchParams::default().dry_run(),
                &Patch::Merge(json!({"data": {"a": "2"}})),
            )
            .await
            .unwrap();
        assert_eq!(patched.data.as_ref().unwrap()["a"], "2");
        let stored = cms.get("real").await.unwrap();
        assert_eq!(stored.data.as_ref().unwrap()["a"], "1");
        assert_eq!(stored.resource_version(), real.resource_version());
        cms.delete(
            "real",
            &DeleteParams {
                dry_run: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
        assert!(
            cms.get_opt("real").await.unwrap().is_some(),
            "a dry-run delete deletes nothing"
        );
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn reviews_and_service_account_tokens() {
    tokio::time::timeout(TIMEOUT, async {
        let (server, client) = server().await;
        let review = json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "default"}},
        });
        let request = http::Request::post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
            .header("Content-Type", "application/json")
            .body(serde_json::to_vec(&review).unwrap())
            .unwrap();
        let answer: Value = client.request(request).await.unwrap();
        assert_eq!(answer["status"]["allowed"], true);
        assert_eq!(answer["spec"]["resourceAttributes"]["verb"], "get");

        let whoami = http::Request::post("/apis/authentication.k8s.io/v1/selfsubjectreviews")
            .header("Content-Type", "application/json")
            .body(br#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#.to_vec())
            .unwrap();
        let answer: Value = client.request(whoami).await.unwrap();
        assert_eq!(answer["status"]["userInfo"]["username"], "atoll-admin");

        let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> = Api::namespaced(client.clone(), "default");
        accounts
            .create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "builder"}})).unwrap())
            .await
            .unwrap();
        let token_request = http::Request::post("/api/v1/namespaces/default/serviceaccounts/builder/token")
            .header("Content-Type", "application/json")
            .body(br#"{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}"#.to_vec())
            .unwrap();
        let answer: Value = client.request(token_request).await.unwrap();
        let token = answer["status"]["token"].as_str().unwrap().to_owned();
        assert!(answer["status"]["expirationTimestamp"].is_string());

        // The issued token authenticates as the service account.
        let kubeconfig = Kubeconfig::read_from(server.server.kubeconfig_path()).unwrap();
        let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await.unwrap();
        config.auth_info.token = Some(token.into());
        let as_builder = Client::try_from(config).unwrap();
        let whoami = http::Request::post("/apis/authentication.k8s.io/v1/selfsubjectreviews")
            .header("Content-Type", "application/json")
            .body(br#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#.to_vec())
            .unwrap();
        let answer: Value = as_builder.request(whoami).await.unwrap();
        assert_eq!(answer["status"]["userInfo"]["username"], "system:serviceaccount:default:builder");

        let missing = http::Request::post("/api/v1/namespaces/default/serviceaccounts/nobody/token")
            .header("Content-Type", "application/json")
            .body(b"{}".to_vec())
            .unwrap();
        let err = api_error(client.request::<Value>(missing).await.unwrap_err());
        assert_eq!(err.code, 404);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn unknown_fields_warn_or_fail_by_field_validation() {
    tokio::time::timeout(TIMEOUT, async {
        let (_server, client) = server().await;
        install_widget_crd(&client).await;
        let body = serde_json::to_vec(&json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w"}, "spec": {"size": 1, "bogus": true},
        }))
        .unwrap();
        let post = |validation: &str| {
            http::Request::post(format!(
                "/apis/example.com/v1/namespaces/default/widgets?fieldValidation={validation}"
            ))
            .header("Content-Type", "application/json")
            .body(kube::client::Body::from(body.clone()))
            .unwrap()
        };
        let response = client.send(post("Warn")).await.unwrap();
        assert_eq!(response.status(), 201);
        let warning = response
            .headers()
            .get("Warning")
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned();
        assert_eq!(warning, r#"299 - "unknown field \"spec.bogus\"""#);
        let widgets: Api<Widget> = Api::namespaced(client.clone(), "default");
        widgets.delete("w", &DeleteParams::default()).await.unwrap();
        let strict = client.send(post("Strict")).await.unwrap();
        assert_eq!(strict.status(), 400);
        assert!(
            widgets.get_opt("w").await.unwrap().is_none(),
            "a strict failure stores nothing"
        );
        let ignore = client.send(post("Ignore")).await.unwrap();
        assert_eq!(ignore.status(), 201);
        assert!(ignore.headers().get("Warning").is_none());
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn strategic_merge_patch_merges_lists_by_key() {
    tokio::time::timeout(TIMEOUT, async {
        let (_server, client) = server().await;
        let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
            Api::namespaced(client.clone(), "default");
        let deployment = serde_json::from_value(json!({
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [
                        {"name": "nginx", "image": "nginx:1", "env": [{"name": "A", "value": "1"}]},
                        {"name": "sidecar", "image": "busybox:1"}
                    ]}
                }
            }
        }))
        .unwrap();
        deployments
            .create(&PostParams::default(), &deployment)
            .await
            .unwrap();
        // What `kubectl set image deployment/web nginx=nginx:2` sends.
        let patch = json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "nginx"}, {"name": "sidecar"}],
            "containers": [{"name": "nginx", "image": "nginx:2"}]
        }}}});
        let patched = deployments
            .patch("web", &PatchParams::default(), &Patch::Strategic(patch))
            .await
            .unwrap();
        let containers = patched.spec.unwrap().template.spec.unwrap().containers;
        let images: Vec<_> = containers
            .iter()
            .map(|c| (c.name.as_str(), c.image.as_deref().unwrap()))
            .collect();
        assert_eq!(images, [("nginx", "nginx:2"), ("sidecar", "busybox:1")]);
        assert_eq!(
            containers[0].env.as_ref().unwrap()[0].name,
            "A",
            "untouched fields of a merged element stay"
        );
        assert_eq!(patched.metadata.generation, Some(2));
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn tables_for_kubectl_get() {
    tokio::time::timeout(TIMEOUT, async {
        let (_server, client) = server().await;
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        let mut labelled = cm("tabled", &[("a", "1"), ("b", "2")]);
        labelled.metadata.labels = Some([("app".to_string(), "demo".to_string())].into());
        cms.create(&PostParams::default(), &labelled).await.unwrap();
        let request = http::Request::get("/api/v1/configmaps?limit=500&labelSelector=app%3Ddemo")
            .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")
            .body(Vec::new())
            .unwrap();
        let table: Value = client.request(request).await.unwrap();
        assert_eq!(table["kind"], "Table");
        let columns: Vec<&str> = table["columnDefinitions"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(columns, ["Name", "Data", "Age"]);
        let row = &table["rows"][0];
        assert_eq!(row["cells"][0], "tabled");
        assert_eq!(row["cells"][1], 2);
        assert_eq!(row["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(row["object"]["metadata"]["namespace"], "default", "kubectl get -A reads the namespace here");
        assert_eq!(row["object"]["metadata"]["labels"]["app"], "demo", "--show-labels reads the labels here");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn protobuf_bodies_from_kubectl_and_helm() {
    tokio::time::timeout(TIMEOUT, async {
        let (_server, client) = server().await;
        let post = |path: &str, body: &[u8]| {
            http::Request::post(path.to_owned())
                .header("Content-Type", "application/vnd.kubernetes.protobuf")
                .header(
                    "Accept",
                    "application/vnd.kubernetes.protobuf,application/json",
                )
                .body(body.to_vec())
                .unwrap()
        };
        // Bodies captured from kubectl 1.35 and helm 4.
        let configmap =
            include_bytes!("../apiserver/src/protobuf/testdata/kubectl-create-configmap.pb");
        let created: Value = client
            .request(post("/api/v1/namespaces/default/configmaps", configmap))
            .await
            .unwrap();
        assert_eq!(created["kind"], "ConfigMap");
        let name = created["metadata"]["name"].as_str().unwrap().to_owned();
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        assert!(cms.get(&name).await.unwrap().data.is_some());

        let release = include_bytes!("../apiserver/src/protobuf/testdata/helm-release-secret.pb");
        let secret: Value = client
            .request(post("/api/v1/namespaces/default/secrets", release))
            .await
            .unwrap();
        assert_eq!(secret["type"], "helm.sh/release.v1");
        assert_eq!(secret["metadata"]["labels"]["owner"], "helm");

        let can_i =
            include_bytes!("../apiserver/src/protobuf/testdata/kubectl-auth-can-i-get-pods.pb");
        let review: Value = client
            .request(post(
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                can_i,
            ))
            .await
            .unwrap();
        assert_eq!(review["status"]["allowed"], true);

        // helm's uninstall deletes with a protobuf DeleteOptions body.
        let secret_name = secret["metadata"]["name"].as_str().unwrap();
        let delete_options =
            include_bytes!("../apiserver/src/protobuf/testdata/helm-delete-options.pb");
        let delete =
            http::Request::delete(format!("/api/v1/namespaces/default/secrets/{secret_name}"))
                .header("Content-Type", "application/vnd.kubernetes.protobuf")
                .body(delete_options.to_vec())
                .unwrap();
        let status: Value = client.request(delete).await.unwrap();
        assert_eq!(status["status"], "Success");

        let garbage = client
            .request::<Value>(post(
                "/api/v1/namespaces/default/configmaps",
                b"k8s\0\x0a\xff",
            ))
            .await;
        assert_eq!(api_error(garbage.unwrap_err()).code, 400);
    })
    .await
    .unwrap();
}

/// kube-rs with a client certificate: a key and a CertificateSigningRequest made here, approved
/// and signed by the cluster (signer `kubernetes.io/kube-apiserver-client`), then a client whose
/// kubeconfig carries the certificate. It is the user the certificate names, and gets what RBAC
/// binds that user to: reads in one namespace, a 403 in kube-apiserver's words elsewhere.
#[tokio::test]
async fn a_client_certificate_the_cluster_signed_authenticates_and_rbac_decides() {
    use base64::Engine as _;
    use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
    tokio::time::timeout(TIMEOUT, async {
        let (server, admin) = server().await;
        let key = rcgen::KeyPair::generate().unwrap();
        let subject = atoll_pki::client::Subject {
            user: "dana".into(),
            groups: vec!["ops".into()],
        };
        let request = atoll_pki::client::request(&key, &subject).unwrap();
        let encode = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
        let csrs: Api<CertificateSigningRequest> = Api::all(admin.clone());
        let csr = serde_json::from_value(json!({
            "metadata": {"name": "dana"},
            "spec": {"request": encode(&request), "signerName": "kubernetes.io/kube-apiserver-client",
                     "usages": ["client auth"], "expirationSeconds": 3600},
        }))
        .unwrap();
        csrs.create(&PostParams::default(), &csr).await.unwrap();
        let mut approved = csrs.get("dana").await.unwrap();
        approved.status.get_or_insert_with(Default::default).conditions = Some(vec![
            serde_json::from_value(json!({"type": "Approved", "status": "True", "reason": "Test"})).unwrap(),
        ]);
        csrs.replace_subresource("approval", "dana", &PostParams::default(), &approved)
            .await
            .unwrap();
        let mut certificate = None;
        for _ in 0..100 {
            let signed = csrs.get("dana").await.unwrap().status.and_then(|s| s.certificate);
            if let Some(signed) = signed {
                certificate = Some(String::from_utf8(signed.0).unwrap());
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(certificate.is_some(), "the cluster signed the request");

        let mut kubeconfig = Kubeconfig::read_from(server.server.kubeconfig_path()).unwrap();
        let auth = kubeconfig.auth_infos[0].auth_info.as_mut().unwrap();
        auth.token = None;
        auth.client_certificate_data = Some(encode(certificate.as_deref().unwrap()));
        auth.client_key_data = Some(encode(&key.serialize_pem()).into());
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .unwrap();
        let dana = Client::try_from(config).unwrap();
        let whoami = http::Request::post("/apis/authentication.k8s.io/v1/selfsubjectreviews")
            .header("Content-Type", "application/json")
            .body(br#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#.to_vec())
            .unwrap();
        let answer: Value = dana.request(whoami).await.unwrap();
        assert_eq!(answer["status"]["userInfo"]["username"], "dana");
        assert_eq!(answer["status"]["userInfo"]["groups"], json!(["ops", "system:authenticated"]));

        let in_default: Api<ConfigMap> = Api::namespaced(dana.clone(), "default");
        let refused = api_error(in_default.list(&ListParams::default()).await.unwrap_err());
        assert_eq!(refused.code, 403);
        assert_eq!(
            refused.message,
            r#"configmaps is forbidden: User "dana" cannot list resource "configmaps" in API group "" in the namespace "default""#
        );
        let bindings: Api<k8s_openapi::api::rbac::v1::RoleBinding> = Api::namespaced(admin.clone(), "default");
        let binding = serde_json::from_value(json!({
            "metadata": {"name": "ops-view"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "ops"}],
        }))
        .unwrap();
        bindings.create(&PostParams::default(), &binding).await.unwrap();
        let listed = in_default.list(&ListParams::default()).await.unwrap();
        assert!(listed.items.iter().any(|c| c.name_any() == "kube-root-ca.crt"));
        let in_kube_system: Api<ConfigMap> = Api::namespaced(dana, "kube-system");
        assert_eq!(api_error(in_kube_system.list(&ListParams::default()).await.unwrap_err()).code, 403);
    })
    .await
    .unwrap();
}
