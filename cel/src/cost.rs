//! The static cost estimator Kubernetes runs when a CRD's `x-kubernetes-validations` rule or a
//! policy expression is written: cel-go's `checker/cost.go`, with the options Kubernetes sets
//! (`PresenceTestHasCost(false)`), the estimates cel-go's `ext` lists and sets libraries
//! register for their overloads, and Kubernetes' `CostEstimator` from
//! `apiserver/pkg/cel/library/cost.go` for its libraries (lists, regex, urls, quantity, ip,
//! cidr, format, semver) and the `ext` strings functions it prices.
//!
//! An estimate is a range `[min, max]` of cel-go's cost units; the arithmetic saturates at
//! `u64::MAX`, as cel-go's does, so an expression over values of unknown size estimates to
//! (nearly) `u64::MAX`, which is how Kubernetes tells a rule is too expensive.

mod builtins;
mod kubernetes;
mod walk;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_kubernetes;
#[cfg(test)]
mod tests_runtime;

use std::sync::Arc;

use crate::Type;
use crate::ast::Expr;
use crate::check::Checked;

/// An estimated cost range, in cel-go's cost units (the units [`crate::Budget`] counts).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CostEstimate {
    /// The least an evaluation can cost (short-circuits taken, empty inputs).
    pub min: u64,
    /// The most an evaluation over values within the assumed sizes can cost; `u64::MAX` (or
    /// close to it) when a size is unbounded.
    pub max: u64,
}

/// The bounds the caller knows on the sizes of the values an expression reads: a string's
/// length in code points, a bytes' length, a list's or map's number of entries (what CEL's
/// `size()` returns). Kubernetes answers from a CRD's `maxLength`, `maxItems` and
/// `maxProperties`.
pub trait SizeEstimator {
    /// The `(min, max)` size of the value at `path`, or `None` when unknown (then cel-go's
    /// defaults apply: `0..u64::MAX`). The path starts with a variable's name (`self`), then
    /// field names, and, as cel-go names them, `@items` for a list's elements, `@keys` and
    /// `@values` for a map's keys and values, and `@indices` for the indices a two-variable
    /// comprehension over a list binds: `self.spec.ports.all(p, p.name.size() < 10)` asks for
    /// `["self", "spec", "ports"]` and `["self", "spec", "ports", "@items", "name"]`.
    ///
    /// As in cel-go, a field selected from a value that has no path (a call's result) starts
    /// a path of its own (`f(x).name` asks for `["name"]`).
    fn size(&self, path: &[&str]) -> Option<(u64, u64)>;

    /// The size of a value of type `ty` that [`SizeEstimator::size`] did not bound, or that
    /// has no path (a literal list's elements): cel-go passes the type along with the path,
    /// and some estimators answer by type. Kubernetes' CRD estimator does not; the default
    /// answers `None`.
    fn size_of_type(&self, ty: &Type) -> Option<(u64, u64)> {
        let _ = ty;
        None
    }
}

/// A closure from a path to its bounds is an estimator.
impl<F: Fn(&[&str]) -> Option<(u64, u64)>> SizeEstimator for F {
    fn size(&self, path: &[&str]) -> Option<(u64, u64)> {
        self(path)
    }
}

/// A size range; cel-go's `SizeEstimate`, the same arithmetic as a cost.
pub(crate) type Size = CostEstimate;

/// cel-go's cost constants (`common/cost.go`).
pub(crate) const SELECT_AND_IDENT_COST: u64 = 1;
pub(crate) const LIST_CREATE_BASE_COST: u64 = 10;
pub(crate) const MAP_CREATE_BASE_COST: u64 = 30;
pub(crate) const STRUCT_CREATE_BASE_COST: u64 = 40;
pub(crate) const STRING_TRAVERSAL_COST_FACTOR: f64 = 0.1;
pub(crate) const REGEX_STRING_LENGTH_COST_FACTOR: f64 = 0.25;

impl CostEstimate {
    /// `[n, n]`.
    pub const fn fixed(n: u64) -> CostEstimate {
        CostEstimate { min: n, max: n }
    }

    /// `[0, u64::MAX]`: cel-go's unknown size.
    pub const fn unknown() -> CostEstimate {
        CostEstimate {
            min: 0,
            max: u64::MAX,
        }
    }

    /// The product, each bound saturating.
    #[must_use]
    pub fn multiply(self, other: CostEstimate) -> CostEstimate {
        CostEstimate {
            min: self.min.saturating_mul(other.min),
            max: self.max.saturating_mul(other.max),
        }
    }

    /// Each bound times `factor`, rounded up (cel-go's `MultiplyByCostFactor`).
    #[must_use]
    pub fn multiply_by_cost_factor(self, factor: f64) -> CostEstimate {
        CostEstimate {
            min: multiply_by_cost_factor(self.min, factor),
            max: multiply_by_cost_factor(self.max, factor),
        }
    }

    /// The smallest range holding both.
    #[must_use]
    pub fn union(self, other: CostEstimate) -> CostEstimate {
        CostEstimate {
            min: self.min.min(other.min),
            max: self.max.max(other.max),
        }
    }
}

/// The sum, each bound saturating (cel-go's `Add`).
impl std::ops::Add for CostEstimate {
    type Output = CostEstimate;

    fn add(self, other: CostEstimate) -> CostEstimate {
        CostEstimate {
            min: self.min.saturating_add(other.min),
            max: self.max.saturating_add(other.max),
        }
    }
}

/// cel-go's `multiplyByCostFactor`: `x * factor` rounded up, `u64::MAX` past the range.
pub(crate) fn multiply_by_cost_factor(x: u64, factor: f64) -> u64 {
    let x = x as f64;
    // u64::MAX as f64 is 2^64, as Go's float64(math.MaxUint64) is.
    let limit = u64::MAX as f64;
    if x > 0.0 && factor > 0.0 && x > limit / factor {
        return u64::MAX;
    }
    let ceil = (x * factor).ceil();
    if ceil >= limit {
        return u64::MAX;
    }
    ceil as u64
}

/// The estimate of a checked expression.
pub(crate) fn estimate(expr: &Expr, checked: &Checked, sizes: &dyn SizeEstimator) -> CostEstimate {
    walk::Coster::new(checked, sizes).cost(expr, 0)
}

/// A path of the kind cel-go tracks, shared between nodes.
pub(crate) type Path = Vec<Arc<str>>;
