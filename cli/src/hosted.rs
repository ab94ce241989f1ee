//! `atoll hosted ...` (HostedClusters: create, list, delete, suspend, resume, backup,
//! join-command) and `atoll kubeconfig NAME`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use atoll_api::hosted::{
    ANNOTATION_RESTORE, ApiServerSpec, CONDITION_AGENT_JOINED, CONDITION_AVAILABLE,
    CONDITION_DEGRADED, CONDITION_PROGRESSING, HostedCluster, HostedClusterSpec, HostedLimits,
    HostedMode, HostedStorage, KUBECONFIG_KEY, StorageBackend, kubeconfig_secret_name,
    name_problem, parse_bytes,
};
use atoll_api::names::HOSTED_CLUSTERS_NAMESPACE;
use clap::{Args, ValueEnum};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};

use crate::client::explain;
use crate::output::{self, Format};

/// How often `--wait` looks again.
const POLL: Duration = Duration::from_millis(50);

fn parse_label(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("{text:?} is not a label KEY=VALUE"))
}

fn parse_quantity(text: &str) -> Result<String, String> {
    parse_bytes(&serde_json::Value::String(text.to_owned()))
        .map(|_| text.to_owned())
        .map_err(|e| e.to_string())
}

/// Where the control plane runs.
#[derive(Clone, Copy, ValueEnum)]
pub enum Mode {
    Embedded,
    Process,
    Kubernetes,
}

/// The datastore.
#[derive(Clone, Copy, ValueEnum)]
pub enum Storage {
    /// An SQLite file in the control plane's data directory.
    Sqlite,
    /// In memory, lost when the control plane stops.
    Memory,
    /// The etcd the hub was given for hosted clusters, under a prefix of the cluster's own.
    Etcd,
}

/// Flags of `atoll hosted create`.
#[derive(Args)]
pub struct CreateArgs {
    /// The cluster's name (a DNS label: it names the cluster on the hub).
    name: String,
    /// Namespace of the HostedCluster on the hub.
    #[arg(short = 'n', long, default_value = HOSTED_CLUSTERS_NAMESPACE)]
    namespace: String,
    /// Where the control plane runs.
    #[arg(long, value_enum, default_value_t = Mode::Embedded)]
    mode: Mode,
    /// The datastore.
    #[arg(long, value_enum, default_value_t = Storage::Sqlite)]
    storage: Storage,
    /// A ClusterSet to join the cluster to.
    #[arg(long)]
    clusterset: Option<String>,
    /// A label for the cluster's ClusterProfile, KEY=VALUE (repeat).
    #[arg(short = 'l', long = "label", value_parser = parse_label)]
    labels: Vec<(String, String)>,
    /// The port its API server serves on [default: one the hub picks, then keeps].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    port: Option<u16>,
    /// Another DNS name or address for its serving certificate (repeat).
    #[arg(long = "tls-san")]
    tls_sans: Vec<String>,
    /// Most objects it may store.
    #[arg(long, value_parser = clap::value_parser!(i64).range(1..))]
    max_objects: Option<i64>,
    /// Most bytes of objects it may store, e.g. 256Mi.
    #[arg(long, value_parser = parse_quantity)]
    max_storage_bytes: Option<String>,
    /// Most requests it serves at once.
    #[arg(long, value_parser = clap::value_parser!(i32).range(1..))]
    max_requests_inflight: Option<i32>,
    /// Restore the cluster from a backup (`atoll hosted backup`): same data, and old
    /// kubeconfigs keep working.
    #[arg(long, value_name = "FILE")]
    restore: Option<PathBuf>,
    /// Wait until the control plane is available and its agent joined the hub.
    #[arg(long)]
    wait: bool,
    /// How long `--wait` (and a restore) waits.
    #[arg(long, default_value = "2m", value_parser = atoll_api::placement::parse_duration)]
    timeout: Duration,
}

pub async fn create(client: kube::Client, args: CreateArgs) -> anyhow::Result<()> {
    if let Some(problem) = name_problem(&args.name) {
        bail!("cannot create hosted cluster: {problem}");
    }
    let backup = match &args.restore {
        Some(path) => Some(read_backup(path)?),
        None => None,
    };
    if let Some(set) = &args.clusterset {
        let sets: Api<atoll_api::clusterset::ClusterSet> = Api::all(client.clone());
        if sets
            .get_opt(set)
            .await
            .map_err(|e| explain(e, "cannot read ClusterSets"))?
            .is_none()
        {
            bail!(
                "ClusterSet {set:?} does not exist; create it first (atoll clusterset create {set})"
            );
        }
    }
    let api: Api<HostedCluster> = Api::namespaced(client.clone(), &args.namespace);
    let key = format!("{}/{}", args.namespace, args.name);
    let port = args.port.or_else(|| backup.as_ref().and_then(|b| b.port));
    let limits = HostedLimits {
        storage_bytes: args
            .max_storage_bytes
            .clone()
            .map(serde_json::Value::String),
        objects: args.max_objects,
        requests_in_flight: args.max_requests_inflight,
    };
    let mut hc = HostedCluster::new(
        &args.name,
        HostedClusterSpec {
            mode: match args.mode {
                Mode::Embedded => HostedMode::Embedded,
                Mode::Process => HostedMode::Process,
                Mode::Kubernetes => HostedMode::Kubernetes,
            },
            cluster_set: args.clusterset.clone(),
            labels: args.labels.iter().cloned().collect::<BTreeMap<_, _>>(),
            storage: Some(HostedStorage {
                backend: match args.storage {
                    Storage::Sqlite => StorageBackend::Sqlite,
                    Storage::Memory => StorageBackend::Memory,
                    Storage::Etcd => StorageBackend::Etcd,
                },
                ..HostedStorage::default()
            }),
            api_server: (port.is_some() || !args.tls_sans.is_empty()).then(|| ApiServerSpec {
                port: port.map(i32::from),
                extra_sans: args.tls_sans.clone(),
                ..ApiServerSpec::default()
            }),
            limits: (limits != HostedLimits::default()).then_some(limits),
            ..HostedClusterSpec::default()
        },
    );
    if let Some(path) = &args.restore {
        hc.metadata.annotations = Some(BTreeMap::from([(
            ANNOTATION_RESTORE.to_owned(),
            path.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        )]));
    }
    api.create(&PostParams::default(), &hc)
        .await
        .map_err(|e| match e {
            kube::Error::Api(s) if s.code == 409 => anyhow::anyhow!(
                "hosted cluster {key} exists already; delete it first (atoll hosted delete {}) or choose another name",
                args.name
            ),
            kube::Error::Api(s) if s.code == 404 => anyhow::anyhow!(
                "cannot create hosted cluster {key}: this API server does not serve HostedClusters (or namespace {} does not exist); is it an atoll hub (atoll up, or hub-controller running against it)?",
                args.namespace
            ),
            e => explain(e, &format!("cannot create hosted cluster {key}")),
        })?;
    println!("hostedcluster/{} created", args.name);
    if let (Some(path), Some(backup)) = (&args.restore, backup) {
        if let Err(error) = restore(&client, &api, &args, path, backup).await {
            eprintln!("the restore failed; deleting the new, empty hosted cluster {key}");
            let _ = api.delete(&args.name, &DeleteParams::default()).await;
            return Err(error);
        }
        return wait_available(&api, &args.name, args.timeout).await;
    }
    if args.wait {
        wait_available(&api, &args.name, args.timeout).await?;
    }
    Ok(())
}

/// A backup file read and checked in full before anything is created.
struct Backup {
    bytes: Vec<u8>,
    port: Option<u16>,
    summary: String,
}

fn read_backup(path: &Path) -> anyhow::Result<Backup> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let header = atoll_apiserver::backup::verify(std::io::Cursor::new(&bytes))
        .with_context(|| format!("cannot restore from {}", path.display()))?;
    let port = url_port(&header.server);
    Ok(Backup {
        bytes,
        port,
        summary: format!(
            "{} objects of cluster {} at revision {}, taken {}",
            header.objects, header.cluster_name, header.revision, header.created_at
        ),
    })
}

fn url_port(url: &str) -> Option<u16> {
    url.rsplit_once(':')?.1.trim_end_matches('/').parse().ok()
}

/// Uploads a backup into a new hosted cluster that waits for one.
async fn restore(
    client: &kube::Client,
    api: &Api<HostedCluster>,
    args: &CreateArgs,
    path: &Path,
    backup: Backup,
) -> anyhow::Result<()> {
    let started = Instant::now();
    loop {
        let hc = api
            .get(&args.name)
            .await
            .map_err(|e| explain(e, "cannot read the new hosted cluster"))?;
        let progressing = condition(&hc, CONDITION_PROGRESSING);
        if progressing.is_some_and(|c| c.1 == "AwaitingRestore")
            && hc.status.as_ref().is_some_and(|s| s.kubeconfig.is_some())
        {
            break;
        }
        if let Some((status, reason, message)) = condition(&hc, CONDITION_DEGRADED)
            && status == "True"
        {
            bail!(
                "hosted cluster {}/{} cannot start ({reason}): {message}",
                args.namespace,
                args.name
            );
        }
        if started.elapsed() > args.timeout {
            bail!(
                "the new hosted cluster did not start within {}s",
                args.timeout.as_secs()
            );
        }
        tokio::time::sleep(POLL).await;
    }
    let member = member_client(client, &args.namespace, &args.name).await?;
    let request = http::Request::put("/atoll/v1/restore")
        .header(http::header::CONTENT_TYPE, "application/octet-stream")
        .body(backup.bytes)?;
    member
        .request_text(request)
        .await
        .map_err(|e| explain(e, &format!("cannot restore {}", path.display())))?;
    println!("restored {} ({})", path.display(), backup.summary);
    Ok(())
}

/// Waits until a HostedCluster is Available and its agent joined, printing progress.
async fn wait_available(
    api: &Api<HostedCluster>,
    name: &str,
    timeout: Duration,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut last = String::new();
    loop {
        let hc = api
            .get(name)
            .await
            .map_err(|e| explain(e, &format!("cannot read hosted cluster {name}")))?;
        let available = condition(&hc, CONDITION_AVAILABLE);
        let joined = condition(&hc, CONDITION_AGENT_JOINED);
        if available.as_ref().is_some_and(|c| c.0 == "True")
            && joined.as_ref().is_some_and(|c| c.0 == "True")
        {
            let status = hc.status.unwrap_or_default();
            println!(
                "hostedcluster/{name} is available at {} (ready after {}); kubeconfig: atoll kubeconfig {name}",
                status.url.unwrap_or_default(),
                status.ready_after.unwrap_or_default()
            );
            return Ok(());
        }
        if let Some((status, reason, message)) = condition(&hc, CONDITION_DEGRADED)
            && status == "True"
            && matches!(
                reason.as_str(),
                "InvalidName"
                    | "NameInUse"
                    | "ModeUnavailable"
                    | "UnsupportedVersion"
                    | "InvalidLimits"
                    | "InvalidLabels"
            )
        {
            bail!("hosted cluster {name} cannot start ({reason}): {message}");
        }
        let line = match (&available, &joined) {
            (Some((_, reason, message)), _)
                if available.as_ref().is_some_and(|c| c.0 != "True") =>
            {
                format!("waiting: {reason}: {message}")
            }
            (_, Some((_, reason, message))) => format!("waiting: {reason}: {message}"),
            _ => "waiting for the hub to take it up".to_owned(),
        };
        if line != last {
            eprintln!("{line}");
            last = line;
        }
        if started.elapsed() > timeout {
            bail!(
                "hosted cluster {name} is not available after {}s: {last}",
                timeout.as_secs()
            );
        }
        tokio::time::sleep(POLL).await;
    }
}

/// A condition's status, reason and message.
fn condition(hc: &HostedCluster, type_: &str) -> Option<(String, String, String)> {
    hc.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

/// Flags of `atoll hosted list`.
#[derive(Args)]
pub struct ListArgs {
    /// Namespace of the HostedClusters on the hub.
    #[arg(short = 'n', long, default_value = HOSTED_CLUSTERS_NAMESPACE)]
    namespace: String,
    /// HostedClusters of every namespace.
    #[arg(short = 'A', long)]
    all_namespaces: bool,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Table)]
    output: Format,
}

pub async fn list(client: kube::Client, args: ListArgs) -> anyhow::Result<()> {
    let api: Api<HostedCluster> = if args.all_namespaces {
        Api::all(client)
    } else {
        Api::namespaced(client, &args.namespace)
    };
    let mut list = api
        .list(&ListParams::default())
        .await
        .map_err(|e| explain(e, "cannot list hosted clusters"))?;
    list.items.sort_by(|a, b| {
        (&a.metadata.namespace, &a.metadata.name).cmp(&(&b.metadata.namespace, &b.metadata.name))
    });
    if matches!(args.output, Format::Yaml | Format::Json) {
        print!("{}", output::document(&list, args.output)?);
        return Ok(());
    }
    if list.items.is_empty() {
        eprintln!("No hosted clusters.");
        return Ok(());
    }
    let wide = args.output == Format::Wide;
    let mut header = vec![];
    if args.all_namespaces {
        header.push("NAMESPACE");
    }
    header.extend([
        "NAME",
        "MODE",
        "VERSION",
        "AVAILABLE",
        "ENDPOINT",
        "KUBECONFIG",
        "AGE",
    ]);
    if wide {
        header.extend(["JOINED", "READY-AFTER", "MESSAGE"]);
    }
    let rows: Vec<Vec<String>> = list
        .items
        .iter()
        .map(|hc| {
            let status = hc.status.clone().unwrap_or_default();
            let available = condition(hc, CONDITION_AVAILABLE);
            let mut row = vec![];
            if args.all_namespaces {
                row.push(hc.metadata.namespace.clone().unwrap_or_default());
            }
            row.extend([
                hc.metadata.name.clone().unwrap_or_default(),
                hc.spec.mode.to_string(),
                status.version.clone().unwrap_or_else(|| "<none>".into()),
                available
                    .as_ref()
                    .map_or("Unknown".to_owned(), |c| c.0.clone()),
                status.url.clone().unwrap_or_else(|| "<none>".into()),
                status
                    .kubeconfig
                    .as_ref()
                    .map_or("<none>".to_owned(), |k| k.name.clone()),
                output::age(hc.metadata.creation_timestamp.as_ref()),
            ]);
            if wide {
                let degraded = condition(hc, CONDITION_DEGRADED).filter(|c| c.0 == "True");
                let message = match (&degraded, &available) {
                    (Some((_, reason, message)), _) => format!("{reason}: {message}"),
                    (None, Some((status, reason, message))) if status != "True" => {
                        format!("{reason}: {message}")
                    }
                    _ => String::new(),
                };
                row.extend([
                    condition(hc, CONDITION_AGENT_JOINED).map_or("Unknown".to_owned(), |c| c.0),
                    status
                        .ready_after
                        .clone()
                        .unwrap_or_else(|| "<none>".into()),
                    message,
                ]);
            }
            row
        })
        .collect();
    print!("{}", output::table(&header, &rows));
    Ok(())
}

/// Deletes a hosted cluster: its control plane stops, it leaves the inventory with its Works,
/// and its data goes.
pub async fn delete(
    client: kube::Client,
    namespace: &str,
    name: &str,
    wait: bool,
    timeout: Duration,
) -> anyhow::Result<()> {
    let api: Api<HostedCluster> = Api::namespaced(client, namespace);
    api.delete(name, &DeleteParams::default())
        .await
        .map_err(|e| {
            explain(
                e,
                &format!("cannot delete hosted cluster {namespace}/{name}"),
            )
        })?;
    println!("hostedcluster/{name} deleted");
    if !wait {
        return Ok(());
    }
    let started = Instant::now();
    while api
        .get_opt(name)
        .await
        .map_err(|e| explain(e, "cannot read the hosted cluster"))?
        .is_some()
    {
        if started.elapsed() > timeout {
            bail!(
                "hosted cluster {namespace}/{name} is still being torn down after {}s",
                timeout.as_secs()
            );
        }
        tokio::time::sleep(POLL).await;
    }
    println!("hostedcluster/{name} is gone, with its data");
    Ok(())
}

/// Suspends or resumes a hosted cluster.
pub async fn suspend(
    client: kube::Client,
    namespace: &str,
    name: &str,
    suspended: bool,
    wait: bool,
    timeout: Duration,
) -> anyhow::Result<()> {
    let api: Api<HostedCluster> = Api::namespaced(client, namespace);
    let patch = serde_json::json!({"spec": {"suspended": suspended}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| {
            explain(
                e,
                &format!("cannot update hosted cluster {namespace}/{name}"),
            )
        })?;
    if suspended {
        println!("hostedcluster/{name} suspended (its data is kept)");
        return Ok(());
    }
    println!("hostedcluster/{name} resumed");
    if wait {
        wait_available(&api, name, timeout).await?;
    }
    Ok(())
}

/// A client of a hosted cluster, from its kubeconfig Secret.
async fn member_client(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> anyhow::Result<kube::Client> {
    let text = kubeconfig_text(client, namespace, name).await?;
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&text)
        .with_context(|| format!("the kubeconfig of {namespace}/{name} cannot be read"))?;
    client_of(kubeconfig, namespace, name).await
}

/// A client from a hosted cluster's kubeconfig.
async fn client_of(
    kubeconfig: kube::config::Kubeconfig,
    namespace: &str,
    name: &str,
) -> anyhow::Result<kube::Client> {
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .with_context(|| format!("the kubeconfig of {namespace}/{name} cannot be used"))?;
    kube::Client::try_from(config).context("cannot build a client for the hosted cluster")
}

async fn kubeconfig_text(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> anyhow::Result<String> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let secret_name = kubeconfig_secret_name(name);
    let Some(secret) = secrets
        .get_opt(&secret_name)
        .await
        .map_err(|e| explain(e, "cannot read the kubeconfig Secret"))?
    else {
        let hosted: Api<HostedCluster> = Api::namespaced(client.clone(), namespace);
        return match hosted.get_opt(name).await {
            Ok(Some(_)) => Err(anyhow::anyhow!(
                "hosted cluster {namespace}/{name} has no kubeconfig yet (Secret {secret_name}); see atoll hosted list -o wide"
            )),
            _ => Err(anyhow::anyhow!(
                "there is no hosted cluster {namespace}/{name}; see atoll hosted list -A"
            )),
        };
    };
    let bytes = secret
        .data
        .and_then(|d| d.get(KUBECONFIG_KEY).cloned())
        .with_context(|| format!("Secret {namespace}/{secret_name} holds no {KUBECONFIG_KEY}"))?;
    String::from_utf8(bytes.0).context("the kubeconfig is not text")
}

/// Prints a hosted cluster's admin kubeconfig, or writes it to `output` (mode 0600).
pub async fn kubeconfig(
    client: kube::Client,
    namespace: &str,
    name: &str,
    output: Option<&Path>,
) -> anyhow::Result<()> {
    let text = kubeconfig_text(&client, namespace, name).await?;
    match output {
        None => print!("{text}"),
        Some(path) => {
            atoll_pki::write_private(path, text.as_bytes())
                .with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!(
                "wrote the kubeconfig of {namespace}/{name} to {}: kubectl --kubeconfig {} get namespaces",
                path.display(),
                path.display()
            );
        }
    }
    Ok(())
}

/// Takes a consistent snapshot of a serving hosted cluster (its data, CA and credentials) into
/// `output` (mode 0600).
pub async fn backup(
    client: kube::Client,
    namespace: &str,
    name: &str,
    output: &Path,
) -> anyhow::Result<()> {
    let member = member_client(&client, namespace, name).await?;
    let header = crate::backup::download(&member, &format!("{namespace}/{name}"), output).await?;
    println!(
        "backed up {namespace}/{name} to {}: {} objects at revision {}",
        output.display(),
        header.objects,
        header.revision
    );
    Ok(())
}

/// Prints the `kubeadm join` command of a `mode: Kubernetes` hosted cluster: its endpoint, a
/// bootstrap token (the one valid longest, or a new one valid `ttl`), and the hash of its CA.
pub async fn join_command(
    client: kube::Client,
    namespace: &str,
    name: &str,
    ttl: Option<Duration>,
) -> anyhow::Result<()> {
    use atoll_hub::hosted::kubernetes::join;
    use base64::Engine as _;
    let hosted: Api<HostedCluster> = Api::namespaced(client.clone(), namespace);
    let hc = hosted
        .get_opt(name)
        .await
        .map_err(|e| explain(e, "cannot read the HostedCluster"))?
        .with_context(|| {
            format!("there is no hosted cluster {namespace}/{name}; see atoll hosted list -A")
        })?;
    if hc.spec.mode != HostedMode::Kubernetes {
        bail!(
            "hosted cluster {namespace}/{name} is mode {:?}: worker nodes join only mode Kubernetes clusters, whose control plane is a real kube-apiserver on the hub cluster; create one with atoll hosted create NAME --mode kubernetes",
            hc.spec.mode
        );
    }
    match condition(&hc, join::CONDITION_WORKERS_JOINABLE) {
        Some((status, _, _)) if status == "True" => {}
        Some((_, reason, message)) => {
            bail!("hosted cluster {namespace}/{name} cannot take workers yet ({reason}): {message}")
        }
        None => bail!(
            "hosted cluster {namespace}/{name} cannot take workers yet: the hub has not written what kubeadm join needs; wait until its condition {} is True (kubectl get hostedcluster {name} -n {namespace} -o yaml)",
            join::CONDITION_WORKERS_JOINABLE
        ),
    }
    let endpoint = hc
        .status
        .as_ref()
        .and_then(|s| s.control_plane_endpoint.clone())
        .with_context(|| format!("hosted cluster {namespace}/{name} has no endpoint yet"))?;
    let text = kubeconfig_text(&client, namespace, name).await?;
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&text)
        .with_context(|| format!("the kubeconfig of {namespace}/{name} cannot be read"))?;
    let ca = kubeconfig
        .clusters
        .first()
        .and_then(|c| c.cluster.as_ref())
        .and_then(|c| c.certificate_authority_data.clone())
        .with_context(|| {
            format!("the kubeconfig of {namespace}/{name} holds no certificate-authority-data")
        })?;
    let ca = base64::engine::general_purpose::STANDARD
        .decode(ca.trim())
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .with_context(|| {
            format!("the certificate-authority-data of {namespace}/{name}'s kubeconfig is not base64 PEM")
        })?;
    let hash = join::ca_cert_hash(&ca)
        .with_context(|| format!("the CA of hosted cluster {namespace}/{name}"))?;
    let member = client_of(kubeconfig, namespace, name).await?;
    let secrets: Api<Secret> = Api::namespaced(member, join::TOKEN_NAMESPACE);
    let what = format!("hosted cluster {namespace}/{name}'s bootstrap tokens");
    let found = secrets
        .list(
            &ListParams::default()
                .labels(join::LABEL_TOKEN_BY)
                .limit(100),
        )
        .await
        .with_context(|| format!("cannot list {what} through its API server"))?
        .items;
    let found = join::Token::all_in(found);
    let now = jiff::Timestamp::now();
    // A worker needs a few minutes to use it: a token about to expire is not printed.
    let kept = join::usable(&found, now, Duration::from_secs(600)).cloned();
    let token = match (ttl, kept) {
        (None, Some(token)) => token,
        (ttl, _) => {
            let token =
                join::Token::generate(now, ttl.unwrap_or(join::DEFAULT_TTL), join::MadeBy::Cli);
            let secret: Secret = serde_json::from_value(token.secret())?;
            secrets
                .create(&PostParams::default(), &secret)
                .await
                .with_context(|| format!("cannot create a bootstrap token among {what}"))?;
            token
        }
    };
    println!("{}", join::join_command(&endpoint, &token, &hash));
    Ok(())
}
