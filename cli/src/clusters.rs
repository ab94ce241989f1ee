//! `atoll get clusters` and `atoll cluster accept|remove`.

use atoll_api::inventory::ClusterProfile;
use atoll_api::names::CONDITION_CLUSTER_SET_MEMBER;
use atoll_api::names::{
    CONDITION_CONTROL_PLANE_HEALTHY, CONDITION_JOINED, INVENTORY_NAMESPACE, LABEL_CLUSTER_SET,
    PROPERTY_CLUSTER_ID,
};
use clap::Args;
use kube::api::{Api, ListParams};

use crate::client::explain;
use crate::output::{self, Format};

/// Flags of `atoll get clusters`.
#[derive(Args)]
pub struct GetArgs {
    /// Only the members of this ClusterSet.
    #[arg(long)]
    clusterset: Option<String>,
    /// A label selector over ClusterProfiles, e.g. `env=prod`.
    #[arg(short = 'l', long)]
    selector: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Table)]
    output: Format,
}

pub async fn get(client: kube::Client, args: GetArgs) -> anyhow::Result<()> {
    let api: Api<ClusterProfile> = Api::namespaced(client, INVENTORY_NAMESPACE);
    let mut selectors: Vec<String> = args.selector.into_iter().collect();
    if let Some(set) = &args.clusterset {
        selectors.push(format!("{LABEL_CLUSTER_SET}={set}"));
    }
    let params = ListParams::default().labels(&selectors.join(","));
    let mut list = api
        .list(&params)
        .await
        .map_err(|e| explain(e, "cannot list clusters"))?;
    list.items
        .sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    if matches!(args.output, Format::Yaml | Format::Json) {
        print!("{}", output::document(&list, args.output)?);
        return Ok(());
    }
    if list.items.is_empty() {
        eprintln!(
            "No clusters in the inventory{}.",
            args.clusterset
                .map(|s| format!(" of ClusterSet {s}"))
                .unwrap_or_default()
        );
        return Ok(());
    }
    let wide = args.output == Format::Wide;
    let mut header = vec![
        "NAME",
        "HEALTHY",
        "JOINED",
        "KUBERNETES",
        "CLUSTERSET",
        "AGE",
    ];
    if wide {
        header.extend(["CLUSTER-ID", "MESSAGE"]);
    }
    let rows: Vec<Vec<String>> = list.items.iter().map(|p| row(p, wide)).collect();
    print!("{}", output::table(&header, &rows));
    Ok(())
}

fn row(profile: &ClusterProfile, wide: bool) -> Vec<String> {
    let status = profile.status.clone().unwrap_or_default();
    let condition = |t: &str| status.conditions.iter().find(|c| c.type_ == t);
    let status_of = |t: &str| condition(t).map_or("Unknown".to_owned(), |c| c.status.clone());
    let set = profile
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL_CLUSTER_SET))
        .cloned()
        .unwrap_or_else(|| "<none>".to_owned());
    // A set the hub refused shows with a mark; `-o wide` says why.
    let set = match condition(CONDITION_CLUSTER_SET_MEMBER) {
        Some(c) if c.status == "False" => format!("{set} (refused)"),
        _ => set,
    };
    let mut row = vec![
        profile.metadata.name.clone().unwrap_or_default(),
        status_of(CONDITION_CONTROL_PLANE_HEALTHY),
        status_of(CONDITION_JOINED),
        status
            .version
            .as_ref()
            .and_then(|v| v.kubernetes.clone())
            .unwrap_or_else(|| "<unknown>".to_owned()),
        set,
        output::age(profile.metadata.creation_timestamp.as_ref()),
    ];
    if wide {
        let id = status
            .properties
            .iter()
            .find(|p| p.name == PROPERTY_CLUSTER_ID)
            .map_or("<none>".to_owned(), |p| p.value.clone());
        // The first condition that is not fine says what needs attention.
        let message = status
            .conditions
            .iter()
            .find(|c| c.status != "True")
            .map_or(String::new(), |c| format!("{}: {}", c.reason, c.message));
        row.extend([id, message]);
    }
    row
}

pub async fn accept(client: kube::Client, name: &str) -> anyhow::Result<()> {
    atoll_hub::record::accept(client, name).await?;
    println!("cluster/{name} accepted");
    Ok(())
}

pub async fn remove(client: kube::Client, name: &str) -> anyhow::Result<()> {
    atoll_hub::record::remove(client, name).await?;
    println!("cluster/{name} removed");
    Ok(())
}
