//! atoll's packages against the binaries they deploy, and the join of a member cluster with
//! `atoll agent-manifests`.
//!
//! - The Dockerfile copies the workspace's binary targets, runs as a user that is not root, and
//!   exposes the ports the binaries listen on by default (read from their `--help`).
//! - The Helm charts render (`helm template`) the same objects as the kustomizations
//!   (`kubectl kustomize`), with the same values (two hub replicas, leader-elected, with a
//!   PodDisruptionBudget and a rolling update); helm 3 and helm 4 install, upgrade (three
//!   replicas, restricted agent RBAC) and uninstall them on `atoll apiserver`,
//!   and `kubectl apply --dry-run=server -k` accepts the kustomizations there.
//! - Every flag and environment variable the charts, the kustomizations and `atoll
//!   agent-manifests` give a container is one its binary declares, and the binary parses them all
//!   (it fails later, for want of a cluster, never on its command line).
//! - `atoll agent-manifests --cluster east` applied with kubectl to an `atoll apiserver` standing in
//!   for the member, and `work-agent` started as the Deployment starts it (its command, its
//!   environment from the ConfigMap and the env list, the Secret's keys as files where the volume
//!   is mounted), joins `atoll up`'s hub and receives a Work. Bad input is refused, naming the
//!   flag, and stores nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use atoll_tests::{
    Cluster, Process, Ran, Tool, atoll_binary, client_binary, eventually, free_addr,
    hub_controller_binary, kubectl_at, work_agent_binary,
};
use base64::Engine as _;
use serde_json::{Value, json};

/// The workspace's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate is in the workspace")
        .to_owned()
}

fn path(relative: &str) -> String {
    root().join(relative).to_str().unwrap().to_owned()
}

/// A YAML stream's objects.
fn documents(text: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|d| serde::Deserialize::deserialize(d).expect("a YAML document"))
        .filter(|v: &Value| !v.is_null())
        .collect()
}

/// kubectl with a HOME of its own and no cluster.
fn kubectl(home: &Path) -> Tool {
    Tool::new(client_binary("kubectl").unwrap()).env("HOME", home)
}

/// `kubectl kustomize DIR`, the objects.
fn kustomize(home: &Path, dir: &str) -> Vec<Value> {
    documents(
        &kubectl(home)
            .run(&["kustomize", &path(dir)])
            .success()
            .stdout,
    )
}

/// `helm template` of a chart of `charts/` into `atoll-system` with `--set` values.
fn helm_template(home: &Path, chart: &str, set: &[&str]) -> Vec<Value> {
    let helm = Tool::new(client_binary("helm").unwrap()).env("HOME", home);
    let chart = path(&format!("charts/{chart}"));
    let mut args = vec!["template", "atoll", &chart, "-n", "atoll-system"];
    for value in set {
        args.extend(["--set", value]);
    }
    documents(&helm.run(&args).success().stdout)
}

/// `BINARY --help`: the long flags it declares and the environment variables it reads.
fn declared(binary: &Path) -> (BTreeSet<String>, BTreeSet<String>) {
    let help = Tool::new(binary.to_owned())
        .run(&["--help"])
        .success()
        .stdout;
    let mut flags = BTreeSet::new();
    let mut envs = BTreeSet::new();
    for line in help.lines() {
        let line = line.trim_start();
        if let Some(flag) = line
            .split([',', ' ', '='])
            .find(|w| w.starts_with("--"))
            .filter(|_| line.starts_with('-'))
        {
            flags.insert(flag.to_owned());
        }
        if let Some(at) = line.find("[env: ") {
            let rest = &line[at + 6..];
            let end = rest.find(['=', ']']).unwrap_or(rest.len());
            envs.insert(rest[..end].to_owned());
        }
    }
    assert!(
        flags.contains("--metrics-addr") && envs.contains("ATOLL_METRICS_ADDR"),
        "cannot read the flags of {}:\n{help}",
        binary.display()
    );
    (flags, envs)
}

/// `[default: VALUE]` of `--FLAG` in `BINARY --help`.
fn default_of(binary: &Path, flag: &str) -> String {
    let help = Tool::new(binary.to_owned())
        .run(&["--help"])
        .success()
        .stdout;
    let mut lines = help
        .lines()
        .skip_while(|l| !l.trim_start().starts_with(flag));
    // The flag's line, then its help up to the next flag (clap's long layout, which a flag
    // with a paragraph of help turns on for all, puts blank lines inside a flag's help).
    let first = lines.next().unwrap_or_default();
    let block: String = std::iter::once(first)
        .chain(lines.take_while(|l| !l.trim_start().starts_with('-')))
        .collect::<Vec<_>>()
        .join(" ");
    let at = block
        .find("[default: ")
        .unwrap_or_else(|| panic!("{flag} has no default in:\n{help}"));
    let rest = &block[at + 10..];
    rest[..rest.find(']').unwrap()].to_owned()
}

fn port_of(addr: &str) -> u16 {
    addr.rsplit(':').next().unwrap().parse().unwrap()
}

/// The Dockerfile's instructions, continuation lines joined, comments dropped.
fn dockerfile() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(root().join("Dockerfile")).unwrap();
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') || (trimmed.is_empty() && current.is_empty()) {
            continue;
        }
        if let Some(part) = trimmed.strip_suffix('\\') {
            current.push_str(part);
            current.push(' ');
            continue;
        }
        current.push_str(trimmed);
        let (word, rest) = current.split_once(' ').unwrap_or((&current, ""));
        out.push((word.to_uppercase(), rest.trim().to_owned()));
        current.clear();
    }
    out
}

/// The binary targets of the workspace's members, from `cargo metadata`.
fn workspace_binaries() -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: Value = serde_json::from_slice(&out.stdout).unwrap();
    metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap().iter())
        .filter(|t| t["kind"].as_array().unwrap().iter().any(|k| k == "bin"))
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_dockerfile_builds_the_workspaces_binaries_and_runs_them_as_non_root_on_their_ports() {
    let instructions = dockerfile();
    let stages: Vec<usize> = instructions
        .iter()
        .enumerate()
        .filter(|(_, (word, _))| word == "FROM")
        .map(|(i, _)| i)
        .collect();
    assert!(stages.len() >= 2, "not multi-stage: {instructions:?}");
    let builder = &instructions[stages[0]].1;
    assert!(
        builder.contains("rust:") && builder.ends_with(" AS builder"),
        "{builder}"
    );
    let last = *stages.last().unwrap();
    let runtime = &instructions[last].1;
    assert!(
        !runtime.contains("rust"),
        "the runtime image is the builder's: {runtime}"
    );
    let final_stage = &instructions[last..];

    // The binaries: built by name, copied by name, each a binary target of the workspace.
    let bins = workspace_binaries();
    let build = instructions[..last]
        .iter()
        .find(|(w, r)| w == "RUN" && r.contains("cargo build"))
        .expect("a cargo build");
    assert!(
        build.1.contains("--release") && build.1.contains("--locked"),
        "{build:?}"
    );
    // The image stores in etcd too (`--storage etcd`): the feature the `atoll` package declares.
    assert!(build.1.contains("--features atoll/etcd"), "{build:?}");
    let cli =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../cli/Cargo.toml"))
            .unwrap();
    assert!(
        cli.lines()
            .any(|l| l.starts_with("etcd = [") && l.contains("\"atoll-apiserver/etcd\"")),
        "the atoll package has no etcd feature"
    );
    let built: BTreeSet<String> = build
        .1
        .split_whitespace()
        .collect::<Vec<_>>()
        .windows(2)
        .filter(|w| w[0] == "--bin")
        .map(|w| w[1].to_owned())
        .collect();
    let copy = final_stage
        .iter()
        .find(|(w, r)| w == "COPY" && r.starts_with("--from=builder"))
        .expect("a COPY --from=builder");
    let mut words: Vec<&str> = copy.1.split_whitespace().skip(1).collect();
    let destination = words.pop().unwrap();
    assert_eq!(destination, "/usr/local/bin/");
    let copied: BTreeSet<String> = words
        .iter()
        .map(|w| w.rsplit('/').next().unwrap().to_owned())
        .collect();
    assert_eq!(copied, built, "what is built is what is copied");
    for name in ["hub-controller", "work-agent"] {
        assert!(
            copied.contains(name),
            "{name} is not in the image: {copied:?}"
        );
    }
    assert!(
        copied.is_subset(&bins),
        "{copied:?} are not all binary targets of the workspace ({bins:?})"
    );
    // The manifests' `command`s are on the image's PATH.
    for manifest in ["manifests/hub/hub.yaml", "manifests/agent/base/agent.yaml"] {
        let text = std::fs::read_to_string(root().join(manifest)).unwrap();
        for object in documents(&text) {
            for c in containers(&object) {
                let command = c["command"][0].as_str().unwrap();
                assert!(
                    copied.contains(command),
                    "{manifest}: {command} is not in the image"
                );
            }
        }
    }

    // Not root.
    let user = final_stage
        .iter()
        .rfind(|(w, _)| w == "USER")
        .map(|(_, r)| r.clone())
        .expect("a USER in the runtime stage");
    let uid = user.split(':').next().unwrap();
    assert!(
        uid != "root" && uid.parse::<u32>().is_ok_and(|n| n != 0),
        "the runtime user is {user}"
    );

    // The ports: those the binaries listen on by default.
    let exposed: BTreeSet<u16> = final_stage
        .iter()
        .filter(|(w, _)| w == "EXPOSE")
        .flat_map(|(_, r)| r.split_whitespace().map(|p| p.parse::<u16>().unwrap()))
        .collect();
    let hub = hub_controller_binary().unwrap();
    let agent = work_agent_binary().unwrap();
    let defaults: BTreeSet<u16> = [
        default_of(&hub, "--grpc-addr"),
        default_of(&hub, "--metrics-addr"),
        default_of(&agent, "--metrics-addr"),
    ]
    .iter()
    .map(|a| port_of(a))
    .collect();
    assert_eq!(exposed, defaults);
    assert_eq!(defaults, BTreeSet::from([9443, 8081, 8082]));
}

/// The containers of a workload object.
fn containers(object: &Value) -> Vec<Value> {
    object["spec"]["template"]["spec"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The objects by `Kind/name`, with what only one of the two tools adds taken out: labels and
/// annotations (helm's release labels), the pod template's metadata, helm's imagePullPolicy, and
/// the hash kustomize puts on a generated ConfigMap's name.
fn comparable(objects: &[Value]) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for object in objects {
        let mut o = object.clone();
        if o["kind"] == "Namespace" {
            continue;
        }
        let meta = o["metadata"].as_object_mut().unwrap();
        meta.remove("labels");
        meta.remove("annotations");
        let unhash = |name: &str| match name.strip_prefix("atoll-agent-") {
            Some(hash) if hash.len() == 10 => "atoll-agent".to_owned(),
            _ => name.to_owned(),
        };
        let name = unhash(o["metadata"]["name"].as_str().unwrap());
        o["metadata"]["name"] = json!(name);
        if let Some(template) = o["spec"]["template"].as_object_mut() {
            template.remove("metadata");
        }
        for c in o["spec"]["template"]["spec"]["containers"]
            .as_array_mut()
            .into_iter()
            .flatten()
        {
            c.as_object_mut().unwrap().remove("imagePullPolicy");
            let env_from = c.get_mut("envFrom").and_then(Value::as_array_mut);
            for from in env_from.into_iter().flatten() {
                let name = unhash(from["configMapRef"]["name"].as_str().unwrap());
                from["configMapRef"]["name"] = json!(name);
            }
        }
        out.insert(format!("{}/{}", o["kind"].as_str().unwrap(), name), o);
    }
    out
}

#[track_caller]
fn assert_same(kustomized: &[Value], charted: &[Value], what: &str) {
    let (k, c) = (comparable(kustomized), comparable(charted));
    assert_eq!(
        k.keys().collect::<Vec<_>>(),
        c.keys().collect::<Vec<_>>(),
        "{what}: not the same objects"
    );
    for (key, object) in &k {
        assert_eq!(
            object,
            &c[key],
            "{what}: {key} differs\nkustomize: {}\nhelm: {}",
            serde_json::to_string_pretty(object).unwrap(),
            serde_json::to_string_pretty(&c[key]).unwrap()
        );
    }
}

#[test]
fn the_charts_render_the_kustomizations_objects_with_the_same_values() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    assert_same(
        &kustomize(home, "manifests/hub"),
        &helm_template(home, "atoll-hub", &[]),
        "hub",
    );
    // The kustomization's example values.
    let agent_values = [
        "hub.address=https://atoll-hub.example.com:9443",
        "clusterName=member-1",
    ];
    assert_same(
        &kustomize(home, "manifests/agent"),
        &helm_template(home, "atoll-agent", &agent_values),
        "agent",
    );
    assert_same(
        &kustomize(home, "manifests/agent/restricted"),
        &helm_template(
            home,
            "atoll-agent",
            &[&agent_values[..], &["rbac.restricted=true"]].concat(),
        ),
        "restricted agent",
    );

    // By default two leader-elected hub replicas, updated in a rolling update that never waits
    // for a new replica to be ready while an old one leads, with a PodDisruptionBudget.
    let defaults = helm_template(home, "atoll-hub", &[]);
    let deployment = defaults.iter().find(|o| o["kind"] == "Deployment").unwrap();
    assert_eq!(deployment["spec"]["replicas"], 2);
    assert_eq!(
        deployment["spec"]["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": "100%"}})
    );
    let pdb = defaults
        .iter()
        .find(|o| o["kind"] == "PodDisruptionBudget")
        .unwrap();
    assert_eq!(pdb["spec"]["minAvailable"], 1);
    let role = defaults.iter().find(|o| o["kind"] == "Role").unwrap();
    assert!(
        role["rules"].as_array().unwrap().contains(&json!({
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["get", "create", "update"]
        })),
        "{role:#}"
    );

    // The switches: a load balancer's name first among the hub's names, replicas with a
    // PodDisruptionBudget, a bootstrap Secret the chart makes.
    let hub = helm_template(
        home,
        "atoll-hub",
        &[
            "grpc.hosts={hub.example.com}",
            "replicas=3",
            "podDisruptionBudget.enabled=true",
            "autoAccept=true",
        ],
    );
    let deployment = hub.iter().find(|o| o["kind"] == "Deployment").unwrap();
    assert_eq!(deployment["spec"]["replicas"], 3);
    let args = &containers(deployment)[0]["args"];
    assert_eq!(args[1], "--grpc-host=hub.example.com", "{args}");
    assert!(args.as_array().unwrap().contains(&json!("--auto-accept")));
    let pdb = hub
        .iter()
        .find(|o| o["kind"] == "PodDisruptionBudget")
        .unwrap();
    assert_eq!(pdb["spec"]["selector"], deployment["spec"]["selector"]);
    let agent = helm_template(
        home,
        "atoll-agent",
        &[
            &agent_values[..],
            &[
                "bootstrap.create=true",
                "bootstrap.hubCA=PEM",
                "bootstrap.token=abc.def",
            ],
        ]
        .concat(),
    );
    let secret = agent.iter().find(|o| o["kind"] == "Secret").unwrap();
    assert_eq!(secret["metadata"]["name"], "atoll-agent-bootstrap");
    assert_eq!(secret["data"]["bootstrap-token"], "YWJjLmRlZg==");

    // Missing values and another namespace are refused, naming the value.
    let helm = Tool::new(client_binary("helm").unwrap()).env("HOME", home);
    let chart = path("charts/atoll-agent");
    helm.run(&[
        "template",
        "a",
        &chart,
        "-n",
        "atoll-system",
        "--set",
        "clusterName=x",
    ])
    .failure()
    .stderr_has("hub.address is required");
    let hub_chart = path("charts/atoll-hub");
    helm.run(&["template", "a", &hub_chart, "-n", "default"])
        .failure()
        .stderr_has("install atoll-hub into namespace atoll-system");
}

/// The values of `releases/atoll-*` helm installs and upgrades, then removes, with one helm.
fn install_and_uninstall(cluster: &Cluster, helm: &Tool) {
    let k = cluster.kubectl();
    let hub_chart = path("charts/atoll-hub");
    let agent_chart = path("charts/atoll-agent");
    helm.run(&[
        "install",
        "atoll-hub",
        &hub_chart,
        "-n",
        "atoll-system",
        "--create-namespace",
    ])
    .success()
    .stdout_has("STATUS: deployed");
    helm.run(&[
        "install",
        "atoll-agent",
        &agent_chart,
        "-n",
        "atoll-system",
        "--set",
        "hub.address=https://hub.example.com:9443",
        "--set",
        "clusterName=east",
        "--set",
        "bootstrap.create=true",
        "--set",
        "bootstrap.hubCA=PEM",
        "--set",
        "bootstrap.token=abc.def",
    ])
    .success()
    .stdout_has("STATUS: deployed");
    let get = |what: &[&str]| {
        let mut args = vec!["get", "-n", "atoll-system"];
        args.extend_from_slice(what);
        args.extend(["-o", "json"]);
        k.run(&args).success().json()
    };
    let hub = get(&["deployment", "atoll-hub"]);
    assert_eq!(hub["spec"]["replicas"], 2);
    assert_eq!(
        containers(&hub)[0]["args"][2],
        "--grpc-host=atoll-hub.atoll-system.svc.cluster.local"
    );
    let service = get(&["service", "atoll-hub"]);
    assert_eq!(service["spec"]["type"], "LoadBalancer");
    assert_eq!(service["spec"]["ports"][0]["port"], 9443);
    let config = get(&["configmap", "atoll-agent"]);
    assert_eq!(config["data"]["ATOLL_CLUSTER_NAME"], "east");
    k.run(&["get", "clusterrole", "atoll-hub", "atoll-work-agent"])
        .success();

    // Three hub replicas with a PodDisruptionBudget; the agent with restricted rights.
    helm.run(&[
        "upgrade",
        "atoll-hub",
        &hub_chart,
        "-n",
        "atoll-system",
        "--set",
        "replicas=3",
        "--set",
        "podDisruptionBudget.enabled=true",
    ])
    .success()
    .stdout_has("REVISION: 2");
    assert_eq!(get(&["deployment", "atoll-hub"])["spec"]["replicas"], 3);
    assert_eq!(
        get(&["poddisruptionbudget", "atoll-hub"])["spec"]["minAvailable"],
        1
    );
    helm.run(&[
        "upgrade",
        "atoll-agent",
        &agent_chart,
        "-n",
        "atoll-system",
        "--reuse-values",
        "--set",
        "rbac.restricted=true",
    ])
    .success()
    .stdout_has("REVISION: 2");
    k.run(&["get", "clusterrolebinding", "atoll-work-agent-admin"])
        .success();

    for release in ["atoll-agent", "atoll-hub"] {
        helm.run(&[
            "uninstall",
            release,
            "-n",
            "atoll-system",
            "--wait",
            "--timeout",
            "60s",
        ])
        .success();
    }
    let left = k
        .run(&[
            "get",
            "deployments,services,configmaps,secrets",
            "-n",
            "atoll-system",
            "-o",
            "name",
        ])
        .success();
    for gone in [
        "atoll-hub",
        "atoll-work-agent",
        "atoll-agent-bootstrap",
        "configmap/atoll-agent",
    ] {
        assert!(
            !left.stdout.contains(&format!("/{gone}\n")),
            "{gone} is left:\n{left}"
        );
    }
    k.run(&["get", "clusterrole", "atoll-hub"]).failure();
}

#[test]
fn helm_installs_the_charts_and_kubectl_accepts_the_kustomizations_on_atolls_api_server() {
    let cluster = Cluster::start().unwrap();
    let k = cluster.kubectl();
    // A dry run on the server: the namespace the objects go to must exist.
    k.run(&["create", "namespace", "atoll-system"]).success();
    for dir in [
        "manifests/hub",
        "manifests/agent",
        "manifests/agent/restricted",
    ] {
        let ran = k
            .run(&["apply", "--dry-run=server", "-k", &path(dir)])
            .success();
        assert!(
            ran.stdout.contains("deployment.apps/atoll-")
                && ran.stdout.contains("(server dry run)"),
            "{dir}: {ran}"
        );
    }
    // Nothing was stored.
    k.run(&["get", "deployments", "-n", "atoll-system", "-o", "name"])
        .success()
        .stdout_is("");
    install_and_uninstall(&cluster, &cluster.helm());
    install_and_uninstall(&cluster, &cluster.helm3());
}

/// What a container is started with: its binary, arguments and environment (the env list, and
/// the ConfigMaps of its envFrom from `objects`).
fn started_with(
    container: &Value,
    objects: &[Value],
) -> (String, Vec<String>, Vec<(String, String)>) {
    let binary = container["command"][0].as_str().unwrap().to_owned();
    let args = container["args"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    let mut env = Vec::new();
    for from in container["envFrom"].as_array().into_iter().flatten() {
        let name = from["configMapRef"]["name"].as_str().unwrap();
        let config_map = objects
            .iter()
            .find(|o| o["kind"] == "ConfigMap" && o["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("no ConfigMap {name}"));
        for (key, value) in config_map["data"].as_object().unwrap() {
            env.push((key.clone(), value.as_str().unwrap().to_owned()));
        }
    }
    for e in container["env"].as_array().into_iter().flatten() {
        env.push((
            e["name"].as_str().unwrap().to_owned(),
            e["value"].as_str().unwrap().to_owned(),
        ));
    }
    (binary, args, env)
}

#[test]
fn every_flag_and_variable_the_packages_pass_is_one_the_binary_takes() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let agent_values = [
        "hub.address=https://hub.example.com:9443",
        "clusterName=east",
        "clusterset=prod",
    ];
    let renders: Vec<(&str, Vec<Value>)> = vec![
        ("manifests/hub", kustomize(h, "manifests/hub")),
        ("manifests/agent", kustomize(h, "manifests/agent")),
        (
            "manifests/agent/restricted",
            kustomize(h, "manifests/agent/restricted"),
        ),
        (
            "charts/atoll-hub",
            helm_template(
                h,
                "atoll-hub",
                &["grpc.hosts={hub.example.com}", "autoAccept=true"],
            ),
        ),
        (
            "charts/atoll-agent",
            helm_template(h, "atoll-agent", &agent_values),
        ),
    ];
    let binaries: BTreeMap<&str, PathBuf> = [
        ("hub-controller", hub_controller_binary().unwrap()),
        ("work-agent", work_agent_binary().unwrap()),
    ]
    .into();
    let declared: BTreeMap<&str, (BTreeSet<String>, BTreeSet<String>)> = binaries
        .iter()
        .map(|(name, binary)| (*name, declared(binary)))
        .collect();
    let mut seen = BTreeSet::new();
    for (source, objects) in &renders {
        for object in objects {
            for container in containers(object) {
                let (binary, args, env) = started_with(&container, objects);
                let (flags, envs) = declared
                    .get(binary.as_str())
                    .unwrap_or_else(|| panic!("{source}: unknown binary {binary}"));
                for arg in &args {
                    let flag = arg.split('=').next().unwrap();
                    assert!(
                        flags.contains(flag),
                        "{source}: {binary} has no flag {flag}"
                    );
                }
                for (name, _) in &env {
                    assert!(
                        envs.contains(name),
                        "{source}: {binary} reads no environment variable {name}"
                    );
                }
                // The binary parses all of it: it fails only later, for want of its cluster or
                // its mounted files, never on its command line (clap's usage errors exit 2).
                let mut run = Tool::new(binaries[binary.as_str()].clone())
                    .env("HOME", h)
                    .env("KUBECONFIG", h.join("no-kubeconfig"));
                for (name, value) in &env {
                    run = run.env(name, value);
                }
                let arg_refs: Vec<&str> = args.iter().map(String::as_str).collect();
                let ran = run.run(&arg_refs);
                let expected = match binary.as_str() {
                    "hub-controller" => "cannot find the hub cluster's API server",
                    _ => "cannot read the hub CA /etc/atoll/hub-ca.crt",
                };
                assert_eq!(
                    ran.status.and_then(|s| s.code()),
                    Some(1),
                    "{source}: {ran}"
                );
                assert!(ran.stderr.contains(expected), "{source}: {ran}");
                seen.insert(binary);
            }
        }
    }
    assert_eq!(seen.len(), 2, "{seen:?}");
}

/// `atoll --kubeconfig HUB ARGS`.
fn atoll(hub_kubeconfig: &Path, args: &[&str]) -> Ran {
    let mut all = vec!["--kubeconfig", hub_kubeconfig.to_str().unwrap()];
    all.extend_from_slice(args);
    Tool::new(atoll_binary().unwrap())
        .env("RUST_BACKTRACE", "0")
        .run(&all)
}

/// The bootstrap tokens on the hub, as rows of `atoll token list`.
fn tokens(hub_kubeconfig: &Path) -> Vec<Vec<String>> {
    atoll(hub_kubeconfig, &["token", "list"]).success().rows()[1..].to_vec()
}

#[tokio::test(flavor = "multi_thread")]
async fn agent_manifests_applied_to_a_member_join_it_to_the_hub() {
    let dir = tempfile::tempdir().unwrap();
    let hub_dir = dir.path().join("hub");
    let grpc = free_addr().unwrap().to_string();
    let _hub = Process::hub_with(
        &hub_dir,
        free_addr().unwrap(),
        &["--grpc-addr", &grpc, "--auto-accept"],
    )
    .unwrap();
    let hub_kubeconfig = hub_dir.join("hub.kubeconfig");
    let tokens_before = tokens(&hub_kubeconfig);

    // Bad input: refused, naming the flag, and no token is made.
    atoll(&hub_kubeconfig, &["agent-manifests", "--cluster", "East_1"])
        .failure()
        .stderr_has("--cluster: \"East_1\" is not a DNS label");
    atoll(
        &hub_kubeconfig,
        &["agent-manifests", "--cluster", "kube-east"],
    )
    .failure()
    .stderr_has("--cluster: \"kube-east\" is reserved on the hub");
    atoll(
        &hub_kubeconfig,
        &["agent-manifests", "--cluster", "east", "--ttl", "soon"],
    )
    .failure()
    .stderr_has("invalid value 'soon' for '--ttl <TTL>'")
    .stderr_has("not a duration");
    atoll(
        &hub_kubeconfig,
        &["agent-manifests", "--cluster", "east", "--ttl", "5y"],
    )
    .failure()
    .stderr_has("unknown unit");
    atoll(
        &hub_kubeconfig,
        &[
            "agent-manifests",
            "--cluster",
            "east",
            "--clusterset",
            "nowhere",
        ],
    )
    .failure()
    .stderr_has("--clusterset: ClusterSet \"nowhere\" does not exist");
    atoll(
        &hub_kubeconfig,
        &[
            "agent-manifests",
            "--cluster",
            "east",
            "--hub-address",
            "hub:9443",
        ],
    )
    .failure()
    .stderr_has("--hub-address:");
    // No hub: its kubeconfig names a port nothing listens on.
    let kubeconfig_text = std::fs::read_to_string(&hub_kubeconfig).unwrap();
    let server = kubeconfig_text
        .lines()
        .find_map(|l| l.trim().strip_prefix("server: "))
        .unwrap()
        .to_owned();
    let nowhere = dir.path().join("nowhere.kubeconfig");
    std::fs::write(
        &nowhere,
        kubeconfig_text.replace(&server, &format!("https://{}", free_addr().unwrap())),
    )
    .unwrap();
    atoll(&nowhere, &["agent-manifests", "--cluster", "east"])
        .failure()
        .stderr_has("cannot read ConfigMap atoll-system/atoll-hub-endpoint: cannot reach the hub");
    assert_eq!(
        tokens(&hub_kubeconfig),
        tokens_before,
        "bad input made a token"
    );

    // The manifests, applied to the member with kubectl.
    let printed = atoll(
        &hub_kubeconfig,
        &["agent-manifests", "--cluster", "east", "--ttl", "2h"],
    )
    .success()
    .stderr_has("manifests for cluster east printed");
    let objects = documents(&printed.stdout);
    let kinds: Vec<&str> = objects
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "Namespace",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "ConfigMap",
            "Secret",
            "Deployment"
        ]
    );
    let made: Vec<Vec<String>> = tokens(&hub_kubeconfig)
        .into_iter()
        .filter(|t| !tokens_before.contains(t))
        .collect();
    assert_eq!(made.len(), 1, "{made:?}");
    assert!(
        made[0].join(" ").contains("agent of cluster east"),
        "{made:?}"
    );
    let expires: jiff::Timestamp = made[0][1].parse().unwrap();
    let left = expires.duration_since(jiff::Timestamp::now());
    assert!(
        left > jiff::SignedDuration::from_mins(115) && left <= jiff::SignedDuration::from_hours(2),
        "the token expires at {expires}"
    );

    let member = Process::apiserver_on_a_free_port(&dir.path().join("east")).unwrap();
    let manifests = dir.path().join("east.yaml");
    std::fs::write(&manifests, &printed.stdout).unwrap();
    let applied = kubectl_at(
        &member.kubeconfig(),
        &["apply", "-f", manifests.to_str().unwrap()],
    )
    .success();
    assert!(
        applied
            .stdout
            .contains("deployment.apps/atoll-work-agent created")
            && applied
                .stdout
                .contains("secret/atoll-agent-bootstrap created"),
        "{applied}"
    );

    // The agent, started as the member's Deployment starts it, from what the member now holds.
    let on_member = |args: &[&str]| kubectl_at(&member.kubeconfig(), args).success().json();
    let deployment = on_member(&[
        "get",
        "deployment",
        "atoll-work-agent",
        "-n",
        "atoll-system",
        "-o",
        "json",
    ]);
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &containers(&deployment)[0];
    let config_maps = on_member(&["get", "configmaps", "-n", "atoll-system", "-o", "json"]);
    let (binary, args, env) = started_with(container, config_maps["items"].as_array().unwrap());
    assert_eq!(binary, "work-agent");
    // The volume: the Secret's keys as files where the container mounts it.
    let mount = &container["volumeMounts"][0];
    let volume = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == mount["name"])
        .unwrap();
    let secret_name = volume["secret"]["secretName"].as_str().unwrap();
    let secret = on_member(&[
        "get",
        "secret",
        secret_name,
        "-n",
        "atoll-system",
        "-o",
        "json",
    ]);
    let volume_dir = dir.path().join("volume");
    std::fs::create_dir_all(&volume_dir).unwrap();
    for (key, value) in secret["data"].as_object().unwrap() {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(value.as_str().unwrap())
            .unwrap();
        std::fs::write(volume_dir.join(key), bytes).unwrap();
    }
    let mount_path = mount["mountPath"].as_str().unwrap();
    let log = dir.path().join("agent.log");
    let mut agent = Command::new(work_agent_binary().unwrap());
    agent
        .env_clear()
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    for (name, value) in &env {
        let value = match value.strip_prefix(mount_path) {
            Some(file) => format!("{}{file}", volume_dir.display()),
            None => value.clone(),
        };
        agent.env(name, value);
    }
    // What differs from a pod: the member's API server through its kubeconfig (a pod has its
    // service account), and a metrics port of its own choosing (a pod has its own network).
    agent
        .env("ATOLL_KUBECONFIG", member.kubeconfig())
        .env("ATOLL_METRICS_ADDR", "127.0.0.1:0");
    let agent = AgentProcess(agent.spawn().unwrap());

    let joined = eventually(Duration::from_secs(60), || async {
        let listed = atoll(&hub_kubeconfig, &["get", "clusters"]);
        listed.status.is_some_and(|s| s.success())
            && listed
                .rows()
                .iter()
                .any(|r| r[0] == "east" && r[1] == "True" && r[2] == "True")
    })
    .await;
    assert!(
        joined,
        "east did not join:\n{}\nagent log:\n{}",
        atoll(&hub_kubeconfig, &["get", "clusters"]),
        std::fs::read_to_string(&log).unwrap_or_default()
    );

    // A Work reaches it.
    let app = dir.path().join("app.yaml");
    std::fs::write(
        &app,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: hello, namespace: default}\ndata: {from: hub}\n",
    )
    .unwrap();
    atoll(
        &hub_kubeconfig,
        &[
            "work",
            "apply",
            "-f",
            app.to_str().unwrap(),
            "--clusters",
            "east",
            "--name",
            "hello",
            "--wait",
            "--timeout",
            "60s",
        ],
    )
    .success();
    let landed = kubectl_at(
        &member.kubeconfig(),
        &["get", "configmap", "hello", "-n", "default", "-o", "json"],
    )
    .success()
    .json();
    assert_eq!(landed["data"]["from"], "hub");
    drop(agent);
}

/// A child process killed when dropped.
struct AgentProcess(std::process::Child);

impl Drop for AgentProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
