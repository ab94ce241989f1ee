//! The PKI of a `Kubernetes`-mode control plane, as Secrets in its namespace: three CAs
//! (cluster, front proxy, etcd; 10 years, never rotated by the hub), the leaves they sign (1
//! year, issued again with 30 days left, when their names change, when their CA is new or when
//! a Secret is deleted by hand), the service-account key pair, and the kubeconfigs of the
//! controllers, the agent and the admin. Pure: [`plan`] decides from the Secrets found, and
//! [`issue`] makes what the plan asks (keys and certificates; no I/O).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use atoll_pki::{CertificateAuthority, Leaf, Usage};

/// How long a CA is valid.
pub const CA_VALIDITY: Duration = Duration::from_secs(10 * 365 * DAY);
/// How long a leaf is valid.
pub const LEAF_VALIDITY: Duration = Duration::from_secs(365 * DAY);
/// A leaf with less left than this is issued again.
pub const RENEW_BEFORE: Duration = Duration::from_secs(30 * DAY);
/// Seconds in a day.
const DAY: u64 = 86_400;

/// The port kube-apiserver serves on.
pub const API_PORT: i32 = 6443;
/// The API server's Service on the hub cluster.
pub const API_SERVICE: &str = "kube-apiserver";
/// etcd's headless Service (its members' names).
pub const ETCD_PEER_SERVICE: &str = "etcd";
/// etcd's client Service.
pub const ETCD_CLIENT_SERVICE: &str = "etcd-client";

/// A certificate's PEM in a Secret.
pub const TLS_CRT: &str = "tls.crt";
/// A key's PEM in a Secret.
pub const TLS_KEY: &str = "tls.key";
/// The issuing CA's PEM in a leaf's Secret.
pub const CA_CRT: &str = "ca.crt";
/// The service-account signing key.
pub const SA_KEY: &str = "sa.key";
/// The service-account verifying key.
pub const SA_PUB: &str = "sa.pub";
/// A kubeconfig in a Secret.
pub const KUBECONFIG: &str = "kubeconfig";

/// The cluster CA's Secret.
pub const CLUSTER_CA: &str = "ca";
/// The front proxy CA's Secret.
pub const FRONT_PROXY_CA: &str = "front-proxy-ca";
/// etcd's CA's Secret.
pub const ETCD_CA: &str = "etcd-ca";
/// The API server's serving certificate.
pub const API_SERVING: &str = "kube-apiserver-serving";
/// The API server's client certificate for kubelets.
pub const KUBELET_CLIENT: &str = "kube-apiserver-kubelet-client";
/// The API server's client certificate as front proxy (aggregated APIs).
pub const FRONT_PROXY_CLIENT: &str = "front-proxy-client";
/// The API server's client certificate for etcd.
pub const ETCD_CLIENT: &str = "kube-apiserver-etcd-client";
/// etcd's serving certificate.
pub const ETCD_SERVER: &str = "etcd-server";
/// etcd's peer certificate.
pub const ETCD_PEER: &str = "etcd-peer";
/// The service-account key pair.
pub const SERVICE_ACCOUNT: &str = "service-account";
/// kube-controller-manager's kubeconfig.
pub const CONTROLLER_MANAGER_KUBECONFIG: &str = "kube-controller-manager-kubeconfig";
/// kube-scheduler's kubeconfig.
pub const SCHEDULER_KUBECONFIG: &str = "kube-scheduler-kubeconfig";
/// The agent's kubeconfig.
pub const AGENT_KUBECONFIG: &str = "work-agent-kubeconfig";
/// The admin's certificate (the kubeconfig beside the HostedCluster is made from it).
pub const ADMIN: &str = "admin";

/// A CA of the control plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Authority {
    /// Signs the API server's serving certificate and every client of the API.
    Cluster,
    /// Signs the front proxy's client certificate.
    FrontProxy,
    /// Signs etcd's certificates and its clients'.
    Etcd,
}

impl Authority {
    /// Every CA.
    pub const ALL: [Authority; 3] = [Authority::Cluster, Authority::FrontProxy, Authority::Etcd];

    /// Its Secret.
    pub fn secret(self) -> &'static str {
        match self {
            Authority::Cluster => CLUSTER_CA,
            Authority::FrontProxy => FRONT_PROXY_CA,
            Authority::Etcd => ETCD_CA,
        }
    }

    /// Its certificate's common name.
    pub fn common_name(self) -> &'static str {
        match self {
            Authority::Cluster => "kubernetes",
            Authority::FrontProxy => "front-proxy-ca",
            Authority::Etcd => "etcd-ca",
        }
    }
}

/// What names the control plane is reached by: what its certificates hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    /// The hosted cluster's name.
    pub cluster: String,
    /// The control plane's namespace on the hub cluster.
    pub namespace: String,
    /// How many etcd members run.
    pub etcd_members: u32,
    /// The first address of the hosted cluster's Service network: its own `kubernetes`
    /// Service.
    pub kubernetes_service_ip: IpAddr,
    /// The address of the API server's Service on the hub cluster, once it has one.
    pub service_ip: Option<IpAddr>,
    /// The address users reach the API server at from outside the hub cluster, once known.
    pub external_host: Option<String>,
    /// `spec.apiServer.extraSANs`.
    pub extra_sans: Vec<String>,
}

impl Names {
    /// These names once the API server's Service is `exposure` and users reach it at
    /// `endpoint`: its cluster IP, and the external address unless it is a ClusterIP Service.
    pub fn exposed(
        &self,
        exposure: &super::status::Exposure,
        endpoint: Option<&atoll_api::hosted::Endpoint>,
    ) -> Names {
        Names {
            service_ip: exposure
                .cluster_ip
                .as_deref()
                .and_then(|ip| ip.parse().ok()),
            external_host: match exposure.kind {
                atoll_api::hosted::ServiceType::ClusterIP => None,
                _ => endpoint.map(|e| e.host.clone()),
            },
            ..self.clone()
        }
    }

    /// The API server's address inside the hub cluster.
    pub fn internal_server(&self) -> String {
        format!("https://{API_SERVICE}.{}.svc:{API_PORT}", self.namespace)
    }

    /// Every name of a Service in the control plane's namespace.
    fn service(&self, service: &str) -> Vec<String> {
        let ns = &self.namespace;
        vec![
            service.to_owned(),
            format!("{service}.{ns}"),
            format!("{service}.{ns}.svc"),
            format!("{service}.{ns}.svc.cluster.local"),
        ]
    }

    /// The API server's names: the hosted cluster's own `kubernetes` Service, its Service on
    /// the hub cluster, loopback, the external address and the extra SANs.
    pub fn api_server_sans(&self) -> Vec<String> {
        let mut sans: Vec<String> = [
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
        ]
        .map(str::to_owned)
        .to_vec();
        sans.extend(self.service(API_SERVICE));
        sans.extend(["localhost".to_owned(), "127.0.0.1".to_owned()]);
        sans.push(self.kubernetes_service_ip.to_string());
        sans.extend(self.service_ip.map(|ip| ip.to_string()));
        sans.extend(self.external_host.clone());
        sans.extend(self.extra_sans.iter().cloned());
        dedup(sans)
    }

    /// etcd members' names in its headless Service.
    fn members(&self) -> Vec<String> {
        let ns = &self.namespace;
        let mut names = Vec::new();
        for i in 0..self.etcd_members.max(1) {
            names.push(format!("etcd-{i}.{ETCD_PEER_SERVICE}.{ns}.svc"));
            names.push(format!(
                "etcd-{i}.{ETCD_PEER_SERVICE}.{ns}.svc.cluster.local"
            ));
        }
        names
    }

    /// etcd's serving names: its client Service, its members, loopback.
    pub fn etcd_server_sans(&self) -> Vec<String> {
        let mut sans = self.service(ETCD_CLIENT_SERVICE);
        sans.extend(self.members());
        sans.extend(["localhost".to_owned(), "127.0.0.1".to_owned()]);
        dedup(sans)
    }

    /// etcd's peer names: its members.
    pub fn etcd_peer_sans(&self) -> Vec<String> {
        let mut sans = self.members();
        sans.extend(["localhost".to_owned(), "127.0.0.1".to_owned()]);
        dedup(sans)
    }
}

/// `names` without empty ones and repeats, in their order.
fn dedup(names: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(names.len());
    for name in names {
        if !name.is_empty() && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// A leaf the control plane needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    /// Its Secret.
    pub secret: &'static str,
    /// The CA that signs it.
    pub issuer: Authority,
    /// What it names.
    pub leaf: Leaf,
    /// For a client of the API server: the kubeconfig its Secret holds too (cluster name,
    /// server).
    pub kubeconfig: Option<(String, String)>,
}

/// A leaf valid for [`LEAF_VALIDITY`].
fn leaf(common_name: &str, organizations: &[&str], sans: Vec<String>, usage: Usage) -> Leaf {
    Leaf {
        common_name: common_name.to_owned(),
        organizations: organizations.iter().map(|o| (*o).to_owned()).collect(),
        sans,
        usage,
        valid_for: LEAF_VALIDITY,
    }
}

/// Every leaf the control plane needs, for `names`.
pub fn wanted(names: &Names) -> Vec<Wanted> {
    let plain = |secret, issuer, leaf| Wanted {
        secret,
        issuer,
        leaf,
        kubeconfig: None,
    };
    let client = |secret, user: &str, groups: &[&str], server: String| Wanted {
        secret,
        issuer: Authority::Cluster,
        leaf: leaf(user, groups, vec![], Usage::Client),
        kubeconfig: Some((names.cluster.clone(), server)),
    };
    let internal = names.internal_server();
    vec![
        plain(
            API_SERVING,
            Authority::Cluster,
            leaf(
                "kube-apiserver",
                &[],
                names.api_server_sans(),
                Usage::Server,
            ),
        ),
        plain(
            KUBELET_CLIENT,
            Authority::Cluster,
            leaf(
                "kube-apiserver-kubelet-client",
                &["system:masters"],
                vec![],
                Usage::Client,
            ),
        ),
        plain(
            FRONT_PROXY_CLIENT,
            Authority::FrontProxy,
            leaf("front-proxy-client", &[], vec![], Usage::Client),
        ),
        plain(
            ETCD_CLIENT,
            Authority::Etcd,
            leaf("kube-apiserver-etcd-client", &[], vec![], Usage::Client),
        ),
        plain(
            ETCD_SERVER,
            Authority::Etcd,
            leaf(
                "etcd-server",
                &[],
                names.etcd_server_sans(),
                Usage::ServerAndClient,
            ),
        ),
        plain(
            ETCD_PEER,
            Authority::Etcd,
            leaf(
                "etcd-peer",
                &[],
                names.etcd_peer_sans(),
                Usage::ServerAndClient,
            ),
        ),
        client(
            CONTROLLER_MANAGER_KUBECONFIG,
            "system:kube-controller-manager",
            &[],
            internal.clone(),
        ),
        client(
            SCHEDULER_KUBECONFIG,
            "system:kube-scheduler",
            &[],
            internal.clone(),
        ),
        client(
            AGENT_KUBECONFIG,
            "atoll-work-agent",
            &["system:masters"],
            internal.clone(),
        ),
        client(ADMIN, "atoll-admin", &["system:masters"], internal),
    ]
}

/// A Secret's data, as text.
pub type Data = BTreeMap<String, String>;

/// A Secret of the PKI: its type and data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// `kubernetes.io/tls` or `Opaque`.
    pub type_: &'static str,
    /// Its data.
    pub data: Data,
}

/// What to do with one Secret of the PKI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// It is as it should be.
    Keep,
    /// Issue it (again), and why.
    Issue(String),
}

/// What to do with every Secret of the PKI, CAs first.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    /// Per Secret name.
    pub decisions: Vec<(&'static str, Decision)>,
}

impl Plan {
    /// The Secrets to issue, and why.
    pub fn issues(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.decisions.iter().filter_map(|(name, d)| match d {
            Decision::Keep => None,
            Decision::Issue(why) => Some((*name, why.as_str())),
        })
    }

    fn decision(&self, secret: &str) -> Option<&Decision> {
        self.decisions
            .iter()
            .find(|(name, _)| *name == secret)
            .map(|(_, d)| d)
    }
}

/// Whole days in `seconds`.
fn days(seconds: i64) -> i64 {
    seconds.div_euclid(DAY as i64)
}

/// Decides, from the Secrets found (`existing`, by name) at `now` (Unix seconds), what to
/// issue.
pub fn plan(wanted: &[Wanted], existing: &BTreeMap<String, Data>, now: i64) -> Plan {
    let mut decisions = Vec::new();
    for ca in Authority::ALL {
        let decision = match existing.get(ca.secret()) {
            None => Decision::Issue("missing".to_owned()),
            Some(data) => match (data.get(TLS_CRT), data.get(TLS_KEY)) {
                (Some(cert), Some(key))
                    if CertificateAuthority::from_pem(cert, key, ca.common_name()).is_ok() =>
                {
                    match atoll_pki::inspect(cert) {
                        Ok(read) if read.is_ca && read.not_after > now => Decision::Keep,
                        Ok(read) if read.is_ca => Decision::Issue("expired".to_owned()),
                        _ => Decision::Issue("not a CA certificate".to_owned()),
                    }
                }
                _ => Decision::Issue("holds no certificate and key".to_owned()),
            },
        };
        decisions.push((ca.secret(), decision));
    }
    let sa = match existing.get(SERVICE_ACCOUNT) {
        Some(data) if data.contains_key(SA_KEY) && data.contains_key(SA_PUB) => Decision::Keep,
        Some(_) => Decision::Issue("holds no key pair".to_owned()),
        None => Decision::Issue("missing".to_owned()),
    };
    decisions.push((SERVICE_ACCOUNT, sa));
    let plan_so_far = Plan {
        decisions: decisions.clone(),
    };
    for w in wanted {
        let ca_is_new = matches!(
            plan_so_far.decision(w.issuer.secret()),
            Some(Decision::Issue(_))
        );
        let ca_cert = existing.get(w.issuer.secret()).and_then(|d| d.get(TLS_CRT));
        let decision = match (ca_is_new, existing.get(w.secret), ca_cert) {
            (true, _, _) => Decision::Issue(format!("its CA {} is new", w.issuer.secret())),
            (_, None, _) => Decision::Issue("missing".to_owned()),
            (_, Some(data), Some(ca_cert)) => leaf_decision(w, data, ca_cert, now),
            (_, Some(_), None) => Decision::Issue(format!("its CA {} is new", w.issuer.secret())),
        };
        decisions.push((w.secret, decision));
    }
    Plan { decisions }
}

/// Whether a leaf found is as `w` wants it, signed by `ca_cert` and far from its end.
fn leaf_decision(w: &Wanted, data: &Data, ca_cert: &str, now: i64) -> Decision {
    let (Some(cert), Some(_key)) = (data.get(TLS_CRT), data.get(TLS_KEY)) else {
        return Decision::Issue("holds no certificate and key".to_owned());
    };
    if w.kubeconfig.is_some() && !data.contains_key(KUBECONFIG) {
        return Decision::Issue("holds no kubeconfig".to_owned());
    }
    if data.get(CA_CRT).map(String::as_str) != Some(ca_cert) || !atoll_pki::signed_by(cert, ca_cert)
    {
        return Decision::Issue(format!("not signed by the CA in {}", w.issuer.secret()));
    }
    let Ok(read) = atoll_pki::inspect(cert) else {
        return Decision::Issue("unreadable".to_owned());
    };
    let left = read.not_after - now;
    if left < RENEW_BEFORE.as_secs() as i64 {
        return Decision::Issue(format!("expires in {} day(s)", days(left).max(0)));
    }
    let mut dns: Vec<String> = read.dns_names.clone();
    dns.extend(read.ip_addresses.iter().map(|ip| ip.to_string()));
    let mut want = w.leaf.sans.clone();
    dns.sort();
    want.sort();
    if read.common_name != w.leaf.common_name
        || read.organizations != w.leaf.organizations
        || dns != want
    {
        return Decision::Issue("its names changed".to_owned());
    }
    Decision::Keep
}

/// The Secrets of the PKI after `plan`: those kept as found, the others issued now.
#[derive(Debug, Clone)]
pub struct Issued {
    /// Every Secret of the PKI, by name.
    pub secrets: BTreeMap<String, Stored>,
    /// Those issued now, and why.
    pub changed: Vec<(String, String)>,
}

/// The type of a Secret holding a certificate and its key.
const TLS: &str = "kubernetes.io/tls";

/// Makes what `plan` asks: new CAs, key pair and leaves, keeping the rest as found.
pub fn issue(
    wanted: &[Wanted],
    existing: &BTreeMap<String, Data>,
    plan: &Plan,
) -> Result<Issued, atoll_pki::Error> {
    let mut issued = Issued {
        secrets: BTreeMap::new(),
        changed: Vec::new(),
    };
    let mut record = |secret: &str, stored: Stored, fresh: bool| {
        issued.secrets.insert(secret.to_owned(), stored);
        if fresh {
            issued.changed.push((secret.to_owned(), plan.why(secret)));
        }
    };
    let mut cas = BTreeMap::new();
    for ca in Authority::ALL {
        let (authority, fresh) = authority(ca, existing, plan)?;
        let data = Data::from([
            (TLS_CRT.to_owned(), authority.cert_pem().to_owned()),
            (TLS_KEY.to_owned(), authority.key_pem()),
        ]);
        record(ca.secret(), Stored { type_: TLS, data }, fresh);
        cas.insert(ca, authority);
    }
    let (stored, fresh) = service_account(existing, plan)?;
    record(SERVICE_ACCOUNT, stored, fresh);
    for w in wanted {
        let kept = matches!(plan.decision(w.secret), Some(Decision::Keep));
        match existing.get(w.secret).filter(|_| kept) {
            Some(data) => record(
                w.secret,
                Stored {
                    type_: TLS,
                    data: data.clone(),
                },
                false,
            ),
            None => {
                if let Some(ca) = cas.get(&w.issuer) {
                    record(w.secret, leaf_secret(w, ca)?, true);
                }
            }
        }
    }
    Ok(issued)
}

impl Plan {
    /// Why `secret` is issued (`missing` when the plan does not say).
    fn why(&self, secret: &str) -> String {
        match self.decision(secret) {
            Some(Decision::Issue(why)) => why.clone(),
            _ => "missing".to_owned(),
        }
    }
}

/// The CA `ca`: the one found when the plan keeps it, else a new one (`true`).
fn authority(
    ca: Authority,
    existing: &BTreeMap<String, Data>,
    plan: &Plan,
) -> Result<(CertificateAuthority, bool), atoll_pki::Error> {
    if let Some(Decision::Keep) = plan.decision(ca.secret()) {
        let data = existing.get(ca.secret()).cloned().unwrap_or_default();
        let text = |k: &str| data.get(k).cloned().unwrap_or_default();
        let found =
            CertificateAuthority::from_pem(&text(TLS_CRT), &text(TLS_KEY), ca.common_name())?;
        return Ok((found, false));
    }
    let fresh = CertificateAuthority::generate_valid_for(ca.common_name(), CA_VALIDITY)?;
    Ok((fresh, true))
}

/// The service-account key pair: the one found when the plan keeps it, else a new one (`true`).
fn service_account(
    existing: &BTreeMap<String, Data>,
    plan: &Plan,
) -> Result<(Stored, bool), atoll_pki::Error> {
    if let (Some(Decision::Keep), Some(data)) = (
        plan.decision(SERVICE_ACCOUNT),
        existing.get(SERVICE_ACCOUNT),
    ) {
        let stored = Stored {
            type_: "Opaque",
            data: data.clone(),
        };
        return Ok((stored, false));
    }
    let (private, public) = atoll_pki::generate_key_pair()?;
    let data = Data::from([(SA_KEY.to_owned(), private), (SA_PUB.to_owned(), public)]);
    Ok((
        Stored {
            type_: "Opaque",
            data,
        },
        true,
    ))
}

/// A new leaf `w` signed by `ca`: certificate, key, the CA, and its kubeconfig when it has one.
fn leaf_secret(w: &Wanted, ca: &CertificateAuthority) -> Result<Stored, atoll_pki::Error> {
    let issued = ca.issue(&w.leaf)?;
    let mut data = Data::from([
        (TLS_CRT.to_owned(), issued.cert_pem.clone()),
        (TLS_KEY.to_owned(), issued.key_pem.clone()),
        (CA_CRT.to_owned(), ca.cert_pem().to_owned()),
    ]);
    if let Some((cluster, server)) = &w.kubeconfig {
        data.insert(
            KUBECONFIG.to_owned(),
            atoll_apiserver::kubeconfig::render_certificate(
                cluster,
                server,
                ca.cert_pem(),
                &w.leaf.common_name,
                &issued.cert_pem,
                &issued.key_pem,
            ),
        );
    }
    Ok(Stored { type_: TLS, data })
}

/// A digest of the Secrets `names` (their every key and value): a workload's pod template
/// carries the digest of those it mounts, so that it restarts when one is issued again.
pub fn digest(secrets: &BTreeMap<String, Stored>, names: &[&str]) -> String {
    let mut text = String::new();
    for name in names {
        text.push_str(name);
        text.push('\0');
        if let Some(stored) = secrets.get(*name) {
            for (key, value) in &stored.data {
                text.push_str(key);
                text.push('\0');
                text.push_str(value);
                text.push('\0');
            }
        }
    }
    crate::digest::sha256(text.as_bytes()).to_hex()[..16].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Names {
        Names {
            cluster: "c1".into(),
            namespace: "clusters-c1".into(),
            etcd_members: 3,
            kubernetes_service_ip: "10.96.0.1".parse().unwrap(),
            service_ip: Some("10.0.0.17".parse().unwrap()),
            external_host: Some("c1.example.com".into()),
            extra_sans: vec!["api.c1.example.com".into(), "192.0.2.10".into()],
        }
    }

    fn now() -> i64 {
        jiff::Timestamp::now().as_second()
    }

    fn data_of(issued: &Issued) -> BTreeMap<String, Data> {
        issued
            .secrets
            .iter()
            .map(|(k, v)| (k.clone(), v.data.clone()))
            .collect()
    }

    fn fresh() -> (Vec<Wanted>, Issued) {
        let wanted = wanted(&names());
        let empty = BTreeMap::new();
        let plan = plan(&wanted, &empty, now());
        (wanted.clone(), issue(&wanted, &empty, &plan).unwrap())
    }

    #[test]
    fn a_new_control_plane_gets_every_secret_and_every_chain_verifies() {
        let (wanted, issued) = fresh();
        assert_eq!(issued.changed.len(), 3 + 1 + wanted.len());
        for w in &wanted {
            let data = &issued.secrets[w.secret].data;
            let ca = &issued.secrets[w.issuer.secret()].data[TLS_CRT];
            assert_eq!(&data[CA_CRT], ca, "{}", w.secret);
            assert!(atoll_pki::signed_by(&data[TLS_CRT], ca), "{}", w.secret);
            let read = atoll_pki::inspect(&data[TLS_CRT]).unwrap();
            let left = read.not_after - now();
            assert!(
                (left - LEAF_VALIDITY.as_secs() as i64).abs() < 120,
                "{}",
                w.secret
            );
            assert_eq!(read.common_name, w.leaf.common_name);
            assert_eq!(data.contains_key(KUBECONFIG), w.kubeconfig.is_some());
        }
        for ca in Authority::ALL {
            let read = atoll_pki::inspect(&issued.secrets[ca.secret()].data[TLS_CRT]).unwrap();
            assert!(read.is_ca);
            let left = read.not_after - now();
            assert!((left - CA_VALIDITY.as_secs() as i64).abs() < 120);
        }
        let kcm = atoll_pki::inspect(&issued.secrets[CONTROLLER_MANAGER_KUBECONFIG].data[TLS_CRT])
            .unwrap();
        assert_eq!(kcm.common_name, "system:kube-controller-manager");
        let admin = atoll_pki::inspect(&issued.secrets[ADMIN].data[TLS_CRT]).unwrap();
        assert_eq!(admin.organizations, ["system:masters"]);
        assert!(
            issued.secrets[SCHEDULER_KUBECONFIG].data[KUBECONFIG]
                .contains("https://kube-apiserver.clusters-c1.svc:6443")
        );
    }

    #[test]
    fn the_serving_certificate_holds_every_name() {
        let (_, issued) = fresh();
        let read = atoll_pki::inspect(&issued.secrets[API_SERVING].data[TLS_CRT]).unwrap();
        for dns in [
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
            "kube-apiserver.clusters-c1.svc",
            "kube-apiserver.clusters-c1.svc.cluster.local",
            "localhost",
            "c1.example.com",
            "api.c1.example.com",
        ] {
            assert!(read.dns_names.iter().any(|d| d == dns), "{dns}: {read:?}");
        }
        for ip in ["10.96.0.1", "10.0.0.17", "127.0.0.1", "192.0.2.10"] {
            assert!(read.ip_addresses.contains(&ip.parse().unwrap()), "{ip}");
        }
        let etcd = atoll_pki::inspect(&issued.secrets[ETCD_SERVER].data[TLS_CRT]).unwrap();
        assert!(
            etcd.dns_names
                .contains(&"etcd-client.clusters-c1.svc".to_owned())
        );
        assert!(
            etcd.dns_names
                .contains(&"etcd-2.etcd.clusters-c1.svc".to_owned())
        );
    }

    #[test]
    fn what_is_found_is_kept_and_a_restart_issues_nothing() {
        let (wanted, issued) = fresh();
        let found = data_of(&issued);
        let again = plan(&wanted, &found, now());
        assert_eq!(again.issues().count(), 0, "{again:?}");
        let kept = issue(&wanted, &found, &again).unwrap();
        assert!(kept.changed.is_empty());
        assert_eq!(data_of(&kept), found);
        assert_eq!(
            digest(&kept.secrets, &[API_SERVING]),
            digest(&issued.secrets, &[API_SERVING])
        );
    }

    #[test]
    fn leaves_near_their_end_deleted_or_renamed_are_issued_again() {
        let (wanted, issued) = fresh();
        let mut found = data_of(&issued);
        // 340 days on, every leaf has less than 30 days left; the CAs are kept.
        let later = now() + 340 * DAY as i64;
        let p = plan(&wanted, &found, later);
        let issues: Vec<_> = p.issues().collect();
        assert_eq!(issues.len(), wanted.len(), "{issues:?}");
        assert!(
            issues.iter().all(|(_, why)| why.starts_with("expires in")),
            "{issues:?}"
        );
        // A leaf deleted by hand comes back alone.
        found.remove(ETCD_PEER);
        let p = plan(&wanted, &found, now());
        assert_eq!(p.issues().collect::<Vec<_>>(), [(ETCD_PEER, "missing")]);
        let again = issue(&wanted, &found, &p).unwrap();
        assert_ne!(
            digest(&again.secrets, &[ETCD_PEER]),
            digest(&issued.secrets, &[ETCD_PEER])
        );
        assert_eq!(
            digest(&again.secrets, &[ETCD_SERVER]),
            digest(&issued.secrets, &[ETCD_SERVER])
        );
        // A CA deleted by hand: it and every leaf it signs are issued again.
        let mut found = data_of(&issued);
        found.remove(ETCD_CA);
        let p = plan(&wanted, &found, now());
        let issues: Vec<&str> = p.issues().map(|(n, _)| n).collect();
        assert_eq!(issues, [ETCD_CA, ETCD_CLIENT, ETCD_SERVER, ETCD_PEER]);
        // A new external address changes the serving certificate only.
        let mut moved = names();
        moved.external_host = Some("203.0.113.9".into());
        let p = plan(&super::wanted(&moved), &data_of(&issued), now());
        assert_eq!(
            p.issues().collect::<Vec<_>>(),
            [(API_SERVING, "its names changed")]
        );
        // So does another Service network (the `kubernetes` Service's address), before the
        // control plane is made.
        let mut renumbered = names();
        renumbered.kubernetes_service_ip = "10.100.0.1".parse().unwrap();
        let wanted = super::wanted(&renumbered);
        let p = plan(&wanted, &data_of(&issued), now());
        assert_eq!(
            p.issues().collect::<Vec<_>>(),
            [(API_SERVING, "its names changed")]
        );
        let again = issue(&wanted, &data_of(&issued), &p).unwrap();
        let read = atoll_pki::inspect(&again.secrets[API_SERVING].data[TLS_CRT]).unwrap();
        assert!(read.ip_addresses.contains(&"10.100.0.1".parse().unwrap()));
        assert!(!read.ip_addresses.contains(&"10.96.0.1".parse().unwrap()));
    }
}
