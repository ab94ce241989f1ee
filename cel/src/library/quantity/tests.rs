//! After Kubernetes 1.35's `pkg/cel/library/quantity_test.go` and apimachinery's quantity
//! parsing tests.

use super::*;
use crate::library::testing::*;

fn q(text: &str) -> Value {
    eval("quantity", None, &[s(text)]).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn method(receiver: Value, function: &str, args: &[Value]) -> Result<Value, String> {
    eval(function, Some(receiver), args)
}

#[test]
fn parses_and_refuses_as_upstream() {
    assert_error(eval("quantity", None, &[s("10Mo")]), FORMAT_WRONG);
    assert_error(eval("quantity", None, &[s("10Mm")]), SUFFIX);
    assert_error(eval("quantity", None, &[s("")]), FORMAT_WRONG);
    assert_error(eval("quantity", None, &[s("1e")]), SUFFIX);
    assert_error(eval("quantity", None, &[s("1.2.3")]), FORMAT_WRONG);
    for (text, valid) in [
        ("20", true),
        ("20M", true),
        ("20Mi", true),
        ("20Mo", false),
        ("10Mm", false),
        ("1.5Gi", true),
        ("-1.5e3", true),
        ("+5n", true),
        ("1E", true),
        ("0.1n", true),
        // Upstream's parser takes a missing number as 0.
        ("Ki", true),
        // apimachinery's invalid cases
        ("1.1.M", false),
        ("1+1.0M", false),
        ("0.1mi", false),
        ("0.1am", false),
        ("aoeu", false),
        (".5i", false),
        ("1i", false),
        ("-3.01i", false),
        ("-3.01e-", false),
        (" 1", false),
        ("1 ", false),
    ] {
        assert_value(eval("isQuantity", None, &[s(text)]), Value::Bool(valid));
    }
    assert_error(
        eval("isQuantity", None, &[ints(&[1, 2, 3])]),
        "no such overload: isQuantity",
    );
}

#[test]
fn quantity_functions() {
    let t = Value::Bool(true);
    let f = Value::Bool(false);
    let cases: Vec<(Result<Value, String>, Value)> = vec![
        (Ok(Value::Bool(q("200M").equals(&q("200M")))), t.clone()),
        (Ok(Value::Bool(q("200M").equals(&q("0.2G")))), t.clone()),
        (Ok(Value::Bool(q("2M").equals(&q("0.002G")))), t.clone()),
        (Ok(Value::Bool(q("2000k").equals(&q("2M")))), t.clone()),
        (Ok(Value::Bool(q("200M").equals(&q("0.3G")))), f.clone()),
        (method(q("50M"), "isLessThan", &[q("50Mi")]), t.clone()),
        (method(q("50M"), "isLessThan", &[q("100M")]), t.clone()),
        (method(q("100M"), "isLessThan", &[q("50M")]), f.clone()),
        (method(q("50Mi"), "isGreaterThan", &[q("50M")]), t.clone()),
        (
            method(q("150Mi"), "isGreaterThan", &[q("100Mi")]),
            t.clone(),
        ),
        (method(q("50M"), "isGreaterThan", &[q("100M")]), f.clone()),
        (method(q("200M"), "compareTo", &[q("0.2G")]), Value::Int(0)),
        (method(q("50M"), "compareTo", &[q("50Mi")]), Value::Int(-1)),
        (method(q("50Mi"), "compareTo", &[q("50M")]), Value::Int(1)),
        (method(q("50k"), "asInteger", &[]), Value::Int(50000)),
        (method(q("50"), "isInteger", &[]), t.clone()),
        (
            method(
                q("9999999999999999999999999999999999999G"),
                "isInteger",
                &[],
            ),
            f.clone(),
        ),
        (
            method(q("50.703k"), "asApproximateFloat", &[]),
            Value::Double(50703.0),
        ),
        (method(q("-5"), "sign", &[]), Value::Int(-1)),
        (
            method(q("1m"), "asApproximateFloat", &[]),
            Value::Double(0.001),
        ),
        (
            method(q("1.5Gi"), "asApproximateFloat", &[]),
            Value::Double(1610612736.0),
        ),
        (
            method(q("2e3"), "asApproximateFloat", &[]),
            Value::Double(2000.0),
        ),
        (method(q("0"), "sign", &[]), Value::Int(0)),
        (method(q("1.5Gi"), "sign", &[]), Value::Int(1)),
        (method(q("1m"), "isInteger", &[]), f.clone()),
        (method(q("0e100"), "isInteger", &[]), t.clone()),
        (
            method(q("1e18"), "asInteger", &[]),
            Value::Int(1_000_000_000_000_000_000),
        ),
        (method(q("1e19"), "isInteger", &[]), f.clone()),
        (
            method(q("1.5Gi"), "compareTo", &[q("1536Mi")]),
            Value::Int(0),
        ),
        (method(q("1e1000"), "isGreaterThan", &[q("9E")]), t.clone()),
        (method(q("1e-1000"), "compareTo", &[q("1n")]), Value::Int(0)),
        (method(q("-0.1n"), "compareTo", &[q("-1n")]), Value::Int(0)),
        (
            method(q("100Ei"), "compareTo", &[q("9223372036854775807")]),
            Value::Int(0),
        ),
    ];
    for (got, want) in cases {
        assert_value(got, want);
    }
}

#[test]
fn arithmetic_is_exact() {
    let sum = method(q("50k"), "add", &[q("20")]).unwrap();
    assert!(sum.equals(&q("50.02k")));
    let sum = method(q("50k"), "add", &[Value::Int(20)]).unwrap();
    assert_value(method(sum, "isLessThan", &[q("50020")]), Value::Bool(false));
    let diff = method(q("50k"), "sub", &[q("20")]).unwrap();
    assert!(diff.equals(&q("49.98k")));
    let diff = method(q("50k"), "sub", &[Value::Int(20)]).unwrap();
    assert!(diff.equals(&q("49980")));
    let v = method(q("50k"), "add", &[Value::Int(20)]).unwrap();
    let v = method(v, "sub", &[q("100k")]).unwrap();
    assert_value(method(v.clone(), "asInteger", &[]), Value::Int(-49980));
    let v = method(v, "sub", &[Value::Int(-50000)]).unwrap();
    assert_value(method(v, "asInteger", &[]), Value::Int(20));
    assert_error(
        method(
            q("9999999999999999999999999999999999999G"),
            "asInteger",
            &[],
        ),
        "cannot convert value to integer",
    );
    // Past int64, the sum is kept as a decimal, which no longer converts to an int.
    let big = method(q("9E"), "add", &[q("9E")]).unwrap();
    assert_value(method(big.clone(), "isInteger", &[]), Value::Bool(false));
    assert_value(method(big, "compareTo", &[q("18E")]), Value::Int(0));
    assert_error(method(q("1"), "add", &[s("1")]), "no such overload: add");
}

#[test]
fn type_name_and_costs() {
    assert_eq!(q("1").type_name().as_str(), "kubernetes.Quantity");
    assert_eq!(run("quantity", None, &[s("12345678901")]).1, 2);
    assert_eq!(run("isQuantity", None, &[s("1")]).1, 1);
    assert_eq!(run("sign", Some(q("1")), &[]).1, 1);
    assert_eq!(run("add", Some(q("1")), &[Value::Int(1)]).1, 1);
}
