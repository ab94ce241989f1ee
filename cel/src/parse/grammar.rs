//! The rules of cel-spec's grammar (`CEL.g4`), one method each, building cel-go's tree.
//!
//! Node offsets are the tokens cel-go locates nodes at: an operator's token for operators
//! (the first `!` or `-` of a unary run, the `?` of a conditional), the `.` of a select, the
//! `(` of a call, the `[` of an index or list, the `{` of a map or message, a literal's first
//! character (its sign for a negative number) and an identifier's name.

use std::sync::Arc;

use super::lexer::{Tok, Token};
use super::literal;
use super::{Parsed, Parser, Rule, Stop};
use crate::ast::{Expr, ExprKind, Literal, MapEntry, StructField};

/// What ANTLR lists as expected where an expression must start.
const EXPRESSION_START: &[Tok] = &[
    Tok::LBracket,
    Tok::LBrace,
    Tok::LParen,
    Tok::Dot,
    Tok::Minus,
    Tok::Not,
    Tok::True,
    Tok::False,
    Tok::Null,
    Tok::Double,
    Tok::Int,
    Tok::Uint,
    Tok::String,
    Tok::Bytes,
    Tok::Ident,
];

/// What may start an element of a list or an entry of a map: an expression or `?`.
const ELEMENT_START: &[Tok] = &[
    Tok::Question,
    Tok::LBracket,
    Tok::LBrace,
    Tok::LParen,
    Tok::Dot,
    Tok::Minus,
    Tok::Not,
    Tok::True,
    Tok::False,
    Tok::Null,
    Tok::Double,
    Tok::Int,
    Tok::Uint,
    Tok::String,
    Tok::Bytes,
    Tok::Ident,
];

/// What may start a field of a message: a name or `?`.
const FIELD_START: &[Tok] = &[Tok::Question, Tok::Ident, Tok::EscIdent];

/// cel-go's reserved identifiers: not variables or functions, though valid field names.
pub const RESERVED: &[&str] = &[
    "as",
    "break",
    "const",
    "continue",
    "else",
    "false",
    "for",
    "function",
    "if",
    "import",
    "in",
    "let",
    "loop",
    "package",
    "namespace",
    "null",
    "return",
    "true",
    "var",
    "void",
    "while",
];

impl Parser<'_> {
    /// `start: expr EOF`.
    pub(super) fn start(&mut self) -> Parsed<Expr> {
        let expr = self.expr()?;
        if self.peek().kind != Tok::Eof && !self.recover(&[Tok::Eof]) {
            return Err(Stop);
        }
        Ok(expr)
    }

    /// `expr: conditionalOr ('?' conditionalOr ':' expr)?`.
    pub(super) fn expr(&mut self) -> Parsed<Expr> {
        self.within(Rule::Expr, Self::conditional)
    }

    fn conditional(&mut self) -> Parsed<Expr> {
        let condition = self.logical(Tok::Or)?;
        let Some(question) = self.eat(Tok::Question) else {
            return Ok(condition);
        };
        let if_true = self.logical(Tok::Or)?;
        self.expect(Tok::Colon)?;
        let if_false = self.expr()?;
        Ok(self.call(question.start, "_?_:_", vec![condition, if_true, if_false]))
    }

    /// `conditionalOr` (`op` is `||`) and `conditionalAnd` (`&&`): a run of terms, built as
    /// cel-go's balanced tree.
    fn logical(&mut self, op: Tok) -> Parsed<Expr> {
        let term = |p: &mut Self| {
            if op == Tok::Or {
                p.logical(Tok::And)
            } else {
                p.relation(0)
            }
        };
        let mut terms = vec![term(self)?];
        let mut ops = Vec::new();
        while let Some(token) = self.eat(op) {
            ops.push(token.start);
            terms.push(term(self)?);
        }
        let function = if op == Tok::Or { "_||_" } else { "_&&_" };
        Ok(self.balance(function, terms, &ops))
    }

    /// cel-go's balanced tree of a commutative operator over `terms` joined by `ops` (its
    /// depth is logarithmic in the number of terms).
    fn balance(&mut self, function: &str, terms: Vec<Expr>, ops: &[u32]) -> Expr {
        let mut slots: Vec<Option<Expr>> = terms.into_iter().map(Some).collect();
        if ops.is_empty() {
            return self.take(&mut slots, 0);
        }
        self.balanced(function, &mut slots, ops, 0, ops.len() - 1)
    }

    fn balanced(
        &mut self,
        function: &str,
        terms: &mut [Option<Expr>],
        ops: &[u32],
        lo: usize,
        hi: usize,
    ) -> Expr {
        let mid = (lo + hi).div_ceil(2);
        let left = if mid == lo {
            self.take(terms, mid)
        } else {
            self.balanced(function, terms, ops, lo, mid - 1)
        };
        let right = if mid == hi {
            self.take(terms, mid + 1)
        } else {
            self.balanced(function, terms, ops, mid + 1, hi)
        };
        let offset = ops.get(mid).copied().unwrap_or(0);
        self.call(offset, function, vec![left, right])
    }

    fn take(&mut self, terms: &mut [Option<Expr>], i: usize) -> Expr {
        match terms.get_mut(i).and_then(Option::take) {
            Some(term) => term,
            None => self.literal(0, Literal::Null),
        }
    }

    /// `relation: calc | relation ('<'|'<='|'>='|'>'|'=='|'!='|'in') relation`.
    fn relation(&mut self, precedence: u8) -> Parsed<Expr> {
        self.within(Rule::Relation, |p| p.relation_chain(precedence))
    }

    fn relation_chain(&mut self, precedence: u8) -> Parsed<Expr> {
        let mut lhs = self.calc(0)?;
        if precedence > 0 {
            return Ok(lhs);
        }
        loop {
            let function = match self.peek().kind {
                Tok::Lt => "_<_",
                Tok::Le => "_<=_",
                Tok::Gt => "_>_",
                Tok::Ge => "_>=_",
                Tok::Eq => "_==_",
                Tok::Ne => "_!=_",
                Tok::In => "@in",
                _ => return Ok(lhs),
            };
            let op = self.bump();
            let rhs = self.relation(1)?;
            lhs = self.call(op.start, function, vec![lhs, rhs]);
            self.check_height(&lhs)?;
        }
    }

    /// `calc: unary | calc ('*'|'/'|'%') calc | calc ('+'|'-') calc`, left-associative.
    fn calc(&mut self, precedence: u8) -> Parsed<Expr> {
        self.within(Rule::Calc, |p| p.calc_chain(precedence))
    }

    fn calc_chain(&mut self, precedence: u8) -> Parsed<Expr> {
        let mut lhs = self.unary()?;
        loop {
            let (level, function) = match self.peek().kind {
                Tok::Star => (2, "_*_"),
                Tok::Slash => (2, "_/_"),
                Tok::Percent => (2, "_%_"),
                Tok::Plus => (1, "_+_"),
                Tok::Minus => (1, "_-_"),
                _ => return Ok(lhs),
            };
            if level < precedence {
                return Ok(lhs);
            }
            let op = self.bump();
            let rhs = self.calc(level + 1)?;
            lhs = self.call(op.start, function, vec![lhs, rhs]);
            self.check_height(&lhs)?;
        }
    }

    /// `unary: member | '!'+ member | '-'+ member`; an even run of operators cancels out, and
    /// a single `-` before a number is the number's sign.
    fn unary(&mut self) -> Parsed<Expr> {
        let first = self.peek();
        if !matches!(first.kind, Tok::Not | Tok::Minus) {
            return self.member();
        }
        if first.kind == Tok::Minus && matches!(self.peek_at(1).kind, Tok::Int | Tok::Double) {
            return self.member();
        }
        let mut count = 0usize;
        while self.eat(first.kind).is_some() {
            count += 1;
        }
        let operand = self.member()?;
        if count.is_multiple_of(2) {
            return Ok(operand);
        }
        let function = if first.kind == Tok::Not { "!_" } else { "-_" };
        Ok(self.call(first.start, function, vec![operand]))
    }

    /// `member: primary | member '.' '?'? IDENTIFIER | member '.' IDENTIFIER '(' args ')' |
    /// member '[' '?'? expr ']'`.
    fn member(&mut self) -> Parsed<Expr> {
        self.within(Rule::Member, Self::member_chain)
    }

    fn member_chain(&mut self) -> Parsed<Expr> {
        let mut operand = self.primary()?;
        loop {
            let token = self.peek();
            match token.kind {
                Tok::Dot => {
                    self.bump();
                    let optional = self.eat(Tok::Question).is_some();
                    if !optional && !matches!(self.peek().kind, Tok::Ident | Tok::EscIdent) {
                        return Err(self.no_viable_alternative(token.start));
                    }
                    let name = self.field_name()?;
                    let field = self.text(name).to_string();
                    if !optional && self.peek().kind == Tok::LParen {
                        let open = self.bump();
                        let args = self.arguments()?;
                        operand = self.call_or_macro(open.start, &field, Some(operand), args);
                    } else {
                        operand = self.node(
                            token.start,
                            ExprKind::Select {
                                operand: Box::new(operand),
                                field: Arc::from(field),
                                test_only: false,
                                optional,
                            },
                        );
                    }
                }
                Tok::LBracket => {
                    self.bump();
                    let optional = self.eat(Tok::Question).is_some();
                    let index = self.expr()?;
                    self.expect(Tok::RBracket)?;
                    let function = if optional { "_[?_]" } else { "_[_]" };
                    operand = self.call(token.start, function, vec![operand, index]);
                }
                _ => return Ok(operand),
            }
            self.check_height(&operand)?;
        }
    }

    /// A field name, where cel-go's grammar also allows a backquoted one, which it refuses
    /// unless the escape syntax is enabled (Kubernetes does not enable it).
    fn field_name(&mut self) -> Parsed<Token> {
        if let Some(escaped) = self.eat(Tok::EscIdent) {
            self.report(escaped.start, "unsupported syntax: '`'");
            return Ok(escaped);
        }
        if self.peek().kind == Tok::Ident {
            return Ok(self.bump());
        }
        Err(self.syntax_error(&[Tok::Ident, Tok::EscIdent]))
    }

    /// The arguments of a call after its `(`, through the `)`: `expr (',' expr)*`, no
    /// trailing comma.
    fn arguments(&mut self) -> Parsed<Vec<Expr>> {
        let mut args = Vec::new();
        if self.eat(Tok::RParen).is_some() {
            return Ok(args);
        }
        if !EXPRESSION_START.contains(&self.peek().kind) {
            let mut expected = EXPRESSION_START.to_vec();
            expected.push(Tok::RParen);
            return Err(self.syntax_error(&expected));
        }
        loop {
            args.push(self.expr()?);
            loop {
                if self.eat(Tok::Comma).is_some() {
                    break;
                }
                if self.eat(Tok::RParen).is_some() {
                    return Ok(args);
                }
                if !self.recover(&[Tok::RParen, Tok::Comma]) {
                    return Err(Stop);
                }
            }
        }
    }

    /// A call, or the expansion of the macro it names.
    fn call_or_macro(
        &mut self,
        offset: u32,
        function: &str,
        target: Option<Expr>,
        args: Vec<Expr>,
    ) -> Expr {
        self.in_macro = true;
        let expanded = self.expand_macro(offset, function, target, args);
        self.in_macro = false;
        match expanded {
            Ok(expr) => expr,
            Err((Some(target), args)) => self.member_call(offset, function, target, args),
            Err((None, args)) => self.call(offset, function, args),
        }
    }

    /// `primary`: identifiers, global calls, parentheses, lists, maps, messages, literals (a
    /// number's literal may have a `-` sign).
    fn primary(&mut self) -> Parsed<Expr> {
        let mut token = self.peek();
        let mut sign = None;
        if token.kind == Tok::Minus && matches!(self.peek_at(1).kind, Tok::Int | Tok::Double) {
            sign = Some(self.bump().start);
            token = self.peek();
        }
        match token.kind {
            Tok::Dot | Tok::Ident => self.name(),
            Tok::LParen => {
                self.bump();
                let expr = self.expr()?;
                self.expect(Tok::RParen)?;
                Ok(expr)
            }
            Tok::LBracket => self.list(),
            Tok::LBrace => self.map_literal(),
            Tok::Int => {
                self.bump();
                let negative = sign.is_some();
                let offset = sign.unwrap_or(token.start);
                Ok(match literal::int(self.text(token), negative) {
                    Some(value) => self.literal(offset, Literal::Int(value)),
                    None => self.report(offset, "invalid int literal"),
                })
            }
            Tok::Double => {
                self.bump();
                let offset = sign.unwrap_or(token.start);
                Ok(match literal::double(self.text(token), sign.is_some()) {
                    Some(value) => self.literal(offset, Literal::Double(value)),
                    None => self.report(offset, "invalid double literal"),
                })
            }
            Tok::Uint => {
                self.bump();
                Ok(match literal::uint(self.text(token)) {
                    Some(value) => self.literal(token.start, Literal::Uint(value)),
                    None => self.report(token.start, "invalid uint literal"),
                })
            }
            Tok::String | Tok::Bytes => {
                self.bump();
                let bytes = token.kind == Tok::Bytes;
                let decoded = literal::unquote(self.text(token), bytes);
                Ok(match decoded {
                    Ok(value) if bytes => self.literal(token.start, Literal::Bytes(value.into())),
                    Ok(value) => {
                        let text = String::from_utf8_lossy(&value).into_owned();
                        self.literal(token.start, Literal::String(text.into()))
                    }
                    Err(message) => self.report(token.start, message),
                })
            }
            Tok::True | Tok::False => {
                self.bump();
                Ok(self.literal(token.start, Literal::Bool(token.kind == Tok::True)))
            }
            Tok::Null => {
                self.bump();
                Ok(self.literal(token.start, Literal::Null))
            }
            _ => {
                if self.recover(EXPRESSION_START) {
                    return self.primary();
                }
                Err(Stop)
            }
        }
    }

    /// `.`? IDENTIFIER: an identifier, a global call, or (`a.b.C{...}`) a message.
    fn name(&mut self) -> Parsed<Expr> {
        let start = self.peek().start;
        let leading_dot = self.eat(Tok::Dot).is_some();
        // A message when a qualified name is followed by `{`.
        let mut n = 0;
        loop {
            if self.peek_at(n).kind != Tok::Ident {
                break;
            }
            match self.peek_at(n + 1).kind {
                Tok::Dot => n += 2,
                Tok::LBrace => return self.message(leading_dot),
                _ => break,
            }
        }
        let id = self.expect(Tok::Ident)?;
        let text = self.text(id).to_string();
        let name = if leading_dot {
            format!(".{text}")
        } else {
            text.clone()
        };
        let reserved = RESERVED.contains(&text.as_str());
        if self.peek().kind == Tok::LParen {
            let open = self.bump();
            let args = self.arguments()?;
            if reserved {
                return Ok(self.report(start, format!("reserved identifier: {text}")));
            }
            return Ok(self.call_or_macro(open.start, &name, None, args));
        }
        if reserved {
            return Ok(self.report(start, format!("reserved identifier: {text}")));
        }
        Ok(self.ident(id.start, &name))
    }

    /// `a.b.C{field: value, ?field: value}`, the name's first identifier current.
    fn message(&mut self, leading_dot: bool) -> Parsed<Expr> {
        let mut type_name = if leading_dot {
            ".".to_string()
        } else {
            String::new()
        };
        loop {
            let id = self.expect(Tok::Ident)?;
            type_name.push_str(self.text(id));
            if self.eat(Tok::Dot).is_none() {
                break;
            }
            type_name.push('.');
        }
        let open = self.expect(Tok::LBrace)?;
        let mut fields = Vec::new();
        self.sequence(Tok::RBrace, FIELD_START, |p| {
            let optional = p.eat(Tok::Question).is_some();
            let name = p.field_name()?;
            let name = Arc::from(p.text(name));
            p.expect(Tok::Colon)?;
            let value = p.expr()?;
            let id = p.id();
            fields.push(StructField {
                id,
                name,
                value,
                optional,
            });
            Ok(())
        })?;
        Ok(self.node(
            open.start,
            ExprKind::Struct {
                type_name: Arc::from(type_name),
                fields,
            },
        ))
    }

    /// `[elements]`, the `[` current.
    fn list(&mut self) -> Parsed<Expr> {
        let open = self.bump();
        let mut elements = Vec::new();
        let mut optional_indices = Vec::new();
        self.sequence(Tok::RBracket, ELEMENT_START, |p| {
            if p.eat(Tok::Question).is_some() {
                optional_indices.push(elements.len() as u32);
            }
            elements.push(p.expr()?);
            Ok(())
        })?;
        Ok(self.node(
            open.start,
            ExprKind::List {
                elements,
                optional_indices,
            },
        ))
    }

    /// `{key: value, ?key: value}`, the `{` current.
    fn map_literal(&mut self) -> Parsed<Expr> {
        let open = self.bump();
        let mut entries = Vec::new();
        self.sequence(Tok::RBrace, ELEMENT_START, |p| {
            let optional = p.eat(Tok::Question).is_some();
            let key = p.expr()?;
            p.expect(Tok::Colon)?;
            let value = p.expr()?;
            let id = p.id();
            entries.push(MapEntry {
                id,
                key,
                value,
                optional,
            });
            Ok(())
        })?;
        Ok(self.node(open.start, ExprKind::Map { entries }))
    }

    /// Items separated by commas up to `close`: `item (',' item)* ','? close`, or `','? close`
    /// when empty, as the grammar allows; `start` is what may begin an item.
    fn sequence(
        &mut self,
        close: Tok,
        start: &[Tok],
        mut item: impl FnMut(&mut Self) -> Parsed<()>,
    ) -> Parsed<()> {
        if self.peek().kind == Tok::Comma && self.peek_at(1).kind == close {
            self.bump();
        }
        if self.eat(close).is_some() {
            return Ok(());
        }
        if !start.contains(&self.peek().kind) {
            let mut expected = start.to_vec();
            expected.extend([close, Tok::Comma]);
            return Err(self.syntax_error(&expected));
        }
        loop {
            item(self)?;
            loop {
                let comma = self.eat(Tok::Comma).is_some();
                if self.eat(close).is_some() {
                    return Ok(());
                }
                if comma {
                    break;
                }
                if !self.recover(&[close, Tok::Comma]) {
                    return Err(Stop);
                }
            }
        }
    }
}
