//! Calls: the operators that do not evaluate all their arguments (`&&`, `||`, `_?_:_`,
//! `@not_strictly_false`, the optional `or` and `orValue`), indexing, and the dispatch of
//! every other call to the standard library, then to Kubernetes' libraries.

use std::sync::Arc;

use crate::ast::{Expr, ExprKind};
use crate::{EvalError, Value};

use super::plan::{Callee, Function};
use super::{Interpreter, Outcome, convert, cost, functions};

/// cel-go's error for a call no overload of the function accepts.
pub(crate) fn no_such_overload() -> EvalError {
    EvalError::Runtime("no such overload".to_string())
}

impl Interpreter<'_> {
    #[inline(never)]
    pub(super) fn eval_call(
        &mut self,
        callee: &Callee,
        target: Option<&Expr>,
        args: &[Expr],
    ) -> Outcome {
        match (callee.function, args) {
            (Function::And, [a, b]) => return self.eval_logic(a, b, false),
            (Function::Or, [a, b]) => return self.eval_logic(a, b, true),
            (Function::Conditional, [condition, truthy, falsy]) => {
                return match self.eval(condition)? {
                    Value::Bool(true) => self.eval_branch(truthy),
                    Value::Bool(false) => self.eval_branch(falsy),
                    _ => Err(no_such_overload()),
                };
            }
            (Function::NotStrictlyFalse, [arg]) => {
                let value = self.eval(arg);
                self.charge(1)?;
                return match value {
                    Ok(Value::Bool(b)) => Ok(Value::Bool(b)),
                    Err(EvalError::CostExceeded) => Err(EvalError::CostExceeded),
                    _ => Ok(Value::Bool(true)),
                };
            }
            (Function::Index, [operand, index]) => return self.eval_index(operand, index, false),
            (Function::OptionalIndex, [operand, index]) => {
                return self.eval_index(operand, index, true);
            }
            (Function::OptionalOr | Function::OptionalOrValue, [alternative]) => {
                if let Some(target) = target {
                    return self.eval_optional_or(target, callee, alternative);
                }
            }
            _ => {}
        }
        let target = target.filter(|_| callee.method);
        let count = args.len() + usize::from(target.is_some());
        // Most calls take at most three values: those are kept on the stack.
        let mut few = [Value::Null, Value::Null, Value::Null];
        let mut many = Vec::new();
        let values: &mut [Value] = if count <= few.len() {
            &mut few[..count]
        } else {
            many.resize(count, Value::Null);
            &mut many
        };
        for (slot, expr) in values.iter_mut().zip(target.into_iter().chain(args)) {
            *slot = self.eval(expr)?;
        }
        // Kubernetes runs cel-go with `OptOptimize`: a conversion of a constant and a test
        // of membership in a constant list are computed when the program is planned.
        if callee.planned {
            return functions::standard(callee, false, values)
                .unwrap_or_else(|| Err(no_such_overload()));
        }
        self.call_function(callee, callee.method, values)
    }

    /// A branch of `_?_:_`: cel-go plans a conditional as an attribute whose branches, when
    /// they are attributes themselves (`a`, `a.b`, `a[0]`), are resolved without charging
    /// for the variable they start from.
    fn eval_branch(&mut self, branch: &Expr) -> Outcome {
        self.free_root = is_attribute(branch);
        let outcome = self.eval(branch);
        self.free_root = false;
        outcome
    }

    /// `_&&_` (`decisive` false) and `_||_` (`decisive` true): either side equal to
    /// `decisive` decides, whatever error the other side gives.
    fn eval_logic(&mut self, a: &Expr, b: &Expr, decisive: bool) -> Outcome {
        let left = self.eval(a);
        match &left {
            Ok(Value::Bool(v)) if *v == decisive => return Ok(Value::Bool(decisive)),
            Err(EvalError::CostExceeded) => return Err(EvalError::CostExceeded),
            _ => {}
        }
        let right = self.eval(b);
        match &right {
            Ok(Value::Bool(v)) if *v == decisive => return Ok(Value::Bool(decisive)),
            Err(EvalError::CostExceeded) => return Err(EvalError::CostExceeded),
            _ => {}
        }
        match (left, right) {
            (Ok(Value::Bool(_)), Ok(Value::Bool(_))) => Ok(Value::Bool(!decisive)),
            (Err(err), _) | (_, Err(err)) => Err(err),
            _ => Err(no_such_overload()),
        }
    }

    /// `opt.or(other)` and `opt.orValue(v)`: the alternative is evaluated only when `opt` is
    /// empty.
    fn eval_optional_or(&mut self, target: &Expr, callee: &Callee, alternative: &Expr) -> Outcome {
        let receiver = self.eval(target)?;
        let or = callee.function == Function::OptionalOr;
        match receiver {
            Value::Optional(Some(inner)) => {
                self.charge(1)?;
                Ok(if or {
                    Value::Optional(Some(inner))
                } else {
                    (*inner).clone()
                })
            }
            Value::Optional(None) => {
                let other = self.eval(alternative)?;
                self.charge(1)?;
                match (or, other) {
                    (true, other @ Value::Optional(_)) => Ok(other),
                    (false, other) => Ok(other),
                    _ => Err(no_such_overload()),
                }
            }
            receiver => {
                let other = self.eval(alternative)?;
                self.call_function(callee, true, &[receiver, other])
            }
        }
    }

    /// `operand[index]`, and `operand[?index]` (`optional`), which gives an optional.
    fn eval_index(&mut self, operand: &Expr, index: &Expr, optional: bool) -> Outcome {
        let target = self.eval(operand)?;
        self.charge_relative(operand)?;
        let key = self.eval(index)?;
        self.charge(cost::SELECT_AND_IDENT)?;
        match target {
            Value::Optional(None) => Ok(Value::Optional(None)),
            Value::Optional(Some(inner)) => {
                Ok(Value::Optional(index_value(&inner, &key)?.map(Arc::new)))
            }
            target if optional => Ok(Value::Optional(index_value(&target, &key)?.map(Arc::new))),
            target => match index_value(&target, &key)? {
                Some(found) => Ok(found),
                None if matches!(target, Value::List(_)) => Err(EvalError::Runtime(format!(
                    "index out of bounds: {}",
                    convert::go_format(&key)
                ))),
                None => Err(EvalError::Runtime(format!(
                    "no such key: {}",
                    convert::go_format(&key)
                ))),
            },
        }
    }

    /// Calls the function of `callee` with evaluated arguments (`values[0]` is the receiver
    /// of a method call): the standard library first, then Kubernetes' libraries.
    pub(super) fn call_function(
        &mut self,
        callee: &Callee,
        method: bool,
        values: &[Value],
    ) -> Outcome {
        if callee.function == Function::Add {
            // Charged first: a concatenation the budget cannot pay for is never built.
            self.charge(cost::add(values))?;
            return functions::add(values);
        }
        if let Some(outcome) = functions::standard(callee, method, values) {
            self.charge(cost::call(callee, values))?;
            return outcome;
        }
        let (receiver, args) = match (method, values.split_first()) {
            (true, Some((receiver, args))) => (Some(receiver), args),
            _ => (None, values),
        };
        match crate::library::call(&callee.name, receiver, args, self.budget()) {
            Some(outcome) => outcome,
            None => Err(no_such_overload()),
        }
    }
}

/// Whether `expr` is a variable or a chain of selections and indexes from one.
fn is_attribute(expr: &Expr) -> bool {
    let mut node = expr;
    loop {
        match &node.kind {
            ExprKind::Ident(_) => return true,
            ExprKind::Select {
                operand,
                test_only: false,
                ..
            } => node = operand,
            ExprKind::Call {
                target: None,
                function,
                args,
            } if &**function == "_[_]" && args.len() == 2 => node = &args[0],
            _ => return false,
        }
    }
}

/// `target[key]`: `Some` element or value, `None` when the list or map has none there.
fn index_value(target: &Value, key: &Value) -> Result<Option<Value>, EvalError> {
    match target {
        Value::List(items) => {
            let index = match key {
                Value::Int(i) => *i,
                Value::Uint(u) => i64::try_from(*u).unwrap_or(i64::MAX),
                Value::Double(d) if d.fract() == 0.0 && d.is_finite() => {
                    if *d >= 9.223_372_036_854_776e18 || *d < -9.223_372_036_854_776e18 {
                        return Ok(None);
                    }
                    *d as i64
                }
                Value::Double(d) => {
                    return Err(EvalError::Runtime(format!(
                        "unsupported index value {} in list",
                        convert::go_format(&Value::Double(*d))
                    )));
                }
                other => {
                    return Err(EvalError::Runtime(format!(
                        "unsupported index type '{}' in list",
                        other.type_name()
                    )));
                }
            };
            Ok(usize::try_from(index)
                .ok()
                .and_then(|i| items.get(i))
                .cloned())
        }
        Value::Map(map) => Ok(map.lookup(key)?.cloned()),
        _ => Ok(None),
    }
}
