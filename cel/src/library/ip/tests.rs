//! After Kubernetes 1.35's `pkg/cel/library/ip_test.go` and Go's `netip` parsing cases.

use super::*;
use crate::library::testing::*;

fn ip(text: &str) -> Value {
    eval("ip", None, &[s(text)]).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn ip_functions() {
    let t = Value::Bool(true);
    let f = Value::Bool(false);
    let on = |text: &str, function: &str| eval(function, Some(ip(text)), &[]);
    let cases: Vec<(Result<Value, String>, Value)> = vec![
        (eval("isIP", None, &[s("192.168.0.1")]), t.clone()),
        (eval("isIP", None, &[s("192.168.0.1.0")]), f.clone()),
        (eval("ip.isCanonical", None, &[s("127.0.0.1")]), t.clone()),
        (on("192.168.0.1", "family"), Value::Int(4)),
        (on("0.0.0.0", "isUnspecified"), t.clone()),
        (on("127.0.0.1", "isUnspecified"), f.clone()),
        (on("127.0.0.1", "isLoopback"), t.clone()),
        (on("1.2.3.4", "isLoopback"), f.clone()),
        (on("224.0.0.1", "isLinkLocalMulticast"), t.clone()),
        (on("224.0.1.1", "isLinkLocalMulticast"), f.clone()),
        (on("169.254.169.254", "isLinkLocalUnicast"), t.clone()),
        (on("192.168.0.1", "isLinkLocalUnicast"), f.clone()),
        (on("192.168.0.1", "isGlobalUnicast"), t.clone()),
        (on("255.255.255.255", "isGlobalUnicast"), f.clone()),
        (eval("isIP", None, &[s("2001:db8::68")]), t.clone()),
        (eval("isIP", None, &[s("2001:db8:::68")]), f.clone()),
        (
            eval("ip.isCanonical", None, &[s("2001:db8::68")]),
            t.clone(),
        ),
        (
            eval("ip.isCanonical", None, &[s("2001:DB8::68")]),
            f.clone(),
        ),
        (
            eval("ip.isCanonical", None, &[s("2001:db8:0:0:0:0:0:68")]),
            f.clone(),
        ),
        (on("2001:db8::68", "family"), Value::Int(6)),
        (on("::", "isUnspecified"), t.clone()),
        (on("::1", "isUnspecified"), f.clone()),
        (on("::1", "isLoopback"), t.clone()),
        (on("2001:db8::abcd", "isLoopback"), f.clone()),
        (on("ff02::1", "isLinkLocalMulticast"), t.clone()),
        (on("fd00::1", "isLinkLocalMulticast"), f.clone()),
        (on("fe80::1", "isLinkLocalUnicast"), t.clone()),
        (on("fd80::1", "isLinkLocalUnicast"), f.clone()),
        (on("2001:db8::abcd", "isGlobalUnicast"), t.clone()),
        (on("ff00::1", "isGlobalUnicast"), f.clone()),
        (eval("string", None, &[ip("192.168.0.1")]), s("192.168.0.1")),
        (
            eval("string", None, &[ip("2001:0db8:0:0:1:0:0:1")]),
            s("2001:db8::1:0:0:1"),
        ),
        (eval("string", None, &[ip("0:0:1::")]), s("0:0:1::")),
        (
            eval("string", None, &[ip("1:0:0:2:0:0:0:3")]),
            s("1:0:0:2::3"),
        ),
        (
            eval("string", None, &[ip("1:2:3:4:5:6:7:0")]),
            s("1:2:3:4:5:6:7:0"),
        ),
        (eval("string", None, &[ip("::1.2.3.4")]), s("::102:304")),
    ];
    for (got, want) in cases {
        assert_value(got, want);
    }
    assert!(ip("192.168.0.1").equals(&ip("192.168.0.1")));
    assert!(!ip("192.168.0.1").equals(&ip("192.168.0.2")));
    assert_eq!(ip("::1").type_name().as_str(), "net.IP");
}

#[test]
fn parse_errors_are_go_netip_s() {
    let cases = [
        (
            "192.168.0.1.0",
            "IP Address \"192.168.0.1.0\" parse error during conversion from string: ParseAddr(\"192.168.0.1.0\"): IPv4 address too long",
        ),
        (
            "2001:db8:::68",
            "IP Address \"2001:db8:::68\" parse error during conversion from string: ParseAddr(\"2001:db8:::68\"): each colon-separated field must have at least one digit (at \":68\")",
        ),
        (
            "::ffff:1.2.3.4",
            "IPv4-mapped IPv6 address \"::ffff:1.2.3.4\" is not allowed",
        ),
        (
            "fe80::1%eth0",
            "IP address \"fe80::1%eth0\" with zone value is not allowed",
        ),
        (
            "1.2.3",
            "IP Address \"1.2.3\" parse error during conversion from string: ParseAddr(\"1.2.3\"): IPv4 address too short",
        ),
        (
            "01.2.3.4",
            "IP Address \"01.2.3.4\" parse error during conversion from string: ParseAddr(\"01.2.3.4\"): IPv4 field has octet with leading zero",
        ),
        (
            "256.2.3.4",
            "IP Address \"256.2.3.4\" parse error during conversion from string: ParseAddr(\"256.2.3.4\"): IPv4 field has value >255",
        ),
        (
            "1.2..4",
            "IP Address \"1.2..4\" parse error during conversion from string: ParseAddr(\"1.2..4\"): IPv4 field must have at least one digit (at \".4\")",
        ),
        (
            "1.2.3.x",
            "IP Address \"1.2.3.x\" parse error during conversion from string: ParseAddr(\"1.2.3.x\"): unexpected character (at \"x\")",
        ),
        (
            "abc",
            "IP Address \"abc\" parse error during conversion from string: ParseAddr(\"abc\"): unable to parse IP",
        ),
        (
            "1:2:3",
            "IP Address \"1:2:3\" parse error during conversion from string: ParseAddr(\"1:2:3\"): address string too short",
        ),
        (
            "1::2::3",
            "IP Address \"1::2::3\" parse error during conversion from string: ParseAddr(\"1::2::3\"): multiple :: in address (at \":3\")",
        ),
        (
            "12345::",
            "IP Address \"12345::\" parse error during conversion from string: ParseAddr(\"12345::\"): IPv6 field has value >=2^16 (at \"12345::\")",
        ),
        (
            "1:2:3:4:5:6:7:8:9",
            "IP Address \"1:2:3:4:5:6:7:8:9\" parse error during conversion from string: ParseAddr(\"1:2:3:4:5:6:7:8:9\"): trailing garbage after address (at \"9\")",
        ),
        (
            "1:2:3:4::5:6:7:8",
            "IP Address \"1:2:3:4::5:6:7:8\" parse error during conversion from string: ParseAddr(\"1:2:3:4::5:6:7:8\"): the :: must expand to at least one field of zeros",
        ),
    ];
    for (text, want) in cases {
        assert_error(eval("ip", None, &[s(text)]), want);
        assert_value(eval("isIP", None, &[s(text)]), Value::Bool(false));
    }
    assert_error(
        eval("ip.isCanonical", None, &[s("127.0.0.1.0")]),
        "IP Address \"127.0.0.1.0\" parse error during conversion from string: ParseAddr(\"127.0.0.1.0\"): IPv4 address too long",
    );
    assert_error(
        eval("isIP", None, &[Value::Int(1)]),
        "no such overload: isIP",
    );
}

#[test]
fn ip_costs() {
    assert_eq!(run("ip", None, &[s("192.168.0.1")]).1, 2);
    assert_eq!(run("ip.isCanonical", None, &[s("192.168.0.1")]).1, 3);
    assert_eq!(run("family", Some(ip("::1")), &[]).1, 1);
}
