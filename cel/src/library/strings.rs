//! cel-go's ext strings library at version 2, as Kubernetes 1.35 enables it: `charAt`,
//! `indexOf`, `lastIndexOf`, `lowerAscii`, `upperAscii`, `replace`, `split`, `substring`,
//! `trim`, `join`, `strings.quote` and `format` (no `reverse`: that is version 3). Indexes
//! count code points.

mod format;

pub(crate) use format::{go_quote, go_quote_bytes, plain};

use super::{
    STRING_TRAVERSAL_COST_FACTOR, actual_size, ceil_cost, error, finish, no_such_overload,
    string_traversal_cost, traversal_cost,
};
use crate::{Budget, EvalError, Value};

/// The string functions; `None` for other names, and for `indexOf`/`lastIndexOf` on a list.
pub fn call(
    function: &str,
    receiver: Option<&Value>,
    args: &[Value],
    budget: &mut Budget,
) -> Option<Result<Value, EvalError>> {
    if function == "strings.quote" {
        return match (receiver, args) {
            (None, [text @ Value::String(s)]) => finish(
                budget,
                string_traversal_cost(text),
                Ok(Value::string(&quote(s))),
            ),
            _ => Some(Err(no_such_overload(function))),
        };
    }
    if function == "join" {
        let Some(Value::List(list)) = receiver else {
            return Some(Err(no_such_overload(function)));
        };
        let separator = match args {
            [] => "",
            [Value::String(sep)] => sep,
            _ => return Some(Err(no_such_overload(function))),
        };
        let result = join(list, separator);
        let size = result.as_ref().map_or(1, actual_size);
        return finish(
            budget,
            ceil_cost(size, 2.0 * STRING_TRAVERSAL_COST_FACTOR),
            result,
        );
    }
    let Some(target @ Value::String(text)) = receiver else {
        return None;
    };
    let one_pass = string_traversal_cost(target);
    let two_passes = ceil_cost(actual_size(target), 2.0 * STRING_TRAVERSAL_COST_FACTOR);
    let text: &str = text;
    match (function, args) {
        ("charAt", [Value::Int(i)]) => finish(budget, 1, char_at(text, *i)),
        ("indexOf", [Value::String(sub)]) => {
            finish(budget, traversal_cost(target), index_of(text, sub, 0))
        }
        ("indexOf", [Value::String(sub), Value::Int(offset)]) => {
            finish(budget, traversal_cost(target), index_of(text, sub, *offset))
        }
        ("lastIndexOf", [Value::String(sub)]) => finish(
            budget,
            traversal_cost(target),
            last_index_of(text, sub, None),
        ),
        ("lastIndexOf", [Value::String(sub), Value::Int(offset)]) => finish(
            budget,
            traversal_cost(target),
            last_index_of(text, sub, Some(*offset)),
        ),
        ("lowerAscii", []) => finish(budget, one_pass, Ok(owned(text.to_ascii_lowercase()))),
        ("upperAscii", []) => finish(budget, one_pass, Ok(owned(text.to_ascii_uppercase()))),
        ("trim", []) => finish(budget, one_pass, Ok(text.trim().into())),
        ("substring", [Value::Int(start)]) => {
            finish(budget, one_pass, substring(text, *start, None))
        }
        ("substring", [Value::Int(start), Value::Int(end)]) => {
            finish(budget, one_pass, substring(text, *start, Some(*end)))
        }
        ("replace", [Value::String(old), Value::String(new)]) => {
            finish(budget, two_passes, replace(text, old, new, -1))
        }
        ("replace", [Value::String(old), Value::String(new), Value::Int(n)]) => {
            finish(budget, two_passes, replace(text, old, new, *n))
        }
        ("split", [Value::String(sep)]) => finish(budget, two_passes, Ok(split(text, sep, -1))),
        ("split", [Value::String(sep), Value::Int(n)]) => {
            finish(budget, two_passes, Ok(split(text, sep, *n)))
        }
        ("format", [Value::List(list)]) => {
            finish(budget, one_pass, format::format(text, list).map(owned))
        }
        (
            "charAt" | "indexOf" | "lastIndexOf" | "lowerAscii" | "upperAscii" | "trim"
            | "substring" | "replace" | "split" | "format",
            _,
        ) => Some(Err(no_such_overload(function))),
        _ => None,
    }
}

fn owned(s: String) -> Value {
    Value::String(s.into())
}

fn out_of_range(index: i64) -> EvalError {
    error(format!("index out of range: {index}"))
}

fn char_at(text: &str, index: i64) -> Result<Value, EvalError> {
    let count = text.chars().count();
    if index < 0 || index as u64 > count as u64 {
        return Err(out_of_range(index));
    }
    Ok(text.chars().nth(index as usize).map_or_else(
        || Value::string(""),
        |c| Value::string(c.encode_utf8(&mut [0; 4])),
    ))
}

fn index_of(text: &str, sub: &str, offset: i64) -> Result<Value, EvalError> {
    if sub.is_empty() {
        return Ok(Value::Int(offset));
    }
    if offset < 0 {
        return Err(out_of_range(offset));
    }
    let runes: Vec<char> = text.chars().collect();
    let sub: Vec<char> = sub.chars().collect();
    if offset as u64 >= runes.len() as u64 {
        return Ok(Value::Int(-1));
    }
    let found = (offset as usize..(runes.len() + 1).saturating_sub(sub.len()))
        .find(|&i| runes[i..i + sub.len()] == sub[..]);
    Ok(Value::Int(found.map_or(-1, |i| i as i64)))
}

fn last_index_of(text: &str, sub: &str, offset: Option<i64>) -> Result<Value, EvalError> {
    let runes: Vec<char> = text.chars().collect();
    let offset = match offset {
        Some(offset) => offset,
        None if sub.is_empty() => return Ok(Value::Int(runes.len() as i64)),
        None if text.len() < sub.len() => return Ok(Value::Int(-1)),
        None => runes.len() as i64 - 1,
    };
    if sub.is_empty() {
        return Ok(Value::Int(offset));
    }
    if offset < 0 {
        return Err(out_of_range(offset));
    }
    let sub: Vec<char> = sub.chars().collect();
    if offset as u64 >= runes.len() as u64 {
        return Ok(Value::Int(-1));
    }
    let last_start = runes.len() as i64 - sub.len() as i64;
    let start = offset.min(last_start);
    if start < 0 {
        return Ok(Value::Int(-1));
    }
    let found = (0..=start as usize)
        .rev()
        .find(|&i| runes[i..i + sub.len()] == sub[..]);
    Ok(Value::Int(found.map_or(-1, |i| i as i64)))
}

fn substring(text: &str, start: i64, end: Option<i64>) -> Result<Value, EvalError> {
    let runes: Vec<char> = text.chars().collect();
    let len = runes.len() as i64;
    if let Some(end) = end
        && start > end
    {
        return Err(error(format!(
            "invalid substring range. start: {start}, end: {end}"
        )));
    }
    if start < 0 || start > len {
        return Err(out_of_range(start));
    }
    let end = end.unwrap_or(len);
    if end < 0 || end > len {
        return Err(out_of_range(end));
    }
    Ok(owned(runes[start as usize..end as usize].iter().collect()))
}

/// Go's `strings.Replace`: at most `n` replacements, all when `n` is negative; an empty `old`
/// matches before every code point and at the end.
fn replace(text: &str, old: &str, new: &str, n: i64) -> Result<Value, EvalError> {
    // Refuse before building a result past the size limit (replacing "" by a long string
    // multiplies a string's size, and upstream's runtime cost does not see the result).
    let matches = if old.is_empty() {
        text.chars().count() as u64 + 1
    } else {
        text.matches(old).count() as u64
    };
    let count = if n < 0 {
        matches
    } else {
        matches.min(n as u64)
    };
    let size = (text.len() as u64)
        .saturating_add(count.saturating_mul(new.len() as u64))
        .saturating_sub(count.saturating_mul(old.len() as u64));
    if size > super::MAX_RESULT_BYTES {
        return Err(EvalError::CostExceeded);
    }
    Ok(if n < 0 {
        owned(text.replace(old, new))
    } else {
        owned(text.replacen(old, new, usize::try_from(n).unwrap_or(usize::MAX)))
    })
}

/// Go's `strings.SplitN`: no parts when `n` is 0, at most `n` (the last the rest) when
/// positive, all when negative; an empty separator splits into code points.
fn split(text: &str, sep: &str, n: i64) -> Value {
    if n == 0 {
        return Value::list(Vec::new());
    }
    let limit = if n < 0 {
        usize::MAX
    } else {
        usize::try_from(n).unwrap_or(usize::MAX)
    };
    let parts: Vec<Value> = if sep.is_empty() {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(c) = rest.chars().next() {
            if parts.len() + 1 == limit {
                break;
            }
            parts.push(Value::string(&rest[..c.len_utf8()]));
            rest = &rest[c.len_utf8()..];
        }
        if !rest.is_empty() {
            parts.push(Value::string(rest));
        }
        parts
    } else {
        text.splitn(limit, sep).map(Value::string).collect()
    };
    Value::list(parts)
}

fn join(list: &[Value], separator: &str) -> Result<Value, EvalError> {
    let mut out = String::new();
    for (i, item) in list.iter().enumerate() {
        if i > 0 {
            out.push_str(separator);
        }
        match item {
            Value::String(s) => out.push_str(s),
            other => {
                return Err(error(format!(
                    "join: invalid input: {}",
                    format::plain(other)
                )));
            }
        }
    }
    Ok(owned(out))
}

/// `strings.quote`: double quotes around the text, CEL's escapes for `\a \b \f \n \r \t \v`,
/// backslash and double quote.
fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests;
