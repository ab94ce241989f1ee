//! Regular expressions for `matches`, `find` and `findAll`: compiled once per pattern into a
//! bounded cache, with compiled size limited so that a pattern cannot exhaust memory.
//!
//! Rust's `regex` and RE2 (cel-go's) are both linear-time and accept the same syntax but for
//! rare corners (RE2's `\C`, Rust's `\d` being Unicode-aware unless `(?-u)`); patterns are
//! compiled as RE2 would read them where the crates differ in defaults.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use regex::Regex;

use crate::{Budget, EvalError, Value};

/// Patterns kept compiled; the cache is emptied when full.
const CACHE_CAPACITY: usize = 512;
/// The largest compiled program one pattern may take.
const SIZE_LIMIT: usize = 1 << 20;

static CACHE: LazyLock<Mutex<HashMap<Arc<str>, Arc<Regex>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// The compiled `pattern`, from the cache when it was compiled before. The error is cel-go's
/// wording for a pattern that does not compile.
pub fn compile(pattern: &str) -> Result<Arc<Regex>, EvalError> {
    if let Some(found) = CACHE.lock().ok().and_then(|c| c.get(pattern).cloned()) {
        return Ok(found);
    }
    let regex = regex::RegexBuilder::new(&re2_classes(pattern))
        .unicode(true)
        .size_limit(SIZE_LIMIT)
        .build()
        .map_err(|err| {
            EvalError::Runtime(format!("error parsing regexp: {}", go_error(pattern, &err)))
        })?;
    let regex = Arc::new(regex);
    if let Ok(mut cache) = CACHE.lock() {
        if cache.len() >= CACHE_CAPACITY {
            cache.clear();
        }
        cache.insert(Arc::from(pattern), regex.clone());
    }
    Ok(regex)
}

/// Rewrites RE2's ASCII-only Perl classes for Rust's regex, where they are Unicode-aware:
/// `\d` is `[0-9]`, `\w` is `[0-9A-Za-z_]`, `\s` is `[\t\n\f\r ]` (and their negations), and
/// `\b`/`\B` are ASCII word boundaries. Escaped backslashes and the insides of bracketed
/// classes are read as RE2 reads them.
fn re2_classes(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars().peekable();
    let mut in_class = false;
    // Whether the next character is the first of a class (where `]` is literal).
    let mut class_start = false;
    while let Some(c) = chars.next() {
        let first = std::mem::take(&mut class_start);
        match c {
            '\\' => {
                let Some(next) = chars.next() else {
                    out.push(c);
                    break;
                };
                match (next, in_class) {
                    ('d', _) => out.push_str("[0-9]"),
                    ('D', _) => out.push_str("[^0-9]"),
                    ('w', _) => out.push_str("[0-9A-Za-z_]"),
                    ('W', _) => out.push_str("[^0-9A-Za-z_]"),
                    ('s', _) => out.push_str("[\\t\\n\\f\\r ]"),
                    ('S', _) => out.push_str("[^\\t\\n\\f\\r ]"),
                    ('b', false) => out.push_str("(?-u:\\b)"),
                    ('B', false) => out.push_str("(?-u:\\B)"),
                    _ => {
                        out.push(c);
                        out.push(next);
                    }
                }
            }
            '[' if !in_class => {
                in_class = true;
                class_start = true;
                out.push(c);
                if chars.peek() == Some(&'^') {
                    out.push('^');
                    chars.next();
                }
            }
            '[' if chars.peek() == Some(&':') => {
                // A POSIX class such as [:alpha:], copied whole.
                out.push(c);
                for d in chars.by_ref() {
                    out.push(d);
                    if d == ']' {
                        break;
                    }
                }
            }
            ']' if in_class && !first => {
                in_class = false;
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// The reason a pattern does not compile, in Go's words (`missing closing ): `a(``) where
/// the two libraries' reasons correspond, and Rust's last line of explanation otherwise.
fn go_error(pattern: &str, err: &regex::Error) -> String {
    let text = err.to_string();
    let reason = text
        .lines()
        .last()
        .unwrap_or_default()
        .trim()
        .trim_start_matches("error: ");
    match reason {
        "unclosed group" => format!("missing closing ): `{pattern}`"),
        "unopened group" => format!("unexpected ): `{pattern}`"),
        r if r.starts_with("incomplete escape sequence") => {
            "trailing backslash at end of expression: ``".to_string()
        }
        r if r.contains("exceeds size limit") => format!("expression too large: `{pattern}`"),
        other => other.to_string(),
    }
}

/// `find` and `findAll` (Kubernetes' regex library): the first match of a pattern in a
/// string (`""` when none), and all of them, at most `limit` when one is given (a negative
/// limit is no limit, 0 none).
pub fn call(
    function: &str,
    receiver: Option<&Value>,
    args: &[Value],
    budget: &mut Budget,
) -> Option<Result<Value, EvalError>> {
    if !matches!(function, "find" | "findAll") {
        return None;
    }
    let (text, pattern, limit) = match (function, receiver, args) {
        ("find", Some(Value::String(t)), [Value::String(p)]) => (t, p, None),
        ("findAll", Some(Value::String(t)), [Value::String(p)]) => (t, p, Some(-1)),
        ("findAll", Some(Value::String(t)), [Value::String(p), Value::Int(n)]) => (t, p, Some(*n)),
        _ => return Some(Err(super::no_such_overload(function))),
    };
    // Kubernetes: (1 + string size) × 0.1, rounded up, times the pattern's size × 0.25,
    // rounded up.
    let text_cost =
        ((1.0 + text.chars().count() as f64) * super::STRING_TRAVERSAL_COST_FACTOR).ceil() as u64;
    let regex_cost = super::ceil_cost(
        pattern.chars().count() as u64,
        super::REGEX_STRING_LENGTH_COST_FACTOR,
    );
    let cost = text_cost.saturating_mul(regex_cost);
    let result = compile(pattern)
        .map_err(|err| super::error(format!("Illegal regex: {err}")))
        .map(|regex| match limit {
            None => Value::String(
                regex
                    .find(text)
                    .map_or_else(|| "".into(), |m| m.as_str().into()),
            ),
            Some(n) => {
                let limit = if n < 0 { usize::MAX } else { n as usize };
                Value::list(
                    regex
                        .find_iter(text)
                        .take(limit)
                        .map(|m| Value::string(m.as_str()))
                        .collect(),
                )
            }
        });
    super::finish(budget, cost, result)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::library::testing::*;

    #[test]
    fn find_and_find_all() {
        // After Kubernetes' regex library tests.
        #[allow(clippy::type_complexity)]
        let cases: Vec<(&str, &str, Vec<Value>, Result<Value, &str>)> = vec![
            ("find", "abc 123", vec![s("[0-9]+")], Ok(s("123"))),
            ("find", "abc", vec![s("[0-9]+")], Ok(s(""))),
            (
                "findAll",
                "123 abc 456",
                vec![s("[0-9]+")],
                Ok(strs(&["123", "456"])),
            ),
            ("findAll", "abc", vec![s("[0-9]+")], Ok(strs(&[]))),
            (
                "findAll",
                "123 abc 456",
                vec![s("[0-9]+"), Value::Int(1)],
                Ok(strs(&["123"])),
            ),
            (
                "findAll",
                "123 abc 456",
                vec![s("[0-9]+"), Value::Int(0)],
                Ok(strs(&[])),
            ),
            (
                "findAll",
                "123 abc 456",
                vec![s("[0-9]+"), Value::Int(-1)],
                Ok(strs(&["123", "456"])),
            ),
            (
                "findAll",
                "123 abc 456",
                vec![s("[0-9]+"), Value::Int(-1)],
                Ok(strs(&["123", "456"])),
            ),
            ("findAll", "a", vec![s("")], Ok(strs(&["", ""]))),
            // Go skips an empty match right after a match, as Rust's regex does.
            ("findAll", "baaa", vec![s("a*")], Ok(strs(&["", "aaa"]))),
            (
                "find",
                "abc",
                vec![Value::Int(1)],
                Err("no such overload: find"),
            ),
        ];
        for (function, text, args, want) in cases {
            let got = eval(function, Some(s(text)), &args);
            match want {
                Ok(want) => assert_value(got, want),
                Err(want) => assert_error(got, want),
            }
        }
        assert_error(
            eval("find", Some(s("abc")), &[s("a(")]),
            "Illegal regex: error parsing regexp: missing closing ): `a(`",
        );
    }

    #[test]
    fn find_costs_string_times_pattern() {
        // ceil((1 + 7) × 0.1) = 1; ceil(6 × 0.25) = 2
        assert_eq!(run("find", Some(s("abc 123")), &[s("[0-9]+")]).1, 2);
        // ceil(21 × 0.1) = 3; ceil(6 × 0.25) = 2
        assert_eq!(
            run("findAll", Some(s("12345678901234567890")), &[s("[0-9]+")]).1,
            6
        );
    }

    #[test]
    fn perl_classes_are_ascii_as_in_re2() {
        let cases = [
            (r"^\d+$", "123", true),
            (r"^\d+$", "١٢٣", false),
            (r"^\w+$", "abc_1", true),
            (r"^\w+$", "héllo", false),
            (r"^\s$", "\u{b}", false),
            (r"^\s$", "\u{a0}", false),
            (r"^\S+$", "é", true),
            (r"^[\d.]+$", "1.5", true),
            (r"^[^\d]+$", "abc", true),
            (r"^[]\d]+$", "]1", true),
            (r"^[[:alpha:]\d]+$", "a1", true),
            (r"\bé", "é", false),
            (r"\\d", "\\d", true),
            (r"^\D$", "x", true),
        ];
        for (pattern, text, want) in cases {
            let re = compile(pattern).unwrap_or_else(|e| panic!("{pattern}: {e}"));
            assert_eq!(re.is_match(text), want, "{pattern} on {text:?}");
        }
    }

    #[test]
    fn compiles_once_and_refuses_bad_patterns() {
        let a = compile("^a+$").unwrap();
        let b = compile("^a+$").unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert!(a.is_match("aaa"));
        let err = compile("a(").unwrap_err();
        assert_eq!(
            err.to_string(),
            "error parsing regexp: missing closing ): `a(`"
        );
        let err = compile("a)").unwrap_err();
        assert_eq!(err.to_string(), "error parsing regexp: unexpected ): `a)`");
        let err = compile("a\\").unwrap_err();
        assert_eq!(
            err.to_string(),
            "error parsing regexp: trailing backslash at end of expression: ``"
        );
        let err = compile("*a").unwrap_err();
        assert!(
            err.to_string().starts_with("error parsing regexp: "),
            "{err}"
        );
    }
}
