//! What `kubeadm join` needs inside a `Kubernetes`-mode hosted cluster, as kubeadm's own
//! `bootstrap-token`, `upload-config` and `kubelet` phases leave it in a cluster it made (and as
//! Kamaji writes it into its tenant control planes): bootstrap tokens in `kube-system`, the
//! `cluster-info` ConfigMap in `kube-public` that anonymous clients may read (and that the
//! controller manager's `bootstrapsigner` signs with each token), the `kubeadm-config` and
//! `kubelet-config` ConfigMaps, and the RBAC that lets bootstrap tokens post certificate signing
//! requests, have them approved, and read what the join reads. Pure: the controller writes these
//! through the hosted API server; `atoll hosted join-command` reads and makes tokens with the
//! same functions.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};

use crate::conditions::Verdict;
use atoll_api::hosted::Endpoint;

/// The condition saying whether worker nodes can join the cluster with `kubeadm join`.
pub const CONDITION_WORKERS_JOINABLE: &str = "WorkersJoinable";
/// Where bootstrap tokens live.
pub const TOKEN_NAMESPACE: &str = "kube-system";
/// The Secret type of a bootstrap token.
pub const TOKEN_TYPE: &str = "bootstrap.kubernetes.io/token";
/// The group kubeadm's bootstrap tokens authenticate as (besides `system:bootstrappers`).
pub const BOOTSTRAPPERS: &str = "system:bootstrappers:kubeadm:default-node-token";
/// The group of nodes.
pub const NODES: &str = "system:nodes";
/// How long a token made without a TTL lasts.
pub const DEFAULT_TTL: Duration = Duration::from_secs(24 * 3600);
/// A token made by the hub is replaced once it has less than this left.
pub const RENEW_BEFORE: Duration = Duration::from_secs(8 * 3600);
/// The label that marks the bootstrap tokens atoll made, with who made them: `hub` (kept and
/// renewed by the hub) or `cli` (`atoll hosted join-command --ttl`).
pub const LABEL_TOKEN_BY: &str = "atoll.dev/bootstrap-token-by";
/// The `cluster-info` ConfigMap's namespace.
pub const CLUSTER_INFO_NAMESPACE: &str = "kube-public";
/// The `cluster-info` ConfigMap's name.
pub const CLUSTER_INFO: &str = "cluster-info";
/// The Role (and RoleBinding) that lets anonymous clients read `cluster-info`.
pub const CLUSTER_INFO_ROLE: &str = "kubeadm:bootstrap-signer-clusterinfo";
/// The ConfigMap holding kubeadm's ClusterConfiguration.
pub const KUBEADM_CONFIG: &str = "kubeadm-config";
/// The ConfigMap holding the kubelets' KubeletConfiguration.
pub const KUBELET_CONFIG: &str = "kubelet-config";
/// The cluster's DNS domain.
pub const DNS_DOMAIN: &str = "cluster.local";

/// Who made a bootstrap token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MadeBy {
    /// The hub, which keeps one valid and renews it.
    Hub,
    /// `atoll hosted join-command --ttl`.
    Cli,
}

impl MadeBy {
    /// Its label value.
    pub fn label(self) -> &'static str {
        match self {
            MadeBy::Hub => "hub",
            MadeBy::Cli => "cli",
        }
    }
}

/// A bootstrap token (`<id>.<secret>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// Its public part: six lower-case letters and digits.
    pub id: String,
    /// Its secret part: sixteen lower-case letters and digits.
    pub secret: String,
    /// When it stops working.
    pub expires: jiff::Timestamp,
    /// Who made it.
    pub by: MadeBy,
}

impl Token {
    /// A new random token that expires `ttl` after `now`.
    pub fn generate(now: jiff::Timestamp, ttl: Duration, by: MadeBy) -> Token {
        Token {
            id: random_text(6),
            secret: random_text(16),
            expires: now
                .checked_add(jiff::SignedDuration::from_secs(
                    i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX / 2),
                ))
                .unwrap_or(jiff::Timestamp::MAX),
            by,
        }
    }

    /// The token as `kubeadm join --token` takes it.
    pub fn text(&self) -> String {
        format!("{}.{}", self.id, self.secret)
    }

    /// The name of its Secret.
    pub fn secret_name(&self) -> String {
        format!("bootstrap-token-{}", self.id)
    }

    /// How long it is still valid at `now` (zero once expired).
    pub fn remaining(&self, now: jiff::Timestamp) -> Duration {
        let left = self.expires.as_second() - now.as_second();
        Duration::from_secs(u64::try_from(left).unwrap_or(0))
    }

    /// The tokens atoll made among `secrets` (listed from a hosted cluster's `kube-system`).
    pub fn all_in(secrets: Vec<k8s_openapi::api::core::v1::Secret>) -> Vec<Token> {
        secrets
            .into_iter()
            .filter_map(|s| {
                let data = s
                    .data
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, v.0))
                    .collect();
                Token::from_secret(&s.metadata.labels.unwrap_or_default(), &data)
            })
            .collect()
    }

    /// The token read from its Secret's data (`None` when it is not one atoll made, or not
    /// well formed).
    pub fn from_secret(
        labels: &BTreeMap<String, String>,
        data: &BTreeMap<String, Vec<u8>>,
    ) -> Option<Token> {
        let by = match labels.get(LABEL_TOKEN_BY).map(String::as_str) {
            Some("hub") => MadeBy::Hub,
            Some("cli") => MadeBy::Cli,
            _ => return None,
        };
        let text = |k: &str| {
            data.get(k)
                .and_then(|v| String::from_utf8(v.clone()).ok())
                .filter(|v| v.len() <= 64)
        };
        let id = text("token-id").filter(|v| well_formed(v, 6))?;
        let secret = text("token-secret").filter(|v| well_formed(v, 16))?;
        let expires = text("expiration")?.parse().ok()?;
        Some(Token {
            id,
            secret,
            expires,
            by,
        })
    }

    /// Its Secret, as kubeadm makes one, to apply into `kube-system` (data base64-encoded, so
    /// that server-side apply owns its keys).
    pub fn secret(&self) -> Value {
        let by = match self.by {
            MadeBy::Hub => "the atoll hub, for kubeadm join",
            MadeBy::Cli => "atoll hosted join-command",
        };
        let data: BTreeMap<&str, String> = [
            ("token-id", self.id.clone()),
            ("token-secret", self.secret.clone()),
            ("expiration", self.expires.to_string()),
            ("usage-bootstrap-authentication", "true".to_owned()),
            ("usage-bootstrap-signing", "true".to_owned()),
            ("auth-extra-groups", BOOTSTRAPPERS.to_owned()),
            ("description", format!("made by {by}")),
        ]
        .into_iter()
        .map(|(k, v)| (k, base64::engine::general_purpose::STANDARD.encode(v)))
        .collect();
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": self.secret_name(),
                "namespace": TOKEN_NAMESPACE,
                "labels": {
                    LABEL_TOKEN_BY: self.by.label(),
                    "app.kubernetes.io/managed-by": "atoll",
                },
            },
            "type": TOKEN_TYPE,
            "data": data,
        })
    }
}

/// `n` random lower-case letters and digits (the alphabet of bootstrap tokens).
fn random_text(n: usize) -> String {
    use rand::Rng as _;
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    (0..n)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// Whether `text` is `len` lower-case letters and digits.
fn well_formed(text: &str, len: usize) -> bool {
    text.len() == len
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// What to do with the tokens atoll made in a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenPlan {
    /// The Secrets of expired tokens, to delete (the controller manager's `tokencleaner` does
    /// too; the hub does not wait for it).
    pub delete: Vec<String>,
    /// Whether to make a new token: no token the hub made has more than [`RENEW_BEFORE`] left.
    pub create: bool,
    /// The hub's token kubeadm join should use now (the one valid longest), if any is.
    pub current: Option<Token>,
}

/// Plans the tokens of a cluster from those `found` at `now`.
pub fn plan_tokens(found: &[Token], now: jiff::Timestamp) -> TokenPlan {
    let delete = found
        .iter()
        .filter(|t| t.remaining(now).is_zero())
        .map(Token::secret_name)
        .collect();
    let current = found
        .iter()
        .filter(|t| t.by == MadeBy::Hub && !t.remaining(now).is_zero())
        .max_by_key(|t| t.expires)
        .cloned();
    let create = current
        .as_ref()
        .is_none_or(|t| t.remaining(now) <= RENEW_BEFORE);
    TokenPlan {
        delete,
        create,
        current,
    }
}

/// How long until the hub's `current` token must be renewed (when to look again).
pub fn renew_in(current: &Token, now: jiff::Timestamp) -> Duration {
    current
        .remaining(now)
        .saturating_sub(RENEW_BEFORE)
        .max(Duration::from_secs(1))
}

/// The token `kubeadm join` should get from `found` at `now`: the one valid longest, when it
/// has at least `at_least` left.
pub fn usable(found: &[Token], now: jiff::Timestamp, at_least: Duration) -> Option<&Token> {
    found
        .iter()
        .filter(|t| t.remaining(now) > at_least)
        .max_by_key(|t| t.expires)
}

/// Why a CA certificate's hash could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum HashError {
    /// Not PEM.
    #[error("the CA certificate is not PEM")]
    Pem(#[source] x509_parser::nom::Err<x509_parser::error::PEMError>),
    /// Not an X.509 certificate.
    #[error("the CA certificate is not an X.509 certificate")]
    Certificate(#[source] x509_parser::nom::Err<x509_parser::error::X509Error>),
}

/// `sha256:<hex>` of the DER-encoded SubjectPublicKeyInfo of the (first) certificate in
/// `ca_pem`: what `kubeadm join --discovery-token-ca-cert-hash` takes.
pub fn ca_cert_hash(ca_pem: &str) -> Result<String, HashError> {
    use sha2::Digest as _;
    let (_, pem) = x509_parser::pem::parse_x509_pem(ca_pem.as_bytes()).map_err(HashError::Pem)?;
    let (_, cert) =
        x509_parser::parse_x509_certificate(&pem.contents).map_err(HashError::Certificate)?;
    let digest = sha2::Sha256::digest(cert.tbs_certificate.subject_pki.raw);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("sha256:{hex}"))
}

/// The `kubeadm join` command line for `endpoint`, `token` and the CA's hash.
pub fn join_command(endpoint: &Endpoint, token: &Token, ca_hash: &str) -> String {
    format!(
        "kubeadm join {}:{} --token {} --discovery-token-ca-cert-hash {ca_hash}",
        endpoint.host,
        endpoint.port,
        token.text()
    )
}

/// What the objects of a cluster are rendered from.
#[derive(Debug, Clone)]
pub struct Input<'a> {
    /// The cluster's name.
    pub cluster: &'a str,
    /// The control plane's namespace on the hub cluster (where its etcd's Service is).
    pub namespace: &'a str,
    /// Where workers reach its API server.
    pub endpoint: &'a Endpoint,
    /// The cluster CA (PEM).
    pub ca_pem: &'a str,
    /// The version kube-apiserver runs (`v1.X.Y`).
    pub version: &'a str,
    /// The cluster's networks (kubeadm's `serviceSubnet` and `podSubnet`, the kubelets'
    /// `clusterDNS`).
    pub network: &'a atoll_api::hosted::network::Network,
    /// Where the control plane's images come from.
    pub registry: &'a str,
    /// Whether the hub installs kube-proxy.
    pub kube_proxy: bool,
    /// Whether the hub installs CoreDNS.
    pub core_dns: bool,
}

/// The `cluster-info` kubeconfig: the API server's external address and the cluster CA, with
/// an unnamed cluster and no users, as kubeadm writes it.
pub fn cluster_info_kubeconfig(endpoint: &Endpoint, ca_pem: &str) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    certificate-authority-data: {ca}\n    server: https://{}:{}\n  name: \"\"\ncontexts: null\ncurrent-context: \"\"\npreferences: {{}}\nusers: null\n",
        endpoint.host, endpoint.port
    )
}

/// kubeadm's ClusterConfiguration of the cluster (`kubeadm-config`), in `kubeadm.k8s.io/v1beta4`.
/// `kubeadm join` of a worker decodes it (unknown fields only warn; a bad type, an unknown
/// `apiVersion` or a version it cannot parse fails the join), defaults it, normalizes
/// `kubernetesVersion` (a semantic version, at least kubeadm's own minor less one) and splits
/// `controlPlaneEndpoint` into host and port. It holds what kubeadm's validation asks of a
/// cluster with external etcd: the etcd the control plane uses (its client Service on the hub
/// cluster, with the certificate files as kube-apiserver's pod mounts them: absolute paths, the
/// pair with its CA), the networks, the DNS domain, and whether kube-proxy and CoreDNS are the
/// cluster's (`proxy.disabled`, `dns.disabled`, as `kubeadm init --skip-phases=addon/...`
/// records them).
pub fn cluster_configuration(input: &Input<'_>) -> String {
    use super::{pki, render};
    let file = |key| render::path(pki::ETCD_CLIENT, key);
    format!(
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nclusterName: {}\nkubernetesVersion: {}\ncontrolPlaneEndpoint: {}:{}\ncertificatesDir: /etc/kubernetes/pki\nimageRepository: {}\nnetworking:\n  dnsDomain: {DNS_DOMAIN}\n  serviceSubnet: {}\n{}etcd:\n  external:\n    endpoints:\n    - {}\n    caFile: {}\n    certFile: {}\n    keyFile: {}\ndns:\n  disabled: {}\nproxy:\n  disabled: {}\n",
        input.cluster,
        input.version,
        input.endpoint.host,
        input.endpoint.port,
        input.registry,
        input.network.service,
        input
            .network
            .pod
            .map(|p| format!("  podSubnet: {p}\n"))
            .unwrap_or_default(),
        render::etcd_client_url(input.namespace),
        file(pki::CA_CRT),
        file(pki::TLS_CRT),
        file(pki::TLS_KEY),
        !input.core_dns,
        !input.kube_proxy,
    )
}

/// The KubeletConfiguration every joining kubelet takes (`kubelet-config`): the cluster's DNS
/// (the `kube-dns` Service's address `dns`), the systemd cgroup driver, webhook authentication
/// and authorization, rotated certificates.
pub fn kubelet_configuration(dns: std::net::Ipv4Addr) -> String {
    format!(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\nclusterDNS:\n- {dns}\nclusterDomain: {DNS_DOMAIN}\nauthentication:\n  anonymous:\n    enabled: false\n  webhook:\n    enabled: true\n  x509:\n    clientCAFile: /etc/kubernetes/pki/ca.crt\nauthorization:\n  mode: Webhook\nrotateCertificates: true\nserverTLSBootstrap: false\nstaticPodPath: /etc/kubernetes/manifests\n"
    )
}

/// A Role in `namespace` that may `get` one ConfigMap.
fn reader_role(namespace: &str, name: &str, config_map: &str) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": name, "namespace": namespace},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": [config_map], "verbs": ["get"]}],
    })
}

/// A subject of a binding.
fn subject(kind: &str, name: &str) -> Value {
    json!({"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name})
}

/// A RoleBinding (in `namespace`) or ClusterRoleBinding (`None`) of `role` to `subjects`.
fn binding(namespace: Option<&str>, name: &str, role: (&str, &str), subjects: Vec<Value>) -> Value {
    let mut metadata = json!({"name": name});
    if let Some(ns) = namespace {
        metadata["namespace"] = json!(ns);
    }
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": if namespace.is_some() { "RoleBinding" } else { "ClusterRoleBinding" },
        "metadata": metadata,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role.0, "name": role.1},
        "subjects": subjects,
    })
}

/// A ConfigMap with one key.
fn config_map(namespace: &str, name: &str, key: &str, text: String) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {key: text},
    })
}

/// Every object `kubeadm join` reads or relies on, besides the tokens, in the order to apply
/// them (Roles before their bindings).
pub fn objects(input: &Input<'_>) -> Vec<Value> {
    let bootstrappers = || subject("Group", BOOTSTRAPPERS);
    let nodes = || subject("Group", NODES);
    vec![
        config_map(
            CLUSTER_INFO_NAMESPACE,
            CLUSTER_INFO,
            "kubeconfig",
            cluster_info_kubeconfig(input.endpoint, input.ca_pem),
        ),
        reader_role(CLUSTER_INFO_NAMESPACE, CLUSTER_INFO_ROLE, CLUSTER_INFO),
        binding(
            Some(CLUSTER_INFO_NAMESPACE),
            CLUSTER_INFO_ROLE,
            ("Role", CLUSTER_INFO_ROLE),
            vec![subject("User", "system:anonymous")],
        ),
        binding(
            None,
            "kubeadm:kubelet-bootstrap",
            ("ClusterRole", "system:node-bootstrapper"),
            vec![bootstrappers()],
        ),
        binding(
            None,
            "kubeadm:node-autoapprove-bootstrap",
            (
                "ClusterRole",
                "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            ),
            vec![bootstrappers()],
        ),
        binding(
            None,
            "kubeadm:node-autoapprove-certificate-rotation",
            (
                "ClusterRole",
                "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            ),
            vec![nodes()],
        ),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "kubeadm:get-nodes"},
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}],
        }),
        binding(
            None,
            "kubeadm:get-nodes",
            ("ClusterRole", "kubeadm:get-nodes"),
            vec![bootstrappers()],
        ),
        config_map(
            TOKEN_NAMESPACE,
            KUBEADM_CONFIG,
            "ClusterConfiguration",
            cluster_configuration(input),
        ),
        reader_role(
            TOKEN_NAMESPACE,
            "kubeadm:nodes-kubeadm-config",
            KUBEADM_CONFIG,
        ),
        binding(
            Some(TOKEN_NAMESPACE),
            "kubeadm:nodes-kubeadm-config",
            ("Role", "kubeadm:nodes-kubeadm-config"),
            vec![bootstrappers(), nodes()],
        ),
        config_map(
            TOKEN_NAMESPACE,
            KUBELET_CONFIG,
            "kubelet",
            kubelet_configuration(input.network.dns),
        ),
        reader_role(TOKEN_NAMESPACE, "kubeadm:kubelet-config", KUBELET_CONFIG),
        binding(
            Some(TOKEN_NAMESPACE),
            "kubeadm:kubelet-config",
            ("Role", "kubeadm:kubelet-config"),
            vec![bootstrappers(), nodes()],
        ),
    ]
}

/// Where publishing what workers need stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Joinable {
    /// kube-apiserver is not available yet.
    WaitingForAPIServer,
    /// The API server has no address workers reach yet (a LoadBalancer without one).
    WaitingForEndpoint,
    /// Written; `token` is the hub's current token.
    Published {
        /// Where workers join.
        endpoint: Endpoint,
        /// Whether that address is only inside the hub cluster (a ClusterIP Service).
        internal: bool,
        /// The hub's token.
        token_id: String,
        /// When it expires.
        expires: jiff::Timestamp,
    },
    /// Writing failed: what, and why.
    Failed {
        /// The hosted API server's address the hub used.
        server: String,
        /// What failed, naming the object.
        message: String,
    },
}

/// The `WorkersJoinable` condition of cluster `name`.
pub fn verdict(joinable: &Joinable, name: &str) -> Verdict {
    let v = |status, reason, message: String| {
        Verdict::new(CONDITION_WORKERS_JOINABLE, status, reason, message)
    };
    match joinable {
        Joinable::WaitingForAPIServer => v(
            "False",
            "WaitingForAPIServer",
            "the bootstrap token, cluster-info and kubeadm's RBAC are written once kube-apiserver is available".to_owned(),
        ),
        Joinable::WaitingForEndpoint => v(
            "False",
            "WaitingForEndpoint",
            "the API server's Service has no address workers can reach yet".to_owned(),
        ),
        Joinable::Published {
            endpoint,
            internal: true,
            ..
        } => v(
            "False",
            "APIServerNotExposed",
            format!(
                "the bootstrap token, cluster-info and kubeadm's RBAC are written, but the API server is reachable only inside the hub cluster ({}:{}); set spec.apiServer.serviceType to NodePort or LoadBalancer for workers outside it",
                endpoint.host, endpoint.port
            ),
        ),
        Joinable::Published {
            endpoint,
            token_id,
            expires,
            ..
        } => v(
            "True",
            "AsExpected",
            format!(
                "workers join at {}:{} with kubeadm join (bootstrap token {token_id} valid until {expires}, renewed before then); print the command with atoll hosted join-command {name}",
                endpoint.host, endpoint.port
            ),
        ),
        Joinable::Failed { server, message } => v(
            "False",
            "PublishFailed",
            format!("cannot write what kubeadm join needs into the hosted cluster at {server}: {message}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> jiff::Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    fn token(id: &str, hours: i64, by: MadeBy) -> Token {
        Token {
            id: id.into(),
            secret: "0123456789abcdef".into(),
            expires: now()
                .checked_add(jiff::SignedDuration::from_hours(hours))
                .unwrap(),
            by,
        }
    }

    fn endpoint() -> Endpoint {
        Endpoint {
            host: "hub.example.com".into(),
            port: 30443,
        }
    }

    #[test]
    fn a_token_secret_is_what_the_bootstrap_authenticator_reads() {
        let t = Token::generate(now(), DEFAULT_TTL, MadeBy::Hub);
        assert!(well_formed(&t.id, 6) && well_formed(&t.secret, 16), "{t:?}");
        let s = t.secret();
        assert_eq!(s["type"], TOKEN_TYPE);
        assert_eq!(s["metadata"]["namespace"], "kube-system");
        assert_eq!(s["metadata"]["name"], format!("bootstrap-token-{}", t.id));
        let text = |k: &str| {
            String::from_utf8(
                base64::engine::general_purpose::STANDARD
                    .decode(s["data"][k].as_str().unwrap())
                    .unwrap(),
            )
            .unwrap()
        };
        assert_eq!(text("token-id"), t.id);
        assert_eq!(text("token-secret"), t.secret);
        assert_eq!(text("expiration"), "2026-01-02T00:00:00Z");
        assert_eq!(text("usage-bootstrap-authentication"), "true");
        assert_eq!(text("usage-bootstrap-signing"), "true");
        assert_eq!(text("auth-extra-groups"), BOOTSTRAPPERS);
        // Read back from what a server holds.
        let labels = BTreeMap::from([(LABEL_TOKEN_BY.to_owned(), "hub".to_owned())]);
        let data: BTreeMap<String, Vec<u8>> = ["token-id", "token-secret", "expiration"]
            .into_iter()
            .map(|k| (k.to_owned(), text(k).into_bytes()))
            .collect();
        assert_eq!(Token::from_secret(&labels, &data), Some(t.clone()));
        // Not atoll's, or not well formed: not read.
        assert_eq!(Token::from_secret(&BTreeMap::new(), &data), None);
        let mut bad = data.clone();
        bad.insert("token-id".into(), b"ABC".to_vec());
        assert_eq!(Token::from_secret(&labels, &bad), None);
    }

    #[test]
    fn the_hub_keeps_one_token_valid_and_deletes_expired_ones() {
        // None: make one.
        let plan = plan_tokens(&[], now());
        assert!(plan.create && plan.current.is_none() && plan.delete.is_empty());
        // One with a day left: keep it, renew it in 16 hours.
        let fresh = token("aaaaaa", 24, MadeBy::Hub);
        let plan = plan_tokens(std::slice::from_ref(&fresh), now());
        assert!(!plan.create);
        assert_eq!(plan.current.as_ref(), Some(&fresh));
        assert_eq!(renew_in(&fresh, now()), Duration::from_secs(16 * 3600));
        // Near its end: replaced (the old one stays until it expires).
        let late = token("bbbbbb", 2, MadeBy::Hub);
        let plan = plan_tokens(std::slice::from_ref(&late), now());
        assert!(plan.create && plan.delete.is_empty());
        // Expired ones go, whoever made them; a CLI token does not stand for the hub's.
        let plan = plan_tokens(
            &[
                token("cccccc", -1, MadeBy::Hub),
                token("dddddd", -5, MadeBy::Cli),
                token("eeeeee", 48, MadeBy::Cli),
            ],
            now(),
        );
        assert_eq!(
            plan.delete,
            ["bootstrap-token-cccccc", "bootstrap-token-dddddd"]
        );
        assert!(plan.create && plan.current.is_none());
    }

    #[test]
    fn join_command_takes_the_token_valid_longest() {
        let found = [
            token("aaaaaa", 2, MadeBy::Hub),
            token("bbbbbb", 30, MadeBy::Cli),
            token("cccccc", -1, MadeBy::Hub),
        ];
        let chosen = usable(&found, now(), Duration::from_secs(3600)).unwrap();
        assert_eq!(chosen.id, "bbbbbb");
        assert!(usable(&found[..1], now(), Duration::from_secs(3 * 3600)).is_none());
        assert_eq!(
            join_command(&endpoint(), chosen, "sha256:ab"),
            "kubeadm join hub.example.com:30443 --token bbbbbb.0123456789abcdef --discovery-token-ca-cert-hash sha256:ab"
        );
    }

    #[test]
    fn the_ca_hash_is_the_sha256_of_the_subject_public_key_info() {
        let ca = atoll_pki_ca();
        let hash = ca_cert_hash(&ca).unwrap();
        assert!(
            hash.starts_with("sha256:") && hash.len() == 7 + 64,
            "{hash}"
        );
        // The same as openssl computes, when it is here.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.crt");
        std::fs::write(&path, &ca).unwrap();
        let script = format!(
            "openssl x509 -pubkey -noout -in {} | openssl pkey -pubin -outform der | sha256sum",
            path.display()
        );
        match std::process::Command::new("sh")
            .args(["-c", &script])
            .output()
        {
            Ok(out) if out.status.success() && which_openssl() => {
                let text = String::from_utf8(out.stdout).unwrap();
                let hex = text.split_whitespace().next().unwrap();
                assert_eq!(hash, format!("sha256:{hex}"));
            }
            _ => eprintln!("openssl is not on this machine: the hash is not compared with it"),
        }
        assert!(ca_cert_hash("not a certificate").is_err());
    }

    fn which_openssl() -> bool {
        std::process::Command::new("openssl")
            .arg("version")
            .output()
            .is_ok_and(|o| o.status.success())
    }

    /// A CA certificate as the hub issues them.
    fn atoll_pki_ca() -> String {
        atoll_pki::CertificateAuthority::generate("test-ca")
            .unwrap()
            .cert_pem()
            .to_owned()
    }

    const DEFAULT_NETWORK: atoll_api::hosted::network::Network =
        atoll_api::hosted::network::Network {
            pod: None,
            service: atoll_api::hosted::network::DEFAULT_SERVICE_CIDR,
            dns: std::net::Ipv4Addr::new(10, 96, 0, 10),
        };

    fn input(endpoint: &Endpoint) -> Input<'_> {
        Input {
            cluster: "k1",
            namespace: "clusters-k1",
            endpoint,
            ca_pem: "-----BEGIN CERTIFICATE-----\n",
            version: "v1.35.0",
            network: &DEFAULT_NETWORK,
            registry: "registry.k8s.io",
            kube_proxy: true,
            core_dns: false,
        }
    }

    /// The fields of kubeadm's v1beta4 ClusterConfiguration (a field not among them makes
    /// `kubeadm join` warn that the ConfigMap was edited by something other than kubeadm).
    const CLUSTER_CONFIGURATION_FIELDS: &[&str] = &[
        "apiVersion",
        "kind",
        "etcd",
        "networking",
        "kubernetesVersion",
        "controlPlaneEndpoint",
        "apiServer",
        "controllerManager",
        "scheduler",
        "dns",
        "proxy",
        "certificatesDir",
        "imageRepository",
        "featureGates",
        "clusterName",
        "encryptionAlgorithm",
        "certificateValidityPeriod",
        "caCertificateValidityPeriod",
    ];

    #[test]
    fn the_clusters_networks_go_into_kubeadm_config_and_kubelet_config() {
        let e = endpoint();
        let asked = atoll_api::hosted::HostedNetwork {
            pod_cidr: Some("10.244.0.0/16".into()),
            service_cidr: Some("10.100.0.0/16".into()),
            dns_service_ip: Some("10.100.0.53".into()),
        };
        let network = atoll_api::hosted::network::resolve(Some(&asked)).unwrap();
        let custom = Input {
            network: &network,
            ..input(&e)
        };
        let c: serde_json::Value =
            serde_yaml_ng::from_str(&cluster_configuration(&custom)).unwrap();
        assert_eq!(c["networking"]["serviceSubnet"], "10.100.0.0/16");
        assert_eq!(c["networking"]["podSubnet"], "10.244.0.0/16");
        assert_eq!(c["networking"]["dnsDomain"], "cluster.local");
        let kubelet: serde_json::Value =
            serde_yaml_ng::from_str(&kubelet_configuration(network.dns)).unwrap();
        assert_eq!(kubelet["clusterDNS"], json!(["10.100.0.53"]));
        // Without a pod network, no podSubnet, as kubeadm leaves it.
        let none: serde_json::Value =
            serde_yaml_ng::from_str(&cluster_configuration(&input(&e))).unwrap();
        assert_eq!(none["networking"]["serviceSubnet"], "10.96.0.0/12");
        assert!(none["networking"].get("podSubnet").is_none(), "{none}");
    }

    /// What `kubeadm join` of a worker does with `kubeadm-config` (its `preflight` phase reads
    /// it with `FetchInitConfigurationFromCluster`): decode the ClusterConfiguration, default
    /// it, normalize `kubernetesVersion` and split `controlPlaneEndpoint`; and what kubeadm's
    /// `ValidateClusterConfiguration` asks of it (`ValidateEtcd` for external etcd,
    /// `ValidateNetworking`, `ValidateAbsolutePath`).
    #[test]
    fn kubeadm_config_holds_what_kubeadm_join_reads_and_validates() {
        let e = endpoint();
        let input = input(&e);
        let text = cluster_configuration(&input);
        let c: serde_json::Value = serde_yaml_ng::from_str(&text).unwrap();
        assert_eq!(c["apiVersion"], "kubeadm.k8s.io/v1beta4");
        assert_eq!(c["kind"], "ClusterConfiguration");
        for field in c.as_object().unwrap().keys() {
            assert!(
                CLUSTER_CONFIGURATION_FIELDS.contains(&field.as_str()),
                "{field} is not a ClusterConfiguration field"
            );
        }
        // A semantic version: v1.MINOR.PATCH.
        let version = c["kubernetesVersion"].as_str().unwrap();
        assert!(version.starts_with("v1."), "{version}");
        assert!(super::super::version::Version::parse(version).is_some());
        assert_eq!(version.split('.').count(), 3);
        // host:port, the endpoint workers join.
        let (host, port) = c["controlPlaneEndpoint"]
            .as_str()
            .unwrap()
            .rsplit_once(':')
            .unwrap();
        assert_eq!(host, "hub.example.com");
        assert_eq!(port.parse::<u16>().unwrap(), 30443);
        // Networking: a DNS subdomain and a CIDR with room for the DNS Service's tenth address.
        let domain = c["networking"]["dnsDomain"].as_str().unwrap();
        assert!(domain.split('.').all(dns_label), "{domain}");
        let (base, bits) = c["networking"]["serviceSubnet"]
            .as_str()
            .unwrap()
            .split_once('/')
            .unwrap();
        let base: std::net::Ipv4Addr = base.parse().unwrap();
        let bits: u32 = bits.parse().unwrap();
        assert!(bits <= 28, "at least 10 addresses");
        let tenth = std::net::Ipv4Addr::from(u32::from(base) + 10);
        assert_eq!(tenth, input.network.dns);
        assert!(c["certificatesDir"].as_str().unwrap().starts_with('/'));
        assert_eq!(c["imageRepository"], "registry.k8s.io");
        // etcd: external only, https endpoints with a host and a port (the control plane's
        // etcd client Service), the certificate pair with its CA, each an absolute path.
        assert!(c["etcd"]["local"].is_null());
        let external = &c["etcd"]["external"];
        let endpoints = external["endpoints"].as_array().unwrap();
        assert!(!endpoints.is_empty());
        for url in endpoints {
            let uri: http::Uri = url.as_str().unwrap().parse().unwrap();
            assert_eq!(uri.scheme_str(), Some("https"), "{url}");
            assert_eq!(uri.host(), Some("etcd-client.clusters-k1.svc"), "{url}");
            assert_eq!(uri.port_u16(), Some(2379), "{url}");
        }
        for file in ["caFile", "certFile", "keyFile"] {
            assert!(
                external[file].as_str().unwrap().starts_with('/'),
                "{file}: {}",
                external[file]
            );
        }
        // The endpoint is a name etcd's serving certificate holds.
        let names = super::super::pki::Names {
            cluster: "k1".into(),
            namespace: "clusters-k1".into(),
            etcd_members: 1,
            kubernetes_service_ip: "10.96.0.1".parse().unwrap(),
            service_ip: None,
            external_host: None,
            extra_sans: Vec::new(),
        };
        assert!(
            names
                .etcd_server_sans()
                .contains(&"etcd-client.clusters-k1.svc".to_owned())
        );
        // The add-ons as the hub installs them.
        assert_eq!(c["proxy"]["disabled"], false);
        assert_eq!(c["dns"]["disabled"], true);
    }

    fn dns_label(label: &str) -> bool {
        !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    }

    #[test]
    fn the_objects_are_those_kubeadm_makes() {
        let e = endpoint();
        let input = input(&e);
        let objects = objects(&input);
        let find = |kind: &str, name: &str| {
            objects
                .iter()
                .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
                .unwrap_or_else(|| panic!("no {kind} {name}"))
                .clone()
        };
        let info = find("ConfigMap", "cluster-info");
        assert_eq!(info["metadata"]["namespace"], "kube-public");
        let kubeconfig = info["data"]["kubeconfig"].as_str().unwrap();
        assert!(kubeconfig.contains("server: https://hub.example.com:30443"));
        assert!(kubeconfig.contains("certificate-authority-data: LS0t"));
        let parsed: serde_json::Value = serde_yaml_ng::from_str(kubeconfig).unwrap();
        assert_eq!(parsed["clusters"][0]["name"], "");
        let role = find("Role", CLUSTER_INFO_ROLE);
        assert_eq!(role["rules"][0]["resourceNames"][0], "cluster-info");
        assert_eq!(role["rules"][0]["verbs"], json!(["get"]));
        let anon = find("RoleBinding", CLUSTER_INFO_ROLE);
        assert_eq!(anon["subjects"][0]["name"], "system:anonymous");
        assert_eq!(anon["subjects"][0]["kind"], "User");
        for (name, role, group) in [
            (
                "kubeadm:kubelet-bootstrap",
                "system:node-bootstrapper",
                BOOTSTRAPPERS,
            ),
            (
                "kubeadm:node-autoapprove-bootstrap",
                "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
                BOOTSTRAPPERS,
            ),
            (
                "kubeadm:node-autoapprove-certificate-rotation",
                "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
                NODES,
            ),
            ("kubeadm:get-nodes", "kubeadm:get-nodes", BOOTSTRAPPERS),
        ] {
            let b = find("ClusterRoleBinding", name);
            assert_eq!(b["roleRef"]["name"], role, "{name}");
            assert_eq!(b["subjects"][0]["name"], group, "{name}");
            assert_eq!(b["subjects"][0]["kind"], "Group", "{name}");
        }
        for (role, config_map) in [
            ("kubeadm:nodes-kubeadm-config", "kubeadm-config"),
            ("kubeadm:kubelet-config", "kubelet-config"),
        ] {
            let r = find("Role", role);
            assert_eq!(r["metadata"]["namespace"], "kube-system");
            assert_eq!(r["rules"][0]["resourceNames"][0], config_map);
            let b = find("RoleBinding", role);
            let groups: Vec<_> = b["subjects"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["name"].as_str().unwrap())
                .collect();
            assert_eq!(groups, [BOOTSTRAPPERS, NODES]);
        }
        let kubeadm: serde_json::Value = serde_yaml_ng::from_str(
            find("ConfigMap", "kubeadm-config")["data"]["ClusterConfiguration"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(kubeadm["kubernetesVersion"], "v1.35.0");
        assert_eq!(kubeadm["controlPlaneEndpoint"], "hub.example.com:30443");
        assert_eq!(kubeadm["networking"]["serviceSubnet"], "10.96.0.0/12");
        let kubelet: serde_json::Value = serde_yaml_ng::from_str(
            find("ConfigMap", "kubelet-config")["data"]["kubelet"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(kubelet["clusterDNS"], json!(["10.96.0.10"]));
        assert_eq!(kubelet["clusterDomain"], "cluster.local");
        assert_eq!(kubelet["cgroupDriver"], "systemd");
        // Roles come before the bindings that name them.
        let at = |kind: &str, name: &str| {
            objects
                .iter()
                .position(|o| o["kind"] == kind && o["metadata"]["name"] == name)
                .unwrap()
        };
        assert!(at("Role", CLUSTER_INFO_ROLE) < at("RoleBinding", CLUSTER_INFO_ROLE));
    }

    #[test]
    fn the_condition_says_what_is_missing() {
        let v = verdict(&Joinable::WaitingForAPIServer, "k1");
        assert_eq!((v.status, v.reason), ("False", "WaitingForAPIServer"));
        let published = |internal| Joinable::Published {
            endpoint: endpoint(),
            internal,
            token_id: "aaaaaa".into(),
            expires: now(),
        };
        let v = verdict(&published(false), "k1");
        assert_eq!(v.status, "True");
        assert!(
            v.message.contains("atoll hosted join-command k1"),
            "{}",
            v.message
        );
        let v = verdict(&published(true), "k1");
        assert_eq!(v.reason, "APIServerNotExposed");
        assert!(v.message.contains("spec.apiServer.serviceType"));
        let v = verdict(
            &Joinable::Failed {
                server: "https://x:6443".into(),
                message: "ConfigMap kube-public/cluster-info: refused".into(),
            },
            "k1",
        );
        assert_eq!(v.reason, "PublishFailed");
        assert!(v.message.contains("cluster-info"));
    }
}
