//! The printer of `certificates.k8s.io` CertificateSigningRequests.

use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use super::super::age;
use super::{age_cell, age_col, col, items, name, name_cell, non_empty, str_at};
use crate::table::Column;

pub(super) fn certificate_signing_request_columns() -> Vec<Column> {
    vec![
        name(),
        age_col(),
        col(
            "SignerName",
            "string",
            "Requested signer for the request. It is a qualified name in the form: `scope-hostname.io/name`. If empty, it will be defaulted:\n 1. If it's a kubelet client certificate, it is assigned\n    \"kubernetes.io/kube-apiserver-client-kubelet\".\n 2. If it's a kubelet serving certificate, it is assigned\n    \"kubernetes.io/kubelet-serving\".\n 3. Otherwise, it is assigned \"kubernetes.io/legacy-unknown\".\nDistribution of trust for signers happens out of band. You can select on this field using `spec.signerName`.",
        ),
        col("Requestor", "string", "Base64-encoded PKCS#10 CSR data"),
        col(
            "RequestedDuration",
            "string",
            "expirationSeconds is the requested duration of validity of the issued certificate. The certificate signer may issue a certificate with a different validity duration so a client must check the delta between the notBefore and and notAfter fields in the issued certificate to determine the actual duration.\n\nThe v1.22+ in-tree implementations of the well-known Kubernetes signers will honor this field as long as the requested duration is not greater than the maximum duration they will honor per the --cluster-signing-duration CLI flag to the Kubernetes controller manager.\n\nCertificate signers may not honor this field for various reasons:\n\n  1. Old signer that is unaware of the field (such as the in-tree\n     implementations prior to v1.22)\n  2. Signer whose configured maximum is shorter than the requested duration\n  3. Signer whose configured minimum is longer than the requested duration\n\nThe minimum valid value for expirationSeconds is 600, i.e. 10 minutes.",
        ),
        col(
            "Condition",
            "string",
            "Conditions applied to the request, such as approval or denial.",
        ),
    ]
}

/// A signing request: who asked whom for how long, and where it stands (`Pending`,
/// `Approved,Issued`, `Denied`, …).
pub(super) fn certificate_signing_request(o: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &o["spec"];
    let duration = match &spec["expirationSeconds"] {
        Value::Null => "<none>".to_owned(),
        seconds => age::human_duration(SignedDuration::from_secs(
            seconds.as_i64().unwrap_or_default(),
        )),
    };
    vec![
        name_cell(o),
        age_cell(o, now),
        json!(non_empty(str_at(&spec["signerName"]), "<none>")),
        json!(str_at(&spec["username"])),
        json!(duration),
        json!(condition(&o["status"])),
    ]
}

/// The request's state from the types of its conditions (whatever their status), then
/// whether a certificate was issued.
fn condition(status: &Value) -> String {
    let has = |ty: &str| items(&status["conditions"]).iter().any(|c| c["type"] == ty);
    let mut text = if has("Denied") {
        "Denied"
    } else if has("Approved") {
        "Approved"
    } else {
        "Pending"
    }
    .to_owned();
    if has("Failed") {
        text.push_str(",Failed");
    }
    if !str_at(&status["certificate"]).is_empty() {
        text.push_str(",Issued");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::super::Printer;
    use super::super::tests::{cells, headers, meta};
    use serde_json::json;

    #[test]
    fn signing_requests() {
        let issued = json!({"metadata": meta("node-csr-abc"), "spec": {
                "signerName": "kubernetes.io/kube-apiserver-client-kubelet",
                "username": "system:bootstrap:abcdef", "expirationSeconds": 86400,
                "request": "LS0t", "usages": ["client auth"]},
            "status": {"conditions": [{"type": "Approved", "status": "True"}],
                "certificate": "LS0tLS1CRUdJTi"}});
        assert_eq!(
            headers(Printer::CertificateSigningRequest),
            [
                "NAME",
                "AGE",
                "SIGNERNAME",
                "REQUESTOR",
                "REQUESTEDDURATION",
                "CONDITION"
            ]
        );
        assert_eq!(
            cells(Printer::CertificateSigningRequest, issued),
            [
                json!("node-csr-abc"),
                json!("5m"),
                json!("kubernetes.io/kube-apiserver-client-kubelet"),
                json!("system:bootstrap:abcdef"),
                json!("24h"),
                json!("Approved,Issued")
            ]
        );
        let pending = json!({"metadata": meta("p"), "spec": {"username": "ann"}});
        assert_eq!(
            cells(Printer::CertificateSigningRequest, pending)[2..],
            [
                json!("<none>"),
                json!("ann"),
                json!("<none>"),
                json!("Pending")
            ]
        );
        let denied = json!({"metadata": meta("d"), "spec": {"expirationSeconds": 600},
            "status": {"conditions": [{"type": "Approved", "status": "True"},
                {"type": "Denied", "status": "True"}, {"type": "Failed", "status": "True"}]}});
        assert_eq!(
            cells(Printer::CertificateSigningRequest, denied)[4..],
            [json!("10m"), json!("Denied,Failed")]
        );
    }
}
