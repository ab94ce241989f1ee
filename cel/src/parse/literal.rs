//! The values of CEL's literal tokens: numbers and the escapes of string and bytes literals, as
//! cel-go's parser reads them (`strconv` for numbers, its `unescape` for quotes).

/// An int literal's value; `negative` when a `-` sign precedes it (so the most negative int is
/// a literal). `None` when it does not fit in 64 bits.
pub(super) fn int(text: &str, negative: bool) -> Option<i64> {
    let (digits, radix) = match text.strip_prefix("0x") {
        Some(hex) => (hex, 16),
        None => (text, 10),
    };
    let magnitude = i128::from(u64::from_str_radix(digits, radix).ok()?);
    i64::try_from(if negative { -magnitude } else { magnitude }).ok()
}

/// A uint literal's value (the `u` suffix included in `text`).
pub(super) fn uint(text: &str) -> Option<u64> {
    let text = &text[..text.len().saturating_sub(1)];
    match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// A double literal's value.
pub(super) fn double(text: &str, negative: bool) -> Option<f64> {
    let value: f64 = text.parse().ok()?;
    // Go's ParseFloat refuses a value beyond the largest double.
    if value.is_infinite() {
        return None;
    }
    Some(if negative { -value } else { value })
}

/// The contents of a string (`bytes` false) or bytes literal token, escapes decoded; the error
/// is cel-go's message.
pub(super) fn unquote(token: &str, bytes: bool) -> Result<Vec<u8>, &'static str> {
    // cel-go normalizes line breaks in the literal's text (raw or not) to `\n`.
    let normalized;
    let mut text = token;
    if token.contains('\r') {
        normalized = token.replace("\r\n", "\n").replace('\r', "\n");
        text = &normalized;
    }
    if bytes {
        text = &text[1..];
    }
    let raw = text.starts_with(['r', 'R']);
    if raw {
        text = &text[1..];
    }
    let quote = if text.starts_with("\"\"\"") || text.starts_with("'''") {
        3
    } else {
        1
    };
    let inner = text
        .get(quote..text.len().saturating_sub(quote))
        .ok_or("unable to unescape string")?;
    if raw {
        return Ok(inner.as_bytes().to_vec());
    }
    let mut out = Vec::with_capacity(inner.len());
    let mut chars = inner.char_indices();
    while let Some((_, c)) = chars.next() {
        if c != '\\' {
            push_char(&mut out, c);
            continue;
        }
        let Some((_, e)) = chars.next() else {
            return Err("unable to unescape string, found '\\' as last character");
        };
        let simple = match e {
            'a' => Some('\u{7}'),
            'b' => Some('\u{8}'),
            'f' => Some('\u{c}'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\u{b}'),
            '\\' | '\'' | '"' | '`' | '?' => Some(e),
            _ => None,
        };
        if let Some(s) = simple {
            push_char(&mut out, s);
            continue;
        }
        let (len, radix) = match e {
            'x' | 'X' => (2, 16),
            'u' => (4, 16),
            'U' => (8, 16),
            '0'..='3' => (2, 8),
            _ => return Err("unable to unescape string"),
        };
        let mut value = if radix == 8 { e as u32 - '0' as u32 } else { 0 };
        for _ in 0..len {
            let digit = chars
                .next()
                .and_then(|(_, d)| d.to_digit(radix))
                .ok_or(if radix == 8 {
                    "unable to unescape octal sequence in string"
                } else {
                    "unable to unescape string"
                })?;
            value = value * radix + digit;
        }
        let byte_escape = matches!(e, 'x' | 'X' | '0'..='3');
        if bytes {
            if !byte_escape {
                return Err("unable to unescape string");
            }
            out.push(value as u8);
        } else {
            let c = char::from_u32(value).ok_or("invalid unicode code point")?;
            push_char(&mut out, c);
        }
    }
    Ok(out)
}

fn push_char(out: &mut Vec<u8>, c: char) {
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
}
