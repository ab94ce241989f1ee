//! Evaluating a [`Validator`] on a write: every rule on every node that has a value, with
//! `oldSelf` from the correlated old value, charged to the object's budget, failures turned
//! into field errors with the rule's message, reason and field path, and failures of unchanged
//! values ratcheted to warnings, as kube-apiserver's `schema/cel` validator does.
//!
//! A node's value is converted for CEL once: a node below one that was converted takes its
//! value from its parent's. Whether a value is unchanged (for ratcheting) is decided only when
//! one of its rules fails.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use atoll_cel::{Activation, EvalError, Value as Cel};
use serde_json::Value;

use super::{
    Charged, OLD_SELF, RUNTIME_BUDGET, Rule, SELF, Validator, declare, eval_charged, usable_message,
};
use crate::validation::{FieldError, path};

/// Where a node stands for ratcheting: the old value it correlates with, if any, and the
/// nearest correlated pair (itself or an ancestor) whose equality decides whether its errors
/// are only warnings.
#[derive(Clone, Copy)]
struct Correlation<'a> {
    old: Option<&'a Value>,
    /// The nearest node with a correlated old value, as (new, old); `None` below the root's
    /// `apiVersion` and `kind`, on create, and where nothing correlates.
    anchor: Option<(&'a Value, &'a Value)>,
}

impl Correlation<'_> {
    /// Whether errors here become warnings: the anchor did not change.
    fn ratchets(&self) -> bool {
        self.anchor.is_some_and(|(new, old)| new == old)
    }
}

/// The outcome of one object's validation.
struct Run<'w> {
    errors: Vec<FieldError>,
    warnings: &'w mut Vec<String>,
    /// What the object's rules may still spend.
    remaining: u64,
    /// Set once evaluation must stop (budget spent).
    stopped: bool,
}

impl Validator {
    /// The errors of `object` (with `old`, the stored object, on an update); warnings for
    /// failures of unchanged values.
    pub fn validate(
        &self,
        object: &Value,
        old: Option<&Value>,
        warnings: &mut Vec<String>,
    ) -> Vec<FieldError> {
        let mut run = Run {
            errors: Vec::new(),
            warnings,
            remaining: RUNTIME_BUDGET,
            stopped: false,
        };
        let correlation = Correlation {
            old,
            anchor: old.map(|old| (object, old)),
        };
        self.walk(object, None, &Field::Root, correlation, &mut run);
        run.errors
    }

    /// `converted`: the node's CEL value, when an ancestor's conversion already made it.
    fn walk(
        &self,
        value: &Value,
        converted: Option<Cel>,
        field: &Field<'_>,
        correlation: Correlation<'_>,
        run: &mut Run<'_>,
    ) {
        if value.is_null() || run.stopped {
            return;
        }
        let converted = match converted {
            Some(c) => Some(c),
            None if !self.rules.is_empty() => Some(declare::value_of(value, &self.shape)),
            None => None,
        };
        if let Some(this) = &converted {
            self.expressions(this, field, correlation, run);
        }
        for all_of in &self.all_of {
            // allOf errors do not ratchet.
            let plain = Correlation {
                anchor: None,
                ..correlation
            };
            all_of.walk(value, converted.clone(), field, plain, run);
        }
        match value {
            Value::Object(object) => {
                self.walk_object(object, converted.as_ref(), field, correlation, run)
            }
            Value::Array(items) => {
                self.walk_items(items, converted.as_ref(), field, correlation, run)
            }
            _ => {}
        }
    }

    fn walk_object(
        &self,
        object: &serde_json::Map<String, Value>,
        converted: Option<&Cel>,
        field: &Field<'_>,
        correlation: Correlation<'_>,
        run: &mut Run<'_>,
    ) {
        let old_object = correlation.old.filter(|_| self.map_correlatable);
        for (key, value) in object {
            let (sub, sub_field, cel_key) = match (self.properties.get(key), &self.additional) {
                (Some(sub), _) => (sub, Field::Child(field, key), declare::escape(key)),
                (None, Some(values)) => (&**values, Field::Key(field, key), Some(key.into())),
                (None, None) => continue,
            };
            let child = match (converted, cel_key) {
                (Some(Cel::Map(map)), Some(name)) => map.field(&name).cloned(),
                _ => None,
            };
            let old = old_object.and_then(|o| o.get(key));
            // The root's `apiVersion` and `kind` never ratchet.
            let anchored =
                !(matches!(field, Field::Root) && matches!(key.as_str(), "apiVersion" | "kind"));
            let next = Correlation {
                old,
                anchor: match old {
                    _ if !anchored => None,
                    Some(old) => Some((value, old)),
                    None => correlation.anchor,
                },
            };
            sub.walk(value, child, &sub_field, next, run);
            if run.stopped {
                return;
            }
        }
    }

    fn walk_items(
        &self,
        items: &[Value],
        converted: Option<&Cel>,
        field: &Field<'_>,
        correlation: Correlation<'_>,
        run: &mut Run<'_>,
    ) {
        let Some(item_validator) = &self.items else {
            return;
        };
        let old_items = match (
            &self.list_map_keys,
            correlation.old.and_then(Value::as_array),
        ) {
            (Some(keys), Some(old_items)) => OldItems::new(keys, old_items, items.len()),
            _ => OldItems::None,
        };
        for (i, item) in items.iter().enumerate() {
            let old = old_items.find(item);
            let child = match converted {
                Some(Cel::List(list)) => list.get(i).cloned(),
                _ => None,
            };
            let next = Correlation {
                old,
                anchor: match old {
                    Some(old) => Some((item, old)),
                    None => correlation.anchor,
                },
            };
            item_validator.walk(item, child, &Field::Index(field, i), next, run);
            if run.stopped {
                return;
            }
        }
    }

    /// The node's own rules, on its CEL value `this`.
    fn expressions(
        &self,
        this: &Cel,
        field: &Field<'_>,
        correlation: Correlation<'_>,
        run: &mut Run<'_>,
    ) {
        if run.remaining == 0 {
            run.stop(self.invalid(
                &field.render(),
                "validation failed due to running out of cost budget, no further validation rules will be run",
            ));
            return;
        }
        let old = correlation
            .old
            .filter(|o| !o.is_null())
            .filter(|_| self.rules.iter().any(|r| r.uses_old_self))
            .map(|o| declare::value_of(o, &self.shape));
        let plain = activation(this, old.clone());
        let optional = self
            .rules
            .iter()
            .any(|r| r.optional_old_self)
            .then(|| activation(this, Some(Cel::Optional(old.clone().map(Arc::new)))));
        for rule in &self.rules {
            let program = match &rule.program {
                Ok(program) => program,
                Err(err) => {
                    run.errors
                        .push(self.invalid(&field.render(), &format!("rule compile error: {err}")));
                    continue;
                }
            };
            if rule.uses_old_self && old.is_none() && !rule.optional_old_self {
                continue; // transition rules need an old value
            }
            let activation = match (&optional, rule.optional_old_self) {
                (Some(optional), true) => optional,
                _ => &plain,
            };
            match eval_charged(program, activation, &mut run.remaining) {
                Charged::Value(Cel::Bool(true)) => continue,
                Charged::Value(_) => {}
                Charged::CallLimit => {
                    run.stop(self.invalid(&field.render(), &format!(
                        "'{}': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                        EvalError::CostExceeded,
                        rule.error_string()
                    )));
                    return;
                }
                Charged::OutOfBudget => {
                    run.stop(self.invalid(
                        &field.render(),
                        "validation failed due to running out of cost budget, no further validation rules will be run",
                    ));
                    return;
                }
                Charged::Runtime(err) if err.starts_with("no such overload") => {
                    run.errors.push(self.invalid(&field.render(), &format!(
                        "'{err}': call arguments did not match a supported operator, function or macro signature for rule: {}",
                        rule.error_string()
                    )));
                    continue;
                }
                Charged::Runtime(err) => {
                    run.errors.push(self.invalid(
                        &field.render(),
                        &format!("{err} evaluating rule: {}", rule.error_string()),
                    ));
                    continue;
                }
            }
            if !self.report_failure(rule, activation, field, correlation, run) {
                return;
            }
        }
    }

    /// Reports a rule that did not hold: at its `fieldPath` under `field`, with its message
    /// and reason, as a warning when the value did not change (ratcheting). False when the
    /// message expression spent the budget and evaluation must stop.
    fn report_failure(
        &self,
        rule: &Rule,
        activation: &Activation,
        field: &Field<'_>,
        correlation: Correlation<'_>,
        run: &mut Run<'_>,
    ) -> bool {
        let field = field.render();
        let field = field.as_str();
        let at = match &rule.field_path {
            Some(relative) if field.is_empty() => relative.clone(),
            Some(relative) if relative.starts_with('[') => format!("{field}{relative}"),
            Some(relative) => path::child(field, relative),
            None => field.to_owned(),
        };
        let detail = match self.message(rule, activation, run) {
            Ok(Some(message)) => message,
            Ok(None) if rule.message.is_empty() => format!("failed rule: {}", rule.error_string()),
            Ok(None) => rule.message.clone(),
            Err(stop) => {
                run.stop(self.invalid(&at, &stop));
                return false;
            }
        };
        let error = self.for_reason(&at, detail, rule.reason.as_deref());
        if !rule.uses_old_self && correlation.ratchets() {
            run.warnings.push(error.to_string());
        } else {
            run.errors.push(error);
        }
        true
    }

    /// The message of a failed rule from its `messageExpression`: `Ok(None)` when it has none
    /// or it fails (the static message is used, as upstream), `Err` when the budget ran out.
    fn message(
        &self,
        rule: &Rule,
        activation: &Activation,
        run: &mut Run<'_>,
    ) -> Result<Option<String>, String> {
        let Some(program) = &rule.message_expression else {
            return Ok(None);
        };
        match eval_charged(program, activation, &mut run.remaining) {
            Charged::CallLimit => Err(format!(
                "no further validation rules will be run due to call cost exceeds limit for messageExpression: {}",
                crate::validation::render::go_quote(program.source())
            )),
            Charged::OutOfBudget => Err(
                "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run".to_owned(),
            ),
            Charged::Value(Cel::String(message)) => Ok(usable_message(&message).map(str::to_owned)),
            _ => Ok(None),
        }
    }

    /// An `Invalid value` error whose value is the node's schema type, as upstream reports
    /// rule failures.
    fn invalid(&self, field: &str, detail: &str) -> FieldError {
        FieldError::invalid(error_field(field), self.schema_type.as_str(), detail)
    }

    fn for_reason(&self, field: &str, detail: String, reason: Option<&str>) -> FieldError {
        let field = error_field(field);
        match reason {
            Some("FieldValueForbidden") => FieldError::forbidden(field, detail),
            Some("FieldValueRequired") => FieldError::required(field, detail),
            Some("FieldValueDuplicate") => FieldError::duplicate(field, self.schema_type.as_str()),
            _ => FieldError::invalid(field, self.schema_type.as_str(), detail),
        }
    }
}

/// The old items of a `x-kubernetes-list-type: map` list, found by the values of the list's
/// keys (the first with the same values, as upstream): by a scan while both lists are short,
/// else through an index, so that updating a long list is not quadratic.
enum OldItems<'a> {
    None,
    Scan(&'a [String], &'a [Value]),
    Index(&'a [String], HashMap<Vec<String>, &'a Value>),
}

impl<'a> OldItems<'a> {
    fn new(keys: &'a [String], old_items: &'a [Value], new_count: usize) -> OldItems<'a> {
        if old_items.len().saturating_mul(new_count) <= 256 {
            return OldItems::Scan(keys, old_items);
        }
        let mut index = HashMap::with_capacity(old_items.len());
        for old in old_items {
            index.entry(key_values(keys, old)).or_insert(old);
        }
        OldItems::Index(keys, index)
    }

    fn find(&self, item: &Value) -> Option<&'a Value> {
        match self {
            OldItems::None => None,
            OldItems::Scan(keys, old_items) => old_items
                .iter()
                .find(|o| keys.iter().all(|k| o.get(k) == item.get(k))),
            OldItems::Index(keys, index) => index.get(&key_values(keys, item)).copied(),
        }
    }
}

/// The values of an item's list-map keys, as JSON text (empty where the item lacks one).
fn key_values(keys: &[String], item: &Value) -> Vec<String> {
    keys.iter()
        .map(|k| item.get(k).map(Value::to_string).unwrap_or_default())
        .collect()
}

/// `self` and, where given, `oldSelf`, under names shared by every write rather than
/// allocated for each node.
fn activation(this: &Cel, old: Option<Cel>) -> Activation {
    static NAMES: LazyLock<[Arc<str>; 2]> =
        LazyLock::new(|| [Arc::from(SELF), Arc::from(OLD_SELF)]);
    let [self_name, old_name] = &*NAMES;
    let mut variables = Vec::with_capacity(2);
    variables.push((self_name.clone(), this.clone()));
    if let Some(old) = old {
        variables.push((old_name.clone(), old));
    }
    Activation { variables }
}

impl Run<'_> {
    fn stop(&mut self, error: FieldError) {
        self.errors.push(error);
        self.stopped = true;
    }
}

/// Where a node is: rendered (`spec.ports[0].name`) only when an error names it, so that
/// walking an object formats nothing.
#[derive(Clone, Copy)]
enum Field<'a> {
    Root,
    /// A property of the parent.
    Child(&'a Field<'a>, &'a str),
    /// A key of the parent's `additionalProperties` map.
    Key(&'a Field<'a>, &'a str),
    /// An item of the parent list.
    Index(&'a Field<'a>, usize),
}

impl Field<'_> {
    fn render(&self) -> String {
        match self {
            Field::Root => String::new(),
            Field::Child(parent, name) => path::child(&parent.render(), name),
            Field::Key(parent, key) => path::key(&parent.render(), key),
            Field::Index(parent, i) => path::index(&parent.render(), *i),
        }
    }
}

/// The root's errors are on `<nil>`, as upstream's nil field path prints.
fn error_field(field: &str) -> String {
    if field.is_empty() {
        "<nil>".to_owned()
    } else {
        field.to_owned()
    }
}
