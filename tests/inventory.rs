//! The hub and the agent in one process, over real gRPC with TLS and real HTTPS API servers:
//! joining (double opt-in), health from heartbeats and leases, ClusterSet membership, and every
//! bad input and hostile call of the inventory issue, each checked for a clear error and for
//! nothing stored changing.

use std::time::Duration;

use atoll_api::inventory::{ClusterProfile, ClusterProperty};
use atoll_api::names::{LABEL_CLUSTER_SET, SYSTEM_NAMESPACE};
use atoll_api::work::Work;
use atoll_hub::Leases;
use atoll_proto::v1::{
    Health, HeartbeatRequest, JoinRequest, Property, SyncRequest, WorkStatusReport, join_response,
};
use atoll_tests::eventually;
use atoll_tests::in_process::{Member, TestHub, WAIT, condition, start_hub};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use tonic::Code;

fn join_request(name: &str, id: &str) -> JoinRequest {
    JoinRequest {
        cluster_name: name.to_owned(),
        cluster_id: id.to_owned(),
        kubernetes_version: "v1.35.0".to_owned(),
        properties: vec![Property {
            name: "cluster.clusterset.k8s.io".into(),
            value: id.to_owned(),
        }],
        join_secret: format!("secret-of-{name}-0123456789"),
        cluster_set: String::new(),
    }
}

/// Joins `name` with a raw client (auto-accept hubs), returning its credential.
async fn raw_join(hub: &TestHub, name: &str, id: &str) -> String {
    let response = hub
        .raw(&hub.token)
        .join(join_request(name, id))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        response.state,
        join_response::State::Accepted as i32,
        "{}",
        response.message
    );
    response.credential
}

fn beat(name: &str) -> HeartbeatRequest {
    HeartbeatRequest {
        cluster_name: name.to_owned(),
        health: Some(Health {
            ready: true,
            message: String::new(),
        }),
        kubernetes_version: "v1.35.0".into(),
        properties: Vec::new(),
    }
}

#[tokio::test]
async fn a_cluster_joins_once_accepted_and_reports_its_health_version_and_id() {
    let hub = TestHub::start(false, Leases::default()).await;
    let mut east = Member::start(&hub, "east").await;

    let pending = hub
        .wait_condition("east", "Joined", "False", Some("PendingAcceptance"))
        .await;
    assert!(
        condition(&pending, "Joined")
            .unwrap()
            .message
            .contains("atoll cluster accept east")
    );
    assert_eq!(
        condition(&pending, "ControlPlaneHealthy").unwrap().status,
        "Unknown"
    );
    assert!(
        !pending
            .metadata
            .labels
            .as_ref()
            .unwrap()
            .contains_key(LABEL_CLUSTER_SET)
    );

    atoll_hub::record::accept(hub.client.clone(), "east")
        .await
        .unwrap();
    let joined = hub
        .wait_condition(
            "east",
            "ControlPlaneHealthy",
            "True",
            Some("APIServerReady"),
        )
        .await;
    assert_eq!(condition(&joined, "Joined").unwrap().status, "True");
    let status = joined.status.clone().unwrap();
    assert_eq!(
        status.version.unwrap().kubernetes.as_deref(),
        Some("v1.35.0+atoll")
    );
    let uid = east.kube_system_uid().await;
    assert!(
        status
            .properties
            .iter()
            .any(|p| p.name == "cluster.clusterset.k8s.io" && p.value == uid),
        "the cluster ID is the kube-system UID: {:?}",
        status.properties
    );
    assert_eq!(
        east.property("cluster.clusterset.k8s.io").await.as_deref(),
        Some(uid.as_str())
    );
    assert_eq!(joined.spec.cluster_manager.name, "atoll");
    assert_eq!(
        joined.metadata.labels.as_ref().unwrap()["x-k8s.io/cluster-manager"],
        "atoll"
    );
    assert_eq!(
        joined.metadata.labels.as_ref().unwrap()["multicluster.x-k8s.io/inventory-member-id"],
        "east"
    );

    // The hub made the cluster's namespace; the credential lives only in the member cluster.
    let namespaces: Api<Namespace> = Api::all(hub.client.clone());
    assert!(namespaces.get_opt("east").await.unwrap().is_some());
    let stored: Api<Secret> = Api::namespaced(east.client.clone(), SYSTEM_NAMESPACE);
    let agent_secret = stored.get("atoll-agent").await.unwrap();
    let credential = String::from_utf8(agent_secret.data.unwrap()["credential"].0.clone()).unwrap();
    assert!(credential.len() > 40);
    let hub_secrets = hub.all_secret_text().await;
    assert!(
        !hub_secrets.contains(&credential),
        "the hub stores the credential itself"
    );
    assert!(
        !hub_secrets.contains(hub.token.split('.').nth(1).unwrap()),
        "the hub stores a token secret"
    );
    east.stop_agent().await;
}

#[tokio::test]
async fn bootstrap_tokens_that_are_malformed_unknown_expired_or_deleted_are_refused() {
    let hub = TestHub::start(true, Leases::default()).await;
    let expired = atoll_hub::bootstrap::Token::generate();
    let past: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
    let secrets: Api<Secret> = Api::namespaced(hub.client.clone(), SYSTEM_NAMESPACE);
    secrets
        .create(
            &PostParams::default(),
            &expired.to_secret(Some(past), "expired", None),
        )
        .await
        .unwrap();
    let (deleted, _) = atoll_hub::bootstrap::create(hub.client.clone(), None, "deleted", None)
        .await
        .unwrap();
    atoll_hub::bootstrap::delete(hub.client.clone(), deleted.id())
        .await
        .unwrap();

    let cases = [
        ("nonsense".to_owned(), "malformed"),
        (
            "abcdef.0123456789abcdef".to_owned(),
            "bootstrap token abcdef is unknown",
        ),
        (
            expired.to_string(),
            &*format!("bootstrap token {} expired at 2026-01-01", expired.id()).leak(),
        ),
        (
            deleted.to_string(),
            &*format!("bootstrap token {} is unknown or was deleted", deleted.id()).leak(),
        ),
    ];
    for (token, expected) in cases {
        let err = hub
            .raw(&token)
            .join(join_request("east", "id-east"))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::Unauthenticated, "{token}: {err:?}");
        assert!(
            err.message().contains(expected),
            "{token}: {}",
            err.message()
        );
    }
    // A call without any token.
    let mut bare = atoll_proto::v1::hub_client::HubClient::new(
        atoll_agent::hub::channel(&hub.url, &hub.ca).unwrap(),
    );
    let err = bare
        .join(join_request("east", "id-east"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated);
    assert!(
        err.message().contains("carries no credential"),
        "{}",
        err.message()
    );

    assert!(
        hub.profiles()
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    let records = secrets
        .list(&ListParams::default().labels("atoll.dev/cluster"))
        .await
        .unwrap();
    assert!(records.items.is_empty(), "a refused join left a record");
}

#[tokio::test]
async fn bad_joins_are_refused_with_the_field_at_fault_and_nothing_is_stored() {
    let hub = TestHub::start(true, Leases::default()).await;
    hub.create_set("prod").await;
    let scoped = |set: &'static str| {
        let client = hub.client.clone();
        async move {
            atoll_hub::bootstrap::create(client, None, "tests", Some(set))
                .await
                .unwrap()
                .0
                .to_string()
        }
    };
    let prod_token = scoped("prod").await;
    // A token scoped to a set that is gone (deleted after the token was made).
    let nope_token = scoped("nope").await;
    let mut first = join_request("a", "shared-id");
    first.cluster_set = "prod".into();
    let response = hub.raw(&prod_token).join(first).await.unwrap().into_inner();
    assert_eq!(response.state, join_response::State::Accepted as i32);
    assert!(
        eventually(WAIT, || async {
            hub.set_status("prod").await.member_count == 1
        })
        .await,
        "a joined prod"
    );

    let mut cases: Vec<(JoinRequest, Code, &str)> = Vec::new();
    let mut tokens: Vec<&str> = Vec::new();
    cases.push((
        join_request("Not_A_Label", "id"),
        Code::InvalidArgument,
        "\"Not_A_Label\" is not a DNS label",
    ));
    cases.push((
        join_request("kube-system", "id"),
        Code::InvalidArgument,
        "is reserved",
    ));
    cases.push((
        join_request("b", ""),
        Code::InvalidArgument,
        "cluster ID is missing",
    ));
    // (A ClusterProperty the hub cannot copy does not fail a join: it is left out of the
    // profile with a reason; see properties_the_hub_cannot_copy_are_left_out_with_a_reason.)
    tokens.resize(cases.len(), &hub.token);
    let mut r = join_request("b", "id-b");
    r.cluster_set = "nope".into();
    cases.push((r, Code::NotFound, "ClusterSet \"nope\" does not exist"));
    tokens.push(&nope_token);
    let mut r = join_request("b", "shared-id");
    r.cluster_set = "prod".into();
    cases.push((
        r,
        Code::AlreadyExists,
        "\"shared-id\" is already used by cluster \"a\" in ClusterSet \"prod\"",
    ));
    tokens.push(&prod_token);
    let mut r = join_request("b", "id-b");
    r.join_secret = "short".into();
    cases.push((r, Code::InvalidArgument, "join secret must be at least 16"));
    let mut r = join_request("a", "shared-id");
    r.join_secret = "another-agent-0123456789".into();
    cases.push((r, Code::AlreadyExists, "cluster \"a\" has already joined"));

    tokens.resize(cases.len(), &hub.token);
    for ((request, code, expected), token) in cases.into_iter().zip(tokens) {
        let name = request.cluster_name.clone();
        let err = hub.raw(token).join(request).await.unwrap_err();
        assert_eq!(err.code(), code, "{name}: {err:?}");
        assert!(
            err.message().contains(expected),
            "{name}: {}",
            err.message()
        );
    }
    let names: Vec<String> = hub
        .profiles()
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|p| p.metadata.name.unwrap())
        .collect();
    assert_eq!(names, ["a"], "only the good join left a profile");
    let status = hub.set_status("prod").await;
    assert_eq!(status.members.len(), 1);
    assert_eq!(status.members[0].cluster_id.as_deref(), Some("shared-id"));
}

#[tokio::test]
async fn a_credential_speaks_only_for_its_own_cluster() {
    let hub = TestHub::start(true, Leases::default()).await;
    let a = raw_join(&hub, "a", "id-a").await;
    let _b = raw_join(&hub, "b", "id-b").await;
    let works: Api<Work> = Api::namespaced(hub.client.clone(), "b");
    let work: Work = serde_json::from_value(serde_json::json!({
        "apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "Work",
        "metadata": {"name": "web", "namespace": "b"},
        "spec": {"workload": {"manifests": []}}
    }))
    .unwrap();
    let work = works.create(&PostParams::default(), &work).await.unwrap();
    hub.wait_condition(
        "b",
        "ControlPlaneHealthy",
        "Unknown",
        Some("AwaitingHeartbeat"),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = hub.profile("b").await.unwrap();

    let mut as_a = hub.raw(&a);
    let err = as_a.heartbeat(beat("b")).await.unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied);
    assert!(
        err.message()
            .contains("belongs to cluster \"a\", not \"b\""),
        "{}",
        err.message()
    );
    let err = as_a
        .sync(SyncRequest {
            cluster_name: "b".into(),
            works: vec![],
            full: false,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied);
    let report = |cluster: &str| WorkStatusReport {
        cluster_name: cluster.into(),
        work_name: "web".into(),
        work_uid: work.metadata.uid.clone().unwrap(),
        observed_generation: 1,
        status: br#"{"conditions":[]}"#.to_vec(),
        deleted: false,
    };
    let err = as_a.report_work_status(report("b")).await.unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied);
    // Stating its own name, a reads only its own namespace: b's Work is not there.
    let err = as_a.report_work_status(report("a")).await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
    let err = hub
        .raw("atoll-cluster.forged")
        .heartbeat(beat("a"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated);
    assert!(err.message().contains("unknown cluster credential"));

    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = hub.profile("b").await.unwrap();
    assert_eq!(
        before.metadata.resource_version, after.metadata.resource_version,
        "b's profile changed"
    );
    assert_eq!(
        works.get("web").await.unwrap().status,
        None,
        "b's Work status changed"
    );
    // a's own heartbeat works.
    as_a.heartbeat(beat("a")).await.unwrap();
    hub.wait_condition("a", "ControlPlaneHealthy", "True", None)
        .await;
}

#[tokio::test]
async fn a_client_without_the_hubs_ca_cannot_connect() {
    let hub = TestHub::start(true, Leases::default()).await;
    let other = atoll_pki::CertificateAuthority::generate("not-the-hub").unwrap();
    let channel = atoll_agent::hub::channel(&hub.url, other.cert_pem()).unwrap();
    let mut client = atoll_agent::hub::client(channel, &hub.token).unwrap();
    let err = client
        .join(join_request("east", "id-east"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");
    assert!(hub.profile("east").await.is_none());
}

#[tokio::test]
async fn clusterset_membership_follows_labels_and_refuses_what_breaks_the_rules() {
    let hub = TestHub::start(
        true,
        Leases {
            lease: Duration::from_secs(1),
            missed: 3,
        },
    )
    .await;
    let mut a = Member::start(&hub, "a").await;
    hub.wait_condition("a", "ControlPlaneHealthy", "True", None)
        .await;
    hub.create_set("prod").await;
    hub.create_set("dev").await;

    hub.label("a", Some("prod")).await;
    hub.wait_condition("a", "ClusterSetMember", "True", Some("Member"))
        .await;
    assert!(
        eventually(WAIT, || async {
            a.property("clusterset.k8s.io").await.as_deref() == Some("prod")
        })
        .await
    );
    assert!(
        eventually(WAIT, || async {
            let s = hub.set_status("prod").await;
            s.member_count == 1 && s.ready_count == 1 && s.members[0].name == "a"
        })
        .await
    );
    // The hub copies the new property into the profile.
    assert!(
        eventually(WAIT, || async {
            let p = hub.profile("a").await.unwrap();
            p.status
                .unwrap()
                .properties
                .iter()
                .any(|p| p.name == "clusterset.k8s.io" && p.value == "prod")
        })
        .await
    );

    // The hub decides membership: an edit in the member cluster is undone by its agent.
    let properties: Api<ClusterProperty> = Api::all(a.client.clone());
    let patch = serde_json::json!({"spec": {"value": "rogue"}});
    properties
        .patch(
            "clusterset.k8s.io",
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .unwrap();
    assert!(
        eventually(WAIT, || async {
            a.property("clusterset.k8s.io").await.as_deref() == Some("prod")
        })
        .await
    );

    // Moving to another set.
    hub.label("a", Some("dev")).await;
    assert!(
        eventually(WAIT, || async {
            a.property("clusterset.k8s.io").await.as_deref() == Some("dev")
        })
        .await
    );
    assert!(
        eventually(WAIT, || async {
            hub.set_status("prod").await.member_count == 0
        })
        .await
    );
    assert!(
        eventually(WAIT, || async {
            hub.set_status("dev").await.member_count == 1
        })
        .await
    );

    // A set that does not exist.
    hub.label("a", Some("missing")).await;
    let p = hub
        .wait_condition("a", "ClusterSetMember", "False", Some("ClusterSetNotFound"))
        .await;
    assert!(
        condition(&p, "ClusterSetMember")
            .unwrap()
            .message
            .contains("\"missing\" does not exist")
    );
    assert!(
        eventually(WAIT, || async {
            a.property("clusterset.k8s.io").await.is_none()
        })
        .await
    );

    // A second cluster with the same ID in the same set is refused; the set says why.
    hub.label("a", Some("prod")).await;
    hub.wait_condition("a", "ClusterSetMember", "True", None)
        .await;
    let id = a.kube_system_uid().await;
    let _twin = raw_join(&hub, "twin", &id).await;
    hub.label("twin", Some("prod")).await;
    let p = hub
        .wait_condition(
            "twin",
            "ClusterSetMember",
            "False",
            Some("DuplicateClusterID"),
        )
        .await;
    assert!(
        condition(&p, "ClusterSetMember")
            .unwrap()
            .message
            .contains("already used by cluster \"a\"")
    );
    assert!(
        eventually(WAIT, || async {
            let s = hub.set_status("prod").await;
            s.member_count == 1
                && s.conditions.iter().any(|c| {
                    c.type_ == "MembershipRejected"
                        && c.status == "True"
                        && c.message.starts_with("twin:")
                })
        })
        .await
    );

    // Leaving every set removes the property.
    hub.label("a", None).await;
    assert!(
        eventually(WAIT, || async {
            a.property("clusterset.k8s.io").await.is_none()
        })
        .await
    );
    a.stop_agent().await;
}

#[tokio::test]
async fn a_lost_cluster_turns_unknown_and_comes_back_without_joining_again() {
    let leases = Leases {
        lease: Duration::from_secs(1),
        missed: 2,
    };
    let hub = TestHub::start(true, leases).await;
    let mut east = Member::start(&hub, "east").await;
    hub.wait_condition("east", "ControlPlaneHealthy", "True", None)
        .await;
    let records: Api<Secret> = Api::namespaced(hub.client.clone(), SYSTEM_NAMESPACE);
    let record_before = records
        .get("cluster-east")
        .await
        .unwrap()
        .metadata
        .resource_version;

    east.stop_agent().await;
    let lost = hub
        .wait_condition("east", "ControlPlaneHealthy", "Unknown", Some("AgentLost"))
        .await;
    let message = &condition(&lost, "ControlPlaneHealthy").unwrap().message;
    assert!(
        message.contains("more than 2s (2 leases of 1s)"),
        "{message}"
    );
    assert_eq!(condition(&lost, "Joined").unwrap().status, "True");

    // With the bootstrap token gone, only the stored credential can bring it back.
    atoll_hub::bootstrap::delete(hub.client.clone(), &hub.token)
        .await
        .unwrap();
    east.run_agent(&hub, None);
    hub.wait_condition("east", "ControlPlaneHealthy", "True", None)
        .await;
    let record_after = records
        .get("cluster-east")
        .await
        .unwrap()
        .metadata
        .resource_version;
    assert_eq!(record_before, record_after, "the agent joined again");
    east.stop_agent().await;
}

#[tokio::test]
async fn a_restarted_hub_keeps_its_ca_members_and_credentials() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter("info")
        .with_test_writer()
        .try_init();
    let mut hub = TestHub::start(
        true,
        Leases {
            lease: Duration::from_secs(1),
            missed: 3,
        },
    )
    .await;
    let mut east = Member::start(&hub, "east").await;
    hub.wait_condition("east", "ControlPlaneHealthy", "True", None)
        .await;
    let addr = hub.hub.as_ref().unwrap().grpc_addr();
    hub.hub.take().unwrap().shutdown().await;

    let restarted = start_hub(
        &hub.client,
        addr,
        true,
        Leases {
            lease: Duration::from_secs(1),
            missed: 3,
        },
    )
    .await;
    assert_eq!(
        restarted.ca_pem(),
        hub.ca,
        "the CA changed across a restart"
    );
    hub.hub = Some(restarted);
    // The agent reconnects on its own and keeps heartbeating with its old credential.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let p = hub
        .wait_condition("east", "ControlPlaneHealthy", "True", None)
        .await;
    assert_eq!(condition(&p, "Joined").unwrap().status, "True");
    assert!(!east.task.as_ref().unwrap().is_finished());
    east.stop_agent().await;
    drop(hub.api);
}

#[tokio::test]
async fn properties_the_hub_cannot_copy_are_left_out_with_a_reason() {
    let hub = TestHub::start(true, Leases::default()).await;
    let a = raw_join(&hub, "a", "id-a").await;
    let mut client = hub.raw(&a);
    let mut good = beat("a");
    good.properties = vec![
        Property {
            name: "cluster.clusterset.k8s.io".into(),
            value: "id-a".into(),
        },
        Property {
            name: "region.example.com".into(),
            value: "eu-west".into(),
        },
    ];
    client.heartbeat(good.clone()).await.unwrap();
    hub.wait_condition("a", "ControlPlaneHealthy", "True", None)
        .await;
    let copied = |p: ClusterProfile| -> Vec<String> {
        p.status
            .unwrap()
            .properties
            .into_iter()
            .map(|p| p.name)
            .collect()
    };

    // Over ClusterProperty's own limit (128k code points), or a reserved suffix: the heartbeat
    // still counts (one property must not make a healthy cluster look lost), the property is
    // left out and the profile says why.
    let mut refused = good.clone();
    refused.properties.push(Property {
        name: "notes.example.com".into(),
        value: "x".repeat(128_001),
    });
    refused.properties.push(Property {
        name: "mine.k8s.io".into(),
        value: "1".into(),
    });
    client.heartbeat(refused).await.unwrap();
    let p = hub
        .wait_condition("a", "PropertiesCopied", "False", Some("PropertyRefused"))
        .await;
    let message = condition(&p, "PropertiesCopied").unwrap().message.clone();
    assert!(
        message.contains("property \"notes.example.com\": value has 128001 characters")
            && message.contains("property name \"mine.k8s.io\" uses a reserved suffix"),
        "{message}"
    );
    assert_eq!(condition(&p, "ControlPlaneHealthy").unwrap().status, "True");
    assert_eq!(
        copied(p),
        ["cluster.clusterset.k8s.io", "region.example.com"]
    );

    // Within ClusterProperty's limit but over the ClusterProfile's (1024): left out, with a reason.
    let mut long = good.clone();
    long.properties.push(Property {
        name: "notes.example.com".into(),
        value: "y".repeat(2000),
    });
    client.heartbeat(long).await.unwrap();
    let p = hub
        .wait_condition("a", "PropertiesCopied", "False", Some("PropertyTooLong"))
        .await;
    assert!(
        condition(&p, "PropertiesCopied")
            .unwrap()
            .message
            .contains("notes.example.com (2000 characters)")
    );
    assert_eq!(
        copied(p),
        ["cluster.clusterset.k8s.io", "region.example.com"]
    );
}

#[tokio::test]
async fn a_cluster_cannot_take_over_a_namespace_of_the_hub() {
    let hub = TestHub::start(true, Leases::default()).await;
    let namespaces: Api<Namespace> = Api::all(hub.client.clone());
    let monitoring = Namespace {
        metadata: kube::api::ObjectMeta {
            name: Some("monitoring".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    namespaces
        .create(&PostParams::default(), &monitoring)
        .await
        .unwrap();
    let config_maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(hub.client.clone(), "monitoring");
    let dashboards = k8s_openapi::api::core::v1::ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some("dashboards".into()),
            ..Default::default()
        },
        data: Some([("a".to_owned(), "b".to_owned())].into()),
        ..Default::default()
    };
    config_maps
        .create(&PostParams::default(), &dashboards)
        .await
        .unwrap();

    // The join is refused before anything is stored.
    let err = hub
        .raw(&hub.token)
        .join(join_request("monitoring", "id-m"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::AlreadyExists, "{err:?}");
    assert!(
        err.message().contains("namespace \"monitoring\"")
            && err.message().contains("choose another cluster name"),
        "{}",
        err.message()
    );
    assert!(
        hub.profiles()
            .get_opt("monitoring")
            .await
            .unwrap()
            .is_none()
    );
    let secrets: Api<Secret> = Api::namespaced(hub.client.clone(), SYSTEM_NAMESPACE);
    assert!(
        secrets
            .get_opt("cluster-monitoring")
            .await
            .unwrap()
            .is_none()
    );
    // And removing a cluster of that name (there is none) takes nothing.
    assert!(matches!(
        atoll_hub::record::remove(hub.client.clone(), "monitoring").await,
        Err(atoll_hub::record::Error::NotFound(_))
    ));

    // A member's own namespace still goes when it is removed, the hub's stays.
    raw_join(&hub, "east", "id-east").await;
    assert!(
        eventually(WAIT, || async {
            namespaces.get_opt("east").await.unwrap().is_some()
        })
        .await
    );
    atoll_hub::record::remove(hub.client.clone(), "east")
        .await
        .unwrap();
    assert!(
        eventually(WAIT, || async {
            namespaces
                .get_opt("east")
                .await
                .unwrap()
                .is_none_or(|n| n.metadata.deletion_timestamp.is_some())
        })
        .await,
        "a removed member's namespace is deleted"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        config_maps.get("dashboards").await.unwrap().data,
        dashboards.data
    );
}

#[tokio::test]
async fn an_agent_works_on_a_member_whose_cluster_property_crd_serves_only_v1alpha1() {
    let hub = TestHub::start(true, Leases::default()).await;
    let mut east = Member::start(&hub, "east").await;
    hub.wait_condition("east", "ControlPlaneHealthy", "True", None)
        .await;
    east.stop_agent().await;
    // The member had an older about-api installed: its CRD serves v1alpha1 only.
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(east.client.clone());
    crds.delete("clusterproperties.about.k8s.io", &Default::default())
        .await
        .unwrap();
    assert!(
        eventually(WAIT, || async {
            crds.get_opt("clusterproperties.about.k8s.io")
                .await
                .unwrap()
                .is_none()
        })
        .await
    );
    let old: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition =
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "clusterproperties.about.k8s.io", "annotations": {
                "api-approved.kubernetes.io": "https://github.com/kubernetes/enhancements/pull/1645"}},
            "spec": {"group": "about.k8s.io", "scope": "Cluster",
                "names": {"plural": "clusterproperties", "singular": "clusterproperty", "kind": "ClusterProperty", "listKind": "ClusterPropertyList"},
                "versions": [{"name": "v1alpha1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {"value": {"type": "string"}}}}}}}]}
        }))
        .unwrap();
    crds.create(&PostParams::default(), &old).await.unwrap();
    let v1alpha1 = kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("about.k8s.io", "v1alpha1", "ClusterProperty"),
        "clusterproperties",
    );
    let properties: Api<kube::api::DynamicObject> = Api::all_with(east.client.clone(), &v1alpha1);
    assert!(
        eventually(WAIT, || async {
            let mut region = kube::api::DynamicObject::new("region.example.com", &v1alpha1);
            region.data = serde_json::json!({"spec": {"value": "eu-west"}});
            properties
                .create(&PostParams::default(), &region)
                .await
                .is_ok()
        })
        .await,
        "the v1alpha1 CRD was never served"
    );

    east.run_agent(&hub, None);
    let uid = east.kube_system_uid().await;
    assert!(
        eventually(WAIT, || async {
            let p = hub.profile("east").await;
            let names: Vec<(String, String)> = p
                .and_then(|p| p.status)
                .map(|s| {
                    s.properties
                        .into_iter()
                        .map(|p| (p.name, p.value))
                        .collect()
                })
                .unwrap_or_default();
            names.contains(&("cluster.clusterset.k8s.io".into(), uid.clone()))
                && names.contains(&("region.example.com".into(), "eu-west".into()))
        })
        .await,
        "the profile never showed the v1alpha1 properties"
    );
    let id = properties.get("cluster.clusterset.k8s.io").await.unwrap();
    assert_eq!(id.data["spec"]["value"], uid.as_str());
    east.stop_agent().await;
}

/// What a client holding nothing, or holding a credential and sending too much, gets: refusals
/// decided before its message is read, messages capped per method, agent-supplied text cut, and
/// a source whose joins keep failing paced; the hub keeps serving its agents throughout.
#[tokio::test]
async fn hostile_calls_get_refusals_and_the_hub_keeps_serving_its_agents() {
    let hub = TestHub::start(true, Leases::default()).await;
    let credential = raw_join(&hub, "east", "id-east").await;
    let mut east = hub.raw(&credential);
    east.heartbeat(beat("east")).await.unwrap();

    // No credential the hub knows: refused before the message is read, however large (9 MiB is
    // past every cap).
    let mut huge = beat("east");
    huge.properties = vec![Property {
        name: "padding.example.com".into(),
        value: "x".repeat(9 * 1024 * 1024),
    }];
    let err = hub
        .raw("not-a-credential")
        .heartbeat(huge.clone())
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated, "{err:?}");
    assert!(
        err.message().contains("unknown cluster credential"),
        "{}",
        err.message()
    );

    // A credential, but a message over the method's cap.
    let err = east.heartbeat(huge).await.unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted, "{err:?}");
    assert!(
        err.message()
            .contains("the Heartbeat message is larger than its limit of 524288 bytes"),
        "{}",
        err.message()
    );

    // Text an agent supplies is cut, and says so.
    let mut sick = beat("east");
    sick.health = Some(Health {
        ready: false,
        message: "é".repeat(5000),
    });
    sick.kubernetes_version = "v".repeat(10_000);
    east.heartbeat(sick).await.unwrap();
    let profile = hub
        .wait_condition("east", "ControlPlaneHealthy", "False", None)
        .await;
    let message = &condition(&profile, "ControlPlaneHealthy").unwrap().message;
    assert!(
        message.ends_with("... (cut at 1024 characters)"),
        "{message}"
    );
    assert!(
        message.chars().count() < 1200,
        "{} characters",
        message.chars().count()
    );
    let version = profile
        .status
        .as_ref()
        .and_then(|s| s.version.as_ref())
        .and_then(|v| v.kubernetes.clone());
    assert!(
        version
            .as_deref()
            .is_some_and(|v| v.starts_with("vvvv") && v.chars().count() < 120),
        "{version:?}"
    );

    // Guessing tokens: after ten failures this address waits, even with a valid token.
    for i in 0..10 {
        let err = hub
            .raw(&format!("guess{i:01}.0123456789abcdef"))
            .join(join_request("west", "id-west"))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::Unauthenticated, "guess {i}: {err:?}");
    }
    for token in ["nonsense".to_owned(), hub.token.clone()] {
        let err = hub
            .raw(&token)
            .join(join_request("west", "id-west"))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::ResourceExhausted, "{err:?}");
        assert!(
            err.message()
                .contains("too many failed joins from 127.0.0.1; try again in"),
            "{}",
            err.message()
        );
    }
    assert!(hub.profile("west").await.is_none());
    // The cluster that joined is not paced: it holds a credential.
    east.heartbeat(beat("east")).await.unwrap();
    hub.wait_condition("east", "ControlPlaneHealthy", "True", None)
        .await;
}

/// Connections beyond the hub's limit are closed as they come, connections that never finish
/// their TLS handshake are closed after 10 s, and then agents connect again.
#[tokio::test]
async fn connections_beyond_the_limit_are_closed_and_silent_ones_time_out() {
    use tokio::io::AsyncReadExt as _;
    let hub = TestHub::start_with(true, Leases::default(), |config| {
        config.grpc_max_connections = 4;
    })
    .await;
    let token = hub.token.clone();
    let ca = hub.ca.clone();
    let addr: std::net::SocketAddr = hub.url.trim_start_matches("https://").parse().unwrap();
    let mut silent = Vec::new();
    for _ in 0..4 {
        silent.push(tokio::net::TcpStream::connect(addr).await.unwrap());
    }
    // Let the server take them before the fifth comes.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut fifth = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut buf = [0u8; 16];
    let closed = tokio::time::timeout(Duration::from_secs(5), fifth.read(&mut buf)).await;
    assert!(
        matches!(closed, Ok(Ok(0)) | Ok(Err(_))),
        "the fifth connection was not closed: {closed:?}"
    );
    for (i, stream) in silent.iter_mut().enumerate() {
        let closed = tokio::time::timeout(Duration::from_secs(20), stream.read(&mut buf)).await;
        assert!(
            matches!(closed, Ok(Ok(0)) | Ok(Err(_))),
            "silent connection {i} was not closed: {closed:?}"
        );
    }
    let channel = atoll_agent::hub::channel(&hub.url, &ca).unwrap();
    let mut agent = atoll_agent::hub::client(channel, &token).unwrap();
    let joined = agent.join(join_request("east", "id-east")).await.unwrap();
    assert_eq!(
        joined.into_inner().state,
        join_response::State::Accepted as i32
    );
}

/// A bootstrap token holder cannot choose its ClusterSet: only a token scoped to a set puts the
/// clusters that join with it there, and a set asked for without one is ignored, the profile
/// saying so.
#[tokio::test]
async fn only_a_token_scoped_to_a_cluster_set_joins_a_cluster_into_it() {
    let hub = TestHub::start(true, Leases::default()).await;
    hub.create_set("prod").await;
    hub.create_set("admin").await;
    let (prod_token, _) =
        atoll_hub::bootstrap::create(hub.client.clone(), None, "prod clusters", Some("prod"))
            .await
            .unwrap();
    let prod_token = prod_token.to_string();

    let join = |token: String, name: &'static str, set: &'static str| {
        let hub = &hub;
        async move {
            let mut request = join_request(name, &format!("id-{name}"));
            request.cluster_set = set.to_owned();
            let response = hub.raw(&token).join(request).await.unwrap().into_inner();
            assert_eq!(
                response.state,
                join_response::State::Accepted as i32,
                "{name}"
            );
            hub.raw(&response.credential)
                .heartbeat(beat(name))
                .await
                .unwrap();
        }
    };
    join(hub.token.clone(), "east", "admin").await;
    join(prod_token.clone(), "west", "").await;
    join(prod_token.clone(), "north", "admin").await;

    let east = hub
        .wait_condition("east", "Joined", "True", Some("ClusterSetNotGranted"))
        .await;
    assert_eq!(
        condition(&east, "Joined").unwrap().message,
        "the cluster's agent joined and holds its credential; the agent asked to join ClusterSet \"admin\", but its bootstrap token is not scoped to a ClusterSet; an administrator adds it with: atoll clusterset add admin east"
    );
    assert!(
        !east
            .metadata
            .labels
            .unwrap_or_default()
            .contains_key(LABEL_CLUSTER_SET)
    );
    hub.wait_condition("west", "ClusterSetMember", "True", None)
        .await;
    let north = hub
        .wait_condition("north", "ClusterSetMember", "True", None)
        .await;
    assert_eq!(
        north
            .metadata
            .labels
            .unwrap_or_default()
            .get(LABEL_CLUSTER_SET)
            .map(String::as_str),
        Some("prod")
    );
    let north = hub
        .wait_condition("north", "Joined", "True", Some("ClusterSetNotGranted"))
        .await;
    assert!(
        condition(&north, "Joined")
            .unwrap()
            .message
            .contains("scoped to ClusterSet \"prod\""),
        "{:?}",
        condition(&north, "Joined")
    );
    assert!(
        eventually(WAIT, || async {
            hub.set_status("prod").await.member_count == 2
        })
        .await,
        "west and north are not in prod"
    );
    assert_eq!(
        hub.set_status("admin").await.member_count,
        0,
        "a token holder chose admin"
    );
}

/// Cluster credentials expire; the agent renews its own with a third of the lifetime left, without
/// joining again, and stays healthy past the first credential's expiry; an expired credential is
/// refused saying so, and removing the cluster revokes the current one at once.
#[tokio::test]
async fn credentials_expire_and_agents_renew_them_without_joining_again() {
    let leases = Leases {
        lease: Duration::from_secs(1),
        missed: 3,
    };
    let hub = TestHub::start_with(true, leases, |config| {
        config.credential_lifetime = Duration::from_secs(6);
    })
    .await;
    let mut east = Member::start(&hub, "east").await;
    hub.wait_condition("east", "ControlPlaneHealthy", "True", None)
        .await;
    let stored = |member: &Member| {
        let client = member.client.clone();
        async move {
            atoll_agent::credential::load(&client)
                .await
                .unwrap()
                .and_then(|s| s.credential)
        }
    };
    let first = stored(&east).await.expect("east holds a credential");
    let response = hub
        .raw(&first)
        .heartbeat(beat("east"))
        .await
        .unwrap()
        .into_inner();
    let expires = response.credential_expires_unix_seconds;
    let now = jiff::Timestamp::now().as_second();
    assert!(
        (now + 4..=now + 6).contains(&expires),
        "expires at {expires}, now {now}"
    );
    assert_eq!(response.credential_renew_after_unix_seconds, expires - 2);

    // Past the first credential's lifetime: renewed (twice by now), never joined again.
    tokio::time::sleep(Duration::from_secs(9)).await;
    let renewed = stored(&east).await.expect("east holds a credential");
    assert_ne!(renewed, first, "the credential was not renewed");
    let profile = hub
        .wait_condition("east", "ControlPlaneHealthy", "True", None)
        .await;
    assert_eq!(condition(&profile, "Joined").unwrap().reason, "Joined");
    let err = hub.raw(&first).heartbeat(beat("east")).await.unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated, "{err:?}");
    let renewed_response = hub.raw(&renewed).heartbeat(beat("east")).await;
    assert!(renewed_response.is_ok(), "{renewed_response:?}");

    // An expired credential is refused saying when it expired.
    let (token, _) = atoll_hub::bootstrap::create(hub.client.clone(), None, "t", None)
        .await
        .unwrap();
    let joined = hub
        .raw(&token.to_string())
        .join(join_request("west", "id-west"))
        .await
        .unwrap()
        .into_inner();
    tokio::time::sleep(Duration::from_secs(7)).await;
    let err = hub
        .raw(&joined.credential)
        .heartbeat(beat("west"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated);
    assert!(
        err.message()
            .starts_with("the cluster credential expired at "),
        "{}",
        err.message()
    );

    // Removal revokes the current credential at once.
    east.stop_agent().await;
    let current = stored(&east).await.unwrap();
    atoll_hub::record::remove(hub.client.clone(), "east")
        .await
        .unwrap();
    assert!(
        eventually(WAIT, || async {
            hub.raw(&current)
                .heartbeat(beat("east"))
                .await
                .is_err_and(|e| e.code() == Code::Unauthenticated)
        })
        .await,
        "the removed cluster's credential still works"
    );
}

/// The ClusterProfile API at `version`, as a client that knows only its name would use it.
fn profiles_at(hub: &TestHub, version: &str) -> Api<kube::api::DynamicObject> {
    let gvk = kube::api::GroupVersionKind::gvk("multicluster.x-k8s.io", version, "ClusterProfile");
    let resource = kube::api::ApiResource::from_gvk_with_plural(&gvk, "clusterprofiles");
    Api::namespaced_with(hub.client.clone(), "fleet-system", &resource)
}

/// What the API server said when it refused a write.
fn refusal<T: std::fmt::Debug>(result: kube::Result<T>) -> (u16, String) {
    match result {
        Err(kube::Error::Api(e)) => (e.code, e.message),
        other => panic!("not refused: {other:?}"),
    }
}

#[tokio::test]
async fn cluster_profiles_are_served_as_v1alpha2_beside_v1alpha1_with_upstreams_validation() {
    let hub = TestHub::start(true, Leases::default()).await;
    let v1alpha1 = profiles_at(&hub, "v1alpha1");
    let v1alpha2 = profiles_at(&hub, "v1alpha2");
    let object = |version: &str, name: &str, manager: &str| -> kube::api::DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": format!("multicluster.x-k8s.io/{version}"), "kind": "ClusterProfile",
            "metadata": {"name": name, "namespace": "fleet-system"},
            "spec": {"clusterManager": {"name": manager}}}))
        .unwrap()
    };

    // Written through v1alpha1 with what only v1alpha1 says; read through v1alpha2 without it.
    v1alpha1
        .create(
            &PostParams::default(),
            &object("v1alpha1", "old", "other-manager"),
        )
        .await
        .unwrap();
    let provider = |name: &str| {
        serde_json::json!({"name": name, "cluster": {"server": "https://10.0.0.1:6443",
            "certificate-authority": "/etc/ca.crt"}})
    };
    let status = serde_json::json!({"status": {
        "accessProviders": [provider("kubeconfig-secretreader")],
        "credentialProviders": [provider("legacy")]}});
    v1alpha1
        .patch_status("old", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    let through_v2 = v1alpha2.get("old").await.unwrap().data;
    assert_eq!(
        through_v2["status"]["accessProviders"],
        serde_json::json!([{"name": "kubeconfig-secretreader",
            "cluster": {"server": "https://10.0.0.1:6443"}}])
    );
    assert_eq!(through_v2["status"].get("credentialProviders"), None);
    let through_v1 = v1alpha1.get("old").await.unwrap().data;
    for field in ["accessProviders", "credentialProviders"] {
        assert_eq!(through_v1["status"][field], status["status"][field]);
    }

    // v1alpha2's stricter fields, each refused naming the field; nothing is stored.
    let (code, message) = refusal(
        v1alpha2
            .create(
                &PostParams::default(),
                &object("v1alpha2", "bad", "GKE Fleet"),
            )
            .await,
    );
    assert_eq!(code, 422);
    assert!(
        message.contains(r#"spec.clusterManager.name: Invalid value: "GKE Fleet": spec.clusterManager.name in body should match"#),
        "{message}"
    );
    let long = "m".repeat(64);
    let (_, message) = refusal(
        v1alpha2
            .create(&PostParams::default(), &object("v1alpha2", "bad", &long))
            .await,
    );
    assert!(
        message.contains("spec.clusterManager.name: Too long: may not be more than 63 bytes"),
        "{message}"
    );
    v1alpha2
        .create(
            &PostParams::default(),
            &object("v1alpha2", "new", "other-manager"),
        )
        .await
        .unwrap();
    let bad_statuses = [
        (
            serde_json::json!({"accessProviders": (0..65)
                .map(|i| serde_json::json!({"name": format!("p{i}"), "cluster": {"server": "https://a"}}))
                .collect::<Vec<_>>()}),
            "status.accessProviders: Too many: 65: must have at most 64 items",
        ),
        (
            serde_json::json!({"accessProviders": [{"name": "p", "cluster": {"server": "10.0.0.1:6443"}}]}),
            r#"status.accessProviders[0].cluster.server: Invalid value: "10.0.0.1:6443": status.accessProviders[0].cluster.server in body should match"#,
        ),
        (
            serde_json::json!({"accessProviders": [{"name": "p", "cluster": {"server": "https://a",
                "proxy-url": "ftp://proxy"}}]}),
            r#"status.accessProviders[0].cluster.proxy-url: Invalid value: "ftp://proxy""#,
        ),
        (
            serde_json::json!({"accessProviders": [{"name": "p"}]}),
            "status.accessProviders[0].cluster: Required value",
        ),
    ];
    for (status, wanted) in bad_statuses {
        let (code, message) = refusal(
            v1alpha2
                .patch_status(
                    "new",
                    &PatchParams::default(),
                    &Patch::Merge(serde_json::json!({"status": status})),
                )
                .await,
        );
        assert_eq!(code, 422, "{message}");
        assert!(message.contains(wanted), "{wanted}\n{message}");
    }
    assert!(v1alpha2.get("bad").await.is_err());
    assert_eq!(v1alpha2.get("new").await.unwrap().data.get("status"), None);

    // Conditions as upstream's schema says, in every version and in Work status too.
    let condition = |reason: &str, status: &str, message: &str| {
        serde_json::json!({"status": {"conditions": [{"type": "ControlPlaneHealthy", "status": status,
            "reason": reason, "message": message, "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
    };
    let huge = "x".repeat(32_769);
    let bad_conditions = [
        (
            condition("not a reason", "True", ""),
            r#"status.conditions[0].reason: Invalid value: "not a reason": status.conditions[0].reason in body should match '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$'"#,
        ),
        (
            condition("", "True", ""),
            "status.conditions[0].reason: Invalid value: \"\": status.conditions[0].reason in body should be at least 1 chars long",
        ),
        (
            condition("Fine", "Maybe", ""),
            r#"status.conditions[0].status: Unsupported value: "Maybe": supported values: "True", "False", "Unknown""#,
        ),
        (
            condition("Fine", "True", &huge),
            "status.conditions[0].message: Too long: may not be more than 32768 bytes",
        ),
    ];
    for api in [&v1alpha1, &v1alpha2] {
        for (patch, wanted) in &bad_conditions {
            let (code, message) = refusal(
                api.patch_status("new", &PatchParams::default(), &Patch::Merge(patch))
                    .await,
            );
            assert_eq!(code, 422);
            assert!(message.contains(wanted), "{wanted}\n{message}");
        }
    }
    api_accepts(
        &v1alpha2,
        "new",
        &condition("APIServerReady", "True", "fine"),
    )
    .await;

    // The inventory member ID, when set, names a member.
    let mut labelled = object("v1alpha2", "labelled", "other-manager");
    labelled.metadata.labels = Some(
        [(
            "multicluster.x-k8s.io/inventory-member-id".to_owned(),
            String::new(),
        )]
        .into(),
    );
    let (code, message) = refusal(v1alpha2.create(&PostParams::default(), &labelled).await);
    assert_eq!(code, 422);
    assert!(
        message.contains(r#"metadata.labels[multicluster.x-k8s.io/inventory-member-id]: Invalid value: "": must not be empty"#),
        "{message}"
    );
}

async fn api_accepts(api: &Api<kube::api::DynamicObject>, name: &str, patch: &serde_json::Value) {
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_work_status_outside_the_condition_schema_is_refused_naming_the_field() {
    let hub = TestHub::start(true, Leases::default()).await;
    let a = raw_join(&hub, "a", "id-a").await;
    let works: Api<Work> = Api::namespaced(hub.client.clone(), "a");
    let work: Work = serde_json::from_value(serde_json::json!({
        "apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "Work",
        "metadata": {"name": "web", "namespace": "a"},
        "spec": {"workload": {"manifests": []}}
    }))
    .unwrap();
    let work = works.create(&PostParams::default(), &work).await.unwrap();
    let mut as_a = hub.raw(&a);
    let condition = |status: &str, reason: &str| {
        serde_json::json!({"type": "Applied", "status": status, "reason": reason, "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z"})
    };
    let report = |status: serde_json::Value| WorkStatusReport {
        cluster_name: "a".into(),
        work_name: "web".into(),
        work_uid: work.metadata.uid.clone().unwrap(),
        observed_generation: 1,
        status: status.to_string().into_bytes(),
        deleted: false,
    };
    let refused = [
        (
            serde_json::json!({"conditions": [condition("True", "applied ok")]}),
            r#"status.conditions[0].reason: Invalid value: "applied ok""#,
        ),
        (
            serde_json::json!({"conditions": [condition("True", "AppliedManifestWorkComplete")],
                "manifestConditions": [{"resourceMeta": {"ordinal": 0},
                    "conditions": [condition("Yes", "Applied")]}]}),
            r#"status.manifestConditions[0].conditions[0].status: Unsupported value: "Yes""#,
        ),
        (
            serde_json::json!({"conditions": [{"type": "Applied", "status": "True"}]}),
            "status.conditions[0].reason: Required value",
        ),
    ];
    for (status, wanted) in refused {
        let err = as_a.report_work_status(report(status)).await.unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
        assert!(
            err.message()
                .starts_with("the hub's API refused the status of Work \"web\": ")
                && err.message().contains(wanted),
            "{wanted}\n{}",
            err.message()
        );
    }
    assert_eq!(works.get("web").await.unwrap().status, None);
    as_a.report_work_status(report(
        serde_json::json!({"conditions": [condition("True", "AppliedManifestWorkComplete")]}),
    ))
    .await
    .unwrap();
    let status = works.get("web").await.unwrap().status.unwrap();
    assert_eq!(status.conditions[0].reason, "AppliedManifestWorkComplete");
}

/// The hub's metrics see joins answered and refused, and calls refused before their message is
/// read, each under its method and gRPC code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joins_and_refused_calls_are_counted_by_method_and_code() {
    let mut registry = atoll_runtime::prometheus_client::registry::Registry::default();
    let metrics = atoll_hub::metrics::Metrics::register(&mut registry);
    let hub = TestHub::start_with(false, Leases::default(), |config| {
        config.metrics = metrics.clone();
    })
    .await;
    let guessed = "abcdef.0123456789abcdef";
    let err = hub
        .raw(guessed)
        .join(join_request("east", "id-east"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated);
    let pending = hub
        .raw(&hub.token)
        .join(join_request("east", "id-east"))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(pending.state, join_response::State::Pending as i32);
    let err = hub
        .raw("not-a-credential")
        .heartbeat(beat("east"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated);

    let mut text = String::new();
    atoll_runtime::prometheus_client::encoding::prometheus_text::encode(&mut text, &registry)
        .unwrap();
    for series in [
        "atoll_hub_joins_total{result=\"pending\"} 1",
        "atoll_hub_join_refusals_total{code=\"Unauthenticated\"} 1",
        "grpc_server_started_total{grpc_service=\"atoll.hub.v1.Hub\",grpc_method=\"Join\",grpc_type=\"unary\"} 2",
        "grpc_server_handled_total{grpc_service=\"atoll.hub.v1.Hub\",grpc_method=\"Join\",grpc_type=\"unary\",grpc_code=\"OK\"} 1",
        "grpc_server_handled_total{grpc_service=\"atoll.hub.v1.Hub\",grpc_method=\"Join\",grpc_type=\"unary\",grpc_code=\"Unauthenticated\"} 1",
        "grpc_server_handled_total{grpc_service=\"atoll.hub.v1.Hub\",grpc_method=\"Heartbeat\",grpc_type=\"unary\",grpc_code=\"Unauthenticated\"} 1",
        "atoll_hub_heartbeats_total 0",
        "atoll_hub_connected_agents 0",
        "atoll_hub_clusters{condition=\"ControlPlaneHealthy\",status=\"Unknown\",reason=\"NotJoined\"} 1",
    ] {
        assert!(text.lines().any(|l| l == series), "{series} in\n{text}");
    }
}
