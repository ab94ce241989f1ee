//! The walk over a checked expression, as cel-go's `coster`: the cost of each node kind, the
//! field paths of selections, indexes and comprehension variables (which the caller's
//! [`SizeEstimator`] sizes), and the sizes cel-go derives from the expression itself
//! (literals, concatenations, results of library calls, entries of built lists and maps).

use std::collections::HashMap;
use std::ops::Add;
use std::sync::Arc;

use super::builtins::{self, CallEstimate};
use super::{
    CostEstimate, LIST_CREATE_BASE_COST, MAP_CREATE_BASE_COST, Path, SELECT_AND_IDENT_COST,
    STRUCT_CREATE_BASE_COST, Size, SizeEstimator,
};
use crate::Type;
use crate::ast::{ACCUMULATOR, Comprehension, Expr, ExprKind, Literal};
use crate::check::Checked;

/// The accumulator name of older cel-go macros.
const LEGACY_ACCUMULATOR: &str = "__result__";

/// How deep the walk goes; a checked expression is far shallower (the parser refuses
/// nesting past 250), so this only guards against a tree built some other way.
const MAX_DEPTH: usize = 1000;

/// The kind of container a comprehension iterates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Container {
    List,
    Map,
}

/// cel-go's `entrySizeEstimate`: the sizes of a built list's or map's keys (a list's are its
/// indices, size 1) and values.
#[derive(Clone, Copy, Debug)]
pub(super) struct EntrySize {
    pub container: Container,
    pub key: Size,
    pub value: Size,
}

fn union_entries(a: Option<EntrySize>, b: Option<EntrySize>) -> Option<EntrySize> {
    let (a, b) = (a?, b?);
    Some(EntrySize {
        container: a.container,
        key: a.key.union(b.key),
        value: a.value.union(b.value),
    })
}

/// A variable a comprehension binds: its path, size and entry sizes.
#[derive(Clone, Debug)]
struct Local {
    path: Path,
    size: Option<Size>,
    entry: Option<EntrySize>,
}

/// What a function estimate knows of an argument (cel-go's `AstNode`).
#[derive(Clone, Debug)]
pub(super) struct Node<'e> {
    /// `None` for a list's element type (cel-go's `itemsNode`).
    pub expr: Option<&'e Expr>,
    pub path: Path,
    pub ty: Type,
    /// The size cel-go derived for the node, if any.
    pub computed: Option<Size>,
}

pub(super) struct Coster<'a> {
    checked: &'a Checked,
    sizes: &'a dyn SizeEstimator,
    paths: HashMap<u32, Path>,
    locals: HashMap<Arc<str>, Vec<Local>>,
    computed_sizes: HashMap<u32, Size>,
    computed_entries: HashMap<u32, EntrySize>,
}

impl<'a> Coster<'a> {
    pub(super) fn new(checked: &'a Checked, sizes: &'a dyn SizeEstimator) -> Coster<'a> {
        Coster {
            checked,
            sizes,
            paths: HashMap::new(),
            locals: HashMap::new(),
            computed_sizes: HashMap::new(),
            computed_entries: HashMap::new(),
        }
    }

    /// The cost of `e`.
    pub(super) fn cost(&mut self, e: &Expr, depth: usize) -> CostEstimate {
        if depth > MAX_DEPTH {
            return CostEstimate::unknown();
        }
        let depth = depth + 1;
        match &e.kind {
            ExprKind::Literal(_) => CostEstimate::fixed(0),
            ExprKind::Ident(name) => {
                let path = match self.peek(name) {
                    Some(local) => local.path.clone(),
                    None => vec![name.clone()],
                };
                self.paths.insert(e.id, path);
                CostEstimate::fixed(SELECT_AND_IDENT_COST)
            }
            ExprKind::Select {
                operand,
                field,
                test_only,
                optional,
            } => self.cost_select(e, operand, field, *test_only, *optional, depth),
            ExprKind::Call {
                target,
                function,
                args,
            } => self.cost_call(e, target.as_deref(), function, args, depth),
            ExprKind::List { elements, .. } => {
                let mut sum = CostEstimate::default();
                let mut items = Size {
                    min: if elements.is_empty() { 0 } else { u64::MAX },
                    max: 0,
                };
                for element in elements {
                    sum = sum.add(self.cost(element, depth));
                    items = items.union(self.size_or_unknown(element));
                }
                self.computed_entries.insert(
                    e.id,
                    EntrySize {
                        container: Container::List,
                        key: Size::fixed(1),
                        value: items,
                    },
                );
                sum.add(CostEstimate::fixed(LIST_CREATE_BASE_COST))
            }
            ExprKind::Map { entries } => {
                let mut sum = CostEstimate::default();
                let start = if entries.is_empty() { 0 } else { u64::MAX };
                let mut keys = Size { min: start, max: 0 };
                let mut values = Size { min: start, max: 0 };
                for entry in entries {
                    sum = sum.add(self.cost(&entry.key, depth));
                    sum = sum.add(self.cost(&entry.value, depth));
                    keys = keys.union(self.size_or_unknown(&entry.key));
                    values = values.union(self.size_or_unknown(&entry.value));
                }
                self.computed_entries.insert(
                    e.id,
                    EntrySize {
                        container: Container::Map,
                        key: keys,
                        value: values,
                    },
                );
                sum.add(CostEstimate::fixed(MAP_CREATE_BASE_COST))
            }
            ExprKind::Struct { fields, .. } => {
                let mut sum = CostEstimate::default();
                for field in fields {
                    sum = sum.add(self.cost(&field.value, depth));
                }
                sum.add(CostEstimate::fixed(STRUCT_CREATE_BASE_COST))
            }
            ExprKind::Comprehension(comp) => {
                if is_bind(comp) {
                    self.cost_bind(e, comp, depth)
                } else {
                    self.cost_comprehension(e, comp, depth)
                }
            }
        }
    }

    fn cost_select(
        &mut self,
        e: &Expr,
        operand: &Expr,
        field: &Arc<str>,
        test_only: bool,
        optional: bool,
        depth: usize,
    ) -> CostEstimate {
        if test_only {
            // Kubernetes sets PresenceTestHasCost(false): only the operand costs.
            return self.cost(operand, depth);
        }
        if optional {
            // cel-go parses `a.?b` as the call `_?._(a, "b")`: the call costs 1 and its
            // result has no path.
            let sum = self.cost(operand, depth).add(CostEstimate::fixed(1));
            if let Some(size) = self.compute_size(e) {
                self.computed_sizes.insert(e.id, size);
            }
            return sum;
        }
        if let Some(Type::Type(_)) = self.type_of(e)
            && is_qualified_name(e)
        {
            // A qualified type name (`google.protobuf.Duration`) is one identifier to cel-go.
            return CostEstimate::fixed(SELECT_AND_IDENT_COST);
        }
        let mut sum = self.cost(operand, depth);
        if matches!(
            self.type_of(operand),
            Some(Type::Map(..) | Type::Object(_) | Type::Param(_))
        ) {
            sum = sum.add(CostEstimate::fixed(SELECT_AND_IDENT_COST));
        }
        let mut path = self.path_of(operand);
        path.push(field.clone());
        self.paths.insert(e.id, path);
        sum
    }

    fn cost_call(
        &mut self,
        e: &Expr,
        target: Option<&Expr>,
        function: &str,
        args: &[Expr],
        depth: usize,
    ) -> CostEstimate {
        if function == "dyn" && target.is_none() && args.len() == 1 {
            // dyn only disables type checking: 1 plus its argument, keeping its sizes.
            let cost = self.cost(&args[0], depth);
            self.copy_sizes(e.id, &args[0]);
            return CostEstimate::fixed(1).add(cost);
        }
        let mut arg_costs = Vec::with_capacity(args.len());
        let mut arg_nodes = Vec::with_capacity(args.len());
        for arg in args {
            arg_costs.push(self.cost(arg, depth));
            arg_nodes.push(self.node(arg));
        }
        let Some(ids) = self
            .checked
            .overloads
            .get(&e.id)
            .filter(|ids| !ids.is_empty())
        else {
            return CostEstimate::default();
        };
        let ids = ids.clone();
        // The checker resolves `format.named(x)` to the global function `format.named`: then
        // the "target" is part of the name, as it is in the AST cel-go's checker rewrites.
        let declared = builtins::overload(ids[0]);
        let receiver = target.filter(|_| declared.is_none_or(|o| o.receiver));
        let name = declared.map_or(function, |o| o.function);
        let mut sum = CostEstimate::default();
        let target_node = match receiver {
            Some(t) => {
                sum = sum.add(self.cost(t, depth));
                Some(self.node(t))
            }
            None => None,
        };
        let mut fn_cost = CostEstimate {
            min: u64::MAX,
            max: 0,
        };
        let mut result_size: Option<Size> = None;
        for id in ids {
            let estimate = self.function_cost(
                e,
                name,
                id,
                target_node.as_ref(),
                args,
                &arg_nodes,
                &arg_costs,
            );
            fn_cost = fn_cost.union(estimate.cost);
            if let Some(size) = estimate.result_size {
                result_size = Some(result_size.map_or(size, |r| r.union(size)));
            }
            let element = match id {
                "index_list" => Some("@items"),
                "index_map" => Some("@values"),
                _ => None,
            };
            if let (Some(element), Some(container)) = (element, args.first()) {
                result_size = self.entry_size(container).map(|entry| entry.value);
                let mut path = self.path_of(container);
                path.push(Arc::from(element));
                self.paths.insert(e.id, path);
            }
            if result_size.is_none() {
                result_size = self.compute_size(e);
            }
        }
        if let Some(size) = result_size {
            self.computed_sizes.insert(e.id, size);
        }
        sum.add(fn_cost)
    }

    /// cel-go's `functionCost`: the overload estimates the `ext` libraries register, then
    /// Kubernetes' estimator, then cel-go's own; each plus the arguments' costs.
    #[allow(clippy::too_many_arguments)]
    fn function_cost(
        &mut self,
        e: &Expr,
        function: &str,
        overload: &str,
        target: Option<&Node<'_>>,
        args: &[Expr],
        arg_nodes: &[Node<'_>],
        arg_costs: &[CostEstimate],
    ) -> CallEstimate {
        let arg_sum = arg_costs
            .iter()
            .fold(CostEstimate::default(), |sum, c| sum.add(*c));
        let found = builtins::extension(self, overload, target, arg_nodes)
            .or_else(|| super::kubernetes::estimate(self, function, overload, target, arg_nodes));
        if let Some(estimate) = found {
            return CallEstimate {
                cost: estimate.cost.add(arg_sum),
                result_size: estimate.result_size,
            };
        }
        builtins::standard(
            self, e, overload, target, args, arg_nodes, arg_costs, arg_sum,
        )
    }

    fn cost_comprehension(&mut self, e: &Expr, comp: &Comprehension, depth: usize) -> CostEstimate {
        let range = &comp.iter_range;
        let mut sum = self.cost(range, depth);
        sum = sum.add(self.cost(&comp.accu_init, depth));
        self.push_local(&comp.accu_var, &comp.accu_init);
        match &comp.iter_var2 {
            Some(value_var) => {
                self.push_iter(&comp.iter_var, range, IterVar::Key);
                self.push_iter(value_var, range, IterVar::Value);
            }
            None => self.push_iter(&comp.iter_var, range, IterVar::Single),
        }
        let loop_cost = self.cost(&comp.loop_condition, depth);
        let step_cost = self.cost(&comp.loop_step, depth);
        self.pop(&comp.iter_var);
        if let Some(value_var) = &comp.iter_var2 {
            self.pop(value_var);
        }
        sum = sum.add(self.cost(&comp.result, depth));
        self.pop(&comp.accu_var);
        let count = self.size_or_unknown(range);
        sum = sum.add(count.multiply(step_cost.add(loop_cost)));
        match &comp.accu_init.kind {
            ExprKind::Literal(_) => {
                if let Some(size) = self.compute_size(&comp.accu_init) {
                    self.computed_sizes.insert(e.id, size);
                }
            }
            ExprKind::List { .. } | ExprKind::Map { .. } => {
                self.computed_sizes.insert(e.id, count);
                if let Some(entry) = self.entry_size(&comp.loop_step) {
                    self.computed_entries.insert(e.id, entry);
                }
            }
            _ => {}
        }
        sum
    }

    fn cost_bind(&mut self, e: &Expr, comp: &Comprehension, depth: usize) -> CostEstimate {
        // Binds are lazy, but cel-go keeps the cost of the empty range.
        let mut sum = self.cost(&comp.iter_range, depth);
        sum = sum.add(self.cost(&comp.accu_init, depth));
        self.push_local(&comp.accu_var, &comp.accu_init);
        sum = sum.add(self.cost(&comp.result, depth));
        self.pop(&comp.accu_var);
        self.copy_sizes(e.id, &comp.result);
        sum
    }

    fn push_local(&mut self, name: &Arc<str>, e: &Expr) {
        let local = Local {
            path: self.path_of(e),
            entry: self.entry_size(e),
            size: self.compute_size(e),
        };
        self.locals.entry(name.clone()).or_default().push(local);
    }

    fn push_iter(&mut self, name: &Arc<str>, range: &Expr, var: IterVar) {
        let entry = self.entry_size(range);
        let container = entry.map(|e| e.container).or(match self.type_of(range) {
            Some(Type::List(_)) => Some(Container::List),
            Some(Type::Map(..)) => Some(Container::Map),
            _ => None,
        });
        let list = container == Some(Container::List);
        let (size, element) = match var {
            IterVar::Key => (
                entry.map(|e| e.key),
                if list { "@indices" } else { "@keys" },
            ),
            IterVar::Value => (
                entry.map(|e| e.value),
                if list { "@items" } else { "@values" },
            ),
            IterVar::Single if list => (entry.map(|e| e.value), "@items"),
            IterVar::Single => (entry.map(|e| e.key), "@keys"),
        };
        let mut path = self.path_of(range);
        path.push(Arc::from(element));
        self.locals.entry(name.clone()).or_default().push(Local {
            path,
            size,
            entry: None,
        });
    }

    fn peek(&self, name: &str) -> Option<&Local> {
        self.locals.get(name).and_then(|stack| stack.last())
    }

    fn pop(&mut self, name: &str) {
        if let Some(stack) = self.locals.get_mut(name) {
            stack.pop();
        }
    }

    pub(super) fn type_of(&self, e: &Expr) -> Option<&Type> {
        self.checked.types.get(&e.id)
    }

    /// cel-go's `getPath`.
    fn path_of(&self, e: &Expr) -> Path {
        if let ExprKind::Ident(name) = &e.kind
            && let Some(local) = self.peek(name)
        {
            return local.path.clone();
        }
        self.paths.get(&e.id).cloned().unwrap_or_default()
    }

    /// cel-go's `newAstNode`: paths through accumulators are not offered to estimators.
    pub(super) fn node<'e>(&mut self, e: &'e Expr) -> Node<'e> {
        let mut path = self.path_of(e);
        if path
            .first()
            .is_some_and(|v| &**v == ACCUMULATOR || &**v == LEGACY_ACCUMULATOR)
        {
            path.clear();
        }
        Node {
            expr: Some(e),
            path,
            ty: self.type_of(e).cloned().unwrap_or(Type::Dyn),
            computed: self.compute_size(e),
        }
    }

    /// The caller's size for a path or type (cel-go's `CostEstimator.EstimateSize`).
    pub(super) fn estimate_size(&self, path: &[Arc<str>], ty: &Type) -> Option<Size> {
        let by_path = if path.is_empty() {
            None
        } else {
            let parts: Vec<&str> = path.iter().map(|p| &**p).collect();
            self.sizes.size(&parts)
        };
        by_path
            .or_else(|| self.sizes.size_of_type(ty))
            .map(|(min, max)| Size { min, max })
    }

    /// cel-go's `computeSize`: the size derived from the expression, else the caller's, else
    /// 1 for scalars, else what a comprehension variable was bound to.
    pub(super) fn compute_size(&mut self, e: &Expr) -> Option<Size> {
        if let Some(size) = self.computed_sizes.get(&e.id) {
            return Some(*size);
        }
        if let Some(size) = expr_size(e) {
            return Some(size);
        }
        let ty = self.type_of(e).cloned().unwrap_or(Type::Dyn);
        if let Some(size) = self.estimate_size(&self.path_of(e), &ty) {
            self.computed_sizes.insert(e.id, size);
            return Some(size);
        }
        if is_scalar(&ty) {
            return Some(Size::fixed(1));
        }
        if let ExprKind::Ident(name) = &e.kind {
            return self.peek(name).and_then(|local| local.size);
        }
        None
    }

    pub(super) fn size_or_unknown(&mut self, e: &Expr) -> Size {
        self.compute_size(e).unwrap_or(Size::unknown())
    }

    pub(super) fn entry_size(&self, e: &Expr) -> Option<EntrySize> {
        if let Some(entry) = self.computed_entries.get(&e.id) {
            return Some(*entry);
        }
        if let ExprKind::Ident(name) = &e.kind {
            return self.peek(name).and_then(|local| local.entry);
        }
        None
    }

    pub(super) fn set_entry_size(&mut self, e: &Expr, entry: Option<EntrySize>) {
        if let Some(entry) = entry {
            self.computed_entries.insert(e.id, entry);
        }
    }

    pub(super) fn union_entry_sizes(&self, a: &Expr, b: &Expr) -> Option<EntrySize> {
        union_entries(self.entry_size(a), self.entry_size(b))
    }

    fn copy_sizes(&mut self, id: u32, from: &Expr) {
        if let Some(size) = self.compute_size(from) {
            self.computed_sizes.insert(id, size);
        }
        if let Some(entry) = self.entry_size(from) {
            self.computed_entries.insert(id, entry);
        }
    }
}

#[derive(Clone, Copy)]
enum IterVar {
    /// The one variable of `all(x, ...)`: a list's element or a map's key.
    Single,
    /// The first of two: a list's index or a map's key.
    Key,
    /// The second of two: a list's element or a map's value.
    Value,
}

/// cel-go's `isBind`: a fold over an empty list literal that never loops, binding a name
/// other than the accumulator (`optMap`, `optFlatMap`, `sortBy`).
fn is_bind(comp: &Comprehension) -> bool {
    matches!(&comp.iter_range.kind, ExprKind::List { elements, .. } if elements.is_empty())
        && matches!(
            comp.loop_condition.kind,
            ExprKind::Literal(Literal::Bool(false))
        )
        && &*comp.accu_var != ACCUMULATOR
        && &*comp.accu_var != LEGACY_ACCUMULATOR
}

/// Whether `e` is a chain of identifier and field selections (`google.protobuf.Duration`).
fn is_qualified_name(e: &Expr) -> bool {
    let mut e = e;
    for _ in 0..64 {
        match &e.kind {
            ExprKind::Ident(_) => return true,
            ExprKind::Select {
                operand,
                test_only: false,
                optional: false,
                ..
            } => e = operand,
            _ => return false,
        }
    }
    false
}

/// cel-go's `computeExprSize`: the exact size of a literal, list or map written out.
fn expr_size(e: &Expr) -> Option<Size> {
    let n = match &e.kind {
        ExprKind::Literal(Literal::String(s)) => s.chars().count() as u64,
        ExprKind::Literal(Literal::Bytes(b)) => b.len() as u64,
        ExprKind::Literal(_) => 1,
        ExprKind::List { elements, .. } => elements.len() as u64,
        ExprKind::Map { entries } => entries.len() as u64,
        _ => return None,
    };
    Some(Size::fixed(n))
}

/// cel-go's `isScalar`: types whose values have size 1.
fn is_scalar(ty: &Type) -> bool {
    match ty {
        Type::Bool | Type::Double | Type::Duration | Type::Int | Type::Timestamp | Type::Uint => {
            true
        }
        Type::Optional(inner) => is_scalar(inner),
        _ => false,
    }
}
