//! CustomResourceDefinitions: turning a stored CRD into served resource types, and the status
//! (`NamesAccepted`, `Established`, `acceptedNames`, `storedVersions`) the server maintains.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{Catalog, ResourceType, ScalePaths};

/// Orders CRDs for discovery: by group, then name.
pub fn sort_key(crd: &Value) -> (String, String) {
    (
        str_at(crd, &["spec", "group"]).to_owned(),
        str_at(crd, &["metadata", "name"]).to_owned(),
    )
}

/// The served resource types of a stored CRD: one per served version, the storage version's
/// preference first as upstream sorts versions (by Kubernetes version priority). A CRD that is
/// not established or is being deleted serves nothing new.
pub fn resource_types(crd: &Value) -> Vec<ResourceType> {
    if !is_established(crd) {
        return Vec::new();
    }
    let spec = &crd["spec"];
    let names = &spec["names"];
    let group = str_at(spec, &["group"]);
    let namespaced = spec["scope"].as_str() != Some("Cluster");
    let Some(versions) = spec["versions"].as_array() else {
        return Vec::new();
    };
    let storage_version = versions
        .iter()
        .find(|v| v["storage"].as_bool() == Some(true))
        .and_then(|v| v["name"].as_str())
        .unwrap_or_default()
        .to_owned();
    let mut served: Vec<&Value> = versions
        .iter()
        .filter(|v| v["served"].as_bool() == Some(true))
        .collect();
    served.sort_by(|a, b| {
        version_priority(b["name"].as_str().unwrap_or_default())
            .cmp(&version_priority(a["name"].as_str().unwrap_or_default()))
    });
    served
        .into_iter()
        .map(|v| {
            let kind = str_at(names, &["kind"]).to_owned();
            let scale = v["subresources"].get("scale").map(|s| ScalePaths {
                spec_replicas: s["specReplicasPath"]
                    .as_str()
                    .unwrap_or(".spec.replicas")
                    .into(),
                status_replicas: s["statusReplicasPath"]
                    .as_str()
                    .unwrap_or(".status.replicas")
                    .into(),
                label_selector: s["labelSelectorPath"].as_str().map(str::to_owned),
            });
            ResourceType {
                group: group.to_owned(),
                version: v["name"].as_str().unwrap_or_default().to_owned(),
                list_kind: names["listKind"]
                    .as_str()
                    .map_or_else(|| format!("{kind}List"), str::to_owned),
                plural: str_at(names, &["plural"]).to_owned(),
                singular: names["singular"]
                    .as_str()
                    .map_or_else(|| kind.to_lowercase(), str::to_owned),
                short_names: strings(&names["shortNames"]),
                categories: strings(&names["categories"]),
                namespaced,
                status: v["subresources"].get("status").is_some(),
                scale,
                storage_version: storage_version.clone(),
                schema: v["schema"]
                    .get("openAPIV3Schema")
                    .map(|s| Arc::new(s.clone())),
                printer_columns: v["additionalPrinterColumns"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default(),
                builtin: false,
                virtual_only: false,
                verbs: super::VERBS,
                name_rule: Default::default(),
                delete_returns_object: false,
                kind,
            }
        })
        .collect()
}

/// Whether the CRD's status says Established=True.
pub fn is_established(crd: &Value) -> bool {
    crd["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True")
    })
}

/// Fills the status of a CRD being created or updated: accepted names (unless another resource
/// already serves them in the group), conditions, and the stored versions.
pub fn set_status(crd: &mut Value, catalog: &Catalog, now: &str) {
    let name = str_at(crd, &["metadata", "name"]).to_owned();
    let group = str_at(crd, &["spec", "group"]).to_owned();
    let names = crd["spec"]["names"].clone();
    let plural = str_at(&names, &["plural"]).to_owned();
    let kind = str_at(&names, &["kind"]).to_owned();
    let conflict = catalog.types.iter().find(|t| {
        t.group == group
            && format!("{}.{}", t.plural, t.group) != name
            && (t.plural == plural || t.kind == kind)
    });
    let storage_version = crd["spec"]["versions"]
        .as_array()
        .and_then(|vs| vs.iter().find(|v| v["storage"].as_bool() == Some(true)))
        .and_then(|v| v["name"].as_str())
        .map(str::to_owned);
    let old_conditions = crd["status"]["conditions"].clone();
    let condition = |type_: &str, status: bool, reason: &str, message: &str| {
        let status_str = if status { "True" } else { "False" };
        let since = old_conditions
            .as_array()
            .and_then(|cs| {
                cs.iter()
                    .find(|c| c["type"] == type_ && c["status"] == status_str)
            })
            .and_then(|c| c["lastTransitionTime"].as_str())
            .unwrap_or(now)
            .to_owned();
        json!({"type": type_, "status": status_str, "lastTransitionTime": since, "reason": reason, "message": message})
    };
    let status = crd
        .as_object_mut()
        .map(|o| o.entry("status").or_insert_with(|| json!({})));
    let Some(status) = status else { return };
    if !status.is_object() {
        *status = json!({});
    }
    match conflict {
        Some(other) => {
            let (what, value) = if other.plural == plural {
                ("plural", plural.as_str())
            } else {
                ("kind", kind.as_str())
            };
            let message = format!("{what} {value:?} is already in use");
            status["conditions"] = json!([
                condition("NamesAccepted", false, "NameConflict", &message),
                condition(
                    "Established",
                    false,
                    "NotAccepted",
                    "not all names are accepted"
                ),
            ]);
            status["acceptedNames"] = json!({"kind": "", "plural": ""});
        }
        None => {
            let mut accepted = json!({"kind": kind, "plural": plural});
            for field in ["singular", "shortNames", "listKind", "categories"] {
                if let Some(v) = names.get(field) {
                    accepted[field] = v.clone();
                }
            }
            status["acceptedNames"] = accepted;
            status["conditions"] = json!([
                condition("NamesAccepted", true, "NoConflicts", "no conflicts found"),
                condition(
                    "Established",
                    true,
                    "InitialNamesAccepted",
                    "the initial names have been accepted"
                ),
            ]);
        }
    }
    let mut stored = strings(&status["storedVersions"]);
    if let Some(v) = storage_version
        && !stored.contains(&v)
    {
        stored.push(v);
    }
    status["storedVersions"] = json!(stored);
}

/// Kubernetes version priority: GA > beta > alpha > other, higher numbers first.
pub(crate) fn version_priority(version: &str) -> (u8, u64, u64) {
    let Some(rest) = version.strip_prefix('v') else {
        return (0, 0, 0);
    };
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let Ok(major) = digits.parse::<u64>() else {
        return (0, 0, 0);
    };
    let rest = &rest[digits.len()..];
    if rest.is_empty() {
        return (3, major, 0);
    }
    for (prefix, rank) in [("beta", 2u8), ("alpha", 1u8)] {
        if let Some(n) = rest.strip_prefix(prefix)
            && let Ok(minor) = n.parse::<u64>()
        {
            return (rank, major, minor);
        }
    }
    (0, 0, 0)
}

fn str_at<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    let mut v = value;
    for p in path {
        v = &v[*p];
    }
    v.as_str().unwrap_or_default()
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widget_crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
                "versions": [
                    {"name": "v1alpha1", "served": true, "storage": false, "schema": {"openAPIV3Schema": {"type": "object"}}},
                    {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}},
                     "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.size"}}},
                    {"name": "v2", "served": false, "storage": false, "schema": {"openAPIV3Schema": {"type": "object"}}}
                ]
            }
        })
    }

    #[test]
    fn established_crd_serves_its_served_versions_preferred_first() {
        let mut crd = widget_crd();
        set_status(&mut crd, &Catalog::default(), "2026-01-01T00:00:00Z");
        assert!(is_established(&crd));
        assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
        assert_eq!(crd["status"]["acceptedNames"]["kind"], "Widget");
        let types = resource_types(&crd);
        let versions: Vec<_> = types.iter().map(|t| t.version.as_str()).collect();
        assert_eq!(versions, ["v1", "v1alpha1"]);
        assert!(types[0].status);
        assert_eq!(types[0].scale.as_ref().unwrap().spec_replicas, ".spec.size");
        assert_eq!(types[1].storage_version, "v1");
        assert_eq!(
            types[0].key(Some("ns"), "w"),
            "/registry/example.com/widgets/ns/w"
        );
    }

    #[test]
    fn a_group_of_crds_prefers_its_highest_version_across_them() {
        // Gadgets serve only v1alpha1; Widgets (listed after) v1 and v1alpha1.
        let mut gadgets = widget_crd();
        gadgets["metadata"]["name"] = json!("gadgets.example.com");
        gadgets["spec"]["names"] =
            json!({"plural": "gadgets", "singular": "gadget", "kind": "Gadget"});
        gadgets["spec"]["versions"] = json!([{"name": "v1alpha1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": {"type": "object"}}}]);
        let mut types = Vec::new();
        for mut crd in [gadgets, widget_crd()] {
            set_status(&mut crd, &Catalog::default(), "t");
            types.extend(resource_types(&crd));
        }
        let catalog = Catalog::new(types, 2);
        let group = catalog
            .groups()
            .into_iter()
            .find(|(g, _)| g == "example.com");
        assert_eq!(group.unwrap().1, ["v1", "v1alpha1"]);
    }

    #[test]
    fn a_plural_already_served_is_not_accepted() {
        let mut first = widget_crd();
        set_status(&mut first, &Catalog::default(), "t");
        let catalog = Catalog::new(resource_types(&first), 2);
        let mut second = widget_crd();
        second["metadata"]["name"] = json!("widgets2.example.com");
        set_status(&mut second, &catalog, "t");
        assert!(!is_established(&second));
        assert_eq!(second["status"]["conditions"][0]["reason"], "NameConflict");
        assert!(resource_types(&second).is_empty());
    }

    #[test]
    fn version_priority_orders_like_kubernetes() {
        let mut versions = vec!["v1alpha1", "v2", "v1beta2", "v1", "foo", "v1beta1"];
        versions.sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
        assert_eq!(
            versions,
            ["v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "foo"]
        );
    }
}
