//! Discovery documents, legacy (`APIVersions`, `APIGroupList`, `APIResourceList`) and aggregated
//! (`apidiscovery.k8s.io/v2`), built from the current catalog so that they follow CRDs as they
//! come and go.

use serde_json::{Value, json};

use crate::registry::{Catalog, ResourceType, api_version};

/// The Kubernetes version the server presents (plain semver, so helm's `kubeVersion` checks pass).
pub const KUBERNETES_VERSION: &str = "v1.35.0";

/// `GET /version`.
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "35",
        "emulationMajor": "1",
        "emulationMinor": "35",
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": "34",
        "gitVersion": format!("{KUBERNETES_VERSION}+atoll"),
        "gitCommit": "atoll",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": concat!("atoll ", env!("CARGO_PKG_VERSION")),
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, go_arch()),
    })
}

fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

/// Legacy `GET /api`.
pub fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group_entry(group: &str, versions: &[String]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": api_version(group, v), "version": v}))
        .collect();
    json!({
        "name": group,
        "versions": versions,
        "preferredVersion": versions.first().cloned().unwrap_or(Value::Null),
    })
}

/// Legacy `GET /apis`.
pub fn group_list(catalog: &Catalog) -> Value {
    let groups: Vec<Value> = catalog
        .groups()
        .iter()
        .filter(|(g, _)| !g.is_empty())
        .map(|(g, vs)| group_entry(g, vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `GET /apis/<group>`, if the group exists.
pub fn group(catalog: &Catalog, name: &str) -> Option<Value> {
    let groups = catalog.groups();
    let (g, vs) = groups.iter().find(|(g, _)| g == name && !g.is_empty())?;
    let mut entry = group_entry(g, vs);
    entry["kind"] = json!("APIGroup");
    entry["apiVersion"] = json!("v1");
    Some(entry)
}

/// `GET /api/v1` or `GET /apis/<group>/<version>`, if served.
pub fn resource_list(catalog: &Catalog, group: &str, version: &str) -> Option<Value> {
    let types = catalog.resources(group, version);
    if types.is_empty() {
        return None;
    }
    let mut resources = Vec::new();
    for t in &types {
        let mut r = json!({
            "name": t.plural,
            "singularName": t.singular,
            "namespaced": t.namespaced,
            "kind": t.kind,
            "verbs": verbs(t),
            "storageVersionHash": storage_version_hash(t),
        });
        if !t.short_names.is_empty() {
            r["shortNames"] = json!(t.short_names);
        }
        if !t.categories.is_empty() {
            r["categories"] = json!(t.categories);
        }
        resources.push(r);
        if t.status {
            resources.push(json!({
                "name": format!("{}/status", t.plural),
                "singularName": "",
                "namespaced": t.namespaced,
                "kind": t.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
        if t.scale.is_some() {
            resources.push(json!({
                "name": format!("{}/scale", t.plural),
                "singularName": "",
                "namespaced": t.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": ["get", "patch", "update"],
            }));
        }
        if t.group.is_empty() && t.plural == "pods" {
            for (name, kind, group, version, verbs) in crate::http::POD_SUBRESOURCES {
                let mut sub = json!({
                    "name": format!("pods/{name}"),
                    "singularName": "",
                    "namespaced": true,
                    "kind": kind,
                    "verbs": verbs,
                });
                if !group.is_empty() {
                    sub["group"] = json!(group);
                    sub["version"] = json!(version);
                }
                resources.push(sub);
            }
        }
        if t.group.is_empty() && t.plural == "serviceaccounts" {
            resources.push(json!({
                "name": "serviceaccounts/token",
                "singularName": "",
                "namespaced": true,
                "group": "authentication.k8s.io",
                "version": "v1",
                "kind": "TokenRequest",
                "verbs": ["create"],
            }));
        }
        if t.group.is_empty() && t.plural == "namespaces" {
            resources.push(json!({
                "name": "namespaces/finalize",
                "singularName": "",
                "namespaced": false,
                "kind": "Namespace",
                "verbs": ["update"],
            }));
        }
    }
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": api_version(group, version),
        "resources": resources,
    }))
}

fn verbs(t: &ResourceType) -> Vec<&'static str> {
    t.verbs.to_vec()
}

/// A short stable hash of what the resource is stored as, like upstream's (clients only compare it).
fn storage_version_hash(t: &ResourceType) -> String {
    use base64::Engine as _;
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{}/{}/{}", t.group, t.storage_version, t.kind));
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

/// Aggregated discovery: `GET /api` (core only) or `GET /apis` (every other group).
pub fn aggregated(catalog: &Catalog, core: bool) -> Value {
    let items: Vec<Value> = catalog
        .groups()
        .iter()
        .filter(|(g, _)| g.is_empty() == core)
        .map(|(g, versions)| {
            let versions: Vec<Value> = versions
                .iter()
                .map(|v| {
                    let resources: Vec<Value> = catalog
                        .resources(g, v)
                        .iter()
                        .map(|t| aggregated_resource(t))
                        .collect();
                    json!({"version": v, "resources": resources, "freshness": "Current"})
                })
                .collect();
            let metadata = if core {
                json!({"creationTimestamp": null})
            } else {
                json!({"name": g, "creationTimestamp": null})
            };
            json!({"metadata": metadata, "versions": versions})
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    })
}

fn aggregated_resource(t: &ResourceType) -> Value {
    let kind = json!({"group": t.group, "version": t.version, "kind": t.kind});
    let mut r = json!({
        "resource": t.plural,
        "singularResource": t.singular,
        "responseKind": kind,
        "scope": if t.namespaced { "Namespaced" } else { "Cluster" },
        "verbs": verbs(t),
    });
    if !t.short_names.is_empty() {
        r["shortNames"] = json!(t.short_names);
    }
    if !t.categories.is_empty() {
        r["categories"] = json!(t.categories);
    }
    let mut subresources = Vec::new();
    if t.status {
        subresources.push(json!({"subresource": "status", "responseKind": kind, "verbs": ["get", "patch", "update"]}));
    }
    if t.scale.is_some() {
        subresources.push(json!({
            "subresource": "scale",
            "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
            "verbs": ["get", "patch", "update"],
        }));
    }
    if t.group.is_empty() && t.plural == "serviceaccounts" {
        subresources.push(json!({
            "subresource": "token",
            "responseKind": {"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"},
            "verbs": ["create"],
        }));
    }
    if !subresources.is_empty() {
        r["subresources"] = json!(subresources);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    #[test]
    fn legacy_and_aggregated_documents_list_the_builtins() {
        let catalog = Registry::new().catalog();
        let core = resource_list(&catalog, "", "v1").unwrap();
        let names: Vec<&str> = core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"configmaps"));
        assert!(names.contains(&"namespaces/status"));
        assert!(
            core["resources"]
                .as_array()
                .unwrap()
                .iter()
                .all(|r| r.get("singularName").is_some())
        );
        let apps = resource_list(&catalog, "apps", "v1").unwrap();
        let scale = apps["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "deployments/scale")
            .unwrap();
        assert_eq!(scale["kind"], "Scale");
        assert!(resource_list(&catalog, "nope", "v1").is_none());
        let groups = group_list(&catalog);
        assert!(
            groups["groups"]
                .as_array()
                .unwrap()
                .iter()
                .any(|g| g["name"] == "apps")
        );
        let agg = aggregated(&catalog, true);
        assert_eq!(agg["items"].as_array().unwrap().len(), 1);
        assert!(agg["items"][0]["metadata"].get("name").is_none());
        let agg = aggregated(&catalog, false);
        assert!(
            agg["items"]
                .as_array()
                .unwrap()
                .iter()
                .all(|i| i["metadata"]["name"].is_string())
        );
        assert!(
            version()["gitVersion"]
                .as_str()
                .unwrap()
                .starts_with("v1.35.0+")
        );
    }
}
