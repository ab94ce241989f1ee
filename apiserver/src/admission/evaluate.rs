//! One request through every policy and binding, as upstream's validating dispatcher and
//! validator decide it: match, collect params, then for each param the match conditions
//! (false skips; an error goes to the failure policy), the variables, the validations (false
//! denies with the validation's message and reason) and the audit annotations, each expression
//! charged to a per-call and a per-evaluation budget. Denials go to the binding's actions.
//! Expressions may check the requester's authorization through the [`Lookup`]'s authorizer.

use std::sync::Arc;

use atoll_cel::library::authz;
use atoll_cel::{Activation, EvalError, Key, Map, Value as Cel};
use serde_json::Value;

use super::policies::{
    AUTHORIZER, Binding, Compiled, NAMESPACE_OBJECT, OBJECT, OLD_OBJECT, PARAMS, Policy, PolicySet,
    REQUEST, REQUEST_RESOURCE, Reads, VARIABLES,
};
use super::values::Fields;
use super::{Lookup, Request, matching, values};
use crate::validation::cel::{Charged, eval_charged, usable_message};

/// Cost one expression's evaluation may spend, and one binding's evaluation (for one param):
/// the same limits as CRD rules (`celconfig.PerCallLimit`, `celconfig.RuntimeCELCostBudget`).
pub use crate::validation::cel::{PER_CALL_LIMIT, RUNTIME_BUDGET};
/// Params one binding is evaluated with at most.
pub(super) const MAX_PARAMS: usize = 100;

/// What the policies decided.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The first denial, which refuses the request.
    pub denial: Option<Denial>,
    /// `Warning` headers of bindings with the Warn action.
    pub warnings: Vec<String>,
    /// Audit annotations (key, value): the Audit action's failures and the policies'
    /// `auditAnnotations`.
    pub audit_annotations: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Denial {
    pub policy: String,
    pub binding: Option<String>,
    pub message: String,
    /// The status reason (`Invalid` unless the validation names another).
    pub reason: String,
}

impl Denial {
    /// What follows `<resource> "<name>" is forbidden: `.
    pub fn message(&self) -> String {
        match &self.binding {
            Some(binding) => format!(
                "ValidatingAdmissionPolicy '{}' with binding '{binding}' denied request: {}",
                self.policy, self.message
            ),
            None => format!(
                "ValidatingAdmissionPolicy '{}' denied request: {}",
                self.policy, self.message
            ),
        }
    }
}

/// One decision of a validation (or of an error standing for the validations).
struct Decision {
    deny: bool,
    /// The validation's index (for the Audit action's annotation).
    index: usize,
    message: String,
    reason: Option<String>,
}

/// Decides `request` by every binding of `set`.
pub fn evaluate(set: &PolicySet, request: &Request<'_>, lookup: &dyn Lookup) -> Outcome {
    let mut outcome = Outcome::default();
    let mut values = RequestValues::new(request, set);
    for (policy, binding) in set.hooks().iter() {
        if matching::reads_namespace_labels(&policy.match_constraints)
            || matching::reads_namespace_labels(&binding.match_resources)
        {
            values.load_namespace(lookup);
        }
        let labels = values.namespace_labels();
        if !matching::policy_matches(&policy.match_constraints, request, labels)
            || !matching::matches(&binding.match_resources, request, labels)
        {
            continue;
        }
        match matching::matched_version(&policy.match_constraints, request) {
            None => decide(policy, binding, &mut values, lookup, &mut outcome),
            // Matched at another version (`matchPolicy: Equivalent`): the policy sees the
            // objects converted to it.
            Some(version) => {
                let object = request.object.map(|o| at_version(o, request, version));
                let old_object = request.old_object.map(|o| at_version(o, request, version));
                let converted = Request {
                    object: object.as_ref(),
                    old_object: old_object.as_ref(),
                    ..*request
                };
                let mut values = RequestValues::new(&converted, set);
                decide(policy, binding, &mut values, lookup, &mut outcome);
            }
        }
    }
    outcome
}

/// Decides the request by one policy and binding that match it, for each of the binding's
/// params.
fn decide(
    policy: &Policy,
    binding: &Binding,
    values: &mut RequestValues<'_>,
    lookup: &dyn Lookup,
    outcome: &mut Outcome,
) {
    let params = match collect_params(policy, binding, values.request, lookup) {
        Ok(params) => params,
        Err(err) => {
            if !policy.ignore_failures {
                deny(
                    outcome,
                    policy,
                    Some(binding),
                    format!("failed to configure binding: {err}"),
                    None,
                );
            }
            return;
        }
    };
    let base = values.activation(&policy.reads, lookup);
    for param in params {
        let activation = base
            .clone()
            .bind(PARAMS, param.as_ref().map_or(Cel::Null, values::json));
        let decisions = validate(policy, activation, &mut outcome.audit_annotations);
        for decision in decisions.into_iter().filter(|d| d.deny) {
            act(outcome, policy, binding, decision);
        }
    }
}

/// An object of the request at another served version of its resource: relabelled, and its
/// body converted where the versions differ in shape (upstream's conversion for built-ins; a
/// CRD's versions share their shape under conversion `None`).
fn at_version(object: &Value, request: &Request<'_>, version: &str) -> Value {
    let mut object = object.clone();
    crate::registry::conversion::convert_body(
        &mut object,
        request.group,
        request.resource,
        request.version,
        version,
    );
    if let Some(o) = object.as_object_mut() {
        let api_version = if request.group.is_empty() {
            version.to_owned()
        } else {
            format!("{}/{version}", request.group)
        };
        o.insert("apiVersion".into(), Value::from(api_version));
    }
    object
}

/// The variables a request brings, as CEL values: each computed the first time a policy
/// reads it, once per request.
struct RequestValues<'r> {
    request: &'r Request<'r>,
    /// What of `object` and `oldObject` the policies can see.
    object_fields: &'r Fields,
    old_object_fields: &'r Fields,
    object: Option<Cel>,
    old_object: Option<Cel>,
    request_value: Option<Cel>,
    /// The request's Namespace, once looked up.
    namespace: Option<Option<Value>>,
    namespace_object: Option<Cel>,
    /// The requester's authorizer (it may cache its decisions for the request).
    authorizer: Option<Option<Arc<dyn authz::Authorizer>>>,
}

impl<'r> RequestValues<'r> {
    fn new(request: &'r Request<'r>, set: &'r PolicySet) -> RequestValues<'r> {
        RequestValues {
            request,
            object_fields: &set.object_fields,
            old_object_fields: &set.old_object_fields,
            object: None,
            old_object: None,
            request_value: None,
            namespace: None,
            namespace_object: None,
            authorizer: None,
        }
    }

    fn load_namespace(&mut self, lookup: &dyn Lookup) {
        let request = self.request;
        self.namespace.get_or_insert_with(|| {
            // A Namespace's own request has no namespace object.
            let is_namespace = request.group.is_empty() && request.resource == "namespaces";
            (!request.namespace.is_empty() && !is_namespace)
                .then(|| lookup.namespace(request.namespace))
                .flatten()
        });
    }

    /// The labels of the request's Namespace, when it was looked up and has some.
    fn namespace_labels(&self) -> Option<&Value> {
        self.namespace
            .as_ref()
            .and_then(Option::as_ref)
            .map(|n| &n["metadata"]["labels"])
    }

    /// The variables that `reads` says a policy reads, bound.
    fn activation(&mut self, reads: &Reads, lookup: &dyn Lookup) -> Activation {
        let request = self.request;
        let mut activation = Activation::new();
        if reads.object {
            let fields = self.object_fields;
            let object = self.object.get_or_insert_with(|| {
                request
                    .object
                    .map_or(Cel::Null, |o| values::json_fields(o, fields))
            });
            activation = activation.bind(OBJECT, object.clone());
        }
        if reads.old_object {
            let fields = self.old_object_fields;
            let old = self.old_object.get_or_insert_with(|| {
                request
                    .old_object
                    .map_or(Cel::Null, |o| values::json_fields(o, fields))
            });
            activation = activation.bind(OLD_OBJECT, old.clone());
        }
        if reads.request {
            let value = self
                .request_value
                .get_or_insert_with(|| values::request(request));
            activation = activation.bind(REQUEST, value.clone());
        }
        if reads.namespace_object {
            self.load_namespace(lookup);
            let namespace = &self.namespace;
            let value = self.namespace_object.get_or_insert_with(|| {
                namespace
                    .as_ref()
                    .and_then(Option::as_ref)
                    .map_or(Cel::Null, values::namespace_object)
            });
            activation = activation.bind(NAMESPACE_OBJECT, value.clone());
        }
        if reads.authorizer
            && let Some(checks) = self
                .authorizer
                .get_or_insert_with(|| lookup.authorizer(request.user))
                .clone()
        {
            activation = activation
                .bind(AUTHORIZER, authz::authorizer(checks.clone()))
                .bind(
                    REQUEST_RESOURCE,
                    authz::request_resource(checks, request_resource(request)),
                );
        }
        activation
    }
}

/// What `authorizer.requestResource` checks: the request's group, resource, subresource,
/// namespace and name.
fn request_resource<'a>(request: &Request<'a>) -> authz::ResourceAttributes<'a> {
    authz::ResourceAttributes {
        group: request.group,
        resource: request.resource,
        subresource: request.subresource,
        namespace: request.namespace,
        name: request.name,
        ..Default::default()
    }
}

fn deny(
    outcome: &mut Outcome,
    policy: &Policy,
    binding: Option<&Binding>,
    message: String,
    reason: Option<String>,
) {
    if outcome.denial.is_none() {
        outcome.denial = Some(Denial {
            policy: policy.name.clone(),
            binding: binding.map(|b| b.name.clone()),
            message,
            reason: reason.unwrap_or_else(|| "Invalid".to_owned()),
        });
    }
}

/// A failed validation, as the binding's actions want it.
fn act(outcome: &mut Outcome, policy: &Policy, binding: &Binding, decision: Decision) {
    if binding.actions.deny {
        deny(
            outcome,
            policy,
            Some(binding),
            decision.message.clone(),
            decision.reason.clone(),
        );
    }
    if binding.actions.warn {
        outcome.warnings.push(format!(
            "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {}",
            policy.name, binding.name, decision.message
        ));
    }
    if binding.actions.audit {
        let value = serde_json::json!([{
            "message": decision.message,
            "policy": policy.name,
            "binding": binding.name,
            "expressionIndex": decision.index,
            "validationActions": binding.spec.get("validationActions").cloned().unwrap_or(Value::Null),
        }]);
        outcome.audit_annotations.push((
            "validation.policy.admission.k8s.io/validation_failure".to_owned(),
            value.to_string(),
        ));
    }
}

/// The params a binding evaluates with: one `None` when the policy takes none.
fn collect_params(
    policy: &Policy,
    binding: &Binding,
    request: &Request<'_>,
    lookup: &dyn Lookup,
) -> Result<Vec<Option<Value>>, String> {
    let Some((api_version, kind)) = &policy.param_kind else {
        return Ok(vec![None]);
    };
    // A binding without a paramRef evaluates its policy without params.
    let Some(param_ref) = &binding.param_ref else {
        return Ok(vec![None]);
    };
    let namespaced = lookup
        .param_kind_namespaced(api_version, kind)
        .ok_or_else(|| {
            format!(
                "paramKind kind `&ParamKind{{APIVersion:{api_version},Kind:{kind},}}` not known"
            )
        })?;
    let namespace = match (&param_ref.namespace, namespaced) {
        (Some(_), false) => {
            return Err(
                "paramRef.namespace must not be provided for a cluster-scoped `paramKind`"
                    .to_owned(),
            );
        }
        (None, false) => None,
        (Some(ns), true) => Some(ns.clone()),
        (None, true) if !request.namespace.is_empty() => Some(request.namespace.to_owned()),
        (None, true) => {
            return Err(
                "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources"
                    .to_owned(),
            );
        }
    };
    let mut params: Vec<Option<Value>> = match (&param_ref.name, &param_ref.selector) {
        (Some(_), Some(_)) => {
            return Err("paramRef.name and paramRef.selector are mutually exclusive".to_owned());
        }
        (Some(name), None) => lookup
            .params(api_version, kind, namespace.as_deref(), Some(name), None)
            .into_iter()
            .map(Some)
            .collect(),
        (None, Some(selector)) => lookup
            .params(
                api_version,
                kind,
                namespace.as_deref(),
                None,
                Some(selector),
            )
            .into_iter()
            .map(Some)
            .collect(),
        (None, None) => return Err("one of name or selector must be provided".to_owned()),
    };
    params.truncate(MAX_PARAMS);
    if params.is_empty() && param_ref.deny_when_missing {
        return Err(
            "no params found for policy binding with `Deny` parameterNotFoundAction".to_owned(),
        );
    }
    Ok(params)
}

/// What one evaluation may still spend, and whether it ran out.
struct Run {
    remaining: u64,
    /// Variables that failed, and why (`composited variable "x" fails to evaluate: ...`):
    /// what reads one fails with that error, as upstream's lazily evaluated variables do.
    failed_variables: Vec<(String, String)>,
    /// The runtime error of the last expression that failed.
    last_error: String,
}

enum Failure {
    /// An error of this expression (the failure policy decides).
    Error(String),
    /// The evaluation's budget ran out: nothing further runs.
    OutOfBudget,
}

const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

impl Run {
    fn eval(&mut self, compiled: &Compiled, activation: &Activation) -> Result<Cel, Failure> {
        let program = match &compiled.program {
            Ok(p) => p,
            Err(err) => return Err(Failure::Error(format!("compilation error: {err}"))),
        };
        match eval_charged(program, activation, &mut self.remaining) {
            Charged::Value(value) => Ok(value),
            Charged::OutOfBudget => Err(Failure::OutOfBudget),
            charged => {
                let mut text = match charged {
                    Charged::Runtime(err) => err,
                    _ => EvalError::CostExceeded.to_string(),
                };
                // Reading a variable that failed is that variable's error.
                if let Some(missing) = text.strip_prefix("no such key: ")
                    && program.references(VARIABLES)
                    && let Some((_, why)) = self.failed_variables.iter().find(|(n, _)| n == missing)
                {
                    text = why.clone();
                }
                self.last_error = text.clone();
                Err(Failure::Error(format!(
                    "expression '{}' resulted in error: {text}",
                    compiled.source
                )))
            }
        }
    }
}

/// The validations of one policy with one param: the decisions (failures only matter), audit
/// annotations into `audit`.
fn validate(
    policy: &Policy,
    activation: Activation,
    audit: &mut Vec<(String, String)>,
) -> Vec<Decision> {
    let error = |message: String| Decision {
        deny: !policy.ignore_failures,
        index: 0,
        message,
        reason: None,
    };
    let mut run = Run {
        remaining: RUNTIME_BUDGET,
        failed_variables: Vec::new(),
        last_error: String::new(),
    };
    let empty = Cel::Map(Arc::new(Map::default()));
    let mut activation = activation.bind(VARIABLES, empty);
    // Match conditions: any false skips; errors (when none is false) go to the failure policy.
    let mut errors = Vec::new();
    for (_, condition) in &policy.match_conditions {
        match run.eval(condition, &activation) {
            Ok(Cel::Bool(false)) => return Vec::new(),
            Ok(Cel::Bool(true)) => {}
            Ok(other) => errors.push(format!(
                "expression '{}' resulted in error: no such overload: expected bool, got {}",
                condition.source,
                other.type_name()
            )),
            Err(Failure::Error(e)) => errors.push(e),
            Err(Failure::OutOfBudget) => return vec![error(OUT_OF_BUDGET.to_owned())],
        }
    }
    match errors.len() {
        0 => {}
        1 => return vec![error(errors.remove(0))],
        _ => return vec![error(format!("[{}]", errors.join(", ")))],
    }
    // Variables, in order, each seeing those before it, when anything reads them (a failed
    // one is left out, and what reads it fails with its error).
    let mut variables = Map::default();
    let read = if policy.uses_variables {
        policy.variables.as_slice()
    } else {
        &[]
    };
    for (name, compiled) in read {
        let slot = activation
            .variables
            .iter_mut()
            .find(|(n, _)| &**n == VARIABLES);
        if let Some((_, value)) = slot {
            *value = Cel::Map(Arc::new(variables.clone()));
        }
        match run.eval(compiled, &activation) {
            Ok(value) => {
                variables
                    .entries
                    .insert(Key::String(Arc::from(name.as_str())), value);
            }
            Err(Failure::OutOfBudget) => return vec![error(OUT_OF_BUDGET.to_owned())],
            Err(Failure::Error(_)) => {
                let why = match &compiled.program {
                    Err(err) => format!("composited variable {name:?} fails to compile: {err}"),
                    Ok(_) => format!(
                        "composited variable {name:?} fails to evaluate: {}",
                        run.last_error
                    ),
                };
                run.failed_variables.push((name.clone(), why));
            }
        }
    }
    if let Some((_, value)) = activation
        .variables
        .iter_mut()
        .find(|(n, _)| &**n == VARIABLES)
    {
        *value = Cel::Map(Arc::new(variables));
    }
    let mut decisions = Vec::new();
    for (index, validation) in policy.validations.iter().enumerate() {
        match run.eval(&validation.expression, &activation) {
            Ok(Cel::Bool(true)) => {}
            Ok(_) => {
                let mut message = match &validation.message_expression {
                    Some(m) => match run.eval(m, &activation) {
                        Ok(Cel::String(s)) => usable_message(&s).unwrap_or_default().to_owned(),
                        Err(Failure::OutOfBudget) => {
                            decisions
                                .push(error(format!("failed messageExpression: {OUT_OF_BUDGET}")));
                            return decisions;
                        }
                        _ => String::new(),
                    },
                    None => String::new(),
                };
                if message.is_empty() {
                    message = validation.message.clone();
                }
                if message.is_empty() {
                    message = format!("failed expression: {}", validation.expression.source.trim());
                }
                decisions.push(Decision {
                    deny: true,
                    index,
                    message,
                    reason: validation.reason.clone(),
                });
            }
            Err(Failure::Error(e)) => decisions.push(Decision { index, ..error(e) }),
            Err(Failure::OutOfBudget) => {
                return vec![error(OUT_OF_BUDGET.to_owned())];
            }
        }
    }
    // Audit annotations: a string is published under `<policy>/<key>`; an error goes to the
    // failure policy.
    for (key, compiled) in &policy.audit_annotations {
        match run.eval(compiled, &activation) {
            Ok(Cel::String(value)) if !value.trim().is_empty() => {
                audit.push((format!("{}/{key}", policy.name), value.trim().to_owned()));
            }
            Ok(Cel::String(_) | Cel::Null) => {}
            Ok(other) => decisions.push(error(format!(
                "valueExpression '{}' resulted in unsupported return type: {}. Return type must be either string or null.",
                compiled.source,
                other.type_name()
            ))),
            Err(Failure::Error(e)) => decisions.push(error(e)),
            Err(Failure::OutOfBudget) => decisions.push(error(OUT_OF_BUDGET.to_owned())),
        }
    }
    decisions
}
