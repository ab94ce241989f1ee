//! What the server answers about its callers: access and rules reviews (`kubectl auth can-i`),
//! `SelfSubjectReview` (`kubectl auth whoami`), and service-account tokens (`kubectl create token`).
//!
//! atoll authenticates every request but does not enforce RBAC: an authenticated caller may do
//! everything, and the reviews say so.

use std::time::Duration;

use serde_json::{Value, json};

use crate::auth::{Authenticator, User};
use crate::error::{Error, Result};
use crate::registry::ResourceType;
use crate::registry::store::{Store, now};

/// How long an issued token lives when the request does not say (upstream's default: one hour).
const DEFAULT_TOKEN_SECONDS: u64 = 3600;
/// The shortest lifetime upstream allows.
const MIN_TOKEN_SECONDS: u64 = 600;

/// Answers a review of kind `rt` posted by `user` (in namespace `ns` for a local review).
pub fn answer(
    rt: &ResourceType,
    user: &User,
    auth: &Authenticator,
    ns: Option<&str>,
    mut review: Value,
) -> Result<Value> {
    if !review.is_object() {
        return Err(Error::BadRequest("the review must be an object".into()));
    }
    review["apiVersion"] = json!(rt.api_version());
    review["kind"] = json!(rt.kind);
    if !review["metadata"].is_object() {
        review["metadata"] = json!({});
    }
    review["metadata"]["creationTimestamp"] = Value::Null;
    let allowed = json!({
        "allowed": true,
        "reason": "atoll allows every authenticated user",
    });
    let status = match rt.kind.as_str() {
        "SelfSubjectAccessReview" => allowed,
        "SubjectAccessReview" => {
            subject_required(rt, &review)?;
            allowed
        }
        "LocalSubjectAccessReview" => {
            subject_required(rt, &review)?;
            local_namespace(&mut review, ns.unwrap_or_default())?;
            allowed
        }
        "SelfSubjectRulesReview" => json!({
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": false,
        }),
        "SelfSubjectReview" => json!({
            "userInfo": {"username": user.name, "uid": user.uid, "groups": user.groups},
        }),
        "TokenReview" => token_review(rt, auth, &review)?,
        _ => return Err(Error::MethodNotAllowed),
    };
    review["status"] = status;
    Ok(review)
}

/// Upstream's `ValidateSubjectAccessReviewSpec`: whose access is asked about.
fn subject_required(rt: &ResourceType, review: &Value) -> Result<()> {
    let spec = &review["spec"];
    let mut errors = Vec::new();
    let resource = spec.get("resourceAttributes").is_some_and(|v| !v.is_null());
    let non_resource = spec
        .get("nonResourceAttributes")
        .is_some_and(|v| !v.is_null());
    if resource == non_resource {
        errors.push(crate::validation::FieldError {
            cause: crate::validation::CauseType::Invalid,
            field: "spec.resourceAttributes".into(),
            message: "exactly one of nonResourceAttributes or resourceAttributes must be specified"
                .into(),
            value: Some(
                spec.get("resourceAttributes")
                    .cloned()
                    .unwrap_or(Value::Null),
            ),
        });
    }
    let user = spec["user"].as_str().unwrap_or_default();
    let groups = spec["groups"].as_array().is_some_and(|g| !g.is_empty());
    if user.is_empty() && !groups {
        errors.push(crate::validation::FieldError {
            cause: crate::validation::CauseType::Invalid,
            field: "spec.user".into(),
            message: "at least one of user or group must be specified".into(),
            value: Some(json!(user)),
        });
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(Error::invalid(&rt.qualified_kind(), rt.target(""), errors))
    }
}

/// A local review asks about its own namespace only.
fn local_namespace(review: &mut Value, ns: &str) -> Result<()> {
    let attributes = &mut review["spec"]["resourceAttributes"];
    if attributes.is_object() {
        match attributes["namespace"].as_str() {
            None | Some("") => attributes["namespace"] = json!(ns),
            Some(asked) if asked != ns => {
                return Err(Error::BadRequest(format!(
                    "spec.resourceAttributes.namespace must match namespace: {ns}"
                )));
            }
            Some(_) => {}
        }
    }
    review["metadata"]["namespace"] = json!(ns);
    Ok(())
}

/// `TokenReview`: who a bearer token belongs to, as this server authenticates it.
fn token_review(rt: &ResourceType, auth: &Authenticator, review: &Value) -> Result<Value> {
    let Some(token) = review["spec"]["token"].as_str().filter(|t| !t.is_empty()) else {
        return Err(Error::invalid(
            &rt.qualified_kind(),
            rt.target(""),
            vec![crate::validation::FieldError {
                cause: crate::validation::CauseType::Required,
                field: "spec.token".into(),
                message: String::new(),
                value: None,
            }],
        ));
    };
    let audiences = review["spec"]["audiences"].clone();
    Ok(match auth.authenticate(Some(&format!("Bearer {token}"))) {
        Some(user) => {
            let mut status = json!({
                "authenticated": true,
                "user": {"username": user.name, "uid": user.uid, "groups": user.groups},
            });
            if audiences.is_array() {
                status["audiences"] = audiences;
            }
            status
        }
        None => json!({"user": {}, "error": "invalid bearer token"}),
    })
}

/// `POST .../serviceaccounts/<name>/token`: a TokenRequest answered with a token for that
/// service account.
pub async fn token(
    store: &Store,
    auth: &Authenticator,
    service_accounts: &ResourceType,
    ns: &str,
    name: &str,
    mut request: Value,
) -> Result<Value> {
    let account = store.get(service_accounts, Some(ns), name).await?;
    let seconds = match request["spec"]["expirationSeconds"].as_u64() {
        None => DEFAULT_TOKEN_SECONDS,
        Some(s) if s < MIN_TOKEN_SECONDS => {
            return Err(Error::invalid(
                "TokenRequest.authentication.k8s.io",
                service_accounts.target(name),
                vec![crate::validation::FieldError {
                    cause: crate::validation::CauseType::Invalid,
                    field: "spec.expirationSeconds".into(),
                    message: "may not specify a duration less than 10 minutes".into(),
                    value: Some(json!(s)),
                }],
            ));
        }
        Some(s) => s,
    };
    let user = User {
        name: format!("system:serviceaccount:{ns}:{name}"),
        uid: account["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        groups: vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{ns}"),
            "system:authenticated".into(),
        ],
    };
    let token = auth.issue(user, Duration::from_secs(seconds));
    let expires = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::from_secs(seconds as i64))
        .unwrap_or_else(|_| jiff::Timestamp::now());
    if !request.is_object() {
        request = json!({});
    }
    request["apiVersion"] = json!("authentication.k8s.io/v1");
    request["kind"] = json!("TokenRequest");
    request["metadata"] = json!({"name": name, "namespace": ns, "creationTimestamp": now()});
    request["spec"]["expirationSeconds"] = json!(seconds);
    if request["spec"].get("audiences").is_none_or(Value::is_null) {
        request["spec"]["audiences"] = json!(["https://kubernetes.default.svc"]);
    }
    request["status"] = json!({
        "token": token,
        "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
    });
    Ok(request)
}
