//! Kubernetes' call estimates (`apiserver/pkg/cel/library/cost.go`, `EstimateCallCost`), by
//! function name, for its libraries (lists, regex, urls, quantity, ip, cidr, format, semver,
//! authz) and for the `ext` strings functions it prices (`lowerAscii`, `replace`, `split`, `join`,
//! ...). These are API: a change in any of them changes which CRD rules Kubernetes accepts.

use super::builtins::{CallEstimate, estimate_size};
use super::walk::{Coster, Node};
use super::{CostEstimate, REGEX_STRING_LENGTH_COST_FACTOR, STRING_TRAVERSAL_COST_FACTOR, Size};
use crate::Type;
use crate::ast::{ExprKind, Literal};
use std::ops::Add;

/// The longest name a format may have (Kubernetes' `MaxFormatSize`).
const MAX_FORMAT_SIZE: u64 = 64;
/// The regex length `validate` assumes for any format (`MaxNameFormatRegexSize`).
const MAX_NAME_FORMAT_REGEX_SIZE: f64 = 128.0;

fn traversal(size: Size) -> CostEstimate {
    size.multiply_by_cost_factor(STRING_TRAVERSAL_COST_FACTOR)
}

const ONE: CostEstimate = CostEstimate::fixed(1);

/// Kubernetes' estimate of a call to `function`, or `None` where it has none.
pub(super) fn estimate(
    coster: &Coster<'_>,
    function: &str,
    overload: &str,
    target: Option<&Node<'_>>,
    args: &[Node<'_>],
) -> Option<CallEstimate> {
    let size = |node: &Node<'_>| estimate_size(coster, node);
    match function {
        // An authorization check is fixed, so that an expression makes at most two.
        "check" => CallEstimate::cost(CostEstimate::fixed(crate::library::authz::CHECK_COST)),
        "serviceAccount" | "path" | "group" | "resource" | "subresource" | "namespace" | "name"
        | "allowed" | "reason" | "error" | "errored" => CallEstimate::cost(ONE),
        "fieldSelector" | "labelSelector" => {
            let [selector] = args else { return None };
            let length = size(selector);
            CallEstimate::cost(CostEstimate {
                min: crate::library::authz::selector_cost(length.min),
                max: crate::library::authz::selector_cost(length.max),
            })
        }
        "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" => {
            let target = target?;
            match element_node(target) {
                Some(element) => {
                    // 1 to compare each element, plus a traversal of strings and bytes.
                    let mut element_cost = ONE;
                    if matches!(element.ty, Type::String | Type::Bytes) {
                        element_cost = element_cost.add(traversal(size(&element)));
                    }
                    CallEstimate::cost(size(target).multiply(element_cost))
                }
                // The target is a string (`indexOf` and `lastIndexOf` of ext strings).
                None => CallEstimate::cost(traversal(size(target))),
            }
        }
        "url" => {
            let [s] = args else { return None };
            let size = size(s);
            CallEstimate::sized(traversal(size), size)
        }
        "lowerAscii" | "upperAscii" | "substring" | "trim" => {
            let size = size(target?);
            CallEstimate::sized(traversal(size), size)
        }
        "replace" => {
            let target = target?;
            let [old, new, ..] = args else { return None };
            replace(size(target), size(old), size(new))
        }
        "split" => {
            let size = size(target?);
            // At worst, an empty separator makes every character an element.
            let mut max = size.max;
            if let Some(limit) = args.get(1)
                && let Some(ExprKind::Literal(Literal::Int(n))) = limit.expr.map(|e| &e.kind)
            {
                // Go converts the limit to unsigned as it is.
                max = *n as u64;
            }
            let cost = size.multiply_by_cost_factor(2.0 * STRING_TRAVERSAL_COST_FACTOR);
            CallEstimate::sized(cost, Size { min: 0, max })
        }
        "join" => {
            let target = target?;
            let list_size = size(target);
            let mut result = match element_node(target) {
                Some(element) => list_size.multiply(size(&element)),
                None => Size::default(),
            };
            if let Some(separator) = args.first() {
                let separators = Size {
                    min: list_size.min.saturating_sub(1),
                    max: list_size.max.saturating_sub(1),
                };
                result = result.add(size(separator).multiply(separators));
            }
            CallEstimate::sized(traversal(result), result)
        }
        "find" | "findAll" => {
            let target = target?;
            let pattern = args.first()?;
            let size = size(target);
            // One more than the length, so that an empty string still costs.
            let string_cost = traversal(size.add(Size::fixed(1)));
            let regex_cost = estimate_size(coster, pattern)
                .multiply_by_cost_factor(REGEX_STRING_LENGTH_COST_FACTOR);
            // At worst every character is a match of its own.
            CallEstimate::sized(
                string_cost.multiply(regex_cost),
                Size {
                    min: 0,
                    max: size.max,
                },
            )
        }
        "cidr" | "isIP" | "isCIDR" | "quantity" | "isQuantity" | "semver" | "isSemver" => {
            CallEstimate::cost(traversal(size(args.first()?)))
        }
        "ip" if overload == "cidr_ip" => CallEstimate::cost(ONE),
        "ip" => CallEstimate::cost(traversal(size(args.first()?))),
        "ip.isCanonical" => {
            // Parsing, then comparing with the original.
            let cost =
                size(args.first()?).multiply_by_cost_factor(2.0 * STRING_TRAVERSAL_COST_FACTOR);
            CallEstimate::cost(cost)
        }
        "masked"
        | "prefixLength"
        | "family"
        | "isUnspecified"
        | "isLoopback"
        | "isLinkLocalMulticast"
        | "isLinkLocalUnicast"
        | "isGlobalUnicast"
        | "format.named"
        | "sign"
        | "asInteger"
        | "isInteger"
        | "asApproximateFloat"
        | "isGreaterThan"
        | "isLessThan"
        | "compareTo"
        | "add"
        | "sub"
        | "major"
        | "minor"
        | "patch"
        | "getScheme"
        | "getHostname"
        | "getHost"
        | "getPort"
        | "getEscapedPath"
        | "getQuery" => CallEstimate::cost(ONE),
        "containsIP" | "containsCIDR" => {
            let other = args.first()?;
            // Comparing two IPv4 or IPv6 addresses' bytes.
            let address = Size { min: 4, max: 16 };
            let mut cost = traversal(address.add(address));
            if function == "containsCIDR" {
                // Masking the base CIDR and comparing the prefix bits.
                cost = cost.add(traversal(address)).add(ONE);
            }
            if overload == "cidr_contains_ip_string" || overload == "cidr_contains_cidr_string" {
                // Parsing the string first.
                cost = cost.add(traversal(size(other)));
            }
            CallEstimate::cost(cost)
        }
        "validate" => {
            let s = args.first()?;
            let cost = traversal(size(s)).multiply_by_cost_factor(
                MAX_NAME_FORMAT_REGEX_SIZE * REGEX_STRING_LENGTH_COST_FACTOR,
            );
            CallEstimate::cost(cost)
        }
        "_==_" => equality(args),
        _ => None,
    }
}

/// Equality of two values of one Kubernetes type.
fn equality(args: &[Node<'_>]) -> Option<CallEstimate> {
    let [lhs, rhs] = args else { return None };
    if lhs.ty != rhs.ty {
        return None;
    }
    match lhs.ty {
        Type::Opaque("net.IP" | "net.CIDR" | "kubernetes.Quantity" | "kubernetes.Semver") => {
            CallEstimate::cost(ONE)
        }
        Type::Opaque(name) if name.starts_with("kubernetes.authorization.") => {
            CallEstimate::cost(ONE)
        }
        Type::Opaque("kubernetes.NamedFormat") => CallEstimate::cost(traversal(Size {
            min: 1,
            max: MAX_FORMAT_SIZE,
        })),
        Type::Opaque("kubernetes.URL") => {
            // Kubernetes takes both sizes from the right operand.
            let max = rhs.computed.map_or(1, |s| s.max);
            CallEstimate::cost(traversal(Size { min: 1, max }))
        }
        _ => None,
    }
}

/// The node of a list's elements (Kubernetes' `listElementNode`): the element type, and the
/// list's path and `@items` where it has one.
fn element_node<'e>(list: &Node<'e>) -> Option<Node<'e>> {
    let ty = match &list.ty {
        Type::List(t) | Type::Map(t, _) | Type::Optional(t) | Type::Type(t) => (**t).clone(),
        _ => return None,
    };
    let mut path = list.path.clone();
    if !path.is_empty() {
        path.push("@items".into());
    }
    Some(Node {
        expr: None,
        path,
        ty,
        computed: None,
    })
}

/// `replace`: a traversal and the result's construction, both by the target's length; the
/// result is as long as the most (fewest) replacements of the shortest (longest) substring
/// with the longest (shortest) replacement make it.
fn replace(target: Size, old: Size, new: Size) -> Option<CallEstimate> {
    let mut count = Size::default();
    let mut retained = Size::default();
    if old.min == 0 {
        // Replacing "" surrounds every character.
        count.max = target.max.saturating_add(1);
        retained.max = target.max;
    } else if new.max <= old.min {
        retained.max = target.max;
    } else {
        count.max = (target.max as f64 / old.min as f64).ceil() as u64;
    }
    if old.max == 0 {
        count.min = target.min.saturating_add(1);
        retained.min = target.min;
    } else if old.max <= new.min {
        retained.min = target.min;
    } else {
        count.min = (target.min as f64 / old.max as f64).ceil() as u64;
    }
    let size = count.multiply(new).add(retained);
    let cost = target.multiply_by_cost_factor(2.0 * STRING_TRAVERSAL_COST_FACTOR);
    CallEstimate::sized(cost, size)
}
