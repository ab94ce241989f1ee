//! Type conversions (`int`, `uint`, `double`, `string`, `bytes`, `bool`, `duration`,
//! `timestamp`, `dyn`, `type`) with cel-go's range errors and wording, and values printed as
//! cel-go's error messages print them (Go's `%v`).

use std::sync::Arc;

use crate::value::TypeName;
use crate::{EvalError, Value};

use super::{Outcome, time};

/// Whether `function` is a type conversion (cel-go's `IsTypeConversionFunction`).
pub(crate) fn is_conversion(function: &str) -> bool {
    matches!(
        function,
        "bool"
            | "bytes"
            | "double"
            | "duration"
            | "dyn"
            | "int"
            | "string"
            | "timestamp"
            | "type"
            | "uint"
    )
}

/// Converts with conversion function `function`; `None` when `function` is no conversion or
/// the standard library cannot convert this argument (a library may: `string(ip)`).
pub(crate) fn convert(function: &str, args: &[Value]) -> Option<Outcome> {
    let [value] = args else {
        return None;
    };
    let target = match function {
        "dyn" => return Some(Ok(value.clone())),
        "type" => return Some(Ok(Value::Type(value.type_name()))),
        "int" => TypeName::Int,
        "uint" => TypeName::Uint,
        "double" => TypeName::Double,
        "string" => TypeName::String,
        "bytes" => TypeName::Bytes,
        "bool" => TypeName::Bool,
        "duration" => TypeName::Duration,
        "timestamp" => TypeName::Timestamp,
        _ => return None,
    };
    if let Value::Opaque(_) | Value::Optional(_) = value {
        return None;
    }
    Some(convert_to(value, &target))
}

fn conversion_error(from: &Value, to: &TypeName) -> EvalError {
    EvalError::Runtime(format!(
        "type conversion error from '{}' to '{}'",
        from.type_name(),
        to
    ))
}

fn overflow(message: &str) -> EvalError {
    EvalError::Runtime(message.to_string())
}

/// The largest doubles that convert to int and uint (exclusive bounds, as cel-go's).
const TWO_TO_63: f64 = 9.223_372_036_854_776e18;
const TWO_TO_64: f64 = 1.844_674_407_370_955_2e19;

fn convert_to(value: &Value, target: &TypeName) -> Outcome {
    use Value::*;
    let converted = match (target, value) {
        (TypeName::Int, Int(i)) => Int(*i),
        (TypeName::Int, Uint(u)) => {
            Int(i64::try_from(*u).map_err(|_| overflow("integer overflow"))?)
        }
        (TypeName::Int, Double(d)) => {
            if !d.is_finite() || *d <= -TWO_TO_63 || *d >= TWO_TO_63 {
                return Err(overflow("integer overflow"));
            }
            Int(*d as i64)
        }
        (TypeName::Int, String(s)) => match s.parse::<i64>() {
            Ok(i) => Int(i),
            _ => return Err(conversion_error(value, target)),
        },
        (TypeName::Int, Timestamp(t)) => Int(t.as_second()),
        (TypeName::Int, Duration(d)) => Int(time::nanoseconds(d)),
        (TypeName::Uint, Uint(u)) => Uint(*u),
        (TypeName::Uint, Int(i)) => {
            Uint(u64::try_from(*i).map_err(|_| overflow("unsigned integer overflow"))?)
        }
        (TypeName::Uint, Double(d)) => {
            if !d.is_finite() || *d < 0.0 || *d >= TWO_TO_64 {
                return Err(overflow("unsigned integer overflow"));
            }
            Uint(*d as u64)
        }
        (TypeName::Uint, String(s)) => match s.parse::<u64>() {
            Ok(u) if !s.starts_with('+') => Uint(u),
            _ => return Err(conversion_error(value, target)),
        },
        (TypeName::Double, Double(d)) => Double(*d),
        (TypeName::Double, Int(i)) => Double(*i as f64),
        (TypeName::Double, Uint(u)) => Double(*u as f64),
        (TypeName::Double, String(s)) => match parse_go_float(s) {
            Some(d) => Double(d),
            None => return Err(conversion_error(value, target)),
        },
        (TypeName::String, String(s)) => String(s.clone()),
        (TypeName::String, Bytes(b)) => match std::str::from_utf8(b) {
            Ok(s) => Value::string(s),
            Err(_) => {
                return Err(EvalError::Runtime(
                    "invalid UTF-8 in bytes, cannot convert to string".to_string(),
                ));
            }
        },
        (TypeName::String, Int(_) | Uint(_) | Bool(_)) => Value::string(&go_format(value)),
        (TypeName::String, Double(d)) => Value::string(&format_g(*d)),
        (TypeName::String, Duration(d)) => Value::string(&time::format_duration(d)),
        (TypeName::String, Timestamp(t)) => Value::string(&time::format_timestamp(t)),
        (TypeName::String, Type(t)) => Value::string(t.as_str()),
        (TypeName::Bytes, Bytes(b)) => Bytes(b.clone()),
        (TypeName::Bytes, String(s)) => Bytes(Arc::from(s.as_bytes())),
        (TypeName::Bool, Bool(b)) => Bool(*b),
        (TypeName::Bool, String(s)) => match &**s {
            "1" | "t" | "T" | "TRUE" | "true" | "True" => Bool(true),
            "0" | "f" | "F" | "FALSE" | "false" | "False" => Bool(false),
            _ => return Err(conversion_error(value, target)),
        },
        (TypeName::Duration, Duration(d)) => Duration(*d),
        (TypeName::Duration, String(s)) => match time::parse_duration(s) {
            Some(d) => Duration(d),
            None => return Err(conversion_error(value, target)),
        },
        (TypeName::Timestamp, Timestamp(t)) => Timestamp(*t),
        (TypeName::Timestamp, String(s)) => time::parse_timestamp(s)?,
        (TypeName::Timestamp, Int(seconds)) => time::timestamp_from_seconds(*seconds)?,
        _ => return Err(conversion_error(value, target)),
    };
    Ok(converted)
}

/// Go's `strconv.ParseFloat`: decimal and exponent forms, `inf`, `infinity` and `nan` in any
/// case, with an optional sign.
fn parse_go_float(s: &str) -> Option<f64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    let named = ["inf", "infinity", "nan"]
        .iter()
        .any(|n| digits.eq_ignore_ascii_case(n));
    let plain = !digits.is_empty()
        && digits
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
    if named || plain {
        s.parse::<f64>().ok()
    } else {
        None
    }
}

/// Go's `%g` with the shortest precision: exponent form when the exponent is below -4 or at
/// least 6 (`1e+06`, `1e-05`), plain digits otherwise.
pub(crate) fn format_g(d: f64) -> String {
    if d.is_nan() {
        return "NaN".to_string();
    }
    if d.is_infinite() {
        return if d > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    if d == 0.0 {
        return if d.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    // Rust's `{:e}` gives the shortest digits that round-trip: `1.5e-7`.
    let scientific = format!("{d:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if !(-4..6).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    } else {
        format!("{d}")
    }
}

/// How much of a value an error message shows.
const MESSAGE_LIMIT: usize = 1024;

/// A value as Go's `%v` prints it in cel-go's error messages, cut after about a thousand
/// characters (`...`), so that an error about a huge value costs no more than a small one.
pub(crate) fn go_format(value: &Value) -> String {
    let mut out = String::new();
    write_go(value, &mut out);
    if out.len() > MESSAGE_LIMIT {
        let mut end = MESSAGE_LIMIT;
        while !out.is_char_boundary(end) {
            end -= 1;
        }
        out.truncate(end);
        out.push_str("...");
    }
    out
}

/// Writes `value` to `out` until `out` is past the limit (each level of nesting writes a
/// bracket first, so the recursion ends within the limit's depth).
fn write_go(value: &Value, out: &mut String) {
    if out.len() > MESSAGE_LIMIT {
        return;
    }
    let room = MESSAGE_LIMIT + 1 - out.len();
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => out.push_str(&i.to_string()),
        Value::Uint(u) => out.push_str(&u.to_string()),
        Value::Double(d) => out.push_str(&format_g(*d)),
        Value::String(s) => {
            let mut end = room.min(s.len());
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            out.push_str(&s[..end]);
        }
        Value::Bytes(b) => out.push_str(&String::from_utf8_lossy(&b[..room.min(b.len())])),
        Value::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if out.len() > MESSAGE_LIMIT {
                    return;
                }
                if i > 0 {
                    out.push_str(", ");
                }
                write_go(item, out);
            }
            out.push(']');
        }
        Value::Map(map) => {
            out.push('{');
            for (i, (key, item)) in map.entries.iter().enumerate() {
                if out.len() > MESSAGE_LIMIT {
                    return;
                }
                if i > 0 {
                    out.push_str(", ");
                }
                write_go(&key.to_value(), out);
                out.push_str(": ");
                write_go(item, out);
            }
            out.push('}');
        }
        Value::Duration(d) => out.push_str(&time::format_duration(d)),
        Value::Timestamp(t) => out.push_str(&time::format_timestamp(t)),
        Value::Optional(Some(inner)) => {
            out.push_str("optional(");
            write_go(inner, out);
            out.push(')');
        }
        Value::Optional(None) => out.push_str("optional.none()"),
        Value::Type(t) => out.push_str(t.as_str()),
        Value::Opaque(o) => out.push_str(o.type_name()),
    }
}
