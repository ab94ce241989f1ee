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

/// The version a policy's `matchConstraints` match the request at, when that is not the
/// request's own: under `matchPolicy: Equivalent`, a rule that lists another served version of
/// the resource (the first it lists), whose objects the policy then sees, as upstream converts
/// them. `None`: a rule lists the request's own version (or `*`), or none matches.
pub fn matched_version<'a>(constraints: &Value, request: &Request<'a>) -> Option<&'a str> {
    if constraints.get("matchPolicy").and_then(Value::as_str) == Some("Exact") {
        return None;
    }
    let rules = constraints.get("resourceRules").and_then(Value::as_array)?;
    let matching: Vec<&Value> = rules
        .iter()
        .filter(|r| rule_matches(r, request, false))
        .collect();
    if matching
        .iter()
        .any(|r| listed(strings(r, "apiVersions"), request.version))
    {
        return None;
    }
    matching.iter().find_map(|r| {
        strings(r, "apiVersions").find_map(|listed_version| {
            request
                .equivalent_versions
                .get()
                .iter()
                .find(|v| v.as_str() == listed_version && *v != request.version)
                .map(String::as_str)
        })
    })
}

/// Whether matching `spec` needs the labels of the request's Namespace: its
/// `namespaceSelector` has requirements (an empty one selects every namespace).
pub fn reads_namespace_labels(spec: &Value) -> bool {
    let Some(selector) = spec.get("namespaceSelector") else {
        return false;
    };
    let non_empty = |key: &str| match selector.get(key) {
        Some(Value::Object(map)) => !map.is_empty(),
        Some(Value::Array(items)) => !items.is_empty(),
        _ => false,
    };
    non_empty("matchLabels") || non_empty("matchExpressions")
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

fn strings<'a>(rule: &'a Value, key: &str) -> impl Iterator<Item = &'a str> + Clone {
    rule.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

fn listed<'a>(mut list: impl Iterator<Item = &'a str>, value: &str) -> bool {
    list.any(|v| v == "*" || v == value)
}

/// Whether one `NamedRuleWithOperations` picks the request.
pub fn rule_matches(rule: &Value, request: &Request<'_>, exact: bool) -> bool {
    if !listed(strings(rule, "operations"), request.operation.as_str()) {
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
    let mut names = strings(rule, "resourceNames").peekable();
    if names.peek().is_some() && !names.any(|n| n == request.name) {
        return false;
    }
    if !listed(strings(rule, "apiGroups"), request.group)
        || !resource_listed(strings(rule, "resources"), request)
    {
        return false;
    }
    let versions = strings(rule, "apiVersions");
    if listed(versions.clone(), request.version) {
        return true;
    }
    // Equivalent: another served version of the same resource.
    !exact
        && request
            .equivalent_versions
            .get()
            .iter()
            .any(|v| listed(versions.clone(), v))
}

/// `resources` entries: `*` (every resource, no subresource), `*/*`, `pods`, `pods/*`,
/// `*/status`, `pods/status`.
fn resource_listed<'a>(
    mut resources: impl Iterator<Item = &'a str>,
    request: &Request<'_>,
) -> bool {
    resources.any(|entry| {
        let (resource, sub) = match entry.split_once('/') {
            Some((r, s)) => (r, Some(s)),
            None => (entry, None),
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
