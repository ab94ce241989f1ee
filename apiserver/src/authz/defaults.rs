//! The ClusterRoles and ClusterRoleBindings a cluster starts with (`defaults.yaml`: upstream's
//! bootstrap policy for what users and tools rely on, which `build.rs` converts to JSON),
//! reconciled at every start as kube-apiserver's post-start hook does: missing objects are
//! created, and objects that exist get the rules and subjects they lack, unless annotated
//! `rbac.authorization.kubernetes.io/autoupdate: "false"`.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{GROUP, rbac_type};
use crate::error::{Error, Result};
use crate::registry::store::{Store, WriteOptions};

const POLICY: &str = include_str!(concat!(env!("OUT_DIR"), "/rbac-defaults.json"));
const BOOTSTRAPPING: &str = "kubernetes.io/bootstrapping";
const AUTOUPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";
const FIELD_MANAGER: &str = "atoll-apiserver";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Defaults {
    cluster_roles: Vec<DefaultRole>,
    cluster_role_bindings: Vec<DefaultBinding>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DefaultRole {
    name: String,
    #[serde(default)]
    labels: serde_json::Map<String, Value>,
    #[serde(default)]
    rules: Vec<Value>,
    /// The role aggregates those labelled `rbac.authorization.k8s.io/aggregate-to-<this>`.
    aggregate_to: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DefaultBinding {
    name: String,
    role: String,
    #[serde(default)]
    groups: Vec<String>,
    /// `namespace/name` of each service account bound.
    #[serde(default)]
    service_accounts: Vec<String>,
}

/// The default ClusterRoles and then ClusterRoleBindings, as objects.
pub fn objects() -> (Vec<Value>, Vec<Value>) {
    let defaults: Defaults =
        serde_json::from_str(POLICY).expect("the default RBAC policy is valid");
    let metadata = |name: &str, extra: &serde_json::Map<String, Value>| {
        let mut labels = extra.clone();
        labels.insert(BOOTSTRAPPING.into(), json!("rbac-defaults"));
        json!({"name": name, "labels": labels, "annotations": {AUTOUPDATE: "true"}})
    };
    let roles = defaults
        .cluster_roles
        .iter()
        .map(|role| {
            let mut object = json!({
                "apiVersion": format!("{GROUP}/v1"),
                "kind": "ClusterRole",
                "metadata": metadata(&role.name, &role.labels),
            });
            match &role.aggregate_to {
                Some(to) => {
                    object["aggregationRule"] = json!({"clusterRoleSelectors": [
                        {"matchLabels": {format!("{GROUP}/aggregate-to-{to}"): "true"}}
                    ]});
                }
                None => object["rules"] = json!(role.rules),
            }
            object
        })
        .collect();
    let bindings = defaults
        .cluster_role_bindings
        .iter()
        .map(|binding| {
            json!({
                "apiVersion": format!("{GROUP}/v1"),
                "kind": "ClusterRoleBinding",
                "metadata": metadata(&binding.name, &serde_json::Map::new()),
                "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": binding.role},
                "subjects": subjects(binding),
            })
        })
        .collect();
    (roles, bindings)
}

/// A default binding's subjects: its groups, then its service accounts.
fn subjects(binding: &DefaultBinding) -> Vec<Value> {
    let groups = binding
        .groups
        .iter()
        .map(|g| json!({"apiGroup": GROUP, "kind": "Group", "name": g}));
    let accounts = binding.service_accounts.iter().map(|account| {
        let (namespace, name) = account
            .split_once('/')
            .expect("a default binding names its service accounts as namespace/name");
        json!({"kind": "ServiceAccount", "name": name, "namespace": namespace})
    });
    groups.chain(accounts).collect()
}

/// Creates the default roles and bindings that are missing and completes those that lack
/// rules or subjects.
pub async fn ensure(store: &Store) -> Result<()> {
    let (roles, bindings) = objects();
    for (plural, objects, list) in [
        ("clusterroles", roles, "rules"),
        ("clusterrolebindings", bindings, "subjects"),
    ] {
        let rt = rbac_type(store, plural)?;
        let options = WriteOptions {
            field_manager: FIELD_MANAGER.into(),
            actor: Some(crate::registry::actor::Actor::ApiServer),
            ..WriteOptions::default()
        };
        for object in objects {
            let name = object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let current = match store.get(&rt, None, &name).await {
                Ok(current) => current,
                Err(Error::NotFound(_)) => {
                    match store.create(&rt, None, object, &options).await {
                        Ok(_) | Err(Error::AlreadyExists(_)) => {}
                        Err(err) => return Err(err),
                    }
                    continue;
                }
                Err(err) => return Err(err),
            };
            if let Some(completed) = completed(current, &object, list) {
                store
                    .update(&rt, None, &name, None, completed, &options)
                    .await?;
            }
        }
    }
    Ok(())
}

/// `current` with the entries of `list` (rules or subjects) that `default` has and it lacks,
/// or `None` when it lacks none or must not be updated.
fn completed(mut current: Value, default: &Value, list: &str) -> Option<Value> {
    if current["metadata"]["annotations"][AUTOUPDATE] == "false" {
        return None;
    }
    let have = current[list].as_array().cloned().unwrap_or_default();
    let missing: Vec<Value> = default[list]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|entry| !have.contains(entry))
        .cloned()
        .collect();
    if missing.is_empty() {
        return None;
    }
    current[list] = Value::Array(have.into_iter().chain(missing).collect());
    Some(current)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_policy_has_what_users_rely_on() {
        let (roles, bindings) = objects();
        let names: Vec<&str> = roles
            .iter()
            .map(|r| r["metadata"]["name"].as_str().unwrap())
            .collect();
        for expected in [
            "cluster-admin",
            "admin",
            "edit",
            "view",
            "system:discovery",
            "system:basic-user",
            "system:public-info-viewer",
        ] {
            assert!(names.contains(&expected), "{expected} is missing");
        }
        for binding in &bindings {
            let role = binding["roleRef"]["name"].as_str().unwrap();
            assert!(names.contains(&role), "{role} is bound but not defined");
        }
        let edit = roles
            .iter()
            .find(|r| r["metadata"]["name"] == "edit")
            .unwrap();
        assert_eq!(
            edit["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-admin"], "true",
            "admin holds everything edit does"
        );
    }

    #[test]
    fn existing_objects_get_what_they_lack_unless_told_not_to() {
        let default = json!({"rules": [{"verbs": ["get"]}, {"verbs": ["list"]}]});
        let current = json!({"metadata": {}, "rules": [{"verbs": ["list"]}, {"verbs": ["own"]}]});
        let done = completed(current.clone(), &default, "rules").unwrap();
        assert_eq!(
            done["rules"],
            json!([{"verbs": ["list"]}, {"verbs": ["own"]}, {"verbs": ["get"]}])
        );
        assert!(completed(done, &default, "rules").is_none());
        let mut pinned = current;
        pinned["metadata"]["annotations"] = json!({AUTOUPDATE: "false"});
        assert!(completed(pinned, &default, "rules").is_none());
    }
}
