//! Restoring a backup into a fresh server.
//!
//! 1. Whoever creates the cluster marks its data directory ([`mark_restore_pending`]) before
//!    its first start. The server then starts in restore mode: it has credentials of its own
//!    (so that the admin can upload), answers health checks, and `PUT /atoll/v1/restore`.
//! 2. The upload is streamed to `restore.staged/backup` and verified whole; a good one gets the
//!    completion marker `restore.staged/complete`, written last, and the server asks to be
//!    restarted.
//! 3. At the next start, before storage opens, a complete staged backup is installed: the
//!    database replaced by the snapshot (at the backup's revision, so resourceVersions never
//!    go backwards), the credential files replaced by the backup's, then the marker and the
//!    staged directory removed. A crash at any point leaves either an incomplete staged
//!    directory (discarded: the server waits for an upload again) or a complete one (installed
//!    again at the next start).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use futures::{Stream, StreamExt};

use super::{CREDENTIAL_FILES, Error, Header, Reader, Records};
use crate::StorageKind;
use crate::storage::memory::MemoryBackend;

/// The marker file that keeps a server in restore mode until a backup is installed.
pub const RESTORE_PENDING: &str = "restore-pending";
/// Where an uploaded backup waits for the next start.
const STAGED_DIR: &str = "restore.staged";
/// The uploaded backup in the staged directory.
const STAGED_BACKUP: &str = "backup";
/// Written last into the staged directory: the staged backup is whole and verified.
const STAGED_COMPLETE: &str = "complete";

/// Marks a data directory (created if missing) so that the server started on it waits for a
/// backup to be restored into it instead of serving an empty cluster.
pub fn mark_restore_pending(data_dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(data_dir)?;
    write_synced(&data_dir.join(RESTORE_PENDING), b"")?;
    sync_dir(data_dir)
}

/// What a start found in the data directory about restores.
pub(crate) struct Prepared {
    /// The server waits for a restore.
    pub waiting: bool,
    /// The installed snapshot, for the memory backend.
    pub memory: Option<MemoryBackend>,
    /// Why the last staged backup could not be installed, if it could not.
    pub failure: Option<String>,
}

/// Installs a complete staged backup, discards an incomplete one, and says whether the server
/// must wait for a restore. Runs before storage opens, under the data directory's lock.
pub(crate) fn prepare(data_dir: &Path, storage: StorageKind) -> Prepared {
    let staged = data_dir.join(STAGED_DIR);
    let mut prepared = Prepared {
        waiting: false,
        memory: None,
        failure: None,
    };
    if staged.join(STAGED_COMPLETE).exists() {
        match install(data_dir, &staged.join(STAGED_BACKUP), storage) {
            Ok((header, memory)) => {
                tracing::info!(
                    revision = header.revision,
                    objects = header.objects,
                    from = %header.server,
                    created_at = %header.created_at,
                    "restored a backup"
                );
                prepared.memory = memory;
                if let Err(error) = remove_file(&data_dir.join(RESTORE_PENDING)) {
                    tracing::warn!(%error, "cannot remove the restore marker");
                }
            }
            Err(error) => {
                tracing::error!(error = %error, source = ?std::error::Error::source(&error), "cannot install the staged backup; waiting for another upload");
                prepared.failure = Some(error.to_string());
            }
        }
    } else if staged.exists() {
        tracing::warn!("discarding an incomplete staged backup");
    }
    if staged.exists()
        && let Err(error) = std::fs::remove_dir_all(&staged)
    {
        tracing::warn!(%error, "cannot remove the staged backup");
    }
    prepared.waiting = data_dir.join(RESTORE_PENDING).exists();
    prepared
}

/// Why a staged backup could not be installed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum InstallError {
    #[error("the staged backup cannot be read")]
    Backup(#[from] Error),
    #[error("the backup cannot be written into storage")]
    Storage(#[from] crate::storage::Error),
    #[error("cannot write {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write a credential file")]
    Pki(#[from] crate::pki::Error),
    #[error("a backup cannot be restored into etcd storage: restore it with etcd's own tools")]
    Etcd,
}

/// Reads the staged backup once, checking it as it goes, into a new database (SQLite, beside
/// the old one until it is whole) or a new memory store, then swaps the database and the
/// credential files in.
fn install(
    data_dir: &Path,
    backup: &Path,
    storage: StorageKind,
) -> Result<(Header, Option<MemoryBackend>), InstallError> {
    let file = std::fs::File::open(backup).map_err(Error::from)?;
    let mut reader = Reader::open(std::io::BufReader::new(file))?;
    let revision = reader.header().revision;
    let database = data_dir.join(crate::DATABASE_FILE);
    let fresh = crate::storage::sqlite::sibling(&database, ".restoring");
    let read = (|| -> Result<_, InstallError> {
        let memory = match storage {
            StorageKind::Sqlite => {
                crate::storage::sqlite::write_snapshot(&fresh, revision, Records(&mut reader))?;
                None
            }
            StorageKind::Memory => Some(MemoryBackend::restored(revision, Records(&mut reader))?),
            StorageKind::Etcd => return Err(InstallError::Etcd),
        };
        let mut files = Vec::with_capacity(CREDENTIAL_FILES.len());
        while let Some(file) = reader.next_file()? {
            files.push(file);
        }
        Ok((memory, files, reader.finish()?))
    })();
    if read.is_err() {
        let _ = remove_file(&fresh);
    }
    let (memory, files, header) = read?;
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| InstallError::Io { path, source }
    };
    if storage == StorageKind::Sqlite {
        // The old database's log must go before the new file takes its name: SQLite would
        // replay it into the new one.
        for suffix in ["-wal", "-shm", "-journal"] {
            let stale = crate::storage::sqlite::sibling(&database, suffix);
            remove_file(&stale).map_err(io(&stale))?;
        }
        std::fs::rename(&fresh, &database).map_err(io(&database))?;
    }
    for (name, contents) in files {
        let path = data_dir.join(&name);
        let temporary = data_dir.join(format!("{name}.restoring"));
        crate::pki::write_private(&temporary, &contents)?;
        std::fs::rename(&temporary, &path).map_err(io(&path))?;
    }
    sync_dir(data_dir).map_err(io(data_dir))?;
    Ok((header, memory))
}

/// Why an upload was not staged.
#[derive(Debug, thiserror::Error)]
pub enum StageError {
    #[error("the backup is larger than the {0} bytes this server accepts")]
    TooLarge(u64),
    #[error(transparent)]
    Backup(#[from] Error),
    #[error("the upload ended early")]
    Upload(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("cannot stage the backup in {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Stages a backup file for a server about to start on `data_dir` (creating the directory),
/// as an upload would: copied, verified whole, marked complete; the server installs it as it
/// starts. The file must be a whole backup of a format this atoll reads.
pub async fn stage_file(data_dir: &Path, backup: &Path) -> Result<Header, StageError> {
    use tokio::io::AsyncReadExt as _;
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| StageError::Io { path, source }
    };
    tokio::fs::create_dir_all(data_dir)
        .await
        .map_err(io(data_dir))?;
    let file = tokio::fs::File::open(backup).await.map_err(|source| {
        StageError::Backup(Error::File {
            path: backup.to_owned(),
            source,
        })
    })?;
    let chunks = futures::stream::unfold(file, |mut file| async move {
        let mut chunk = vec![0; 256 * 1024];
        match file.read(&mut chunk).await {
            Ok(0) => None,
            Ok(n) => {
                chunk.truncate(n);
                Some((Ok::<_, std::io::Error>(Bytes::from(chunk)), file))
            }
            Err(error) => Some((Err(error), file)),
        }
    });
    stage(data_dir, Box::pin(chunks), u64::MAX).await
}

/// Streams an upload into the staged directory (replacing what was staged before), at most
/// `max_bytes`, verifies it whole, and marks it complete. On any failure nothing stays staged.
pub(crate) async fn stage<S, E>(
    data_dir: &Path,
    body: S,
    max_bytes: u64,
) -> Result<Header, StageError>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: std::error::Error + Send + Sync + 'static,
{
    let staged = data_dir.join(STAGED_DIR);
    let result = stage_into(&staged, body, max_bytes).await;
    if result.is_err()
        && let Err(error) = tokio::fs::remove_dir_all(&staged).await
        && error.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(%error, "cannot remove a failed upload");
    }
    result
}

async fn stage_into<S, E>(staged: &Path, mut body: S, max_bytes: u64) -> Result<Header, StageError>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: std::error::Error + Send + Sync + 'static,
{
    use tokio::io::AsyncWriteExt as _;
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| StageError::Io { path, source }
    };
    match tokio::fs::remove_dir_all(staged).await {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(io(staged)(error)),
    }
    create_private_dir(staged).map_err(io(staged))?;
    let path = staged.join(STAGED_BACKUP);
    let mut file = tokio::fs::File::from_std(create_private(&path).map_err(io(&path))?);
    let mut received: u64 = 0;
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|error| StageError::Upload(Box::new(error)))?;
        received = received.saturating_add(u64::try_from(chunk.len()).unwrap_or(u64::MAX));
        if received > max_bytes {
            return Err(StageError::TooLarge(max_bytes));
        }
        file.write_all(&chunk).await.map_err(io(&path))?;
    }
    file.sync_all().await.map_err(io(&path))?;
    drop(file);
    let verified = path.clone();
    let header = tokio::task::spawn_blocking(move || {
        let file = std::fs::File::open(&verified).map_err(Error::Io)?;
        super::verify(file)
    })
    .await
    .map_err(|error| StageError::Io {
        path: path.clone(),
        source: std::io::Error::other(error),
    })??;
    let complete = staged.join(STAGED_COMPLETE);
    write_synced(&complete, b"").map_err(io(&complete))?;
    sync_dir(staged).map_err(io(staged))?;
    Ok(header)
}

fn create_private_dir(path: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(path)
}

fn create_private(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

fn write_synced(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let mut file = std::fs::File::create(path)?;
    file.write_all(contents)?;
    file.sync_all()
}

/// Makes the entries of a directory (created, renamed, removed files) durable.
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    std::fs::File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Removes a file; a missing one is fine.
fn remove_file(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}
