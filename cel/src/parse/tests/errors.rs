//! Tests of the errors the parser reports: syntax errors worded and located as cel-go's,
//! their display, and cel-go's size and recursion limits on deep or long input.

use super::{EXPR, errors, first_error, parses};
use crate::ast::{Expr, ExprKind};
use crate::parse::parse;

#[test]
fn limits() {
    for open in ["(", "[", "{1: ", "a[", "f("] {
        let close = match open {
            "(" | "f(" => ")",
            "[" | "a[" => "]",
            _ => "}",
        };
        let n = 240;
        let ok = format!("{}x{}", open.repeat(n), close.repeat(n));
        assert!(parse(&ok).is_ok(), "{open} x {n}");
        let deep = format!("{}x{}", open.repeat(300), close.repeat(300));
        assert_eq!(
            errors(&deep),
            ["0: expression recursion limit exceeded: 250"],
            "{open} x 300"
        );
    }
    for deep in [
        "(".repeat(100_000),
        "[".repeat(99_999),
        "{".repeat(99_999),
        "a.b(".repeat(25_000),
    ] {
        assert_eq!(
            errors(&deep),
            ["0: expression recursion limit exceeded: 250"]
        );
    }
    // Runs of unary operators are not nested: an even run cancels out.
    parses(&("-".repeat(99_998) + "x"), "x");
    parses(&("!".repeat(99_999) + "x"), "!_(x)");
    let long = "x".repeat(100_001);
    assert_eq!(
        errors(&long),
        ["0: expression code point size exceeds limit: size: 100001, limit 100000"]
    );
    // cel-go stops after 100 syntax errors.
    let unlexable = errors(&"$".repeat(1000));
    assert_eq!(unlexable.len(), 101);
    assert_eq!(
        unlexable[100],
        "100: Syntax error: More than 100 syntax errors"
    );
    // Code points, not bytes.
    let wide = format!("'{}'", "é".repeat(99_998));
    assert!(parse(&wide).is_ok());
    // Long chains of operators, selects, indexes and calls count against cel-go's visitor
    // limit: 250 nested nodes.
    assert!(parse(&vec!["1"; 250].join(" + ")).is_ok());
    for chain in [
        vec!["1"; 252].join(" + "),
        vec!["1"; 252].join(" < "),
        vec!["a"; 252].join(".b"),
        format!("a{}", "[0]".repeat(251)),
        format!("a{}", ".f()".repeat(251)),
        vec!["a"; 30_000].join("*"),
    ] {
        assert_eq!(errors(&chain), ["0: max recursion depth exceeded"]);
    }
    // `&&` and `||` chains are balanced, not nested.
    let chain = vec!["a"; 10_000].join(" && ");
    let Ok(tree) = parse(&chain) else {
        panic!("a long && chain is accepted")
    };
    assert!(depth(&tree) <= 15, "depth {}", depth(&tree));
}

fn depth(e: &Expr) -> usize {
    match &e.kind {
        ExprKind::Call { target, args, .. } => {
            1 + args
                .iter()
                .chain(target.as_deref())
                .map(depth)
                .max()
                .unwrap_or(0)
        }
        _ => 1,
    }
}

#[test]
fn syntax_errors_as_cel_go_reports_them() {
    // Cases of cel-go's parser_test.go.
    assert_eq!(
        errors("*@a | b"),
        [
            format!("0: Syntax error: extraneous input '*' expecting {EXPR}"),
            "1: Syntax error: token recognition error at: '@'".to_string(),
            "4: Syntax error: token recognition error at: '| '".to_string(),
            "6: Syntax error: extraneous input 'b' expecting <EOF>".to_string(),
        ]
    );
    assert_eq!(
        errors("a | b"),
        [
            "2: Syntax error: token recognition error at: '| '",
            "4: Syntax error: extraneous input 'b' expecting <EOF>",
        ]
    );
    assert_eq!(
        errors("1 + $"),
        [
            "4: Syntax error: token recognition error at: '$'".to_string(),
            format!("5: Syntax error: mismatched input '<EOF>' expecting {EXPR}"),
        ]
    );
    assert_eq!(
        errors(r#""\xFh""#),
        [
            r#"0: Syntax error: token recognition error at: '"\xFh'"#.to_string(),
            r#"5: Syntax error: token recognition error at: '"'"#.to_string(),
            format!("6: Syntax error: mismatched input '<EOF>' expecting {EXPR}"),
        ]
    );
    assert_eq!(
        errors("1 + +"),
        [format!(
            "4: Syntax error: mismatched input '+' expecting {EXPR}"
        )]
    );
    assert_eq!(
        errors("TestAllTypes(){}"),
        ["14: Syntax error: mismatched input '{' expecting <EOF>"]
    );
    assert_eq!(
        errors("TestAllTypes{}()"),
        ["14: Syntax error: mismatched input '(' expecting <EOF>"]
    );
    assert_eq!(
        errors(r#"{"a": 1}."a""#),
        [r#"9: Syntax error: no viable alternative at input '."a"'"#]
    );
    assert_eq!(
        errors("{"),
        [
            "1: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '}', '(', '.', ',', '-', '!', '?', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}"
        ]
    );
    assert_eq!(
        first_error("func{{a}}"),
        "5: Syntax error: extraneous input '{' expecting {'}', ',', '?', IDENTIFIER, ESC_IDENTIFIER}"
    );
    assert_eq!(
        first_error("msg{:a}"),
        "4: Syntax error: extraneous input ':' expecting {'}', ',', '?', IDENTIFIER, ESC_IDENTIFIER}"
    );
    assert_eq!(
        errors("{a}"),
        ["2: Syntax error: mismatched input '}' expecting ':'"]
    );
    assert_eq!(
        errors("ind[a{b}]"),
        ["7: Syntax error: mismatched input '}' expecting ':'"]
    );
    assert_eq!(
        first_error("{:a}"),
        "1: Syntax error: extraneous input ':' expecting {'[', '{', '}', '(', '.', ',', '-', '!', '?', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}"
    );
    assert_eq!(
        errors("?"),
        [format!(
            "0: Syntax error: mismatched input '?' expecting {EXPR}"
        )]
    );
    assert_eq!(
        first_error("a ? b ((?))"),
        format!("8: Syntax error: mismatched input '?' expecting {EXPR}")
    );
    assert_eq!(
        first_error("'😁' in ['😁', '😑', '😦']\n&& in.😁"),
        format!("38: Syntax error: extraneous input 'in' expecting {EXPR}")
    );
    // Unclosed and misplaced brackets name what was wanted.
    assert_eq!(
        errors("(a"),
        ["2: Syntax error: mismatched input '<EOF>' expecting ')'"]
    );
    assert_eq!(
        errors("[1 2]"),
        ["3: Syntax error: extraneous input '2' expecting {']', ','}"]
    );
    assert_eq!(
        errors("f(1 2)"),
        ["4: Syntax error: extraneous input '2' expecting {')', ','}"]
    );
    assert_eq!(
        errors("f(1,)"),
        [format!(
            "4: Syntax error: mismatched input ')' expecting {EXPR}"
        )]
    );
    assert_eq!(
        errors("a."),
        ["2: Syntax error: no viable alternative at input '.'"]
    );
    assert_eq!(
        errors("a.?1"),
        ["3: Syntax error: mismatched input '1' expecting {IDENTIFIER, ESC_IDENTIFIER}"]
    );
    assert_eq!(
        errors("[1 2 3 + 4]"),
        ["3: Syntax error: mismatched input '2' expecting {']', ','}",]
    );
    assert_eq!(
        errors("a[1"),
        ["3: Syntax error: mismatched input '<EOF>' expecting ']'"]
    );
    assert_eq!(
        errors(""),
        [format!(
            "0: Syntax error: mismatched input '<EOF>' expecting {EXPR}"
        )]
    );
    // Backquoted field names are cel-go syntax Kubernetes does not enable.
    assert_eq!(errors("a.`b-c`"), ["2: unsupported syntax: '`'"]);
    assert_eq!(errors("a.?`b`"), ["3: unsupported syntax: '`'"]);
    assert_eq!(errors("M{`b`: 1}"), ["2: unsupported syntax: '`'"]);
    assert_eq!(
        errors("`a`"),
        [format!(
            "0: Syntax error: mismatched input '`a`' expecting {EXPR}"
        )]
    );
    assert_eq!(
        errors("a.`b"),
        [
            "2: Syntax error: token recognition error at: '`b'",
            "4: Syntax error: no viable alternative at input '.'",
        ]
    );
}

#[test]
fn compile_errors_display_carets_at_the_offsets() {
    let show_error = |source: &str| {
        let Err(issues) = parse(source) else {
            panic!("{source} is refused")
        };
        crate::CompileError {
            source: source.into(),
            issues,
        }
        .to_string()
    };
    assert_eq!(
        show_error("a | b"),
        "ERROR: <input>:1:3: Syntax error: token recognition error at: '| '\n | a | b\n | ..^\nERROR: <input>:1:5: Syntax error: extraneous input 'b' expecting <EOF>\n | a | b\n | ....^"
    );
    assert_eq!(
        show_error("1 + 2\n3 +"),
        "ERROR: <input>:2:1: Syntax error: mismatched input '3' expecting <EOF>\n | 3 +\n | ^"
    );
    assert_eq!(
        show_error("'😁' + x.?1"),
        "ERROR: <input>:1:10: Syntax error: mismatched input '1' expecting {IDENTIFIER, ESC_IDENTIFIER}\n | '😁' + x.?1\n | .........^"
    );
    assert_eq!(
        show_error("has(m)"),
        "ERROR: <input>:1:5: invalid argument to has() macro\n | has(m)\n | ....^"
    );
}

#[test]
fn deep_nesting_needs_little_of_the_callers_stack() {
    let deep = format!("{}x{}", "[".repeat(249), "]".repeat(249));
    let conditionals = format!("{}x", "a ? b : ".repeat(240));
    let caller = std::thread::Builder::new()
        .stack_size(512 << 10)
        .spawn(move || (parse(&deep).is_ok(), parse(&conditionals).is_ok()));
    let Ok(caller) = caller else {
        panic!("a thread starts")
    };
    assert_eq!(caller.join().ok(), Some((true, true)));
}

#[test]
fn arbitrary_input_never_panics() {
    // Token soup and character soup from a fixed pseudo-random sequence.
    let pieces = [
        "a",
        ".",
        "?",
        "[",
        "]",
        "{",
        "}",
        "(",
        ")",
        ",",
        ":",
        "-",
        "!",
        "+",
        "*",
        "/",
        "%",
        "==",
        "<",
        "in",
        "&&",
        "||",
        "1",
        "0x1",
        "2u",
        "1.5e3",
        ".5",
        "'s'",
        "b'b'",
        "r'\\'",
        "\"\\x",
        "'''",
        "\\",
        "`",
        "`a`",
        "has",
        "all",
        "map",
        "exists",
        "optMap",
        "sortBy",
        "x",
        "e",
        "é",
        "😁",
        "\n",
        " ",
        "$",
        "|",
        "&",
        "9223372036854775808",
        "-",
    ];
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..3000 {
        let len = next() % 40;
        let source: String = (0..len)
            .map(|_| pieces[(next() % pieces.len() as u64) as usize])
            .collect();
        let _ = parse(&source);
        let chars: String = source.chars().rev().collect();
        let _ = parse(&chars);
    }
}
