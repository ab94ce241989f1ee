//! CEL in CRDs: the `x-kubernetes-validations` rules of a CRD version, compiled once into a
//! [`Validator`] that mirrors the schema (only the nodes with rules below them), checked when
//! the CRD is written ([`crd_errors`]) and evaluated on every write of a custom resource
//! ([`Validator::validate`]), as kube-apiserver's `schema/cel` package does.
//!
//! What a rule sees is [`declare`]'s: `self` typed from the structural schema, `oldSelf` the
//! correlated old value on updates (transition rules run only where one exists, or with
//! `optionalOldSelf`). Evaluation is charged against upstream's budgets: 1,000,000 per rule
//! call and 10,000,000 per object.

mod crd;
mod declare;
mod estimate;
mod evaluate;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock, Mutex};

use atoll_cel::{Env, Program, Type};
use serde_json::Value;

use super::FieldError;
use super::path;

/// Cost one rule's evaluation may spend (`celconfig.PerCallLimit`).
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// Cost the rules of one object may spend together (`celconfig.RuntimeCELCostBudget`).
pub const RUNTIME_BUDGET: u64 = 10_000_000;
/// The longest message a `messageExpression` may produce, in bytes.
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

const SELF: &str = "self";
const OLD_SELF: &str = "oldSelf";

/// A message expression's result as a message, if it can be one: trimmed, not empty, one
/// line, at most 5 KiB (upstream's rule for CRD rules and policies alike).
pub(crate) fn usable_message(message: &str) -> Option<&str> {
    let trimmed = message.trim();
    (!trimmed.is_empty() && trimmed.len() <= MAX_MESSAGE_BYTES && !trimmed.contains('\n'))
        .then_some(trimmed)
}

/// How an evaluation charged to a budget ended.
pub(crate) enum Charged {
    Value(atoll_cel::Value),
    /// A CEL runtime error, in cel-go's words.
    Runtime(String),
    /// The expression spent its per-call limit ([`PER_CALL_LIMIT`]).
    CallLimit,
    /// The budget left (`remaining`) ran out first.
    OutOfBudget,
}

/// Evaluates `program` under the per-call limit or what is left of `remaining` if less, and
/// takes what it spent from `remaining`: how kube-apiserver charges CRD rules to an object's
/// budget and policy expressions to a binding's.
pub(crate) fn eval_charged(
    program: &Program,
    activation: &atoll_cel::Activation,
    remaining: &mut u64,
) -> Charged {
    if *remaining == 0 {
        return Charged::OutOfBudget;
    }
    let limit = PER_CALL_LIMIT.min(remaining.saturating_add(1));
    let mut budget = atoll_cel::Budget::new(limit);
    let result = program.eval(activation, &mut budget);
    *remaining = remaining.saturating_sub(limit.saturating_sub(budget.remaining));
    match result {
        Ok(value) => Charged::Value(value),
        Err(atoll_cel::EvalError::CostExceeded) if limit == PER_CALL_LIMIT => Charged::CallLimit,
        Err(atoll_cel::EvalError::CostExceeded) => Charged::OutOfBudget,
        Err(atoll_cel::EvalError::Runtime(err)) => Charged::Runtime(err),
    }
}

/// The compiled rules of one schema node and the validators of its children that have rules.
#[derive(Debug, Default)]
pub struct Validator {
    /// The node's schema `type` (`object`, `string`, ...), which errors show as the value.
    schema_type: String,
    /// What converting values for `self` and `oldSelf` reads of the node's schema.
    shape: declare::Shape,
    resource_root: bool,
    rules: Vec<Rule>,
    properties: BTreeMap<String, Validator>,
    additional: Option<Box<Validator>>,
    items: Option<Box<Validator>>,
    all_of: Vec<Validator>,
    /// Old values of properties correlate unless the map is atomic.
    map_correlatable: bool,
    /// The keys of a `x-kubernetes-list-type: map` list, whose items correlate by them.
    list_map_keys: Option<Vec<String>>,
    /// The node's CEL type, which its rules were compiled against.
    ty: Option<Type>,
}

#[derive(Clone, Debug)]
struct Rule {
    /// The rule as the schema states it (an unchanged rule on a node of an unchanged type is
    /// not compiled again).
    spec: Value,
    /// The rule's source, trimmed.
    source: String,
    message: String,
    /// The compiled rule, or why it does not compile.
    program: Result<Program, String>,
    message_expression: Option<Program>,
    reason: Option<String>,
    /// The error path the rule reports on, relative to the node (`spec.replicas`).
    field_path: Option<String>,
    uses_old_self: bool,
    optional_old_self: bool,
}

impl Rule {
    /// What errors quote of the rule: its message if it has one, else its source.
    fn error_string(&self) -> &str {
        if self.message.is_empty() {
            &self.source
        } else {
            &self.message
        }
    }
}

/// Validators kept compiled, by resource and version, with the schema they were compiled from.
type Compiled = HashMap<String, HashMap<String, (Arc<Value>, Option<Arc<Validator>>)>>;
static COMPILED: LazyLock<Mutex<Compiled>> = LazyLock::new(|| Mutex::new(HashMap::new()));
/// Resources whose validators are kept; the cache starts over past it.
const COMPILED_CAPACITY: usize = 4096;

/// The validator of `schema`, the `openAPIV3Schema` of `version` of `resource`
/// (`widgets.example.com`): compiled on first use and again only when the schema changes (a
/// CRD update that leaves a version's schema alone, or another CRD's update, compiles nothing).
pub fn validator_for(resource: &str, version: &str, schema: &Arc<Value>) -> Option<Arc<Validator>> {
    let mut compiled = COMPILED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let known = compiled.get_mut(resource).and_then(|v| v.get_mut(version));
    if let Some((seen, validator)) = &known
        && (Arc::ptr_eq(seen, schema) || **seen == **schema)
    {
        let validator = validator.clone();
        if let Some((seen, _)) = known {
            *seen = schema.clone();
        }
        return validator;
    }
    // The rules of the version's previous schema that did not change are reused.
    let previous = known.and_then(|(_, validator)| validator.clone());
    let validator = compile_reusing(schema, previous.as_deref());
    if compiled.len() >= COMPILED_CAPACITY {
        compiled.clear();
    }
    compiled
        .entry(resource.to_owned())
        .or_default()
        .insert(version.to_owned(), (schema.clone(), validator.clone()));
    validator
}

/// The compiled validator of a CRD version's `openAPIV3Schema`, or `None` when it has no rules.
pub fn compile(schema: &Value) -> Option<Arc<Validator>> {
    compile_reusing(schema, None)
}

/// [`compile`], taking the compiled rules of `previous` (the validator of the schema this
/// one replaces) where a node's type and a rule are unchanged.
fn compile_reusing(schema: &Value, previous: Option<&Validator>) -> Option<Arc<Validator>> {
    let ty = declare::decl_type(schema, true);
    validator(schema, true, ty.as_ref(), previous).map(Arc::new)
}

fn validator(
    schema: &Value,
    resource_root: bool,
    ty: Option<&Type>,
    previous: Option<&Validator>,
) -> Option<Validator> {
    let reusable = previous
        .filter(|p| p.ty.as_ref() == ty && p.resource_root == resource_root)
        .map_or(&[][..], |p| p.rules.as_slice());
    let rules: Vec<Rule> = rules_of(schema)
        .iter()
        .map(|rule| match reusable.iter().find(|r| r.spec == *rule) {
            Some(compiled) => compiled.clone(),
            None => compile_rule(rule, ty),
        })
        .collect();
    let elem = match ty {
        Some(Type::List(elem)) | Some(Type::Map(_, elem)) => Some(&**elem),
        _ => None,
    };
    let items = schema
        .get("items")
        .filter(|i| i.is_object())
        .and_then(|items| {
            let previous = previous.and_then(|p| p.items.as_deref());
            validator(items, declare::is_embedded(items), elem, previous).map(Box::new)
        });
    let additional = schema
        .get("additionalProperties")
        .filter(|a| a.is_object())
        .and_then(|a| {
            let previous = previous.and_then(|p| p.additional.as_deref());
            validator(a, declare::is_embedded(a), elem, previous).map(Box::new)
        });
    let mut properties = BTreeMap::new();
    for (name, prop) in properties_of(schema) {
        let Some(field_type) = property_type(ty, name, prop) else {
            continue;
        };
        let previous = previous.and_then(|p| p.properties.get(name));
        let embedded = declare::is_embedded(prop);
        if let Some(v) = validator(prop, embedded, Some(&field_type), previous) {
            properties.insert(name.clone(), v);
        }
    }
    let all_of: Vec<Validator> = schema
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, sub)| {
            // An allOf branch's rules see the node's own schema and type.
            let mut merged = schema.clone();
            if let Some(m) = merged.as_object_mut() {
                m.insert(
                    "x-kubernetes-validations".into(),
                    sub.get("x-kubernetes-validations")
                        .cloned()
                        .unwrap_or(Value::Null),
                );
                m.remove("allOf");
            }
            let previous = previous.and_then(|p| p.all_of.get(i));
            validator(&merged, resource_root, ty, previous)
        })
        .collect();
    if rules.is_empty()
        && items.is_none()
        && additional.is_none()
        && properties.is_empty()
        && all_of.is_empty()
    {
        return None;
    }
    Some(Validator {
        schema_type: schema
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        shape: declare::Shape::new(schema, resource_root),
        resource_root,
        rules,
        properties,
        additional,
        items,
        all_of,
        map_correlatable: schema.get("x-kubernetes-map-type").and_then(Value::as_str)
            != Some("atomic"),
        list_map_keys: (schema.get("x-kubernetes-list-type").and_then(Value::as_str)
            == Some("map"))
        .then(|| {
            schema
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|keys| {
                    keys.iter()
                        .filter_map(|k| k.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        }),
        ty: ty.cloned(),
    })
}

fn properties_of(schema: &Value) -> impl Iterator<Item = (&String, &Value)> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
}

/// The type of property `name` of an object of type `ty`; `None` when CEL cannot see it
/// (its rules are then neither compiled nor run, as upstream omits such fields).
fn property_type(ty: Option<&Type>, name: &str, prop: &Value) -> Option<Type> {
    match (ty, declare::escape(name)) {
        (Some(Type::Object(object)), Some(escaped)) => object.fields.get(&*escaped).cloned(),
        // A name CEL cannot spell is still a node rules may sit on.
        (_, None) => declare::decl_type(prop, declare::is_embedded(prop)),
        _ => None,
    }
}

fn rules_of(schema: &Value) -> &[Value] {
    schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn str_field<'a>(rule: &'a Value, key: &str) -> &'a str {
    rule.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The environment of a rule on a node of type `ty`: `self`, and `oldSelf` (optional with
/// `optionalOldSelf`).
fn env(ty: Option<&Type>, optional_old_self: bool) -> Env {
    let ty = ty.cloned().unwrap_or(Type::Dyn);
    let old = if optional_old_self {
        Type::Optional(Box::new(ty.clone()))
    } else {
        ty.clone()
    };
    Env::new().variable(SELF, ty).variable(OLD_SELF, old)
}

fn compile_rule(rule: &Value, ty: Option<&Type>) -> Rule {
    let source = str_field(rule, "rule").trim().to_owned();
    let optional_old_self = rule.get("optionalOldSelf").and_then(Value::as_bool) == Some(true);
    let env = env(ty, optional_old_self);
    let program = Program::compile(&env, &source).map_err(|e| format!("compilation failed: {e}"));
    let program = program.and_then(|p| match p.result_type() {
        Type::Bool | Type::Dyn => Ok(p),
        _ => Err("cel expression must evaluate to a bool".to_owned()),
    });
    let message_expression = Some(str_field(rule, "messageExpression"))
        .filter(|m| !m.is_empty())
        .and_then(|m| Program::compile(&env, m).ok());
    Rule {
        spec: rule.clone(),
        uses_old_self: program.as_ref().is_ok_and(|p| p.references(OLD_SELF)),
        source,
        message: str_field(rule, "message").trim().to_owned(),
        program,
        message_expression,
        reason: rule
            .get("reason")
            .and_then(Value::as_str)
            .map(str::to_owned),
        field_path: rule
            .get("fieldPath")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
            .and_then(|p| normalize_field_path(p).ok()),
        optional_old_self,
    }
}

/// `.spec.ports['a.b']` as upstream's field path prints it: `spec.ports[a.b]`.
fn normalize_field_path(json_path: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = json_path;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("['") {
            let end = after
                .find("']")
                .ok_or_else(|| "unexpected end of JSON path".to_owned())?;
            out = path::key(&out, &after[..end].replace("\\'", "'"));
            rest = &after[end + 2..];
        } else if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            if end == 0 {
                return Err("unexpected end of JSON path".to_owned());
            }
            out = path::child(&out, &after[..end]);
            rest = &after[end..];
        } else {
            return Err(format!("expected [ or . but got: {rest}"));
        }
    }
    Ok(out)
}

pub use crd::crd_errors;
pub(crate) use declare::resource_decl_type;

/// The errors of `object`'s rules, after `schema_errors` (its schema validation): when those
/// include a missing, unsupported, too long, too many or mistyped value, the rules are not run
/// (they could not see a well-typed object) and one error says so, as upstream does.
pub fn validate(
    validator: &Validator,
    object: &Value,
    old: Option<&Value>,
    schema_errors: &[FieldError],
    warnings: &mut Vec<String>,
) -> Vec<FieldError> {
    use super::CauseType::*;
    let blocking = schema_errors.iter().any(|e| {
        matches!(
            e.cause,
            NotSupported | Required | TooLong | TooMany | TypeInvalid
        )
    });
    if blocking {
        return vec![FieldError::invalid(
            "<nil>",
            Value::Null,
            "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
        )];
    }
    validator.validate(object, old, warnings)
}

#[cfg(test)]
mod tests;
