//! What is settled once, when an expression is compiled, so that evaluating it looks nothing
//! up by name: which comprehension variable or activation variable each identifier reads
//! (by position), which names are qualified names (`optional.of`, `google.protobuf.Duration`,
//! a variable declared as `authorizer.requestResource`), which function each call runs, and
//! the values of constant lists, maps and conversions (cel-go plans programs with
//! `OptOptimize`, which computes those once; they cost nothing when evaluated).
//!
//! cel-go does the same when it plans a checked expression into `Interpretable`s; here the
//! plan is a table beside the tree, indexed by node id, so the interpreter still walks the
//! expression as parsed.

use std::sync::Arc;

use crate::ast::{Comprehension, Expr, ExprKind, Literal};
use crate::value::TypeName;
use crate::{Activation, Budget, Value};

use super::accumulate::AppendStep;
use super::functions::Standard;
use super::{Interpreter, convert, cost, type_by_name};

/// The plan of one expression.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// By node id.
    steps: Vec<Step>,
    /// The activation variables the expression reads, by slot.
    pub(super) variables: Vec<Arc<str>>,
}

/// What evaluating one node does, where that differs from evaluating it as written.
#[derive(Clone, Debug, Default)]
pub(crate) enum Step {
    /// Evaluate as written.
    #[default]
    Plain,
    /// Read the comprehension variable at this position of the interpreter's locals.
    Local(usize),
    /// Read the activation variable in this slot (an identifier, or a qualified name that is
    /// declared as one variable).
    Variable(usize),
    /// A type name: a constant.
    Type(TypeName),
    /// A name that names nothing: evaluating it is an error.
    Unbound(Arc<str>),
    /// A constant list, map or conversion, computed when planning.
    Constant(Value),
    /// A call.
    Call(Box<Callee>),
    /// A comprehension whose step only appends to its accumulator (see
    /// [`AppendStep::detect`]).
    Appending,
}

/// The function a call runs.
#[derive(Clone, Debug)]
pub(crate) struct Callee {
    pub function: Function,
    /// The function's name as the libraries know it (`optional.of` for `optional.of(x)`).
    pub name: Arc<str>,
    /// Whether the call's target is its receiver (not for `optional.of(x)`, whose target is
    /// part of the function's name).
    pub method: bool,
    /// A conversion of a constant or a test of membership in a constant list: cel-go
    /// computes it when planning, so it costs nothing (when it fails, the failure is
    /// reported when evaluated, still free).
    pub planned: bool,
    /// The compiled pattern of `matches` with a literal pattern, compiled once here rather
    /// than found in the regex cache on every call (cel-go's `OptimizeRegex`, which
    /// Kubernetes enables). The checker already refuses a literal that does not compile
    /// (`invalid matches argument`); one that reaches the plan unchecked is left for the
    /// call to report when evaluated, as without planning.
    pub regex: Option<Arc<regex::Regex>>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Function {
    And,
    Or,
    Conditional,
    NotStrictlyFalse,
    Index,
    OptionalIndex,
    /// `opt.or(other)`.
    OptionalOr,
    /// `opt.orValue(v)`.
    OptionalOrValue,
    Add,
    Standard(Standard),
    /// A conversion, a timestamp or duration accessor, or a library function: found by name.
    Named,
}

/// The scope of comprehension variables while planning: their names, innermost last; a
/// name's position is its index in the interpreter's locals.
type Scope<'a> = Vec<&'a str>;

impl Plan {
    /// Plans `expr`, whose free variables are `declared` (the environment's variables).
    pub(crate) fn new<'a>(expr: &Expr, declared: impl IntoIterator<Item = &'a str>) -> Plan {
        let mut planner = Planner {
            plan: Plan::default(),
            declared: declared.into_iter().map(Arc::from).collect(),
        };
        planner.plan(expr, &mut Vec::new());
        planner.fold_constants(expr);
        planner.plan
    }

    /// Plans `expr` with the activation's variables declared (for expressions evaluated
    /// without checking).
    #[cfg(test)]
    pub(crate) fn for_activation(expr: &Expr, activation: &Activation) -> Plan {
        Plan::new(expr, activation.variables.iter().map(|(name, _)| &**name))
    }

    pub(crate) fn step(&self, expr: &Expr) -> &Step {
        self.steps.get(expr.id as usize).unwrap_or(&Step::Plain)
    }

    /// Whether `expr` is a call of `function`.
    pub(crate) fn calls(&self, expr: &Expr, function: Function) -> bool {
        matches!(self.step(expr), Step::Call(callee) if callee.function == function)
    }

    fn set(&mut self, expr: &Expr, step: Step) {
        let id = expr.id as usize;
        if self.steps.len() <= id {
            self.steps.resize(id + 1, Step::Plain);
        }
        self.steps[id] = step;
    }
}

struct Planner {
    plan: Plan,
    declared: Vec<Arc<str>>,
}

impl Planner {
    fn plan<'a>(&mut self, expr: &'a Expr, scope: &mut Scope<'a>) {
        match &expr.kind {
            ExprKind::Literal(_) => {}
            ExprKind::Ident(name) => {
                let step = self.name(name, scope);
                self.plan.set(expr, step);
            }
            ExprKind::Select { operand, .. } => match self.qualified(expr, scope) {
                Some(step) => self.plan.set(expr, step),
                None => self.plan(operand, scope),
            },
            ExprKind::Call {
                target,
                function,
                args,
            } => {
                let callee = self.callee(target.as_deref(), function, args, scope);
                if callee.method
                    && let Some(target) = target
                {
                    self.plan(target, scope);
                }
                self.plan.set(expr, Step::Call(Box::new(callee)));
                for arg in args {
                    self.plan(arg, scope);
                }
            }
            ExprKind::List { elements, .. } => {
                for element in elements {
                    self.plan(element, scope);
                }
            }
            ExprKind::Map { entries } => {
                for entry in entries {
                    self.plan(&entry.key, scope);
                    self.plan(&entry.value, scope);
                }
            }
            ExprKind::Struct { fields, .. } => {
                for field in fields {
                    self.plan(&field.value, scope);
                }
            }
            ExprKind::Comprehension(c) => self.comprehension(expr, c, scope),
        }
    }

    /// The accumulator, then the iteration variables, are pushed in this order by the
    /// interpreter; the loop sees all of them, the result only the accumulator.
    fn comprehension<'a>(&mut self, expr: &Expr, c: &'a Comprehension, scope: &mut Scope<'a>) {
        self.plan(&c.iter_range, scope);
        self.plan(&c.accu_init, scope);
        let base = scope.len();
        scope.push(&c.accu_var);
        scope.push(&c.iter_var);
        if let Some(var2) = &c.iter_var2 {
            scope.push(var2);
        }
        self.plan(&c.loop_condition, scope);
        self.plan(&c.loop_step, scope);
        scope.truncate(base + 1);
        self.plan(&c.result, scope);
        scope.truncate(base);
        if AppendStep::detect(c).is_some() {
            self.plan.set(expr, Step::Appending);
        }
    }

    /// An identifier: a comprehension variable, a declared variable, a type name, or nothing.
    fn name(&mut self, name: &str, scope: &Scope<'_>) -> Step {
        if let Some(position) = scope.iter().rposition(|local| *local == name) {
            return Step::Local(position);
        }
        if let Some(slot) = self.variable(name) {
            return Step::Variable(slot);
        }
        match type_by_name(name) {
            Some(type_name) => Step::Type(type_name),
            None => Step::Unbound(Arc::from(name)),
        }
    }

    /// The slot of declared variable `name`.
    fn variable(&mut self, name: &str) -> Option<usize> {
        if !self.declared.iter().any(|declared| &**declared == name) {
            return None;
        }
        let variables = &mut self.plan.variables;
        Some(match variables.iter().position(|v| &**v == name) {
            Some(slot) => slot,
            None => {
                variables.push(Arc::from(name));
                variables.len() - 1
            }
        })
    }

    /// A selection that is a qualified name (`a.b.c` where no comprehension variable is `a`):
    /// a variable declared by that whole name, or, when no prefix of it is a variable, a type
    /// name or nothing. `None` for a selection from a value.
    fn qualified(&mut self, expr: &Expr, scope: &Scope<'_>) -> Option<Step> {
        let ExprKind::Select {
            test_only: false,
            optional: false,
            ..
        } = &expr.kind
        else {
            return None;
        };
        let name = expr.dotted_name()?;
        let root = name.split('.').next().unwrap_or(&name);
        if scope.contains(&root) {
            return None;
        }
        if let Some(slot) = self.variable(&name) {
            return Some(Step::Variable(slot));
        }
        let mut prefix = String::new();
        for part in name.split('.') {
            if !prefix.is_empty() {
                prefix.push('.');
            }
            prefix.push_str(part);
            if prefix.len() < name.len() && self.declared.iter().any(|d| **d == *prefix) {
                return None;
            }
        }
        Some(match type_by_name(&name) {
            Some(type_name) => Step::Type(type_name),
            None => Step::Unbound(Arc::from(name)),
        })
    }

    fn callee(
        &mut self,
        target: Option<&Expr>,
        function: &Arc<str>,
        args: &[Expr],
        scope: &Scope<'_>,
    ) -> Callee {
        // `optional.of(x)`: a function named by a qualified name, when the target's root is
        // no variable.
        let qualified = target
            .filter(|t| !self.is_bound(t, scope))
            .and_then(Expr::dotted_name);
        let (name, method) = match qualified {
            Some(prefix) => (Arc::from(format!("{prefix}.{function}")), false),
            None => (function.clone(), target.is_some()),
        };
        let function = match (method, &*name, args) {
            (false, "_&&_", [_, _]) => Function::And,
            (false, "_||_", [_, _]) => Function::Or,
            (false, "_?_:_", [_, _, _]) => Function::Conditional,
            (false, "@not_strictly_false", [_]) => Function::NotStrictlyFalse,
            (false, "_[_]", [_, _]) => Function::Index,
            (false, "_[?_]", [_, _]) => Function::OptionalIndex,
            (true, "or", [_]) => Function::OptionalOr,
            (true, "orValue", [_]) => Function::OptionalOrValue,
            (_, "_+_", _) => Function::Add,
            (_, name, _) => Standard::of(name).map_or(Function::Named, Function::Standard),
        };
        let planned = match (&*name, args) {
            (name, [arg]) if !method && convert::is_conversion(name) => cost::is_constant(arg),
            ("@in", [_, list]) => {
                matches!(list.kind, ExprKind::List { .. }) && cost::is_constant(list)
            }
            _ => false,
        };
        let regex = match (function, method, args) {
            (Function::Standard(Standard::Matches), true, [pattern])
            | (Function::Standard(Standard::Matches), false, [_, pattern]) => match &pattern.kind {
                ExprKind::Literal(Literal::String(pattern)) => {
                    crate::library::regex::compile(pattern).ok()
                }
                _ => None,
            },
            _ => None,
        };
        Callee {
            function,
            name,
            method,
            planned,
            regex,
        }
    }

    /// Whether the root identifier of `target` (`a` of `a.b.c`) is a variable: a
    /// comprehension variable or a declared variable. `true` for targets that are no name.
    fn is_bound(&self, target: &Expr, scope: &Scope<'_>) -> bool {
        let Some(root) = super::root_ident(target) else {
            return true;
        };
        let root = super::qualified_root(root);
        scope.contains(&root) || self.declared.iter().any(|d| &**d == root)
    }

    /// Computes the outermost constant lists, maps and conversions (cel-go's `OptOptimize`);
    /// one that fails is left to fail when evaluated.
    fn fold_constants(&mut self, expr: &Expr) {
        let foldable = match &expr.kind {
            ExprKind::List { .. } | ExprKind::Map { .. } | ExprKind::Call { .. } => {
                cost::is_constant(expr)
            }
            _ => false,
        };
        if foldable {
            let activation = Activation::new();
            let mut budget = Budget::new(u64::MAX);
            let mut interpreter = Interpreter::new(&self.plan, &activation, &mut budget);
            if let Ok(value) = interpreter.eval(expr) {
                self.plan.set(expr, Step::Constant(value));
                return;
            }
        }
        for child in children(expr) {
            self.fold_constants(child);
        }
    }
}

/// The direct children of `expr`.
fn children(expr: &Expr) -> Vec<&Expr> {
    match &expr.kind {
        ExprKind::Literal(_) | ExprKind::Ident(_) => Vec::new(),
        ExprKind::Select { operand, .. } => vec![operand],
        ExprKind::Call { target, args, .. } => target.as_deref().into_iter().chain(args).collect(),
        ExprKind::List { elements, .. } => elements.iter().collect(),
        ExprKind::Map { entries } => entries.iter().flat_map(|e| [&e.key, &e.value]).collect(),
        ExprKind::Struct { fields, .. } => fields.iter().map(|f| &f.value).collect(),
        ExprKind::Comprehension(c) => vec![
            &c.iter_range,
            &c.accu_init,
            &c.loop_condition,
            &c.loop_step,
            &c.result,
        ],
    }
}
