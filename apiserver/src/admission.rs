//! ValidatingAdmissionPolicy (`admissionregistration.k8s.io/v1`), as kube-apiserver enforces
//! it: every write that a policy's `matchConstraints` and one of its bindings'
//! `matchResources` pick is evaluated with the policy's CEL expressions, and refused, warned
//! about or audited as the binding's `validationActions` say.
//!
//! [`policies`] compiles each policy once per change of its spec; [`evaluate`] decides one
//! request with no I/O (what it must look up, the namespace and the params, it asks a
//! [`Lookup`]); [`live`] keeps the compiled policies current from the watch cache and checks
//! the writes the HTTP API receives and those the server's own controllers make (as the users
//! upstream's controllers are, `registry::actor`). [`type_checking`] checks a policy's expressions against the
//! schemas of the kinds it names, and [`status`] is the controller that writes what it finds into
//! each policy's status.

mod evaluate;
pub mod live;
mod matching;
pub mod policies;
pub mod status;
pub mod type_checking;
mod values;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use atoll_cel::library::authz;
use serde_json::Value;

pub use evaluate::{Denial, Outcome, PER_CALL_LIMIT, RUNTIME_BUDGET, evaluate};
pub use live::{Gate, Policies, PolicyAdmission};

use crate::auth::User;
use crate::error::{Error, PolicyDenial, Target};

/// The operation of an admission request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

/// One request, as policies see it.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    pub operation: Operation,
    pub group: &'a str,
    pub version: &'a str,
    /// The resource (plural).
    pub resource: &'a str,
    /// Empty for the main resource.
    pub subresource: &'a str,
    /// The kind of the object policies see: `(group, version, kind)` (`autoscaling/v1 Scale`
    /// for a `/scale` write, else the resource's own).
    pub kind: (&'a str, &'a str, &'a str),
    /// The other served versions of the resource (what `matchPolicy: Equivalent` also
    /// matches).
    pub equivalent_versions: &'a Versions<'a>,
    pub name: &'a str,
    /// Empty for cluster-scoped resources.
    pub namespace: &'a str,
    pub namespaced: bool,
    /// The object as it would be stored (none on a delete).
    pub object: Option<&'a Value>,
    /// The stored object (on updates and deletes).
    pub old_object: Option<&'a Value>,
    pub user: &'a User,
    pub dry_run: bool,
    /// The admission request's own uid, made the first time an expression reads it (one per
    /// request, whichever policies read it).
    pub uid: &'a std::sync::OnceLock<String>,
}

/// The served versions of a request's resource, listed from the catalog the first time
/// matching needs them (only a rule that does not list the request's own version does).
pub struct Versions<'a> {
    of: Option<(&'a crate::registry::Catalog, &'a str, &'a str)>,
    listed: std::sync::OnceLock<Vec<String>>,
}

impl<'a> Versions<'a> {
    /// The versions `catalog` serves of `resource` (plural) in `group`.
    pub fn of(catalog: &'a crate::registry::Catalog, group: &'a str, resource: &'a str) -> Self {
        Versions {
            of: Some((catalog, group, resource)),
            listed: Default::default(),
        }
    }

    /// These versions.
    pub fn known(versions: Vec<String>) -> Self {
        Versions {
            of: None,
            listed: versions.into(),
        }
    }

    pub fn get(&self) -> &[String] {
        self.listed.get_or_init(|| match self.of {
            Some((catalog, group, resource)) => catalog
                .versions_of(group, resource)
                .map(|t| t.version.clone())
                .collect(),
            None => Vec::new(),
        })
    }
}

impl std::fmt::Debug for Versions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.listed.get().into_iter().flatten())
            .finish()
    }
}

/// What evaluation reads besides the request.
pub trait Lookup {
    /// The authorizer of `user`'s checks (the `authorizer` variable of policy expressions);
    /// `None` leaves the variable unbound, so that an expression reading it fails.
    fn authorizer(&self, user: &User) -> Option<Arc<dyn authz::Authorizer>>;
    /// The Namespace named `name`, if it exists.
    fn namespace(&self, name: &str) -> Option<Value>;
    /// Whether objects of `kind` in `api_version` are namespaced; `None` when no such kind is
    /// served.
    fn param_kind_namespaced(&self, api_version: &str, kind: &str) -> Option<bool>;
    /// The objects of `kind` named `name`, or picked by `selector`, in `namespace` (every
    /// namespace when `None`).
    fn params(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: Option<&str>,
        selector: Option<&Value>,
    ) -> Vec<Value>;
}

/// The error of a denial: upstream's admission Forbidden (`deployments.apps "web" is
/// forbidden: ValidatingAdmissionPolicy ...`) with the status reason and code of the failed
/// validation (`Invalid`, 422, unless it names another).
pub fn denial_error(denial: &Denial, group: &str, resource: &str, name: &str) -> Error {
    let target = Target::new(group, resource, name);
    let cause = denial.message();
    let qualified = target.qualified_resource();
    let message = if name.is_empty() {
        format!("{qualified} is forbidden: {cause}")
    } else {
        format!("{qualified} {name:?} is forbidden: {cause}")
    };
    let reason = match denial.reason.as_str() {
        "Forbidden" => "Forbidden",
        "Unauthorized" => "Unauthorized",
        "RequestEntityTooLarge" => "RequestEntityTooLarge",
        "Invalid" => "Invalid",
        _ => "InternalError",
    };
    Error::PolicyDenied(Box::new(PolicyDenial {
        target,
        message,
        cause,
        reason,
    }))
}
