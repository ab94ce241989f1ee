//! Comprehensions: the variables' types, the range, the condition and the step.

use super::*;

#[test]
fn comprehension_variables_take_their_range_element_types() {
    let items = || select(spec(), "items");
    // self.spec.items.all(i, i.port > 0)
    assert_eq!(
        ok(all(
            items(),
            "i",
            call("_>_", vec![select(ident("i"), "port"), int(0)])
        )),
        Type::Bool
    );
    // self.spec.labels.exists(k, k.startsWith('a')): map keys
    assert_eq!(
        ok(exists(
            select(spec(), "labels"),
            "k",
            method(ident("k"), "startsWith", vec![string("a")])
        )),
        Type::Bool
    );
    // self.spec.items.map(i, i.name): list(string)
    assert_eq!(
        ok(map_macro(items(), "i", select(ident("i"), "name"))),
        list_of(Type::String)
    );
    // self.spec.counts.filter(c, c > 1): list(int)
    assert_eq!(
        ok(filter(
            select(spec(), "counts"),
            "c",
            call("_>_", vec![ident("c"), int(1)])
        )),
        list_of(Type::Int)
    );
    // the iteration variable is unknown outside
    assert_eq!(
        error(call(
            "_&&_",
            vec![
                all(items(), "i", boolean(true)),
                call("_>_", vec![select(ident("i"), "port"), int(0)])
            ]
        )),
        "undeclared reference to 'i' (in container '')"
    );
    assert_eq!(
        error(all(
            items(),
            "i",
            call("_>_", vec![select(ident("i"), "host"), int(0)])
        )),
        "undefined field 'host'"
    );
}

#[test]
fn two_variable_comprehensions() {
    // self.spec.tags.all(i, v, i < 10 && v != '')
    let list_pred = call(
        "_&&_",
        vec![
            call("_<_", vec![ident("i"), int(10)]),
            call("_!=_", vec![ident("v"), string("")]),
        ],
    );
    let expr = fold(
        "i",
        Some("v"),
        select(spec(), "tags"),
        boolean(true),
        call("@not_strictly_false", vec![accu()]),
        call("_&&_", vec![accu(), list_pred]),
        accu(),
    );
    assert_eq!(ok(expr), Type::Bool);
    // self.spec.byName.all(k, v, k == v.name)
    let map_pred = call("_==_", vec![ident("k"), select(ident("v"), "name")]);
    let expr = fold(
        "k",
        Some("v"),
        select(spec(), "byName"),
        boolean(true),
        call("@not_strictly_false", vec![accu()]),
        call("_&&_", vec![accu(), map_pred]),
        accu(),
    );
    assert_eq!(ok(expr), Type::Bool);
}

#[test]
fn comprehension_ranges_and_conditions_are_checked() {
    assert_eq!(
        error(all(ident("n"), "i", boolean(true))),
        "expression of type 'int' cannot be range of a comprehension \
         (must be list, map, or dynamic)"
    );
    assert_eq!(
        error(all(select(spec(), "counts"), "c", ident("c"))),
        "expected type 'bool' but found 'int'"
    );
    assert_eq!(
        ok(all(ident("x"), "e", select(ident("e"), "ok"))),
        Type::Bool
    );
    let bad_condition = fold(
        "c",
        None,
        select(spec(), "counts"),
        int(0),
        at(ident("c"), 4),
        call("_+_", vec![accu(), ident("c")]),
        accu(),
    );
    let issues = check(&bad_condition, &env()).unwrap_err();
    assert_eq!(
        issues,
        vec![Issue {
            offset: 4,
            message: "expected type 'bool' but found 'int'".to_string()
        }]
    );
}
