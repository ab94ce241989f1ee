//! The manifests one member cluster receives from a WorkPlacement: its manifests with the
//! override rules applied in order (the WorkOverrides that select the placement, by name, then
//! the placement's own; in each rule JSON patches, then the image), their variables replaced
//! with the cluster's name, ClusterSet and ClusterProfile properties.
//!
//! Pure: no I/O, no kube client; the controller calls [`render`] once per selected cluster.

use std::collections::BTreeMap;

use atoll_api::placement::overrides::{Segment, Variable, segments};
use atoll_api::placement::{ImageOverride, JsonPatchOperation, ManifestSelector, Override};
use atoll_api::work::Manifest;
use serde_json::Value;

use super::{labels_of, matches};

/// What the overrides see of a member cluster.
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    /// Its name.
    pub name: String,
    /// The ClusterSet it is a member of.
    pub cluster_set: Option<String>,
    /// Its ClusterProfile's labels.
    pub labels: BTreeMap<String, String>,
    /// Its ClusterProfile's properties, by name.
    pub properties: BTreeMap<String, String>,
}

/// Where an override rule is written: `spec.overrides[INDEX]` of the placement, or of the
/// WorkOverride named.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RuleId {
    /// The WorkOverride that holds it; `None`: the placement's own rule.
    pub work_override: Option<String>,
    /// Its index in `spec.overrides`.
    pub index: usize,
}

impl std::fmt::Display for RuleId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.work_override {
            Some(name) => write!(f, "WorkOverride {name} spec.overrides[{}]", self.index),
            None => write!(f, "spec.overrides[{}]", self.index),
        }
    }
}

/// One override rule to apply, and where it is written.
#[derive(Debug, Clone, Copy)]
pub struct Rule<'a> {
    /// The WorkOverride that holds it; `None`: the placement's own rule.
    pub work_override: Option<&'a str>,
    /// Its index in `spec.overrides`.
    pub index: usize,
    /// The rule.
    pub spec: &'a Override,
}

impl<'a> Rule<'a> {
    /// The rules of `spec.overrides`, of the WorkOverride named or of the placement.
    pub fn all(work_override: Option<&'a str>, overrides: &'a [Override]) -> Vec<Rule<'a>> {
        overrides
            .iter()
            .enumerate()
            .map(|(index, spec)| Rule {
                work_override,
                index,
                spec,
            })
            .collect()
    }

    fn id(&self) -> RuleId {
        RuleId {
            work_override: self.work_override.map(str::to_owned),
            index: self.index,
        }
    }
}

/// A cluster's manifests after the overrides.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// The manifests, in the placement's order.
    pub manifests: Vec<Manifest>,
    /// The rules that changed at least one manifest, in order.
    pub applied: Vec<RuleId>,
}

/// Why the overrides cannot be applied for one cluster: that cluster's Work is left as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OverrideError {
    /// A variable names a property the cluster's ClusterProfile does not have.
    #[error(
        "{rule}.{field} uses ${{PROPERTY:{property}}}, and cluster {cluster} has no property {property:?}"
    )]
    MissingProperty {
        /// The rule.
        rule: RuleId,
        /// The field that uses it, e.g. `jsonPatch[0].value`.
        field: String,
        /// The property.
        property: String,
        /// The cluster.
        cluster: String,
    },
    /// `${CLUSTER_SET}` for a cluster in no ClusterSet.
    #[error("{rule}.{field} uses ${{CLUSTER_SET}}, and cluster {cluster} is in no ClusterSet")]
    NoClusterSet {
        /// The rule.
        rule: RuleId,
        /// The field that uses it.
        field: String,
        /// The cluster.
        cluster: String,
    },
    /// A value holds a variable that is not one (refused by validation first).
    #[error("{rule}.{field}: {why}")]
    InvalidVariable {
        /// The rule.
        rule: RuleId,
        /// The field.
        field: String,
        /// Why.
        why: String,
    },
    /// A patch operation does not apply to a manifest.
    #[error("{rule}.jsonPatch[{op}] ({what}) does not apply to manifest {manifest}: {why}")]
    Patch {
        /// The rule.
        rule: RuleId,
        /// The operation's index in the rule.
        op: usize,
        /// The operation, e.g. `replace /spec/replicas`.
        what: String,
        /// The manifest, e.g. `apps/v1 Deployment default/web`.
        manifest: String,
        /// Why, as the patch library says it.
        why: String,
    },
    /// A container image of a manifest is not a reference the override can split.
    #[error("{rule}.image cannot rewrite {path} of manifest {manifest}: {why}")]
    Image {
        /// The rule.
        rule: RuleId,
        /// Where the image is, e.g. `/spec/template/spec/containers/0/image`.
        path: String,
        /// The manifest.
        manifest: String,
        /// Why.
        why: String,
    },
}

impl OverrideError {
    /// The machine-readable reason, in CamelCase.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::MissingProperty { .. } => "OverridePropertyMissing",
            Self::NoClusterSet { .. } => "OverrideClusterSetMissing",
            Self::InvalidVariable { .. } => "OverrideInvalid",
            Self::Patch { .. } => "OverridePatchFailed",
            Self::Image { .. } => "OverrideImageFailed",
        }
    }
}

/// Applies `rules` in order to `manifests` for `cluster`.
pub fn render(
    manifests: &[Manifest],
    rules: &[Rule<'_>],
    cluster: &Cluster,
) -> Result<Rendered, OverrideError> {
    let mut out: Vec<Manifest> = manifests.to_vec();
    let mut applied = Vec::new();
    for r in rules {
        let spec = r.spec;
        if !selects_cluster(spec, cluster) {
            continue;
        }
        let rule = &r.id();
        let ops = spec
            .json_patch
            .iter()
            .enumerate()
            .map(|(i, op)| patch_operation(rule, i, op, cluster))
            .collect::<Result<Vec<_>, _>>()?;
        let image = spec
            .image
            .as_ref()
            .map(|image| image_parts(rule, image, cluster))
            .transpose()?;
        let mut changed = false;
        for manifest in out.iter_mut() {
            if !spec.manifests.is_empty() && !spec.manifests.iter().any(|s| selects(s, &manifest.0))
            {
                continue;
            }
            let before = manifest.0.clone();
            for (i, (what, op)) in ops.iter().enumerate() {
                json_patch::patch(&mut manifest.0, std::slice::from_ref(op)).map_err(|e| {
                    OverrideError::Patch {
                        rule: rule.clone(),
                        op: i,
                        what: what.clone(),
                        manifest: describe(&before),
                        why: e.kind.to_string(),
                    }
                })?;
            }
            if let Some(image) = &image {
                rewrite_images(&mut manifest.0, image).map_err(|(path, why)| {
                    OverrideError::Image {
                        rule: rule.clone(),
                        path,
                        manifest: describe(&before),
                        why,
                    }
                })?;
            }
            changed |= manifest.0 != before;
        }
        if changed {
            applied.push(rule.clone());
        }
    }
    Ok(Rendered {
        manifests: out,
        applied,
    })
}

/// Whether a rule's `clusters` pick this cluster (empty: every cluster).
fn selects_cluster(rule: &Override, cluster: &Cluster) -> bool {
    let c = &rule.clusters;
    c.cluster_set
        .as_deref()
        .is_none_or(|s| cluster.cluster_set.as_deref() == Some(s))
        && c.label_selector
            .as_ref()
            .is_none_or(|l| matches(l, &cluster.labels))
        && (c.names.is_empty() || c.names.contains(&cluster.name))
}

/// Whether a manifest selector picks a manifest.
fn selects(selector: &ManifestSelector, manifest: &Value) -> bool {
    let text = |pointer: &str| manifest.pointer(pointer).and_then(Value::as_str);
    let api_version = text("/apiVersion").unwrap_or_default();
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let labels = labels_of(manifest);
    selector.group.as_deref().is_none_or(|g| g == group)
        && selector
            .kind
            .as_deref()
            .is_none_or(|k| Some(k) == text("/kind"))
        && selector
            .namespace
            .as_deref()
            .is_none_or(|n| Some(n) == text("/metadata/namespace"))
        && selector
            .name
            .as_deref()
            .is_none_or(|n| Some(n) == text("/metadata/name"))
        && selector
            .label_selector
            .as_ref()
            .is_none_or(|l| matches(l, &labels))
}

/// A manifest as people name it: `apps/v1 Deployment default/web`.
fn describe(manifest: &Value) -> String {
    let text = |pointer: &str| {
        manifest
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let namespace = text("/metadata/namespace");
    let name = if namespace.is_empty() {
        text("/metadata/name").to_owned()
    } else {
        format!("{namespace}/{}", text("/metadata/name"))
    };
    format!("{} {} {name}", text("/apiVersion"), text("/kind"))
}

/// Replaces the variables of one text.
fn expand(
    text: &str,
    rule: &RuleId,
    field: &str,
    cluster: &Cluster,
) -> Result<String, OverrideError> {
    let parts = segments(text).map_err(|why| OverrideError::InvalidVariable {
        rule: rule.clone(),
        field: field.to_owned(),
        why,
    })?;
    let mut out = String::with_capacity(text.len());
    for part in parts {
        match part {
            Segment::Text(t) => out.push_str(&t),
            Segment::Variable(Variable::ClusterName) => out.push_str(&cluster.name),
            Segment::Variable(Variable::ClusterSet) => {
                out.push_str(cluster.cluster_set.as_deref().ok_or_else(|| {
                    OverrideError::NoClusterSet {
                        rule: rule.clone(),
                        field: field.to_owned(),
                        cluster: cluster.name.clone(),
                    }
                })?)
            }
            Segment::Variable(Variable::Property(name)) => {
                let value = cluster.properties.get(&name).ok_or_else(|| {
                    OverrideError::MissingProperty {
                        rule: rule.clone(),
                        field: field.to_owned(),
                        property: name.clone(),
                        cluster: cluster.name.clone(),
                    }
                })?;
                out.push_str(value);
            }
        }
    }
    Ok(out)
}

/// Replaces the variables in every string of a value (never in the raw JSON, so a property
/// holding quotes stays a string).
fn expand_value(
    value: &Value,
    rule: &RuleId,
    field: &str,
    cluster: &Cluster,
) -> Result<Value, OverrideError> {
    Ok(match value {
        Value::String(text) => Value::String(expand(text, rule, field, cluster)?),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| expand_value(v, rule, field, cluster))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), expand_value(v, rule, field, cluster)?)))
                .collect::<Result<_, _>>()?,
        ),
        other => other.clone(),
    })
}

/// One patch operation with its variables replaced, and how to name it (`replace /spec/x`).
fn patch_operation(
    rule: &RuleId,
    index: usize,
    op: &JsonPatchOperation,
    cluster: &Cluster,
) -> Result<(String, json_patch::PatchOperation), OverrideError> {
    let field = format!("jsonPatch[{index}].value");
    let mut body = serde_json::json!({"op": op.op, "path": op.path});
    if let Some(value) = &op.value {
        body["value"] = expand_value(value, rule, &field, cluster)?;
    }
    let what = format!("{} {}", op.op, op.path);
    let parsed = serde_json::from_value(body).map_err(|e| OverrideError::InvalidVariable {
        rule: rule.clone(),
        field: format!("jsonPatch[{index}]"),
        why: e.to_string(),
    })?;
    Ok((what, parsed))
}

/// An image override with its variables replaced.
fn image_parts(
    rule: &RuleId,
    image: &ImageOverride,
    cluster: &Cluster,
) -> Result<ImageOverride, OverrideError> {
    let part = |name: &str, value: &Option<String>| {
        value
            .as_deref()
            .map(|v| expand(v, rule, &format!("image.{name}"), cluster))
            .transpose()
    };
    Ok(ImageOverride {
        registry: part("registry", &image.registry)?,
        repository: part("repository", &image.repository)?,
        tag: part("tag", &image.tag)?,
    })
}

/// A container image reference split as Docker's reference grammar does:
/// `[registry/]repository[:tag][@digest]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ImageReference {
    /// The registry host and port, when the first component is one (it holds a `.` or a `:`,
    /// or is `localhost`).
    pub registry: Option<String>,
    /// The repository path.
    pub repository: String,
    /// The tag.
    pub tag: Option<String>,
    /// The digest, e.g. `sha256:…`.
    pub digest: Option<String>,
}

impl ImageReference {
    /// Splits a reference; an empty repository is an error.
    pub fn parse(image: &str) -> Result<Self, String> {
        let (rest, digest) = match image.split_once('@') {
            Some((rest, digest)) => (rest, Some(digest.to_owned())),
            None => (image, None),
        };
        let (registry, path) = match rest.split_once('/') {
            Some((first, path))
                if first.contains('.') || first.contains(':') || first == "localhost" =>
            {
                (Some(first.to_owned()), path)
            }
            _ => (None, rest),
        };
        // A tag follows the last `:` of the last path component (a registry port is not in `path`).
        let last = path.rfind('/').map_or(0, |i| i + 1);
        let (repository, tag) = match path[last..].rfind(':') {
            Some(i) => (&path[..last + i], Some(path[last + i + 1..].to_owned())),
            None => (path, None),
        };
        if repository.is_empty() || tag.as_deref() == Some("") || digest.as_deref() == Some("") {
            return Err(format!("{image:?} is not an image reference"));
        }
        Ok(Self {
            registry,
            repository: repository.to_owned(),
            tag,
            digest,
        })
    }

    /// The parts an override sets, replaced: a tag that looks like a digest (`algorithm:hex`)
    /// becomes the digest; either replaces both.
    pub fn with(mut self, image: &ImageOverride) -> Self {
        if let Some(registry) = &image.registry {
            self.registry = Some(registry.clone()).filter(|r| !r.is_empty());
        }
        if let Some(repository) = &image.repository {
            self.repository = repository.clone();
        }
        if let Some(tag) = &image.tag {
            let digest = tag
                .split_once(':')
                .is_some_and(|(algorithm, hex)| !algorithm.is_empty() && hex.len() >= 32);
            if digest {
                (self.tag, self.digest) = (None, Some(tag.clone()));
            } else {
                (self.tag, self.digest) = (Some(tag.clone()), None);
            }
        }
        self
    }
}

impl std::fmt::Display for ImageReference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(registry) = &self.registry {
            write!(f, "{registry}/")?;
        }
        f.write_str(&self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

/// Where the pod spec of a kind is: Pods, and the pod templates of the workload kinds.
fn pod_spec_pointer(group: &str, kind: &str) -> Option<&'static str> {
    match (group, kind) {
        ("", "Pod") => Some("/spec"),
        ("", "ReplicationController") => Some("/spec/template/spec"),
        ("", "PodTemplate") => Some("/template/spec"),
        ("apps", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet") => {
            Some("/spec/template/spec")
        }
        ("batch", "Job") => Some("/spec/template/spec"),
        ("batch", "CronJob") => Some("/spec/jobTemplate/spec/template/spec"),
        _ => None,
    }
}

/// Rewrites the image of every container and init container of a manifest that has a pod spec;
/// the image at fault and why when one is not a reference.
fn rewrite_images(manifest: &mut Value, image: &ImageOverride) -> Result<(), (String, String)> {
    let api_version = manifest
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let kind = manifest
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Some(pointer) = pod_spec_pointer(group, kind) else {
        return Ok(());
    };
    let Some(spec) = manifest.pointer_mut(pointer) else {
        return Ok(());
    };
    for list in ["initContainers", "containers"] {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for (i, container) in containers.iter_mut().enumerate() {
            let Some(current) = container.get("image").and_then(Value::as_str) else {
                continue;
            };
            let path = format!("{pointer}/{list}/{i}/image");
            let parsed = ImageReference::parse(current).map_err(|why| (path, why))?;
            container["image"] = Value::String(parsed.with(image).to_string());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cluster(name: &str, region: Option<&str>) -> Cluster {
        Cluster {
            name: name.into(),
            cluster_set: Some("prod".into()),
            labels: [("env".to_owned(), "prod".to_owned())].into(),
            properties: region
                .map(|r| [("region".to_owned(), r.to_owned())].into())
                .unwrap_or_default(),
        }
    }

    /// Renders a placement's own rules.
    fn render_own(
        manifests: &[Manifest],
        overrides: &[Override],
        cluster: &Cluster,
    ) -> Result<Rendered, OverrideError> {
        render(manifests, &Rule::all(None, overrides), cluster)
    }

    fn indexes(out: &Rendered) -> Vec<usize> {
        out.applied.iter().map(|r| r.index).collect()
    }

    fn rules(yaml: &str) -> Vec<Override> {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    fn manifests() -> Vec<Manifest> {
        vec![
            Manifest(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "settings", "namespace": "app", "labels": {"tier": "web"}},
                "data": {"region": "none", "list": "a"}
            })),
            Manifest(json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "app"},
                "spec": {"replicas": 1, "template": {"spec": {
                    "initContainers": [{"name": "init", "image": "busybox:1.36"}],
                    "containers": [
                        {"name": "web", "image": "registry.example.com:5000/team/web:1.0"},
                        {"name": "side", "image": "nginx@sha256:0123456789abcdef0123456789abcdef"}
                    ]
                }}}
            })),
        ]
    }

    #[test]
    fn each_patch_op_changes_the_selected_manifests() {
        let out = render_own(
            &manifests(),
            &rules(
                r#"
- manifests: [{kind: ConfigMap}]
  jsonPatch:
  - {op: test, path: /data/region, value: none}
  - {op: replace, path: /data/region, value: "${PROPERTY:region}"}
  - {op: add, path: /data/cluster, value: "${CLUSTER_NAME} in ${CLUSTER_SET}"}
  - {op: remove, path: /data/list}
- manifests: [{group: apps, kind: Deployment, name: web}]
  jsonPatch: [{op: replace, path: /spec/replicas, value: 3}]
- manifests: [{kind: Secret}]
  jsonPatch: [{op: remove, path: /data}]
"#,
            ),
            &cluster("c1", Some("eu-west")),
        )
        .unwrap();
        assert_eq!(
            out.manifests[0].0["data"],
            json!({"region": "eu-west", "cluster": "c1 in prod"})
        );
        assert_eq!(out.manifests[1].0["spec"]["replicas"], 3);
        assert_eq!(indexes(&out), [0, 1], "rule 2 matches no manifest");
    }

    #[test]
    fn rules_pick_clusters_and_later_rules_win() {
        let overrides = rules(
            r#"
- manifests: [{kind: ConfigMap}]
  jsonPatch: [{op: replace, path: /data/region, value: first}]
- clusters: {names: [c2]}
  manifests: [{group: "", kind: ConfigMap}]
  jsonPatch: [{op: replace, path: /data/region, value: second}]
- clusters: {labelSelector: {matchLabels: {env: dev}}}
  jsonPatch: [{op: replace, path: /data/region, value: never}]
- clusters: {clusterSet: prod}
  manifests: [{labelSelector: {matchLabels: {tier: web}}}]
  jsonPatch: [{op: add, path: /data/set, value: "${CLUSTER_SET}"}]
"#,
        );
        let c1 = render_own(&manifests(), &overrides, &cluster("c1", None)).unwrap();
        let c2 = render_own(&manifests(), &overrides, &cluster("c2", None)).unwrap();
        assert_eq!(c1.manifests[0].0["data"]["region"], "first");
        assert_eq!(c2.manifests[0].0["data"]["region"], "second");
        assert_eq!(c2.manifests[0].0["data"]["set"], "prod");
        assert_eq!((indexes(&c1), indexes(&c2)), (vec![0, 3], vec![0, 1, 3]));
        // Without rules, the manifests are as written.
        let plain = render_own(&manifests(), &[], &cluster("c1", None)).unwrap();
        assert_eq!(plain.manifests, manifests());
    }

    #[test]
    fn images_split_into_registry_repository_and_tag() {
        let parse = |s: &str| ImageReference::parse(s).unwrap();
        assert_eq!(
            parse("registry.example.com:5000/team/web:1.0"),
            ImageReference {
                registry: Some("registry.example.com:5000".into()),
                repository: "team/web".into(),
                tag: Some("1.0".into()),
                digest: None
            }
        );
        assert_eq!(
            parse("localhost:5000/web").registry.as_deref(),
            Some("localhost:5000")
        );
        assert_eq!(
            parse("localhost/web").registry.as_deref(),
            Some("localhost")
        );
        let plain = parse("library/nginx");
        assert_eq!(
            (plain.registry, plain.repository.as_str(), plain.tag),
            (None, "library/nginx", None)
        );
        let digest = parse("ghcr.io/a/b:1.2@sha256:abc");
        assert_eq!(digest.tag.as_deref(), Some("1.2"));
        assert_eq!(digest.digest.as_deref(), Some("sha256:abc"));
        assert_eq!(digest.to_string(), "ghcr.io/a/b:1.2@sha256:abc");
        for bad in ["", ":1.0", "web:", "web@", "reg.io/"] {
            assert!(ImageReference::parse(bad).is_err(), "{bad:?}");
        }
        let set =
            |registry: Option<&str>, repository: Option<&str>, tag: Option<&str>| ImageOverride {
                registry: registry.map(Into::into),
                repository: repository.map(Into::into),
                tag: tag.map(Into::into),
            };
        assert_eq!(
            parse("nginx:1.25")
                .with(&set(Some("mirror.eu:443"), None, None))
                .to_string(),
            "mirror.eu:443/nginx:1.25"
        );
        assert_eq!(
            parse("reg.io:5000/nginx:1.25")
                .with(&set(Some(""), Some("lib/nginx"), None))
                .to_string(),
            "lib/nginx:1.25"
        );
        let sha = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        assert_eq!(
            parse("nginx:1.25")
                .with(&set(None, None, Some(sha)))
                .to_string(),
            format!("nginx@{sha}")
        );
        assert_eq!(
            parse("nginx@sha256:0123")
                .with(&set(None, None, Some("1.26")))
                .to_string(),
            "nginx:1.26"
        );
    }

    #[test]
    fn image_overrides_rewrite_containers_and_init_containers_of_pod_templates() {
        let out = render_own(
            &manifests(),
            &rules("- image: {registry: 'mirror.${PROPERTY:region}.example.com', tag: v2}"),
            &cluster("c1", Some("eu")),
        )
        .unwrap();
        let spec = &out.manifests[1].0["spec"]["template"]["spec"];
        assert_eq!(
            spec["initContainers"][0]["image"],
            "mirror.eu.example.com/busybox:v2"
        );
        assert_eq!(
            spec["containers"][0]["image"],
            "mirror.eu.example.com/team/web:v2"
        );
        assert_eq!(
            spec["containers"][1]["image"],
            "mirror.eu.example.com/nginx:v2"
        );
        assert_eq!(
            out.manifests[0],
            manifests()[0],
            "a ConfigMap has no images"
        );
        assert_eq!(indexes(&out), [0]);

        let kinds = [
            ("v1", "Pod", "/spec"),
            (
                "batch/v1",
                "CronJob",
                "/spec/jobTemplate/spec/template/spec",
            ),
            ("batch/v1", "Job", "/spec/template/spec"),
            ("apps/v1", "StatefulSet", "/spec/template/spec"),
            ("apps/v1", "DaemonSet", "/spec/template/spec"),
            ("apps/v1", "ReplicaSet", "/spec/template/spec"),
        ];
        for (api_version, kind, pointer) in kinds {
            let mut object =
                json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}});
            let mut spec = json!({"containers": [{"name": "a", "image": "app:1"}]});
            for part in pointer
                .split('/')
                .skip(1)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
            {
                spec = json!({ part: spec });
            }
            object
                .as_object_mut()
                .unwrap()
                .extend(spec.as_object().unwrap().clone());
            let out = render_own(
                &[Manifest(object)],
                &rules("- image: {tag: '2'}"),
                &cluster("c", None),
            )
            .unwrap();
            assert_eq!(
                out.manifests[0]
                    .0
                    .pointer(&format!("{pointer}/containers/0/image")),
                Some(&json!("app:2")),
                "{kind}"
            );
        }
    }

    #[test]
    fn a_missing_property_fails_the_cluster_naming_rule_and_property() {
        let error = render_own(
            &manifests(),
            &rules(
                "- image: {tag: v1}\n- jsonPatch: [{op: add, path: /data/r, value: {nested: ['${PROPERTY:region}']}}]",
            ),
            &cluster("c3", None),
        )
        .unwrap_err();
        assert_eq!(
            error,
            OverrideError::MissingProperty {
                rule: RuleId {
                    work_override: None,
                    index: 1
                },
                field: "jsonPatch[0].value".into(),
                property: "region".into(),
                cluster: "c3".into()
            }
        );
        assert_eq!(error.reason(), "OverridePropertyMissing");
        assert_eq!(
            error.to_string(),
            "spec.overrides[1].jsonPatch[0].value uses ${PROPERTY:region}, and cluster c3 has no property \"region\""
        );
        // A property that holds quotes stays one string.
        let mut quoted = cluster("c4", None);
        quoted
            .properties
            .insert("region".into(), "\"eu\", \"x\"".into());
        let out = render_own(
            &manifests(),
            &rules("- manifests: [{kind: ConfigMap}]\n  jsonPatch: [{op: replace, path: /data/region, value: '${PROPERTY:region}'}]"),
            &quoted,
        )
        .unwrap();
        assert_eq!(out.manifests[0].0["data"]["region"], "\"eu\", \"x\"");
        let mut alone = cluster("c5", Some("eu"));
        alone.cluster_set = None;
        let error = render_own(
            &manifests(),
            &rules(
                "- jsonPatch: [{op: add, path: /metadata/labels, value: {set: '${CLUSTER_SET}'}}]",
            ),
            &alone,
        )
        .unwrap_err();
        assert_eq!(error.reason(), "OverrideClusterSetMissing");
    }

    #[test]
    fn a_patch_that_does_not_apply_names_the_rule_operation_and_manifest() {
        let error = render_own(
            &manifests(),
            &rules(
                "- image: {tag: v1}\n- manifests: [{kind: Deployment}]\n  jsonPatch:\n  - {op: replace, path: /spec/replicas, value: 2}\n  - {op: replace, path: /spec/missing/field, value: 1}",
            ),
            &cluster("c1", None),
        )
        .unwrap_err();
        assert_eq!(error.reason(), "OverridePatchFailed");
        assert_eq!(
            error.to_string(),
            "spec.overrides[1].jsonPatch[1] (replace /spec/missing/field) does not apply to manifest apps/v1 Deployment app/web: path is invalid"
        );
        let error = render_own(
            &manifests(),
            &rules("- manifests: [{kind: ConfigMap}]\n  jsonPatch: [{op: test, path: /data/region, value: eu}]"),
            &cluster("c1", None),
        )
        .unwrap_err();
        assert!(
            error.to_string().ends_with("value did not match"),
            "{error}"
        );
    }
}
