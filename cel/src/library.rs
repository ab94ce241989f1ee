//! Kubernetes' CEL libraries and the cel-go extensions Kubernetes enables, as functions over
//! [`Value`]s: the interpreter calls [`call`] for every function the standard library lacks.
//!
//! Kubernetes 1.35's base environment (apiserver `pkg/cel/environment/base.go`, cel-go
//! v0.26.0) enables: Kubernetes' lists, regex, URLs, quantity, IP, CIDR, format and semver
//! (version 1) libraries, and cel-go's ext strings (version 2), sets, lists (version 3),
//! optional types and two-variable comprehensions (`cel.@mapInsert`), and Kubernetes'
//! authorization library with its selectors ([`authz`]), whose checks ask an
//! [`authz::Authorizer`] the caller binds as the `authorizer` variable.
//!
//! [`call`] charges the whole runtime cost of the call: what Kubernetes' `CostEstimator.CallCost`
//! (apiserver `pkg/cel/library/cost.go`) or cel-go's overload cost trackers say, and otherwise
//! cel-go's default of 1. The interpreter charges nothing more for the call itself.

pub mod authz;
pub mod cidr;
pub mod comprehensions;
pub mod format;
pub mod ip;
pub mod jsonpatch;
pub mod lists;
pub mod optional;
pub mod quantity;
pub mod regex;
pub mod semver;
pub mod sets;
pub mod strings;
pub mod urls;

use crate::{Budget, EvalError, Value};

/// cel-go's `common.StringTraversalCostFactor`.
pub(crate) const STRING_TRAVERSAL_COST_FACTOR: f64 = 0.1;
/// cel-go's `common.RegexStringLengthCostFactor`.
pub(crate) const REGEX_STRING_LENGTH_COST_FACTOR: f64 = 0.25;
/// cel-go's `common.ListCreateBaseCost`.
pub(crate) const LIST_CREATE_BASE_COST: u64 = 10;

/// The largest string a library function builds (16 MiB); past it the call fails as if the
/// budget ran out. Upstream's runtime costs price some calls by their input only
/// (`replace`), so a chain of them could otherwise outgrow memory on a small budget.
pub(crate) const MAX_RESULT_BYTES: u64 = 16 << 20;

/// The most elements `flatten` builds, for the same reason (a list that shares one large
/// list many times flattens to far more than its cost).
pub(crate) const MAX_RESULT_ELEMENTS: usize = 1 << 22;

/// Every function name the libraries define, so that a call with the wrong argument types is
/// `no such overload` rather than unknown.
const NAMES: &[&str] = &[
    // Kubernetes lists, ext lists
    "isSorted",
    "sum",
    "min",
    "max",
    "indexOf",
    "lastIndexOf",
    "slice",
    "flatten",
    "sort",
    "@sortByAssociatedKeys",
    "lists.range",
    "reverse",
    "distinct",
    // regex
    "find",
    "findAll",
    // ext strings v2
    "charAt",
    "lowerAscii",
    "upperAscii",
    "replace",
    "split",
    "substring",
    "trim",
    "join",
    "strings.quote",
    "format",
    // sets
    "sets.contains",
    "sets.equivalent",
    "sets.intersects",
    // quantity
    "quantity",
    "isQuantity",
    "sign",
    "isGreaterThan",
    "isLessThan",
    "compareTo",
    "add",
    "sub",
    "asInteger",
    "isInteger",
    "asApproximateFloat",
    // ip, cidr
    "ip",
    "isIP",
    "ip.isCanonical",
    "family",
    "isUnspecified",
    "isLoopback",
    "isLinkLocalMulticast",
    "isLinkLocalUnicast",
    "isGlobalUnicast",
    "cidr",
    "isCIDR",
    "containsIP",
    "containsCIDR",
    "prefixLength",
    "masked",
    // urls
    "url",
    "isURL",
    "getScheme",
    "getHost",
    "getHostname",
    "getPort",
    "getEscapedPath",
    "getQuery",
    // format
    "format.named",
    "validate",
    // optional types, two-variable comprehensions
    "optional.of",
    "optional.ofNonZeroValue",
    "optional.none",
    "value",
    "hasValue",
    "or",
    "orValue",
    "first",
    "last",
    "optional.unwrap",
    "unwrapOpt",
    "cel.@mapInsert",
    "jsonpatch.escapeKey",
    // semver
    "semver",
    "isSemver",
    "major",
    "minor",
    "patch",
];

/// Calls library function `function` (on `receiver` for `x.f(...)` calls, with `args`),
/// charging `budget`; `None` when no library has that function (the interpreter then
/// reports `no such overload`).
pub fn call(
    function: &str,
    receiver: Option<&Value>,
    args: &[Value],
    budget: &mut Budget,
) -> Option<Result<Value, EvalError>> {
    let found = authz::call(function, receiver, args, budget)
        .or_else(|| lists::call(function, receiver, args, budget))
        .or_else(|| strings::call(function, receiver, args, budget))
        .or_else(|| regex::call(function, receiver, args, budget))
        .or_else(|| sets::call(function, receiver, args, budget))
        .or_else(|| quantity::call(function, receiver, args, budget))
        .or_else(|| semver::call(function, receiver, args, budget))
        .or_else(|| ip::call(function, receiver, args, budget))
        .or_else(|| cidr::call(function, receiver, args, budget))
        .or_else(|| urls::call(function, receiver, args, budget))
        .or_else(|| format::call(function, receiver, args, budget))
        .or_else(|| optional::call(function, receiver, args, budget))
        .or_else(|| comprehensions::call(function, receiver, args, budget))
        .or_else(|| jsonpatch::call(function, receiver, args, budget));
    match found {
        Some(result) => Some(result),
        None if NAMES.contains(&function) || authz::NAMES.contains(&function) => {
            Some(Err(no_such_overload(function)))
        }
        None => None,
    }
}

/// cel-go's error for arguments no overload of `function` accepts.
pub(crate) fn no_such_overload(function: &str) -> EvalError {
    EvalError::Runtime(format!("no such overload: {function}"))
}

/// A runtime error with cel-go's or Kubernetes' message.
pub(crate) fn error(message: impl Into<String>) -> EvalError {
    EvalError::Runtime(message.into())
}

/// Spends `cost` from `budget`; [`EvalError::CostExceeded`] when it has less.
pub(crate) fn charge(budget: &mut Budget, cost: u64) -> Result<(), EvalError> {
    match budget.remaining.checked_sub(cost) {
        Some(left) => {
            budget.remaining = left;
            Ok(())
        }
        None => {
            budget.remaining = 0;
            Err(EvalError::CostExceeded)
        }
    }
}

/// Charges `cost` and then yields `result`: an exceeded budget wins over the call's own
/// error, as in cel-go, where the cost check follows every call.
pub(crate) fn finish(
    budget: &mut Budget,
    cost: u64,
    result: Result<Value, EvalError>,
) -> Option<Result<Value, EvalError>> {
    Some(charge(budget, cost).and(result))
}

/// cel-go's `actualSize`: code points of a string, bytes of bytes, elements of a list or map,
/// the size of an optional's value, 1 for anything else.
pub(crate) fn actual_size(mut value: &Value) -> u64 {
    while let Value::Optional(Some(inner)) = value {
        value = inner;
    }
    match value {
        Value::String(s) => s.chars().count() as u64,
        Value::Bytes(b) => b.len() as u64,
        Value::List(l) => l.len() as u64,
        Value::Map(m) => m.entries.len() as u64,
        _ => 1,
    }
}

/// `ceil(size * factor)` as cel-go computes it, in floating point.
pub(crate) fn ceil_cost(size: u64, factor: f64) -> u64 {
    (size as f64 * factor).ceil() as u64
}

/// The cost of a string traversal of `value`'s size (`ceil(size * 0.1)`).
pub(crate) fn string_traversal_cost(value: &Value) -> u64 {
    ceil_cost(actual_size(value), STRING_TRAVERSAL_COST_FACTOR)
}

/// Kubernetes' `traversalCost`: 0.1 per byte of a string or bytes (truncated), the sum over
/// the elements of a list and the keys and values of a map, 1 for anything else. Walks with
/// an explicit stack, so nesting depth is no concern.
pub(crate) fn traversal_cost(value: &Value) -> u64 {
    let mut cost = 0u64;
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => {
                cost = cost.saturating_add((s.len() as f64 * STRING_TRAVERSAL_COST_FACTOR) as u64)
            }
            Value::Bytes(b) => {
                cost = cost.saturating_add((b.len() as f64 * STRING_TRAVERSAL_COST_FACTOR) as u64)
            }
            Value::List(items) => stack.extend(items.iter()),
            Value::Map(map) => {
                for (k, item) in &map.entries {
                    if let crate::Key::String(s) = k {
                        cost = cost
                            .saturating_add((s.len() as f64 * STRING_TRAVERSAL_COST_FACTOR) as u64);
                    } else {
                        cost = cost.saturating_add(1);
                    }
                    stack.push(item);
                }
            }
            _ => cost = cost.saturating_add(1),
        }
    }
    cost
}

#[cfg(test)]
pub(crate) mod testing {
    //! Helpers for the libraries' table tests.
    use super::*;

    /// Calls `function` with a generous budget, returning the result and the cost charged.
    pub fn run(
        function: &str,
        receiver: Option<Value>,
        args: &[Value],
    ) -> (Result<Value, String>, u64) {
        let mut budget = Budget::new(1_000_000);
        let result = call(function, receiver.as_ref(), args, &mut budget)
            .unwrap_or_else(|| panic!("{function} is not a library function"));
        (
            result.map_err(|e| e.to_string()),
            1_000_000 - budget.remaining,
        )
    }

    /// The result of `function`, or its error message.
    pub fn eval(function: &str, receiver: Option<Value>, args: &[Value]) -> Result<Value, String> {
        run(function, receiver, args).0
    }

    pub fn s(text: &str) -> Value {
        Value::string(text)
    }

    pub fn ints(items: &[i64]) -> Value {
        Value::list(items.iter().map(|i| Value::Int(*i)).collect())
    }

    pub fn strs(items: &[&str]) -> Value {
        Value::list(items.iter().map(|i| Value::string(i)).collect())
    }

    /// Asserts an error with message `want`.
    pub fn assert_error(got: Result<Value, String>, want: &str) {
        match got {
            Ok(v) => panic!("got {v:?}, want error {want:?}"),
            Err(e) => assert_eq!(e, want),
        }
    }

    /// Asserts CEL equality, printing both sides otherwise.
    pub fn assert_value(got: Result<Value, String>, want: Value) {
        match got {
            Ok(v) => assert!(
                v.equals(&want) && v.type_name() == want.type_name(),
                "got {v:?}, want {want:?}"
            ),
            Err(e) => panic!("got error {e:?}, want {want:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;

    #[test]
    fn unknown_names_are_not_library_functions() {
        let mut budget = Budget::new(10);
        assert!(call("noSuchFunction", None, &[], &mut budget).is_none());
    }

    #[test]
    fn known_names_with_wrong_arguments_are_no_such_overload() {
        assert_error(
            eval("isSorted", Some(Value::Int(1)), &[]),
            "no such overload: isSorted",
        );
        assert_error(
            eval("charAt", Some(Value::Int(1)), &[Value::Int(0)]),
            "no such overload: charAt",
        );
    }

    #[test]
    fn an_exhausted_budget_stops_the_call() {
        let mut budget = Budget::new(3);
        let list = ints(&[1, 2, 3, 4, 5]);
        let result = call("sum", Some(&list), &[], &mut budget);
        assert!(matches!(result, Some(Err(EvalError::CostExceeded))));
    }

    #[test]
    fn traversal_cost_survives_deep_nesting() {
        let mut v = Value::Int(1);
        for _ in 0..10_000 {
            v = Value::list(vec![v]);
        }
        assert_eq!(traversal_cost(&v), 1);
    }
}
