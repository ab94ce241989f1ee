//! The printers of `rbac.authorization.k8s.io` bindings (Roles and ClusterRoles have none: they
//! print NAME and CREATED AT).

use jiff::Timestamp;
use serde_json::{Value, json};

use super::{age_cell, age_col, col, items, name, name_cell, str_at, wide};
use crate::table::Column;

pub(super) fn role_binding_columns() -> Vec<Column> {
    binding_columns(
        "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
        "roleBinding",
    )
}

pub(super) fn cluster_role_binding_columns() -> Vec<Column> {
    binding_columns(
        "RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
        "clusterRoleBinding",
    )
}

/// The columns of either binding, which differ only in their descriptions.
fn binding_columns(role_doc: &str, kind: &str) -> Vec<Column> {
    vec![
        name(),
        col("Role", "string", role_doc),
        age_col(),
        wide("Users", "string", &format!("Users in the {kind}")),
        wide("Groups", "string", &format!("Groups in the {kind}")),
        wide(
            "ServiceAccounts",
            "string",
            &format!("ServiceAccounts in the {kind}"),
        ),
    ]
}

/// A RoleBinding or ClusterRoleBinding: its role, and its subjects by kind.
pub(super) fn role_binding(o: &Value, now: Timestamp) -> Vec<Value> {
    let role = format!(
        "{}/{}",
        str_at(&o["roleRef"]["kind"]),
        str_at(&o["roleRef"]["name"])
    );
    let (mut users, mut groups, mut accounts) = (Vec::new(), Vec::new(), Vec::new());
    for subject in items(&o["subjects"]) {
        let subject_name = str_at(&subject["name"]);
        match str_at(&subject["kind"]) {
            "ServiceAccount" => {
                accounts.push(format!("{}/{subject_name}", str_at(&subject["namespace"])))
            }
            "User" => users.push(subject_name.to_owned()),
            "Group" => groups.push(subject_name.to_owned()),
            _ => {}
        }
    }
    vec![
        name_cell(o),
        json!(role),
        age_cell(o, now),
        json!(users.join(", ")),
        json!(groups.join(", ")),
        json!(accounts.join(", ")),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::Printer;
    use super::super::tests::{cells, meta};
    use serde_json::json;

    #[test]
    fn role_bindings() {
        let rb = json!({"metadata": meta("rb"), "roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "ann"}, {"kind": "Group", "name": "devs"},
                {"kind": "ServiceAccount", "name": "bot", "namespace": "ci"},
                {"kind": "User", "name": "bo"}]});
        assert_eq!(
            cells(Printer::RoleBinding, rb),
            vec![
                json!("rb"),
                json!("ClusterRole/view"),
                json!("5m"),
                json!("ann, bo"),
                json!("devs"),
                json!("ci/bot")
            ]
        );
    }

    #[test]
    fn cluster_role_bindings() {
        let crb = json!({"metadata": {"name": "admins", "creationTimestamp": "2025-03-01T11:00:00Z"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                "name": "cluster-admin"},
            "subjects": [{"kind": "Group", "name": "system:masters"}]});
        assert_eq!(
            cells(Printer::ClusterRoleBinding, crb),
            [
                json!("admins"),
                json!("ClusterRole/cluster-admin"),
                json!("60m"),
                json!(""),
                json!("system:masters"),
                json!("")
            ]
        );
        let columns = Printer::ClusterRoleBinding.columns();
        assert_eq!(columns[3].description, "Users in the clusterRoleBinding");
        assert_eq!(
            Printer::RoleBinding.columns()[5].description,
            "ServiceAccounts in the roleBinding"
        );
    }
}
