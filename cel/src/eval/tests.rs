//! Tests of the interpreter's semantics through source text: operators, short-circuits,
//! comprehensions, selection, indexing, optionals and variables.

use std::sync::Arc;

use crate::ast::{Expr, ExprKind, Literal};
use crate::{Activation, Budget, EvalError, Key, Map, Value};

/// Evaluates `source` with `activation` and a large budget.
pub(super) fn eval_with(source: &str, activation: &Activation) -> Result<Value, EvalError> {
    let expr = crate::parse::parse(source).unwrap_or_else(|e| panic!("{source}: {e:?}"));
    super::eval(&expr, activation, &mut Budget::new(u64::MAX))
}

pub(super) fn eval(source: &str) -> Result<Value, EvalError> {
    eval_with(source, &Activation::new())
}

/// Asserts `source` evaluates to a value equal (by CEL's `==`, and of the same type) to
/// `expected`.
#[track_caller]
pub(super) fn check(source: &str, expected: Value) {
    let got = eval(source).unwrap_or_else(|e| panic!("{source}: {e}"));
    assert!(
        got.equals(&expected) && got.type_name() == expected.type_name(),
        "{source}: got {got:?}, want {expected:?}"
    );
}

#[track_caller]
pub(super) fn check_true(source: &str) {
    check(source, Value::Bool(true));
}

#[track_caller]
pub(super) fn check_error(source: &str, message: &str) {
    match eval(source) {
        Err(EvalError::Runtime(got)) => assert_eq!(got, message, "{source}"),
        other => panic!("{source}: got {other:?}, want error {message:?}"),
    }
}

pub(super) fn map(entries: &[(&str, Value)]) -> Value {
    let mut map = Map::default();
    for (k, v) in entries {
        map.entries.insert(Key::String(Arc::from(*k)), v.clone());
    }
    Value::Map(Arc::new(map))
}

#[test]
fn literals_and_arithmetic() {
    check("1 + 2 * 3", Value::Int(7));
    check("7 / 2", Value::Int(3));
    check("-7 % 3", Value::Int(-1));
    check("7u / 2u", Value::Uint(3));
    check("1.5 + 2.0", Value::Double(3.5));
    check("-(3)", Value::Int(-3));
    check("'ab' + 'cd'", Value::string("abcd"));
    check("b'ab' + b'c'", Value::Bytes(Arc::from(&b"abc"[..])));
    check(
        "[1] + [2, 3]",
        Value::list(vec![1.into(), 2.into(), 3.into()]),
    );
    check("null", Value::Null);
}

#[test]
fn integer_errors_are_cel_gos() {
    check_error("9223372036854775807 + 1", "integer overflow");
    check_error("-9223372036854775808 - 1", "integer overflow");
    check_error("-(-9223372036854775808)", "integer overflow");
    check_error("-9223372036854775808 / -1", "integer overflow");
    check_error("-9223372036854775808 % -1", "integer overflow");
    check_error("4611686018427387904 * 2", "integer overflow");
    check_error("0u - 1u", "unsigned integer overflow");
    check_error("18446744073709551615u + 1u", "unsigned integer overflow");
    check_error("1 / 0", "division by zero");
    check_error("1 % 0", "modulus by zero");
    check_error("1u / 0u", "division by zero");
    check_error("1u % 0u", "modulus by zero");
    check("1.0 / 0.0", Value::Double(f64::INFINITY));
}

#[test]
fn mixed_types_have_no_overload() {
    check_error("1 + 1u", "no such overload");
    check_error("1 + 'a'", "no such overload");
    check_error("'a' < 1", "no such overload");
    check_error("[1] < [2]", "no such overload");
    check_error("!1", "no such overload");
    check_error("-'a'", "no such overload");
    check_error("1.0 < double('NaN')", "NaN values cannot be ordered");
}

#[test]
fn equality_and_ordering() {
    check_true("1 == 1.0 && 1u == 1 && 1 != 2");
    check_true("[1, 2] == [1.0, 2u]");
    check_true("{'a': 1} == {'a': 1.0}");
    check_true("1 != 'a' && null == null && 'a' != null");
    check_true("1 < 2u && 2.5 > 2 && 'a' < 'b' && b'a' <= b'a' && false < true");
    check_true("-1 < 0u && 18446744073709551615u > 9223372036854775807");
    check_true("duration('1s') < duration('2s')");
    check_true("timestamp('2024-01-01T00:00:00Z') >= timestamp('2023-01-01T00:00:00Z')");
}

#[test]
fn and_or_absorb_errors_on_either_side() {
    check("false && 1 / 0 == 1", Value::Bool(false));
    check("1 / 0 == 1 && false", Value::Bool(false));
    check("true || 1 / 0 == 1", Value::Bool(true));
    check("1 / 0 == 1 || true", Value::Bool(true));
    check_error("true && 1 / 0 == 1", "division by zero");
    check_error("1 / 0 == 1 || false", "division by zero");
    check_error("1 / 0 == 1 && 1 % 0 == 1", "division by zero");
    check("true && true", Value::Bool(true));
    check("false || false", Value::Bool(false));
    check_error("true && 1", "no such overload");
    check("false && 1", Value::Bool(false));
}

#[test]
fn conditional_evaluates_one_branch() {
    check("true ? 1 : 1 / 0", Value::Int(1));
    check("false ? 1 / 0 : 2", Value::Int(2));
    check_error("1 / 0 == 0 ? 1 : 2", "division by zero");
    check_error("1 ? 1 : 2", "no such overload");
}

#[test]
fn not_strictly_false_is_true_on_errors() {
    let not_strictly_false = |arg: Expr| Expr {
        id: 1,
        offset: 0,
        kind: ExprKind::Call {
            target: None,
            function: Arc::from("@not_strictly_false"),
            args: vec![arg],
        },
    };
    let lit = |l: Literal| Expr {
        id: 2,
        offset: 0,
        kind: ExprKind::Literal(l),
    };
    let run = |e: Expr| super::eval(&e, &Activation::new(), &mut Budget::new(100));
    let error = crate::parse::parse("1 / 0").unwrap();
    assert!(
        run(not_strictly_false(lit(Literal::Bool(false))))
            .unwrap()
            .equals(&false.into())
    );
    assert!(
        run(not_strictly_false(lit(Literal::Bool(true))))
            .unwrap()
            .equals(&true.into())
    );
    assert!(run(not_strictly_false(error)).unwrap().equals(&true.into()));
    assert!(
        run(not_strictly_false(lit(Literal::Int(1))))
            .unwrap()
            .equals(&true.into())
    );
}

#[test]
fn comprehensions_over_lists() {
    check_true("[1, 2, 3].all(x, x > 0)");
    check("[1, 2, 3].all(x, x > 1)", Value::Bool(false));
    check_true("[1, 2, 3].exists(x, x == 2)");
    check_true("[1, 2, 3].exists_one(x, x > 2)");
    check("[1, 2, 3].exists_one(x, x > 1)", Value::Bool(false));
    check(
        "[1, 2, 3].map(x, x * 2)",
        Value::list(vec![2.into(), 4.into(), 6.into()]),
    );
    check(
        "[1, 2, 3].map(x, x > 1, x * 2)",
        Value::list(vec![4.into(), 6.into()]),
    );
    check(
        "[1, 2, 3, 4].filter(x, x % 2 == 0)",
        Value::list(vec![2.into(), 4.into()]),
    );
    check("[].all(x, false)", Value::Bool(true));
    check("[].exists(x, true)", Value::Bool(false));
    check(
        "[[1], [2, 3]].map(l, l.map(x, x + 1))",
        Value::list(vec![
            Value::list(vec![2.into()]),
            Value::list(vec![3.into(), 4.into()]),
        ]),
    );
}

#[test]
fn quantifiers_absorb_errors_like_and_or() {
    // cel-spec: `all` is false if any element is false, whatever errors others give.
    check("[0, 1].all(x, 1 / x > 1)", Value::Bool(false));
    check("[1, 0].all(x, 1 / x > 1)", Value::Bool(false));
    check("[0, 1].exists(x, 1 / x == 1)", Value::Bool(true));
    check_error("[0, 2].all(x, 1 / x < 1)", "division by zero");
    check_error("[1, 0].map(x, 1 / x)", "division by zero");
    check_error("[1, 0].filter(x, 1 / x == 1)", "division by zero");
}

#[test]
fn two_variable_comprehensions() {
    check_true("[10, 20].all(i, v, v == (i + 1) * 10)");
    check_true("{'a': 1, 'b': 2}.all(k, v, (k == 'a' && v == 1) || (k == 'b' && v == 2))");
    check_true("['a', 'b'].exists(i, v, i == 1 && v == 'b')");
    check_true("{'a': 1, 'b': 2}.exists_one(k, v, v == 2)");
    check(
        "[5, 6].transformList(i, v, i * v)",
        Value::list(vec![0.into(), 6.into()]),
    );
    check(
        "{'a': 1, 'b': 2}.transformMap(k, v, v > 1, v * 10)",
        map(&[("b", Value::Int(20))]),
    );
}

#[test]
fn transforms_build_maps() {
    check(
        "{'a': 1, 'b': 2}.transformMap(k, v, v + 1)",
        map(&[("a", Value::Int(2)), ("b", Value::Int(3))]),
    );
    check(
        "[1, 2].transformMapEntry(i, v, {string(v): i})",
        map(&[("1", Value::Int(0)), ("2", Value::Int(1))]),
    );
    check_error(
        "[1, 1].transformMapEntry(i, v, {string(v): i})",
        "insert failed: key 1 already exists",
    );
    check(
        "{'a': 1}.transformMapEntry(k, v, v > 5, {k: v})",
        Value::Map(Arc::new(Map::default())),
    );
    let big = Value::list((0..20_000).map(Value::Int).collect());
    let activation = Activation::new().bind("l", big);
    let got = eval_with("l.transformMap(i, v, v * 2)[19999] == 39998", &activation).unwrap();
    assert!(got.equals(&true.into()));
}

#[test]
fn comprehensions_over_maps_iterate_keys() {
    let m = map(&[("a", Value::Int(1)), ("b", Value::Int(2))]);
    let activation = Activation::new().bind("m", m);
    let got = eval_with("m.map(k, k)", &activation).unwrap();
    assert!(got.equals(&Value::list(vec!["a".into(), "b".into()])));
    let got = eval_with("m.filter(k, m[k] > 1)", &activation).unwrap();
    assert!(got.equals(&Value::list(vec!["b".into()])));
    let got = eval_with("m.all(k, k in m)", &activation).unwrap();
    assert!(got.equals(&true.into()));
}

#[test]
fn comprehension_variables_shadow_and_unwind() {
    let activation = Activation::new().bind("x", Value::Int(100));
    let got = eval_with("[1, 2].map(x, x) + [x]", &activation).unwrap();
    assert!(got.equals(&Value::list(vec![1.into(), 2.into(), 100.into()])));
    check_true("[1, 2].all(x, [3].all(x, x == 3) && x < 3)");
}

#[test]
fn select_on_maps() {
    let obj = map(&[("spec", map(&[("replicas", Value::Int(3))]))]);
    let activation = Activation::new().bind("self", obj);
    let run = |s: &str| eval_with(s, &activation);
    assert!(run("self.spec.replicas").unwrap().equals(&Value::Int(3)));
    assert_eq!(
        run("self.status").unwrap_err(),
        EvalError::Runtime("no such key: status".to_string())
    );
    assert!(run("has(self.spec)").unwrap().equals(&true.into()));
    assert!(run("has(self.status)").unwrap().equals(&false.into()));
    assert!(run("has(self.spec.replicas)").unwrap().equals(&true.into()));
    assert!(
        run("self.?spec.?replicas.orValue(0) == 3")
            .unwrap()
            .equals(&true.into())
    );
    assert!(
        run("self.?status.?phase.orValue('none')")
            .unwrap()
            .equals(&"none".into())
    );
    assert!(
        run("self.?status.phase.hasValue()")
            .unwrap()
            .equals(&false.into())
    );
    assert!(
        run("self['spec']['replicas'] == 3")
            .unwrap()
            .equals(&true.into())
    );
    assert_eq!(
        run("self.spec.replicas.foo").unwrap_err(),
        EvalError::Runtime("no such key: foo".to_string())
    );
}

#[test]
fn indexing_lists_and_maps() {
    check("[1, 2, 3][1]", Value::Int(2));
    check("[1, 2, 3][1u]", Value::Int(2));
    check("[1, 2, 3][2.0]", Value::Int(3));
    check_error("[1, 2, 3][3]", "index out of bounds: 3");
    check_error("[1, 2, 3][-1]", "index out of bounds: -1");
    check_error("[1][1.5]", "unsupported index value 1.5 in list");
    check_error("[1]['a']", "unsupported index type 'string' in list");
    check("{1: 'a'}[1u]", Value::string("a"));
    check("{1u: 'a'}[1.0]", Value::string("a"));
    check_error("{'a': 1}['b']", "no such key: b");
    check_error("{'a': 1}[[1]]", "unsupported key type: list");
    check_true("[1, 2][?1] == optional.of(2)");
    check_true("[1, 2][?5] == optional.none()");
    check_true("{'a': 1}[?'b'].orValue(7) == 7");
}

#[test]
fn error_messages_show_at_most_a_thousand_characters_of_a_value() {
    let activation = Activation::new()
        .bind("m", map(&[]))
        .bind("big", Value::string(&"k".repeat(100_000)));
    match eval_with("m[big]", &activation) {
        Err(EvalError::Runtime(message)) => {
            assert!(message.starts_with("no such key: kkk") && message.ends_with("..."));
            assert!(message.len() < 1100, "{}", message.len());
        }
        other => panic!("{other:?}"),
    }
    check_error(
        "[?[1, 'a', {'b': 2.5}]]",
        "cannot initialize optional list element from non-optional value [1, a, {b: 2.5}]",
    );
}

#[test]
fn membership() {
    check_true("2 in [1, 2, 3] && 2u in [1, 2.0] && !(4 in [1, 2])");
    check_true("'a' in {'a': 1} && !('b' in {'a': 1}) && 1u in {1: true}");
    check("[1] in {'a': 1}", Value::Bool(false));
    check_error("1 in 1", "no such overload");
}

#[test]
fn optional_library() {
    check_true("optional.of(1).hasValue() && !optional.none().hasValue()");
    check("optional.of(1).value()", Value::Int(1));
    check_error("optional.none().value()", "optional.none() dereference");
    check("optional.none().orValue(2)", Value::Int(2));
    check("optional.of(1).orValue(1 / 0)", Value::Int(1));
    check_true("optional.none().or(optional.of(3)) == optional.of(3)");
    check_true("optional.of(1).or(optional.of(1 / 0)) == optional.of(1)");
    check_true("!optional.ofNonZeroValue(0).hasValue() && !optional.ofNonZeroValue('').hasValue()");
    check_true("optional.ofNonZeroValue([1]).hasValue()");
    check("optional.of(2).optMap(x, x * 3).value()", Value::Int(6));
    check_true("!optional.none().optMap(x, x * 3).hasValue()");
    check(
        "optional.of(2).optFlatMap(x, optional.of(x + 1)).value()",
        Value::Int(3),
    );
}

#[test]
fn optional_literal_elements() {
    check(
        "[1, ?optional.of(2), ?optional.none()]",
        Value::list(vec![1.into(), 2.into()]),
    );
    check(
        "{'a': 1, ?'b': optional.none()}",
        map(&[("a", Value::Int(1))]),
    );
    check("{?'b': optional.of(2)}", map(&[("b", Value::Int(2))]));
    check("{'a': 1, 'a': 2}", map(&[("a", Value::Int(2))]));
    check("{'a': 1, ?'a': optional.none()}", map(&[]));
    check_error(
        "[?1]",
        "cannot initialize optional list element from non-optional value 1",
    );
    check_error(
        "{?'a': 1}",
        "cannot initialize optional entry 'a' from non-optional value 1",
    );
}

#[test]
fn variables_and_type_names() {
    let activation = Activation::new().bind("self", Value::Int(3));
    assert!(
        eval_with("self + 1", &activation)
            .unwrap()
            .equals(&Value::Int(4))
    );
    check_error("missing", "no such attribute(s): missing");
    check_true("type(1) == int && type('a') == string && type(1u) == uint");
    check_true("type(duration('1s')) == google.protobuf.Duration");
    check_true("type(timestamp(0)) == google.protobuf.Timestamp");
    check_true("type([]) == list && type({}) == map && type(null) == null_type");
    check_true("type(int) == type && type(true) == bool && type(b'') == bytes");
    check_true("type(1.0) == double && int != uint");
}

#[test]
fn programs_evaluate_through_the_public_api() {
    let env = crate::Env::new().variable("self", crate::Type::Dyn);
    let program = crate::Program::compile(&env, "self.x > 1 && !has(self.y)")
        .unwrap_or_else(|e| panic!("{e}"));
    let activation = Activation::new().bind("self", map(&[("x", Value::Int(2))]));
    let mut budget = Budget::new(100);
    assert!(
        program
            .eval(&activation, &mut budget)
            .unwrap()
            .equals(&true.into())
    );
    // `self`, `.x`, `>`; `self` (a presence test is free), `!`.
    assert_eq!(budget.remaining, 100 - 5);
    assert!(program.references("self") && !program.references("oldSelf"));
}

#[test]
fn references_finds_free_variables() {
    let refers =
        |source: &str, name: &str| super::references(&crate::parse::parse(source).unwrap(), name);
    assert!(refers("self.x == oldSelf.x", "oldSelf"));
    assert!(refers("has(oldSelf.x)", "oldSelf"));
    assert!(refers("self.all(x, x == oldSelf)", "oldSelf"));
    assert!(!refers("self.x == 1", "oldSelf"));
    assert!(!refers("self.all(oldSelf, oldSelf > 1)", "oldSelf"));
    assert!(refers("oldSelf.all(oldSelf, oldSelf > 1)", "oldSelf"));
    assert!(!refers("self.transformList(k, v, v).size() > 0", "v"));
    assert!(refers("self.map(k, v, v).size() > 0", "v"));
    assert!(refers("self.map(x, x + v)", "v"));
}

#[test]
fn selected_paths_are_the_chains_a_variable_is_read_through() {
    let paths = |source: &str| {
        crate::parse::parse(source)
            .unwrap()
            .selected_paths("object")
            .map(|paths| {
                let mut joined: Vec<String> = paths.iter().map(|p| p.join(".")).collect();
                joined.sort();
                joined
            })
    };
    assert_eq!(
        paths("has(object.metadata.labels) && 'team' in object.metadata.labels"),
        Some(vec!["metadata.labels".into(), "metadata.labels".into()])
    );
    assert_eq!(
        paths("object.data.all(k, object.data[k].size() < 4) && object.spec['x'].?y.hasValue()"),
        Some(vec!["data".into(), "data".into(), "spec.x.y".into()])
    );
    assert_eq!(paths("request.name == 'a'"), Some(vec![]));
    // Read whole, or through what is no chain of fields: everything.
    assert_eq!(paths("object == oldObject"), None);
    assert_eq!(paths("object.all(k, k != 'x')"), None);
    assert_eq!(paths("size(object) > 0"), None);
    assert_eq!(
        paths("object.spec.ports[0].port > 0"),
        Some(vec!["spec.ports".into()])
    );
    assert_eq!(paths("object[request.field] == 1"), None);
    // A comprehension variable of the same name is another variable.
    assert_eq!(
        paths("object.items.all(object, object > 1)"),
        Some(vec!["items".into()])
    );
}

#[test]
fn deep_expressions_evaluate_without_overflowing_the_stack() {
    let depth = 240;
    let source = format!("{}1{}", "(".repeat(depth), " + 1)".repeat(depth));
    check(&source, Value::Int(depth as i64 + 1));
    let source = format!("{}true{}", "[".repeat(200), "]".repeat(200));
    assert!(eval(&source).is_ok());
    // The parser's limit on nesting bounds the interpreter's recursion; expressions at that
    // limit evaluate on a thread with a small stack.
    let shapes = [
        ("[", "1", "]", 249),
        ("-(", "1", ")", 249),
        ("true ? (", "1", ") : 2", 249),
        ("{'a': ", "1", "}", 249),
        ("false || (", "true", ")", 249),
        ("int(", "1", ")", 249),
        ("[1].map(v, ", "1", ")", 100),
        ("optional.of(", "1", ").value()", 100),
    ];
    for (open, middle, close, depth) in shapes {
        let source = format!("{}{middle}{}", open.repeat(depth), close.repeat(depth));
        let worker = std::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(move || eval(&source).is_ok())
            .unwrap();
        assert!(worker.join().unwrap(), "{open}");
    }
    let nested = (0..100).fold("x".to_string(), |inner, i| {
        format!("[1].all(v{i}, {inner})")
    });
    assert!(
        eval_with(&nested, &Activation::new().bind("x", true.into()))
            .unwrap()
            .equals(&true.into())
    );
}

/// `source` parsed and planned, with variable `s` declared.
fn planned(source: &str) -> (Expr, super::plan::Plan) {
    let expr = crate::parse::parse(source).unwrap_or_else(|e| panic!("{source}: {e:?}"));
    let plan = super::Plan::for_activation(&expr, &Activation::new().bind("s", Value::Null));
    (expr, plan)
}

#[test]
fn literal_patterns_are_compiled_when_planning() {
    let (expr, plan) = planned("s.matches('^a+$')");
    let super::plan::Step::Call(callee) = plan.step(&expr) else {
        panic!("a call is planned as one");
    };
    let regex = callee
        .regex
        .as_ref()
        .expect("the literal pattern is compiled");
    assert!(regex.is_match("aaa") && !regex.is_match("ab"));
    // The global form too; a pattern that is no literal is found when called.
    let (expr, plan) = planned("matches(s, '^a+$')");
    assert!(matches!(plan.step(&expr), super::plan::Step::Call(c) if c.regex.is_some()));
    let (expr, plan) = planned("s.matches(s)");
    assert!(matches!(plan.step(&expr), super::plan::Step::Call(c) if c.regex.is_none()));

    let activation = Activation::new().bind("s", Value::string("aa"));
    assert!(matches!(
        eval_with(
            "s.matches('^a+$') && !s.matches('b') && matches(s, 'a')",
            &activation
        ),
        Ok(Value::Bool(true))
    ));
    let activation = Activation::new().bind("s", Value::string("a+"));
    assert!(matches!(
        eval_with("'aa'.matches(s)", &activation),
        Ok(Value::Bool(true))
    ));
}

#[test]
fn a_literal_pattern_that_does_not_compile_fails_when_evaluated() {
    // A compiled rule never holds one: the checker refuses it, as upstream's validators do.
    let env = crate::Env::new().variable("s", crate::Type::String);
    assert!(crate::Program::compile(&env, "s.matches('a(')").is_err());
    // Evaluated unchecked, it fails as cel-go's runtime reports it, when the call is reached.
    let (expr, plan) = planned("s.matches('a(')");
    assert!(matches!(plan.step(&expr), super::plan::Step::Call(c) if c.regex.is_none()));
    check_error(
        "'a'.matches('a(')",
        "error parsing regexp: missing closing ): `a(`",
    );
    check_true("true || 'a'.matches('a(')");
}

#[test]
fn expressions_reading_many_variables_see_each() {
    let mut activation = Activation::new();
    for (i, name) in ["a", "b", "c", "d", "e", "f"].iter().enumerate() {
        activation = activation.bind(name, Value::Int(i as i64));
    }
    assert!(matches!(
        eval_with("a + b + c + d + e + f", &activation),
        Ok(Value::Int(15))
    ));
    assert!(matches!(eval_with("f - a", &activation), Ok(Value::Int(5))));
}

#[test]
fn fields_of_small_and_large_maps_are_found() {
    for size in [1, 11, 12, 40] {
        let entries: Vec<(String, Value)> = (0..size)
            .map(|i| (format!("f{i}"), Value::Int(i)))
            .collect();
        let borrowed: Vec<(&str, Value)> = entries
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect();
        let activation = Activation::new().bind("self", map(&borrowed));
        let last = format!("self.f{} == {}", size - 1, size - 1);
        assert!(
            matches!(eval_with(&last, &activation), Ok(Value::Bool(true))),
            "{size}"
        );
        assert!(matches!(
            eval_with("self.f0 == 0 && !has(self.g)", &activation),
            Ok(Value::Bool(true))
        ));
        assert!(eval_with("self.g", &activation).is_err());
    }
    // Keys other than strings are no fields.
    let mut mixed = Map::default();
    mixed.entries.insert(Key::Int(1), Value::Int(1));
    mixed
        .entries
        .insert(Key::String(Arc::from("x")), Value::Int(2));
    assert!(matches!(mixed.field("x"), Some(Value::Int(2))));
    assert!(mixed.field("1").is_none());
}
