//! The fleet end to end with the real binaries: `atoll up` (the embedded hub), three member
//! clusters (`atoll apiserver`) and their `work-agent`s. Clusters join and show in
//! `atoll get clusters` and `kubectl get clusterprofiles`; a killed agent turns its cluster
//! Unknown within the configured leases and a restarted one turns it healthy again without
//! joining again; a cluster moved between ClusterSets is reflected on the hub and in the member's
//! ClusterProperty. A placement lands on every member and survives a killed hub; an agent killed
//! mid-apply and restarted neither misses nor rewrites an object; a second SIGTERM stops a stuck
//! agent at once. Two `hub-controller` replicas elect one leader, and the other takes over when it
//! is killed mid-rollout, with nothing lost, applied twice or joined again; so do two `atoll up`
//! replicas sharing one etcd.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use atoll_tests::{Process, Ran, Tool, atoll_binary, eventually, free_addr, work_agent_binary};

/// Lease settings of the hub under test: short, so that a lost cluster shows within seconds.
const LEASE_SECONDS: u64 = 1;
const MISSED_LEASES: u64 = 3;

struct Agent {
    child: Child,
    log: PathBuf,
}

impl Agent {
    fn start(hub_dir: &Path, grpc: &str, member: &Path, name: &str, log: PathBuf) -> Agent {
        Agent::start_at(hub_dir, &format!("https://{grpc}"), member, name, log)
    }

    /// An agent given `hub` as its `ATOLL_HUB`: one address, or several separated by commas.
    fn start_at(hub_dir: &Path, hub: &str, member: &Path, name: &str, log: PathBuf) -> Agent {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap();
        let child = Command::new(work_agent_binary().unwrap())
            .env_clear()
            .env("ATOLL_HUB", hub)
            .env("ATOLL_HUB_CA", hub_dir.join("hub-ca.crt"))
            .env(
                "ATOLL_BOOTSTRAP_TOKEN_FILE",
                hub_dir.join("bootstrap-token"),
            )
            .args(["--metrics-addr", "127.0.0.1:0"])
            .args(["--cluster-name", name, "--kubeconfig"])
            .arg(member)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .unwrap();
        Agent { child, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Three member clusters (`atoll apiserver`: east, west, north) with their agents, joining the
/// hub whose data directory is `hub_dir`.
fn start_members(dir: &Path, hub_dir: &Path, grpc: &str) -> (Vec<Process>, Vec<Agent>) {
    start_members_at(dir, hub_dir, &format!("https://{grpc}"))
}

/// [`start_members`] with agents given `hubs`: one hub address, or several separated by commas
/// (the same order for all).
fn start_members_at(dir: &Path, hub_dir: &Path, hubs: &str) -> (Vec<Process>, Vec<Agent>) {
    let mut members = Vec::new();
    let mut agents = Vec::new();
    for name in ["east", "west", "north"] {
        let member = Process::apiserver_on_a_free_port(&dir.join(name)).unwrap();
        let log = dir.join(format!("{name}-agent.log"));
        agents.push(Agent::start_at(
            hub_dir,
            hubs,
            &member.kubeconfig(),
            name,
            log,
        ));
        members.push(member);
    }
    (members, agents)
}

/// A hub that accepts joins and marks a cluster lost after three missed one-second leases,
/// with the three members of [`start_members`] joined to it.
struct Fleet {
    _hub: Process,
    hub_dir: PathBuf,
    grpc: String,
    members: Vec<Process>,
    agents: Vec<Agent>,
}

impl Fleet {
    fn start(dir: &Path) -> Fleet {
        let hub_dir = dir.join("hub");
        let grpc = free_addr().unwrap().to_string();
        let flags = [
            "--grpc-addr",
            &grpc,
            "--auto-accept",
            "--lease-seconds",
            "1",
            "--missed-leases",
            "3",
        ];
        let hub = Process::hub_with(&hub_dir, free_addr().unwrap(), &flags).unwrap();
        let (members, agents) = start_members(dir, &hub_dir, &grpc);
        Fleet {
            _hub: hub,
            hub_dir,
            grpc,
            members,
            agents,
        }
    }
}

/// `atoll` against the hub.
fn atoll(hub_dir: &Path, args: &[&str]) -> Ran {
    let kubeconfig = hub_kubeconfig_admin(hub_dir);
    let mut all = vec!["--kubeconfig", kubeconfig.to_str().unwrap()];
    all.extend_from_slice(args);
    Tool::new(atoll_binary().unwrap())
        .env("RUST_BACKTRACE", "0")
        .run(&all)
}

/// `atoll work apply -f FILE --clusters east --name NAME --wait`, a minute at most.
fn apply_to_east(hub_dir: &Path, file: &Path, name: &str) -> Ran {
    let file = file.to_str().unwrap();
    let args = [
        "work",
        "apply",
        "-f",
        file,
        "--clusters",
        "east",
        "--name",
        name,
    ];
    atoll(
        hub_dir,
        &[&args[..], &["--wait", "--timeout", "60s"]].concat(),
    )
}

/// The hub's admin kubeconfig in `hub_dir`.
fn hub_kubeconfig_admin(hub_dir: &Path) -> PathBuf {
    hub_dir.join("hub.kubeconfig")
}

/// `spec.size` of the Widget `shop/w` in a member cluster, through kubectl.
fn widget_size(member: &Process) -> Ran {
    kubectl(
        &member.kubeconfig(),
        &[
            "get",
            "widget",
            "w",
            "-n",
            "shop",
            "-o",
            "jsonpath={.spec.size}",
        ],
    )
}

/// `kubectl` against the cluster of `kubeconfig`.
fn kubectl(kubeconfig: &Path, args: &[&str]) -> Ran {
    atoll_tests::kubectl_at(kubeconfig, args)
}

/// Writes to `out` a kubeconfig of the cluster of `admin` that authenticates as ServiceAccount
/// `atoll-system/NAME`, with a two-hour token from `kubectl create token`.
fn service_account_kubeconfig(admin: &Path, name: &str, out: &Path) {
    let token = kubectl(
        admin,
        &[
            "create",
            "token",
            name,
            "-n",
            "atoll-system",
            "--duration=2h",
        ],
    )
    .success();
    std::fs::copy(admin, out).unwrap();
    kubectl(
        out,
        &[
            "config",
            "set-credentials",
            name,
            "--token",
            token.stdout.trim(),
        ],
    )
    .success();
    kubectl(out, &["config", "set-context", "--current", "--user", name]).success();
}

/// The `atoll get clusters` row of each cluster, by name: (healthy, joined, clusterset).
fn clusters(hub_dir: &Path) -> Vec<(String, String, String, String)> {
    let ran = atoll(hub_dir, &["get", "clusters"]).success();
    ran.rows()
        .into_iter()
        .skip(1)
        .map(|r| (r[0].clone(), r[1].clone(), r[2].clone(), r[4].clone()))
        .collect()
}

/// Waits until cluster `name` shows healthy in `atoll get clusters`.
async fn until_healthy(dir: &Path, hub_dir: &Path, name: &str) {
    let what = format!("{name} is healthy on the hub");
    until(dir, &what, Duration::from_secs(30), || {
        clusters(hub_dir)
            .iter()
            .any(|r| r.0 == name && r.1 == "True")
    })
    .await;
}

/// Waits until `check` holds; on timeout fails with the last lines of every log in `dir`.
async fn until(dir: &Path, what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
    if eventually(timeout, || std::future::ready(check())).await {
        return;
    }
    let mut logs = String::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "log") {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(40)..].join("\n");
            logs.push_str(&format!("--- {}\n{tail}\n", path.display()));
        }
    }
    panic!("timed out waiting until {what}\n{logs}");
}

#[tokio::test(flavor = "multi_thread")]
async fn three_clusters_join_get_lost_come_back_and_move_between_sets() {
    let dir = tempfile::tempdir().unwrap();
    let hub_dir = dir.path().join("hub");
    let grpc = free_addr().unwrap().to_string();
    let lease = LEASE_SECONDS.to_string();
    let missed = MISSED_LEASES.to_string();
    let _hub = Process::hub_with(
        &hub_dir,
        free_addr().unwrap(),
        &[
            "--grpc-addr",
            &grpc,
            "--auto-accept",
            "--lease-seconds",
            &lease,
            "--missed-leases",
            &missed,
        ],
    )
    .unwrap();
    assert!(hub_dir.join("hub-ca.crt").exists() && hub_dir.join("bootstrap-token").exists());

    let (members, mut agents) = start_members(dir.path(), &hub_dir, &grpc);

    // All three join and are healthy, in the CLI and in kubectl's printer columns.
    until(
        dir.path(),
        "three clusters are healthy",
        Duration::from_secs(30),
        || {
            let rows = clusters(&hub_dir);
            rows.len() == 3 && rows.iter().all(|r| r.1 == "True" && r.2 == "True")
        },
    )
    .await;
    // kubectl prefers v1alpha2 and its upstream columns; v1alpha1 keeps atoll's.
    let listed = kubectl(
        &hub_dir.join("hub.kubeconfig"),
        &["get", "clusterprofiles", "-n", "fleet-system"],
    )
    .success();
    assert_eq!(
        listed.rows()[0],
        [
            "NAME", "DISPLAY", "NAME", "MANAGER", "VERSION", "HEALTHY", "AGE"
        ]
    );
    for row in &listed.rows()[1..] {
        assert_eq!(
            (
                row[0].as_str(),
                row[2].as_str(),
                row[3].as_str(),
                row[4].as_str()
            ),
            (row[1].as_str(), "atoll", "v1.35.0+atoll", "True"),
            "{listed}"
        );
    }
    let v1alpha1 = kubectl(
        &hub_dir.join("hub.kubeconfig"),
        &[
            "get",
            "clusterprofiles.v1alpha1.multicluster.x-k8s.io",
            "-n",
            "fleet-system",
        ],
    )
    .success();
    assert_eq!(
        v1alpha1.rows()[0],
        ["NAME", "HEALTHY", "KUBERNETES", "CLUSTERSET", "AGE"]
    );
    for row in &v1alpha1.rows()[1..] {
        assert_eq!(
            (row[1].as_str(), row[2].as_str()),
            ("True", "v1.35.0+atoll"),
            "{v1alpha1}"
        );
    }
    let wide = atoll(&hub_dir, &["get", "clusters", "-o", "wide"]).success();
    let east_uid = kubectl(
        &members[0].kubeconfig(),
        &[
            "get",
            "namespace",
            "kube-system",
            "-o",
            "jsonpath={.metadata.uid}",
        ],
    )
    .success()
    .stdout;
    assert!(
        wide.stdout.contains(east_uid.trim()),
        "the cluster ID shows in -o wide:\n{wide}"
    );

    // Killing east's agent turns it Unknown within the configured leases.
    agents[0].child.kill().unwrap();
    agents[0].child.wait().unwrap();
    let lease_window = Duration::from_secs(LEASE_SECONDS * MISSED_LEASES + 10);
    until(dir.path(), "east is Unknown", lease_window, || {
        clusters(&hub_dir)
            .iter()
            .any(|r| r.0 == "east" && r.1 == "Unknown")
    })
    .await;
    let profile = kubectl(
        &hub_dir.join("hub.kubeconfig"),
        &[
            "get",
            "clusterprofile",
            "east",
            "-n",
            "fleet-system",
            "-o",
            "json",
        ],
    )
    .success()
    .json();
    let healthy = profile["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "ControlPlaneHealthy")
        .unwrap()
        .clone();
    assert_eq!(healthy["reason"], "AgentLost");
    assert!(
        healthy["message"]
            .as_str()
            .unwrap()
            .contains("3 leases of 1s"),
        "{healthy}"
    );
    // The others stay healthy.
    assert!(
        clusters(&hub_dir)
            .iter()
            .filter(|r| r.0 != "east")
            .all(|r| r.1 == "True")
    );

    // Restarted, with the bootstrap token deleted: it comes back on its stored credential.
    let token = std::fs::read_to_string(hub_dir.join("bootstrap-token")).unwrap();
    atoll(&hub_dir, &["token", "delete", token.trim()])
        .success()
        .stdout_has("deleted");
    let first_log = agents[0].log();
    assert_eq!(
        first_log.matches("joined the hub").count(),
        1,
        "{first_log}"
    );
    agents[0] = Agent::start(
        &hub_dir,
        &grpc,
        &members[0].kubeconfig(),
        "east",
        dir.path().join("east-agent.log"),
    );
    until_healthy(dir.path(), &hub_dir, "east").await;
    assert_eq!(
        agents[0].log().matches("joined the hub").count(),
        1,
        "east joined again:\n{}",
        agents[0].log()
    );

    // ClusterSets: put east and west in blue, then move east to green.
    atoll(&hub_dir, &["clusterset", "create", "blue"]).success();
    atoll(&hub_dir, &["clusterset", "create", "green"]).success();
    // A token scoped to a set: the only way to join straight into it.
    atoll(&hub_dir, &["token", "create", "--clusterset", "purple"])
        .failure()
        .stderr_has("--clusterset: ClusterSet \"purple\" does not exist");
    atoll(
        &hub_dir,
        &["token", "create", "--clusterset", "blue", "--ttl", "1h"],
    )
    .success()
    .stderr_has("go into ClusterSet blue");
    atoll(&hub_dir, &["token", "list"])
        .success()
        .stdout_has("CLUSTERSET")
        .stdout_has("   blue");
    atoll(&hub_dir, &["clusterset", "add", "blue", "east", "west"]).success();
    let member_set = |member: &Process| {
        let ran = kubectl(
            &member.kubeconfig(),
            &[
                "get",
                "clusterproperty",
                "clusterset.k8s.io",
                "-o",
                "jsonpath={.spec.value}",
            ],
        );
        ran.stdout.trim().to_owned()
    };
    until(
        dir.path(),
        "east and west are in blue",
        Duration::from_secs(30),
        || member_set(&members[0]) == "blue" && member_set(&members[1]) == "blue",
    )
    .await;
    until(
        dir.path(),
        "blue counts two members",
        Duration::from_secs(30),
        || {
            atoll(&hub_dir, &["clusterset", "list"])
                .success()
                .rows()
                .iter()
                .any(|r| r[0] == "blue" && r[1] == "2" && r[2] == "2")
        },
    )
    .await;
    atoll(&hub_dir, &["clusterset", "add", "green", "east"]).success();
    until(
        dir.path(),
        "east moved to green in its own cluster",
        Duration::from_secs(30),
        || member_set(&members[0]) == "green",
    )
    .await;
    until(
        dir.path(),
        "the hub shows the move",
        Duration::from_secs(30),
        || {
            let sets = atoll(&hub_dir, &["clusterset", "list", "-o", "wide"])
                .success()
                .rows();
            sets.iter().any(|r| {
                r[0] == "blue" && r[1] == "1" && r.get(4).map(String::as_str) == Some("west")
            }) && sets.iter().any(|r| {
                r[0] == "green" && r[1] == "1" && r.get(4).map(String::as_str) == Some("east")
            })
        },
    )
    .await;
    let green = atoll(&hub_dir, &["get", "clusters", "--clusterset", "green"]).success();
    assert_eq!(green.rows().len(), 2, "{green}");
    assert_eq!(green.rows()[1][0], "east");
    assert_eq!(member_set(&members[2]), "", "north was never in a set");

    // Administrator mistakes get clear errors.
    atoll(&hub_dir, &["clusterset", "add", "purple", "east"])
        .failure()
        .stderr_has("ClusterSet \"purple\" does not exist");
    atoll(&hub_dir, &["clusterset", "remove", "blue", "east"])
        .failure()
        .stderr_has("is in ClusterSet \"green\", not \"blue\"");
    atoll(&hub_dir, &["clusterset", "add", "green", "nowhere"])
        .failure()
        .stderr_has("cluster \"nowhere\" is not in the inventory");
    atoll(&hub_dir, &["cluster", "accept", "nowhere"])
        .failure()
        .stderr_has("has not asked to join");

    // Removing a cluster revokes its credential: its agent is refused and the hub forgets it.
    atoll(&hub_dir, &["cluster", "remove", "north"]).success();
    until(dir.path(), "north is gone", Duration::from_secs(30), || {
        clusters(&hub_dir).iter().all(|r| r.0 != "north")
    })
    .await;
    until(
        dir.path(),
        "north's agent was refused",
        Duration::from_secs(30),
        || {
            agents[2]
                .log()
                .contains("no longer accepts this cluster's credential")
        },
    )
    .await;
}

const APP: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: shop}
spec: {size: SIZE}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
"#;

const CONFIGMAP: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: shop}
data: {color: blue}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_placement_lands_on_every_member_survives_a_killed_hub_and_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let hub_dir = dir.path().join("hub");
    let grpc = free_addr().unwrap().to_string();
    let api_addr = free_addr().unwrap();
    let flags = [
        "--grpc-addr",
        &grpc,
        "--auto-accept",
        "--lease-seconds",
        "1",
        "--missed-leases",
        "3",
    ];
    let mut hub = Process::hub_with(&hub_dir, api_addr, &flags).unwrap();
    let (members, _agents) = start_members(dir.path(), &hub_dir, &grpc);
    until(
        dir.path(),
        "three clusters are healthy",
        Duration::from_secs(30),
        || {
            let rows = clusters(&hub_dir);
            rows.len() == 3 && rows.iter().all(|r| r.1 == "True")
        },
    )
    .await;
    atoll(&hub_dir, &["clusterset", "create", "prod"]).success();
    atoll(
        &hub_dir,
        &["clusterset", "add", "prod", "east", "west", "north"],
    )
    .success();
    until(
        dir.path(),
        "prod has three members",
        Duration::from_secs(30),
        || {
            atoll(&hub_dir, &["clusterset", "list"])
                .success()
                .rows()
                .iter()
                .any(|r| r[0] == "prod" && r[1] == "3")
        },
    )
    .await;

    // Every manifest lands on every member, the custom resource after its CRD.
    let app = dir.path().join("app.yaml");
    std::fs::write(&app, APP.replace("SIZE", "1")).unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, CONFIGMAP).unwrap();
    let (app_path, config_path) = (app.to_str().unwrap(), config.to_str().unwrap());
    atoll(
        &hub_dir,
        &[
            "work",
            "apply",
            "-f",
            app_path,
            "-f",
            config_path,
            "--clusterset",
            "prod",
            "--name",
            "shop",
            "--wait",
            "--timeout",
            "60s",
        ],
    )
    .success()
    .stdout_has("every cluster reports the Work applied and available");
    let on_member = |member: &Process, args: &[&str]| kubectl(&member.kubeconfig(), args);
    for member in &members {
        on_member(member, &["get", "deployment", "web", "-n", "shop"]).success();
        on_member(member, &["get", "configmap", "settings", "-n", "shop"]).success();
        let size = widget_size(member).success();
        assert_eq!(size.stdout.trim(), "1");
    }
    let status = atoll(&hub_dir, &["work", "status", "shop"]).success();
    assert!(
        status.stdout.contains("3 selected, 3 applied, 3 available"),
        "{status}"
    );
    let placements = kubectl(&hub_dir.join("hub.kubeconfig"), &["get", "workplacements"]).success();
    assert_eq!(
        placements.rows()[0],
        [
            "NAME",
            "SELECTED",
            "AVAILABLE",
            "DEGRADED",
            "PROGRESSING",
            "AGE"
        ]
    );
    assert_eq!(
        &placements.rows()[1][..5],
        ["shop", "3", "3", "0", "False"],
        "{placements}"
    );
    let works = kubectl(&hub_dir.join("hub.kubeconfig"), &["get", "works", "-A"]).success();
    assert_eq!(works.rows().len(), 4, "one Work per cluster:\n{works}");
    // The hub's writes are its own in managedFields: the Work it stamped, the status it wrote
    // from the agent's report, the placement's finalizer and status.
    let managers = |args: &[&str]| {
        let jsonpath =
            r#"jsonpath={range .metadata.managedFields[*]}{.manager}/{.subresource}{"\n"}{end}"#;
        let mut all = args.to_vec();
        all.extend(["--show-managed-fields", "-o", jsonpath]);
        let ran = kubectl(&hub_dir.join("hub.kubeconfig"), &all).success();
        let mut found: Vec<String> = ran.stdout.split_whitespace().map(str::to_owned).collect();
        found.sort();
        found
    };
    assert_eq!(
        managers(&["get", "work", "default.shop", "-n", "east"]),
        ["atoll-hub/", "atoll-hub/status"]
    );
    assert_eq!(
        managers(&["get", "workplacement", "shop"]),
        ["atoll-cli/", "atoll-hub/", "atoll-hub/status"]
    );

    // The ConfigMap taken out is deleted everywhere; a change rolls out one cluster at a time.
    std::fs::write(&app, APP.replace("SIZE", "2")).unwrap();
    atoll(
        &hub_dir,
        &[
            "work",
            "apply",
            "-f",
            app_path,
            "--clusterset",
            "prod",
            "--name",
            "shop",
            "--max-concurrency",
            "1",
            "--wait",
            "--timeout",
            "60s",
        ],
    )
    .success();
    for member in &members {
        on_member(member, &["get", "configmap", "settings", "-n", "shop"])
            .failure()
            .stderr_has("NotFound");
        let size = widget_size(member).success();
        assert_eq!(size.stdout.trim(), "2");
    }

    // The hub killed mid-rollout and restarted: the rollout finishes, nothing is lost.
    std::fs::write(&app, APP.replace("SIZE", "3")).unwrap();
    atoll(
        &hub_dir,
        &[
            "work",
            "apply",
            "-f",
            app_path,
            "--clusterset",
            "prod",
            "--name",
            "shop",
            "--max-concurrency",
            "1",
        ],
    )
    .success();
    let local_token = std::fs::read_to_string(hub_dir.join("bootstrap-token")).unwrap();
    hub.kill9().unwrap();
    hub = Process::hub_with(&hub_dir, api_addr, &flags).unwrap();
    // The local bootstrap token is replaced at each start, valid for a day; the old one is gone.
    let replaced = std::fs::read_to_string(hub_dir.join("bootstrap-token")).unwrap();
    assert_ne!(replaced, local_token, "atoll up kept its bootstrap token");
    let tokens = atoll(&hub_dir, &["token", "list"]).success().stdout;
    let old_id = local_token.split('.').next().unwrap();
    let new_id = replaced.split('.').next().unwrap();
    assert!(!tokens.contains(old_id), "{tokens}");
    let row = tokens
        .lines()
        .find(|l| l.starts_with(new_id))
        .unwrap_or_default();
    assert!(
        !row.contains("never"),
        "the local token does not expire: {row}"
    );
    until(
        dir.path(),
        "every member has size 3 after the hub's restart",
        Duration::from_secs(60),
        || members.iter().all(|m| widget_size(m).stdout.trim() == "3"),
    )
    .await;
    until(
        dir.path(),
        "the placement reports every cluster available",
        Duration::from_secs(60),
        || {
            atoll(&hub_dir, &["work", "status", "shop"])
                .stdout
                .contains("3 selected, 3 applied, 3 available")
        },
    )
    .await;

    // A cluster that leaves the set is cleaned up.
    atoll(&hub_dir, &["clusterset", "remove", "prod", "north"]).success();
    until(
        dir.path(),
        "north's resources are gone",
        Duration::from_secs(30),
        || {
            !on_member(&members[2], &["get", "namespace", "shop"])
                .status
                .is_some_and(|s| s.success())
        },
    )
    .await;

    // Bad input: a manifest without a kind, no target.
    let broken = dir.path().join("broken.yaml");
    std::fs::write(&broken, "apiVersion: v1\nmetadata: {name: x}\n").unwrap();
    atoll(
        &hub_dir,
        &[
            "work",
            "apply",
            "-f",
            broken.to_str().unwrap(),
            "--clusterset",
            "prod",
        ],
    )
    .failure()
    .stderr_has("broken.yaml: document 1: the manifest has no kind");
    atoll(&hub_dir, &["work", "apply", "-f", app_path])
        .failure()
        .stderr_has("say which clusters");
    atoll(
        &hub_dir,
        &[
            "work",
            "apply",
            "-f",
            config_path,
            "--clusterset",
            "nowhere",
            "--name",
            "lost",
            "--wait",
            "--timeout",
            "20s",
        ],
    )
    .failure()
    .stderr_has("ClusterSetNotFound");

    // Deleting the placement removes everything it placed.
    atoll(&hub_dir, &["work", "delete", "shop"]).success();
    until(
        dir.path(),
        "every member is clean",
        Duration::from_secs(30),
        || {
            members[..2].iter().all(|m| {
                !on_member(m, &["get", "namespace", "shop"])
                    .status
                    .is_some_and(|s| s.success())
            })
        },
    )
    .await;
    drop(hub);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_killed_mid_apply_neither_misses_nor_repeats_work() {
    let dir = tempfile::tempdir().unwrap();
    let hub_dir = dir.path().join("hub");
    let grpc = free_addr().unwrap().to_string();
    let hub = Process::hub_with(
        &hub_dir,
        free_addr().unwrap(),
        &["--grpc-addr", &grpc, "--auto-accept"],
    )
    .unwrap();
    let member = Process::apiserver_on_a_free_port(&dir.path().join("east")).unwrap();
    let log = dir.path().join("east-agent.log");
    let agent = Agent::start(&hub_dir, &grpc, &member.kubeconfig(), "east", log.clone());
    until_healthy(dir.path(), &hub_dir, "east").await;

    // Many ConfigMaps, so that the agent is stopped part of the way through.
    const COUNT: usize = 400;
    let many: String = (0..COUNT)
        .map(|i| {
            format!(
                "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i:03}, namespace: default}}\ndata: {{i: \"{i}\"}}\n"
            )
        })
        .collect();
    let file = dir.path().join("many.yaml");
    std::fs::write(&file, many).unwrap();
    atoll(
        &hub_dir,
        &[
            "work",
            "apply",
            "-f",
            file.to_str().unwrap(),
            "--clusters",
            "east",
            "--name",
            "many",
        ],
    )
    .success();
    let configmaps: kube::Api<k8s_openapi::api::core::v1::ConfigMap> = kube::Api::namespaced(
        atoll_tests::client_from(&member.kubeconfig())
            .await
            .unwrap(),
        "default",
    );
    let applied = || async {
        configmaps
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|c| {
                c.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with('c'))
            })
            .map(|c| {
                (
                    c.metadata.name.unwrap(),
                    c.metadata.resource_version.unwrap(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert!(
        eventually(Duration::from_secs(30), || async {
            !applied().await.is_empty()
        })
        .await,
        "nothing was applied\n{}",
        agent.log()
    );
    // SIGKILL, as a node failure would.
    drop(agent);
    let before = applied().await;
    assert!(
        before.len() < COUNT,
        "the agent finished before it was killed: no restart mid-apply to test"
    );

    let agent = Agent::start(&hub_dir, &grpc, &member.kubeconfig(), "east", log);
    until(
        dir.path(),
        "the placement is available on east",
        Duration::from_secs(60),
        || {
            atoll(&hub_dir, &["work", "status", "many"])
                .stdout
                .contains("1 selected, 1 applied, 1 available")
        },
    )
    .await;
    let after: std::collections::HashMap<String, String> = applied().await.into_iter().collect();
    assert_eq!(after.len(), COUNT, "objects are missing");
    for (name, version) in &before {
        assert_eq!(
            after.get(name),
            Some(version),
            "{name} was written again after the restart\n{}",
            agent.log()
        );
    }
    drop(agent);
    drop(hub);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_hub_controller_binary_runs_the_hub_on_a_kubernetes_api_and_a_restricted_agent_says_what_it_may_not_apply()
 {
    use base64::Engine as _;
    let dir = tempfile::tempdir().unwrap();
    // The hub cluster: any Kubernetes API; here atoll's own server, as a real cluster stands in.
    let hub_cluster = Process::apiserver_on_a_free_port(&dir.path().join("hub-cluster")).unwrap();
    // The hub runs as manifests/hub runs it: ServiceAccount atoll-hub, with only the
    // ClusterRole there (the API server enforces RBAC, so a permission the hub needs and the
    // manifest lacks fails this test).
    let admin = hub_cluster.kubeconfig();
    let manifests = Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifests/hub");
    kubectl(&admin, &["apply", "-k", manifests.to_str().unwrap()]).success();
    let hub_kubeconfig = dir.path().join("atoll-hub.kubeconfig");
    service_account_kubeconfig(&admin, "atoll-hub", &hub_kubeconfig);
    kubectl(
        &hub_kubeconfig,
        &[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ],
    )
    .success()
    .stdout_is("system:serviceaccount:atoll-system:atoll-hub");
    kubectl(
        &hub_kubeconfig,
        &["auth", "can-i", "create", "clusterroles"],
    )
    .failure()
    .stdout_is("no");
    let grpc = free_addr().unwrap().to_string();
    let log = std::fs::File::create(dir.path().join("hub-controller.log")).unwrap();
    let mut controller = Command::new(atoll_tests::hub_controller_binary().unwrap())
        .env_clear()
        .env("KUBECONFIG", &hub_kubeconfig)
        .args([
            "--grpc-addr",
            &grpc,
            "--grpc-host",
            "hub.example.internal",
            "--auto-accept",
            "--metrics-addr",
            "127.0.0.1:0",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    // What an operator does for a new member: a bootstrap token and the hub's CA certificate.
    let hub_dir = dir.path().join("operator");
    std::fs::create_dir_all(&hub_dir).unwrap();
    std::fs::copy(hub_cluster.kubeconfig(), hub_dir.join("hub.kubeconfig")).unwrap();
    let mut ca = None;
    until(
        dir.path(),
        "the hub has its CA",
        Duration::from_secs(30),
        || {
            let ran = kubectl(
                &hub_cluster.kubeconfig(),
                &[
                    "get",
                    "secret",
                    "atoll-hub-ca",
                    "-n",
                    "atoll-system",
                    "-o",
                    "jsonpath={.data.tls\\.crt}",
                ],
            );
            ca = base64::engine::general_purpose::STANDARD
                .decode(ran.stdout.trim())
                .ok()
                .filter(|c| !c.is_empty());
            ca.is_some()
        },
    )
    .await;
    // Its rights suffice to publish how agents reach it, and `atoll agent-manifests` offers
    // members its first --grpc-host.
    until(
        dir.path(),
        "the hub publishes its endpoint",
        Duration::from_secs(30),
        || {
            kubectl(
                &hub_cluster.kubeconfig(),
                &[
                    "get",
                    "configmap",
                    "atoll-hub-endpoint",
                    "-n",
                    "atoll-system",
                ],
            )
            .status
            .is_some_and(|s| s.success())
        },
    )
    .await;
    let printed = atoll(&hub_dir, &["agent-manifests", "--cluster", "probe"]).success();
    let port = grpc.rsplit(':').next().unwrap();
    assert!(
        printed
            .stdout
            .contains(&format!("ATOLL_HUB: https://hub.example.internal:{port}\n")),
        "{printed}"
    );
    let ca = ca.unwrap();
    let encoded = base64::engine::general_purpose::STANDARD.encode(&ca);
    assert!(
        printed.stdout.contains(&format!("hub-ca.crt: {encoded}\n")),
        "{printed}"
    );
    std::fs::write(hub_dir.join("hub-ca.crt"), ca).unwrap();
    let token = atoll(&hub_dir, &["token", "create", "--ttl", "1h"]).success();
    std::fs::write(hub_dir.join("bootstrap-token"), token.stdout.trim()).unwrap();

    // The member runs its agent as manifests/agent/restricted grants: `admin` in every
    // namespace, and of the cluster-scoped kinds only Namespaces and CRDs besides its own.
    let member = Process::apiserver_on_a_free_port(&dir.path().join("east")).unwrap();
    let restricted = Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifests/agent/restricted");
    kubectl(
        &member.kubeconfig(),
        &["apply", "-k", restricted.to_str().unwrap()],
    )
    .success()
    .stdout_has("clusterrolebinding.rbac.authorization.k8s.io/atoll-work-agent-admin created");
    let agent_kubeconfig = dir.path().join("atoll-work-agent.kubeconfig");
    service_account_kubeconfig(&member.kubeconfig(), "atoll-work-agent", &agent_kubeconfig);
    kubectl(
        &agent_kubeconfig,
        &["auth", "can-i", "create", "clusterroles"],
    )
    .failure()
    .stdout_is("no");
    let _agent = Agent::start(
        &hub_dir,
        &grpc,
        &agent_kubeconfig,
        "east",
        dir.path().join("east-agent.log"),
    );
    until_healthy(dir.path(), &hub_dir, "east").await;
    let file = dir.path().join("config.yaml");
    std::fs::write(&file, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: default}\ndata: {color: blue}\n").unwrap();
    apply_to_east(&hub_dir, &file, "cfg").success();
    let color = kubectl(
        &member.kubeconfig(),
        &[
            "get",
            "configmap",
            "settings",
            "-o",
            "jsonpath={.data.color}",
        ],
    )
    .success();
    assert_eq!(color.stdout.trim(), "blue");

    // What the restricted agent may not write fails alone, saying who may not do what where;
    // the rest of the Work is applied.
    std::fs::write(
        &file,
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata: {name: prices, namespace: shop}\ndata: {tea: '3'}\n---\n\
         apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: quota, namespace: shop}\nspec: {hard: {pods: '10'}}\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: shop-reader}\nrules: []\n",
    )
    .unwrap();
    let refused = apply_to_east(&hub_dir, &file, "shop").failure();
    let agent = "User \"system:serviceaccount:atoll-system:atoll-work-agent\"";
    for expected in [
        format!(
            "{agent} cannot patch resource \"resourcequotas\" in API group \"\" in the namespace \"shop\""
        ),
        format!(
            "{agent} cannot get resource \"clusterroles\" in API group \"rbac.authorization.k8s.io\" at the cluster scope"
        ),
    ] {
        assert!(
            refused.stderr.contains(&expected),
            "{expected}\nnot in: {}",
            refused.stderr
        );
    }
    let work = kubectl(
        &hub_kubeconfig_admin(&hub_dir),
        &[
            "get",
            "work",
            "-n",
            "east",
            "-l",
            "atoll.dev/placement=default.shop",
            "-o",
            "json",
        ],
    )
    .success()
    .json();
    let manifests = &work["items"][0]["status"]["manifestConditions"];
    let applied: Vec<(String, String, String)> = manifests
        .as_array()
        .unwrap_or_else(|| panic!("no manifest statuses: {work:#}\n{}", refused.stderr))
        .iter()
        .map(|m| {
            let c = m["conditions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["type"] == "Applied")
                .unwrap();
            (
                m["identifier"]["kind"].as_str().unwrap().to_owned(),
                c["status"].as_str().unwrap().to_owned(),
                c["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        applied
            .iter()
            .map(|(k, s, r)| format!("{k} {s} {r}"))
            .collect::<Vec<_>>(),
        [
            "Namespace True AppliedManifestComplete",
            "ConfigMap True AppliedManifestComplete",
            "ResourceQuota False Forbidden",
            "ClusterRole False Forbidden",
        ],
        "{work:#}"
    );
    let tea = kubectl(
        &member.kubeconfig(),
        &[
            "get",
            "configmap",
            "prices",
            "-n",
            "shop",
            "-o",
            "jsonpath={.data.tea}",
        ],
    )
    .success();
    assert_eq!(tea.stdout.trim(), "3");

    // SIGTERM stops it cleanly.
    let pid = controller.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let stopped = eventually(Duration::from_secs(10), || {
        std::future::ready(matches!(controller.try_wait(), Ok(Some(_))))
    })
    .await;
    let _ = controller.kill();
    assert!(stopped, "hub-controller did not stop on SIGTERM");
    assert!(
        controller.wait().unwrap().success(),
        "hub-controller exited with an error"
    );
}

/// Leader election settings of the replicas under test: shorter than the default 15s, 10s and
/// 2s, so that a failover takes seconds.
const LEADER_LEASE_SECONDS: u64 = 6;
const LEADER_RENEW_SECONDS: u64 = 4;
const LEADER_RETRY_SECONDS: u64 = 1;

/// One hub replica, killed when dropped: a `hub-controller` process, as one replica of
/// `manifests/hub` runs, or an `atoll up` on an etcd prefix shared with the others.
struct HubReplica {
    child: Child,
    name: String,
    runs: Runs,
    grpc: String,
    metrics: std::net::SocketAddr,
    log: PathBuf,
}

/// What a [`HubReplica`] runs.
enum Runs {
    /// `hub-controller` on the hub cluster of this kubeconfig.
    HubController { kubeconfig: PathBuf },
    /// `atoll up` with its own data directory and API address, its API server on etcd.
    Up {
        data_dir: PathBuf,
        api: std::net::SocketAddr,
        etcd_endpoints: String,
        etcd_prefix: String,
    },
}

impl HubReplica {
    fn start(dir: &Path, name: &str, kubeconfig: &Path) -> HubReplica {
        let runs = Runs::HubController {
            kubeconfig: kubeconfig.to_owned(),
        };
        HubReplica::start_running(dir, name, runs)
    }

    /// An `atoll up` replica serving the hub's API from `etcd_prefix`.
    fn up(dir: &Path, name: &str, etcd_endpoints: &str, etcd_prefix: &str) -> HubReplica {
        let runs = Runs::Up {
            data_dir: dir.join(name),
            api: free_addr().unwrap(),
            etcd_endpoints: etcd_endpoints.to_owned(),
            etcd_prefix: etcd_prefix.to_owned(),
        };
        HubReplica::start_running(dir, name, runs)
    }

    fn start_running(dir: &Path, name: &str, runs: Runs) -> HubReplica {
        let mut replica = HubReplica {
            child: Command::new("true").spawn().unwrap(),
            name: name.to_owned(),
            runs,
            grpc: free_addr().unwrap().to_string(),
            metrics: free_addr().unwrap(),
            log: dir.join(format!("{name}.log")),
        };
        let _ = replica.child.wait();
        replica.spawn();
        replica
    }

    /// The admin kubeconfig of an `atoll up` replica.
    fn hub_kubeconfig(&self) -> PathBuf {
        match &self.runs {
            Runs::Up { data_dir, .. } => data_dir.join("hub.kubeconfig"),
            Runs::HubController { kubeconfig } => kubeconfig.clone(),
        }
    }

    /// Starts the process (again) on the same addresses.
    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let (lease, renew, retry) = (
            format!("{LEADER_LEASE_SECONDS}s"),
            format!("{LEADER_RENEW_SECONDS}s"),
            format!("{LEADER_RETRY_SECONDS}s"),
        );
        let mut command = match &self.runs {
            Runs::HubController { kubeconfig } => {
                let mut command = Command::new(atoll_tests::hub_controller_binary().unwrap());
                command.env_clear().env("KUBECONFIG", kubeconfig);
                command
            }
            Runs::Up {
                data_dir,
                api,
                etcd_endpoints,
                etcd_prefix,
            } => {
                let mut command = Command::new(atoll_binary().unwrap());
                command
                    .env_clear()
                    .arg("up")
                    .arg("--data-dir")
                    .arg(data_dir)
                    .args(["--api-addr", &api.to_string(), "--hosted-clusters", "0"])
                    .args(["--storage", "etcd", "--etcd-endpoints", etcd_endpoints])
                    .args(["--etcd-prefix", etcd_prefix]);
                command
            }
        };
        self.child = command
            .env("HOSTNAME", &self.name)
            .env("ATOLL_LEADER_LEASE_DURATION", &lease)
            .args(["--grpc-addr", &self.grpc, "--auto-accept"])
            .args(["--lease-seconds", "1", "--missed-leases", "3"])
            .args(["--metrics-addr", &self.metrics.to_string()])
            .arg(format!("--leader-renew-deadline={renew}"))
            .args(["--leader-retry-period", &retry])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
    }

    /// `/readyz`: `Some(true)` when 200, `Some(false)` when 503, `None` when nothing answers.
    fn ready(&self) -> Option<bool> {
        atoll_tests::http_get(self.metrics, "/readyz").map(|(code, _)| code == 200)
    }

    fn readyz(&self) -> String {
        atoll_tests::http_get(self.metrics, "/readyz")
            .map(|(_, body)| body)
            .unwrap_or_default()
    }

    /// The value of the unlabelled series `name` in `/metrics`.
    fn metric(&self, name: &str) -> Option<String> {
        let (_, text) = atoll_tests::http_get(self.metrics, "/metrics")?;
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")).map(str::to_owned))
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn sigterm(&mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        // The hub gives its tasks 30 s to stop, then releases the Lease (at most the renew
        // deadline): a replica that takes longer than that is stuck.
        let asked = std::time::Instant::now();
        for _ in 0..450 {
            if let Ok(Some(status)) = self.child.try_wait() {
                println!(
                    "{} stopped {:.1}s after SIGTERM",
                    self.name,
                    asked.elapsed().as_secs_f64()
                );
                for line in self.log().lines().filter(|l| l.contains("did not stop")) {
                    println!("{line}");
                }
                return status;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        panic!(
            "{} did not stop within 45s of SIGTERM:\n{}",
            self.name,
            self.log()
        );
    }
}

impl Drop for HubReplica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until one of two replicas leads (ready) and the other waits (not ready, saying it does
/// not lead); answers (leader, follower).
async fn one_leads(d: &Path, replicas: &[HubReplica; 2]) -> (usize, usize) {
    until(
        d,
        "one replica leads and the other waits",
        Duration::from_secs(90),
        || {
            let states = [replicas[0].ready(), replicas[1].ready()];
            states.contains(&Some(true)) && states.contains(&Some(false))
        },
    )
    .await;
    let leader = usize::from(replicas[1].ready() == Some(true));
    let follower = 1 - leader;
    println!(
        "{} leads, {} waits",
        replicas[leader].name, replicas[follower].name
    );
    let waiting = replicas[follower].readyz();
    assert!(
        waiting.contains("this replica is not leading (Lease atoll-system/atoll-hub)"),
        "{waiting}"
    );
    (leader, follower)
}

/// The Lease hub replicas elect their leader with: (holder, transitions).
fn leader_lease(admin: &Path) -> (String, i64) {
    let lease = kubectl(
        admin,
        &[
            "get",
            "lease",
            "atoll-hub",
            "-n",
            "atoll-system",
            "-o",
            "json",
        ],
    )
    .success()
    .json();
    (
        lease["spec"]["holderIdentity"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        lease["spec"]["leaseTransitions"].as_i64().unwrap_or(0),
    )
}

/// A Work `failover` for each of east, west and north (a ConfigMap naming its cluster), in a
/// file for `kubectl apply -f`.
fn failover_works(d: &Path) -> PathBuf {
    let works: String = ["east", "west", "north"]
        .iter()
        .map(|cluster| {
            format!(
                "---\napiVersion: multicluster.x-k8s.io/v1alpha1\nkind: Work\n\
                 metadata: {{name: failover, namespace: {cluster}}}\n\
                 spec:\n  workload:\n    manifests:\n    - apiVersion: v1\n      kind: ConfigMap\n      \
                 metadata: {{name: failover, namespace: default}}\n      data: {{cluster: {cluster}}}\n"
            )
        })
        .collect();
    let file = d.join("failover-works.yaml");
    std::fs::write(&file, works).unwrap();
    file
}

/// Waits until the `failover` Works landed in east, west and north (`members`, in that order)
/// and placement `shop` reports every cluster available.
async fn until_failover_work_landed(d: &Path, hub_dir: &Path, members: &[Process]) {
    until(
        d,
        "the failover Work is in every member",
        Duration::from_secs(60),
        || {
            members
                .iter()
                .zip(["east", "west", "north"])
                .all(|(m, cluster)| {
                    kubectl(
                        &m.kubeconfig(),
                        &[
                            "get",
                            "configmap",
                            "failover",
                            "-n",
                            "default",
                            "-o",
                            "jsonpath={.data.cluster}",
                        ],
                    )
                    .stdout
                    .trim()
                        == cluster
                })
        },
    )
    .await;
    until(
        d,
        "the placement reports every cluster available",
        Duration::from_secs(60),
        || {
            atoll(hub_dir, &["work", "status", "shop"])
                .stdout
                .contains("3 selected, 3 applied, 3 available")
        },
    )
    .await;
}

/// `metadata.resourceVersion` of ConfigMap `shop/settings` in each member.
fn settings_versions(members: &[Process]) -> Vec<String> {
    members
        .iter()
        .map(|m| {
            kubectl(
                &m.kubeconfig(),
                &[
                    "get",
                    "configmap",
                    "settings",
                    "-n",
                    "shop",
                    "-o",
                    "jsonpath={.metadata.resourceVersion}",
                ],
            )
            .success()
            .stdout
            .trim()
            .to_owned()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn two_hub_controllers_elect_one_leader_and_the_other_takes_over_mid_rollout_when_it_is_killed()
 {
    use base64::Engine as _;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // One hub cluster (atoll's API server standing in for a real one), with manifests/hub's
    // RBAC enforced: the replicas run as ServiceAccount atoll-hub, Lease rights included.
    let hub_cluster = Process::apiserver_on_a_free_port(&d.join("hub-cluster")).unwrap();
    let admin = hub_cluster.kubeconfig();
    let manifests = Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifests/hub");
    kubectl(&admin, &["apply", "-k", manifests.to_str().unwrap()]).success();
    let hub_kubeconfig = d.join("atoll-hub.kubeconfig");
    service_account_kubeconfig(&admin, "atoll-hub", &hub_kubeconfig);
    let mut replicas = [
        HubReplica::start(d, "hub-a", &hub_kubeconfig),
        HubReplica::start(d, "hub-b", &hub_kubeconfig),
    ];

    // One leads: ready, atoll_hub_leader 1, named in the Lease. The other waits: not ready,
    // saying why, atoll_hub_leader 0.
    let (leader, follower) = one_leads(d, &replicas).await;
    assert_eq!(
        replicas[leader].metric("atoll_hub_leader").as_deref(),
        Some("1")
    );
    assert_eq!(
        replicas[follower].metric("atoll_hub_leader").as_deref(),
        Some("0")
    );
    let (holder, transitions_before) = leader_lease(&admin);
    assert!(
        holder.starts_with(&format!("{}_", replicas[leader].name)),
        "the Lease names {holder:?}"
    );

    // What an operator does for new members: the hub's CA (one Secret, shared by both
    // replicas) and a bootstrap token.
    let hub_dir = d.join("operator");
    std::fs::create_dir_all(&hub_dir).unwrap();
    std::fs::copy(&admin, hub_dir.join("hub.kubeconfig")).unwrap();
    let ca = kubectl(
        &admin,
        &[
            "get",
            "secret",
            "atoll-hub-ca",
            "-n",
            "atoll-system",
            "-o",
            "jsonpath={.data.tls\\.crt}",
        ],
    )
    .success();
    let ca = base64::engine::general_purpose::STANDARD
        .decode(ca.stdout.trim())
        .unwrap();
    let ca = String::from_utf8(ca).unwrap();
    std::fs::write(hub_dir.join("hub-ca.crt"), &ca).unwrap();
    let token = atoll(&hub_dir, &["token", "create", "--ttl", "1h"]).success();
    let token = token.stdout.trim().to_owned();
    std::fs::write(hub_dir.join("bootstrap-token"), &token).unwrap();

    // The replica that waits serves TLS with the same CA and refuses agents: UNAVAILABLE,
    // saying it does not lead.
    let url = format!("https://{}", replicas[follower].grpc);
    let channel = atoll_agent::hub::channel(&url, &ca).unwrap();
    let mut probe = atoll_agent::hub::client(channel, &token).unwrap();
    let join = atoll_proto::v1::JoinRequest {
        cluster_name: "probe".to_owned(),
        ..Default::default()
    };
    let refused = tokio::time::timeout(Duration::from_secs(10), probe.join(join))
        .await
        .expect("the waiting replica answers")
        .expect_err("the waiting replica refuses a join");
    assert_eq!(refused.code(), tonic::Code::Unavailable, "{refused:?}");
    assert!(refused.message().contains("not leading"), "{refused:?}");

    // Three members whose agents are given both replicas' addresses, the same order for all.
    let hubs = format!("https://{},https://{}", replicas[0].grpc, replicas[1].grpc);
    let (members, agents) = start_members_at(d, &hub_dir, &hubs);
    until(
        d,
        "three clusters are healthy",
        Duration::from_secs(60),
        || {
            let rows = clusters(&hub_dir);
            rows.len() == 3 && rows.iter().all(|r| r.1 == "True")
        },
    )
    .await;
    atoll(&hub_dir, &["clusterset", "create", "prod"]).success();
    atoll(
        &hub_dir,
        &["clusterset", "add", "prod", "east", "west", "north"],
    )
    .success();
    until(d, "prod has three members", Duration::from_secs(30), || {
        atoll(&hub_dir, &["clusterset", "list"])
            .success()
            .rows()
            .iter()
            .any(|r| r[0] == "prod" && r[1] == "3")
    })
    .await;
    let app = d.join("app.yaml");
    std::fs::write(&app, APP.replace("SIZE", "1")).unwrap();
    let config = d.join("config.yaml");
    std::fs::write(&config, CONFIGMAP).unwrap();
    let (app_path, config_path) = (app.to_str().unwrap(), config.to_str().unwrap());
    let place = |extra: &[&str]| {
        let mut args = vec![
            "work",
            "apply",
            "-f",
            app_path,
            "-f",
            config_path,
            "--clusterset",
            "prod",
            "--name",
            "shop",
        ];
        args.extend_from_slice(extra);
        atoll(&hub_dir, &args).success()
    };
    place(&["--wait", "--timeout", "60s"])
        .stdout_has("every cluster reports the Work applied and available");
    let settings_before = settings_versions(&members);

    // A change rolling out one cluster at a time; the leader SIGKILLed once the first cluster
    // has it.
    std::fs::write(&app, APP.replace("SIZE", "2")).unwrap();
    place(&["--max-concurrency", "1"]);
    until(
        d,
        "the rollout reaches a first cluster",
        Duration::from_secs(60),
        || members.iter().any(|m| widget_size(m).stdout.trim() == "2"),
    )
    .await;
    let reached: Vec<bool> = members
        .iter()
        .map(|m| widget_size(m).stdout.trim() == "2")
        .collect();
    replicas[leader].child.kill().unwrap();
    replicas[leader].child.wait().unwrap();
    let killed = std::time::Instant::now();
    println!(
        "killed the leader {} mid-rollout (clusters at size 2: {reached:?})",
        replicas[leader].name
    );

    // A Work applied to every member while nobody leads.
    let works_file = failover_works(d);
    kubectl(&admin, &["apply", "-f", works_file.to_str().unwrap()]).success();
    assert_eq!(
        replicas[follower].ready(),
        Some(false),
        "the Work was applied after the other replica already led: no failover window tested"
    );

    // The other replica takes the Lease once it runs out and turns ready.
    let lease = Duration::from_secs(LEADER_LEASE_SECONDS);
    let bound = lease + Duration::from_secs(3 * LEADER_RETRY_SECONDS + 10);
    until(d, "the other replica leads", bound, || {
        replicas[follower].ready() == Some(true)
    })
    .await;
    let took = killed.elapsed();
    let (holder, transitions) = leader_lease(&admin);
    println!(
        "failover: {} leads {:.1}s after the leader was killed (lease {}s, retry {}s)",
        replicas[follower].name,
        took.as_secs_f64(),
        LEADER_LEASE_SECONDS,
        LEADER_RETRY_SECONDS
    );
    assert!(
        holder.starts_with(&format!("{}_", replicas[follower].name)),
        "the Lease names {holder:?}"
    );
    assert_eq!(transitions, transitions_before + 1);
    // Within the lease, give or take a jittered retry and the new leader's start.
    assert!(
        took <= lease + Duration::from_secs(3 * LEADER_RETRY_SECONDS + 5),
        "the failover took {took:?}"
    );
    assert_eq!(
        replicas[follower].metric("atoll_hub_leader").as_deref(),
        Some("1")
    );
    assert_eq!(
        replicas[follower]
            .metric("atoll_hub_leader_transitions_total")
            .as_deref(),
        Some("1")
    );

    // The killed replica, restarted, waits: not ready.
    replicas[leader].spawn();
    until(
        d,
        "the restarted replica waits, not ready",
        Duration::from_secs(30),
        || {
            replicas[leader].ready() == Some(false)
                && replicas[leader].metric("atoll_hub_leader").as_deref() == Some("0")
        },
    )
    .await;
    assert_eq!(replicas[follower].ready(), Some(true));

    // The rollout finishes, the Work applied during the failover lands everywhere.
    until(
        d,
        "every member has size 2",
        Duration::from_secs(90),
        || members.iter().all(|m| widget_size(m).stdout.trim() == "2"),
    )
    .await;
    until_failover_work_landed(d, &hub_dir, &members).await;
    // Each failover Work reports Applied for its one generation, recorded once in the member's
    // AppliedWork; each member has one AppliedWork per Work on the hub.
    for (member, cluster) in members.iter().zip(["east", "west", "north"]) {
        let applied_condition = |work: &serde_json::Value| {
            work["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| c["type"] == "Applied")
                .cloned()
        };
        let mut work = serde_json::Value::Null;
        until(
            d,
            &format!("{cluster}'s failover Work reports Applied"),
            Duration::from_secs(30),
            || {
                work = kubectl(
                    &admin,
                    &["get", "work", "failover", "-n", cluster, "-o", "json"],
                )
                .success()
                .json();
                applied_condition(&work).is_some_and(|c| c["status"] == "True")
            },
        )
        .await;
        assert_eq!(work["metadata"]["generation"], 1, "{work:#}");
        assert_eq!(
            applied_condition(&work).unwrap()["observedGeneration"],
            1,
            "{work:#}"
        );
        let on_hub = kubectl(&admin, &["get", "works", "-n", cluster, "-o", "json"])
            .success()
            .json();
        let on_hub = on_hub["items"].as_array().unwrap().len();
        let applied = kubectl(&member.kubeconfig(), &["get", "appliedworks", "-o", "json"])
            .success()
            .json();
        let applied = applied["items"].as_array().unwrap().clone();
        assert_eq!(applied.len(), on_hub, "{cluster}: {applied:#?}");
        let failover: Vec<_> = applied
            .iter()
            .filter(|a| a["spec"]["workName"] == "failover")
            .collect();
        assert_eq!(failover.len(), 1, "{cluster}: {applied:#?}");
        assert_eq!(
            failover[0]["metadata"]["annotations"]["atoll.dev/work-generation"], "1",
            "{cluster}: {failover:#?}"
        );
    }

    // Nothing was applied twice: what did not change was not written again. No agent joined
    // again: each kept its credential, and the new leader knew it from the API server.
    assert_eq!(settings_versions(&members), settings_before);
    for agent in &agents {
        let log = agent.log();
        assert_eq!(log.matches("joined the hub").count(), 1, "{log}");
        assert!(!log.contains("joining again"), "{log}");
    }
    let new_leader = replicas[follower].log();
    assert!(
        !new_leader.contains("asked to join"),
        "the new leader saw joins:\n{new_leader}"
    );

    // A leader stopped with SIGTERM releases the Lease: the waiting replica takes over at its
    // next retry, well within the lease.
    let stopping = std::time::Instant::now();
    let status = replicas[follower].sigterm();
    assert!(status.success(), "{}", replicas[follower].log());
    until(
        d,
        "the restarted replica leads after a graceful stop",
        lease,
        || replicas[leader].ready() == Some(true),
    )
    .await;
    println!(
        "handover after SIGTERM: {} leads {:.1}s after the leader was told to stop",
        replicas[leader].name,
        stopping.elapsed().as_secs_f64()
    );
    assert!(
        replicas[follower]
            .log()
            .contains("released the leader Lease")
    );
    let status = replicas[leader].sigterm();
    assert!(status.success(), "{}", replicas[leader].log());
}

/// The embedded hub outgrowing one machine: two `atoll up` replicas, each with its own data
/// directory, share one 3-member etcd. Both serve the hub's API with one CA and one admin token;
/// one leads (reconciles, serves agents), the other waits, not ready. One etcd member killed:
/// both go on and a rollout finishes. Then the leading replica SIGKILLed: the other leads within
/// the lease, the agents (given both addresses) reconnect with their credentials, a Work applied
/// through the surviving replica's API during the failover lands everywhere, nothing is written
/// twice and no agent joins again; a hosted cluster on the same etcd is served again by the new
/// leader, with its data, through the kubeconfig taken before.
#[tokio::test(flavor = "multi_thread")]
async fn two_atoll_up_replicas_on_one_etcd_lead_in_turn_through_an_etcd_member_and_a_leader_loss() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut etcd = atoll_tests::etcd_cluster::EtcdCluster::start(&d.join("etcd"), 3).unwrap();
    let endpoints = etcd.endpoints();
    let mut replicas = [
        HubReplica::up(d, "up-a", &endpoints, "/atoll/hub"),
        HubReplica::up(d, "up-b", &endpoints, "/atoll/hub"),
    ];
    let (leader, follower) = one_leads(d, &replicas).await;
    assert_eq!(
        replicas[follower].metric("atoll_hub_leader").as_deref(),
        Some("0")
    );

    // One hub API through either replica: the same CA, admin token and hub CA for agents; a
    // write through one is read through the other.
    let kubeconfigs = [replicas[0].hub_kubeconfig(), replicas[1].hub_kubeconfig()];
    let credentials = |kubeconfig: &Path| {
        let text = std::fs::read_to_string(kubeconfig).unwrap();
        let yaml: serde_json::Value = serde_yaml_ng::from_str(&text).unwrap();
        (
            yaml["clusters"][0]["cluster"]["certificate-authority-data"].clone(),
            yaml["users"][0]["user"]["token"].clone(),
        )
    };
    assert_eq!(credentials(&kubeconfigs[0]), credentials(&kubeconfigs[1]));
    let hub_ca = |i: usize| std::fs::read_to_string(kubeconfigs[i].with_file_name("hub-ca.crt"));
    assert_eq!(hub_ca(0).unwrap(), hub_ca(1).unwrap());
    kubectl(
        &kubeconfigs[leader],
        &["create", "configmap", "through-leader", "-n", "default"],
    )
    .success();
    kubectl(
        &kubeconfigs[follower],
        &[
            "get",
            "configmap",
            "through-leader",
            "-n",
            "default",
            "-o",
            "name",
        ],
    )
    .success()
    .stdout_is("configmap/through-leader\n");

    // The operator works through the replica that will survive; agents get both addresses.
    let hub_dir = kubeconfigs[follower].parent().unwrap().to_owned();
    let hubs = format!("https://{},https://{}", replicas[0].grpc, replicas[1].grpc);
    let (members, agents) = start_members_at(d, &hub_dir, &hubs);
    until(
        d,
        "three clusters are healthy",
        Duration::from_secs(60),
        || {
            let rows = clusters(&hub_dir);
            rows.len() == 3 && rows.iter().all(|r| r.1 == "True")
        },
    )
    .await;
    atoll(&hub_dir, &["clusterset", "create", "prod"]).success();
    atoll(
        &hub_dir,
        &["clusterset", "add", "prod", "east", "west", "north"],
    )
    .success();
    let app = d.join("app.yaml");
    std::fs::write(&app, APP.replace("SIZE", "1")).unwrap();
    let config = d.join("config.yaml");
    std::fs::write(&config, CONFIGMAP).unwrap();
    let (app_path, config_path) = (app.to_str().unwrap(), config.to_str().unwrap());
    let place = || {
        atoll(
            &hub_dir,
            &[
                "work",
                "apply",
                "-f",
                app_path,
                "-f",
                config_path,
                "--clusterset",
                "prod",
                "--name",
                "shop",
            ],
        )
    };
    place().success();
    until(
        d,
        "every member has size 1",
        Duration::from_secs(60),
        || members.iter().all(|m| widget_size(m).stdout.trim() == "1"),
    )
    .await;
    let settings_before = settings_versions(&members);

    // A hosted cluster on the same etcd, run by the leader; an object in it.
    atoll(
        &hub_dir,
        &["hosted", "create", "web", "--storage", "etcd", "--wait"],
    )
    .success();
    let web = d.join("web.kubeconfig");
    atoll(
        &hub_dir,
        &["kubeconfig", "web", "-o", web.to_str().unwrap()],
    )
    .success();
    kubectl(&web, &["create", "configmap", "kept", "--from-literal=k=v"]).success();

    // One etcd member down: a change still rolls out everywhere.
    etcd.kill(0);
    std::fs::write(&app, APP.replace("SIZE", "2")).unwrap();
    until(
        d,
        "a change is accepted with an etcd member down",
        Duration::from_secs(30),
        || place().status.is_some_and(|s| s.success()),
    )
    .await;
    until(
        d,
        "every member has size 2 with an etcd member down",
        Duration::from_secs(60),
        || members.iter().all(|m| widget_size(m).stdout.trim() == "2"),
    )
    .await;

    // The leading atoll up SIGKILLed; a Work applied through the other while nobody leads.
    replicas[leader].child.kill().unwrap();
    replicas[leader].child.wait().unwrap();
    let killed = std::time::Instant::now();
    let works_file = failover_works(d);
    kubectl(
        &kubeconfigs[follower],
        &["apply", "-f", works_file.to_str().unwrap()],
    )
    .success();
    assert_eq!(
        replicas[follower].ready(),
        Some(false),
        "the Work was applied after the other replica already led: no failover window tested"
    );
    let lease = Duration::from_secs(LEADER_LEASE_SECONDS);
    until(
        d,
        "the other atoll up leads",
        lease + Duration::from_secs(3 * LEADER_RETRY_SECONDS + 10),
        || replicas[follower].ready() == Some(true),
    )
    .await;
    println!(
        "failover: {} leads {:.1}s after the leader was killed (lease {}s, retry {}s)",
        replicas[follower].name,
        killed.elapsed().as_secs_f64(),
        LEADER_LEASE_SECONDS,
        LEADER_RETRY_SECONDS
    );
    let (holder, _) = leader_lease(&kubeconfigs[follower]);
    assert!(
        holder.starts_with(&format!("{}_", replicas[follower].name)),
        "the Lease names {holder:?}"
    );
    until_failover_work_landed(d, &hub_dir, &members).await;
    assert_eq!(settings_versions(&members), settings_before);
    for agent in &agents {
        let log = agent.log();
        assert_eq!(log.matches("joined the hub").count(), 1, "{log}");
        assert!(!log.contains("joining again"), "{log}");
    }
    // The new leader serves the hosted cluster from etcd: its data, and the kubeconfig taken
    // before the failover (same address, CA and token), and its agent joined again as itself.
    until(
        d,
        "the hosted cluster serves its data through its old kubeconfig",
        Duration::from_secs(60),
        || {
            kubectl(
                &web,
                &["get", "configmap", "kept", "-o", "jsonpath={.data.k}"],
            )
            .stdout
            .trim()
                == "v"
        },
    )
    .await;
    until(d, "web is healthy again", Duration::from_secs(60), || {
        clusters(&hub_dir)
            .iter()
            .any(|r| r.0 == "web" && r.1 == "True")
    })
    .await;

    // The killed replica, restarted on its data directory, serves the API and waits to lead.
    replicas[leader].spawn();
    until(
        d,
        "the restarted atoll up waits, not ready",
        Duration::from_secs(60),
        || {
            replicas[leader]
                .readyz()
                .contains("this replica is not leading")
                && replicas[leader].metric("atoll_hub_leader").as_deref() == Some("0")
        },
    )
    .await;
    kubectl(
        &kubeconfigs[leader],
        &["get", "work", "failover", "-n", "east", "-o", "name"],
    )
    .success();
    for i in [leader, follower] {
        let status = replicas[i].sigterm();
        assert!(status.success(), "{}", replicas[i].log());
    }
}

#[test]
fn hub_controller_refuses_leader_election_settings_that_do_not_parse_or_do_not_fit() {
    let hub = || {
        Tool::new(atoll_tests::hub_controller_binary().unwrap())
            .env("RUST_BACKTRACE", "0")
            .env("KUBECONFIG", "/nonexistent")
    };
    // Durations that do not parse are refused by the flag parser, flags and variables alike.
    for (args, env, message) in [
        (
            &["--leader-lease-duration", "15"][..],
            None,
            "invalid value '15' for '--leader-lease-duration <DURATION>': a duration is whole hours",
        ),
        (
            &["--leader-renew-deadline=ten"][..],
            None,
            "invalid value 'ten' for '--leader-renew-deadline <DURATION>'",
        ),
        (
            &[][..],
            Some(("ATOLL_LEADER_RETRY_PERIOD", "2")),
            "invalid value '2' for '--leader-retry-period <DURATION>'",
        ),
        (
            &["--leader-elect=maybe"][..],
            None,
            "invalid value 'maybe' for '--leader-elect[=<BOOL>]'",
        ),
    ] {
        let mut tool = hub();
        if let Some((name, value)) = env {
            tool = tool.env(name, value);
        }
        let ran = tool.run(args).failure();
        assert_eq!(ran.status.and_then(|s| s.code()), Some(2), "{ran}");
        assert!(ran.stderr.contains(message), "{message}\nnot in {ran}");
    }
    // Settings that parse but do not fit stop it before it looks for its cluster.
    for (args, message) in [
        (
            &["--leader-lease-duration=10s", "--leader-renew-deadline=10s"][..],
            "--leader-renew-deadline (10s) must be shorter than --leader-lease-duration (10s)",
        ),
        (
            &["--leader-retry-period=0s"][..],
            "--leader-retry-period must be more than zero",
        ),
        (
            &["--leader-retry-period=10s"][..],
            "--leader-retry-period (10s) must be shorter than --leader-renew-deadline (10s)",
        ),
    ] {
        let ran = hub().run(args).failure();
        assert_eq!(ran.status.and_then(|s| s.code()), Some(1), "{ran}");
        assert!(ran.stderr.contains(message), "{message}\nnot in {ran}");
        assert!(!ran.stderr.contains("cannot find the hub cluster"), "{ran}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_hub_and_agent_manifests_apply_with_kubectl() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = Process::apiserver_on_a_free_port(&dir.path().join("cluster")).unwrap();
    let manifests = Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifests");
    for (part, deployment) in [("hub", "atoll-hub"), ("agent", "atoll-work-agent")] {
        let path = manifests.join(part);
        kubectl(
            &cluster.kubeconfig(),
            &["apply", "-k", path.to_str().unwrap()],
        )
        .success()
        .stdout_has(&format!("deployment.apps/{deployment} created"));
        let command = kubectl(
            &cluster.kubeconfig(),
            &[
                "get",
                "deployment",
                deployment,
                "-n",
                "atoll-system",
                "-o",
                "jsonpath={.spec.template.spec.containers[0].command[0]}",
            ],
        )
        .success();
        // The container runs the binary of that name, which this workspace builds.
        let binary = command.stdout.trim();
        assert!(
            [("hub", "hub-controller"), ("agent", "work-agent")].contains(&(part, binary)),
            "{part}: {binary}"
        );
    }
    // The hub's command line parses as hub-controller's flags.
    let args = kubectl(
        &cluster.kubeconfig(),
        &[
            "get",
            "deployment",
            "atoll-hub",
            "-n",
            "atoll-system",
            "-o",
            "jsonpath={.spec.template.spec.containers[0].args}",
        ],
    )
    .success();
    let args: Vec<String> = serde_json::from_str(args.stdout.trim()).unwrap();
    let mut all = args.clone();
    all.push("--help".into());
    Tool::new(atoll_tests::hub_controller_binary().unwrap())
        .run(&all.iter().map(String::as_str).collect::<Vec<_>>())
        .success();
    let mut bad = args;
    bad.push("--no-such-flag".into());
    Tool::new(atoll_tests::hub_controller_binary().unwrap())
        .run(&bad.iter().map(String::as_str).collect::<Vec<_>>())
        .failure();
}

/// A stop that cannot finish (the agent waits on a member API server that accepts connections
/// and never answers) ends at the second SIGTERM, at once, with exit code 130.
#[tokio::test(flavor = "multi_thread")]
async fn a_second_signal_stops_a_stuck_agent_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let kubeconfig = dir.path().join("silent.kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: silent\n\
             clusters: [{{name: silent, cluster: {{server: 'https://{}', insecure-skip-tls-verify: true}}}}]\n\
             users: [{{name: silent, user: {{token: not-checked}}}}]\n\
             contexts: [{{name: silent, context: {{cluster: silent, user: silent}}}}]\n",
            silent.local_addr().unwrap()
        ),
    )
    .unwrap();
    std::fs::write(dir.path().join("hub-ca.crt"), "").unwrap();
    std::fs::write(dir.path().join("bootstrap-token"), "unused").unwrap();
    let mut agent = Agent::start(
        dir.path(),
        "127.0.0.1:9",
        &kubeconfig,
        "stuck",
        dir.path().join("agent.log"),
    );
    // The agent is talking to the silent server: past its start, its signal handler installed.
    let (held, _) = silent.accept().unwrap();
    let pid = agent.child.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        agent.child.try_wait().unwrap().is_none(),
        "the agent stopped although its member never answered: {}",
        agent.log()
    );
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let exited = eventually(Duration::from_secs(5), || {
        std::future::ready(matches!(agent.child.try_wait(), Ok(Some(_))))
    })
    .await;
    assert!(exited, "a second SIGTERM did not stop the agent");
    assert_eq!(
        agent.child.wait().unwrap().code(),
        Some(130),
        "{}",
        agent.log()
    );
    assert!(
        agent.log().contains("second signal: stopping at once"),
        "{}",
        agent.log()
    );
    drop(held);
}

/// A ConfigMap and a Deployment whose image the overrides rewrite per region.
const REGIONAL: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: shop}
data: {region: none, mode: plain}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      initContainers: [{name: init, image: "registry.example.com/team/init:1.0"}]
      containers: [{name: web, image: "registry.example.com/team/web:1.0"}]
"#;

/// Rules 0 and 1 for every cluster, rule 2 for west only.
const REGIONAL_OVERRIDES: &str = r#"
- manifests: [{kind: ConfigMap, name: settings}]
  jsonPatch:
  - {op: replace, path: /data/region, value: "${PROPERTY:region}"}
  - {op: add, path: /data/cluster, value: "${CLUSTER_NAME}"}
- manifests: [{group: apps, kind: Deployment}]
  image: {registry: "${PROPERTY:region}.registry.example.com:5000"}
- clusters: {names: [west]}
  image: {tag: "2.0"}
"#;

/// Fails where the cluster's region is not the one the ConfigMap holds.
const EU_ONLY_OVERRIDES: &str = r#"
- manifests: [{kind: ConfigMap}]
  jsonPatch:
  - {op: test, path: /data/region, value: "${PROPERTY:region}"}
  - {op: replace, path: /data/mode, value: "tuned for ${PROPERTY:region}"}
- manifests: [{kind: Secret}]
  jsonPatch: [{op: remove, path: /data}]
"#;

#[tokio::test(flavor = "multi_thread")]
async fn overrides_render_each_cluster_from_its_properties_and_a_failing_one_fails_alone() {
    let dir = tempfile::tempdir().unwrap();
    let Fleet {
        _hub,
        hub_dir,
        grpc: _,
        members,
        agents: _agents,
    } = Fleet::start(dir.path());
    for (member, region) in members.iter().zip(["eu", "us", "eu"]) {
        set_property(dir.path(), member, "region", region);
    }
    let hub_kubeconfig = hub_kubeconfig_admin(&hub_dir);
    until(
        dir.path(),
        "three clusters report their region",
        Duration::from_secs(30),
        || {
            let ran = kubectl(
                &hub_kubeconfig,
                &[
                    "get",
                    "clusterprofiles",
                    "-n",
                    "fleet-system",
                    "-o",
                    "jsonpath={range .items[*]}{.metadata.name}={.status.properties[?(@.name==\"region\")].value} {end}",
                ],
            );
            ran.stdout.contains("east=eu")
                && ran.stdout.contains("west=us")
                && ran.stdout.contains("north=eu")
        },
    )
    .await;

    // A rule a cluster cannot render is refused before anything is written, naming the field.
    let app = dir.path().join("regional.yaml");
    std::fs::write(&app, REGIONAL).unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "- jsonPatch: [{op: add, path: /data/x, value: '${REGION}'}]\n",
    )
    .unwrap();
    let app_path = app.to_str().unwrap();
    atoll(
        &hub_dir,
        &[
            "work", "apply", "-f", app_path, "--clusters", "east,west", "--override",
            bad.to_str().unwrap(),
        ],
    )
    .failure()
    .stderr_has("spec.overrides[0].jsonPatch[0].value: Invalid value: \"${REGION}\": unknown variable ${REGION}");

    // The API server refuses what the schema can tell; the hub reports the rest, writing nothing.
    let placement_with = |rules: &str| {
        let file = dir.path().join("placement.yaml");
        std::fs::write(
            &file,
            format!(
                "apiVersion: atoll.dev/v1alpha1\nkind: WorkPlacement\nmetadata: {{name: bad, namespace: default}}\nspec:\n  clusterSelector: {{clusterNames: [east]}}\n  manifests: [{{apiVersion: v1, kind: ConfigMap, metadata: {{name: bad, namespace: default}}}}]\n  overrides: {rules}\n"
            ),
        )
        .unwrap();
        kubectl(&hub_kubeconfig, &["apply", "-f", file.to_str().unwrap()])
    };
    placement_with("[{jsonPatch: [{op: move, path: /data/x}]}]")
        .failure()
        .stderr_has("spec.overrides[0].jsonPatch[0].op: Unsupported value: \"move\"");
    placement_with("[{jsonPatch: [{op: add, path: data/x, value: 1}]}]")
        .failure()
        .stderr_has("spec.overrides[0].jsonPatch[0].path: Invalid value: \"data/x\"");
    placement_with("[{image: {}}]")
        .failure()
        .stderr_has("an image override sets at least one of registry, repository and tag");
    placement_with("[{jsonPatch: [{op: add, path: /data, value: {x: '${REGION}'}}]}]").success();
    until(
        dir.path(),
        "the hub reports the unknown variable",
        Duration::from_secs(30),
        || {
            kubectl(
                &hub_kubeconfig,
                &[
                    "get",
                    "workplacement",
                    "bad",
                    "-o",
                    "jsonpath={.status.conditions[?(@.type==\"Progressing\")].message}",
                ],
            )
            .stdout
            .starts_with("spec.overrides[0].jsonPatch[0].value: Invalid value: \"${REGION}\": unknown variable")
        },
    )
    .await;
    kubectl(&members[0].kubeconfig(), &["get", "configmap", "bad"]).failure();
    kubectl(&hub_kubeconfig, &["delete", "workplacement", "bad"]).success();

    // Each cluster's ConfigMap and images follow its region; west's tag too.
    let rules = dir.path().join("regional-overrides.yaml");
    std::fs::write(&rules, REGIONAL_OVERRIDES).unwrap();
    atoll(
        &hub_dir,
        &[
            "work",
            "apply",
            "-f",
            app_path,
            "--clusters",
            "east,west",
            "--name",
            "shop",
            "--override",
            rules.to_str().unwrap(),
            "--wait",
            "--timeout",
            "60s",
        ],
    )
    .success()
    .stdout_has("3 manifests, 3 override rules");
    let get = |member: &Process, args: &[&str]| {
        kubectl(&member.kubeconfig(), args)
            .success()
            .stdout
            .trim()
            .to_owned()
    };
    let settings = |member: &Process| {
        get(
            member,
            &[
                "get",
                "configmap",
                "settings",
                "-n",
                "shop",
                "-o",
                "jsonpath={.data.region}/{.data.cluster}/{.data.mode}",
            ],
        )
    };
    let images = |member: &Process| {
        get(
            member,
            &[
                "get",
                "deployment",
                "web",
                "-n",
                "shop",
                "-o",
                "jsonpath={.spec.template.spec.initContainers[0].image} {.spec.template.spec.containers[0].image}",
            ],
        )
    };
    assert_eq!(settings(&members[0]), "eu/east/plain");
    assert_eq!(settings(&members[1]), "us/west/plain");
    assert_eq!(
        images(&members[0]),
        "eu.registry.example.com:5000/team/init:1.0 eu.registry.example.com:5000/team/web:1.0"
    );
    assert_eq!(
        images(&members[1]),
        "us.registry.example.com:5000/team/init:2.0 us.registry.example.com:5000/team/web:2.0"
    );
    let status = atoll(&hub_dir, &["work", "status", "shop"]).success();
    let rows = status.rows();
    let row = |cluster: &str| {
        rows.iter()
            .find(|r| r.get(1).map(String::as_str) == Some(cluster))
            .unwrap_or_else(|| panic!("no row of {cluster}:\n{status}"))
            .clone()
    };
    assert_eq!(row("east")[0], "0,1", "{status}");
    assert_eq!(row("west")[0], "0,1,2", "{status}");
    let applied = kubectl(
        &hub_kubeconfig,
        &[
            "get",
            "workplacement",
            "shop",
            "-o",
            "jsonpath={range .status.overriddenClusters[*]}{.name}={.appliedOverrides} {end}",
        ],
    )
    .success();
    assert_eq!(applied.stdout.trim(), "east=[0,1] west=[0,1,2]");
    assert!(!status.stdout.contains("change no manifest"), "{status}");

    // A property that changes renders that cluster's Work anew.
    set_property(dir.path(), &members[1], "region", "ap");
    until(
        dir.path(),
        "west's ConfigMap follows its new region",
        Duration::from_secs(30),
        || settings(&members[1]) == "ap/west/plain",
    )
    .await;
    assert_eq!(settings(&members[0]), "eu/east/plain");
    set_property(dir.path(), &members[1], "region", "us");

    // A placement on all three, first as written; then with a rule whose test fails on west (us):
    // west fails alone and keeps what it had, east and north are tuned.
    let tuned = dir.path().join("tuned.yaml");
    std::fs::write(
        &tuned,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: tuning, namespace: default}\ndata: {region: eu, mode: plain}\n",
    )
    .unwrap();
    let tuned_path = tuned.to_str().unwrap();
    let apply_tuned = |extra: &[&str]| {
        let mut args = vec![
            "work",
            "apply",
            "-f",
            tuned_path,
            "--clusters",
            "east,west,north",
            "--name",
            "tuning",
        ];
        args.extend_from_slice(extra);
        atoll(&hub_dir, &args)
    };
    apply_tuned(&["--wait", "--timeout", "60s"]).success();
    let mode = |member: &Process| {
        get(
            member,
            &["get", "configmap", "tuning", "-o", "jsonpath={.data.mode}"],
        )
    };
    for member in &members {
        assert_eq!(mode(member), "plain");
    }
    let eu_only = dir.path().join("eu-only.yaml");
    std::fs::write(&eu_only, EU_ONLY_OVERRIDES).unwrap();
    apply_tuned(&[
        "--override",
        eu_only.to_str().unwrap(),
        "--wait",
        "--timeout",
        "60s",
    ])
    .failure()
    .stderr_has("west: spec.overrides[0].jsonPatch[0] (test /data/region) does not apply to manifest v1 ConfigMap default/tuning: value did not match");
    until(
        dir.path(),
        "east and north are tuned",
        Duration::from_secs(30),
        || mode(&members[0]) == "tuned for eu" && mode(&members[2]) == "tuned for eu",
    )
    .await;
    assert_eq!(mode(&members[1]), "plain", "west's Work was disturbed");
    let failed = kubectl(
        &hub_kubeconfig,
        &[
            "get",
            "workplacement",
            "tuning",
            "-o",
            "jsonpath={range .status.failedClusters[*]}{.name}:{.reason}{end}",
        ],
    )
    .success();
    assert_eq!(failed.stdout.trim(), "west:OverridePatchFailed");
    atoll(&hub_dir, &["work", "status", "tuning"])
        .success()
        .stdout_has("FAILED CLUSTER")
        .stdout_has("OverridePatchFailed")
        .stdout_has("override rules that change no manifest on any cluster: spec.overrides[1]");
}

/// Writes the ClusterProperty `name` with `value` into a member cluster.
fn set_property(dir: &Path, member: &Process, name: &str, value: &str) {
    let file = dir.join(format!("property-{name}-{value}.yaml"));
    std::fs::write(
        &file,
        format!(
            "apiVersion: about.k8s.io/v1alpha1\nkind: ClusterProperty\nmetadata: {{name: {name}}}\nspec: {{value: \"{value}\"}}\n"
        ),
    )
    .unwrap();
    kubectl(
        &member.kubeconfig(),
        &["apply", "-f", file.to_str().unwrap()],
    )
    .success();
}

/// The `cost` property of each cluster as the hub's inventory holds it: `east=30 west=10 ...`.
fn inventory_costs(hub_dir: &Path) -> String {
    kubectl(
        &hub_kubeconfig_admin(hub_dir),
        &[
            "get",
            "clusterprofiles",
            "-n",
            "fleet-system",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}={.status.properties[?(@.name==\"cost\")].value} {end}",
        ],
    )
    .stdout
}

/// Gives the members a `cost` (east 30, the dearest; west 10, the cheapest; north 20) and waits
/// until the hub's inventory has it and all three are healthy.
async fn set_costs(dir: &Path, hub_dir: &Path, members: &[Process]) {
    for (member, cost) in members.iter().zip(["30", "10", "20"]) {
        set_property(dir, member, "cost", cost);
    }
    until(
        dir,
        "three healthy clusters report their cost",
        Duration::from_secs(30),
        || {
            let costs = inventory_costs(hub_dir);
            ["east=30", "west=10", "north=20"]
                .iter()
                .all(|c| costs.contains(c))
                && clusters(hub_dir).iter().all(|r| r.1 == "True")
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn pick_n_lands_on_the_cheapest_clusters_and_keeps_them_when_more_are_wanted() {
    let dir = tempfile::tempdir().unwrap();
    let Fleet {
        _hub,
        hub_dir,
        grpc: _,
        members,
        agents: _agents,
    } = Fleet::start(dir.path());
    set_costs(dir.path(), &hub_dir, &members).await;

    // The inventory query the scheduler makes, as a user runs it.
    let listed = atoll(
        &hub_dir,
        &["get", "clusters", "--property", "cost", "--sort-by", "cost"],
    )
    .success();
    let order: Vec<(String, String)> = listed
        .rows()
        .into_iter()
        .skip(1)
        .map(|r| (r[0].clone(), r.last().cloned().unwrap_or_default()))
        .collect();
    assert_eq!(
        order,
        [
            ("west".to_owned(), "10".to_owned()),
            ("north".to_owned(), "20".to_owned()),
            ("east".to_owned(), "30".to_owned())
        ],
        "{listed}"
    );
    assert!(listed.stdout.lines().next().unwrap().ends_with("COST"));

    let app = dir.path().join("app.yaml");
    std::fs::write(
        &app,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cheap, namespace: default}\ndata: {a: b}\n",
    )
    .unwrap();
    let app_path = app.to_str().unwrap();
    let pick = |n: &str| {
        atoll(
            &hub_dir,
            &[
                "work",
                "apply",
                "-f",
                app_path,
                "--name",
                "cheap",
                "--pick",
                n,
                "--prefer",
                "cost:asc",
                "--wait",
                "--timeout",
                "60s",
            ],
        )
    };
    let present = |member: &Process| {
        kubectl(&member.kubeconfig(), &["get", "configmap", "cheap"])
            .status
            .is_some_and(|s| s.success())
    };
    pick("0")
        .failure()
        .stderr_has("--pick 0: pick at least 1 cluster");

    // Two of three: the two cheapest.
    pick("2").success();
    assert!(!present(&members[0]), "east is the dearest");
    assert!(present(&members[1]) && present(&members[2]));
    let status = atoll(&hub_dir, &["work", "status", "cheap"]).success();
    let decisions: Vec<Vec<String>> = status
        .rows()
        .into_iter()
        .skip_while(|r| r.first().map(String::as_str) != Some("DECISION"))
        .skip(1)
        .take(3)
        .collect();
    let decision = |name: &str| {
        decisions
            .iter()
            .find(|r| r[0] == name)
            .unwrap_or_else(|| panic!("no decision for {name}:\n{status}"))
            .clone()
    };
    assert_eq!(decision("west")[1..3], ["yes", "100"], "{status}");
    assert_eq!(decision("north")[1..3], ["yes", "50"], "{status}");
    assert_eq!(decision("east")[1..3], ["no", "0"], "{status}");
    assert!(
        decision("east").join(" ").ends_with("not in the top 2"),
        "{status}"
    );
    assert!(status.stdout.contains("policy: PickN 2"), "{status}");
    assert!(
        status
            .stdout
            .contains("Scheduled True (Scheduled): picked 2 of 2 clusters"),
        "{status}"
    );

    // East turns the cheapest: the Work does not move.
    set_property(dir.path(), &members[0], "cost", "1");
    until(
        dir.path(),
        "east's new cost reaches the decisions",
        Duration::from_secs(30),
        || {
            kubectl(
                &hub_kubeconfig_admin(&hub_dir),
                &[
                    "get",
                    "workplacement",
                    "cheap",
                    "-o",
                    "jsonpath={.status.decisions[?(@.clusterName==\"east\")].score}",
                ],
            )
            .stdout
            .trim()
                == "100"
        },
    )
    .await;
    assert!(!present(&members[0]), "the Work moved to east");
    assert!(present(&members[1]) && present(&members[2]));

    // Three wanted: east is added, west and north keep theirs (the same object, not made again).
    let uid = |member: &Process| {
        kubectl(
            &member.kubeconfig(),
            &[
                "get",
                "configmap",
                "cheap",
                "-o",
                "jsonpath={.metadata.uid}",
            ],
        )
        .success()
        .stdout
    };
    let before = (uid(&members[1]), uid(&members[2]));
    pick("3").success();
    assert!(members.iter().all(present));
    assert_eq!((uid(&members[1]), uid(&members[2])), before);

    // Four wanted of three: the three found keep the Work, and the status says so.
    pick("4").success();
    let wide = kubectl(
        &hub_kubeconfig_admin(&hub_dir),
        &["get", "workplacement", "cheap", "-o", "wide"],
    )
    .success();
    assert!(wide.stdout.contains("PickN"), "{wide}");
    assert!(wide.stdout.contains("found 3 of 4 clusters"), "{wide}");
    atoll(&hub_dir, &["work", "status", "cheap"])
        .success()
        .stdout_has("Scheduled False (NotEnoughClusters): found 3 of 4 clusters");
    assert!(members.iter().all(present));

    // The API server refuses a PickN without a number, naming the field.
    let placement = dir.path().join("placement.yaml");
    std::fs::write(
        &placement,
        "apiVersion: atoll.dev/v1alpha1\nkind: WorkPlacement\nmetadata: {name: bad, namespace: default}\nspec:\n  manifests: [{apiVersion: v1, kind: ConfigMap, metadata: {name: bad, namespace: default}}]\n  policy: {type: PickN}\n",
    )
    .unwrap();
    kubectl(
        &hub_kubeconfig_admin(&hub_dir),
        &["apply", "-f", placement.to_str().unwrap()],
    )
    .failure()
    .stderr_has("spec.policy.numberOfClusters")
    .stderr_has("PickN needs numberOfClusters, at least 1");

    // What the schema cannot tell, the hub reports, naming the field; nothing is stamped.
    std::fs::write(
        &placement,
        "apiVersion: atoll.dev/v1alpha1\nkind: WorkPlacement\nmetadata: {name: bad, namespace: default}\nspec:\n  manifests: [{apiVersion: v1, kind: ConfigMap, metadata: {name: bad, namespace: default}}]\n  policy: {type: PickN, numberOfClusters: 1, affinity: [{properties: [{property: cost, operator: Gt, values: [cheap]}]}]}\n",
    )
    .unwrap();
    kubectl(
        &hub_kubeconfig_admin(&hub_dir),
        &["apply", "-f", placement.to_str().unwrap()],
    )
    .success();
    until(
        dir.path(),
        "the hub reports the invalid policy",
        Duration::from_secs(30),
        || {
            kubectl(
                &hub_kubeconfig_admin(&hub_dir),
                &[
                    "get",
                    "workplacement",
                    "bad",
                    "-o",
                    "jsonpath={.status.conditions[?(@.type==\"Scheduled\")].reason}: {.status.conditions[?(@.type==\"Scheduled\")].message}",
                ],
            )
            .stdout
            .trim()
                == "InvalidPolicy: spec.policy.affinity[0].properties[0].values[0]: Invalid value: \"cheap\": Gt compares numbers: a quantity such as 4, 500m or 16Gi"
        },
    )
    .await;
    assert!(members.iter().all(|m| {
        kubectl(&m.kubeconfig(), &["get", "configmap", "bad"])
            .status
            .is_some_and(|s| !s.success())
    }));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chosen_cluster_lost_past_its_failover_delay_is_replaced_and_cleaned_when_it_returns() {
    let dir = tempfile::tempdir().unwrap();
    let Fleet {
        _hub,
        hub_dir,
        grpc,
        members,
        mut agents,
    } = Fleet::start(dir.path());
    set_costs(dir.path(), &hub_dir, &members).await;
    let placement = dir.path().join("placement.yaml");
    std::fs::write(
        &placement,
        r#"apiVersion: atoll.dev/v1alpha1
kind: WorkPlacement
metadata: {name: cheap, namespace: default}
spec:
  manifests: [{apiVersion: v1, kind: ConfigMap, metadata: {name: cheap, namespace: default}, data: {a: b}}]
  policy:
    type: PickN
    numberOfClusters: 2
    preferences: [{weight: 100, sortBy: {property: cost, order: Ascending}}]
    failover: {afterSeconds: 4}
"#,
    )
    .unwrap();
    let hub_kubeconfig = hub_kubeconfig_admin(&hub_dir);
    kubectl(
        &hub_kubeconfig,
        &["apply", "-f", placement.to_str().unwrap()],
    )
    .success();
    let present = |member: &Process| {
        kubectl(&member.kubeconfig(), &["get", "configmap", "cheap"])
            .status
            .is_some_and(|s| s.success())
    };
    until(
        dir.path(),
        "the two cheapest receive the Work",
        Duration::from_secs(30),
        || present(&members[1]) && present(&members[2]),
    )
    .await;
    assert!(!present(&members[0]));

    // West's agent dies: within the leases and the failover delay nothing moves; after them,
    // east, the next best, receives the Work.
    let west = agents.remove(1);
    drop(west);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!present(&members[0]), "moved before the failover delay");
    until(
        dir.path(),
        "east replaces west",
        Duration::from_secs(40),
        || present(&members[0]),
    )
    .await;
    let reason = kubectl(
        &hub_kubeconfig,
        &[
            "get",
            "workplacement",
            "cheap",
            "-o",
            "jsonpath={.status.decisions[?(@.clusterName==\"west\")].reason}",
        ],
    )
    .success();
    assert!(
        reason
            .stdout
            .contains("past failover.afterSeconds 4: replaced"),
        "{reason}"
    );
    assert!(present(&members[1]), "west keeps it while away");

    // West comes back: its Work is removed, and the Work does not move back.
    let _west = Agent::start(
        &hub_dir,
        &grpc,
        &members[1].kubeconfig(),
        "west",
        dir.path().join("west-agent.log"),
    );
    until_healthy(dir.path(), &hub_dir, "west").await;
    until(
        dir.path(),
        "west's copy is removed",
        Duration::from_secs(30),
        || !present(&members[1]),
    )
    .await;
    assert!(present(&members[0]) && present(&members[2]));
    atoll(&hub_dir, &["work", "status", "cheap"])
        .success()
        .stdout_has("Scheduled True (Scheduled): picked 2 of 2 clusters");
}

/// A namespace on the hub, with what a team puts in it.
const HUB_SHOP: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {team: shop}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: shop}
data: {mode: hub, level: "1"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "registry.example.com/team/web:1.0"}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  selector: {app: web}
  ports: [{port: 80}]
"#;

/// A WorkPlacement that sends the hub's `shop` namespace to the ClusterSet `prod`, with a rule
/// of its own that sets the ConfigMap's mode; a fleet administrator's, in `atoll-system` (a
/// placement elsewhere sends only its own namespace).
const SHOP_PLACEMENT: &str = r#"
apiVersion: atoll.dev/v1alpha1
kind: WorkPlacement
metadata: {name: shop, namespace: atoll-system, labels: {tier: apps}}
spec:
  clusterSelector: {clusterSet: prod}
  resourceSelectors: [{version: v1, kind: Namespace, name: shop}]
  overrides:
  - manifests: [{kind: ConfigMap, name: settings}]
    jsonPatch: [{op: replace, path: /data/mode, value: "placement on ${CLUSTER_NAME}"}]
"#;

/// A fleet administrator's WorkOverride for placements labelled `tier: apps`: a registry mirror,
/// and a mode the placement's own rule overrides.
const MIRROR: &str = r#"
apiVersion: atoll.dev/v1alpha1
kind: WorkOverride
metadata: {name: mirror}
spec:
  placements: {labelSelector: {matchLabels: {tier: apps}}}
  overrides:
  - image: {registry: mirror.example.com}
  - manifests: [{kind: ConfigMap}]
    jsonPatch:
    - {op: replace, path: /data/mode, value: fleet}
    - {op: add, path: /data/cluster, value: "${CLUSTER_NAME}"}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_hub_namespace_placed_to_a_clusterset_follows_edits_and_deletes_under_fleet_overrides() {
    let dir = tempfile::tempdir().unwrap();
    let Fleet {
        _hub,
        hub_dir,
        grpc: _,
        members,
        agents: _agents,
    } = Fleet::start(dir.path());
    for name in ["east", "west", "north"] {
        until_healthy(dir.path(), &hub_dir, name).await;
    }
    let hub = hub_kubeconfig_admin(&hub_dir);
    let write = |name: &str, text: &str| {
        let file = dir.path().join(name);
        std::fs::write(&file, text).unwrap();
        file
    };
    let apply = |name: &str, text: &str| {
        let file = write(name, text);
        kubectl(&hub, &["apply", "-f", file.to_str().unwrap()])
    };
    atoll(&hub_dir, &["clusterset", "create", "prod"]).success();
    atoll(&hub_dir, &["clusterset", "add", "prod", "east", "west"]).success();
    apply("shop.yaml", HUB_SHOP).success();
    apply("mirror.yaml", MIRROR).success();
    apply("placement.yaml", SHOP_PLACEMENT).success();
    let get = |member: &Process, args: &[&str]| kubectl(&member.kubeconfig(), args);
    let settings = |member: &Process| {
        get(
            member,
            &[
                "get",
                "configmap",
                "settings",
                "-n",
                "shop",
                "-o",
                "jsonpath={.data.mode}/{.data.cluster}/{.data.level}",
            ],
        )
        .stdout
        .trim()
        .to_owned()
    };
    let image = |member: &Process| {
        get(
            member,
            &[
                "get",
                "deployment",
                "web",
                "-n",
                "shop",
                "-o",
                "jsonpath={.spec.template.spec.containers[0].image}",
            ],
        )
        .stdout
        .trim()
        .to_owned()
    };
    // The members of prod receive the namespace and what is in it; the placement's own rule
    // wins over the WorkOverride's where both set a field; the mirror applies to the image.
    until(
        dir.path(),
        "east and west hold the shop namespace, overridden",
        Duration::from_secs(60),
        || {
            settings(&members[0]) == "placement on east/east/1"
                && settings(&members[1]) == "placement on west/west/1"
        },
    )
    .await;
    for member in &members[..2] {
        assert_eq!(image(member), "mirror.example.com/team/web:1.0");
        get(member, &["get", "service", "web", "-n", "shop"]).success();
        get(
            member,
            &[
                "get",
                "namespace",
                "shop",
                "-o",
                "jsonpath={.metadata.labels.team}",
            ],
        )
        .success()
        .stdout_has("shop");
    }
    get(&members[2], &["get", "namespace", "shop"]).failure();
    let placement_status = |path: &str| {
        kubectl(
            &hub,
            &[
                "get",
                "workplacement",
                "shop",
                "-n",
                "atoll-system",
                "-o",
                &format!("jsonpath={path}"),
            ],
        )
        .success()
        .stdout
        .trim()
        .to_owned()
    };
    assert_eq!(
        placement_status(
            "{range .status.overriddenClusters[*]}{.name}={.appliedWorkOverrides}+{.appliedOverrides} {end}"
        ),
        "east=[\"mirror[0]\",\"mirror[1]\"]+[0] west=[\"mirror[0]\",\"mirror[1]\"]+[0]"
    );
    // What Kubernetes makes in every namespace stays behind.
    assert_eq!(
        placement_status("{range .status.selectedResources[*]}{.kind}/{.name} {end}"),
        "ConfigMap/settings Namespace/shop Service/web Deployment/web"
    );
    atoll(&hub_dir, &["work", "status", "shop", "-n", "atoll-system"])
        .success()
        .stdout_has("hub resources: ConfigMap shop/settings, Namespace shop, Service shop/web, Deployment shop/web")
        .stdout_has("mirror[0],mirror[1],0");
    until(
        dir.path(),
        "the WorkOverride reports the placement it applies to",
        Duration::from_secs(60),
        || {
            kubectl(&hub, &["get", "workoverride", "mirror"])
                .stdout
                .lines()
                .nth(1)
                .is_some_and(|row| {
                    row.split_whitespace().collect::<Vec<_>>()[..4] == ["mirror", "2", "1", "True"]
                })
        },
    )
    .await;

    // An edit on the hub reaches every member; a deleted object goes from every member.
    kubectl(
        &hub,
        &[
            "patch",
            "configmap",
            "settings",
            "-n",
            "shop",
            "--type",
            "merge",
            "-p",
            r#"{"data":{"level":"2"}}"#,
        ],
    )
    .success();
    until(
        dir.path(),
        "the edit reaches east and west",
        Duration::from_secs(60),
        || settings(&members[0]).ends_with("/2") && settings(&members[1]).ends_with("/2"),
    )
    .await;
    // What east and west no longer hold, read with kubectl.
    let gone = |args: &[&str]| {
        members[..2]
            .iter()
            .all(|m| get(m, args).stderr.contains("NotFound"))
    };
    kubectl(&hub, &["delete", "service", "web", "-n", "shop"]).success();
    until(
        dir.path(),
        "the deleted Service goes from east and west",
        Duration::from_secs(60),
        || gone(&["get", "service", "web", "-n", "shop"]),
    )
    .await;

    // A WorkOverride that cannot be applied holds the placement: nothing placed is disturbed.
    apply(
        "mirror.yaml",
        &MIRROR.replace("path: /data/mode", "path: /kind").replace(
            "labelSelector: {matchLabels: {tier: apps}}",
            "namespaces: [default, atoll-system]",
        ),
    )
    .success();
    until(dir.path(), "the placement holds, naming the WorkOverride", Duration::from_secs(60), || {
        placement_status("{.status.conditions[?(@.type==\"Progressing\")].message}")
            .starts_with("WorkOverride mirror spec.overrides[1].jsonPatch[0].path: Invalid value: \"/kind\": an override may not change /kind")
    })
    .await;
    kubectl(
        &hub,
        &[
            "get",
            "workoverride",
            "mirror",
            "-o",
            "jsonpath={.status.conditions[0].reason}",
        ],
    )
    .success()
    .stdout_has("InvalidSpec");
    // `--wait` says so at once rather than waiting out its timeout.
    let held = write(
        "held.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: held, namespace: default}\n",
    );
    atoll(
        &hub_dir,
        &[
            "work",
            "apply",
            "-f",
            held.to_str().unwrap(),
            "--clusters",
            "north",
            "--name",
            "held",
            "--wait",
            "--timeout",
            "300s",
        ],
    )
    .failure()
    .stderr_has("InvalidSpec: WorkOverride mirror spec.overrides[1].jsonPatch[0].path");
    get(&members[2], &["get", "configmap", "held"]).failure();
    kubectl(
        &hub,
        &[
            "patch",
            "configmap",
            "settings",
            "-n",
            "shop",
            "--type",
            "merge",
            "-p",
            r#"{"data":{"level":"3"}}"#,
        ],
    )
    .success();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        settings(&members[0]),
        "placement on east/east/2",
        "a held placement changed east"
    );
    kubectl(&hub, &["delete", "workoverride", "mirror"]).success();
    until(
        dir.path(),
        "without the WorkOverride, the members follow the hub again",
        Duration::from_secs(60),
        || {
            settings(&members[0]) == "placement on east//3"
                && image(&members[0]) == "registry.example.com/team/web:1.0"
        },
    )
    .await;

    // Selectors the hub cannot follow are refused or reported, naming the field.
    let bad = |name: &str, selector: &str| {
        write(
            &format!("{name}.yaml"),
            &format!(
                "apiVersion: atoll.dev/v1alpha1\nkind: WorkPlacement\nmetadata: {{name: {name}, namespace: atoll-system}}\nspec:\n  clusterSelector: {{clusterNames: [east]}}\n  resourceSelectors: [{selector}]\n"
            ),
        )
    };
    let file = bad(
        "both",
        "{version: v1, kind: ConfigMap, name: a, labelSelector: {matchLabels: {a: b}}}",
    );
    kubectl(&hub, &["apply", "-f", file.to_str().unwrap()])
        .failure()
        .stderr_has("a resource selector names one object or selects by labels, not both");
    let file = bad("widgets", "{group: example.com, version: v1, kind: Widget}");
    kubectl(&hub, &["apply", "-f", file.to_str().unwrap()]).success();
    let file = bad(
        "system",
        "{version: v1, kind: Namespace, name: kube-system}",
    );
    kubectl(&hub, &["apply", "-f", file.to_str().unwrap()]).success();
    // A placement outside the administrator's namespace sends its own namespace only.
    let file = write(
        "elsewhere.yaml",
        "apiVersion: atoll.dev/v1alpha1\nkind: WorkPlacement\nmetadata: {name: elsewhere, namespace: default}\nspec:\n  clusterSelector: {clusterNames: [east]}\n  resourceSelectors: [{version: v1, kind: Namespace, name: shop}]\n",
    );
    kubectl(&hub, &["apply", "-f", file.to_str().unwrap()]).success();
    let progressing = |name: &str| {
        let namespace = if name == "elsewhere" {
            "default"
        } else {
            "atoll-system"
        };
        kubectl(
            &hub,
            &[
                "get",
                "workplacement",
                name,
                "-n",
                namespace,
                "-o",
                "jsonpath={.status.conditions[?(@.type==\"Progressing\")].message}",
            ],
        )
        .stdout
        .trim()
        .to_owned()
    };
    until(dir.path(), "the hub reports the selectors it cannot follow", Duration::from_secs(60), || {
        progressing("widgets")
            == "spec.resourceSelectors[0].kind: Invalid value: \"Widget\": the hub serves no example.com/v1 Widget"
            && progressing("system")
                == "spec.resourceSelectors[0].name: Invalid value: \"kube-system\": the hub's own and Kubernetes' system namespaces are not sent"
            && progressing("elsewhere")
                == "spec.resourceSelectors[0].name: Invalid value: \"shop\": a WorkPlacement in namespace \"default\" selects no Namespace but its own; a placement in \"atoll-system\" may select any"
    })
    .await;

    // The namespace deleted on the hub goes from every member.
    kubectl(&hub, &["delete", "namespace", "shop", "--wait=false"]).success();
    until(
        dir.path(),
        "the namespace goes from east and west",
        Duration::from_secs(90),
        || gone(&["get", "configmap", "settings", "-n", "shop"]),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_whose_credential_the_hub_refuses_joins_again_as_the_same_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let hub_dir = dir.path().join("hub");
    let grpc = free_addr().unwrap().to_string();
    let _hub = Process::hub_with(
        &hub_dir,
        free_addr().unwrap(),
        &["--grpc-addr", &grpc, "--auto-accept"],
    )
    .unwrap();
    let member = Process::apiserver_on_a_free_port(&dir.path().join("east")).unwrap();
    let log = dir.path().join("east-agent.log");
    let agent = Agent::start(&hub_dir, &grpc, &member.kubeconfig(), "east", log.clone());
    until_healthy(dir.path(), &hub_dir, "east").await;
    let before = dir.path().join("before.yaml");
    std::fs::write(
        &before,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: before, namespace: default}\n",
    )
    .unwrap();
    apply_to_east(&hub_dir, &before, "before").success();

    // The credential the agent holds is one the hub no longer accepts (lost, expired, or
    // written over, as here while the agent is down).
    drop(agent);
    kubectl(
        &member.kubeconfig(),
        &[
            "patch",
            "secret",
            "atoll-agent",
            "-n",
            "atoll-system",
            "--type",
            "merge",
            "-p",
            r#"{"data":{"credential":"bm90IGEgY3JlZGVudGlhbA=="}}"#,
        ],
    )
    .success();
    let again = dir.path().join("east-agent-again.log");
    let agent = Agent::start(&hub_dir, &grpc, &member.kubeconfig(), "east", again);
    until(
        dir.path(),
        "the agent is refused and joins again",
        Duration::from_secs(30),
        || agent.log().contains("joining again") && agent.log().contains("joined the hub"),
    )
    .await;
    until_healthy(dir.path(), &hub_dir, "east").await;
    assert!(
        !agent.log().contains("already joined"),
        "the hub took the agent for another:\n{}",
        agent.log()
    );
    let rows = clusters(&hub_dir);
    assert_eq!(rows.iter().filter(|r| r.0 == "east").count(), 1, "{rows:?}");
    // Still the same cluster: what it held stays, and new Work reaches it.
    kubectl(&member.kubeconfig(), &["get", "configmap", "before"]).success();
    let after = dir.path().join("after.yaml");
    std::fs::write(
        &after,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: after, namespace: default}\n",
    )
    .unwrap();
    apply_to_east(&hub_dir, &after, "after").success();
    kubectl(&member.kubeconfig(), &["get", "configmap", "after"]).success();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hub_restored_from_a_backup_keeps_its_clusters_credentials_and_work() {
    let dir = tempfile::tempdir().unwrap();
    let hub_dir = dir.path().join("hub");
    let grpc = free_addr().unwrap().to_string();
    let flags = ["--grpc-addr", grpc.as_str(), "--auto-accept"];
    let hub = Process::hub_with(&hub_dir, free_addr().unwrap(), &flags).unwrap();
    let member = Process::apiserver_on_a_free_port(&dir.path().join("east")).unwrap();
    let log = dir.path().join("east-agent.log");
    let agent = Agent::start(&hub_dir, &grpc, &member.kubeconfig(), "east", log);
    until_healthy(dir.path(), &hub_dir, "east").await;
    let before = dir.path().join("before.yaml");
    std::fs::write(
        &before,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: before, namespace: default}\n",
    )
    .unwrap();
    apply_to_east(&hub_dir, &before, "before").success();

    // A backup of the running hub.
    let backup = dir.path().join("hub.atollbak");
    atoll(&hub_dir, &["backup", "-o", backup.to_str().unwrap()])
        .success()
        .stdout_has(&format!("backed up the hub to {}", backup.display()));
    let bytes = std::fs::read(&backup).unwrap();

    // Files that are not a whole backup this atoll reads are refused, and nothing is started.
    let refused = |name: &str, contents: &[u8], expected: &str| {
        let file = dir.path().join(name);
        std::fs::write(&file, contents).unwrap();
        let data_dir = dir.path().join(format!("{name}.data"));
        let restore = ["--restore", file.to_str().unwrap()];
        let error = Process::hub_with(&data_dir, free_addr().unwrap(), &restore)
            .err()
            .unwrap_or_else(|| panic!("{name} was restored"))
            .to_string();
        assert!(error.contains(expected), "{name}: {error}");
        assert!(
            !data_dir.join("state.db").exists(),
            "{name} left a database"
        );
    };
    refused(
        "truncated",
        &bytes[..bytes.len() / 2],
        "the backup is truncated",
    );
    refused(
        "foreign",
        b"not a backup at all",
        "the file is not an atoll backup",
    );
    let mut newer = bytes.clone();
    newer[8..12].copy_from_slice(&99u32.to_be_bytes());
    refused(
        "newer",
        &newer,
        "the backup was written by a newer atoll (format 99; this atoll reads format 1)",
    );
    let error = Process::hub_with(
        &hub_dir.with_file_name("again"),
        free_addr().unwrap(),
        &["--restore", "/nonexistent/backup"],
    )
    .err()
    .expect("a missing file was restored")
    .to_string();
    assert!(error.contains("cannot read /nonexistent/backup"), "{error}");

    // The hub is lost; a new one starts from the backup on the agents' address. The agent
    // reconnects with its credential (no new join), the cluster is healthy, its Work stays,
    // and new Work reaches it.
    drop(hub);
    let restored_dir = dir.path().join("restored");
    let mut restore = flags.to_vec();
    restore.extend(["--restore", backup.to_str().unwrap()]);
    let error = Process::hub_with(&hub_dir, free_addr().unwrap(), &restore)
        .err()
        .expect("a backup was restored over a hub")
        .to_string();
    assert!(error.contains("holds one already"), "{error}");
    let _restored = Process::hub_with(&restored_dir, free_addr().unwrap(), &restore).unwrap();
    until_healthy(dir.path(), &restored_dir, "east").await;
    assert_eq!(
        agent.log().matches("joined the hub").count(),
        1,
        "the agent joined again:\n{}",
        agent.log()
    );
    kubectl(&member.kubeconfig(), &["get", "configmap", "before"]).success();
    atoll(&restored_dir, &["work", "status", "before"])
        .success()
        .stdout_has("1 available");
    let after = dir.path().join("after.yaml");
    std::fs::write(
        &after,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: after, namespace: default}\n",
    )
    .unwrap();
    apply_to_east(&restored_dir, &after, "after").success();
    kubectl(&member.kubeconfig(), &["get", "configmap", "after"]).success();
}
