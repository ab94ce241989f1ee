//! The networks of a `Kubernetes`-mode hosted cluster (`spec.network`): the pod network, the
//! Service network and the DNS Service's address, resolved with their defaults and checked as
//! kube-apiserver and kube-controller-manager would check their flags, each refusal naming its
//! field. IPv4 single-stack only: an IPv6 or dual-stack network is refused, saying so.

use std::fmt;
use std::net::Ipv4Addr;

use super::HostedNetwork;

/// The Service network when the spec gives none (kubeadm's default).
pub const DEFAULT_SERVICE_CIDR: Cidr = Cidr {
    base: Ipv4Addr::new(10, 96, 0, 0),
    prefix: 12,
};
/// The largest Service network kube-apiserver takes for IPv4: a /12 (20 host bits).
pub const LARGEST_SERVICE_PREFIX: u8 = 12;
/// The DNS Service's address when the spec gives none: this index into the Service network
/// (the tenth address, as kubeadm picks).
pub const DNS_INDEX: u32 = 10;
/// The share of the pod network kube-controller-manager gives each node (its
/// `--node-cidr-mask-size` for IPv4).
pub const NODE_PREFIX: u8 = 24;
/// How many bits larger than a node's share the pod network may be (kube-controller-manager's
/// limit: 16).
pub const NODE_PREFIX_MAX_DIFF: u8 = 16;

/// An IPv4 network: its base address (host bits zero) and prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    base: Ipv4Addr,
    prefix: u8,
}

impl Cidr {
    /// Parses `a.b.c.d/p`, refusing IPv6, host bits set and anything else; the error says
    /// what is wrong (the caller names the field).
    pub fn parse(text: &str) -> Result<Cidr, String> {
        if text.contains(':') {
            return Err(format!(
                "{text:?} is an IPv6 network: only IPv4 is supported (single-stack); give an IPv4 CIDR"
            ));
        }
        let not_one = || format!("{text:?} is not an IPv4 CIDR (such as 10.96.0.0/12)");
        let (address, prefix) = text.split_once('/').ok_or_else(not_one)?;
        let address: Ipv4Addr = address.parse().map_err(|_| not_one())?;
        let prefix: u8 = prefix
            .parse()
            .ok()
            .filter(|p| *p <= 32 && !text.contains('+'))
            .ok_or_else(not_one)?;
        let cidr = Cidr {
            base: Ipv4Addr::from(u32::from(address) & mask(prefix)),
            prefix,
        };
        if cidr.base != address {
            return Err(format!("{text:?} has host bits set: the network is {cidr}"));
        }
        Ok(cidr)
    }

    /// Its prefix length.
    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    /// How many addresses it holds.
    pub fn size(&self) -> u64 {
        1u64 << (32 - u32::from(self.prefix))
    }

    /// Its `n`th address (0 is the base), when it holds that many.
    pub fn nth(&self, n: u32) -> Option<Ipv4Addr> {
        (u64::from(n) < self.size()).then(|| Ipv4Addr::from(u32::from(self.base) + n))
    }

    /// The index of `ip` in it, when it holds it.
    pub fn index_of(&self, ip: Ipv4Addr) -> Option<u32> {
        (u32::from(ip) & mask(self.prefix) == u32::from(self.base))
            .then(|| u32::from(ip) - u32::from(self.base))
    }

    /// Whether it shares an address with `other`.
    pub fn overlaps(&self, other: &Cidr) -> bool {
        let shorter = self.prefix.min(other.prefix);
        u32::from(self.base) & mask(shorter) == u32::from(other.base) & mask(shorter)
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.base, self.prefix)
    }
}

/// The network mask of a prefix length.
fn mask(prefix: u8) -> u32 {
    match prefix {
        0 => 0,
        p => u32::MAX << (32 - u32::from(p.min(32))),
    }
}

/// The networks of a cluster, resolved: what its control plane and add-ons are rendered with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Network {
    /// The pod network (`--cluster-cidr`, kube-proxy's `clusterCIDR`, kubeadm's `podSubnet`),
    /// when the cluster has one.
    pub pod: Option<Cidr>,
    /// The Service network (`--service-cluster-ip-range`, kubeadm's `serviceSubnet`).
    pub service: Cidr,
    /// The `kube-dns` Service's address (the kubelets' `clusterDNS`).
    pub dns: Ipv4Addr,
}

impl Default for Network {
    /// What a spec without `network` resolves to (and what clusters made before it existed
    /// run): no pod network, `10.96.0.0/12`, `10.96.0.10`.
    fn default() -> Self {
        Network {
            pod: None,
            service: DEFAULT_SERVICE_CIDR,
            dns: Ipv4Addr::new(10, 96, 0, 10),
        }
    }
}

impl Network {
    /// The first address of the Service network: the cluster's own `kubernetes` Service (a SAN
    /// of the API server's certificate).
    pub fn kubernetes_service_ip(&self) -> Ipv4Addr {
        self.service.nth(1).unwrap_or(self.service.base)
    }

    /// As one line, `podCIDR=…,serviceCIDR=…,dnsServiceIP=…` (`podCIDR=` empty when none):
    /// what the hub records on the control plane it renders.
    pub fn to_record(&self) -> String {
        format!(
            "podCIDR={},serviceCIDR={},dnsServiceIP={}",
            self.pod.map(|p| p.to_string()).unwrap_or_default(),
            self.service,
            self.dns
        )
    }

    /// Reads [`Network::to_record`]'s line back.
    pub fn from_record(text: &str) -> Option<Network> {
        let mut pod = None;
        let mut service = None;
        let mut dns = None;
        for part in text.split(',') {
            match part.split_once('=')? {
                ("podCIDR", "") => {}
                ("podCIDR", v) => pod = Some(Cidr::parse(v).ok()?),
                ("serviceCIDR", v) => service = Some(Cidr::parse(v).ok()?),
                ("dnsServiceIP", v) => dns = Some(v.parse().ok()?),
                _ => return None,
            }
        }
        Some(Network {
            pod,
            service: service?,
            dns: dns?,
        })
    }

    /// The fields in which `asked` differs from this network, as `(field, this, asked)`.
    pub fn changes(&self, asked: &Network) -> Vec<(&'static str, String, String)> {
        let text = |c: Option<Cidr>| c.map_or_else(|| "none".to_owned(), |c| c.to_string());
        let mut out = Vec::new();
        if self.pod != asked.pod {
            out.push((POD_CIDR, text(self.pod), text(asked.pod)));
        }
        if self.service != asked.service {
            out.push((
                SERVICE_CIDR,
                self.service.to_string(),
                asked.service.to_string(),
            ));
        }
        if self.dns != asked.dns {
            out.push((DNS_SERVICE_IP, self.dns.to_string(), asked.dns.to_string()));
        }
        out
    }
}

/// The field of the pod network.
pub const POD_CIDR: &str = "spec.network.podCIDR";
/// The field of the Service network.
pub const SERVICE_CIDR: &str = "spec.network.serviceCIDR";
/// The field of the DNS Service's address.
pub const DNS_SERVICE_IP: &str = "spec.network.dnsServiceIP";

/// Resolves a spec's `network` with its defaults; every problem found, each naming its field.
pub fn resolve(spec: Option<&HostedNetwork>) -> Result<Network, Vec<String>> {
    let spec = spec.cloned().unwrap_or_default();
    let mut problems = Vec::new();
    let service = match spec.service_cidr.as_deref() {
        None => Some(DEFAULT_SERVICE_CIDR),
        Some(text) => keep(
            &mut problems,
            Cidr::parse(text)
                .map_err(|e| format!("{SERVICE_CIDR}: {e}"))
                .and_then(|c| check_service(c, spec.dns_service_ip.is_some())),
        ),
    };
    let pod = match spec.pod_cidr.as_deref() {
        None => None,
        Some(text) => keep(
            &mut problems,
            Cidr::parse(text)
                .map_err(|e| format!("{POD_CIDR}: {e}"))
                .and_then(|c| check_pod(c, service)),
        ),
    };
    let dns = match spec.dns_service_ip.as_deref() {
        Some(text) => keep(&mut problems, check_dns(text, service)),
        None => service.and_then(|s| s.nth(DNS_INDEX)),
    };
    let pod_ok = spec.pod_cidr.is_none() || pod.is_some();
    match (service, dns) {
        (Some(service), Some(dns)) if problems.is_empty() && pod_ok => {
            Ok(Network { pod, service, dns })
        }
        _ => Err(problems),
    }
}

/// The value of `outcome`, or its problem added to `problems`.
fn keep<T>(problems: &mut Vec<String>, outcome: Result<T, String>) -> Option<T> {
    outcome.map_err(|e| problems.push(e)).ok()
}

/// A Service network kube-apiserver refuses, or too small for the addresses it must hold.
fn check_service(cidr: Cidr, dns_given: bool) -> Result<Cidr, String> {
    if cidr.prefix < LARGEST_SERVICE_PREFIX {
        return Err(format!(
            "{SERVICE_CIDR}: {cidr} is larger than kube-apiserver takes (at most a /{LARGEST_SERVICE_PREFIX}, 20 host bits); choose a /{LARGEST_SERVICE_PREFIX} or smaller"
        ));
    }
    // Its base and broadcast addresses are never given out; the first is the `kubernetes`
    // Service's, and the DNS Service needs another.
    if cidr.prefix > 30 {
        return Err(format!(
            "{SERVICE_CIDR}: {cidr} is too small: it must hold the kubernetes Service's address and the DNS Service's besides its base and broadcast addresses; choose a /30 or larger"
        ));
    }
    if !dns_given && cidr.size() <= u64::from(DNS_INDEX) + 1 {
        return Err(format!(
            "{SERVICE_CIDR}: {cidr} is too small for the DNS Service's default address (its tenth); choose a /28 or larger, or set {DNS_SERVICE_IP}"
        ));
    }
    Ok(cidr)
}

/// A pod network overlapping the Service network, or of a size kube-controller-manager
/// cannot split into nodes' shares.
fn check_pod(cidr: Cidr, service: Option<Cidr>) -> Result<Cidr, String> {
    if let Some(service) = service
        && cidr.overlaps(&service)
    {
        return Err(format!(
            "{POD_CIDR}: {cidr} overlaps the Service network {service} ({SERVICE_CIDR}); choose networks that share no address"
        ));
    }
    if cidr.prefix > NODE_PREFIX {
        return Err(format!(
            "{POD_CIDR}: {cidr} is smaller than the /{NODE_PREFIX} kube-controller-manager gives each node; choose a /{NODE_PREFIX} or larger (a /16 holds 256 nodes)"
        ));
    }
    if cidr.prefix < NODE_PREFIX - NODE_PREFIX_MAX_DIFF {
        return Err(format!(
            "{POD_CIDR}: {cidr} is larger than kube-controller-manager takes with a /{NODE_PREFIX} per node (at most a /{}); choose a smaller network",
            NODE_PREFIX - NODE_PREFIX_MAX_DIFF
        ));
    }
    Ok(cidr)
}

/// The DNS Service's address, when it is one the Service network can give it.
fn check_dns(text: &str, service: Option<Cidr>) -> Result<Ipv4Addr, String> {
    if text.contains(':') {
        return Err(format!(
            "{DNS_SERVICE_IP}: {text:?} is an IPv6 address: only IPv4 is supported (single-stack)"
        ));
    }
    let ip: Ipv4Addr = text
        .parse()
        .map_err(|_| format!("{DNS_SERVICE_IP}: {text:?} is not an IPv4 address"))?;
    // Without a usable Service network its own problem is reported; nothing more to check.
    let Some(service) = service else {
        return Ok(ip);
    };
    match service.index_of(ip) {
        None => Err(format!(
            "{DNS_SERVICE_IP}: {ip} is outside the Service network {service} ({SERVICE_CIDR}); choose an address in it (by default its tenth)"
        )),
        Some(0) => Err(format!(
            "{DNS_SERVICE_IP}: {ip} is the base address of the Service network {service}, which is never given out"
        )),
        Some(1) => Err(format!(
            "{DNS_SERVICE_IP}: {ip} is the kubernetes Service's address (the first of {service}); choose another"
        )),
        Some(i) if u64::from(i) == service.size() - 1 => Err(format!(
            "{DNS_SERVICE_IP}: {ip} is the broadcast address of the Service network {service}, which is never given out"
        )),
        Some(_) => Ok(ip),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(pod: Option<&str>, service: Option<&str>, dns: Option<&str>) -> HostedNetwork {
        HostedNetwork {
            pod_cidr: pod.map(str::to_owned),
            service_cidr: service.map(str::to_owned),
            dns_service_ip: dns.map(str::to_owned),
        }
    }

    fn refused(spec: HostedNetwork) -> Vec<String> {
        resolve(Some(&spec)).unwrap_err()
    }

    #[test]
    fn cidrs_parse_and_bad_ones_say_why() {
        let c = Cidr::parse("10.96.0.0/12").unwrap();
        assert_eq!(c.to_string(), "10.96.0.0/12");
        assert_eq!(c.size(), 1 << 20);
        assert_eq!(c.nth(1), Some(Ipv4Addr::new(10, 96, 0, 1)));
        assert_eq!(
            c.index_of(Ipv4Addr::new(10, 111, 255, 255)),
            Some((1 << 20) - 1)
        );
        assert_eq!(c.index_of(Ipv4Addr::new(10, 112, 0, 0)), None);
        assert!(c.overlaps(&Cidr::parse("10.100.0.0/16").unwrap()));
        assert!(!c.overlaps(&Cidr::parse("10.244.0.0/16").unwrap()));
        assert!(Cidr::parse("0.0.0.0/0").unwrap().overlaps(&c));
        for (bad, says) in [
            ("10.96.0.0", "not an IPv4 CIDR"),
            ("10.96.0/12", "not an IPv4 CIDR"),
            ("10.96.0.0/33", "not an IPv4 CIDR"),
            ("10.96.0.0/+12", "not an IPv4 CIDR"),
            ("300.0.0.0/8", "not an IPv4 CIDR"),
            ("fd00::/108", "IPv6"),
            ("10.96.0.1/12", "host bits set: the network is 10.96.0.0/12"),
        ] {
            let e = Cidr::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn the_defaults_are_kubeadms_and_the_dns_address_is_the_tenth() {
        let none = resolve(None).unwrap();
        assert_eq!(none, Network::default());
        assert_eq!(none.kubernetes_service_ip().to_string(), "10.96.0.1");
        assert_eq!(none.dns.to_string(), "10.96.0.10");
        assert_eq!(none.pod, None);
        let custom = resolve(Some(&net(
            Some("10.244.0.0/16"),
            Some("10.100.0.0/16"),
            None,
        )))
        .unwrap();
        assert_eq!(custom.pod.unwrap().to_string(), "10.244.0.0/16");
        assert_eq!(custom.kubernetes_service_ip().to_string(), "10.100.0.1");
        assert_eq!(custom.dns.to_string(), "10.100.0.10");
        let given = resolve(Some(&net(None, Some("172.20.0.0/28"), Some("172.20.0.2")))).unwrap();
        assert_eq!(given.dns.to_string(), "172.20.0.2");
        // The smallest that holds both addresses.
        resolve(Some(&net(None, Some("172.20.0.0/30"), Some("172.20.0.2")))).unwrap();
        resolve(Some(&net(None, Some("172.20.0.0/28"), None))).unwrap();
    }

    #[test]
    fn bad_networks_are_refused_naming_the_field() {
        for (spec, field, says) in [
            (net(Some("bogus"), None, None), POD_CIDR, "not an IPv4 CIDR"),
            (
                net(None, Some("10.96.0.0/33"), None),
                SERVICE_CIDR,
                "not an IPv4 CIDR",
            ),
            (
                net(None, None, Some("10.96.0.300")),
                DNS_SERVICE_IP,
                "not an IPv4 address",
            ),
            (net(None, Some("fd00::/108"), None), SERVICE_CIDR, "IPv6"),
            (net(Some("fd01::/48"), None, None), POD_CIDR, "IPv6"),
            (net(None, None, Some("fd00::a")), DNS_SERVICE_IP, "IPv6"),
            (
                net(None, Some("10.0.0.0/8"), None),
                SERVICE_CIDR,
                "at most a /12",
            ),
            (
                net(None, Some("10.96.0.0/31"), Some("10.96.0.1")),
                SERVICE_CIDR,
                "too small",
            ),
            (
                net(None, Some("10.96.0.0/29"), None),
                SERVICE_CIDR,
                "its tenth",
            ),
            (
                net(Some("10.96.0.0/16"), None, None),
                POD_CIDR,
                "overlaps the Service network 10.96.0.0/12",
            ),
            (
                net(Some("10.0.0.0/8"), Some("10.96.0.0/16"), None),
                POD_CIDR,
                "overlaps",
            ),
            (
                net(Some("10.244.0.0/25"), None, None),
                POD_CIDR,
                "smaller than the /24",
            ),
            (
                net(Some("10.0.0.0/7"), Some("172.16.0.0/16"), None),
                POD_CIDR,
                "at most a /8",
            ),
            (
                net(None, None, Some("10.200.0.10")),
                DNS_SERVICE_IP,
                "outside the Service network 10.96.0.0/12",
            ),
            (
                net(None, None, Some("10.96.0.0")),
                DNS_SERVICE_IP,
                "base address",
            ),
            (
                net(None, None, Some("10.96.0.1")),
                DNS_SERVICE_IP,
                "kubernetes Service's address",
            ),
            (
                net(None, Some("10.100.0.0/24"), Some("10.100.0.255")),
                DNS_SERVICE_IP,
                "broadcast",
            ),
        ] {
            let problems = refused(spec.clone());
            assert_eq!(problems.len(), 1, "{spec:?}: {problems:?}");
            assert!(
                problems[0].starts_with(&format!("{field}: ")) && problems[0].contains(says),
                "{spec:?}: {problems:?}"
            );
        }
        // Every problem is told at once.
        let all = refused(net(Some("x"), Some("y"), Some("z")));
        assert_eq!(all.len(), 3, "{all:?}");
    }

    #[test]
    fn a_network_is_recorded_and_read_back_and_its_changes_named() {
        let a = resolve(Some(&net(
            Some("10.244.0.0/16"),
            Some("10.100.0.0/16"),
            None,
        )))
        .unwrap();
        assert_eq!(
            a.to_record(),
            "podCIDR=10.244.0.0/16,serviceCIDR=10.100.0.0/16,dnsServiceIP=10.100.0.10"
        );
        assert_eq!(Network::from_record(&a.to_record()), Some(a));
        let none = Network::default();
        assert_eq!(Network::from_record(&none.to_record()), Some(none));
        assert_eq!(Network::from_record("serviceCIDR=10.96.0.0/12"), None);
        assert_eq!(Network::from_record("junk"), None);
        assert!(a.changes(&a).is_empty());
        let fields: Vec<_> = none.changes(&a).into_iter().map(|c| c.0).collect();
        assert_eq!(fields, [POD_CIDR, SERVICE_CIDR, DNS_SERVICE_IP]);
        assert_eq!(
            none.changes(&a)[0],
            (POD_CIDR, "none".to_owned(), "10.244.0.0/16".to_owned())
        );
    }
}
