//! The interpreter's actual cost of an expression over values within the sizes an estimate
//! assumed lies within the estimate, as cel-go promises for its tracker and estimator.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::{Activation, Budget, CostEstimate, Env, Key, Map, ObjectType, Program, Type, Value};

fn list(t: Type) -> Type {
    Type::List(Box::new(t))
}

/// `self`: a name, a list of names, labels, a list of integers and a quantity string.
fn schema() -> Type {
    let fields = BTreeMap::from([
        (Arc::from("name"), Type::String),
        (Arc::from("names"), list(Type::String)),
        (
            Arc::from("labels"),
            Type::Map(Box::new(Type::String), Box::new(Type::String)),
        ),
        (Arc::from("items"), list(Type::Int)),
        (Arc::from("memory"), Type::String),
    ]);
    Type::Object(Arc::new(ObjectType {
        name: "self".into(),
        fields,
    }))
}

fn object(entries: Vec<(&str, Value)>) -> Value {
    let entries = entries
        .into_iter()
        .map(|(k, v)| (Key::String(Arc::from(k)), v))
        .collect();
    Value::Map(Arc::new(Map { entries }))
}

fn strings(items: &[&str]) -> Value {
    Value::list(items.iter().map(|s| Value::string(s)).collect())
}

fn value() -> Value {
    object(vec![
        ("name", Value::string("web-frontend")),
        ("names", strings(&["alpha", "beta", "gamma"])),
        (
            "labels",
            object(vec![
                ("app", Value::string("web")),
                ("tier", Value::string("frontend")),
            ]),
        ),
        (
            "items",
            Value::list((1..=6).map(Value::Int).collect::<Vec<_>>()),
        ),
        ("memory", Value::string("512Mi")),
    ])
}

/// The largest sizes `value()` has: what a schema's maxLength, maxItems and maxProperties
/// would say.
fn sizes(path: &[&str]) -> Option<(u64, u64)> {
    let max = match path {
        ["self", "name"] => 12,
        ["self", "names"] => 3,
        ["self", "names", "@items"] => 5,
        ["self", "labels"] => 2,
        ["self", "labels", "@keys"] => 4,
        ["self", "labels", "@values"] => 8,
        ["self", "items"] => 6,
        ["self", "memory"] => 5,
        _ => return None,
    };
    Some((0, max))
}

fn actual(program: &Program) -> u64 {
    let limit = 1_000_000;
    let mut budget = Budget::new(limit);
    let activation = Activation::new().bind("self", value());
    if let Err(err) = program.eval(&activation, &mut budget) {
        panic!("{}: {err}", program.source());
    }
    limit - budget.remaining
}

#[test]
fn actual_costs_lie_within_the_estimate() {
    let env = Env::new().variable("self", schema());
    let mut failures = Vec::new();
    for source in [
        "self.name.endsWith(self.name)",
        "self.name.matches('^[a-z-]+$')",
        "self.name.contains('front')",
        "self.names.all(n, n.size() <= 5)",
        "self.names.exists(n, n.startsWith('g'))",
        "self.names.exists_one(n, n == 'beta')",
        "self.labels.all(k, self.labels[k].size() < 10)",
        "self.labels.exists(k, v, v == 'web')",
        "self.items.map(x, x * 2).filter(y, y > 4).size() == 4",
        "self.items.all(i, v, v > i)",
        "self.name.lowerAscii() == self.name",
        "self.name.split('-').size() == 2",
        "self.name.replace('-', '_') != self.name",
        "self.name.find('[a-z]+') == 'web'",
        "self.items.sum() < 100 && self.items.max() == 6",
        "self.items.indexOf(3) == 2",
        "self.names.sort()[0] == 'alpha'",
        "self.items.reverse().size() == 6",
        "sets.contains(self.items, self.items)",
        "quantity(self.memory).isLessThan(quantity(self.memory).add(1))",
        "has(self.name) ? self.name.size() : 0",
        "self.name + self.name != ''",
    ] {
        let program = match Program::compile(&env, source) {
            Ok(p) => p,
            Err(err) => panic!("{source}: {err}"),
        };
        let CostEstimate { min, max } = program.estimate_cost(&sizes);
        let cost = actual(&program);
        if cost < min || cost > max {
            failures.push(format!("{source}: actual {cost} outside [{min}, {max}]"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn unknown_sizes_estimate_to_the_most_a_cost_can_be() {
    let env = Env::new().variable("self", schema());
    let program = Program::compile(&env, "self.names.all(n, n.startsWith('a'))").unwrap();
    let CostEstimate { min, max } = program.estimate_cost(&|_: &[&str]| None);
    assert_eq!((min, max), (3, u64::MAX));
    let bounded = program.estimate_cost(&sizes);
    // 1 for self and 1 for .names, 1 for the result; per name at most 2 for
    // @not_strictly_false(@result) and 3 for `@result && n.startsWith('a')` (1, 1, and a
    // one-character prefix's traversal 1).
    assert_eq!((bounded.min, bounded.max), (3, 3 + 3 * 5));
}

/// Where cel-go's and Kubernetes' run-time charges exceed their own estimates, the
/// interpreter charges as they do and the estimate stays theirs (a CRD rule Kubernetes
/// accepts must be accepted here): `startsWith` is estimated by the prefix but charged by
/// the string; `join` is estimated at 0.1 a result character but charged 0.2; selecting from
/// or indexing a call's result charges 1 for the relative attribute the estimate ignores.
#[test]
fn where_upstream_charges_more_than_it_estimates_both_are_kept() {
    let env = Env::new().variable("self", schema());
    for (source, estimate, cost) in [
        ("self.name.startsWith('web')", (3, 3), 4),
        ("self.names.join(',').size() < 20", (4, 6), 8),
        ("self.items.reverse()[0] == 6", (15, 21), 22),
    ] {
        let program = Program::compile(&env, source).unwrap();
        let CostEstimate { min, max } = program.estimate_cost(&sizes);
        assert_eq!((min, max), estimate, "{source}");
        assert_eq!(actual(&program), cost, "{source}");
    }
}
