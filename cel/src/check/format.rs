//! The strings extension's compile-time check of `'<literal>'.format([<list literal>])` (cel-go
//! `stringFormatValidator`, which the strings library at version 2 installs): the format
//! string must parse, each clause must fit the type of its argument, and no argument may be
//! left over. Messages are cel-go's.

use std::collections::HashMap;

use super::types::Ty;
use crate::Issue;
use crate::ast::{Expr, ExprKind, Literal};

/// Checks one `format` call if it has a literal format string and a list literal argument.
pub(super) fn check_call(
    call: &Expr,
    target: Option<&Expr>,
    args: &[Expr],
    types: &HashMap<u32, Ty>,
    issues: &mut Vec<Issue>,
) {
    let Some(Expr {
        kind: ExprKind::Literal(Literal::String(format)),
        ..
    }) = target
    else {
        return;
    };
    let [
        Expr {
            kind: ExprKind::List { elements, .. },
            ..
        },
    ] = args
    else {
        return;
    };
    let mut checker = Checker {
        args: elements,
        types,
        requested: 0,
    };
    match checker.parse(format) {
        Err((offset, message)) => issues.push(Issue {
            offset: offset.unwrap_or(call.offset),
            message,
        }),
        Ok(()) if elements.len() > checker.requested => issues.push(Issue {
            offset: call.offset,
            message: format!(
                "too many arguments supplied to string.format (expected {}, got {})",
                checker.requested,
                elements.len()
            ),
        }),
        Ok(()) => {}
    }
}

/// An error at an argument's offset, or (`None`) at the call's.
type Failure = (Option<u32>, String);

struct Checker<'a> {
    args: &'a [Expr],
    types: &'a HashMap<u32, Ty>,
    requested: usize,
}

/// The clause kinds and the kinds of types each accepts.
#[derive(Clone, Copy)]
enum Clause {
    String,
    Decimal,
    Fixed,
    Scientific,
    Binary,
    Hex,
    Octal,
}

impl Checker<'_> {
    fn parse(&mut self, format: &str) -> Result<(), Failure> {
        let bytes = format.as_bytes();
        let mut i = 0;
        let mut index = 0;
        while i < bytes.len() {
            if bytes[i] != b'%' {
                i += 1;
                continue;
            }
            if bytes.get(i + 1) == Some(&b'%') {
                i += 2;
                continue;
            }
            self.requested += 1;
            if i + 1 >= bytes.len() {
                return Err((None, "unexpected end of string".to_string()));
            }
            if index >= self.args.len() {
                return Err((None, format!("index {index} out of range")));
            }
            let (read, clause) = parse_clause(&bytes[i + 1..])
                .map_err(|err| (None, format!("could not parse formatting clause: {err}")))?;
            self.verify(clause, &self.args[index])
                .map_err(|(offset, err)| (offset, format!("error during formatting: {err}")))?;
            i += 1 + read;
            index += 1;
        }
        Ok(())
    }

    fn type_of(&self, expr: &Expr) -> Ty {
        self.types.get(&expr.id).cloned().unwrap_or(Ty::Dyn)
    }

    fn verify(&self, clause: Clause, arg: &Expr) -> Result<(), Failure> {
        let t = self.type_of(arg);
        let fits = |allowed: &dyn Fn(&Ty) -> bool| t == Ty::Dyn || allowed(&t);
        let (ok, what) = match clause {
            Clause::String => return self.verify_string(arg),
            Clause::Decimal => (
                fits(&|t| matches!(t, Ty::Int | Ty::Uint)),
                "decimal clause can only be used on integers",
            ),
            Clause::Fixed => (
                fits(&|t| matches!(t, Ty::Double | Ty::String)),
                "fixed-point clause can only be used on doubles",
            ),
            Clause::Scientific => (
                fits(&|t| matches!(t, Ty::Double | Ty::String)),
                "scientific clause can only be used on doubles",
            ),
            Clause::Binary => (
                fits(&|t| matches!(t, Ty::Int | Ty::Uint | Ty::Bool)),
                "only integers and bools can be formatted as binary",
            ),
            Clause::Hex => (
                fits(&|t| matches!(t, Ty::Int | Ty::Uint | Ty::String | Ty::Bytes)),
                "only integers, byte buffers, and strings can be formatted as hex",
            ),
            Clause::Octal => (
                fits(&|t| matches!(t, Ty::Int | Ty::Uint)),
                "octal clause can only be used on integers",
            ),
        };
        if ok {
            Ok(())
        } else {
            Err((
                Some(arg.offset),
                format!("{what}, was given {}", runtime_name(&t)),
            ))
        }
    }

    /// `%s` takes scalars, types, durations, timestamps and aggregates of them (literal
    /// aggregates are checked element by element).
    fn verify_string(&self, arg: &Expr) -> Result<(), Failure> {
        let mut pending = vec![arg];
        while let Some(e) = pending.pop() {
            let t = self.type_of(e);
            let ok = matches!(
                t,
                Ty::Dyn
                    | Ty::List(_)
                    | Ty::Map(..)
                    | Ty::Int
                    | Ty::Uint
                    | Ty::Double
                    | Ty::Bool
                    | Ty::String
                    | Ty::Timestamp
                    | Ty::Bytes
                    | Ty::Duration
                    | Ty::Type(_)
                    | Ty::Null
            );
            if !ok {
                return Err((
                    Some(e.offset),
                    format!(
                        "string clause can only be used on strings, bools, bytes, ints, doubles, \
                         maps, lists, types, durations, and timestamps, was given {}",
                        runtime_name(&t)
                    ),
                ));
            }
            match &e.kind {
                ExprKind::List { elements, .. } => pending.extend(elements.iter().rev()),
                ExprKind::Map { entries } => {
                    for entry in entries.iter().rev() {
                        pending.push(&entry.value);
                        pending.push(&entry.key);
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// A clause after its `%`: an optional `.precision`, then the verb; the bytes read.
fn parse_clause(s: &[u8]) -> Result<(usize, Clause), String> {
    let mut i = 0;
    if s.first() == Some(&b'.') {
        i = 1;
        loop {
            match s.get(i) {
                None => {
                    return Err(
                        "error while parsing precision: could not find end of precision \
                                specifier"
                            .to_string(),
                    );
                }
                Some(b) if b.is_ascii_digit() => i += 1,
                Some(_) => break,
            }
        }
        if i == 1 {
            return Err(
                "error while parsing precision: error while converting precision to \
                        integer: strconv.Atoi: parsing \"\": invalid syntax"
                    .to_string(),
            );
        }
    }
    let Some(&verb) = s.get(i) else {
        return Err("unexpected end of string".to_string());
    };
    let clause = match verb {
        b's' => Clause::String,
        b'd' => Clause::Decimal,
        b'f' => Clause::Fixed,
        b'e' => Clause::Scientific,
        b'b' => Clause::Binary,
        b'x' | b'X' => Clause::Hex,
        b'o' => Clause::Octal,
        // cel-go prints the byte as a rune, as this does.
        _ => {
            return Err(format!(
                "unrecognized formatting clause \"{}\"",
                char::from(verb)
            ));
        }
    };
    Ok((i + 1, clause))
}

/// The runtime type name cel-go's messages use (`Type.TypeName()`).
fn runtime_name(t: &Ty) -> String {
    match t {
        Ty::List(_) => "list".to_string(),
        Ty::Map(..) => "map".to_string(),
        Ty::Optional(_) => "optional_type".to_string(),
        Ty::Type(_) => "type".to_string(),
        Ty::Null => "null_type".to_string(),
        other => other.to_type().to_string(),
    }
}
