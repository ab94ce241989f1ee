//! Who the server's own controllers write as, and what their writes pass on the way to storage:
//! the ValidatingAdmissionPolicies' check of that user, and an audit event. kube-apiserver sees
//! kube-controller-manager's writes as requests of one service account per controller
//! (`--use-service-account-credentials`), and its own (the `kubernetes` Service, cluster IP
//! allocation and repair) as requests of its loopback client's user; atoll's controllers write
//! to the store directly, as those users, through the same admission and audit path as HTTP
//! writes.
//!
//! The names, as upstream gives them:
//! - kube-controller-manager: `system:serviceaccount:kube-system:<name>`, `<name>` the argument
//!   of `ClientBuilder.ClientOrDie(..)` in each controller's start function under
//!   `cmd/kube-controller-manager/app/`: `generic-garbage-collector`, `namespace-controller`,
//!   `service-account-controller`, `endpoint-controller` (`core.go`); `root-ca-cert-publisher`,
//!   `certificate-controller` (the CSR signing, approving and cleaning controllers alike,
//!   `certificates.go`); `endpointslice-controller` (`discovery.go`);
//!   `clusterrole-aggregation-controller` (`rbac.go`); `validatingadmissionpolicy-status-controller`
//!   (`names.ValidatingAdmissionPolicyStatusController`, `validatingadmissionpolicystatus.go`).
//!   A service account's user has the groups `system:serviceaccounts`,
//!   `system:serviceaccounts:kube-system` and `system:authenticated`.
//! - kube-apiserver's loopback client: `system:apiserver` (`user.APIServerUser`), groups
//!   `system:authenticated` and `system:masters` (`AuthorizeClientBearerToken` in
//!   `k8s.io/apiserver/pkg/server/config.go`).

use std::sync::Arc;

use serde_json::{Value, json};

use super::ResourceType;
use super::store::{DeleteOptions, Deleted, Propagation, Warnings, WriteOptions};
use crate::admission::{Gate, PolicyAdmission};
use crate::audit::{AuditLog, Record};
use crate::auth::User;
use crate::error::Result;

/// An in-server controller, as the user upstream's counterpart writes as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Actor {
    /// Garbage collection by owner references.
    GarbageCollector,
    /// Namespace deletion: emptying a terminating namespace and finalizing it.
    NamespaceController,
    /// The `default` ServiceAccount of every namespace.
    ServiceAccountController,
    /// The `kube-root-ca.crt` ConfigMap of every namespace.
    RootCaCertPublisher,
    /// The v1 Endpoints of Services.
    EndpointController,
    /// The EndpointSlices of Services.
    EndpointSliceController,
    /// Signing approved CertificateSigningRequests.
    CertificateController,
    /// Aggregated ClusterRoles.
    ClusterRoleAggregation,
    /// The type checking of ValidatingAdmissionPolicies, in their status.
    PolicyStatusController,
    /// kube-apiserver's own writes: the `kubernetes` Service and its endpoints, cluster IP
    /// allocation and repair.
    ApiServer,
}

/// The user of kube-apiserver's loopback client.
pub const API_SERVER_USER: &str = "system:apiserver";

impl Actor {
    /// The `kube-system` service account upstream's controller writes as; none for
    /// kube-apiserver's own writes.
    pub fn service_account(self) -> Option<&'static str> {
        Some(match self {
            Actor::GarbageCollector => "generic-garbage-collector",
            Actor::NamespaceController => "namespace-controller",
            Actor::ServiceAccountController => "service-account-controller",
            Actor::RootCaCertPublisher => "root-ca-cert-publisher",
            Actor::EndpointController => "endpoint-controller",
            Actor::EndpointSliceController => "endpointslice-controller",
            Actor::CertificateController => "certificate-controller",
            Actor::ClusterRoleAggregation => "clusterrole-aggregation-controller",
            Actor::PolicyStatusController => "validatingadmissionpolicy-status-controller",
            Actor::ApiServer => return None,
        })
    }

    /// The user the controller writes as.
    pub fn user(self) -> User {
        match self.service_account() {
            Some(account) => User {
                name: format!("system:serviceaccount:kube-system:{account}"),
                groups: vec![
                    "system:serviceaccounts".into(),
                    "system:serviceaccounts:kube-system".into(),
                    "system:authenticated".into(),
                ],
                ..User::default()
            },
            None => User {
                name: API_SERVER_USER.into(),
                groups: vec!["system:authenticated".into(), "system:masters".into()],
                ..User::default()
            },
        }
    }
}

/// What a controller's write asks, as a request over HTTP would.
pub(super) struct Asked<'a> {
    /// The authorization verb: `create`, `update`, `patch` or `delete`.
    pub verb: &'static str,
    pub rt: &'a ResourceType,
    pub namespace: Option<&'a str>,
    /// None for a create whose name the server generates.
    pub name: Option<&'a str>,
    pub subresource: Option<&'a str>,
    /// The request's body: the object written, or the options of a delete.
    pub body: Option<&'a Value>,
}

/// One write of a controller under way: the policies' check of its user, and its audit record.
pub(super) struct ActingWrite {
    actor: Actor,
    audit: Option<(Arc<AuditLog>, Arc<Record>)>,
    admission: Option<Arc<PolicyAdmission>>,
    /// What the write's checks warned of, when refused.
    warnings: Arc<Warnings>,
}

impl ActingWrite {
    /// Starts a write of `actor`: its audit event at `RequestReceived`, and the policies' check.
    pub(super) async fn begin(gate: &Gate, actor: Actor, asked: Asked<'_>) -> ActingWrite {
        let user = actor.user();
        let audit = match gate.audit.clone() {
            Some(log) => {
                let path = rest_path(&asked);
                let method = match asked.verb {
                    "create" => "POST",
                    "update" => "PUT",
                    "patch" => "PATCH",
                    _ => "DELETE",
                };
                let record = Arc::new(Record::internal(method, path.clone()));
                record.users(&user, &user);
                let rt = asked.rt;
                let attributes = crate::authz::Attributes::resource(
                    asked.verb,
                    crate::authz::ResourceRequest {
                        group: rt.group.clone(),
                        resource: rt.plural.clone(),
                        subresource: asked.subresource.map(str::to_owned),
                        namespace: asked.namespace.map(str::to_owned),
                        name: asked.name.map(str::to_owned),
                    },
                );
                record.asks(&log, &attributes, &path);
                record.api_version(&rt.group, &rt.version);
                // The server's controllers may write what they write.
                record.authorized(true);
                if let Some(body) = asked.body {
                    record.request_object(body.clone());
                }
                record.received(&log).await;
                Some((log, record))
            }
            None => None,
        };
        let admission = gate
            .admission(
                &user,
                asked.subresource.unwrap_or_default(),
                false,
                audit.as_ref().map(|(_, record)| record.clone()),
            )
            .map(Arc::new);
        ActingWrite {
            actor,
            audit,
            admission,
            warnings: Arc::default(),
        }
    }

    /// The options of the write: the caller's, with the policies' check.
    pub(super) fn write_options(&self, options: &WriteOptions) -> WriteOptions {
        let mut options = options.clone();
        options.warnings = self.warnings.clone();
        if let Some(admission) = &self.admission {
            options.admission = Some(admission.clone());
        }
        options
    }

    /// The options of a delete: the caller's, with the policies' check.
    pub(super) fn delete_options(&self, options: &DeleteOptions) -> DeleteOptions {
        let mut options = options.clone();
        if let Some(admission) = &self.admission {
            options.admission = Some(admission.clone());
        }
        options
    }

    /// Ends a write: its audit event at `ResponseComplete`, and its warnings logged, as a
    /// client's warning handler logs them.
    pub(super) async fn finish(self, outcome: Outcome<'_>) {
        let mut warnings = self.warnings.take();
        if let Some(admission) = &self.admission {
            warnings.extend(admission.take_delete_warnings());
        }
        let (code, body) = match &outcome {
            Outcome::Written {
                object,
                created,
                warnings: given,
            } => {
                warnings.extend(given.iter().cloned());
                (if *created { 201 } else { 200 }, Some(*object))
            }
            Outcome::Deleted(deleted) => (
                200,
                Some(match deleted {
                    Deleted::Gone(object) | Deleted::Pending(object) => object,
                }),
            ),
            Outcome::Failed(error) => (error.code().as_u16(), None),
        };
        let user = self.actor.user().name;
        for warning in warnings {
            tracing::warn!(user = %user, %warning, "the server warned of a controller's write");
        }
        if let Some((log, record)) = &self.audit {
            match &outcome {
                Outcome::Failed(error) => {
                    let status = error.to_status();
                    record.responded(log, code, Some(&status)).await;
                }
                _ => record.responded(log, code, body).await,
            }
        }
    }
}

/// How a controller's write ended.
pub(super) enum Outcome<'a> {
    Written {
        object: &'a Value,
        created: bool,
        warnings: &'a [String],
    },
    Deleted(&'a Deleted),
    Failed(&'a crate::error::Error),
}

impl<'a> Outcome<'a> {
    pub(super) fn of_write(result: &'a Result<super::store::Written>) -> Outcome<'a> {
        match result {
            Ok(written) => Outcome::Written {
                object: &written.object,
                created: written.created,
                warnings: &written.warnings,
            },
            Err(error) => Outcome::Failed(error),
        }
    }

    pub(super) fn of_delete(result: &'a Result<Deleted>) -> Outcome<'a> {
        match result {
            Ok(deleted) => Outcome::Deleted(deleted),
            Err(error) => Outcome::Failed(error),
        }
    }
}

/// The REST path a client would have sent the write to (a create's, the collection's), as the
/// audit event's `requestURI`.
fn rest_path(asked: &Asked<'_>) -> String {
    let rt = asked.rt;
    let mut path = if rt.group.is_empty() {
        format!("/api/{}", rt.version)
    } else {
        format!("/apis/{}/{}", rt.group, rt.version)
    };
    if let Some(ns) = asked.namespace.filter(|_| rt.namespaced) {
        path.push_str(&format!("/namespaces/{ns}"));
    }
    path.push('/');
    path.push_str(&rt.plural);
    if asked.verb != "create"
        && let Some(name) = asked.name
    {
        path.push('/');
        path.push_str(name);
        if let Some(sub) = asked.subresource {
            path.push('/');
            path.push_str(sub);
        }
    }
    path
}

/// A delete's options as the request body a client sends (`meta.k8s.io/v1` DeleteOptions).
pub(super) fn delete_body(options: &DeleteOptions) -> Value {
    let mut body = json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"});
    if let Some(uid) = &options.precondition_uid {
        body["preconditions"]["uid"] = json!(uid);
    }
    if let Some(rv) = &options.precondition_resource_version {
        body["preconditions"]["resourceVersion"] = json!(rv);
    }
    if let Some(propagation) = options.propagation {
        body["propagationPolicy"] = json!(match propagation {
            Propagation::Background => "Background",
            Propagation::Foreground => "Foreground",
            Propagation::Orphan => "Orphan",
        });
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controllers_are_the_users_upstream_names() {
        let gc = Actor::GarbageCollector.user();
        assert_eq!(
            gc.name,
            "system:serviceaccount:kube-system:generic-garbage-collector"
        );
        assert!(
            gc.groups
                .contains(&"system:serviceaccounts:kube-system".to_owned())
        );
        assert_eq!(Actor::ApiServer.user().name, "system:apiserver");
        assert!(
            Actor::ApiServer
                .user()
                .groups
                .contains(&"system:masters".to_owned())
        );
    }

    #[test]
    fn the_request_uri_is_the_rest_path_of_the_object() {
        let catalog = crate::registry::Registry::new().catalog();
        let configmaps = catalog.lookup("", "v1", "configmaps").unwrap();
        let asked = |verb, name, subresource| Asked {
            verb,
            rt: &configmaps,
            namespace: Some("team"),
            name,
            subresource,
            body: None,
        };
        assert_eq!(
            rest_path(&asked("create", Some("kube-root-ca.crt"), None)),
            "/api/v1/namespaces/team/configmaps"
        );
        assert_eq!(
            rest_path(&asked("delete", Some("a"), None)),
            "/api/v1/namespaces/team/configmaps/a"
        );
        let csrs = catalog
            .lookup("certificates.k8s.io", "v1", "certificatesigningrequests")
            .unwrap();
        let status = Asked {
            verb: "update",
            rt: &csrs,
            namespace: None,
            name: Some("alice"),
            subresource: Some("status"),
            body: None,
        };
        assert_eq!(
            rest_path(&status),
            "/apis/certificates.k8s.io/v1/certificatesigningrequests/alice/status"
        );
    }
}
