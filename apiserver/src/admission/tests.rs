//! The engine on its own: matching, params, and each action and failure path.

use std::sync::{Arc, Mutex};

use atoll_cel::library::authz;
use serde_json::{Value, json};

use super::policies::{Binding, Policy, PolicySet};
use super::*;

struct Fake {
    namespaces: Vec<Value>,
    config_maps: Vec<Value>,
    /// What the authorizer was asked, as `user verb group/resource/subresource/namespace/name`.
    asked: Arc<Mutex<Vec<String>>>,
}

/// Allows alice to update configmaps in namespace `test`, everyone to get anything, and
/// fails on verb `fail`.
#[derive(Debug)]
struct FakeChecks {
    user: String,
    asked: Arc<Mutex<Vec<String>>>,
}

impl authz::Authorizer for FakeChecks {
    fn authorize(&self, a: &authz::Attributes<'_>) -> authz::Decision {
        let user = a
            .service_account
            .map_or(self.user.clone(), |sa| sa.username());
        let authz::Target::Resource(r) = a.target else {
            return authz::Decision::deny("");
        };
        self.asked.lock().unwrap().push(format!(
            "{user} {} {}/{}/{}/{}/{}",
            a.verb, r.group, r.resource, r.subresource, r.namespace, r.name
        ));
        match (user.as_str(), a.verb, r.resource, r.namespace) {
            (_, "fail", ..) => authz::Decision::error("authorizer unavailable"),
            (_, "get", ..) | ("alice", "update", "configmaps", "test") => {
                authz::Decision::allow("RBAC: allowed by test")
            }
            _ => authz::Decision::deny("not allowed by test"),
        }
    }
}

impl Lookup for Fake {
    fn authorizer(&self, user: &crate::auth::User) -> Option<Arc<dyn authz::Authorizer>> {
        Some(Arc::new(FakeChecks {
            user: user.name.clone(),
            asked: self.asked.clone(),
        }))
    }
    fn namespace(&self, name: &str) -> Option<Value> {
        self.namespaces
            .iter()
            .find(|n| n["metadata"]["name"] == name)
            .cloned()
    }
    fn param_kind_namespaced(&self, api_version: &str, kind: &str) -> Option<bool> {
        (api_version == "v1" && kind == "ConfigMap").then_some(true)
    }
    fn params(
        &self,
        _: &str,
        _: &str,
        namespace: Option<&str>,
        name: Option<&str>,
        selector: Option<&Value>,
    ) -> Vec<Value> {
        self.config_maps
            .iter()
            .filter(|c| namespace.is_none_or(|ns| c["metadata"]["namespace"] == ns))
            .filter(|c| name.is_none_or(|n| c["metadata"]["name"] == n))
            .filter(|c| {
                selector.is_none_or(|s| {
                    crate::registry::selector::matches_label_selector(s, &c["metadata"]["labels"])
                })
            })
            .cloned()
            .collect()
    }
}

fn fake() -> Fake {
    Fake {
        namespaces: vec![
            json!({"metadata": {"name": "test", "labels": {"environment": "test"}}}),
            json!({"metadata": {"name": "prod", "labels": {"environment": "prod"}}}),
        ],
        config_maps: vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "limits", "namespace": "test", "labels": {"use": "limits"}},
            "data": {"max": "3"}})],
        asked: Default::default(),
    }
}

fn replicas_policy(extra: Value) -> Value {
    let mut policy = json!({"metadata": {"name": "demo-policy.example.com"}, "spec": {
        "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
        "validations": [{"expression": "object.spec.replicas <= 5"}]}});
    if let (Some(spec), Some(extra)) = (policy["spec"].as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            spec.insert(k.clone(), v.clone());
        }
    }
    policy
}

fn binding(actions: &[&str], extra: Value) -> Value {
    let mut binding = json!({"metadata": {"name": "demo-binding"}, "spec": {
        "policyName": "demo-policy.example.com", "validationActions": actions}});
    if let (Some(spec), Some(extra)) = (binding["spec"].as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            spec.insert(k.clone(), v.clone());
        }
    }
    binding
}

fn set(policy: Value, binding: Value) -> PolicySet {
    let mut set = PolicySet::default();
    let p = Policy::compile(&policy);
    let b = Binding::read(&binding);
    set.policies.insert(p.name.clone(), Arc::new(p));
    set.bindings.insert(b.name.clone(), Arc::new(b));
    set.settle();
    set
}

fn deployment(replicas: i64, labels: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "test", "labels": labels},
        "spec": {"replicas": replicas}})
}

fn run(set: &PolicySet, object: &Value, subresource: &str, namespace: &str) -> Outcome {
    run_as("alice", set, object, subresource, namespace, &fake())
}

fn run_as(
    user: &str,
    set: &PolicySet,
    object: &Value,
    subresource: &str,
    namespace: &str,
    lookup: &Fake,
) -> Outcome {
    let user = crate::auth::User {
        name: user.into(),
        uid: String::new(),
        groups: vec!["devs".into()],
        extra: Default::default(),
    };
    let versions = Versions::known(vec!["v1".to_owned()]);
    let request = Request {
        operation: Operation::Create,
        group: "apps",
        version: "v1",
        resource: "deployments",
        subresource,
        kind: ("apps", "v1", "Deployment"),
        equivalent_versions: &versions,
        name: "web",
        namespace,
        namespaced: true,
        object: Some(object),
        old_object: None,
        user: &user,
        dry_run: false,
        uid: &Default::default(),
    };
    evaluate(set, &request, lookup)
}

#[test]
fn deny_refuses_with_upstreams_message_and_code() {
    let set = set(replicas_policy(json!({})), binding(&["Deny"], json!({})));
    let outcome = run(&set, &deployment(6, json!({})), "", "test");
    let denial = outcome.denial.expect("denied");
    let error = denial_error(&denial, "apps", "deployments", "web");
    assert_eq!(
        error.to_string(),
        "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'demo-policy.example.com' with binding 'demo-binding' denied request: failed expression: object.spec.replicas <= 5"
    );
    assert_eq!(error.code().as_u16(), 422);
    let status = error.to_status();
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(status["details"]["kind"], "deployments");
    assert!(
        run(&set, &deployment(5, json!({})), "", "test")
            .denial
            .is_none()
    );
}

#[test]
fn reasons_choose_the_code_and_messages_the_text() {
    let policy = replicas_policy(
        json!({"validations": [{"expression": "object.spec.replicas <= 5",
        "reason": "Forbidden", "message": "too many",
        "messageExpression": "'replicas ' + string(object.spec.replicas) + ' > 5'"}]}),
    );
    let set = set(policy, binding(&["Deny"], json!({})));
    let denial = run(&set, &deployment(7, json!({})), "", "test")
        .denial
        .expect("denied");
    assert_eq!(denial.message, "replicas 7 > 5");
    let error = denial_error(&denial, "apps", "deployments", "web");
    assert_eq!(error.code().as_u16(), 403);
    for (reason, code) in [("Unauthorized", 401), ("RequestEntityTooLarge", 413)] {
        let d = Denial {
            reason: reason.into(),
            ..denial.clone()
        };
        assert_eq!(
            denial_error(&d, "apps", "deployments", "web")
                .code()
                .as_u16(),
            code
        );
    }
}

#[test]
fn warn_and_audit_admit_with_warnings() {
    let set = set(
        replicas_policy(json!({})),
        binding(&["Warn", "Audit"], json!({})),
    );
    let outcome = run(&set, &deployment(6, json!({})), "", "test");
    assert!(outcome.denial.is_none());
    assert_eq!(
        outcome.warnings,
        [
            "Validation failed for ValidatingAdmissionPolicy 'demo-policy.example.com' with binding 'demo-binding': failed expression: object.spec.replicas <= 5"
        ]
    );
    assert_eq!(outcome.audit_annotations.len(), 1);
}

#[test]
fn matching_by_rules_selectors_and_subresources() {
    let scoped = binding(
        &["Deny"],
        json!({"matchResources": {"namespaceSelector": {"matchLabels": {"environment": "test"}}}}),
    );
    let set1 = set(replicas_policy(json!({})), scoped);
    assert!(
        run(&set1, &deployment(6, json!({})), "", "test")
            .denial
            .is_some()
    );
    assert!(
        run(&set1, &deployment(6, json!({})), "", "prod")
            .denial
            .is_none()
    );
    // A subresource write is not matched by `deployments`, but is by `deployments/*`.
    let set2 = set(replicas_policy(json!({})), binding(&["Deny"], json!({})));
    assert!(
        run(&set2, &deployment(6, json!({})), "status", "test")
            .denial
            .is_none()
    );
    let sub = replicas_policy(
        json!({"matchConstraints": {"resourceRules": [{"apiGroups": ["*"],
        "apiVersions": ["*"], "operations": ["*"], "resources": ["deployments/*"]}]}}),
    );
    let set3 = set(sub, binding(&["Deny"], json!({})));
    assert!(
        run(&set3, &deployment(6, json!({})), "status", "test")
            .denial
            .is_some()
    );
    // Object selector and exclusions.
    let selected = binding(
        &["Deny"],
        json!({"matchResources": {"objectSelector": {"matchLabels": {"app": "web"}}}}),
    );
    let set4 = set(replicas_policy(json!({})), selected);
    assert!(
        run(&set4, &deployment(6, json!({"app": "web"})), "", "test")
            .denial
            .is_some()
    );
    assert!(
        run(&set4, &deployment(6, json!({"app": "db"})), "", "test")
            .denial
            .is_none()
    );
    let excluding = binding(
        &["Deny"],
        json!({"matchResources": {"excludeResourceRules": [{"apiGroups": ["apps"],
            "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["deployments"]}]}}),
    );
    let set5 = set(replicas_policy(json!({})), excluding);
    assert!(
        run(&set5, &deployment(6, json!({})), "", "test")
            .denial
            .is_none()
    );
    // Another version of the resource matches under Equivalent only.
    let other = replicas_policy(
        json!({"matchConstraints": {"resourceRules": [{"apiGroups": ["apps"],
        "apiVersions": ["v1beta2"], "operations": ["CREATE"], "resources": ["deployments"]}]}}),
    );
    let set6 = set(other, binding(&["Deny"], json!({})));
    assert!(
        run(&set6, &deployment(6, json!({})), "", "test")
            .denial
            .is_none()
    );
}

#[test]
fn params_by_name_and_selector_and_when_missing() {
    let policy = replicas_policy(json!({
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "validations": [{"expression": "object.spec.replicas <= int(params.data.max)"}]}));
    let by_name = binding(&["Deny"], json!({"paramRef": {"name": "limits"}}));
    let set1 = set(policy.clone(), by_name);
    assert!(
        run(&set1, &deployment(4, json!({})), "", "test")
            .denial
            .is_some()
    );
    assert!(
        run(&set1, &deployment(3, json!({})), "", "test")
            .denial
            .is_none()
    );
    let by_selector = binding(
        &["Deny"],
        json!({"paramRef": {"selector": {"matchLabels": {"use": "limits"}}}}),
    );
    let set2 = set(policy.clone(), by_selector);
    assert!(
        run(&set2, &deployment(4, json!({})), "", "test")
            .denial
            .is_some()
    );
    let missing = binding(
        &["Deny"],
        json!({"paramRef": {"name": "absent", "parameterNotFoundAction": "Deny"}}),
    );
    let set3 = set(policy.clone(), missing);
    let denial = run(&set3, &deployment(1, json!({})), "", "test")
        .denial
        .expect("denied");
    assert_eq!(
        denial.message(),
        "ValidatingAdmissionPolicy 'demo-policy.example.com' with binding 'demo-binding' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
    );
    let allowed = binding(
        &["Deny"],
        json!({"paramRef": {"name": "absent", "parameterNotFoundAction": "Allow"}}),
    );
    let set4 = set(policy, allowed);
    assert!(
        run(&set4, &deployment(9, json!({})), "", "test")
            .denial
            .is_none()
    );
}

#[test]
fn errors_follow_the_failure_policy() {
    let failing = json!({"validations": [{"expression": "object.spec.missing > 1"}]});
    let set1 = set(
        replicas_policy(failing.clone()),
        binding(&["Deny"], json!({})),
    );
    let denial = run(&set1, &deployment(1, json!({})), "", "test")
        .denial
        .expect("denied");
    assert!(
        denial
            .message
            .starts_with("expression 'object.spec.missing > 1' resulted in error: "),
        "{}",
        denial.message
    );
    let mut ignoring = failing;
    ignoring["failurePolicy"] = json!("Ignore");
    let set2 = set(replicas_policy(ignoring), binding(&["Deny"], json!({})));
    assert!(
        run(&set2, &deployment(1, json!({})), "", "test")
            .denial
            .is_none()
    );
    // A compile error, under Fail.
    let broken = json!({"validations": [{"expression": "object.spec.replicas <="}]});
    let set3 = set(replicas_policy(broken), binding(&["Deny"], json!({})));
    let denial = run(&set3, &deployment(1, json!({})), "", "test")
        .denial
        .expect("denied");
    assert!(
        denial
            .message
            .starts_with("compilation error: compilation failed: ")
    );
}

#[test]
fn match_conditions_and_variables() {
    let policy = replicas_policy(json!({
        "matchConditions": [{"name": "not-system", "expression": "request.userInfo.username != 'system:admin'"},
            {"name": "labelled", "expression": "has(object.metadata.labels) && 'app' in object.metadata.labels"}],
        "variables": [{"name": "limit", "expression": "5"},
            {"name": "over", "expression": "object.spec.replicas > variables.limit"}],
        "validations": [{"expression": "!variables.over", "messageExpression": "'at most ' + string(variables.limit)"}]}));
    let set = set(policy, binding(&["Deny"], json!({})));
    assert!(
        run(&set, &deployment(6, json!({})), "", "test")
            .denial
            .is_none()
    );
    let denial = run(&set, &deployment(6, json!({"app": "web"})), "", "test")
        .denial
        .expect("denied");
    assert_eq!(denial.message, "at most 5");
    // Reading a variable that failed is its error.
    let failing = replicas_policy(json!({
        "variables": [{"name": "bad", "expression": "object.spec.nope"}],
        "validations": [{"expression": "variables.bad == 1"}]}));
    let set3 = super::tests::set(failing, binding(&["Deny"], json!({})));
    let denial = run(&set3, &deployment(1, json!({})), "", "test")
        .denial
        .expect("denied");
    assert!(
        denial.message.starts_with(
            "expression 'variables.bad == 1' resulted in error: composited variable \"bad\" fails to evaluate: "
        ),
        "{}",
        denial.message
    );
    // A condition that errors goes to the failure policy.
    let erroring = replicas_policy(json!({
        "matchConditions": [{"name": "bad", "expression": "object.nope == 1"}]}));
    let set2 = super::tests::set(erroring, binding(&["Deny"], json!({})));
    assert!(
        run(&set2, &deployment(1, json!({})), "", "test")
            .denial
            .is_some()
    );
}

#[test]
fn policies_see_the_fields_they_select_as_if_given_the_whole_object() {
    use super::values::{Fields, json_fields};
    let policy = replicas_policy(json!({"validations": [
        {"expression": "object.spec.replicas <= 5"},
        {"expression": "has(object.metadata.labels) && object.metadata.labels['app'] == 'web'"},
        {"expression": "!has(object.status)", "message": "no status on create"}]}));
    let set = set(policy, binding(&["Deny"], json!({})));
    let leaf = |path: &[&str]| {
        let mut fields = Fields::none();
        fields.add(Some(vec![path.iter().map(|p| Arc::from(*p)).collect()]));
        fields
    };
    let mut expected = leaf(&["spec", "replicas"]);
    expected.merge(&leaf(&["metadata", "labels"]));
    expected.merge(&leaf(&["status"]));
    assert_eq!(*set.object_fields, expected);
    assert_eq!(*set.old_object_fields, Fields::none());

    let mut object = deployment(1, json!({"app": "web"}));
    object["metadata"]["managedFields"] =
        json!([{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}]);
    assert!(run(&set, &object, "", "test").denial.is_none());
    object["status"] = json!({"replicas": 0});
    let denial = run(&set, &object, "", "test").denial.expect("denied");
    assert_eq!(
        denial.message(),
        "ValidatingAdmissionPolicy 'demo-policy.example.com' with binding 'demo-binding' denied request: no status on create"
    );
    // Only what is selected is converted; a selection through what is no object sees it whole.
    let seen = json_fields(&object, &set.object_fields);
    let atoll_cel::Value::Map(map) = &seen else {
        panic!("{seen:?}")
    };
    let keys: Vec<String> = map.entries.keys().map(|k| format!("{k:?}")).collect();
    assert_eq!(keys.len(), 3, "{keys:?}");
    let mut fields = Fields::none();
    fields.add(Some(vec![vec![
        Arc::from("spec"),
        Arc::from("replicas"),
        Arc::from("x"),
    ]]));
    assert!(matches!(
        json_fields(&json!({"spec": {"replicas": 1}}), &fields),
        atoll_cel::Value::Map(_)
    ));

    // A policy reading the whole object makes every policy see it whole.
    let mut both = set.clone();
    let whole = Policy::compile(&json!({"metadata": {"name": "whole"}, "spec": {
        "validations": [{"expression": "object.all(k, k != 'x')"}]}}));
    both.policies.insert("whole".into(), Arc::new(whole));
    both.settle();
    let mut expected = Fields::none();
    expected.add(None);
    assert_eq!(*both.object_fields, expected);
}

#[test]
fn request_and_namespace_object_are_visible() {
    let policy = replicas_policy(json!({"validations": [
        {"expression": "request.operation == 'CREATE' && request.kind.kind == 'Deployment' && request.resource.resource == 'deployments' && request.namespace == 'test' && request.name == 'web' && 'devs' in request.userInfo.groups && !request.dryRun"},
        {"expression": "namespaceObject.metadata.labels.environment == 'test'"},
        {"expression": "oldObject == null && params == null"}]}));
    let set = set(policy, binding(&["Deny"], json!({})));
    let outcome = run(&set, &deployment(1, json!({})), "", "test");
    assert!(outcome.denial.is_none(), "{:?}", outcome.denial);
}

#[test]
fn expensive_expressions_run_out_of_budget() {
    let policy = replicas_policy(json!({"validations": [{"expression":
        "[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f, a + b + c + d + e + f > 0))))))"}]}));
    let set = set(policy, binding(&["Deny"], json!({})));
    let denial = run(&set, &deployment(1, json!({})), "", "test")
        .denial
        .expect("denied");
    assert!(denial.message.contains("cost"), "{}", denial.message);
}

#[test]
fn gateway_apis_safe_upgrades_policy() {
    let file = include_str!(
        "../../../tests/testdata/gateway-api/gateway.networking.k8s.io_vap_safeupgrades.yaml"
    );
    let mut docs = file.split("\n---\n");
    let policy = crate::yaml::decode(docs.next().unwrap_or_default().as_bytes()).expect("policy");
    let binding = crate::yaml::decode(docs.next().unwrap_or_default().as_bytes()).expect("binding");
    let set = set(policy, binding);
    for validation in &set.policies["safe-upgrades.gateway.networking.k8s.io"].validations {
        assert!(
            validation.expression.program.is_ok(),
            "{:?}",
            validation.expression.program
        );
    }
    let user = crate::auth::User {
        name: "admin".into(),
        uid: String::new(),
        groups: vec![],
        extra: Default::default(),
    };
    let crd = |annotations: Value| {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.gateway.networking.k8s.io", "annotations": annotations},
            "spec": {"group": "gateway.networking.k8s.io"}})
    };
    let versions = Versions::known(vec!["v1".to_owned()]);
    let decide = |object: &Value| {
        let request = Request {
            operation: Operation::Create,
            group: "apiextensions.k8s.io",
            version: "v1",
            resource: "customresourcedefinitions",
            subresource: "",
            kind: ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            equivalent_versions: &versions,
            name: "widgets.gateway.networking.k8s.io",
            namespace: "",
            namespaced: false,
            object: Some(object),
            old_object: None,
            user: &user,
            dry_run: false,
            uid: &Default::default(),
        };
        evaluate(&set, &request, &fake())
    };
    let denial = decide(&crd(json!({}))).denial.expect("denied");
    assert_eq!(
        denial.message,
        "Installing CRDs with version before v1.5.0 is prohibited by default. Uninstall ValidatingAdmissionPolicy safe-upgrades.gateway.networking.k8s.io to install older versions."
    );
    let old = decide(&crd(
        json!({"gateway.networking.k8s.io/bundle-version": "v1.4.0"}),
    ));
    assert!(old.denial.is_some());
    let current = decide(&crd(
        json!({"gateway.networking.k8s.io/bundle-version": "v1.6.1"}),
    ));
    assert!(current.denial.is_none(), "{:?}", current.denial);
}

#[test]
fn policies_whose_expressions_do_not_compile_are_invalid() {
    let policy = replicas_policy(json!({"validations": [
        {"expression": "object.spec.replicas <= 5"},
        {"expression": "object.spec.replicas <=", "messageExpression": "'x' +"}]}));
    let errors = super::policies::spec_errors(&policy);
    let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(
        fields,
        [
            "spec.validations[1].expression",
            "spec.validations[1].messageExpression"
        ]
    );
    assert!(
        errors[0]
            .to_string()
            .starts_with("spec.validations[1].expression: Invalid value: \"object.spec.replicas <=\": compilation failed: ERROR: <input>:1:"),
        "{}",
        errors[0]
    );
}

/// Upstream's documented example: a write is refused unless its author may also update the
/// ConfigMaps of the object's namespace.
fn configmap_update_policy() -> Value {
    replicas_policy(json!({"validations": [{
        "expression": "authorizer.group('').resource('configmaps').namespace(object.metadata.namespace).check('update').allowed()",
        "message": "user may not update configmaps in this namespace",
        "reason": "Forbidden"}]}))
}

#[test]
fn authorizer_checks_the_requesting_user() {
    let set = set(configmap_update_policy(), binding(&["Deny"], json!({})));
    let lookup = fake();
    let object = deployment(1, json!({}));
    assert!(
        run_as("alice", &set, &object, "", "test", &lookup)
            .denial
            .is_none()
    );
    let denial = run_as("bob", &set, &object, "", "test", &lookup)
        .denial
        .expect("bob denied");
    let error = denial_error(&denial, "apps", "deployments", "web");
    assert_eq!(
        error.to_string(),
        "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'demo-policy.example.com' with binding 'demo-binding' denied request: user may not update configmaps in this namespace"
    );
    assert_eq!(error.code().as_u16(), 403);
    assert_eq!(
        *lookup.asked.lock().unwrap(),
        [
            "alice update /configmaps//test/",
            "bob update /configmaps//test/"
        ]
    );
}

#[test]
fn request_resource_checks_the_request_itself() {
    let policy = replicas_policy(json!({"validations": [
        {"expression": "authorizer.requestResource.check('get').allowed()"},
        {"expression": "authorizer.requestResource.check('delete').allowed()"}]}));
    let set = set(policy, binding(&["Deny"], json!({})));
    let lookup = fake();
    let denial = run_as(
        "carol",
        &set,
        &deployment(1, json!({})),
        "",
        "test",
        &lookup,
    )
    .denial
    .expect("denied");
    assert_eq!(
        denial.message,
        "failed expression: authorizer.requestResource.check('delete').allowed()"
    );
    assert_eq!(
        *lookup.asked.lock().unwrap(),
        [
            "carol get apps/deployments//test/web",
            "carol delete apps/deployments//test/web"
        ]
    );
}

#[test]
fn every_expression_but_messages_may_check() {
    let policy = replicas_policy(json!({
        "matchConditions": [{"name": "may-get",
            "expression": "authorizer.group('apps').resource('deployments').check('get').allowed()"}],
        "variables": [{"name": "mayUpdate",
            "expression": "authorizer.group('').resource('configmaps').namespace('test').check('update')"}],
        "validations": [{"expression": "variables.mayUpdate.allowed()",
            "messageExpression": "'denied: ' + variables.mayUpdate.reason()"}],
        "auditAnnotations": [{"key": "robot",
            "valueExpression": "authorizer.serviceAccount('test', 'robot').group('').resource('pods').check('list').allowed() ? 'yes' : 'no'"}]}));
    let set = set(policy, binding(&["Deny"], json!({})));
    let lookup = fake();
    let outcome = run_as("bob", &set, &deployment(1, json!({})), "", "test", &lookup);
    assert_eq!(
        outcome.denial.expect("denied").message,
        "denied: not allowed by test"
    );
    assert_eq!(
        outcome.audit_annotations,
        [("demo-policy.example.com/robot".to_owned(), "no".to_owned())]
    );
    assert_eq!(
        lookup.asked.lock().unwrap().last().map(String::as_str),
        Some("system:serviceaccount:test:robot list /pods///")
    );
    // As upstream, a messageExpression has no authorizer.
    let bad = replicas_policy(json!({"validations": [{"expression": "false",
        "messageExpression": "authorizer.path('/x').check('get').reason()"}]}));
    let errors = super::policies::spec_errors(&bad);
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0]
            .message
            .contains("undeclared reference to 'authorizer'"),
        "{errors:?}"
    );
    assert!(super::policies::spec_errors(&configmap_update_policy()).is_empty());
}

#[test]
fn an_authorizer_error_is_visible_to_the_expression() {
    let policy = replicas_policy(json!({"validations": [{
        "expression": "!authorizer.requestResource.check('fail').errored()",
        "messageExpression": "'authorization failed'"}]}));
    let set = set(policy, binding(&["Deny"], json!({})));
    let denial = run(&set, &deployment(1, json!({})), "", "test")
        .denial
        .expect("denied");
    assert_eq!(denial.message, "authorization failed");
}

#[test]
fn a_policy_matched_at_an_equivalent_version_sees_the_object_at_that_version() {
    // A policy written for autoscaling/v2 reads a HorizontalPodAutoscaler written through v1
    // as v2: its CPU target is a metric there.
    let policy = json!({"metadata": {"name": "demo-policy.example.com"}, "spec": {
        "matchConstraints": {"resourceRules": [{"apiGroups": ["autoscaling"], "apiVersions": ["v2"],
            "operations": ["CREATE"], "resources": ["horizontalpodautoscalers"]}]},
        "validations": [{
            "expression": "object.apiVersion == 'autoscaling/v2' && object.spec.metrics[0].resource.target.averageUtilization <= 80",
            "message": "at most 80% CPU"}]}});
    let hpa = |target: i64| {
        json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "test"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "maxReplicas": 5, "targetCPUUtilizationPercentage": target}})
    };
    let user = crate::auth::User {
        name: "alice".into(),
        uid: String::new(),
        groups: Vec::new(),
        extra: Default::default(),
    };
    let versions = Versions::known(vec!["v2".to_owned(), "v1".to_owned()]);
    let decide = |set: &PolicySet, object: &Value| {
        let request = Request {
            operation: Operation::Create,
            group: "autoscaling",
            version: "v1",
            resource: "horizontalpodautoscalers",
            subresource: "",
            kind: ("autoscaling", "v1", "HorizontalPodAutoscaler"),
            equivalent_versions: &versions,
            name: "web",
            namespace: "test",
            namespaced: true,
            object: Some(object),
            old_object: None,
            user: &user,
            dry_run: false,
            uid: &Default::default(),
        };
        evaluate(set, &request, &fake())
    };
    let equivalent = set(policy.clone(), binding(&["Deny"], json!({})));
    assert!(decide(&equivalent, &hpa(70)).denial.is_none());
    let denied = decide(&equivalent, &hpa(90))
        .denial
        .expect("90% was admitted");
    assert_eq!(denied.message, "at most 80% CPU");
    // Under Exact the v2 policy does not see a v1 request at all.
    let mut exact = policy;
    exact["spec"]["matchConstraints"]["matchPolicy"] = json!("Exact");
    let exact = set(exact, binding(&["Deny"], json!({})));
    assert!(decide(&exact, &hpa(90)).denial.is_none());
}
