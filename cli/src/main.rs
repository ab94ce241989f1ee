//! The `atoll` command. This file only parses flags and calls into the commands' modules.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

mod logging;
mod up;

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
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start the embedded hub in the foreground: its API server over SQLite, served over HTTPS.
    Up(ServerArgs),
    /// Start a plain API server (a member cluster for tests and demos) in the foreground.
    Apiserver(ServerArgs),
}

/// Flags shared by `up` and `apiserver`.
#[derive(Args)]
struct ServerArgs {
    /// Directory for the database, the CA, tokens and the admin kubeconfig
    /// [default: .atoll for `up`, .atoll-apiserver for `apiserver`].
    #[arg(long, env = "ATOLL_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Address the API server listens on.
    #[arg(long, env = "ATOLL_API_ADDR", default_value = "127.0.0.1:6443")]
    api_addr: SocketAddr,
    /// Storage backend: `sqlite` (durable, in the data directory) or `memory`.
    #[arg(long, env = "ATOLL_STORAGE", value_enum, default_value_t = Storage::Sqlite)]
    storage: Storage,
}

#[derive(Clone, Copy, ValueEnum)]
enum Storage {
    Sqlite,
    Memory,
}

impl From<Storage> for atoll_apiserver::StorageKind {
    fn from(storage: Storage) -> Self {
        match storage {
            Storage::Sqlite => atoll_apiserver::StorageKind::Sqlite,
            Storage::Memory => atoll_apiserver::StorageKind::Memory,
        }
    }
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    logging::init(cli.log_format);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        match cli.command {
            Command::Up(args) => {
                let data_dir = args.data_dir.unwrap_or_else(|| ".atoll".into());
                up::run(up::Mode::Hub, data_dir, args.api_addr, args.storage.into()).await
            }
            Command::Apiserver(args) => {
                let data_dir = args.data_dir.unwrap_or_else(|| ".atoll-apiserver".into());
                up::run(
                    up::Mode::Member,
                    data_dir,
                    args.api_addr,
                    args.storage.into(),
                )
                .await
            }
        }
    })
}
