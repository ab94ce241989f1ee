//! The Common Expression Language (CEL) as Kubernetes speaks it, for `x-kubernetes-validations`
//! and ValidatingAdmissionPolicy: a parser, a checker that types expressions from declared
//! variables (a CRD's structural schema), an interpreter that charges every step against a cost
//! budget and stops when it runs out, and Kubernetes' CEL libraries.
//!
//! Why not the `cel` crate (cel-rust): it has no checker (a rule naming a field the schema lacks,
//! or not returning bool, fails only when evaluated), no cost estimation or tracking and no way
//! to interrupt an evaluation (a rule over a large list can run without bound), and none of
//! Kubernetes' libraries; those are the parts Kubernetes' dialect is made of.
//!
//! This crate depends on no Kubernetes, JSON or networking crate: callers build [`Value`]s and
//! [`Type`]s from their objects and schemas.

pub mod ast;
mod check;
mod cost;
mod eval;
pub mod library;
mod parse;
pub mod types;
pub mod value;

use std::fmt;
use std::sync::Arc;

pub use cost::{CostEstimate, SizeEstimator};
pub use parse::RESERVED as RESERVED_WORDS;
pub use types::{ObjectType, Type};
pub use value::{Key, Map, Opaque, TypeName, Value, parse_duration};

/// Variable declarations and the libraries an expression may use.
#[derive(Clone, Debug, Default)]
pub struct Env {
    /// Declared variables and their types (`self`, `oldSelf`, `object`, `params`, ...).
    pub variables: Vec<(Arc<str>, Type)>,
}

impl Env {
    pub fn new() -> Env {
        Env::default()
    }

    /// Declares a variable.
    pub fn variable(mut self, name: &str, ty: Type) -> Env {
        self.variables.push((Arc::from(name), ty));
        self
    }
}

/// A compiled expression: parsed and checked once, evaluated many times.
#[derive(Clone, Debug)]
pub struct Program {
    source: Arc<str>,
    expr: ast::Expr,
    result: Type,
    /// What the checker found (every node's type, every call's overloads), for
    /// [`Program::estimate_cost`].
    checked: Arc<check::Checked>,
    /// What evaluation does at each node, settled once (variables by slot, calls by
    /// function, constants computed).
    plan: Arc<eval::Plan>,
}

impl Program {
    /// Parses and checks `source` against `env`. The error lists every problem found, in
    /// cel-go's format (see [`CompileError`]).
    pub fn compile(env: &Env, source: &str) -> Result<Program, CompileError> {
        let expr = parse::parse(source).map_err(|issues| CompileError::new(source, issues))?;
        let checked =
            check::check_ast(&expr, env).map_err(|issues| CompileError::new(source, issues))?;
        let plan = eval::Plan::new(&expr, env.variables.iter().map(|(name, _)| &**name));
        Ok(Program {
            source: Arc::from(source),
            expr,
            result: checked.result.clone(),
            checked: Arc::new(checked),
            plan: Arc::new(plan),
        })
    }

    /// The checked type of the expression's result.
    pub fn result_type(&self) -> &Type {
        &self.result
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether the expression refers to variable `name` anywhere (a rule using `oldSelf` is a
    /// transition rule).
    pub fn references(&self, name: &str) -> bool {
        eval::references(&self.expr, name)
    }

    /// The field paths through which the expression reads variable `name`, or `None` when it
    /// reads it otherwise ([`ast::Expr::selected_paths`]): what of a large value must be
    /// bound for this expression to see all it can see.
    pub fn selected_paths(&self, name: &str) -> Option<Vec<Vec<Arc<str>>>> {
        self.expr.selected_paths(name)
    }

    /// The static cost estimate Kubernetes computes when a CRD rule or a policy expression is
    /// written: cel-go's estimator (`checker/cost.go`) with Kubernetes' library estimates
    /// (`apiserver/pkg/cel/library/cost.go`) and presence tests free. `sizes` bounds the
    /// sizes of the values the expression reads (a CRD's `maxLength`, `maxItems`,
    /// `maxProperties`); where it has no bound, cel-go's defaults apply (unknown: up to
    /// `u64::MAX`). Evaluating over values within those bounds costs at most `max`, but for
    /// the few charges where cel-go and Kubernetes themselves charge more at run time than
    /// they estimate (`startsWith`/`endsWith` by the string, `join` at twice the rate,
    /// selecting from a call's result); the estimate stays theirs, so that the rules
    /// Kubernetes accepts are the ones accepted here.
    pub fn estimate_cost(&self, sizes: &dyn SizeEstimator) -> CostEstimate {
        cost::estimate(&self.expr, &self.checked, sizes)
    }

    /// Evaluates with the variables of `activation`, charging `budget`; a variable the
    /// expression reads but the activation lacks is an evaluation error.
    pub fn eval(&self, activation: &Activation, budget: &mut Budget) -> Result<Value, EvalError> {
        eval::eval_planned(&self.expr, &self.plan, activation, budget)
    }
}

/// Values of the variables for one evaluation.
#[derive(Clone, Debug, Default)]
pub struct Activation {
    pub variables: Vec<(Arc<str>, Value)>,
}

impl Activation {
    pub fn new() -> Activation {
        Activation::default()
    }

    pub fn bind(mut self, name: &str, value: Value) -> Activation {
        self.variables.push((Arc::from(name), value));
        self
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.variables
            .iter()
            .find(|(n, _)| &**n == name)
            .map(|(_, v)| v)
    }
}

/// What an evaluation may still spend, in cel-go's runtime cost units. Evaluation stops with
/// [`EvalError::CostExceeded`] as soon as it would spend more.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    pub remaining: u64,
}

impl Budget {
    pub fn new(limit: u64) -> Budget {
        Budget { remaining: limit }
    }
}

/// One problem found while parsing or checking, at a byte offset of the source.
#[derive(Clone, Debug, PartialEq)]
pub struct Issue {
    pub offset: u32,
    pub message: String,
}

/// Why an expression does not compile. Displays as cel-go does, which Kubernetes shows after
/// `compilation failed: `:
///
/// ```text
/// ERROR: <input>:1:6: undefined field 'foo'
///  | self.foo
///  | .....^
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct CompileError {
    pub source: Arc<str>,
    pub issues: Vec<Issue>,
}

impl CompileError {
    fn new(source: &str, issues: Vec<Issue>) -> CompileError {
        CompileError {
            source: Arc::from(source),
            issues,
        }
    }
}

impl std::error::Error for CompileError {}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, issue) in self.issues.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            // cel-go: line is 1-based, column is 1-based in code points; the snippet line
            // is the source line holding the offset, the caret under its column (dots before).
            let offset = (issue.offset as usize).min(self.source.len());
            let before = &self.source[..floor_char_boundary(&self.source, offset)];
            let line_no = before.matches('\n').count() + 1;
            let line_start = before.rfind('\n').map_or(0, |i| i + 1);
            let column = before[line_start..].chars().count();
            let line = self.source[line_start..].lines().next().unwrap_or("");
            write!(
                f,
                "ERROR: <input>:{line_no}:{}: {}\n | {line}\n | {}^",
                column + 1,
                issue.message,
                ".".repeat(column)
            )?;
        }
        Ok(())
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Why an evaluation failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum EvalError {
    /// The budget ran out.
    #[error("operation cancelled: actual cost limit exceeded")]
    CostExceeded,
    /// A CEL runtime error, in cel-go's words (`no such key: foo`, `division by zero`,
    /// `no such overload`).
    #[error("{0}")]
    Runtime(String),
}
