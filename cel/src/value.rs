//! Values the interpreter computes with: CEL's types, plus opaque values the Kubernetes
//! libraries add (quantity, IP, CIDR, URL, semver, format).

use std::any::Any;
use std::borrow::Borrow;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// A CEL value. Cheap to clone: aggregates and strings are shared.
#[derive(Clone, Debug)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    String(Arc<str>),
    Bytes(Arc<[u8]>),
    List(Arc<[Value]>),
    Map(Arc<Map>),
    /// Within CEL's range of ±10,000 years (checked where durations are made).
    Duration(jiff::SignedDuration),
    /// Within CEL's range, 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z.
    Timestamp(jiff::Timestamp),
    /// `optional.of(x)` is `Optional(Some(x))`, `optional.none()` is `Optional(None)`.
    Optional(Option<Arc<Value>>),
    /// The value of a type name (`int`, `type(x)`).
    Type(TypeName),
    Opaque(Arc<dyn Opaque>),
}

/// A map: keys are bool, int, uint or string. Sorted by key, so iteration (and so the
/// results of `map`/`filter` over a map's keys) is the same on every run.
#[derive(Clone, Debug, Default)]
pub struct Map {
    pub entries: BTreeMap<Key, Value>,
}

/// A map key. Ints and uints with the same numeric value are different keys here; lookups
/// convert numerically as cel-go's heterogeneous equality does (see `Map::get`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Key {
    Bool(bool),
    Int(i64),
    Uint(u64),
    String(Arc<str>),
}

/// A value of a type the Kubernetes libraries add. `type_name` is what `type(x)` and error
/// messages show (`kubernetes.Quantity`, `net.IP`, `net.CIDR`, `kubernetes.URL`,
/// `kubernetes.Semver`, `kubernetes.NamedFormat`).
pub trait Opaque: fmt::Debug + Send + Sync {
    fn type_name(&self) -> &'static str;
    /// `==` between two opaque values of the same type name.
    fn equals(&self, other: &dyn Opaque) -> bool;
    fn as_any(&self) -> &dyn Any;
}

/// A runtime type, as `type(x)` returns it and the conversions name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeName {
    Null,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    List,
    Map,
    Duration,
    Timestamp,
    Optional,
    Type,
    /// An opaque type's name.
    Opaque(&'static str),
}

impl TypeName {
    /// The name CEL prints (`int`, `google.protobuf.Duration`, `optional_type`).
    pub fn as_str(&self) -> &'static str {
        match self {
            TypeName::Null => "null_type",
            TypeName::Bool => "bool",
            TypeName::Int => "int",
            TypeName::Uint => "uint",
            TypeName::Double => "double",
            TypeName::String => "string",
            TypeName::Bytes => "bytes",
            TypeName::List => "list",
            TypeName::Map => "map",
            TypeName::Duration => "google.protobuf.Duration",
            TypeName::Timestamp => "google.protobuf.Timestamp",
            TypeName::Optional => "optional_type",
            TypeName::Type => "type",
            TypeName::Opaque(name) => name,
        }
    }
}

impl fmt::Display for TypeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Value {
    pub fn type_name(&self) -> TypeName {
        match self {
            Value::Null => TypeName::Null,
            Value::Bool(_) => TypeName::Bool,
            Value::Int(_) => TypeName::Int,
            Value::Uint(_) => TypeName::Uint,
            Value::Double(_) => TypeName::Double,
            Value::String(_) => TypeName::String,
            Value::Bytes(_) => TypeName::Bytes,
            Value::List(_) => TypeName::List,
            Value::Map(_) => TypeName::Map,
            Value::Duration(_) => TypeName::Duration,
            Value::Timestamp(_) => TypeName::Timestamp,
            Value::Optional(_) => TypeName::Optional,
            Value::Type(_) => TypeName::Type,
            Value::Opaque(o) => TypeName::Opaque(o.type_name()),
        }
    }

    pub fn string(s: &str) -> Value {
        Value::String(Arc::from(s))
    }

    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Arc::from(items))
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

impl From<i64> for Value {
    fn from(i: i64) -> Value {
        Value::Int(i)
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::string(s)
    }
}

impl Value {
    /// CEL's `==`: heterogeneous (numbers compare by value across int, uint and double; values
    /// of different types are unequal, never an error), lists element by element, maps by key
    /// set and values, NaN unequal to everything.
    pub fn equals(&self, other: &Value) -> bool {
        use Value::*;
        match (self, other) {
            (Null, Null) => true,
            (Bool(a), Bool(b)) => a == b,
            (String(a), String(b)) => a == b,
            (Bytes(a), Bytes(b)) => a == b,
            (Duration(a), Duration(b)) => a == b,
            (Timestamp(a), Timestamp(b)) => a == b,
            (Type(a), Type(b)) => a == b,
            (List(a), List(b)) => {
                a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x.equals(y))
            }
            (Map(a), Map(b)) => {
                a.entries.len() == b.entries.len()
                    && a.entries
                        .iter()
                        .all(|(k, v)| b.get(k).is_some_and(|w| v.equals(w)))
            }
            (Optional(a), Optional(b)) => match (a, b) {
                (None, None) => true,
                (Some(a), Some(b)) => a.equals(b),
                _ => false,
            },
            (Opaque(a), Opaque(b)) => a.type_name() == b.type_name() && a.equals(&**b),
            _ => matches!(self.compare(other), Some(std::cmp::Ordering::Equal)),
        }
    }

    /// CEL's ordering for `<`, `<=`, `>`, `>=` and sorting: numbers across int, uint and
    /// double; strings by code point, bytes, bools, durations and timestamps. `None` for
    /// values that have no order between them (different types, NaN), which the operators
    /// report as `no such overload`.
    pub fn compare(&self, other: &Value) -> Option<std::cmp::Ordering> {
        use Value::*;
        use std::cmp::Ordering;
        match (self, other) {
            (Int(a), Int(b)) => Some(a.cmp(b)),
            (Uint(a), Uint(b)) => Some(a.cmp(b)),
            (Double(a), Double(b)) => a.partial_cmp(b),
            (Int(a), Uint(b)) => Some(if *a < 0 {
                Ordering::Less
            } else {
                (*a as u64).cmp(b)
            }),
            (Uint(a), Int(b)) => Some(if *b < 0 {
                Ordering::Greater
            } else {
                a.cmp(&(*b as u64))
            }),
            (Int(a), Double(b)) => compare_int_double(*a as i128, *b),
            (Uint(a), Double(b)) => compare_int_double(*a as i128, *b),
            (Double(a), Int(b)) => compare_int_double(*b as i128, *a).map(Ordering::reverse),
            (Double(a), Uint(b)) => compare_int_double(*b as i128, *a).map(Ordering::reverse),
            (String(a), String(b)) => Some(a.cmp(b)),
            (Bytes(a), Bytes(b)) => Some(a.cmp(b)),
            (Bool(a), Bool(b)) => Some(a.cmp(b)),
            (Duration(a), Duration(b)) => Some(a.cmp(b)),
            (Timestamp(a), Timestamp(b)) => Some(a.cmp(b)),
            _ => None,
        }
    }
}

/// Orders integer `i` (an int or uint widened) against double `d` as cel-go does: outside the
/// integer type's range the double wins outright; inside it, the integer is compared as a
/// double (so `9223372036854775807` equals `9223372036854775808.0`, as in cel-spec).
fn compare_int_double(i: i128, d: f64) -> Option<std::cmp::Ordering> {
    use std::cmp::Ordering;
    if d.is_nan() {
        return None;
    }
    let (min, max) = if i > i128::from(i64::MAX) {
        (0.0, u64::MAX as f64)
    } else {
        (i64::MIN as f64, i64::MAX as f64)
    };
    if d < min {
        return Some(Ordering::Greater);
    }
    if d > max {
        return Some(Ordering::Less);
    }
    (i as f64).partial_cmp(&d)
}

/// Maps up to this many entries are searched by a scan (a B-tree node holds 11).
const SCANNED: usize = 11;

impl Map {
    /// The value under string key `name` (a field of an object), found without making a
    /// [`Key`] of it.
    pub fn field(&self, name: &str) -> Option<&Value> {
        // An object's fields fit in one node of the tree, which a search scans in order
        // anyway: comparing for equality there is cheaper than ordering through `KeyView`.
        if self.entries.len() <= SCANNED {
            return self.entries.iter().find_map(|(key, value)| match key {
                Key::String(s) if **s == *name => Some(value),
                _ => None,
            });
        }
        self.entries.get(&KeyRef::String(name) as &dyn KeyView)
    }

    /// The value under `key`, finding numeric keys across int and uint (and a double key
    /// with an integral value) as cel-go does.
    pub fn get(&self, key: &Key) -> Option<&Value> {
        if let Some(found) = self.entries.get(key) {
            return Some(found);
        }
        match key {
            Key::Int(i) if *i >= 0 => self.entries.get(&Key::Uint(*i as u64)),
            Key::Uint(u) => i64::try_from(*u)
                .ok()
                .and_then(|i| self.entries.get(&Key::Int(i))),
            _ => None,
        }
    }

    /// The value under a key given as a value (`m[k]`, `k in m`); `Ok(None)` when there is
    /// no such key, an error naming the type when `key` cannot be a map key.
    pub fn lookup(&self, key: &Value) -> Result<Option<&Value>, crate::EvalError> {
        match Key::from_value(key) {
            Some(key) => Ok(self.get(&key)),
            None => match key {
                Value::Double(d) if d.fract() == 0.0 && d.is_finite() => {
                    if *d >= 0.0 && *d < 1.8446744073709552e19 {
                        Ok(self.get(&Key::Uint(*d as u64)))
                    } else if *d >= -9.223_372_036_854_776e18 && *d < 0.0 {
                        Ok(self.get(&Key::Int(*d as i64)))
                    } else {
                        Ok(None)
                    }
                }
                Value::Double(_) => Ok(None),
                other => Err(crate::EvalError::Runtime(format!(
                    "unsupported key type: {}",
                    other.type_name()
                ))),
            },
        }
    }
}

/// A [`Key`] as borrowed, ordered as keys are, so that a map can be searched by a `&str`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum KeyRef<'a> {
    Bool(bool),
    Int(i64),
    Uint(u64),
    String(&'a str),
}

/// What both [`Key`] and [`KeyRef`] are seen as by a map's search.
trait KeyView {
    fn view(&self) -> KeyRef<'_>;
}

impl KeyView for Key {
    fn view(&self) -> KeyRef<'_> {
        match self {
            Key::Bool(b) => KeyRef::Bool(*b),
            Key::Int(i) => KeyRef::Int(*i),
            Key::Uint(u) => KeyRef::Uint(*u),
            Key::String(s) => KeyRef::String(s),
        }
    }
}

impl KeyView for KeyRef<'_> {
    fn view(&self) -> KeyRef<'_> {
        *self
    }
}

impl<'a> Borrow<dyn KeyView + 'a> for Key {
    fn borrow(&self) -> &(dyn KeyView + 'a) {
        self
    }
}

impl PartialEq for dyn KeyView + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.view() == other.view()
    }
}

impl Eq for dyn KeyView + '_ {}

impl PartialOrd for dyn KeyView + '_ {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for dyn KeyView + '_ {
    fn cmp(&self, other: &Self) -> Ordering {
        self.view().cmp(&other.view())
    }
}

impl Key {
    /// The key a value makes, if it can be a map key.
    pub fn from_value(value: &Value) -> Option<Key> {
        match value {
            Value::Bool(b) => Some(Key::Bool(*b)),
            Value::Int(i) => Some(Key::Int(*i)),
            Value::Uint(u) => Some(Key::Uint(*u)),
            Value::String(s) => Some(Key::String(s.clone())),
            _ => None,
        }
    }

    pub fn to_value(&self) -> Value {
        match self {
            Key::Bool(b) => Value::Bool(*b),
            Key::Int(i) => Value::Int(*i),
            Key::Uint(u) => Value::Uint(*u),
            Key::String(s) => Value::String(s.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equality_is_heterogeneous_for_numbers_only() {
        assert!(Value::Int(1).equals(&Value::Uint(1)));
        assert!(Value::Int(1).equals(&Value::Double(1.0)));
        assert!(!Value::Int(1).equals(&Value::Double(1.5)));
        assert!(!Value::Int(1).equals(&Value::string("1")));
        assert!(!Value::Double(f64::NAN).equals(&Value::Double(f64::NAN)));
        assert!(Value::list(vec![Value::Int(1)]).equals(&Value::list(vec![Value::Uint(1)])));
    }

    #[test]
    fn numbers_order_across_types_as_cel_go_does() {
        use std::cmp::Ordering::*;
        // Within range the integer is compared as a double (cel-spec's conformance case).
        assert_eq!(
            Value::Int(i64::MAX).compare(&Value::Double(9_223_372_036_854_775_808.0)),
            Some(Equal)
        );
        assert_eq!(Value::Int(-1).compare(&Value::Uint(0)), Some(Less));
        assert_eq!(
            Value::Int(i64::MAX).compare(&Value::Double(9.3e18)),
            Some(Less)
        );
        assert_eq!(Value::Int(2).compare(&Value::Double(1.5)), Some(Greater));
        assert_eq!(Value::Double(1.5).compare(&Value::Int(2)), Some(Less));
        assert_eq!(Value::Int(1).compare(&Value::string("a")), None);
    }

    #[test]
    fn map_lookups_cross_numeric_key_types() {
        let mut map = Map::default();
        map.entries.insert(Key::Int(1), Value::Bool(true));
        assert!(map.get(&Key::Uint(1)).is_some());
        assert!(map.lookup(&Value::Double(1.0)).unwrap().is_some());
        assert!(map.lookup(&Value::Double(1.5)).unwrap().is_none());
        assert!(map.lookup(&Value::Null).is_err());
    }
}

/// Parses a duration as Go's `time.ParseDuration` does (`1h30m`, `-1.5s`, `300ms`, `0`), which
/// `duration(string)` and schema strings of format `duration` use. The error is cel-go's.
pub fn parse_duration(text: &str) -> Result<jiff::SignedDuration, crate::EvalError> {
    let invalid = || crate::EvalError::Runtime(format!("invalid duration: {text:?}"));
    let (negative, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Ok(jiff::SignedDuration::ZERO);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        let number = &rest[..digits];
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let nanos_per: i128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return Err(invalid()),
        };
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
            return Err(invalid());
        }
        let whole: i128 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| invalid())?
        };
        let mut part = whole.checked_mul(nanos_per).ok_or_else(invalid)?;
        let mut scale = nanos_per;
        for digit in fraction.bytes().take(30) {
            scale /= 10;
            part += i128::from(digit - b'0') * scale;
        }
        total = total.checked_add(part).ok_or_else(invalid)?;
        if total > i128::from(i64::MAX) + i128::from(negative) {
            return Err(invalid());
        }
    }
    let total = if negative { -total } else { total };
    let seconds = i64::try_from(total.div_euclid(1_000_000_000)).map_err(|_| invalid())?;
    let nanos = i32::try_from(total.rem_euclid(1_000_000_000)).map_err(|_| invalid())?;
    Ok(jiff::SignedDuration::new(seconds, nanos))
}

#[cfg(test)]
mod duration_tests {
    use super::parse_duration;

    #[test]
    fn go_durations_parse() {
        let secs = |text: &str| parse_duration(text).map(|d| d.as_secs_f64());
        assert_eq!(secs("1h30m"), Ok(5400.0));
        assert_eq!(secs("-1.5s"), Ok(-1.5));
        assert_eq!(secs("300ms"), Ok(0.3));
        assert_eq!(secs("0"), Ok(0.0));
        assert_eq!(secs("1h1h"), Ok(7200.0));
        for bad in [
            "",
            "1",
            "1x",
            "h",
            ".s",
            "1..2s",
            "-",
            "99999999999999999999h",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_duration("1x").unwrap_err().to_string(),
            "invalid duration: \"1x\""
        );
    }
}
