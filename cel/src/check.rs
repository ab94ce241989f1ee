//! The checker: types every node from the declared variables and the function declarations of
//! the standard and Kubernetes libraries, as cel-go's checker does with the options Kubernetes
//! enables (cross-type numeric comparisons, optional types), then runs the AST validators
//! Kubernetes enables (homogeneous aggregate literals; duration, timestamp and regex literals).

pub mod decls;
mod format;
pub mod kubernetes;
pub mod stdlib;
mod types;
mod validate;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::Arc;

use crate::ast::{Comprehension, Expr, ExprKind, Literal, MapEntry};
use crate::{Env, Issue, Type};
use decls::{Overload, Sig};
use types::{Mapping, Ty, format, most_general};

/// How deeply the checker descends before it refuses an expression (a parsed expression never
/// gets here, but the checker must not overflow the stack on any tree).
const MAX_DEPTH: usize = 500;

/// What checking found: the result type, the type of every node and the overloads each call
/// may resolve to (by overload id), keyed by node id.
#[derive(Clone, Debug)]
#[allow(
    dead_code,
    reason = "the cost estimator reads the node types and overloads"
)]
pub(crate) struct Checked {
    pub result: Type,
    pub types: HashMap<u32, Type>,
    pub overloads: HashMap<u32, Vec<&'static str>>,
}

/// The type of `expr` in `env`, or every problem found.
#[cfg_attr(
    not(test),
    allow(
        dead_code,
        reason = "Program::compile keeps everything check_ast finds"
    )
)]
pub(crate) fn check(expr: &Expr, env: &Env) -> Result<Type, Vec<Issue>> {
    check_ast(expr, env).map(|checked| checked.result)
}

/// Checks `expr` in `env`, keeping the type of every node and the overloads of every call.
pub(crate) fn check_ast(expr: &Expr, env: &Env) -> Result<Checked, Vec<Issue>> {
    let mut checker = Checker {
        env,
        scopes: Vec::new(),
        types: HashMap::new(),
        overloads: HashMap::new(),
        mapping: Mapping::default(),
        next_var: 0,
        issues: Vec::new(),
        too_deep: false,
    };
    let root = checker.check(expr, 0);
    if !checker.issues.is_empty() {
        return Err(sorted(checker.issues));
    }
    let mapping = &checker.mapping;
    let types: HashMap<u32, Ty> = checker
        .types
        .iter()
        .map(|(id, t)| (*id, mapping.substitute(t, true)))
        .collect();
    let mut issues = Vec::new();
    validate::validate(expr, &types, &mut issues);
    if !issues.is_empty() {
        return Err(sorted(issues));
    }
    Ok(Checked {
        result: mapping.substitute(&root, true).to_type(),
        types: types.iter().map(|(id, t)| (*id, t.to_type())).collect(),
        overloads: checker.overloads,
    })
}

/// cel-go keeps the first 100 issues reported.
const MAX_ISSUES: usize = 100;

/// cel-go keeps the first [`MAX_ISSUES`] issues and reports them ordered by location.
fn sorted(mut issues: Vec<Issue>) -> Vec<Issue> {
    issues.truncate(MAX_ISSUES);
    issues.sort_by_key(|issue| issue.offset);
    issues
}

/// The type names an identifier may be, and the type each stands for.
fn type_name(name: &str) -> Option<Ty> {
    let t = match name {
        "int" => Ty::Int,
        "uint" => Ty::Uint,
        "double" => Ty::Double,
        "bool" => Ty::Bool,
        "string" => Ty::String,
        "bytes" => Ty::Bytes,
        "list" => Ty::List(Box::new(Ty::Dyn)),
        "map" => Ty::Map(Box::new(Ty::Dyn), Box::new(Ty::Dyn)),
        "null_type" => Ty::Null,
        "type" => Ty::Type(Box::new(Ty::Dyn)),
        "optional_type" => Ty::Optional(Box::new(Ty::Dyn)),
        "google.protobuf.Duration" => Ty::Duration,
        "google.protobuf.Timestamp" => Ty::Timestamp,
        // The IP and CIDR libraries declare their types as variables; the others do not.
        "net.IP" => Ty::Opaque("net.IP"),
        "net.CIDR" => Ty::Opaque("net.CIDR"),
        _ => return None,
    };
    Some(Ty::Type(Box::new(t)))
}

struct Checker<'a> {
    env: &'a Env,
    /// Comprehension variables in scope, innermost last.
    scopes: Vec<(Arc<str>, Ty)>,
    types: HashMap<u32, Ty>,
    overloads: HashMap<u32, Vec<&'static str>>,
    mapping: Mapping,
    next_var: u32,
    issues: Vec<Issue>,
    too_deep: bool,
}

impl Checker<'_> {
    #[inline(never)]
    fn error(&mut self, expr: &Expr, message: String) {
        self.issues.push(Issue {
            offset: expr.offset,
            message,
        });
    }

    #[inline(never)]
    fn type_mismatch(&mut self, expr: &Expr, expected: &Ty, actual: &Ty) {
        let message = format!(
            "expected type '{}' but found '{}'",
            format(&self.mapping.substitute(expected, false)),
            format(&self.mapping.substitute(actual, false))
        );
        self.error(expr, message);
    }

    fn fresh(&mut self) -> Ty {
        self.next_var += 1;
        Ty::Var(self.next_var - 1)
    }

    fn set(&mut self, expr: &Expr, t: Ty) -> Ty {
        self.types.insert(expr.id, t.clone());
        t
    }

    fn check(&mut self, expr: &Expr, depth: usize) -> Ty {
        if depth > MAX_DEPTH {
            if !self.too_deep {
                self.too_deep = true;
                self.error(expr, "expression nesting exceeds the limit".to_string());
            }
            return self.set(expr, Ty::Error);
        }
        let t = self.check_kind(expr, depth + 1);
        self.set(expr, t)
    }

    #[inline(never)]
    fn check_kind(&mut self, expr: &Expr, depth: usize) -> Ty {
        match &expr.kind {
            ExprKind::Literal(literal) => match literal {
                Literal::Null => Ty::Null,
                Literal::Bool(_) => Ty::Bool,
                Literal::Int(_) => Ty::Int,
                Literal::Uint(_) => Ty::Uint,
                Literal::Double(_) => Ty::Double,
                Literal::String(_) => Ty::String,
                Literal::Bytes(_) => Ty::Bytes,
            },
            ExprKind::Ident(name) => self.check_ident(expr, name),
            ExprKind::Select {
                operand,
                field,
                test_only,
                optional,
            } => self.check_select(expr, operand, field, *test_only, *optional, depth),
            ExprKind::Call {
                target,
                function,
                args,
            } => self.check_call(expr, target.as_deref(), function, args, depth),
            ExprKind::List {
                elements,
                optional_indices,
            } => self.check_list(elements, optional_indices, depth),
            ExprKind::Map { entries } => self.check_map(entries, depth),
            ExprKind::Struct { type_name, .. } => self.undeclared_function(expr, type_name),
            ExprKind::Comprehension(comp) => self.check_comprehension(comp, depth),
        }
    }

    #[inline(never)]
    fn check_comprehension(&mut self, comp: &Comprehension, depth: usize) -> Ty {
        let range = self.check(&comp.iter_range, depth);
        let accu = self.check(&comp.accu_init, depth);
        let range = self.mapping.substitute(&range, false);
        let two = comp.iter_var2.is_some();
        let (var, var2) = match &range {
            Ty::List(elem) if two => (Ty::Int, (**elem).clone()),
            Ty::List(elem) => ((**elem).clone(), Ty::Error),
            Ty::Map(key, value) => ((**key).clone(), (**value).clone()),
            Ty::Dyn | Ty::Error | Ty::Var(_) => {
                self.mapping.assignable(&Ty::Dyn, &range);
                (Ty::Dyn, Ty::Dyn)
            }
            other => {
                let message = format!(
                    "expression of type '{}' cannot be range of a comprehension \
                     (must be list, map, or dynamic)",
                    format(other)
                );
                self.error(&comp.iter_range, message);
                (Ty::Error, Ty::Error)
            }
        };
        let scope = self.scopes.len();
        self.scopes.push((comp.accu_var.clone(), accu.clone()));
        self.scopes.push((comp.iter_var.clone(), var));
        if let Some(name) = &comp.iter_var2 {
            self.scopes.push((name.clone(), var2));
        }
        let condition = self.check(&comp.loop_condition, depth);
        self.assert_type(&comp.loop_condition, &Ty::Bool, &condition);
        let step = self.check(&comp.loop_step, depth);
        self.assert_type(&comp.loop_step, &accu, &step);
        self.scopes.truncate(scope + 1);
        let result = self.check(&comp.result, depth);
        self.scopes.truncate(scope);
        self.mapping.substitute(&result, false)
    }

    #[inline(never)]
    fn check_list(&mut self, elements: &[Expr], optional_indices: &[u32], depth: usize) -> Ty {
        let mut elem: Option<Ty> = None;
        for (i, e) in elements.iter().enumerate() {
            let mut t = self.check(e, depth);
            if optional_indices.iter().any(|&o| o as usize == i) {
                t = self.unwrap_optional_entry(e, t);
            }
            elem = Some(self.join(elem, t));
        }
        let elem = match elem {
            Some(t) => t,
            None => self.fresh(),
        };
        Ty::List(Box::new(elem))
    }

    #[inline(never)]
    fn check_map(&mut self, entries: &[MapEntry], depth: usize) -> Ty {
        let (mut key, mut value): (Option<Ty>, Option<Ty>) = (None, None);
        for entry in entries {
            let k = self.check(&entry.key, depth);
            key = Some(self.join(key, k));
            let mut v = self.check(&entry.value, depth);
            if entry.optional {
                v = self.unwrap_optional_entry(&entry.value, v);
            }
            value = Some(self.join(value, v));
        }
        match (key, value) {
            (Some(k), Some(v)) => Ty::Map(Box::new(k), Box::new(v)),
            _ => Ty::Map(Box::new(self.fresh()), Box::new(self.fresh())),
        }
    }

    #[inline(never)]
    fn check_select(
        &mut self,
        expr: &Expr,
        operand: &Expr,
        field: &str,
        test_only: bool,
        optional: bool,
        depth: usize,
    ) -> Ty {
        let qualified = if test_only || optional {
            None
        } else {
            expr.dotted_name()
        };
        match qualified.and_then(|name| self.resolve_qualified(&name)) {
            Some(t) => t,
            None => {
                let t = self.check_select_field(expr, operand, field, optional, depth);
                if test_only { Ty::Bool } else { t }
            }
        }
    }

    fn assert_type(&mut self, expr: &Expr, expected: &Ty, actual: &Ty) {
        if !self.mapping.assignable(expected, actual) {
            self.type_mismatch(expr, expected, actual);
        }
    }

    /// An optional entry (`[?x]`, `{?k: v}`) must be optional; its element type is inside.
    #[inline(never)]
    fn unwrap_optional_entry(&mut self, expr: &Expr, t: Ty) -> Ty {
        match t {
            Ty::Optional(inner) => *inner,
            Ty::Dyn => Ty::Dyn,
            other => {
                self.type_mismatch(expr, &Ty::Optional(Box::new(other.clone())), &other);
                other
            }
        }
    }

    /// cel-go's `joinTypes` for aggregate literals: the more general of two assignable types,
    /// otherwise `dyn` (the homogeneous literal validator reports the mix afterwards).
    #[inline(never)]
    fn join(&mut self, previous: Option<Ty>, current: Ty) -> Ty {
        match previous {
            None => current,
            Some(previous) => {
                if self.mapping.assignable(&previous, &current) {
                    most_general(&previous, &current)
                } else {
                    Ty::Dyn
                }
            }
        }
    }

    fn lookup(&self, name: &str) -> Option<Ty> {
        if let Some((_, t)) = self.scopes.iter().rev().find(|(n, _)| &**n == name) {
            return Some(t.clone());
        }
        if let Some((_, t)) = self.env.variables.iter().rev().find(|(n, _)| &**n == name) {
            return Some(Ty::from_type(t));
        }
        type_name(name)
    }

    #[inline(never)]
    fn check_ident(&mut self, expr: &Expr, name: &str) -> Ty {
        match self.lookup(name) {
            Some(t) => t,
            None => {
                self.error(
                    expr,
                    format!("undeclared reference to '{name}' (in container '')"),
                );
                Ty::Error
            }
        }
    }

    /// A dotted name that is itself declared (`google.protobuf.Duration`, `net.IP`).
    fn resolve_qualified(&self, name: &str) -> Option<Ty> {
        if let Some((_, t)) = self.env.variables.iter().rev().find(|(n, _)| &**n == name) {
            return Some(Ty::from_type(t));
        }
        type_name(name)
    }

    #[inline(never)]
    fn check_select_field(
        &mut self,
        expr: &Expr,
        operand: &Expr,
        field: &str,
        optional: bool,
        depth: usize,
    ) -> Ty {
        let operand_type = self.check(operand, depth);
        let operand_type = self.mapping.substitute(&operand_type, false);
        let (target, is_optional) = match operand_type {
            Ty::Optional(inner) => (*inner, true),
            other => (other, false),
        };
        let result = match &target {
            Ty::Map(_, value) => (**value).clone(),
            Ty::Object(object) => match object.fields.get(field) {
                Some(t) => Ty::from_type(t),
                None => {
                    self.error(expr, format!("undefined field '{field}'"));
                    Ty::Error
                }
            },
            Ty::Var(_) => {
                self.mapping.assignable(&Ty::Dyn, &target);
                Ty::Dyn
            }
            Ty::Dyn | Ty::Error => Ty::Dyn,
            other => {
                let message = format!("type '{}' does not support field selection", format(other));
                self.error(expr, message);
                Ty::Dyn
            }
        };
        if is_optional || optional {
            Ty::Optional(Box::new(result))
        } else {
            result
        }
    }

    #[inline(never)]
    fn check_call(
        &mut self,
        expr: &Expr,
        target: Option<&Expr>,
        function: &str,
        args: &[Expr],
        depth: usize,
    ) -> Ty {
        let arg_types: Vec<Ty> = args.iter().map(|a| self.check(a, depth)).collect();
        let Some(target) = target else {
            return match decls::function(function) {
                Some(overloads) => self.resolve(expr, function, overloads, None, args, arg_types),
                None => self.undeclared_function(expr, function),
            };
        };
        if let Some(prefix) = target.dotted_name() {
            let name = format!("{prefix}.{function}");
            if let Some(overloads) = decls::function(&name) {
                return self.resolve(expr, &name, overloads, None, args, arg_types);
            }
        }
        let target_type = self.check(target, depth);
        match decls::function(function) {
            Some(overloads) => self.resolve(
                expr,
                function,
                overloads,
                Some(target_type),
                args,
                arg_types,
            ),
            None => self.undeclared_function(expr, function),
        }
    }

    #[inline(never)]
    fn undeclared_function(&mut self, expr: &Expr, function: &str) -> Ty {
        self.error(
            expr,
            format!("undeclared reference to '{function}' (in container '')"),
        );
        Ty::Error
    }

    /// Picks the overloads of `function` the argument types fit, as cel-go's
    /// `resolveOverload`: the result is their common result type, or `dyn` when they differ.
    #[inline(never)]
    fn resolve(
        &mut self,
        expr: &Expr,
        function: &str,
        overloads: &[&'static Overload],
        target: Option<Ty>,
        args: &[Expr],
        arg_types: Vec<Ty>,
    ) -> Ty {
        let receiver = target.is_some();
        let mut all: Vec<Ty> = target.into_iter().collect();
        all.extend(arg_types);
        if function == "_&&_" || function == "_||_" {
            let mut failed = false;
            for (arg, t) in args.iter().zip(&all) {
                if !self.mapping.assignable(t, &Ty::Bool) {
                    self.type_mismatch(arg, &Ty::Bool, t);
                    failed = true;
                }
            }
            if failed {
                return Ty::Error;
            }
            let id = if function == "_&&_" {
                "logical_and"
            } else {
                "logical_or"
            };
            self.overloads.insert(expr.id, vec![id]);
            return Ty::Bool;
        }
        let mut result: Option<Ty> = None;
        let mut ids = Vec::new();
        for overload in overloads.iter().filter(|o| o.receiver == receiver) {
            let mut params: Vec<(&'static str, Ty)> = Vec::new();
            let candidate: Vec<Ty> = overload
                .args
                .iter()
                .map(|s| self.instantiate(s, &mut params))
                .collect();
            let overload_result = self.instantiate(&overload.result, &mut params);
            if self.mapping.assignable_list(&all, &candidate) {
                ids.push(overload.id);
                let t = self.mapping.substitute(&overload_result, false);
                result = Some(match result {
                    None => t,
                    Some(previous) if previous == Ty::Dyn || previous == t => previous,
                    Some(_) => Ty::Dyn,
                });
            }
        }
        match result {
            Some(t) => {
                self.overloads.insert(expr.id, ids);
                t
            }
            None => {
                let shown: Vec<String> = all
                    .iter()
                    .map(|t| format(&self.mapping.substitute(t, true)))
                    .collect();
                let signature = if receiver {
                    format!("{}.({})", shown[0], shown[1..].join(", "))
                } else {
                    format!("({})", shown.join(", "))
                };
                self.error(
                    expr,
                    format!("found no matching overload for '{function}' applied to '{signature}'"),
                );
                Ty::Error
            }
        }
    }

    /// The working type of a declaration's type, each type parameter a fresh variable (the
    /// same one for every use of the parameter within one overload).
    #[inline(never)]
    fn instantiate(&mut self, sig: &Sig, params: &mut Vec<(&'static str, Ty)>) -> Ty {
        match *sig {
            Sig::Dyn => Ty::Dyn,
            Sig::Bool => Ty::Bool,
            Sig::Int => Ty::Int,
            Sig::Uint => Ty::Uint,
            Sig::Double => Ty::Double,
            Sig::String => Ty::String,
            Sig::Bytes => Ty::Bytes,
            Sig::Duration => Ty::Duration,
            Sig::Timestamp => Ty::Timestamp,
            Sig::List(e) => Ty::List(Box::new(self.instantiate(e, params))),
            Sig::Map(k, v) => {
                let k = self.instantiate(k, params);
                Ty::Map(Box::new(k), Box::new(self.instantiate(v, params)))
            }
            Sig::Optional(i) => Ty::Optional(Box::new(self.instantiate(i, params))),
            Sig::Type(i) => Ty::Type(Box::new(self.instantiate(i, params))),
            Sig::Opaque(n) => Ty::Opaque(n),
            Sig::Param(name) => {
                if let Some((_, t)) = params.iter().find(|(n, _)| *n == name) {
                    return t.clone();
                }
                let t = self.fresh();
                params.push((name, t.clone()));
                t
            }
        }
    }
}
