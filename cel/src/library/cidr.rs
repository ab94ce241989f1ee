//! Kubernetes' CIDR library: `cidr(string)`, `isCIDR`, and on `net.CIDR` values
//! `containsIP` (an IP or a string), `containsCIDR` (a CIDR or a string), `ip()`,
//! `prefixLength`, `masked` and `string(cidr)`. Prefixes parse as Go's `netip.ParsePrefix`
//! does, with its error messages; Kubernetes refuses IPv4-mapped IPv6 addresses.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use super::ip::{Addr, as_ip, go_quote, ip_value};
use super::{STRING_TRAVERSAL_COST_FACTOR, actual_size, ceil_cost, error, finish};
use super::{no_such_overload, string_traversal_cost};
use crate::{Budget, EvalError, Opaque, Value};

/// `net.CIDR`: an address and a prefix length (the address is not masked).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cidr {
    pub addr: Addr,
    pub bits: u32,
}

impl Cidr {
    /// Go's `netip.ParsePrefix`.
    pub fn parse(s: &str) -> Result<Cidr, String> {
        let fail = |msg: &str| format!("netip.ParsePrefix({}): {msg}", go_quote(s));
        let Some(i) = s.rfind('/') else {
            return Err(fail("no '/'"));
        };
        let addr = Addr::parse(&s[..i]).map_err(|e| fail(&e))?;
        if matches!(addr, Addr::V6(_, Some(_))) {
            return Err(fail("IPv6 zones cannot be present in a prefix"));
        }
        let bits_text = &s[i + 1..];
        let bad_bits = || fail(&format!("bad bits after slash: {}", go_quote(bits_text)));
        if bits_text.len() > 1 && !(b'1'..=b'9').contains(&bits_text.as_bytes()[0]) {
            return Err(bad_bits());
        }
        if bits_text.is_empty() || !bits_text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad_bits());
        }
        let bits: u64 = bits_text.parse().map_err(|_| bad_bits())?;
        let max = addr.bits().1 as u64;
        if bits > max {
            return Err(fail("prefix length out of range"));
        }
        Ok(Cidr {
            addr,
            bits: bits as u32,
        })
    }

    /// Kubernetes' `parseCIDR`, with its doubled prefix on parse errors as upstream words it.
    pub fn parse_kubernetes(s: &str) -> Result<Cidr, String> {
        let cidr = Cidr::parse(s).map_err(|e| {
            format!("network address parse error during conversion from string: {e}")
        })?;
        if cidr.addr.is_4in6() {
            return Err(format!(
                "IPv4-mapped IPv6 address {} is not allowed",
                go_quote(s)
            ));
        }
        Ok(cidr)
    }

    fn mask(&self) -> u128 {
        let (_, width) = self.addr.bits();
        if self.bits == 0 {
            0
        } else {
            (u128::MAX << (width - self.bits)) & width_mask(width)
        }
    }

    /// Whether `ip` (of the same family, without a zone) is in the prefix.
    pub fn contains(&self, ip: &Addr) -> bool {
        if matches!(ip, Addr::V6(_, Some(_))) {
            return false;
        }
        let (a, wa) = self.addr.bits();
        let (b, wb) = ip.bits();
        wa == wb && a & self.mask() == b & self.mask()
    }

    /// Whether `other` lies within this prefix (Kubernetes: overlapping and no shorter).
    pub fn contains_cidr(&self, other: &Cidr) -> bool {
        let (a, wa) = self.addr.bits();
        let (b, wb) = other.addr.bits();
        if wa != wb {
            return false;
        }
        let shorter = if self.bits <= other.bits { self } else { other };
        let mask = shorter.mask();
        a & mask == b & mask && self.bits <= other.bits
    }

    /// The prefix with the host bits cleared.
    pub fn masked(&self) -> Cidr {
        let (a, width) = self.addr.bits();
        let masked = a & self.mask();
        let addr = if width == 32 {
            Addr::V4((masked as u32).to_be_bytes())
        } else {
            Addr::V6(masked.to_be_bytes(), None)
        };
        Cidr {
            addr,
            bits: self.bits,
        }
    }
}

fn width_mask(width: u32) -> u128 {
    if width == 128 {
        u128::MAX
    } else {
        (1u128 << width) - 1
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.bits)
    }
}

impl Opaque for Cidr {
    fn type_name(&self) -> &'static str {
        "net.CIDR"
    }

    fn equals(&self, other: &dyn Opaque) -> bool {
        other.as_any().downcast_ref::<Cidr>() == Some(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn as_cidr(value: &Value) -> Option<&Cidr> {
    match value {
        Value::Opaque(o) => o.as_any().downcast_ref::<Cidr>(),
        _ => None,
    }
}

fn cidr_value(s: &str) -> Result<Value, EvalError> {
    Cidr::parse_kubernetes(s)
        .map(|c| Value::Opaque(Arc::new(c)))
        .map_err(|e| {
            error(format!(
                "network address parse error during conversion from string: {e}"
            ))
        })
}

/// The CIDR functions; `None` for other names and receivers.
pub fn call(
    function: &str,
    receiver: Option<&Value>,
    args: &[Value],
    budget: &mut Budget,
) -> Option<Result<Value, EvalError>> {
    match (function, receiver, args) {
        ("cidr", None, [text @ Value::String(s)]) => {
            return finish(budget, string_traversal_cost(text), cidr_value(s));
        }
        ("isCIDR", None, [text @ Value::String(s)]) => {
            let valid = Cidr::parse_kubernetes(s).is_ok();
            return finish(budget, string_traversal_cost(text), Ok(Value::Bool(valid)));
        }
        ("string", None, [value]) => {
            let cidr = as_cidr(value)?;
            return finish(budget, 1, Ok(Value::string(&cidr.to_string())));
        }
        ("cidr" | "isCIDR", _, _) => return Some(Err(no_such_overload(function))),
        _ => {}
    }
    let target = receiver?;
    let cidr = as_cidr(target)?;
    // A CIDR has no size: actualSize is 1, so comparing costs ceil((1 + 1) × 0.1).
    let base = ceil_cost(2 * actual_size(target), STRING_TRAVERSAL_COST_FACTOR);
    let result = match (function, args) {
        ("ip", []) => (1, Ok(Value::Opaque(Arc::new(cidr.addr.clone())))),
        ("prefixLength", []) => (1, Ok(Value::Int(cidr.bits as i64))),
        ("masked", []) => (1, Ok(Value::Opaque(Arc::new(cidr.masked())))),
        ("containsIP", [text @ Value::String(s)]) => {
            let cost = base + string_traversal_cost(text);
            // Upstream loses the parse error here: an address that does not parse is
            // reported as `no such overload`.
            let result = match ip_value(s).ok().as_ref().and_then(as_ip) {
                Some(ip) => Ok(Value::Bool(cidr.contains(ip))),
                None => Err(error("no such overload")),
            };
            (cost, result)
        }
        ("containsIP", [other]) => match as_ip(other) {
            Some(ip) => (base, Ok(Value::Bool(cidr.contains(ip)))),
            None => return Some(Err(no_such_overload(function))),
        },
        ("containsCIDR", [other]) => {
            let base = base + string_traversal_cost(target) + 1;
            match other {
                Value::String(s) => {
                    let cost = base + string_traversal_cost(other);
                    let result = cidr_value(s).map(|c| match as_cidr(&c) {
                        Some(c) => Value::Bool(cidr.contains_cidr(c)),
                        None => Value::Bool(false),
                    });
                    (cost, result)
                }
                other => match as_cidr(other) {
                    Some(c) => (base, Ok(Value::Bool(cidr.contains_cidr(c)))),
                    None => return Some(Err(no_such_overload(function))),
                },
            }
        }
        ("ip" | "prefixLength" | "masked" | "containsIP" | "containsCIDR", _) => {
            return Some(Err(no_such_overload(function)));
        }
        _ => return None,
    };
    finish(budget, result.0, result.1)
}

#[cfg(test)]
mod tests;
