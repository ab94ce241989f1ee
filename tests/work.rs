//! Work end to end in one process (real gRPC over TLS, real HTTPS API servers): a Work on the hub
//! reaches its cluster's agent, which applies it in kind order by server-side apply, records it
//! in an AppliedWork and reports per-manifest status; a manifest taken out of the Work is
//! deleted; a deleted Work takes its resources with it (or leaves them, under Orphan) before the
//! hub lets it go; a bad manifest fails alone.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use atoll_api::work::{AppliedWork, Work};
use atoll_hub::Leases;
use atoll_tests::eventually;
use atoll_tests::in_process::{Member, TestHub, WAIT};
use futures::StreamExt as _;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

fn work(name: &str, cluster: &str, manifests: Vec<Value>) -> Work {
    serde_json::from_value(json!({
        "apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "Work",
        "metadata": {"name": name, "namespace": cluster},
        "spec": {"workload": {"manifests": manifests}}
    }))
    .unwrap()
}

fn crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]}
    })
}

/// The manifests of the issue's proof, the custom resource and Deployment before what they need,
/// to show the agent orders them.
fn manifests() -> Vec<Value> {
    vec![
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "shop"}, "spec": {"size": 3}}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "shop"}, "data": {"color": "blue"}}),
        crd(),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}),
    ]
}

async fn work_condition(works: &Api<Work>, name: &str, type_: &str, status: &str) -> Work {
    let mut last = None;
    let ok = eventually(WAIT, || {
        let works = works.clone();
        let name = name.to_owned();
        let type_ = type_.to_owned();
        let status = status.to_owned();
        async move {
            works.get_opt(&name).await.unwrap().is_some_and(|w| {
                w.status.as_ref().is_some_and(|s| {
                    s.conditions
                        .iter()
                        .any(|c| c.type_ == type_ && c.status == status)
                })
            })
        }
    })
    .await;
    if let Ok(Some(w)) = works.get_opt(name).await {
        last = Some(w);
    }
    let work = last.unwrap_or_else(|| panic!("Work {name} is gone"));
    assert!(
        ok,
        "Work {name}: {type_} never became {status}: {:#?}",
        work.status
    );
    work
}

async fn start() -> (TestHub, Member) {
    let _ = tracing_subscriber::fmt()
        .with_env_filter("info")
        .with_test_writer()
        .try_init();
    let hub = TestHub::start(true, Leases::default()).await;
    let east = Member::start(&hub, "east").await;
    hub.wait_condition("east", "ControlPlaneHealthy", "True", None)
        .await;
    (hub, east)
}

#[tokio::test]
async fn a_work_lands_in_kind_order_reports_status_and_cleans_up_after_itself() {
    let (hub, mut east) = start().await;
    let works: Api<Work> = Api::namespaced(hub.client.clone(), "east");
    works
        .create(&PostParams::default(), &work("shop", "east", manifests()))
        .await
        .unwrap();

    let done = work_condition(&works, "shop", "Applied", "True").await;
    let status = done.status.unwrap();
    assert_eq!(status.manifest_conditions.len(), 5);
    for (i, m) in status.manifest_conditions.iter().enumerate() {
        assert_eq!(m.identifier.ordinal, i as i32);
        assert!(
            m.conditions
                .iter()
                .any(|c| c.type_ == "Applied" && c.status == "True"),
            "{m:?}"
        );
    }
    assert_eq!(
        status.manifest_conditions[1].identifier.resource,
        "deployments"
    );
    assert_eq!(status.manifest_conditions[1].identifier.namespace, "shop");
    assert!(
        status
            .conditions
            .iter()
            .any(|c| c.type_ == "Available" && c.status == "True")
    );
    assert!(
        done.metadata
            .finalizers
            .unwrap_or_default()
            .iter()
            .any(|f| f == "multicluster.x-k8s.io/work-cleanup"),
        "the hub holds the Work until its cluster cleans up"
    );

    // Everything is in the member cluster, written by the agent's field manager.
    let configmaps: Api<ConfigMap> = Api::namespaced(east.client.clone(), "shop");
    let cm = configmaps.get("settings").await.unwrap();
    assert_eq!(cm.data.unwrap()["color"], "blue");
    assert!(
        cm.metadata
            .managed_fields
            .unwrap()
            .iter()
            .any(|f| f.manager.as_deref() == Some("atoll-work-agent"))
    );
    let deployments: Api<Deployment> = Api::namespaced(east.client.clone(), "shop");
    assert_eq!(
        deployments.get("web").await.unwrap().spec.unwrap().replicas,
        Some(2)
    );
    let widget = ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Widget"));
    let widgets: Api<DynamicObject> = Api::namespaced_with(east.client.clone(), "shop", &widget);
    assert_eq!(widgets.get("w").await.unwrap().data["spec"]["size"], 3);
    let applied: Api<AppliedWork> = Api::all(east.client.clone());
    let record = applied.get("shop").await.unwrap();
    assert_eq!(record.spec.work_namespace, "east");
    assert_eq!(record.status.unwrap().applied_resources.len(), 5);

    // A changed Work: the ConfigMap changes, the Deployment is taken out and so deleted.
    let mut changed = manifests();
    changed.remove(1);
    changed[1]["data"]["color"] = json!("green");
    let patch = json!({"spec": {"workload": {"manifests": changed}}});
    works
        .patch("shop", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert!(
        eventually(WAIT, || async {
            configmaps.get("settings").await.unwrap().data.unwrap()["color"] == "green"
                && deployments.get_opt("web").await.unwrap().is_none()
        })
        .await,
        "the update did not land"
    );
    let updated = work_condition(&works, "shop", "Applied", "True").await;
    assert_eq!(updated.status.unwrap().manifest_conditions.len(), 4);

    // Deleting the Work deletes what it applied, then the hub lets it go.
    works
        .delete("shop", &DeleteParams::default())
        .await
        .unwrap();
    assert!(
        eventually(WAIT, || async {
            works.get_opt("shop").await.unwrap().is_none()
        })
        .await,
        "the Work stayed"
    );
    let namespaces: Api<Namespace> = Api::all(east.client.clone());
    assert!(
        eventually(WAIT, || async {
            namespaces.get_opt("shop").await.unwrap().is_none()
                && applied.get_opt("shop").await.unwrap().is_none()
        })
        .await,
        "the Work's resources stayed"
    );
    east.stop_agent().await;
}

#[tokio::test]
async fn one_bad_manifest_fails_alone_and_says_which() {
    let (hub, mut east) = start().await;
    let works: Api<Work> = Api::namespaced(hub.client.clone(), "east");
    let manifests = vec![
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "good", "namespace": "default"}, "data": {"a": "1"}}),
        json!({"apiVersion": "v1", "metadata": {"name": "no-kind"}}),
        json!({"apiVersion": "example.com/v9", "kind": "Gadget", "metadata": {"name": "g", "namespace": "default"}}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "bad", "namespace": "default"}, "spec": {"replicas": "many"}}),
    ];
    // A manifest that is not an object never reaches a cluster: the hub's API refuses the Work.
    let mut with_string = manifests.clone();
    with_string.push(json!("just a string"));
    let err = works
        .create(&PostParams::default(), &work("mixed", "east", with_string))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(e) if e.code == 422 && e.message.contains("spec.workload.manifests[4] in body must be of type object")),
        "{err:?}"
    );
    works
        .create(&PostParams::default(), &work("mixed", "east", manifests))
        .await
        .unwrap();
    let done = work_condition(&works, "mixed", "Applied", "False").await;
    let status = done.status.unwrap();
    let applied = |i: usize| {
        status.manifest_conditions[i]
            .conditions
            .iter()
            .find(|c| c.type_ == "Applied")
            .unwrap()
            .clone()
    };
    assert_eq!(applied(0).status, "True");
    assert_eq!(
        (applied(1).reason.as_str(), applied(1).message.as_str()),
        ("InvalidManifest", "manifest 1 has no kind")
    );
    assert_eq!(applied(2).reason, "KindNotServed");
    assert!(
        applied(2)
            .message
            .contains("manifest 2 (Gadget example.com/v9 g)"),
        "{}",
        applied(2).message
    );
    assert!(
        applied(3)
            .message
            .starts_with("manifest 3 (Deployment apps/v1 default/bad)"),
        "{}",
        applied(3).message
    );
    let summary = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Applied")
        .unwrap();
    assert!(
        summary.message.starts_with("3 of 4 manifests failed"),
        "{}",
        summary.message
    );
    let configmaps: Api<ConfigMap> = Api::namespaced(east.client.clone(), "default");
    assert!(
        configmaps.get_opt("good").await.unwrap().is_some(),
        "the good manifest was not applied"
    );
    east.stop_agent().await;
}

#[tokio::test]
async fn an_orphaning_work_leaves_its_resources_and_a_work_of_a_removed_cluster_goes() {
    let (hub, mut east) = start().await;
    let works: Api<Work> = Api::namespaced(hub.client.clone(), "east");
    let mut orphan = work(
        "keep",
        "east",
        vec![
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kept", "namespace": "default"}}),
        ],
    );
    orphan.spec.delete_option =
        serde_json::from_value(json!({"propagationPolicy": "Orphan"})).unwrap();
    works.create(&PostParams::default(), &orphan).await.unwrap();
    work_condition(&works, "keep", "Applied", "True").await;
    works
        .delete("keep", &DeleteParams::default())
        .await
        .unwrap();
    assert!(
        eventually(WAIT, || async {
            works.get_opt("keep").await.unwrap().is_none()
        })
        .await
    );
    let configmaps: Api<ConfigMap> = Api::namespaced(east.client.clone(), "default");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        configmaps.get_opt("kept").await.unwrap().is_some(),
        "an orphaned resource was deleted"
    );

    // With the agent gone, a force-delete annotation lets a deleting Work go.
    works
        .create(&PostParams::default(), &work("stuck", "east", vec![json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s", "namespace": "default"}})]))
        .await
        .unwrap();
    work_condition(&works, "stuck", "Applied", "True").await;
    east.stop_agent().await;
    works
        .delete("stuck", &DeleteParams::default())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        works.get_opt("stuck").await.unwrap().is_some(),
        "the Work went while its cluster might still clean up"
    );
    let patch = json!({"metadata": {"annotations": {"atoll.dev/force-delete": "true"}}});
    works
        .patch("stuck", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert!(
        eventually(WAIT, || async {
            works.get_opt("stuck").await.unwrap().is_none()
        })
        .await,
        "force-delete did not let it go"
    );
}

fn placement(
    name: &str,
    selector: Value,
    strategy: Value,
    manifests: Vec<Value>,
) -> atoll_api::placement::WorkPlacement {
    serde_json::from_value(json!({
        "apiVersion": "atoll.dev/v1alpha1", "kind": "WorkPlacement",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"manifests": manifests, "clusterSelector": selector, "rolloutStrategy": strategy}
    }))
    .unwrap()
}

fn configmap(value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "greeting", "namespace": "default"}, "data": {"value": value}})
}

async fn greeting(member: &Member) -> Option<String> {
    let api: Api<ConfigMap> = Api::namespaced(member.client.clone(), "default");
    api.get_opt("greeting")
        .await
        .unwrap()
        .and_then(|c| c.data)
        .and_then(|d| d.get("value").cloned())
}

async fn placement_condition(
    api: &Api<atoll_api::placement::WorkPlacement>,
    name: &str,
    type_: &str,
    reason: &str,
) -> atoll_api::placement::WorkPlacementStatus {
    let ok = eventually(WAIT, || async {
        api.get(name).await.unwrap().status.is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == type_ && c.reason == reason)
        })
    })
    .await;
    let status = api.get(name).await.unwrap().status.unwrap_or_default();
    assert!(
        ok,
        "WorkPlacement {name}: {type_} never had reason {reason}: {status:#?}"
    );
    status
}

/// Three members, east and west in ClusterSet prod.
async fn fleet_of_three() -> (TestHub, Vec<Member>) {
    let hub = TestHub::start(true, Leases::default()).await;
    let mut members = Vec::new();
    for name in ["east", "west", "north"] {
        members.push(Member::start(&hub, name).await);
    }
    for name in ["east", "west", "north"] {
        hub.wait_condition(name, "ControlPlaneHealthy", "True", None)
            .await;
    }
    hub.create_set("prod").await;
    hub.label("east", Some("prod")).await;
    hub.label("west", Some("prod")).await;
    hub.wait_condition("west", "ClusterSetMember", "True", None)
        .await;
    hub.wait_condition("east", "ClusterSetMember", "True", None)
        .await;
    (hub, members)
}

#[tokio::test]
async fn a_placement_follows_its_clusterset_and_reports_counts() {
    let (hub, mut members) = fleet_of_three().await;
    let api: Api<atoll_api::placement::WorkPlacement> =
        Api::namespaced(hub.client.clone(), "default");
    api.create(
        &PostParams::default(),
        &placement(
            "hello",
            json!({"clusterSet": "prod"}),
            json!({}),
            vec![configmap("hi")],
        ),
    )
    .await
    .unwrap();
    let status = placement_condition(&api, "hello", "Available", "AllAvailable").await;
    assert_eq!(
        (
            status.selected,
            status.applied,
            status.available,
            status.pending
        ),
        (2, 2, 2, 0)
    );
    assert_eq!(greeting(&members[0]).await.as_deref(), Some("hi"));
    assert_eq!(greeting(&members[1]).await.as_deref(), Some("hi"));
    assert_eq!(greeting(&members[2]).await, None, "north is not in prod");
    let stamped: Api<Work> = Api::namespaced(hub.client.clone(), "east");
    assert!(stamped.get_opt("default.hello").await.unwrap().is_some());

    // West leaves the set: its Work goes, and with it the ConfigMap.
    hub.label("west", None).await;
    assert!(
        eventually(WAIT, || async { greeting(&members[1]).await.is_none() }).await,
        "west kept the ConfigMap"
    );
    assert!(
        eventually(WAIT, || async {
            api.get("hello")
                .await
                .unwrap()
                .status
                .is_some_and(|s| s.selected == 1)
        })
        .await
    );
    // North joins the set: it gets the Work.
    hub.label("north", Some("prod")).await;
    assert!(
        eventually(WAIT, || async {
            greeting(&members[2]).await.as_deref() == Some("hi")
        })
        .await,
        "north never got it"
    );

    // Deleting the placement removes its Works everywhere, before the placement goes.
    let held = api.get("hello").await.unwrap().metadata.finalizers;
    assert_eq!(
        held,
        Some(vec![atoll_hub::placement::FINALIZER.to_owned()]),
        "the placement holds no finalizer"
    );
    api.delete("hello", &DeleteParams::default()).await.unwrap();
    assert!(
        eventually(WAIT, || async {
            greeting(&members[0]).await.is_none() && greeting(&members[2]).await.is_none()
        })
        .await,
        "the placement's resources stayed"
    );
    for m in &mut members {
        m.stop_agent().await;
    }
}

#[tokio::test]
async fn a_change_rolls_out_progressively_and_a_failure_halts_it() {
    let (hub, mut members) = fleet_of_three().await;
    let api: Api<atoll_api::placement::WorkPlacement> =
        Api::namespaced(hub.client.clone(), "default");
    let strategy = json!({"type": "Progressive", "maxConcurrency": 1, "minSuccessTime": "2s"});
    api.create(
        &PostParams::default(),
        &placement("roll", json!({}), strategy, vec![configmap("v1")]),
    )
    .await
    .unwrap();
    let status = placement_condition(&api, "roll", "Progressing", "RolloutComplete").await;
    assert_eq!(status.selected, 3);

    // A change reaches one cluster at a time: at some moment exactly one has v2.
    let patch = json!({"spec": {"manifests": [configmap("v2")]}});
    api.patch("roll", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let mut saw_one_at_a_time = false;
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let mut v2 = 0;
        for m in &members {
            if greeting(m).await.as_deref() == Some("v2") {
                v2 += 1;
            }
        }
        if v2 == 1 {
            saw_one_at_a_time = true;
        }
        if v2 == 3 || std::time::Instant::now() > deadline {
            assert_eq!(v2, 3, "the change did not reach every cluster");
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        saw_one_at_a_time,
        "the change did not roll out one cluster at a time"
    );
    placement_condition(&api, "roll", "Progressing", "RolloutComplete").await;

    // A manifest no cluster serves fails on the first cluster and halts the rollout there.
    let bad = json!({"apiVersion": "example.com/v1", "kind": "Nope", "metadata": {"name": "n", "namespace": "default"}});
    let patch = json!({"spec": {"manifests": [configmap("v3"), bad], "rolloutStrategy": {"type": "Progressive", "maxConcurrency": 1, "maxFailures": 0}}});
    api.patch("roll", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let status = placement_condition(&api, "roll", "Progressing", "RolloutHalted").await;
    assert_eq!(status.failed_clusters.len(), 1, "{status:#?}");
    assert_eq!(status.failed_clusters[0].name, "east");
    assert!(
        status.failed_clusters[0]
            .message
            .contains("manifest 1 (Nope example.com/v1"),
        "{}",
        status.failed_clusters[0].message
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        greeting(&members[1]).await.as_deref(),
        Some("v2"),
        "the halted rollout went on to west"
    );
    for m in &mut members {
        m.stop_agent().await;
    }
}

#[tokio::test]
async fn a_placement_that_selects_nothing_says_why() {
    let hub = TestHub::start(true, Leases::default()).await;
    let api: Api<atoll_api::placement::WorkPlacement> =
        Api::namespaced(hub.client.clone(), "default");
    api.create(
        &PostParams::default(),
        &placement(
            "ghost",
            json!({"clusterSet": "nowhere"}),
            json!({}),
            vec![configmap("x")],
        ),
    )
    .await
    .unwrap();
    let status = placement_condition(&api, "ghost", "Progressing", "ClusterSetNotFound").await;
    assert_eq!(status.selected, 0);
    api.create(
        &PostParams::default(),
        &placement(
            "empty",
            json!({"clusterNames": ["missing"]}),
            json!({}),
            vec![configmap("x")],
        ),
    )
    .await
    .unwrap();
    placement_condition(&api, "empty", "Progressing", "NoClustersSelected").await;
}

/// Rollout values that do not parse are refused by the CRD's schema, naming the field; under a
/// CRD without those rules (one installed before them) the hub says `InvalidSpec` and stamps
/// nothing, never reading the value as zero.
#[tokio::test]
async fn invalid_rollout_values_are_refused_or_reported_never_read_as_zero() {
    let (hub, mut east) = start().await;
    let api: Api<atoll_api::placement::WorkPlacement> =
        Api::namespaced(hub.client.clone(), "default");
    let bad = [
        (
            json!({"minSuccessTime": "5 minutes"}),
            "spec.rolloutStrategy.minSuccessTime",
        ),
        (
            json!({"progressDeadline": "10"}),
            "spec.rolloutStrategy.progressDeadline",
        ),
        (
            json!({"maxConcurrency": "lots"}),
            "spec.rolloutStrategy.maxConcurrency",
        ),
        (
            json!({"maxFailures": -1}),
            "spec.rolloutStrategy.maxFailures",
        ),
    ];
    for (strategy, field) in bad {
        let refused = api
            .create(
                &PostParams::default(),
                &placement("odd", json!({}), strategy.clone(), vec![configmap("x")]),
            )
            .await;
        match refused {
            Err(kube::Error::Api(e)) => {
                assert_eq!(e.code, 422, "{strategy}: {e:?}");
                assert!(e.message.contains(field), "{strategy}: {}", e.message);
            }
            other => panic!("{strategy} was not refused: {other:?}"),
        }
    }

    // A CRD from before the patterns: the hub itself refuses the value.
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(hub.client.clone());
    let mut crd =
        serde_json::to_value(crds.get("workplacements.atoll.dev").await.unwrap()).unwrap();
    let duration = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/rolloutStrategy/properties/minSuccessTime";
    let rules = crd
        .pointer_mut(duration)
        .and_then(Value::as_object_mut)
        .unwrap();
    assert!(
        rules.remove("pattern").is_some(),
        "the CRD has no pattern: {rules:?}"
    );
    crds.replace(
        "workplacements.atoll.dev",
        &PostParams::default(),
        &serde_json::from_value(crd).unwrap(),
    )
    .await
    .unwrap();
    let strategy = json!({"type": "Progressive", "minSuccessTime": "5 minutes"});
    assert!(
        eventually(WAIT, || async {
            api.create(
                &PostParams::default(),
                &placement("odd", json!({}), strategy.clone(), vec![configmap("x")]),
            )
            .await
            .is_ok()
        })
        .await,
        "the CRD still refuses the value"
    );
    let status = placement_condition(&api, "odd", "Progressing", "InvalidSpec").await;
    let message = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Progressing")
        .map(|c| c.message.clone())
        .unwrap_or_default();
    assert_eq!(
        message,
        "spec.rolloutStrategy.minSuccessTime: Invalid value: \"5 minutes\": a duration is whole hours, minutes and seconds, such as 90s, 5m or 1h30m"
    );
    assert_eq!(status.selected, 1);
    let works: Api<Work> = Api::namespaced(hub.client.clone(), "east");
    assert!(
        works.get_opt("default.odd").await.unwrap().is_none(),
        "a Work was stamped"
    );
    assert_eq!(greeting(&east).await, None);
    east.stop_agent().await;
}

#[tokio::test]
async fn update_strategies_field_conflicts_and_the_size_limit() {
    let (hub, mut east) = start().await;
    let configmaps: Api<ConfigMap> = Api::namespaced(east.client.clone(), "default");
    let cm = |name: &str, color: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}, "data": {"color": color}});
    // Objects the member's own people manage.
    for (name, manager) in [
        ("owned", "someone-else"),
        ("kept", "someone-else"),
        ("watched", "someone-else"),
    ] {
        configmaps
            .patch(
                name,
                &PatchParams::apply(manager),
                &Patch::Apply(cm(name, "red")),
            )
            .await
            .unwrap();
    }
    let works: Api<Work> = Api::namespaced(hub.client.clone(), "east");
    let mut w = work(
        "strategies",
        "east",
        vec![
            cm("owned", "blue"),
            cm("kept", "blue"),
            cm("watched", "blue"),
            cm("missing", "blue"),
            cm("fresh", "blue"),
        ],
    );
    let config = |name: &str, strategy: &str| json!({"resourceIdentifier": {"group": "", "resource": "configmaps", "name": name, "namespace": "default"}, "updateStrategy": {"type": strategy}});
    w.spec.manifest_configs = serde_json::from_value(json!([
        config("kept", "CreateOnly"),
        config("watched", "ReadOnly"),
        config("missing", "ReadOnly"),
        config("fresh", "CreateOnly"),
    ]))
    .unwrap();
    works.create(&PostParams::default(), &w).await.unwrap();
    let done = work_condition(&works, "strategies", "Applied", "False").await;
    let status = done.status.unwrap();
    let applied = |i: usize| {
        status.manifest_conditions[i]
            .conditions
            .iter()
            .find(|c| c.type_ == "Applied")
            .unwrap()
            .clone()
    };
    // Server-side apply does not take fields another manager owns: a conflict, named.
    assert_eq!(applied(0).reason, "ApplyConflict", "{:?}", applied(0));
    assert!(
        applied(0)
            .message
            .starts_with("manifest 0 (ConfigMap v1 default/owned)"),
        "{}",
        applied(0).message
    );
    assert!(
        applied(0).message.contains("conflict"),
        "{}",
        applied(0).message
    );
    // CreateOnly leaves an existing object alone and creates a missing one.
    assert_eq!(applied(1).status, "True");
    assert_eq!(
        configmaps.get("kept").await.unwrap().data.unwrap()["color"],
        "red"
    );
    assert_eq!(applied(4).status, "True");
    assert_eq!(
        configmaps.get("fresh").await.unwrap().data.unwrap()["color"],
        "blue"
    );
    // ReadOnly only observes.
    assert_eq!(applied(2).status, "True");
    assert_eq!(
        configmaps.get("watched").await.unwrap().data.unwrap()["color"],
        "red"
    );
    assert_eq!(applied(3).reason, "ResourceNotFound");
    assert!(configmaps.get_opt("missing").await.unwrap().is_none());
    assert_eq!(
        configmaps.get("owned").await.unwrap().data.unwrap()["color"],
        "red",
        "the conflict overwrote the field"
    );

    // A Work over the size limit is refused on the hub with the reason, and never reaches the cluster.
    let big = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big", "namespace": "default"}, "data": {"blob": "x".repeat(1_200_000)}});
    works
        .create(&PostParams::default(), &work("huge", "east", vec![big]))
        .await
        .unwrap();
    let refused = work_condition(&works, "huge", "Applied", "False").await;
    let condition = refused
        .status
        .unwrap()
        .conditions
        .into_iter()
        .find(|c| c.type_ == "Applied")
        .unwrap();
    assert_eq!(condition.reason, "WorkTooLarge");
    assert!(
        condition.message.contains("more than the limit of 1048576"),
        "{}",
        condition.message
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(configmaps.get_opt("big").await.unwrap().is_none());
    east.stop_agent().await;
}

#[tokio::test]
async fn drift_in_the_member_is_corrected_and_reported() {
    let (hub, mut east) = start().await;
    let works: Api<Work> = Api::namespaced(hub.client.clone(), "east");
    let manifest = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "drifty", "namespace": "default"}, "data": {"color": "blue"}});
    works
        .create(
            &PostParams::default(),
            &work("drift", "east", vec![manifest]),
        )
        .await
        .unwrap();
    work_condition(&works, "drift", "Applied", "True").await;
    let configmaps: Api<ConfigMap> = Api::namespaced(east.client.clone(), "default");
    // Someone edits the object in the member cluster.
    let edit = json!({"data": {"color": "red"}});
    configmaps
        .patch(
            "drifty",
            &PatchParams {
                field_manager: Some("intruder".into()),
                ..PatchParams::default()
            },
            &Patch::Merge(&edit),
        )
        .await
        .unwrap();
    // The agent's resync (1 s in these tests) puts it back and says so.
    assert!(
        eventually(WAIT, || async {
            configmaps.get("drifty").await.unwrap().data.unwrap()["color"] == "blue"
        })
        .await,
        "the drift was not corrected"
    );
    assert!(
        eventually(WAIT, || async {
            works.get("drift").await.unwrap().status.is_some_and(|s| {
                s.manifest_conditions[0]
                    .conditions
                    .iter()
                    .any(|c| c.type_ == "Applied" && c.reason == "DriftCorrected")
            })
        })
        .await,
        "the hub never heard of the correction"
    );
    east.stop_agent().await;
}

#[tokio::test]
async fn status_feedback_comes_back_to_the_hub_and_follows_the_object() {
    let (hub, mut east) = start().await;
    let works: Api<Work> = Api::namespaced(hub.client.clone(), "east");
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}});
    let mut w = work("feedback", "east", vec![deployment]);
    w.spec.manifest_configs = serde_json::from_value(json!([{
        "resourceIdentifier": {"group": "apps", "resource": "deployments", "name": "web", "namespace": "default"},
        "feedbackRules": [
            {"type": "WellKnownStatus"},
            {"type": "JSONPaths", "jsonPaths": [{"name": "wanted", "path": ".spec.replicas"}, {"name": "labels", "path": ".spec.selector.matchLabels"}]}
        ]
    }]))
    .unwrap();
    works.create(&PostParams::default(), &w).await.unwrap();
    let values = |w: &Work| -> Vec<(String, String)> {
        w.status
            .as_ref()
            .and_then(|s| s.manifest_conditions.first())
            .and_then(|m| m.status_feedback.clone())
            .map(|f| {
                f.values
                    .into_iter()
                    .map(|v| (v.name, serde_json::to_string(&v.field_value).unwrap()))
                    .collect()
            })
            .unwrap_or_default()
    };
    let done = work_condition(&works, "feedback", "Applied", "True").await;
    let got = values(&done);
    assert!(
        got.contains(&("wanted".into(), r#"{"type":"Integer","integer":2}"#.into())),
        "{got:?}"
    );
    assert!(
        got.contains(&(
            "labels".into(),
            r#"{"type":"JsonRaw","jsonRaw":"{\"app\":\"web\"}"}"#.into()
        )),
        "{got:?}"
    );
    // No controller runs in the member: the well-known replica counts appear once its status does.
    let deployments: Api<Deployment> = Api::namespaced(east.client.clone(), "default");
    let status = json!({"status": {"replicas": 2, "readyReplicas": 1, "availableReplicas": 1, "observedGeneration": 1}});
    deployments
        .patch_status("web", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    assert!(
        eventually(WAIT, || async {
            values(&works.get("feedback").await.unwrap()).contains(&(
                "ReadyReplicas".into(),
                r#"{"type":"Integer","integer":1}"#.into(),
            ))
        })
        .await,
        "the feedback did not follow the object: {:?}",
        values(&works.get("feedback").await.unwrap())
    );
    // One of two replicas available: the manifest and the Work are not Available.
    let w = works.get("feedback").await.unwrap();
    let available = w
        .status
        .unwrap()
        .conditions
        .into_iter()
        .find(|c| c.type_ == "Available")
        .unwrap();
    assert_eq!(available.status, "False");
    assert!(
        available.message.contains("1 of 2 replicas are available"),
        "{}",
        available.message
    );
    east.stop_agent().await;
}

#[tokio::test]
async fn an_agent_stopped_mid_apply_neither_misses_nor_repeats_work() {
    let (hub, mut east) = start().await;
    let works: Api<Work> = Api::namespaced(hub.client.clone(), "east");
    let many: Vec<Value> = (0..150)
        .map(|i| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{i:02}"), "namespace": "default"}, "data": {"i": i.to_string()}}))
        .collect();
    works
        .create(&PostParams::default(), &work("many", "east", many))
        .await
        .unwrap();
    let configmaps: Api<ConfigMap> = Api::namespaced(east.client.clone(), "default");
    // Stop the agent as soon as the first objects land.
    assert!(
        eventually(WAIT, || async {
            configmaps.get_opt("c00").await.unwrap().is_some()
        })
        .await
    );
    east.stop_agent().await;
    let before: Vec<(String, Option<String>)> = configmaps
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|c| {
            c.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with('c'))
        })
        .map(|c| (c.metadata.name.unwrap(), c.metadata.resource_version))
        .collect();
    assert!(
        before.len() < 150,
        "the agent finished before it was stopped: no restart mid-apply to test"
    );
    east.run_agent(&hub, None);
    let done = work_condition(&works, "many", "Applied", "True").await;
    assert_eq!(done.status.unwrap().manifest_conditions.len(), 150);
    // What was applied before the stop was not written again; nothing is missing.
    for (name, version) in &before {
        let now = configmaps.get(name).await.unwrap();
        assert_eq!(
            &now.metadata.resource_version, version,
            "{name} was written again"
        );
    }
    let applied: Api<AppliedWork> = Api::all(east.client.clone());
    assert_eq!(
        applied
            .get("many")
            .await
            .unwrap()
            .status
            .unwrap()
            .applied_resources
            .len(),
        150
    );
    east.stop_agent().await;
}

#[tokio::test]
async fn works_of_a_removed_cluster_do_not_hang() {
    let (hub, mut east) = start().await;
    let works: Api<Work> = Api::namespaced(hub.client.clone(), "east");
    works
        .create(
            &PostParams::default(),
            &work("w", "east", vec![configmap("x")]),
        )
        .await
        .unwrap();
    work_condition(&works, "w", "Applied", "True").await;
    east.stop_agent().await;
    atoll_hub::record::remove(hub.client.clone(), "east")
        .await
        .unwrap();
    let namespaces: Api<Namespace> = Api::all(hub.client.clone());
    assert!(
        eventually(WAIT, || async {
            namespaces.get_opt("east").await.unwrap().is_none()
        })
        .await,
        "the removed cluster's namespace (and its Work) hung"
    );
}

#[tokio::test]
async fn a_deleted_work_of_a_lost_cluster_goes_after_the_grace_period() {
    let hub = TestHub::start(
        true,
        Leases {
            lease: Duration::from_secs(1),
            missed: 2,
        },
    )
    .await;
    let mut east = Member::start(&hub, "east").await;
    hub.wait_condition("east", "ControlPlaneHealthy", "True", None)
        .await;
    let works: Api<Work> = Api::namespaced(hub.client.clone(), "east");
    works
        .create(
            &PostParams::default(),
            &work("w", "east", vec![configmap("x")]),
        )
        .await
        .unwrap();
    work_condition(&works, "w", "Applied", "True").await;
    east.stop_agent().await;
    works.delete("w", &DeleteParams::default()).await.unwrap();
    hub.wait_condition("east", "ControlPlaneHealthy", "Unknown", Some("AgentLost"))
        .await;
    assert!(
        works.get_opt("w").await.unwrap().is_some(),
        "the Work went before the grace period"
    );
    assert!(
        eventually(WAIT, || async {
            works.get_opt("w").await.unwrap().is_none()
        })
        .await,
        "the Work hung"
    );
    // The cluster keeps what it had: nobody was there to delete it.
    assert_eq!(greeting(&east).await.as_deref(), Some("x"));
}

#[tokio::test]
async fn a_cluster_that_was_away_converges_when_it_returns() {
    let (hub, mut east) = start().await;
    let works: Api<Work> = Api::namespaced(hub.client.clone(), "east");
    works
        .create(
            &PostParams::default(),
            &work("stays", "east", vec![configmap("v1")]),
        )
        .await
        .unwrap();
    let gone = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "leaving", "namespace": "default"}});
    works
        .create(&PostParams::default(), &work("goes", "east", vec![gone]))
        .await
        .unwrap();
    work_condition(&works, "stays", "Applied", "True").await;
    work_condition(&works, "goes", "Applied", "True").await;
    east.stop_agent().await;
    // While it is away: one Work changes, one is deleted, one is new.
    let patch = json!({"spec": {"workload": {"manifests": [configmap("v2")]}}});
    works
        .patch("stays", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    works
        .delete("goes", &DeleteParams::default())
        .await
        .unwrap();
    let fresh = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "arrived", "namespace": "default"}});
    works
        .create(&PostParams::default(), &work("new", "east", vec![fresh]))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        greeting(&east).await.as_deref(),
        Some("v1"),
        "the cluster changed while its agent was away"
    );
    east.run_agent(&hub, None);
    let configmaps: Api<ConfigMap> = Api::namespaced(east.client.clone(), "default");
    assert!(
        eventually(WAIT, || async {
            greeting(&east).await.as_deref() == Some("v2")
                && configmaps.get_opt("leaving").await.unwrap().is_none()
                && configmaps.get_opt("arrived").await.unwrap().is_some()
                && works.get_opt("goes").await.unwrap().is_none()
        })
        .await,
        "the returning cluster did not converge"
    );
    east.stop_agent().await;
}

#[tokio::test]
async fn a_change_to_an_applied_object_is_corrected_at_once_not_at_the_next_resync() {
    let hub = TestHub::start(true, Leases::default()).await;
    // A resync period far longer than the test: only the watch of applied objects can act.
    let mut east = Member::start_with_resync(&hub, "east", Duration::from_secs(3600)).await;
    hub.wait_condition("east", "ControlPlaneHealthy", "True", None)
        .await;
    let works: Api<Work> = Api::namespaced(hub.client.clone(), "east");
    works
        .create(
            &PostParams::default(),
            &work("watched", "east", vec![configmap("blue")]),
        )
        .await
        .unwrap();
    work_condition(&works, "watched", "Applied", "True").await;
    let configmaps: Api<ConfigMap> = Api::namespaced(east.client.clone(), "default");
    let applied = configmaps.get("greeting").await.unwrap();
    assert_eq!(
        applied
            .metadata
            .labels
            .unwrap_or_default()
            .get("atoll.dev/applied-by")
            .map(String::as_str),
        Some("atoll-work-agent")
    );
    let edit = json!({"data": {"value": "red"}});
    configmaps
        .patch(
            "greeting",
            &PatchParams {
                field_manager: Some("intruder".into()),
                ..PatchParams::default()
            },
            &Patch::Merge(&edit),
        )
        .await
        .unwrap();
    assert!(
        eventually(Duration::from_secs(10), || async {
            greeting(&east).await.as_deref() == Some("blue")
        })
        .await,
        "the change was not corrected"
    );
    assert!(
        eventually(WAIT, || async {
            works.get("watched").await.unwrap().status.is_some_and(|s| {
                s.manifest_conditions[0]
                    .conditions
                    .iter()
                    .any(|c| c.type_ == "Applied" && c.reason == "DriftCorrected")
            })
        })
        .await
    );
    east.stop_agent().await;
}

/// The Work's manifest condition of `type_`, as the hub shows it, for its first manifest.
fn manifest_condition(work: &Work, type_: &str) -> Option<(String, String, String)> {
    work.status
        .as_ref()?
        .manifest_conditions
        .first()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

#[tokio::test]
async fn a_rollout_in_the_member_shows_as_progressing_and_a_stuck_one_as_degraded() {
    let (hub, mut east) = start().await;
    let placements: Api<atoll_api::placement::WorkPlacement> =
        Api::namespaced(hub.client.clone(), "default");
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}});
    let strategy = json!({"type": "Progressive", "maxFailures": 0});
    placements
        .create(
            &PostParams::default(),
            &placement(
                "web",
                json!({"clusterNames": ["east"]}),
                strategy,
                vec![deployment],
            ),
        )
        .await
        .unwrap();
    let works: Api<Work> = Api::namespaced(hub.client.clone(), "east");
    // No controller runs in the member: once applied, the Deployment is settled, and without a
    // status it reports neither Progressing nor Degraded, only Available.
    let w = work_condition(&works, "default.web", "Progressing", "False").await;
    assert_eq!(manifest_condition(&w, "Degraded"), None);
    assert_eq!(
        manifest_condition(&w, "Available").map(|c| c.0).as_deref(),
        Some("True")
    );
    placement_condition(&placements, "web", "Progressing", "RolloutComplete").await;

    // The member's controller starts a rollout: the manifest and the Work are Progressing.
    let deployments: Api<Deployment> = Api::namespaced(east.client.clone(), "default");
    let set_status = |status: Value| {
        let deployments = deployments.clone();
        async move {
            deployments
                .patch_status(
                    "web",
                    &PatchParams::default(),
                    &Patch::Merge(&json!({"status": status})),
                )
                .await
                .unwrap();
        }
    };
    set_status(json!({"observedGeneration": 1, "replicas": 3, "updatedReplicas": 1, "availableReplicas": 1,
        "conditions": [{"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated", "message": "rolling"}]}))
    .await;
    let w = work_condition(&works, "default.web", "Progressing", "True").await;
    let (status, reason, message) = manifest_condition(&w, "Progressing").unwrap();
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "RolloutInProgress")
    );
    assert_eq!(
        message,
        "1 of 3 replicas updated, 1 available, 2 old replicas left"
    );
    let summary = w
        .status
        .as_ref()
        .unwrap()
        .conditions
        .iter()
        .find(|c| c.type_ == "Progressing")
        .unwrap();
    assert_eq!(summary.reason, "Applying");
    assert!(
        summary
            .message
            .contains("manifest 0 (Deployment apps/v1 default/web): 1 of 3 replicas updated"),
        "{}",
        summary.message
    );
    let status = placement_condition(&placements, "web", "Progressing", "RollingOut").await;
    assert_eq!((status.available, status.pending), (0, 1), "{status:#?}");

    // It runs past its progress deadline: Degraded, and the rollout halts naming the cluster.
    set_status(json!({"observedGeneration": 1, "replicas": 3, "updatedReplicas": 1, "availableReplicas": 1,
        "conditions": [{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
            "message": "ReplicaSet \"web-7d\" has timed out progressing."}]}))
    .await;
    let w = work_condition(&works, "default.web", "Degraded", "True").await;
    let (_, reason, message) = manifest_condition(&w, "Degraded").unwrap();
    assert_eq!(reason, "ProgressDeadlineExceeded");
    assert_eq!(message, "ReplicaSet \"web-7d\" has timed out progressing.");
    let status = placement_condition(&placements, "web", "Progressing", "RolloutHalted").await;
    assert_eq!(status.degraded, 1);
    assert_eq!(status.failed_clusters.len(), 1, "{status:#?}");
    let failed = &status.failed_clusters[0];
    assert_eq!(
        (failed.name.as_str(), failed.reason.as_str()),
        ("east", "Degraded")
    );
    assert!(
        failed
            .message
            .contains("ReplicaSet \"web-7d\" has timed out progressing."),
        "{}",
        failed.message
    );

    // The rollout finishes after all: neither progressing nor degraded, and the placement is done.
    set_status(json!({"observedGeneration": 1, "replicas": 3, "updatedReplicas": 3, "availableReplicas": 3,
        "conditions": [{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]}))
    .await;
    let w = work_condition(&works, "default.web", "Degraded", "False").await;
    assert_eq!(
        manifest_condition(&w, "Progressing").map(|c| (c.0, c.1)),
        Some(("False".to_owned(), "Completed".to_owned()))
    );
    let status = placement_condition(&placements, "web", "Progressing", "RolloutComplete").await;
    assert_eq!((status.available, status.degraded), (1, 0));
    assert!(status.failed_clusters.is_empty(), "{status:#?}");
    east.stop_agent().await;
}

#[tokio::test]
async fn selectively_orphaned_resources_stay_when_removed_or_when_their_work_goes() {
    let (hub, mut east) = start().await;
    let works: Api<Work> = Api::namespaced(hub.client.clone(), "east");
    let named = |name: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}, "data": {"owner": "transfer"}});
    let mut transfer = work("transfer", "east", vec![named("a"), named("b"), named("c")]);
    transfer.spec.delete_option = serde_json::from_value(json!({
        "propagationPolicy": "SelectivelyOrphan",
        "selectivelyOrphans": {"orphaningRules": [
            {"group": "", "resource": "configmaps", "namespace": "default", "name": "b"},
            {"group": "", "resource": "configmaps", "namespace": "default", "name": "c"}
        ]}
    }))
    .unwrap();
    works
        .create(&PostParams::default(), &transfer)
        .await
        .unwrap();
    work_condition(&works, "transfer", "Applied", "True").await;
    let configmaps: Api<ConfigMap> = Api::namespaced(east.client.clone(), "default");
    let present = |name: &'static str| {
        let configmaps = configmaps.clone();
        async move { configmaps.get_opt(name).await.unwrap().is_some() }
    };

    // b leaves the Work (for another Work to adopt it): it stays in the cluster.
    let patch = json!({"spec": {"workload": {"manifests": [named("a"), named("c")]}}});
    works
        .patch("transfer", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert!(
        eventually(WAIT, || async {
            works
                .get("transfer")
                .await
                .unwrap()
                .status
                .is_some_and(|s| s.manifest_conditions.len() == 2)
        })
        .await
    );
    let applied: Api<AppliedWork> = Api::all(east.client.clone());
    let recorded = applied
        .get("transfer")
        .await
        .unwrap()
        .status
        .unwrap()
        .applied_resources;
    assert_eq!(recorded.len(), 2, "b is no longer recorded: {recorded:?}");
    assert!(
        present("b").await,
        "an orphaned resource taken out of its Work was deleted"
    );

    // The Work goes: a goes with it, c stays.
    works
        .delete("transfer", &DeleteParams::default())
        .await
        .unwrap();
    assert!(
        eventually(WAIT, || async {
            works.get_opt("transfer").await.unwrap().is_none()
        })
        .await,
        "the Work did not go"
    );
    assert!(!present("a").await, "a was not orphaned and should be gone");
    assert!(present("c").await, "c was orphaned and should stay");
    assert!(present("b").await);
    east.stop_agent().await;
}

#[tokio::test]
async fn ignored_fields_stay_as_the_member_has_them() {
    let (hub, mut east) = start().await;
    let works: Api<Work> = Api::namespaced(hub.client.clone(), "east");
    let web = |image: &str| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default", "labels": {"tier": "front"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": image}]}}}})
    };
    let settings = |color: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "default", "labels": {"tier": "front"}}, "data": {"color": color}});
    let configs = json!([
        {"resourceIdentifier": {"group": "apps", "resource": "deployments", "namespace": "default", "name": "web"},
         "updateStrategy": {"type": "ServerSideApply", "serverSideApply": {"ignoreFields": [{"condition": "OnSpokePresent", "jsonPaths": [".spec.replicas"]}]}}},
        {"resourceIdentifier": {"group": "", "resource": "configmaps", "namespace": "default", "name": "settings"},
         "updateStrategy": {"type": "ServerSideApply", "serverSideApply": {"ignoreFields": [{"condition": "OnSpokeChange", "jsonPaths": [".data.color"]}]}}},
        {"resourceIdentifier": {"group": "", "resource": "configmaps", "namespace": "default", "name": "bad"},
         "updateStrategy": {"type": "ServerSideApply", "serverSideApply": {"ignoreFields": [{"jsonPaths": [".data[x]"]}]}}}
    ]);
    let bad = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bad", "namespace": "default"}});
    let mut w = work(
        "scaled",
        "east",
        vec![web("nginx:1"), settings("blue"), bad.clone()],
    );
    w.spec.manifest_configs = serde_json::from_value(configs).unwrap();
    works.create(&PostParams::default(), &w).await.unwrap();
    let done = work_condition(&works, "scaled", "Applied", "False").await;
    // The manifest with a malformed path fails alone, naming the path.
    let failed = &done.status.as_ref().unwrap().manifest_conditions[2].conditions[0];
    assert_eq!(failed.reason, "AppliedManifestSSAIgnoreFieldError");
    assert!(
        failed
            .message
            .contains(r#"".data[x]": [x] is not a list index"#),
        "{}",
        failed.message
    );
    let deployments: Api<Deployment> = Api::namespaced(east.client.clone(), "default");
    let configmaps: Api<ConfigMap> = Api::namespaced(east.client.clone(), "default");
    assert_eq!(
        deployments.get("web").await.unwrap().spec.unwrap().replicas,
        Some(2)
    );

    // An autoscaler sets replicas, someone edits the color; both also touch a label the Work sets,
    // which the agent takes back: once it has, it has applied again, and left what it ignores.
    let by_hand = PatchParams::default();
    deployments
        .patch(
            "web",
            &by_hand,
            &Patch::Merge(&json!({"metadata": {"labels": {"tier": "x"}}, "spec": {"replicas": 5}})),
        )
        .await
        .unwrap();
    configmaps
        .patch(
            "settings",
            &by_hand,
            &Patch::Merge(
                &json!({"metadata": {"labels": {"tier": "x"}}, "data": {"color": "green"}}),
            ),
        )
        .await
        .unwrap();
    let label = |labels: Option<std::collections::BTreeMap<String, String>>| {
        labels.and_then(|l| l.get("tier").cloned())
    };
    assert!(
        eventually(WAIT, || async {
            label(deployments.get("web").await.unwrap().metadata.labels).as_deref() == Some("front")
                && label(configmaps.get("settings").await.unwrap().metadata.labels).as_deref()
                    == Some("front")
        })
        .await,
        "the agent did not apply again after the change"
    );
    assert_eq!(
        deployments.get("web").await.unwrap().spec.unwrap().replicas,
        Some(5)
    );
    let color = || async {
        configmaps
            .get("settings")
            .await
            .unwrap()
            .data
            .unwrap()
            .get("color")
            .cloned()
    };
    assert_eq!(color().await.as_deref(), Some("green"));

    // The Work changes: a new image lands but replicas stay (OnSpokePresent); the same color
    // stays green, a new color from the Work wins (OnSpokeChange).
    let patch = json!({"spec": {"workload": {"manifests": [web("nginx:2"), settings("blue"), bad.clone()]}}});
    works
        .patch("scaled", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let image = || async {
        deployments
            .get("web")
            .await
            .unwrap()
            .spec
            .unwrap()
            .template
            .spec
            .unwrap()
            .containers[0]
            .image
            .clone()
    };
    assert!(
        eventually(WAIT, || async {
            image().await.as_deref() == Some("nginx:2")
        })
        .await
    );
    assert_eq!(
        deployments.get("web").await.unwrap().spec.unwrap().replicas,
        Some(5)
    );
    assert_eq!(color().await.as_deref(), Some("green"));
    let patch =
        json!({"spec": {"workload": {"manifests": [web("nginx:2"), settings("red"), bad]}}});
    works
        .patch("scaled", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert!(
        eventually(WAIT, || async { color().await.as_deref() == Some("red") }).await,
        "the Work's new color did not win: {:?}",
        color().await
    );
    assert_eq!(
        deployments.get("web").await.unwrap().spec.unwrap().replicas,
        Some(5)
    );
    east.stop_agent().await;
}

#[tokio::test]
async fn a_finished_work_goes_after_its_time_to_live() {
    let (hub, mut east) = start().await;
    let works: Api<Work> = Api::namespaced(hub.client.clone(), "east");
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "migrate", "namespace": "default"},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "migrate", "image": "busybox"}]}});
    let mut w = work("migration", "east", vec![pod, configmap("input")]);
    w.spec.delete_option = serde_json::from_value(json!({"ttlSecondsAfterFinished": 2})).unwrap();
    works.create(&PostParams::default(), &w).await.unwrap();
    // The pod has not run: the Work is not Complete, and it stays.
    let w = work_condition(&works, "migration", "Complete", "False").await;
    let complete = w
        .status
        .as_ref()
        .unwrap()
        .conditions
        .iter()
        .find(|c| c.type_ == "Complete")
        .unwrap();
    assert_eq!(complete.reason, "ManifestsNotComplete");
    assert!(
        complete
            .message
            .contains("manifest 0 (Pod v1 default/migrate): the pod has not finished"),
        "{}",
        complete.message
    );
    assert_eq!(
        manifest_condition(&w, "Complete").map(|c| c.1).as_deref(),
        Some("PodNotFinished")
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        works.get_opt("migration").await.unwrap().is_some(),
        "an unfinished Work went"
    );

    // The pod succeeds in the member: Complete, and two seconds later the Work and its resources go.
    let pods: Api<k8s_openapi::api::core::v1::Pod> =
        Api::namespaced(east.client.clone(), "default");
    pods.patch_status(
        "migrate",
        &PatchParams::default(),
        &Patch::Merge(&json!({"status": {"phase": "Succeeded"}})),
    )
    .await
    .unwrap();
    work_condition(&works, "migration", "Complete", "True").await;
    assert!(
        eventually(WAIT, || async {
            works.get_opt("migration").await.unwrap().is_none()
        })
        .await,
        "the finished Work did not go after its time to live"
    );
    assert!(
        pods.get_opt("migrate").await.unwrap().is_none(),
        "the Work's pod stayed"
    );
    assert_eq!(greeting(&east).await, None, "the Work's ConfigMap stayed");
    east.stop_agent().await;
}

/// Counts the Works of a cluster whose `Applied` condition is True for their current generation.
async fn applied_count(works: &Api<Work>) -> usize {
    works
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .iter()
        .filter(|w| {
            w.status.as_ref().is_some_and(|s| {
                s.conditions.iter().any(|c| {
                    c.type_ == "Applied"
                        && c.status == "True"
                        && c.observed_generation == w.metadata.generation
                })
            })
        })
        .count()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_with_thousands_of_works_reconnects_and_converges() {
    // Far more Works than the hub's stream buffer (256): the hub used to refuse every reconnect
    // of an agent with more than that with RESOURCE_EXHAUSTED, and the cluster never converged.
    const COUNT: usize = 2_000;
    let hub = TestHub::start(true, Leases::default()).await;
    // Resyncs only when asked: the test is about the reconnect, not the periodic re-apply.
    let mut east = Member::start_with_resync(&hub, "east", Duration::from_secs(3600)).await;
    hub.wait_condition("east", "ControlPlaneHealthy", "True", None)
        .await;
    let works: Api<Work> = Api::namespaced(hub.client.clone(), "east");
    east.stop_agent().await;
    futures::stream::iter(0..COUNT)
        .map(|i| {
            let works = works.clone();
            async move {
                let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": format!("cm-{i}"), "namespace": "default"},
                    "data": {"v": "1"}});
                works
                    .create(
                        &PostParams::default(),
                        &work(&format!("w-{i}"), "east", vec![cm]),
                    )
                    .await
                    .unwrap();
            }
        })
        .buffer_unordered(8)
        .collect::<Vec<()>>()
        .await;
    east.run_agent(&hub, None);
    // Listing 2,000 Works with their status is not free: look once a second.
    let configmaps: Api<ConfigMap> = Api::namespaced(east.client.clone(), "default");
    let converged = |check: fn(usize, bool) -> bool| {
        let works = works.clone();
        let configmaps = configmaps.clone();
        async move {
            for _ in 0..180 {
                let changed = configmaps
                    .get_opt("cm-7")
                    .await
                    .unwrap()
                    .and_then(|c| c.data)
                    .and_then(|d| d.get("v").cloned())
                    .as_deref()
                    == Some("2");
                if check(applied_count(&works).await, changed) {
                    return true;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            false
        }
    };
    assert!(
        converged(|applied, _| applied == COUNT).await,
        "only {} of {COUNT} Works were applied after the agent connected",
        applied_count(&works).await
    );
    // A restart with all of them applied: the agent lists the 2,000 Works it has, and one
    // changed while it was away.
    east.stop_agent().await;
    let patch = json!({"spec": {"workload": {"manifests": [
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "cm-7", "namespace": "default"}, "data": {"v": "2"}}]}}});
    works
        .patch("w-7", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    east.run_agent(&hub, None);
    assert!(
        converged(|applied, changed| changed && applied == COUNT).await,
        "the restarted agent did not converge: {} of {COUNT} applied",
        applied_count(&works).await
    );
    east.stop_agent().await;
}

/// A Work changed while its agent re-applies it (resync, drift correction) ends at its last
/// version: a re-apply of the version before never lands after the new one, and never becomes
/// the version later resyncs apply.
#[tokio::test]
async fn changes_during_resyncs_end_at_the_last_version() {
    let hub = TestHub::start(true, Leases::default()).await;
    // Resyncs far more often than a real agent, so that changes arrive while one is under way.
    let mut east = Member::start_with_resync(&hub, "east", Duration::from_millis(20)).await;
    hub.wait_condition("east", "ControlPlaneHealthy", "True", None)
        .await;
    let works: Api<Work> = Api::namespaced(hub.client.clone(), "east");
    let manifests = |i: usize| {
        vec![
            configmap(&format!("v{i}")),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("extra-{i}"), "namespace": "default"}}),
        ]
    };
    works
        .create(&PostParams::default(), &work("busy", "east", manifests(0)))
        .await
        .unwrap();
    work_condition(&works, "busy", "Applied", "True").await;
    const CHANGES: usize = 40;
    for i in 1..=CHANGES {
        let patch = json!({"spec": {"workload": {"manifests": manifests(i)}}});
        works
            .patch("busy", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(7 * (i as u64 % 9))).await;
    }
    let generation = works.get("busy").await.unwrap().metadata.generation;
    let last = format!("v{CHANGES}");
    let applied: Api<AppliedWork> = Api::all(east.client.clone());
    let settled = eventually(WAIT, || async {
        let record = applied.get_opt("busy").await.unwrap();
        let recorded = record
            .and_then(|a| a.metadata.annotations)
            .and_then(|a| a.get("atoll.dev/work-generation").cloned());
        greeting(&east).await.as_deref() == Some(last.as_str())
            && recorded == generation.map(|g| g.to_string())
    })
    .await;
    assert!(settled, "east has {:?}, not {last}", greeting(&east).await);
    // And stays there through many more resyncs.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(greeting(&east).await.as_deref(), Some(last.as_str()));
    let extras: Api<ConfigMap> = Api::namespaced(east.client.clone(), "default");
    let names: Vec<String> = extras
        .list(&Default::default())
        .await
        .unwrap()
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .filter(|n| n.starts_with("extra-"))
        .collect();
    assert_eq!(
        names,
        vec![format!("extra-{CHANGES}")],
        "what earlier versions held stays"
    );
    let reported = work_condition(&works, "busy", "Applied", "True").await;
    let observed = reported
        .status
        .unwrap()
        .conditions
        .into_iter()
        .find(|c| c.type_ == "Applied")
        .and_then(|c| c.observed_generation);
    assert_eq!(observed, generation, "the hub was told of another version");
    east.stop_agent().await;
}

/// Objects that were in the member before a Work applied them, or that it only reads, stay when
/// the Work lets them go (taken out of it, or the Work deleted); what the Work made goes.
#[tokio::test]
async fn objects_a_work_found_in_the_cluster_stay_when_it_lets_them_go() {
    let (hub, mut east) = start().await;
    let configmaps: Api<ConfigMap> = Api::namespaced(east.client.clone(), "default");
    let cm = |name: &str, color: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}, "data": {"color": color}});
    for name in ["precious", "adopted", "watched"] {
        configmaps
            .patch(
                name,
                &PatchParams::apply("the-team"),
                &Patch::Apply(cm(name, "red")),
            )
            .await
            .unwrap();
    }
    let works: Api<Work> = Api::namespaced(hub.client.clone(), "east");
    let mut w = work(
        "takeover",
        "east",
        vec![
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "precious", "namespace": "default"}, "data": {"size": "large"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "adopted", "namespace": "default"}, "data": {"size": "small"}}),
            cm("watched", "blue"),
            cm("made", "blue"),
        ],
    );
    w.spec.manifest_configs = serde_json::from_value(json!([
        {"resourceIdentifier": {"group": "", "resource": "configmaps", "name": "watched", "namespace": "default"}, "updateStrategy": {"type": "ReadOnly"}}
    ]))
    .unwrap();
    works.create(&PostParams::default(), &w).await.unwrap();
    work_condition(&works, "takeover", "Applied", "True").await;
    assert_eq!(
        configmaps.get("precious").await.unwrap().data.unwrap()["size"],
        "large"
    );
    assert_eq!(
        configmaps.get("made").await.unwrap().data.unwrap()["color"],
        "blue"
    );

    // Taken out of the Work: the object it found stays, with what its team wrote.
    let patch = json!({"spec": {"workload": {"manifests": [
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "adopted", "namespace": "default"}, "data": {"size": "small"}}),
        cm("watched", "blue"),
        cm("made", "blue"),
    ]}}});
    works
        .patch("takeover", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let applied: Api<AppliedWork> = Api::all(east.client.clone());
    assert!(
        eventually(WAIT, || async {
            applied
                .get("takeover")
                .await
                .unwrap()
                .status
                .is_some_and(|s| {
                    s.applied_resources.len() == 3
                        && s.applied_resources
                            .iter()
                            .all(|r| r.identifier.name != "precious")
                })
        })
        .await,
        "the Work still holds precious"
    );
    let precious = configmaps.get_opt("precious").await.unwrap();
    assert_eq!(
        precious
            .and_then(|c| c.data)
            .map(|d| d["color"].clone())
            .as_deref(),
        Some("red"),
        "the object the Work found was deleted when taken out of it"
    );

    // The Work goes: what it made goes with it, what it found or only read stays.
    works
        .delete("takeover", &DeleteParams::default())
        .await
        .unwrap();
    assert!(
        eventually(WAIT, || async {
            works.get_opt("takeover").await.unwrap().is_none()
        })
        .await,
        "the Work was not let go"
    );
    assert!(
        configmaps.get_opt("made").await.unwrap().is_none(),
        "what the Work made stayed"
    );
    for name in ["adopted", "watched", "precious"] {
        let kept = configmaps.get_opt(name).await.unwrap();
        assert_eq!(
            kept.and_then(|c| c.data)
                .map(|d| d["color"].clone())
                .as_deref(),
            Some("red"),
            "{name} was deleted with the Work"
        );
    }
    east.stop_agent().await;
}

/// The agent refuses manifests in the namespaces and of the kinds it is told to deny (by default
/// the system namespaces and its own, which holds its credential), each failing alone with the
/// rule that refused it; the others are applied.
#[tokio::test]
async fn denied_namespaces_and_kinds_fail_alone_and_say_why() {
    let hub = TestHub::start(true, Leases::default()).await;
    let namespaces: Vec<String> = atoll_agent::deny::DEFAULT_DENIED_NAMESPACES
        .iter()
        .map(|n| (*n).to_owned())
        .collect();
    let deny = atoll_agent::deny::Deny::parse(
        &namespaces,
        &[
            "Secret".to_owned(),
            "ClusterRoleBinding.rbac.authorization.k8s.io".to_owned(),
        ],
    )
    .unwrap();
    let mut east = Member::start_with(&hub, "east", Duration::from_secs(1), deny).await;
    hub.wait_condition("east", "ControlPlaneHealthy", "True", None)
        .await;
    let works: Api<Work> = Api::namespaced(hub.client.clone(), "east");
    let manifests = vec![
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "sneaky", "namespace": "kube-system"}}),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "atoll-agent", "namespace": "atoll-system"}, "stringData": {"credential": "stolen"}}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-public", "labels": {"x": "y"}}}),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token", "namespace": "default"}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "everyone-admin"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "system:authenticated"}]}),
        configmap("allowed"),
    ];
    works
        .create(&PostParams::default(), &work("mixed", "east", manifests))
        .await
        .unwrap();
    let done = work_condition(&works, "mixed", "Applied", "False").await;
    let status = done.status.unwrap();
    let applied = |i: usize| {
        status.manifest_conditions[i]
            .conditions
            .iter()
            .find(|c| c.type_ == "Applied")
            .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
            .unwrap()
    };
    let expected = [
        "manifest 0 (ConfigMap v1 kube-system/sneaky): namespace kube-system is denied to Works on this cluster (the agent's --deny-namespaces)",
        "manifest 1 (Secret v1 atoll-system/atoll-agent): kind Secret is denied to Works on this cluster (the agent's --deny-kinds)",
        "manifest 2 (Namespace v1 kube-public): namespace kube-public is denied to Works on this cluster (the agent's --deny-namespaces)",
        "manifest 3 (Secret v1 default/token): kind Secret is denied to Works on this cluster (the agent's --deny-kinds)",
        "manifest 4 (ClusterRoleBinding rbac.authorization.k8s.io/v1 everyone-admin): kind ClusterRoleBinding.rbac.authorization.k8s.io is denied to Works on this cluster (the agent's --deny-kinds)",
    ];
    for (i, message) in expected.iter().enumerate() {
        assert_eq!(
            applied(i),
            (
                "False".to_owned(),
                "Denied".to_owned(),
                (*message).to_owned()
            )
        );
    }
    assert_eq!(applied(5).0, "True");
    assert_eq!(greeting(&east).await.as_deref(), Some("allowed"));
    let system: Api<ConfigMap> = Api::namespaced(east.client.clone(), "kube-system");
    assert!(system.get_opt("sneaky").await.unwrap().is_none());
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(east.client.clone(), "atoll-system");
    let credential = secrets.get("atoll-agent").await.unwrap();
    assert!(
        credential
            .data
            .unwrap_or_default()
            .values()
            .all(|v| v.0 != b"stolen"),
        "the agent's credential Secret was written by a Work"
    );
    east.stop_agent().await;
}

/// A restarted hub does not tell its agents that their Works are gone before it has listed
/// them: the objects they applied stay in place through the restart (no deletion event), and the
/// rollout goes on.
#[tokio::test]
async fn a_restarted_hub_never_makes_agents_delete_what_they_applied() {
    let (mut hub, mut east) = start().await;
    let works: Api<Work> = Api::namespaced(hub.client.clone(), "east");
    for i in 0..20 {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("keep-{i}"), "namespace": "default"}, "data": {"v": "1"}});
        works
            .create(
                &PostParams::default(),
                &work(&format!("w{i}"), "east", vec![cm]),
            )
            .await
            .unwrap();
    }
    let configmaps: Api<ConfigMap> = Api::namespaced(east.client.clone(), "default");
    assert!(
        eventually(WAIT, || async {
            configmaps
                .list(&Default::default())
                .await
                .unwrap()
                .items
                .iter()
                .filter(|c| {
                    c.metadata
                        .name
                        .as_deref()
                        .is_some_and(|n| n.starts_with("keep-"))
                })
                .count()
                == 20
        })
        .await
    );
    // Watch the member for deletions through the restart.
    let deleted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let watch = {
        let deleted = deleted.clone();
        let stream = kube::runtime::watcher::watcher(configmaps.clone(), Default::default());
        tokio::spawn(async move {
            use futures::StreamExt as _;
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                if let Ok(kube::runtime::watcher::Event::Delete(_)) = event {
                    deleted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            }
        })
    };
    for _ in 0..3 {
        let addr = hub.hub.as_ref().unwrap().grpc_addr();
        hub.hub.take().unwrap().shutdown().await;
        hub.hub = Some(
            atoll_tests::in_process::start_hub(&hub.client, addr, true, Leases::default()).await,
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    // A change after the restarts still arrives.
    let patch = json!({"spec": {"workload": {"manifests": [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "keep-0", "namespace": "default"}, "data": {"v": "2"}}]}}});
    works
        .patch("w0", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert!(
        eventually(WAIT, || async {
            configmaps
                .get("keep-0")
                .await
                .unwrap()
                .data
                .is_some_and(|d| d["v"] == "2")
        })
        .await,
        "the change after the restarts did not arrive"
    );
    watch.abort();
    assert_eq!(
        deleted.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "objects were deleted in the member while the hub restarted"
    );
    east.stop_agent().await;
}

/// What the simulated agents of a storm saw.
#[derive(Default)]
struct Storm {
    /// The Work generation each agent last had reported (acknowledged by the hub), by index.
    reported: Mutex<Vec<i64>>,
    /// Refused sync openings and reports, by gRPC code.
    refusals: Mutex<std::collections::BTreeMap<String, usize>>,
    /// Sync streams opened.
    opened: std::sync::atomic::AtomicUsize,
}

impl Storm {
    fn refused(&self, status: &tonic::Status) {
        *lock(&self.refusals)
            .entry(format!("{:?}", status.code()))
            .or_default() += 1;
    }

    fn reported_at_least(&self, generation: i64) -> usize {
        lock(&self.reported)
            .iter()
            .filter(|g| **g >= generation)
            .count()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` for each of `n` clusters, eight at a time.
async fn for_each_cluster<F, Fut>(n: usize, f: F)
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    futures::stream::iter(0..n)
        .map(f)
        .buffer_unordered(8)
        .collect::<Vec<()>>()
        .await;
}

/// A simulated agent in a storm: opens its sync stream on a connection of its own, saying which
/// version of its Work it has, applies (in memory) and reports what arrives, and opens the
/// stream again after a jittered backoff whenever it breaks or is refused, as the real agent does.
async fn storm_agent(
    hub_url: String,
    ca: String,
    credential: String,
    index: usize,
    storm: Arc<Storm>,
) {
    use atoll_proto::v1::{SyncRequest, WorkStatusReport, WorkVersion, sync_event};
    let name = format!("member-{index:04}");
    let mut had: Option<WorkVersion> = None;
    let mut delay = Duration::from_millis(200);
    let mut seed = index as u64;
    let mut jittered = |delay: Duration| delay.mul_f64(0.5 + atoll_tests::bench::unit(&mut seed));
    loop {
        // A connection of its own, made as the stream opens.
        let channel = atoll_agent::hub::channel(&hub_url, &ca).unwrap();
        let mut client = atoll_agent::hub::client(channel, &credential).unwrap();
        let request = SyncRequest {
            cluster_name: name.clone(),
            works: had.iter().cloned().collect(),
            full: false,
        };
        match client.sync(request).await {
            Ok(response) => {
                storm
                    .opened
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                delay = Duration::from_millis(200);
                let mut stream = response.into_inner();
                while let Ok(Some(event)) = stream.message().await {
                    let Some(sync_event::Event::WorkUpsert(upsert)) = event.event else {
                        continue;
                    };
                    let status = atoll_agent::works::status_of(&[], Some(upsert.generation));
                    let report = WorkStatusReport {
                        cluster_name: name.clone(),
                        work_name: upsert.name.clone(),
                        work_uid: upsert.uid.clone(),
                        observed_generation: upsert.generation,
                        status: serde_json::to_vec(&status).unwrap(),
                        deleted: false,
                    };
                    match client.report_work_status(report).await {
                        Ok(_) => {
                            lock(&storm.reported)[index] = upsert.generation;
                            had = Some(WorkVersion {
                                name: upsert.name,
                                uid: upsert.uid,
                                generation: upsert.generation,
                            });
                        }
                        // Reported again when the stream is opened again.
                        Err(status) => {
                            storm.refused(&status);
                            break;
                        }
                    }
                }
            }
            Err(status) => storm.refused(&status),
        }
        tokio::time::sleep(jittered(delay)).await;
        delay = (delay * 2).min(Duration::from_secs(5));
    }
}

/// A thousand agents open their sync streams at the same moment, and again when the hub
/// restarts with every Work changed meanwhile: each gets its Work, reports it, and the hub's
/// refusals (if any) only delay them.
#[tokio::test(flavor = "multi_thread")]
async fn a_reconnect_storm_of_a_thousand_agents_converges() {
    const AGENTS: usize = 1_000;
    // Leases longer than the test: the simulated agents send no heartbeats.
    let leases = Leases {
        lease: Duration::from_secs(600),
        missed: 3,
    };
    let mut hub = TestHub::start(true, leases).await;
    let credentials: Vec<(usize, String)> = futures::stream::iter(0..AGENTS)
        .map(|i| {
            let client = hub.raw(&hub.token);
            async move {
                let mut client = client;
                let request = atoll_proto::v1::JoinRequest {
                    cluster_name: format!("member-{i:04}"),
                    cluster_id: format!("id-{i:04}"),
                    kubernetes_version: "v1.35.0".to_owned(),
                    properties: vec![],
                    join_secret: format!("secret-of-member-{i:04}-0123456789"),
                    cluster_set: String::new(),
                };
                let response = client.join(request).await.unwrap().into_inner();
                (i, response.credential)
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    let cfg = |i: usize, version: &str| {
        work(
            "cfg",
            &format!("member-{i:04}"),
            vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "cfg", "namespace": "default"}, "data": {"v": version}})],
        )
    };
    let client = hub.client.clone();
    for_each_cluster(AGENTS, |i| {
        let works: Api<Work> = Api::namespaced(client.clone(), &format!("member-{i:04}"));
        let work = cfg(i, "1");
        async move {
            works.create(&PostParams::default(), &work).await.unwrap();
        }
    })
    .await;

    // All at once: every agent opens its stream in the same moment.
    let started = std::time::Instant::now();
    let storm = Arc::new(Storm {
        reported: Mutex::new(vec![0; AGENTS]),
        ..Storm::default()
    });
    let agents: Vec<_> = credentials
        .into_iter()
        .map(|(i, credential)| {
            tokio::spawn(storm_agent(
                hub.url.clone(),
                hub.ca.clone(),
                credential,
                i,
                storm.clone(),
            ))
        })
        .collect();
    let converged = |generation: i64| {
        let storm = storm.clone();
        async move {
            for _ in 0..240 {
                if storm.reported_at_least(generation) == AGENTS {
                    return true;
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            false
        }
    };
    assert!(
        converged(1).await,
        "{} of {AGENTS} agents reported their Work; refusals: {:?}",
        storm.reported_at_least(1),
        lock(&storm.refusals)
    );

    let first = (started.elapsed(), lock(&storm.refusals).clone());
    // The hub restarts; every Work changes while it is away; all agents come back at once.
    let addr = hub.hub.as_ref().unwrap().grpc_addr();
    hub.hub.take().unwrap().shutdown().await;
    for_each_cluster(AGENTS, |i| {
        let works: Api<Work> = Api::namespaced(client.clone(), &format!("member-{i:04}"));
        let patch = json!({"spec": cfg(i, "2").spec});
        async move {
            works
                .patch("cfg", &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .unwrap();
        }
    })
    .await;
    hub.hub = Some(atoll_tests::in_process::start_hub(&hub.client, addr, true, leases).await);
    let restarted = std::time::Instant::now();
    assert!(
        converged(2).await,
        "{} of {AGENTS} agents reported the changed Work after the restart; refusals: {:?}",
        storm.reported_at_least(2),
        lock(&storm.refusals)
    );
    // The hub shows every report.
    let shown = applied_count(&Api::all(hub.client.clone())).await;
    assert_eq!(shown, AGENTS);
    let refusals = lock(&storm.refusals).clone();
    for code in refusals.keys() {
        assert!(
            ["Unavailable", "ResourceExhausted", "Unknown", "Cancelled"].contains(&code.as_str()),
            "an agent was refused for good: {refusals:?}"
        );
    }
    eprintln!(
        "{AGENTS} agents: all reported {:.1} s after opening their streams at once (refusals {:?}), \
         and {:.1} s after the hub restarted (refusals in all {refusals:?}); {} streams opened",
        first.0.as_secs_f64(),
        first.1,
        restarted.elapsed().as_secs_f64(),
        storm.opened.load(std::sync::atomic::Ordering::Relaxed)
    );
    for agent in agents {
        agent.abort();
    }
}
