//! The interpreter: walks an expression tree, charging every step to a [`Budget`] as cel-go's
//! runtime cost tracker does, and stops with [`EvalError::CostExceeded`] the moment the budget
//! would go below zero.
//!
//! Errors are values in CEL: `&&` and `||` absorb an error when the other side decides the
//! result, and a comprehension's accumulator may hold one for a later step to absorb. Running
//! out of budget is never absorbed.

mod accumulate;
mod call;
mod convert;
mod cost;
mod functions;
pub(crate) mod plan;
mod time;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_library;
#[cfg(test)]
mod tests_spec;

use std::sync::Arc;

use crate::ast::{Comprehension, Expr, ExprKind, Literal};
use crate::value::TypeName;
use crate::{Activation, Budget, EvalError, Value};

pub(crate) use plan::Plan;
use plan::Step;

/// What evaluating a node gives: a value or a CEL error.
pub(crate) type Outcome = Result<Value, EvalError>;

/// Evaluates `expr`, planned with `activation`'s variables declared, charging `budget` (for
/// expressions evaluated without compiling them first).
#[cfg(test)]
pub(crate) fn eval(expr: &Expr, activation: &Activation, budget: &mut Budget) -> Outcome {
    let plan = Plan::for_activation(expr, activation);
    eval_planned(expr, &plan, activation, budget)
}

/// Evaluates `expr` as `plan` says, with the variables of `activation`, charging `budget`.
pub(crate) fn eval_planned(
    expr: &Expr,
    plan: &Plan,
    activation: &Activation,
    budget: &mut Budget,
) -> Outcome {
    Interpreter::new(plan, activation, budget).eval(expr)
}

/// Whether `expr` reads variable `name` anywhere a comprehension variable of the same name
/// does not shadow it: through a chain of selections, or otherwise.
pub(crate) fn references(expr: &Expr, name: &str) -> bool {
    expr.selected_paths(name)
        .is_none_or(|paths| !paths.is_empty())
}

/// `a` of a dotted identifier `a.b.c`.
fn qualified_root(ident: &str) -> &str {
    ident.split('.').next().unwrap_or(ident)
}

/// One evaluation's state: the plan, the activation's variables by the plan's slots, the
/// budget, and the comprehension variables in scope (innermost last; the plan knows each
/// one's position), which may hold errors.
pub(crate) struct Interpreter<'a> {
    plan: &'a Plan,
    variables: Slots<'a>,
    budget: &'a mut Budget,
    locals: Vec<Outcome>,
    /// Set while evaluating a conditional's branch that is a variable (or a selection from
    /// one): cel-go resolves such a branch without charging for the variable itself.
    free_root: bool,
}

impl<'a> Interpreter<'a> {
    pub(crate) fn new(
        plan: &'a Plan,
        activation: &'a Activation,
        budget: &'a mut Budget,
    ) -> Interpreter<'a> {
        Interpreter {
            plan,
            variables: Slots::new(plan, activation),
            budget,
            locals: Vec::new(),
            free_root: false,
        }
    }
}

/// The activation's values in the plan's slots. Most expressions read few variables (a CRD
/// rule reads `self` and `oldSelf`): those are held without a heap allocation, which would
/// cost as much as evaluating a short rule.
enum Slots<'a> {
    Few([Option<&'a Value>; 4]),
    Many(Vec<Option<&'a Value>>),
}

impl<'a> Slots<'a> {
    fn new(plan: &Plan, activation: &'a Activation) -> Slots<'a> {
        let names = &plan.variables;
        if names.len() <= 4 {
            let mut few = [None; 4];
            for (slot, name) in few.iter_mut().zip(names) {
                *slot = activation.get(name);
            }
            Slots::Few(few)
        } else {
            Slots::Many(names.iter().map(|name| activation.get(name)).collect())
        }
    }

    fn get(&self, slot: usize) -> Option<&'a Value> {
        match self {
            Slots::Few(few) => few.get(slot).copied().flatten(),
            Slots::Many(many) => many.get(slot).copied().flatten(),
        }
    }
}

impl Interpreter<'_> {
    /// Spends `cost`, or fails when the budget would go below zero.
    pub(crate) fn charge(&mut self, cost: u64) -> Result<(), EvalError> {
        match self.budget.remaining.checked_sub(cost) {
            Some(left) => {
                self.budget.remaining = left;
                Ok(())
            }
            None => {
                self.budget.remaining = 0;
                Err(EvalError::CostExceeded)
            }
        }
    }

    pub(crate) fn budget(&mut self) -> &mut Budget {
        self.budget
    }

    pub(crate) fn eval(&mut self, expr: &Expr) -> Outcome {
        let plan = self.plan;
        match (plan.step(expr), &expr.kind) {
            (Step::Constant(value), _) => Ok(value.clone()),
            (_, ExprKind::Literal(literal)) => Ok(literal_value(literal)),
            (
                step @ (Step::Local(_) | Step::Variable(_) | Step::Type(_) | Step::Unbound(_)),
                ExprKind::Ident(_) | ExprKind::Select { .. },
            ) => self.eval_name(step),
            (
                _,
                ExprKind::Select {
                    operand,
                    field,
                    test_only,
                    optional,
                },
            ) => match self.eval_path(expr) {
                Some(outcome) => outcome,
                None => self.eval_select(operand, field, *test_only, *optional),
            },
            (Step::Call(callee), ExprKind::Call { target, args, .. }) => {
                self.eval_call(callee, target.as_deref(), args)
            }
            (
                _,
                ExprKind::List {
                    elements,
                    optional_indices,
                },
            ) => self.eval_list(elements, optional_indices),
            (_, ExprKind::Map { entries }) => self.eval_map(entries),
            (_, ExprKind::Struct { type_name, fields }) => {
                for field in fields {
                    self.eval(&field.value)?;
                }
                self.charge(cost::STRUCT_CREATE_BASE)?;
                Err(EvalError::Runtime(format!("unknown type: {type_name}")))
            }
            (step, ExprKind::Comprehension(comprehension)) => {
                self.eval_comprehension(comprehension, matches!(step, Step::Appending))
            }
            (_, ExprKind::Ident(name)) | (_, ExprKind::Call { function: name, .. }) => {
                Err(EvalError::Runtime(format!("unplanned expression: {name}")))
            }
        }
    }

    /// A comprehension variable, a variable of the activation, a type name (which costs
    /// nothing: it is a constant once checked), or a name that names nothing.
    fn eval_name(&mut self, step: &Step) -> Outcome {
        let free = std::mem::take(&mut self.free_root);
        if !free && !matches!(step, Step::Type(_)) {
            self.charge(cost::SELECT_AND_IDENT)?;
        }
        match step {
            Step::Local(position) => self.locals[*position].clone(),
            Step::Variable(slot) => match self.variables.get(*slot) {
                Some(value) => Ok(value.clone()),
                None => Err(EvalError::Runtime(format!(
                    "no such attribute(s): {}",
                    self.plan.variables[*slot]
                ))),
            },
            Step::Type(type_name) => Ok(Value::Type(type_name.clone())),
            Step::Unbound(name) => Err(EvalError::Runtime(format!("no such attribute(s): {name}"))),
            _ => Err(EvalError::Runtime("unplanned name".to_string())),
        }
    }

    /// A chain of selections from a variable (`self.spec.replicas`, `p.port`), walked by
    /// reference so that only the value selected is cloned, charged as the chain's steps
    /// would be one by one. `None` for anything else (an optional on the way, a longer
    /// chain), which is evaluated step by step.
    fn eval_path(&mut self, expr: &Expr) -> Option<Outcome> {
        const MOST: usize = 8;
        let mut fields: [&str; MOST] = [""; MOST];
        let mut depth = 0;
        let mut node = expr;
        let root = loop {
            if let step @ (Step::Local(_) | Step::Variable(_)) = self.plan.step(node) {
                break step;
            }
            match &node.kind {
                ExprKind::Select {
                    operand,
                    field,
                    test_only: false,
                    optional: false,
                } if depth < MOST => {
                    fields[depth] = field;
                    depth += 1;
                    node = operand;
                }
                _ => return None,
            }
        };
        let root = match root {
            Step::Local(position) => self.locals[*position].as_ref().map_err(Clone::clone),
            Step::Variable(slot) => self.variables.get(*slot).ok_or_else(|| {
                EvalError::Runtime(format!(
                    "no such attribute(s): {}",
                    self.plan.variables[*slot]
                ))
            }),
            _ => return None,
        };
        let (outcome, steps) = match root {
            Err(err) => (Err(err), 0),
            Ok(mut value) => {
                let mut steps = 0;
                let mut outcome = None;
                for field in fields[..depth].iter().rev() {
                    steps += 1;
                    match value {
                        Value::Map(map) => match map.field(field) {
                            Some(found) => value = found,
                            None => {
                                outcome = Some(Err(no_such_key(field)));
                                break;
                            }
                        },
                        Value::Optional(_) => return None,
                        _ => {
                            outcome = Some(Err(no_such_key(field)));
                            break;
                        }
                    }
                }
                (outcome.unwrap_or_else(|| Ok(value.clone())), steps)
            }
        };
        let free = std::mem::take(&mut self.free_root);
        if let Err(err) = self.charge(u64::from(!free) + steps) {
            return Some(Err(err));
        }
        Some(outcome)
    }

    /// Selecting from or indexing a value that is no variable (`f(x).a`, `[1, 2][0]`): cel-go
    /// wraps the operand in a relative attribute, which costs 1 more.
    pub(crate) fn charge_relative(&mut self, operand: &Expr) -> Result<(), EvalError> {
        let attribute = match &operand.kind {
            ExprKind::Ident(_) | ExprKind::Select { .. } => true,
            ExprKind::Call { .. } => {
                self.plan.calls(operand, plan::Function::Index)
                    || self.plan.calls(operand, plan::Function::OptionalIndex)
                    || self.plan.calls(operand, plan::Function::Conditional)
            }
            _ => false,
        };
        if attribute {
            Ok(())
        } else {
            self.charge(cost::SELECT_AND_IDENT)
        }
    }

    #[inline(never)]
    fn eval_select(
        &mut self,
        operand: &Expr,
        field: &Arc<str>,
        test_only: bool,
        optional: bool,
    ) -> Outcome {
        let target = self.eval(operand)?;
        self.charge_relative(operand)?;
        // Kubernetes runs cel-go with `PresenceTestHasCost(false)`: `has()` itself is free.
        if !test_only {
            self.charge(cost::SELECT_AND_IDENT)?;
        }
        if test_only {
            return match &target {
                Value::Map(map) => Ok(Value::Bool(map.field(field).is_some())),
                Value::Optional(None) => Ok(Value::Bool(false)),
                Value::Optional(Some(inner)) => match &**inner {
                    Value::Map(map) => Ok(Value::Bool(map.field(field).is_some())),
                    _ => Ok(Value::Bool(false)),
                },
                _ => Ok(Value::Bool(false)),
            };
        }
        match target {
            Value::Optional(None) => Ok(Value::Optional(None)),
            Value::Optional(Some(inner)) => {
                Ok(Value::Optional(select_field(&inner, field)?.map(Arc::new)))
            }
            target if optional => Ok(Value::Optional(select_field(&target, field)?.map(Arc::new))),
            target => select_field(&target, field)?.ok_or_else(|| no_such_key(field)),
        }
    }

    #[inline(never)]
    fn eval_list(&mut self, elements: &[Expr], optional_indices: &[u32]) -> Outcome {
        let mut values = Vec::with_capacity(elements.len());
        for (i, element) in elements.iter().enumerate() {
            let value = self.eval(element)?;
            if optional_indices.iter().any(|&o| o as usize == i) {
                match value {
                    Value::Optional(Some(inner)) => values.push((*inner).clone()),
                    Value::Optional(None) => {}
                    other => {
                        return Err(EvalError::Runtime(format!(
                            "cannot initialize optional list element from non-optional value {}",
                            convert::go_format(&other)
                        )));
                    }
                }
            } else {
                values.push(value);
            }
        }
        // A list of constants is a constant, planned (cel-go's `OptOptimize`): this one is
        // built.
        self.charge(cost::LIST_CREATE_BASE)?;
        Ok(Value::list(values))
    }

    #[inline(never)]
    fn eval_map(&mut self, entries: &[crate::ast::MapEntry]) -> Outcome {
        let mut map = crate::Map::default();
        for entry in entries {
            let key = self.eval(&entry.key)?;
            let value = self.eval(&entry.value)?;
            let Some(key) = crate::Key::from_value(&key) else {
                return Err(EvalError::Runtime(format!(
                    "unsupported key type: {}",
                    key.type_name()
                )));
            };
            // As cel-go's: a later entry replaces an earlier one with the same key, and an
            // empty optional entry removes it.
            let value = if entry.optional {
                match value {
                    Value::Optional(Some(inner)) => (*inner).clone(),
                    Value::Optional(None) => {
                        map.entries.remove(&key);
                        continue;
                    }
                    other => {
                        return Err(EvalError::Runtime(format!(
                            "cannot initialize optional entry '{}' from non-optional value {}",
                            convert::go_format(&key.to_value()),
                            convert::go_format(&other)
                        )));
                    }
                }
            } else {
                value
            };
            map.entries.insert(key, value);
        }
        self.charge(cost::MAP_CREATE_BASE)?;
        Ok(Value::Map(Arc::new(map)))
    }

    /// A comprehension: the accumulator is pushed first, then each turn's iteration
    /// variables, at the positions the plan gave them.
    #[inline(never)]
    fn eval_comprehension(&mut self, c: &Comprehension, appending: bool) -> Outcome {
        let range = self.eval(&c.iter_range)?;
        if appending && let Some(append) = accumulate::AppendStep::shape(c) {
            return self.eval_appending(c, &range, &append);
        }
        let init = self.eval(&c.accu_init);
        let base = self.locals.len();
        self.locals.push(init);
        let outcome = self.fold(c, &range);
        let outcome = match outcome {
            Ok(()) => self.eval(&c.result),
            Err(err) => Err(err),
        };
        self.locals.truncate(base);
        outcome
    }

    /// Runs the loop of `c` over `range`, the accumulator being the last local.
    fn fold(&mut self, c: &Comprehension, range: &Value) -> Result<(), EvalError> {
        let accu = self.locals.len() - 1;
        let base = self.locals.len();
        for (first, second) in iteration_items(range, c.iter_var2.is_some())? {
            self.locals.truncate(base);
            self.locals.push(Ok(first));
            if let Some(second) = second {
                self.locals.push(Ok(second));
            }
            match self.eval(&c.loop_condition) {
                Err(EvalError::CostExceeded) => return Err(EvalError::CostExceeded),
                Ok(Value::Bool(false)) => break,
                _ => {}
            }
            let next = self.eval(&c.loop_step);
            if let Err(EvalError::CostExceeded) = next {
                return Err(EvalError::CostExceeded);
            }
            self.locals[accu] = next;
        }
        self.locals.truncate(base);
        Ok(())
    }
}

/// The items a comprehension binds, one turn after another: a list's elements (with
/// `two`, index and element), a map's keys (with `two`, key and value). Lazy, so that a
/// comprehension that stops early over a large range does no work for the rest of it; not
/// boxed, as a nested comprehension makes one for every turn of the outer one.
enum Items<'a> {
    List(std::iter::Enumerate<std::slice::Iter<'a, Value>>, bool),
    Map(
        std::collections::btree_map::Iter<'a, crate::Key, Value>,
        bool,
    ),
}

impl Iterator for Items<'_> {
    type Item = (Value, Option<Value>);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Items::List(items, two) => items.next().map(|(i, item)| {
                if *two {
                    (Value::Int(i as i64), Some(item.clone()))
                } else {
                    (item.clone(), None)
                }
            }),
            Items::Map(entries, two) => entries
                .next()
                .map(|(key, value)| (key.to_value(), two.then(|| value.clone()))),
        }
    }
}

fn iteration_items(range: &Value, two: bool) -> Result<Items<'_>, EvalError> {
    match range {
        Value::List(items) => Ok(Items::List(items.iter().enumerate(), two)),
        Value::Map(map) => Ok(Items::Map(map.entries.iter(), two)),
        other => Err(EvalError::Runtime(format!(
            "cannot iterate over {}",
            other.type_name()
        ))),
    }
}

/// The value of a literal (constants cost nothing).
fn literal_value(literal: &Literal) -> Value {
    match literal {
        Literal::Null => Value::Null,
        Literal::Bool(b) => Value::Bool(*b),
        Literal::Int(i) => Value::Int(*i),
        Literal::Uint(u) => Value::Uint(*u),
        Literal::Double(d) => Value::Double(*d),
        Literal::String(s) => Value::String(s.clone()),
        Literal::Bytes(b) => Value::Bytes(b.clone()),
    }
}

/// `a` of an identifier `a` or a chain of plain selects on one, `a.b.c`.
fn root_ident(expr: &Expr) -> Option<&str> {
    let mut node = expr;
    loop {
        match &node.kind {
            ExprKind::Ident(name) => return Some(name),
            ExprKind::Select {
                operand,
                test_only: false,
                optional: false,
                ..
            } => node = operand,
            _ => return None,
        }
    }
}

/// The type a name denotes, when it is one of CEL's type names.
pub(crate) fn type_by_name(name: &str) -> Option<TypeName> {
    Some(match name {
        "int" => TypeName::Int,
        "uint" => TypeName::Uint,
        "double" => TypeName::Double,
        "bool" => TypeName::Bool,
        "string" => TypeName::String,
        "bytes" => TypeName::Bytes,
        "list" => TypeName::List,
        "map" => TypeName::Map,
        "null_type" => TypeName::Null,
        "type" => TypeName::Type,
        "optional_type" => TypeName::Optional,
        "google.protobuf.Duration" => TypeName::Duration,
        "google.protobuf.Timestamp" => TypeName::Timestamp,
        _ => return None,
    })
}

/// `target.field`: `Some` value of a map's key, `None` when the map lacks it; an error for
/// values that have no fields.
/// The value of `field` of a map; the field's name is shared with the expression, so no
/// key is allocated.
fn select_field(target: &Value, field: &Arc<str>) -> Result<Option<Value>, EvalError> {
    match target {
        Value::Map(map) => Ok(map.field(field).cloned()),
        _ => Err(no_such_key(field)),
    }
}

fn no_such_key(field: &str) -> EvalError {
    EvalError::Runtime(format!("no such key: {field}"))
}
