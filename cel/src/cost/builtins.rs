//! Call estimates by overload id: those cel-go's `ext` lists (version 3) and sets libraries
//! register (`ext/lists.go`, `ext/sets.go`), which take precedence over every other, and
//! cel-go's own for the standard library (`checker/cost.go` `functionCost`): string
//! traversals by 0.1 a character, regexes by 0.25 a pattern character, `in` by the list's
//! size, concatenations by their result, equality by the smaller operand, and 1 for
//! everything else.

use std::collections::HashMap;
use std::ops::Add;
use std::sync::OnceLock;

use super::walk::{Coster, Node};
use super::{
    CostEstimate, LIST_CREATE_BASE_COST, REGEX_STRING_LENGTH_COST_FACTOR,
    STRING_TRAVERSAL_COST_FACTOR, Size,
};
use crate::ast::{Expr, ExprKind, Literal};
use crate::check::decls::{self, Overload};

/// A call's cost, and the size of its result where the estimate knows it.
#[derive(Clone, Copy, Debug)]
pub(super) struct CallEstimate {
    pub cost: CostEstimate,
    pub result_size: Option<Size>,
}

impl CallEstimate {
    pub(super) fn cost(cost: CostEstimate) -> Option<CallEstimate> {
        Some(CallEstimate {
            cost,
            result_size: None,
        })
    }

    pub(super) fn sized(cost: CostEstimate, size: Size) -> Option<CallEstimate> {
        Some(CallEstimate {
            cost,
            result_size: Some(size),
        })
    }
}

/// The declaration of an overload by its id.
pub(super) fn overload(id: &str) -> Option<&'static Overload> {
    static BY_ID: OnceLock<HashMap<&'static str, &'static Overload>> = OnceLock::new();
    let by_id = BY_ID.get_or_init(|| {
        let mut map = HashMap::new();
        for o in decls::overloads() {
            map.entry(o.id).or_insert(o);
        }
        map
    });
    by_id.get(id).copied()
}

/// What a function estimate takes as a node's size: the size cel-go derived, else the
/// caller's, else unknown (cel-go's `estimateSize` in `ext`, Kubernetes' `sizeEstimate`).
pub(super) fn estimate_size(coster: &Coster<'_>, node: &Node<'_>) -> Size {
    node.computed
        .or_else(|| coster.estimate_size(&node.path, &node.ty))
        .unwrap_or(Size::unknown())
}

/// cel-go's `sizeOrUnknown` of a node: only the size it derived.
fn size_or_unknown(node: &Node<'_>) -> Size {
    node.computed.unwrap_or(Size::unknown())
}

/// An integer literal's value, 0 for a negative one, `default` for anything else (cel-go's
/// `nodeAsIntValue`).
fn int_literal(node: &Node<'_>, default: u64) -> u64 {
    match node.expr.map(|e| &e.kind) {
        Some(ExprKind::Literal(Literal::Int(v))) => u64::try_from(*v).unwrap_or(0),
        _ => default,
    }
}

/// A list call costing `factor` per element of `size`, plus 1, plus a list's allocation.
fn allocating_list_call(factor: f64, size: Size) -> Option<CallEstimate> {
    let cost = size
        .multiply_by_cost_factor(factor)
        .add(CostEstimate::fixed(1))
        .add(CostEstimate::fixed(LIST_CREATE_BASE_COST));
    CallEstimate::sized(cost, size)
}

/// The estimates cel-go's `ext` lists (version 3) and sets libraries register by overload.
pub(super) fn extension(
    coster: &Coster<'_>,
    overload: &str,
    target: Option<&Node<'_>>,
    args: &[Node<'_>],
) -> Option<CallEstimate> {
    match (overload, target, args) {
        ("list_sets_contains_list" | "list_sets_intersects_list", _, [a, b]) => {
            sets(coster, 1.0, a, b)
        }
        // Equivalence is two containment checks.
        ("list_sets_equivalent_list", _, [a, b]) => sets(coster, 2.0, a, b),
        ("list_slice", Some(list), [start, end]) => {
            let size = estimate_size(coster, list);
            let start = int_literal(start, 0);
            let end = int_literal(end, size.max);
            // Go's unsigned subtraction wraps.
            allocating_list_call(1.0, Size::fixed(end.wrapping_sub(start)))
        }
        ("lists_range", None, [n]) => {
            allocating_list_call(1.0, Size::fixed(int_literal(n, u64::MAX)))
        }
        ("list_reverse", Some(list), []) => allocating_list_call(1.0, estimate_size(coster, list)),
        ("list_flatten" | "list_flatten_int", Some(list), []) => {
            allocating_list_call(1.0, estimate_size(coster, list))
        }
        ("list_flatten" | "list_flatten_int", Some(list), [depth]) => {
            let depth = int_literal(depth, u64::MAX) as f64;
            allocating_list_call(depth, estimate_size(coster, list))
        }
        ("list_distinct", Some(list), []) => {
            let size = estimate_size(coster, list);
            allocating_list_call(2.0, size.multiply(size))
        }
        _ => {
            let element = overload.strip_prefix("list_")?;
            if let Some(element) = element.strip_suffix("_sortByAssociatedKeys") {
                let [keys] = args else { return None };
                target?;
                return sort(coster, keys, element);
            }
            let element = element.strip_suffix("_sort")?;
            match (target, args) {
                (Some(list), []) => sort(coster, list, element),
                _ => None,
            }
        }
    }
}

fn sets(coster: &Coster<'_>, factor: f64, a: &Node<'_>, b: &Node<'_>) -> Option<CallEstimate> {
    let cost = estimate_size(coster, a)
        .multiply(estimate_size(coster, b))
        .multiply_by_cost_factor(factor)
        .add(CostEstimate::fixed(1));
    CallEstimate::cost(cost)
}

/// Sorting compares every pair, strings and bytes by a traversal more.
fn sort(coster: &Coster<'_>, list: &Node<'_>, element: &str) -> Option<CallEstimate> {
    let size = estimate_size(coster, list);
    let mut factor = 2.0;
    if element == "string" || element == "bytes" {
        factor += STRING_TRAVERSAL_COST_FACTOR;
    }
    allocating_list_call(factor, size.multiply(size))
}

/// cel-go's estimates of its standard library and the `ext` strings functions it prices.
#[allow(clippy::too_many_arguments)]
pub(super) fn standard(
    coster: &mut Coster<'_>,
    e: &Expr,
    overload: &str,
    target: Option<&Node<'_>>,
    args: &[Expr],
    nodes: &[Node<'_>],
    arg_costs: &[CostEstimate],
    arg_sum: CostEstimate,
) -> CallEstimate {
    let traversal = |size: Size| size.multiply_by_cost_factor(STRING_TRAVERSAL_COST_FACTOR);
    let plain = |cost: CostEstimate| CallEstimate {
        cost: cost.add(arg_sum),
        result_size: None,
    };
    let sized = |cost: CostEstimate, size: Size| CallEstimate {
        cost: cost.add(arg_sum),
        result_size: Some(size),
    };
    match (overload, target, nodes) {
        ("string_format", Some(format), _) => plain(traversal(size_or_unknown(format))),
        ("string_to_bytes", _, [s]) => {
            let size = size_or_unknown(s);
            // At most four bytes a character (Go's multiplication wraps).
            let result = Size {
                min: size.min,
                max: size.max.wrapping_mul(4),
            };
            sized(traversal(size), result)
        }
        ("bytes_to_string", _, [b]) => {
            let size = size_or_unknown(b);
            let result = Size {
                min: size.min / 4,
                max: size.max,
            };
            sized(traversal(size), result)
        }
        ("strings_quote", _, [s]) => {
            let size = size_or_unknown(s);
            // Every character may be escaped; two quotes are added.
            let result = Size {
                min: size.min.wrapping_add(2),
                max: size.max.wrapping_mul(2).wrapping_add(2),
            };
            sized(traversal(size), result)
        }
        ("starts_with_string" | "ends_with_string", _, [prefix]) => {
            plain(traversal(size_or_unknown(prefix)))
        }
        ("in_list", _, [_, list]) => plain(size_or_unknown(list).multiply_by_cost_factor(1.0)),
        ("matches_string", Some(s), [pattern]) => {
            // One more than the string's length, so that an empty string against an
            // expensive pattern still costs.
            let string_cost = traversal(size_or_unknown(s).add(Size::fixed(1)));
            let regex_cost =
                size_or_unknown(pattern).multiply_by_cost_factor(REGEX_STRING_LENGTH_COST_FACTOR);
            plain(string_cost.multiply(regex_cost))
        }
        ("contains_string", Some(s), [sub]) => {
            plain(traversal(size_or_unknown(s)).multiply(traversal(size_or_unknown(sub))))
        }
        ("logical_and" | "logical_or", _, _) if arg_costs.len() == 2 => {
            // Short-circuiting: at least the left operand, at most both.
            let (lhs, rhs) = (arg_costs[0], arg_costs[1]);
            let cost = CostEstimate {
                min: lhs.min,
                max: lhs.add(rhs).max,
            };
            CallEstimate {
                cost,
                result_size: None,
            }
        }
        ("conditional", _, [_, yes, no]) if args.len() == 3 => {
            let size = size_or_unknown(yes).union(size_or_unknown(no));
            let entry = coster.union_entry_sizes(&args[1], &args[2]);
            coster.set_entry_size(e, entry);
            let cost = arg_costs[0].add(arg_costs[1].union(arg_costs[2]));
            CallEstimate {
                cost,
                result_size: Some(size),
            }
        }
        ("add_string" | "add_bytes" | "add_list", _, [lhs, rhs]) if args.len() == 2 => {
            let size = size_or_unknown(lhs).add(size_or_unknown(rhs));
            let entry = coster.union_entry_sizes(&args[0], &args[1]);
            coster.set_entry_size(e, entry);
            if overload == "add_list" {
                // Concatenating lists is O(1) to cel-go; the size is tracked all the same.
                sized(CostEstimate::fixed(1), size)
            } else {
                sized(traversal(size), size)
            }
        }
        (
            "less_string"
            | "greater_string"
            | "less_equals_string"
            | "greater_equals_string"
            | "less_bytes"
            | "greater_bytes"
            | "less_equals_bytes"
            | "greater_equals_bytes"
            | "equals"
            | "not_equals",
            _,
            [lhs, rhs],
        ) => {
            let smallest_max = size_or_unknown(lhs).max.min(size_or_unknown(rhs).max);
            let cost = CostEstimate {
                min: u64::from(smallest_max > 0),
                max: smallest_max,
            };
            plain(traversal(cost))
        }
        _ => plain(CostEstimate::fixed(1)),
    }
}
