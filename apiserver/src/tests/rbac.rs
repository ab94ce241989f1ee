//! Authorization through the router: RBAC decisions and their wording, the reviews, escalation
//! prevention, impersonation, anonymous callers and ClusterRole aggregation.

use axum::body::Body;
use http::{Method, Request, StatusCode, header};
use serde_json::{Value, json};

use super::*;
use crate::StorageKind;

const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1";

/// A server with namespace `team-a` holding ConfigMap `x` and ServiceAccount `builder`, and a
/// token of that service account.
async fn with_builder() -> (TestServer, String) {
    let server = TestServer::start(StorageKind::Memory, |_| {}).await;
    server.create_config_maps("team-a", &["x"]).await;
    server.create_config_maps("team-b", &["y"]).await;
    let account =
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "builder"}});
    let made = server
        .send(
            Method::POST,
            "/api/v1/namespaces/team-a/serviceaccounts",
            Some(account),
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
    let token = server
        .send(
            Method::POST,
            "/api/v1/namespaces/team-a/serviceaccounts/builder/token",
            Some(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}})),
        )
        .await
        .json()["status"]["token"]
        .as_str()
        .unwrap()
        .to_owned();
    (server, token)
}

const BUILDER: &str = "system:serviceaccount:team-a:builder";

fn binding(kind: &str, name: &str, role_kind: &str, role: &str) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": "builder", "namespace": "team-a"}],
    })
}

async fn send_with(
    router: &Router,
    method: Method,
    path: &str,
    token: Option<&str>,
    headers: &[(&str, &str)],
) -> Answer {
    let mut request = Request::builder().method(method).uri(path);
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    answer(router, request.body(Body::empty()).unwrap()).await
}

#[tokio::test]
async fn a_service_account_may_do_only_what_it_is_bound_to() {
    within(async {
        let (server, token) = with_builder().await;
        let router = server.router();
        let get_x = "/api/v1/namespaces/team-a/configmaps/x";
        let refused = send(&router, Method::GET, get_x, &token, None).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN);
        let status = refused.json();
        assert_eq!(
            status["message"],
            format!(
                "configmaps \"x\" is forbidden: User \"{BUILDER}\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"team-a\""
            )
        );
        assert_eq!(status["reason"], "Forbidden");
        assert_eq!(status["details"], json!({"name": "x", "kind": "configmaps"}));

        // A binding takes effect on the next request.
        let made = server
            .send(
                Method::POST,
                &format!("{RBAC}/namespaces/team-a/rolebindings"),
                Some(binding("RoleBinding", "builder-view", "ClusterRole", "view")),
            )
            .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
        let read = send(&router, Method::GET, get_x, &token, None).await;
        assert_eq!(read.status, StatusCode::OK, "{}", read.text());
        let watch = "/api/v1/namespaces/team-a/configmaps?watch=true&timeoutSeconds=1";
        assert_eq!(send(&router, Method::GET, watch, &token, None).await.status, StatusCode::OK);
        // view grants no Secrets, nothing in another namespace and no writes.
        for (method, path) in [
            (Method::GET, "/api/v1/namespaces/team-a/secrets"),
            (Method::GET, "/api/v1/namespaces/team-b/configmaps"),
            (Method::GET, "/api/v1/configmaps"),
            (Method::DELETE, get_x),
        ] {
            let answer = send(&router, method.clone(), path, &token, None).await;
            assert_eq!(answer.status, StatusCode::FORBIDDEN, "{method} {path}");
        }
        let all = send(&router, Method::GET, "/api/v1/configmaps", &token, None).await;
        assert_eq!(
            all.json()["message"],
            format!("configmaps is forbidden: User \"{BUILDER}\" cannot list resource \"configmaps\" in API group \"\" at the cluster scope")
        );

        // The reviews answer as the authorizer decides.
        let review = |verb: &str, resource: &str| {
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                   "spec": {"resourceAttributes": {"namespace": "team-a", "verb": verb, "resource": resource}}})
        };
        let path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
        let allowed = send(&router, Method::POST, path, &token, Some(review("list", "configmaps"))).await;
        assert_eq!(allowed.status, StatusCode::CREATED, "{}", allowed.text());
        assert_eq!(allowed.json()["status"]["allowed"], true);
        assert_eq!(
            allowed.json()["status"]["reason"],
            "RBAC: allowed by RoleBinding \"builder-view/team-a\" of ClusterRole \"view\" to ServiceAccount \"builder/team-a\""
        );
        let denied = send(&router, Method::POST, path, &token, Some(review("create", "configmaps"))).await;
        assert_eq!(denied.json()["status"]["allowed"], false);
        let rules = send(
            &router,
            Method::POST,
            "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
            &token,
            Some(json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": "team-a"}})),
        )
        .await
        .json();
        let resource_rules = rules["status"]["resourceRules"].as_array().unwrap();
        assert!(resource_rules.iter().any(|r| r["resources"].as_array().unwrap().contains(&json!("configmaps"))));
        assert!(!resource_rules.iter().any(|r| r["resources"].as_array().unwrap().contains(&json!("secrets"))
            && r["verbs"].as_array().unwrap().contains(&json!("get"))));
        let sar = server
            .send(
                Method::POST,
                "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                Some(json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                    "spec": {"user": BUILDER, "groups": ["system:serviceaccounts"],
                             "resourceAttributes": {"namespace": "team-b", "verb": "get", "resource": "configmaps"}}})),
            )
            .await;
        assert_eq!(sar.json()["status"]["allowed"], false);

        // Deleting the binding takes the access away at once.
        let deleted = server
            .send(Method::DELETE, &format!("{RBAC}/namespaces/team-a/rolebindings/builder-view"), None)
            .await;
        assert_eq!(deleted.status, StatusCode::OK);
        assert_eq!(send(&router, Method::GET, get_x, &token, None).await.status, StatusCode::FORBIDDEN);
    })
    .await;
}

#[tokio::test]
async fn escalation_is_refused_unless_the_caller_may_bind_or_escalate() {
    within(async {
        let (server, token) = with_builder().await;
        let router = server.router();
        let made = server
            .send(
                Method::POST,
                &format!("{RBAC}/namespaces/team-a/rolebindings"),
                Some(binding("RoleBinding", "builder-admin", "ClusterRole", "admin")),
            )
            .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
        let roles = format!("{RBAC}/namespaces/team-a/roles");
        let role = |name: &str, rules: Value| {
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                   "metadata": {"name": name}, "rules": rules})
        };
        let held = role("cm-reader", json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]));
        let created = send(&router, Method::POST, &roles, &token, Some(held)).await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());

        let everything = role("everything", json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                                                 {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]));
        let refused = send(&router, Method::POST, &roles, &token, Some(everything)).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text());
        let message = refused.json()["message"].as_str().unwrap().to_owned();
        assert!(
            message.starts_with(&format!(
                "roles.rbac.authorization.k8s.io \"everything\" is forbidden: user \"{BUILDER}\" (groups=[\"system:serviceaccounts\" \"system:serviceaccounts:team-a\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n"
            )),
            "{message}"
        );
        assert!(message.contains(r#"{APIGroups:[""], Resources:["nodes"], Verbs:["get"]}"#), "{message}");
        let gone = send(&router, Method::GET, &format!("{roles}/everything"), &token, None).await;
        assert_eq!(gone.status, StatusCode::NOT_FOUND, "nothing was stored");

        // Binding cluster-admin grants more than the builder holds.
        let bindings = format!("{RBAC}/namespaces/team-a/rolebindings");
        let escalate = binding("RoleBinding", "builder-root", "ClusterRole", "cluster-admin");
        let refused = send(&router, Method::POST, &bindings, &token, Some(escalate.clone())).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text());
        // Binding what it holds is fine.
        let fine = binding("RoleBinding", "builder-cm", "Role", "cm-reader");
        assert_eq!(send(&router, Method::POST, &bindings, &token, Some(fine)).await.status, StatusCode::CREATED);

        // Allowed to bind cluster-admin, it may.
        let may_bind = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "bind-cluster-admin"},
            "rules": [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"],
                       "resourceNames": ["cluster-admin"], "verbs": ["bind"]}]});
        assert_eq!(server.send(Method::POST, &format!("{RBAC}/clusterroles"), Some(may_bind)).await.status, StatusCode::CREATED);
        let grant = binding("RoleBinding", "builder-binds", "ClusterRole", "bind-cluster-admin");
        assert_eq!(server.send(Method::POST, &bindings, Some(grant)).await.status, StatusCode::CREATED);
        let allowed = send(&router, Method::POST, &bindings, &token, Some(escalate)).await;
        assert_eq!(allowed.status, StatusCode::CREATED, "{}", allowed.text());

        // An aggregationRule needs cluster-admin's rules, which a namespace's admin lacks.
        let aggregating = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "sneaky"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}});
        let refused = send(&router, Method::POST, &format!("{RBAC}/clusterroles"), &token, Some(aggregating)).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN);
    })
    .await;
}

#[tokio::test]
async fn impersonation_needs_the_impersonate_verb() {
    within(async {
        let (server, token) = with_builder().await;
        let router = server.router();
        let get_x = "/api/v1/namespaces/team-a/configmaps/x";
        let refused = send_with(&router, Method::GET, get_x, Some(&token), &[("Impersonate-User", "alice")]).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN);
        assert_eq!(
            refused.json()["message"],
            format!("users \"alice\" is forbidden: User \"{BUILDER}\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope")
        );
        let admin = server.token();
        let as_alice = send_with(&router, Method::GET, get_x, Some(&admin), &[("Impersonate-User", "alice")]).await;
        assert_eq!(as_alice.status, StatusCode::FORBIDDEN);
        assert!(as_alice.text().contains(r#"User \"alice\" cannot get"#), "{}", as_alice.text());
        let as_masters = send_with(
            &router,
            Method::GET,
            get_x,
            Some(&admin),
            &[("Impersonate-User", "alice"), ("Impersonate-Group", "system:masters")],
        )
        .await;
        assert_eq!(as_masters.status, StatusCode::OK);
        let no_user = send_with(&router, Method::GET, get_x, Some(&admin), &[("Impersonate-Group", "x")]).await;
        assert_eq!(no_user.status, StatusCode::BAD_REQUEST);
        let whoami = send(
            &router,
            Method::POST,
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            &admin,
            Some(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})),
        )
        .await;
        assert_eq!(whoami.json()["status"]["userInfo"]["username"], "atoll-admin");
    })
    .await;
}

#[tokio::test]
async fn anonymous_callers_read_health_and_version_only() {
    within(async {
        let server = TestServer::start(StorageKind::Memory, |_| {}).await;
        let router = server.router();
        for path in ["/healthz", "/livez", "/readyz", "/version"] {
            let answer = send_with(&router, Method::GET, path, None, &[]).await;
            assert_eq!(answer.status, StatusCode::OK, "{path}");
        }
        for path in [
            "/api",
            "/api/v1/namespaces",
            "/openapi/v2",
            "/metrics",
            "/nowhere",
        ] {
            let answer = send_with(&router, Method::GET, path, None, &[]).await;
            assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{path}");
        }
        let bad = send_with(&router, Method::GET, "/healthz", Some("not-a-token"), &[]).await;
        assert_eq!(
            bad.status,
            StatusCode::UNAUTHORIZED,
            "a bad token is refused everywhere"
        );
    })
    .await;
}

#[tokio::test]
async fn the_default_roles_exist_and_aggregate_labelled_roles() {
    within(async {
        let server = TestServer::start(StorageKind::Memory, |_| {}).await;
        for name in ["cluster-admin", "admin", "edit", "view", "system:discovery", "system:basic-user", "system:public-info-viewer"] {
            let role = server.send(Method::GET, &format!("{RBAC}/clusterroles/{name}"), None).await;
            assert_eq!(role.status, StatusCode::OK, "{name}");
            assert_eq!(role.json()["metadata"]["labels"]["kubernetes.io/bootstrapping"], "rbac-defaults");
        }
        let admin = server.send(Method::GET, &format!("{RBAC}/clusterroles/admin"), None).await.json();
        let admin_rules = admin["rules"].as_array().unwrap();
        assert!(
            admin_rules.iter().any(|r| r["resources"].as_array().unwrap().contains(&json!("rolebindings"))),
            "admin aggregates system:aggregate-to-admin"
        );
        assert!(
            admin_rules.iter().any(|r| r["resources"].as_array().unwrap().contains(&json!("deployments"))),
            "admin aggregates edit, which aggregates view"
        );
        let widgets = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "widgets-view", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
            "rules": [{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get", "list", "watch"]}]});
        assert_eq!(server.send(Method::POST, &format!("{RBAC}/clusterroles"), Some(widgets)).await.status, StatusCode::CREATED);
        let holds_widgets = |role: &Value| {
            role["rules"].as_array().is_some_and(|rules| rules.iter().any(|r| r["resources"] == json!(["widgets"])))
        };
        for role in ["view", "edit", "admin"] {
            let mut found = false;
            for _ in 0..100 {
                let now = server.send(Method::GET, &format!("{RBAC}/clusterroles/{role}"), None).await.json();
                if holds_widgets(&now) {
                    found = true;
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            assert!(found, "{role} took in the rules of a role labelled aggregate-to-view");
        }
        let removed = server.send(Method::DELETE, &format!("{RBAC}/clusterroles/widgets-view"), None).await;
        assert_eq!(removed.status, StatusCode::OK);
        let mut dropped = false;
        for _ in 0..100 {
            let view = server.send(Method::GET, &format!("{RBAC}/clusterroles/view"), None).await.json();
            if !holds_widgets(&view) {
                dropped = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(dropped, "view lost the rules of the deleted role");
    })
    .await;
}

#[tokio::test]
async fn the_servers_controllers_are_allowed_what_upstreams_controller_roles_allow() {
    within(async {
        let server = TestServer::start(StorageKind::Memory, |_| {}).await;
        let review = |account: &str, attributes: Value| {
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                "spec": {"user": format!("system:serviceaccount:kube-system:{account}"),
                         "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"],
                         "resourceAttributes": attributes}})
        };
        let path = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
        let resource = |verb: &str, group: &str, resource: &str| {
            json!({"namespace": "team", "verb": verb, "group": group, "resource": resource})
        };
        let signer = |verb: &str, name: &str| {
            json!({"verb": verb, "group": "certificates.k8s.io", "resource": "signers", "name": name})
        };
        for (account, attributes, allowed) in [
            ("generic-garbage-collector", resource("delete", "apps", "deployments"), true),
            ("generic-garbage-collector", resource("create", "", "configmaps"), false),
            ("namespace-controller", resource("deletecollection", "", "secrets"), true),
            ("namespace-controller", resource("update", "", "secrets"), false),
            ("service-account-controller", resource("create", "", "serviceaccounts"), true),
            ("service-account-controller", resource("delete", "", "serviceaccounts"), false),
            ("root-ca-cert-publisher", resource("update", "", "configmaps"), true),
            ("root-ca-cert-publisher", resource("delete", "", "configmaps"), false),
            ("endpointslice-controller", resource("create", "discovery.k8s.io", "endpointslices"), true),
            ("endpoint-controller", resource("update", "", "endpoints"), true),
            ("endpoint-controller", resource("update", "", "services"), false),
            ("certificate-controller", signer("sign", "kubernetes.io/kube-apiserver-client"), true),
            ("certificate-controller", signer("sign", "example.com/private"), false),
            ("clusterrole-aggregation-controller", json!({"verb": "escalate", "group": "rbac.authorization.k8s.io", "resource": "clusterroles"}), true),
            ("validatingadmissionpolicy-status-controller", json!({"verb": "patch", "group": "admissionregistration.k8s.io", "resource": "validatingadmissionpolicies", "subresource": "status"}), true),
            ("validatingadmissionpolicy-status-controller", json!({"verb": "delete", "group": "admissionregistration.k8s.io", "resource": "validatingadmissionpolicies"}), false),
        ] {
            let answer = server.send(Method::POST, path, Some(review(account, attributes.clone()))).await;
            assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text());
            let status = &answer.json()["status"];
            assert_eq!(status["allowed"], allowed, "{account} {attributes}: {status}");
            if allowed {
                assert_eq!(
                    status["reason"],
                    format!("RBAC: allowed by ClusterRoleBinding \"system:controller:{account}\" of ClusterRole \"system:controller:{account}\" to ServiceAccount \"{account}/kube-system\"")
                );
            }
        }
        let binding = server
            .send(Method::GET, &format!("{RBAC}/clusterrolebindings/system:controller:generic-garbage-collector"), None)
            .await
            .json();
        assert_eq!(binding["metadata"]["labels"]["kubernetes.io/bootstrapping"], "rbac-defaults");
        assert_eq!(
            binding["subjects"],
            json!([{"kind": "ServiceAccount", "name": "generic-garbage-collector", "namespace": "kube-system"}])
        );
    })
    .await;
}

#[tokio::test]
async fn a_service_accounts_tokens_end_with_it() {
    within(async {
        let (server, token) = with_builder().await;
        let router = server.router();
        assert_eq!(send(&router, Method::GET, "/api", &token, None).await.status, StatusCode::OK);
        let account = "/api/v1/namespaces/team-a/serviceaccounts/builder";
        assert_eq!(server.send(Method::DELETE, account, None).await.status, StatusCode::OK);
        assert_eq!(
            send(&router, Method::GET, "/api", &token, None).await.status,
            StatusCode::UNAUTHORIZED,
            "the account is gone"
        );
        let again = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "builder"}});
        let made = server
            .send(Method::POST, "/api/v1/namespaces/team-a/serviceaccounts", Some(again))
            .await;
        assert_eq!(made.status, StatusCode::CREATED);
        assert_eq!(
            send(&router, Method::GET, "/api", &token, None).await.status,
            StatusCode::UNAUTHORIZED,
            "an account of the same name made again does not inherit the token"
        );
        let review = server
            .send(
                Method::POST,
                "/apis/authentication.k8s.io/v1/tokenreviews",
                Some(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}})),
            )
            .await
            .json();
        assert_eq!(review["status"]["error"], "service account token has been invalidated");
        assert!(review["status"].get("authenticated").is_none());
    })
    .await;
}
