//! What CEL rules cost on writes: creates and updates of a custom resource whose CRD carries 20
//! `x-kubernetes-validations` rules (the kinds of rules real CRDs have: cross-field checks,
//! uniqueness over a list, regex, quantity, a transition rule), side by side with the same
//! resource under a CRD without them, in one run.
//!
//! A benchmark program, not a test: it asserts no timings. The API server runs in this process
//! (in-memory storage, so that the rules' share of a write is not hidden behind fsync), driven over
//! HTTPS on 127.0.0.1 by kube-rs with 10 concurrent clients. The two kinds are measured in
//! rounds, each kind first in every other round, and the median of 5 rounds is shown, with
//! how much slower the ruled kind is (the target: under 25%). Run it on an otherwise
//! idle machine: on 2 cores a build beside it moves the figures by tens of percent.
//!
//! The second table does the same for ConfigMaps under a ValidatingAdmissionPolicy that matches
//! every ConfigMap (three validations, one variable: the kinds of checks cluster administrators
//! write), against ConfigMaps with no policy bound; the binding is made and removed between
//! rounds (the target: under 15%).
//!
//! Each table also gives this process's CPU time per write (server and clients together), which
//! other work on the machine moves less than the rates.
//!
//! Run with `cargo bench -p atoll-tests --bench cel_rules` (`-- --quick` for a smoke run; `cargo test
//! --benches` runs it quick too; `-- --only rules` or `-- --only policy` runs one table).

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::time::{Duration, Instant};

use anyhow::Context as _;
use atoll_apiserver::StorageKind;
use atoll_tests::TestServer;
use futures::{StreamExt as _, stream};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};

const CLIENTS: usize = 10;
const NAMESPACE: &str = "default";

/// The 20 rules: on the spec, on its fields, on list items and map entries, and at the root;
/// the schema bounds its lists, maps and strings, as a CRD with such rules must to stay within
/// the estimated cost budget.
fn ruled_schema() -> Value {
    json!({"type": "object",
    "x-kubernetes-validations": [{"rule": "self.metadata.name.size() <= 63"}],
    "properties": {"spec": {"type": "object",
      "x-kubernetes-validations": [
        {"rule": "self.replicas <= self.maxReplicas", "message": "replicas must not exceed maxReplicas"},
        {"rule": "self.mode in ['Auto', 'Manual']"},
        {"rule": "self.image.matches('^[a-z0-9./-]+(:[a-zA-Z0-9._-]+)?$')"},
        {"rule": "self.ports.all(p, p.port > 0 && p.port < 65536)"},
        {"rule": "self.ports.all(p1, self.ports.exists_one(p2, p1.port == p2.port))", "message": "ports must be unique"},
        {"rule": "self.labels.all(k, k.size() <= 63)"},
        {"rule": "self.labels.all(k, self.labels[k].matches('^[a-z0-9-]*$'))"},
        {"rule": "has(self.selector) ? self.selector.matchLabels.size() > 0 : true"},
        {"rule": "self.hostname.endsWith('.example.com')"},
        {"rule": "size(self.hostname) <= 253"},
        {"rule": "self.hostname.split('.').all(part, part.size() <= 63)"},
        {"rule": "self.ports.size() <= 16"},
        {"rule": "quantity(self.resources.cpu).isLessThan(quantity('64'))"},
        {"rule": "isQuantity(self.resources.memory)"}
      ],
      "properties": {
        "replicas": {"type": "integer", "x-kubernetes-validations": [{"rule": "self >= 0"}]},
        "maxReplicas": {"type": "integer"},
        "mode": {"type": "string", "maxLength": 16, "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "mode is immutable"}]},
        "image": {"type": "string", "maxLength": 256},
        "hostname": {"type": "string", "maxLength": 253},
        "ports": {"type": "array", "maxItems": 16, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
          "items": {"type": "object", "required": ["name"],
            "x-kubernetes-validations": [{"rule": "self.name.size() > 0"}, {"rule": "!self.name.startsWith('-')"}],
            "properties": {"name": {"type": "string", "maxLength": 15}, "port": {"type": "integer"}}}},
        "labels": {"type": "object", "maxProperties": 32, "additionalProperties": {"type": "string", "maxLength": 63},
          "x-kubernetes-validations": [{"rule": "self.size() <= 32"}]},
        "selector": {"type": "object", "properties": {"matchLabels": {"type": "object", "maxProperties": 16, "additionalProperties": {"type": "string", "maxLength": 63}}}},
        "resources": {"type": "object", "properties": {"cpu": {"type": "string", "maxLength": 16}, "memory": {"type": "string", "maxLength": 16}}}
      }}}})
}

/// The same schema with every rule removed.
fn plain_schema() -> Value {
    let mut schema = ruled_schema();
    strip_rules(&mut schema);
    schema
}

fn strip_rules(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("x-kubernetes-validations");
            map.values_mut().for_each(strip_rules);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_rules),
        _ => {}
    }
}

fn crd(plural: &str, kind: &str, schema: Value) -> anyhow::Result<CustomResourceDefinition> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.bench.atoll.dev")},
        "spec": {"group": "bench.atoll.dev", "scope": "Namespaced",
          "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind},
          "versions": [{"name": "v1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": schema}}]}
    }))?)
}

fn object(kind: &str, name: &str) -> DynamicObject {
    let value = json!({"apiVersion": "bench.atoll.dev/v1", "kind": kind,
      "metadata": {"name": name, "namespace": NAMESPACE},
      "spec": {"replicas": 3, "maxReplicas": 10, "mode": "Auto", "image": "registry.example.com/app:v1.2.3",
        "hostname": "shop.eu-west.example.com",
        "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443},
                  {"name": "metrics", "port": 9090}, {"name": "admin", "port": 8081}],
        "labels": {"app": "shop", "tier": "web", "team": "payments", "env": "prod"},
        "selector": {"matchLabels": {"app": "shop"}},
        "resources": {"cpu": "500m", "memory": "1Gi"}}});
    serde_json::from_value(value).expect("a valid object")
}

/// A policy as cluster administrators write them: a label every ConfigMap must have, and
/// bounds on its data.
fn policy() -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
      "metadata": {"name": "configmap-hygiene"},
      "spec": {"failurePolicy": "Fail",
        "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
          "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}]},
        "variables": [{"name": "data", "expression": "has(object.data) ? object.data : {}"}],
        "validations": [
          {"expression": "has(object.metadata.labels) && 'team' in object.metadata.labels",
           "message": "ConfigMaps must name their team"},
          {"expression": "variables.data.size() <= 64"},
          {"expression": "variables.data.all(k, variables.data[k].size() <= 4096)",
           "messageExpression": "'values must be at most 4096 characters'"}]}})
}

fn binding() -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
      "metadata": {"name": "configmap-hygiene"},
      "spec": {"policyName": "configmap-hygiene", "validationActions": ["Deny"]}})
}

fn config_map(name: &str) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
      "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"team": "payments", "app": "shop"}},
      "data": {"LOG_LEVEL": "info", "REGION": "eu-west-1", "FEATURES": "checkout,search,recommendations",
        "config.yaml": "server:\n  port: 8080\n  timeout: 30s\n"}}))
    .expect("a valid ConfigMap")
}

/// Whether the binding is in force: a dry-run ConfigMap without the team label is refused.
async fn policy_enforced(config_maps: &Api<DynamicObject>) -> bool {
    let mut probe = config_map("probe");
    probe.metadata.labels = None;
    let params = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    config_maps.create(&params, &probe).await.is_err()
}

/// Makes (`bound`) or removes the binding and waits until writes see it.
async fn bind(
    bindings: &Api<DynamicObject>,
    config_maps: &Api<DynamicObject>,
    bound: bool,
) -> anyhow::Result<()> {
    if bound {
        let binding: DynamicObject = serde_json::from_value(binding())?;
        match bindings.create(&PostParams::default(), &binding).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.is_already_exists() => {}
            Err(err) => return Err(err.into()),
        }
    } else {
        match bindings
            .delete("configmap-hygiene", &Default::default())
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.is_not_found() => {}
            Err(err) => return Err(err.into()),
        }
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while policy_enforced(config_maps).await != bound {
        anyhow::ensure!(Instant::now() < deadline, "the binding never took effect");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

async fn config_map_round(
    api: &Api<DynamicObject>,
    prefix: &str,
    count: usize,
) -> anyhow::Result<Round> {
    let names: Vec<String> = (0..count).map(|i| format!("{prefix}-{i}")).collect();
    let patch = json!({"data": {"LOG_LEVEL": "debug"}});
    writes(api, &names, config_map, &patch, "ConfigMap").await
}

/// The ConfigMap writes, without and with the policy bound, `rounds` times each.
async fn measure_policy(
    client: &kube::Client,
    count: usize,
    rounds: usize,
) -> anyhow::Result<[Vec<Round>; 2]> {
    let resource = |group: &str, kind: &str, plural: &str| {
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", kind), plural)
    };
    let policies = Api::<DynamicObject>::all_with(
        client.clone(),
        &resource(
            "admissionregistration.k8s.io",
            "ValidatingAdmissionPolicy",
            "validatingadmissionpolicies",
        ),
    );
    let bindings = Api::<DynamicObject>::all_with(
        client.clone(),
        &resource(
            "admissionregistration.k8s.io",
            "ValidatingAdmissionPolicyBinding",
            "validatingadmissionpolicybindings",
        ),
    );
    let config_maps = Api::<DynamicObject>::namespaced_with(
        client.clone(),
        NAMESPACE,
        &resource("", "ConfigMap", "configmaps"),
    );
    let policy: DynamicObject = serde_json::from_value(policy())?;
    policies.create(&PostParams::default(), &policy).await?;
    let mut measured: [Vec<Round>; 2] = Default::default();
    for r in 0..rounds {
        let order: [usize; 2] = if r % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            bind(&bindings, &config_maps, i == 1).await?;
            measured[i].push(config_map_round(&config_maps, &format!("cm-{i}-{r}"), count).await?);
        }
    }
    Ok(measured)
}

/// Prints one table: the medians of the plain (`measured[0]`) and the checked
/// (`measured[1]`) writes, in writes per second and in this process's CPU time per write.
fn table(measured: &[Vec<Round>; 2], count: usize, columns: [&str; 2]) {
    let rate = |d: Duration| count as f64 / d.as_secs_f64();
    let tick = 1e6 / atoll_tests::clock_ticks_per_second();
    println!(
        "| op | {0} /s | {1} /s | slower by | CPU µs per write, {0} | {1} | more CPU by |",
        columns[0], columns[1]
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (op, updates) in [("create", false), ("merge patch", true)] {
        let wall = |i: usize| {
            median(
                measured[i]
                    .iter()
                    .map(|r| if updates { r.updates } else { r.creates })
                    .collect(),
            )
        };
        let cpu = |i: usize| {
            let mut ticks: Vec<u64> = measured[i]
                .iter()
                .map(|r| {
                    if updates {
                        r.updates_cpu
                    } else {
                        r.creates_cpu
                    }
                })
                .collect();
            ticks.sort();
            ticks[ticks.len() / 2] as f64 * tick / count as f64
        };
        let (plain, checked) = (wall(0), wall(1));
        let (plain_cpu, checked_cpu) = (cpu(0), cpu(1));
        println!(
            "| {op} | {:.0} | {:.0} | {:+.1}% | {plain_cpu:.0} | {checked_cpu:.0} | {:+.1}% |",
            rate(plain),
            rate(checked),
            (checked.as_secs_f64() / plain.as_secs_f64() - 1.0) * 100.0,
            (checked_cpu / plain_cpu - 1.0) * 100.0
        );
    }
}

struct Round {
    creates: Duration,
    updates: Duration,
    /// CPU time of this process (server and clients) over the creates and the updates, in
    /// clock ticks: what the checks cost, less moved than wall time by other work on the
    /// machine.
    creates_cpu: u64,
    updates_cpu: u64,
}

async fn round(
    api: &Api<DynamicObject>,
    kind: &str,
    round: usize,
    count: usize,
) -> anyhow::Result<Round> {
    let names: Vec<String> = (0..count)
        .map(|i| format!("{}-{round}-{i}", kind.to_lowercase()))
        .collect();
    let patch = json!({"spec": {"replicas": 4, "labels": {"revision": "2"}}});
    writes(api, &names, |name| object(kind, name), &patch, kind).await
}

/// Creates an object `make` makes for each of `names`, then merge-patches each with `patch`,
/// [`CLIENTS`] at a time, and times both.
async fn writes(
    api: &Api<DynamicObject>,
    names: &[String],
    make: impl Fn(&str) -> DynamicObject,
    patch: &Value,
    what: &str,
) -> anyhow::Result<Round> {
    let make = &make;
    let cpu = || atoll_tests::cpu_ticks(std::path::Path::new("/proc/self/stat")).unwrap_or(0);
    let cpu_before = cpu();
    let started = Instant::now();
    let results: Vec<_> = stream::iter(names)
        .map(|name| async move { api.create(&PostParams::default(), &make(name)).await })
        .buffer_unordered(CLIENTS)
        .collect()
        .await;
    let creates = started.elapsed();
    let creates_cpu = cpu() - cpu_before;
    for result in results {
        result.with_context(|| format!("create a {what}"))?;
    }
    let cpu_before = cpu();
    let started = Instant::now();
    let results: Vec<_> = stream::iter(names)
        .map(|name| async move {
            api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
                .await
        })
        .buffer_unordered(CLIENTS)
        .collect()
        .await;
    let updates = started.elapsed();
    let updates_cpu = cpu() - cpu_before;
    for result in results {
        result.with_context(|| format!("update a {what}"))?;
    }
    Ok(Round {
        creates,
        updates,
        creates_cpu,
        updates_cpu,
    })
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick") || !args.iter().any(|a| a == "--bench");
    let (count, rounds) = if quick { (50, 1) } else { (10_000, 5) };

    let only = args
        .iter()
        .position(|a| a == "--only")
        .map(|i| args.get(i + 1).map(String::as_str).unwrap_or_default());
    let (rules, policy) = match only {
        None => (true, true),
        Some("rules") => (true, false),
        Some("policy") => (false, true),
        Some(other) => anyhow::bail!("--only {other:?}: expected `rules` or `policy`"),
    };

    let server = TestServer::start(StorageKind::Memory).await?;
    let client = server.client().await?;
    if rules {
        measure_rules(&client, count, rounds).await?;
    }
    if policy {
        let measured = measure_policy(&client, count, rounds).await?;
        println!(
            "\n## ConfigMap writes under a ValidatingAdmissionPolicy matching every ConfigMap against no policy\n"
        );
        println!(
            "{count} ConfigMaps per round, {CLIENTS} clients, median of {rounds} rounds; the binding is made and removed between rounds.\n"
        );
        table(&measured, count, ["no policy", "with the policy"]);
    }
    Ok(())
}

/// The custom resource's writes with and without its 20 rules, and their table.
async fn measure_rules(client: &kube::Client, count: usize, rounds: usize) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut apis = Vec::new();
    for (plural, kind, schema) in [
        ("plains", "Plain", plain_schema()),
        ("ruleds", "Ruled", ruled_schema()),
    ] {
        crds.create(&PostParams::default(), &crd(plural, kind, schema)?)
            .await
            .with_context(|| format!("create the CRD of {kind}"))?;
        let gvk = GroupVersionKind::gvk("bench.atoll.dev", "v1", kind);
        let resource = ApiResource::from_gvk_with_plural(&gvk, plural);
        apis.push((
            kind,
            Api::<DynamicObject>::namespaced_with(client.clone(), NAMESPACE, &resource),
        ));
    }
    // The CRDs serve once established; the first objects also warm the compiled rules.
    let deadline = Instant::now() + Duration::from_secs(30);
    for (kind, api) in &apis {
        loop {
            match api
                .create(
                    &PostParams::default(),
                    &object(kind, &format!("warm-{}", kind.to_lowercase())),
                )
                .await
            {
                Ok(_) => break,
                Err(_) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
                Err(err) => return Err(err).context(format!("the {kind} CRD never served")),
            }
        }
    }

    let mut measured: [Vec<Round>; 2] = Default::default();
    for r in 0..rounds {
        // Each kind goes first in every other round, so that neither gains from its place.
        let order: [usize; 2] = if r % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let (kind, api) = &apis[i];
            measured[i].push(round(api, kind, r, count).await?);
        }
    }
    println!(
        "## Writes of a custom resource with 20 CEL rules against the same resource without them\n"
    );
    println!(
        "{count} objects per round, {CLIENTS} clients, median of {rounds} rounds, in-memory storage, in-process server.\n"
    );
    table(&measured, count, ["without rules", "with 20 rules"]);

    Ok(())
}
