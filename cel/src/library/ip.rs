//! Kubernetes' IP library: `ip(string)`, `isIP`, `ip.isCanonical`, and on `net.IP` values
//! `family`, `isUnspecified`, `isLoopback`, `isLinkLocalMulticast`, `isLinkLocalUnicast`,
//! `isGlobalUnicast` and `string(ip)`. Addresses parse as Go's `netip.ParseAddr` does (its
//! error messages too); Kubernetes refuses zones and IPv4-mapped IPv6 addresses.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use super::{STRING_TRAVERSAL_COST_FACTOR, actual_size, ceil_cost, error, finish};
use super::{no_such_overload, string_traversal_cost};
use crate::{Budget, EvalError, Opaque, Value};

/// `net.IP`: an IPv4 or IPv6 address (the zone Go may parse is kept only to refuse it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Addr {
    V4([u8; 4]),
    V6([u8; 16], Option<String>),
}

/// Go's `parseAddrError`.
fn parse_error(input: &str, msg: &str, at: &str) -> String {
    if at.is_empty() {
        format!("ParseAddr({}): {msg}", go_quote(input))
    } else {
        format!(
            "ParseAddr({}): {msg} (at {})",
            go_quote(input),
            go_quote(at)
        )
    }
}

/// Go's `strconv.Quote`, for the ASCII-ish inputs addresses are.
pub(crate) fn go_quote(s: &str) -> String {
    super::strings::go_quote(s)
}

impl Addr {
    /// Go's `netip.ParseAddr`.
    pub fn parse(s: &str) -> Result<Addr, String> {
        for b in s.bytes() {
            match b {
                b'.' => return parse_v4(s, s).map(Addr::V4),
                b':' => return parse_v6(s),
                b'%' => return Err(parse_error(s, "missing IPv6 address", "")),
                _ => {}
            }
        }
        Err(parse_error(s, "unable to parse IP", ""))
    }

    /// Kubernetes' `parseIPAddr`: no zones, no IPv4-mapped IPv6.
    pub fn parse_kubernetes(s: &str) -> Result<Addr, String> {
        let addr = Addr::parse(s).map_err(|err| {
            format!(
                "IP Address {} parse error during conversion from string: {err}",
                go_quote(s)
            )
        })?;
        if matches!(addr, Addr::V6(_, Some(_))) {
            return Err(format!(
                "IP address {} with zone value is not allowed",
                go_quote(s)
            ));
        }
        if addr.is_4in6() {
            return Err(format!(
                "IPv4-mapped IPv6 address {} is not allowed",
                go_quote(s)
            ));
        }
        Ok(addr)
    }

    pub fn is_4in6(&self) -> bool {
        matches!(self, Addr::V6(b, _) if b[..10] == [0; 10] && b[10] == 0xff && b[11] == 0xff)
    }

    /// The address as 16 bytes (IPv4 as IPv4-mapped) and its bit length.
    pub fn bits(&self) -> (u128, u32) {
        match self {
            Addr::V4(b) => (u32::from_be_bytes(*b) as u128, 32),
            Addr::V6(b, _) => (u128::from_be_bytes(*b), 128),
        }
    }

    pub fn family(&self) -> i64 {
        match self {
            Addr::V4(_) => 4,
            Addr::V6(..) => 6,
        }
    }

    pub fn is_unspecified(&self) -> bool {
        matches!(self, Addr::V4([0, 0, 0, 0])) || matches!(self, Addr::V6(b, None) if *b == [0; 16])
    }

    pub fn is_loopback(&self) -> bool {
        match self {
            Addr::V4(b) => b[0] == 127,
            Addr::V6(..) => self.bits().0 == 1,
        }
    }

    pub fn is_multicast(&self) -> bool {
        match self {
            Addr::V4(b) => b[0] & 0xf0 == 0xe0,
            Addr::V6(b, _) => b[0] == 0xff,
        }
    }

    pub fn is_link_local_multicast(&self) -> bool {
        match self {
            Addr::V4(b) => b[..3] == [224, 0, 0],
            Addr::V6(b, _) => b[0] == 0xff && b[1] == 0x02,
        }
    }

    pub fn is_link_local_unicast(&self) -> bool {
        match self {
            Addr::V4(b) => b[0] == 169 && b[1] == 254,
            Addr::V6(b, _) => b[0] == 0xfe && b[1] & 0xc0 == 0x80,
        }
    }

    /// Go's `IsGlobalUnicast` (private and ULA addresses count as global unicast).
    pub fn is_global_unicast(&self) -> bool {
        if matches!(self, Addr::V4([255, 255, 255, 255])) {
            return false;
        }
        !self.is_unspecified()
            && !self.is_loopback()
            && !self.is_multicast()
            && !self.is_link_local_unicast()
    }
}

impl fmt::Display for Addr {
    /// Go's `Addr.String`: dotted IPv4; RFC 5952 IPv6 (the longest run of two or more zero
    /// fields as `::`, the first of equal runs), `::ffff:a.b.c.d` for IPv4-mapped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Addr::V4(b) => write!(f, "{}.{}.{}.{}", b[0], b[1], b[2], b[3]),
            Addr::V6(b, zone) => {
                if self.is_4in6() {
                    write!(f, "::ffff:{}.{}.{}.{}", b[12], b[13], b[14], b[15])?;
                } else {
                    let fields: Vec<u16> = (0..8)
                        .map(|i| u16::from_be_bytes([b[2 * i], b[2 * i + 1]]))
                        .collect();
                    let (mut best, mut best_len) = (usize::MAX, 0);
                    let mut i = 0;
                    while i < 8 {
                        let start = i;
                        while i < 8 && fields[i] == 0 {
                            i += 1;
                        }
                        if i - start > best_len && i - start >= 2 {
                            best = start;
                            best_len = i - start;
                        }
                        i += 1;
                    }
                    let mut i = 0;
                    while i < 8 {
                        if i == best {
                            f.write_str("::")?;
                            i += best_len;
                            continue;
                        }
                        if i > 0 && i != best + best_len {
                            f.write_str(":")?;
                        }
                        write!(f, "{:x}", fields[i])?;
                        i += 1;
                    }
                }
                if let Some(zone) = zone {
                    write!(f, "%{zone}")?;
                }
                Ok(())
            }
        }
    }
}

/// Go's IPv4 field parsing; `whole` is the input the error names.
fn parse_v4(s: &str, whole: &str) -> Result<[u8; 4], String> {
    let bytes = s.as_bytes();
    let mut fields = [0u8; 4];
    let (mut val, mut pos, mut digits) = (0u32, 0usize, 0);
    for (i, &c) in bytes.iter().enumerate() {
        if c.is_ascii_digit() {
            if digits == 1 && val == 0 {
                return Err(parse_error(
                    whole,
                    "IPv4 field has octet with leading zero",
                    "",
                ));
            }
            val = val * 10 + u32::from(c - b'0');
            digits += 1;
            if val > 255 {
                return Err(parse_error(whole, "IPv4 field has value >255", ""));
            }
        } else if c == b'.' {
            if i == 0 || i == bytes.len() - 1 || bytes[i - 1] == b'.' {
                return Err(parse_error(
                    whole,
                    "IPv4 field must have at least one digit",
                    &s[i..],
                ));
            }
            if pos == 3 {
                return Err(parse_error(whole, "IPv4 address too long", ""));
            }
            fields[pos] = val as u8;
            pos += 1;
            val = 0;
            digits = 0;
        } else {
            return Err(parse_error(whole, "unexpected character", &s[i..]));
        }
    }
    if pos < 3 {
        return Err(parse_error(whole, "IPv4 address too short", ""));
    }
    fields[3] = val as u8;
    Ok(fields)
}

/// Go's `parseIPv6`.
fn parse_v6(input: &str) -> Result<Addr, String> {
    let (mut s, zone) = match input.find('%') {
        Some(i) => {
            let zone = &input[i + 1..];
            if zone.is_empty() {
                return Err(parse_error(input, "zone must be a non-empty string", ""));
            }
            (&input[..i], Some(zone.to_string()))
        }
        None => (input, None),
    };
    let mut ip = [0u8; 16];
    let mut ellipsis: Option<usize> = None;
    if s.starts_with("::") {
        ellipsis = Some(0);
        s = &s[2..];
        if s.is_empty() {
            return Ok(Addr::V6(ip, zone));
        }
    }
    let mut i = 0;
    while i < 16 {
        let bytes = s.as_bytes();
        let mut off = 0;
        let mut acc: u32 = 0;
        while off < bytes.len() {
            let Some(d) = (bytes[off] as char).to_digit(16) else {
                break;
            };
            acc = (acc << 4) + d;
            if acc > 0xffff {
                return Err(parse_error(input, "IPv6 field has value >=2^16", s));
            }
            off += 1;
        }
        if off == 0 {
            return Err(parse_error(
                input,
                "each colon-separated field must have at least one digit",
                s,
            ));
        }
        if off < bytes.len() && bytes[off] == b'.' {
            if ellipsis.is_none() && i != 12 {
                return Err(parse_error(
                    input,
                    "embedded IPv4 address must replace the final 2 fields of the address",
                    s,
                ));
            }
            if i + 4 > 16 {
                return Err(parse_error(
                    input,
                    "too many hex fields to fit an embedded IPv4 at the end of the address",
                    s,
                ));
            }
            let v4 = parse_v4(s, input)?;
            ip[i..i + 4].copy_from_slice(&v4);
            s = "";
            i += 4;
            break;
        }
        ip[i] = (acc >> 8) as u8;
        ip[i + 1] = acc as u8;
        i += 2;
        s = &s[off..];
        if s.is_empty() {
            break;
        }
        if !s.starts_with(':') {
            return Err(parse_error(input, "unexpected character, want colon", s));
        } else if s.len() == 1 {
            return Err(parse_error(
                input,
                "colon must be followed by more characters",
                s,
            ));
        }
        s = &s[1..];
        if s.starts_with(':') {
            if ellipsis.is_some() {
                return Err(parse_error(input, "multiple :: in address", s));
            }
            ellipsis = Some(i);
            s = &s[1..];
            if s.is_empty() {
                break;
            }
        }
    }
    if !s.is_empty() {
        return Err(parse_error(input, "trailing garbage after address", s));
    }
    if i < 16 {
        let Some(e) = ellipsis else {
            return Err(parse_error(input, "address string too short", ""));
        };
        let n = 16 - i;
        ip.copy_within(e..i, e + n);
        ip[e..e + n].fill(0);
    } else if ellipsis.is_some() {
        return Err(parse_error(
            input,
            "the :: must expand to at least one field of zeros",
            "",
        ));
    }
    Ok(Addr::V6(ip, zone))
}

impl Opaque for Addr {
    fn type_name(&self) -> &'static str {
        "net.IP"
    }

    fn equals(&self, other: &dyn Opaque) -> bool {
        other.as_any().downcast_ref::<Addr>() == Some(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

pub(crate) fn as_ip(value: &Value) -> Option<&Addr> {
    match value {
        Value::Opaque(o) => o.as_any().downcast_ref::<Addr>(),
        _ => None,
    }
}

/// `ip(string)` as a value.
pub(crate) fn ip_value(s: &str) -> Result<Value, EvalError> {
    Addr::parse_kubernetes(s)
        .map(|a| Value::Opaque(Arc::new(a)))
        .map_err(error)
}

/// The IP functions; `None` for other names and receivers (`ip()` on a CIDR and `string` on
/// a CIDR are the CIDR library's).
pub fn call(
    function: &str,
    receiver: Option<&Value>,
    args: &[Value],
    budget: &mut Budget,
) -> Option<Result<Value, EvalError>> {
    match (function, receiver, args) {
        ("ip", None, [text @ Value::String(s)]) => {
            return finish(budget, string_traversal_cost(text), ip_value(s));
        }
        ("isIP", None, [text @ Value::String(s)]) => {
            let valid = Addr::parse_kubernetes(s).is_ok();
            return finish(budget, string_traversal_cost(text), Ok(Value::Bool(valid)));
        }
        ("ip.isCanonical", None, [text @ Value::String(s)]) => {
            let result = Addr::parse_kubernetes(s)
                .map(|a| Value::Bool(a.to_string() == **s))
                .map_err(error);
            let cost = ceil_cost(actual_size(text), 2.0 * STRING_TRAVERSAL_COST_FACTOR);
            return finish(budget, cost, result);
        }
        ("string", None, [value]) => {
            let ip = as_ip(value)?;
            return finish(budget, 1, Ok(Value::string(&ip.to_string())));
        }
        ("isIP" | "ip.isCanonical", _, _) => return Some(Err(no_such_overload(function))),
        _ => {}
    }
    let ip = as_ip(receiver?)?;
    let result = match (function, args) {
        ("family", []) => Value::Int(ip.family()),
        ("isUnspecified", []) => Value::Bool(ip.is_unspecified()),
        ("isLoopback", []) => Value::Bool(ip.is_loopback()),
        ("isLinkLocalMulticast", []) => Value::Bool(ip.is_link_local_multicast()),
        ("isLinkLocalUnicast", []) => Value::Bool(ip.is_link_local_unicast()),
        ("isGlobalUnicast", []) => Value::Bool(ip.is_global_unicast()),
        _ => return None,
    };
    finish(budget, 1, Ok(result))
}

#[cfg(test)]
mod tests;
