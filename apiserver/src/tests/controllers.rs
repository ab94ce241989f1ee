//! The server's own controllers write as the users upstream's controllers are: their writes
//! pass the ValidatingAdmissionPolicies (a binding can refuse them, with `matchConditions` on
//! the controller's username; the controller retries until it may) and are recorded in the
//! audit log with that user, as writes over HTTP are.

use std::time::Duration;

use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::{TestServer, config_map, within};
use crate::StorageKind;

const GROUP: &str = "/apis/admissionregistration.k8s.io/v1";
const GARBAGE_COLLECTOR: &str = "system:serviceaccount:kube-system:generic-garbage-collector";
const ROOT_CA_PUBLISHER: &str = "system:serviceaccount:kube-system:root-ca-cert-publisher";

/// A policy refusing `operation` on ConfigMaps named `refused` when `username` makes it.
fn refusing(name: &str, operation: &str, username: &str, refused: &str) -> Value {
    let object = if operation == "DELETE" {
        "oldObject"
    } else {
        "object"
    };
    json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""],
            "apiVersions": ["v1"], "operations": [operation], "resources": ["configmaps"]}]},
            "matchConditions": [{"name": "by-the-controller",
                "expression": format!("request.userInfo.username == '{username}'")}],
            "validations": [{"expression": format!("{object}.metadata.name != '{refused}'"),
                "message": format!("{name} refuses it")}]}})
}

/// Makes `policy` and a binding of it denying (the binding's name: `<policy>-binding`).
async fn bind(server: &TestServer, policy: Value) {
    bind_with(server, policy, "Deny").await;
}

/// Makes `policy` and a binding of it with the validation action `action`.
async fn bind_with(server: &TestServer, policy: Value, action: &str) {
    let name = policy["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": format!("{name}-binding")},
        "spec": {"policyName": name, "validationActions": [action]}});
    for (path, body) in [
        ("validatingadmissionpolicies", policy),
        ("validatingadmissionpolicybindings", binding),
    ] {
        let made = server
            .send(Method::POST, &format!("{GROUP}/{path}"), Some(body))
            .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
    }
}

/// Binds policy `no-root-ca`: the root CA publisher may not create `kube-root-ca.crt`.
async fn refuse_root_ca(server: &TestServer) {
    let policy = refusing(
        "no-root-ca",
        "CREATE",
        ROOT_CA_PUBLISHER,
        "kube-root-ca.crt",
    );
    bind(server, policy).await;
}

async fn unbind(server: &TestServer, policy: &str) {
    let path = format!("{GROUP}/validatingadmissionpolicybindings/{policy}-binding");
    let gone = server.send(Method::DELETE, &path, None).await;
    assert_eq!(gone.status, StatusCode::OK, "{}", gone.text());
}

/// Creates ConfigMap `owner` in `ns`, and `dependent` owned by it.
async fn owner_and_dependent(server: &TestServer, ns: &str) {
    server.create_config_maps(ns, &["owner"]).await;
    let owner = server
        .send(
            Method::GET,
            &format!("/api/v1/namespaces/{ns}/configmaps/owner"),
            None,
        )
        .await
        .json();
    let mut dependent = config_map("dependent", json!({"k": "v"}));
    dependent["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "ConfigMap",
        "name": "owner", "uid": owner["metadata"]["uid"]}]);
    let made = server
        .send(
            Method::POST,
            &format!("/api/v1/namespaces/{ns}/configmaps"),
            Some(dependent),
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
}

/// A server keeping an audit log with `policy` (YAML), and the log's file (in the server's
/// data directory).
async fn audited(policy: &str) -> (TestServer, std::path::PathBuf) {
    let policy = crate::audit::Policy::parse(policy).expect("an audit policy");
    let mut log = std::path::PathBuf::new();
    let server = TestServer::start(StorageKind::Memory, |config| {
        log = config.data_dir.join("audit.log");
        config.audit = Some(crate::audit::Options {
            path: log.clone(),
            policy,
            max_bytes: 0,
            max_backups: 0,
        });
    })
    .await;
    (server, log)
}

/// The status code of `GET path`, once `until` holds for it (10 s at most; then the last).
async fn status_until(
    server: &TestServer,
    path: &str,
    until: impl Fn(StatusCode) -> bool,
) -> StatusCode {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let status = server.send(Method::GET, path, None).await.status;
        if until(status) || tokio::time::Instant::now() >= deadline {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The audit log's events, once one satisfies `wanted` (10 s at most).
async fn events_until(log: &std::path::Path, wanted: impl Fn(&Value) -> bool) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let events: Vec<Value> = std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect();
        if events.iter().any(&wanted) {
            return events;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no such event in {events:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_policy_on_the_garbage_collector_keeps_a_dependent_until_its_binding_goes() {
    within(async {
        let (server, log) = audited(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n  resources: [{group: \"\", resources: [configmaps]}]\n",
        )
        .await;
        owner_and_dependent(&server, "team").await;
        bind(
            &server,
            refusing("keep-dependents", "DELETE", GARBAGE_COLLECTOR, "dependent"),
        )
        .await;

        // The admin's delete of the owner is no business of the policy.
        let deleted = server
            .send(Method::DELETE, "/api/v1/namespaces/team/configmaps/owner", None)
            .await;
        assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.text());
        // The collector's delete of the dependent is refused, and recorded so.
        let refused = |e: &Value| {
            e["user"]["username"] == GARBAGE_COLLECTOR
                && e["verb"] == "delete"
                && e["objectRef"]["name"] == "dependent"
                && e["responseStatus"]["code"] == 422
        };
        events_until(&log, refused).await;
        let dependent = "/api/v1/namespaces/team/configmaps/dependent";
        assert_eq!(
            server.send(Method::GET, dependent, None).await.status,
            StatusCode::OK
        );

        // Without the binding, the collector's next try deletes it.
        unbind(&server, "keep-dependents").await;
        let status = status_until(&server, dependent, |s| s == StatusCode::NOT_FOUND).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        // The server still serves, and the admin's writes go through.
        server.create_config_maps("team", &["after"]).await;
    })
    .await;
}

#[tokio::test]
async fn match_conditions_on_the_root_ca_publisher_refuse_the_config_map_of_a_new_namespace() {
    within(async {
        let server = TestServer::start(StorageKind::Memory, |_| {}).await;
        refuse_root_ca(&server).await;
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fresh"}});
        let made = server
            .send(Method::POST, "/api/v1/namespaces", Some(ns))
            .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());

        // The service account controller is another user: its `default` comes.
        let account = "/api/v1/namespaces/fresh/serviceaccounts/default";
        let status = status_until(&server, account, |s| s == StatusCode::OK).await;
        assert_eq!(status, StatusCode::OK);
        // The root CA publisher's ConfigMap is refused, again at each retry.
        let root_ca = "/api/v1/namespaces/fresh/configmaps/kube-root-ca.crt";
        tokio::time::sleep(Duration::from_millis(2500)).await;
        assert_eq!(
            server.send(Method::GET, root_ca, None).await.status,
            StatusCode::NOT_FOUND
        );
        // The admin's ConfigMaps are no business of the policy.
        server.create_config_maps("fresh", &["mine"]).await;

        unbind(&server, "no-root-ca").await;
        let status = status_until(&server, root_ca, |s| s == StatusCode::OK).await;
        assert_eq!(status, StatusCode::OK);
    })
    .await;
}

#[tokio::test]
async fn a_refused_controller_write_is_tried_again_after_a_growing_wait_not_at_every_event() {
    within(async {
        let (server, log) = audited(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n  resources: [{group: \"\", resources: [configmaps]}]\n",
        )
        .await;
        refuse_root_ca(&server).await;
        let namespace = |name: &str| {
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        };
        let made = server
            .send(Method::POST, "/api/v1/namespaces", Some(namespace("fresh")))
            .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
        let refused_in = |ns: &'static str| {
            move |e: &Value| {
                e["user"]["username"] == ROOT_CA_PUBLISHER
                    && e["verb"] == "create"
                    && e["objectRef"]["namespace"] == ns
                    && e["responseStatus"]["code"] == 422
            }
        };
        events_until(&log, refused_in("fresh")).await;

        // Four seconds of other namespaces made, each waking the controller: the refused
        // namespace is tried again only when its wait (0.5 s, then 1 s, then 2 s) is over.
        for i in 0..40 {
            let made = server
                .send(
                    Method::POST,
                    "/api/v1/namespaces",
                    Some(namespace(&format!("other-{i}"))),
                )
                .await;
            assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let events = events_until(&log, refused_in("fresh")).await;
        let tries = events.iter().filter(|e| refused_in("fresh")(e)).count();
        assert!(
            (2..=6).contains(&tries),
            "the refused ConfigMap of `fresh` was tried {tries} times in about 4 s"
        );

        // Without the binding, the next try (at most 4 s away) makes it.
        unbind(&server, "no-root-ca").await;
        let root_ca = "/api/v1/namespaces/fresh/configmaps/kube-root-ca.crt";
        let status = status_until(&server, root_ca, |s| s == StatusCode::OK).await;
        assert_eq!(status, StatusCode::OK);
    })
    .await;
}

#[tokio::test]
async fn the_audit_log_records_controllers_writes_as_their_users() {
    within(async {
        // Rules on users and groups pick controllers' writes as they pick anyone's.
        let (server, log) = audited(&format!(
            r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Request
  users: ["{GARBAGE_COLLECTOR}"]
- level: None
  userGroups: ["system:serviceaccounts:kube-system"]
- level: Metadata
  resources: [{{group: "", resources: [configmaps]}}]
"#
        ))
        .await;
        owner_and_dependent(&server, "team").await;
        // A policy's Audit action on the collector's delete annotates its event.
        bind_with(
            &server,
            refusing("notes-collection", "DELETE", GARBAGE_COLLECTOR, "dependent"),
            "Audit",
        )
        .await;
        let deleted = server
            .send(
                Method::DELETE,
                "/api/v1/namespaces/team/configmaps/owner",
                None,
            )
            .await;
        assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.text());

        let collected = |e: &Value| {
            e["user"]["username"] == GARBAGE_COLLECTOR && e["objectRef"]["name"] == "dependent"
        };
        let events = events_until(&log, collected).await;
        let event = events.iter().find(|e| collected(e)).unwrap();
        assert_eq!(event["verb"], "delete", "{event:#}");
        assert_eq!(event["level"], "Request", "{event:#}");
        assert_eq!(event["stage"], "ResponseComplete", "{event:#}");
        assert_eq!(event["responseStatus"]["code"], 200, "{event:#}");
        assert_eq!(
            event["requestURI"],
            "/api/v1/namespaces/team/configmaps/dependent"
        );
        assert_eq!(
            event["objectRef"],
            json!({"resource": "configmaps", "namespace": "team", "name": "dependent",
                "apiGroup": "", "apiVersion": "v1"})
        );
        assert_eq!(
            event["user"]["groups"],
            json!([
                "system:serviceaccounts",
                "system:serviceaccounts:kube-system",
                "system:authenticated"
            ])
        );
        assert_eq!(event["requestObject"]["kind"], "DeleteOptions", "{event:#}");
        assert_eq!(
            event["requestObject"]["propagationPolicy"], "Background",
            "{event:#}"
        );
        assert!(event.get("responseObject").is_none(), "{event:#}");
        assert!(
            event["annotations"]["validation.policy.admission.k8s.io/validation_failure"]
                .as_str()
                .is_some_and(|v| v.contains("notes-collection")),
            "{event:#}"
        );
        assert_eq!(
            event["annotations"]["authorization.k8s.io/decision"],
            "allow"
        );
        // No HTTP request: no source address nor user agent.
        assert!(
            event.get("sourceIPs").is_none() && event.get("userAgent").is_none(),
            "{event:#}"
        );

        // The other kube-system controllers' writes (the namespace's root CA ConfigMap) are
        // left out by the group rule; the admin's are recorded as before.
        assert!(
            !events
                .iter()
                .any(|e| e["user"]["username"] == ROOT_CA_PUBLISHER),
            "{events:#?}"
        );
        let by_admin = events
            .iter()
            .find(|e| e["verb"] == "delete" && e["objectRef"]["name"] == "owner")
            .unwrap_or_else(|| panic!("no delete of the owner in {events:#?}"));
        assert_eq!(by_admin["user"]["username"], "atoll-admin");
        assert_eq!(by_admin["level"], "Metadata");
        assert_eq!(
            by_admin["requestURI"],
            "/api/v1/namespaces/team/configmaps/owner"
        );
        assert_eq!(by_admin["responseStatus"]["code"], 200);
    })
    .await;
}

#[tokio::test]
async fn a_namespace_waits_for_what_a_policy_keeps_the_namespace_controller_from_deleting() {
    within(async {
        let server = TestServer::start(StorageKind::Memory, |_| {}).await;
        server
            .create_config_maps("leaving", &["kept", "loose"])
            .await;
        bind(
            &server,
            refusing(
                "keep-one",
                "DELETE",
                "system:serviceaccount:kube-system:namespace-controller",
                "kept",
            ),
        )
        .await;
        let deleted = server
            .send(Method::DELETE, "/api/v1/namespaces/leaving", None)
            .await;
        assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.text());

        // What the policy leaves alone goes; the refused ConfigMap stays, and so does the
        // namespace, terminating.
        let loose = "/api/v1/namespaces/leaving/configmaps/loose";
        let status = status_until(&server, loose, |s| s == StatusCode::NOT_FOUND).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let kept = "/api/v1/namespaces/leaving/configmaps/kept";
        assert_eq!(
            server.send(Method::GET, kept, None).await.status,
            StatusCode::OK
        );
        let namespace = server
            .send(Method::GET, "/api/v1/namespaces/leaving", None)
            .await;
        assert_eq!(namespace.json()["status"]["phase"], "Terminating");

        unbind(&server, "keep-one").await;
        let status = status_until(&server, "/api/v1/namespaces/leaving", |s| {
            s == StatusCode::NOT_FOUND
        })
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    })
    .await;
}
