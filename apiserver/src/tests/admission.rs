//! ValidatingAdmissionPolicies through the HTTP API: a deletecollection checks every object it
//! deletes, a denial's status carries upstream's reason, code and cause and the warnings given
//! before it, and each policy's status shows its type checking.

use http::{Method, StatusCode};
use serde_json::json;

use super::{TestServer, config_map, within};
use crate::StorageKind;

#[tokio::test]
async fn policies_check_each_object_of_a_deletecollection() {
    within(async {
        let server = TestServer::start(StorageKind::Memory, |_| {}).await;
        server.create_config_maps("team", &["a", "keep-b", "c"]).await;
        let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "keep"},
            "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""],
                "apiVersions": ["v1"], "operations": ["DELETE", "CREATE"], "resources": ["configmaps"]}]},
                "validations": [{"expression": "request.operation != 'DELETE' || !oldObject.metadata.name.startsWith('keep')",
                    "message": "kept", "reason": "Forbidden"}]}});
        let warn = json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "warn"},
            "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""],
                "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}]},
                "validations": [{"expression": "object.data.k != 'warn'"}]}});
        let warn_binding = json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "warn-binding"},
            "spec": {"policyName": "warn", "validationActions": ["Warn"]}});
        let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "keep-binding"},
            "spec": {"policyName": "keep", "validationActions": ["Deny"]}});
        let group = "/apis/admissionregistration.k8s.io/v1";
        for (path, body) in [
            ("validatingadmissionpolicies", policy),
            ("validatingadmissionpolicybindings", binding),
            ("validatingadmissionpolicies", warn),
            ("validatingadmissionpolicybindings", warn_binding),
        ] {
            let made = server
                .send(Method::POST, &format!("{group}/{path}"), Some(body))
                .await;
            assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
        }

        let refused = server
            .send(Method::DELETE, "/api/v1/namespaces/team/configmaps", None)
            .await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text());
        let status = refused.json();
        assert_eq!(
            status["message"],
            "configmaps \"keep-b\" is forbidden: ValidatingAdmissionPolicy 'keep' with binding 'keep-binding' denied request: kept"
        );
        assert_eq!(status["reason"], "Forbidden");
        assert_eq!(
            status["details"],
            json!({"name": "keep-b", "kind": "configmaps", "causes": [{"message": "ValidatingAdmissionPolicy 'keep' with binding 'keep-binding' denied request: kept"}]})
        );
        let kept = server
            .send(Method::GET, "/api/v1/namespaces/team/configmaps/keep-b", None)
            .await;
        assert_eq!(kept.status, StatusCode::OK);

        // The Warn action's warning reaches the Warning header of the write it lets through.
        let warned = server
            .send(
                Method::POST,
                "/api/v1/namespaces/team/configmaps",
                Some(config_map("w", json!({"k": "warn"}))),
            )
            .await;
        assert_eq!(warned.status, StatusCode::CREATED, "{}", warned.text());
        let warning = warned.headers.get(http::header::WARNING).map(|v| v.to_str().unwrap_or_default().to_owned());
        assert_eq!(
            warning.as_deref(),
            Some("299 - \"Validation failed for ValidatingAdmissionPolicy 'warn' with binding 'warn-binding': failed expression: object.data.k != 'warn'\"")
        );
    })
    .await;
}

const GROUP: &str = "/apis/admissionregistration.k8s.io/v1";

fn on_config_maps(name: &str, operations: &[&str], expression: &str) -> serde_json::Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""],
            "apiVersions": ["v1"], "operations": operations, "resources": ["configmaps"]}]},
            "validations": [{"expression": expression, "message": format!("{name} says no")}]}})
}

fn binding_of(policy: &str, action: &str) -> serde_json::Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": format!("{policy}-binding")},
        "spec": {"policyName": policy, "validationActions": [action]}})
}

fn warnings(answer: &super::Answer) -> Vec<String> {
    answer
        .headers
        .get_all(http::header::WARNING)
        .iter()
        .map(|v| v.to_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn a_refused_request_answers_the_warnings_given_before_it() {
    within(async {
        let server = TestServer::start(StorageKind::Memory, |_| {}).await;
        server.create_config_maps("team", &["old"]).await;
        for (name, action) in [("warns", "Warn"), ("denies", "Deny")] {
            let policy = on_config_maps(name, &["CREATE", "DELETE"], "request.operation == 'DELETE' ? oldObject.metadata.name != 'old' : object.data.k != 'x'");
            let made = server.send(Method::POST, &format!("{GROUP}/validatingadmissionpolicies"), Some(policy)).await;
            assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
            let made = server.send(Method::POST, &format!("{GROUP}/validatingadmissionpolicybindings"), Some(binding_of(name, action))).await;
            assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
        }
        let expected = ["299 - \"Validation failed for ValidatingAdmissionPolicy 'warns' with binding 'warns-binding': warns says no\""];

        let refused = server
            .send(Method::POST, "/api/v1/namespaces/team/configmaps", Some(config_map("x", json!({"k": "x"}))))
            .await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text());
        assert!(refused.json()["message"].as_str().unwrap_or_default().contains("denies says no"));
        assert_eq!(warnings(&refused), expected);

        let refused = server
            .send(Method::DELETE, "/api/v1/namespaces/team/configmaps/old", None)
            .await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text());
        assert_eq!(warnings(&refused), expected);

        // A request refused before any check warned answers no warning.
        let refused = server
            .send(Method::POST, "/api/v1/namespaces/team/configmaps", Some(config_map("Bad_Name", json!({"k": "x"}))))
            .await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text());
        assert_eq!(warnings(&refused), Vec::<String>::new());
    })
    .await;
}

/// The policy's status once its controller has written the status of its current generation.
async fn status_of(server: &TestServer, name: &str) -> serde_json::Value {
    loop {
        let got = server
            .send(
                Method::GET,
                &format!("{GROUP}/validatingadmissionpolicies/{name}"),
                None,
            )
            .await;
        assert_eq!(got.status, StatusCode::OK, "{}", got.text());
        let policy = got.json();
        if policy["status"]["observedGeneration"] == policy["metadata"]["generation"] {
            return policy;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn policies_show_their_type_checking_in_status() {
    within(async {
        let server = TestServer::start(StorageKind::Memory, |_| {}).await;
        let mut policy = json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "replicas"},
            "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": ["apps"],
                "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["deployments"]}]},
                "validations": [{"expression": "object.spec.replicsa <= 5"}]}});
        let path = format!("{GROUP}/validatingadmissionpolicies");
        let made = server.send(Method::POST, &path, Some(policy.clone())).await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
        assert_eq!(made.json()["metadata"]["generation"], 1);
        let stored = status_of(&server, "replicas").await;
        assert_eq!(
            stored["status"]["typeChecking"],
            json!({"expressionWarnings": [{"fieldRef": "spec.validations[0].expression",
                "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replicsa'\n | object.spec.replicsa <= 5\n | ...........^\n"}]})
        );

        // Fixed: a new generation, checked again, without warnings.
        policy["spec"]["validations"][0]["expression"] = json!("object.spec.replicas <= 5");
        policy["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"].clone();
        let fixed = server.send(Method::PUT, &format!("{path}/replicas"), Some(policy)).await;
        assert_eq!(fixed.status, StatusCode::OK, "{}", fixed.text());
        assert_eq!(fixed.json()["metadata"]["generation"], 2);
        let stored = status_of(&server, "replicas").await;
        assert_eq!(stored["status"]["observedGeneration"], 2);
        assert_eq!(stored["status"]["typeChecking"], json!({}));
        assert_eq!(stored["metadata"]["generation"], 2, "a status write is no new generation");
    })
    .await;
}

#[tokio::test]
async fn a_policy_is_checked_again_when_the_crd_it_names_arrives() {
    within(async {
        let server = TestServer::start(StorageKind::Memory, |_| {}).await;
        let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "widgets"},
            "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": ["example.com"],
                "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["widgets"]}]},
                "validations": [{"expression": "object.spec.colour == 'red' && object.metadata.labels.size() < 3"}]}});
        let made = server.send(Method::POST, &format!("{GROUP}/validatingadmissionpolicies"), Some(policy)).await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
        // No kind to check against yet.
        assert_eq!(status_of(&server, "widgets").await["status"]["typeChecking"], json!({}));

        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {"color": {"type": "string"}}}}}}}]}});
        let made = server
            .send(Method::POST, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", Some(crd))
            .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
        let warning = loop {
            let policy = status_of(&server, "widgets").await;
            if let Some(warning) = policy["status"]["typeChecking"]["expressionWarnings"][0]["warning"].as_str() {
                break warning.to_owned();
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        };
        assert!(
            warning.starts_with("example.com/v1, Kind=Widget: ERROR: <input>:1:12: undefined field 'colour'"),
            "{warning}"
        );
        // Custom resources have all of ObjectMeta, as their published schema.
        assert_eq!(warning.matches("ERROR:").count(), 1, "{warning}");
    })
    .await;
}
