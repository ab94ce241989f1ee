//! What each step costs, in cel-go's runtime cost units (cel-go `common/cost.go` and
//! `interpreter/runtimecost.go`): reading a variable or a field costs 1, a constant nothing,
//! building a list 10 and a map 30, and a call by the sizes of its arguments.
//!
//! Kubernetes plans programs with cel-go's `OptOptimize`, which turns a list or map literal
//! of constants, and a conversion of a constant, into constants: those cost nothing.

use crate::Value;
use crate::ast::{Expr, ExprKind};

use super::functions::Standard;
use super::plan::{Callee, Function};

/// Reading a variable, selecting a field, indexing.
pub(crate) const SELECT_AND_IDENT: u64 = 1;
/// Building a list from a literal.
pub(crate) const LIST_CREATE_BASE: u64 = 10;
/// Building a map from a literal.
pub(crate) const MAP_CREATE_BASE: u64 = 30;
/// Building a message.
pub(crate) const STRUCT_CREATE_BASE: u64 = 40;
/// Cost per character of walking a string.
const STRING_TRAVERSAL_FACTOR: f64 = 0.1;
/// Cost per character of a regular expression.
const REGEX_LENGTH_FACTOR: f64 = 0.25;

/// cel-go's `actualSize`: a string's code points, a bytes' length, a list's or map's
/// entries, what an optional holds; 1 for anything else.
pub(crate) fn size(value: &Value) -> u64 {
    match value {
        Value::String(s) => s.chars().count() as u64,
        Value::Bytes(b) => b.len() as u64,
        Value::List(l) => l.len() as u64,
        Value::Map(m) => m.entries.len() as u64,
        Value::Optional(Some(inner)) => size(inner),
        _ => 1,
    }
}

fn traversal(size: u64) -> u64 {
    (size as f64 * STRING_TRAVERSAL_FACTOR).ceil() as u64
}

/// The cost of calling the standard function of `callee` with `args` (the receiver first for
/// a method call), as cel-go's cost tracker charges it after the call.
pub(crate) fn call(callee: &Callee, args: &[Value]) -> u64 {
    use Standard as F;
    let Function::Standard(function) = callee.function else {
        return match (&*callee.name, args) {
            ("bytes", [s @ Value::String(_)]) | ("string", [s @ Value::Bytes(_)]) => {
                traversal(size(s))
            }
            _ => 1,
        };
    };
    match (function, args) {
        (F::StartsWith | F::EndsWith, [s, _]) => traversal(size(s)),
        (F::In, [_, list @ Value::List(_)]) => size(list),
        (
            F::Less | F::LessOrEqual | F::Greater | F::GreaterOrEqual,
            [
                a @ (Value::String(_) | Value::Bytes(_)),
                b @ (Value::String(_) | Value::Bytes(_)),
            ],
        )
        | (F::Equal | F::NotEqual, [a, b]) => traversal(size(a).min(size(b))),
        (F::Matches, [s, pattern]) => {
            let string_cost = ((1.0 + size(s) as f64) * STRING_TRAVERSAL_FACTOR).ceil() as u64;
            let regex_cost = (size(pattern) as f64 * REGEX_LENGTH_FACTOR).ceil() as u64;
            string_cost.saturating_mul(regex_cost)
        }
        (F::Contains, [s @ Value::String(_), sub]) => {
            traversal(size(s)).saturating_mul(traversal(size(sub)))
        }
        _ => 1,
    }
}

/// The cost of `_+_`, charged before the call, so that a concatenation too costly for the
/// budget never allocates.
pub(crate) fn add(args: &[Value]) -> u64 {
    match args {
        [a @ (Value::String(_) | Value::Bytes(_)), b] => traversal(size(a).saturating_add(size(b))),
        // cel-go charges 1; charged by size here, so that lists built by concatenation stay
        // within what the budget pays for (the same for lists of up to ten elements).
        [a @ Value::List(_), b @ Value::List(_)] => {
            traversal(size(a).saturating_add(size(b))).max(1)
        }
        _ => 1,
    }
}

/// Whether `expr` is a constant once cel-go's `OptOptimize` has planned it: a literal, a
/// list or map literal of constants, or a conversion of a constant.
pub(crate) fn is_constant(expr: &Expr) -> bool {
    match &expr.kind {
        ExprKind::Literal(_) => true,
        ExprKind::List {
            elements,
            optional_indices,
        } => optional_indices.is_empty() && elements.iter().all(is_constant),
        ExprKind::Map { entries } => entries
            .iter()
            .all(|e| !e.optional && is_constant(&e.key) && is_constant(&e.value)),
        ExprKind::Call {
            target: None,
            function,
            args,
        } => match args.as_slice() {
            [arg] => super::convert::is_conversion(function) && is_constant(arg),
            _ => false,
        },
        _ => false,
    }
}
