//! Comprehensions that build a list (`map`, `filter`, `transformList`) or a map
//! (`transformMap`, `transformMapEntry`): their step is `@result + [e]` or
//! `cel.@mapInsert(@result, k, v)`, possibly under a filter `c ? step : @result`. Run as
//! written, each step would copy the whole accumulator; here the accumulator grows in place,
//! charged as cel-go charges the step it stands for (the accumulator read, the arguments,
//! the one-element list, the call).

use crate::ast::{Comprehension, Expr, ExprKind};
use crate::{EvalError, Value};

use super::{Interpreter, Outcome, cost, functions, iteration_items, references};

/// The parts of an appending step.
pub(super) struct AppendStep<'a> {
    /// The filter, when the step appends only where it holds.
    condition: Option<&'a Expr>,
    /// What each step adds.
    growth: Growth<'a>,
}

/// How an accumulator grows.
enum Growth<'a> {
    /// `@result + [elements]`.
    Append(&'a [Expr]),
    /// `cel.@mapInsert(@result, key, value)` or `cel.@mapInsert(@result, entries)`.
    Insert(&'a [Expr]),
}

/// The accumulator being built.
enum Accumulated {
    List(Vec<Value>),
    Map(crate::Map),
}

impl<'a> AppendStep<'a> {
    /// Recognizes a comprehension whose accumulator starts as `[]`, whose step only appends
    /// to it and which reads it nowhere else but in its result (when planning).
    pub(super) fn detect(c: &'a Comprehension) -> Option<AppendStep<'a>> {
        let accu = &*c.accu_var;
        if &*c.iter_var == accu || c.iter_var2.as_deref() == Some(accu) {
            return None;
        }
        if references(&c.loop_condition, accu) {
            return None;
        }
        let step = AppendStep::shape(c)?;
        let reads_accu = |e: &Expr| references(e, accu);
        let rest = match step.growth {
            Growth::Append(exprs) | Growth::Insert(exprs) => exprs,
        };
        if step.condition.is_some_and(reads_accu) || rest.iter().any(reads_accu) {
            return None;
        }
        Some(step)
    }

    /// The parts of a step of the form [`AppendStep::detect`] recognizes, without checking
    /// where the accumulator is read (when evaluating a comprehension the plan says is one).
    pub(super) fn shape(c: &'a Comprehension) -> Option<AppendStep<'a>> {
        let accu = &*c.accu_var;
        let list_init = match &c.accu_init.kind {
            ExprKind::List { elements, .. } if elements.is_empty() => true,
            ExprKind::Map { entries } if entries.is_empty() => false,
            _ => return None,
        };
        let ExprKind::Call {
            target: None,
            function,
            args,
        } = &c.loop_step.kind
        else {
            return None;
        };
        let (condition, step) = match (&**function, args.as_slice()) {
            ("_?_:_", [condition, step, otherwise]) if is_ident(otherwise, accu) => {
                (Some(condition), step)
            }
            _ => (None, &c.loop_step),
        };
        let ExprKind::Call {
            target: None,
            function,
            args,
        } = &step.kind
        else {
            return None;
        };
        let (first, rest) = args.split_first()?;
        if !is_ident(first, accu) {
            return None;
        }
        let growth = match (&**function, rest) {
            ("_+_", [list]) if list_init => match &list.kind {
                ExprKind::List {
                    elements,
                    optional_indices,
                } if optional_indices.is_empty() => Growth::Append(elements),
                _ => return None,
            },
            ("cel.@mapInsert", [_] | [_, _]) if !list_init => Growth::Insert(rest),
            _ => return None,
        };
        Some(AppendStep { condition, growth })
    }
}

fn is_ident(expr: &Expr, name: &str) -> bool {
    matches!(&expr.kind, ExprKind::Ident(n) if &**n == name)
}

impl Interpreter<'_> {
    /// Evaluates an appending comprehension over `range`.
    pub(super) fn eval_appending(
        &mut self,
        c: &Comprehension,
        range: &Value,
        append: &AppendStep<'_>,
    ) -> Outcome {
        // The `[]` the accumulator starts from.
        self.eval(&c.accu_init)?;
        let items = iteration_items(range, c.iter_var2.is_some())?;
        let mut accumulated = match append.growth {
            Growth::Append(_) => Accumulated::List(Vec::new()),
            Growth::Insert(_) => Accumulated::Map(crate::Map::default()),
        };
        // The accumulator's place (the plan puts the iteration variables after it); the
        // loop does not read it.
        let accu = self.locals.len();
        self.locals.push(Ok(Value::Null));
        let base = self.locals.len();
        let mut outcome = Ok(());
        for (first, second) in items {
            self.locals.truncate(base);
            self.locals.push(Ok(first));
            if let Some(second) = second {
                self.locals.push(Ok(second));
            }
            match self.eval(&c.loop_condition) {
                Err(EvalError::CostExceeded) => {
                    outcome = Err(EvalError::CostExceeded);
                    break;
                }
                Ok(Value::Bool(false)) => break,
                _ => {}
            }
            if let Some(condition) = append.condition {
                match self.eval(condition) {
                    Ok(Value::Bool(true)) => {}
                    // The `@result` of the other branch: cel-go resolves a conditional's
                    // branch that is a variable without charging for it.
                    Ok(Value::Bool(false)) => continue,
                    Ok(_) => {
                        outcome = Err(EvalError::Runtime("no such overload".to_string()));
                        break;
                    }
                    Err(err) => {
                        outcome = Err(err);
                        break;
                    }
                }
            }
            if let Err(err) = self.grow(&append.growth, &mut accumulated) {
                outcome = Err(err);
                break;
            }
        }
        self.locals.truncate(base);
        if let Err(err) = outcome {
            self.locals.truncate(accu);
            return Err(err);
        }
        self.locals[accu] = Ok(match accumulated {
            Accumulated::List(items) => Value::list(items),
            Accumulated::Map(map) => Value::Map(std::sync::Arc::new(map)),
        });
        let result = self.eval(&c.result);
        self.locals.truncate(accu);
        result
    }

    /// One step: `@result + [elements]` or `cel.@mapInsert(@result, ...)`.
    fn grow(
        &mut self,
        growth: &Growth<'_>,
        accumulated: &mut Accumulated,
    ) -> Result<(), EvalError> {
        self.charge(cost::SELECT_AND_IDENT)?;
        let (Growth::Append(exprs) | Growth::Insert(exprs)) = growth;
        let mut values = Vec::with_capacity(exprs.len());
        for expr in *exprs {
            values.push(self.eval(expr)?);
        }
        match accumulated {
            Accumulated::List(items) => {
                // `[e]` is free when `e` is a constant (cel-go's `OptOptimize`).
                let list = if exprs.iter().all(cost::is_constant) {
                    0
                } else {
                    cost::LIST_CREATE_BASE
                };
                self.charge(list + 1)?;
                items.extend(values);
                Ok(())
            }
            Accumulated::Map(map) => {
                self.charge(1)?;
                functions::map_insert(map, &values)
            }
        }
    }
}
