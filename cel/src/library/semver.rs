//! Kubernetes' semver library at version 1: `semver(string[, normalize])`,
//! `isSemver(string[, normalize])`, and on `kubernetes.Semver` values `major`, `minor`,
//! `patch`, `isGreaterThan`, `isLessThan` and `compareTo`. Parsing and ordering follow
//! blang/semver v4 (build metadata is ignored when comparing), with its error messages.

use std::any::Any;
use std::cmp::Ordering;
use std::sync::Arc;

use super::{error, finish, no_such_overload, string_traversal_cost};
use crate::{Budget, EvalError, Opaque, Value};

/// `kubernetes.Semver`.
#[derive(Clone, Debug, PartialEq)]
pub struct Semver {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    pub pre: Vec<Prerelease>,
    pub build: Vec<String>,
}

/// One dot-separated prerelease identifier.
#[derive(Clone, Debug, PartialEq)]
pub enum Prerelease {
    Number(u64),
    Text(String),
}

const NUMBERS: &str = "0123456789";
const ALPHANUM: &str = "-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

fn contains_only(s: &str, set: &str) -> bool {
    s.chars().all(|c| set.contains(c))
}

fn has_leading_zeroes(s: &str) -> bool {
    s.len() > 1 && s.starts_with('0')
}

/// Go's `strconv.ParseUint(s, 10, 64)` with its error text.
fn parse_uint(s: &str) -> Result<u64, String> {
    if s.is_empty() || !contains_only(s, NUMBERS) {
        return Err(format!("strconv.ParseUint: parsing {s:?}: invalid syntax"));
    }
    s.parse()
        .map_err(|_| format!("strconv.ParseUint: parsing {s:?}: value out of range"))
}

fn number(part: &str, name: &str) -> Result<u64, String> {
    if !contains_only(part, NUMBERS) {
        return Err(format!(
            "Invalid character(s) found in {name} number {part:?}"
        ));
    }
    if has_leading_zeroes(part) {
        let title = format!("{}{}", name[..1].to_uppercase(), &name[1..]);
        return Err(format!(
            "{title} number must not contain leading zeroes {part:?}"
        ));
    }
    parse_uint(part)
}

impl Semver {
    /// blang/semver's `Parse`.
    pub fn parse(s: &str) -> Result<Semver, String> {
        if s.is_empty() {
            return Err("Version string empty".to_string());
        }
        let parts: Vec<&str> = s.splitn(3, '.').collect();
        let [major, minor, rest] = parts[..] else {
            return Err("No Major.Minor.Patch elements found".to_string());
        };
        let major = number(major, "major")?;
        let minor = number(minor, "minor")?;
        let mut patch = rest;
        let mut build = Vec::new();
        if let Some((p, b)) = patch.split_once('+') {
            build = b.split('.').map(str::to_string).collect();
            patch = p;
        }
        let mut pre_text = None;
        if let Some((p, pre)) = patch.split_once('-') {
            pre_text = Some(pre);
            patch = p;
        }
        let patch = number(patch, "patch")?;
        let mut pre = Vec::new();
        for part in pre_text
            .map(|p| p.split('.').collect::<Vec<_>>())
            .unwrap_or_default()
        {
            if part.is_empty() {
                return Err("Prerelease is empty".to_string());
            }
            if contains_only(part, NUMBERS) {
                if has_leading_zeroes(part) {
                    return Err(format!(
                        "Numeric PreRelease version must not contain leading zeroes {part:?}"
                    ));
                }
                pre.push(Prerelease::Number(parse_uint(part)?));
            } else if contains_only(part, ALPHANUM) {
                pre.push(Prerelease::Text(part.to_string()));
            } else {
                return Err(format!("Invalid character(s) found in prerelease {part:?}"));
            }
        }
        for part in &build {
            if part.is_empty() {
                return Err("Build meta data is empty".to_string());
            }
            if !contains_only(part, ALPHANUM) {
                return Err(format!(
                    "Invalid character(s) found in build meta data {part:?}"
                ));
            }
        }
        Ok(Semver {
            major,
            minor,
            patch,
            pre,
            build,
        })
    }

    /// Kubernetes' `normalizeAndParse`: drops a leading `v` and leading zeroes, and fills in
    /// a missing minor or patch with 0.
    pub fn parse_normalized(s: &str) -> Result<Semver, String> {
        let s = s.strip_prefix('v').unwrap_or(s);
        let mut parts: Vec<String> = s
            .splitn(3, '.')
            .map(|p| {
                if p.len() > 1 {
                    let trimmed = p.trim_start_matches('0');
                    if trimmed.chars().next().is_none_or(|c| !c.is_ascii_digit()) {
                        format!("0{trimmed}")
                    } else {
                        trimmed.to_string()
                    }
                } else {
                    p.to_string()
                }
            })
            .collect();
        if parts.len() < 3 {
            if parts
                .last()
                .is_some_and(|p| p.contains('+') || p.contains('-'))
            {
                return Err("short version cannot contain PreRelease/Build meta data".to_string());
            }
            while parts.len() < 3 {
                parts.push("0".to_string());
            }
        }
        Semver::parse(&parts.join("."))
    }

    /// Semantic version precedence (build metadata ignored).
    pub fn compare(&self, other: &Semver) -> Ordering {
        let core =
            (self.major, self.minor, self.patch).cmp(&(other.major, other.minor, other.patch));
        if core != Ordering::Equal {
            return core;
        }
        match (self.pre.is_empty(), other.pre.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Greater,
            (false, true) => return Ordering::Less,
            _ => {}
        }
        for (a, b) in self.pre.iter().zip(&other.pre) {
            let order = match (a, b) {
                (Prerelease::Number(x), Prerelease::Number(y)) => x.cmp(y),
                (Prerelease::Number(_), Prerelease::Text(_)) => Ordering::Less,
                (Prerelease::Text(_), Prerelease::Number(_)) => Ordering::Greater,
                (Prerelease::Text(x), Prerelease::Text(y)) => x.cmp(y),
            };
            if order != Ordering::Equal {
                return order;
            }
        }
        self.pre.len().cmp(&other.pre.len())
    }
}

impl Opaque for Semver {
    fn type_name(&self) -> &'static str {
        "kubernetes.Semver"
    }

    fn equals(&self, other: &dyn Opaque) -> bool {
        other
            .as_any()
            .downcast_ref::<Semver>()
            .is_some_and(|o| self.compare(o) == Ordering::Equal)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn as_semver(value: &Value) -> Option<&Semver> {
    match value {
        Value::Opaque(o) => o.as_any().downcast_ref::<Semver>(),
        _ => None,
    }
}

/// The semver functions; `None` for other names and for receivers that are not semvers.
pub fn call(
    function: &str,
    receiver: Option<&Value>,
    args: &[Value],
    budget: &mut Budget,
) -> Option<Result<Value, EvalError>> {
    if matches!(function, "semver" | "isSemver") {
        let (text, normalize) = match (receiver, args) {
            (None, [text @ Value::String(_)]) => (text, false),
            (None, [text @ Value::String(_), Value::Bool(n)]) => (text, *n),
            _ => return Some(Err(no_such_overload(function))),
        };
        let Value::String(s) = text else {
            return Some(Err(no_such_overload(function)));
        };
        let parsed = if normalize {
            Semver::parse_normalized(s)
        } else {
            Semver::parse(s)
        };
        let result = match function {
            "semver" => parsed.map(|v| Value::Opaque(Arc::new(v))).map_err(error),
            _ => Ok(Value::Bool(parsed.is_ok())),
        };
        return finish(budget, string_traversal_cost(text), result);
    }
    let v = as_semver(receiver?)?;
    let result = match (function, args) {
        ("major", []) => Ok(Value::Int(v.major as i64)),
        ("minor", []) => Ok(Value::Int(v.minor as i64)),
        ("patch", []) => Ok(Value::Int(v.patch as i64)),
        ("isGreaterThan" | "isLessThan" | "compareTo", [other]) => {
            let Some(other) = as_semver(other) else {
                return Some(Err(no_such_overload(function)));
            };
            let order = v.compare(other);
            Ok(match function {
                "isGreaterThan" => Value::Bool(order == Ordering::Greater),
                "isLessThan" => Value::Bool(order == Ordering::Less),
                _ => Value::Int(order as i64),
            })
        }
        ("major" | "minor" | "patch" | "isGreaterThan" | "isLessThan" | "compareTo", _) => {
            Err(no_such_overload(function))
        }
        _ => return None,
    };
    finish(budget, 1, result)
}

#[cfg(test)]
mod tests {
    //! After Kubernetes 1.35's `pkg/cel/library/semver_test.go`.
    use super::*;
    use crate::library::testing::*;

    fn v(text: &str) -> Value {
        eval("semver", None, &[s(text)]).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn parses_and_refuses_as_upstream() {
        let errors = [
            ("", "Version string empty"),
            ("1.0", "No Major.Minor.Patch elements found"),
            (
                "v1.0.0",
                "Invalid character(s) found in major number \"v1\"",
            ),
            (
                "01.0.0",
                "Major number must not contain leading zeroes \"01\"",
            ),
            (
                "1.01.0",
                "Minor number must not contain leading zeroes \"01\"",
            ),
            (
                "1.0.01",
                "Patch number must not contain leading zeroes \"01\"",
            ),
            ("1.0.x", "Invalid character(s) found in patch number \"x\""),
            ("1.0.0-", "Prerelease is empty"),
            (
                "1.0.0-01",
                "Numeric PreRelease version must not contain leading zeroes \"01\"",
            ),
            (
                "1.0.0-a_b",
                "Invalid character(s) found in prerelease \"a_b\"",
            ),
            ("1.0.0+", "Build meta data is empty"),
            (
                "1.0.0+a_b",
                "Invalid character(s) found in build meta data \"a_b\"",
            ),
            ("1..0", "strconv.ParseUint: parsing \"\": invalid syntax"),
        ];
        for (text, want) in errors {
            assert_error(eval("semver", None, &[s(text)]), want);
            assert_value(eval("isSemver", None, &[s(text)]), Value::Bool(false));
        }
        for text in ["1.0.0", "1.2.3-alpha.1+build.5", "0.0.0-0"] {
            assert_value(eval("isSemver", None, &[s(text)]), Value::Bool(true));
        }
    }

    #[test]
    fn normalizes_on_request() {
        let t = Value::Bool(true);
        for (text, want) in [
            ("v1.0.0", "1.0.0"),
            ("1.0", "1.0.0"),
            ("v1", "1.0.0"),
            ("01.01.01", "1.1.1"),
            ("1.0.0-01", "1.0.0-01"),
        ] {
            let got = eval("semver", None, &[s(text), t.clone()]);
            if want == "1.0.0-01" {
                assert!(got.is_err());
                continue;
            }
            assert!(got.unwrap().equals(&v(want)), "{text}");
        }
        assert_error(
            eval("semver", None, &[s("1.0-alpha"), t.clone()]),
            "short version cannot contain PreRelease/Build meta data",
        );
        assert_value(eval("isSemver", None, &[s("v1.2"), t]), Value::Bool(true));
        assert_value(
            eval("isSemver", None, &[s("v1.2"), Value::Bool(false)]),
            Value::Bool(false),
        );
    }

    #[test]
    fn accessors_and_ordering() {
        let cases: Vec<(Result<Value, String>, Value)> = vec![
            (eval("major", Some(v("1.2.3")), &[]), Value::Int(1)),
            (eval("minor", Some(v("1.2.3")), &[]), Value::Int(2)),
            (eval("patch", Some(v("1.2.3")), &[]), Value::Int(3)),
            (
                eval("isGreaterThan", Some(v("1.0.1")), &[v("1.0.0")]),
                Value::Bool(true),
            ),
            (
                eval("isGreaterThan", Some(v("1.0.0")), &[v("1.0.0")]),
                Value::Bool(false),
            ),
            (
                eval("isLessThan", Some(v("1.0.0")), &[v("1.0.1")]),
                Value::Bool(true),
            ),
            (
                eval("compareTo", Some(v("1.0.0")), &[v("1.0.0")]),
                Value::Int(0),
            ),
            (
                eval("compareTo", Some(v("1.0.0")), &[v("1.0.1")]),
                Value::Int(-1),
            ),
            (
                eval("compareTo", Some(v("1.0.1")), &[v("1.0.0")]),
                Value::Int(1),
            ),
            (
                eval("compareTo", Some(v("1.0.0-alpha")), &[v("1.0.0")]),
                Value::Int(-1),
            ),
            (
                eval("compareTo", Some(v("1.0.0-alpha.1")), &[v("1.0.0-alpha")]),
                Value::Int(1),
            ),
            (
                eval("compareTo", Some(v("1.0.0-2")), &[v("1.0.0-10")]),
                Value::Int(-1),
            ),
            (
                eval("compareTo", Some(v("1.0.0-a")), &[v("1.0.0-1")]),
                Value::Int(1),
            ),
            (
                eval("compareTo", Some(v("1.0.0+a")), &[v("1.0.0+b")]),
                Value::Int(0),
            ),
        ];
        for (got, want) in cases {
            assert_value(got, want);
        }
        assert!(v("1.0.0+x").equals(&v("1.0.0")));
        assert!(!v("1.0.0").equals(&v("1.0.1")));
        assert_eq!(v("1.0.0").type_name().as_str(), "kubernetes.Semver");
        assert_error(
            eval("major", Some(v("1.0.0")), &[Value::Int(1)]),
            "no such overload: major",
        );
        assert_eq!(run("semver", None, &[s("1.0.0-alpha.12")]).1, 2);
        assert_eq!(run("major", Some(v("1.0.0")), &[]).1, 1);
    }
}
