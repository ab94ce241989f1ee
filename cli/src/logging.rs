//! Log output: `tracing` to stderr, plain or JSON, filtered by `ATOLL_LOG` (default `info`).

use clap::ValueEnum;
use tracing_subscriber::EnvFilter;

#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    Plain,
    Json,
}

pub fn init(format: Format) {
    let filter = EnvFilter::try_from_env("ATOLL_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        Format::Plain => builder.init(),
        Format::Json => builder.json().init(),
    }
}
