//! The expression tree the parser produces and the checker and interpreter walk.
//!
//! It is cel-go's: operators are calls with cel-go's function names (`_+_`, `_&&_`, `_[_]`,
//! `@in`, `_?_:_`), and the macros (`has`, `all`, `exists`, `exists_one`, `map`, `filter`,
//! the two-variable forms, `optMap`, `optFlatMap`) are expanded at parse time into
//! [`ExprKind::Comprehension`] or a test-only [`ExprKind::Select`], so the checker, the cost
//! estimator and the interpreter see few node kinds, as upstream's do.

use std::sync::Arc;

/// A node, with the byte offset in the source its error messages point at.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// Unique within one parsed expression; the checker keys its types by it.
    pub id: u32,
    /// Byte offset into the source of the token that made this node (cel-go's "location").
    pub offset: u32,
    pub kind: ExprKind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Literal(Literal),
    /// A variable or a (possibly qualified) name: `self`, `oldSelf`, `int`.
    Ident(Arc<str>),
    /// `operand.field`; `test_only` for `has(operand.field)`; `optional` for `operand.?field`.
    Select {
        operand: Box<Expr>,
        field: Arc<str>,
        test_only: bool,
        optional: bool,
    },
    /// `function(args)` or `target.function(args)`; operators are calls (`_+_`, `!_`, `-_`,
    /// `_[_]`, `_[?_]`, `@in`, `_?_:_`, `_&&_`, `_||_`, `@not_strictly_false`).
    Call {
        target: Option<Box<Expr>>,
        function: Arc<str>,
        args: Vec<Expr>,
    },
    /// `[a, ?b]`: `optional_indices` are the elements written with `?`.
    List {
        elements: Vec<Expr>,
        optional_indices: Vec<u32>,
    },
    /// `{k: v, ?k2: v2}`.
    Map {
        entries: Vec<MapEntry>,
    },
    /// `Name{field: value}` (message construction; Kubernetes declares no message types, so
    /// the checker refuses it, but the parser accepts it as cel-go's does).
    Struct {
        type_name: Arc<str>,
        fields: Vec<StructField>,
    },
    /// A fold, as cel-go expands macros: iterate `range` binding `iter_var` (and `iter_var2`
    /// for two-variable comprehensions: index or key, then value), starting from
    /// `accu_init` bound to `accu_var`, while `loop_condition` holds, replacing the
    /// accumulator by `loop_step`; the value is `result`.
    Comprehension(Box<Comprehension>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Comprehension {
    pub iter_var: Arc<str>,
    pub iter_var2: Option<Arc<str>>,
    pub iter_range: Expr,
    pub accu_var: Arc<str>,
    pub accu_init: Expr,
    pub loop_condition: Expr,
    pub loop_step: Expr,
    pub result: Expr,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MapEntry {
    pub id: u32,
    pub key: Expr,
    pub value: Expr,
    pub optional: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct StructField {
    pub id: u32,
    pub name: Arc<str>,
    pub value: Expr,
    pub optional: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    String(Arc<str>),
    Bytes(Arc<[u8]>),
}

impl Expr {
    /// The dotted name a chain of plain selections on an identifier spells (`a.b.c`), which
    /// may name a qualified function or type (`optional.of`, `net.IP`); `None` for anything
    /// else, and for chains longer than 32 names (no name is that long).
    pub fn dotted_name(&self) -> Option<String> {
        let mut parts = Vec::new();
        let mut node = self;
        loop {
            match &node.kind {
                ExprKind::Ident(name) => {
                    parts.push(&**name);
                    break;
                }
                ExprKind::Select {
                    operand,
                    field,
                    test_only: false,
                    optional: false,
                } if parts.len() < 32 => {
                    parts.push(&**field);
                    node = operand;
                }
                _ => return None,
            }
        }
        parts.reverse();
        Some(parts.join("."))
    }
}

/// The accumulator variable cel-go's macros use (`@result`), which no user name can shadow.
pub const ACCUMULATOR: &str = "@result";
