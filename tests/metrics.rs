//! Health and metrics end to end with the real binaries: `atoll up` serves `/livez`, `/readyz`
//! and `/metrics` on `--metrics-addr`, and so does a member's `work-agent`. After a few kubectl
//! requests, a join and a Work, a scrape shows what a platform engineer alerts on: requests by
//! verb, resource and code, stored objects, the connected agent, its heartbeats and join, its
//! cluster healthy, the Work Applied, the controllers' reconciles, the gRPC calls, and on the
//! agent its applies and its open connection to the hub. A `--metrics-addr` that does not parse
//! or cannot be bound stops the binary at start, naming the flag.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use atoll_tests::{
    Process, Ran, Tool, atoll_binary, eventually, free_addr, http_get as get, work_agent_binary,
};

/// One sample of the text format: name, labels, value.
type Sample = (String, BTreeMap<String, String>, f64);

/// Parses the Prometheus text format (comments skipped); panics on a line that is not a sample,
/// so that a malformed exposition fails the test.
fn parse(text: &str) -> Vec<Sample> {
    let mut samples = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("{line:?}"));
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("{line:?}"));
        let (name, labels) = match series.split_once('{') {
            None => (series, BTreeMap::new()),
            Some((name, rest)) => (name, parse_labels(rest.strip_suffix('}').unwrap())),
        };
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "{line:?}"
        );
        samples.push((name.to_owned(), labels, value));
    }
    samples
}

fn parse_labels(text: &str) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    let mut rest = text;
    while !rest.is_empty() {
        let (key, after) = rest.split_once("=\"").unwrap_or_else(|| panic!("{text:?}"));
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next() {
                Some((_, '\\')) => value.push(chars.next().map(|(_, c)| c).unwrap_or('\\')),
                Some((i, '"')) => break i,
                Some((_, c)) => value.push(c),
                None => panic!("unterminated label value in {text:?}"),
            }
        };
        labels.insert(key.to_owned(), value);
        rest = after[end + 1..].trim_start_matches(',');
    }
    labels
}

/// The sum of the samples named `name` that carry every label of `labels`.
fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|(n, l, _)| {
            n == name
                && labels
                    .iter()
                    .all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|(_, _, v)| v)
        .sum()
}

/// Whether any sample is named `name`.
fn has(samples: &[Sample], name: &str) -> bool {
    samples.iter().any(|(n, _, _)| n == name)
}

/// A scrape of `/metrics`, parsed.
fn scrape(addr: SocketAddr) -> Vec<Sample> {
    let (code, body) = get(addr, "/metrics").expect("the metrics endpoint answers");
    assert_eq!(code, 200, "{body}");
    parse(&body)
}

/// A `work-agent` process, killed when dropped.
struct Agent(Child);

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_agent(
    hub_dir: &Path,
    grpc: &str,
    member: &Path,
    metrics: SocketAddr,
    log: &Path,
) -> Agent {
    let log = std::fs::File::create(log).unwrap();
    let child = Command::new(work_agent_binary().unwrap())
        .env_clear()
        .env("ATOLL_HUB", format!("https://{grpc}"))
        .env("ATOLL_HUB_CA", hub_dir.join("hub-ca.crt"))
        .env(
            "ATOLL_BOOTSTRAP_TOKEN_FILE",
            hub_dir.join("bootstrap-token"),
        )
        .env("ATOLL_METRICS_ADDR", metrics.to_string())
        .args(["--cluster-name", "east", "--kubeconfig"])
        .arg(member)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    Agent(child)
}

/// Waits until `/readyz` at `addr` answers 200.
async fn until_ready(addr: SocketAddr, what: &str, logs: &Path) {
    let ready = eventually(Duration::from_secs(30), || {
        std::future::ready(get(addr, "/readyz").is_some_and(|(code, _)| code == 200))
    })
    .await;
    assert!(
        ready,
        "{what} did not become ready: {:?}\n{}",
        get(addr, "/readyz"),
        tail_of_logs(logs)
    );
}

/// The last lines of every log in `dir`.
fn tail_of_logs(dir: &Path) -> String {
    let mut out = String::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "log") {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(30)..].join("\n");
            out.push_str(&format!("--- {}\n{tail}\n", path.display()));
        }
    }
    out
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> Ran {
    atoll_tests::kubectl_at(kubeconfig, args)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_scrape_shows_the_requests_the_fleet_and_the_work_a_user_made() {
    let dir = tempfile::tempdir().unwrap();
    let hub_dir = dir.path().join("hub");
    let grpc = free_addr().unwrap().to_string();
    let hub_metrics = free_addr().unwrap();
    let _hub = Process::hub_with(
        &hub_dir,
        free_addr().unwrap(),
        &[
            "--grpc-addr",
            &grpc,
            "--auto-accept",
            "--lease-seconds",
            "1",
            "--metrics-addr",
            &hub_metrics.to_string(),
        ],
    )
    .unwrap();
    until_ready(hub_metrics, "the hub", dir.path()).await;
    assert_eq!(
        get(hub_metrics, "/livez").unwrap(),
        (200, "ok\n".to_owned())
    );
    assert_eq!(get(hub_metrics, "/nothing-here").unwrap().0, 404);

    // A user's requests, through kubectl.
    let hub_kubeconfig = hub_dir.join("hub.kubeconfig");
    kubectl(&hub_kubeconfig, &["get", "namespaces"]).success();
    kubectl(
        &hub_kubeconfig,
        &["create", "configmap", "settings", "--from-literal=a=1"],
    )
    .success();
    kubectl(&hub_kubeconfig, &["get", "configmap", "settings"]).success();
    kubectl(&hub_kubeconfig, &["get", "configmap", "missing"]).failure();

    // A member cluster joins, and a Work is applied to it.
    let member = Process::apiserver_on_a_free_port(&dir.path().join("east")).unwrap();
    let agent_metrics = free_addr().unwrap();
    let _agent = start_agent(
        &hub_dir,
        &grpc,
        &member.kubeconfig(),
        agent_metrics,
        &dir.path().join("east-agent.log"),
    );
    until_ready(agent_metrics, "the agent", dir.path()).await;
    let file = dir.path().join("work.yaml");
    std::fs::write(
        &file,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shipped, namespace: default}\ndata: {color: blue}\n",
    )
    .unwrap();
    let kubeconfig = hub_kubeconfig.to_str().unwrap();
    let file = file.to_str().unwrap();
    Tool::new(atoll_binary().unwrap())
        .run(&[
            "--kubeconfig",
            kubeconfig,
            "work",
            "apply",
            "-f",
            file,
            "--clusters",
            "east",
            "--name",
            "shipped",
            "--wait",
            "--timeout",
            "60s",
        ])
        .success();

    // The hub: what moved is seen at the next scrape; the fleet's state once it is reported.
    let mut hub = Vec::new();
    let settled = eventually(Duration::from_secs(30), || {
        hub = scrape(hub_metrics);
        std::future::ready(
            value(
                &hub,
                "atoll_hub_works",
                &[("condition", "Applied"), ("status", "True")],
            ) == 1.0
                && value(&hub, "atoll_hub_connected_agents", &[]) == 1.0
                && value(
                    &hub,
                    "atoll_hub_clusters",
                    &[("condition", "ControlPlaneHealthy"), ("status", "True")],
                ) == 1.0,
        )
    })
    .await;
    let shown = || {
        hub.iter()
            .filter(|(n, _, _)| n.starts_with("atoll_") || n.starts_with("apiserver_storage"))
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(
        settled,
        "the fleet's state did not show:\n{}\n{}",
        shown(),
        tail_of_logs(dir.path())
    );
    let requests = |verb: &str, resource: &str, code: &str| {
        value(
            &hub,
            "apiserver_request_total",
            &[("verb", verb), ("resource", resource), ("code", code)],
        )
    };
    assert!(requests("LIST", "namespaces", "200") >= 1.0, "{}", shown());
    assert!(requests("POST", "configmaps", "201") >= 1.0);
    assert!(requests("GET", "configmaps", "200") >= 1.0);
    assert!(requests("GET", "configmaps", "404") >= 1.0);
    // `atoll work apply` applies a WorkPlacement, which the hub stamps into a Work.
    assert!(
        value(
            &hub,
            "apiserver_request_total",
            &[("verb", "APPLY"), ("resource", "workplacements")]
        ) >= 1.0,
        "{}",
        shown()
    );
    assert!(
        value(
            &hub,
            "apiserver_request_duration_seconds_count",
            &[("verb", "LIST"), ("resource", "namespaces")]
        ) >= 1.0
    );
    assert!(
        value(
            &hub,
            "apiserver_storage_objects",
            &[("resource", "configmaps")]
        ) >= 1.0
    );
    assert_eq!(
        value(
            &hub,
            "apiserver_storage_objects",
            &[("resource", "works.multicluster.x-k8s.io")]
        ),
        1.0,
        "{}",
        shown()
    );
    assert_eq!(
        value(&hub, "atoll_hub_joins_total", &[("result", "accepted")]),
        1.0
    );
    assert_eq!(value(&hub, "atoll_hub_join_refusals_total", &[]), 0.0);
    // The placement rolled out: counted complete, its one cluster available.
    assert_eq!(
        value(
            &hub,
            "atoll_hub_placements",
            &[("reason", "RolloutComplete")]
        ),
        1.0,
        "{}",
        shown()
    );
    assert_eq!(
        value(
            &hub,
            "atoll_hub_placement_clusters",
            &[("state", "available")]
        ),
        1.0
    );
    assert_eq!(
        value(&hub, "atoll_hub_placement_rollouts_completed_total", &[]),
        1.0
    );
    assert!(value(&hub, "atoll_hub_heartbeats_total", &[]) >= 1.0);
    assert_eq!(
        value(
            &hub,
            "atoll_hub_works",
            &[("condition", "Applied"), ("status", "False")]
        ),
        0.0
    );
    let grpc_ok = |method: &str| {
        value(
            &hub,
            "grpc_server_handled_total",
            &[("grpc_method", method), ("grpc_code", "OK")],
        )
    };
    assert_eq!(grpc_ok("Join"), 1.0);
    // The agent's sync stream is open: started, not yet handled.
    assert_eq!(
        value(
            &hub,
            "grpc_server_started_total",
            &[("grpc_method", "Sync")]
        ),
        1.0
    );
    assert_eq!(
        value(
            &hub,
            "grpc_server_handled_total",
            &[("grpc_method", "Sync")]
        ),
        0.0
    );
    assert!(grpc_ok("Heartbeat") >= 1.0);
    assert!(grpc_ok("ReportWorkStatus") >= 1.0);
    assert!(
        value(
            &hub,
            "grpc_server_handling_seconds_count",
            &[("grpc_method", "Heartbeat")]
        ) >= 1.0
    );
    assert!(
        value(
            &hub,
            "controller_runtime_reconcile_total",
            &[
                ("controller", "ClusterProfile status"),
                ("result", "success")
            ]
        ) >= 1.0,
        "{}",
        shown()
    );
    assert!(
        value(
            &hub,
            "controller_runtime_reconcile_total",
            &[("controller", "WorkPlacement"), ("result", "success")]
        ) >= 1.0
    );
    assert!(has(
        &hub,
        "controller_runtime_reconcile_time_seconds_bucket"
    ));

    // The agent: connected, holding the Work, which it applied without an error.
    let agent = scrape(agent_metrics);
    assert_eq!(value(&agent, "atoll_agent_hub_connected", &[]), 1.0);
    assert_eq!(value(&agent, "atoll_agent_works", &[]), 1.0);
    assert!(value(&agent, "atoll_agent_applies_total", &[]) >= 1.0);
    assert_eq!(value(&agent, "atoll_agent_apply_errors_total", &[]), 0.0);
    assert!(value(&agent, "atoll_agent_apply_duration_seconds_count", &[]) >= 1.0);
    assert_eq!(get(agent_metrics, "/livez").unwrap().0, 200);

    // Both processes' own figures, named as every Prometheus client library names them.
    for (who, samples) in [("the hub", &hub), ("the agent", &agent)] {
        let resident = value(samples, "process_resident_memory_bytes", &[]);
        assert!(resident > 1_000_000.0, "{who}: resident {resident}");
        assert!(value(samples, "process_virtual_memory_bytes", &[]) >= resident);
        assert!(value(samples, "process_open_fds", &[]) >= 3.0, "{who}");
        assert!(value(samples, "process_max_fds", &[]) >= value(samples, "process_open_fds", &[]));
        assert!(
            value(samples, "process_cpu_seconds_total", &[]) > 0.0,
            "{who}"
        );
        let started = value(samples, "process_start_time_seconds", &[]);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        assert!(
            started > now - 600.0 && started <= now + 1.0,
            "{who}: started {started}"
        );
    }
}

#[test]
fn a_bad_metrics_address_stops_the_binaries_at_start_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("hub");
    let data = data.to_str().unwrap();
    let api = free_addr().unwrap().to_string();
    let up = |metrics: &str| {
        Tool::new(atoll_binary().unwrap())
            .env("RUST_BACKTRACE", "0")
            .run(&[
                "up",
                "--data-dir",
                data,
                "--api-addr",
                &api,
                "--grpc-addr",
                &free_addr().unwrap().to_string(),
                "--hosted-clusters",
                "0",
                "--metrics-addr",
                metrics,
            ])
    };
    up("not-an-address")
        .failure()
        .stderr_has("--metrics-addr")
        .stderr_has("not-an-address");
    up("127.0.0.1:99999").failure().stderr_has("--metrics-addr");
    // An address in use.
    let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = holder.local_addr().unwrap().to_string();
    up(&taken)
        .failure()
        .stderr_has(&format!("cannot serve --metrics-addr {taken}"));

    let agent = Tool::new(work_agent_binary().unwrap())
        .env("RUST_BACKTRACE", "0")
        .run(&[
            "--hub",
            "https://127.0.0.1:9",
            "--hub-ca",
            "/nonexistent",
            "--bootstrap-token-file",
            "/nonexistent",
            "--cluster-name",
            "east",
            "--metrics-addr",
            "bad:address:here",
        ]);
    agent.failure().stderr_has("--metrics-addr");
    let controller = Tool::new(atoll_tests::hub_controller_binary().unwrap())
        .env("RUST_BACKTRACE", "0")
        .run(&["--metrics-addr", "nowhere"]);
    controller.failure().stderr_has("--metrics-addr");
}
