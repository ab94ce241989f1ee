//! What evaluating a compiled expression costs: the 20 rules of the API server's `cel_rules`
//! benchmark (the kinds of rules real CRDs carry) and a few policy expressions, each compiled
//! once and evaluated many times against one object, in nanoseconds per evaluation.
//!
//! A benchmark program, not a test: it asserts no timings. Run it on an otherwise idle machine
//! with `cargo bench -p atoll-cel --bench eval` (`-- --quick` for a smoke run; `cargo test
//! --benches` runs it quick too).

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use atoll_cel::{Activation, Budget, Env, Key, Map, ObjectType, Program, Type, Value};

fn object(name: &str, fields: &[(&str, Type)]) -> Type {
    Type::Object(Arc::new(ObjectType {
        name: name.into(),
        fields: fields
            .iter()
            .map(|(name, ty)| (Arc::from(*name), ty.clone()))
            .collect::<BTreeMap<_, _>>(),
    }))
}

fn map(entries: Vec<(&str, Value)>) -> Value {
    let mut map = Map::default();
    for (key, value) in entries {
        map.entries.insert(Key::String(Arc::from(key)), value);
    }
    Value::Map(Arc::new(map))
}

fn string_map(n: usize, prefix: &str) -> Value {
    let mut map = Map::default();
    for i in 0..n {
        map.entries.insert(
            Key::String(Arc::from(format!("{prefix}-{i}"))),
            Value::string(&format!("value-{i}")),
        );
    }
    Value::Map(Arc::new(map))
}

/// The spec of the `cel_rules` benchmark's objects, and its type.
fn spec() -> (Type, Value) {
    let strings = || Type::Map(Box::new(Type::String), Box::new(Type::String));
    let port = object(
        "self.ports.@idx",
        &[("name", Type::String), ("port", Type::Int)],
    );
    let ty = object(
        "self",
        &[
            ("replicas", Type::Int),
            ("maxReplicas", Type::Int),
            ("mode", Type::String),
            ("image", Type::String),
            ("hostname", Type::String),
            ("ports", Type::List(Box::new(port))),
            ("labels", strings()),
            (
                "selector",
                object("self.selector", &[("matchLabels", strings())]),
            ),
            (
                "resources",
                object(
                    "self.resources",
                    &[("cpu", Type::String), ("memory", Type::String)],
                ),
            ),
        ],
    );
    let ports = (0..4)
        .map(|i| {
            map(vec![
                ("name", Value::string(&format!("port-{i}"))),
                ("port", Value::Int(8080 + i)),
            ])
        })
        .collect();
    let value = map(vec![
        ("replicas", Value::Int(3)),
        ("maxReplicas", Value::Int(10)),
        ("mode", Value::string("Auto")),
        (
            "image",
            Value::string("registry.example.com/team/app:v1.2.3"),
        ),
        ("hostname", Value::string("app.team.example.com")),
        ("ports", Value::list(ports)),
        ("labels", string_map(8, "label")),
        ("selector", map(vec![("matchLabels", string_map(2, "app"))])),
        (
            "resources",
            map(vec![
                ("cpu", Value::string("500m")),
                ("memory", Value::string("1Gi")),
            ]),
        ),
    ]);
    (ty, value)
}

const RULES: &[&str] = &[
    "self.replicas <= self.maxReplicas",
    "self.mode in ['Auto', 'Manual']",
    "self.image.matches('^[a-z0-9./-]+(:[a-zA-Z0-9._-]+)?$')",
    "self.ports.all(p, p.port > 0 && p.port < 65536)",
    "self.ports.all(p1, self.ports.exists_one(p2, p1.port == p2.port))",
    "self.labels.all(k, k.size() <= 63)",
    "self.labels.all(k, self.labels[k].matches('^[a-z0-9-]*$'))",
    "has(self.selector) ? self.selector.matchLabels.size() > 0 : true",
    "self.hostname.endsWith('.example.com')",
    "size(self.hostname) <= 253",
    "self.hostname.split('.').all(part, part.size() <= 63)",
    "self.ports.size() <= 16",
    "quantity(self.resources.cpu).isLessThan(quantity('64'))",
    "isQuantity(self.resources.memory)",
    "self.ports.map(p, p.name).exists(n, n == 'port-3')",
    "self.mode == oldSelf.mode",
];

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs it quick.
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick") || !args.iter().any(|a| a == "--bench");
    let target = if quick {
        Duration::from_millis(20)
    } else {
        Duration::from_millis(400)
    };
    let (ty, value) = spec();
    let env = Env::new()
        .variable("self", ty.clone())
        .variable("oldSelf", ty);
    let activation = Activation::new()
        .bind("self", value.clone())
        .bind("oldSelf", value);
    println!("## Evaluating compiled rules (one object, ns per evaluation)\n");
    println!("| rule | ns/eval | cost |");
    println!("|---|---:|---:|");
    let mut total = 0.0;
    for rule in RULES {
        let program = Program::compile(&env, rule).expect("the rules compile");
        let mut budget = Budget::new(u64::MAX);
        program
            .eval(&activation, &mut budget)
            .expect("the rules evaluate");
        let cost = u64::MAX - budget.remaining;
        // Calibrate to run about `target`, then take the best of three runs.
        let mut iterations = 1u64;
        loop {
            let started = Instant::now();
            run(&program, &activation, iterations);
            if started.elapsed() >= target / 10 || iterations >= 1 << 30 {
                break;
            }
            iterations *= 2;
        }
        iterations *= 10;
        let best = (0..3)
            .map(|_| {
                let started = Instant::now();
                run(&program, &activation, iterations);
                started.elapsed().as_nanos() as f64 / iterations as f64
            })
            .fold(f64::INFINITY, f64::min);
        total += best;
        println!("| `{rule}` | {best:.0} | {cost} |");
    }
    println!("| all {} rules | {total:.0} | |", RULES.len());
}

fn run(program: &Program, activation: &Activation, iterations: u64) {
    for _ in 0..iterations {
        let mut budget = Budget::new(1_000_000);
        black_box(program.eval(black_box(activation), &mut budget)).ok();
    }
}
