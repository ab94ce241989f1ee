//! The audit policy (`audit.k8s.io/v1` `Policy`, kube-apiserver's `--audit-policy-file`): which
//! requests are recorded, at which level, and at which stages. The first rule that matches a
//! request decides; a request no rule matches is not recorded.

use serde::Deserialize;

/// How much of a request an audit event holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
pub enum Level {
    /// Not recorded.
    None,
    /// Who asked what, and the answer's code, without bodies.
    Metadata,
    /// And the request's body.
    Request,
    /// And the response's body.
    RequestResponse,
}

impl Level {
    /// The name as events write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }
}

/// When in a request's life an event is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Stage {
    /// As the request arrives, before anything is decided.
    RequestReceived,
    /// Once a long-running request's (a watch's) response headers are sent.
    ResponseStarted,
    /// Once the response is complete.
    ResponseComplete,
    /// When serving the request panicked.
    Panic,
}

impl Stage {
    /// The name as events write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::RequestReceived => "RequestReceived",
            Stage::ResponseStarted => "ResponseStarted",
            Stage::ResponseComplete => "ResponseComplete",
            Stage::Panic => "Panic",
        }
    }
}

/// An audit policy, as its file says it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Policy {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    /// Read and ignored (a policy file may name itself).
    #[serde(default, rename = "metadata")]
    _metadata: Option<serde::de::IgnoredAny>,
    /// The rules, in order: the first that matches decides.
    #[serde(default)]
    pub rules: Vec<Rule>,
    /// Stages no event is written at, for every rule.
    #[serde(default)]
    pub omit_stages: Vec<Stage>,
    /// Whether request and response bodies leave out `metadata.managedFields`.
    #[serde(default)]
    pub omit_managed_fields: bool,
}

/// One rule of a policy: every list it sets must match (an empty list matches all).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rule {
    pub level: Level,
    #[serde(default)]
    pub users: Vec<String>,
    #[serde(default)]
    pub user_groups: Vec<String>,
    #[serde(default)]
    pub verbs: Vec<String>,
    #[serde(default)]
    pub resources: Vec<GroupResources>,
    #[serde(default)]
    pub namespaces: Vec<String>,
    #[serde(default, rename = "nonResourceURLs")]
    pub non_resource_urls: Vec<String>,
    #[serde(default)]
    pub omit_stages: Vec<Stage>,
    #[serde(default)]
    pub omit_managed_fields: Option<bool>,
}

/// The resources of one API group a rule names.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GroupResources {
    /// The API group (`""` is the core group).
    #[serde(default)]
    pub group: String,
    /// `pods`, `pods/log`, `*`, `*/status`, `deployments/*`; empty: every resource of the group.
    #[serde(default)]
    pub resources: Vec<String>,
    #[serde(default)]
    pub resource_names: Vec<String>,
}

/// What a policy is matched against: the request's user and what it asks.
#[derive(Debug, Clone, Copy)]
pub struct Attributes<'a> {
    pub user: &'a str,
    pub groups: &'a [String],
    /// The authorization verb (`get`, `list`, `watch`, `create`, ...; for a path, the method).
    pub verb: &'a str,
    /// `None` for a request that is no resource's (a path such as `/version`).
    pub resource: Option<ResourceAttributes<'a>>,
    /// The request's path.
    pub path: &'a str,
}

/// The resource a request is for.
#[derive(Debug, Clone, Copy)]
pub struct ResourceAttributes<'a> {
    pub group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
}

/// What a policy decides for a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub level: Level,
    pub omit_stages: Vec<Stage>,
    pub omit_managed_fields: bool,
}

impl Decision {
    /// Whether an event is written at `stage`.
    pub fn records(&self, stage: Stage) -> bool {
        self.level != Level::None && !self.omit_stages.contains(&stage)
    }
}

/// Why a policy file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("cannot read the audit policy file {path}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the audit policy file {path} is not a policy: {message}")]
    Parse { path: String, message: String },
    #[error("the audit policy file {path} is invalid: {field}: {message}")]
    Invalid {
        path: String,
        field: String,
        message: String,
    },
}

/// The largest policy file read.
const MAX_POLICY_BYTES: u64 = 1024 * 1024;

impl Policy {
    /// Reads and checks the policy in the file at `path` (YAML or JSON).
    pub fn load(path: &std::path::Path) -> Result<Policy, PolicyError> {
        let shown = path.display().to_string();
        let read = |source| PolicyError::Read {
            path: shown.clone(),
            source,
        };
        let size = std::fs::metadata(path).map_err(read)?.len();
        if size > MAX_POLICY_BYTES {
            return Err(PolicyError::Parse {
                path: shown,
                message: format!("{size} bytes, more than {MAX_POLICY_BYTES}"),
            });
        }
        let text = std::fs::read_to_string(path).map_err(read)?;
        Policy::parse(&text).map_err(|e| e.at(&shown))
    }

    /// Parses and checks a policy (its file's name is filled in by [`Policy::load`]).
    pub fn parse(text: &str) -> Result<Policy, PolicyError> {
        let policy: Policy = serde_yaml_ng::from_str(text).map_err(|e| PolicyError::Parse {
            path: String::new(),
            message: e.to_string(),
        })?;
        policy.check()?;
        Ok(policy)
    }

    fn check(&self) -> Result<(), PolicyError> {
        let invalid = |field: String, message: &str| PolicyError::Invalid {
            path: String::new(),
            field,
            message: message.to_owned(),
        };
        if self.api_version != "audit.k8s.io/v1" {
            return Err(invalid(
                "apiVersion".into(),
                &format!(
                    "Unsupported value: {:?}: supported values: \"audit.k8s.io/v1\"",
                    self.api_version
                ),
            ));
        }
        if self.kind != "Policy" {
            return Err(invalid(
                "kind".into(),
                &format!(
                    "Unsupported value: {:?}: supported values: \"Policy\"",
                    self.kind
                ),
            ));
        }
        for (i, rule) in self.rules.iter().enumerate() {
            let at = |field: &str| format!("rules[{i}].{field}");
            if !rule.non_resource_urls.is_empty()
                && (!rule.resources.is_empty() || !rule.namespaces.is_empty())
            {
                return Err(invalid(
                    at("nonResourceURLs"),
                    "Invalid value: rules cannot apply to both regular resources and non-resource URLs",
                ));
            }
            for (j, url) in rule.non_resource_urls.iter().enumerate() {
                let wildcard_inside = url.trim_end_matches('*').contains('*');
                if url != "*" && (!url.starts_with('/') || wildcard_inside) {
                    return Err(invalid(
                        format!("{}[{j}]", at("nonResourceURLs")),
                        &format!(
                            "Invalid value: {url:?}: non-resource URLs start with / and may end with one *"
                        ),
                    ));
                }
            }
            for (j, group) in rule.resources.iter().enumerate() {
                for (k, resource) in group.resources.iter().enumerate() {
                    if !group.resource_names.is_empty() && resource.contains('*') {
                        return Err(invalid(
                            format!("{}[{j}].resources[{k}]", at("resources")),
                            "Invalid value: a wildcard resource cannot be limited to resourceNames",
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// The level and stages for a request: the first matching rule's, else `None`.
    pub fn decide(&self, request: &Attributes<'_>) -> Decision {
        let Some(rule) = self.rules.iter().find(|r| r.matches(request)) else {
            return Decision {
                level: Level::None,
                omit_stages: Vec::new(),
                omit_managed_fields: false,
            };
        };
        let mut omit_stages = self.omit_stages.clone();
        omit_stages.extend(rule.omit_stages.iter().copied());
        Decision {
            level: rule.level,
            omit_stages,
            omit_managed_fields: rule.omit_managed_fields.unwrap_or(self.omit_managed_fields),
        }
    }
}

impl PolicyError {
    fn at(self, file: &str) -> PolicyError {
        match self {
            PolicyError::Parse { message, .. } => PolicyError::Parse {
                path: file.to_owned(),
                message,
            },
            PolicyError::Invalid { field, message, .. } => PolicyError::Invalid {
                path: file.to_owned(),
                field,
                message,
            },
            read => read,
        }
    }
}

impl Rule {
    fn matches(&self, request: &Attributes<'_>) -> bool {
        let listed = |list: &[String], value: &str| list.iter().any(|v| v == value);
        if !self.users.is_empty() && !listed(&self.users, request.user) {
            return false;
        }
        if !self.user_groups.is_empty()
            && !request.groups.iter().any(|g| listed(&self.user_groups, g))
        {
            return false;
        }
        if !self.verbs.is_empty() && !listed(&self.verbs, request.verb) {
            return false;
        }
        if !self.namespaces.is_empty() || !self.resources.is_empty() {
            return request.resource.is_some_and(|r| self.matches_resource(&r));
        }
        if !self.non_resource_urls.is_empty() {
            return request.resource.is_none()
                && self
                    .non_resource_urls
                    .iter()
                    .any(|url| path_matches(request.path, url));
        }
        true
    }

    fn matches_resource(&self, r: &ResourceAttributes<'_>) -> bool {
        if !self.namespaces.is_empty() && !self.namespaces.iter().any(|n| n == r.namespace) {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        let combined = if r.subresource.is_empty() {
            r.resource.to_owned()
        } else {
            format!("{}/{}", r.resource, r.subresource)
        };
        self.resources.iter().any(|group| {
            group.group == r.group
                && (group.resources.is_empty()
                    || group.resources.iter().any(|res| {
                        let named = group.resource_names.is_empty()
                            || group.resource_names.iter().any(|n| n == r.name);
                        named
                            && (*res == combined
                                || res == "*"
                                || (!r.subresource.is_empty()
                                    && res.strip_prefix("*/") == Some(r.subresource))
                                || res.strip_suffix("/*") == Some(r.resource))
                    }))
        })
    }
}

/// Whether `path` is what a rule's non-resource URL names: itself, `*`, or a prefix ending in `*`.
fn path_matches(path: &str, url: &str) -> bool {
    url == "*"
        || url == path
        || url
            .strip_suffix('*')
            .is_some_and(|prefix| path.starts_with(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  users: ["system:kube-proxy"]
  verbs: ["watch"]
- level: None
  nonResourceURLs: ["/healthz*", "/version"]
- level: Metadata
  resources:
  - group: ""
    resources: ["secrets", "configmaps"]
- level: RequestResponse
  resources:
  - group: ""
    resources: ["pods/log", "*/status"]
  - group: "apps"
    resources: ["deployments/*"]
- level: Request
  userGroups: ["system:masters"]
  namespaces: ["kube-system"]
  omitStages: [ResponseStarted]
- level: Metadata
"#;

    fn ask<'a>(
        user: &'a str,
        groups: &'a [String],
        verb: &'a str,
        resource: Option<ResourceAttributes<'a>>,
    ) -> Attributes<'a> {
        Attributes {
            user,
            groups,
            verb,
            resource,
            path: "/api/v1/x",
        }
    }

    fn on<'a>(group: &'a str, resource: &'a str, subresource: &'a str) -> ResourceAttributes<'a> {
        ResourceAttributes {
            group,
            resource,
            subresource,
            namespace: "default",
            name: "n",
        }
    }

    #[test]
    fn the_first_matching_rule_decides() {
        let policy = Policy::parse(POLICY).unwrap();
        let none: Vec<String> = Vec::new();
        let masters = vec!["system:masters".to_owned()];
        let level = |a: Attributes<'_>| policy.decide(&a).level;
        assert_eq!(
            level(ask(
                "system:kube-proxy",
                &none,
                "watch",
                Some(on("", "endpoints", ""))
            )),
            Level::None
        );
        assert_eq!(
            level(ask(
                "system:kube-proxy",
                &none,
                "list",
                Some(on("", "endpoints", ""))
            )),
            Level::Metadata
        );
        assert_eq!(
            level(ask("bob", &none, "get", Some(on("", "secrets", "")))),
            Level::Metadata
        );
        assert_eq!(
            level(ask("bob", &none, "get", Some(on("", "pods", "log")))),
            Level::RequestResponse
        );
        assert_eq!(
            level(ask(
                "bob",
                &none,
                "update",
                Some(on("", "services", "status"))
            )),
            Level::RequestResponse
        );
        assert_eq!(
            level(ask(
                "bob",
                &none,
                "update",
                Some(on("apps", "deployments", "scale"))
            )),
            Level::RequestResponse
        );
        // `deployments/*` names the resource and every subresource, as upstream reads it;
        // `*/status` is the core group's only.
        assert_eq!(
            level(ask(
                "bob",
                &none,
                "update",
                Some(on("apps", "deployments", ""))
            )),
            Level::RequestResponse
        );
        assert_eq!(
            level(ask(
                "bob",
                &none,
                "update",
                Some(on("apps", "replicasets", "status"))
            )),
            Level::Metadata
        );
        let mut system = on("", "pods", "");
        system.namespace = "kube-system";
        let decided = policy.decide(&ask("admin", &masters, "create", Some(system)));
        assert_eq!(decided.level, Level::Request);
        assert_eq!(
            decided.omit_stages,
            vec![Stage::RequestReceived, Stage::ResponseStarted]
        );
        assert!(!decided.records(Stage::RequestReceived));
        assert!(decided.records(Stage::ResponseComplete));
        let version = Attributes {
            path: "/version",
            ..ask("bob", &none, "get", None)
        };
        assert_eq!(level(version), Level::None);
        let healthz = Attributes {
            path: "/healthz/ready",
            ..ask("bob", &none, "get", None)
        };
        assert_eq!(level(healthz), Level::None);
        let openapi = Attributes {
            path: "/openapi/v2",
            ..ask("bob", &none, "get", None)
        };
        assert_eq!(level(openapi), Level::Metadata);
    }

    #[test]
    fn no_rule_no_event() {
        let policy = Policy::parse("apiVersion: audit.k8s.io/v1\nkind: Policy\n").unwrap();
        let decided = policy.decide(&ask("bob", &[], "get", None));
        assert_eq!(decided.level, Level::None);
        assert!(!decided.records(Stage::ResponseComplete));
    }

    #[test]
    fn resource_names_limit_a_rule() {
        let policy = Policy::parse(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: RequestResponse\n  resources: [{group: '', resources: [configmaps], resourceNames: [n]}]\n",
        )
        .unwrap();
        assert_eq!(
            policy
                .decide(&ask("bob", &[], "get", Some(on("", "configmaps", ""))))
                .level,
            Level::RequestResponse
        );
        let mut other = on("", "configmaps", "");
        other.name = "m";
        assert_eq!(
            policy.decide(&ask("bob", &[], "get", Some(other))).level,
            Level::None
        );
    }

    #[test]
    fn bad_policies_are_refused_naming_the_field() {
        let refused = |text: &str| Policy::parse(text).unwrap_err().to_string();
        assert!(refused("apiVersion: audit.k8s.io/v1beta1\nkind: Policy\n").contains("apiVersion"));
        assert!(refused("apiVersion: audit.k8s.io/v1\nkind: Poilcy\n").contains("kind"));
        let level =
            refused("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Everything\n");
        assert!(level.contains("Everything"), "{level}");
        let unknown = refused(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  user: [bob]\n",
        );
        assert!(unknown.contains("user"), "{unknown}");
        let both = refused(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: [/x]\n  namespaces: [a]\n",
        );
        assert!(both.contains("rules[0].nonResourceURLs"), "{both}");
        let url = refused(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: [healthz]\n",
        );
        assert!(url.contains("rules[0].nonResourceURLs[0]"), "{url}");
        let stage = refused("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [Sometimes]\n");
        assert!(stage.contains("Sometimes"), "{stage}");
    }

    #[test]
    fn a_policy_file_is_read_and_its_errors_name_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.yaml");
        std::fs::write(&path, POLICY).unwrap();
        assert_eq!(Policy::load(&path).unwrap().rules.len(), 6);
        std::fs::write(&path, "apiVersion: audit.k8s.io/v1\nkind: Other\n").unwrap();
        let error = Policy::load(&path).unwrap_err().to_string();
        assert!(
            error.contains("audit.yaml") && error.contains("kind"),
            "{error}"
        );
        let missing = Policy::load(&dir.path().join("none.yaml"))
            .unwrap_err()
            .to_string();
        assert!(missing.contains("none.yaml"), "{missing}");
    }
}
