//! Impersonation (`kubectl --as`), as kube-apiserver's legacy impersonation filter: the headers
//! `Impersonate-User`, `Impersonate-Group` (repeated), `Impersonate-Uid` and
//! `Impersonate-Extra-<key>` make the request that user's, once the caller is allowed the verb
//! `impersonate` on each (`users`, `serviceaccounts` for a service account's name, `groups`,
//! `uids` and `userextras/<key>` of `authentication.k8s.io`).

use std::collections::BTreeMap;

use http::HeaderMap;

use super::{Attributes, Authorizer, ResourceRequest};
use crate::auth::User;
use crate::error::{Error, Result};

const USER: &str = "impersonate-user";
const GROUP_HEADER: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";
const AUTHENTICATION: &str = "authentication.k8s.io";
/// Values of impersonation headers a request may carry at most.
const MAX_VALUES: usize = 256;

/// Who the request acts as: `user` itself without impersonation headers, the impersonated user
/// when `user` may impersonate it, or a refusal.
pub fn resolve(authorizer: &Authorizer, user: User, headers: &HeaderMap) -> Result<User> {
    let Some(asked) = asked(headers)? else {
        return Ok(user);
    };
    for attributes in checks(&asked) {
        if let super::Decision::Deny(reason) = authorizer.authorize(&user, &attributes) {
            return Err(attributes.forbidden(&user, &reason));
        }
    }
    Ok(impersonated(asked))
}

/// What the headers ask for, or `None` when there are none.
fn asked(headers: &HeaderMap) -> Result<Option<User>> {
    let text = |value: &http::HeaderValue| {
        value
            .to_str()
            .map(str::to_owned)
            .map_err(|_| Error::BadRequest("impersonation headers must be text".into()))
    };
    let mut name = None;
    let mut uid = None;
    let mut groups = Vec::new();
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut given = Vec::new();
    let mut count = 0;
    for (header, value) in headers {
        let key = header.as_str();
        if !key.starts_with("impersonate-") {
            continue;
        }
        count += 1;
        if count > MAX_VALUES {
            return Err(Error::BadRequest(format!(
                "a request may carry at most {MAX_VALUES} impersonation headers"
            )));
        }
        let value = text(value)?;
        match key {
            USER => name = Some(value),
            GROUP_HEADER => {
                given.push(format!("groups={value}"));
                groups.push(value);
            }
            UID => {
                given.push(format!("uid={value}"));
                uid = Some(value);
            }
            _ => {
                if let Some(extra_key) = key.strip_prefix(EXTRA_PREFIX) {
                    let extra_key = percent_decoded(extra_key);
                    given.push(format!("extra[{extra_key}]={value}"));
                    extra.entry(extra_key).or_default().push(value);
                }
            }
        }
    }
    if count == 0 {
        return Ok(None);
    }
    let Some(name) = name.filter(|n| !n.is_empty()) else {
        return Err(Error::BadRequest(format!(
            "requested [{}] without impersonating a user",
            given.join(" ")
        )));
    };
    Ok(Some(User {
        name,
        uid: uid.unwrap_or_default(),
        groups,
        extra,
    }))
}

/// The authorization each part of an impersonation needs.
fn checks(asked: &User) -> Vec<Attributes> {
    let impersonate = |group: &str, resource: &str, namespace: Option<&str>, name: &str| {
        Attributes::resource(
            "impersonate",
            ResourceRequest {
                group: group.into(),
                resource: resource.into(),
                subresource: None,
                namespace: namespace.map(str::to_owned),
                name: Some(name.to_owned()),
            },
        )
    };
    let mut out = vec![match service_account(&asked.name) {
        Some((ns, name)) => impersonate("", "serviceaccounts", Some(ns), name),
        None => impersonate("", "users", None, &asked.name),
    }];
    out.extend(
        asked
            .groups
            .iter()
            .map(|g| impersonate("", "groups", None, g)),
    );
    if !asked.uid.is_empty() {
        out.push(impersonate(AUTHENTICATION, "uids", None, &asked.uid));
    }
    for (key, values) in &asked.extra {
        for value in values {
            out.push(impersonate(
                AUTHENTICATION,
                &format!("userextras/{key}"),
                None,
                value,
            ));
        }
    }
    out
}

/// The user the request then stands for: a service account without groups asked gets its
/// groups, and everyone but `system:anonymous` is in `system:authenticated`.
fn impersonated(mut user: User) -> User {
    if user.groups.is_empty()
        && let Some((ns, _)) = service_account(&user.name)
    {
        user.groups = vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{ns}"),
        ];
    }
    let implied = if user.name == "system:anonymous" {
        "system:unauthenticated"
    } else {
        "system:authenticated"
    };
    if !user.groups.iter().any(|g| g == implied) {
        user.groups.push(implied.into());
    }
    user
}

/// `system:serviceaccount:<ns>:<name>` split into its namespace and name.
pub fn service_account(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix("system:serviceaccount:")?;
    let (ns, name) = rest.split_once(':')?;
    (!ns.is_empty() && !name.is_empty() && !name.contains(':')).then_some((ns, name))
}

/// `%`-escapes in an extra's key decoded, as upstream reads them.
fn percent_decoded(key: &str) -> String {
    let decoded: Vec<u8> =
        form_urlencoded::parse(format!("k={}", key.replace('+', "%2B")).as_bytes())
            .next()
            .map(|(_, v)| v.into_owned().into_bytes())
            .unwrap_or_default();
    String::from_utf8(decoded).unwrap_or_else(|_| key.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        map
    }

    #[test]
    fn headers_name_the_user_and_what_must_be_allowed() {
        assert_eq!(asked(&headers(&[("accept", "x")])).unwrap(), None);
        let asked = asked(&headers(&[
            ("Impersonate-User", "system:serviceaccount:team-a:builder"),
            ("Impersonate-Extra-Scopes%2Fx", "view"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(asked.extra["scopes/x"], ["view"]);
        let checks = checks(&asked);
        assert_eq!(
            checks[0].forbidden(&User::anonymous(), "").to_string(),
            r#"serviceaccounts "builder" is forbidden: User "system:anonymous" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "team-a""#
        );
        assert_eq!(checks.len(), 2);
        let user = impersonated(asked);
        assert_eq!(
            user.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:team-a",
                "system:authenticated"
            ]
        );
    }

    #[test]
    fn groups_without_a_user_are_refused() {
        let err = asked(&headers(&[("Impersonate-Group", "admins")])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "requested [groups=admins] without impersonating a user"
        );
    }
}
