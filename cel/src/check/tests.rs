//! Tests of the checker, on expressions built by hand as the parser builds them (operators are
//! calls, macros are comprehensions); messages are cel-go's.

mod comprehensions;
mod library;
mod literals;
mod operators;
mod source;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use super::{check, check_ast};
use crate::ast::{ACCUMULATOR, Comprehension, Expr, ExprKind, Literal, MapEntry};
use crate::{Env, Issue, ObjectType, Type};

static NEXT_ID: AtomicU32 = AtomicU32::new(1);

fn node(kind: ExprKind) -> Expr {
    Expr {
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        offset: 0,
        kind,
    }
}

/// `expr` reported at byte `offset`.
fn at(mut expr: Expr, offset: u32) -> Expr {
    expr.offset = offset;
    expr
}

fn int(v: i64) -> Expr {
    node(ExprKind::Literal(Literal::Int(v)))
}
fn uint(v: u64) -> Expr {
    node(ExprKind::Literal(Literal::Uint(v)))
}
fn double(v: f64) -> Expr {
    node(ExprKind::Literal(Literal::Double(v)))
}
fn boolean(v: bool) -> Expr {
    node(ExprKind::Literal(Literal::Bool(v)))
}
fn string(v: &str) -> Expr {
    node(ExprKind::Literal(Literal::String(Arc::from(v))))
}
fn bytes(v: &[u8]) -> Expr {
    node(ExprKind::Literal(Literal::Bytes(Arc::from(v))))
}
fn null() -> Expr {
    node(ExprKind::Literal(Literal::Null))
}
fn ident(name: &str) -> Expr {
    node(ExprKind::Ident(Arc::from(name)))
}
fn select(operand: Expr, field: &str) -> Expr {
    node(ExprKind::Select {
        operand: Box::new(operand),
        field: Arc::from(field),
        test_only: false,
        optional: false,
    })
}
/// `has(operand.field)`.
fn has(operand: Expr, field: &str) -> Expr {
    node(ExprKind::Select {
        operand: Box::new(operand),
        field: Arc::from(field),
        test_only: true,
        optional: false,
    })
}
/// `operand.?field`.
fn opt_select(operand: Expr, field: &str) -> Expr {
    node(ExprKind::Select {
        operand: Box::new(operand),
        field: Arc::from(field),
        test_only: false,
        optional: true,
    })
}
/// A global call or operator: `f(args)`, `_+_`.
fn call(function: &str, args: Vec<Expr>) -> Expr {
    node(ExprKind::Call {
        target: None,
        function: Arc::from(function),
        args,
    })
}
/// `target.f(args)`.
fn method(target: Expr, function: &str, args: Vec<Expr>) -> Expr {
    node(ExprKind::Call {
        target: Some(Box::new(target)),
        function: Arc::from(function),
        args,
    })
}
fn list(elements: Vec<Expr>) -> Expr {
    node(ExprKind::List {
        elements,
        optional_indices: Vec::new(),
    })
}
fn map(entries: Vec<(Expr, Expr)>) -> Expr {
    node(ExprKind::Map {
        entries: entries
            .into_iter()
            .map(|(key, value)| MapEntry {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                key,
                value,
                optional: false,
            })
            .collect(),
    })
}
fn accu() -> Expr {
    ident(ACCUMULATOR)
}
fn fold(
    var: &str,
    var2: Option<&str>,
    range: Expr,
    init: Expr,
    condition: Expr,
    step: Expr,
    result: Expr,
) -> Expr {
    node(ExprKind::Comprehension(Box::new(Comprehension {
        iter_var: Arc::from(var),
        iter_var2: var2.map(Arc::from),
        iter_range: range,
        accu_var: Arc::from(ACCUMULATOR),
        accu_init: init,
        loop_condition: condition,
        loop_step: step,
        result,
    })))
}
/// `range.all(var, predicate)` as cel-go expands it.
fn all(range: Expr, var: &str, predicate: Expr) -> Expr {
    fold(
        var,
        None,
        range,
        boolean(true),
        call("@not_strictly_false", vec![accu()]),
        call("_&&_", vec![accu(), predicate]),
        accu(),
    )
}
/// `range.exists(var, predicate)`.
fn exists(range: Expr, var: &str, predicate: Expr) -> Expr {
    fold(
        var,
        None,
        range,
        boolean(false),
        call("@not_strictly_false", vec![call("!_", vec![accu()])]),
        call("_||_", vec![accu(), predicate]),
        accu(),
    )
}
/// `range.map(var, f)`.
fn map_macro(range: Expr, var: &str, f: Expr) -> Expr {
    fold(
        var,
        None,
        range,
        list(vec![]),
        boolean(true),
        call("_+_", vec![accu(), list(vec![f])]),
        accu(),
    )
}
/// `range.filter(var, predicate)`.
fn filter(range: Expr, var: &str, predicate: Expr) -> Expr {
    fold(
        var,
        None,
        range,
        list(vec![]),
        boolean(true),
        call(
            "_?_:_",
            vec![
                predicate,
                call("_+_", vec![accu(), list(vec![ident(var)])]),
                accu(),
            ],
        ),
        accu(),
    )
}

fn object(name: &str, fields: Vec<(&str, Type)>) -> Type {
    Type::Object(Arc::new(ObjectType {
        name: name.to_string(),
        fields: fields
            .into_iter()
            .map(|(n, t)| (Arc::from(n), t))
            .collect::<BTreeMap<_, _>>(),
    }))
}
fn list_of(t: Type) -> Type {
    Type::List(Box::new(t))
}
fn map_of(k: Type, v: Type) -> Type {
    Type::Map(Box::new(k), Box::new(v))
}

/// `self`: an object with nested objects, lists and maps, as a CRD schema makes it.
fn env() -> Env {
    let item = object(
        "self.items.@idx",
        vec![("name", Type::String), ("port", Type::Int)],
    );
    let spec = object(
        "self.spec",
        vec![
            ("replicas", Type::Int),
            ("name", Type::String),
            ("items", list_of(item.clone())),
            ("labels", map_of(Type::String, Type::String)),
            ("byName", map_of(Type::String, item)),
            ("any", Type::Dyn),
            ("ratio", Type::Double),
            ("ttl", Type::Duration),
            ("created", Type::Timestamp),
            ("tags", list_of(Type::String)),
            ("counts", list_of(Type::Int)),
            ("size", Type::String),
        ],
    );
    Env::new()
        .variable(
            "self",
            object("self", vec![("spec", spec), ("kind", Type::String)]),
        )
        .variable("n", Type::Int)
        .variable("u", Type::Uint)
        .variable("d", Type::Double)
        .variable("s", Type::String)
        .variable("b", Type::Bool)
        .variable("x", Type::Dyn)
}

fn spec() -> Expr {
    select(ident("self"), "spec")
}

fn ok(expr: Expr) -> Type {
    match check(&expr, &env()) {
        Ok(t) => t,
        Err(issues) => panic!("unexpected issues: {issues:?}"),
    }
}

fn errors(expr: Expr) -> Vec<String> {
    match check(&expr, &env()) {
        Ok(t) => panic!("checked as {t}, expected issues"),
        Err(issues) => issues.into_iter().map(|i| i.message).collect(),
    }
}

fn error(expr: Expr) -> String {
    let all = errors(expr);
    assert_eq!(all.len(), 1, "{all:?}");
    all.into_iter().next().unwrap_or_default()
}

#[test]
fn literals_have_their_types() {
    assert_eq!(ok(int(1)), Type::Int);
    assert_eq!(ok(uint(1)), Type::Uint);
    assert_eq!(ok(double(1.5)), Type::Double);
    assert_eq!(ok(boolean(true)), Type::Bool);
    assert_eq!(ok(string("a")), Type::String);
    assert_eq!(ok(bytes(b"a")), Type::Bytes);
    assert_eq!(ok(null()), Type::Null);
}

#[test]
fn declared_variables_and_undeclared_references() {
    assert_eq!(ok(ident("n")), Type::Int);
    assert_eq!(ok(ident("x")), Type::Dyn);
    let issues = check(&at(ident("oldSelf"), 3), &env()).unwrap_err();
    assert_eq!(
        issues,
        vec![Issue {
            offset: 3,
            message: "undeclared reference to 'oldSelf' (in container '')".to_string()
        }]
    );
}

#[test]
fn type_names_are_type_values() {
    assert_eq!(ok(ident("int")), Type::Type(Box::new(Type::Int)));
    assert_eq!(ok(ident("null_type")), Type::Type(Box::new(Type::Null)));
    assert_eq!(
        ok(select(select(ident("google"), "protobuf"), "Duration")),
        Type::Type(Box::new(Type::Duration))
    );
    assert_eq!(
        ok(call(
            "_==_",
            vec![call("type", vec![ident("n")]), ident("int")]
        )),
        Type::Bool
    );
    assert_eq!(
        ok(select(ident("net"), "IP")),
        Type::Type(Box::new(Type::Opaque("net.IP")))
    );
}

#[test]
fn fields_through_nested_objects_maps_and_lists() {
    assert_eq!(ok(select(spec(), "replicas")), Type::Int);
    assert_eq!(
        ok(select(
            call("_[_]", vec![select(spec(), "items"), int(0)]),
            "port"
        )),
        Type::Int
    );
    assert_eq!(
        ok(select(select(select(spec(), "byName"), "web"), "name")),
        Type::String
    );
    assert_eq!(
        ok(call("_[_]", vec![select(spec(), "labels"), string("app")])),
        Type::String
    );
    assert_eq!(ok(select(select(spec(), "any"), "whatever")), Type::Dyn);
    assert_eq!(ok(select(ident("x"), "y")), Type::Dyn);
}

#[test]
fn undefined_fields_are_reported_where_they_are_selected() {
    let issues = check(&at(select(spec(), "replica"), 9), &env()).unwrap_err();
    assert_eq!(
        issues,
        vec![Issue {
            offset: 9,
            message: "undefined field 'replica'".to_string()
        }]
    );
    assert_eq!(
        error(select(
            call("_[_]", vec![select(spec(), "items"), int(0)]),
            "host"
        )),
        "undefined field 'host'"
    );
}

#[test]
fn selection_on_a_scalar_is_refused() {
    assert_eq!(
        error(select(select(spec(), "replicas"), "value")),
        "type 'int' does not support field selection"
    );
    assert_eq!(
        error(select(select(spec(), "ttl"), "seconds")),
        "type 'duration' does not support field selection"
    );
}

#[test]
fn has_checks_the_field_and_is_bool() {
    assert_eq!(ok(has(spec(), "replicas")), Type::Bool);
    assert_eq!(ok(has(select(spec(), "labels"), "app")), Type::Bool);
    assert_eq!(error(has(spec(), "nope")), "undefined field 'nope'");
    assert_eq!(
        error(has(ident("n"), "nope")),
        "type 'int' does not support field selection"
    );
}

#[test]
fn optional_selection_and_index() {
    let opt = |t| Type::Optional(Box::new(t));
    assert_eq!(ok(opt_select(spec(), "replicas")), opt(Type::Int));
    assert_eq!(
        ok(select(opt_select(ident("self"), "spec"), "name")),
        opt(Type::String)
    );
    assert_eq!(
        ok(method(
            opt_select(spec(), "replicas"),
            "orValue",
            vec![int(1)]
        )),
        Type::Int
    );
    assert_eq!(
        ok(call("_[?_]", vec![select(spec(), "labels"), string("a")])),
        opt(Type::String)
    );
    assert_eq!(
        ok(call("_[?_]", vec![select(spec(), "tags"), int(0)])),
        opt(Type::String)
    );
    assert_eq!(
        ok(method(ident("optional"), "of", vec![int(1)])),
        opt(Type::Int)
    );
    assert_eq!(
        ok(method(
            method(ident("optional"), "none", vec![]),
            "or",
            vec![opt_select(spec(), "replicas")]
        )),
        opt(Type::Int)
    );
    assert_eq!(
        ok(method(opt_select(spec(), "name"), "hasValue", vec![])),
        Type::Bool
    );
    assert_eq!(
        error(method(opt_select(spec(), "name"), "orValue", vec![int(1)])),
        "found no matching overload for 'orValue' applied to \
         'optional_type(string).(int)'"
    );
}

#[test]
fn all_issues_are_collected_in_source_order() {
    let expr = call(
        "_&&_",
        vec![
            at(select(spec(), "nope"), 10),
            call("_==_", vec![at(ident("missing"), 2), int(1)]),
        ],
    );
    let issues = check(&expr, &env()).unwrap_err();
    let offsets: Vec<u32> = issues.iter().map(|i| i.offset).collect();
    assert_eq!(offsets, vec![2, 10]);
}

#[test]
fn message_construction_is_refused() {
    let expr = node(ExprKind::Struct {
        type_name: Arc::from("Foo"),
        fields: Vec::new(),
    });
    assert_eq!(
        error(expr),
        "undeclared reference to 'Foo' (in container '')"
    );
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let mut expr = int(1);
    for _ in 0..5000 {
        expr = call("-_", vec![expr]);
    }
    let issues = check(&expr, &env()).unwrap_err();
    assert_eq!(issues.len(), 1);
    assert_eq!(issues[0].message, "expression nesting exceeds the limit");
    // Dropping a deep tree recurses too: take it apart iteratively.
    let mut expr = Some(expr);
    while let Some(e) = expr.take() {
        if let ExprKind::Call { mut args, .. } = e.kind {
            expr = args.pop();
        }
    }
}

#[test]
fn every_node_gets_a_type_and_every_call_its_overloads() {
    let add = call("_+_", vec![ident("n"), int(1)]);
    let id = add.id;
    let checked = check_ast(&add, &env()).unwrap();
    assert_eq!(checked.types.len(), 3);
    assert_eq!(checked.types.get(&id), Some(&Type::Int));
    assert_eq!(checked.overloads.get(&id), Some(&vec!["add_int64"]));
    let dyn_add = call("_+_", vec![ident("x"), ident("x")]);
    let id = dyn_add.id;
    let checked = check_ast(&dyn_add, &env()).unwrap();
    let ids = checked.overloads.get(&id).cloned().unwrap_or_default();
    assert!(
        ids.contains(&"add_int64") && ids.contains(&"add_list"),
        "{ids:?}"
    );
}

#[test]
fn deep_nesting_through_every_kind_of_node_is_an_error() {
    let mut expr = ident("n");
    for i in 0..3000 {
        expr = match i % 5 {
            0 => list(vec![expr]),
            1 => call("_[_]", vec![expr, int(0)]),
            2 => map_macro(ident("x"), "v", expr),
            3 => map(vec![(string("k"), expr)]),
            _ => select(expr, "k"),
        };
    }
    let issues = check(&expr, &env()).unwrap_err();
    assert_eq!(issues.len(), 1, "{issues:?}");
    assert_eq!(issues[0].message, "expression nesting exceeds the limit");
    std::mem::forget(expr);
}

#[test]
fn at_most_a_hundred_issues_are_kept() {
    let mut expr = at(ident("missing0"), 0);
    for i in 1..150u32 {
        expr = call("_+_", vec![expr, at(ident(&format!("missing{i}")), i)]);
    }
    let issues = check(&expr, &env()).unwrap_err();
    assert_eq!(issues.len(), 100);
    assert_eq!(
        issues[99].message,
        "undeclared reference to 'missing99' (in container '')"
    );
}

#[test]
fn the_deepest_expressions_the_parser_accepts_check() {
    let e = env();
    for source in [
        format!("{}1{}", "[".repeat(249), "]".repeat(249)),
        format!("{}true{}", "[1].all(x, ".repeat(120), ")".repeat(120)),
        format!("{}1{}", "{1: ".repeat(240), "}".repeat(240)),
        format!("{}1", "true ? 1 : ".repeat(240)),
        format!("self{}", ".spec".repeat(240)),
    ] {
        let result = crate::Program::compile(&e, &source);
        if source.starts_with("self") {
            // Not a nesting error: the first missing field.
            let err = result.err().map(|err| err.issues[0].message.clone());
            assert_eq!(err.as_deref(), Some("undefined field 'spec'"));
        } else {
            assert!(result.is_ok(), "{}", &source[..20]);
        }
    }
}

#[test]
fn wide_expressions_near_the_size_limit_check() {
    let wide = [
        vec!["[self.spec.name, 'a'][0] == 'a'"; 2800].join(" || "),
        format!("[{}]", vec!["[]"; 30000].join(",")),
        format!("[{}]", vec!["[[], [1]]"; 9000].join(",")),
    ];
    for source in &wide {
        let program = crate::Program::compile(&env(), source);
        assert!(program.is_ok(), "{}", &source[..40]);
    }
}
