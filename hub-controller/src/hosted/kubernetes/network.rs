//! The networks a `Kubernetes`-mode control plane is rendered with: what `spec.network` asks
//! for a control plane not made yet; for one that runs, the networks it was made with (recorded
//! on kube-apiserver's Deployment), a change being refused with a condition that names the
//! field, since kube-apiserver cannot move its Service network in place. Pure.

use atoll_api::hosted::HostedNetwork;
use atoll_api::hosted::network::{self, Network};

use crate::hosted::plan::Problem;

/// Annotation on kube-apiserver's Deployment: the networks the control plane was made with
/// ([`Network::to_record`]).
pub const ANNOTATION_NETWORK: &str = "atoll.dev/network";

/// The networks a control plane that runs was made with, from its kube-apiserver's
/// annotation. One rendered before the hub recorded them runs the networks every control plane
/// was then given: [`Network::default`].
pub fn made_with(annotation: Option<&str>) -> Network {
    annotation
        .and_then(Network::from_record)
        .unwrap_or_default()
}

/// The networks to render with, and the problems of the spec's. A control plane not made yet
/// (`made` is `None`) takes the spec's, and a bad one blocks it. One that runs keeps its own:
/// a bad or changed spec is reported without stopping it.
pub fn plan(
    asked: Option<&HostedNetwork>,
    made: Option<Network>,
) -> (Option<Network>, Vec<Problem>) {
    let resolved = network::resolve(asked);
    let Some(made) = made else {
        return match resolved {
            Ok(network) => (Some(network), Vec::new()),
            Err(problems) => (None, invalid(problems, true)),
        };
    };
    let problems = match resolved {
        Err(problems) => invalid(problems, false),
        Ok(resolved) => {
            let dns_defaulted = asked.is_none_or(|a| a.dns_service_ip.is_none());
            made.changes(&resolved)
                .into_iter()
                .map(|(field, was, now)| {
                    let now = if field == network::DNS_SERVICE_IP && dns_defaulted {
                        format!("{now}, the default for the Service network asked")
                    } else {
                        now
                    };
                    Problem {
                        reason: "ImmutableFieldChanged",
                        message: format!(
                            "{field} cannot change once the control plane is made (kube-apiserver cannot move its networks in place): it runs with {was} (asked: {now}); set it back, or create a new cluster with the networks you want and move the workloads"
                        ),
                        blocks: false,
                    }
                })
                .collect()
        }
    };
    (Some(made), problems)
}

/// Each of `problems` as an `InvalidNetwork` problem.
fn invalid(problems: Vec<String>, blocks: bool) -> Vec<Problem> {
    problems
        .into_iter()
        .map(|message| Problem {
            reason: "InvalidNetwork",
            message,
            blocks,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(pod: Option<&str>, service: Option<&str>) -> HostedNetwork {
        HostedNetwork {
            pod_cidr: pod.map(str::to_owned),
            service_cidr: service.map(str::to_owned),
            dns_service_ip: None,
        }
    }

    #[test]
    fn a_new_control_plane_takes_the_spec_and_a_bad_one_blocks_it() {
        let spec = asked(Some("10.244.0.0/16"), Some("10.100.0.0/16"));
        let (network, problems) = plan(Some(&spec), None);
        assert!(problems.is_empty());
        assert_eq!(network.unwrap().dns.to_string(), "10.100.0.10");
        let (network, problems) = plan(None, None);
        assert_eq!(network, Some(Network::default()));
        assert!(problems.is_empty());
        let bad = asked(Some("10.100.0.0/16"), Some("10.100.0.0/16"));
        let (network, problems) = plan(Some(&bad), None);
        assert_eq!(network, None);
        assert_eq!(problems.len(), 1);
        assert!(problems[0].blocks && problems[0].reason == "InvalidNetwork");
        assert!(
            problems[0]
                .message
                .starts_with("spec.network.podCIDR: 10.100.0.0/16 overlaps")
        );
    }

    #[test]
    fn a_running_control_plane_keeps_its_networks_and_a_change_is_refused_naming_the_field() {
        let made = network::resolve(Some(&asked(None, Some("10.100.0.0/16")))).unwrap();
        let (network, problems) = plan(Some(&asked(None, Some("10.100.0.0/16"))), Some(made));
        assert_eq!(network, Some(made));
        assert!(problems.is_empty());
        let (network, problems) = plan(Some(&asked(None, Some("10.64.0.0/16"))), Some(made));
        assert_eq!(network, Some(made));
        let messages: Vec<_> = problems.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(problems.len(), 2, "{messages:?}");
        assert!(
            problems
                .iter()
                .all(|p| p.reason == "ImmutableFieldChanged" && !p.blocks)
        );
        assert!(
            messages[0].starts_with("spec.network.serviceCIDR cannot change")
                && messages[0].contains("runs with 10.100.0.0/16 (asked: 10.64.0.0/16)"),
            "{messages:?}"
        );
        // The DNS address follows the Service network by default, so it changes too.
        assert!(
            messages[1].starts_with("spec.network.dnsServiceIP cannot change")
                && messages[1]
                    .contains("(asked: 10.64.0.10, the default for the Service network asked)"),
            "{messages:?}"
        );
        // A pod network added later is a change as well.
        let (_, problems) = plan(
            Some(&asked(Some("10.244.0.0/16"), Some("10.100.0.0/16"))),
            Some(made),
        );
        assert!(
            problems[0]
                .message
                .contains("spec.network.podCIDR cannot change")
        );
        assert!(
            problems[0]
                .message
                .contains("runs with none (asked: 10.244.0.0/16)")
        );
        // A bad spec is told, not rendered.
        let (network, problems) = plan(Some(&asked(Some("nope"), None)), Some(made));
        assert_eq!(network, Some(made));
        assert!(!problems[0].blocks && problems[0].message.starts_with("spec.network.podCIDR"));
    }

    #[test]
    fn control_planes_made_before_the_record_run_the_old_fixed_networks() {
        assert_eq!(made_with(None), Network::default());
        assert_eq!(made_with(Some("garbled")), Network::default());
        let made = network::resolve(Some(&asked(Some("10.244.0.0/16"), None))).unwrap();
        assert_eq!(made_with(Some(&made.to_record())), made);
    }
}
