//! Kubernetes' authorization library (`k8s.io/apiserver/pkg/cel/library/authz.go`, with the
//! `fieldSelector` and `labelSelector` functions of `AuthzSelectors`, both in the 1.35 base
//! environment): checks, from an expression, whether the user who sent a request may do
//! something else.
//!
//! ```text
//! authorizer.group('apps').resource('deployments').namespace('ns').check('create').allowed()
//! authorizer.path('/healthz').check('get').reason()
//! authorizer.serviceAccount('ns', 'robot').group('').resource('pods').check('list').errored()
//! authorizer.requestResource.subresource('status').check('update').allowed()
//! ```
//!
//! Its types are opaque: `kubernetes.authorization.Authorizer` (the `authorizer` variable),
//! `...PathCheck`, `...GroupCheck`, `...ResourceCheck` (also the `authorizer.requestResource`
//! variable, made by [`request_resource`]) and `...Decision`. The decisions come from an
//! [`Authorizer`] the caller supplies (the API server's RBAC); this crate only builds the
//! attributes of each check and reads the answer.
//!
//! Costs are Kubernetes' (`CostEstimator.CallCost`): a `check` costs 350,000 (so that an
//! expression within the 1,000,000 per-call limit makes at most two), a selector its parse
//! (a base of 10, 0.1 a character, and 50 for each requirement its length allows, one per
//! two characters), everything else 1.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use super::{error, finish, no_such_overload};
use crate::{Budget, EvalError, Opaque, Value};

/// `kubernetes.authorization.Authorizer`.
pub const AUTHORIZER_TYPE: &str = "kubernetes.authorization.Authorizer";
/// `kubernetes.authorization.PathCheck`.
pub const PATH_CHECK_TYPE: &str = "kubernetes.authorization.PathCheck";
/// `kubernetes.authorization.GroupCheck`.
pub const GROUP_CHECK_TYPE: &str = "kubernetes.authorization.GroupCheck";
/// `kubernetes.authorization.ResourceCheck`.
pub const RESOURCE_CHECK_TYPE: &str = "kubernetes.authorization.ResourceCheck";
/// `kubernetes.authorization.Decision`.
pub const DECISION_TYPE: &str = "kubernetes.authorization.Decision";

/// What `check` costs: Kubernetes' fixed charge, set so that an expression makes at most two.
pub const CHECK_COST: u64 = 350_000;

/// Decides authorization checks for one user: the user who sent the request an expression is
/// evaluated for, unless [`Attributes::service_account`] names another.
pub trait Authorizer: fmt::Debug + Send + Sync {
    fn authorize(&self, attributes: &Attributes<'_>) -> Decision;
}

/// What one check asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attributes<'a> {
    /// Asks for this service account rather than for the requesting user
    /// (`authorizer.serviceAccount(namespace, name)`).
    pub service_account: Option<ServiceAccount<'a>>,
    /// The API verb (`get`, `create`, ...) of a resource check; the lower-case HTTP method of a
    /// path check, as written in the expression.
    pub verb: &'a str,
    pub target: Target<'a>,
}

/// What a check is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target<'a> {
    /// A resource (upstream's `ResourceRequest: true`, API version `*`).
    Resource(ResourceAttributes<'a>),
    /// A path that is no resource (`/healthz`).
    Path(&'a str),
}

/// The resource a check is for; empty strings are unset (the core group, no subresource,
/// the cluster scope, every name).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResourceAttributes<'a> {
    pub group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    /// The field selector as written (`spec.nodeName=n`), unparsed; empty when unset.
    pub field_selector: &'a str,
    /// The label selector as written (`app=web`), unparsed; empty when unset.
    pub label_selector: &'a str,
}

/// A service account a check is made for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServiceAccount<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
}

impl ServiceAccount<'_> {
    /// `system:serviceaccount:<namespace>:<name>`.
    pub fn username(&self) -> String {
        format!("system:serviceaccount:{}:{}", self.namespace, self.name)
    }

    /// `system:serviceaccounts` and `system:serviceaccounts:<namespace>` (upstream's
    /// `ServiceAccountInfo.UserInfo`: not `system:authenticated`).
    pub fn groups(&self) -> Vec<String> {
        vec![
            "system:serviceaccounts".to_owned(),
            format!("system:serviceaccounts:{}", self.namespace),
        ]
    }
}

/// An authorizer's answer. Deny and no opinion are alike to expressions: not allowed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub reason: String,
    /// Why the authorizer could not decide (`errored()`, `error()`).
    pub error: Option<String>,
}

impl Decision {
    pub fn allow(reason: impl Into<String>) -> Decision {
        Decision {
            allowed: true,
            reason: reason.into(),
            error: None,
        }
    }

    pub fn deny(reason: impl Into<String>) -> Decision {
        Decision {
            allowed: false,
            reason: reason.into(),
            error: None,
        }
    }

    pub fn error(error: impl Into<String>) -> Decision {
        Decision {
            allowed: false,
            reason: String::new(),
            error: Some(error.into()),
        }
    }
}

/// The `authorizer` variable: checks for the user `authorizer` decides for.
pub fn authorizer(authorizer: Arc<dyn Authorizer>) -> Value {
    Value::Opaque(Arc::new(AuthorizerValue {
        authorizer,
        service_account: None,
    }))
}

/// The `authorizer.requestResource` variable: a ResourceCheck for the request's own group,
/// resource, subresource, namespace and name.
pub fn request_resource(
    authorizer: Arc<dyn Authorizer>,
    resource: ResourceAttributes<'_>,
) -> Value {
    Value::Opaque(Arc::new(ResourceCheck {
        authorizer: AuthorizerValue {
            authorizer,
            service_account: None,
        },
        group: resource.group.into(),
        resource: resource.resource.into(),
        subresource: resource.subresource.into(),
        namespace: resource.namespace.into(),
        name: resource.name.into(),
        field_selector: resource.field_selector.into(),
        label_selector: resource.label_selector.into(),
    }))
}

/// `kubernetes.authorization.Authorizer`.
#[derive(Clone)]
struct AuthorizerValue {
    authorizer: Arc<dyn Authorizer>,
    /// Namespace and name of the service account checks are for; the requester's when none.
    service_account: Option<(Arc<str>, Arc<str>)>,
}

impl fmt::Debug for AuthorizerValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authorizer")
            .field("service_account", &self.service_account)
            .finish_non_exhaustive()
    }
}

impl AuthorizerValue {
    fn authorize(&self, verb: &str, target: Target<'_>) -> Decision {
        let service_account = self
            .service_account
            .as_ref()
            .map(|(namespace, name)| ServiceAccount { namespace, name });
        self.authorizer.authorize(&Attributes {
            service_account,
            verb,
            target,
        })
    }

    fn same(&self, other: &AuthorizerValue) -> bool {
        Arc::ptr_eq(&self.authorizer, &other.authorizer)
            && self.service_account == other.service_account
    }
}

/// `kubernetes.authorization.PathCheck`.
#[derive(Clone, Debug)]
struct PathCheck {
    authorizer: AuthorizerValue,
    path: Arc<str>,
}

/// `kubernetes.authorization.GroupCheck`.
#[derive(Clone, Debug)]
struct GroupCheck {
    authorizer: AuthorizerValue,
    group: Arc<str>,
}

/// `kubernetes.authorization.ResourceCheck`.
#[derive(Clone, Debug)]
struct ResourceCheck {
    authorizer: AuthorizerValue,
    group: Arc<str>,
    resource: Arc<str>,
    subresource: Arc<str>,
    namespace: Arc<str>,
    name: Arc<str>,
    field_selector: Arc<str>,
    label_selector: Arc<str>,
}

impl ResourceCheck {
    fn fields(&self) -> [&Arc<str>; 7] {
        [
            &self.group,
            &self.resource,
            &self.subresource,
            &self.namespace,
            &self.name,
            &self.field_selector,
            &self.label_selector,
        ]
    }
}

/// `kubernetes.authorization.Decision`.
#[derive(Clone, Debug, PartialEq)]
struct DecisionValue(Decision);

// Upstream's values of these types refuse `==` (no such overload); here two values are equal
// when they would check the same thing with the same authorizer.
impl Opaque for AuthorizerValue {
    fn type_name(&self) -> &'static str {
        AUTHORIZER_TYPE
    }
    fn equals(&self, other: &dyn Opaque) -> bool {
        other
            .as_any()
            .downcast_ref::<AuthorizerValue>()
            .is_some_and(|o| self.same(o))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Opaque for PathCheck {
    fn type_name(&self) -> &'static str {
        PATH_CHECK_TYPE
    }
    fn equals(&self, other: &dyn Opaque) -> bool {
        other
            .as_any()
            .downcast_ref::<PathCheck>()
            .is_some_and(|o| self.authorizer.same(&o.authorizer) && self.path == o.path)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Opaque for GroupCheck {
    fn type_name(&self) -> &'static str {
        GROUP_CHECK_TYPE
    }
    fn equals(&self, other: &dyn Opaque) -> bool {
        other
            .as_any()
            .downcast_ref::<GroupCheck>()
            .is_some_and(|o| self.authorizer.same(&o.authorizer) && self.group == o.group)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Opaque for ResourceCheck {
    fn type_name(&self) -> &'static str {
        RESOURCE_CHECK_TYPE
    }
    fn equals(&self, other: &dyn Opaque) -> bool {
        other
            .as_any()
            .downcast_ref::<ResourceCheck>()
            .is_some_and(|o| self.authorizer.same(&o.authorizer) && self.fields() == o.fields())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Opaque for DecisionValue {
    fn type_name(&self) -> &'static str {
        DECISION_TYPE
    }
    fn equals(&self, other: &dyn Opaque) -> bool {
        other
            .as_any()
            .downcast_ref::<DecisionValue>()
            .is_some_and(|o| self == o)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn downcast<T: 'static>(value: Option<&Value>) -> Option<&T> {
    match value? {
        Value::Opaque(o) => o.as_any().downcast_ref::<T>(),
        _ => None,
    }
}

fn opaque(value: impl Opaque + 'static) -> Value {
    Value::Opaque(Arc::new(value))
}

/// Kubernetes' selector cost (`selectorCostEstimate`) for a selector of `length` characters:
/// a list of requirements (10), the parse (0.1 a character) and, for each requirement the
/// length allows (one per two characters), a struct and a list (50).
pub(crate) fn selector_cost(length: u64) -> u64 {
    use crate::cost::multiply_by_cost_factor as times;
    let parse = times(length, super::STRING_TRAVERSAL_COST_FACTOR);
    let requirements = times(length, 0.5);
    let per_requirement = (super::LIST_CREATE_BASE_COST + 40) as f64;
    (super::LIST_CREATE_BASE_COST)
        .saturating_add(parse)
        .saturating_add(times(requirements, per_requirement))
}

/// Every function the library defines.
pub(crate) const NAMES: &[&str] = &[
    "path",
    "group",
    "serviceAccount",
    "resource",
    "subresource",
    "namespace",
    "name",
    "fieldSelector",
    "labelSelector",
    "check",
    "allowed",
    "reason",
    "errored",
    "error",
];

/// The authorization functions; `None` for other names and for receivers of other types.
pub fn call(
    function: &str,
    receiver: Option<&Value>,
    args: &[Value],
    budget: &mut Budget,
) -> Option<Result<Value, EvalError>> {
    if !NAMES.contains(&function) {
        return None;
    }
    if let Some(authorizer) = downcast::<AuthorizerValue>(receiver) {
        let result = match (function, args) {
            ("path", [Value::String(path)]) => {
                if path.trim().is_empty() {
                    Err(error("path must not be empty"))
                } else {
                    Ok(opaque(PathCheck {
                        authorizer: authorizer.clone(),
                        path: path.clone(),
                    }))
                }
            }
            ("group", [Value::String(group)]) => Ok(opaque(GroupCheck {
                authorizer: authorizer.clone(),
                group: group.clone(),
            })),
            ("serviceAccount", [Value::String(namespace), Value::String(name)]) => {
                if !is_dns1123_subdomain(name) {
                    Err(error("Invalid service account name"))
                } else if !is_dns1123_label(namespace) {
                    Err(error("Invalid service account namespace"))
                } else {
                    Ok(opaque(AuthorizerValue {
                        authorizer: authorizer.authorizer.clone(),
                        service_account: Some((namespace.clone(), name.clone())),
                    }))
                }
            }
            _ => Err(no_such_overload(function)),
        };
        return finish(budget, 1, result);
    }
    if let Some(check) = downcast::<PathCheck>(receiver) {
        let result = match (function, args) {
            ("check", [Value::String(verb)]) => {
                let decision = check.authorizer.authorize(verb, Target::Path(&check.path));
                return finish(budget, CHECK_COST, Ok(opaque(DecisionValue(decision))));
            }
            _ => Err(no_such_overload(function)),
        };
        return finish(budget, 1, result);
    }
    if let Some(check) = downcast::<GroupCheck>(receiver) {
        let result = match (function, args) {
            ("resource", [Value::String(resource)]) => {
                if resource.trim().is_empty() {
                    Err(error("resource must not be empty"))
                } else {
                    let empty: Arc<str> = Arc::from("");
                    Ok(opaque(ResourceCheck {
                        authorizer: check.authorizer.clone(),
                        group: check.group.clone(),
                        resource: resource.clone(),
                        subresource: empty.clone(),
                        namespace: empty.clone(),
                        name: empty.clone(),
                        field_selector: empty.clone(),
                        label_selector: empty,
                    }))
                }
            }
            _ => Err(no_such_overload(function)),
        };
        return finish(budget, 1, result);
    }
    if let Some(check) = downcast::<ResourceCheck>(receiver) {
        let [Value::String(text)] = args else {
            return Some(Err(no_such_overload(function)));
        };
        let mut next = check.clone();
        let (slot, cost) = match function {
            "subresource" => (&mut next.subresource, 1),
            "namespace" => (&mut next.namespace, 1),
            "name" => (&mut next.name, 1),
            "fieldSelector" => (
                &mut next.field_selector,
                selector_cost(text.chars().count() as u64),
            ),
            "labelSelector" => (
                &mut next.label_selector,
                selector_cost(text.chars().count() as u64),
            ),
            "check" => {
                let target = Target::Resource(ResourceAttributes {
                    group: &check.group,
                    resource: &check.resource,
                    subresource: &check.subresource,
                    namespace: &check.namespace,
                    name: &check.name,
                    field_selector: &check.field_selector,
                    label_selector: &check.label_selector,
                });
                let decision = check.authorizer.authorize(text, target);
                return finish(budget, CHECK_COST, Ok(opaque(DecisionValue(decision))));
            }
            _ => return Some(Err(no_such_overload(function))),
        };
        *slot = text.clone();
        return finish(budget, cost, Ok(opaque(next)));
    }
    if let Some(DecisionValue(decision)) = downcast::<DecisionValue>(receiver) {
        let result = match (function, args) {
            ("allowed", []) => Ok(Value::Bool(decision.allowed)),
            ("reason", []) => Ok(Value::string(&decision.reason)),
            ("errored", []) => Ok(Value::Bool(decision.error.is_some())),
            ("error", []) => Ok(Value::string(decision.error.as_deref().unwrap_or(""))),
            _ => Err(no_such_overload(function)),
        };
        return finish(budget, 1, result);
    }
    None
}

/// apimachinery's `IsDNS1123Label` (what `ValidateNamespaceName` asks).
fn is_dns1123_label(s: &str) -> bool {
    s.len() <= 63 && is_label(s)
}

/// apimachinery's `IsDNS1123Subdomain` (what `ValidateServiceAccountName` asks).
fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_label)
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
fn is_label(s: &str) -> bool {
    let bytes = s.as_bytes();
    let alphanumeric = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            alphanumeric(first)
                && alphanumeric(last)
                && bytes.iter().all(|b| alphanumeric(b) || *b == b'-')
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests;
