//! `atoll backup`: a consistent snapshot of a running hub's API server (every object at one
//! revision, with the CA, tokens and signing key its clients depend on), written to a file; and
//! `atoll up --restore FILE`, which starts a new hub from one. The format and the restore are the
//! API server's (`atoll_apiserver::backup`); hosted clusters are backed up one by one with
//! `atoll hosted backup`.

use std::path::Path;

use anyhow::{Context as _, bail};
use atoll_apiserver::backup::Header;

/// Downloads `GET /atoll/v1/backup` from the API server of `client` into `output` (mode 0600,
/// through a `.partial` file renamed once the whole backup is verified); `what` names the
/// cluster in errors.
pub async fn download(client: &kube::Client, what: &str, output: &Path) -> anyhow::Result<Header> {
    use futures::TryStreamExt as _;
    let request = http::Request::get("/atoll/v1/backup").body(Vec::new())?;
    let response = client
        .send(request.map(kube::client::Body::from))
        .await
        .map_err(|e| crate::client::explain(e, &format!("cannot back up {what}")))?;
    if !response.status().is_success() {
        let status = response.status();
        let body = http_body_util::BodyExt::collect(response.into_body())
            .await
            .map(|b| String::from_utf8_lossy(&b.to_bytes()).into_owned())
            .unwrap_or_default();
        let message = serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v["message"].as_str().map(str::to_owned))
            .unwrap_or(body);
        bail!("cannot back up {what}: {status}: {message}");
    }
    let partial = output.with_extension("partial");
    let mut file = std::fs::OpenOptions::new();
    file.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut file, 0o600);
    let file = file
        .open(&partial)
        .with_context(|| format!("cannot write {}", partial.display()))?;
    let mut file = tokio::fs::File::from_std(file);
    let mut body =
        http_body_util::BodyDataStream::new(response.into_body()).map_err(std::io::Error::other);
    while let Some(chunk) = body.try_next().await.context("the backup broke off")? {
        tokio::io::AsyncWriteExt::write_all(&mut file, &chunk).await?;
    }
    tokio::io::AsyncWriteExt::flush(&mut file).await?;
    file.sync_all().await?;
    drop(file);
    let header = atoll_apiserver::backup::verify(
        std::fs::File::open(&partial)
            .with_context(|| format!("cannot read {}", partial.display()))?,
    )
    .context("the backup received is not whole")?;
    std::fs::rename(&partial, output)
        .with_context(|| format!("cannot write {}", output.display()))?;
    Ok(header)
}

/// `atoll backup -o FILE`: the hub's API server, backed up while it serves.
pub async fn hub(client: kube::Client, output: &Path) -> anyhow::Result<()> {
    let header = download(&client, "the hub", output).await?;
    println!(
        "backed up the hub to {}: {} objects at revision {}",
        output.display(),
        header.objects,
        header.revision
    );
    Ok(())
}

/// `atoll up --restore FILE`: checks the backup whole and stages it into a new data directory,
/// where the API server installs it as it starts (its objects at their revisions, its CA,
/// tokens and signing key), so that the kubeconfigs, agents' credentials and bootstrap tokens
/// of the backed-up hub work against the restored one. Refuses a data directory that holds a
/// hub already, and a file that is not a whole backup this atoll reads.
pub async fn stage(data_dir: &Path, backup: &Path, fresh: bool) -> anyhow::Result<()> {
    if !fresh {
        bail!(
            "--restore starts a new hub, and {} holds one already; give an empty --data-dir",
            data_dir.display()
        );
    }
    let header = atoll_apiserver::backup::restore::stage_file(data_dir, backup)
        .await
        .with_context(|| format!("cannot restore from {}", backup.display()))?;
    tracing::info!(
        backup = %backup.display(),
        objects = header.objects,
        revision = header.revision,
        from = %header.server,
        "restoring the hub from a backup"
    );
    Ok(())
}
