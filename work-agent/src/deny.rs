//! What Works may not touch in this cluster, whatever the agent's own permissions: namespaces
//! (`--deny-namespaces`, by default the system ones and the agent's own, which holds its
//! credential) and kinds (`--deny-kinds`, as `Kind` for the core group or `Kind.group`). A
//! manifest that names them fails alone, saying which rule refused it.

use std::collections::BTreeSet;

use atoll_api::names::SYSTEM_NAMESPACE;

/// The namespaces Works may not touch unless the agent is told otherwise.
pub const DEFAULT_DENIED_NAMESPACES: [&str; 3] = ["kube-system", "kube-public", SYSTEM_NAMESPACE];

/// The reason of a manifest refused by these rules.
pub const REASON_DENIED: &str = "Denied";

/// Namespaces and kinds Works may not touch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deny {
    namespaces: BTreeSet<String>,
    /// Kinds as (kind, group); the kind compared without case, as kubectl does.
    kinds: BTreeSet<(String, String)>,
}

impl Default for Deny {
    fn default() -> Self {
        Self {
            namespaces: DEFAULT_DENIED_NAMESPACES
                .iter()
                .map(|n| (*n).to_owned())
                .collect(),
            kinds: BTreeSet::new(),
        }
    }
}

impl Deny {
    /// Rules from the agent's flags: namespace names, and kinds as `Kind` or `Kind.group`.
    pub fn parse(namespaces: &[String], kinds: &[String]) -> Result<Self, String> {
        let mut deny = Deny {
            namespaces: BTreeSet::new(),
            kinds: BTreeSet::new(),
        };
        for namespace in namespaces
            .iter()
            .map(|n| n.trim())
            .filter(|n| !n.is_empty())
        {
            if !atoll_api::inventory::is_dns_label(namespace) {
                return Err(format!(
                    "--deny-namespaces: {namespace:?} is not a namespace name (a DNS label)"
                ));
            }
            deny.namespaces.insert(namespace.to_owned());
        }
        for text in kinds.iter().map(|k| k.trim()).filter(|k| !k.is_empty()) {
            let (kind, group) = text.split_once('.').unwrap_or((text, ""));
            let kind_ok = kind.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && kind.chars().all(|c| c.is_ascii_alphanumeric());
            let group_ok = group.is_empty() || atoll_api::inventory::is_dns_subdomain(group);
            if !kind_ok || !group_ok {
                return Err(format!(
                    "--deny-kinds: {text:?} is not a kind such as Secret or ClusterRoleBinding.rbac.authorization.k8s.io"
                ));
            }
            deny.kinds
                .insert((kind.to_ascii_lowercase(), group.to_owned()));
        }
        Ok(deny)
    }

    /// Why a manifest of `kind` in `group`, in `namespace` (none: cluster-scoped) and called
    /// `name`, may not be applied; `None` when it may.
    pub fn refuses(
        &self,
        kind: &str,
        group: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<String> {
        if self
            .kinds
            .contains(&(kind.to_ascii_lowercase(), group.to_owned()))
        {
            let full = if group.is_empty() {
                kind.to_owned()
            } else {
                format!("{kind}.{group}")
            };
            return Some(format!(
                "kind {full} is denied to Works on this cluster (the agent's --deny-kinds)"
            ));
        }
        let touched = match namespace {
            Some(namespace) => namespace,
            None if kind == "Namespace" && group.is_empty() => name,
            None => return None,
        };
        self.namespaces.contains(touched).then(|| {
            format!(
                "namespace {touched} is denied to Works on this cluster (the agent's --deny-namespaces)"
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_defaults_keep_works_out_of_the_system_namespaces() {
        let deny = Deny::default();
        assert!(
            deny.refuses("ConfigMap", "", Some("kube-system"), "x")
                .is_some()
        );
        assert!(
            deny.refuses("Secret", "", Some("atoll-system"), "atoll-agent")
                .is_some()
        );
        assert!(deny.refuses("Namespace", "", None, "kube-public").is_some());
        assert_eq!(deny.refuses("ConfigMap", "", Some("default"), "x"), None);
        assert_eq!(
            deny.refuses("ClusterRole", "rbac.authorization.k8s.io", None, "x"),
            None
        );
    }

    #[test]
    fn kinds_are_denied_by_kind_and_group() {
        let deny = Deny::parse(
            &strings(&["team-a"]),
            &strings(&["secret", "ClusterRoleBinding.rbac.authorization.k8s.io"]),
        )
        .unwrap();
        assert_eq!(
            deny.refuses("Secret", "", Some("default"), "s").as_deref(),
            Some("kind Secret is denied to Works on this cluster (the agent's --deny-kinds)")
        );
        assert!(
            deny.refuses("ClusterRoleBinding", "rbac.authorization.k8s.io", None, "b")
                .is_some()
        );
        assert_eq!(
            deny.refuses("Secret", "example.com", Some("default"), "s"),
            None
        );
        assert!(deny.refuses("ConfigMap", "", Some("team-a"), "c").is_some());
        assert_eq!(
            deny.refuses("ConfigMap", "", Some("kube-system"), "c"),
            None,
            "flags replace the defaults"
        );
    }

    #[test]
    fn bad_rules_are_refused_naming_the_flag() {
        let error = Deny::parse(&strings(&["Not_A_Namespace"]), &[]).unwrap_err();
        assert!(
            error.starts_with("--deny-namespaces: \"Not_A_Namespace\""),
            "{error}"
        );
        for bad in ["Secret..", ".rbac", "9Kind", "Cluster Role"] {
            let error = Deny::parse(&[], &strings(&[bad])).unwrap_err();
            assert!(error.starts_with("--deny-kinds:"), "{bad}: {error}");
        }
        assert_eq!(
            Deny::parse(&strings(&[""]), &[]).unwrap().namespaces.len(),
            0
        );
    }
}
