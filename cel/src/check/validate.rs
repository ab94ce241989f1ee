//! The AST validators Kubernetes enables, run after a successful check as cel-go runs them:
//! homogeneous aggregate literals (lists inside a `format` call excepted, as the strings
//! extension configures), and constant arguments of `duration`, `timestamp` and `matches`
//! that must be valid at compile time (`invalid duration argument`), and literal format
//! strings of the strings extension (see [`super::format`]).

use std::collections::HashMap;

use super::types::{Ty, format};
use crate::Issue;
use crate::ast::{Expr, ExprKind, Literal};

/// Deeper trees never pass the checker; this bounds the walk regardless.
const MAX_DEPTH: usize = super::MAX_DEPTH + 8;

/// Appends what the validators find in `expr` (typed by `types`) to `issues`.
pub(super) fn validate(expr: &Expr, types: &HashMap<u32, Ty>, issues: &mut Vec<Issue>) {
    walk(expr, types, issues, false, 0);
}

fn walk(
    expr: &Expr,
    types: &HashMap<u32, Ty>,
    issues: &mut Vec<Issue>,
    exempt: bool,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        return;
    }
    let depth = depth + 1;
    let type_of = |e: &Expr| types.get(&e.id).cloned().unwrap_or(Ty::Dyn);
    match &expr.kind {
        ExprKind::Literal(_) | ExprKind::Ident(_) => {}
        ExprKind::Select { operand, .. } => walk(operand, types, issues, exempt, depth),
        ExprKind::Call {
            target,
            function,
            args,
        } => {
            check_literal_argument(function, args, issues);
            if &**function == "format" {
                super::format::check_call(expr, target.as_deref(), args, types, issues);
            }
            let exempt = exempt || &**function == "format";
            if let Some(target) = target {
                walk(target, types, issues, exempt, depth);
            }
            for arg in args {
                walk(arg, types, issues, exempt, depth);
            }
        }
        ExprKind::List {
            elements,
            optional_indices,
        } => {
            if !exempt {
                let mut first: Option<Ty> = None;
                for (i, e) in elements.iter().enumerate() {
                    let mut t = type_of(e);
                    if optional_indices.iter().any(|&o| o as usize == i)
                        && let Ty::Optional(inner) = t
                    {
                        t = *inner;
                    }
                    match &first {
                        None => first = Some(t),
                        Some(expected) if !expected.equivalent(&t) => {
                            mismatch(issues, e, expected, &t);
                            break;
                        }
                        Some(_) => {}
                    }
                }
            }
            for e in elements {
                walk(e, types, issues, exempt, depth);
            }
        }
        ExprKind::Map { entries } => {
            if !exempt {
                let mut first: Option<(Ty, Ty)> = None;
                for entry in entries {
                    let k = type_of(&entry.key);
                    let mut v = type_of(&entry.value);
                    if entry.optional
                        && let Ty::Optional(inner) = v
                    {
                        v = *inner;
                    }
                    match &first {
                        None => first = Some((k, v)),
                        Some((key, value)) => {
                            if !key.equivalent(&k) {
                                mismatch(issues, &entry.key, key, &k);
                            }
                            if !value.equivalent(&v) {
                                mismatch(issues, &entry.value, value, &v);
                            }
                        }
                    }
                }
            }
            for entry in entries {
                walk(&entry.key, types, issues, exempt, depth);
                walk(&entry.value, types, issues, exempt, depth);
            }
        }
        ExprKind::Struct { fields, .. } => {
            for field in fields {
                walk(&field.value, types, issues, exempt, depth);
            }
        }
        ExprKind::Comprehension(comp) => {
            for e in [
                &comp.iter_range,
                &comp.accu_init,
                &comp.loop_condition,
                &comp.loop_step,
                &comp.result,
            ] {
                walk(e, types, issues, exempt, depth);
            }
        }
    }
}

fn mismatch(issues: &mut Vec<Issue>, expr: &Expr, expected: &Ty, actual: &Ty) {
    issues.push(Issue {
        offset: expr.offset,
        message: format!(
            "expected type '{}' but found '{}'",
            format(expected),
            format(actual)
        ),
    });
}

/// cel-go's format validators: the first argument of `duration`, `timestamp` and `matches`,
/// when a literal, must convert (or compile) now.
fn check_literal_argument(function: &str, args: &[Expr], issues: &mut Vec<Issue>) {
    let Some(arg) = args.first() else {
        return;
    };
    let ExprKind::Literal(literal) = &arg.kind else {
        return;
    };
    let valid = match (function, literal) {
        ("duration", Literal::String(s)) => parse_duration(s).is_some(),
        ("timestamp", Literal::String(s)) => parse_timestamp(s).is_some(),
        ("timestamp", Literal::Int(seconds)) => (MIN_SECONDS..=MAX_SECONDS).contains(seconds),
        ("matches", Literal::String(pattern)) => crate::library::regex::compile(pattern).is_ok(),
        _ => true,
    };
    if !valid {
        issues.push(Issue {
            offset: arg.offset,
            message: format!("invalid {function} argument"),
        });
    }
}

/// CEL's timestamp range, in seconds since the epoch: 0001-01-01T00:00:00Z to
/// 9999-12-31T23:59:59Z.
const MIN_SECONDS: i64 = -62_135_596_800;
const MAX_SECONDS: i64 = 253_402_300_799;

/// An RFC 3339 timestamp within CEL's range (Go's `time.RFC3339` layout: a `T` between the
/// date and the time, an offset or `Z`).
pub(crate) fn parse_timestamp(s: &str) -> Option<jiff::Timestamp> {
    if s.as_bytes().get(10) != Some(&b'T') {
        return None;
    }
    let ts: jiff::Timestamp = s.parse().ok()?;
    (MIN_SECONDS..=MAX_SECONDS)
        .contains(&ts.as_second())
        .then_some(ts)
}

/// A duration in Go's `time.ParseDuration` syntax (`1h30m`, `-1.5s`, `300ms`), which must
/// fit Go's 64-bit nanosecond count.
pub(crate) fn parse_duration(s: &str) -> Option<jiff::SignedDuration> {
    let (negative, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Some(jiff::SignedDuration::ZERO);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    let mut exact: i128 = 0;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..number_end];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return None;
        }
        rest = &rest[number_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit: i128 = match &rest[..unit_end] {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        rest = &rest[unit_end..];
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        let whole: i128 = if whole.is_empty() {
            0
        } else {
            whole.parse().ok()?
        };
        exact = exact.checked_add(whole.checked_mul(unit)?)?;
        if !fraction.is_empty() {
            let digits: f64 = fraction.parse().ok()?;
            total += digits / 10f64.powi(i32::try_from(fraction.len()).ok()?) * unit as f64;
        }
        if exact > i128::from(i64::MAX) {
            return None;
        }
    }
    let nanos = exact.checked_add(total as i128)?;
    let nanos = i64::try_from(if negative { -nanos } else { nanos }).ok()?;
    Some(jiff::SignedDuration::from_nanos(nanos))
}
