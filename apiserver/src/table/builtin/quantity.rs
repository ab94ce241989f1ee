//! Resource quantities as the printers write them: apimachinery's `Quantity.String()`, the
//! canonical form of the parsed value (`1024Mi` prints `1Gi`, `1000m` prints `1`, `0.5` prints
//! `500m`), since stored objects keep the text they were written with.

use serde_json::Value;

/// How a quantity is written: the format of the suffix it was parsed with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    /// `Ki`, `Mi`, … `Ei`.
    BinarySi,
    /// `n`, `u`, `m`, none, `k`, `M`, … `E`.
    DecimalSi,
    /// `e3`, `E-6`.
    DecimalExponent,
}

/// A parsed quantity: `mantissa × 10^exponent`.
#[derive(Debug)]
struct Quantity {
    mantissa: i128,
    exponent: i32,
    format: Format,
}

/// A `Quantity` field that Go reads as a value (`spec.capacity["storage"]`): absent is zero.
pub fn quantity(v: &Value) -> String {
    match text_of(v) {
        Some(text) => canonical(&text).unwrap_or(text),
        None => "0".to_owned(),
    }
}

/// A `*Quantity` field: absent prints Go's `<nil>`.
pub fn quantity_ptr(v: &Value) -> String {
    match text_of(v) {
        Some(text) => canonical(&text).unwrap_or(text),
        None => "<nil>".to_owned(),
    }
}

/// The text of a stored quantity, which JSON may also hold as a number.
fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The canonical form of a quantity; `None` when `text` is not one (the caller prints it as is).
/// Like upstream, a quantity already written canonically keeps its own text (a leading `+`
/// included).
pub fn canonical(text: &str) -> Option<String> {
    let (q, verbatim) = parse(text)?;
    Some(if verbatim {
        text.to_owned()
    } else {
        q.canonical()
    })
}

/// Parses a quantity as `ParseQuantity` does; the flag tells whether upstream keeps the text.
fn parse(text: &str) -> Option<(Quantity, bool)> {
    let (negative, rest) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let rest = rest.trim_start_matches('0');
    let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
    let (int_digits, rest) = rest.split_at(int_len);
    let int_digits = if int_digits.is_empty() {
        "0"
    } else {
        int_digits
    };
    let (frac_digits, suffix) = match rest.strip_prefix('.') {
        Some(after) => {
            let len = after.bytes().take_while(u8::is_ascii_digit).count();
            after.split_at(len)
        }
        None => ("", rest),
    };
    let (base, suffix_exponent, format) = interpret(suffix)?;

    let mut mantissa: i128 = 0;
    for digit in int_digits.bytes().chain(frac_digits.bytes()) {
        mantissa = mantissa
            .checked_mul(10)?
            .checked_add(i128::from(digit - b'0'))?;
    }
    let frac_len = i32::try_from(frac_digits.len()).ok()?;
    let verbatim = text == "0" || verbatim(int_digits, frac_digits, suffix_exponent, format);
    let mut exponent = -frac_len;
    if base == 10 {
        exponent = exponent.checked_add(suffix_exponent)?;
    } else {
        mantissa = mantissa.checked_mul(1i128.checked_shl(suffix_exponent.unsigned_abs())?)?;
    }
    if negative {
        mantissa = -mantissa;
    }
    let mut q = Quantity {
        mantissa,
        exponent,
        format,
    };
    q.round_up_to_nano();
    // A binary quantity between 0 and 1 is written as a decimal one.
    if q.format == Format::BinarySi && q.mantissa > 0 && q.cmp_int(1).is_lt() {
        q.format = Format::DecimalSi;
    }
    Some((q, verbatim))
}

/// Whether `ParseQuantity` takes its fast path and finds the text canonical already, keeping it.
fn verbatim(int_digits: &str, frac_digits: &str, exponent: i32, format: Format) -> bool {
    let digits = int_digits.len() + frac_digits.len();
    let shifted = format!("{int_digits}{frac_digits}");
    let Ok(value) = shifted.parse::<i64>() else {
        return false;
    };
    if format == Format::BinarySi {
        // 1Mi (2^20) has about 6 decimal digits of precision.
        let precision = 15 - digits as i64 - i64::from(exponent) * 3 / 10 - 1;
        let fits = u32::try_from(exponent)
            .ok()
            .and_then(|e| value.checked_mul(1i64.checked_shl(e)?))
            .is_some();
        return frac_digits.is_empty()
            && precision >= 0
            && fits
            && exponent % 10 == 0
            && value & 0x07 != 0;
    }
    let scale = i64::from(exponent) - frac_digits.len() as i64;
    digits <= 18
        && scale >= -9
        && scale % 3 == 0
        && !shifted.ends_with("000")
        && !shifted.starts_with('0')
}

/// The base, exponent and format of a suffix (`suffixHandler.interpret`).
fn interpret(suffix: &str) -> Option<(u32, i32, Format)> {
    let decimal = |e| Some((10, e, Format::DecimalSi));
    let binary = |e| Some((2, e, Format::BinarySi));
    match suffix {
        "" => decimal(0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => binary(10),
        "Mi" => binary(20),
        "Gi" => binary(30),
        "Ti" => binary(40),
        "Pi" => binary(50),
        "Ei" => binary(60),
        _ => {
            let digits = suffix
                .strip_prefix('e')
                .or_else(|| suffix.strip_prefix('E'))?;
            let exponent: i32 = digits.parse().ok()?;
            Some((10, exponent, Format::DecimalExponent))
        }
    }
}

impl Quantity {
    /// Values finer than a nano round away from zero to the nearest nano, as parsing does.
    fn round_up_to_nano(&mut self) {
        const NANO: i32 = -9;
        if self.exponent >= NANO || self.mantissa == 0 {
            return;
        }
        let shift = (NANO - self.exponent).unsigned_abs();
        let divisor = 10i128.checked_pow(shift);
        let (quotient, remainder) = match divisor {
            Some(d) => (self.mantissa / d, self.mantissa % d),
            None => (0, self.mantissa),
        };
        self.mantissa = quotient + remainder.signum();
        self.exponent = NANO;
    }

    /// Compares the value with an integer.
    fn cmp_int(&self, n: i128) -> std::cmp::Ordering {
        if self.exponent >= 0 {
            let scaled = 10i128
                .checked_pow(self.exponent.unsigned_abs())
                .and_then(|p| self.mantissa.checked_mul(p));
            match scaled {
                Some(v) => v.cmp(&n),
                None => self.mantissa.signum().cmp(&0),
            }
        } else {
            let scaled = 10i128
                .checked_pow(self.exponent.unsigned_abs())
                .and_then(|p| n.checked_mul(p));
            match scaled {
                Some(v) => self.mantissa.cmp(&v),
                None => 0.cmp(&n.signum()),
            }
        }
    }

    /// The whole value, when it has no fractional part.
    fn integer(&self) -> Option<i128> {
        let power = 10i128.checked_pow(self.exponent.unsigned_abs())?;
        if self.exponent >= 0 {
            self.mantissa.checked_mul(power)
        } else {
            (self.mantissa % power == 0).then_some(self.mantissa / power)
        }
    }

    /// `Quantity.CanonicalizeBytes`: the number and suffix a quantity prints as.
    fn canonical(&self) -> String {
        if self.mantissa == 0 {
            return "0".to_owned();
        }
        let mut format = self.format;
        let mut whole = None;
        if format == Format::BinarySi {
            if self.cmp_int(-1024).is_gt() && self.cmp_int(1024).is_lt() {
                format = Format::DecimalSi;
            } else {
                whole = self.integer();
                if whole.is_none() {
                    format = Format::DecimalSi;
                }
            }
        }
        if let (Format::BinarySi, Some(mut value)) = (format, whole) {
            let mut power = 0;
            while value % 1024 == 0 {
                value /= 1024;
                power += 1;
            }
            let suffix = match power {
                1 => "Ki",
                2 => "Mi",
                3 => "Gi",
                4 => "Ti",
                5 => "Pi",
                6 => "Ei",
                _ => "",
            };
            return format!("{value}{suffix}");
        }

        let (mut mantissa, mut exponent) = (self.mantissa, self.exponent);
        while mantissa % 10 == 0 {
            mantissa /= 10;
            exponent += 1;
        }
        // The exponent goes down to a multiple of 3 (Go's `%` keeps the dividend's sign, as
        // Rust's does).
        match exponent % 3 {
            1 | -2 => {
                mantissa *= 10;
                exponent -= 1;
            }
            2 | -1 => {
                mantissa *= 100;
                exponent -= 2;
            }
            _ => {}
        }
        let suffix = match format {
            Format::DecimalExponent if exponent == 0 => String::new(),
            Format::DecimalExponent => format!("e{exponent}"),
            _ => match exponent {
                -9 => "n",
                -6 => "u",
                -3 => "m",
                3 => "k",
                6 => "M",
                9 => "G",
                12 => "T",
                15 => "P",
                18 => "E",
                _ => "",
            }
            .to_owned(),
        };
        format!("{mantissa}{suffix}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_forms() {
        for (text, want) in [
            ("0", "0"),
            ("000", "0"),
            ("0Gi", "0"),
            ("1Gi", "1Gi"),
            ("1024Mi", "1Gi"),
            ("1536Mi", "1536Mi"),
            ("1.5Gi", "1536Mi"),
            ("0.5Ki", "512"),
            ("2000Mi", "2000Mi"),
            ("100", "100"),
            ("1000", "1k"),
            ("1500000", "1500k"),
            ("1000m", "1"),
            ("1.0", "1"),
            ("0.5", "500m"),
            ("1.5", "1500m"),
            ("250m", "250m"),
            ("1e3", "1e3"),
            ("10e3", "10e3"),
            ("1E3", "1E3"),
            ("1000e0", "1e3"),
            ("1.5e3", "1500"),
            ("1E", "1E"),
            ("5G", "5G"),
            ("-2Gi", "-2Gi"),
            ("+3Ki", "+3Ki"),
            ("+1024Ki", "1Mi"),
            ("0.1n", "1n"),
            ("1.0000000001", "1000000001n"),
        ] {
            assert_eq!(canonical(text).as_deref(), Some(want), "{text}");
        }
        // Upstream reads a missing number as zero.
        assert_eq!(canonical("Gi").as_deref(), Some("0"));
        for bad in ["", "1Gb", "1.2.3", "1e", "abc"] {
            assert_eq!(canonical(bad), None, "{bad}");
        }
    }

    #[test]
    fn fields_and_pointers() {
        assert_eq!(quantity(&json!("2048Mi")), "2Gi");
        assert_eq!(quantity(&json!(5)), "5");
        assert_eq!(quantity(&Value::Null), "0");
        assert_eq!(quantity(&json!("lots")), "lots");
        assert_eq!(quantity_ptr(&Value::Null), "<nil>");
        assert_eq!(quantity_ptr(&json!("500Mi")), "500Mi");
    }
}
