//! The hub's API server, as the administration commands reach it.

use std::path::Path;

use anyhow::Context as _;

/// The default kubeconfig `atoll up` writes.
const EMBEDDED_KUBECONFIG: &str = ".atoll/hub.kubeconfig";

/// A client for the hub: `--kubeconfig`, else `$KUBECONFIG`, else the embedded hub's kubeconfig
/// in `.atoll/` when it exists, else the usual kubeconfig.
pub async fn hub(kubeconfig: Option<&Path>) -> anyhow::Result<kube::Client> {
    let config = hub_config(kubeconfig).await?;
    kube::Client::try_from(config).context("cannot build a client for the hub")
}

/// The client configuration [`hub`] builds its client from.
pub async fn hub_config(kubeconfig: Option<&Path>) -> anyhow::Result<kube::Config> {
    let path = kubeconfig.map(Path::to_path_buf).or_else(|| {
        let embedded = Path::new(EMBEDDED_KUBECONFIG);
        (std::env::var_os("KUBECONFIG").is_none() && embedded.exists())
            .then(|| embedded.to_path_buf())
    });
    let config = match path {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(&path)
                .with_context(|| format!("cannot read the kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(
                kubeconfig,
                &kube::config::KubeConfigOptions::default(),
            )
            .await
            .with_context(|| format!("cannot use the kubeconfig {}", path.display()))?
        }
        None => kube::Config::infer()
            .await
            .context("no hub kubeconfig: start one with `atoll up` or pass --kubeconfig")?,
    };
    Ok(config)
}

/// Turns a kube error into a sentence about what failed.
pub fn explain(e: kube::Error, what: &str) -> anyhow::Error {
    match e {
        kube::Error::Api(status) => anyhow::anyhow!("{what}: {}", status.message),
        other => anyhow::Error::new(other).context(format!("{what}: cannot reach the hub")),
    }
}
