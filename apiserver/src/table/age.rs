//! Ages and times as kubectl shows them: apimachinery's `duration.HumanDuration` and the
//! RFC 3339 `CREATED AT` of the default printer.

use jiff::{SignedDuration, Timestamp};

/// What a missing (or zero) timestamp prints as.
pub const UNKNOWN: &str = "<unknown>";

/// A succinct duration with two or three significant figures, exactly as apimachinery's
/// `HumanDuration`: `59s`, `119s`, `2m`, `2m10s`, `10m`, `179m`, `3h`, `7h59m`, `47h`, `2d`,
/// `7d23h`, `45d`, `729d`, `2y`, `7y364d`, `8y`. Slightly negative durations (clock skew of up to
/// a second) print `0s`; more negative ones `<invalid>`.
pub fn human_duration(d: SignedDuration) -> String {
    // Go truncates toward zero (`int(d.Seconds())`), as `as_secs` does.
    let seconds = d.as_secs();
    if seconds < -1 {
        return "<invalid>".to_owned();
    }
    if seconds < 0 {
        return "0s".to_owned();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    let days = hours / 24;
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{days}d")
        } else {
            format!("{days}d{h}h")
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{days}d");
    }
    let years = days / 365;
    if hours < 24 * 365 * 8 {
        let dy = days % 365;
        return if dy == 0 {
            format!("{years}y")
        } else {
            format!("{years}y{dy}d")
        };
    }
    format!("{years}y")
}

/// Parses an RFC 3339 timestamp as Kubernetes writes them; `None` when absent, empty, `null`,
/// Go's zero time, or not a timestamp at all.
pub fn parse(value: Option<&str>) -> Option<Timestamp> {
    let ts: Timestamp = value?.parse().ok()?;
    (!is_zero(ts)).then_some(ts)
}

/// Go's zero `time.Time` (`0001-01-01T00:00:00Z`), which `metav1.Time.IsZero` treats as unset.
fn is_zero(ts: Timestamp) -> bool {
    ts.as_second() == -62_135_596_800 && ts.subsec_nanosecond() == 0
}

/// The age of something stamped `value`, as of `now`: `<unknown>` without a usable timestamp.
pub fn since(value: Option<&str>, now: Timestamp) -> String {
    match parse(value) {
        Some(ts) => human_duration(now.duration_since(ts)),
        None => UNKNOWN.to_owned(),
    }
}

/// The age of a custom resource `date` column: like [`since`], but a value that is not a
/// timestamp prints `<invalid>` (an empty one `<unknown>`).
pub fn date_column(value: &str, now: Timestamp) -> String {
    if value.is_empty() || value == "null" {
        return UNKNOWN.to_owned();
    }
    match value.parse::<Timestamp>() {
        Ok(ts) if is_zero(ts) => UNKNOWN.to_owned(),
        Ok(ts) => human_duration(now.duration_since(ts)),
        Err(_) => "<invalid>".to_owned(),
    }
}

/// The `CREATED AT` cell of the default printer: RFC 3339 in UTC, whole seconds; Go's zero time
/// when the object has no creation timestamp.
pub fn created_at(value: Option<&str>) -> String {
    match parse(value) {
        Some(ts) => ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        None => "0001-01-01T00:00:00Z".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: i64 = 1000;
    const MIN: i64 = 60 * SEC;
    const HOUR: i64 = 60 * MIN;
    const DAY: i64 = 24 * HOUR;
    const YEAR: i64 = 365 * DAY;

    fn check(cases: &[(i64, &str)]) {
        for (millis, want) in cases {
            let got = human_duration(SignedDuration::from_millis(*millis));
            assert_eq!(got, *want, "{millis}ms");
        }
    }

    #[test]
    fn human_duration_examples() {
        // The examples of apimachinery's TestHumanDuration.
        check(&[
            (SEC, "1s"),
            (70 * SEC, "70s"),
            (190 * SEC, "3m10s"),
            (70 * MIN, "70m"),
            (47 * HOUR, "47h"),
            (49 * HOUR, "2d1h"),
            ((8 * 24 + 2) * HOUR, "8d"),
            (367 * DAY, "367d"),
            ((365 * 2 * 24 + 25) * HOUR, "2y1d"),
            ((365 * 8 * 24 + 2) * HOUR, "8y"),
        ]);
    }

    #[test]
    fn human_duration_boundaries() {
        // The boundaries of apimachinery's TestHumanDurationBoundaries (a nanosecond there is a
        // millisecond here; the truncation is the same).
        check(&[
            (-2 * SEC, "<invalid>"),
            (-2 * SEC + 1, "0s"),
            (0, "0s"),
            (SEC - 1, "0s"),
            (2 * MIN - 1, "119s"),
            (2 * MIN, "2m"),
            (2 * MIN + SEC, "2m1s"),
            (2 * MIN + 10 * SEC, "2m10s"),
            (10 * MIN - 1, "9m59s"),
            (10 * MIN, "10m"),
            (10 * MIN + SEC, "10m"),
            (3 * HOUR - 1, "179m"),
            (3 * HOUR, "3h"),
            (3 * HOUR + MIN, "3h1m"),
            (8 * HOUR - 1, "7h59m"),
            (8 * HOUR, "8h"),
            (8 * HOUR + 59 * MIN, "8h"),
            (2 * DAY - 1, "47h"),
            (2 * DAY, "2d"),
            (2 * DAY + HOUR, "2d1h"),
            (8 * DAY - 1, "7d23h"),
            (8 * DAY, "8d"),
            (8 * DAY + 23 * HOUR, "8d"),
            (45 * DAY, "45d"),
            (2 * YEAR - 1, "729d"),
            (2 * YEAR, "2y"),
            (2 * YEAR + 23 * HOUR + 59 * MIN, "2y"),
            (2 * YEAR + DAY - 1, "2y"),
            (2 * YEAR + DAY, "2y1d"),
            (3 * YEAR, "3y"),
            (7 * YEAR, "7y"),
            (8 * YEAR - 1, "7y364d"),
            (8 * YEAR, "8y"),
            (8 * YEAR + 364 * DAY, "8y"),
            (9 * YEAR, "9y"),
        ]);
    }

    #[test]
    fn ages_from_timestamps() {
        let now: Timestamp = "2025-01-10T12:00:00Z".parse().unwrap();
        assert_eq!(since(Some("2025-01-10T11:58:00Z"), now), "2m");
        assert_eq!(since(Some("2025-01-10T11:59:59.5Z"), now), "0s");
        assert_eq!(since(None, now), "<unknown>");
        assert_eq!(since(Some("yesterday"), now), "<unknown>");
        assert_eq!(since(Some("0001-01-01T00:00:00Z"), now), "<unknown>");
        assert_eq!(date_column("2025-01-08T12:00:00Z", now), "2d");
        assert_eq!(date_column("", now), "<unknown>");
        assert_eq!(date_column("soon", now), "<invalid>");
    }

    #[test]
    fn created_at_is_rfc3339_utc() {
        assert_eq!(
            created_at(Some("2025-01-10T13:04:05.123+01:00")),
            "2025-01-10T12:04:05Z"
        );
        assert_eq!(created_at(None), "0001-01-01T00:00:00Z");
    }
}
