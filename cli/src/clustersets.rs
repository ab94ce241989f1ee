//! `atoll clusterset create|delete|list|add|remove`. Membership is the label
//! `multicluster.x-k8s.io/clusterset` on a ClusterProfile; the hub decides whether it holds.

use atoll_api::clusterset::{ClusterSet, ClusterSetSpec};
use atoll_api::inventory::ClusterProfile;
use atoll_api::names::{INVENTORY_NAMESPACE, LABEL_CLUSTER_SET};
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};

use crate::client::explain;
use crate::output::{self, Format};

pub async fn create(
    client: kube::Client,
    name: &str,
    description: Option<String>,
) -> anyhow::Result<()> {
    let api: Api<ClusterSet> = Api::all(client);
    let set = ClusterSet {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        spec: ClusterSetSpec { description },
        status: None,
    };
    api.create(&PostParams::default(), &set)
        .await
        .map_err(|e| explain(e, &format!("cannot create ClusterSet {name:?}")))?;
    println!("clusterset/{name} created");
    Ok(())
}

pub async fn delete(client: kube::Client, name: &str) -> anyhow::Result<()> {
    let api: Api<ClusterSet> = Api::all(client);
    api.delete(name, &DeleteParams::default())
        .await
        .map_err(|e| explain(e, &format!("cannot delete ClusterSet {name:?}")))?;
    println!("clusterset/{name} deleted");
    Ok(())
}

pub async fn list(client: kube::Client, format: Format) -> anyhow::Result<()> {
    let api: Api<ClusterSet> = Api::all(client);
    let mut list = api
        .list(&ListParams::default())
        .await
        .map_err(|e| explain(e, "cannot list ClusterSets"))?;
    list.items
        .sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    if matches!(format, Format::Yaml | Format::Json) {
        print!("{}", output::document(&list, format)?);
        return Ok(());
    }
    if list.items.is_empty() {
        eprintln!("No ClusterSets.");
        return Ok(());
    }
    let wide = format == Format::Wide;
    let mut header = vec!["NAME", "MEMBERS", "READY", "AGE"];
    if wide {
        header.extend(["CLUSTERS", "REFUSED"]);
    }
    let rows: Vec<Vec<String>> = list
        .items
        .iter()
        .map(|set| {
            let status = set.status.clone().unwrap_or_default();
            let mut row = vec![
                set.metadata.name.clone().unwrap_or_default(),
                status.member_count.to_string(),
                status.ready_count.to_string(),
                output::age(set.metadata.creation_timestamp.as_ref()),
            ];
            if wide {
                let names: Vec<String> = status.members.iter().map(|m| m.name.clone()).collect();
                let refused = status
                    .conditions
                    .iter()
                    .find(|c| {
                        c.type_ == atoll_api::names::CONDITION_MEMBERSHIP_REJECTED
                            && c.status == "True"
                    })
                    .map_or(String::new(), |c| c.message.clone());
                row.extend([names.join(","), refused]);
            }
            row
        })
        .collect();
    print!("{}", output::table(&header, &rows));
    Ok(())
}

pub async fn add(client: kube::Client, set: &str, clusters: &[String]) -> anyhow::Result<()> {
    let sets: Api<ClusterSet> = Api::all(client.clone());
    if sets
        .get_opt(set)
        .await
        .map_err(|e| explain(e, "cannot read ClusterSets"))?
        .is_none()
    {
        anyhow::bail!(
            "ClusterSet {set:?} does not exist; create it first: atoll clusterset create {set}"
        );
    }
    label(
        client,
        clusters,
        |_| Ok(Some(set.to_owned())),
        &format!("added to clusterset/{set}"),
    )
    .await
}

pub async fn remove(client: kube::Client, set: &str, clusters: &[String]) -> anyhow::Result<()> {
    label(
        client,
        clusters,
        |current| match current {
            Some(s) if s == set => Ok(None),
            Some(other) => Err(format!("is in ClusterSet {other:?}, not {set:?}")),
            None => Err(format!("is not in ClusterSet {set:?}")),
        },
        &format!("removed from clusterset/{set}"),
    )
    .await
}

/// Sets or removes the membership label of each cluster; reports every cluster that failed.
async fn label(
    client: kube::Client,
    clusters: &[String],
    decide: impl Fn(Option<&str>) -> Result<Option<String>, String>,
    done: &str,
) -> anyhow::Result<()> {
    let api: Api<ClusterProfile> = Api::namespaced(client, INVENTORY_NAMESPACE);
    let mut failures = Vec::new();
    for cluster in clusters {
        let profile = match api.get_opt(cluster).await {
            Ok(Some(p)) => p,
            Ok(None) => {
                failures.push(format!("cluster {cluster:?} is not in the inventory"));
                continue;
            }
            Err(e) => {
                failures.push(format!(
                    "cluster {cluster:?}: {}",
                    explain(e, "cannot read it")
                ));
                continue;
            }
        };
        let current = profile
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(LABEL_CLUSTER_SET))
            .map(String::as_str);
        let value = match decide(current) {
            Ok(v) => v,
            Err(why) => {
                failures.push(format!("cluster {cluster:?} {why}"));
                continue;
            }
        };
        let patch = serde_json::json!({"metadata": {"labels": {LABEL_CLUSTER_SET: value}}});
        match api
            .patch(cluster, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => println!("cluster/{cluster} {done}"),
            Err(e) => failures.push(format!(
                "cluster {cluster:?}: {}",
                explain(e, "cannot label it")
            )),
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        anyhow::bail!("{}", failures.join("\n"))
    }
}
