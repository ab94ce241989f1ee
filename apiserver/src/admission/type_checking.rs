//! The type checking of a ValidatingAdmissionPolicy, as kube-apiserver's policy status
//! controller does it (`validating/typechecking.go`): the kinds the policy's
//! `matchConstraints.resourceRules` name exactly (no wildcard group, version or resource, no
//! subresource; at most ten) are resolved to their schemas, and each validation's `expression`
//! and `messageExpression` is checked once per kind with `object` and `oldObject` typed from that
//! kind's schema, and `params` from the `paramKind`'s (dynamic when it has no schema; not
//! declared without a `paramKind`). The policy's `variables` are checked first in the same
//! environment, so that `variables.x` has the type of its expression (dynamic when it does not
//! check). What fails is reported per kind in `status.typeChecking.expressionWarnings`, in
//! upstream's words (match conditions, variables and audit annotations get none, as upstream):
//!
//! ```text
//! apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replicsa'
//!  | object.spec.replicsa > 1
//!  | ...........^
//! ```
//!
//! Warnings change nothing of enforcement: requests are evaluated with dynamic types.

use std::collections::BTreeMap;
use std::sync::Arc;

use atoll_cel::{Env, ObjectType, Program, Type};
use serde_json::{Value, json};

use super::policies::{self, OBJECT, OLD_OBJECT, PARAMS, VARIABLES};

/// Kinds checked at most per policy (upstream's `maxTypesToCheck`).
const MAX_KINDS: usize = 10;

/// The keys of a validation whose expressions are reported, as upstream's `TypeChecker.Check`
/// reports them: only the validations' (match conditions, variables and audit annotations are
/// not).
const CHECKED: [&str; 2] = ["expression", "messageExpression"];

/// One group/version/kind.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Gvk {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl std::fmt::Display for Gvk {
    /// As apimachinery's `GroupVersionKind.String()`: `apps/v1, Kind=Deployment`, `/v1, Kind=Pod`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}, Kind={}", self.group, self.version, self.kind)
    }
}

/// What type checking reads of the served resources.
pub trait Schemas {
    /// The kind of `resource` (plural) in `group`/`version` (upstream's `RESTMapper.KindsFor`),
    /// or `None` when no such resource is served.
    fn kind(&self, group: &str, version: &str, resource: &str) -> Option<String>;
    /// The schema objects of a kind are checked against (the OpenAPI schema of a built-in
    /// kind, a custom resource's structural schema), or `None` when there is none.
    fn schema(&self, gvk: &Gvk) -> Option<Arc<Value>>;
}

/// A warning of `status.typeChecking.expressionWarnings`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpressionWarning {
    /// The expression's field: `spec.validations[0].expression`.
    pub field_ref: String,
    pub warning: String,
}

impl ExpressionWarning {
    pub fn to_json(&self) -> Value {
        json!({"fieldRef": self.field_ref, "warning": self.warning})
    }
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn strings<'a>(value: &'a Value, key: &str) -> Vec<&'a str> {
    value
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// The group/version/resource triples the policy's resource rules name exactly (rules with a
/// wildcard group or version are skipped; wildcard resources and subresources are left out),
/// sorted within each rule, rules in order.
pub fn named_resources(spec: &Value) -> Vec<(String, String, String)> {
    let mut named = Vec::new();
    let rules = spec["matchConstraints"]["resourceRules"].as_array();
    for rule in rules.into_iter().flatten() {
        let mut groups = strings(rule, "apiGroups");
        let mut versions = strings(rule, "apiVersions");
        let mut resources = strings(rule, "resources");
        if groups.is_empty() || groups.iter().any(|g| g.contains('*')) {
            continue;
        }
        if versions.is_empty() || versions.iter().any(|v| v.contains('*')) {
            continue;
        }
        resources.retain(|r| !r.contains(['*', '/']));
        groups.sort_unstable();
        versions.sort_unstable();
        resources.sort_unstable();
        for group in &groups {
            for version in &versions {
                for resource in &resources {
                    named.push((
                        (*group).to_owned(),
                        (*version).to_owned(),
                        (*resource).to_owned(),
                    ));
                }
            }
        }
    }
    named
}

/// The kinds to check a policy against: those of [`named_resources`] that resolve (the first
/// [`MAX_KINDS`] resolutions), sorted by group, version and kind.
pub fn kinds_to_check(spec: &Value, schemas: &dyn Schemas) -> Vec<Gvk> {
    let mut kinds: Vec<Gvk> = named_resources(spec)
        .into_iter()
        .filter_map(|(group, version, resource)| {
            let kind = schemas.kind(&group, &version, &resource)?;
            Some(Gvk {
                group,
                version,
                kind,
            })
        })
        .take(MAX_KINDS)
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

/// The kind of the policy's params (`paramKind`), if it names one.
pub fn param_kind(spec: &Value) -> Option<Gvk> {
    let param_kind = spec.get("paramKind").filter(|p| p.is_object())?;
    let api_version = text(param_kind, "apiVersion");
    let (group, version) = match api_version.split_once('/') {
        Some((group, version)) => (group, version),
        None => ("", api_version),
    };
    // An apiVersion upstream cannot parse (`a/b/c`) has no kind.
    if version.contains('/') || version.is_empty() {
        return None;
    }
    Some(Gvk {
        group: group.to_owned(),
        version: version.to_owned(),
        kind: text(param_kind, "kind").to_owned(),
    })
}

/// The environment one kind's expressions are checked in: the policy environment with `object`
/// and `oldObject` of the kind's type, `params` of the param kind's (or dynamic), or left out
/// when the policy has no `paramKind`, and `variables` with the variables checked so far.
fn typed_env(object: &Type, params: Option<&Type>, variables: &ObjectType) -> Env {
    let mut env = policies::env();
    env.variables
        .retain(|(name, _)| params.is_some() || &**name != PARAMS);
    for (name, ty) in &mut env.variables {
        match &**name {
            OBJECT | OLD_OBJECT => *ty = object.clone(),
            PARAMS => *ty = params.cloned().unwrap_or(Type::Dyn),
            VARIABLES => *ty = Type::Object(Arc::new(variables.clone())),
            _ => {}
        }
    }
    env
}

/// The type objects of a schema have; dynamic when the schema declares none.
fn object_type(schema: Option<&Value>) -> Type {
    schema
        .and_then(crate::validation::cel::resource_decl_type)
        .unwrap_or(Type::Dyn)
}

/// The environment of one kind, its variables checked.
fn kind_env(spec: &Value, object: &Type, params: Option<&Type>) -> Env {
    let mut variables = ObjectType {
        name: "kubernetes.variables".into(),
        fields: BTreeMap::new(),
    };
    let declared = spec["variables"].as_array().into_iter().flatten();
    for variable in declared {
        let env = typed_env(object, params, &variables);
        let ty = Program::compile(&env, text(variable, "expression"))
            .map_or(Type::Dyn, |p| p.result_type().clone());
        variables
            .fields
            .insert(Arc::from(text(variable, "name")), ty);
    }
    typed_env(object, params, &variables)
}

/// The type-checking warnings of the policy `object` (a stored ValidatingAdmissionPolicy),
/// in order of the fields they refer to; none when no kind it names can be resolved.
pub fn check(object: &Value, schemas: &dyn Schemas) -> Vec<ExpressionWarning> {
    let spec = &object["spec"];
    let kinds = kinds_to_check(spec, schemas);
    let params = param_kind(spec).map(|gvk| object_type(schemas.schema(&gvk).as_deref()));
    let envs: Vec<(Gvk, Env)> = kinds
        .into_iter()
        .filter_map(|gvk| {
            let schema = schemas.schema(&gvk)?;
            let object = object_type(Some(&schema));
            let env = kind_env(spec, &object, params.as_ref());
            Some((gvk, env))
        })
        .collect();
    if envs.is_empty() {
        return Vec::new();
    }
    let mut warnings = Vec::new();
    let validations = spec["validations"].as_array().into_iter().flatten();
    for (i, validation) in validations.enumerate() {
        for key in CHECKED {
            let source = text(validation, key);
            // A message expression is optional.
            if key != "expression" && source.is_empty() {
                continue;
            }
            let results: Vec<String> = envs
                .iter()
                .filter_map(|(gvk, env)| {
                    let err = Program::compile(env, source).err()?;
                    // Each result ends with a newline; results are joined with another.
                    Some(format!("{gvk}: {err}\n"))
                })
                .collect();
            if !results.is_empty() {
                warnings.push(ExpressionWarning {
                    field_ref: format!("spec.validations[{i}].{key}"),
                    warning: results.join("\n"),
                });
            }
        }
    }
    warnings
}

/// The status the policy `object` should have: `observedGeneration` its generation, and
/// `typeChecking` with `warnings` (other status fields, such as conditions, kept).
pub fn status(object: &Value, warnings: &[ExpressionWarning]) -> Value {
    let mut status = match object.get("status") {
        Some(Value::Object(status)) => status.clone(),
        _ => serde_json::Map::new(),
    };
    let generation = object["metadata"]["generation"].as_i64().unwrap_or(0);
    status.insert("observedGeneration".into(), json!(generation));
    let mut type_checking = serde_json::Map::new();
    if !warnings.is_empty() {
        type_checking.insert(
            "expressionWarnings".into(),
            warnings.iter().map(ExpressionWarning::to_json).collect(),
        );
    }
    status.insert("typeChecking".into(), Value::Object(type_checking));
    Value::Object(status)
}

#[cfg(test)]
mod tests;
