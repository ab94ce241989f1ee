//! Hosted clusters end to end with the real binaries: `atoll up` makes a fleet of embedded hosted
//! clusters at its first start, a WorkPlacement lands on all of them and kubectl sees it through
//! each one's kubeconfig; Process-mode clusters survive a SIGKILLed API server; backups restore
//! with old kubeconfigs working; suspend and resume keep the data; bad input and faults each end
//! in a clear condition or error with nothing lost; a hub SIGKILLed while clusters are created and
//! deleted converges after a restart, with nothing orphaned.

use std::path::{Path, PathBuf};
use std::time::Duration;

use atoll_tests::{Process, Ran, Tool, atoll_binary, eventually, free_addr};
use serde_json::Value;

/// A hub (`atoll up`) for one test, with its scratch directory.
struct Hub {
    process: Process,
    dir: tempfile::TempDir,
    grpc: String,
    api: std::net::SocketAddr,
    hosted_clusters: u32,
    /// More flags it starts with each time.
    extra: Vec<String>,
}

impl Hub {
    fn start(hosted_clusters: u32) -> Hub {
        Self::start_with(hosted_clusters, tempfile::tempdir().unwrap(), &[])
    }

    /// A hub in `dir` started with more flags.
    fn start_with(hosted_clusters: u32, dir: tempfile::TempDir, extra: &[&str]) -> Hub {
        let grpc = free_addr().unwrap().to_string();
        let api = free_addr().unwrap();
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let process = Self::launch(dir.path(), api, &grpc, hosted_clusters, &extra);
        Hub {
            process,
            dir,
            grpc,
            api,
            hosted_clusters,
            extra,
        }
    }

    fn launch(
        dir: &Path,
        api: std::net::SocketAddr,
        grpc: &str,
        hosted: u32,
        extra: &[String],
    ) -> Process {
        let hosted = hosted.to_string();
        let mut flags = vec![
            "--grpc-addr",
            grpc,
            "--hosted-clusters",
            &hosted,
            "--lease-seconds",
            "2",
        ];
        flags.extend(extra.iter().map(String::as_str));
        Process::hub_with(&dir.join("hub"), api, &flags).unwrap()
    }

    /// Stops the hub with SIGTERM and starts it again on the same data.
    fn restart(&mut self) {
        assert!(self.process.terminate().unwrap().success());
        self.start_again();
    }

    /// Starts the hub again on the same data (after it stopped or was killed), with the flags it
    /// first started with.
    fn start_again(&mut self) {
        self.process = Self::launch(
            self.dir.path(),
            self.api,
            &self.grpc,
            self.hosted_clusters,
            &self.extra,
        );
    }

    fn hub_dir(&self) -> PathBuf {
        self.dir.path().join("hub")
    }

    fn kubeconfig(&self) -> PathBuf {
        self.hub_dir().join("hub.kubeconfig")
    }

    fn hosted_dir(&self, namespace: &str, name: &str) -> PathBuf {
        self.hub_dir().join("hosted").join(namespace).join(name)
    }

    /// `atoll` against this hub.
    fn atoll(&self, args: &[&str]) -> Ran {
        let kubeconfig = self.kubeconfig();
        let mut all = vec!["--kubeconfig", kubeconfig.to_str().unwrap()];
        all.extend_from_slice(args);
        Tool::new(atoll_binary().unwrap())
            .env("RUST_BACKTRACE", "0")
            .run(&all)
    }

    /// `kubectl` against this hub.
    fn kubectl(&self, args: &[&str]) -> Ran {
        kubectl(&self.kubeconfig(), args)
    }

    /// A file in the scratch directory.
    fn file(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, contents).unwrap();
        path
    }

    /// Writes hosted cluster `name`'s kubeconfig with `atoll kubeconfig` and returns its path.
    fn member_kubeconfig(&self, name: &str) -> PathBuf {
        let path = self.dir.path().join(format!("{name}.kubeconfig"));
        self.atoll(&["kubeconfig", name, "-o", path.to_str().unwrap()])
            .success();
        path
    }

    /// The HostedCluster `clusters/name` as JSON, if it exists.
    fn hosted(&self, name: &str) -> Option<Value> {
        self.hosted_in("clusters", name)
    }

    fn hosted_in(&self, namespace: &str, name: &str) -> Option<Value> {
        let ran = self.kubectl(&["get", "hostedcluster", name, "-n", namespace, "-o", "json"]);
        ran.status.is_some_and(|s| s.success()).then(|| ran.json())
    }

    /// Waits until `clusters/name`'s condition `type_` has `status` (and `reason`, if given);
    /// returns its message.
    async fn until_condition(
        &self,
        namespace: &str,
        name: &str,
        type_: &str,
        status: &str,
        reason: Option<&str>,
    ) -> String {
        let mut last = Value::Null;
        let found = eventually(Duration::from_secs(60), || {
            last = self.hosted_in(namespace, name).unwrap_or(Value::Null);
            let matched = condition(&last, type_)
                .is_some_and(|c| c["status"] == status && reason.is_none_or(|r| c["reason"] == r));
            std::future::ready(matched)
        })
        .await;
        if !found {
            let log =
                std::fs::read_to_string(self.hub_dir().with_extension("log")).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(30).collect();
            panic!(
                "{namespace}/{name} never had {type_}={status} ({reason:?}):\n{}\n--- hub log (newest first)\n{}",
                serde_json::to_string_pretty(&last["status"]).unwrap(),
                tail.join("\n")
            );
        }
        condition(&last, type_).unwrap()["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Waits until `clusters/name` is Available and its agent joined.
    async fn until_available(&self, name: &str) {
        self.until_condition("clusters", name, "Available", "True", None)
            .await;
        self.until_condition("clusters", name, "AgentJoined", "True", None)
            .await;
    }
}

fn condition<'a>(hc: &'a Value, type_: &str) -> Option<&'a Value> {
    hc["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// `data.color` of the ConfigMap `team/settings` of the cluster of `kubeconfig`.
fn color(kubeconfig: &Path) -> String {
    let get = [
        "get",
        "configmap",
        "settings",
        "-n",
        "team",
        "-o",
        "jsonpath={.data.color}",
    ];
    kubectl(kubeconfig, &get).success().stdout.trim().to_owned()
}

/// `kubectl` against the cluster of `kubeconfig`.
fn kubectl(kubeconfig: &Path, args: &[&str]) -> Ran {
    atoll_tests::kubectl_at(kubeconfig, args)
}

/// The pids of `atoll apiserver` processes serving the data directory `dir`.
fn apiserver_pids(dir: &Path) -> Vec<u32> {
    let wanted = dir.to_string_lossy().into_owned();
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if args.iter().any(|a| a == "apiserver") && args.contains(&wanted) {
            pids.push(pid);
        }
    }
    pids
}

/// The ClusterProfile `fleet-system/name` on the hub, if it exists.
fn profile(hub: &Hub, name: &str) -> Option<Value> {
    let ran = hub.kubectl(&[
        "get",
        "clusterprofile",
        name,
        "-n",
        "fleet-system",
        "-o",
        "json",
    ]);
    ran.status.is_some_and(|s| s.success()).then(|| ran.json())
}

const APP: &str = r#"apiVersion: v1
kind: Namespace
metadata:
  name: shop
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: shop
data:
  greeting: hello from the hub
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_first_start_makes_a_fleet_that_takes_work_and_comes_back_after_a_restart() {
    let mut hub = Hub::start(3);

    // `atoll up` waited for its first clusters: they are in the inventory, in ClusterSet default.
    let clusters = hub.atoll(&["get", "clusters"]).success();
    let rows = clusters.rows();
    assert_eq!(rows.len(), 4, "{clusters}");
    for (row, name) in rows[1..]
        .iter()
        .zip(["cluster-1", "cluster-2", "cluster-3"])
    {
        assert_eq!(row[0], name, "{clusters}");
        assert_eq!(
            (row[1].as_str(), row[2].as_str()),
            ("True", "True"),
            "{clusters}"
        );
        assert_eq!(row[4], "default", "{clusters}");
    }
    // The hub's controllers did that as their own user, with the ClusterRole manifests/hub
    // gives the hub on a real cluster, and no more.
    hub.kubectl(&[
        "get",
        "clusterrolebinding",
        "atoll-hub-embedded",
        "-o",
        "jsonpath={.roleRef.name} {.subjects[0].kind} {.subjects[0].name}",
    ])
    .success()
    .stdout_is("atoll-hub User atoll:hub");
    for (verb, resource, allowed) in [
        ("create", "works.multicluster.x-k8s.io", true),
        ("update", "hostedclusters.atoll.dev/status", true),
        ("delete", "secrets", true),
        ("create", "pods", false),
        // It reads any kind (placements send hub resources they select), writes only its own.
        ("get", "configmaps", true),
        ("delete", "configmaps", false),
        (
            "create",
            "clusterrolebindings.rbac.authorization.k8s.io",
            false,
        ),
    ] {
        let asked = hub.kubectl(&["auth", "can-i", verb, resource, "-A", "--as", "atoll:hub"]);
        if allowed {
            asked.success().stdout_is("yes");
        } else {
            asked.failure().stdout_is("no");
        }
    }
    // ConfigMaps only in its own namespace: where it publishes how agents reach it.
    hub.kubectl(&[
        "auth",
        "can-i",
        "patch",
        "configmaps",
        "-n",
        "atoll-system",
        "--as",
        "atoll:hub",
    ])
    .success()
    .stdout_is("yes");
    let listed = hub.atoll(&["hosted", "list", "-o", "wide"]).success();
    assert_eq!(
        listed.rows()[0],
        [
            "NAME",
            "MODE",
            "VERSION",
            "AVAILABLE",
            "ENDPOINT",
            "KUBECONFIG",
            "AGE",
            "JOINED",
            "READY-AFTER",
            "MESSAGE"
        ]
    );
    for row in &listed.rows()[1..] {
        assert_eq!(row[1], "Embedded", "{listed}");
        assert_eq!(row[2], "v1.35.0+atoll", "{listed}");
        assert_eq!(row[3], "True", "{listed}");
        assert!(row[4].starts_with("https://127.0.0.1:"), "{listed}");
        assert_eq!(row[5], format!("{}-admin-kubeconfig", row[0]), "{listed}");
        assert_eq!(row[7], "True", "{listed}");
    }
    // kubectl's printer columns, from the CRD.
    let printed = hub
        .kubectl(&["get", "hostedclusters", "-n", "clusters"])
        .success();
    assert_eq!(
        printed.rows()[0],
        [
            "NAME",
            "MODE",
            "VERSION",
            "AVAILABLE",
            "ENDPOINT",
            "KUBECONFIG",
            "AGE"
        ]
    );

    // A WorkPlacement to the set lands on all three, as kubectl sees through each kubeconfig.
    let app = hub.file("app.yaml", APP);
    hub.atoll(&[
        "work",
        "apply",
        "-f",
        app.to_str().unwrap(),
        "--clusterset",
        "default",
        "--name",
        "app",
        "--wait",
        "--timeout",
        "60s",
    ])
    .success();
    let mut kubeconfigs = Vec::new();
    for name in ["cluster-1", "cluster-2", "cluster-3"] {
        let kubeconfig = hub.member_kubeconfig(name);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&kubeconfig).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "kubeconfig mode");
        }
        kubectl(
            &kubeconfig,
            &[
                "get",
                "configmap",
                "settings",
                "-n",
                "shop",
                "-o",
                "jsonpath={.data.greeting}",
            ],
        )
        .success()
        .stdout_is("hello from the hub");
        // The inventory tells consumers where the cluster is.
        let hc = hub.hosted(name).unwrap();
        let profile = profile(&hub, name).unwrap();
        let provider = &profile["status"]["accessProviders"][0];
        assert_eq!(provider["name"], "atoll");
        assert_eq!(provider["cluster"]["server"], hc["status"]["url"]);
        assert_eq!(
            provider["cluster"]["extensions"][0]["extension"]["name"],
            format!("{name}-admin-kubeconfig")
        );
        kubeconfigs.push(kubeconfig);
    }

    // A restart re-adopts every hosted cluster on the same endpoint with the same data: the
    // kubeconfigs written before keep working, and no cluster is made again (though the flag
    // still asks for three, and one was deleted).
    hub.atoll(&["hosted", "delete", "cluster-3", "--wait"])
        .success();
    hub.restart();
    for name in ["cluster-1", "cluster-2"] {
        hub.until_available(name).await;
    }
    // The statuses are those written before the restart until the hub looks again: ask the
    // clusters themselves.
    for kubeconfig in &kubeconfigs[..2] {
        let get = [
            "get",
            "configmap",
            "settings",
            "-n",
            "shop",
            "-o",
            "jsonpath={.data.greeting}",
        ];
        let served = eventually(Duration::from_secs(30), || {
            std::future::ready(kubectl(kubeconfig, &get).stdout.trim() == "hello from the hub")
        })
        .await;
        assert!(
            served,
            "{} is served again after the restart",
            kubeconfig.display()
        );
    }
    let after = hub.atoll(&["hosted", "list"]).success();
    assert_eq!(after.rows().len(), 3, "{after}");
}

#[tokio::test(flavor = "multi_thread")]
async fn process_mode_backup_restore_suspend_and_resume() {
    let hub = Hub::start(0);

    // A Process-mode cluster: a child `atoll apiserver`, restarted when killed, data intact.
    let create_p1 = [
        "hosted",
        "create",
        "p1",
        "--mode",
        "process",
        "--clusterset",
        "default",
        "--wait",
    ];
    hub.atoll(&create_p1).failure().stderr_has("ClusterSet");
    hub.atoll(&["clusterset", "create", "default"]).success();
    hub.atoll(&create_p1)
        .success()
        .stdout_has("is available at https://127.0.0.1:");
    let p1 = hub.member_kubeconfig("p1");
    kubectl(&p1, &["create", "configmap", "kept", "--from-literal=v=1"]).success();
    let dir = hub.hosted_dir("clusters", "p1");
    let pids = apiserver_pids(&dir);
    assert_eq!(pids.len(), 1, "one child serves p1: {pids:?}");
    Tool::new("/bin/kill".into())
        .run(&["-9", &pids[0].to_string()])
        .success();
    let restarted = eventually(Duration::from_secs(30), || {
        let now = apiserver_pids(&dir);
        let ok = now.len() == 1
            && now[0] != pids[0]
            && kubectl(
                &p1,
                &["get", "configmap", "kept", "-o", "jsonpath={.data.v}"],
            )
            .stdout
            .trim()
                == "1";
        std::future::ready(ok)
    })
    .await;
    assert!(
        restarted,
        "the killed API server of p1 was not restarted with its data"
    );
    hub.until_available("p1").await;

    // A Process-mode cluster backs up and restores too: the restored child is started again
    // on the backup's data, and the old kubeconfig reaches it.
    let p1_backup = hub.dir.path().join("p1.backup");
    hub.atoll(&["hosted", "backup", "p1", "-o", p1_backup.to_str().unwrap()])
        .success();
    hub.atoll(&["hosted", "delete", "p1", "--wait"]).success();
    assert!(
        apiserver_pids(&dir).is_empty(),
        "a deleted cluster's child is gone"
    );
    hub.atoll(&[
        "hosted",
        "create",
        "p1",
        "--mode",
        "process",
        "--restore",
        p1_backup.to_str().unwrap(),
    ])
    .success()
    .stdout_has("restored");
    let get_kept = ["get", "configmap", "kept", "-o", "jsonpath={.data.v}"];
    kubectl(&p1, &get_kept).success().stdout_is("1");
    assert_eq!(apiserver_pids(&dir).len(), 1);

    // Backup of an embedded cluster while it serves, delete, restore: same data, old kubeconfig.
    hub.atoll(&["hosted", "create", "e1", "--wait"]).success();
    let e1 = hub.member_kubeconfig("e1");
    kubectl(&e1, &["create", "namespace", "team"]).success();
    kubectl(
        &e1,
        &[
            "create",
            "configmap",
            "settings",
            "-n",
            "team",
            "--from-literal=color=blue",
        ],
    )
    .success();
    let backup = hub.dir.path().join("e1.backup");
    hub.atoll(&["hosted", "backup", "e1", "-o", backup.to_str().unwrap()])
        .success()
        .stdout_has("objects at revision");
    hub.atoll(&["hosted", "delete", "e1", "--wait"]).success();
    assert!(
        !hub.hosted_dir("clusters", "e1").exists(),
        "the data of a deleted cluster is gone"
    );
    assert!(
        profile(&hub, "e1").is_none(),
        "a deleted cluster leaves the inventory"
    );
    kubectl(&e1, &["get", "namespaces"]).failure();

    // Bad backups are refused before anything is made.
    let bytes = std::fs::read(&backup).unwrap();
    let truncated = hub.file("truncated.backup", "");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let foreign = hub.file("foreign.backup", "apiVersion: v1\nkind: Config\n");
    let newer = hub.file("newer.backup", "");
    let mut future = bytes.clone();
    future[8..12].copy_from_slice(&99u32.to_be_bytes());
    std::fs::write(&newer, &future).unwrap();
    let corrupt = hub.file("corrupt.backup", "");
    let mut flipped = bytes.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0xff;
    std::fs::write(&corrupt, &flipped).unwrap();
    for (file, says) in [
        (&truncated, "truncated"),
        (&foreign, "not an atoll backup"),
        (&newer, "newer"),
        (&corrupt, "corrupt"),
    ] {
        hub.atoll(&[
            "hosted",
            "create",
            "bad",
            "--restore",
            file.to_str().unwrap(),
        ])
        .failure()
        .stderr_has(says);
        assert!(
            hub.hosted("bad").is_none(),
            "a refused restore made nothing"
        );
    }

    hub.atoll(&[
        "hosted",
        "create",
        "e1",
        "--restore",
        backup.to_str().unwrap(),
    ])
    .success()
    .stdout_has("restored");
    assert_eq!(color(&e1), "blue");
    hub.until_available("e1").await;

    // Into another hub as well, on the same machine: the old kubeconfig reaches it there.
    let second = Hub::start(0);
    hub.atoll(&["hosted", "delete", "e1", "--wait"]).success();
    let restore = [
        "hosted",
        "create",
        "e1",
        "--restore",
        backup.to_str().unwrap(),
    ];
    second.atoll(&restore).success();
    second.until_available("e1").await;
    assert_eq!(color(&e1), "blue");
    let in_inventory = eventually(Duration::from_secs(30), || {
        let rows = second.atoll(&["get", "clusters"]).success().rows();
        std::future::ready(rows.len() == 2 && rows[1][..3] == ["e1", "True", "True"])
    })
    .await;
    assert!(
        in_inventory,
        "the restored cluster joins the second hub's inventory"
    );
    drop(second);
    hub.atoll(&restore).success();
    hub.until_available("e1").await;

    // Suspend: the control plane stops, the profile says Suspended, the data stays; resume.
    hub.atoll(&["hosted", "suspend", "e1"]).success();
    hub.until_condition("clusters", "e1", "Available", "False", Some("Suspended"))
        .await;
    assert!(
        eventually(Duration::from_secs(30), || {
            let healthy = profile(&hub, "e1").and_then(|p| {
                p["status"]["conditions"].as_array().and_then(|c| {
                    c.iter()
                        .find(|c| c["type"] == "ControlPlaneHealthy")
                        .cloned()
                })
            });
            std::future::ready(
                healthy.is_some_and(|c| c["reason"] == "Suspended" && c["status"] == "False"),
            )
        })
        .await,
        "the profile of a suspended cluster says Suspended"
    );
    kubectl(&e1, &["get", "namespaces"]).failure();
    hub.atoll(&["hosted", "resume", "e1", "--wait"]).success();
    assert_eq!(color(&e1), "blue");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_and_faults_end_in_clear_conditions_with_nothing_lost() {
    let hub = Hub::start(0);
    hub.atoll(&["hosted", "create", "good", "--wait"]).success();

    // A name that cannot be a cluster: the CLI refuses it; through kubectl, a condition says why.
    hub.atoll(&["hosted", "create", "a.b"])
        .failure()
        .stderr_has("DNS label");
    let dotted = hub.file(
        "dotted.yaml",
        "apiVersion: atoll.dev/v1alpha1\nkind: HostedCluster\nmetadata: {name: a.b, namespace: clusters}\nspec: {}\n",
    );
    hub.kubectl(&["apply", "-f", dotted.to_str().unwrap()])
        .success();
    let message = hub
        .until_condition("clusters", "a.b", "Degraded", "True", Some("InvalidName"))
        .await;
    assert!(message.contains("DNS label"), "{message}");

    // A version atoll does not serve.
    let old = hub.file(
        "old.yaml",
        "apiVersion: atoll.dev/v1alpha1\nkind: HostedCluster\nmetadata: {name: old, namespace: clusters}\nspec: {kubernetesVersion: v1.30.2}\n",
    );
    hub.kubectl(&["apply", "-f", old.to_str().unwrap()])
        .success();
    let message = hub
        .until_condition(
            "clusters",
            "old",
            "Degraded",
            "True",
            Some("UnsupportedVersion"),
        )
        .await;
    assert!(
        message.contains("v1.35.0") && message.contains("v1.30.2"),
        "{message}"
    );

    // Kubernetes mode needs a hub on Kubernetes: atoll up's API server runs no pods.
    hub.atoll(&["hosted", "create", "kube", "--mode", "kubernetes"])
        .success();
    let message = hub
        .until_condition(
            "clusters",
            "kube",
            "Degraded",
            "True",
            Some("ModeUnavailable"),
        )
        .await;
    assert!(
        message.contains("mode Kubernetes")
            && message.contains("hub-controller")
            && message.contains("Embedded or Process"),
        "{message}"
    );

    // A port already in use.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    hub.atoll(&["hosted", "create", "busy", "--port", &port])
        .success();
    let message = hub
        .until_condition(
            "clusters",
            "busy",
            "APIServerAvailable",
            "False",
            Some("PortInUse"),
        )
        .await;
    assert!(message.contains(&port), "{message}");
    drop(taken);
    hub.until_available("busy").await;

    // A data directory that cannot be created, and a datastore that cannot be opened.
    hub.kubectl(&["create", "namespace", "team-x"]).success();
    std::fs::write(
        hub.hub_dir().join("hosted").join("team-x"),
        "not a directory",
    )
    .unwrap();
    hub.atoll(&["hosted", "create", "nodir", "-n", "team-x"])
        .success();
    hub.until_condition(
        "team-x",
        "nodir",
        "DatastoreAvailable",
        "False",
        Some("DataDirectoryFailed"),
    )
    .await;
    std::fs::create_dir_all(hub.hosted_dir("clusters", "brokendb").join("state.db")).unwrap();
    hub.atoll(&["hosted", "create", "brokendb"]).success();
    hub.until_condition(
        "clusters",
        "brokendb",
        "DatastoreAvailable",
        "False",
        Some("DatastoreFailed"),
    )
    .await;
    // Their neighbour is fine.
    hub.until_available("good").await;

    // A name a hub namespace already has: refused, and deleting the HostedCluster takes nothing.
    hub.kubectl(&["create", "namespace", "monitoring"])
        .success();
    hub.kubectl(&[
        "create",
        "configmap",
        "dashboards",
        "-n",
        "monitoring",
        "--from-literal=a=b",
    ])
    .success();
    hub.atoll(&["hosted", "create", "monitoring"]).success();
    hub.until_condition(
        "clusters",
        "monitoring",
        "Degraded",
        "True",
        Some("NameInUse"),
    )
    .await;
    hub.atoll(&["hosted", "delete", "monitoring", "--wait"])
        .success();
    hub.kubectl(&["get", "configmap", "dashboards", "-n", "monitoring"])
        .success();

    // A field that cannot change is refused, naming it, and the cluster stays as it is.
    for (patch, field, says) in [
        (
            r#"{"spec":{"mode":"Process"}}"#,
            "spec.mode",
            "mode cannot change",
        ),
        (
            r#"{"spec":{"storage":{"backend":"memory"}}}"#,
            "spec.storage.backend",
            "the storage backend cannot change",
        ),
    ] {
        let refused = hub
            .kubectl(&[
                "patch",
                "hostedcluster",
                "good",
                "-n",
                "clusters",
                "--type=merge",
                "-p",
                patch,
            ])
            .failure();
        assert!(
            refused.stderr.contains(field) && refused.stderr.contains(says),
            "{refused}"
        );
    }
    let good = hub.hosted("good").unwrap();
    assert_eq!(good["spec"]["mode"], "Embedded");
    hub.until_condition("clusters", "good", "Available", "True", None)
        .await;

    // Writes past the limits are refused with the reason; reads and deletes keep working.
    // A new cluster holds 60 objects of its own (namespaces, RBAC defaults, the agent's).
    hub.atoll(&[
        "hosted",
        "create",
        "small",
        "--max-objects",
        "100",
        "--wait",
    ])
    .success();
    let small = hub.member_kubeconfig("small");
    let mut refused = None;
    for i in 0..150 {
        let ran = kubectl(
            &small,
            &[
                "create",
                "configmap",
                &format!("c{i}"),
                "--from-literal=k=v",
            ],
        );
        if !ran.status.is_some_and(|s| s.success()) {
            refused = Some(ran);
            break;
        }
    }
    let refused = refused.expect("a create past the object limit is refused");
    assert!(
        refused.stderr.contains("forbidden")
            && refused.stderr.contains("limit")
            && refused.stderr.contains("HostedCluster clusters/small"),
        "{refused}"
    );
    kubectl(&small, &["get", "configmap", "c0"]).success();
    kubectl(&small, &["delete", "configmap", "c0"]).success();

    // Deleting a cluster while a Work is being applied to it: it goes, and its Works with it.
    let mut many = String::new();
    for i in 0..200 {
        many.push_str(&format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: m{i}, namespace: default}}\ndata: {{k: v}}\n---\n"
        ));
    }
    let many = hub.file("many.yaml", &many);
    hub.atoll(&[
        "work",
        "apply",
        "-f",
        many.to_str().unwrap(),
        "--clusters",
        "good",
        "--name",
        "many",
    ])
    .success();
    hub.atoll(&["hosted", "delete", "good", "--wait"]).success();
    assert!(
        eventually(Duration::from_secs(30), || {
            std::future::ready(
                hub.kubectl(&["get", "works", "-n", "good", "-o", "name"])
                    .stdout
                    .trim()
                    .is_empty(),
            )
        })
        .await,
        "the Works of a deleted hosted cluster go with it"
    );
    assert!(profile(&hub, "good").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hub_killed_while_creating_and_deleting_converges_with_nothing_orphaned() {
    let mut hub = Hub::start(0);
    for name in ["old-1", "old-2"] {
        hub.atoll(&["hosted", "create", name, "--wait"]).success();
    }
    hub.atoll(&["hosted", "create", "old-p", "--mode", "process", "--wait"])
        .success();
    let old_dirs: Vec<PathBuf> = ["old-1", "old-2", "old-p"]
        .iter()
        .map(|n| hub.hosted_dir("clusters", n))
        .collect();

    // Creates and deletes in flight, then SIGKILL.
    let mut yaml = String::new();
    for i in 0..4 {
        yaml.push_str(&format!(
            "apiVersion: atoll.dev/v1alpha1\nkind: HostedCluster\nmetadata: {{name: new-{i}, namespace: clusters}}\nspec: {{mode: {}}}\n---\n",
            if i == 0 { "Process" } else { "Embedded" }
        ));
    }
    let new = hub.file("new.yaml", &yaml);
    hub.kubectl(&["apply", "-f", new.to_str().unwrap()])
        .success();
    hub.kubectl(&[
        "delete",
        "hostedcluster",
        "old-1",
        "old-2",
        "old-p",
        "-n",
        "clusters",
        "--wait=false",
    ])
    .success();
    hub.process.kill9().unwrap();

    // No child outlives the hub.
    assert!(
        eventually(Duration::from_secs(15), || {
            std::future::ready(
                old_dirs.iter().all(|d| apiserver_pids(d).is_empty())
                    && apiserver_pids(&hub.hosted_dir("clusters", "new-0")).is_empty(),
            )
        })
        .await,
        "an atoll apiserver outlived its killed hub"
    );

    hub.start_again();
    for i in 0..4 {
        hub.until_available(&format!("new-{i}")).await;
    }
    let gone = eventually(Duration::from_secs(60), || {
        let gone = ["old-1", "old-2", "old-p"]
            .iter()
            .all(|n| hub.hosted(n).is_none() && profile(&hub, n).is_none());
        std::future::ready(gone && old_dirs.iter().all(|d| !d.exists()))
    })
    .await;
    if !gone {
        let left: Vec<String> = ["old-1", "old-2", "old-p"]
            .iter()
            .flat_map(|n| {
                let mut left = Vec::new();
                if let Some(hc) = hub.hosted(n) {
                    left.push(format!("HostedCluster {n}: {}", hc["status"]));
                }
                if profile(&hub, n).is_some() {
                    left.push(format!("ClusterProfile {n}"));
                }
                if hub.hosted_dir("clusters", n).exists() {
                    left.push(format!("data directory of {n}"));
                }
                left
            })
            .collect();
        let log = std::fs::read_to_string(hub.hub_dir().with_extension("log")).unwrap_or_default();
        panic!("the deleted clusters left {left:#?}\n--- hub log\n{log}");
    }
    assert!(old_dirs.iter().all(|d| apiserver_pids(d).is_empty()));
    assert_eq!(
        apiserver_pids(&hub.hosted_dir("clusters", "new-0")).len(),
        1
    );
    let clusters = hub.atoll(&["get", "clusters"]).success();
    let names: Vec<String> = clusters.rows()[1..].iter().map(|r| r[0].clone()).collect();
    assert_eq!(names, ["new-0", "new-1", "new-2", "new-3"], "{clusters}");
}

#[tokio::test(flavor = "multi_thread")]
async fn hub_controller_runs_hosted_clusters_given_a_data_directory() {
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    // The hub cluster: any Kubernetes API; here atoll's own server stands in for a real one.
    let hub_cluster = Process::apiserver_on_a_free_port(&dir.path().join("hub-cluster")).unwrap();
    let hub_kubeconfig = hub_cluster.kubeconfig();
    let atoll = |args: &[&str]| {
        let mut all = vec!["--kubeconfig", hub_kubeconfig.to_str().unwrap()];
        all.extend_from_slice(args);
        Tool::new(atoll_binary().unwrap())
            .env("RUST_BACKTRACE", "0")
            .run(&all)
    };
    let run = |flags: &[&str], log: &str| {
        let log = std::fs::File::create(dir.path().join(log)).unwrap();
        Command::new(atoll_tests::hub_controller_binary().unwrap())
            .env_clear()
            .env("KUBECONFIG", hub_cluster.kubeconfig())
            .args(["--grpc-addr", &free_addr().unwrap().to_string()])
            .args(["--metrics-addr", "127.0.0.1:0"])
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap()
    };

    // Without a data directory it runs none, and says how to give it one.
    let mut without = run(&[], "without.log");
    let installed = eventually(Duration::from_secs(30), || {
        std::future::ready(
            atoll(&["hosted", "create", "nowhere"])
                .status
                .is_some_and(|s| s.success()),
        )
    })
    .await;
    assert!(installed, "hub-controller installs the HostedCluster CRD");
    let shown = eventually(Duration::from_secs(30), || {
        let ran = kubectl(
            &hub_cluster.kubeconfig(),
            &[
                "get",
                "hostedcluster",
                "nowhere",
                "-n",
                "clusters",
                "-o",
                "jsonpath={.status.conditions[?(@.type==\"Degraded\")].message}",
            ],
        );
        std::future::ready(ran.stdout.contains("--hosted-data-dir"))
    })
    .await;
    assert!(shown, "a hub without a data directory says so");
    without.kill().unwrap();
    without.wait().unwrap();

    // With one, both modes run; Process mode runs the atoll binary beside hub-controller.
    let data = dir.path().join("hosted");
    let mut with = run(
        &[
            "--hosted-data-dir",
            data.to_str().unwrap(),
            "--hosted-host",
            "localhost",
        ],
        "with.log",
    );
    atoll(&["hosted", "delete", "nowhere", "--wait"]).success();
    atoll(&["hosted", "create", "emb", "--wait"]).success();
    atoll(&["hosted", "create", "proc", "--mode", "process", "--wait"])
        .success()
        .stdout_has("https://localhost:");
    for name in ["emb", "proc"] {
        let kubeconfig = dir.path().join(format!("{name}.kubeconfig"));
        atoll(&["kubeconfig", name, "-o", kubeconfig.to_str().unwrap()]).success();
        kubectl(
            &kubeconfig,
            &[
                "create",
                "configmap",
                "hello",
                "--from-literal=from=hub-controller",
            ],
        )
        .success();
        kubectl(
            &kubeconfig,
            &["get", "configmap", "hello", "-o", "jsonpath={.data.from}"],
        )
        .success()
        .stdout_is("hub-controller");
        assert!(data.join("clusters").join(name).join("state.db").exists());
    }
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(with.id().to_string())
        .status();
    assert!(
        with.wait().unwrap().success(),
        "hub-controller stops cleanly with its hosted clusters"
    );
    assert!(apiserver_pids(&data.join("clusters").join("proc")).is_empty());
}

/// The keys under `prefix` in the etcd at `endpoints`.
async fn etcd_keys(endpoints: &str, prefix: &str) -> Vec<String> {
    let mut client = etcd_client::Client::connect(endpoints.split(',').collect::<Vec<_>>(), None)
        .await
        .unwrap();
    let options = etcd_client::GetOptions::new()
        .with_prefix()
        .with_keys_only();
    client
        .get(prefix, Some(options))
        .await
        .unwrap()
        .kvs()
        .iter()
        .map(|kv| String::from_utf8_lossy(kv.key()).into_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn hosted_clusters_on_etcd_keep_their_data_there_and_leave_none_behind() {
    let dir = tempfile::tempdir().unwrap();
    let etcd = atoll_tests::etcd_cluster::EtcdCluster::start(&dir.path().join("etcd"), 1).unwrap();
    let endpoints = etcd.endpoints();
    let on_etcd = [
        "--storage",
        "etcd",
        "--etcd-endpoints",
        endpoints.as_str(),
        "--etcd-prefix",
        "/fleet",
    ];

    // A hosted prefix that nests with the hub's own is refused at start, naming both flags.
    let mut nested = vec!["up", "--data-dir"];
    let nested_dir = dir.path().join("nested");
    nested.push(nested_dir.to_str().unwrap());
    nested.extend(on_etcd);
    nested.extend(["--hosted-etcd-prefix", "/fleet/hosted"]);
    Tool::new(atoll_binary().unwrap())
        .env("RUST_BACKTRACE", "0")
        .run(&nested)
        .failure()
        .stderr_has("--hosted-etcd-prefix")
        .stderr_has("nests with the hub's own \"/fleet\" (--etcd-prefix)");
    Tool::new(atoll_binary().unwrap())
        .run(&["up", "--hosted-etcd-prefix", "fleet"])
        .failure()
        .stderr_has("invalid value 'fleet' for '--hosted-etcd-prefix <PREFIX>'");

    // A hub on etcd keeps its hosted clusters on etcd under its prefix followed by `-hosted`.
    let mut hub = Hub::start_with(0, dir, &on_etcd);
    hub.atoll(&["hosted", "create", "e1", "--storage", "etcd", "--wait"])
        .success();
    let create_p1 = [
        "hosted",
        "create",
        "p1",
        "--mode",
        "process",
        "--storage",
        "etcd",
        "--wait",
    ];
    hub.atoll(&create_p1).success();
    let mut prefixes = Vec::new();
    for name in ["e1", "p1"] {
        let uid = hub.hosted(name).unwrap()["metadata"]["uid"]
            .as_str()
            .unwrap()
            .to_owned();
        let prefix = format!("/fleet-hosted/clusters/{name}/{uid}");
        let message = hub
            .until_condition("clusters", name, "DatastoreAvailable", "True", None)
            .await;
        assert_eq!(
            message,
            format!("the data is kept in etcd at {endpoints} under {prefix}")
        );
        let saved =
            std::fs::read_to_string(hub.hosted_dir("clusters", name).join("hosted.json")).unwrap();
        assert!(
            saved.contains(&format!("\"etcdPrefix\": \"{prefix}\"")),
            "{saved}"
        );
        let kubeconfig = hub.member_kubeconfig(name);
        kubectl(&kubeconfig, &["create", "namespace", "team"]).success();
        kubectl(
            &kubeconfig,
            &[
                "create",
                "configmap",
                "settings",
                "-n",
                "team",
                "--from-literal=color=teal",
            ],
        )
        .success();
        let keys = etcd_keys(&endpoints, &format!("{prefix}/")).await;
        assert!(
            keys.contains(&format!("{prefix}/registry/core/configmaps/team/settings")),
            "{name}'s objects are in etcd under its prefix: {keys:?}"
        );
        prefixes.push((name, prefix, kubeconfig));
    }
    assert!(
        apiserver_pids(&hub.hosted_dir("clusters", "p1"))
            .first()
            .is_some_and(|pid| {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
                String::from_utf8_lossy(&cmdline).contains(&prefixes[1].1)
            }),
        "p1's child serves from its etcd prefix"
    );

    // The backend cannot change, from etcd as to it.
    hub.kubectl(&[
        "patch",
        "hostedcluster",
        "e1",
        "-n",
        "clusters",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"storage":{"backend":"sqlite"}}}"#,
    ])
    .failure()
    .stderr_has("the storage backend cannot change");

    // A hub restart, and a suspend and resume: the data stays.
    hub.restart();
    for (name, _, kubeconfig) in &prefixes {
        hub.until_available(name).await;
        assert_eq!(color(kubeconfig), "teal", "{name} after a hub restart");
    }
    hub.atoll(&["hosted", "suspend", "e1"]).success();
    let kept = hub
        .until_condition(
            "clusters",
            "e1",
            "DatastoreAvailable",
            "False",
            Some("Suspended"),
        )
        .await;
    assert!(
        kept.contains(&format!(
            "kept in etcd at {endpoints} under {}",
            prefixes[0].1
        )),
        "{kept}"
    );
    kubectl(&prefixes[0].2, &["get", "namespaces"]).failure();
    hub.atoll(&["hosted", "resume", "e1", "--wait"]).success();
    assert_eq!(color(&prefixes[0].2), "teal", "e1 after a resume");

    // The data directory of a cluster on etcd lost (as on another hub replica): its record kept
    // on the hub brings it back on the same port and prefix, with its data and agent.
    let e1_dir = hub.hosted_dir("clusters", "e1");
    let record = std::fs::read_to_string(e1_dir.join("hosted.json")).unwrap();
    let url = hub.hosted("e1").unwrap()["status"]["url"].clone();
    assert!(hub.process.terminate().unwrap().success());
    std::fs::remove_dir_all(&e1_dir).unwrap();
    hub.start_again();
    hub.until_available("e1").await;
    assert_eq!(hub.hosted("e1").unwrap()["status"]["url"], url);
    let recovered = std::fs::read_to_string(e1_dir.join("hosted.json")).unwrap();
    let parse = |text: &str| serde_json::from_str::<Value>(text).unwrap();
    assert_eq!(parse(&recovered), parse(&record));
    assert_eq!(
        color(&hub.member_kubeconfig("e1")),
        "teal",
        "e1 after losing its directory"
    );
    let kept = [
        "get",
        "secrets",
        "-n",
        "atoll-system",
        "-l",
        "atoll.dev/hosted-datadir",
        "-o",
        "name",
    ];
    assert_eq!(hub.kubectl(&kept).success().stdout.lines().count(), 2);

    // Deleted: every key of each cluster goes, and the hub's own stay.
    for (name, prefix, _) in &prefixes {
        hub.atoll(&["hosted", "delete", name, "--wait"]).success();
        assert_eq!(
            etcd_keys(&endpoints, prefix).await,
            Vec::<String>::new(),
            "{name}"
        );
    }
    assert_eq!(
        etcd_keys(&endpoints, "/fleet-hosted").await,
        Vec::<String>::new()
    );
    assert!(!etcd_keys(&endpoints, "/fleet/").await.is_empty());
    assert_eq!(
        hub.kubectl(&kept).success().stdout,
        "",
        "the kept records go too"
    );

    // A hub with no etcd for hosted clusters says so, naming the field and the flag.
    let plain = Hub::start(0);
    plain
        .atoll(&["hosted", "create", "e2", "--storage", "etcd"])
        .success();
    let message = plain
        .until_condition(
            "clusters",
            "e2",
            "Degraded",
            "True",
            Some("StorageUnavailable"),
        )
        .await;
    assert!(
        message.contains("spec.storage.backend") && message.contains("--hosted-etcd-endpoints"),
        "{message}"
    );
    drop(etcd);
}

/// A served cluster on SQLite whose data directory is gone (on another hub replica's machine, or
/// lost) is not made again empty: a blocking condition says where its data was and what to do,
/// and nothing is created in its place; with the directory back, it serves its data again.
#[tokio::test(flavor = "multi_thread")]
async fn a_served_cluster_whose_data_directory_is_gone_is_not_made_again_empty() {
    let mut hub = Hub::start(0);
    hub.atoll(&["hosted", "create", "web", "--wait"]).success();
    let web = hub.member_kubeconfig("web");
    kubectl(&web, &["create", "configmap", "kept", "--from-literal=k=v"]).success();
    assert!(hub.process.terminate().unwrap().success());
    let dir = hub.hosted_dir("clusters", "web");
    let aside = hub.hub_dir().with_file_name("web-aside");
    std::fs::rename(&dir, &aside).unwrap();

    hub.start_again();
    let message = hub
        .until_condition(
            "clusters",
            "web",
            "Degraded",
            "True",
            Some("DataDirectoryMissing"),
        )
        .await;
    assert!(
        message.contains(&dir.display().to_string())
            && message.contains("does not make it again empty"),
        "{message}"
    );
    let hc = hub.hosted("web").unwrap();
    assert_eq!(
        condition(&hc, "Available").unwrap()["status"],
        "False",
        "{hc:#}"
    );
    assert!(
        !dir.exists(),
        "an empty data directory was made in its place"
    );

    // The directory back: the cluster serves its data again.
    assert!(hub.process.terminate().unwrap().success());
    std::fs::rename(&aside, &dir).unwrap();
    hub.start_again();
    hub.until_condition("clusters", "web", "Available", "True", None)
        .await;
    assert!(
        eventually(Duration::from_secs(30), || {
            std::future::ready(
                kubectl(
                    &web,
                    &["get", "configmap", "kept", "-o", "jsonpath={.data.k}"],
                )
                .stdout
                .trim()
                    == "v",
            )
        })
        .await,
        "the cluster did not serve its data again"
    );

    // A cluster in memory whose directory is gone comes back empty, by its nature, and its
    // agent joins again as itself (the member record takes the new directory's join secret).
    hub.atoll(&["hosted", "create", "mem", "--storage", "memory", "--wait"])
        .success();
    assert!(hub.process.terminate().unwrap().success());
    std::fs::remove_dir_all(hub.hosted_dir("clusters", "mem")).unwrap();
    let log = hub.hub_dir().with_extension("log");
    let issued = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            // (The log is coloured: the field's name and value are apart.)
            .filter(|l| l.contains("credential issued") && l.contains("mem"))
            .count()
    };
    let before = issued();
    hub.start_again();
    assert!(
        eventually(Duration::from_secs(30), || std::future::ready(
            issued() > before
        ))
        .await,
        "the agent of mem did not join again: {}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        !text.contains("has already joined this hub from another agent"),
        "{text}"
    );
    hub.until_condition("clusters", "mem", "Available", "True", None)
        .await;
}
