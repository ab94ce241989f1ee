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

/// Answers a review of kind `rt` posted by `user`.
pub fn answer(rt: &ResourceType, user: &User, mut review: Value) -> Result<Value> {
    if !review.is_object() {
        return Err(Error::BadRequest("the review must be an object".into()));
    }
    review["apiVersion"] = json!(rt.api_version());
    review["kind"] = json!(rt.kind);
    if !review["metadata"].is_object() {
        review["metadata"] = json!({});
    }
    review["metadata"]["creationTimestamp"] = Value::Null;
    let status = match rt.kind.as_str() {
        "SelfSubjectAccessReview" => json!({
            "allowed": true,
            "reason": "atoll allows every authenticated user",
        }),
        "SelfSubjectRulesReview" => json!({
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": false,
        }),
        "SelfSubjectReview" => json!({
            "userInfo": {"username": user.name, "uid": user.uid, "groups": user.groups},
        }),
        _ => return Err(Error::MethodNotAllowed),
    };
    review["status"] = status;
    Ok(review)
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
