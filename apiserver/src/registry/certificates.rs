//! The signer of client certificates (kube-controller-manager's csrsigning controller, for
//! signer `kubernetes.io/kube-apiserver-client`): an approved CertificateSigningRequest gets a
//! certificate from the cluster CA in `status.certificate`, valid for the request's
//! `expirationSeconds` (a year at most, as upstream's `--cluster-signing-duration`). A request
//! it cannot sign gets a `Failed` condition saying why. Requests for other signers wait, as they
//! do on a cluster that runs no such signer.
//!
//! The controller follows a feed of the watch cache (changes to CertificateSigningRequests) and
//! looks at every request once at start, and again when it fell behind.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use atoll_runtime::backoff::Retries;
use base64::Engine as _;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::ResourceType;
use super::actor::Actor;
use super::store::{ListOptions, Store, WriteOptions};
use crate::error::{Error, Result};
use crate::pki::CertificateAuthority;
use crate::pki::client::read_request;
use crate::watch::{CachedEvent, Feed, Taken, next_pass};

pub const SIGNER: &str = "kubernetes.io/kube-apiserver-client";
const GROUP: &str = "certificates.k8s.io";
const PLURAL: &str = "certificatesigningrequests";
const FIELD_MANAGER: &str = "atoll-certificate-signer";
/// The longest a signed certificate lives.
const MAX_SECONDS: i64 = 365 * 24 * 3600;
/// The usages a client certificate of this signer may have; `client auth` is required.
const USAGES: [&str; 3] = ["digital signature", "key encipherment", "client auth"];

/// The controller's events: every change to a CertificateSigningRequest.
pub fn wants(event: &CachedEvent) -> bool {
    event
        .key
        .starts_with(&format!("/registry/{GROUP}/{PLURAL}/"))
}

/// What to do with one request.
#[derive(Debug, PartialEq)]
enum Plan {
    Nothing,
    /// Sign for this long (seconds).
    Sign(i64),
    /// Mark it failed, with this message.
    Fail(String),
}

fn has_condition(csr: &Value, kind: &str) -> bool {
    csr["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == kind && c["status"] != "False")
}

/// Upstream's rules for this signer, on an approved request not yet signed.
fn plan(csr: &Value) -> Plan {
    let spec = &csr["spec"];
    let signed = csr["status"]["certificate"]
        .as_str()
        .is_some_and(|c| !c.is_empty());
    if spec["signerName"] != SIGNER
        || signed
        || !has_condition(csr, "Approved")
        || has_condition(csr, "Denied")
        || has_condition(csr, "Failed")
    {
        return Plan::Nothing;
    }
    let usages: Vec<&str> = spec["usages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if !usages.contains(&"client auth") {
        return Plan::Fail("usages must include \"client auth\"".into());
    }
    if let Some(bad) = usages.iter().find(|u| !USAGES.contains(u)) {
        return Plan::Fail(format!(
            "usage {bad:?} is not allowed for signer {SIGNER}; allowed: {}",
            USAGES.join(", ")
        ));
    }
    let seconds = spec["expirationSeconds"]
        .as_i64()
        .unwrap_or(MAX_SECONDS)
        .min(MAX_SECONDS);
    Plan::Sign(seconds)
}

struct Context {
    store: Arc<Store>,
    ca: Arc<CertificateAuthority>,
}

/// Runs until `shutdown` turns true, following `feed` (made with [`wants`]).
pub async fn run(
    store: Arc<Store>,
    ca: Arc<CertificateAuthority>,
    feed: Arc<Feed>,
    mut shutdown: watch::Receiver<bool>,
) {
    let ctx = Context { store, ca };
    let mut settled = false;
    // Requests whose last look failed (a write refused by an admission policy, say): looked at
    // again after each one's backoff, or at once when an event concerns it.
    let mut retries = Retries::default();
    loop {
        let names = match (settled, feed.take()) {
            (true, Taken::Events(events)) => Ok(events
                .iter()
                .filter_map(|e| e.key.rsplit('/').next().map(str::to_owned))
                .collect::<BTreeSet<_>>()),
            _ => ctx.all().await,
        };
        match names {
            Ok(mut names) => {
                settled = true;
                names.extend(retries.due(Instant::now()));
                for name in names {
                    match ctx.reconcile(&name).await {
                        Ok(()) => retries.succeeded(&name),
                        Err(error) => {
                            let (failures, wait) = retries.failed(name.clone(), Instant::now());
                            tracing::warn!(csr = %name, %error, failures, retry_in = ?wait, "cannot sign the certificate signing request; retrying");
                        }
                    }
                }
            }
            Err(error) => {
                tracing::warn!(%error, "cannot list certificate signing requests; retrying");
                settled = false;
            }
        }
        if !next_pass(&feed, !settled, &retries, &mut shutdown).await {
            return;
        }
    }
}

impl Context {
    fn resource(&self) -> Result<Arc<ResourceType>> {
        self.store
            .registry()
            .catalog()
            .lookup(GROUP, "v1", PLURAL)
            .ok_or(Error::UnknownPath)
    }

    async fn all(&self) -> Result<BTreeSet<String>> {
        let list = self
            .store
            .list(&*self.resource()?, None, &ListOptions::default())
            .await?;
        Ok(list
            .items
            .iter()
            .filter_map(|c| c["metadata"]["name"].as_str().map(str::to_owned))
            .collect())
    }

    async fn reconcile(&self, name: &str) -> Result<()> {
        let rt = self.resource()?;
        let mut csr = match self.store.get(&rt, None, name).await {
            Ok(csr) => csr,
            Err(Error::NotFound(_)) => return Ok(()),
            Err(error) => return Err(error),
        };
        let outcome = match plan(&csr) {
            Plan::Nothing => return Ok(()),
            Plan::Fail(message) => Err(message),
            Plan::Sign(seconds) => self.sign(&csr, seconds),
        };
        match outcome {
            Ok(certificate) => {
                csr["status"]["certificate"] =
                    json!(base64::engine::general_purpose::STANDARD.encode(certificate));
            }
            Err(message) => {
                let conditions = csr["status"]["conditions"]
                    .as_array_mut()
                    .ok_or_else(|| Error::Internal("an approved request has conditions".into()))?;
                let now = super::store::now();
                conditions.push(json!({"type": "Failed", "status": "True",
                    "reason": "SignerValidationFailure", "message": message,
                    "lastUpdateTime": now, "lastTransitionTime": now}));
            }
        }
        let options = WriteOptions {
            field_manager: FIELD_MANAGER.into(),
            actor: Some(Actor::CertificateController),
            ..WriteOptions::default()
        };
        match self
            .store
            .update(&rt, None, name, Some("status"), csr, &options)
            .await
        {
            // Changed meanwhile: the change wakes the controller again.
            Ok(_) | Err(Error::Conflict { .. } | Error::NotFound(_)) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// The PEM certificate for a request, or why it cannot have one.
    fn sign(&self, csr: &Value, seconds: i64) -> std::result::Result<String, String> {
        let request = csr["spec"]["request"]
            .as_str()
            .and_then(|r| base64::engine::general_purpose::STANDARD.decode(r).ok())
            .and_then(|r| String::from_utf8(r).ok())
            .ok_or("spec.request is not base64-encoded PEM")?;
        let request = read_request(&request).map_err(|e| e.to_string())?;
        if request.subject.user.is_empty() {
            return Err("the request's subject has no common name (the user)".into());
        }
        let not_after = time::OffsetDateTime::now_utc() + time::Duration::seconds(seconds);
        self.ca
            .sign_client(&request.subject, &request.public_key, not_after)
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csr(signer: &str, usages: &[&str], conditions: Value) -> Value {
        json!({"spec": {"signerName": signer, "usages": usages, "expirationSeconds": 3600},
               "status": {"conditions": conditions}})
    }

    #[test]
    fn only_approved_client_requests_of_this_signer_are_signed() {
        let approved = json!([{"type": "Approved", "status": "True"}]);
        assert_eq!(
            plan(&csr(SIGNER, &["client auth"], approved.clone())),
            Plan::Sign(3600)
        );
        assert_eq!(
            plan(&csr(SIGNER, &["client auth"], json!([]))),
            Plan::Nothing
        );
        assert_eq!(
            plan(&csr(
                "example.com/other",
                &["client auth"],
                approved.clone()
            )),
            Plan::Nothing
        );
        assert!(matches!(
            plan(&csr(SIGNER, &["server auth"], approved.clone())),
            Plan::Fail(_)
        ));
        let denied =
            json!([{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}]);
        assert_eq!(plan(&csr(SIGNER, &["client auth"], denied)), Plan::Nothing);
        let mut long = csr(SIGNER, &["client auth"], approved);
        long["spec"]["expirationSeconds"] = json!(10 * MAX_SECONDS);
        assert_eq!(plan(&long), Plan::Sign(MAX_SECONDS));
    }
}
