//! `atoll token create|delete|list`: bootstrap tokens for agents.

use std::time::Duration;

use crate::client::explain;
use crate::output;

/// How long a token works; `None` for no expiry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ttl(pub Option<Duration>);

/// Parses `30s`, `30m`, `24h`, `7d`; `0` means no expiry.
pub fn parse_ttl(text: &str) -> Result<Ttl, String> {
    parse_duration(text).map(Ttl)
}

fn parse_duration(text: &str) -> Result<Option<Duration>, String> {
    if text == "0" {
        return Ok(None);
    }
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration like 30m, 24h or 7d (0: no expiry)"))?;
    let unit_seconds: u64 = match unit {
        "s" => 1,
        "m" => 60,
        "h" | "" => 3600,
        "d" => 86400,
        _ => return Err(format!("{text:?}: unknown unit {unit:?}; use s, m, h or d")),
    };
    let seconds = n
        .checked_mul(unit_seconds)
        .filter(|s| *s <= 100 * 366 * 86400)
        .ok_or_else(|| format!("{text:?} is longer than 100 years"))?;
    if seconds == 0 {
        return Ok(None);
    }
    Ok(Some(Duration::from_secs(seconds)))
}

pub async fn create(
    client: kube::Client,
    ttl: Ttl,
    description: &str,
    cluster_set: Option<&str>,
) -> anyhow::Result<()> {
    if let Some(set) = cluster_set {
        require_cluster_set(client.clone(), set).await?;
    }
    let (token, expires) = atoll_hub::bootstrap::create(client, ttl.0, description, cluster_set)
        .await
        .map_err(|e| explain(e, "cannot create a bootstrap token"))?;
    println!("{token}");
    if let Some(set) = cluster_set {
        eprintln!(
            "clusters that join with bootstrap token {} go into ClusterSet {set}",
            token.id()
        );
    }
    match expires {
        Some(at) => eprintln!(
            "bootstrap token {} expires at {at}; it is shown only now",
            token.id()
        ),
        None => eprintln!(
            "bootstrap token {} never expires; delete it with `atoll token delete {}`",
            token.id(),
            token.id()
        ),
    }
    Ok(())
}

/// Refuses a `--clusterset` that names no ClusterSet on the hub.
pub async fn require_cluster_set(client: kube::Client, set: &str) -> anyhow::Result<()> {
    let sets: kube::Api<atoll_api::clusterset::ClusterSet> = kube::Api::all(client);
    let found = sets
        .get_opt(set)
        .await
        .map_err(|e| explain(e, &format!("cannot read ClusterSet {set:?}")))?;
    if found.is_none() {
        anyhow::bail!(
            "--clusterset: ClusterSet {set:?} does not exist; create it first (atoll clusterset create {set})"
        );
    }
    Ok(())
}

pub async fn delete(client: kube::Client, token: &str) -> anyhow::Result<()> {
    let id = token.split('.').next().unwrap_or_default();
    atoll_hub::bootstrap::delete(client, token)
        .await
        .map_err(|e| explain(e, &format!("cannot delete bootstrap token {id}")))?;
    println!("bootstrap token {id} deleted");
    Ok(())
}

pub async fn list(client: kube::Client) -> anyhow::Result<()> {
    let mut tokens = atoll_hub::bootstrap::list(client)
        .await
        .map_err(|e| explain(e, "cannot list bootstrap tokens"))?;
    tokens.sort_by(|a, b| a.id.cmp(&b.id));
    let now = jiff::Timestamp::now();
    let rows: Vec<Vec<String>> = tokens
        .into_iter()
        .map(|t| {
            let expires = match t.expires {
                None => "never".to_owned(),
                Some(at) if at <= now => format!("{at} (expired)"),
                Some(at) => at.to_string(),
            };
            let set = t.cluster_set.unwrap_or_else(|| "<none>".to_owned());
            vec![t.id, expires, set, t.description]
        })
        .collect();
    print!(
        "{}",
        output::table(&["ID", "EXPIRES", "CLUSTERSET", "DESCRIPTION"], &rows)
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls_parse_with_units_and_zero_means_forever() {
        assert_eq!(parse_ttl("30m"), Ok(Ttl(Some(Duration::from_secs(1800)))));
        assert_eq!(parse_ttl("24h"), Ok(Ttl(Some(Duration::from_secs(86400)))));
        assert_eq!(
            parse_ttl("7d"),
            Ok(Ttl(Some(Duration::from_secs(7 * 86400))))
        );
        assert_eq!(parse_ttl("0"), Ok(Ttl(None)));
        assert!(parse_ttl("soon").unwrap_err().contains("not a duration"));
        assert!(parse_ttl("5y").unwrap_err().contains("unknown unit"));
    }
}
