//! Tests of the standard functions (strings, conversions, durations and timestamps) and of
//! the costs charged, against cel-go's runtime cost tests (`interpreter/runtimecost_test.go`,
//! with Kubernetes' `OptOptimize` and `PresenceTestHasCost(false)`).

use crate::{Activation, Budget, EvalError, Value};

use super::tests::{check, check_error, check_true, eval, eval_with, map};

#[test]
fn strings_and_size() {
    check("size('héllo')", Value::Int(5));
    check("'héllo'.size()", Value::Int(5));
    check("size(b'h\\xff')", Value::Int(2));
    check("size([1, 2]) + size({'a': 1})", Value::Int(3));
    check_true("'kubernetes'.contains('bern') && 'kubernetes'.startsWith('kube')");
    check_true("'kubernetes'.endsWith('tes') && !'kubernetes'.endsWith('x')");
    check_true("'abc123'.matches('^[a-z]+[0-9]+$') && matches('abc', 'b')");
    check_true("!'abc'.matches('^b')");
    check_error("size(1)", "no such overload");
    check_error("'a'.contains(1)", "no such overload");
    assert!(matches!(
        eval("'a'.matches('(')"),
        Err(EvalError::Runtime(m)) if m.starts_with("error parsing regexp")
    ));
    check_error("'a'.noSuchFunction()", "no such overload");
}

#[test]
fn conversions_to_numbers() {
    check("int('-42')", Value::Int(-42));
    check("int(42u)", Value::Int(42));
    check("int(-2.9)", Value::Int(-2));
    check("int(timestamp('1970-01-01T00:01:00Z'))", Value::Int(60));
    check("int(duration('1s'))", Value::Int(1_000_000_000));
    check_error("int('1.5')", "type conversion error from 'string' to 'int'");
    check_error("int(18446744073709551615u)", "integer overflow");
    check_error("int(9.3e18)", "integer overflow");
    check_error("int(double('NaN'))", "integer overflow");
    check("uint(42)", Value::Uint(42));
    check("uint('42')", Value::Uint(42));
    check("uint(2.5)", Value::Uint(2));
    check_error("uint(-1)", "unsigned integer overflow");
    check_error("uint(-1.0)", "unsigned integer overflow");
    check_error(
        "uint('-1')",
        "type conversion error from 'string' to 'uint'",
    );
    check("double(3)", Value::Double(3.0));
    check("double('2.5e3')", Value::Double(2500.0));
    check(
        "double(18446744073709551615u)",
        Value::Double(1.8446744073709552e19),
    );
    check_error(
        "double('x')",
        "type conversion error from 'string' to 'double'",
    );
    check_error("int([])", "type conversion error from 'list' to 'int'");
}

#[test]
fn conversions_to_strings_bytes_and_bools() {
    check("string(-42)", Value::string("-42"));
    check("string(42u)", Value::string("42"));
    check("string(2.5)", Value::string("2.5"));
    check("string(1e6)", Value::string("1e+06"));
    check("string(123456.0)", Value::string("123456"));
    check("string(0.00001)", Value::string("1e-05"));
    check("string(true)", Value::string("true"));
    check("string(b'abc')", Value::string("abc"));
    check_error(
        "string(b'\\xff')",
        "invalid UTF-8 in bytes, cannot convert to string",
    );
    check("string(duration('1m30s'))", Value::string("90s"));
    check("string(duration('1.5s'))", Value::string("1.5s"));
    check(
        "string(timestamp('2024-05-06T07:08:09.120+02:00'))",
        Value::string("2024-05-06T05:08:09.12Z"),
    );
    check("bytes('abc') == b'abc'", Value::Bool(true));
    check("bool('true') && !bool('F')", Value::Bool(true));
    check_error(
        "bool('yes')",
        "type conversion error from 'string' to 'bool'",
    );
    check("string(int)", Value::string("int"));
    check(
        "string(type(duration('1s')))",
        Value::string("google.protobuf.Duration"),
    );
    check("int('+5')", Value::Int(5));
    check_error(
        "string(null)",
        "type conversion error from 'null_type' to 'string'",
    );
    check("dyn(1) + 1", Value::Int(2));
    check("type(dyn([1]))", Value::Type(crate::TypeName::List));
}

#[test]
fn durations() {
    check_true("duration('1h30m') == duration('90m')");
    check_true("duration('-1.5h') == duration('-90m')");
    check_true("duration('1ms') + duration('999us') < duration('2ms')");
    check_true("duration('1us') == duration('1µs') && duration('0') == duration('0s')");
    check_error(
        "duration('1d')",
        "type conversion error from 'string' to 'google.protobuf.Duration'",
    );
    check_error(
        "duration('1')",
        "type conversion error from 'string' to 'google.protobuf.Duration'",
    );
    check_error(
        "duration('')",
        "type conversion error from 'string' to 'google.protobuf.Duration'",
    );
    check_error(
        "duration('3000000h')",
        "type conversion error from 'string' to 'google.protobuf.Duration'",
    );
    check_error(
        "duration('2562047h') + duration('2562047h')",
        "duration overflow",
    );
    check("duration('1h30m').getHours()", Value::Int(1));
    check("duration('1h30m').getMinutes()", Value::Int(90));
    check("duration('1h30m').getSeconds()", Value::Int(5400));
    check("duration('1.5s').getMilliseconds()", Value::Int(1500));
}

#[test]
fn timestamps() {
    let t = "timestamp('2024-03-10T23:45:30.250Z')";
    check(&format!("{t}.getFullYear()"), Value::Int(2024));
    check(&format!("{t}.getMonth()"), Value::Int(2));
    check(&format!("{t}.getDayOfYear()"), Value::Int(69));
    check(&format!("{t}.getDayOfMonth()"), Value::Int(9));
    check(&format!("{t}.getDate()"), Value::Int(10));
    check(&format!("{t}.getDayOfWeek()"), Value::Int(0));
    check(&format!("{t}.getHours()"), Value::Int(23));
    check(&format!("{t}.getMinutes()"), Value::Int(45));
    check(&format!("{t}.getSeconds()"), Value::Int(30));
    check(&format!("{t}.getMilliseconds()"), Value::Int(250));
    check(&format!("{t}.getHours('+02:00')"), Value::Int(1));
    check(&format!("{t}.getDate('+02:00')"), Value::Int(11));
    check(&format!("{t}.getHours('-05:30')"), Value::Int(18));
    check(&format!("{t}.getHours('Asia/Tokyo')"), Value::Int(8));
    check_error(
        &format!("{t}.getHours('+02:75')"),
        "timezone offset minutes out of range [0, 59]: +02:75",
    );
    check_true(
        "timestamp('2024-01-01T00:00:00Z') + duration('24h') == timestamp('2024-01-02T00:00:00Z')",
    );
    check_true(
        "duration('1h') + timestamp('2024-01-01T00:00:00Z') > timestamp('2024-01-01T00:00:00Z')",
    );
    check_true(
        "timestamp('2024-01-02T00:00:00Z') - timestamp('2024-01-01T00:00:00Z') == duration('24h')",
    );
    check_true(
        "timestamp('2024-01-01T00:00:00Z') - duration('1s') == timestamp('2023-12-31T23:59:59Z')",
    );
    check_true("timestamp(86400) == timestamp('1970-01-02T00:00:00Z')");
    check_error(
        "timestamp('9999-12-30T00:00:00Z') + duration('48h')",
        "timestamp overflow",
    );
    check_error(
        "timestamp('0001-01-01T00:00:00Z') - duration('1s')",
        "timestamp overflow",
    );
    check_error("timestamp('0000-12-31T00:00:00Z')", "timestamp overflow");
    // cel-spec timestamps.textproto: add_duration_nanos_under.
    check_error(
        "timestamp('0001-01-01T00:00:00Z') + duration('-1ns')",
        "timestamp overflow",
    );
    check_error("timestamp(253402300800)", "timestamp overflow");
    check_error(
        "timestamp('2024-01-01 00:00:00Z')",
        "type conversion error from 'string' to 'google.protobuf.Timestamp'",
    );
    check_error(
        "timestamp('2024-02-30T00:00:00Z')",
        "type conversion error from 'string' to 'google.protobuf.Timestamp'",
    );
}

/// What evaluating `source` with `activation` spends.
fn cost_with(source: &str, activation: &Activation) -> u64 {
    let expr = crate::parse::parse(source).unwrap();
    let mut budget = Budget::new(1_000_000);
    super::eval(&expr, activation, &mut budget).unwrap_or_else(|e| panic!("{source}: {e}"));
    1_000_000 - budget.remaining
}

fn cost(source: &str) -> u64 {
    cost_with(source, &Activation::new())
}

#[test]
fn costs_match_cel_go() {
    // cel-go runtimecost_test.go; constant literals cost nothing under OptOptimize.
    assert_eq!(cost("'Hello World!'"), 0);
    let input = Activation::new().bind("input", Value::list(vec![1.into(), 2.into()]));
    assert_eq!(cost_with("input", &input), 1);
    assert_eq!(cost_with("input[0]", &input), 2);
    assert_eq!(cost_with("input[3 - 3]", &input), 3);
    assert_eq!(cost_with("input.all(x, true)", &input), 2 + 2 * 3);
    let obj = Activation::new().bind("input", map(&[("key", Value::string("v"))]));
    assert_eq!(cost_with("input['key']", &obj), 2);
    assert_eq!(cost_with("input.key", &obj), 2);
    assert_eq!(cost_with("has(input.key)", &obj), 1);
    assert_eq!(cost("[1, 2, 3].all(x, true)"), 10);
    // A relative attribute (1) and its qualifier (1).
    assert_eq!(cost("[1, 2][0]"), 2);
    assert_eq!(cost("{'a': {'b': 1}}.a.b"), 3);
    assert_eq!(cost("[x, 2, 3]".replace('x', "1 + 1").as_str()), 11);
    assert_eq!(cost("{'a': 1 + 1}"), 31);
    assert_eq!(cost("false || false"), 0);
    assert_eq!(cost("1 < 2"), 1);
    assert_eq!(cost("1 == 2"), 1);
    // `==`: the type name and the conversion of a constant are constants.
    assert_eq!(cost("type(1) == int"), 1);
    let x = Activation::new().bind("x", Value::Int(1));
    assert_eq!(cost_with("type(x) == int", &x), 3);
    let d = Activation::new().bind("d", Value::Duration(jiff::SignedDuration::ZERO));
    assert_eq!(cost_with("type(d) == google.protobuf.Duration", &d), 3);
    assert_eq!(cost("true ? 1 : 2"), 0);
    assert_eq!(cost("false ? false : 1 > 3"), 1);
    assert_eq!(cost("size('123')"), 1);
    assert_eq!(
        cost("'12345678901234567890' == '123456789012345678901234567890'"),
        2
    );
    assert_eq!(cost("(1 > 2 || 2 > 1) == true"), 3);
    let strings = Activation::new()
        .bind("str1", Value::string("val1"))
        .bind("str2", Value::string("val2222222"));
    assert_eq!(cost_with("'abcdefg'.contains(str1 + str2)", &strings), 6);
    let long = Activation::new().bind("input", Value::string(&"a".repeat(500)));
    assert_eq!(cost_with("bytes(input)", &long), 51);
    assert_eq!(cost_with("input.matches('[0-9]')", &long), 1 + 51 * 2);
    assert_eq!(cost_with("input.startsWith('a')", &long), 51);
    let ternary = Activation::new()
        .bind("x", Value::Int(1))
        .bind("input1", Value::list(vec![1.into()]))
        .bind("input2", Value::list(vec![1.into()]));
    assert_eq!(
        cost_with("(x > 2 ? input1 : input2).all(y, true)", &ternary),
        6
    );
}

#[test]
fn comprehension_costs_match_cel_go() {
    // cel-go's figures less 10 for each constant list literal (the range and the `[]`).
    assert_eq!(cost("[1,2,3,4,5].filter(x, x % 2 == 0)"), 62 - 20);
    assert_eq!(cost("[1,2,3,4,5].map(x, x)"), 86 - 20);
    assert_eq!(
        cost("[1,2,3,4,5].map(x, x).filter(x, x % 2 == 0)"),
        138 - 30
    );
    assert_eq!(
        cost("[1,2,3,4,5].map(x, x).exists(x, x == 5) == true"),
        118 - 20
    );
    assert_eq!(
        cost("[1,2,3,4,5].map(x, [x, x]).all(y, y.all(y, y == 1))"),
        171 - 20
    );
    assert_eq!(cost("[1,2,3,4,5].map(x, x).map(x, x) + [1]"), 173 - 40);
    assert_eq!(cost("[{'k1': 1}, {'k2': 2}].all(x, true)"), 77 - 70);
    // `@result + [1]`: the constant `[1]` costs nothing.
    assert_eq!(cost("[1, 2].map(x, 1)"), 2 * 2 + 1);
    // Each insertion: `@result`, `i`, `v`, `+`, the call.
    assert_eq!(cost("[1, 2].transformMap(i, v, v + 1)"), 2 * 5 + 1);
}

#[test]
fn running_out_of_budget_stops_the_evaluation() {
    let big = Value::list((0..1000).map(Value::Int).collect());
    let activation = Activation::new().bind("l", big);
    let expr = crate::parse::parse("l.all(x, l.all(y, x + y >= 0))").unwrap();
    let mut budget = Budget::new(10_000);
    assert_eq!(
        super::eval(&expr, &activation, &mut budget).unwrap_err(),
        EvalError::CostExceeded
    );
    assert_eq!(budget.remaining, 0);
    // Exactly the cost passes, one less fails.
    let needed = cost("[1, 2, 3].map(x, x * 2)");
    let expr = crate::parse::parse("[1, 2, 3].map(x, x * 2)").unwrap();
    assert!(super::eval(&expr, &activation, &mut Budget::new(needed)).is_ok());
    assert_eq!(
        super::eval(&expr, &activation, &mut Budget::new(needed - 1)).unwrap_err(),
        EvalError::CostExceeded
    );
    // Errors absorbed by `||` do not absorb running out.
    let expr = crate::parse::parse("l.all(x, l.all(y, x + y >= 0)) || true").unwrap();
    assert_eq!(
        super::eval(&expr, &activation, &mut Budget::new(5_000)).unwrap_err(),
        EvalError::CostExceeded
    );
}

#[test]
fn comprehensions_that_stop_early_skip_the_rest_of_their_range() {
    // Each inner `exists` stops at its first element: 50,000 turns of a few units each, not
    // 50,000 walks over the whole list.
    let activation =
        Activation::new().bind("l", Value::list((0..50_000).map(Value::Int).collect()));
    let started = std::time::Instant::now();
    let spent = cost_with("l.all(x, l.exists(y, true))", &activation);
    assert!(spent < 1_000_000, "spent {spent}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn growing_strings_and_lists_are_paid_for() {
    let activation = Activation::new()
        .bind("s", Value::string(&"x".repeat(10_000)))
        .bind("l", Value::list((0..10_000).map(Value::Int).collect()));
    // Each concatenation is charged by the size of what it builds.
    let spent = cost_with("[1, 2, 3].map(i, s + s).size()", &activation);
    assert!(spent >= 3 * 2_000, "spent {spent}");
    let spent = cost_with("[1, 2, 3].map(i, l + l).size()", &activation);
    assert!(spent >= 3 * 2_000, "spent {spent}");
    // Building a large list through `map` costs what cel-go charges per step.
    let spent = cost_with("l.map(x, x).size()", &activation);
    assert_eq!(spent, 1 + 10_000 * 13 + 1 + 1);
    assert!(
        eval_with("l.map(x, x)[9999] == 9999", &activation)
            .unwrap()
            .equals(&true.into())
    );
}
