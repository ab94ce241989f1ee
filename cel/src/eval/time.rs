//! Durations and timestamps as cel-go has them: durations within Go's `time.Duration` (an
//! int64 of nanoseconds), timestamps from year 1 to 9999; Go's duration syntax (`1h30m`),
//! RFC 3339 timestamps, and the accessors (`getFullYear`, `getHours`, ...) with an optional
//! time zone.

use jiff::tz::{Offset, TimeZone};
use jiff::{SignedDuration, Timestamp};

use crate::{EvalError, Value};

use super::Outcome;
use super::call::no_such_overload;

/// `0001-01-01T00:00:00Z` and `9999-12-31T23:59:59Z` in Unix seconds.
pub(crate) const MIN_UNIX_SECONDS: i64 = -62_135_596_800;
pub(crate) const MAX_UNIX_SECONDS: i64 = 253_402_300_799;

fn runtime(message: String) -> EvalError {
    EvalError::Runtime(message)
}

/// A duration in nanoseconds (within Go's range wherever durations are made).
pub(crate) fn nanoseconds(d: &SignedDuration) -> i64 {
    i64::try_from(d.as_nanos()).unwrap_or(if d.is_negative() { i64::MIN } else { i64::MAX })
}

/// A computed duration, or `duration overflow` outside Go's range.
pub(crate) fn duration_checked(d: Option<SignedDuration>) -> Outcome {
    match d {
        Some(d) if i64::try_from(d.as_nanos()).is_ok() => Ok(Value::Duration(d)),
        _ => Err(runtime("duration overflow".to_string())),
    }
}

fn timestamp_checked(t: Timestamp) -> Outcome {
    let seconds = t.as_second();
    let before_start = seconds == MIN_UNIX_SECONDS && t.subsec_nanosecond() < 0;
    if (MIN_UNIX_SECONDS..=MAX_UNIX_SECONDS).contains(&seconds) && !before_start {
        Ok(Value::Timestamp(t))
    } else {
        Err(runtime("timestamp overflow".to_string()))
    }
}

/// `t + d`, or `timestamp overflow` outside CEL's range.
pub(crate) fn add_to_timestamp(t: &Timestamp, d: SignedDuration) -> Outcome {
    match t.checked_add(d) {
        Ok(sum) => timestamp_checked(sum),
        Err(_) => Err(runtime("timestamp overflow".to_string())),
    }
}

/// `timestamp(int)`: Unix seconds.
pub(crate) fn timestamp_from_seconds(seconds: i64) -> Outcome {
    if !(MIN_UNIX_SECONDS..=MAX_UNIX_SECONDS).contains(&seconds) {
        return Err(runtime("timestamp overflow".to_string()));
    }
    Timestamp::from_second(seconds)
        .map(Value::Timestamp)
        .map_err(|_| runtime("timestamp overflow".to_string()))
}

/// `string(duration)`: seconds with as few decimals as needed, then `s` (`90s`, `1.5s`).
pub(crate) fn format_duration(d: &SignedDuration) -> String {
    let seconds = d.as_secs() as f64 + f64::from(d.subsec_nanos()) / 1e9;
    format!("{seconds}s")
}

/// `string(timestamp)`: RFC 3339 in UTC, with as many fractional digits as needed.
pub(crate) fn format_timestamp(t: &Timestamp) -> String {
    let dt = Offset::UTC.to_datetime(*t);
    let mut out = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        dt.year(),
        dt.month(),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second()
    );
    let nanos = dt.subsec_nanosecond();
    if nanos != 0 {
        let fraction = format!("{nanos:09}");
        out.push('.');
        out.push_str(fraction.trim_end_matches('0'));
    }
    out.push('Z');
    out
}

/// Go's `time.ParseDuration`: `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+` with units `ns`, `us`, `µs`,
/// `ms`, `s`, `m`, `h`, or `0`; `None` for anything else or beyond Go's range.
pub(crate) fn parse_duration(s: &str) -> Option<SignedDuration> {
    let (negative, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Some(SignedDuration::ZERO);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int_part, after) = rest.split_at(int_len);
        let (frac_part, after) = match after.strip_prefix('.') {
            Some(after) => {
                let len = after.bytes().take_while(u8::is_ascii_digit).count();
                after.split_at(len)
            }
            None => ("", after),
        };
        if int_part.is_empty() && frac_part.is_empty() {
            return None;
        }
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let unit: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        let whole: u128 = if int_part.is_empty() {
            0
        } else {
            int_part.parse::<u64>().ok()?.into()
        };
        let mut component = whole.checked_mul(unit)?;
        // Fractions: digits beyond nanosecond precision do not change the result.
        let mut scale: u128 = 1;
        let mut fraction: u128 = 0;
        for digit in frac_part.bytes().take(30) {
            fraction = fraction * 10 + u128::from(digit - b'0');
            scale *= 10;
        }
        component += fraction * unit / scale;
        total = total.checked_add(component)?;
        if total > 1u128 << 63 {
            return None;
        }
        rest = after;
    }
    let nanos = if negative {
        -i128::try_from(total).ok()?
    } else {
        i128::try_from(total).ok()?
    };
    let nanos = i64::try_from(nanos).ok()?;
    Some(SignedDuration::from_nanos(nanos))
}

/// `timestamp(string)`: Go's RFC 3339 layout, `2006-01-02T15:04:05Z07:00`, with optional
/// fractional seconds.
pub(crate) fn parse_timestamp(s: &str) -> Outcome {
    let invalid = || {
        runtime("type conversion error from 'string' to 'google.protobuf.Timestamp'".to_string())
    };
    match parse_rfc3339(s).ok_or_else(invalid)? {
        Some(parsed) => timestamp_checked(parsed),
        None => Err(runtime("timestamp overflow".to_string())),
    }
}

/// `None` when `s` is not RFC 3339, `Some(None)` when it is but lies beyond the range of
/// timestamps (the last day of year 9999 lies partly beyond `jiff`'s).
fn parse_rfc3339(s: &str) -> Option<Option<Timestamp>> {
    let b = s.as_bytes();
    let number = |from: usize, len: usize| -> Option<i32> {
        let part = b.get(from..from + len)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    let separators = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':')];
    if separators.iter().any(|&(i, c)| b.get(i) != Some(&c)) {
        return None;
    }
    let year = i16::try_from(number(0, 4)?).ok()?;
    let month = i8::try_from(number(5, 2)?).ok()?;
    let day = i8::try_from(number(8, 2)?).ok()?;
    let hour = i8::try_from(number(11, 2)?).ok()?;
    let minute = i8::try_from(number(14, 2)?).ok()?;
    let second = i8::try_from(number(17, 2)?).ok()?;
    let mut i = 19;
    let mut nanos: i32 = 0;
    if b.get(i) == Some(&b'.') {
        let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        for (n, digit) in b[i + 1..i + 1 + digits].iter().enumerate() {
            if n < 9 {
                nanos = nanos * 10 + i32::from(digit - b'0');
            }
        }
        for _ in digits..9 {
            nanos *= 10;
        }
        i += 1 + digits;
    }
    let offset_seconds = match b.get(i..)? {
        b"Z" => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let hours = number(i + 1, 2)?;
            let minutes = number(i + 4, 2)?;
            if hours > 23 || minutes > 59 {
                return None;
            }
            let seconds = hours * 3600 + minutes * 60;
            if *sign == b'-' { -seconds } else { seconds }
        }
        _ => return None,
    };
    let datetime =
        jiff::civil::DateTime::new(year, month, day, hour, minute, second, nanos).ok()?;
    let offset = Offset::from_seconds(offset_seconds).ok()?;
    Some(offset.to_timestamp(datetime).ok())
}

/// The time zone of an accessor's argument: an IANA name (`America/New_York`) or an offset
/// (`+05:30`, `-08:00`), as cel-go reads them.
fn time_zone(name: &str) -> Result<TimeZone, EvalError> {
    let Some(colon) = name.find(':') else {
        if name.is_empty() || name == "UTC" {
            return Ok(TimeZone::UTC);
        }
        return TimeZone::get(name).map_err(|_| runtime(format!("unknown time zone {name}")));
    };
    let invalid = || runtime(format!("invalid time zone offset: {name}"));
    let hours: i32 = name[..colon].parse().map_err(|_| invalid())?;
    let minutes: i32 = name[colon + 1..].parse().map_err(|_| invalid())?;
    if !(0..=59).contains(&minutes) {
        return Err(runtime(format!(
            "timezone offset minutes out of range [0, 59]: {name}"
        )));
    }
    let total = if name.starts_with('-') {
        hours * 60 - minutes
    } else {
        hours * 60 + minutes
    };
    Offset::from_seconds(total * 60)
        .map(TimeZone::fixed)
        .map_err(|_| invalid())
}

/// The timestamp and duration accessors (`t.getHours()`, `t.getHours('Europe/Paris')`,
/// `d.getSeconds()`); `None` for any other call.
pub(crate) fn accessor(function: &str, method: bool, args: &[Value]) -> Option<Outcome> {
    if !method {
        return None;
    }
    match args {
        [Value::Timestamp(t)] => timestamp_accessor(function, t, TimeZone::UTC),
        [Value::Timestamp(t), Value::String(zone)] => match time_zone(zone) {
            Ok(zone) => timestamp_accessor(function, t, zone),
            Err(err) if is_timestamp_accessor(function) => Some(Err(err)),
            Err(_) => None,
        },
        [Value::Duration(d)] => {
            let nanos = nanoseconds(d);
            let value = match function {
                "getHours" => nanos / 3_600_000_000_000,
                "getMinutes" => nanos / 60_000_000_000,
                "getSeconds" => nanos / 1_000_000_000,
                "getMilliseconds" => nanos / 1_000_000,
                _ => return None,
            };
            Some(Ok(Value::Int(value)))
        }
        [Value::Timestamp(_) | Value::Duration(_), ..] if is_timestamp_accessor(function) => {
            Some(Err(no_such_overload()))
        }
        _ => None,
    }
}

fn is_timestamp_accessor(function: &str) -> bool {
    matches!(
        function,
        "getFullYear"
            | "getMonth"
            | "getDayOfYear"
            | "getDayOfMonth"
            | "getDate"
            | "getDayOfWeek"
            | "getHours"
            | "getMinutes"
            | "getSeconds"
            | "getMilliseconds"
    )
}

fn timestamp_accessor(function: &str, t: &Timestamp, zone: TimeZone) -> Option<Outcome> {
    let dt = zone.to_datetime(*t);
    let value = match function {
        "getFullYear" => i64::from(dt.year()),
        "getMonth" => i64::from(dt.month()) - 1,
        "getDayOfYear" => i64::from(dt.day_of_year()) - 1,
        "getDayOfMonth" => i64::from(dt.day()) - 1,
        "getDate" => i64::from(dt.day()),
        "getDayOfWeek" => i64::from(dt.weekday().to_sunday_zero_offset()),
        "getHours" => i64::from(dt.hour()),
        "getMinutes" => i64::from(dt.minute()),
        "getSeconds" => i64::from(dt.second()),
        "getMilliseconds" => i64::from(dt.subsec_nanosecond() / 1_000_000),
        _ => return None,
    };
    Some(Ok(Value::Int(value)))
}
