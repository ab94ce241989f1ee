//! RBAC's policy rules: what a rule grants (upstream's `evaluation_helpers.go`), whether one
//! rule covers another (what escalation prevention asks), and the compact form refusals print.

use serde_json::{Value, json};

use super::{Attributes, Request};

/// One `PolicyRule` of a Role or ClusterRole.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

const ALL: &str = "*";

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

impl Rule {
    /// What `cluster-admin` holds: every verb on every resource and every path.
    pub fn everything() -> [Rule; 2] {
        let all = || vec![ALL.to_owned()];
        [
            Rule {
                verbs: all(),
                api_groups: all(),
                resources: all(),
                ..Rule::default()
            },
            Rule {
                verbs: all(),
                non_resource_urls: all(),
                ..Rule::default()
            },
        ]
    }

    /// A rule as stored (`verbs`, `apiGroups`, `resources`, `resourceNames`, `nonResourceURLs`).
    pub fn from_json(rule: &Value) -> Rule {
        Rule {
            verbs: strings(&rule["verbs"]),
            api_groups: strings(&rule["apiGroups"]),
            resources: strings(&rule["resources"]),
            resource_names: strings(&rule["resourceNames"]),
            non_resource_urls: strings(&rule["nonResourceURLs"]),
        }
    }

    /// The rules of a Role or ClusterRole object.
    pub fn all_of(role: &Value) -> Vec<Rule> {
        role["rules"]
            .as_array()
            .into_iter()
            .flatten()
            .map(Rule::from_json)
            .collect()
    }

    /// The rule as the API writes it, empty lists left out.
    pub fn to_json(&self) -> Value {
        let mut rule = json!({"verbs": self.verbs});
        for (key, list) in [
            ("apiGroups", &self.api_groups),
            ("resources", &self.resources),
            ("resourceNames", &self.resource_names),
            ("nonResourceURLs", &self.non_resource_urls),
        ] {
            if !list.is_empty() {
                rule[key] = json!(list);
            }
        }
        rule
    }

    /// Whether the rule grants the request (`RuleAllows`).
    pub fn allows(&self, attributes: &Attributes) -> bool {
        if !verb_matches(&self.verbs, &attributes.verb) {
            return false;
        }
        match &attributes.request {
            Request::Resource(r) => {
                group_matches(&self.api_groups, &r.group)
                    && resource_matches(&self.resources, &r.resource, r.subresource.as_deref())
                    && name_matches(&self.resource_names, r.name.as_deref())
            }
            Request::Path(path) => url_matches(&self.non_resource_urls, path),
        }
    }

    /// Upstream's `CompactString`: `{APIGroups:["apps"], Resources:["deployments"], Verbs:["create"]}`.
    pub fn compact(&self) -> String {
        let quoted = |list: &[String]| {
            let items: Vec<String> = list.iter().map(|s| format!("{s:?}")).collect();
            format!("[{}]", items.join(" "))
        };
        let mut parts = Vec::new();
        for (label, list) in [
            ("APIGroups", &self.api_groups),
            ("Resources", &self.resources),
            ("NonResourceURLs", &self.non_resource_urls),
            ("ResourceNames", &self.resource_names),
            ("Verbs", &self.verbs),
        ] {
            if !list.is_empty() {
                parts.push(format!("{label}:{}", quoted(list)));
            }
        }
        format!("{{{}}}", parts.join(", "))
    }

    /// The rule split into single grants: one verb on one group and resource (and name), or
    /// one verb on one URL (upstream's `BreakdownRule`).
    pub fn atoms(&self) -> Vec<Rule> {
        let mut out = Vec::new();
        for verb in &self.verbs {
            for group in &self.api_groups {
                for resource in &self.resources {
                    let one = |names: Vec<String>| Rule {
                        verbs: vec![verb.clone()],
                        api_groups: vec![group.clone()],
                        resources: vec![resource.clone()],
                        resource_names: names,
                        non_resource_urls: Vec::new(),
                    };
                    if self.resource_names.is_empty() {
                        out.push(one(Vec::new()));
                    } else {
                        out.extend(self.resource_names.iter().map(|n| one(vec![n.clone()])));
                    }
                }
            }
            for url in &self.non_resource_urls {
                out.push(Rule {
                    verbs: vec![verb.clone()],
                    non_resource_urls: vec![url.clone()],
                    ..Rule::default()
                });
            }
        }
        out
    }

    /// Whether this rule grants everything the single grant `atom` does (upstream's
    /// `ruleCovers`): verbs and groups `*` or equal, resources exact, `*` or `*/sub`, URLs
    /// exact or a prefix ending in `*`, and a rule with names covers only those names.
    pub fn covers(&self, atom: &Rule) -> bool {
        let all_in = |owner: &[String], wanted: &[String]| {
            owner.iter().any(|o| o == ALL) || wanted.iter().all(|w| owner.contains(w))
        };
        let resources_covered = atom.resources.iter().all(|wanted| {
            self.resources.iter().any(|owned| {
                owned == ALL
                    || owned == wanted
                    || owned
                        .strip_prefix("*/")
                        .zip(wanted.split_once('/'))
                        .is_some_and(|(sub, (_, wanted_sub))| sub == wanted_sub)
            })
        });
        let urls_covered = atom.non_resource_urls.iter().all(|wanted| {
            self.non_resource_urls.iter().any(|owned| {
                owned == ALL
                    || owned == wanted
                    || owned
                        .strip_suffix('*')
                        .is_some_and(|prefix| wanted.starts_with(prefix))
            })
        });
        let names_covered = self.resource_names.is_empty()
            || (!atom.resource_names.is_empty()
                && atom
                    .resource_names
                    .iter()
                    .all(|n| self.resource_names.contains(n)));
        all_in(&self.verbs, &atom.verbs)
            && all_in(&self.api_groups, &atom.api_groups)
            && resources_covered
            && urls_covered
            && names_covered
    }
}

fn verb_matches(verbs: &[String], verb: &str) -> bool {
    verbs.iter().any(|v| v == ALL || v == verb)
}

fn group_matches(groups: &[String], group: &str) -> bool {
    groups.iter().any(|g| g == ALL || g == group)
}

/// `resources` holds `*`, the resource (with its subresource as `res/sub`), or `*/sub`; a rule
/// for `pods` does not grant `pods/log`. Compared in place: a decision allocates nothing.
fn resource_matches(resources: &[String], resource: &str, subresource: Option<&str>) -> bool {
    resources.iter().any(|r| {
        r == ALL
            || match subresource {
                None => r == resource,
                Some(sub) => {
                    r.split_once('/') == Some((resource, sub)) || r.strip_prefix("*/") == Some(sub)
                }
            }
    })
}

fn name_matches(names: &[String], name: Option<&str>) -> bool {
    names.is_empty() || name.is_some_and(|name| names.iter().any(|n| n == name))
}

fn url_matches(urls: &[String], path: &str) -> bool {
    urls.iter().any(|u| {
        u == ALL
            || u == path
            || u.strip_suffix('*')
                .is_some_and(|prefix| path.starts_with(prefix))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::ResourceRequest;

    fn rule(value: Value) -> Rule {
        Rule::from_json(&value)
    }

    fn resource(
        verb: &str,
        group: &str,
        resource: &str,
        sub: Option<&str>,
        name: Option<&str>,
    ) -> Attributes {
        Attributes {
            verb: verb.into(),
            request: Request::Resource(ResourceRequest {
                group: group.into(),
                resource: resource.into(),
                subresource: sub.map(Into::into),
                namespace: Some("team-a".into()),
                name: name.map(Into::into),
            }),
        }
    }

    #[test]
    fn rules_match_as_upstream_evaluates_them() {
        let pods =
            rule(json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}));
        assert!(pods.allows(&resource("get", "", "pods", None, Some("web"))));
        assert!(!pods.allows(&resource("delete", "", "pods", None, Some("web"))));
        assert!(!pods.allows(&resource("get", "apps", "pods", None, None)));
        assert!(
            !pods.allows(&resource("get", "", "pods", Some("log"), Some("web"))),
            "pods does not grant pods/log"
        );
        let logs = rule(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["*/log"]}));
        assert!(logs.allows(&resource("get", "", "pods", Some("log"), Some("web"))));
        assert!(!logs.allows(&resource("get", "", "pods", None, Some("web"))));
        let named = rule(
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"]}),
        );
        assert!(named.allows(&resource("get", "", "configmaps", None, Some("a"))));
        assert!(!named.allows(&resource("get", "", "configmaps", None, Some("b"))));
        assert!(
            !named.allows(&resource("list", "", "configmaps", None, None)),
            "a nameless request needs a rule without names"
        );
        let everything = rule(json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}));
        assert!(everything.allows(&resource(
            "deletecollection",
            "x.io",
            "y",
            Some("status"),
            None
        )));
        let urls = rule(json!({"verbs": ["get"], "nonResourceURLs": ["/apis/*", "/version"]}));
        let path = |p: &str| Attributes {
            verb: "get".into(),
            request: Request::Path(p.into()),
        };
        assert!(urls.allows(&path("/apis/apps/v1")));
        assert!(urls.allows(&path("/version")));
        assert!(!urls.allows(&path("/version/")));
        assert!(!urls.allows(&path("/api")));
        assert!(
            !everything.allows(&path("/healthz")),
            "resource rules grant no paths"
        );
    }

    #[test]
    fn coverage_is_checked_grant_by_grant() {
        let owner = rule(
            json!({"verbs": ["get", "list"], "apiGroups": ["", "apps"], "resources": ["pods", "deployments", "*/status"]}),
        );
        let wanted = rule(
            json!({"verbs": ["get"], "apiGroups": ["apps"], "resources": ["deployments", "deployments/status"]}),
        );
        assert!(wanted.atoms().iter().all(|a| owner.covers(a)));
        let more =
            rule(json!({"verbs": ["create"], "apiGroups": ["apps"], "resources": ["deployments"]}));
        assert!(!more.atoms().iter().all(|a| owner.covers(a)));
        let named_owner = rule(
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"]}),
        );
        let any_secret =
            rule(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]}));
        assert!(!any_secret.atoms().iter().all(|a| named_owner.covers(a)));
        let secret_a = rule(
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"]}),
        );
        assert!(secret_a.atoms().iter().all(|a| named_owner.covers(a)));
        assert_eq!(
            more.compact(),
            r#"{APIGroups:["apps"], Resources:["deployments"], Verbs:["create"]}"#
        );
    }
}
