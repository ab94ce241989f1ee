//! List functions: Kubernetes' lists library (`isSorted`, `sum`, `min`, `max`, `indexOf`,
//! `lastIndexOf`) and cel-go's ext lists at version 3 (`slice`, `flatten`, `sort`,
//! `@sortByAssociatedKeys` behind the `sortBy` macro, `lists.range`, `reverse`, `distinct`).

use std::cmp::Ordering;

use super::{
    LIST_CREATE_BASE_COST, STRING_TRAVERSAL_COST_FACTOR, actual_size, charge, error, finish,
    no_such_overload, traversal_cost,
};
use crate::{Budget, EvalError, Value};

/// ext lists' cost of dispatching a call.
const CALL_COST: u64 = 1;

/// The list functions; `None` for other names, and for `indexOf`/`lastIndexOf` on a string.
pub fn call(
    function: &str,
    receiver: Option<&Value>,
    args: &[Value],
    budget: &mut Budget,
) -> Option<Result<Value, EvalError>> {
    if function == "lists.range" {
        return match (receiver, args) {
            (None, [Value::Int(n)]) => range(*n, budget),
            _ => Some(Err(no_such_overload(function))),
        };
    }
    if matches!(function, "indexOf" | "lastIndexOf") && matches!(receiver, Some(Value::String(_))) {
        return None;
    }
    let list = match receiver {
        Some(Value::List(list)) => list,
        // ext lists' flatten names the types it was given (its type guards are off).
        Some(other) if function == "flatten" && args.len() <= 1 => {
            let arg = args
                .first()
                .map_or(String::new(), |a| a.type_name().to_string());
            return Some(Err(error(format!(
                "no such overload: {}.flatten({arg})",
                other.type_name()
            ))));
        }
        _ => return None,
    };
    match (function, args) {
        ("isSorted" | "sum" | "min" | "max", []) | ("indexOf" | "lastIndexOf", [_]) => {
            let result = kubernetes_list_function(function, list, args);
            finish(budget, traversal_cost(receiver?), result)
        }
        ("slice", [Value::Int(start), Value::Int(end)]) => {
            let result = slice(list, *start, *end);
            let cost = allocating_list_cost(1.0, result.as_ref().map_or(1, actual_size));
            finish(budget, cost, result)
        }
        ("flatten", []) => flatten_call(list, 1, budget),
        ("flatten", [Value::Int(depth)]) => flatten_call(list, *depth, budget),
        ("flatten", [other]) => Some(Err(error(format!(
            "no such overload: list.flatten({})",
            other.type_name()
        )))),
        ("reverse", []) => {
            if let Err(e) = charge(budget, allocating_list_cost(1.0, list.len() as u64)) {
                return Some(Err(e));
            }
            Some(Ok(Value::list(list.iter().rev().cloned().collect())))
        }
        ("distinct", []) => {
            if let Err(e) = charge(budget, self_compare_cost(list)) {
                return Some(Err(e));
            }
            Some(Ok(distinct(list)))
        }
        ("sort", []) => {
            if let Err(e) = charge(budget, self_compare_cost(list)) {
                return Some(Err(e));
            }
            Some(sort_by_associated_keys(list, list))
        }
        ("@sortByAssociatedKeys", [Value::List(keys)]) => {
            if let Err(e) = charge(budget, self_compare_cost(keys)) {
                return Some(Err(e));
            }
            Some(sort_by_associated_keys(list, keys))
        }
        _ => None,
    }
}

fn kubernetes_list_function(
    function: &str,
    list: &[Value],
    args: &[Value],
) -> Result<Value, EvalError> {
    match (function, args) {
        ("isSorted", _) => is_sorted(list),
        ("sum", _) => sum(list),
        ("min", _) => extreme(list, "min", Ordering::Greater),
        ("max", _) => extreme(list, "max", Ordering::Less),
        ("indexOf", [item]) => Ok(Value::Int(
            list.iter()
                .position(|v| v.equals(item))
                .map_or(-1, |i| i as i64),
        )),
        ("lastIndexOf", [item]) => Ok(Value::Int(
            list.iter()
                .rposition(|v| v.equals(item))
                .map_or(-1, |i| i as i64),
        )),
        _ => Err(no_such_overload(function)),
    }
}

/// Whether a value is one of cel-go's `traits.Comparer` types.
pub(crate) fn comparable(value: &Value) -> bool {
    matches!(
        value,
        Value::Int(_)
            | Value::Uint(_)
            | Value::Double(_)
            | Value::Bool(_)
            | Value::String(_)
            | Value::Bytes(_)
            | Value::Duration(_)
            | Value::Timestamp(_)
    )
}

fn is_sorted(list: &[Value]) -> Result<Value, EvalError> {
    let mut prev: Option<&Value> = None;
    for next in list {
        if !comparable(next) {
            return Err(error("no such overload"));
        }
        if let Some(p) = prev
            && p.compare(next) == Some(Ordering::Greater)
        {
            return Ok(Value::Bool(false));
        }
        prev = Some(next);
    }
    Ok(Value::Bool(true))
}

fn sum(list: &[Value]) -> Result<Value, EvalError> {
    let mut acc = match list.first() {
        Some(Value::Uint(_)) => Value::Uint(0),
        Some(Value::Double(_)) => Value::Double(0.0),
        Some(Value::Duration(_)) => Value::Duration(jiff::SignedDuration::ZERO),
        _ => Value::Int(0),
    };
    for next in list {
        acc = add(&acc, next)?;
    }
    Ok(acc)
}

/// cel-go's `+` between two summable values of one type.
fn add(a: &Value, b: &Value) -> Result<Value, EvalError> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x
            .checked_add(*y)
            .map(Value::Int)
            .ok_or_else(|| error("integer overflow")),
        (Value::Uint(x), Value::Uint(y)) => x
            .checked_add(*y)
            .map(Value::Uint)
            .ok_or_else(|| error("unsigned integer overflow")),
        (Value::Double(x), Value::Double(y)) => Ok(Value::Double(x + y)),
        (Value::Duration(x), Value::Duration(y)) => {
            // Go's time.Duration: int64 nanoseconds.
            let total = x.as_nanos() + y.as_nanos();
            i64::try_from(total)
                .map(|n| Value::Duration(jiff::SignedDuration::from_nanos(n)))
                .map_err(|_| error("integer overflow"))
        }
        _ => Err(error("no such overload")),
    }
}

/// `min` keeps the first value and replaces it by one it compares `prefer` to.
fn extreme(list: &[Value], name: &str, prefer: Ordering) -> Result<Value, EvalError> {
    let mut result: Option<&Value> = None;
    for next in list {
        if !comparable(next) {
            return Err(error("no such overload"));
        }
        match result {
            None => result = Some(next),
            Some(r) if r.compare(next) == Some(prefer) => result = Some(next),
            Some(_) => {}
        }
    }
    result
        .cloned()
        .ok_or_else(|| error(format!("{name} called on empty list")))
}

/// ext lists' cost of a call that allocates a list: `size * factor + 1 + 10`.
fn allocating_list_cost(factor: f64, size: u64) -> u64 {
    ((size as f64 * factor) as u64)
        .saturating_add(CALL_COST)
        .saturating_add(LIST_CREATE_BASE_COST)
}

/// ext lists' worst-case O(n²) cost of comparing a list's elements with each other.
fn self_compare_cost(list: &[Value]) -> u64 {
    let size = list.len() as u64;
    let mut factor = 2.0;
    if matches!(list.first(), Some(Value::String(_) | Value::Bytes(_))) {
        factor += STRING_TRAVERSAL_COST_FACTOR;
    }
    allocating_list_cost(factor, size.saturating_mul(size))
}

fn range(n: i64, budget: &mut Budget) -> Option<Result<Value, EvalError>> {
    let size = n.max(0) as u64;
    // Charged before building, so a huge range fails on cost instead of memory.
    if let Err(e) = charge(budget, allocating_list_cost(1.0, size)) {
        return Some(Err(e));
    }
    Some(Ok(Value::list((0..n.max(0)).map(Value::Int).collect())))
}

fn slice(list: &[Value], start: i64, end: i64) -> Result<Value, EvalError> {
    if start < 0 || end < 0 {
        return Err(error(format!(
            "cannot slice({start}, {end}), negative indexes not supported"
        )));
    }
    if start > end {
        return Err(error(format!(
            "cannot slice({start}, {end}), start index must be less than or equal to end index"
        )));
    }
    if (list.len() as i64) < end {
        return Err(error(format!(
            "cannot slice({start}, {end}), list is length {}",
            list.len()
        )));
    }
    Ok(Value::list(list[start as usize..end as usize].to_vec()))
}

fn flatten_call(
    list: &[Value],
    depth: i64,
    budget: &mut Budget,
) -> Option<Result<Value, EvalError>> {
    let cost = allocating_list_cost(depth as f64, list.len() as u64);
    let result = if depth < 0 {
        Err(error("level must be non-negative"))
    } else {
        flatten(list, depth)
    };
    finish(budget, cost, result)
}

/// Flattens `depth` levels of nested lists, with an explicit stack instead of recursion.
fn flatten(list: &[Value], depth: i64) -> Result<Value, EvalError> {
    let mut out = Vec::new();
    // (remaining items of a list, its depth budget)
    let mut stack: Vec<(std::slice::Iter<'_, Value>, i64)> = vec![(list.iter(), depth)];
    while let Some((iter, level)) = stack.last_mut() {
        let level = *level;
        match iter.next() {
            None => {
                stack.pop();
            }
            Some(Value::List(inner)) if level > 0 => stack.push((inner.iter(), level - 1)),
            Some(other) => {
                if out.len() >= super::MAX_RESULT_ELEMENTS {
                    return Err(EvalError::CostExceeded);
                }
                out.push(other.clone())
            }
        }
    }
    Ok(Value::list(out))
}

fn distinct(list: &[Value]) -> Value {
    let mut unique: Vec<Value> = Vec::with_capacity(list.len());
    for v in list {
        if !unique.iter().any(|u| v.equals(u)) {
            unique.push(v.clone());
        }
    }
    Value::list(unique)
}

/// Sorts `list` by the order of `keys` (the same length, comparable, all of one type).
fn sort_by_associated_keys(list: &[Value], keys: &[Value]) -> Result<Value, EvalError> {
    if list.len() != keys.len() {
        return Err(error(format!(
            "@sortByAssociatedKeys() expected a list of the same size as the associated keys list, but got {} and {} elements respectively",
            list.len(),
            keys.len()
        )));
    }
    let Some(first) = keys.first() else {
        return Ok(Value::list(Vec::new()));
    };
    if !comparable(first) {
        return Err(error("list elements must be comparable"));
    }
    let ty = first.type_name();
    if keys.iter().any(|k| k.type_name() != ty) {
        return Err(error("list elements must have the same type"));
    }
    let mut order: Vec<usize> = (0..list.len()).collect();
    order.sort_by(|&i, &j| keys[i].compare(&keys[j]).unwrap_or(Ordering::Equal));
    Ok(Value::list(
        order.into_iter().map(|i| list[i].clone()).collect(),
    ))
}

#[cfg(test)]
mod tests;
