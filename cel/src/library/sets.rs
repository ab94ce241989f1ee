//! cel-go's ext sets library: `sets.contains`, `sets.equivalent` and `sets.intersects` over
//! lists, with CEL equality between elements.

use super::{actual_size, charge, no_such_overload};
use crate::{Budget, EvalError, Value};

/// The set functions; `None` for other names.
pub fn call(
    function: &str,
    receiver: Option<&Value>,
    args: &[Value],
    budget: &mut Budget,
) -> Option<Result<Value, EvalError>> {
    let factor = match function {
        "sets.contains" | "sets.intersects" => 1.0,
        "sets.equivalent" => 2.0,
        _ => return None,
    };
    let (None, [a @ Value::List(left), b @ Value::List(right)]) = (receiver, args) else {
        return Some(Err(no_such_overload(function)));
    };
    // cel-go: 1 + |a| × |b| × factor, charged before the O(|a| × |b|) work.
    let product = actual_size(a).saturating_mul(actual_size(b));
    let cost = 1u64.saturating_add((product as f64 * factor) as u64);
    if let Err(e) = charge(budget, cost) {
        return Some(Err(e));
    }
    let result = match function {
        "sets.contains" => contains(left, right),
        "sets.intersects" => left.iter().any(|x| right.iter().any(|y| x.equals(y))),
        _ => contains(left, right) && contains(right, left),
    };
    Some(Ok(Value::Bool(result)))
}

/// Whether every element of `sub` equals some element of `list`.
fn contains(list: &[Value], sub: &[Value]) -> bool {
    sub.iter().all(|x| list.iter().any(|y| y.equals(x)))
}

#[cfg(test)]
mod tests {
    //! After cel-go v0.26.0's `ext/sets_test.go`.
    use super::super::testing::*;
    use crate::Value;

    fn l(items: Vec<Value>) -> Value {
        Value::list(items)
    }

    #[test]
    fn set_functions() {
        let i = Value::Int;
        let u = Value::Uint;
        let d = Value::Double;
        let cases: Vec<(&str, Value, Value, bool)> = vec![
            ("sets.contains", ints(&[]), ints(&[]), true),
            ("sets.contains", ints(&[1]), ints(&[]), true),
            ("sets.contains", ints(&[1]), ints(&[1]), true),
            ("sets.contains", ints(&[1]), ints(&[1, 1]), true),
            ("sets.contains", ints(&[1, 1]), ints(&[1]), true),
            ("sets.contains", ints(&[2, 1]), ints(&[1]), true),
            ("sets.contains", ints(&[1, 2, 3, 4]), ints(&[2, 3]), true),
            ("sets.contains", ints(&[1]), l(vec![d(1.0), u(1)]), true),
            ("sets.contains", ints(&[1, 2]), l(vec![u(2), d(2.0)]), true),
            ("sets.contains", l(vec![u(1)]), ints(&[1]), true),
            ("sets.contains", ints(&[1]), ints(&[2]), false),
            ("sets.contains", ints(&[1]), ints(&[1, 2]), false),
            ("sets.contains", ints(&[1]), l(vec![s("1"), i(1)]), false),
            ("sets.contains", ints(&[1]), l(vec![d(1.1), u(1)]), false),
            (
                "sets.contains",
                l(vec![ints(&[1]), ints(&[2, 3])]),
                l(vec![ints(&[2, 3])]),
                true,
            ),
            ("sets.equivalent", ints(&[]), ints(&[]), true),
            ("sets.equivalent", ints(&[1]), ints(&[1, 1]), true),
            ("sets.equivalent", ints(&[1]), l(vec![u(1), d(1.0)]), true),
            (
                "sets.equivalent",
                ints(&[1, 2, 3]),
                l(vec![u(3), d(2.0), i(1)]),
                true,
            ),
            ("sets.equivalent", ints(&[2, 1]), ints(&[1]), false),
            ("sets.equivalent", ints(&[1]), l(vec![u(1), d(1.2)]), false),
            ("sets.intersects", ints(&[1]), ints(&[1]), true),
            ("sets.intersects", ints(&[1]), l(vec![d(1.0), u(2)]), true),
            ("sets.intersects", ints(&[]), ints(&[]), false),
            ("sets.intersects", ints(&[1]), ints(&[]), false),
            ("sets.intersects", ints(&[1]), ints(&[2]), false),
            ("sets.intersects", ints(&[1]), l(vec![s("1"), i(2)]), false),
            ("sets.intersects", ints(&[1]), l(vec![d(1.1), u(2)]), false),
        ];
        for (function, a, b, want) in cases {
            assert_value(eval(function, None, &[a, b]), Value::Bool(want));
        }
        assert_error(
            eval("sets.contains", None, &[ints(&[1]), Value::Int(1)]),
            "no such overload: sets.contains",
        );
    }

    #[test]
    fn set_costs() {
        assert_eq!(
            run("sets.contains", None, &[ints(&[1, 2]), ints(&[1, 2, 3])]).1,
            7
        );
        assert_eq!(
            run("sets.equivalent", None, &[ints(&[1, 2]), ints(&[1, 2, 3])]).1,
            13
        );
        assert_eq!(run("sets.intersects", None, &[ints(&[]), ints(&[1])]).1, 1);
    }
}
