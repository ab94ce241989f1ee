//! Aggregate literals and the literal validators.

use super::*;

fn opt_list(elements: Vec<Expr>, optional_indices: Vec<u32>) -> Expr {
    node(ExprKind::List {
        elements,
        optional_indices,
    })
}

#[test]
fn homogeneous_lists_and_maps_type_by_their_elements() {
    assert_eq!(ok(list(vec![int(1), int(2)])), list_of(Type::Int));
    assert_eq!(ok(list(vec![])), list_of(Type::Dyn));
    assert_eq!(
        ok(map(vec![(string("a"), int(1)), (string("b"), ident("n"))])),
        map_of(Type::String, Type::Int)
    );
    assert_eq!(ok(map(vec![])), map_of(Type::Dyn, Type::Dyn));
    assert_eq!(ok(list(vec![null(), null()])), list_of(Type::Null));
    // An empty list takes the type of its neighbours.
    assert_eq!(
        ok(list(vec![list(vec![int(1)]), list(vec![])])),
        list_of(list_of(Type::Int))
    );
    assert_eq!(
        ok(call("_+_", vec![list(vec![]), list(vec![int(1)])])),
        list_of(Type::Int)
    );
    assert_eq!(
        ok(opt_list(
            vec![int(1), opt_select(spec(), "replicas")],
            vec![1]
        )),
        list_of(Type::Int)
    );
}

#[test]
fn mixed_literals_are_refused_as_cel_go_words_it() {
    let issues = check(&list(vec![int(1), at(string("a"), 4)]), &env()).unwrap_err();
    assert_eq!(
        issues,
        vec![Issue {
            offset: 4,
            message: "expected type 'int' but found 'string'".to_string()
        }]
    );
    // The validator compares exactly: dyn differs from int too.
    assert_eq!(
        error(list(vec![int(1), ident("x")])),
        "expected type 'int' but found 'dyn'"
    );
    assert_eq!(
        errors(map(vec![(string("a"), int(1)), (int(2), string("b"))])),
        vec![
            "expected type 'string' but found 'int'",
            "expected type 'int' but found 'string'"
        ]
    );
    assert_eq!(
        error(list(vec![list(vec![int(1)]), list(vec![double(1.0)])])),
        "expected type 'list(int)' but found 'list(double)'"
    );
}

#[test]
fn lists_inside_format_calls_may_mix() {
    let expr = method(
        string("%s %d"),
        "format",
        vec![list(vec![ident("s"), ident("n")])],
    );
    assert_eq!(ok(expr), Type::String);
}

#[test]
fn optional_entries_must_be_optional() {
    assert_eq!(
        error(opt_list(vec![int(1), int(2)], vec![1])),
        "expected type 'optional_type(int)' but found 'int'"
    );
}

#[test]
fn duration_literals_must_parse() {
    assert_eq!(ok(call("duration", vec![string("1h30m")])), Type::Duration);
    assert_eq!(ok(call("duration", vec![string("-1.5s")])), Type::Duration);
    assert_eq!(ok(call("duration", vec![string("300ms")])), Type::Duration);
    let issues = check(&call("duration", vec![at(string("1 hour"), 9)]), &env()).unwrap_err();
    assert_eq!(
        issues,
        vec![Issue {
            offset: 9,
            message: "invalid duration argument".to_string()
        }]
    );
    assert_eq!(
        error(call("duration", vec![string("")])),
        "invalid duration argument"
    );
    assert_eq!(
        error(call("duration", vec![string("1d")])),
        "invalid duration argument"
    );
    assert_eq!(
        error(call("duration", vec![string("3000000h")])),
        "invalid duration argument"
    );
    // Not a literal: checked when evaluated.
    assert_eq!(ok(call("duration", vec![ident("s")])), Type::Duration);
}

#[test]
fn timestamp_literals_must_parse() {
    assert_eq!(
        ok(call("timestamp", vec![string("2024-01-01T00:00:00Z")])),
        Type::Timestamp
    );
    assert_eq!(
        error(call("timestamp", vec![string("2024-01-01")])),
        "invalid timestamp argument"
    );
    assert_eq!(
        error(call("timestamp", vec![string("2024-01-01 00:00:00Z")])),
        "invalid timestamp argument"
    );
    assert_eq!(
        error(call("timestamp", vec![string("2024-01-01T00:00:00")])),
        "invalid timestamp argument"
    );
    assert_eq!(
        ok(call(
            "timestamp",
            vec![string("2024-01-01T00:00:00.5+02:00")]
        )),
        Type::Timestamp
    );
    assert_eq!(
        error(call("timestamp", vec![int(300_000_000_000)])),
        "invalid timestamp argument"
    );
}

#[test]
fn regex_literals_must_compile() {
    assert_eq!(
        ok(method(ident("s"), "matches", vec![string("^[a-z]+$")])),
        Type::Bool
    );
    assert_eq!(
        error(method(ident("s"), "matches", vec![string("[a-z")])),
        "invalid matches argument"
    );
}

#[test]
fn validators_run_only_on_expressions_that_check() {
    assert_eq!(
        errors(call(
            "_&&_",
            vec![
                call(
                    "_==_",
                    vec![call("duration", vec![string("x")]), ident("nope")]
                ),
                boolean(true)
            ]
        )),
        vec!["undeclared reference to 'nope' (in container '')"]
    );
}
