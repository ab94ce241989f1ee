//! Tests of the parser: the trees cel-go builds, written in a compact notation
//! (`_+_(a, b)`, `a.b`, `a.b~test-only`, `[1, ?x]`, `{k: v}`, comprehensions as
//! `__comprehension__(iter, iter2, accu, range, init, cond, step, result)`), and the errors
//! it reports, with their offsets.

mod conformance;
mod errors;
mod macros;

use super::parse;
use crate::ast::{Expr, ExprKind, Literal};

/// The compact notation of a tree.
pub(super) fn show(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Literal(l) => match l {
            Literal::Null => "null".into(),
            Literal::Bool(b) => b.to_string(),
            Literal::Int(i) => i.to_string(),
            Literal::Uint(u) => format!("{u}u"),
            Literal::Double(d) => format!("{d:?}"),
            Literal::String(s) => format!("{s:?}"),
            Literal::Bytes(b) => format!("b{b:?}"),
        },
        ExprKind::Ident(n) => n.to_string(),
        ExprKind::Select {
            operand,
            field,
            test_only,
            optional,
        } => format!(
            "{}.{}{field}{}",
            show(operand),
            if *optional { "?" } else { "" },
            if *test_only { "~test-only" } else { "" }
        ),
        ExprKind::Call {
            target,
            function,
            args,
        } => {
            let args: Vec<String> = args.iter().map(show).collect();
            match target {
                Some(t) => format!("{}.{function}({})", show(t), args.join(", ")),
                None => format!("{function}({})", args.join(", ")),
            }
        }
        ExprKind::List {
            elements,
            optional_indices,
        } => {
            let items: Vec<String> = elements
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    let q = if optional_indices.contains(&(i as u32)) {
                        "?"
                    } else {
                        ""
                    };
                    format!("{q}{}", show(e))
                })
                .collect();
            format!("[{}]", items.join(", "))
        }
        ExprKind::Map { entries } => {
            let items: Vec<String> = entries
                .iter()
                .map(|en| {
                    let q = if en.optional { "?" } else { "" };
                    format!("{q}{}: {}", show(&en.key), show(&en.value))
                })
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        ExprKind::Struct { type_name, fields } => {
            let items: Vec<String> = fields
                .iter()
                .map(|f| {
                    let q = if f.optional { "?" } else { "" };
                    format!("{q}{}: {}", f.name, show(&f.value))
                })
                .collect();
            format!("{type_name}{{{}}}", items.join(", "))
        }
        ExprKind::Comprehension(c) => format!(
            "__comprehension__({}, {}, {}, {}, {}, {}, {}, {})",
            c.iter_var,
            c.iter_var2.as_deref().unwrap_or("-"),
            c.accu_var,
            show(&c.iter_range),
            show(&c.accu_init),
            show(&c.loop_condition),
            show(&c.loop_step),
            show(&c.result)
        ),
    }
}

#[track_caller]
pub(super) fn parses(source: &str, expected: &str) {
    match parse(source) {
        Ok(e) => assert_eq!(show(&e), expected, "source: {source}"),
        Err(issues) => panic!("{source}: {issues:?}"),
    }
}

/// The errors of `source`, as `offset: message`.
#[track_caller]
pub(super) fn errors(source: &str) -> Vec<String> {
    match parse(source) {
        Ok(e) => panic!("{source} parsed: {}", show(&e)),
        Err(issues) => issues
            .iter()
            .map(|i| format!("{}: {}", i.offset, i.message))
            .collect(),
    }
}

/// The first error of `source`.
#[track_caller]
pub(super) fn first_error(source: &str) -> String {
    errors(source).swap_remove(0)
}

/// The expression-start set ANTLR lists.
pub(super) const EXPR: &str = "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}";

/// Every id in the tree, map entries' and struct fields' included.
pub(super) fn collect_ids(e: &Expr, ids: &mut Vec<u32>) {
    ids.push(e.id);
    match &e.kind {
        ExprKind::Literal(_) | ExprKind::Ident(_) => {}
        ExprKind::Select { operand, .. } => collect_ids(operand, ids),
        ExprKind::Call { target, args, .. } => {
            target.iter().for_each(|t| collect_ids(t, ids));
            args.iter().for_each(|a| collect_ids(a, ids));
        }
        ExprKind::List { elements, .. } => elements.iter().for_each(|x| collect_ids(x, ids)),
        ExprKind::Map { entries } => {
            for entry in entries {
                ids.push(entry.id);
                collect_ids(&entry.key, ids);
                collect_ids(&entry.value, ids);
            }
        }
        ExprKind::Struct { fields, .. } => {
            for field in fields {
                ids.push(field.id);
                collect_ids(&field.value, ids);
            }
        }
        ExprKind::Comprehension(c) => {
            for part in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_condition,
                &c.loop_step,
                &c.result,
            ] {
                collect_ids(part, ids);
            }
        }
    }
}

#[test]
fn strings() {
    parses(r#""abc""#, r#""abc""#);
    parses("'abc'", r#""abc""#);
    parses(r#""""#, r#""""#);
    parses("''", r#""""#);
    parses(r#""it's""#, r#""it's""#);
    parses(r#"'say "hi"'"#, r#""say \"hi\"""#);
    parses("'héllo 😁'", r#""héllo 😁""#);
    // Triple quotes span lines and hold single quotes.
    parses("'''a\n'b'\n'''", r#""a\n'b'\n""#);
    parses(r#""""x "y" z""""#, r#""x \"y\" z""#);
    parses(r#""""""""#, r#""""#);
    // Line breaks in the text are `\n`, whatever the source's; escaped ones are kept.
    parses("'''a\r\nb\rc\\r'''", r#""a\nb\nc\r""#);
    parses("r'''a\r\nb'''", r#""a\nb""#);
    // Raw strings keep backslashes.
    parses(r#"r"a\nb""#, r#""a\\nb""#);
    parses(r"R'\d+'", r#""\\d+""#);
    parses(r"r'''a\'''", r#""a\\""#);
    // Every escape of the grammar.
    parses(
        r#""\a\b\f\n\r\t\v\\\'\"\`\?""#,
        r#""\u{7}\u{8}\u{c}\n\r\t\u{b}\\'\"`?""#,
    );
    parses(r#""\x41\X42\101\u00e9\U0001F601""#, r#""ABAé😁""#);
    // A hex or octal escape in a string is a code point, not a byte.
    parses(r#""\xff\377""#, r#""ÿÿ""#);
    parses(r#""\000""#, r#""\0""#);
    // Two strings side by side are not one.
    assert_eq!(
        errors("'it''s'"),
        ["4: Syntax error: extraneous input ''s'' expecting <EOF>"]
    );
}

#[test]
fn string_errors() {
    assert_eq!(
        first_error(r#""\q""#),
        r#"0: Syntax error: token recognition error at: '"\q'"#
    );
    assert_eq!(
        first_error(r#"x + "\xFh""#),
        r#"4: Syntax error: token recognition error at: '"\xFh'"#
    );
    assert_eq!(
        first_error(r#""\a\b\f\n\r\t\v\'\"\\\? Illegal escape \>""#),
        r#"0: Syntax error: token recognition error at: '"\a\b\f\n\r\t\v\'\"\\\? Illegal escape \>'"#
    );
    assert_eq!(
        first_error(r#""\400""#),
        r#"0: Syntax error: token recognition error at: '"\4'"#
    );
    assert_eq!(
        first_error(r#""\18""#),
        r#"0: Syntax error: token recognition error at: '"\18'"#
    );
    assert_eq!(
        first_error("'abc"),
        "0: Syntax error: token recognition error at: ''abc'"
    );
    assert_eq!(
        first_error("'a\nb'"),
        r"0: Syntax error: token recognition error at: ''a\n'"
    );
    assert_eq!(
        first_error("'''abc''"),
        "0: Syntax error: token recognition error at: ''''abc'''"
    );
    // Surrogates are not code points.
    assert_eq!(errors(r#""\ud800""#), ["0: invalid unicode code point"]);
    assert_eq!(errors(r#""\U00110000""#), ["0: invalid unicode code point"]);
}

#[test]
fn bytes() {
    parses(r#"b"abc""#, "b[97, 98, 99]");
    parses("B'abc'", "b[97, 98, 99]");
    parses(r#"b"""#, "b[]");
    // Escapes are bytes; other characters are their UTF-8 encoding.
    parses(r#"b"\xff\377\000\n""#, "b[255, 255, 0, 10]");
    parses(r#"b"ÿ""#, "b[195, 191]");
    parses(r#"br"\x00""#, "b[92, 120, 48, 48]");
    parses(r"BR'\n'", "b[92, 110]");
    parses("b'''a'b'''", "b[97, 39, 98]");
    // Unicode escapes are not bytes.
    assert_eq!(errors(r#"b"\u00ff""#), ["0: unable to unescape string"]);
    assert_eq!(errors(r#"b"\U000000ff""#), ["0: unable to unescape string"]);
    // `rb` is not a prefix: `rb` is a name, then a string.
    assert!(parse(r#"rb"x""#).is_err());
}

#[test]
fn keywords_and_reserved_identifiers() {
    parses("true", "true");
    parses("false", "false");
    parses("null", "null");
    parses("a in b", "@in(a, b)");
    for word in [
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ] {
        assert_eq!(errors(word), [format!("0: reserved identifier: {word}")]);
        assert_eq!(
            errors(&format!("{word}(1)")),
            [format!("0: reserved identifier: {word}")]
        );
        // Reserved words are valid field names.
        parses(&format!("a.{word}"), &format!("a.{word}"));
    }
    assert_eq!(
        errors("in"),
        [
            "0: Syntax error: mismatched input 'in' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}"
        ]
    );
    // Every error is reported, by location.
    assert_eq!(
        errors("[1, 2, 3].map(var, var * var)"),
        [
            "14: reserved identifier: var",
            "14: argument is not an identifier",
            "19: reserved identifier: var",
            "25: reserved identifier: var",
        ]
    );
}

#[test]
fn identifiers_and_names() {
    parses("a", "a");
    parses("_a1", "_a1");
    parses(".a", ".a");
    parses(".a.b", ".a.b");
    parses(".f(1)", ".f(1)");
    parses("a.b.f(1)", "a.b.f(1)");
    parses("size(x)", "size(x)");
    parses("x.size()", "x.size()");
    parses("// a comment\n a // another\n + b", "_+_(a, b)");
}

#[test]
fn aggregates() {
    parses("[]", "[]");
    parses("[,]", "[]");
    parses("[1, 2, 3]", "[1, 2, 3]");
    parses("[1, 2,]", "[1, 2]");
    parses("{}", "{}");
    parses("{,}", "{}");
    parses("{'a': 1, 2: [b]}", r#"{"a": 1, 2: [b]}"#);
    parses("{'a': 1,}", r#"{"a": 1}"#);
    parses("Msg{}", "Msg{}");
    parses("a.b.Msg{f: 1, g: 'x',}", r#"a.b.Msg{f: 1, g: "x"}"#);
    parses(".a.Msg{f: 1}", ".a.Msg{f: 1}");
    parses("Msg{f: 1}.f", "Msg{f: 1}.f");
    parses(
        "google.protobuf.Int64Value{value: -1}",
        "google.protobuf.Int64Value{value: -1}",
    );
}

#[test]
fn optional_syntax() {
    parses("a.?b", "a.?b");
    parses("a.?b.c", "a.?b.c");
    parses("a[?0]", "_[?_](a, 0)");
    parses("[?a, b, ?c]", "[?a, b, ?c]");
    parses("{?'k': v, 'j': w}", r#"{?"k": v, "j": w}"#);
    parses("Msg{?f: v, g: w}", "Msg{?f: v, g: w}");
    parses("a.?b.orValue(c)", "a.?b.orValue(c)");
    parses("optional.of(1)", "optional.of(1)");
    // `.?` selects: it does not call.
    assert!(parse("a.?b(1)").is_err());
    let Ok(tree) = parse("[1, ?a, 2, ?b]") else {
        panic!("parses")
    };
    let ExprKind::List {
        optional_indices, ..
    } = tree.kind
    else {
        panic!("a list")
    };
    assert_eq!(optional_indices, [1, 3]);
}
#[test]
fn precedence() {
    parses("1 + 2 * 3", "_+_(1, _*_(2, 3))");
    parses("(1 + 2) * 3", "_*_(_+_(1, 2), 3)");
    parses("1 - 2 - 3", "_-_(_-_(1, 2), 3)");
    parses("8 / 4 % 3 * 2", "_*_(_%_(_/_(8, 4), 3), 2)");
    parses("a < b == c > d", "_>_(_==_(_<_(a, b), c), d)");
    parses("a + 1 <= b * 2", "_<=_(_+_(a, 1), _*_(b, 2))");
    parses("x in [1] != false", "_!=_(@in(x, [1]), false)");
    parses("a >= b != c", "_!=_(_>=_(a, b), c)");
    parses("a || b && c", "_||_(a, _&&_(b, c))");
    parses("a && b || c", "_||_(_&&_(a, b), c)");
    parses("a == b && c != d", "_&&_(_==_(a, b), _!=_(c, d))");
    parses("a ? b : c", "_?_:_(a, b, c)");
    parses("a ? b : c ? d : e", "_?_:_(a, b, _?_:_(c, d, e))");
    parses("a || b ? c && d : e", "_?_:_(_||_(a, b), _&&_(c, d), e)");
    parses("!a && -b < c", "_&&_(!_(a), _<_(-_(b), c))");
    parses("-a.b[0]", "-_(_[_](a.b, 0))");
    parses("!a.f()", "!_(a.f())");
    parses("a.b.c", "a.b.c");
    parses("a.b(1, 2).c[d]", "_[_](a.b(1, 2).c, d)");
    parses("1 + 2 + 3 + 4", "_+_(_+_(_+_(1, 2), 3), 4)");
}

#[test]
fn precedence_errors() {
    // The middle of a conditional is a `||` expression, not a conditional.
    assert_eq!(
        errors("a ? b ? c : d : e"),
        ["6: Syntax error: mismatched input '?' expecting ':'"]
    );
    assert_eq!(
        errors("1 + 2\n3 +"),
        ["6: Syntax error: mismatched input '3' expecting <EOF>"]
    );
}

#[test]
fn logical_chains_are_balanced_as_cel_go_balances_them() {
    parses("a && b && c", "_&&_(_&&_(a, b), c)");
    parses("a && b && c && d", "_&&_(_&&_(a, b), _&&_(c, d))");
    parses(
        "a || b || c || d || e",
        "_||_(_||_(_||_(a, b), c), _||_(d, e))",
    );
    let Ok(tree) = parse("a && b && c") else {
        panic!("parses")
    };
    // The root is the middle operator.
    assert_eq!(tree.offset, 7);
}

#[test]
fn unary_runs() {
    parses("!true", "!_(true)");
    parses("!!true", "true");
    parses("!!!a", "!_(a)");
    parses("--a", "a");
    parses("---a", "-_(a)");
    parses("-(1)", "-_(1)");
    // A single `-` before a number is its sign, so the literal is negative.
    parses("-1", "-1");
    parses("- 1", "-1");
    parses("-1.5", "-1.5");
    parses("-1u", "-_(1u)");
    parses("--1", "1");
    parses("-1.size()", "-1.size()");
    parses("!-1", "!_(-1)");
    parses("-9223372036854775808", "-9223372036854775808");
    assert_eq!(errors("9223372036854775808"), ["0: invalid int literal"]);
    assert_eq!(errors("-(9223372036854775808)"), ["2: invalid int literal"]);
    // `!` and `-` do not mix in one run: the grammar wants a member after them.
    assert!(parse("!-a").is_err());
    assert!(parse("-!a").is_err());
}

#[test]
fn numbers() {
    parses("0", "0");
    parses("123", "123");
    parses("0x1F", "31");
    parses("0xff", "255");
    parses("9223372036854775807", "9223372036854775807");
    parses("-0x8000000000000000", "-9223372036854775808");
    parses("1u", "1u");
    parses("1U", "1u");
    parses("0x1Fu", "31u");
    parses("18446744073709551615u", "18446744073709551615u");
    parses("1.5", "1.5");
    parses("1e3", "1000.0");
    parses("1E-3", "0.001");
    parses("2.5e+2", "250.0");
    parses(".5", "0.5");
    parses(".5e1", "5.0");
    parses("0.0", "0.0");
    assert_eq!(errors("0xFFFFFFFFFFFFFFFFF"), ["0: invalid int literal"]);
    assert_eq!(errors("0xFFFFFFFFFFFFFFFFFu"), ["0: invalid uint literal"]);
    assert_eq!(errors("18446744073709551616u"), ["0: invalid uint literal"]);
    assert_eq!(errors("1.99e90000009"), ["0: invalid double literal"]);
    // `1.` is not a double: the `.` wants a field name.
    assert_eq!(
        errors("1."),
        ["2: Syntax error: no viable alternative at input '.'"]
    );
    // A number and a name are two tokens.
    assert_eq!(
        errors("1a"),
        ["1: Syntax error: extraneous input 'a' expecting <EOF>"]
    );
    // `1.size()` calls a method on 1.
    parses("1.size()", "1.size()");
}
