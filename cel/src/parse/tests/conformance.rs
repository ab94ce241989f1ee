//! Cases of cel-spec's conformance suite, `tests/simple/testdata/parse.textproto` (Apache-2.0):
//! nesting and repetition within the limits every implementation supports, and string escapes.

use super::parses;
use crate::parse::parse;

#[test]
fn nesting_and_repetition_within_the_limits() {
    for source in [
        "a[a[a[a[a[a[a[a[a[a[a[a[0]]]]]]]]]]]]",
        "NestedTestAllTypes{child: NestedTestAllTypes{child: NestedTestAllTypes{child: NestedTestAllTypes{child: NestedTestAllTypes{child: NestedTestAllTypes{child: NestedTestAllTypes{child: NestedTestAllTypes{child: NestedTestAllTypes{child: NestedTestAllTypes{child: NestedTestAllTypes{payload: TestAllTypes{single_int64: 137}}}}}}}}}}}}.payload.single_int64",
        "int(uint(int(uint(int(uint(int(uint(int(uint(int(uint(7))))))))))))",
        "size([[[[[[[[[[[[0]]]]]]]]]]]])",
        "size({0: {0: {0: {0: {0: {0: {0: {0: {0: {0: {0: {0: 'foo'}}}}}}}}}}}})",
        "((((((((((((((((((((((((((((((((7))))))))))))))))))))))))))))))))",
        "3 - 3 + 3 - 3 + 3 - 3 + 3 - 3 + 3 - 3 + 3 - 3 + 3 - 3 + 3 - 3 + 3 - 3 + 3 - 3 + 3 - 3 + 3 - 3 + 3",
        "4 * 4 / 4 * 4 / 4 * 4 / 4 * 4 / 4 * 4 / 4 * 4 / 4 * 4 / 4 * 4 / 4 * 4 / 4 * 4 / 4 * 4 / 4 * 4 / 4",
        "NestedTestAllTypes{}.child.child.child.child.child.child.child.child.child.child.payload.single_int32",
        "[[[[[[[[[[[['foo']]]]]]]]]]]][0][0][0][0][0][0][0][0][0][0][0][0]",
        "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31][17]",
    ] {
        assert!(parse(source).is_ok(), "{source}: {:?}", parse(source).err());
    }
    let conditional = format!("{}false", "true ? true : ".repeat(32));
    assert!(parse(&conditional).is_ok());
    let or = format!("{}true", "false || ".repeat(32));
    assert!(parse(&or).is_ok());
    parses("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!true", "true");
    parses("--------------------------------19", "19");
}

#[test]
fn string_escapes() {
    parses(r#"' \\ \? \" \' \` '"#, r#"" \\ ? \" ' ` ""#);
    parses(r#"''' ? " ' ` '''"#, r#"" ? \" ' ` ""#);
    // Control characters may be written unescaped.
    parses(
        "' \u{7} \u{8} \u{c} \t \u{b} '",
        r#"" \u{7} \u{8} \u{c} \t \u{b} ""#,
    );
    parses("\" \u{1} \u{1f} \u{7f} \"", r#"" \u{1} \u{1f} \u{7f} ""#);
    parses(r"' \000 \012 \177 '", r#"" \0 \n \u{7f} ""#);
    parses(r"' \x00 \x0A \X7F '", r#"" \0 \n \u{7f} ""#);
    parses(
        r"' \u0000 \u000A \u007F \u0100 \uFFFB '",
        r#"" \0 \n \u{7f} Ā \u{fffb} ""#,
    );
    parses(
        r"' \U00000000 \U0001F62C \U00088888 '",
        r#"" \0 😬 \u{88888} ""#,
    );
    parses(
        r"' \x4a \x4B \X4c \X4D \u01aB \U000001aB '",
        r#"" J K L M ƫ ƫ ""#,
    );
    parses(
        r#"r' \\ \? \" \` \a \b \f \t \v \n \r \000 \x00 \X00 \u0000 \U00000000 '"#,
        r#"" \\\\ \\? \\\" \\` \\a \\b \\f \\t \\v \\n \\r \\000 \\x00 \\X00 \\u0000 \\U00000000 ""#,
    );
}
