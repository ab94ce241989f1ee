//! Go's text renderings that upstream error messages are built from: `strconv.Quote` (`%q`),
//! `%v` of numbers, and `encoding/json` output (sorted keys, HTML-safe escaping).

use serde_json::{Number, Value};

/// How upstream's `field.Error` prints a bad value: strings quoted, scalars plain, everything
/// else as JSON.
pub(crate) fn bad_value(value: &Value) -> String {
    match value {
        Value::String(s) => go_quote(s),
        Value::Number(n) => number_v(n),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".to_string(),
        Value::Array(_) | Value::Object(_) => go_json(value),
    }
}

/// Go's `strconv.Quote`.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if c.is_control() || (c.is_whitespace() && c != ' ') => {
                let code = c as u32;
                if code < 0x10000 {
                    out.push_str(&format!("\\u{code:04x}"));
                } else {
                    out.push_str(&format!("\\U{code:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `%v` of an `int64` or `float64`.
pub(crate) fn number_v(n: &Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    float_v(n.as_f64().unwrap_or(0.0))
}

/// Go's `%v` of a `float64`: the shortest representation, in exponent form when the decimal
/// exponent is below -4 or at least 6 (`1e+06`, `1.5e-05`).
pub(crate) fn float_v(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".to_string()
        } else {
            "-Inf".to_string()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".to_string()
        } else {
            "0".to_string()
        };
    }
    let (mantissa, exp) = shortest_exponent_form(f);
    if !(-4..6).contains(&exp) {
        exponent_form(&mantissa, exp)
    } else {
        format!("{f}")
    }
}

/// `encoding/json`'s rendering of a `float64`: plain decimal unless the magnitude is below 1e-6
/// or at least 1e21 (`1e-07`, `1e+21`, with the exponent's leading zero dropped).
fn float_json(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let (mantissa, exp) = shortest_exponent_form(f);
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{}", exp.unsigned_abs());
    }
    format!("{f}")
}

/// The shortest round-trip digits of `f` as (`-1.5`, exponent) in scientific notation.
fn shortest_exponent_form(f: f64) -> (String, i32) {
    let text = format!("{f:e}");
    match text.split_once('e') {
        Some((mantissa, exp)) => (mantissa.to_string(), exp.parse().unwrap_or(0)),
        None => (text, 0),
    }
}

fn exponent_form(mantissa: &str, exp: i32) -> String {
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
}

/// `encoding/json.Marshal` of a JSON value: compact, object keys sorted, `<`, `>` and `&`
/// escaped as `\u003c`, `\u003e`, `\u0026`.
pub(crate) fn go_json(value: &Value) -> String {
    let mut out = String::new();
    write_json(&mut out, value);
    out
}

fn write_json(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if n.is_i64() || n.is_u64() {
                out.push_str(&n.to_string());
            } else {
                out.push_str(&float_json(n.as_f64().unwrap_or(0.0)));
            }
        }
        Value::String(s) => write_json_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(out, key);
                out.push(':');
                write_json(out, &map[key.as_str()]);
            }
            out.push('}');
        }
    }
}

fn write_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn quote_escapes_like_strconv() {
        assert_eq!(go_quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(go_quote("tab\there\n"), r#""tab\there\n""#);
        assert_eq!(go_quote("\u{1}"), r#""\x01""#);
        assert_eq!(go_quote("héllo"), "\"héllo\"");
        assert_eq!(go_quote("\u{a0}"), r#""\u00a0""#);
    }

    #[test]
    fn floats_print_like_percent_v() {
        assert_eq!(float_v(1.0), "1");
        assert_eq!(float_v(0.5), "0.5");
        assert_eq!(float_v(100000.0), "100000");
        assert_eq!(float_v(1000000.0), "1e+06");
        assert_eq!(float_v(1234567.0), "1.234567e+06");
        assert_eq!(float_v(0.0001), "0.0001");
        assert_eq!(float_v(0.00001), "1e-05");
        assert_eq!(float_v(-2.5e-7), "-2.5e-07");
    }

    #[test]
    fn json_matches_encoding_json() {
        assert_eq!(
            go_json(&json!({"z": 1, "a": "x&y"})),
            r#"{"a":"x\u0026y","z":1}"#
        );
        assert_eq!(
            go_json(&json!([1.5, 1e21, 1e-7, null, true])),
            "[1.5,1e+21,1e-7,null,true]"
        );
    }
}
