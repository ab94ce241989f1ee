//! The errors the server answers with, each mapped once (in `http`) to a Kubernetes `Status`
//! with the code, reason and message that kube-apiserver gives for the same failure.

use http::StatusCode;
use serde_json::{Value, json};

use crate::validation::FieldError;

/// The resource an error is about, as upstream names it in `Status.details`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Target {
    pub group: String,
    /// The resource (plural) name, as upstream puts it in `details.kind` for most errors.
    pub resource: String,
    pub name: String,
}

impl Target {
    pub fn new(group: &str, resource: &str, name: &str) -> Self {
        Target {
            group: group.to_owned(),
            resource: resource.to_owned(),
            name: name.to_owned(),
        }
    }

    /// `configmaps` or `widgets.example.com`, as in `widgets.example.com "w1" not found`.
    pub fn qualified_resource(&self) -> String {
        if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }
}

/// The details of a 422 Invalid.
#[derive(Debug)]
pub struct Invalid {
    /// `ConfigMap` or `Widget.example.com`: the kind as upstream names it in the message.
    pub kind: String,
    pub target: Target,
    pub message: String,
    pub causes: Vec<FieldError>,
}

/// The details of a ValidatingAdmissionPolicy's denial.
#[derive(Debug)]
pub struct PolicyDenial {
    pub target: Target,
    /// `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy ...`.
    pub message: String,
    /// The message without the resource, which the status lists as its cause.
    pub cause: String,
    /// `Invalid`, `Forbidden`, `Unauthorized` or `RequestEntityTooLarge`.
    pub reason: &'static str,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{} {:?} not found", .0.qualified_resource(), .0.name)]
    NotFound(Target),
    #[error("the server could not find the requested resource")]
    UnknownPath,
    #[error("{} {:?} already exists", .0.qualified_resource(), .0.name)]
    AlreadyExists(Target),
    #[error(
        "Operation cannot be fulfilled on {} {:?}: {reason}",
        target.qualified_resource(),
        target.name
    )]
    Conflict { target: Target, reason: String },
    /// A server-side apply conflict with other field managers.
    #[error("{message}")]
    ApplyConflict {
        target: Target,
        message: String,
        /// (manager, field) of each conflict.
        conflicts: Vec<(String, String)>,
    },
    #[error("{}", .0.message)]
    Invalid(Box<Invalid>),
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Expired(String),
    #[error("the body of the request was in an unknown format - accepted media types include: {0}")]
    UnsupportedMediaType(String),
    #[error("the server does not allow this method on the requested resource")]
    MethodNotAllowed,
    #[error("{0}")]
    Forbidden(String),
    /// A refusal of the authorizer (or of RBAC's escalation check), with what it refused.
    #[error("{message}")]
    Denied {
        target: Option<Target>,
        message: String,
    },
    /// A denial of a ValidatingAdmissionPolicy: admission's Forbidden, with the status reason
    /// (and so the code) of the failed validation.
    #[error("{}", .0.message)]
    PolicyDenied(Box<PolicyDenial>),
    #[error("Unauthorized")]
    Unauthorized,
    #[error("Request entity too large: limit is {0}")]
    TooLarge(usize),
    /// A request that would make or hold more than the server allows (413).
    #[error("Request entity too large: {0}")]
    EntityTooLarge(String),
    #[error("{0}")]
    Timeout(String),
    #[error("{0}")]
    Internal(String),
    /// More requests in flight (or watches open) than the server's limit; the client retries
    /// after a second.
    #[error("{0}")]
    TooManyRequests(String),
    #[error("{0}")]
    ServiceUnavailable(String),
    /// Another operation holds what the request needs (409 Conflict, without an object).
    #[error("{0}")]
    Busy(String),
    /// A restore sent to a server that is not waiting for one.
    #[error(
        "this cluster is serving; a backup is restored only into a new cluster that waits for it (atoll hosted create NAME --restore FILE)"
    )]
    NotWaitingForRestore,
}

/// How long a client waits before retrying a request refused for too many in flight.
pub const RETRY_AFTER_SECONDS: u64 = 1;

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A 422 Invalid for `kind`/`target` with the given field errors.
    pub fn invalid(kind: &str, target: Target, causes: Vec<FieldError>) -> Self {
        let message = crate::validation::invalid_message(kind, &target.name, &causes);
        Error::Invalid(Box::new(Invalid {
            kind: kind.to_owned(),
            target,
            message,
            causes,
        }))
    }

    pub fn code(&self) -> StatusCode {
        match self {
            Error::NotFound(_) | Error::UnknownPath => StatusCode::NOT_FOUND,
            Error::AlreadyExists(_) | Error::Conflict { .. } | Error::ApplyConflict { .. } => {
                StatusCode::CONFLICT
            }
            Error::Invalid(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Error::BadRequest(_) => StatusCode::BAD_REQUEST,
            Error::Expired(_) => StatusCode::GONE,
            Error::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Error::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Error::Forbidden(_) | Error::Denied { .. } => StatusCode::FORBIDDEN,
            Error::Unauthorized => StatusCode::UNAUTHORIZED,
            Error::PolicyDenied(denial) => match denial.reason {
                "Forbidden" => StatusCode::FORBIDDEN,
                "Unauthorized" => StatusCode::UNAUTHORIZED,
                "RequestEntityTooLarge" => StatusCode::PAYLOAD_TOO_LARGE,
                "Invalid" => StatusCode::UNPROCESSABLE_ENTITY,
                _ => StatusCode::INTERNAL_SERVER_ERROR,
            },
            Error::TooLarge(_) | Error::EntityTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Error::Timeout(_) => StatusCode::GATEWAY_TIMEOUT,
            Error::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            Error::TooManyRequests(_) => StatusCode::TOO_MANY_REQUESTS,
            Error::ServiceUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Error::NotWaitingForRestore | Error::Busy(_) => StatusCode::CONFLICT,
        }
    }

    pub fn reason(&self) -> &'static str {
        match self {
            Error::NotFound(_) | Error::UnknownPath => "NotFound",
            Error::AlreadyExists(_) => "AlreadyExists",
            Error::Conflict { .. } | Error::ApplyConflict { .. } => "Conflict",
            Error::Invalid(_) => "Invalid",
            Error::BadRequest(_) => "BadRequest",
            Error::Expired(_) => "Expired",
            Error::UnsupportedMediaType(_) => "UnsupportedMediaType",
            Error::MethodNotAllowed => "MethodNotAllowed",
            Error::Forbidden(_) | Error::Denied { .. } => "Forbidden",
            Error::Unauthorized => "Unauthorized",
            Error::PolicyDenied(denial) => denial.reason,
            Error::TooLarge(_) | Error::EntityTooLarge(_) => "RequestEntityTooLarge",
            Error::Timeout(_) => "Timeout",
            Error::Internal(_) => "InternalError",
            Error::TooManyRequests(_) => "TooManyRequests",
            Error::ServiceUnavailable(_) => "ServiceUnavailable",
            Error::NotWaitingForRestore | Error::Busy(_) => "Conflict",
        }
    }

    /// The `kind: Status` body of this error.
    pub fn to_status(&self) -> Value {
        let details = match self {
            Error::NotFound(t) | Error::AlreadyExists(t) | Error::Conflict { target: t, .. } => {
                Some(target_details(t, &t.resource))
            }
            Error::ApplyConflict {
                target, conflicts, ..
            } => {
                let mut details = target_details(target, &target.resource);
                details["causes"] = conflicts
                    .iter()
                    .map(|(manager, field)| {
                        json!({"reason": "FieldManagerConflict", "message": format!("conflict with {manager}"), "field": field})
                    })
                    .collect();
                Some(details)
            }
            Error::Invalid(invalid) => {
                let Invalid {
                    kind,
                    target,
                    causes,
                    ..
                } = invalid.as_ref();
                let short_kind = kind.split('.').next().unwrap_or(kind);
                let mut details = target_details(target, short_kind);
                details["causes"] = causes
                    .iter()
                    .map(|c| json!({"reason": c.reason(), "message": c.cause_message(), "field": c.field}))
                    .collect();
                Some(details)
            }
            Error::UnknownPath => Some(json!({})),
            Error::Denied { target, .. } => Some(match target {
                // Upstream leaves out an empty name and the core group.
                Some(t) => {
                    let mut details = json!({"kind": t.resource});
                    if !t.name.is_empty() {
                        details["name"] = json!(t.name);
                    }
                    if !t.group.is_empty() {
                        details["group"] = json!(t.group);
                    }
                    details
                }
                None => json!({}),
            }),
            Error::PolicyDenied(denial) => {
                let PolicyDenial { target, cause, .. } = denial.as_ref();
                let mut details = json!({"kind": target.resource});
                if !target.name.is_empty() {
                    details["name"] = json!(target.name);
                }
                if !target.group.is_empty() {
                    details["group"] = json!(target.group);
                }
                details["causes"] = json!([{ "message": cause }]);
                Some(details)
            }
            Error::TooManyRequests(_) => Some(json!({"retryAfterSeconds": RETRY_AFTER_SECONDS})),
            _ => None,
        };
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.to_string(),
            "reason": self.reason(),
            "code": self.code().as_u16(),
        });
        if let Some(details) = details {
            status["details"] = details;
        }
        status
    }
}

fn target_details(target: &Target, kind: &str) -> Value {
    let mut details = json!({ "name": target.name, "kind": kind });
    if !target.group.is_empty() {
        details["group"] = json!(target.group);
    }
    details
}

impl From<crate::storage::Error> for Error {
    fn from(err: crate::storage::Error) -> Self {
        use crate::storage::Error as S;
        match err {
            S::Compacted {
                requested,
                compacted,
            } => Error::Expired(format!(
                "too old resource version: {requested} ({compacted})"
            )),
            S::FutureRevision { requested, current } => Error::Timeout(format!(
                "Too large resource version: {requested}, current: {current}"
            )),
            other => {
                tracing::error!(error = %other, source = ?std::error::Error::source(&other), "storage failed");
                Error::Internal(format!("storage failed: {other}"))
            }
        }
    }
}

/// An error and its sources, `: `-separated (`cannot start: cannot open storage: disk full`).
pub fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_reads_like_kube_apiserver() {
        let err = Error::NotFound(Target::new("", "configmaps", "x"));
        let status = err.to_status();
        assert_eq!(status["message"], "configmaps \"x\" not found");
        assert_eq!(status["reason"], "NotFound");
        assert_eq!(status["code"], 404);
        assert_eq!(
            status["details"],
            json!({"name": "x", "kind": "configmaps"})
        );
        let err = Error::NotFound(Target::new("example.com", "widgets", "w1"));
        assert_eq!(err.to_string(), "widgets.example.com \"w1\" not found");
        assert_eq!(err.to_status()["details"]["group"], "example.com");
    }

    #[test]
    fn conflict_names_the_object() {
        let err = Error::Conflict {
            target: Target::new("", "configmaps", "demo-cm"),
            reason: "the object has been modified; please apply your changes to the latest version and try again".into(),
        };
        assert_eq!(
            err.to_string(),
            "Operation cannot be fulfilled on configmaps \"demo-cm\": the object has been modified; please apply your changes to the latest version and try again"
        );
        assert_eq!(err.code(), StatusCode::CONFLICT);
    }
}
