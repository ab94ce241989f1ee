//! Table tests of the list functions, after Kubernetes' lists tests and cel-go's ext lists
//! examples and tests.

use super::super::testing::*;
/// One table row: function, receiver, arguments, and the value or error message wanted.
type Case<R> = (&'static str, R, Vec<Value>, Result<Value, &'static str>);

use crate::Value;

fn d(v: f64) -> Value {
    Value::Double(v)
}

#[test]
fn kubernetes_list_functions() {
    let cases: Vec<Case<Value>> = vec![
        ("isSorted", ints(&[1, 2, 3]), vec![], Ok(true.into())),
        ("isSorted", ints(&[1, 3, 2]), vec![], Ok(false.into())),
        ("isSorted", ints(&[]), vec![], Ok(true.into())),
        ("isSorted", strs(&["a", "b", "b"]), vec![], Ok(true.into())),
        ("isSorted", strs(&["b", "a"]), vec![], Ok(false.into())),
        (
            "isSorted",
            Value::list(vec![d(1.0), d(2.5)]),
            vec![],
            Ok(true.into()),
        ),
        ("sum", ints(&[1, 2, 3]), vec![], Ok(Value::Int(6))),
        ("sum", ints(&[]), vec![], Ok(Value::Int(0))),
        ("sum", Value::list(vec![d(1.5), d(2.0)]), vec![], Ok(d(3.5))),
        (
            "sum",
            Value::list(vec![Value::Uint(1), Value::Uint(2)]),
            vec![],
            Ok(Value::Uint(3)),
        ),
        ("sum", ints(&[i64::MAX, 1]), vec![], Err("integer overflow")),
        ("min", ints(&[3, 1, 2]), vec![], Ok(Value::Int(1))),
        ("max", ints(&[3, 1, 2]), vec![], Ok(Value::Int(3))),
        (
            "max",
            strs(&["a", "c", "b"]),
            vec![],
            Ok(Value::string("c")),
        ),
        ("min", ints(&[]), vec![], Err("min called on empty list")),
        ("max", ints(&[]), vec![], Err("max called on empty list")),
        (
            "min",
            Value::list(vec![ints(&[1])]),
            vec![],
            Err("no such overload"),
        ),
        (
            "indexOf",
            ints(&[1, 2, 2, 3]),
            vec![Value::Int(2)],
            Ok(Value::Int(1)),
        ),
        (
            "lastIndexOf",
            ints(&[1, 2, 2, 3]),
            vec![Value::Int(2)],
            Ok(Value::Int(2)),
        ),
        (
            "indexOf",
            ints(&[1, 2]),
            vec![Value::Int(5)],
            Ok(Value::Int(-1)),
        ),
        (
            "lastIndexOf",
            ints(&[1, 2]),
            vec![Value::Int(5)],
            Ok(Value::Int(-1)),
        ),
        (
            "indexOf",
            strs(&["a", "b"]),
            vec![s("b")],
            Ok(Value::Int(1)),
        ),
        ("indexOf", ints(&[1, 2]), vec![d(2.0)], Ok(Value::Int(1))),
    ];
    for (function, receiver, args, want) in cases {
        let got = eval(function, Some(receiver.clone()), &args);
        match want {
            Ok(want) => assert_value(got, want),
            Err(want) => assert_error(got, want),
        }
    }
}

#[test]
fn kubernetes_list_costs_are_one_traversal() {
    assert_eq!(run("sum", Some(ints(&[1, 2, 3])), &[]).1, 3);
    // Strings cost a tenth per byte, truncated: two one-letter strings cost nothing.
    assert_eq!(run("isSorted", Some(strs(&["a", "b"])), &[]).1, 0);
    assert_eq!(
        run("max", Some(strs(&["aaaaaaaaaa", "bbbbbbbbbb"])), &[]).1,
        2
    );
}

#[test]
fn ext_lists() {
    let cases: Vec<Case<Option<Value>>> = vec![
        (
            "slice",
            Some(ints(&[1, 2, 3, 4])),
            vec![1.into(), 3.into()],
            Ok(ints(&[2, 3])),
        ),
        (
            "slice",
            Some(ints(&[1, 2, 3, 4])),
            vec![2.into(), 4.into()],
            Ok(ints(&[3, 4])),
        ),
        (
            "slice",
            Some(ints(&[1, 2, 3, 4])),
            vec![3.into(), 0.into()],
            Err("cannot slice(3, 0), start index must be less than or equal to end index"),
        ),
        (
            "slice",
            Some(ints(&[1, 2, 3, 4])),
            vec![0.into(), 10.into()],
            Err("cannot slice(0, 10), list is length 4"),
        ),
        (
            "slice",
            Some(ints(&[1, 2, 3, 4])),
            vec![(-5).into(), 10.into()],
            Err("cannot slice(-5, 10), negative indexes not supported"),
        ),
        (
            "flatten",
            Some(Value::list(vec![1.into(), ints(&[2, 3]), ints(&[4])])),
            vec![],
            Ok(ints(&[1, 2, 3, 4])),
        ),
        (
            "flatten",
            Some(Value::list(vec![
                1.into(),
                Value::list(vec![2.into(), ints(&[3, 4])]),
            ])),
            vec![],
            Ok(Value::list(vec![1.into(), 2.into(), ints(&[3, 4])])),
        ),
        (
            "flatten",
            Some(Value::list(vec![
                1.into(),
                Value::list(vec![2.into(), Value::list(vec![3.into(), ints(&[4])])]),
            ])),
            vec![2.into()],
            Ok(Value::list(vec![1.into(), 2.into(), 3.into(), ints(&[4])])),
        ),
        (
            "flatten",
            Some(Value::list(vec![1.into(), ints(&[2])])),
            vec![(-1).into()],
            Err("level must be non-negative"),
        ),
        (
            "lists.range",
            None,
            vec![5.into()],
            Ok(ints(&[0, 1, 2, 3, 4])),
        ),
        ("lists.range", None, vec![0.into()], Ok(ints(&[]))),
        (
            "reverse",
            Some(ints(&[5, 3, 1, 2])),
            vec![],
            Ok(ints(&[2, 1, 3, 5])),
        ),
        (
            "distinct",
            Some(ints(&[1, 2, 2, 3, 3, 3])),
            vec![],
            Ok(ints(&[1, 2, 3])),
        ),
        (
            "distinct",
            Some(strs(&["b", "b", "c", "a", "c"])),
            vec![],
            Ok(strs(&["b", "c", "a"])),
        ),
        (
            "distinct",
            Some(Value::list(vec![1.into(), s("b"), 2.into(), s("b")])),
            vec![],
            Ok(Value::list(vec![1.into(), s("b"), 2.into()])),
        ),
        ("sort", Some(ints(&[3, 2, 1])), vec![], Ok(ints(&[1, 2, 3]))),
        (
            "sort",
            Some(strs(&["b", "c", "a"])),
            vec![],
            Ok(strs(&["a", "b", "c"])),
        ),
        (
            "sort",
            Some(Value::list(vec![1.into(), s("b")])),
            vec![],
            Err("list elements must have the same type"),
        ),
        (
            "sort",
            Some(Value::list(vec![ints(&[1, 2, 3])])),
            vec![],
            Err("list elements must be comparable"),
        ),
        (
            "@sortByAssociatedKeys",
            Some(strs(&["foo", "bar", "baz"])),
            vec![ints(&[3, 1, 2])],
            Ok(strs(&["bar", "baz", "foo"])),
        ),
        (
            "@sortByAssociatedKeys",
            Some(strs(&["foo"])),
            vec![ints(&[3, 1])],
            Err(
                "@sortByAssociatedKeys() expected a list of the same size as the associated keys list, but got 1 and 2 elements respectively",
            ),
        ),
    ];
    for (function, receiver, args, want) in cases {
        let got = eval(function, receiver.clone(), &args);
        match want {
            Ok(want) => assert_value(got, want),
            Err(want) => assert_error(got, want),
        }
    }
}

#[test]
fn ext_list_costs_follow_cel_go_trackers() {
    // size of the result + 1 (call) + 10 (list creation)
    assert_eq!(
        run("slice", Some(ints(&[1, 2, 3, 4])), &[1.into(), 3.into()]).1,
        13
    );
    assert_eq!(run("lists.range", None, &[5.into()]).1, 16);
    assert_eq!(run("reverse", Some(ints(&[1, 2, 3])), &[]).1, 14);
    // input size × depth + 11
    assert_eq!(run("flatten", Some(ints(&[1, 2, 3])), &[2.into()]).1, 17);
    // 2 × n² + 11, 2.1 × n² + 11 for strings
    assert_eq!(run("sort", Some(ints(&[3, 2, 1])), &[]).1, 29);
    assert_eq!(run("distinct", Some(strs(&["a", "b"])), &[]).1, 19);
}

#[test]
fn a_huge_range_fails_on_cost_not_memory() {
    let mut budget = crate::Budget::new(1_000);
    let got = super::call("lists.range", None, &[Value::Int(i64::MAX)], &mut budget);
    assert!(matches!(got, Some(Err(crate::EvalError::CostExceeded))));
}

#[test]
fn flatten_walks_deep_nesting_without_recursion() {
    let mut v = Value::Int(7);
    for _ in 0..10_000 {
        v = Value::list(vec![v]);
    }
    let got = eval("flatten", Some(Value::list(vec![v])), &[Value::Int(20_000)]);
    assert_value(got, ints(&[7]));
}

#[test]
fn flatten_refuses_an_output_past_the_element_limit() {
    let inner = Value::list((0..3_000).map(Value::Int).collect());
    let middle = Value::list(vec![inner; 3_000]);
    let got = super::call(
        "flatten",
        Some(&middle),
        &[],
        &mut crate::Budget::new(1_000_000),
    );
    assert!(matches!(got, Some(Err(crate::EvalError::CostExceeded))));
}
