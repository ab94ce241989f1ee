//! CEL's lexer: source text to tokens, as cel-spec's grammar (`CEL.g4`) defines them.
//!
//! Whitespace and `//` comments are skipped. String and bytes literals are kept as their raw
//! text here and decoded by [`super::literal`]; a string with an escape the grammar does not
//! know, or with no closing quote, is a token recognition error as ANTLR reports it.

use crate::Issue;

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tok {
    /// A name: letters, digits and `_`, not starting with a digit.
    Ident,
    /// `123`, `0x1F`.
    Int,
    /// `123u`, `0x1FU`.
    Uint,
    /// `1.5`, `1e3`, `.5`.
    Double,
    /// A string literal, quotes and `r` prefix included.
    String,
    /// A bytes literal, `b` prefix included.
    Bytes,
    True,
    False,
    Null,
    In,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
    Not,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Question,
    Colon,
    Dot,
    Comma,
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    /// A backquoted field name, `` `a.b-c` ``; Kubernetes does not enable the syntax, so the
    /// parser refuses it where cel-go's grammar allows it.
    EscIdent,
    Eof,
}

impl Tok {
    /// The name ANTLR gives the token kind in "expecting" lists.
    pub(super) fn display(self) -> &'static str {
        match self {
            Tok::Ident => "IDENTIFIER",
            Tok::Int => "NUM_INT",
            Tok::Uint => "NUM_UINT",
            Tok::Double => "NUM_FLOAT",
            Tok::String => "STRING",
            Tok::Bytes => "BYTES",
            Tok::True => "'true'",
            Tok::False => "'false'",
            Tok::Null => "'null'",
            Tok::In => "'in'",
            Tok::Eq => "'=='",
            Tok::Ne => "'!='",
            Tok::Lt => "'<'",
            Tok::Le => "'<='",
            Tok::Gt => "'>'",
            Tok::Ge => "'>='",
            Tok::And => "'&&'",
            Tok::Or => "'||'",
            Tok::Not => "'!'",
            Tok::Plus => "'+'",
            Tok::Minus => "'-'",
            Tok::Star => "'*'",
            Tok::Slash => "'/'",
            Tok::Percent => "'%'",
            Tok::Question => "'?'",
            Tok::Colon => "':'",
            Tok::Dot => "'.'",
            Tok::Comma => "','",
            Tok::LParen => "'('",
            Tok::RParen => "')'",
            Tok::LBracket => "'['",
            Tok::RBracket => "']'",
            Tok::LBrace => "'{'",
            Tok::RBrace => "'}'",
            Tok::EscIdent => "ESC_IDENTIFIER",
            Tok::Eof => "<EOF>",
        }
    }

    /// The token kind's place in ANTLR's vocabulary, the order of "expecting" lists.
    pub(super) fn rank(self) -> u8 {
        match self {
            Tok::Eof => 0,
            Tok::Eq => 1,
            Tok::Ne => 2,
            Tok::In => 3,
            Tok::Lt => 4,
            Tok::Le => 5,
            Tok::Ge => 6,
            Tok::Gt => 7,
            Tok::And => 8,
            Tok::Or => 9,
            Tok::LBracket => 10,
            Tok::RBracket => 11,
            Tok::LBrace => 12,
            Tok::RBrace => 13,
            Tok::LParen => 14,
            Tok::RParen => 15,
            Tok::Dot => 16,
            Tok::Comma => 17,
            Tok::Minus => 18,
            Tok::Not => 19,
            Tok::Question => 20,
            Tok::Colon => 21,
            Tok::Plus => 22,
            Tok::Star => 23,
            Tok::Slash => 24,
            Tok::Percent => 25,
            Tok::True => 26,
            Tok::False => 27,
            Tok::Null => 28,
            Tok::Double => 29,
            Tok::Int => 30,
            Tok::Uint => 31,
            Tok::String => 32,
            Tok::Bytes => 33,
            Tok::Ident => 34,
            Tok::EscIdent => 35,
        }
    }
}

/// A token: its kind and its byte range in the source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Token {
    pub kind: Tok,
    pub start: u32,
    pub end: u32,
}

/// cel-go's limit on syntax errors: past it, the error says so and parsing stops.
const ERROR_REPORTING_LIMIT: usize = 100;

/// Splits `source` into tokens, ending with [`Tok::Eof`], and ANTLR's `token recognition
/// error`s for text no token matches (skipped, as ANTLR's lexer skips it). Past cel-go's limit
/// on syntax errors, only the errors.
pub(super) fn tokenize(source: &str) -> Result<(Vec<Token>, Vec<Issue>), Vec<Issue>> {
    let mut tokens = Vec::new();
    let mut errors = Vec::new();
    let mut i = 0usize;
    while i < source.len() {
        match next_token(source, i) {
            Ok((kind, end)) => {
                if let Some(kind) = kind {
                    tokens.push(Token {
                        kind,
                        start: i as u32,
                        end: end as u32,
                    });
                }
                i = end.max(i + 1);
            }
            Err(unlexed) => {
                if errors.len() == ERROR_REPORTING_LIMIT {
                    errors.push(Issue {
                        offset: unlexed.issue.offset,
                        message: format!(
                            "Syntax error: More than {ERROR_REPORTING_LIMIT} syntax errors"
                        ),
                    });
                    return Err(errors);
                }
                i = unlexed.end.max(i + 1);
                errors.push(unlexed.issue);
            }
        }
    }
    tokens.push(Token {
        kind: Tok::Eof,
        start: source.len() as u32,
        end: source.len() as u32,
    });
    Ok((tokens, errors))
}

/// Text no token matches: the error, and where lexing resumes.
struct Unlexed {
    issue: Issue,
    end: usize,
}

/// The token at `i` (none for whitespace and comments) and its end.
fn next_token(source: &str, mut i: usize) -> Result<(Option<Tok>, usize), Unlexed> {
    let bytes = source.as_bytes();
    {
        let c = bytes[i];
        let start = i;
        let kind = match c {
            b' ' | b'\t' | b'\r' | b'\n' | 0x0c => {
                return Ok((None, i + 1));
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                return Ok((None, i));
            }
            b'0'..=b'9' => {
                let (kind, end) = number(bytes, i);
                i = end;
                kind
            }
            b'.' if bytes.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                let (kind, end) = number(bytes, i);
                i = end;
                kind
            }
            b'`' => {
                i = escaped_ident(source, i)?;
                Tok::EscIdent
            }
            b'"' | b'\'' => {
                i = string(source, i, i, false)?;
                Tok::String
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                if let Some((kind, end)) = prefixed_string(source, i)? {
                    i = end;
                    kind
                } else {
                    while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_')
                    {
                        i += 1;
                    }
                    match &source[start..i] {
                        "true" => Tok::True,
                        "false" => Tok::False,
                        "null" => Tok::Null,
                        "in" => Tok::In,
                        _ => Tok::Ident,
                    }
                }
            }
            _ => {
                let next = bytes.get(i + 1).copied();
                let (kind, len) = match (c, next) {
                    (b'=', Some(b'=')) => (Tok::Eq, 2),
                    (b'!', Some(b'=')) => (Tok::Ne, 2),
                    (b'<', Some(b'=')) => (Tok::Le, 2),
                    (b'>', Some(b'=')) => (Tok::Ge, 2),
                    (b'&', Some(b'&')) => (Tok::And, 2),
                    (b'|', Some(b'|')) => (Tok::Or, 2),
                    (b'<', _) => (Tok::Lt, 1),
                    (b'>', _) => (Tok::Gt, 1),
                    (b'!', _) => (Tok::Not, 1),
                    (b'+', _) => (Tok::Plus, 1),
                    (b'-', _) => (Tok::Minus, 1),
                    (b'*', _) => (Tok::Star, 1),
                    (b'/', _) => (Tok::Slash, 1),
                    (b'%', _) => (Tok::Percent, 1),
                    (b'?', _) => (Tok::Question, 1),
                    (b':', _) => (Tok::Colon, 1),
                    (b'.', _) => (Tok::Dot, 1),
                    (b',', _) => (Tok::Comma, 1),
                    (b'(', _) => (Tok::LParen, 1),
                    (b')', _) => (Tok::RParen, 1),
                    (b'[', _) => (Tok::LBracket, 1),
                    (b']', _) => (Tok::RBracket, 1),
                    (b'{', _) => (Tok::LBrace, 1),
                    (b'}', _) => (Tok::RBrace, 1),
                    _ => {
                        // ANTLR reads on after the first of `&&` or `||`.
                        let mut end = next_char_end(source, i);
                        if matches!(c, b'&' | b'|') {
                            end = next_char_end(source, end);
                        }
                        return Err(recognition_error(source, start, end));
                    }
                };
                i += len;
                kind
            }
        };
        let _ = start;
        Ok((Some(kind), i))
    }
}

/// The end of the backquoted identifier at `i`: letters, digits, `_`, `.`, `-`, `/` and spaces.
fn escaped_ident(source: &str, start: usize) -> Result<usize, Unlexed> {
    let bytes = source.as_bytes();
    let mut i = start + 1;
    while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || b"_.-/ ".contains(&bytes[i])) {
        i += 1;
    }
    if i > start + 1 && bytes.get(i) == Some(&b'`') {
        return Ok(i + 1);
    }
    Err(recognition_error(source, start, next_char_end(source, i)))
}

/// `NUM_INT`, `NUM_UINT` or `NUM_FLOAT` starting at `i`, by longest match.
fn number(bytes: &[u8], mut i: usize) -> (Tok, usize) {
    let digits = |mut j: usize| {
        while j < bytes.len() && bytes[j].is_ascii_digit() {
            j += 1;
        }
        j
    };
    let exponent = |j: usize| -> Option<usize> {
        if !matches!(bytes.get(j), Some(b'e' | b'E')) {
            return None;
        }
        let mut k = j + 1;
        if matches!(bytes.get(k), Some(b'+' | b'-')) {
            k += 1;
        }
        let end = digits(k);
        (end > k).then_some(end)
    };
    let unsigned = |j: usize| -> (Tok, usize) {
        if matches!(bytes.get(j), Some(b'u' | b'U')) {
            (Tok::Uint, j + 1)
        } else {
            (Tok::Int, j)
        }
    };
    if bytes[i] == b'.' {
        let end = digits(i + 1);
        return (Tok::Double, exponent(end).unwrap_or(end));
    }
    if bytes[i] == b'0'
        && bytes.get(i + 1) == Some(&b'x')
        && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
    {
        i += 2;
        while i < bytes.len() && bytes[i].is_ascii_hexdigit() {
            i += 1;
        }
        return unsigned(i);
    }
    i = digits(i);
    if bytes.get(i) == Some(&b'.') && bytes.get(i + 1).is_some_and(u8::is_ascii_digit) {
        let end = digits(i + 1);
        return (Tok::Double, exponent(end).unwrap_or(end));
    }
    if let Some(end) = exponent(i) {
        return (Tok::Double, end);
    }
    unsigned(i)
}

/// A string or bytes literal with a letter prefix (`r`, `b`, `br`, any case) at `i`, if one
/// starts there.
fn prefixed_string(source: &str, i: usize) -> Result<Option<(Tok, usize)>, Unlexed> {
    let bytes = source.as_bytes();
    let is_quote = |j: usize| matches!(bytes.get(j), Some(b'"' | b'\''));
    let is_raw = |j: usize| matches!(bytes.get(j), Some(b'r' | b'R'));
    let (kind, raw, quote) = match bytes[i] {
        b'b' | b'B' if is_quote(i + 1) => (Tok::Bytes, false, i + 1),
        b'b' | b'B' if is_raw(i + 1) && is_quote(i + 2) => (Tok::Bytes, true, i + 2),
        b'r' | b'R' if is_quote(i + 1) => (Tok::String, true, i + 1),
        _ => return Ok(None),
    };
    let end = string(source, i, quote, raw)?;
    Ok(Some((kind, end)))
}

/// The end of the string whose opening quote is at `quote` (the token starts at `start`).
fn string(source: &str, start: usize, quote: usize, raw: bool) -> Result<usize, Unlexed> {
    let bytes = source.as_bytes();
    let q = bytes[quote];
    let triple = bytes.get(quote + 1) == Some(&q) && bytes.get(quote + 2) == Some(&q);
    let mut i = if triple { quote + 3 } else { quote + 1 };
    loop {
        let Some(&c) = bytes.get(i) else {
            return Err(recognition_error(source, start, source.len()));
        };
        if triple {
            if c == q && bytes.get(i + 1) == Some(&q) && bytes.get(i + 2) == Some(&q) {
                return Ok(i + 3);
            }
        } else if c == q {
            return Ok(i + 1);
        } else if c == b'\n' || c == b'\r' {
            return Err(recognition_error(source, start, i + 1));
        }
        if c == b'\\' && !raw {
            i = escape(source, start, i)?;
        } else {
            i = next_char_end(source, i);
        }
    }
}

/// The end of the escape sequence at `i` (a `\`), checked against the grammar's `ESC_SEQ`.
fn escape(source: &str, start: usize, i: usize) -> Result<usize, Unlexed> {
    let bytes = source.as_bytes();
    let hex = |from: usize, n: usize| -> Result<usize, Unlexed> {
        for k in from..from + n {
            match bytes.get(k) {
                Some(b) if b.is_ascii_hexdigit() => {}
                _ => return Err(recognition_error(source, start, next_char_end(source, k))),
            }
        }
        Ok(from + n)
    };
    match bytes.get(i + 1) {
        Some(
            b'a' | b'b' | b'f' | b'n' | b'r' | b't' | b'v' | b'"' | b'\'' | b'\\' | b'?' | b'`',
        ) => Ok(i + 2),
        Some(b'x' | b'X') => hex(i + 2, 2),
        Some(b'u') => hex(i + 2, 4),
        Some(b'U') => hex(i + 2, 8),
        Some(b'0'..=b'3') => {
            for k in i + 2..i + 4 {
                if !matches!(bytes.get(k), Some(b'0'..=b'7')) {
                    return Err(recognition_error(source, start, next_char_end(source, k)));
                }
            }
            Ok(i + 4)
        }
        _ => Err(recognition_error(
            source,
            start,
            next_char_end(source, i + 1),
        )),
    }
}

/// The byte after the character at `i` (or `i` at the end of the source).
fn next_char_end(source: &str, i: usize) -> usize {
    if i >= source.len() {
        return source.len();
    }
    let mut end = i + 1;
    while end < source.len() && !source.is_char_boundary(end) {
        end += 1;
    }
    end
}

/// ANTLR's message for text no token matches, `source[start..end]`.
fn recognition_error(source: &str, start: usize, end: usize) -> Unlexed {
    let end = end.min(source.len());
    Unlexed {
        issue: Issue {
            offset: start as u32,
            message: format!(
                "Syntax error: token recognition error at: '{}'",
                escape_text(source.get(start..end).unwrap_or(""))
            ),
        },
        end,
    }
}

/// Token text as ANTLR shows it in messages: line breaks and tabs escaped.
pub(super) fn escape_text(text: &str) -> String {
    text.replace('\n', "\\n")
        .replace('\r', "\\r")
        .replace('\t', "\\t")
}
