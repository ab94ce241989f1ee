//! Which requests a policy's `matchConstraints` and a binding's `matchResources` pick, as
//! upstream's `matching` package decides: resource rules (groups, versions, resources with
//! `*` and `resource/subresource`, operations, scope, resource names), exclusions, the
//! namespace selector (on the namespace's labels; cluster-scoped requests pass it) and the
//! object selector (on the new or the old object's labels), with `matchPolicy: Equivalent`
//! matching the other served versions of the same resource.

use serde_json::Value;

use crate::registry::selector::matches_label_selector;

use super::Request;

/// How one `matchResources` (or `matchConstraints`) decides a request.
pub fn matches(spec: &Value, request: &Request<'_>, namespace_labels: Option<&Value>) -> bool {
    if !spec.is_object() {
        return true;
    }
    if !namespace_selected(spec, request, namespace_labels) || !object_selected(spec, request) {
        return false;
    }
    let exact = spec.get("matchPolicy").and_then(Value::as_str) == Some("Exact");
    if let Some(rules) = spec.get("resourceRules").and_then(Value::as_array)
        && !rules.is_empty()
        && !rules.iter().any(|r| rule_matches(r, request, exact))
    {
        return false;
    }
    let excluded = spec
        .get("excludeResourceRules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|r| rule_matches(r, request, exact));
    !excluded
}

/// Whether the policy's `matchConstraints` pick the request (they must have resource rules).
pub fn policy_matches(
    constraints: &Value,
    request: &Request<'_>,
    namespace_labels: Option<&Value>,
) -> bool {
    let has_rules = constraints
        .get("resourceRules")
        .and_then(Value::as_array)
        .is_some_and(|r| !r.is_empty());
    has_rules && matches(constraints, request, namespace_labels)
}

fn namespace_selected(
    spec: &Value,
    request: &Request<'_>,
    namespace_labels: Option<&Value>,
) -> bool {
    let Some(selector) = spec.get("namespaceSelector").filter(|s| s.is_object()) else {
        return true;
    };
    // A Namespace is selected by its own labels; other cluster-scoped objects always are.
    let labels = if request.group.is_empty() && request.resource == "namespaces" {
        let object = request.object.or(request.old_object);
        object.map(|o| &o["metadata"]["labels"])
    } else if request.namespace.is_empty() {
        return true;
    } else {
        namespace_labels
    };
    let empty = Value::Null;
    matches_label_selector(selector, labels.unwrap_or(&empty))
}

fn object_selected(spec: &Value, request: &Request<'_>) -> bool {
    let Some(selector) = spec.get("objectSelector").filter(|s| s.is_object()) else {
        return true;
    };
    let empty = Value::Null;
    fn labels(o: Option<&Value>) -> Option<&Value> {
        o.map(|o| &o["metadata"]["labels"])
    }
    [labels(request.object), labels(request.old_object)]
        .into_iter()
        .flatten()
        .any(|l| matches_label_selector(selector, l))
        || (request.object.is_none()
            && request.old_object.is_none()
            && matches_label_selector(selector, &empty))
}

fn strings(rule: &Value, key: &str) -> Vec<String> {
    rule.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

fn listed(list: &[String], value: &str) -> bool {
    list.iter().any(|v| v == "*" || v == value)
}

/// Whether one `NamedRuleWithOperations` picks the request.
pub fn rule_matches(rule: &Value, request: &Request<'_>, exact: bool) -> bool {
    let operations = strings(rule, "operations");
    if !listed(&operations, request.operation.as_str()) {
        return false;
    }
    let scope = rule.get("scope").and_then(Value::as_str).unwrap_or("*");
    let scoped = match scope {
        "Cluster" => !request.namespaced,
        "Namespaced" => request.namespaced,
        _ => true,
    };
    if !scoped {
        return false;
    }
    let names = strings(rule, "resourceNames");
    if !names.is_empty() && !names.iter().any(|n| n == request.name) {
        return false;
    }
    let groups = strings(rule, "apiGroups");
    let versions = strings(rule, "apiVersions");
    let resources = strings(rule, "resources");
    if !listed(&groups, request.group) || !resource_listed(&resources, request) {
        return false;
    }
    if listed(&versions, request.version) {
        return true;
    }
    // Equivalent: another served version of the same resource.
    !exact
        && request
            .equivalent_versions
            .iter()
            .any(|v| listed(&versions, v))
}

/// `resources` entries: `*` (every resource, no subresource), `*/*`, `pods`, `pods/*`,
/// `*/status`, `pods/status`.
fn resource_listed(resources: &[String], request: &Request<'_>) -> bool {
    resources.iter().any(|entry| {
        let (resource, sub) = match entry.split_once('/') {
            Some((r, s)) => (r, Some(s)),
            None => (entry.as_str(), None),
        };
        let resource_ok = resource == "*" || resource == request.resource;
        let sub_ok = match (sub, request.subresource) {
            (None, "") => true,
            (None, _) => false,
            (Some("*"), _) => true,
            (Some(s), actual) => s == actual,
        };
        resource_ok && sub_ok
    })
}
