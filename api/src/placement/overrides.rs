//! Overrides of a WorkPlacement: rules that change the manifests one member cluster receives
//! (RFC 6902 JSON patches and image rewrites), the variables their values may use, and their
//! validation.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::InvalidField;

/// One override rule: which clusters and manifests it changes, and how.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Override {
    /// The clusters the rule changes (criteria ANDed); empty: every selected cluster.
    #[serde(default, skip_serializing_if = "OverrideClusters::is_empty")]
    pub clusters: OverrideClusters,
    /// The manifests the rule changes (any of them matching); empty: every manifest.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100))]
    pub manifests: Vec<ManifestSelector>,
    /// RFC 6902 operations applied to each matching manifest, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100))]
    pub json_patch: Vec<JsonPatchOperation>,
    /// New parts of every container image (containers and initContainers) of the matching Pods
    /// and pod templates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-validations" = [{"rule": "has(self.registry) || has(self.repository) || has(self.tag)", "message": "an image override sets at least one of registry, repository and tag"}]))]
    pub image: Option<ImageOverride>,
}

/// The clusters an override rule changes; the criteria are ANDed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OverrideClusters {
    /// Only members of this ClusterSet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_set: Option<String>,
    /// Only clusters whose ClusterProfile labels match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Only these clusters, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::string_set")]
    pub names: Vec<String>,
}

impl OverrideClusters {
    /// Whether no criterion is set (every cluster).
    pub fn is_empty(&self) -> bool {
        self.cluster_set.is_none() && self.label_selector.is_none() && self.names.is_empty()
    }
}

/// The manifests an override rule changes; the fields set are ANDed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestSelector {
    /// API group (`""` for the core group), e.g. `apps`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Kind, e.g. `Deployment`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Labels of the manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
}

/// The JSON patch operations an override may use.
pub const PATCH_OPS: [&str; 4] = ["add", "remove", "replace", "test"];

/// One RFC 6902 operation.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct JsonPatchOperation {
    /// `add`, `remove`, `replace` or `test`.
    #[schemars(extend("enum" = ["add", "remove", "replace", "test"]))]
    pub op: String,
    /// A JSON pointer into the manifest, such as `/spec/replicas`.
    #[schemars(extend("pattern" = "^/"))]
    pub path: String,
    /// The value of `add`, `replace` and `test`; its strings may use `${CLUSTER_NAME}`,
    /// `${CLUSTER_SET}` and `${PROPERTY:<name>}` (`$${` is a literal `${`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_value")]
    pub value: Option<serde_json::Value>,
}

/// New parts of a container image reference `[registry/]repository[:tag][@digest]`; each part set
/// replaces that part, and each may use the variables of a patch value.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ImageOverride {
    /// Registry host (and port), e.g. `registry.eu.example.com:5000`; `""` removes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry: Option<String>,
    /// Repository, e.g. `team/web`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// Tag, e.g. `1.2.3`, or a digest such as `sha256:…` (either replaces both).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
}

/// A variable an override's values may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Variable {
    /// `${CLUSTER_NAME}`: the member cluster's name.
    ClusterName,
    /// `${CLUSTER_SET}`: the ClusterSet the cluster is a member of.
    ClusterSet,
    /// `${PROPERTY:<name>}`: a property in the cluster's ClusterProfile status.
    Property(String),
}

/// A piece of a text with variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// Text kept as it is.
    Text(String),
    /// A variable, replaced by its value.
    Variable(Variable),
}

/// Splits a text into literal text and variables; `$${` is a literal `${`. An unknown or
/// unterminated `${…}` is an error that says why.
pub fn segments(text: &str) -> Result<Vec<Segment>, String> {
    let mut out = Vec::new();
    let mut literal = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        if rest[..at].ends_with('$') {
            // `$${`: the escape, a literal `${`.
            literal.push_str(&rest[..at - 1]);
            literal.push_str("${");
            rest = &rest[at + 2..];
            continue;
        }
        literal.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("unterminated variable {:?}", &rest[at..]))?;
        let name = &after[..end];
        let variable = match name {
            "CLUSTER_NAME" => Variable::ClusterName,
            "CLUSTER_SET" => Variable::ClusterSet,
            _ => match name.strip_prefix("PROPERTY:") {
                Some(property) if !property.is_empty() => Variable::Property(property.to_owned()),
                _ => {
                    return Err(format!(
                        "unknown variable ${{{name}}}: the variables are ${{CLUSTER_NAME}}, ${{CLUSTER_SET}} and ${{PROPERTY:<name>}} ($${{ is a literal ${{)"
                    ));
                }
            },
        };
        if !literal.is_empty() {
            out.push(Segment::Text(std::mem::take(&mut literal)));
        }
        out.push(Segment::Variable(variable));
        rest = &after[end + 1..];
    }
    literal.push_str(rest);
    if !literal.is_empty() {
        out.push(Segment::Text(literal));
    }
    Ok(out)
}

/// Paths an override may not change: they name the object, and a changed name would be another
/// object on the member cluster.
const FIXED_PATHS: [&str; 4] = [
    "/apiVersion",
    "/kind",
    "/metadata/name",
    "/metadata/namespace",
];

/// Checks a placement's overrides, naming the first field at fault, e.g.
/// `spec.overrides[1].jsonPatch[0].path`.
pub fn validate(overrides: &[Override]) -> Result<(), InvalidField> {
    for (i, rule) in overrides.iter().enumerate() {
        let at = |field: &str| format!("spec.overrides[{i}].{field}");
        if rule.json_patch.is_empty() && rule.image.is_none() {
            return Err(InvalidField {
                field: format!("spec.overrides[{i}]"),
                value: "{}".into(),
                why: "an override sets jsonPatch, image or both".into(),
            });
        }
        for (j, op) in rule.json_patch.iter().enumerate() {
            if !PATCH_OPS.contains(&op.op.as_str()) {
                return Err(InvalidField {
                    field: at(&format!("jsonPatch[{j}].op")),
                    value: quote(&op.op),
                    why: "supported values: \"add\", \"remove\", \"replace\", \"test\"".into(),
                });
            }
            let fixed = FIXED_PATHS
                .iter()
                .find(|p| op.path == **p || op.path.starts_with(&format!("{p}/")));
            if !op.path.starts_with('/') || fixed.is_some() {
                return Err(InvalidField {
                    field: at(&format!("jsonPatch[{j}].path")),
                    value: quote(&op.path),
                    why: match fixed {
                        Some(p) => format!("an override may not change {p}"),
                        None => "a JSON pointer starts with /, such as /spec/replicas".into(),
                    },
                });
            }
            match (&op.value, op.op.as_str()) {
                (None, "add" | "replace" | "test") => {
                    return Err(InvalidField {
                        field: at(&format!("jsonPatch[{j}].value")),
                        value: "null".into(),
                        why: format!("{} needs a value", op.op),
                    });
                }
                (Some(value), _) => check_value(value).map_err(|(text, why)| InvalidField {
                    field: at(&format!("jsonPatch[{j}].value")),
                    value: quote(&text),
                    why,
                })?,
                _ => {}
            }
        }
        if let Some(image) = &rule.image {
            let parts = [
                ("registry", &image.registry),
                ("repository", &image.repository),
                ("tag", &image.tag),
            ];
            if parts.iter().all(|(_, p)| p.is_none()) {
                return Err(InvalidField {
                    field: at("image"),
                    value: "{}".into(),
                    why: "an image override sets at least one of registry, repository and tag"
                        .into(),
                });
            }
            for (name, part) in parts {
                if let Some(text) = part {
                    segments(text).map_err(|why| InvalidField {
                        field: at(&format!("image.{name}")),
                        value: quote(text),
                        why,
                    })?;
                }
            }
        }
    }
    Ok(())
}

/// Checks every string in a patch value; the string at fault, and why.
fn check_value(value: &serde_json::Value) -> Result<(), (String, String)> {
    match value {
        serde_json::Value::String(text) => {
            segments(text).map(drop).map_err(|why| (text.clone(), why))
        }
        serde_json::Value::Array(items) => items.iter().try_for_each(check_value),
        serde_json::Value::Object(map) => map.values().try_for_each(check_value),
        _ => Ok(()),
    }
}

fn quote(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_split_variables_and_keep_escapes() {
        assert_eq!(
            segments("${CLUSTER_NAME}-${PROPERTY:region}.x").unwrap(),
            [
                Segment::Variable(Variable::ClusterName),
                Segment::Text("-".into()),
                Segment::Variable(Variable::Property("region".into())),
                Segment::Text(".x".into()),
            ]
        );
        assert_eq!(
            segments("a $${HOME} b").unwrap(),
            [Segment::Text("a ${HOME} b".into())]
        );
        assert_eq!(segments("$ and {} and $").unwrap().len(), 1);
        assert!(
            segments("${HOME}")
                .unwrap_err()
                .contains("unknown variable ${HOME}")
        );
        assert!(segments("${PROPERTY:}").is_err());
        assert!(
            segments("x ${CLUSTER_NAME")
                .unwrap_err()
                .contains("unterminated")
        );
    }

    fn rules(yaml: &str) -> Vec<Override> {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    #[test]
    fn validation_names_the_field_at_fault() {
        let check = |yaml: &str| validate(&rules(yaml)).map_err(|e| e.to_string());
        assert_eq!(
            check(
                "- jsonPatch: [{op: replace, path: /data/a, value: '${CLUSTER_NAME}'}]\n- image: {tag: v2}"
            ),
            Ok(())
        );
        assert_eq!(
            check("- image: {tag: v2}\n- jsonPatch: [{op: move, path: /a}]").unwrap_err(),
            "spec.overrides[1].jsonPatch[0].op: Invalid value: \"move\": supported values: \"add\", \"remove\", \"replace\", \"test\""
        );
        assert_eq!(
            check("- image: {tag: v2}\n- jsonPatch: [{op: remove, path: /a}, {op: add, path: spec/x, value: 1}]").unwrap_err(),
            "spec.overrides[1].jsonPatch[1].path: Invalid value: \"spec/x\": a JSON pointer starts with /, such as /spec/replicas"
        );
        assert!(
            check("- jsonPatch: [{op: replace, path: /metadata/name, value: x}]")
                .unwrap_err()
                .contains("may not change /metadata/name")
        );
        assert_eq!(
            check("- jsonPatch: [{op: add, path: /metadata/labels/a}]").unwrap_err(),
            "spec.overrides[0].jsonPatch[0].value: Invalid value: null: add needs a value"
        );
        assert!(check("- image: {}").unwrap_err().starts_with(
            "spec.overrides[0].image: Invalid value: {}: an image override sets at least one"
        ));
        assert!(
            check("- clusters: {names: [a]}")
                .unwrap_err()
                .starts_with("spec.overrides[0]: Invalid value")
        );
        assert!(
            check("- jsonPatch: [{op: add, path: /data, value: {k: [x, '${REGION}']}}]")
                .unwrap_err()
                .starts_with("spec.overrides[0].jsonPatch[0].value: Invalid value: \"${REGION}\": unknown variable ${REGION}")
        );
        assert!(
            check("- image: {registry: '${PROPERTY:registry}', tag: '${TAG}'}")
                .unwrap_err()
                .starts_with("spec.overrides[0].image.tag: Invalid value: \"${TAG}\"")
        );
    }
}
