//! `format`: cel-go's string formatting before version 4 of ext strings (the version
//! Kubernetes 1.35 has), with the `en_US` locale: clauses `%s %d %f %e %b %x %X %o` and `%%`,
//! an optional precision `.N` for `%f` (and, as upstream parses it, for `%e`, where it only
//! sets a minimum width).

use crate::library::error;
use crate::{EvalError, Value};

/// Formats `template` with `args`.
pub fn format(template: &str, args: &[Value]) -> Result<String, EvalError> {
    let bytes = template.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    let mut next_arg = 0usize;
    let mut literal_start = 0;
    while i < bytes.len() {
        if bytes[i] != b'%' {
            i += 1;
            continue;
        }
        out.push_str(&template[literal_start..i]);
        if bytes.get(i + 1) == Some(&b'%') {
            out.push('%');
            i += 2;
            literal_start = i;
            continue;
        }
        let Some(arg) = args.get(next_arg) else {
            return Err(error(format!("index {next_arg} out of range")));
        };
        if i + 1 >= bytes.len() {
            return Err(error("unexpected end of string"));
        }
        let (read, clause) = parse_clause(&template[i + 1..])
            .map_err(|e| error(format!("could not parse formatting clause: {e}")))?;
        let text = clause
            .apply(arg)
            .map_err(|e| error(format!("error during formatting: {e}")))?;
        out.push_str(&text);
        i += 1 + read;
        literal_start = i;
        next_arg += 1;
    }
    out.push_str(&template[literal_start..]);
    Ok(out)
}

#[derive(Clone, Copy)]
enum Clause {
    String,
    Decimal,
    Fixed(usize),
    Scientific(usize),
    Binary,
    Hex(bool),
    Octal,
}

/// Reads `[.digits]verb` at the start of `s`: the bytes read and the clause.
fn parse_clause(s: &str) -> Result<(usize, Clause), String> {
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut precision = None;
    if bytes.first() == Some(&b'.') {
        i = 1;
        loop {
            match bytes.get(i) {
                None => {
                    return Err(
                        "error while parsing precision: could not find end of precision specifier"
                            .to_string(),
                    );
                }
                Some(b) if b.is_ascii_digit() => i += 1,
                Some(_) => break,
            }
        }
        let digits = &s[1..i];
        precision = Some(digits.parse::<usize>().map_err(|_| {
            format!(
                "error while parsing precision: error while converting precision to integer: strconv.Atoi: parsing {digits:?}: invalid syntax"
            )
        })?);
    }
    let verb = s[i..].chars().next().unwrap_or('\0');
    let clause = match verb {
        's' => Clause::String,
        'd' => Clause::Decimal,
        // Go's fmt refuses precisions and widths past 1e6; clamped here so that no
        // template can ask for a huge allocation.
        'f' => Clause::Fixed(precision.unwrap_or(6).min(1_000_000)),
        'e' => Clause::Scientific(precision.unwrap_or(6).min(1_000_000)),
        'b' => Clause::Binary,
        'x' => Clause::Hex(false),
        'X' => Clause::Hex(true),
        'o' => Clause::Octal,
        other => return Err(format!("unrecognized formatting clause \"{other}\"")),
    };
    Ok((i + verb.len_utf8(), clause))
}

impl Clause {
    fn apply(self, arg: &Value) -> Result<String, String> {
        let ty = arg.type_name();
        match (self, arg) {
            (Clause::String, _) => format_string(arg),
            (Clause::Decimal, Value::Int(i)) => Ok(i.to_string()),
            (Clause::Decimal, Value::Uint(u)) => Ok(u.to_string()),
            (Clause::Decimal, _) => Err(format!(
                "decimal clause can only be used on integers, was given {ty}"
            )),
            (Clause::Fixed(p), _) => match as_double(arg) {
                Some(d) => Ok(fixed_localized(d, p)),
                None => Err(format!(
                    "fixed-point clause can only be used on doubles, was given {ty}"
                )),
            },
            (Clause::Scientific(width), _) => match as_double(arg) {
                Some(d) => Ok(format!("{:>width$}", scientific(d, 6))),
                None => Err(format!(
                    "scientific clause can only be used on doubles, was given {ty}"
                )),
            },
            (Clause::Binary, Value::Int(i)) => Ok(signed_radix(*i, |u| format!("{u:b}"))),
            (Clause::Binary, Value::Uint(u)) => Ok(format!("{u:b}")),
            (Clause::Binary, Value::Bool(b)) => Ok(if *b { "1" } else { "0" }.to_string()),
            (Clause::Binary, _) => Err(format!(
                "only integers and bools can be formatted as binary, was given {ty}"
            )),
            (Clause::Hex(upper), _) => {
                let text = match arg {
                    Value::Int(i) => signed_radix(*i, |u| format!("{u:x}")),
                    Value::Uint(u) => format!("{u:x}"),
                    Value::String(s) => s.bytes().map(|b| format!("{b:02x}")).collect(),
                    Value::Bytes(b) => b.iter().map(|b| format!("{b:02x}")).collect(),
                    _ => {
                        return Err(format!(
                            "only integers, byte buffers, and strings can be formatted as hex, was given {ty}"
                        ));
                    }
                };
                Ok(if upper {
                    text.to_ascii_uppercase()
                } else {
                    text
                })
            }
            (Clause::Octal, Value::Int(i)) => Ok(signed_radix(*i, |u| format!("{u:o}"))),
            (Clause::Octal, Value::Uint(u)) => Ok(format!("{u:o}")),
            (Clause::Octal, _) => Err(format!(
                "octal clause can only be used on integers, was given {ty}"
            )),
        }
    }
}

/// A double, or the strings `NaN`, `Infinity`, `-Infinity` that `%f` and `%e` accept.
fn as_double(arg: &Value) -> Option<f64> {
    match arg {
        Value::Double(d) => Some(*d),
        Value::String(s) if &**s == "NaN" => Some(f64::NAN),
        Value::String(s) if &**s == "Infinity" => Some(f64::INFINITY),
        Value::String(s) if &**s == "-Infinity" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

fn signed_radix(i: i64, digits: impl Fn(u64) -> String) -> String {
    if i < 0 {
        format!("-{}", digits(i.unsigned_abs()))
    } else {
        digits(i as u64)
    }
}

/// `%.Nf` as golang.org/x/text's printer writes it for English: thousands grouped with
/// commas, `∞` for infinities.
fn fixed_localized(d: f64, precision: usize) -> String {
    if d.is_nan() {
        return "NaN".to_string();
    }
    if d.is_infinite() {
        return if d > 0.0 { "∞" } else { "-∞" }.to_string();
    }
    let plain = format!("{:.*}", precision, d.abs());
    let (whole, fraction) = plain.split_once('.').unwrap_or((&plain, ""));
    let mut grouped = String::new();
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    let sign = if d.is_sign_negative() && plain.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
        "-"
    } else {
        ""
    };
    if fraction.is_empty() {
        format!("{sign}{grouped}")
    } else {
        format!("{sign}{grouped}.{fraction}")
    }
}

/// `%e` as golang.org/x/text's printer writes it for English: a mantissa with `precision`
/// decimals, then `\u{202f}×\u{202f}10` and the exponent (at least two digits) in
/// superscript, `1.052033 × 10⁰³`.
fn scientific(d: f64, precision: usize) -> String {
    if d.is_nan() {
        return "NaN".to_string();
    }
    if d.is_infinite() {
        return if d > 0.0 { "∞" } else { "-∞" }.to_string();
    }
    let rust = format!("{:.*e}", precision, d);
    let (mantissa, exp) = rust.split_once('e').unwrap_or((&rust, "0"));
    let (minus, digits) = match exp.strip_prefix('-') {
        Some(digits) => ("\u{207b}", digits),
        None => ("", exp),
    };
    let superscript: String = format!("{digits:0>2}")
        .chars()
        .map(|c| match c {
            '0' => '\u{2070}',
            '1' => '\u{b9}',
            '2' => '\u{b2}',
            '3' => '\u{b3}',
            d => char::from_u32(0x2070 + d.to_digit(10).unwrap_or(0)).unwrap_or(d),
        })
        .collect();
    format!("{mantissa}\u{202f}\u{d7}\u{202f}10{minus}{superscript}")
}

/// Rewrites Rust's exponent (`e3`, `e-7`) as Go's (`e+03`, `e-07`).
fn go_exponent(rust: &str) -> String {
    match rust.split_once('e') {
        Some((mantissa, exp)) => {
            let (sign, digits) = match exp.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', exp),
            };
            format!("{mantissa}e{sign}{digits:0>2}")
        }
        None => rust.to_string(),
    }
}

/// Go's `%g` of a double: shortest digits, in exponent form below 1e-4 or from 1e6.
pub fn go_g(d: f64) -> String {
    if d.is_nan() {
        return "NaN".to_string();
    }
    if d.is_infinite() {
        return if d > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    if d == 0.0 {
        return if d.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let sci = format!("{d:e}");
    let exp: i32 = sci
        .split_once('e')
        .and_then(|(_, e)| e.parse().ok())
        .unwrap_or(0);
    if !(-4..6).contains(&exp) {
        go_exponent(&sci)
    } else {
        format!("{d}")
    }
}

/// `%s`: a value as a string (lists and maps as CEL literals).
fn format_string(arg: &Value) -> Result<String, String> {
    match arg {
        Value::List(_) | Value::Map(_) => literal(arg),
        Value::Null => Ok("null".to_string()),
        Value::Bytes(b) => std::str::from_utf8(b).map(str::to_string).map_err(|_| {
            "could not convert argument \"invalid UTF-8 in bytes, cannot convert to string\" to string"
                .to_string()
        }),
        Value::Int(_)
        | Value::Uint(_)
        | Value::Double(_)
        | Value::Bool(_)
        | Value::String(_)
        | Value::Duration(_)
        | Value::Timestamp(_)
        | Value::Type(_) => Ok(plain(arg)),
        other => Err(format!(
            "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, durations, and timestamps, was given {}",
            other.type_name()
        )),
    }
}

/// A value as `string(x)` converts it (and as Go's `%v` prints the scalars).
pub fn plain(arg: &Value) -> String {
    match arg {
        Value::Int(i) => i.to_string(),
        Value::Uint(u) => u.to_string(),
        Value::Double(d) => go_g(*d),
        Value::Bool(b) => b.to_string(),
        Value::String(s) => s.to_string(),
        Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        Value::Null => "null".to_string(),
        Value::Duration(d) => format!("{}s", d.as_secs_f64()),
        Value::Timestamp(t) => t.to_string(),
        Value::Type(t) => t.as_str().to_string(),
        other => format!("{other:?}"),
    }
}

/// A list or map element as a CEL literal, as `%s` prints containers. Nested containers are
/// walked with an explicit stack.
fn literal(arg: &Value) -> Result<String, String> {
    enum Step<'a> {
        Value(&'a Value),
        Text(String),
    }
    let mut out = String::new();
    let mut stack = vec![Step::Value(arg)];
    while let Some(step) = stack.pop() {
        let value = match step {
            Step::Text(t) => {
                out.push_str(&t);
                continue;
            }
            Step::Value(v) => v,
        };
        match value {
            Value::List(items) => {
                stack.push(Step::Text("]".to_string()));
                for (i, item) in items.iter().enumerate().rev() {
                    stack.push(Step::Value(item));
                    if i > 0 {
                        stack.push(Step::Text(", ".to_string()));
                    }
                }
                stack.push(Step::Text("[".to_string()));
            }
            Value::Map(map) => {
                let mut pairs = Vec::new();
                for (key, item) in &map.entries {
                    let key = key.to_value();
                    pairs.push((element(&key)?, item));
                }
                pairs.sort_by(|a, b| a.0.cmp(&b.0));
                stack.push(Step::Text("}".to_string()));
                for (i, (key, item)) in pairs.into_iter().enumerate().rev() {
                    stack.push(Step::Value(item));
                    stack.push(Step::Text(format!("{key}:")));
                    if i > 0 {
                        stack.push(Step::Text(", ".to_string()));
                    }
                }
                stack.push(Step::Text("{".to_string()));
            }
            other => out.push_str(&element(other)?),
        }
    }
    Ok(out)
}

/// A scalar inside a list or map, quoted as a CEL literal.
fn element(value: &Value) -> Result<String, String> {
    Ok(match value {
        Value::String(s) => go_quote(s),
        Value::Bytes(b) => format!("b{}", go_quote(&String::from_utf8_lossy(b))),
        Value::Double(d) if d.is_finite() => format!("{d:.6}"),
        Value::Double(d) => go_quote(&go_g(*d)),
        Value::Int(_) | Value::Uint(_) | Value::Bool(_) | Value::Null | Value::Type(_) => {
            plain(value)
        }
        Value::Timestamp(_) => format!("timestamp({})", go_quote(&plain(value))),
        Value::Duration(_) => format!("duration({})", go_quote(&plain(value))),
        other => return Err(format!("no formatting function for {}", other.type_name())),
    })
}

/// Go's `strconv.Quote` of bytes that may cut a character: valid text quoted as
/// [`go_quote`] does, each byte of an invalid sequence as `\xNN`.
pub fn go_quote_bytes(bytes: &[u8]) -> String {
    let mut out = String::from("\"");
    for chunk in bytes.utf8_chunks() {
        let valid = go_quote(chunk.valid());
        out.push_str(&valid[1..valid.len() - 1]);
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out.push('"');
    out
}

/// Go's `%q` of a string: double-quoted, with Go's escapes for what is not printable.
pub fn go_quote(s: &str) -> String {
    let mut out = String::from("\"");
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
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
