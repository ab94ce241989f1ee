//! Which Kubernetes versions a `Kubernetes`-mode control plane may run, and how a version change
//! rolls: one minor at a time, never down, etcd first where its version changes, then
//! kube-apiserver, then the controllers, each once the one before is available at the new
//! version. Pure.

use crate::hosted::plan::Problem;

/// A Kubernetes minor this hub renders, and the etcd and CoreDNS kubeadm pairs with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Release {
    /// The minor (`35` for 1.35).
    pub minor: u32,
    /// The patch a version given as a minor alone (`1.35`) runs.
    pub default_patch: u32,
    /// The tag of `registry.k8s.io/etcd` for it.
    pub etcd: &'static str,
    /// The tag of `registry.k8s.io/coredns/coredns` for it.
    pub coredns: &'static str,
}

/// The minors this hub renders, oldest first.
///
/// etcd follows kubeadm's `SupportedEtcdVersion` (cmd/kubeadm/app/constants/constants.go), each
/// minor from the newest kubeadm table that lists it: the main branch's at its bump to etcd
/// 3.6.9 (`34`, `35`, `36` → `3.6.9-0`) for 1.34 and 1.35, and release-1.34's (`31` to `33` →
/// `3.5.24-0`, `34` → `3.6.5-0`) for 1.33, which the main branch no longer lists (a 3.5 at or
/// past 3.5.20, from which etcd upgrades to 3.6). CoreDNS follows kubeadm's `CoreDNSVersion`
/// of each minor's release branch (the same file). Images are overridable (`spec.images`,
/// `spec.addons`) when a registry lags or a patch moves these.
pub const RELEASES: &[Release] = &[
    Release {
        minor: 33,
        default_patch: 0,
        etcd: "3.5.24-0",
        coredns: "v1.12.0",
    },
    Release {
        minor: 34,
        default_patch: 0,
        etcd: "3.6.9-0",
        coredns: "v1.12.1",
    },
    Release {
        minor: 35,
        default_patch: 0,
        etcd: "3.6.9-0",
        coredns: "v1.13.1",
    },
];

/// A Kubernetes version, `v1.MINOR.PATCH`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// The minor.
    pub minor: u32,
    /// The patch.
    pub patch: u32,
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "v1.{}.{}", self.minor, self.patch)
    }
}

impl Version {
    /// Reads `1.35`, `v1.35`, `1.35.2` or `v1.35.2` (a minor alone is its release's default
    /// patch); `None` for anything else, or a 1.x this hub does not render.
    pub fn parse(text: &str) -> Option<Version> {
        let text = text.trim().trim_start_matches('v');
        let mut parts = text.split('.');
        let (Some("1"), Some(minor)) = (parts.next(), parts.next()) else {
            return None;
        };
        let minor: u32 = minor.parse().ok()?;
        let patch = match parts.next() {
            Some(p) => Some(p.parse::<u32>().ok()?),
            None => None,
        };
        if parts.next().is_some() {
            return None;
        }
        let release = release(minor)?;
        Some(Version {
            minor,
            patch: patch.unwrap_or(release.default_patch),
        })
    }

    /// The tag of etcd's image for this version.
    pub fn etcd(&self) -> &'static str {
        self.release().etcd
    }

    /// The tag of CoreDNS's image for this version.
    pub fn coredns(&self) -> &'static str {
        self.release().coredns
    }

    /// Its release (the newest for a minor this hub does not render).
    fn release(&self) -> &'static Release {
        release(self.minor).unwrap_or(&RELEASES[RELEASES.len() - 1])
    }
}

/// The release of a minor, if this hub renders it.
fn release(minor: u32) -> Option<&'static Release> {
    RELEASES.iter().find(|r| r.minor == minor)
}

/// The newest version this hub renders: what a spec without `kubernetesVersion` runs.
pub fn newest() -> Version {
    let r = RELEASES[RELEASES.len() - 1];
    Version {
        minor: r.minor,
        patch: r.default_patch,
    }
}

/// The minors this hub renders, for messages.
fn supported() -> String {
    let first = RELEASES[0].minor;
    let last = RELEASES[RELEASES.len() - 1].minor;
    format!("1.{first} to 1.{last}")
}

/// The version `spec.kubernetesVersion` asks for, checked against what runs (`running`: the
/// oldest version a component is rendered at): an unknown version, a downgrade or a skipped
/// minor is a problem that blocks the change (what runs keeps running).
pub fn check(asked: Option<&str>, running: Option<Version>) -> Result<Version, Problem> {
    let target = match asked {
        None => running.unwrap_or_else(newest),
        Some(text) => Version::parse(text).ok_or_else(|| Problem {
            reason: "UnsupportedVersion",
            message: format!(
                "spec.kubernetesVersion {text:?} is not a version this hub runs (Kubernetes {}, as v1.MINOR or v1.MINOR.PATCH); set one of those",
                supported()
            ),
            blocks: true,
        })?,
    };
    let Some(running) = running else {
        return Ok(target);
    };
    if target < running {
        return Err(Problem {
            reason: "DowngradeRefused",
            message: format!(
                "spec.kubernetesVersion {target} is older than the {running} the control plane runs: a control plane cannot go back (etcd's data and the API's stored versions move forward only); set it back to {running} or later, or back the cluster up and restore it into a new one"
            ),
            blocks: true,
        });
    }
    if target.minor > running.minor + 1 {
        return Err(Problem {
            reason: "SkippedMinor",
            message: format!(
                "spec.kubernetesVersion {target} skips a minor: the control plane runs {running} and moves one minor at a time; set v1.{}, wait until the cluster is Available at it, then go on",
                running.minor + 1
            ),
            blocks: true,
        });
    }
    Ok(target)
}

/// The Kubernetes version each component is rendered at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rollout {
    /// etcd (its image follows the version's release).
    pub etcd: Version,
    /// kube-apiserver.
    pub api_server: Version,
    /// kube-controller-manager and kube-scheduler.
    pub controllers: Version,
}

impl Rollout {
    /// Every component at one version.
    pub fn all(version: Version) -> Self {
        Self {
            etcd: version,
            api_server: version,
            controllers: version,
        }
    }

    /// The oldest version a component runs at.
    pub fn oldest(&self) -> Version {
        self.etcd.min(self.api_server).min(self.controllers)
    }
}

/// Whether each component's workload is available, rolled out at the version it is rendered
/// at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Settled {
    /// etcd.
    pub etcd: bool,
    /// kube-apiserver.
    pub api_server: bool,
}

/// What to render: a new cluster at `target` all at once; a cluster that runs `deployed`
/// moves etcd first (where its image changes), kube-apiserver once etcd settled at its new
/// version, the controllers once kube-apiserver settled at it.
pub fn rollout(target: Version, deployed: Option<Rollout>, settled: Settled) -> Rollout {
    let Some(deployed) = deployed else {
        return Rollout::all(target);
    };
    // etcd is rendered at the target at once; it is done once it runs the target's image and
    // settled there.
    let etcd_done = deployed.etcd.etcd() == target.etcd() && settled.etcd;
    let api_server = if etcd_done {
        target
    } else {
        deployed.api_server
    };
    let controllers = if deployed.api_server == target && settled.api_server {
        target
    } else {
        deployed.controllers
    };
    Rollout {
        etcd: target,
        api_server,
        controllers,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Version {
        Version::parse(text).unwrap()
    }

    #[test]
    fn versions_read_as_users_write_them() {
        assert_eq!(
            v("1.35"),
            Version {
                minor: 35,
                patch: 0
            }
        );
        assert_eq!(
            v("v1.34.3"),
            Version {
                minor: 34,
                patch: 3
            }
        );
        assert_eq!(v("v1.33.1").to_string(), "v1.33.1");
        for bad in [
            "1.32.0", "1.36", "2.0.0", "v1.35.x", "1.35.0.1", "", "latest",
        ] {
            assert_eq!(Version::parse(bad), None, "{bad}");
        }
        assert_eq!(v("1.35").etcd(), "3.6.9-0");
        assert_eq!(v("1.33").etcd(), "3.5.24-0");
        assert_eq!(v("1.34").coredns(), "v1.12.1");
        assert_eq!(v("1.35").coredns(), "v1.13.1");
    }

    #[test]
    fn unknown_versions_downgrades_and_skipped_minors_are_refused_saying_what_to_do() {
        assert_eq!(check(None, None), Ok(newest()));
        assert_eq!(check(None, Some(v("1.33.2"))), Ok(v("1.33.2")));
        let unknown = check(Some("1.30"), None).unwrap_err();
        assert_eq!(unknown.reason, "UnsupportedVersion");
        assert!(
            unknown.message.contains("spec.kubernetesVersion \"1.30\"")
                && unknown.message.contains("1.33 to 1.35"),
            "{}",
            unknown.message
        );
        let down = check(Some("1.34"), Some(v("1.35.0"))).unwrap_err();
        assert_eq!(down.reason, "DowngradeRefused");
        assert!(
            down.message.contains("set it back to v1.35.0"),
            "{}",
            down.message
        );
        let skip = check(Some("1.35"), Some(v("1.33.4"))).unwrap_err();
        assert_eq!(skip.reason, "SkippedMinor");
        assert!(skip.message.contains("set v1.34"), "{}", skip.message);
        assert!(down.blocks && skip.blocks && unknown.blocks);
        assert_eq!(check(Some("1.34"), Some(v("1.33.4"))), Ok(v("1.34.0")));
        assert_eq!(check(Some("v1.35.2"), Some(v("1.35.0"))), Ok(v("1.35.2")));
    }

    #[test]
    fn an_upgrade_rolls_etcd_then_the_api_server_then_the_controllers() {
        let old = Rollout::all(v("1.33.0"));
        let new = v("1.34.0");
        // A new cluster starts at once at its version.
        assert_eq!(rollout(new, None, Settled::default()), Rollout::all(new));
        // etcd's image changes: etcd goes first, the others wait for it.
        let first = rollout(
            new,
            Some(old),
            Settled {
                etcd: true,
                api_server: true,
            },
        );
        assert_eq!(
            first,
            Rollout {
                etcd: new,
                api_server: old.api_server,
                controllers: old.controllers
            }
        );
        // etcd rendered at the new version but not settled: the API server still waits.
        let waiting = rollout(
            new,
            Some(first),
            Settled {
                etcd: false,
                api_server: true,
            },
        );
        assert_eq!(waiting, first);
        // etcd settled: the API server goes.
        let second = rollout(
            new,
            Some(first),
            Settled {
                etcd: true,
                api_server: false,
            },
        );
        assert_eq!(
            second,
            Rollout {
                etcd: new,
                api_server: new,
                controllers: old.controllers
            }
        );
        // The API server not settled yet: the controllers wait.
        assert_eq!(
            rollout(
                new,
                Some(second),
                Settled {
                    etcd: true,
                    api_server: false
                }
            ),
            second
        );
        // Settled: the controllers go.
        assert_eq!(
            rollout(
                new,
                Some(second),
                Settled {
                    etcd: true,
                    api_server: true
                }
            ),
            Rollout::all(new)
        );
        // A minor with the same etcd (1.34 to 1.35): the API server goes at once.
        let next = rollout(
            v("1.35.0"),
            Some(Rollout::all(new)),
            Settled {
                etcd: true,
                api_server: true,
            },
        );
        assert_eq!(next.api_server, v("1.35.0"));
        assert_eq!(next.controllers, new);
        // A patch with the same etcd: the API server goes at once.
        let patch = v("1.34.1");
        let p = rollout(
            patch,
            Some(Rollout::all(new)),
            Settled {
                etcd: true,
                api_server: true,
            },
        );
        assert_eq!(p.api_server, patch);
        assert_eq!(p.controllers, new);
    }
}
