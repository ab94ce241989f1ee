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

impl Expr {
    /// The field paths through which this expression reads variable `name`: each use of it as
    /// the root of a chain of field selections (`name.a.b`, `has(name.a.b)`, `name.?a`) or of
    /// indexes by a string literal (`name.a['b']`) gives the chain's path, and the expression
    /// reads nothing of the variable but what lies at or below those paths. `None` when it
    /// uses the variable otherwise (whole, as an argument, as a comprehension's range), or a
    /// dotted name starting with it; what a comprehension variable of the same name shadows
    /// does not count.
    pub fn selected_paths(&self, name: &str) -> Option<Vec<Vec<Arc<str>>>> {
        let mut paths = Vec::new();
        // (node, whether `name` is shadowed there); an explicit stack, so no recursion.
        let mut pending: Vec<(&Expr, bool)> = vec![(self, false)];
        while let Some((node, shadowed)) = pending.pop() {
            if !shadowed && let Some(path) = node.path_from(name) {
                paths.push(path);
                continue;
            }
            match &node.kind {
                ExprKind::Literal(_) => {}
                ExprKind::Ident(ident) => {
                    let root = ident.split('.').next().unwrap_or(ident);
                    if !shadowed && (&**ident == name || root == name) {
                        return None;
                    }
                }
                ExprKind::Select { operand, .. } => pending.push((operand, shadowed)),
                ExprKind::Call { target, args, .. } => {
                    pending.extend(target.iter().map(|t| (&**t, shadowed)));
                    pending.extend(args.iter().map(|arg| (arg, shadowed)));
                }
                ExprKind::List { elements, .. } => {
                    pending.extend(elements.iter().map(|e| (e, shadowed)));
                }
                ExprKind::Map { entries } => {
                    for entry in entries {
                        pending.push((&entry.key, shadowed));
                        pending.push((&entry.value, shadowed));
                    }
                }
                ExprKind::Struct { fields, .. } => {
                    pending.extend(fields.iter().map(|f| (&f.value, shadowed)));
                }
                ExprKind::Comprehension(c) => {
                    let by_accu = shadowed || &*c.accu_var == name;
                    let by_iter =
                        by_accu || &*c.iter_var == name || c.iter_var2.as_deref() == Some(name);
                    pending.push((&c.iter_range, shadowed));
                    pending.push((&c.accu_init, shadowed));
                    pending.push((&c.loop_condition, by_iter));
                    pending.push((&c.loop_step, by_iter));
                    pending.push((&c.result, by_accu));
                }
            }
        }
        Some(paths)
    }

    /// The path of fields this node selects from variable `name`, when it is such a chain
    /// with at least one step.
    fn path_from(&self, name: &str) -> Option<Vec<Arc<str>>> {
        let mut path = Vec::new();
        let mut node = self;
        loop {
            match &node.kind {
                ExprKind::Ident(ident) if &**ident == name && !path.is_empty() => {
                    path.reverse();
                    return Some(path);
                }
                ExprKind::Select { operand, field, .. } => {
                    path.push(field.clone());
                    node = operand;
                }
                ExprKind::Call {
                    target: None,
                    function,
                    args,
                } if matches!(&**function, "_[_]" | "_[?_]") && args.len() == 2 => {
                    let ExprKind::Literal(Literal::String(key)) = &args[1].kind else {
                        return None;
                    };
                    path.push(key.clone());
                    node = &args[0];
                }
                _ => return None,
            }
        }
    }
}

/// The accumulator variable cel-go's macros use (`@result`), which no user name can shadow.
pub const ACCUMULATOR: &str = "@result";
