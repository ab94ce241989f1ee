//! `atoll user create`: a kubeconfig for someone who is not the admin, authenticating with a
//! client certificate, the way a Kubernetes administrator makes one: a key made here, a
//! CertificateSigningRequest for signer `kubernetes.io/kube-apiserver-client` naming the user
//! (common name) and groups (organizations), approved, and the certificate the cluster signs.
//! The key never leaves this machine. The user may do nothing until a role is bound to them.

use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use base64::Engine as _;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;

use crate::client::explain;

const SIGNER: &str = "kubernetes.io/kube-apiserver-client";
/// The shortest certificate the signer issues (upstream's minimum `expirationSeconds`).
const MIN_TTL: Duration = Duration::from_secs(600);
/// How long the command waits for the certificate.
const SIGNING_TIMEOUT: Duration = Duration::from_secs(30);

pub struct NewUser<'a> {
    pub name: &'a str,
    pub groups: &'a [String],
    pub ttl: Duration,
    pub output: &'a Path,
}

/// What is wrong with a user's name or groups, if anything.
fn check(user: &NewUser<'_>) -> anyhow::Result<()> {
    if user.name.trim().is_empty() {
        anyhow::bail!("the user's name must not be empty");
    }
    if let Some(group) = user.groups.iter().find(|g| g.trim().is_empty()) {
        anyhow::bail!("--group {group:?}: a group must not be empty");
    }
    if user.ttl < MIN_TTL {
        anyhow::bail!(
            "--ttl {}s: a certificate lives at least 10m (the signer's minimum)",
            user.ttl.as_secs()
        );
    }
    Ok(())
}

pub async fn create(kubeconfig: Option<&Path>, user: NewUser<'_>) -> anyhow::Result<()> {
    check(&user)?;
    let config = crate::client::hub_config(kubeconfig).await?;
    let server = config.cluster_url.to_string();
    let ca_pem = config
        .root_cert
        .as_deref()
        .unwrap_or_default()
        .iter()
        .map(|der| atoll_pki::client::pem("CERTIFICATE", der))
        .collect::<String>();
    let client = kube::Client::try_from(config).context("cannot build a client for the hub")?;

    let key = rcgen::KeyPair::generate().context("cannot generate a key")?;
    let subject = atoll_pki::client::Subject {
        user: user.name.to_owned(),
        groups: user.groups.to_vec(),
    };
    let request = atoll_pki::client::request(&key, &subject)?;
    let csrs: Api<CertificateSigningRequest> = Api::all(client);
    let csr: CertificateSigningRequest = serde_json::from_value(json!({
        "metadata": {"generateName": "atoll-user-", "annotations": {"atoll.dev/user": user.name}},
        "spec": {
            "request": base64::engine::general_purpose::STANDARD.encode(&request),
            "signerName": SIGNER,
            "expirationSeconds": user.ttl.as_secs(),
            "usages": ["client auth"],
        },
    }))?;
    let created = csrs
        .create(&PostParams::default(), &csr)
        .await
        .map_err(|e| explain(e, "cannot create the certificate signing request"))?;
    let name = created.metadata.name.clone().unwrap_or_default();
    let signed = approve_and_wait(&csrs, &name, user.name).await;
    // The request has served its purpose, signed or not.
    let _ = csrs.delete(&name, &DeleteParams::default()).await;
    let certificate = signed?;

    let kubeconfig = atoll_apiserver::kubeconfig::render_certificate(
        "atoll",
        server.trim_end_matches('/'),
        &ca_pem,
        user.name,
        &certificate,
        &key.serialize_pem(),
    );
    atoll_pki::write_private(user.output, kubeconfig.as_bytes())
        .with_context(|| format!("cannot write {}", user.output.display()))?;
    let groups = if user.groups.is_empty() {
        "no groups".to_owned()
    } else {
        format!("groups {}", user.groups.join(", "))
    };
    println!(
        "kubeconfig for user {:?} ({groups}) written to {}, valid for {}s.",
        user.name,
        user.output.display(),
        user.ttl.as_secs()
    );
    println!(
        "The user may do nothing until bound to a role, e.g.:\n  kubectl create rolebinding {}-view --clusterrole=view --user={} -n NAMESPACE",
        user.name.replace(|c: char| !c.is_ascii_alphanumeric(), "-"),
        user.name
    );
    Ok(())
}

/// Approves the request and waits for the cluster's signer; the certificate, PEM.
async fn approve_and_wait(
    csrs: &Api<CertificateSigningRequest>,
    name: &str,
    user: &str,
) -> anyhow::Result<String> {
    let mut current = csrs
        .get(name)
        .await
        .map_err(|e| explain(e, "cannot read the certificate signing request"))?;
    let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::now());
    let approval = serde_json::from_value(json!({
        "type": "Approved", "status": "True", "reason": "AtollUserCreate",
        "message": format!("approved by atoll user create for user {user:?}"),
    }))?;
    let status = current.status.get_or_insert_with(Default::default);
    let mut condition: k8s_openapi::api::certificates::v1::CertificateSigningRequestCondition =
        approval;
    condition.last_update_time = Some(now);
    status
        .conditions
        .get_or_insert_with(Vec::new)
        .push(condition);
    csrs.replace_subresource("approval", name, &PostParams::default(), &current)
        .await
        .map_err(|e| explain(e, "cannot approve the certificate signing request"))?;
    let deadline = tokio::time::Instant::now() + SIGNING_TIMEOUT;
    loop {
        let csr = csrs
            .get(name)
            .await
            .map_err(|e| explain(e, "cannot read the certificate signing request"))?;
        let status = csr.status.unwrap_or_default();
        if let Some(certificate) = status.certificate.filter(|c| !c.0.is_empty()) {
            return String::from_utf8(certificate.0)
                .context("the signed certificate is not PEM text");
        }
        if let Some(failed) = status
            .conditions
            .unwrap_or_default()
            .into_iter()
            .find(|c| c.type_ == "Failed" || c.type_ == "Denied")
        {
            anyhow::bail!(
                "the cluster did not sign the certificate ({}): {}",
                failed.type_,
                failed.message.unwrap_or_default()
            );
        }
        if tokio::time::Instant::now() > deadline {
            anyhow::bail!(
                "the cluster signed no certificate within {}s: does it run a signer for {SIGNER}?",
                SIGNING_TIMEOUT.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_names_groups_and_lifetimes_are_refused() {
        let groups = vec!["devs".to_owned()];
        let user = |name: &'static str, ttl: u64| NewUser {
            name,
            groups: &groups,
            ttl: Duration::from_secs(ttl),
            output: Path::new("x"),
        };
        assert!(check(&user("alice", 3600)).is_ok());
        assert!(check(&user(" ", 3600)).is_err());
        let short = check(&user("alice", 60)).unwrap_err().to_string();
        assert!(short.contains("at least 10m"), "{short}");
        let empty = vec![String::new()];
        let no_group = NewUser {
            name: "alice",
            groups: &empty,
            ttl: Duration::from_secs(3600),
            output: Path::new("x"),
        };
        assert!(check(&no_group).is_err());
    }
}
