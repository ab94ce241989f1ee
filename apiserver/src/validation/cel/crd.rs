//! Checking a CRD's rules when the CRD is written: each compiles against the type of its node,
//! returns a bool, reads `oldSelf` only where old values correlate, and stays within
//! upstream's estimated cost budgets.

use atoll_cel::{Program, Type};
use serde_json::Value;

use super::estimate::{self, RULE_COST_LIMIT, SCHEMA_COST_LIMIT, SchemaSizes};
use super::{
    OLD_SELF, declare, env, normalize_field_path, properties_of, property_type, rules_of, str_field,
};
use crate::validation::{CauseType, FieldError, path};

/// The errors of a CRD version's rules: rules and message expressions that do not compile or
/// have the wrong result type, `oldSelf` where old values cannot be correlated, reasons and
/// field paths upstream does not accept, and rules whose estimated cost (times the number of
/// times they may run in one object) is over upstream's budgets, per rule and for the whole
/// schema. `field` is the schema's path (`spec.versions[0].schema.openAPIV3Schema`).
pub fn crd_errors(schema: &Value, field: &str) -> Vec<FieldError> {
    let mut check = Check::default();
    let ty = declare::decl_type(schema, true);
    check.node(&Node {
        schema,
        ty: ty.as_ref(),
        field: field.to_owned(),
        uncorrelatable: None,
        cardinality: 1,
        resource_root: true,
    });
    let total = check
        .costs
        .iter()
        .fold(0u64, |sum, (_, cost)| sum.saturating_add(*cost));
    if total > SCHEMA_COST_LIMIT {
        let mut costs = check.costs.clone();
        costs.sort_by_key(|(_, cost)| std::cmp::Reverse(*cost));
        for (rule_path, _) in costs.iter().take(4) {
            check.errs.push(FieldError::forbidden(
                rule_path.clone(),
                "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
            ));
        }
        check.errs.push(FieldError::forbidden(
            field,
            estimate::over_budget(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                total,
                SCHEMA_COST_LIMIT,
            ),
        ));
    }
    check.errs
}

/// What checking a schema's rules found.
#[derive(Default)]
struct Check {
    errs: Vec<FieldError>,
    /// Each rule's estimated cost times its cardinality, by the rule's path.
    costs: Vec<(String, u64)>,
}

/// One schema node and where it sits.
struct Node<'a> {
    schema: &'a Value,
    ty: Option<&'a Type>,
    field: String,
    /// The path of the nearest ancestor under which old values do not correlate.
    uncorrelatable: Option<String>,
    /// How many times the node's rules may run in one object.
    cardinality: u64,
    resource_root: bool,
}

impl Check {
    fn node(&mut self, node: &Node<'_>) {
        let rules_path = path::child(&node.field, "x-kubernetes-validations");
        for (i, rule) in rules_of(node.schema).iter().enumerate() {
            self.rule(node, &path::index(&rules_path, i), rule);
        }
        let elem = match node.ty {
            Some(Type::List(elem)) | Some(Type::Map(_, elem)) => Some(&**elem),
            _ => None,
        };
        let under = |reason: bool| match &node.uncorrelatable {
            Some(p) => Some(p.clone()),
            None if reason => Some(node.field.clone()),
            None => None,
        };
        let many = node
            .cardinality
            .saturating_mul(estimate::child_cardinality(node.schema));
        if let Some(items) = node.schema.get("items").filter(|i| i.is_object()) {
            let map_list = node
                .schema
                .get("x-kubernetes-list-type")
                .and_then(Value::as_str)
                == Some("map");
            self.node(&Node {
                schema: items,
                ty: elem,
                field: path::child(&node.field, "items"),
                uncorrelatable: under(!map_list),
                cardinality: many,
                resource_root: declare::is_embedded(items),
            });
        }
        let atomic = node
            .schema
            .get("x-kubernetes-map-type")
            .and_then(Value::as_str)
            == Some("atomic");
        if let Some(values) = node
            .schema
            .get("additionalProperties")
            .filter(|a| a.is_object())
        {
            self.node(&Node {
                schema: values,
                ty: elem,
                field: path::child(&node.field, "additionalProperties"),
                uncorrelatable: under(atomic),
                cardinality: many,
                resource_root: declare::is_embedded(values),
            });
        }
        for (name, prop) in properties_of(node.schema) {
            let Some(field_type) = property_type(node.ty, name, prop) else {
                continue;
            };
            self.node(&Node {
                schema: prop,
                ty: Some(&field_type),
                field: path::key(&path::child(&node.field, "properties"), name),
                uncorrelatable: under(atomic),
                cardinality: node.cardinality,
                resource_root: declare::is_embedded(prop),
            });
        }
    }

    fn rule(&mut self, node: &Node<'_>, rule_path: &str, rule: &Value) {
        let source = str_field(rule, "rule").trim();
        if source.is_empty() {
            return; // the shape check reports it
        }
        let optional_old_self = rule.get("optionalOldSelf").and_then(Value::as_bool) == Some(true);
        let env = env(node.ty, optional_old_self);
        let sizes = SchemaSizes {
            node: node.schema,
            resource_root: node.resource_root,
        };
        let at_rule = path::child(rule_path, "rule");
        let invalid = |detail: String| invalid_shown(at_rule.clone(), rule_go_syntax(rule), detail);
        match Program::compile(&env, source) {
            Err(err) => self
                .errs
                .push(invalid(format!("compilation failed: {err}"))),
            Ok(program) => {
                if !matches!(program.result_type(), Type::Bool | Type::Dyn) {
                    self.errs
                        .push(invalid("cel expression must evaluate to a bool".into()));
                }
                if program.references(OLD_SELF)
                    && let Some(within) = &node.uncorrelatable
                {
                    self.errs.push(invalid(format!(
                        "oldSelf cannot be used on the uncorrelatable portion of the schema within {within}"
                    )));
                }
                self.cost(
                    &at_rule,
                    "estimated rule cost",
                    &program,
                    &sizes,
                    node.cardinality,
                );
            }
        }
        let message_expression = str_field(rule, "messageExpression");
        if !message_expression.trim().is_empty() {
            let at = path::child(rule_path, "messageExpression");
            match Program::compile(&env, message_expression) {
                Err(err) => self.errs.push(invalid_shown(
                    at,
                    rule_go_syntax(rule),
                    format!("messageExpression compilation failed: {err}"),
                )),
                Ok(program) if !matches!(program.result_type(), Type::String | Type::Dyn) => {
                    self.errs.push(invalid_shown(
                        at,
                        rule_go_syntax(rule),
                        "must evaluate to a string".to_owned(),
                    ))
                }
                Ok(program) => self.cost(
                    &at,
                    "estimated messageExpression cost",
                    &program,
                    &sizes,
                    node.cardinality,
                ),
            }
        }
        if let Some(reason) = rule.get("reason").and_then(Value::as_str)
            && !REASONS.contains(&reason)
        {
            self.errs.push(FieldError::not_supported(
                path::child(rule_path, "reason"),
                reason,
                &REASONS,
            ));
        }
        let field_path = str_field(rule, "fieldPath");
        if !field_path.is_empty() && !field_path_exists(node.schema, field_path) {
            self.errs.push(FieldError::invalid(
                path::child(rule_path, "fieldPath"),
                field_path,
                "fieldPath must be a valid path",
            ));
        }
    }

    /// Records an expression's estimated cost times its cardinality; over the per-rule budget
    /// is an error at `at`.
    fn cost(
        &mut self,
        at: &str,
        what: &str,
        program: &Program,
        sizes: &SchemaSizes<'_>,
        cardinality: u64,
    ) {
        let cost = program.estimate_cost(sizes).max.saturating_mul(cardinality);
        if cost > RULE_COST_LIMIT {
            self.errs.push(FieldError::forbidden(
                at,
                estimate::over_budget(what, cost, RULE_COST_LIMIT),
            ));
        }
        self.costs.push((at.to_owned(), cost));
    }
}

/// The reasons a rule may give.
const REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

/// Upstream's `%#v` of a rule, which CRD errors about it show as the bad value.
fn rule_go_syntax(rule: &Value) -> String {
    let quote = |key: &str| crate::validation::render::go_quote(str_field(rule, key));
    let reason = match rule.get("reason").and_then(Value::as_str) {
        Some(r) => format!(
            "(*apiextensions.FieldValueErrorReason)({})",
            crate::validation::render::go_quote(r)
        ),
        None => "(*apiextensions.FieldValueErrorReason)(nil)".to_owned(),
    };
    let optional = match rule.get("optionalOldSelf").and_then(Value::as_bool) {
        Some(b) => format!("(*bool)({b})"),
        None => "(*bool)(nil)".to_owned(),
    };
    format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{reason}, FieldPath:{}, OptionalOldSelf:{optional}}}",
        quote("rule"),
        quote("message"),
        quote("messageExpression"),
        quote("fieldPath"),
    )
}

/// An `Invalid value` error whose value is shown as `shown` is (a Go value, not JSON).
fn invalid_shown(field: String, shown: String, detail: String) -> FieldError {
    FieldError {
        cause: CauseType::Invalid,
        field,
        message: format!("{shown}: {detail}"),
        value: None,
    }
}

/// Whether a rule's `fieldPath` names a property below `schema`.
fn field_path_exists(schema: &Value, json_path: &str) -> bool {
    if normalize_field_path(json_path).is_err() {
        return false;
    }
    let mut node = schema;
    let mut rest = json_path;
    while !rest.is_empty() {
        let (name, after) = if let Some(after) = rest.strip_prefix("['") {
            match after.find("']") {
                Some(end) => (&after[..end], &after[end + 2..]),
                None => return false,
            }
        } else if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            (&after[..end], &after[end..])
        } else {
            return false;
        };
        node = match node.get("properties").and_then(|p| p.get(name)) {
            Some(prop) => prop,
            None => match node.get("additionalProperties").filter(|a| a.is_object()) {
                Some(values) => values,
                None => return false,
            },
        };
        rest = after;
    }
    true
}
