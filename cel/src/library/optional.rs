//! cel-go's optional types library (`cel.OptionalTypes()`, enabled by Kubernetes since 1.28,
//! at its latest version in cel-go v0.26.0): `optional.of`, `optional.ofNonZeroValue`,
//! `optional.none`, `value`, `hasValue`, `or`, `orValue`, `first`, `last`,
//! `optional.unwrap` and `unwrapOpt`. `or` and `orValue` short-circuit in cel-go; here they
//! take evaluated arguments, for an interpreter that does not special-case them.
//!
//! The `_?._` and `_[?_]` operators and the `optMap`/`optFlatMap` macros belong to the
//! interpreter and the parser.

use std::sync::Arc;

use super::{error, finish, no_such_overload};
use crate::{Budget, EvalError, Value};

/// Whether cel-go counts `value` as a zero value (`traits.Zeroer`).
fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Int(i) => *i == 0,
        Value::Uint(u) => *u == 0,
        Value::Double(d) => *d == 0.0,
        Value::String(s) => s.is_empty(),
        Value::Bytes(b) => b.is_empty(),
        Value::List(l) => l.is_empty(),
        Value::Map(m) => m.entries.is_empty(),
        Value::Duration(d) => d.is_zero(),
        // Go's zero time.Time: 0001-01-01T00:00:00Z.
        Value::Timestamp(t) => t.as_second() == -62_135_596_800 && t.subsec_nanosecond() == 0,
        _ => false,
    }
}

fn some(value: &Value) -> Value {
    Value::Optional(Some(Arc::new(value.clone())))
}

/// The optional functions; `None` for other names and receivers.
pub fn call(
    function: &str,
    receiver: Option<&Value>,
    args: &[Value],
    budget: &mut Budget,
) -> Option<Result<Value, EvalError>> {
    let result = match (function, receiver, args) {
        ("optional.of", None, [v]) => Ok(some(v)),
        ("optional.ofNonZeroValue", None, [v]) => Ok(if is_zero(v) {
            Value::Optional(None)
        } else {
            some(v)
        }),
        ("optional.none", None, []) => Ok(Value::Optional(None)),
        ("value", Some(Value::Optional(inner)), []) => match inner {
            Some(v) => Ok((**v).clone()),
            None => Err(error("optional.none() dereference")),
        },
        ("hasValue", Some(Value::Optional(inner)), []) => Ok(Value::Bool(inner.is_some())),
        ("or", Some(lhs @ Value::Optional(inner)), [rhs @ Value::Optional(_)]) => {
            Ok(if inner.is_some() {
                lhs.clone()
            } else {
                rhs.clone()
            })
        }
        ("orValue", Some(Value::Optional(inner)), [default]) => {
            Ok(inner.as_deref().cloned().unwrap_or_else(|| default.clone()))
        }
        ("first", Some(Value::List(list)), []) => {
            Ok(Value::Optional(list.first().map(|v| Arc::new(v.clone()))))
        }
        ("last", Some(Value::List(list)), []) => {
            Ok(Value::Optional(list.last().map(|v| Arc::new(v.clone()))))
        }
        ("optional.unwrap", None, [Value::List(list)])
        | ("unwrapOpt", Some(Value::List(list)), []) => unwrap(list),
        (
            "optional.of"
            | "optional.ofNonZeroValue"
            | "optional.none"
            | "hasValue"
            | "or"
            | "orValue"
            | "first"
            | "last"
            | "optional.unwrap"
            | "unwrapOpt",
            _,
            _,
        ) => Err(no_such_overload(function)),
        _ => return None,
    };
    finish(budget, 1, result)
}

fn unwrap(list: &[Value]) -> Result<Value, EvalError> {
    let mut out = Vec::new();
    for item in list {
        match item {
            Value::Optional(Some(v)) => out.push((**v).clone()),
            Value::Optional(None) => {}
            other => {
                return Err(error(format!(
                    "value {} is not optional",
                    super::strings::plain(other)
                )));
            }
        }
    }
    Ok(Value::list(out))
}

#[cfg(test)]
mod tests {
    //! After cel-go v0.26.0's optional library examples and tests.
    use super::*;
    use crate::library::testing::*;

    fn none() -> Value {
        Value::Optional(None)
    }

    #[test]
    fn optional_functions() {
        let one = Value::Int(1);
        let cases: Vec<(Result<Value, String>, Value)> = vec![
            (
                eval("optional.of", None, std::slice::from_ref(&one)),
                some(&one),
            ),
            (
                eval("optional.ofNonZeroValue", None, &[Value::Null]),
                none(),
            ),
            (eval("optional.ofNonZeroValue", None, &[s("")]), none()),
            (eval("optional.ofNonZeroValue", None, &[ints(&[])]), none()),
            (
                eval("optional.ofNonZeroValue", None, &[s("hello")]),
                some(&s("hello")),
            ),
            (eval("optional.none", None, &[]), none()),
            (eval("value", Some(some(&one)), &[]), one.clone()),
            (eval("hasValue", Some(some(&one)), &[]), Value::Bool(true)),
            (eval("hasValue", Some(none()), &[]), Value::Bool(false)),
            (eval("or", Some(none()), &[some(&one)]), some(&one)),
            (
                eval("or", Some(some(&s("a"))), &[some(&one)]),
                some(&s("a")),
            ),
            (eval("orValue", Some(none()), &[s("you")]), s("you")),
            (eval("orValue", Some(some(&s("a"))), &[s("you")]), s("a")),
            (eval("first", Some(ints(&[])), &[]), none()),
            (eval("first", Some(ints(&[1, 2, 3])), &[]), some(&one)),
            (
                eval("last", Some(ints(&[1, 2, 3])), &[]),
                some(&Value::Int(3)),
            ),
            (
                eval(
                    "optional.unwrap",
                    None,
                    &[Value::list(vec![some(&one), none()])],
                ),
                ints(&[1]),
            ),
            (
                eval(
                    "unwrapOpt",
                    Some(Value::list(vec![none(), some(&one)])),
                    &[],
                ),
                ints(&[1]),
            ),
        ];
        for (got, want) in cases {
            assert_value(got, want);
        }
        assert_error(
            eval("value", Some(none()), &[]),
            "optional.none() dereference",
        );
        assert_error(
            eval("optional.unwrap", None, &[ints(&[1])]),
            "value 1 is not optional",
        );
        assert_error(
            eval("hasValue", Some(one), &[]),
            "no such overload: hasValue",
        );
        assert_eq!(run("optional.none", None, &[]).1, 1);
    }
}
