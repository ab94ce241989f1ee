//! The standard library's operators and functions.

use super::*;

#[test]
fn operators_resolve_their_overloads() {
    let add = |a, b| call("_+_", vec![a, b]);
    assert_eq!(ok(add(int(1), int(2))), Type::Int);
    assert_eq!(ok(add(uint(1), uint(2))), Type::Uint);
    assert_eq!(ok(add(double(1.0), ident("d"))), Type::Double);
    assert_eq!(ok(add(string("a"), ident("s"))), Type::String);
    assert_eq!(ok(add(bytes(b"a"), bytes(b"b"))), Type::Bytes);
    assert_eq!(
        ok(add(select(spec(), "tags"), list(vec![string("a")]))),
        list_of(Type::String)
    );
    assert_eq!(
        ok(add(select(spec(), "created"), select(spec(), "ttl"))),
        Type::Timestamp
    );
    assert_eq!(
        ok(call(
            "_-_",
            vec![select(spec(), "created"), select(spec(), "created")]
        )),
        Type::Duration
    );
    assert_eq!(ok(add(ident("x"), int(1))), Type::Int);
    assert_eq!(ok(add(ident("x"), ident("x"))), Type::Dyn);
    assert_eq!(ok(call("_%_", vec![ident("n"), int(2)])), Type::Int);
    assert_eq!(ok(call("-_", vec![ident("d")])), Type::Double);
    assert_eq!(ok(call("!_", vec![ident("b")])), Type::Bool);
    assert_eq!(
        ok(call("_?_:_", vec![ident("b"), int(1), int(2)])),
        Type::Int
    );
    assert_eq!(
        ok(call("@in", vec![string("a"), select(spec(), "labels")])),
        Type::Bool
    );
    assert_eq!(
        ok(call("@in", vec![string("a"), select(spec(), "tags")])),
        Type::Bool
    );
}

#[test]
fn wrong_operand_types_name_the_operator_and_types() {
    assert_eq!(
        error(at(call("_+_", vec![int(1), string("a")]), 2)),
        "found no matching overload for '_+_' applied to '(int, string)'"
    );
    assert_eq!(
        error(call("_==_", vec![ident("n"), ident("u")])),
        "found no matching overload for '_==_' applied to '(int, uint)'"
    );
    assert_eq!(
        error(call("-_", vec![ident("u")])),
        "found no matching overload for '-_' applied to '(uint)'"
    );
    assert_eq!(
        error(call(
            "_-_",
            vec![select(spec(), "ttl"), select(spec(), "created")]
        )),
        "found no matching overload for '_-_' applied to '(duration, timestamp)'"
    );
    assert_eq!(
        error(call("_?_:_", vec![ident("n"), int(1), int(2)])),
        "found no matching overload for '_?_:_' applied to '(int, int, int)'"
    );
    assert_eq!(
        error(call("@in", vec![int(1), select(spec(), "tags")])),
        "found no matching overload for '@in' applied to '(int, list(string))'"
    );
}

#[test]
fn logical_operators_report_the_operand_that_is_not_bool() {
    let issues = check(&call("_&&_", vec![ident("b"), at(ident("n"), 5)]), &env()).unwrap_err();
    assert_eq!(
        issues,
        vec![Issue {
            offset: 5,
            message: "expected type 'bool' but found 'int'".to_string()
        }]
    );
    assert_eq!(ok(call("_||_", vec![ident("x"), ident("b")])), Type::Bool);
}

#[test]
fn cross_type_numeric_comparisons() {
    assert_eq!(ok(call("_<_", vec![ident("n"), ident("d")])), Type::Bool);
    assert_eq!(ok(call("_>=_", vec![ident("u"), ident("n")])), Type::Bool);
    assert_eq!(ok(call("_<=_", vec![ident("d"), uint(1)])), Type::Bool);
    assert_eq!(
        error(call("_>_", vec![ident("n"), string("a")])),
        "found no matching overload for '_>_' applied to '(int, string)'"
    );
}

#[test]
fn the_size_of_a_string_field_compared_to_a_string_fails() {
    // self.spec.size() > 'a'
    let size = method(select(spec(), "size"), "size", vec![]);
    assert_eq!(ok(size.clone()), Type::Int);
    assert_eq!(
        error(call("_>_", vec![size, string("a")])),
        "found no matching overload for '_>_' applied to '(int, string)'"
    );
    assert_eq!(
        error(method(ident("n"), "size", vec![])),
        "found no matching overload for 'size' applied to 'int.()'"
    );
    assert_eq!(ok(call("size", vec![select(spec(), "labels")])), Type::Int);
}

#[test]
fn string_functions() {
    assert_eq!(
        ok(method(ident("s"), "startsWith", vec![string("a")])),
        Type::Bool
    );
    assert_eq!(
        ok(method(ident("s"), "matches", vec![string("^a")])),
        Type::Bool
    );
    assert_eq!(
        ok(call("matches", vec![ident("s"), string("^a")])),
        Type::Bool
    );
    assert_eq!(
        error(method(ident("s"), "contains", vec![int(1)])),
        "found no matching overload for 'contains' applied to 'string.(int)'"
    );
    assert_eq!(
        error(call("contains", vec![ident("s"), string("a")])),
        "found no matching overload for 'contains' applied to '(string, string)'"
    );
}

#[test]
fn conversions() {
    assert_eq!(ok(call("int", vec![ident("d")])), Type::Int);
    assert_eq!(ok(call("uint", vec![ident("n")])), Type::Uint);
    assert_eq!(ok(call("double", vec![ident("s")])), Type::Double);
    assert_eq!(
        ok(call("string", vec![select(spec(), "ttl")])),
        Type::String
    );
    assert_eq!(ok(call("bytes", vec![ident("s")])), Type::Bytes);
    assert_eq!(ok(call("bool", vec![ident("s")])), Type::Bool);
    assert_eq!(ok(call("duration", vec![string("1h")])), Type::Duration);
    assert_eq!(ok(call("timestamp", vec![int(0)])), Type::Timestamp);
    assert_eq!(ok(call("dyn", vec![ident("n")])), Type::Dyn);
    assert_eq!(
        ok(call("type", vec![ident("s")])),
        Type::Type(Box::new(Type::String))
    );
    assert_eq!(
        error(call("int", vec![ident("b")])),
        "found no matching overload for 'int' applied to '(bool)'"
    );
    assert_eq!(
        error(call("duration", vec![ident("n")])),
        "found no matching overload for 'duration' applied to '(int)'"
    );
}

#[test]
fn timestamp_and_duration_accessors() {
    let created = || select(spec(), "created");
    assert_eq!(ok(method(created(), "getFullYear", vec![])), Type::Int);
    assert_eq!(
        ok(method(created(), "getHours", vec![string("Europe/Paris")])),
        Type::Int
    );
    assert_eq!(
        ok(method(select(spec(), "ttl"), "getSeconds", vec![])),
        Type::Int
    );
    assert_eq!(
        error(method(select(spec(), "ttl"), "getFullYear", vec![])),
        "found no matching overload for 'getFullYear' applied to 'duration.()'"
    );
}

#[test]
fn undeclared_functions() {
    assert_eq!(
        error(call("frobnicate", vec![int(1)])),
        "undeclared reference to 'frobnicate' (in container '')"
    );
    assert_eq!(
        error(method(ident("s"), "frobnicate", vec![])),
        "undeclared reference to 'frobnicate' (in container '')"
    );
}

#[test]
fn null_compares_with_objects_and_well_known_types_only() {
    assert_eq!(ok(call("_==_", vec![spec(), null()])), Type::Bool);
    assert_eq!(
        ok(call("_!=_", vec![select(spec(), "ttl"), null()])),
        Type::Bool
    );
    assert_eq!(ok(call("_==_", vec![ident("x"), null()])), Type::Bool);
    assert_eq!(
        error(call("_==_", vec![select(spec(), "replicas"), null()])),
        "found no matching overload for '_==_' applied to '(int, null)'"
    );
}
