//! `atoll work apply|status|delete`: manifests from ordinary files fanned out with a
//! WorkPlacement, and what became of them on every cluster.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use atoll_api::names::{LABEL_PLACEMENT, MANIFESTS_MAX_BYTES};
use atoll_api::placement::{
    Override, Policy, PolicyType, Preference, PropertySort, SortOrder, WorkPlacement,
    WorkPlacementStatus,
};
use atoll_api::work::Work;
use clap::Args;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use serde_json::{Value, json};

use crate::client::explain;
use crate::output;

/// Field manager of what the CLI writes.
const FIELD_MANAGER: &str = "atoll-cli";

/// Flags of `atoll work apply`.
#[derive(Args)]
pub struct ApplyArgs {
    /// Manifest files (YAML, several documents each, or JSON); `-` reads standard input.
    #[arg(short = 'f', long = "filename", required = true)]
    files: Vec<PathBuf>,
    /// Every member of this ClusterSet.
    #[arg(long, group = "target")]
    clusterset: Option<String>,
    /// These clusters, by name (comma-separated).
    #[arg(long, value_delimiter = ',', group = "target")]
    clusters: Vec<String>,
    /// Clusters whose ClusterProfile labels match, e.g. `env=prod,tier!=free`.
    #[arg(short = 'l', long, group = "target")]
    selector: Option<String>,
    /// The WorkPlacement's name [default: the first file's name].
    #[arg(long)]
    name: Option<String>,
    /// Namespace of the WorkPlacement on the hub.
    #[arg(short = 'n', long, default_value = "default")]
    namespace: String,
    /// Roll out a few clusters at a time: how many at once (a number or a percentage).
    #[arg(long)]
    max_concurrency: Option<String>,
    /// Wait until every selected cluster reports the Work applied and available.
    #[arg(long)]
    wait: bool,
    /// How long `--wait` waits, e.g. 90s, 5m.
    #[arg(long, default_value = "5m")]
    timeout: String,
    /// Per-cluster overrides: a YAML list of rules (`clusters`, `manifests`, `jsonPatch`,
    /// `image`), as in a WorkPlacement's `spec.overrides`; several files are concatenated in
    /// order.
    #[arg(long = "override", value_name = "FILE")]
    overrides: Vec<PathBuf>,
    /// Only the best N of the selected clusters (`PickN`); decisions are stable: raising N adds
    /// clusters without moving the others.
    #[arg(long, value_name = "N")]
    pick: Option<i32>,
    /// With `--pick`: prefer clusters by a numeric ClusterProfile property, highest first
    /// (`desc`, the default) or lowest first (`asc`), e.g. `cost:asc`; several add up, each
    /// weighing 100.
    #[arg(long, value_name = "PROPERTY[:asc|desc]", requires = "pick")]
    prefer: Vec<String>,
}

/// The policy of `--pick N` and `--prefer PROPERTY[:asc|desc]`.
pub fn pick_policy(pick: i32, prefer: &[String]) -> anyhow::Result<Policy> {
    if pick < 1 {
        bail!("--pick {pick}: pick at least 1 cluster");
    }
    let mut preferences = Vec::new();
    for text in prefer {
        let (property, order) = match text.rsplit_once(':') {
            Some((p, "asc")) => (p, SortOrder::Ascending),
            Some((p, "desc")) => (p, SortOrder::Descending),
            Some((_, other)) => bail!(
                "--prefer {text}: the order {other:?} is not asc or desc (PROPERTY[:asc|desc])"
            ),
            None => (text.as_str(), SortOrder::Descending),
        };
        if property.is_empty() {
            bail!("--prefer {text}: name a property, e.g. cost:asc");
        }
        preferences.push(Preference {
            weight: 100,
            sort_by: Some(PropertySort {
                property: property.to_owned(),
                order,
            }),
            ..Preference::default()
        });
    }
    let policy = Policy {
        type_: PolicyType::PickN,
        number_of_clusters: Some(pick),
        preferences,
        ..Policy::default()
    };
    atoll_api::placement::policy::validate(&policy).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(policy)
}

/// Reads the override rules of `files` in order and checks them, naming the file and field at
/// fault.
pub fn read_overrides(files: &[PathBuf]) -> anyhow::Result<Vec<Override>> {
    let mut rules = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let list: Option<Vec<Override>> = serde_yaml_ng::from_str(&text).with_context(|| {
            format!(
                "{}: not a YAML list of override rules (clusters, manifests, jsonPatch, image)",
                path.display()
            )
        })?;
        rules.extend(list.unwrap_or_default());
    }
    atoll_api::placement::overrides::validate(&rules).map_err(|e| {
        let files: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
        anyhow::anyhow!("--override {}: {e}", files.join(","))
    })?;
    Ok(rules)
}

/// Reads every manifest of `files`, naming the file and document at fault.
pub fn read_manifests(files: &[PathBuf]) -> anyhow::Result<Vec<Value>> {
    let mut manifests = Vec::new();
    for path in files {
        let text = if path == Path::new("-") {
            std::io::read_to_string(std::io::stdin()).context("cannot read standard input")?
        } else {
            std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?
        };
        for (i, document) in serde_yaml_ng::Deserializer::from_str(&text).enumerate() {
            let value =
                <Value as serde::Deserialize>::deserialize(document).with_context(|| {
                    format!(
                        "{}: document {} is not valid YAML or JSON",
                        path.display(),
                        i + 1
                    )
                })?;
            if value.is_null() {
                continue;
            }
            let items = match value.get("kind").and_then(Value::as_str) {
                Some(kind) if kind.ends_with("List") && value.get("items").is_some() => {
                    value["items"].as_array().cloned().unwrap_or_default()
                }
                _ => vec![value],
            };
            for item in items {
                check_manifest(&item).map_err(|why| {
                    anyhow::anyhow!("{}: document {}: {why}", path.display(), i + 1)
                })?;
                manifests.push(item);
            }
        }
    }
    if manifests.is_empty() {
        bail!("the files hold no manifests");
    }
    let size = serde_json::to_vec(&manifests)?.len();
    if size > MANIFESTS_MAX_BYTES {
        bail!(
            "the manifests take {size} bytes, more than a Work's limit of {MANIFESTS_MAX_BYTES}; split them over several placements"
        );
    }
    Ok(manifests)
}

fn check_manifest(item: &Value) -> Result<(), String> {
    let Some(object) = item.as_object() else {
        return Err("a manifest must be an object".to_owned());
    };
    for field in ["apiVersion", "kind"] {
        if object
            .get(field)
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Err(format!("the manifest has no {field}"));
        }
    }
    if item
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err(format!(
            "{} has no metadata.name (generateName cannot be placed)",
            object["kind"].as_str().unwrap_or_default()
        ));
    }
    Ok(())
}

/// `env=prod,tier!=free,gpu,!legacy` as a label selector.
pub fn parse_selector(text: &str) -> anyhow::Result<LabelSelector> {
    let mut labels = std::collections::BTreeMap::new();
    let mut expressions = Vec::new();
    for term in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let requirement =
            |key: &str, operator: &str, values: Option<Vec<String>>| LabelSelectorRequirement {
                key: key.trim().to_owned(),
                operator: operator.to_owned(),
                values,
            };
        if let Some((k, v)) = term.split_once("!=") {
            expressions.push(requirement(k, "NotIn", Some(vec![v.trim().to_owned()])));
        } else if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
            labels.insert(k.trim().to_owned(), v.trim().to_owned());
        } else if let Some(k) = term.strip_prefix('!') {
            expressions.push(requirement(k, "DoesNotExist", None));
        } else if term
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
        {
            expressions.push(requirement(term, "Exists", None));
        } else {
            bail!("label selector term {term:?} is not one of key=value, key!=value, key, !key");
        }
    }
    Ok(LabelSelector {
        match_labels: (!labels.is_empty()).then_some(labels),
        match_expressions: (!expressions.is_empty()).then_some(expressions),
    })
}

pub async fn apply(client: kube::Client, args: ApplyArgs) -> anyhow::Result<()> {
    let manifests = read_manifests(&args.files)?;
    let overrides = read_overrides(&args.overrides)?;
    let name = match &args.name {
        Some(n) => n.clone(),
        None => args.files[0]
            .file_stem()
            .map(|s| {
                s.to_string_lossy()
                    .to_lowercase()
                    .replace(['_', '.', ' '], "-")
            })
            .filter(|s| s != "-")
            .context("--name is needed when reading standard input")?,
    };
    let mut selector = serde_json::Map::new();
    if let Some(set) = &args.clusterset {
        selector.insert("clusterSet".into(), json!(set));
    }
    if !args.clusters.is_empty() {
        selector.insert("clusterNames".into(), json!(args.clusters));
    }
    if let Some(text) = &args.selector {
        selector.insert(
            "labelSelector".into(),
            serde_json::to_value(parse_selector(text)?)?,
        );
    }
    let policy = args
        .pick
        .map(|n| pick_policy(n, &args.prefer))
        .transpose()?;
    if selector.is_empty() && policy.is_none() {
        bail!(
            "say which clusters: --clusterset SET, --clusters a,b, -l SELECTOR, or --pick N of them all"
        );
    }
    let strategy = match &args.max_concurrency {
        Some(n) => {
            let value = n.parse::<i64>().map_or(json!(n), |v| json!(v));
            json!({"type": "Progressive", "maxConcurrency": value})
        }
        None => json!({"type": "All"}),
    };
    let mut placement = json!({
        "apiVersion": "atoll.dev/v1alpha1", "kind": "WorkPlacement",
        "metadata": {"name": name, "namespace": args.namespace},
        "spec": {"manifests": manifests, "clusterSelector": selector, "rolloutStrategy": strategy},
    });
    if !overrides.is_empty() {
        placement["spec"]["overrides"] = serde_json::to_value(&overrides)?;
    }
    if let Some(policy) = &policy {
        placement["spec"]["policy"] = serde_json::to_value(policy)?;
    }
    let api: Api<WorkPlacement> = Api::namespaced(client.clone(), &args.namespace);
    let applied = api
        .patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&placement),
        )
        .await
        .map_err(|e| explain(e, &format!("cannot apply WorkPlacement {name:?}")))?;
    if overrides.is_empty() {
        println!(
            "workplacement/{name} applied ({} manifests)",
            manifests.len()
        );
    } else {
        println!(
            "workplacement/{name} applied ({} manifests, {} override rules)",
            manifests.len(),
            overrides.len()
        );
    }
    if !args.wait {
        return Ok(());
    }
    let timeout = atoll_api::placement::parse_duration(&args.timeout)
        .map_err(|why| anyhow::anyhow!("--timeout {:?}: {why}", args.timeout))?;
    wait(
        &api,
        &name,
        applied.metadata.generation.unwrap_or(0),
        timeout,
    )
    .await
}

async fn wait(
    api: &Api<WorkPlacement>,
    name: &str,
    generation: i64,
    timeout: Duration,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut last_line = String::new();
    loop {
        let placement = api
            .get(name)
            .await
            .map_err(|e| explain(e, "cannot read the WorkPlacement"))?;
        let status = placement.status.unwrap_or_default();
        let current = status.observed_generation == Some(generation);
        let condition = |t: &str| status.conditions.iter().find(|c| c.type_ == t).cloned();
        let line = format!(
            "{} selected, {} applied, {} available, {} pending, {} failed",
            status.selected,
            status.applied,
            status.available,
            status.pending,
            status.failed_clusters.len()
        );
        if current && line != last_line {
            println!("{line}");
            last_line = line;
        }
        if current {
            let failed: Vec<String> = status
                .failed_clusters
                .iter()
                .map(|f| format!("  {}: {}", f.name, f.message))
                .collect();
            match condition("Progressing") {
                Some(c)
                    if [
                        "ClusterSetNotFound",
                        "NoClustersSelected",
                        "RolloutHalted",
                        "InvalidSpec",
                    ]
                    .contains(&c.reason.as_str()) =>
                {
                    bail!(
                        "{}: {}{}",
                        c.reason,
                        c.message,
                        if failed.is_empty() {
                            String::new()
                        } else {
                            format!("\n{}", failed.join("\n"))
                        }
                    );
                }
                Some(c) if c.reason == "RolloutComplete" => {
                    if !failed.is_empty() {
                        bail!(
                            "the rollout finished with failed clusters:\n{}",
                            failed.join("\n")
                        );
                    }
                    if status.available == status.selected {
                        println!(
                            "workplacement/{name}: every cluster reports the Work applied and available"
                        );
                        return Ok(());
                    }
                }
                _ => {}
            }
        }
        if started.elapsed() > timeout {
            bail!(
                "timed out after {}s waiting for workplacement/{name}: {last_line}; see `atoll work status {name}`",
                timeout.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

pub async fn status(client: kube::Client, name: &str, namespace: &str) -> anyhow::Result<()> {
    let api: Api<WorkPlacement> = Api::namespaced(client.clone(), namespace);
    let placement = api
        .get(name)
        .await
        .map_err(|e| explain(e, &format!("cannot read WorkPlacement {name:?}")))?;
    let status = placement.status.unwrap_or_default();
    println!(
        "workplacement/{name}: {} selected, {} applied, {} available, {} degraded, {} pending",
        status.selected, status.applied, status.available, status.degraded, status.pending
    );
    for c in &status.conditions {
        println!("  {} {} ({}): {}", c.type_, c.status, c.reason, c.message);
    }
    if let Some(policy) = &placement.spec.policy {
        let what = match policy.type_ {
            PolicyType::PickN => format!("PickN {}", policy.number_of_clusters.unwrap_or(0)),
            other => other.to_string(),
        };
        println!("  policy: {what}");
    }
    if !status.unused_overrides.is_empty() {
        let rules: Vec<String> = status
            .unused_overrides
            .iter()
            .map(|i| format!("spec.overrides[{i}]"))
            .collect();
        println!(
            "  override rules that change no manifest on any cluster: {}",
            rules.join(", ")
        );
    }
    if !status.selected_resources.is_empty() {
        let shown: Vec<String> = status
            .selected_resources
            .iter()
            .take(10)
            .map(|r| match &r.namespace {
                Some(ns) => format!("{} {ns}/{}", r.kind, r.name),
                None => format!("{} {}", r.kind, r.name),
            })
            .collect();
        let more = status.selected_resources.len().saturating_sub(shown.len());
        println!(
            "  hub resources: {}{}",
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        );
    }
    let works: Api<Work> = Api::all(client);
    let key = format!("{namespace}.{name}");
    let mut list = works
        .list(&ListParams::default().labels(&format!("{LABEL_PLACEMENT}={key}")))
        .await
        .map_err(|e| explain(e, "cannot list the placement's Works"))?;
    list.items
        .sort_by(|a, b| a.metadata.namespace.cmp(&b.metadata.namespace));
    let rows = work_rows(&list.items, &status);
    if !rows.is_empty() {
        println!();
        print!(
            "{}",
            output::table(
                &[
                    "OVERRIDES",
                    "CLUSTER",
                    "APPLIED",
                    "AVAILABLE",
                    "PROGRESSING",
                    "DEGRADED",
                    "AGE",
                    "MESSAGE"
                ],
                &rows
            )
        );
    }
    print_decisions_and_failures(&status);
    Ok(())
}

/// One row per Work of a placement: the override rules that changed it (a WorkOverride's as
/// `NAME[INDEX]`, then the placement's own by index), its cluster and its conditions.
fn work_rows(works: &[Work], status: &WorkPlacementStatus) -> Vec<Vec<String>> {
    let overrides = |cluster: &str| {
        status
            .overridden_clusters
            .iter()
            .find(|o| o.name == cluster)
            .map(|o| {
                let rules: Vec<String> = o
                    .applied_work_overrides
                    .iter()
                    .cloned()
                    .chain(o.applied_overrides.iter().map(|i| i.to_string()))
                    .collect();
                rules.join(",")
            })
            .unwrap_or_else(|| "-".to_owned())
    };
    works
        .iter()
        .map(|w| {
            let s = w.status.clone().unwrap_or_default();
            let find = |t: &str| s.conditions.iter().find(|c| c.type_ == t);
            let state = |t: &str| find(t).map_or("Unknown".to_owned(), |c| c.status.clone());
            // What most needs saying: a failure, else a degraded resource, else a rollout.
            let message = find("Applied")
                .filter(|c| c.status == "False")
                .or(find("Degraded").filter(|c| c.status == "True"))
                .or(find("Progressing").filter(|c| c.status == "True"))
                .map(|c| c.message.clone())
                .unwrap_or_default();
            let cluster = w.metadata.namespace.clone().unwrap_or_default();
            vec![
                overrides(&cluster),
                cluster,
                state("Applied"),
                state("Available"),
                state("Progressing"),
                state("Degraded"),
                output::age(w.metadata.creation_timestamp.as_ref()),
                message,
            ]
        })
        .collect()
}

/// The policy's decisions and the failed clusters, as tables.
fn print_decisions_and_failures(status: &WorkPlacementStatus) {
    if !status.decisions.is_empty() {
        println!();
        let rows: Vec<Vec<String>> = status
            .decisions
            .iter()
            .map(|d| {
                vec![
                    d.cluster_name.clone(),
                    if d.selected { "yes" } else { "no" }.to_owned(),
                    d.score.to_string(),
                    d.reason.clone(),
                ]
            })
            .collect();
        print!(
            "{}",
            output::table(&["DECISION", "CHOSEN", "SCORE", "REASON"], &rows)
        );
    }
    if !status.failed_clusters.is_empty() {
        println!();
        let rows: Vec<Vec<String>> = status
            .failed_clusters
            .iter()
            .map(|f| vec![f.name.clone(), f.reason.clone(), f.message.clone()])
            .collect();
        print!(
            "{}",
            output::table(&["FAILED CLUSTER", "REASON", "MESSAGE"], &rows)
        );
    }
}

pub async fn delete(client: kube::Client, name: &str, namespace: &str) -> anyhow::Result<()> {
    let api: Api<WorkPlacement> = Api::namespaced(client, namespace);
    api.delete(name, &DeleteParams::default())
        .await
        .map_err(|e| explain(e, &format!("cannot delete WorkPlacement {name:?}")))?;
    println!(
        "workplacement/{name} deleted; its Works and their resources are removed from every cluster"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_parse_into_labels_and_expressions() {
        let s = parse_selector("env=prod, tier!=free,gpu,!legacy").unwrap();
        assert_eq!(s.match_labels.unwrap()["env"], "prod");
        let ops: Vec<String> = s
            .match_expressions
            .unwrap()
            .into_iter()
            .map(|e| format!("{}:{}", e.key, e.operator))
            .collect();
        assert_eq!(ops, ["tier:NotIn", "gpu:Exists", "legacy:DoesNotExist"]);
        assert!(parse_selector("a in (b)").is_err());
    }

    #[test]
    fn pick_and_prefer_make_a_pick_n_policy() {
        let policy = pick_policy(2, &["cost:asc".into(), "cpu.available".into()]).unwrap();
        assert_eq!(policy.type_, PolicyType::PickN);
        assert_eq!(policy.number_of_clusters, Some(2));
        let sorts: Vec<(String, SortOrder, i32)> = policy
            .preferences
            .iter()
            .map(|p| {
                let sort = p.sort_by.clone().unwrap();
                (sort.property, sort.order, p.weight)
            })
            .collect();
        assert_eq!(
            sorts,
            [
                ("cost".into(), SortOrder::Ascending, 100),
                ("cpu.available".into(), SortOrder::Descending, 100)
            ]
        );
        assert_eq!(
            pick_policy(0, &[]).unwrap_err().to_string(),
            "--pick 0: pick at least 1 cluster"
        );
        assert!(
            pick_policy(2, &["cost:cheapest".into()])
                .unwrap_err()
                .to_string()
                .contains("the order \"cheapest\" is not asc or desc")
        );
        assert!(pick_policy(2, &[":asc".into()]).is_err());
    }

    #[test]
    fn override_files_are_read_in_order_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let first = dir.path().join("a.yaml");
        let second = dir.path().join("b.yaml");
        std::fs::write(
            &first,
            "- image: {registry: 'reg.${PROPERTY:region}.example.com'}\n",
        )
        .unwrap();
        std::fs::write(
            &second,
            "- clusters: {names: [c1]}\n  jsonPatch: [{op: replace, path: /data/a, value: '${CLUSTER_NAME}'}]\n",
        )
        .unwrap();
        let rules = read_overrides(&[first.clone(), second.clone()]).unwrap();
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[1].clusters.names, ["c1"]);
        std::fs::write(
            &second,
            "- jsonPatch: [{op: add, path: data/a, value: x}]\n",
        )
        .unwrap();
        let err = read_overrides(&[first, second.clone()])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("spec.overrides[1].jsonPatch[0].path: Invalid value: \"data/a\""),
            "{err}"
        );
        std::fs::write(&second, "jsonPatch: []\n").unwrap();
        let err = format!("{:#}", read_overrides(&[second]).unwrap_err());
        assert!(err.contains("not a YAML list of override rules"), "{err}");
    }

    #[test]
    fn bad_manifests_name_the_file_and_document() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.yaml");
        std::fs::write(&path, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nmetadata: {name: b}\n").unwrap();
        let err = read_manifests(std::slice::from_ref(&path))
            .unwrap_err()
            .to_string();
        assert!(
            err.ends_with("app.yaml: document 2: the manifest has no kind"),
            "{err}"
        );
        std::fs::write(&path, "- just\n- a list\n").unwrap();
        let err = read_manifests(std::slice::from_ref(&path))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("document 1: a manifest must be an object"),
            "{err}"
        );
        std::fs::write(&path, "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n").unwrap();
        assert_eq!(read_manifests(&[path]).unwrap().len(), 1);
    }
}
