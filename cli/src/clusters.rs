//! `atoll get clusters` and `atoll cluster accept|remove`.

use atoll_api::inventory::ClusterProfile;
use atoll_api::names::CONDITION_CLUSTER_SET_MEMBER;
use atoll_api::names::{
    CONDITION_CONTROL_PLANE_HEALTHY, CONDITION_JOINED, INVENTORY_NAMESPACE, LABEL_CLUSTER_SET,
    PROPERTY_CLUSTER_ID,
};
use atoll_api::placement::policy::parse_quantity;
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
    /// Show this ClusterProfile property in a column of its own (repeatable), e.g. `cost`.
    #[arg(long = "property", value_name = "KEY")]
    properties: Vec<String>,
    /// Order by a numeric property (Kubernetes quantities such as `4`, `500m`, `16Gi`), lowest
    /// first (`asc`, the default) or highest first (`desc`); clusters without a number for it
    /// come last. The scheduler's `--prefer` reads the same values.
    #[arg(long, value_name = "PROPERTY[:asc|desc]")]
    sort_by: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Table)]
    output: Format,
}

/// Sorts profiles by the numeric property `spec` (`PROPERTY[:asc|desc]`), those without a number
/// for it last, ties by name.
fn sort_by_property(profiles: &mut [ClusterProfile], spec: &str) -> anyhow::Result<()> {
    let (property, descending) = match spec.rsplit_once(':') {
        Some((p, "asc")) => (p, false),
        Some((p, "desc")) => (p, true),
        Some((_, other)) => anyhow::bail!(
            "--sort-by {spec}: the order {other:?} is not asc or desc (PROPERTY[:asc|desc])"
        ),
        None => (spec, false),
    };
    if property.is_empty() {
        anyhow::bail!("--sort-by {spec}: name a property, e.g. cost");
    }
    let key = |p: &ClusterProfile| {
        let value = property_value(p, property).and_then(|v| parse_quantity(&v));
        let ordered = value.map(|v| if descending { -v } else { v });
        (ordered.is_none(), ordered.unwrap_or(0.0))
    };
    profiles.sort_by(|a, b| {
        let (ka, kb) = (key(a), key(b));
        ka.0.cmp(&kb.0)
            .then(ka.1.total_cmp(&kb.1))
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
    Ok(())
}

fn property_value(profile: &ClusterProfile, name: &str) -> Option<String> {
    profile
        .status
        .as_ref()?
        .properties
        .iter()
        .find(|p| p.name == name)
        .map(|p| p.value.clone())
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
    if let Some(spec) = &args.sort_by {
        sort_by_property(&mut list.items, spec)?;
    }
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
    let columns: Vec<String> = args.properties.iter().map(|p| p.to_uppercase()).collect();
    header.extend(columns.iter().map(String::as_str));
    let rows: Vec<Vec<String>> = list
        .items
        .iter()
        .map(|p| {
            let mut row = row(p, wide);
            row.extend(
                args.properties
                    .iter()
                    .map(|k| property_value(p, k).unwrap_or_else(|| "<none>".to_owned())),
            );
            row
        })
        .collect();
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

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(name: &str, cost: Option<&str>) -> ClusterProfile {
        let mut profile = ClusterProfile::new(name, Default::default());
        profile.status = Some(atoll_api::inventory::ClusterProfileStatus {
            properties: cost
                .map(|c| atoll_api::inventory::Property {
                    name: "cost".into(),
                    value: c.into(),
                    last_observed_time: None,
                })
                .into_iter()
                .collect(),
            ..Default::default()
        });
        profile
    }

    fn names(profiles: &[ClusterProfile]) -> Vec<String> {
        profiles
            .iter()
            .filter_map(|p| p.metadata.name.clone())
            .collect()
    }

    #[test]
    fn clusters_sort_by_a_numeric_property_those_without_one_last() {
        let mut list = vec![
            profile("a", Some("cheap")),
            profile("b", Some("2k")),
            profile("c", Some("500")),
            profile("d", None),
            profile("e", Some("500")),
        ];
        sort_by_property(&mut list, "cost").unwrap();
        assert_eq!(names(&list), ["c", "e", "b", "a", "d"]);
        sort_by_property(&mut list, "cost:desc").unwrap();
        assert_eq!(names(&list), ["b", "c", "e", "a", "d"]);
        assert!(
            sort_by_property(&mut list, "cost:up")
                .unwrap_err()
                .to_string()
                .contains("not asc or desc")
        );
    }
}
