//! A ValidatingAdmissionPolicy compiled: its match conditions, variables, validations and audit
//! annotations parsed and checked once (per change of its spec) against the environment every
//! policy expression sees, and its bindings read into what matching needs.

use std::sync::Arc;

use atoll_cel::library::authz;
use atoll_cel::{Env, Program, Type};
use serde_json::Value;

use super::values::Fields;

/// The variables every policy expression may use (all dynamic: objects of any kind arrive).
pub const OBJECT: &str = "object";
pub const OLD_OBJECT: &str = "oldObject";
pub const REQUEST: &str = "request";
pub const PARAMS: &str = "params";
pub const NAMESPACE_OBJECT: &str = "namespaceObject";
pub const VARIABLES: &str = "variables";
/// The requesting user's authorizer (Kubernetes' authz library).
pub const AUTHORIZER: &str = "authorizer";
/// A ResourceCheck of the request's own resource (`authorizer.requestResource.check('get')`).
pub const REQUEST_RESOURCE: &str = "authorizer.requestResource";

/// Expressions of one policy compiled at most (match conditions, variables, validations and
/// audit annotations together); upstream's validation allows no more than 64 of each.
const MAX_EXPRESSIONS: usize = 256;

/// The environment of policy expressions: match conditions, variables, validations and audit
/// annotations, which may check authorization (`authorizer`, `authorizer.requestResource`).
pub fn env() -> Env {
    message_env()
        .variable(AUTHORIZER, Type::Opaque(authz::AUTHORIZER_TYPE))
        .variable(REQUEST_RESOURCE, Type::Opaque(authz::RESOURCE_CHECK_TYPE))
}

/// The environment of `messageExpression`s, which upstream gives no authorizer (a message
/// may still read a variable that checked).
pub fn message_env() -> Env {
    Env::new()
        .variable(OBJECT, Type::Dyn)
        .variable(OLD_OBJECT, Type::Dyn)
        .variable(REQUEST, Type::Dyn)
        .variable(PARAMS, Type::Dyn)
        .variable(NAMESPACE_OBJECT, Type::Dyn)
        .variable(
            VARIABLES,
            Type::Map(Box::new(Type::String), Box::new(Type::Dyn)),
        )
}

/// One compiled expression: its source, and the program or why it does not compile (upstream's
/// `compilation failed: ...`, which evaluation reports as an error).
#[derive(Debug)]
pub struct Compiled {
    pub source: String,
    pub program: Result<Program, String>,
}

impl Compiled {
    fn new(env: &Env, source: &str) -> Compiled {
        Compiled {
            source: source.to_owned(),
            program: Program::compile(env, source).map_err(|e| format!("compilation failed: {e}")),
        }
    }
}

#[derive(Debug)]
pub struct Validation {
    pub expression: Compiled,
    pub message: String,
    pub message_expression: Option<Compiled>,
    /// `Invalid` when unset.
    pub reason: Option<String>,
}

/// A policy, compiled.
#[derive(Debug)]
pub struct Policy {
    pub name: String,
    /// The spec it was compiled from (a change of anything else compiles nothing again).
    pub spec: Value,
    /// `failurePolicy: Ignore` (the default is Fail).
    pub ignore_failures: bool,
    pub match_constraints: Value,
    /// `apiVersion` and `kind` of the params, when the policy takes params.
    pub param_kind: Option<(String, String)>,
    pub match_conditions: Vec<(String, Compiled)>,
    pub variables: Vec<(String, Compiled)>,
    /// Whether any expression reads `variables` (else they are not evaluated).
    pub uses_variables: bool,
    /// Which of the request's variables any expression (variables' included) reads: the
    /// others are neither computed nor bound.
    pub reads: Reads,
    /// What of `object` and of `oldObject` the expressions can see.
    pub object_fields: Fields,
    pub old_object_fields: Fields,
    pub validations: Vec<Validation>,
    pub audit_annotations: Vec<(String, Compiled)>,
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn items<'a>(value: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    value
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .take(MAX_EXPRESSIONS)
}

impl Policy {
    /// Compiles the policy `object` (a stored ValidatingAdmissionPolicy).
    pub fn compile(object: &Value) -> Policy {
        let env = env();
        let message_env = message_env();
        let spec = object.get("spec").cloned().unwrap_or(Value::Null);
        let named = |key: &str, name_key: &str, expression_key: &str| {
            items(&spec, key)
                .map(|item| {
                    (
                        text(item, name_key).to_owned(),
                        Compiled::new(&env, text(item, expression_key)),
                    )
                })
                .collect::<Vec<_>>()
        };
        let match_conditions = named("matchConditions", "name", "expression");
        let variables = named("variables", "name", "expression");
        let audit_annotations = named("auditAnnotations", "key", "valueExpression");
        let validations: Vec<Validation> = items(&spec, "validations")
            .map(|v| Validation {
                expression: Compiled::new(&env, text(v, "expression")),
                message: text(v, "message").trim().to_owned(),
                message_expression: Some(text(v, "messageExpression"))
                    .filter(|m| !m.trim().is_empty())
                    .map(|m| Compiled::new(&message_env, m)),
                reason: v
                    .get("reason")
                    .and_then(Value::as_str)
                    .filter(|r| !r.is_empty())
                    .map(str::to_owned),
            })
            .collect();
        let param_kind = spec
            .get("paramKind")
            .filter(|p| p.is_object())
            .map(|p| (text(p, "apiVersion").to_owned(), text(p, "kind").to_owned()));
        let reads = |c: &Compiled| c.program.as_ref().is_ok_and(|p| p.references(VARIABLES));
        let uses_variables = match_conditions.iter().any(|(_, c)| reads(c))
            || audit_annotations.iter().any(|(_, c)| reads(c))
            || validations.iter().any(|v: &Validation| {
                reads(&v.expression) || v.message_expression.as_ref().is_some_and(reads)
            });
        let every = || {
            match_conditions
                .iter()
                .chain(&variables)
                .chain(&audit_annotations)
                .map(|(_, c)| c)
                .chain(validations.iter().flat_map(|v| {
                    std::iter::once(&v.expression).chain(v.message_expression.as_ref())
                }))
        };
        let read_anywhere =
            |name: &str| every().any(|c| c.program.as_ref().is_ok_and(|p| p.references(name)));
        let fields_of = |name: &str| {
            let mut fields = Fields::none();
            for program in every().filter_map(|c| c.program.as_ref().ok()) {
                fields.add(program.selected_paths(name));
            }
            fields
        };
        let (object_fields, old_object_fields) = (fields_of(OBJECT), fields_of(OLD_OBJECT));
        let reads = Reads {
            object: read_anywhere(OBJECT),
            old_object: read_anywhere(OLD_OBJECT),
            request: read_anywhere(REQUEST),
            namespace_object: read_anywhere(NAMESPACE_OBJECT),
            authorizer: read_anywhere(AUTHORIZER),
        };
        Policy {
            name: text(&object["metadata"], "name").to_owned(),
            uses_variables,
            reads,
            object_fields,
            old_object_fields,
            ignore_failures: text(&spec, "failurePolicy") == "Ignore",
            match_constraints: spec.get("matchConstraints").cloned().unwrap_or(Value::Null),
            param_kind,
            match_conditions,
            variables,
            validations,
            audit_annotations,
            spec,
        }
    }
}

/// Which of the variables a request brings a policy's expressions read.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reads {
    pub object: bool,
    pub old_object: bool,
    pub request: bool,
    pub namespace_object: bool,
    /// `authorizer`, and so `authorizer.requestResource`.
    pub authorizer: bool,
}

/// The validation actions of a binding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Actions {
    pub deny: bool,
    pub warn: bool,
    pub audit: bool,
}

/// A binding, as matching and evaluation read it.
#[derive(Debug)]
pub struct Binding {
    pub name: String,
    pub policy_name: String,
    /// `matchResources`, or null (everything the policy matches).
    pub match_resources: Value,
    pub param_ref: Option<ParamRef>,
    pub actions: Actions,
    /// The stored binding's spec, to tell changes.
    pub spec: Value,
}

#[derive(Debug)]
pub struct ParamRef {
    pub name: Option<String>,
    pub namespace: Option<String>,
    pub selector: Option<Value>,
    /// `parameterNotFoundAction: Deny` (the default is Allow).
    pub deny_when_missing: bool,
}

impl Binding {
    pub fn read(object: &Value) -> Binding {
        let spec = object.get("spec").cloned().unwrap_or(Value::Null);
        let mut actions = Actions::default();
        for action in items(&spec, "validationActions").filter_map(Value::as_str) {
            match action {
                "Deny" => actions.deny = true,
                "Warn" => actions.warn = true,
                "Audit" => actions.audit = true,
                _ => {}
            }
        }
        let param_ref = spec
            .get("paramRef")
            .filter(|p| p.is_object())
            .map(|p| ParamRef {
                name: Some(text(p, "name"))
                    .filter(|n| !n.is_empty())
                    .map(str::to_owned),
                namespace: Some(text(p, "namespace"))
                    .filter(|n| !n.is_empty())
                    .map(str::to_owned),
                selector: p.get("selector").filter(|s| s.is_object()).cloned(),
                deny_when_missing: text(p, "parameterNotFoundAction") == "Deny",
            });
        Binding {
            name: text(&object["metadata"], "name").to_owned(),
            policy_name: text(&spec, "policyName").to_owned(),
            match_resources: spec.get("matchResources").cloned().unwrap_or(Value::Null),
            param_ref,
            actions,
            spec,
        }
    }
}

/// The policies and bindings in force. A change of `policies` or `bindings` takes effect with
/// [`PolicySet::settle`], which works out what each request then needs.
#[derive(Debug, Default, Clone)]
pub struct PolicySet {
    /// By name.
    pub policies: std::collections::BTreeMap<String, Arc<Policy>>,
    /// By name.
    pub bindings: std::collections::BTreeMap<String, Arc<Binding>>,
    /// The hooks as of the last settle (none before it: [`PolicySet::hooks`] lists them).
    settled: Option<Vec<Hook>>,
    /// What of `object` and `oldObject` any policy can see (all of them until settled).
    pub object_fields: Arc<Fields>,
    pub old_object_fields: Arc<Fields>,
}

/// A binding with the policy it names.
pub type Hook = (Arc<Policy>, Arc<Binding>);

impl PolicySet {
    pub fn is_empty(&self) -> bool {
        self.bindings.is_empty()
    }

    /// Takes in the changes of `policies` and `bindings`: the hooks, in the order they are
    /// evaluated, and what of the objects any policy sees.
    pub fn settle(&mut self) {
        let (mut object, mut old_object) = (Fields::none(), Fields::none());
        for policy in self.policies.values() {
            object.merge(&policy.object_fields);
            old_object.merge(&policy.old_object_fields);
        }
        self.object_fields = Arc::new(object);
        self.old_object_fields = Arc::new(old_object);
        self.settled = None;
        self.settled = Some(self.hooks().into_owned());
    }

    /// Each binding with the policy it names, by policy then binding name (bindings of missing
    /// policies are left out, as upstream ignores them).
    pub fn hooks(&self) -> std::borrow::Cow<'_, [Hook]> {
        if let Some(hooks) = &self.settled {
            return std::borrow::Cow::Borrowed(hooks);
        }
        let mut hooks: Vec<Hook> = self
            .bindings
            .values()
            .filter_map(|binding| {
                self.policies
                    .get(&binding.policy_name)
                    .map(|policy| (policy.clone(), binding.clone()))
            })
            .collect();
        hooks.sort_by(|a, b| (&a.0.name, &a.1.name).cmp(&(&b.0.name, &b.1.name)));
        std::borrow::Cow::Owned(hooks)
    }
}

/// The errors of a policy's expressions that do not compile, as upstream's validation of a
/// ValidatingAdmissionPolicy reports them (`spec.validations[0].expression: Invalid value:
/// "...": compilation failed: ERROR: <input>:1:5: ...`).
pub fn spec_errors(object: &Value) -> Vec<crate::validation::FieldError> {
    let (env, message_env) = (env(), message_env());
    let spec = &object["spec"];
    let mut errors = Vec::new();
    let fields = [
        ("matchConditions", "expression"),
        ("variables", "expression"),
        ("validations", "expression"),
        ("validations", "messageExpression"),
        ("auditAnnotations", "valueExpression"),
    ];
    for (list, key) in fields {
        for (i, item) in items(spec, list).enumerate() {
            let source = text(item, key);
            if source.trim().is_empty() {
                continue;
            }
            let env = if key == "messageExpression" {
                &message_env
            } else {
                &env
            };
            if let Err(err) = Program::compile(env, source) {
                errors.push(crate::validation::FieldError::invalid(
                    format!("spec.{list}[{i}].{key}"),
                    source,
                    format!("compilation failed: {err}"),
                ));
            }
        }
    }
    errors
}
