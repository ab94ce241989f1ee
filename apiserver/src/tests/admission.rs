//! ValidatingAdmissionPolicies through the HTTP API: a deletecollection checks every object it
//! deletes, and a denial's status carries upstream's reason, code and cause.

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
