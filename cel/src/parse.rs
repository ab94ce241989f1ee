//! Parsing CEL source into [`crate::ast::Expr`], expanding macros as cel-go does.
//!
//! A recursive descent over cel-spec's grammar (`CEL.g4`) with the options Kubernetes enables
//! (optional syntax `a.?b`, `a[?i]`, `[?x]`, `{?k: v}`, `Msg{?f: v}`), building cel-go's tree:
//! operators are calls named as cel-go names them and macros are expanded as they are parsed
//! ([`macros`]).
//!
//! cel-go's limits hold, with its messages: an expression of more than 100,000 code points;
//! nesting one grammar rule deeper than 250 (`expression recursion limit exceeded: 250`, as
//! cel-go's ANTLR listener counts); more than 250 operators, selects, indexes or member calls
//! on one path of the tree (`max recursion depth exceeded`, as cel-go's visitor counts); more
//! than 100 syntax errors. So the tree's depth is bounded for the checker and interpreter too.
//! An expression nested deeper than a few levels is parsed on a thread of its own with a stack
//! large enough for the limits, so no caller's stack can overflow.
//!
//! Syntax errors are worded and located as ANTLR's (`Syntax error: mismatched input ')'
//! expecting ...`); like ANTLR, the lexer skips text it cannot read and the parser drops an
//! extraneous token and goes on, otherwise it stops at the first syntax error. Errors found in
//! accepted syntax (reserved identifiers, literals out of range, invalid macro arguments) are
//! all reported. Errors are listed by offset, as cel-go lists them.

mod grammar;

pub use grammar::RESERVED;
mod lexer;
mod literal;
mod macros;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use crate::Issue;
use crate::ast::{Expr, ExprKind, Literal};
use lexer::{Tok, Token};

/// cel-go's default limit on the size of an expression, in code points.
pub(crate) const EXPRESSION_SIZE_CODE_POINT_LIMIT: usize = 100_000;

/// cel-go's default limit on the nesting of one grammar rule.
pub(crate) const MAX_RECURSION_DEPTH: u32 = 250;

/// Parses `source`; on failure, every error found, by byte offset.
pub(crate) fn parse(source: &str) -> Result<Expr, Vec<Issue>> {
    let size = source.chars().count();
    if size > EXPRESSION_SIZE_CODE_POINT_LIMIT {
        return Err(vec![Issue {
            offset: 0,
            message: format!(
                "expression code point size exceeds limit: size: {size}, limit {EXPRESSION_SIZE_CODE_POINT_LIMIT}"
            ),
        }]);
    }
    let (tokens, unlexed) = lexer::tokenize(source)?;
    if nesting(&tokens) <= INLINE_NESTING {
        return parse_tokens(source, tokens, unlexed);
    }
    // Deep nesting (up to cel-go's limit) needs more stack than a caller's thread may have.
    let owned = source.to_string();
    let worker = std::thread::Builder::new()
        .name("cel-parse".to_string())
        .stack_size(PARSER_STACK_SIZE)
        .spawn(move || parse_tokens(&owned, tokens, unlexed));
    let failed = || {
        vec![Issue {
            offset: 0,
            message: "the parser could not run".to_string(),
        }]
    };
    match worker {
        Ok(handle) => handle.join().unwrap_or_else(|_| Err(failed())),
        Err(_) => Err(failed()),
    }
}

/// Nesting up to which the parser runs on the caller's thread.
const INLINE_NESTING: usize = 32;

/// The stack of the thread that parses more deeply nested expressions: enough for cel-go's
/// recursion limit with room to spare, even unoptimized.
const PARSER_STACK_SIZE: usize = 32 << 20;

/// An upper bound of the parser's recursion: the deepest nesting of brackets plus the number
/// of conditionals (each of which may nest its else branch).
fn nesting(tokens: &[Token]) -> usize {
    let mut depth = 0usize;
    let mut deepest = 0usize;
    let mut conditionals = 0usize;
    let mut previous = None;
    for token in tokens {
        let kind = Some(token.kind);
        match token.kind {
            Tok::LParen | Tok::LBracket | Tok::LBrace => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            Tok::RParen | Tok::RBracket | Tok::RBrace => depth = depth.saturating_sub(1),
            // Not the `?` of optional syntax (`.?f`, `[?i]`, `[?x]`, `{?k: v}`, `{?f: v}`).
            Tok::Question
                if !matches!(
                    previous,
                    Some(Tok::Dot | Tok::LBracket | Tok::LBrace | Tok::Comma)
                ) =>
            {
                conditionals += 1
            }
            _ => {}
        }
        previous = kind;
    }
    deepest + conditionals
}

/// Parses the tokens of `source`, after the lexer's errors `unlexed`.
fn parse_tokens(source: &str, tokens: Vec<Token>, unlexed: Vec<Issue>) -> Result<Expr, Vec<Issue>> {
    let mut parser = Parser {
        source,
        tokens,
        pos: 0,
        next_id: 1,
        depth: [0; 4],
        heights: vec![0],
        in_macro: false,
        errors: unlexed,
    };
    let result = parser.start();
    match result {
        Ok(expr) if parser.errors.is_empty() => Ok(expr),
        _ => {
            if parser.errors.is_empty() {
                parser.errors.push(Issue {
                    offset: 0,
                    message: "Syntax error: the expression could not be parsed".to_string(),
                });
            }
            // cel-go lists errors by location.
            parser.errors.sort_by_key(|e| e.offset);
            Err(parser.errors)
        }
    }
}

/// Parsing stopped at a syntax error (already recorded in [`Parser::errors`]).
#[derive(Debug)]
pub(super) struct Stop;

/// The result of a grammar rule.
pub(super) type Parsed<T> = Result<T, Stop>;

/// The grammar rules whose nesting is counted, as cel-go's recursion listener counts rules.
#[derive(Clone, Copy)]
pub(super) enum Rule {
    Expr = 0,
    Relation = 1,
    Calc = 2,
    Member = 3,
}

/// The parser's state: the tokens, the next node id, rule depths and the errors so far.
pub(super) struct Parser<'a> {
    source: &'a str,
    tokens: Vec<Token>,
    pos: usize,
    next_id: u32,
    depth: [u32; 4],
    /// By node id, the most operator, select, index and member call nodes on a path from the
    /// node down (cel-go's visitor counts them against its recursion limit).
    heights: Vec<u32>,
    /// Whether the nodes being made come from a macro's expansion (not from the source).
    pub(super) in_macro: bool,
    errors: Vec<Issue>,
}

impl Parser<'_> {
    /// A new node with a fresh id.
    pub(super) fn node(&mut self, offset: u32, kind: ExprKind) -> Expr {
        let id = self.next_id;
        self.next_id += 1;
        let height = self.height(&kind);
        self.heights.push(height);
        Expr { id, offset, kind }
    }

    /// A fresh id for a map entry or struct field.
    pub(super) fn id(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id += 1;
        self.heights.push(0);
        id
    }

    /// The height of a node of `kind` in the nodes cel-go's visitor counts.
    fn height(&self, kind: &ExprKind) -> u32 {
        let of = |e: &Expr| self.heights.get(e.id as usize).copied().unwrap_or(0);
        let (children, counted) = match kind {
            ExprKind::Literal(_) | ExprKind::Ident(_) => (0, false),
            ExprKind::Select { operand, .. } => (of(operand), true),
            ExprKind::Call {
                target,
                function,
                args,
            } => {
                let children = args.iter().chain(target.as_deref()).map(of).max();
                let operator = matches!(
                    &**function,
                    "_?_:_"
                        | "_==_"
                        | "_!=_"
                        | "_<_"
                        | "_<=_"
                        | "_>_"
                        | "_>=_"
                        | "@in"
                        | "_+_"
                        | "_-_"
                        | "_*_"
                        | "_/_"
                        | "_%_"
                        | "_[_]"
                        | "_[?_]"
                );
                let counted = !self.in_macro && (operator || target.is_some());
                (children.unwrap_or(0), counted)
            }
            ExprKind::List { elements, .. } => (elements.iter().map(of).max().unwrap_or(0), false),
            ExprKind::Map { entries } => {
                let children = entries.iter().flat_map(|e| [of(&e.key), of(&e.value)]);
                (children.max().unwrap_or(0), false)
            }
            ExprKind::Struct { fields, .. } => (
                fields.iter().map(|f| of(&f.value)).max().unwrap_or(0),
                false,
            ),
            ExprKind::Comprehension(c) => {
                let parts = [
                    &c.iter_range,
                    &c.accu_init,
                    &c.loop_condition,
                    &c.loop_step,
                    &c.result,
                ];
                (parts.into_iter().map(of).max().unwrap_or(0), true)
            }
        };
        children + u32::from(counted)
    }

    /// Stops parsing when `expr` is deeper than cel-go's visitor allows.
    pub(super) fn check_height(&mut self, expr: &Expr) -> Parsed<()> {
        let height = self.heights.get(expr.id as usize).copied().unwrap_or(0);
        if height <= MAX_RECURSION_DEPTH {
            return Ok(());
        }
        let message = "max recursion depth exceeded";
        if !self.errors.iter().any(|e| e.message == message) {
            self.errors.push(Issue {
                offset: 0,
                message: message.to_string(),
            });
        }
        Err(Stop)
    }

    /// A call of a global function.
    pub(super) fn call(&mut self, offset: u32, function: &str, args: Vec<Expr>) -> Expr {
        self.node(
            offset,
            ExprKind::Call {
                target: None,
                function: Arc::from(function),
                args,
            },
        )
    }

    /// A call with a receiver.
    pub(super) fn member_call(
        &mut self,
        offset: u32,
        function: &str,
        target: Expr,
        args: Vec<Expr>,
    ) -> Expr {
        self.node(
            offset,
            ExprKind::Call {
                target: Some(Box::new(target)),
                function: Arc::from(function),
                args,
            },
        )
    }

    pub(super) fn ident(&mut self, offset: u32, name: &str) -> Expr {
        self.node(offset, ExprKind::Ident(Arc::from(name)))
    }

    pub(super) fn literal(&mut self, offset: u32, literal: Literal) -> Expr {
        self.node(offset, ExprKind::Literal(literal))
    }

    /// Records an error that does not stop parsing (cel-go reports these after the syntax is
    /// accepted); the returned node stands in for the erroneous one.
    pub(super) fn report(&mut self, offset: u32, message: impl Into<String>) -> Expr {
        self.errors.push(Issue {
            offset,
            message: message.into(),
        });
        self.literal(offset, Literal::Null)
    }

    /// Parses with `rule` one level deeper; past cel-go's limit on the nesting of one rule,
    /// the error that stops parsing.
    pub(super) fn within(
        &mut self,
        rule: Rule,
        parse: impl FnOnce(&mut Self) -> Parsed<Expr>,
    ) -> Parsed<Expr> {
        let depth = &mut self.depth[rule as usize];
        if *depth >= MAX_RECURSION_DEPTH {
            self.errors.push(Issue {
                offset: 0,
                message: format!("expression recursion limit exceeded: {MAX_RECURSION_DEPTH}"),
            });
            return Err(Stop);
        }
        *depth += 1;
        let result = parse(self);
        self.depth[rule as usize] -= 1;
        let expr = result?;
        self.check_height(&expr)?;
        Ok(expr)
    }

    /// The current token.
    pub(super) fn peek(&self) -> Token {
        self.peek_at(0)
    }

    /// The token `n` after the current one (end of input past the last).
    pub(super) fn peek_at(&self, n: usize) -> Token {
        let last = self.tokens.len().saturating_sub(1);
        self.tokens
            .get((self.pos + n).min(last))
            .copied()
            .unwrap_or(Token {
                kind: Tok::Eof,
                start: self.source.len() as u32,
                end: self.source.len() as u32,
            })
    }

    /// Consumes the current token.
    pub(super) fn bump(&mut self) -> Token {
        let token = self.peek();
        if token.kind != Tok::Eof {
            self.pos += 1;
        }
        token
    }

    /// Consumes the current token if it is `kind`.
    pub(super) fn eat(&mut self, kind: Tok) -> Option<Token> {
        (self.peek().kind == kind).then(|| self.bump())
    }

    /// Consumes a token of `kind` or stops with ANTLR's error naming what was found.
    pub(super) fn expect(&mut self, kind: Tok) -> Parsed<Token> {
        if let Some(token) = self.eat(kind) {
            return Ok(token);
        }
        if self.recover(&[kind]) {
            return Ok(self.bump());
        }
        Err(Stop)
    }

    /// The text of a token.
    pub(super) fn text(&self, token: Token) -> &str {
        self.source
            .get(token.start as usize..token.end as usize)
            .unwrap_or("")
    }

    /// Records ANTLR's error for the current token where one of `expected` was wanted, and
    /// stops.
    pub(super) fn syntax_error(&mut self, expected: &[Tok]) -> Stop {
        self.report_syntax_error(expected);
        Stop
    }

    /// Records ANTLR's error for the current token where one of `expected` was wanted; when the
    /// token after it is wanted, drops the token as ANTLR does and says so.
    pub(super) fn recover(&mut self, expected: &[Tok]) -> bool {
        let extraneous = self.report_syntax_error(expected);
        if extraneous {
            self.bump();
        }
        extraneous
    }

    /// Records `extraneous input` when the token after the current one is wanted (and says
    /// so), `mismatched input` otherwise.
    fn report_syntax_error(&mut self, expected: &[Tok]) -> bool {
        let found = self.peek();
        let next = self.peek_at(1);
        let extraneous = found.kind != Tok::Eof && expected.contains(&next.kind);
        let what = if extraneous {
            "extraneous"
        } else {
            "mismatched"
        };
        let mut sorted = expected.to_vec();
        sorted.sort_by_key(|t| t.rank());
        sorted.dedup();
        let names: Vec<&str> = sorted.iter().map(|t| t.display()).collect();
        let wanted = match names.as_slice() {
            [one] => (*one).to_string(),
            many => format!("{{{}}}", many.join(", ")),
        };
        let message = format!(
            "Syntax error: {what} input '{}' expecting {wanted}",
            self.shown(found)
        );
        self.errors.push(Issue {
            offset: found.start,
            message,
        });
        extraneous
    }

    /// ANTLR's `no viable alternative` error, for the input from `from` to the current token.
    pub(super) fn no_viable_alternative(&mut self, from: u32) -> Stop {
        let found = self.peek();
        // ANTLR's text of the tokens from `from`, the end of input left out.
        let end = if found.kind == Tok::Eof {
            from as usize + 1
        } else {
            found.end as usize
        };
        let text = self.source.get(from as usize..end).unwrap_or("");
        self.errors.push(Issue {
            offset: found.start,
            message: format!(
                "Syntax error: no viable alternative at input '{}'",
                lexer::escape_text(text)
            ),
        });
        Stop
    }

    /// A token as ANTLR shows it in messages.
    fn shown(&self, token: Token) -> String {
        if token.kind == Tok::Eof {
            "<EOF>".to_string()
        } else {
            lexer::escape_text(self.text(token))
        }
    }
}
