//! What the server answers about its callers: access and rules reviews (`kubectl auth can-i`),
//! `SelfSubjectReview` (`kubectl auth whoami`), and service-account tokens (`kubectl create token`).
//!
//! Access and rules reviews ask the authorizer that decides requests, so they tell the truth.

use std::time::Duration;

use serde_json::{Value, json};

use crate::auth::{Authenticator, User};
use crate::authz::{Attributes, Authorizer, Decision, Request, ResourceRequest};
use crate::error::{Error, Result};
use crate::registry::ResourceType;
use crate::registry::store::{Store, now};

/// How long an issued token lives when the request does not say (upstream's default: one hour).
const DEFAULT_TOKEN_SECONDS: u64 = 3600;
/// The shortest lifetime upstream allows.
const MIN_TOKEN_SECONDS: u64 = 600;
/// The longest a requested token may last (upstream's validation).
const MAX_TOKEN_SECONDS: u64 = 1 << 32;

/// Answers a review of kind `rt` posted by `user` (in namespace `ns` for a local review).
pub async fn answer(
    rt: &ResourceType,
    user: &User,
    store: &Store,
    auth: &Authenticator,
    authz: &Authorizer,
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
    let status = match rt.kind.as_str() {
        "SelfSubjectAccessReview" => access(rt, authz, user, &review)?,
        "SubjectAccessReview" => {
            subject_required(rt, &review)?;
            access(rt, authz, &subject(&review), &review)?
        }
        "LocalSubjectAccessReview" => {
            subject_required(rt, &review)?;
            local_namespace(&mut review, ns.unwrap_or_default())?;
            access(rt, authz, &subject(&review), &review)?
        }
        "SelfSubjectRulesReview" => rules(authz, user, &review),
        "SelfSubjectReview" => {
            let mut info = json!({"username": user.name, "uid": user.uid, "groups": user.groups});
            if !user.extra.is_empty() {
                info["extra"] = json!(user.extra);
            }
            json!({ "userInfo": info })
        }
        "TokenReview" => token_review(rt, store, auth, &review).await?,
        _ => return Err(Error::MethodNotAllowed),
    };
    review["status"] = status;
    Ok(review)
}

/// The user a SubjectAccessReview asks about, as its spec gives it.
fn subject(review: &Value) -> User {
    let spec = &review["spec"];
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect()
    };
    User {
        name: text(&spec["user"]),
        uid: text(&spec["uid"]),
        groups: strings(&spec["groups"]),
        extra: spec["extra"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), strings(v)))
            .collect(),
    }
}

/// The status of an access review: whether `user` may do what the spec asks.
fn access(rt: &ResourceType, authz: &Authorizer, user: &User, review: &Value) -> Result<Value> {
    let spec = &review["spec"];
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let resource = &spec["resourceAttributes"];
    let path = &spec["nonResourceAttributes"];
    let attributes = if resource.is_object() {
        let optional = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
        Attributes::resource(
            &text(&resource["verb"]),
            ResourceRequest {
                group: text(&resource["group"]),
                resource: text(&resource["resource"]),
                subresource: optional(&resource["subresource"]),
                namespace: optional(&resource["namespace"]),
                name: optional(&resource["name"]),
            },
        )
    } else if path.is_object() {
        Attributes {
            verb: text(&path["verb"]),
            request: Request::Path(text(&path["path"])),
        }
    } else {
        return Err(Error::invalid(
            &rt.qualified_kind(),
            rt.target(""),
            vec![crate::validation::FieldError {
                cause: crate::validation::CauseType::Invalid,
                field: "spec.resourceAttributes".into(),
                message:
                    "exactly one of nonResourceAttributes or resourceAttributes must be specified"
                        .into(),
                value: None,
            }],
        ));
    };
    let (allowed, reason) = match authz.authorize(user, &attributes) {
        Decision::Allow(reason) => (true, reason),
        Decision::Deny(reason) => (false, reason),
    };
    let mut status = json!({ "allowed": allowed });
    if !reason.is_empty() {
        status["reason"] = json!(reason);
    }
    Ok(status)
}

/// The status of a rules review: every rule the caller holds in the spec's namespace.
fn rules(authz: &Authorizer, user: &User, review: &Value) -> Value {
    let ns = review["spec"]["namespace"]
        .as_str()
        .filter(|ns| !ns.is_empty());
    let (rules, errors) = authz.rules_for(user, ns);
    let (paths, resources): (Vec<_>, Vec<_>) =
        rules.iter().partition(|r| !r.non_resource_urls.is_empty());
    let resource_rules: Vec<Value> = resources
        .iter()
        .map(|r| {
            json!({"verbs": r.verbs, "apiGroups": r.api_groups, "resources": r.resources,
                   "resourceNames": r.resource_names})
        })
        .collect();
    let path_rules: Vec<Value> = paths
        .iter()
        .map(|r| json!({"verbs": r.verbs, "nonResourceURLs": r.non_resource_urls}))
        .collect();
    let mut status = json!({
        "resourceRules": resource_rules,
        "nonResourceRules": path_rules,
        "incomplete": !errors.is_empty(),
    });
    if !errors.is_empty() {
        status["evaluationError"] = json!(errors.join(", "));
    }
    status
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
async fn token_review(
    rt: &ResourceType,
    store: &Store,
    auth: &Authenticator,
    review: &Value,
) -> Result<Value> {
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
    let audiences = string_list(&review["spec"]["audiences"]).map_err(|message| {
        invalid_field(
            &rt.qualified_kind(),
            rt.target(""),
            "spec.audiences",
            message,
            &review["spec"]["audiences"],
        )
    })?;
    let (user, valid) = match auth.review(token, &audiences) {
        Ok(found) => found,
        Err(error) => return Ok(json!({"user": {}, "error": error})),
    };
    if !service_account_lives(store, &user).await? {
        return Ok(json!({"user": {}, "error": "service account token has been invalidated"}));
    }
    Ok(json!({
        "authenticated": true,
        "user": {"username": user.name, "uid": user.uid, "groups": user.groups},
        "audiences": valid,
    }))
}

/// A list of non-empty strings (none when missing), or why it is not one.
fn string_list(value: &Value) -> std::result::Result<Vec<String>, String> {
    match value {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => items
            .iter()
            .map(|item| match item.as_str() {
                Some(text) if !text.is_empty() => Ok(text.to_owned()),
                _ => Err(format!("must hold non-empty strings, not {item}")),
            })
            .collect(),
        other => Err(format!("must be a list of strings, not {other}")),
    }
}

/// A 422 naming one field of a `kind` object (a review or request), and its value.
fn invalid_field(
    kind: &str,
    target: crate::error::Target,
    field: &str,
    message: String,
    value: &Value,
) -> Error {
    Error::invalid(
        kind,
        target,
        vec![crate::validation::FieldError {
            cause: crate::validation::CauseType::Invalid,
            field: field.into(),
            message,
            value: Some(value.clone()),
        }],
    )
}

/// Whether the service account a token was issued for still exists, with the same UID (a
/// service account deleted and made again does not inherit the old one's tokens). True for
/// users that are no service account, or whose token names no UID.
pub async fn service_account_lives(store: &Store, user: &User) -> Result<bool> {
    let Some((ns, name)) = crate::authz::impersonation::service_account(&user.name) else {
        return Ok(true);
    };
    if user.uid.is_empty() {
        return Ok(true);
    }
    let accounts = store
        .registry()
        .catalog()
        .lookup("", "v1", "serviceaccounts")
        .ok_or(Error::UnknownPath)?;
    match store.get(&accounts, Some(ns), name).await {
        Ok(account) => Ok(account["metadata"]["uid"] == user.uid.as_str()),
        Err(Error::NotFound(_)) => Ok(false),
        Err(error) => Err(error),
    }
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
    let invalid = |field: &str, message: String, value: &Value| {
        let target = service_accounts.target(name);
        invalid_field(
            "TokenRequest.authentication.k8s.io",
            target,
            field,
            message,
            value,
        )
    };
    let spec = &request["spec"];
    let seconds = token_seconds(&spec["expirationSeconds"]).map_err(|message| {
        invalid(
            "spec.expirationSeconds",
            message,
            &spec["expirationSeconds"],
        )
    })?;
    let mut audiences = string_list(&spec["audiences"])
        .map_err(|message| invalid("spec.audiences", message, &spec["audiences"]))?;
    if audiences.is_empty() {
        audiences.push(crate::auth::API_AUDIENCE.to_owned());
    }
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
        ..User::default()
    };
    let token = auth.issue(user, Duration::from_secs(seconds), &audiences);
    let expires = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::from_secs(
            i64::try_from(seconds).unwrap_or(i64::MAX),
        ))
        .unwrap_or_else(|_| jiff::Timestamp::now());
    if !request.is_object() {
        request = json!({});
    }
    request["apiVersion"] = json!("authentication.k8s.io/v1");
    request["kind"] = json!("TokenRequest");
    request["metadata"] = json!({"name": name, "namespace": ns, "creationTimestamp": now()});
    request["spec"]["expirationSeconds"] = json!(seconds);
    request["spec"]["audiences"] = json!(audiences);
    request["status"] = json!({
        "token": token,
        "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
    });
    Ok(request)
}

/// A TokenRequest's `expirationSeconds`: an hour when it is missing, otherwise an integer from
/// 10 minutes to 2^32 seconds (upstream's validation), anything else refused with the reason.
fn token_seconds(value: &Value) -> std::result::Result<u64, String> {
    match value {
        Value::Null => Ok(DEFAULT_TOKEN_SECONDS),
        Value::Number(n) => match n.as_i64() {
            Some(s) if s < MIN_TOKEN_SECONDS as i64 => {
                Err("may not specify a duration less than 10 minutes".into())
            }
            Some(s) if s > MAX_TOKEN_SECONDS as i64 => {
                Err("may not specify a duration larger than 2^32 seconds".into())
            }
            Some(s) => Ok(s as u64),
            None => Err("must be a whole number of seconds (a 64-bit integer)".into()),
        },
        _ => Err("must be a whole number of seconds".into()),
    }
}
