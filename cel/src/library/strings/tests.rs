//! Table tests of the string functions, after cel-go v0.26.0's `ext/strings_test.go` and
//! `ext/formatting_test.go` (the `en_US` cases).

use super::super::testing::*;
/// One table row: function, receiver, arguments, and the value or error message wanted.
type Case<R> = (&'static str, R, Vec<Value>, Result<Value, &'static str>);

use crate::{Key, Map, Value};

fn i(v: i64) -> Value {
    Value::Int(v)
}

#[test]
fn string_functions() {
    let cases: Vec<Case<&str>> = vec![
        ("charAt", "tacocat", vec![i(3)], Ok(s("o"))),
        ("charAt", "tacocat", vec![i(7)], Ok(s(""))),
        ("charAt", "©αT", vec![i(1)], Ok(s("α"))),
        (
            "charAt",
            "tacocat",
            vec![i(30)],
            Err("index out of range: 30"),
        ),
        ("indexOf", "tacocat", vec![s("")], Ok(i(0))),
        ("indexOf", "tacocat", vec![s("ac")], Ok(i(1))),
        ("indexOf", "tacocat", vec![s("none")], Ok(i(-1))),
        ("indexOf", "tacocat", vec![s(""), i(3)], Ok(i(3))),
        ("indexOf", "tacocat", vec![s("a"), i(3)], Ok(i(5))),
        ("indexOf", "tacocat", vec![s("at"), i(3)], Ok(i(5))),
        ("indexOf", "ta©o©αT", vec![s("©")], Ok(i(2))),
        ("indexOf", "ta©o©αT", vec![s("©"), i(3)], Ok(i(4))),
        ("indexOf", "ta©o©αT", vec![s("©αT"), i(3)], Ok(i(4))),
        ("indexOf", "ta©o©αT", vec![s("©α"), i(5)], Ok(i(-1))),
        ("indexOf", "ijk", vec![s("k")], Ok(i(2))),
        ("indexOf", "hello wello", vec![s("hello wello")], Ok(i(0))),
        ("indexOf", "hello wello", vec![s("ello"), i(6)], Ok(i(7))),
        ("indexOf", "hello wello", vec![s("elbo room!!!")], Ok(i(-1))),
        ("indexOf", "tacocat", vec![s("a"), i(30)], Ok(i(-1))),
        (
            "indexOf",
            "tacocat",
            vec![s("a"), i(-1)],
            Err("index out of range: -1"),
        ),
        ("lastIndexOf", "", vec![s("@@")], Ok(i(-1))),
        ("lastIndexOf", "tacocat", vec![s("")], Ok(i(7))),
        ("lastIndexOf", "tacocat", vec![s("at")], Ok(i(5))),
        ("lastIndexOf", "tacocat", vec![s("none")], Ok(i(-1))),
        ("lastIndexOf", "tacocat", vec![s(""), i(3)], Ok(i(3))),
        ("lastIndexOf", "tacocat", vec![s("a"), i(3)], Ok(i(1))),
        ("lastIndexOf", "ta©o©αT", vec![s("©")], Ok(i(4))),
        ("lastIndexOf", "ta©o©αT", vec![s("©"), i(3)], Ok(i(2))),
        ("lastIndexOf", "ta©o©αT", vec![s("©α"), i(4)], Ok(i(4))),
        (
            "lastIndexOf",
            "hello wello",
            vec![s("ello"), i(6)],
            Ok(i(1)),
        ),
        ("lastIndexOf", "hello wello", vec![s("low")], Ok(i(-1))),
        (
            "lastIndexOf",
            "hello wello",
            vec![s("elbo room!!!")],
            Ok(i(-1)),
        ),
        (
            "lastIndexOf",
            "hello wello",
            vec![s("hello wello")],
            Ok(i(0)),
        ),
        (
            "lastIndexOf",
            "bananananana",
            vec![s("nana"), i(7)],
            Ok(i(6)),
        ),
        (
            "lastIndexOf",
            "tacocat",
            vec![s("a"), i(-1)],
            Err("index out of range: -1"),
        ),
        ("lastIndexOf", "tacocat", vec![s("a"), i(30)], Ok(i(-1))),
        ("lowerAscii", "TacoCÆt Xii", vec![], Ok(s("tacocÆt xii"))),
        ("upperAscii", "tacoCαt", vec![], Ok(s("TACOCαT"))),
        (
            "replace",
            "12 days 12 hours",
            vec![s("{0}"), s("2")],
            Ok(s("12 days 12 hours")),
        ),
        (
            "replace",
            "{0} days {0} hours",
            vec![s("{0}"), s("2")],
            Ok(s("2 days 2 hours")),
        ),
        (
            "replace",
            "{0} days {0} hours",
            vec![s("{0}"), s("2"), i(1)],
            Ok(s("2 days {0} hours")),
        ),
        (
            "replace",
            "1 ©αT taco",
            vec![s("αT"), s("o©α")],
            Ok(s("1 ©o©α taco")),
        ),
        (
            "replace",
            "hello hello",
            vec![s(""), s("_")],
            Ok(s("_h_e_l_l_o_ _h_e_l_l_o_")),
        ),
        (
            "replace",
            "hello hello",
            vec![s("h"), s("")],
            Ok(s("ello ello")),
        ),
        (
            "split",
            "hello world",
            vec![s(" ")],
            Ok(strs(&["hello", "world"])),
        ),
        (
            "split",
            "hello world events!",
            vec![s(" "), i(0)],
            Ok(strs(&[])),
        ),
        (
            "split",
            "hello world events!",
            vec![s(" "), i(1)],
            Ok(strs(&["hello world events!"])),
        ),
        (
            "split",
            "hello world events!",
            vec![s(" "), i(2)],
            Ok(strs(&["hello", "world events!"])),
        ),
        (
            "split",
            "o©o©o©o",
            vec![s("©"), i(-1)],
            Ok(strs(&["o", "o", "o", "o"])),
        ),
        ("split", "42", vec![s("")], Ok(strs(&["4", "2"]))),
        ("split", "abc", vec![s(""), i(2)], Ok(strs(&["a", "bc"]))),
        ("split", "", vec![s("")], Ok(strs(&[]))),
        ("split", "", vec![s(",")], Ok(strs(&[""]))),
        ("substring", "tacocat", vec![i(4)], Ok(s("cat"))),
        ("substring", "tacocat", vec![i(7)], Ok(s(""))),
        ("substring", "tacocat", vec![i(0), i(4)], Ok(s("taco"))),
        ("substring", "tacocat", vec![i(4), i(4)], Ok(s(""))),
        ("substring", "ta©o©αT", vec![i(2), i(6)], Ok(s("©o©α"))),
        ("substring", "ta©o©αT", vec![i(7), i(7)], Ok(s(""))),
        (
            "substring",
            "tacocat",
            vec![i(40)],
            Err("index out of range: 40"),
        ),
        (
            "substring",
            "tacocat",
            vec![i(-1)],
            Err("index out of range: -1"),
        ),
        (
            "substring",
            "tacocat",
            vec![i(1), i(50)],
            Err("index out of range: 50"),
        ),
        (
            "substring",
            "tacocat",
            vec![i(49), i(50)],
            Err("index out of range: 49"),
        ),
        (
            "substring",
            "tacocat",
            vec![i(4), i(3)],
            Err("invalid substring range. start: 4, end: 3"),
        ),
        ("trim", " \u{c}\n\r\t\u{b}text  ", vec![], Ok(s("text"))),
        ("trim", "\u{85}\u{a0}\u{1680}text", vec![], Ok(s("text"))),
        (
            "trim",
            "\u{200a}text\u{2028}\u{2029}\u{202F}\u{205F}\u{3000}",
            vec![],
            Ok(s("text")),
        ),
        (
            "trim",
            "\u{180e}text\u{200b}\u{200c}\u{200d}\u{2060}\u{feff}",
            vec![],
            Ok(s("\u{180e}text\u{200b}\u{200c}\u{200d}\u{2060}\u{feff}")),
        ),
        (
            "charAt",
            "hello",
            vec![Value::Bool(true)],
            Err("no such overload: charAt"),
        ),
        (
            "indexOf",
            "42",
            vec![s("4"), s("0")],
            Err("no such overload: indexOf"),
        ),
        (
            "replace",
            "42",
            vec![s("2"), s("1"), s("1")],
            Err("no such overload: replace"),
        ),
        ("split", "42", vec![i(2)], Err("no such overload: split")),
        (
            "substring",
            "tacocat",
            vec![Value::Bool(true), i(3)],
            Err("no such overload: substring"),
        ),
        ("reverse", "gums", vec![], Err("no such overload: reverse")),
    ];
    for (function, text, args, want) in cases {
        let got = eval(function, Some(s(text)), &args);
        match want {
            Ok(want) => assert_value(got, want),
            Err(want) => assert_error(got, want),
        }
    }
}

#[test]
fn join_and_quote() {
    assert_value(eval("join", Some(strs(&["x", "y"])), &[]), s("xy"));
    assert_value(eval("join", Some(strs(&["x", "y"])), &[s("-")]), s("x-y"));
    assert_value(eval("join", Some(strs(&[])), &[]), s(""));
    assert_value(eval("join", Some(strs(&[])), &[s("-")]), s(""));
    assert_error(
        eval("join", Some(Value::list(vec![s("a"), i(1)])), &[]),
        "join: invalid input: 1",
    );
    let quotes = [
        ("first\nsecond", "\"first\\nsecond\""),
        ("bell\u{7}", "\"bell\\a\""),
        ("\u{8}backspace", "\"\\bbackspace\""),
        ("\u{c}form feed", "\"\\fform feed\""),
        ("carriage \r return", "\"carriage \\r return\""),
        ("horizontal tab\t", "\"horizontal tab\\t\""),
        ("vertical \u{b} tab", "\"vertical \\v tab\""),
        ("double \\\\ slash", "\"double \\\\\\\\ slash\""),
        ("ends with \\", "\"ends with \\\\\""),
        ("printable unicode😀", "\"printable unicode😀\""),
        ("mid string \" quote", "\"mid string \\\" quote\""),
        ("завтра", "\"завтра\""),
        ("", "\"\""),
    ];
    for (text, want) in quotes {
        assert_value(eval("strings.quote", None, &[s(text)]), s(want));
    }
}

#[test]
fn string_costs_follow_kubernetes() {
    // ceil(size × 0.1)
    assert_eq!(run("lowerAscii", Some(s("TacoCat")), &[]).1, 1);
    assert_eq!(run("trim", Some(s(&"x".repeat(25))), &[]).1, 3);
    // ceil(size × 0.2)
    assert_eq!(run("split", Some(s(&"x".repeat(25))), &[s(",")]).1, 5);
    // indexOf: 0.1 per byte, truncated
    assert_eq!(run("indexOf", Some(s("tacocat")), &[s("a")]).1, 0);
    assert_eq!(run("indexOf", Some(s(&"x".repeat(25))), &[s("a")]).1, 2);
    // charAt: cel-go's default of 1
    assert_eq!(run("charAt", Some(s("tacocat")), &[i(1)]).1, 1);
    // join: ceil(result size × 0.2)
    assert_eq!(
        run("join", Some(strs(&["aaaaaaaaaa", "bbbbbbbbbb"])), &[]).1,
        4
    );
}

fn format(template: &str, args: Vec<Value>) -> Result<Value, String> {
    eval("format", Some(s(template)), &[Value::list(args)])
}

#[test]
fn format_clauses() {
    let timestamp: jiff::Timestamp = "2023-02-03T23:31:20Z".parse().unwrap();
    let mut map = Map::default();
    map.entries.insert(Key::Int(1), s("value1"));
    map.entries.insert(Key::Int(2), s("value2"));
    map.entries.insert(Key::Bool(true), s("NaN"));
    let cases: Vec<(&str, Vec<Value>, &str)> = vec![
        ("no substitution", vec![], "no substitution"),
        (
            "str is %s and some more",
            vec![s("filler")],
            "str is filler and some more",
        ),
        ("%% and also %%", vec![], "% and also %"),
        ("%%%s%%", vec![s("text")], "%text%"),
        (
            "%d %d %d, %s %s %s",
            vec![i(1), i(2), i(3), s("A"), s("B"), s("C")],
            "1 2 3, A B C",
        ),
        ("%.3f", vec![Value::Double(1.2345)], "1.234"),
        ("%.3f", vec![Value::Double(1234.5678)], "1,234.568"),
        (
            "this is -5 in binary: %b",
            vec![i(-5)],
            "this is -5 in binary: -101",
        ),
        (
            "unsigned 64 in binary: %b",
            vec![Value::Uint(64)],
            "unsigned 64 in binary: 1000000",
        ),
        (
            "bit set from bool: %b",
            vec![Value::Bool(true)],
            "bit set from bool: 1",
        ),
        ("%o", vec![i(-11)], "-13"),
        (
            "this is an unsigned octal: %o",
            vec![Value::Uint(65535)],
            "this is an unsigned octal: 177777",
        ),
        (
            "%x is 30 in hexadecimal",
            vec![i(30)],
            "1e is 30 in hexadecimal",
        ),
        (
            "%X is 20 in hexadecimal",
            vec![i(20)],
            "14 is 20 in hexadecimal",
        ),
        (
            "%x is -30 in hexadecimal",
            vec![i(-30)],
            "-1e is -30 in hexadecimal",
        ),
        ("%x", vec![s("Hello world!")], "48656c6c6f20776f726c6421"),
        ("%X", vec![s("Hello world!")], "48656C6C6F20776F726C6421"),
        (
            "%.6e",
            vec![Value::Double(1052.032911275)],
            "1.052033\u{202f}\u{d7}\u{202f}10\u{2070}\u{b3}",
        ),
        (
            "%e",
            vec![Value::Double(2.5)],
            "2.500000\u{202f}\u{d7}\u{202f}10\u{2070}\u{2070}",
        ),
        ("%f", vec![Value::Double(2.5)], "2.500000"),
        (
            "%e",
            vec![Value::Double(-0.000123)],
            "-1.230000\u{202f}\u{d7}\u{202f}10\u{207b}\u{2070}\u{2074}",
        ),
        ("%s", vec![Value::Double(2.71)], "2.71"),
        (
            "%s",
            vec![Value::list(vec![Value::Double(2.71)])],
            "[2.710000]",
        ),
        ("%s", vec![Value::Double(2e-9)], "2e-09"),
        ("%f", vec![Value::Double(f64::NAN)], "NaN"),
        ("%f", vec![Value::Double(f64::INFINITY)], "∞"),
        ("%f", vec![Value::Double(f64::NEG_INFINITY)], "-∞"),
        ("%s", vec![Value::Double(f64::INFINITY)], "+Inf"),
        (
            "%s",
            vec![Value::list(vec![
                Value::Double(f64::NAN),
                Value::Double(f64::INFINITY),
                Value::Double(f64::NEG_INFINITY),
            ])],
            r#"["NaN", "+Inf", "-Inf"]"#,
        ),
        ("null: %s", vec![Value::Null], "null: null"),
        ("%s", vec![i(999999999999)], "999999999999"),
        (
            "some bytes: %s",
            vec![Value::Bytes(b"xyz"[..].into())],
            "some bytes: xyz",
        ),
        (
            "type is %s",
            vec![Value::Type(crate::TypeName::String)],
            "type is string",
        ),
        (
            "%s",
            vec![Value::Timestamp(timestamp)],
            "2023-02-03T23:31:20Z",
        ),
        (
            "%s",
            vec![Value::Duration(jiff::SignedDuration::from_secs(6347))],
            "6347s",
        ),
        (
            "%s",
            vec![Value::Duration(jiff::SignedDuration::from_nanos(2))],
            "0.000000002s",
        ),
        (
            "%s",
            vec![Value::list(vec![
                s("abc"),
                Value::Double(3.25),
                Value::Null,
                ints(&[9, 8, 7, 6]),
                Value::Timestamp(timestamp),
            ])],
            r#"["abc", 3.250000, null, [9, 8, 7, 6], timestamp("2023-02-03T23:31:20Z")]"#,
        ),
        (
            "map with multiple key types: %s",
            vec![Value::Map(map.into())],
            r#"map with multiple key types: {1:"value1", 2:"value2", true:"NaN"}"#,
        ),
    ];
    for (template, args, want) in cases {
        assert_value(format(template, args), s(want));
    }
}

#[test]
fn format_errors() {
    let cases: Vec<(&str, Vec<Value>, &str)> = vec![
        ("%s %s", vec![s("a")], "index 1 out of range"),
        ("%", vec![s("a")], "unexpected end of string"),
        (
            "%z",
            vec![i(1)],
            "could not parse formatting clause: unrecognized formatting clause \"z\"",
        ),
        (
            "%.3",
            vec![Value::Double(1.0)],
            "could not parse formatting clause: error while parsing precision: could not find end of precision specifier",
        ),
        (
            "%d",
            vec![s("a")],
            "error during formatting: decimal clause can only be used on integers, was given string",
        ),
        (
            "%f",
            vec![i(1)],
            "error during formatting: fixed-point clause can only be used on doubles, was given int",
        ),
        (
            "%b",
            vec![s("a")],
            "error during formatting: only integers and bools can be formatted as binary, was given string",
        ),
        (
            "%o",
            vec![Value::Double(1.0)],
            "error during formatting: octal clause can only be used on integers, was given double",
        ),
        (
            "%x",
            vec![Value::Double(1.0)],
            "error during formatting: only integers, byte buffers, and strings can be formatted as hex, was given double",
        ),
    ];
    for (template, args, want) in cases {
        assert_error(format(template, args), want);
    }
}

#[test]
fn format_walks_deep_nesting_without_recursion() {
    let mut v = i(1);
    for _ in 0..10_000 {
        v = Value::list(vec![v]);
    }
    let got = format("%s", vec![v]).unwrap();
    let Value::String(text) = got else { panic!() };
    assert_eq!(text.len(), 20_001);
}

#[test]
fn replace_refuses_a_result_past_the_size_limit() {
    let text = "x".repeat(5_000);
    let new = "y".repeat(5_000);
    let got = super::super::call(
        "replace",
        Some(&s(&text)),
        &[s(""), s(&new)],
        &mut crate::Budget::new(1_000_000),
    );
    assert!(matches!(got, Some(Err(crate::EvalError::CostExceeded))));
    assert_value(eval("replace", Some(s("ab")), &[s(""), s("-")]), s("-a-b-"));
}
