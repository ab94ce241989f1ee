//! Kubernetes' quantity library: `quantity`, `isQuantity`, and on `kubernetes.Quantity`
//! values `sign`, `isGreaterThan`, `isLessThan`, `compareTo`, `add`, `sub` (a quantity or an
//! int), `asInteger`, `isInteger` and `asApproximateFloat`.
//!
//! Values follow apimachinery's `resource.Quantity`: parsed exactly (suffixes `Ki`..`Ei`,
//! `n u m k M G T P E`, exponents `e`/`E`; finer than a nano rounded up away from zero; binary
//! quantities capped at 2⁶³-1), kept as a small scaled int64 while that is exact and as a
//! decimal otherwise. Like upstream, only the int64 form converts to an integer. The decimal
//! form here holds 38 digits (upstream's is unbounded); arithmetic beyond that is an error.

use std::any::Any;
use std::cmp::Ordering;
use std::sync::Arc;

use super::{error, finish, no_such_overload, string_traversal_cost};
use crate::{Budget, EvalError, Opaque, Value};

/// `kubernetes.Quantity`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Quantity(Amount);

#[derive(Clone, Copy, Debug, PartialEq)]
enum Amount {
    /// apimachinery's `int64Amount`: `value × 10^scale`.
    Int { value: i64, scale: i32 },
    /// apimachinery's `inf.Dec` form: `unscaled × 10^exp`.
    Dec { unscaled: i128, exp: i32 },
}

const FORMAT_WRONG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
const NUMERIC: &str = "unable to parse numeric part of quantity";
const SUFFIX: &str = "unable to parse quantity's suffix";

fn overflow() -> EvalError {
    error("quantity overflow")
}

#[derive(Clone, Copy, PartialEq)]
enum Format {
    Decimal,
    Binary,
}

/// A suffix's base, exponent and format, as apimachinery's suffixer reads it.
fn interpret(suffix: &str) -> Option<(u32, i32, Format)> {
    let decimal = match suffix {
        "" => Some(0),
        "n" => Some(-9),
        "u" => Some(-6),
        "m" => Some(-3),
        "k" => Some(3),
        "M" => Some(6),
        "G" => Some(9),
        "T" => Some(12),
        "P" => Some(15),
        "E" => Some(18),
        _ => None,
    };
    if let Some(e) = decimal {
        return Some((10, e, Format::Decimal));
    }
    let binary = match suffix {
        "Ki" => Some(10),
        "Mi" => Some(20),
        "Gi" => Some(30),
        "Ti" => Some(40),
        "Pi" => Some(50),
        "Ei" => Some(60),
        _ => None,
    };
    if let Some(e) = binary {
        return Some((2, e, Format::Binary));
    }
    if suffix.len() > 1 && (suffix.starts_with('e') || suffix.starts_with('E')) {
        // Go: strconv.ParseInt(.., 10, 64), then int32(...).
        return suffix[1..]
            .parse::<i64>()
            .ok()
            .map(|e| (10, e as i32, Format::Decimal));
    }
    None
}

/// apimachinery's `parseQuantityString`: (positive, numerator, denominator, suffix).
fn split(text: &str) -> Result<(bool, &str, &str, &str), &'static str> {
    let bytes = text.as_bytes();
    let end = bytes.len();
    let mut pos = 0;
    let mut positive = true;
    match bytes.first() {
        Some(b'-') => {
            positive = false;
            pos = 1;
        }
        Some(b'+') => pos = 1,
        _ => {}
    }
    while pos < end && bytes[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        return Ok((positive, "0", "", ""));
    }
    let num_start = pos;
    while pos < end && bytes[pos].is_ascii_digit() {
        pos += 1;
    }
    let mut num = &text[num_start..pos];
    if num.is_empty() {
        num = "0";
    }
    let mut denom = "";
    if pos < end && bytes[pos] == b'.' {
        pos += 1;
        let start = pos;
        while pos < end && bytes[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &text[start..pos];
    }
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&bytes[pos]) {
        pos += 1;
    }
    if pos < end && matches!(bytes[pos], b'-' | b'+') {
        pos += 1;
    }
    while pos < end && bytes[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < end {
        return Err(FORMAT_WRONG);
    }
    Ok((positive, num, denom, &text[suffix_start..]))
}

impl Quantity {
    /// apimachinery's `ParseQuantity`.
    pub fn parse(text: &str) -> Result<Quantity, &'static str> {
        if text.is_empty() {
            return Err(FORMAT_WRONG);
        }
        if text == "0" {
            return Ok(Quantity(Amount::Int { value: 0, scale: 0 }));
        }
        let (positive, num, denom, suffix) = split(text)?;
        let (base, exponent, format) = interpret(suffix).ok_or(SUFFIX)?;
        let digits = (num.len() + denom.len()) as i32;
        let (precision, mut scale, mantissa) = match format {
            Format::Decimal => (18 - digits, exponent, 1i64),
            Format::Binary if denom.is_empty() => (
                15 - num.len() as i32 - ((exponent as f32) * 3.0 / 10.0) as i32 - 1,
                0,
                1i64 << exponent,
            ),
            Format::Binary => (-1, 0, 1),
        };
        if precision >= 0 {
            scale -= denom.len() as i32;
            if scale >= -9 {
                let value: i64 = format!("{num}{denom}").parse().map_err(|_| NUMERIC)?;
                if let Some(result) = value.checked_mul(mantissa) {
                    let value = if positive { result } else { -result };
                    return Ok(Quantity(Amount::Int { value, scale }));
                }
            }
        }
        // The exact decimal path.
        let mut unscaled: i128 = format!("{num}{denom}").parse().map_err(|_| NUMERIC)?;
        let mut exp = -(denom.len() as i32);
        if base == 10 {
            exp = exp.checked_add(exponent).ok_or(NUMERIC)?;
        } else {
            unscaled = unscaled.checked_mul(1i128 << exponent).ok_or(NUMERIC)?;
        }
        // Round finer than a nano up, away from zero.
        if unscaled != 0 && exp < -9 {
            let shift = (-9 - exp) as u32;
            if shift > 38 {
                unscaled = 1;
            } else {
                let divisor = 10i128.pow(shift);
                let rounded = unscaled / divisor;
                unscaled = if unscaled % divisor != 0 {
                    rounded + 1
                } else {
                    rounded
                };
            }
            exp = -9;
        }
        let mut amount = Amount::Dec { unscaled, exp };
        let max = Amount::Int {
            value: i64::MAX,
            scale: 0,
        };
        if format == Format::Binary && compare(amount, max) == Ordering::Greater {
            amount = Amount::Dec {
                unscaled: i64::MAX as i128,
                exp: 0,
            };
        }
        if let Amount::Dec { unscaled, exp } = amount
            && !positive
        {
            amount = Amount::Dec {
                unscaled: -unscaled,
                exp,
            };
        }
        Ok(Quantity(amount))
    }

    /// A whole number of units (apimachinery's `NewQuantity(n, DecimalExponent)`).
    pub fn from_int(value: i64) -> Quantity {
        Quantity(Amount::Int { value, scale: 0 })
    }

    /// -1, 0 or 1.
    pub fn sign(&self) -> i64 {
        match self.0 {
            Amount::Int { value, .. } => value.signum(),
            Amount::Dec { unscaled, .. } => unscaled.signum() as i64,
        }
    }

    /// The value as an int64, when it is held as a scaled int64 and is a whole number that
    /// fits (apimachinery's `AsInt64`).
    pub fn as_int64(&self) -> Option<i64> {
        match self.0 {
            Amount::Int { value, scale: 0 } => Some(value),
            Amount::Int { value: 0, scale } if scale > 0 => Some(0),
            Amount::Int { value, scale } if scale > 0 => {
                10i64.checked_pow(scale as u32)?.checked_mul(value)
            }
            _ => None,
        }
    }

    /// apimachinery's `AsApproximateFloat64`.
    pub fn as_approximate_float(&self) -> f64 {
        let (base, exponent) = match self.0 {
            Amount::Int { value, scale } => (value as f64, scale),
            Amount::Dec { unscaled, exp } => (unscaled as f64, exp),
        };
        if exponent == 0 {
            base
        } else {
            base * pow10(exponent)
        }
    }

    /// Exact comparison.
    pub fn compare(&self, other: &Quantity) -> Ordering {
        compare(self.0, other.0)
    }

    /// Exact sum (apimachinery's `Add`: int64 while exact, decimal otherwise).
    pub fn add(&self, other: &Quantity) -> Result<Quantity, EvalError> {
        if let (
            Amount::Int {
                value: a,
                scale: sa,
            },
            Amount::Int {
                value: b,
                scale: sb,
            },
        ) = (self.0, other.0)
            && let Some(sum) = add_int64(a, sa, b, sb)
        {
            return Ok(Quantity(sum));
        }
        let (ua, ea) = decimal(self.0);
        let (ub, eb) = decimal(other.0);
        let exp = ea.min(eb);
        let ua = rescale(ua, ea - exp).ok_or_else(overflow)?;
        let ub = rescale(ub, eb - exp).ok_or_else(overflow)?;
        let unscaled = ua.checked_add(ub).ok_or_else(overflow)?;
        Ok(Quantity(Amount::Dec { unscaled, exp }))
    }

    /// Exact difference.
    pub fn sub(&self, other: &Quantity) -> Result<Quantity, EvalError> {
        let negated = match other.0 {
            Amount::Int { value, scale } => match value.checked_neg() {
                Some(value) => Amount::Int { value, scale },
                None => Amount::Dec {
                    unscaled: -(value as i128),
                    exp: scale,
                },
            },
            Amount::Dec { unscaled, exp } => Amount::Dec {
                unscaled: -unscaled,
                exp,
            },
        };
        self.add(&Quantity(negated))
    }
}

/// 10^n correctly rounded, as Go's `math.Pow10` gives it (0 below 1e-323, +Inf past 1e308).
fn pow10(n: i32) -> f64 {
    match n {
        ..-323 => 0.0,
        309.. => f64::INFINITY,
        n => format!("1e{n}").parse().unwrap_or(f64::NAN),
    }
}

fn decimal(amount: Amount) -> (i128, i32) {
    match amount {
        Amount::Int { value, scale } => (value as i128, scale),
        Amount::Dec { unscaled, exp } => (unscaled, exp),
    }
}

fn rescale(unscaled: i128, by: i32) -> Option<i128> {
    if unscaled == 0 {
        return Some(0);
    }
    10i128
        .checked_pow(u32::try_from(by).ok()?)?
        .checked_mul(unscaled)
}

/// apimachinery's `int64Amount.Add`; `None` when the sum needs the decimal form.
fn add_int64(a: i64, sa: i32, b: i64, sb: i32) -> Option<Amount> {
    let int = |value, scale| Some(Amount::Int { value, scale });
    if b == 0 {
        return int(a, sa);
    }
    if a == 0 {
        return int(b, sb);
    }
    if sa == sb {
        return int(a.checked_add(b)?, sa);
    }
    if sa > sb {
        let scaled = 10i64.checked_pow((sa - sb) as u32)?.checked_mul(a)?;
        int(scaled.checked_add(b)?, sb)
    } else {
        let scaled = 10i64.checked_pow((sb - sa) as u32)?.checked_mul(b)?;
        int(a.checked_add(scaled)?, sa)
    }
}

/// Compares two exact amounts of any size of exponent.
fn compare(a: Amount, b: Amount) -> Ordering {
    let (ua, ea) = decimal(a);
    let (ub, eb) = decimal(b);
    let sign = ua.signum().cmp(&ub.signum());
    if sign != Ordering::Equal || ua == 0 {
        return sign;
    }
    let magnitude = compare_magnitude(ua.unsigned_abs(), ea, ub.unsigned_abs(), eb);
    if ua < 0 {
        magnitude.reverse()
    } else {
        magnitude
    }
}

fn compare_magnitude(ua: u128, ea: i32, ub: u128, eb: i32) -> Ordering {
    let (da, db) = (ua.to_string(), ub.to_string());
    let order_a = da.len() as i64 + ea as i64;
    let order_b = db.len() as i64 + eb as i64;
    if order_a != order_b {
        return order_a.cmp(&order_b);
    }
    let width = da.len().max(db.len());
    format!("{da:0<width$}").cmp(&format!("{db:0<width$}"))
}

impl Opaque for Quantity {
    fn type_name(&self) -> &'static str {
        "kubernetes.Quantity"
    }

    fn equals(&self, other: &dyn Opaque) -> bool {
        other
            .as_any()
            .downcast_ref::<Quantity>()
            .is_some_and(|q| self.compare(q) == Ordering::Equal)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn as_quantity(value: &Value) -> Option<&Quantity> {
    match value {
        Value::Opaque(o) => o.as_any().downcast_ref::<Quantity>(),
        _ => None,
    }
}

fn wrap(q: Quantity) -> Value {
    Value::Opaque(Arc::new(q))
}

/// The quantity functions; `None` for other names and for receivers that are not quantities
/// (`isGreaterThan` and friends also exist for semvers).
pub fn call(
    function: &str,
    receiver: Option<&Value>,
    args: &[Value],
    budget: &mut Budget,
) -> Option<Result<Value, EvalError>> {
    if matches!(function, "quantity" | "isQuantity") {
        let (None, [text @ Value::String(s)]) = (receiver, args) else {
            return Some(Err(no_such_overload(function)));
        };
        let parsed = Quantity::parse(s);
        let result = match function {
            "quantity" => parsed.map(wrap).map_err(error),
            _ => Ok(Value::Bool(parsed.is_ok())),
        };
        return finish(budget, string_traversal_cost(text), result);
    }
    let q = as_quantity(receiver?)?;
    let result = match (function, args) {
        ("sign", []) => Ok(Value::Int(q.sign())),
        ("isInteger", []) => Ok(Value::Bool(q.as_int64().is_some())),
        ("asInteger", []) => q
            .as_int64()
            .map(Value::Int)
            .ok_or_else(|| error("cannot convert value to integer")),
        ("asApproximateFloat", []) => Ok(Value::Double(q.as_approximate_float())),
        ("isGreaterThan" | "isLessThan" | "compareTo", [other]) => {
            let Some(other) = as_quantity(other) else {
                return Some(Err(no_such_overload(function)));
            };
            let order = q.compare(other);
            Ok(match function {
                "isGreaterThan" => Value::Bool(order == Ordering::Greater),
                "isLessThan" => Value::Bool(order == Ordering::Less),
                _ => Value::Int(order as i64),
            })
        }
        ("add" | "sub", [other]) => {
            let other = match other {
                Value::Int(i) => Quantity::from_int(*i),
                other => match as_quantity(other) {
                    Some(o) => *o,
                    None => return Some(Err(no_such_overload(function))),
                },
            };
            let sum = if function == "add" {
                q.add(&other)
            } else {
                q.sub(&other)
            };
            sum.map(wrap)
        }
        (
            "sign" | "isInteger" | "asInteger" | "asApproximateFloat" | "isGreaterThan"
            | "isLessThan" | "compareTo" | "add" | "sub",
            _,
        ) => Err(no_such_overload(function)),
        _ => return None,
    };
    finish(budget, 1, result)
}

#[cfg(test)]
mod tests;
