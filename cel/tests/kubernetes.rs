//! The whole pipeline (parse, check, evaluate) through the public API, on expressions of the
//! kinds real CRDs and policies use: every library together, as one environment.

use std::collections::BTreeMap;
use std::sync::Arc;

use atoll_cel::{Activation, Budget, Env, Key, Map, ObjectType, Program, Type, Value};

fn object(fields: &[(&str, Type)]) -> Type {
    Type::Object(Arc::new(ObjectType {
        name: "object".into(),
        fields: fields
            .iter()
            .map(|(name, ty)| (Arc::from(*name), ty.clone()))
            .collect::<BTreeMap<_, _>>(),
    }))
}

fn map(entries: &[(&str, Value)]) -> Value {
    let mut map = Map::default();
    for (key, value) in entries {
        map.entries
            .insert(Key::String(Arc::from(*key)), value.clone());
    }
    Value::Map(Arc::new(map))
}

/// Evaluates `source` with `self` bound to `value` of type `ty`.
fn eval(ty: &Type, value: &Value, source: &str) -> Result<Value, String> {
    let env = Env::new().variable("self", ty.clone());
    let program = Program::compile(&env, source).map_err(|e| e.to_string())?;
    let activation = Activation::new().bind("self", value.clone());
    program
        .eval(&activation, &mut Budget::new(1_000_000))
        .map_err(|e| e.to_string())
}

fn is_true(ty: &Type, value: &Value, source: &str) {
    match eval(ty, value, source) {
        Ok(Value::Bool(true)) => {}
        other => panic!("{source}: {other:?}"),
    }
}

#[test]
fn the_kubernetes_libraries_work_together() {
    let ty = object(&[
        ("name", Type::String),
        ("cpu", Type::String),
        ("addr", Type::String),
        ("url", Type::String),
        ("tags", Type::List(Box::new(Type::String))),
        ("owner", Type::String),
    ]);
    let value = map(&[
        ("name", Value::string("Shop-EU")),
        ("cpu", Value::string("500m")),
        ("addr", Value::string("10.1.2.3")),
        ("url", Value::string("https://hub.example.com:8443/api?x=1")),
        (
            "tags",
            Value::list(vec![
                Value::string("b"),
                Value::string("a"),
                Value::string("b"),
            ]),
        ),
    ]);
    for source in [
        "self.name.lowerAscii() == 'shop-eu'",
        "self.name.split('-') == ['Shop', 'EU']",
        "quantity(self.cpu).isLessThan(quantity('1'))",
        "quantity(self.cpu).add(quantity('500m')).compareTo(quantity('1')) == 0",
        "isQuantity('1Gi') && !isQuantity('1 Gi')",
        "string(ip(self.addr)) == '10.1.2.3'",
        "cidr('10.0.0.0/8').containsIP(self.addr)",
        "ip(self.addr).family() == 4",
        "url(self.url).getHost() == 'hub.example.com:8443'",
        "url(self.url).getScheme() in ['http', 'https', 'socks5']",
        "isURL(self.url) && url(self.url).getQuery()['x'] == ['1']",
        "!format.labelValue().validate(self.name).hasValue()",
        "format.dns1123Label().validate(self.name).hasValue()",
        "self.tags.sortBy(t, t) == ['a', 'b', 'b']",
        "self.tags.distinct() == ['b', 'a']",
        "sets.contains(self.tags, ['a'])",
        "self.tags.transformList(i, t, i) == [0, 1, 2]",
        "self.tags.exists(i, t, i == 1 && t == 'a')",
        "self.tags.indexOf('b') == 0 && self.tags.lastIndexOf('b') == 2",
        "semver('1.2.3').isLessThan(semver('1.10.0'))",
        "self.name.find('[A-Z]+') == 'S'",
        "self.?owner.orValue('none') == 'none' && !has(self.owner)",
        "duration('1h30m') == duration('90m')",
        "timestamp('2026-01-02T03:04:05Z').getFullYear() == 2026",
        "type(self.name) == string",
    ] {
        is_true(&ty, &value, source);
    }
}

#[test]
fn mistakes_are_caught_when_compiled_not_when_run() {
    let ty = object(&[("replicas", Type::Int)]);
    let compile = |source: &str| {
        Program::compile(&Env::new().variable("self", ty.clone()), source)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    assert_eq!(
        compile("self.replicaz > 0").unwrap_err(),
        "ERROR: <input>:1:5: undefined field 'replicaz'\n | self.replicaz > 0\n | ....^"
    );
    assert!(
        compile("self.replicas > 'a'")
            .unwrap_err()
            .contains("found no matching overload for '_>_' applied to '(int, string)'")
    );
    assert!(
        compile("other > 1")
            .unwrap_err()
            .contains("undeclared reference to 'other'")
    );
    assert!(
        compile("self.replicas > 0 &&")
            .unwrap_err()
            .contains("Syntax error")
    );
    assert!(compile("duration('1x') > duration('1s')").is_err());
}

#[test]
fn a_costly_expression_stops_at_its_budget() {
    let ty = object(&[("items", Type::List(Box::new(Type::Int)))]);
    let items = Value::list((0..1_000).map(Value::Int).collect());
    let value = map(&[("items", items)]);
    let env = Env::new().variable("self", ty);
    let program = Program::compile(
        &env,
        "self.items.all(a, self.items.all(b, self.items.all(c, a + b + c >= 0)))",
    )
    .unwrap();
    let activation = Activation::new().bind("self", value);
    let mut budget = Budget::new(1_000_000);
    let started = std::time::Instant::now();
    assert_eq!(
        program
            .eval(&activation, &mut budget)
            .unwrap_err()
            .to_string(),
        "operation cancelled: actual cost limit exceeded"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}
