//! cel-go's two-variable comprehensions library (`ext.TwoVarComprehensions()`, Kubernetes
//! 1.32 and later): the macros are the parser's; at run time they call `cel.@mapInsert`,
//! which adds a key and value (or every entry of a second map) to a map, refusing a key the
//! map already has.

use std::sync::Arc;

use super::{error, finish, no_such_overload};
use crate::{Budget, EvalError, Key, Map, Value};

/// `cel.@mapInsert`; `None` for other names.
pub fn call(
    function: &str,
    receiver: Option<&Value>,
    args: &[Value],
    budget: &mut Budget,
) -> Option<Result<Value, EvalError>> {
    if function != "cel.@mapInsert" {
        return None;
    }
    let result = match (receiver, args) {
        (None, [Value::Map(map), key, value]) => insert(map, [(key.clone(), value.clone())]),
        (None, [Value::Map(map), Value::Map(update)]) => insert(
            map,
            update
                .entries
                .iter()
                .map(|(k, v)| (k.to_value(), v.clone())),
        ),
        _ => Err(no_such_overload(function)),
    };
    finish(budget, 1, result)
}

fn insert(
    map: &Arc<Map>,
    entries: impl IntoIterator<Item = (Value, Value)>,
) -> Result<Value, EvalError> {
    let mut out = (**map).clone();
    for (key, value) in entries {
        if out.lookup(&key)?.is_some() {
            return Err(error(format!(
                "insert failed: key {} already exists",
                super::strings::plain(&key)
            )));
        }
        let Some(key) = Key::from_value(&key) else {
            return Err(error(format!("unsupported key type: {}", key.type_name())));
        };
        out.entries.insert(key, value);
    }
    Ok(Value::Map(Arc::new(out)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::library::testing::*;

    fn map(entries: &[(&str, i64)]) -> Value {
        let mut m = Map::default();
        for (k, v) in entries {
            m.entries.insert(Key::String((*k).into()), Value::Int(*v));
        }
        Value::Map(Arc::new(m))
    }

    #[test]
    fn map_insert() {
        assert_value(
            eval(
                "cel.@mapInsert",
                None,
                &[map(&[("a", 1)]), s("b"), Value::Int(2)],
            ),
            map(&[("a", 1), ("b", 2)]),
        );
        assert_value(
            eval(
                "cel.@mapInsert",
                None,
                &[map(&[("a", 1)]), map(&[("b", 2), ("c", 3)])],
            ),
            map(&[("a", 1), ("b", 2), ("c", 3)]),
        );
        assert_error(
            eval(
                "cel.@mapInsert",
                None,
                &[map(&[("a", 1)]), s("a"), Value::Int(2)],
            ),
            "insert failed: key a already exists",
        );
        assert_error(
            eval(
                "cel.@mapInsert",
                None,
                &[map(&[("a", 1)]), map(&[("a", 2)])],
            ),
            "insert failed: key a already exists",
        );
        assert_error(
            eval(
                "cel.@mapInsert",
                None,
                &[Value::Int(1), s("a"), Value::Int(2)],
            ),
            "no such overload: cel.@mapInsert",
        );
    }
}
