//! CEL's standard functions over evaluated arguments: arithmetic with cel-go's overflow
//! errors, equality and ordering, `size`, the string tests, `@in`, the optional library, and
//! (in the sibling modules) conversions and the timestamp and duration accessors.

use std::sync::Arc;

use crate::{EvalError, Value};

use super::call::no_such_overload;
use super::plan::{Callee, Function};
use super::{Outcome, convert, time};

fn runtime(message: &str) -> EvalError {
    EvalError::Runtime(message.to_string())
}

/// The standard library's functions that the interpreter dispatches without their names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Standard {
    Subtract,
    Multiply,
    Divide,
    Modulo,
    Negate,
    Not,
    Equal,
    NotEqual,
    Less,
    LessOrEqual,
    Greater,
    GreaterOrEqual,
    In,
    Size,
    Contains,
    StartsWith,
    EndsWith,
    Matches,
    OptionalOf,
    OptionalOfNonZeroValue,
    OptionalNone,
    MapInsert,
    HasValue,
    Value,
}

impl Standard {
    /// The function named `name`, if it is one of these.
    pub(crate) fn of(name: &str) -> Option<Standard> {
        use Standard::*;
        Some(match name {
            "_-_" => Subtract,
            "_*_" => Multiply,
            "_/_" => Divide,
            "_%_" => Modulo,
            "-_" => Negate,
            "!_" => Not,
            "_==_" => Equal,
            "_!=_" => NotEqual,
            "_<_" => Less,
            "_<=_" => LessOrEqual,
            "_>_" => Greater,
            "_>=_" => GreaterOrEqual,
            "@in" => In,
            "size" => Size,
            "contains" => Contains,
            "startsWith" => StartsWith,
            "endsWith" => EndsWith,
            "matches" => Matches,
            "optional.of" => OptionalOf,
            "optional.ofNonZeroValue" => OptionalOfNonZeroValue,
            "optional.none" => OptionalNone,
            "cel.@mapInsert" => MapInsert,
            "hasValue" => HasValue,
            "value" => Value,
            _ => return None,
        })
    }
}

/// Calls the standard function of `callee` (`args[0]` is the receiver when `method`); `None`
/// when the standard library has no such function for these arguments' types, so that
/// Kubernetes' libraries may have it (`size` of a non-sized value, `string(ip)`).
pub(crate) fn standard(callee: &Callee, method: bool, args: &[Value]) -> Option<Outcome> {
    use Standard as F;
    use Value::*;
    let Function::Standard(function) = callee.function else {
        return named(&callee.name, method, args);
    };
    Some(match (function, args) {
        (F::Subtract, [a, b]) => subtract(a, b),
        (F::Multiply, [a, b]) => multiply(a, b),
        (F::Divide, [a, b]) => divide(a, b),
        (F::Modulo, [a, b]) => modulo(a, b),
        (F::Negate, [a]) => match a {
            Int(i) => i
                .checked_neg()
                .map(Int)
                .ok_or_else(|| runtime("integer overflow")),
            Double(d) => Ok(Double(-d)),
            _ => Err(no_such_overload()),
        },
        (F::Not, [a]) => match a {
            Bool(b) => Ok(Bool(!b)),
            _ => Err(no_such_overload()),
        },
        (F::Equal, [a, b]) => Ok(Bool(a.equals(b))),
        (F::NotEqual, [a, b]) => Ok(Bool(!a.equals(b))),
        (F::Less, [a, b]) => order(a, b, |o| o.is_lt()),
        (F::LessOrEqual, [a, b]) => order(a, b, |o| o.is_le()),
        (F::Greater, [a, b]) => order(a, b, |o| o.is_gt()),
        (F::GreaterOrEqual, [a, b]) => order(a, b, |o| o.is_ge()),
        (F::In, [element, container]) => match container {
            List(items) => Ok(Bool(items.iter().any(|item| item.equals(element)))),
            Map(map) => Ok(Bool(map.lookup(element).ok().flatten().is_some())),
            _ => Err(no_such_overload()),
        },
        (F::Size, [value]) => match value {
            String(s) => Ok(Int(s.chars().count() as i64)),
            Bytes(b) => Ok(Int(b.len() as i64)),
            List(l) => Ok(Int(l.len() as i64)),
            Map(m) => Ok(Int(m.entries.len() as i64)),
            _ => return None,
        },
        (F::Contains, [String(s), String(sub)]) => Ok(Bool(s.contains(&**sub))),
        (F::StartsWith, [String(s), String(prefix)]) => Ok(Bool(s.starts_with(&**prefix))),
        (F::EndsWith, [String(s), String(suffix)]) => Ok(Bool(s.ends_with(&**suffix))),
        (F::Matches, [String(s), String(pattern)]) => match &callee.regex {
            Some(re) => Ok(Bool(re.is_match(s))),
            None => crate::library::regex::compile(pattern).map(|re| Bool(re.is_match(s))),
        },
        (F::OptionalOf, [value]) if !method => Ok(Optional(Some(Arc::new(value.clone())))),
        (F::OptionalOfNonZeroValue, [value]) if !method => Ok(Optional(
            (!is_zero_value(value)).then(|| Arc::new(value.clone())),
        )),
        (F::OptionalNone, []) if !method => Ok(Optional(None)),
        (F::MapInsert, [Map(m), rest @ ..]) if !method && matches!(rest.len(), 1 | 2) => {
            let mut inserted = (**m).clone();
            map_insert(&mut inserted, rest).map(|()| Map(Arc::new(inserted)))
        }
        (F::HasValue, [Optional(inner)]) if method => Ok(Bool(inner.is_some())),
        (F::Value, [Optional(inner)]) if method => match inner {
            Some(inner) => Ok((**inner).clone()),
            None => Err(runtime("optional.none() dereference")),
        },
        _ => return named(&callee.name, method, args),
    })
}

/// The conversions and the timestamp and duration accessors, by name.
fn named(function: &str, method: bool, args: &[Value]) -> Option<Outcome> {
    if !method && let Some(outcome) = convert::convert(function, args) {
        return Some(outcome);
    }
    time::accessor(function, method, args)
}

/// `cel.@mapInsert(m, k, v)` and `cel.@mapInsert(m, entries)` (the ext comprehensions'
/// `transformMap` and `transformMapEntry` steps): adds to `map`, refusing a key it has.
pub(crate) fn map_insert(map: &mut crate::Map, rest: &[Value]) -> Result<(), EvalError> {
    let mut insert = |key: &Value, value: &Value| {
        let Some(key) = crate::Key::from_value(key) else {
            return Err(EvalError::Runtime(format!(
                "unsupported key type: {}",
                key.type_name()
            )));
        };
        if map.get(&key).is_some() {
            return Err(EvalError::Runtime(format!(
                "insert failed: key {} already exists",
                convert::go_format(&key.to_value())
            )));
        }
        map.entries.insert(key, value.clone());
        Ok(())
    };
    match rest {
        [key, value] => insert(key, value),
        [Value::Map(entries)] => {
            for (key, value) in &entries.entries {
                insert(&key.to_value(), value)?;
            }
            Ok(())
        }
        _ => Err(no_such_overload()),
    }
}

/// Whether `value` is its type's zero value (`optional.ofNonZeroValue`).
fn is_zero_value(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Int(i) => *i == 0,
        Value::Uint(u) => *u == 0,
        Value::Double(d) => *d == 0.0,
        Value::String(s) => s.is_empty(),
        Value::Bytes(b) => b.is_empty(),
        Value::List(l) => l.is_empty(),
        Value::Map(m) => m.entries.is_empty(),
        Value::Duration(d) => d.is_zero(),
        Value::Timestamp(t) => {
            t.as_second() == time::MIN_UNIX_SECONDS && t.subsec_nanosecond() == 0
        }
        Value::Optional(inner) => inner.is_none(),
        Value::Type(_) | Value::Opaque(_) => false,
    }
}

/// `<`, `<=`, `>`, `>=` by CEL's ordering.
fn order(a: &Value, b: &Value, holds: fn(std::cmp::Ordering) -> bool) -> Outcome {
    match a.compare(b) {
        Some(ordering) => Ok(Value::Bool(holds(ordering))),
        None if is_nan(a) || is_nan(b) => {
            let numeric =
                |v: &Value| matches!(v, Value::Int(_) | Value::Uint(_) | Value::Double(_));
            if numeric(a) && numeric(b) {
                Err(runtime("NaN values cannot be ordered"))
            } else {
                Err(no_such_overload())
            }
        }
        None => Err(no_such_overload()),
    }
}

fn is_nan(value: &Value) -> bool {
    matches!(value, Value::Double(d) if d.is_nan())
}

/// `_+_`.
pub(crate) fn add(args: &[Value]) -> Outcome {
    use Value::*;
    let [a, b] = args else {
        return Err(no_such_overload());
    };
    match (a, b) {
        (Int(x), Int(y)) => x
            .checked_add(*y)
            .map(Int)
            .ok_or_else(|| runtime("integer overflow")),
        (Uint(x), Uint(y)) => x
            .checked_add(*y)
            .map(Uint)
            .ok_or_else(|| runtime("unsigned integer overflow")),
        (Double(x), Double(y)) => Ok(Double(x + y)),
        (String(x), String(y)) => {
            let mut joined = std::string::String::with_capacity(x.len() + y.len());
            joined.push_str(x);
            joined.push_str(y);
            Ok(String(Arc::from(joined)))
        }
        (Bytes(x), Bytes(y)) => {
            let mut joined = Vec::with_capacity(x.len() + y.len());
            joined.extend_from_slice(x);
            joined.extend_from_slice(y);
            Ok(Bytes(Arc::from(joined)))
        }
        (List(x), List(y)) => {
            let mut joined = Vec::with_capacity(x.len() + y.len());
            joined.extend(x.iter().cloned());
            joined.extend(y.iter().cloned());
            Ok(Value::list(joined))
        }
        (Duration(x), Duration(y)) => time::duration_checked(x.checked_add(*y)),
        (Timestamp(t), Duration(d)) | (Duration(d), Timestamp(t)) => time::add_to_timestamp(t, *d),
        _ => Err(no_such_overload()),
    }
}

fn subtract(a: &Value, b: &Value) -> Outcome {
    use Value::*;
    match (a, b) {
        (Int(x), Int(y)) => x
            .checked_sub(*y)
            .map(Int)
            .ok_or_else(|| runtime("integer overflow")),
        (Uint(x), Uint(y)) => x
            .checked_sub(*y)
            .map(Uint)
            .ok_or_else(|| runtime("unsigned integer overflow")),
        (Double(x), Double(y)) => Ok(Double(x - y)),
        (Duration(x), Duration(y)) => time::duration_checked(x.checked_sub(*y)),
        (Timestamp(x), Timestamp(y)) => time::duration_checked(Some(x.duration_since(*y))),
        (Timestamp(t), Duration(d)) => match d.checked_neg() {
            Some(d) => time::add_to_timestamp(t, d),
            None => Err(runtime("timestamp overflow")),
        },
        _ => Err(no_such_overload()),
    }
}

fn multiply(a: &Value, b: &Value) -> Outcome {
    use Value::*;
    match (a, b) {
        (Int(x), Int(y)) => x
            .checked_mul(*y)
            .map(Int)
            .ok_or_else(|| runtime("integer overflow")),
        (Uint(x), Uint(y)) => x
            .checked_mul(*y)
            .map(Uint)
            .ok_or_else(|| runtime("unsigned integer overflow")),
        (Double(x), Double(y)) => Ok(Double(x * y)),
        _ => Err(no_such_overload()),
    }
}

fn divide(a: &Value, b: &Value) -> Outcome {
    use Value::*;
    match (a, b) {
        (Int(_), Int(0)) | (Uint(_), Uint(0)) => Err(runtime("division by zero")),
        (Int(x), Int(y)) => x
            .checked_div(*y)
            .map(Int)
            .ok_or_else(|| runtime("integer overflow")),
        (Uint(x), Uint(y)) => Ok(Uint(x / y)),
        (Double(x), Double(y)) => Ok(Double(x / y)),
        _ => Err(no_such_overload()),
    }
}

fn modulo(a: &Value, b: &Value) -> Outcome {
    use Value::*;
    match (a, b) {
        (Int(_), Int(0)) | (Uint(_), Uint(0)) => Err(runtime("modulus by zero")),
        (Int(x), Int(y)) => x
            .checked_rem(*y)
            .map(Int)
            .ok_or_else(|| runtime("integer overflow")),
        (Uint(x), Uint(y)) => Ok(Uint(x % y)),
        _ => Err(no_such_overload()),
    }
}
