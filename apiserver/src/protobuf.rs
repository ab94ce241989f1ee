//! Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`), decoded into the
//! JSON object model the rest of the server works with.
//!
//! client-go's typed clients send protobuf and never fall back to JSON: helm's release Secrets
//! (POST, PUT, and DELETE with a `DeleteOptions` body), `kubectl create
//! namespace|configmap|secret|serviceaccount|deployment|token` and `kubectl auth can-i`; the
//! other `kubectl create` generators (job, cronjob, service, quota, role, rolebinding,
//! clusterrole, clusterrolebinding, ingress, poddisruptionbudget, priorityclass) too.
//! A body is the four bytes `k8s\0` followed by a `runtime.Unknown` envelope
//! `{typeMeta=1 {apiVersion=1, kind=2}, raw=2, contentEncoding=3, contentType=4}` whose `raw` is
//! the object encoded with its k8s.io/api message. [`decode`] returns the JSON kube-apiserver's
//! Go types would give for the same object, with `apiVersion` and `kind` from the envelope.
//!
//! That JSON is what the client would have sent as JSON (it matches `kubectl create …
//! --dry-run=client -o json` byte for byte in the tests): empty `omitempty` fields are left out,
//! structs are always written (`"status": {}`, `"resources": {}`), pointers appear exactly when
//! set (`"immutable": false` when the client set it), a zero `creationTimestamp` is left out.
//! Quantities keep the client's text; times lose their nanoseconds, as in kube-apiserver.
//! Unknown field numbers are skipped.
//!
//! Responses stay JSON. No I/O here, and no dependency on the rest of the server.

mod catalog;
mod message;
pub(crate) mod wire;

use serde_json::Value;

use message::Message;
use wire::{Reader, WireError, WireValue};

/// The media type of Kubernetes protobuf bodies.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The prefix of every Kubernetes protobuf body.
const MAGIC: &[u8; 4] = b"k8s\0";

/// Why a protobuf body could not be decoded; all are the client's fault (400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtobufError {
    /// The body does not start with the `k8s\0` prefix.
    #[error("the body is not a Kubernetes protobuf message: it lacks the \"k8s\\x00\" prefix")]
    NotProtobuf,
    /// The envelope or the object inside it is not valid protobuf for its kind.
    #[error("the protobuf body is malformed: {0}")]
    Malformed(String),
    /// The envelope names a kind this server cannot decode from protobuf.
    #[error("no kind \"{kind}\" is registered for version \"{api_version}\" in protobuf bodies")]
    UnsupportedKind {
        /// `typeMeta.apiVersion` of the envelope.
        api_version: String,
        /// `typeMeta.kind` of the envelope.
        kind: String,
    },
}

/// Decodes a `k8s\0` envelope (runtime.Unknown) and the message inside it into the JSON form
/// kube-apiserver would have decoded from JSON, with `apiVersion` and `kind` set.
pub fn decode(body: &[u8]) -> Result<Value, ProtobufError> {
    let envelope = body.strip_prefix(MAGIC).ok_or(ProtobufError::NotProtobuf)?;
    let unknown = Unknown::decode(envelope)
        .map_err(|e| ProtobufError::Malformed(format!("runtime.Unknown: {e}")))?;
    if unknown.kind.is_empty() {
        return Err(ProtobufError::Malformed(
            "runtime.Unknown: typeMeta.kind is empty".to_owned(),
        ));
    }
    let message = message_for(&unknown.api_version, &unknown.kind).ok_or_else(|| {
        ProtobufError::UnsupportedKind {
            api_version: unknown.api_version.clone(),
            kind: unknown.kind.clone(),
        }
    })?;
    let mut object = message::decode(message, unknown.raw)
        .map_err(|e| ProtobufError::Malformed(e.to_string()))?;
    object.insert("apiVersion".to_owned(), Value::String(unknown.api_version));
    object.insert("kind".to_owned(), Value::String(unknown.kind));
    Ok(Value::Object(object))
}

/// The message that encodes `kind` in `api_version`.
fn message_for(api_version: &str, kind: &str) -> Option<&'static Message> {
    let message = match (api_version, kind) {
        ("v1", "Secret") => &catalog::SECRET,
        ("v1", "ConfigMap") => &catalog::CONFIG_MAP,
        ("v1", "Namespace") => &catalog::NAMESPACE,
        ("v1", "ServiceAccount") => &catalog::SERVICE_ACCOUNT,
        ("apps/v1", "Deployment") => &catalog::DEPLOYMENT,
        ("authorization.k8s.io/v1", "SelfSubjectAccessReview") => {
            &catalog::SELF_SUBJECT_ACCESS_REVIEW
        }
        ("authorization.k8s.io/v1", "SelfSubjectRulesReview") => {
            &catalog::SELF_SUBJECT_RULES_REVIEW
        }
        ("authentication.k8s.io/v1", "TokenRequest") => &catalog::TOKEN_REQUEST,
        ("authentication.k8s.io/v1", "SelfSubjectReview") => &catalog::SELF_SUBJECT_REVIEW,
        // The other `kubectl create` generators.
        ("v1", "Service") => &catalog::SERVICE,
        ("v1", "ResourceQuota") => &catalog::RESOURCE_QUOTA,
        ("batch/v1", "Job") => &catalog::JOB,
        ("batch/v1", "CronJob") => &catalog::CRON_JOB,
        ("rbac.authorization.k8s.io/v1", "Role") => &catalog::ROLE,
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => &catalog::ROLE_BINDING,
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => &catalog::CLUSTER_ROLE,
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => &catalog::CLUSTER_ROLE_BINDING,
        ("networking.k8s.io/v1", "Ingress") => &catalog::INGRESS,
        ("policy/v1", "PodDisruptionBudget") => &catalog::POD_DISRUPTION_BUDGET,
        ("scheduling.k8s.io/v1", "PriorityClass") => &catalog::PRIORITY_CLASS,
        // meta/v1 DeleteOptions is registered in every group version, and a typed client sends
        // it under its own ("v1" from the core client).
        (_, "DeleteOptions") => &catalog::DELETE_OPTIONS,
        _ => return None,
    };
    Some(message)
}

/// The fields of the `runtime.Unknown` envelope that decoding needs.
struct Unknown<'a> {
    api_version: String,
    kind: String,
    raw: &'a [u8],
}

impl<'a> Unknown<'a> {
    fn decode(envelope: &'a [u8]) -> Result<Self, EnvelopeError> {
        let mut unknown = Unknown {
            api_version: String::new(),
            kind: String::new(),
            raw: &[],
        };
        let mut reader = Reader::new(envelope);
        while let Some((number, value)) = reader.field()? {
            match (number, value) {
                (1, WireValue::Bytes(type_meta)) => {
                    let mut reader = Reader::new(type_meta);
                    while let Some((number, value)) = reader.field()? {
                        match (number, value) {
                            (1, WireValue::Bytes(text)) => unknown.api_version = text_of(text)?,
                            (2, WireValue::Bytes(text)) => unknown.kind = text_of(text)?,
                            (1 | 2, _) => return Err(EnvelopeError::WireType("typeMeta")),
                            _ => {}
                        }
                    }
                }
                (2, WireValue::Bytes(raw)) => unknown.raw = raw,
                (3, WireValue::Bytes(encoding)) if !encoding.is_empty() => {
                    return Err(EnvelopeError::ContentEncoding(text_of(encoding)?));
                }
                (1..=4, _) if !matches!(value, WireValue::Bytes(_)) => {
                    return Err(EnvelopeError::WireType("a field"));
                }
                _ => {}
            }
        }
        Ok(unknown)
    }
}

fn text_of(bytes: &[u8]) -> Result<String, EnvelopeError> {
    String::from_utf8(bytes.to_vec()).map_err(|_| EnvelopeError::NotUtf8)
}

/// What is wrong with the `runtime.Unknown` envelope.
#[derive(Debug, thiserror::Error)]
enum EnvelopeError {
    #[error(transparent)]
    Wire(#[from] WireError),
    #[error("{0} is not length-delimited")]
    WireType(&'static str),
    #[error("typeMeta is not UTF-8")]
    NotUtf8,
    #[error("contentEncoding {0:?} is not supported")]
    ContentEncoding(String),
}

#[cfg(test)]
mod tests;
