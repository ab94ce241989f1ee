//! Macro expansion as cel-go's parser does it: calls of `has`, `all`, `exists`, `exists_one`
//! (`existsOne`), `map` and `filter` (cel-go's `parser/macro.go`), the two-variable
//! comprehensions of cel-go's `ext` library (`all`, `exists`, `existsOne`, `transformList`,
//! `transformMap`, `transformMapEntry` with two iteration variables), the optional library's
//! `optMap` and `optFlatMap`, and `sortBy` of `ext` lists version 3, which Kubernetes 1.35
//! enables, become comprehensions or a test-only select as they are parsed. (`cel.bind` is
//! not expanded: Kubernetes' base environment does not enable cel-go's bindings.)
//!
//! The nodes a macro makes are located at the call's `(`; an invalid argument is an error at
//! the argument, in cel-go's words.

use std::sync::Arc;

use super::Parser;
use crate::ast::{ACCUMULATOR, Comprehension, Expr, ExprKind, Literal};

/// The accumulator name of older cel-go macros, which an iteration variable may not take.
const LEGACY_ACCUMULATOR: &str = "__result__";

/// The iteration variable of comprehensions that iterate nothing (`optMap`, `sortBy`).
const UNUSED_ITER_VAR: &str = "#unused";

/// The variable `sortBy` binds its target to.
const SORT_BY_INPUT: &str = "@__sortBy_input__";

#[derive(Clone, Copy)]
enum Quantifier {
    All,
    Exists,
    ExistsOne,
}

/// The loop of one comprehension, before its node is made.
struct Fold {
    range: Expr,
    iter_var: Arc<str>,
    iter_var2: Option<Arc<str>>,
    accu_var: Arc<str>,
    accu_init: Expr,
    condition: Expr,
    step: Expr,
    result: Expr,
}

/// A call that names no macro, given back unchanged.
type NotMacro = (Option<Expr>, Vec<Expr>);

impl Parser<'_> {
    /// The expansion of `target.function(args)` (or `function(args)` without a target) when it
    /// is a macro; otherwise the target and arguments, back.
    pub(super) fn expand_macro(
        &mut self,
        at: u32,
        function: &str,
        target: Option<Expr>,
        args: Vec<Expr>,
    ) -> Result<Expr, NotMacro> {
        let Some(target) = target else {
            return match (function, args.len()) {
                ("has", 1) => Ok(self.has(at, args)),
                _ => Err((None, args)),
            };
        };
        let expanded = match (function, args.len()) {
            ("all", 2) => self.quantifier(at, Quantifier::All, target, args),
            ("exists", 2) => self.quantifier(at, Quantifier::Exists, target, args),
            ("exists_one" | "existsOne", 2) => {
                self.quantifier(at, Quantifier::ExistsOne, target, args)
            }
            ("map", 2 | 3) => self.map(at, target, args),
            ("filter", 2) => self.filter(at, target, args),
            ("all", 3) => self.quantifier2(at, Quantifier::All, target, args),
            ("exists", 3) => self.quantifier2(at, Quantifier::Exists, target, args),
            ("existsOne" | "exists_one", 3) => {
                self.quantifier2(at, Quantifier::ExistsOne, target, args)
            }
            ("transformList" | "transformMap" | "transformMapEntry", 3 | 4) => {
                self.transform(at, function, target, args)
            }
            ("optMap" | "optFlatMap", 2) => self.opt_map(at, function, target, args),
            ("sortBy", 2) => self.sort_by(at, target, args),
            _ => return Err((Some(target), args)),
        };
        Ok(expanded)
    }

    fn comprehension(&mut self, at: u32, fold: Fold) -> Expr {
        self.node(
            at,
            ExprKind::Comprehension(Box::new(Comprehension {
                iter_var: fold.iter_var,
                iter_var2: fold.iter_var2,
                iter_range: fold.range,
                accu_var: fold.accu_var,
                accu_init: fold.accu_init,
                loop_condition: fold.condition,
                loop_step: fold.step,
                result: fold.result,
            })),
        )
    }

    fn accu(&mut self, at: u32) -> Expr {
        self.ident(at, ACCUMULATOR)
    }

    fn empty_list(&mut self, at: u32) -> Expr {
        self.node(
            at,
            ExprKind::List {
                elements: Vec::new(),
                optional_indices: Vec::new(),
            },
        )
    }

    /// `has(a.b)`: a test-only select.
    fn has(&mut self, at: u32, mut args: Vec<Expr>) -> Expr {
        let arg = args.remove(0);
        match arg.kind {
            ExprKind::Select {
                operand,
                field,
                test_only: false,
                optional: false,
            } => self.node(
                at,
                ExprKind::Select {
                    operand,
                    field,
                    test_only: true,
                    optional: false,
                },
            ),
            _ => self.report(arg.offset, "invalid argument to has() macro"),
        }
    }

    /// The iteration variable named by `arg`, or the error `message` at it; an accumulator's
    /// name is refused.
    fn iter_var(&mut self, arg: &Expr, message: &str) -> Result<Arc<str>, Expr> {
        let ExprKind::Ident(name) = &arg.kind else {
            return Err(self.report(arg.offset, message));
        };
        if &**name == ACCUMULATOR || &**name == LEGACY_ACCUMULATOR {
            return Err(self.report(
                arg.offset,
                "iteration variable overwrites accumulator variable",
            ));
        }
        Ok(name.clone())
    }

    /// The two iteration variables of a two-variable comprehension (`args[0]`, `args[1]`).
    fn iter_vars(&mut self, args: &[Expr]) -> Result<(Arc<str>, Arc<str>), Expr> {
        let (Some(first), Some(second)) = (args.first(), args.get(1)) else {
            return Err(self.literal(0, Literal::Null));
        };
        let simple = "argument must be a simple name";
        let (ExprKind::Ident(a), ExprKind::Ident(b)) = (&first.kind, &second.kind) else {
            let bad = if matches!(first.kind, ExprKind::Ident(_)) {
                second.offset
            } else {
                first.offset
            };
            return Err(self.report(bad, simple));
        };
        if a == b {
            return Err(self.report(second.offset, format!("duplicate variable name: {a}")));
        }
        let a = self.iter_var(first, simple)?;
        let b = self.iter_var(second, simple)?;
        Ok((a, b))
    }

    /// The loop of `all`, `exists` and `exists_one` over `predicate`.
    fn quantified(
        &mut self,
        at: u32,
        kind: Quantifier,
        predicate: Expr,
    ) -> (Expr, Expr, Expr, Expr) {
        match kind {
            Quantifier::All => {
                let init = self.literal(at, Literal::Bool(true));
                let accu = self.accu(at);
                let condition = self.call(at, "@not_strictly_false", vec![accu]);
                let accu = self.accu(at);
                let step = self.call(at, "_&&_", vec![accu, predicate]);
                (init, condition, step, self.accu(at))
            }
            Quantifier::Exists => {
                let init = self.literal(at, Literal::Bool(false));
                let accu = self.accu(at);
                let not = self.call(at, "!_", vec![accu]);
                let condition = self.call(at, "@not_strictly_false", vec![not]);
                let accu = self.accu(at);
                let step = self.call(at, "_||_", vec![accu, predicate]);
                (init, condition, step, self.accu(at))
            }
            Quantifier::ExistsOne => {
                let init = self.literal(at, Literal::Int(0));
                let condition = self.literal(at, Literal::Bool(true));
                let accu = self.accu(at);
                let one = self.literal(at, Literal::Int(1));
                let plus = self.call(at, "_+_", vec![accu, one]);
                let accu = self.accu(at);
                let step = self.call(at, "_?_:_", vec![predicate, plus, accu]);
                let accu = self.accu(at);
                let one = self.literal(at, Literal::Int(1));
                let result = self.call(at, "_==_", vec![accu, one]);
                (init, condition, step, result)
            }
        }
    }

    /// `range.all(x, p)`, `range.exists(x, p)`, `range.exists_one(x, p)`.
    fn quantifier(&mut self, at: u32, kind: Quantifier, range: Expr, mut args: Vec<Expr>) -> Expr {
        let iter_var = match self.iter_var(&args[0], "argument must be a simple name") {
            Ok(name) => name,
            Err(error) => return error,
        };
        let predicate = args.remove(1);
        let (accu_init, condition, step, result) = self.quantified(at, kind, predicate);
        self.comprehension(
            at,
            Fold {
                range,
                iter_var,
                iter_var2: None,
                accu_var: Arc::from(ACCUMULATOR),
                accu_init,
                condition,
                step,
                result,
            },
        )
    }

    /// `range.all(i, v, p)`, `range.exists(i, v, p)`, `range.existsOne(i, v, p)`.
    fn quantifier2(&mut self, at: u32, kind: Quantifier, range: Expr, mut args: Vec<Expr>) -> Expr {
        let (iter_var, iter_var2) = match self.iter_vars(&args) {
            Ok(names) => names,
            Err(error) => return error,
        };
        let predicate = args.remove(2);
        let (accu_init, condition, step, result) = self.quantified(at, kind, predicate);
        self.comprehension(
            at,
            Fold {
                range,
                iter_var,
                iter_var2: Some(iter_var2),
                accu_var: Arc::from(ACCUMULATOR),
                accu_init,
                condition,
                step,
                result,
            },
        )
    }

    /// `step` guarded by `filter` when there is one: `filter ? step : accumulator`.
    fn filtered(&mut self, at: u32, filter: Option<Expr>, step: Expr) -> Expr {
        match filter {
            Some(filter) => {
                let accu = self.accu(at);
                self.call(at, "_?_:_", vec![filter, step, accu])
            }
            None => step,
        }
    }

    /// `accumulator + [element]`.
    fn append(&mut self, at: u32, element: Expr) -> Expr {
        let accu = self.accu(at);
        let list = self.node(
            at,
            ExprKind::List {
                elements: vec![element],
                optional_indices: Vec::new(),
            },
        );
        self.call(at, "_+_", vec![accu, list])
    }

    /// `range.map(x, t)` and `range.map(x, p, t)`.
    fn map(&mut self, at: u32, range: Expr, mut args: Vec<Expr>) -> Expr {
        let iter_var = match self.iter_var(&args[0], "argument is not an identifier") {
            Ok(name) => name,
            Err(error) => return error,
        };
        let transform = args.pop();
        let filter = (args.len() == 2).then(|| args.remove(1));
        let transform = transform.unwrap_or_else(|| self.literal(at, Literal::Null));
        let step = self.append(at, transform);
        let step = self.filtered(at, filter, step);
        let accu_init = self.empty_list(at);
        let condition = self.literal(at, Literal::Bool(true));
        let result = self.accu(at);
        self.comprehension(
            at,
            Fold {
                range,
                iter_var,
                iter_var2: None,
                accu_var: Arc::from(ACCUMULATOR),
                accu_init,
                condition,
                step,
                result,
            },
        )
    }

    /// `range.filter(x, p)`.
    fn filter(&mut self, at: u32, range: Expr, mut args: Vec<Expr>) -> Expr {
        let iter_var = match self.iter_var(&args[0], "argument is not an identifier") {
            Ok(name) => name,
            Err(error) => return error,
        };
        let filter = args.remove(1);
        let element = args.remove(0);
        let step = self.append(at, element);
        let step = self.filtered(at, Some(filter), step);
        let accu_init = self.empty_list(at);
        let condition = self.literal(at, Literal::Bool(true));
        let result = self.accu(at);
        self.comprehension(
            at,
            Fold {
                range,
                iter_var,
                iter_var2: None,
                accu_var: Arc::from(ACCUMULATOR),
                accu_init,
                condition,
                step,
                result,
            },
        )
    }

    /// `transformList(i, v, [p,] t)`, `transformMap(k, v, [p,] t)`,
    /// `transformMapEntry(k, v, [p,] t)`.
    fn transform(&mut self, at: u32, function: &str, range: Expr, mut args: Vec<Expr>) -> Expr {
        let (iter_var, iter_var2) = match self.iter_vars(&args) {
            Ok(names) => names,
            Err(error) => return error,
        };
        let transform = args.pop();
        let filter = (args.len() == 3).then(|| args.remove(2));
        let transform = transform.unwrap_or_else(|| self.literal(at, Literal::Null));
        let (step, accu_init) = match function {
            "transformList" => (self.append(at, transform), self.empty_list(at)),
            _ => {
                let accu = self.accu(at);
                let mut insert = vec![accu];
                if function == "transformMap" {
                    insert.push(self.ident(at, &iter_var));
                }
                insert.push(transform);
                let step = self.call(at, "cel.@mapInsert", insert);
                (
                    step,
                    self.node(
                        at,
                        ExprKind::Map {
                            entries: Vec::new(),
                        },
                    ),
                )
            }
        };
        let step = self.filtered(at, filter, step);
        let condition = self.literal(at, Literal::Bool(true));
        let result = self.accu(at);
        self.comprehension(
            at,
            Fold {
                range,
                iter_var,
                iter_var2: Some(iter_var2),
                accu_var: Arc::from(ACCUMULATOR),
                accu_init,
                condition,
                step,
                result,
            },
        )
    }

    /// `target.optMap(x, t)`: `target.hasValue() ? optional.of(t with x bound to
    /// target.value()) : optional.none()`; `optFlatMap` without the `optional.of`.
    fn opt_map(&mut self, at: u32, function: &str, target: Expr, mut args: Vec<Expr>) -> Expr {
        let ExprKind::Ident(name) = &args[0].kind else {
            let message = format!("{function}() variable name must be a simple identifier");
            return self.report(args[0].offset, message);
        };
        let name = name.clone();
        let transform = args.remove(1);
        let copy = self.copy(&target);
        let has_value = self.member_call(at, "hasValue", target, Vec::new());
        let value = self.member_call(at, "value", copy, Vec::new());
        let range = self.empty_list(at);
        let condition = self.literal(at, Literal::Bool(false));
        let step = self.ident(at, &name);
        let bound = self.comprehension(
            at,
            Fold {
                range,
                iter_var: Arc::from(UNUSED_ITER_VAR),
                iter_var2: None,
                accu_var: name,
                accu_init: value,
                condition,
                step,
                result: transform,
            },
        );
        let present = if function == "optMap" {
            self.call(at, "optional.of", vec![bound])
        } else {
            bound
        };
        let none = self.call(at, "optional.none", Vec::new());
        self.call(at, "_?_:_", vec![has_value, present, none])
    }

    /// `target.sortBy(x, key)`: the target bound to `@__sortBy_input__`, then
    /// `@__sortBy_input__.@sortByAssociatedKeys(@__sortBy_input__.map(x, key))`.
    fn sort_by(&mut self, at: u32, target: Expr, args: Vec<Expr>) -> Expr {
        if matches!(
            target.kind,
            ExprKind::Literal(_) | ExprKind::Map { .. } | ExprKind::Struct { .. }
        ) {
            return self.report(
                target.offset,
                "sortBy can only be applied to a list, identifier, comprehension, call or select expression",
            );
        }
        let input = self.ident(at, SORT_BY_INPUT);
        let keys = self.map(at, input, args);
        if matches!(keys.kind, ExprKind::Literal(_)) {
            return keys;
        }
        let input = self.ident(at, SORT_BY_INPUT);
        let sorted = self.member_call(at, "@sortByAssociatedKeys", input, vec![keys]);
        let range = self.empty_list(at);
        let condition = self.literal(at, Literal::Bool(false));
        let step = self.ident(at, SORT_BY_INPUT);
        self.comprehension(
            at,
            Fold {
                range,
                iter_var: Arc::from(UNUSED_ITER_VAR),
                iter_var2: None,
                accu_var: Arc::from(SORT_BY_INPUT),
                accu_init: target,
                condition,
                step,
                result: sorted,
            },
        )
    }

    /// A copy of `expr` with fresh ids, as cel-go's macro helper copies.
    fn copy(&mut self, expr: &Expr) -> Expr {
        let mut copy = expr.clone();
        self.renumber(&mut copy);
        copy
    }

    /// Gives every node of `expr` a fresh id (the tree's depth is bounded by the parser's
    /// recursion limits).
    fn renumber(&mut self, expr: &mut Expr) {
        expr.id = self.id();
        match &mut expr.kind {
            ExprKind::Literal(_) | ExprKind::Ident(_) => {}
            ExprKind::Select { operand, .. } => self.renumber(operand),
            ExprKind::Call { target, args, .. } => {
                if let Some(target) = target {
                    self.renumber(target);
                }
                args.iter_mut().for_each(|a| self.renumber(a));
            }
            ExprKind::List { elements, .. } => elements.iter_mut().for_each(|e| self.renumber(e)),
            ExprKind::Map { entries } => {
                for entry in entries {
                    entry.id = self.id();
                    self.renumber(&mut entry.key);
                    self.renumber(&mut entry.value);
                }
            }
            ExprKind::Struct { fields, .. } => {
                for field in fields {
                    field.id = self.id();
                    self.renumber(&mut field.value);
                }
            }
            ExprKind::Comprehension(c) => {
                self.renumber(&mut c.iter_range);
                self.renumber(&mut c.accu_init);
                self.renumber(&mut c.loop_condition);
                self.renumber(&mut c.loop_step);
                self.renumber(&mut c.result);
            }
        }
    }
}
