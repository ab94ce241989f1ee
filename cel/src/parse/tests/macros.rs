//! Tests of macro expansion: the trees of cel-go's macros and its `ext` libraries' macros,
//! their argument errors, unique ids and the locations nodes get.

use super::{collect_ids, errors, parses};
use crate::ast::ExprKind;
use crate::parse::parse;

#[test]
fn has_macro() {
    parses("has(a.b)", "a.b~test-only");
    parses("has(a.b.c)", "a.b.c~test-only");
    parses("has(a.b) && a.b", "_&&_(a.b~test-only, a.b)");
    assert_eq!(errors("has(m)"), ["4: invalid argument to has() macro"]);
    assert_eq!(errors("has(a[0])"), ["5: invalid argument to has() macro"]);
    assert_eq!(errors("has(a.?b)"), ["5: invalid argument to has() macro"]);
    // Not a macro with other arities, or as a method.
    parses("has(a, b)", "has(a, b)");
    parses("x.has(a.b)", "x.has(a.b)");
}

#[test]
fn quantifier_macros() {
    parses(
        "m.all(v, f)",
        "__comprehension__(v, -, @result, m, true, @not_strictly_false(@result), _&&_(@result, f), @result)",
    );
    parses(
        "m.exists(v, f)",
        "__comprehension__(v, -, @result, m, false, @not_strictly_false(!_(@result)), _||_(@result, f), @result)",
    );
    let exists_one = "__comprehension__(v, -, @result, m, 0, true, _?_:_(f, _+_(@result, 1), @result), _==_(@result, 1))";
    parses("m.exists_one(v, f)", exists_one);
    parses("m.existsOne(v, f)", exists_one);
    // Nested macros keep their own variables.
    parses(
        "a.all(x, x.exists(y, y == x))",
        "__comprehension__(x, -, @result, a, true, @not_strictly_false(@result), _&&_(@result, __comprehension__(y, -, @result, x, false, @not_strictly_false(!_(@result)), _||_(@result, _==_(y, x)), @result)), @result)",
    );
    assert_eq!(errors("1.all(2, 3)"), ["6: argument must be a simple name"]);
    assert_eq!(
        errors("m.exists(a.b, true)"),
        ["10: argument must be a simple name"]
    );
    assert_eq!(
        errors("[].existsOne(__result__, __result__)"),
        ["13: iteration variable overwrites accumulator variable"]
    );
    // Other arities are calls.
    parses("m.all(v)", "m.all(v)");
    parses("all(m, v, f)", "all(m, v, f)");
}

#[test]
fn map_and_filter_macros() {
    parses(
        "m.map(v, f)",
        "__comprehension__(v, -, @result, m, [], true, _+_(@result, [f]), @result)",
    );
    parses(
        "m.map(v, p, f)",
        "__comprehension__(v, -, @result, m, [], true, _?_:_(p, _+_(@result, [f]), @result), @result)",
    );
    parses(
        "m.filter(v, p)",
        "__comprehension__(v, -, @result, m, [], true, _?_:_(p, _+_(@result, [v]), @result), @result)",
    );
    assert_eq!(
        errors("m.map(__result__, __result__)"),
        ["6: iteration variable overwrites accumulator variable"]
    );
    assert_eq!(
        errors("m.filter(__result__, false)"),
        ["9: iteration variable overwrites accumulator variable"]
    );
    assert_eq!(
        errors("m.filter(a.b, false)"),
        ["10: argument is not an identifier"]
    );
    assert_eq!(errors("m.map(1, 2)"), ["6: argument is not an identifier"]);
}

#[test]
fn two_variable_macros() {
    parses(
        "m.all(k, v, v > k)",
        "__comprehension__(k, v, @result, m, true, @not_strictly_false(@result), _&&_(@result, _>_(v, k)), @result)",
    );
    parses(
        "m.exists(k, v, v > k)",
        "__comprehension__(k, v, @result, m, false, @not_strictly_false(!_(@result)), _||_(@result, _>_(v, k)), @result)",
    );
    let exists_one = "__comprehension__(k, v, @result, m, 0, true, _?_:_(p, _+_(@result, 1), @result), _==_(@result, 1))";
    parses("m.existsOne(k, v, p)", exists_one);
    parses("m.exists_one(k, v, p)", exists_one);
    parses(
        "l.transformList(i, v, v * i)",
        "__comprehension__(i, v, @result, l, [], true, _+_(@result, [_*_(v, i)]), @result)",
    );
    parses(
        "l.transformList(i, v, i > 0, v)",
        "__comprehension__(i, v, @result, l, [], true, _?_:_(_>_(i, 0), _+_(@result, [v]), @result), @result)",
    );
    parses(
        "m.transformMap(k, v, v + 1)",
        "__comprehension__(k, v, @result, m, {}, true, cel.@mapInsert(@result, k, _+_(v, 1)), @result)",
    );
    parses(
        "m.transformMap(k, v, p, v)",
        "__comprehension__(k, v, @result, m, {}, true, _?_:_(p, cel.@mapInsert(@result, k, v), @result), @result)",
    );
    parses(
        "m.transformMapEntry(k, v, {v: k})",
        "__comprehension__(k, v, @result, m, {}, true, cel.@mapInsert(@result, {v: k}), @result)",
    );
    parses(
        "m.transformMapEntry(k, v, p, {v: k})",
        "__comprehension__(k, v, @result, m, {}, true, _?_:_(p, cel.@mapInsert(@result, {v: k}), @result), @result)",
    );
    assert_eq!(
        errors("m.all(k, k, true)"),
        ["9: duplicate variable name: k"]
    );
    assert_eq!(
        errors("m.all(k.a, v, true)"),
        ["7: argument must be a simple name"]
    );
    assert_eq!(
        errors("m.transformList(k, 1, true)"),
        ["19: argument must be a simple name"]
    );
    assert_eq!(
        errors("m.all(k, __result__, true)"),
        ["9: iteration variable overwrites accumulator variable"]
    );
    // transformList has no two-argument form.
    parses("l.transformList(i, v)", "l.transformList(i, v)");
}

#[test]
fn optional_macros() {
    parses(
        "a.optMap(x, x + 1)",
        "_?_:_(a.hasValue(), optional.of(__comprehension__(#unused, -, x, [], a.value(), false, x, _+_(x, 1))), optional.none())",
    );
    parses(
        "a.?b.optFlatMap(x, x.?c)",
        "_?_:_(a.?b.hasValue(), __comprehension__(#unused, -, x, [], a.?b.value(), false, x, x.?c), optional.none())",
    );
    assert_eq!(
        errors("a.optMap(x.y, 1)"),
        ["10: optMap() variable name must be a simple identifier"]
    );
    assert_eq!(
        errors("a.optFlatMap(1, 1)"),
        ["13: optFlatMap() variable name must be a simple identifier"]
    );
    // The target is copied with fresh ids.
    let Ok(tree) = parse("a.b.optMap(x, x)") else {
        panic!("parses")
    };
    let mut ids = Vec::new();
    collect_ids(&tree, &mut ids);
    let count = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), count, "ids are unique");
}

#[test]
fn sort_by_macro() {
    parses(
        "l.sortBy(e, -e)",
        "__comprehension__(#unused, -, @__sortBy_input__, [], l, false, @__sortBy_input__, @__sortBy_input__.@sortByAssociatedKeys(__comprehension__(e, -, @result, @__sortBy_input__, [], true, _+_(@result, [-_(e)]), @result)))",
    );
    assert!(parse("[3, 1].sortBy(x, x)").is_ok());
    assert!(parse("a.b.sortBy(x, x)").is_ok());
    assert_eq!(
        errors("{'a': 1}.sortBy(x, x)"),
        [
            "0: sortBy can only be applied to a list, identifier, comprehension, call or select expression"
        ]
    );
    assert_eq!(
        errors("l.sortBy(1, 1)"),
        ["9: argument is not an identifier"]
    );
}

#[test]
fn bind_is_not_a_macro_in_kubernetes() {
    parses("cel.bind(x, 1, x)", "cel.bind(x, 1, x)");
}

#[test]
fn ids_are_unique() {
    for source in [
        "a.all(x, x > 0) && {'k': [1, ?b]}.exists(k, v, k == v) || M{f: 1}.f",
        "l.filter(x, x.startsWith('a')).map(x, x.size()).sortBy(x, x)",
        "a ? b[0] : c.?d.optMap(x, has(x.y))",
    ] {
        let Ok(tree) = parse(source) else {
            panic!("{source} parses")
        };
        let mut ids = Vec::new();
        collect_ids(&tree, &mut ids);
        let count = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), count, "{source}");
        assert!(!ids.contains(&0), "{source}");
    }
}

/// The offset of the node `path` leads to: `t` the call target, `0`.. the arguments or
/// elements, `o` a select's operand.
fn offset_at(source: &str, path: &[&str]) -> u32 {
    let Ok(mut e) = parse(source) else {
        panic!("{source} parses")
    };
    for step in path {
        e = match (e.kind, *step) {
            (
                ExprKind::Call {
                    target: Some(t), ..
                },
                "t",
            ) => *t,
            (ExprKind::Select { operand, .. }, "o") => *operand,
            (ExprKind::Call { mut args, .. }, i) => args.remove(i.parse().unwrap_or(0)),
            (ExprKind::List { mut elements, .. }, i) => elements.remove(i.parse().unwrap_or(0)),
            (kind, _) => panic!("no {step} in {kind:?}"),
        };
    }
    e.offset
}

#[test]
fn offsets_are_cel_go_locations() {
    // Operators: the operator's token.
    assert_eq!(offset_at("a + b", &[]), 2);
    assert_eq!(offset_at("a + b", &["1"]), 4);
    assert_eq!(offset_at("a  <=  b", &[]), 3);
    assert_eq!(offset_at("a in b", &[]), 2);
    assert_eq!(offset_at("a ? b : c", &[]), 2);
    assert_eq!(offset_at("x || !y", &["1"]), 5);
    assert_eq!(offset_at("x || --y", &["1"]), 7);
    assert_eq!(offset_at("x || ---y", &["1"]), 5);
    // Selects at the `.`, calls at the `(`, indexes and lists at the `[`, maps and messages
    // at the `{`.
    assert_eq!(offset_at("abc.def", &[]), 3);
    assert_eq!(offset_at("abc.?def", &[]), 3);
    assert_eq!(offset_at("abc.f(1)", &[]), 5);
    assert_eq!(offset_at("size (x)", &[]), 5);
    assert_eq!(offset_at("a[1]", &[]), 1);
    assert_eq!(offset_at("x + [1]", &["1"]), 4);
    assert_eq!(offset_at("x + {1: 2}", &["1"]), 4);
    assert_eq!(offset_at("x + a.M{f: 2}", &["1"]), 7);
    // Literals and names at their first character; a negative number at its sign.
    assert_eq!(offset_at("x + -1", &["1"]), 4);
    assert_eq!(offset_at("x + 'a'", &["1"]), 4);
    assert_eq!(offset_at("x + .a", &["1"]), 5);
    // A macro's nodes are at the call's `(`.
    assert_eq!(offset_at("abc.all(x, x)", &[]), 7);
    assert_eq!(offset_at("has(a.b)", &[]), 3);
}
