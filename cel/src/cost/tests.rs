//! cel-go's estimator cases (`checker/cost_test.go`, Apache-2.0, at the version Kubernetes
//! 1.35 uses), through `Program::compile` and `estimate_cost`, with Kubernetes' options
//! (presence tests free). Protobuf message types become schema objects. Cases needing a
//! custom call estimator, message construction, presence tests that cost, or a variable
//! with a dotted name are left out: Kubernetes has none of those.

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::ops::Add;
use std::sync::Arc;

use crate::{CostEstimate, Env, ObjectType, Program, SizeEstimator, Type};

/// cel-go's test estimator: a hint by the path joined with dots, else 12 for bytes.
pub(super) struct Hints(pub HashMap<String, u64>);

impl SizeEstimator for Hints {
    fn size(&self, path: &[&str]) -> Option<(u64, u64)> {
        self.0.get(&path.join(".")).map(|max| (0, *max))
    }

    fn size_of_type(&self, ty: &Type) -> Option<(u64, u64)> {
        (*ty == Type::Bytes).then_some((0, 12))
    }
}

pub(super) fn hints(pairs: &[(&str, u64)]) -> Hints {
    Hints(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect())
}

pub(super) fn estimate_in(env: &Env, source: &str, sizes: &dyn SizeEstimator) -> (u64, u64) {
    let program = match Program::compile(env, source) {
        Ok(p) => p,
        Err(err) => panic!("{source}: {err}"),
    };
    let CostEstimate { min, max } = program.estimate_cost(sizes);
    (min, max)
}

fn all_types() -> Type {
    let fields = BTreeMap::from([(Arc::from("single_int32"), Type::Int)]);
    Type::Object(Arc::new(ObjectType {
        name: "google.expr.proto3.test.TestAllTypes".into(),
        fields,
    }))
}

fn list(t: Type) -> Type {
    Type::List(Box::new(t))
}

fn map(k: Type, v: Type) -> Type {
    Type::Map(Box::new(k), Box::new(v))
}

struct Case {
    expr: &'static str,
    vars: Vec<(&'static str, Type)>,
    hints: Vec<(&'static str, u64)>,
    wanted: (u64, u64),
}

fn case(expr: &'static str, wanted: (u64, u64)) -> Case {
    Case {
        expr,
        vars: Vec::new(),
        hints: Vec::new(),
        wanted,
    }
}

impl Case {
    fn var(mut self, name: &'static str, ty: Type) -> Case {
        self.vars.push((name, ty));
        self
    }

    fn hint(mut self, path: &'static str, max: u64) -> Case {
        self.hints.push((path, max));
        self
    }
}

fn run(cases: Vec<Case>) {
    let mut failures = Vec::new();
    for c in cases {
        let env = c
            .vars
            .iter()
            .fold(Env::new(), |env, (name, ty)| env.variable(name, ty.clone()));
        let got = estimate_in(&env, c.expr, &hints(&c.hints));
        if got != c.wanted {
            failures.push(format!("{}: got {got:?}, wanted {:?}", c.expr, c.wanted));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn cel_go_basic_costs() {
    let all = all_types();
    let all_map = map(Type::String, all.clone());
    let nested_map = map(Type::String, all_map.clone());
    run(vec![
        case(r#""Hello World!""#, (0, 0)),
        case("input", (1, 1)).var("input", list(Type::Int)),
        case("input['key']", (2, 2)).var("input", map(Type::String, Type::String)),
        case("input.single_int32", (2, 2)).var("input", all.clone()),
        case("has(input.single_int32)", (1, 1)).var("input", all.clone()),
        case("has(input.testAttr.nestedAttr)", (2, 2)).var("input", nested_map.clone()),
        case("[1, 2, 3]", (10, 10)),
        case(r#"{"a": 1, "b": 2, "c": 3}"#, (30, 30)),
        case("true || false", (0, 0)),
        case("true && false", (0, 0)),
        case("a || b || c || d", (1, 4))
            .var("a", Type::Bool)
            .var("b", Type::Bool)
            .var("c", Type::Bool)
            .var("d", Type::Bool),
        case("a && b && c && d", (1, 4))
            .var("a", Type::Bool)
            .var("b", Type::Bool)
            .var("c", Type::Bool)
            .var("d", Type::Bool),
        case("1 < 2", (1, 1)),
        case("1 <= 2", (1, 1)),
        case("1 == 2", (1, 1)),
        case("2 > 1", (1, 1)),
        case("2 >= 1", (1, 1)),
        case("2 in [1, 2, 3]", (13, 13)),
        case("1 + 1", (1, 1)),
        case("1 - 1", (1, 1)),
        case("1 / 1", (1, 1)),
        case("1 * 1", (1, 1)),
        case("1 % 1", (1, 1)),
        case("true ? 1 : 2", (0, 0)),
        case(r#"size("123")"#, (1, 1)),
        case(r#"size(b"123")"#, (1, 1)),
        case("string(1)", (1, 1)),
        case("type(1)", (1, 1)),
        case("((5 != 6) == (1 == 2)) == ((3 <= 4) == (9 != 9))", (7, 7)),
    ]);
}

#[test]
fn cel_go_string_costs() {
    let s = || Type::String;
    run(vec![
        case("input.matches('[0-9]')", (3, 103))
            .var("input", s())
            .hint("input", 500),
        case("'123'.matches('[0-9]')", (2, 2)),
        case(r"input.matches('\\d+a\\d+b')", (3, 103))
            .var("input", s())
            .hint("input", 500),
        case("string(input)", (1, 51))
            .var("input", Type::Bytes)
            .hint("input", 500),
        case("string(input) == string(input)", (3, 152))
            .var("input", Type::Bytes)
            .hint("input", 500),
        case("bytes(input)", (1, 51))
            .var("input", s())
            .hint("input", 500),
        case("bytes(input) == bytes(input)", (3, 302))
            .var("input", s())
            .hint("input", 500),
        case("input.contains(arg1)", (2, 2502))
            .var("input", s())
            .var("arg1", s())
            .hint("input", 500)
            .hint("arg1", 500),
        case("input.startsWith(arg1)", (2, 52))
            .var("input", s())
            .var("arg1", s())
            .hint("arg1", 500),
        case("input.endsWith(arg1)", (2, 52))
            .var("input", s())
            .var("arg1", s())
            .hint("arg1", 500),
        case("input.size()", (2, 2)).var("input", s()),
        case("size(input)", (2, 2)).var("input", s()),
        case(r#""abcdefg".contains(str1 + str2)"#, (2, 6))
            .var("str1", s())
            .var("str2", s())
            .hint("str1", 10)
            .hint("str2", 10),
        case(
            r#"str1.endsWith("abcdefghijklmnopqrstuvwxyz") == str2.endsWith("abcdefghijklmnopqrstuvwxyz")"#,
            (9, 9),
        )
        .var("str1", s())
        .var("str2", s()),
        case(
            "string(timestamp1) == string(timestamp2)",
            (5, 1844674407370955268),
        )
        .var("timestamp1", Type::Timestamp)
        .var("timestamp2", Type::Timestamp),
    ]);
}

#[test]
fn cel_go_comprehension_costs() {
    let all = all_types();
    let all_list = list(all.clone());
    let all_map = map(Type::String, all.clone());
    let nested_map = map(Type::String, all_map.clone());
    run(vec![
        case("input.all(x, true)", (2, 302))
            .var("input", all_list.clone())
            .hint("input", 100),
        case("input.all(x, x.all(y, true))", (2, 1752))
            .var("input", list(all_list.clone()))
            .hint("input", 50)
            .hint("input.@items", 10),
        case("[1, 2, 3].all(x, true)", (20, 20)),
        case("(x > 2 ? input1 : input2).all(y, true)", (4, 7))
            .var("x", Type::Int)
            .var("input1", all_list.clone())
            .var("input2", all_list.clone())
            .hint("input1", 1)
            .hint("input2", 1),
        case("input.all(k, input[k].single_int32 > 3)", (2, 82))
            .var("input", all_map.clone())
            .hint("input", 10),
        case("input.all(k, input[k].all(x, true))", (2, 187))
            .var("input", nested_map.clone())
            .hint("input", 5)
            .hint("input.@values", 10),
        case("input.all(k, k.contains(k))", (2, 32))
            .var("input", nested_map.clone())
            .hint("input", 5)
            .hint("input.@keys", 10),
        case(
            "input.all(k, input[k].all(k, true) && k.contains(k))",
            (2, 34),
        )
        .var("input", nested_map.clone())
        .hint("input", 2)
        .hint("input.@values", 2)
        .hint("input.@keys", 5),
        case("(list1 + list2).all(x, true)", (4, 64))
            .var("list1", list(Type::Int))
            .var("list2", list(Type::Int))
            .hint("list1", 10)
            .hint("list2", 10),
        case(
            "[list1, list2].exists(l, l.exists(v, v.startsWith('hi')))",
            (21, 265),
        )
        .var("list1", list(Type::String))
        .var("list2", list(Type::String))
        .hint("list1", 10)
        .hint("list1.@items", 64)
        .hint("list2", 20)
        .hint("list2.@items", 128),
        case("[1,2,3,4,5].filter(x, x % 2 == 0)", (41, 101)),
        case("[1,2,3,4,5].map(x, x)", (86, 86)),
        case("[1,2,3,4,5].map(x, x).filter(x, x % 2 == 0)", (117, 177)),
        case(
            "[1,2,3,4,5].map(x, x).exists(x, x == 5) == true",
            (108, 118),
        ),
        case("[1,2,3,4,5].map(x, x).map(x, x)", (162, 162)),
        case("[1,2,3,4,5].map(x, x)[4]", (87, 87)),
        case(
            "[[1, 1], [2, 2], [3, 3], [4, 4], [5, 5]].all(y, y.all(y, y == 1))",
            (76, 136),
        ),
        case(
            "[1,2,3,4,5].map(x, [x, x]).all(y, y.all(y, y == 1))",
            (157, 217),
        ),
        case(
            r#"["a", "ab", "abc", "abcd", "abcde"].map(x, [x, x]).all(y, y.all(y, y.startsWith('a')))"#,
            (157, 217),
        ),
        case(
            "input.map(x, [x, x]).all(y, y.all(y, y.startsWith('a')))",
            (13, 208),
        )
        .var("input", list(Type::String))
        .hint("input", 5)
        .hint("input.@items", 10),
        case("[1,2,3,4,5].map(x, x).map(x, x) + [1]", (173, 173)),
        case("[1,2,3].all(i, i in [1,2,3].map(j, j + j))", (20, 230)),
        case(
            "dyn([1,2,3]).all(i, i in dyn([1,2,3]).map(j, j + j))",
            (21, 234),
        ),
    ]);
}

#[test]
fn cel_go_size_tracking_costs() {
    let int_list = || list(Type::Int);
    run(vec![
        case("list1.size() == list2.size()", (5, 5))
            .var("list1", int_list())
            .var("list2", int_list()),
        case("x > y ? list1.size() : list2.size()", (5, 5))
            .var("x", Type::Int)
            .var("y", Type::Int)
            .var("list1", int_list())
            .var("list2", int_list()),
        case("([x, y] + list1 + list2).size()", (17, 17))
            .var("x", Type::Int)
            .var("y", Type::Int)
            .var("list1", int_list())
            .var("list2", int_list())
            .hint("list1", 10)
            .hint("list2", 20),
        case("[[1,2],[1,2],[1,2],[1,2],[1,2]][4]", (61, 61)),
        case(
            "{'a': [1,2], 'b': [1,2], 'c': [1,2], 'd': [1,2], 'e': [1,2]}.b",
            (81, 81),
        ),
        case(
            "{'hello': 'hi'}['hello'] != {'hello': 'bye'}['hello']",
            (63, 63),
        ),
        case("['hello', 'hi'][0] != ['hello', 'bye'][1]", (23, 23)),
        case(
            "[bytes('012345678901'), bytes('012345678901'), bytes('012345678901'), \
             bytes('012345678901'), bytes('012345678901')].max()",
            (25, 35),
        ),
    ]);
}

#[test]
fn cel_go_equality_costs() {
    let self_of = |t: Type| map(Type::String, t);
    run(vec![
        case("timestamp1 == timestamp2", (3, 3))
            .var("timestamp1", Type::Timestamp)
            .var("timestamp2", Type::Timestamp),
        case("duration1 != duration2", (3, 3))
            .var("duration1", Type::Duration)
            .var("duration2", Type::Duration),
        case("type(self.val1)", (3, 3)).var("self", self_of(Type::Int)),
        case("type(self.val1) == int", (5, 1844674407370955268)).var("self", self_of(Type::Int)),
        case("type(1) == int", (3, 1844674407370955266)),
        case("self.val1 == 1.0", (3, 3)).var("self", self_of(Type::Double)),
        case(
            "self.val1 == timestamp('2011-08-18T00:00:00.000+01:00') + duration('19h3m37s10ms')",
            (6, 6),
        )
        .var("self", self_of(Type::Timestamp)),
        case(
            "timestamp(self.val1) == timestamp('2011-08-18T00:00:00.000+01:00') + duration('19h3m37s10ms')",
            (7, 7),
        )
        .var("self", self_of(Type::Timestamp)),
        case("self.val1 != self.val2", (5, 5)).var("self", self_of(Type::Bool)),
        case("self.val1 != true", (3, 3)).var("self", self_of(Type::Bool)),
    ]);
}

#[test]
fn arithmetic_saturates_and_rounds_up_as_cel_go() {
    let huge = CostEstimate::fixed(u64::MAX);
    assert_eq!(huge.add(CostEstimate::fixed(1)), huge);
    assert_eq!(huge.multiply(CostEstimate::fixed(2)), huge);
    assert_eq!(CostEstimate::fixed(11).multiply_by_cost_factor(0.1).max, 2);
    assert_eq!(CostEstimate::fixed(10).multiply_by_cost_factor(0.1).max, 1);
    assert_eq!(huge.multiply_by_cost_factor(0.1).max, 1844674407370955264);
    assert_eq!(huge.multiply_by_cost_factor(2.0).max, u64::MAX);
    let union = CostEstimate { min: 3, max: 5 }.union(CostEstimate { min: 1, max: 4 });
    assert_eq!(union, CostEstimate { min: 1, max: 5 });
}

#[test]
fn paths_name_fields_items_keys_and_values() {
    use std::sync::Mutex;
    let asked: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let spec = Type::Object(Arc::new(ObjectType {
        name: "self.spec".into(),
        fields: BTreeMap::from([
            (Arc::from("names"), list(Type::String)),
            (Arc::from("labels"), map(Type::String, Type::String)),
        ]),
    }));
    let root = Type::Object(Arc::new(ObjectType {
        name: "self".into(),
        fields: BTreeMap::from([(Arc::from("spec"), spec)]),
    }));
    let env = Env::new().variable("self", root);
    let program = Program::compile(
        &env,
        "self.spec.names.all(n, n.startsWith('a')) && \
         self.spec.labels.all(k, k.contains(self.spec.labels[k])) && \
         self.spec.names.all(i, v, v.contains('x'))",
    )
    .unwrap();
    let sizes = |path: &[&str]| {
        asked.lock().unwrap().push(path.join("."));
        None
    };
    let CostEstimate { max, .. } = program.estimate_cost(&sizes);
    assert_eq!(max, u64::MAX);
    let asked = asked.into_inner().unwrap();
    for path in [
        "self.spec.names",
        "self.spec.names.@items",
        "self.spec.labels",
        "self.spec.labels.@keys",
        "self.spec.labels.@values",
    ] {
        assert!(asked.iter().any(|p| p == path), "{path} not in {asked:?}");
    }
}

#[test]
fn the_deepest_expressions_the_parser_accepts_estimate() {
    let env = Env::new().variable("x", Type::Int);
    for source in [
        format!("{}1{}", "[".repeat(249), "]".repeat(249)),
        format!("{}true{}", "[1].all(x, ".repeat(120), ")".repeat(120)),
        format!("{}1{}", "{1: ".repeat(240), "}".repeat(240)),
        format!("{}1", "x > 0 ? 1 : ".repeat(240)),
        format!("{}x{}", "(".repeat(200), " + 1)".repeat(200)),
    ] {
        let (min, max) = estimate_in(&env, &source, &hints(&[]));
        assert!(min <= max && max > 0, "{}", &source[..20]);
    }
}

#[test]
fn optional_selects_binds_and_type_names_cost_as_in_cel_go() {
    let object = Type::Object(Arc::new(ObjectType {
        name: "self".into(),
        fields: BTreeMap::from([(Arc::from("name"), Type::String)]),
    }));
    run(vec![
        // `a.?b` is cel-go's call `_?._(a, "b")`: 1 more than its operand.
        case("self.?name.orValue('x')", (3, 3)).var("self", object.clone()),
        // hasValue 2; the bind 10 (its empty range) + 2 + 2, wrapped in optional.of 1;
        // optional.none() 1.
        case("optional.of(1).optMap(x, x + 1)", (3, 17)),
        // A qualified type name is one identifier.
        case(
            "type(d) == google.protobuf.Duration",
            (4, 1844674407370955267),
        )
        .var("d", Type::Duration),
        case("type(d) == int", (4, 1844674407370955267)).var("d", Type::Duration),
    ]);
}

#[test]
fn two_variable_comprehensions_over_lists_name_indices_and_items() {
    use std::sync::Mutex;
    let asked: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let env = Env::new().variable("xs", list(Type::String));
    let program = Program::compile(&env, "xs.all(i, v, i < 3 && v.size() < 3)").unwrap();
    let sizes = |path: &[&str]| {
        asked.lock().unwrap().push(path.join("."));
        (path == ["xs"]).then_some((0, 4))
    };
    // xs 1, the result 1; per element at most @not_strictly_false(@result) 2 and
    // `@result && (i < 3 && v.size() < 3)`: 1 + (1 + 1) + (1 + 1 + 1) = 6.
    assert_eq!(
        program.estimate_cost(&sizes),
        CostEstimate {
            min: 2,
            max: 2 + 4 * 8
        }
    );
    let asked = asked.into_inner().unwrap();
    for path in ["xs.@indices", "xs.@items"] {
        assert!(asked.iter().any(|p| p == path), "{path} not in {asked:?}");
    }
}
