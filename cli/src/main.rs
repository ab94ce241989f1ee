//! The `atoll` command. This file only parses flags and calls into the commands' modules.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

mod agents;
mod backup;
mod client;
mod clusters;
mod clustersets;
mod hosted;
mod logging;
mod output;
mod tokens;
mod up;
mod users;
mod works;

/// mimalloc: the API server allocates many small JSON values per request, and glibc's malloc
/// spent a fifth of the server's CPU on them under load.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "atoll", version, about = "A multicluster hub for Kubernetes")]
struct Cli {
    /// Log format.
    #[arg(long, global = true, env = "ATOLL_LOG_FORMAT", value_enum, default_value_t = logging::Format::Plain)]
    log_format: logging::Format,
    /// The hub's kubeconfig [default: $KUBECONFIG, else .atoll/hub.kubeconfig when it exists,
    /// else ~/.kube/config].
    #[arg(long, global = true, env = "ATOLL_KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

// Subcommands' flags are built only for the one that runs (`defer`): building all of them ran
// code from every part of the binary, which stayed resident in a long-running `atoll apiserver`.
// A deferred subcommand's description is replaced by its flags structs' doc comments when it is
// built, so those structs have plain comments, or repeat the description (`UpArgs`).
#[derive(Subcommand)]
#[command(defer = true)]
enum Command {
    #[command(about = UP_ABOUT)]
    Up(Box<UpArgs>),
    /// Start a plain API server (a member cluster for tests and demos) in the foreground.
    Apiserver(ApiserverArgs),
    /// Show resources of the hub.
    Get {
        #[command(subcommand)]
        what: GetCommand,
    },
    /// Accept or remove member clusters.
    Cluster {
        #[command(subcommand)]
        command: ClusterCommand,
    },
    /// Administer ClusterSets and their membership.
    Clusterset {
        #[command(subcommand)]
        command: ClusterSetCommand,
    },
    /// Bootstrap tokens that let agents join.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// People and tools who use the hub without being its admin.
    User {
        #[command(subcommand)]
        command: UserCommand,
    },
    /// Fan manifests out to clusters (WorkPlacements) and see what happened.
    Work {
        #[command(subcommand)]
        command: WorkCommand,
    },
    /// Hosted clusters: member clusters whose control plane the hub runs.
    Hosted {
        #[command(subcommand)]
        command: HostedCommand,
    },
    /// Print everything a member cluster needs to join the hub, as YAML for `kubectl apply -f -`:
    /// namespace, RBAC, the agent's Deployment, and a Secret with the hub's address, its CA and
    /// a fresh join token.
    AgentManifests(agents::Args),
    /// Back up the hub while it serves: every object at one revision, with the CA, tokens and
    /// signing key its clients and agents depend on (restore with `atoll up --restore FILE`).
    Backup {
        /// The file to write (mode 0600).
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
    },
    /// Print a hosted cluster's admin kubeconfig, or write it to a file.
    Kubeconfig {
        /// The hosted cluster.
        name: String,
        /// Namespace of the HostedCluster on the hub.
        #[arg(short = 'n', long, default_value = atoll_api::names::HOSTED_CLUSTERS_NAMESPACE)]
        namespace: String,
        /// Write it to this file (mode 0600) instead of printing it.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum UserCommand {
    /// Write a kubeconfig for a new user, with a client certificate the hub's API server signs
    /// (through a CertificateSigningRequest). The user may do nothing until a role is bound.
    Create {
        /// The user's name (the certificate's common name).
        name: String,
        /// A group the user is in (repeat for more).
        #[arg(long = "group", value_name = "GROUP")]
        groups: Vec<String>,
        /// How long the certificate is valid, e.g. 90m, 720h (at least 10m; the signer gives a
        /// year at most).
        #[arg(long, default_value = "720h", value_parser = atoll_api::placement::parse_duration)]
        ttl: std::time::Duration,
        /// The kubeconfig to write (mode 0600).
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
    },
}

#[derive(Subcommand)]
enum HostedCommand {
    /// Create a hosted cluster: a new member cluster, in the inventory at once.
    Create(hosted::CreateArgs),
    /// List hosted clusters.
    List(hosted::ListArgs),
    /// Delete a hosted cluster: its control plane stops, it leaves the inventory with its
    /// Works, and its data goes.
    Delete {
        #[command(flatten)]
        target: HostedTarget,
        /// Wait until it is gone.
        #[arg(long)]
        wait: bool,
    },
    /// Stop a hosted cluster's control plane, keeping its data.
    Suspend {
        #[command(flatten)]
        target: HostedTarget,
    },
    /// Serve a suspended hosted cluster again.
    Resume {
        #[command(flatten)]
        target: HostedTarget,
        /// Wait until it is available.
        #[arg(long)]
        wait: bool,
    },
    /// Print the `kubeadm join` command that joins a worker node to a `mode: Kubernetes`
    /// hosted cluster (a bootstrap token the hub keeps, or a new one with --ttl).
    JoinCommand {
        #[command(flatten)]
        target: HostedTarget,
        /// Make a new bootstrap token valid this long (such as 2h or 30m) instead of using the
        /// one the hub keeps.
        #[arg(long, value_parser = atoll_api::placement::parse_duration)]
        ttl: Option<std::time::Duration>,
    },
    /// Take a consistent snapshot of a hosted cluster while it serves: its data, CA and
    /// credentials (`atoll hosted create NAME --restore FILE` brings it back).
    Backup {
        #[command(flatten)]
        target: HostedTarget,
        /// The file to write (mode 0600).
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
    },
}

/// One hosted cluster.
#[derive(Args)]
struct HostedTarget {
    /// The hosted cluster.
    name: String,
    /// Namespace of the HostedCluster on the hub.
    #[arg(short = 'n', long, default_value = atoll_api::names::HOSTED_CLUSTERS_NAMESPACE)]
    namespace: String,
    /// How long `--wait` waits.
    #[arg(long, default_value = "2m", value_parser = atoll_api::placement::parse_duration)]
    timeout: std::time::Duration,
}

#[derive(Subcommand)]
enum WorkCommand {
    /// Apply manifests from files to the selected clusters, as a WorkPlacement.
    Apply(Box<works::ApplyArgs>),
    /// Show a WorkPlacement and where its Work stands on every cluster.
    Status {
        /// The WorkPlacement's name.
        name: String,
        /// Its namespace on the hub.
        #[arg(short = 'n', long, default_value = "default")]
        namespace: String,
    },
    /// Delete a WorkPlacement: its Works and their resources leave every cluster.
    Delete {
        /// The WorkPlacement's name.
        name: String,
        /// Its namespace on the hub.
        #[arg(short = 'n', long, default_value = "default")]
        namespace: String,
    },
}

// Flags shared by `up` and `apiserver`.
#[derive(Args)]
struct ServerArgs {
    /// Directory for the database, the CA, tokens and the admin kubeconfig
    /// [default: .atoll for `up`, .atoll-apiserver for `apiserver`].
    #[arg(long, env = "ATOLL_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Address the API server listens on.
    #[arg(long, env = "ATOLL_API_ADDR", default_value = "127.0.0.1:6443")]
    api_addr: SocketAddr,
    /// Storage backend: `sqlite` (durable, in the data directory), `memory`, or `etcd` (an etcd
    /// cluster that several API servers share, see --etcd-endpoints).
    #[arg(long, env = "ATOLL_STORAGE", value_enum, default_value_t = Storage::Sqlite)]
    storage: Storage,
    /// etcd client URLs for `--storage etcd`, such as http://10.0.0.5:2379 (repeat, or separate
    /// with commas).
    #[arg(long, env = "ATOLL_ETCD_ENDPOINTS", value_name = "URL", value_delimiter = ',', value_parser = parse_etcd_endpoint)]
    etcd_endpoints: Vec<String>,
    /// Where this API server's keys live in etcd: one prefix per API server (the replicas of one
    /// share it, other API servers on the same etcd take others).
    #[arg(long, env = "ATOLL_ETCD_PREFIX", default_value = "/atoll", value_parser = parse_etcd_prefix)]
    etcd_prefix: String,
    /// The CA of etcd's serving certificates (PEM), for https:// --etcd-endpoints.
    #[arg(long, env = "ATOLL_ETCD_CAFILE", value_name = "FILE")]
    etcd_cafile: Option<PathBuf>,
    /// A client certificate (PEM) for an etcd that authenticates its clients (with
    /// --etcd-keyfile).
    #[arg(long, env = "ATOLL_ETCD_CERTFILE", value_name = "FILE")]
    etcd_certfile: Option<PathBuf>,
    /// The key of --etcd-certfile (PEM).
    #[arg(long, env = "ATOLL_ETCD_KEYFILE", value_name = "FILE")]
    etcd_keyfile: Option<PathBuf>,
    /// How long one call to etcd may take (and connecting to it), at most 5m.
    #[arg(long, env = "ATOLL_ETCD_TIMEOUT", default_value = "10s", value_parser = parse_etcd_timeout)]
    etcd_timeout: std::time::Duration,
    /// Write an audit log there (`audit.k8s.io/v1` Events, one JSON object a line; `-`: standard
    /// output), recording what --audit-policy-file says.
    #[arg(long, env = "ATOLL_AUDIT_LOG_PATH", value_name = "FILE")]
    audit_log_path: Option<PathBuf>,
    /// The audit policy (an `audit.k8s.io/v1` Policy, YAML or JSON): which requests the audit
    /// log records, at which level and stages.
    #[arg(long, env = "ATOLL_AUDIT_POLICY_FILE", value_name = "FILE")]
    audit_policy_file: Option<PathBuf>,
    /// The audit log's size, in megabytes, at which it is rotated (0: never).
    #[arg(long, env = "ATOLL_AUDIT_LOG_MAXSIZE", default_value_t = 100, value_name = "MB", value_parser = clap::value_parser!(u64).range(..=1_000_000))]
    audit_log_maxsize: u64,
    /// How many rotated audit logs are kept (FILE.1 the newest).
    #[arg(long, env = "ATOLL_AUDIT_LOG_MAXBACKUP", default_value_t = 5, value_name = "N", value_parser = clap::value_parser!(u32).range(..=1000))]
    audit_log_maxbackup: u32,
}

impl ServerArgs {
    /// The audit log's settings, its policy read and checked; `None` without --audit-log-path.
    fn audit(&self) -> anyhow::Result<Option<atoll_apiserver::audit::Options>> {
        match (&self.audit_log_path, &self.audit_policy_file) {
            (None, None) => Ok(None),
            (None, Some(_)) => {
                anyhow::bail!("--audit-policy-file applies only with --audit-log-path")
            }
            (Some(_), None) => anyhow::bail!(
                "--audit-log-path needs --audit-policy-file (which requests to record, at which level)"
            ),
            (Some(path), Some(policy)) => {
                let policy = atoll_apiserver::audit::Policy::load(policy)
                    .map_err(|e| anyhow::Error::new(e).context("--audit-policy-file"))?;
                Ok(Some(atoll_apiserver::audit::Options {
                    path: path.clone(),
                    policy,
                    max_bytes: self.audit_log_maxsize * 1024 * 1024,
                    max_backups: self.audit_log_maxbackup,
                }))
            }
        }
    }

    /// The storage backend, and etcd's settings when it is etcd; refuses etcd flags that do not
    /// fit together, naming them.
    fn storage(
        &self,
    ) -> anyhow::Result<(
        atoll_apiserver::StorageKind,
        Option<atoll_apiserver::storage::etcd::EtcdOptions>,
    )> {
        let files = [
            ("--etcd-cafile", &self.etcd_cafile),
            ("--etcd-certfile", &self.etcd_certfile),
            ("--etcd-keyfile", &self.etcd_keyfile),
        ];
        let Storage::Etcd = self.storage else {
            let given = files
                .iter()
                .filter(|(_, file)| file.is_some())
                .map(|(flag, _)| *flag)
                .chain((!self.etcd_endpoints.is_empty()).then_some("--etcd-endpoints"))
                .collect::<Vec<_>>();
            if !given.is_empty() {
                let verb = if given.len() == 1 { "applies" } else { "apply" };
                anyhow::bail!("{} {verb} only with --storage etcd", given.join(", "));
            }
            return Ok((self.storage.into(), None));
        };
        if self.etcd_endpoints.is_empty() {
            anyhow::bail!("--storage etcd needs --etcd-endpoints (etcd's client URLs)");
        }
        if self.etcd_endpoints.len() > atoll_apiserver::storage::etcd::MAX_ENDPOINTS {
            anyhow::bail!(
                "--etcd-endpoints takes at most {} URLs",
                atoll_apiserver::storage::etcd::MAX_ENDPOINTS
            );
        }
        let https = self
            .etcd_endpoints
            .iter()
            .filter(|e| e.starts_with("https://"))
            .count();
        if https != 0 && https != self.etcd_endpoints.len() {
            anyhow::bail!("--etcd-endpoints must be all https:// or all http://");
        }
        if https == 0 {
            if let Some((flag, _)) = files.iter().find(|(_, file)| file.is_some()) {
                anyhow::bail!("{flag} needs https:// --etcd-endpoints");
            }
        } else if self.etcd_cafile.is_none() {
            anyhow::bail!(
                "https:// --etcd-endpoints need --etcd-cafile (the CA of etcd's certificates)"
            );
        }
        match (&self.etcd_certfile, &self.etcd_keyfile) {
            (Some(_), None) => anyhow::bail!("--etcd-certfile needs --etcd-keyfile"),
            (None, Some(_)) => anyhow::bail!("--etcd-keyfile needs --etcd-certfile"),
            _ => {}
        }
        for (flag, file) in files {
            if let Some(path) = file
                && let Err(error) = std::fs::metadata(path)
            {
                anyhow::bail!("{flag} {}: {error}", path.display());
            }
        }
        let mut etcd = atoll_apiserver::storage::etcd::EtcdOptions::new(
            self.etcd_endpoints.clone(),
            self.etcd_prefix.clone(),
        );
        etcd.ca_file = self.etcd_cafile.clone();
        etcd.cert_file = self.etcd_certfile.clone();
        etcd.key_file = self.etcd_keyfile.clone();
        etcd.timeout = self.etcd_timeout;
        Ok((atoll_apiserver::StorageKind::Etcd, Some(etcd)))
    }
}

fn parse_etcd_endpoint(text: &str) -> Result<String, String> {
    atoll_apiserver::storage::etcd::check_endpoint(text)
        .map(|()| text.to_owned())
        .map_err(|error| error.to_string())
}

fn parse_etcd_prefix(text: &str) -> Result<String, String> {
    atoll_apiserver::storage::etcd::check_prefix(text)
        .map(|()| text.to_owned())
        .map_err(|error| error.to_string())
}

fn parse_etcd_timeout(text: &str) -> Result<std::time::Duration, String> {
    let timeout = atoll_api::placement::parse_duration(text)?;
    if timeout.is_zero() || timeout > std::time::Duration::from_secs(300) {
        return Err("the etcd timeout is between 1s and 5m".into());
    }
    Ok(timeout)
}

/// What `atoll up` does, in its help.
const UP_ABOUT: &str = "Start the embedded hub in the foreground: its API server over SQLite, \
    served over HTTPS, the hub controllers, and the gRPC server agents join";

// Flags of `atoll up`. Its description is set again here, after the hub's flattened flags,
// whose doc comments would replace it.
#[derive(Args)]
#[command(about = UP_ABOUT)]
struct UpArgs {
    #[command(flatten)]
    server: ServerArgs,
    #[command(flatten)]
    hub: atoll_hub::flags::Flags,
    #[command(flatten)]
    election: atoll_hub::flags::Election,
    /// How many embedded hosted clusters to create, in ClusterSet `default`, at the first start
    /// (not again after), so that there is a fleet to send Work to.
    #[arg(long, env = "ATOLL_HOSTED_CLUSTERS", default_value_t = 2, value_parser = clap::value_parser!(u32).range(0..=100))]
    hosted_clusters: u32,
    /// Start a new hub from a backup (`atoll backup -o FILE`) in an empty --data-dir: its
    /// objects, CA and credentials, so that agents that joined before reconnect with theirs.
    #[arg(long, value_name = "FILE")]
    restore: Option<PathBuf>,
}

// Flags of `atoll apiserver`.
#[derive(Args)]
struct ApiserverArgs {
    #[command(flatten)]
    server: ServerArgs,
    /// Another DNS name or address for the serving certificate (repeat, or separate with commas).
    #[arg(long = "tls-san", env = "ATOLL_TLS_SANS", value_delimiter = ',')]
    tls_sans: Vec<String>,
    /// Most objects the server stores; creates past it are refused.
    #[arg(long, env = "ATOLL_MAX_OBJECTS", value_parser = clap::value_parser!(u64).range(1..))]
    max_objects: Option<u64>,
    /// Most bytes of objects the server stores (e.g. 256Mi); writes that grow past it are
    /// refused.
    #[arg(long, env = "ATOLL_MAX_STORAGE_BYTES", value_parser = up::parse_bytes)]
    max_storage_bytes: Option<u64>,
    /// Most read-only requests served at once (watches aside); more are answered 429. 0: no
    /// limit.
    #[arg(long, env = "ATOLL_MAX_REQUESTS_INFLIGHT", default_value_t = 400)]
    max_requests_inflight: u32,
    /// Most mutating requests (create, update, patch, delete) served at once; more are
    /// answered 429. 0: no limit.
    #[arg(
        long,
        env = "ATOLL_MAX_MUTATING_REQUESTS_INFLIGHT",
        default_value_t = 200
    )]
    max_mutating_requests_inflight: u32,
    /// Most watches one user may have open at once; more are answered 429. 0: no limit.
    #[arg(long, env = "ATOLL_MAX_WATCHES_PER_USER", default_value_t = atoll_apiserver::DEFAULT_WATCHES_PER_USER)]
    max_watches_per_user: u32,
    /// Most client connections open at once; more are closed as they are accepted. 0: no
    /// limit.
    #[arg(long, env = "ATOLL_MAX_CONNECTIONS", default_value_t = atoll_apiserver::DEFAULT_CONNECTIONS)]
    max_connections: u32,
    /// What refusals name as the source of the limits.
    #[arg(long, hide = true, default_value = "the flags of atoll apiserver")]
    limits_source: String,
    /// The in-flight limits bind members of system:masters too (a hosted cluster's process:
    /// they protect the hub from a tenant, whose admin is one).
    #[arg(long, hide = true)]
    limit_masters: bool,
    /// Stop when standard input closes: a supervisor's child never outlives it.
    #[arg(long)]
    exit_on_stdin_close: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum Storage {
    Sqlite,
    Memory,
    Etcd,
}

impl From<Storage> for atoll_apiserver::StorageKind {
    fn from(storage: Storage) -> Self {
        match storage {
            Storage::Sqlite => atoll_apiserver::StorageKind::Sqlite,
            Storage::Memory => atoll_apiserver::StorageKind::Memory,
            Storage::Etcd => atoll_apiserver::StorageKind::Etcd,
        }
    }
}

#[derive(Subcommand)]
enum GetCommand {
    /// The cluster inventory: one line per member cluster.
    Clusters(clusters::GetArgs),
}

#[derive(Subcommand)]
enum ClusterCommand {
    /// Let a cluster that asked to join in: its agent receives its credential.
    Accept {
        /// The cluster's name.
        name: String,
    },
    /// Remove a member cluster: its credential stops working, its profile and namespace go.
    Remove {
        /// The cluster's name.
        name: String,
    },
}

#[derive(Subcommand)]
enum ClusterSetCommand {
    /// Create a ClusterSet.
    Create {
        /// The set's name.
        name: String,
        /// What the set is for.
        #[arg(long)]
        description: Option<String>,
    },
    /// Delete a ClusterSet; its members leave it.
    Delete {
        /// The set's name.
        name: String,
    },
    /// List ClusterSets with their member counts.
    List {
        #[arg(short, long, value_enum, default_value_t = output::Format::Table)]
        output: output::Format,
    },
    /// Put clusters in a set (a cluster is in at most one: this moves it).
    Add {
        /// The set.
        set: String,
        /// The clusters.
        #[arg(required = true)]
        clusters: Vec<String>,
    },
    /// Take clusters out of a set.
    Remove {
        /// The set.
        set: String,
        /// The clusters.
        #[arg(required = true)]
        clusters: Vec<String>,
    },
}

#[derive(Subcommand)]
enum TokenCommand {
    /// Create a bootstrap token and print it (shown only this once).
    Create {
        /// How long it works: e.g. 30m, 24h, 7d; 0 for no expiry.
        #[arg(long, default_value = "24h", value_parser = tokens::parse_ttl)]
        ttl: tokens::Ttl,
        /// What the token is for.
        #[arg(long, default_value = "")]
        description: String,
        /// The ClusterSet clusters joining with it go into (the only way to join straight into
        /// a set); it must exist.
        #[arg(long, value_name = "SET")]
        clusterset: Option<String>,
    },
    /// Delete a bootstrap token (by id or in full); clusters that joined with it stay.
    Delete {
        /// The token's id (the part before the dot) or the whole token.
        token: String,
    },
    /// List bootstrap tokens (ids and expiry, never secrets).
    List,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    logging::init(cli.log_format);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let kubeconfig = cli.kubeconfig;
    runtime.block_on(async move {
        match cli.command {
            Command::Up(args) => up(*args).await,
            Command::Apiserver(args) => apiserver(args).await,
            Command::Get { what } => {
                let client = client::hub(kubeconfig.as_deref()).await?;
                match what {
                    GetCommand::Clusters(args) => clusters::get(client, args).await,
                }
            }
            Command::Cluster { command } => {
                let client = client::hub(kubeconfig.as_deref()).await?;
                match command {
                    ClusterCommand::Accept { name } => clusters::accept(client, &name).await,
                    ClusterCommand::Remove { name } => clusters::remove(client, &name).await,
                }
            }
            Command::Clusterset { command } => {
                let client = client::hub(kubeconfig.as_deref()).await?;
                match command {
                    ClusterSetCommand::Create { name, description } => {
                        clustersets::create(client, &name, description).await
                    }
                    ClusterSetCommand::Delete { name } => clustersets::delete(client, &name).await,
                    ClusterSetCommand::List { output } => clustersets::list(client, output).await,
                    ClusterSetCommand::Add { set, clusters } => {
                        clustersets::add(client, &set, &clusters).await
                    }
                    ClusterSetCommand::Remove { set, clusters } => {
                        clustersets::remove(client, &set, &clusters).await
                    }
                }
            }
            Command::Work { command } => {
                let client = client::hub(kubeconfig.as_deref()).await?;
                match command {
                    WorkCommand::Apply(args) => works::apply(client, *args).await,
                    WorkCommand::Status { name, namespace } => {
                        works::status(client, &name, &namespace).await
                    }
                    WorkCommand::Delete { name, namespace } => {
                        works::delete(client, &name, &namespace).await
                    }
                }
            }
            Command::Hosted { command } => {
                let client = client::hub(kubeconfig.as_deref()).await?;
                hosted_command(client, command).await
            }
            Command::AgentManifests(args) => {
                let client = client::hub(kubeconfig.as_deref()).await?;
                agents::manifests(client, args).await
            }
            Command::Backup { output } => {
                let client = client::hub(kubeconfig.as_deref()).await?;
                backup::hub(client, &output).await
            }
            Command::Kubeconfig {
                name,
                namespace,
                output,
            } => {
                let client = client::hub(kubeconfig.as_deref()).await?;
                hosted::kubeconfig(client, &namespace, &name, output.as_deref()).await
            }
            Command::User {
                command:
                    UserCommand::Create {
                        name,
                        groups,
                        ttl,
                        output,
                    },
            } => {
                let user = users::NewUser {
                    name: &name,
                    groups: &groups,
                    ttl,
                    output: &output,
                };
                users::create(kubeconfig.as_deref(), user).await
            }
            Command::Token { command } => {
                let client = client::hub(kubeconfig.as_deref()).await?;
                match command {
                    TokenCommand::Create {
                        ttl,
                        description,
                        clusterset,
                    } => tokens::create(client, ttl, &description, clusterset.as_deref()).await,
                    TokenCommand::Delete { token } => tokens::delete(client, &token).await,
                    TokenCommand::List => tokens::list(client).await,
                }
            }
        }
    })
}

/// `atoll up`: its defaults for hosted clusters, then the hub.
async fn up(args: UpArgs) -> anyhow::Result<()> {
    let (storage, etcd) = args.server.storage()?;
    let audit = args.server.audit()?;
    let data_dir = args.server.data_dir.unwrap_or_else(|| ".atoll".into());
    let mut config = args.hub.config();
    up::hosted_defaults(
        &mut config.hosted,
        &args.hub,
        &data_dir,
        args.server.api_addr,
        etcd.as_ref(),
    )?;
    // Replicas elect only where several can run: on one etcd. (One SQLite data directory is
    // one process's.)
    let election = match storage {
        atoll_apiserver::StorageKind::Etcd if args.election.leader_elect => {
            Some(args.election.timing()?)
        }
        _ => None,
    };
    let mode = up::Mode::Hub {
        config: Box::new(config),
        hosted_clusters: args.hosted_clusters,
        metrics_addr: args.hub.metrics_addr,
        restore: args.restore,
        election,
    };
    up::run(mode, data_dir, args.server.api_addr, (storage, etcd), audit).await
}

/// `atoll apiserver`: a plain API server with its limits.
async fn apiserver(args: ApiserverArgs) -> anyhow::Result<()> {
    let (storage, etcd) = args.server.storage()?;
    let audit = args.server.audit()?;
    let data_dir = args
        .server
        .data_dir
        .unwrap_or_else(|| ".atoll-apiserver".into());
    let mode = up::Mode::Member(up::Member {
        tls_sans: args.tls_sans,
        limits: atoll_apiserver::Limits {
            objects: args.max_objects,
            storage_bytes: args.max_storage_bytes,
            requests_in_flight: Some(args.max_requests_inflight).filter(|n| *n > 0),
            mutating_requests_in_flight: Some(args.max_mutating_requests_inflight)
                .filter(|n| *n > 0),
            watches_per_user: Some(args.max_watches_per_user).filter(|n| *n > 0),
            connections: Some(args.max_connections).filter(|n| *n > 0),
            exempt_masters: !args.limit_masters,
            source: args.limits_source,
        },
        exit_on_stdin_close: args.exit_on_stdin_close,
    });
    up::run(mode, data_dir, args.server.api_addr, (storage, etcd), audit).await
}

/// `atoll hosted ...`.
async fn hosted_command(client: kube::Client, command: HostedCommand) -> anyhow::Result<()> {
    match command {
        HostedCommand::Create(args) => hosted::create(client, args).await,
        HostedCommand::List(args) => hosted::list(client, args).await,
        HostedCommand::Delete { target, wait } => {
            hosted::delete(
                client,
                &target.namespace,
                &target.name,
                wait,
                target.timeout,
            )
            .await
        }
        HostedCommand::Suspend { target } => {
            let t = &target;
            hosted::suspend(client, &t.namespace, &t.name, true, false, t.timeout).await
        }
        HostedCommand::Resume { target, wait } => {
            let t = &target;
            hosted::suspend(client, &t.namespace, &t.name, false, wait, t.timeout).await
        }
        HostedCommand::Backup { target, output } => {
            hosted::backup(client, &target.namespace, &target.name, &output).await
        }
        HostedCommand::JoinCommand { target, ttl } => {
            hosted::join_command(client, &target.namespace, &target.name, ttl).await
        }
    }
}
