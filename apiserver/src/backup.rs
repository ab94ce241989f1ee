//! Backups: one file holding a consistent snapshot of an API server's data and the credentials
//! its clients hold, so that a server restored from it answers every old kubeconfig and
//! service-account token as the backed-up one did.
//!
//! A backup is read at one storage revision while the server keeps serving (the backends are
//! revisioned, so every page of the snapshot is read at that revision), and streamed out as it
//! is read. Restoring is for a fresh server only, started in restore mode ([`restore`]).
//!
//! # Format (version 1)
//!
//! All integers are big-endian; every variable part is preceded by its length as a `u32`.
//!
//! | part | contents |
//! |---|---|
//! | magic | the 8 bytes `ATOLLBAK` |
//! | format | `u32`, 1 |
//! | header | length, then a JSON [`Header`] |
//! | records | `header.objects` times: the key, its `create_revision` and `mod_revision` (`i64` each), its value (the stored object) — every live key at `header.revision`, in key order |
//! | files | for each name of `header.files`, in that order: the name, then the file's contents |
//! | trailer | the SHA-256 of everything before it (32 bytes) |
//!
//! Nothing follows the trailer. The files are those of the data directory that credentials
//! depend on: the CA (`ca.crt`, `ca.key`) that signs the serving certificate clients pin, the
//! token file (`tokens.csv`) with the admin's and users' bearer tokens, and the key that signs
//! issued service-account tokens (`sa.key`). Readers refuse a length beyond the bounds below
//! before allocating anything, so that a damaged or hostile file cannot exhaust memory.

use std::collections::HashSet;
use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncWrite, AsyncWriteExt};

use crate::storage::{self, Backend, KeyValue, ListOptions, Revision};

pub mod restore;

pub use restore::{RESTORE_PENDING, mark_restore_pending};

/// The first bytes of every backup.
pub const MAGIC: &[u8; 8] = b"ATOLLBAK";
/// The format this atoll writes and reads.
pub const FORMAT: u32 = 1;
/// The data-directory files a backup carries, in the order it carries them.
pub const CREDENTIAL_FILES: &[&str] = crate::credentials::FILES;

/// The largest header a reader accepts.
const MAX_HEADER_BYTES: usize = 1024 * 1024;
/// The longest key a reader accepts (storage keys are a few hundred bytes at most).
const MAX_KEY_BYTES: usize = 8 * 1024;
/// The largest stored object a reader accepts (requests are capped at 3 MiB).
const MAX_VALUE_BYTES: usize = 64 * 1024 * 1024;
/// The largest credential file a reader accepts.
const MAX_FILE_BYTES: usize = 1024 * 1024;
/// How many keys are read from storage at once while writing.
const PAGE: usize = 256;
/// How many bytes the writer gathers before writing them out.
const CHUNK: usize = 64 * 1024;

/// What a backup holds, at its start (readable without reading the rest: [`read_header`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Header {
    /// The format version, as in the file's prefix.
    pub format: u32,
    /// When the backup was taken (RFC 3339, UTC).
    pub created_at: String,
    /// The storage revision the snapshot was read at: every record is the key's state then.
    pub revision: Revision,
    /// The cluster's name (its kubeconfig's cluster and context).
    pub cluster_name: String,
    /// Where the server served, `https://host:port`.
    pub server: String,
    /// The names and addresses of the serving certificate.
    pub hosts: Vec<String>,
    /// The atoll version that wrote the backup.
    pub atoll_version: String,
    /// How many records follow the header.
    pub objects: u64,
    /// The data-directory files after the records, in order.
    pub files: Vec<String>,
}

/// Why a backup could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the file is not an atoll backup")]
    NotABackup,
    #[error(
        "the backup was written by a newer atoll (format {found}; this atoll reads format {supported})"
    )]
    NewerFormat { found: u32, supported: u32 },
    #[error("the backup is truncated")]
    Truncated,
    #[error("the backup is corrupt: {0}")]
    Corrupt(String),
    #[error("cannot read or write the backup")]
    Io(#[source] std::io::Error),
    #[error("cannot read {path}")]
    File {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the cluster's data")]
    Storage(#[from] storage::Error),
    #[error("the server waits for a backup to be restored into it and holds nothing to back up")]
    Waiting,
}

impl From<std::io::Error> for Error {
    fn from(error: std::io::Error) -> Self {
        if error.kind() == std::io::ErrorKind::UnexpectedEof {
            Error::Truncated
        } else {
            Error::Io(error)
        }
    }
}

/// The header of a backup from its first bytes (a few KiB are enough for any header the server
/// writes), without reading the rest: what the CLI shows about a file. Checks the magic, the
/// format and the header, not the data (see [`verify`]).
pub fn read_header(bytes_prefix: &[u8]) -> Result<Header, Error> {
    Reader::open(bytes_prefix).map(|reader| reader.header)
}

/// Reads a whole backup and checks everything: the format, the header, every record (keys in
/// order, possible revisions, bounded sizes), the files, and the checksum. Reads as it goes:
/// memory stays bounded by the largest record, whatever the size of the file.
pub fn verify(reader: impl Read) -> Result<Header, Error> {
    let mut reader = Reader::open(std::io::BufReader::new(reader))?;
    while reader.next_record()?.is_some() {}
    while reader.next_file()?.is_some() {}
    reader.finish()
}

/// What a server backs up: its storage, the credential files of its data directory, and what
/// the header says about it.
pub(crate) struct Source {
    pub backend: Arc<dyn Backend>,
    pub data_dir: PathBuf,
    pub cluster_name: String,
    pub server: String,
    pub hosts: Vec<String>,
    /// Held (shared) while a backup reads, so that compaction does not remove the revision it
    /// reads at.
    pub compaction: Arc<tokio::sync::RwLock<()>>,
    /// True while the server waits for a restore: it has nothing to back up.
    pub waiting: bool,
}

impl Source {
    /// Streams a backup into `out`: the live keys at the current revision, read page by page
    /// at that one revision while writes continue, then the credential files, then the
    /// checksum.
    pub async fn write(
        &self,
        out: &mut (impl AsyncWrite + Unpin + ?Sized),
    ) -> Result<Header, Error> {
        if self.waiting {
            return Err(Error::Waiting);
        }
        let _no_compaction = self.compaction.read().await;
        let first = self
            .backend
            .list(ListOptions {
                prefix: "",
                revision: None,
                start_after: None,
                limit: Some(PAGE),
            })
            .await?;
        let revision = first.revision;
        let objects = u64::try_from(first.items.len() + first.remaining).unwrap_or(u64::MAX);
        let mut files = Vec::with_capacity(CREDENTIAL_FILES.len());
        for name in CREDENTIAL_FILES {
            let path = self.data_dir.join(name);
            let contents = tokio::fs::read(&path)
                .await
                .map_err(|source| Error::File { path, source })?;
            files.push((*name, contents));
        }
        let header = Header {
            format: FORMAT,
            created_at: crate::registry::store::now(),
            revision,
            cluster_name: self.cluster_name.clone(),
            server: self.server.clone(),
            hosts: self.hosts.clone(),
            atoll_version: env!("CARGO_PKG_VERSION").to_owned(),
            objects,
            files: CREDENTIAL_FILES
                .iter()
                .map(|name| (*name).to_owned())
                .collect(),
        };
        let mut writer = Writer::new(out);
        writer.start(&header)?;
        let mut written = 0u64;
        let mut page = first;
        loop {
            for kv in &page.items {
                writer.record(kv)?;
                writer.flush_if_full().await?;
            }
            written += u64::try_from(page.items.len()).unwrap_or(u64::MAX);
            let Some(last) = page.items.last().map(|kv| kv.key.clone()) else {
                break;
            };
            if page.remaining == 0 {
                break;
            }
            page = self
                .backend
                .list(ListOptions {
                    prefix: "",
                    revision: Some(revision),
                    start_after: Some(&last),
                    limit: Some(PAGE),
                })
                .await?;
        }
        if written != objects {
            return Err(Error::Storage(storage::Error::Backend(
                format!(
                    "the store listed {written} keys at revision {revision} after counting {objects}"
                )
                .into(),
            )));
        }
        for (name, contents) in &files {
            writer.bytes(name.as_bytes(), MAX_FILE_BYTES, "file name")?;
            writer.bytes(contents, MAX_FILE_BYTES, name)?;
        }
        writer.finish().await?;
        Ok(header)
    }
}

/// Writes the parts of a backup, hashing everything it writes.
struct Writer<'a, W: ?Sized> {
    out: &'a mut W,
    hasher: Sha256,
    buffer: Vec<u8>,
}

impl<'a, W: AsyncWrite + Unpin + ?Sized> Writer<'a, W> {
    fn new(out: &'a mut W) -> Self {
        Writer {
            out,
            hasher: Sha256::new(),
            buffer: Vec::with_capacity(CHUNK),
        }
    }

    fn start(&mut self, header: &Header) -> Result<(), Error> {
        let json = serde_json::to_vec(header)
            .map_err(|error| Error::Corrupt(format!("cannot encode the header: {error}")))?;
        self.buffer.extend_from_slice(MAGIC);
        self.buffer.extend_from_slice(&FORMAT.to_be_bytes());
        self.bytes(&json, MAX_HEADER_BYTES, "header")
    }

    fn record(&mut self, kv: &KeyValue) -> Result<(), Error> {
        self.bytes(kv.key.as_bytes(), MAX_KEY_BYTES, "key")?;
        self.buffer
            .extend_from_slice(&kv.create_revision.to_be_bytes());
        self.buffer
            .extend_from_slice(&kv.mod_revision.to_be_bytes());
        self.bytes(&kv.value, MAX_VALUE_BYTES, &kv.key)
    }

    /// One length-prefixed part, refused when a reader would refuse it.
    fn bytes(&mut self, bytes: &[u8], max: usize, what: &str) -> Result<(), Error> {
        let len = u32::try_from(bytes.len())
            .ok()
            .filter(|_| bytes.len() <= max)
            .ok_or_else(|| {
                Error::Corrupt(format!(
                    "{what} holds {} bytes, more than the {max} a backup may hold",
                    bytes.len()
                ))
            })?;
        self.buffer.extend_from_slice(&len.to_be_bytes());
        self.buffer.extend_from_slice(bytes);
        Ok(())
    }

    async fn flush_if_full(&mut self) -> Result<(), Error> {
        if self.buffer.len() >= CHUNK {
            self.flush().await?;
        }
        Ok(())
    }

    async fn flush(&mut self) -> Result<(), Error> {
        self.hasher.update(&self.buffer);
        self.out.write_all(&self.buffer).await.map_err(Error::Io)?;
        self.buffer.clear();
        Ok(())
    }

    async fn finish(mut self) -> Result<(), Error> {
        self.flush().await?;
        let digest = self.hasher.finalize();
        self.out.write_all(&digest).await.map_err(Error::Io)?;
        self.out.flush().await.map_err(Error::Io)
    }
}

/// Reads a backup part by part, checking each, and hashing everything it reads.
pub(crate) struct Reader<R> {
    inner: R,
    hasher: Sha256,
    header: Header,
    records_left: u64,
    files_read: usize,
    previous_key: Option<String>,
}

impl<R: Read> Reader<R> {
    /// Reads and checks the magic, the format and the header.
    pub fn open(mut inner: R) -> Result<Self, Error> {
        let mut hasher = Sha256::new();
        let mut magic = [0u8; 8];
        let read = read_up_to(&mut inner, &mut magic)?;
        if magic[..read] != MAGIC[..read] {
            return Err(Error::NotABackup);
        }
        if read < MAGIC.len() {
            return Err(Error::Truncated);
        }
        hasher.update(magic);
        let mut reader = Reader {
            inner,
            hasher,
            header: Header {
                format: FORMAT,
                created_at: String::new(),
                revision: 0,
                cluster_name: String::new(),
                server: String::new(),
                hosts: Vec::new(),
                atoll_version: String::new(),
                objects: 0,
                files: Vec::new(),
            },
            records_left: 0,
            files_read: 0,
            previous_key: None,
        };
        let format = reader.u32()?;
        if format > FORMAT {
            return Err(Error::NewerFormat {
                found: format,
                supported: FORMAT,
            });
        }
        if format != FORMAT {
            return Err(Error::Corrupt(format!("format {format} does not exist")));
        }
        let json = reader.bytes(MAX_HEADER_BYTES, "the header")?;
        let header: Header = serde_json::from_slice(&json)
            .map_err(|error| Error::Corrupt(format!("the header is not readable: {error}")))?;
        check_header(&header, format)?;
        reader.records_left = header.objects;
        reader.header = header;
        Ok(reader)
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The next record, or `None` after the last one.
    pub fn next_record(&mut self) -> Result<Option<KeyValue>, Error> {
        if self.records_left == 0 {
            return Ok(None);
        }
        let key = self.bytes(MAX_KEY_BYTES, "a key")?;
        let key =
            String::from_utf8(key).map_err(|_| Error::Corrupt("a key is not UTF-8".to_owned()))?;
        let create_revision = self.i64()?;
        let mod_revision = self.i64()?;
        let value = Bytes::from(self.bytes(MAX_VALUE_BYTES, &format!("the value of {key:?}"))?);
        if !key.starts_with('/') {
            return Err(Error::Corrupt(format!("key {key:?} is not a storage key")));
        }
        if self
            .previous_key
            .as_ref()
            .is_some_and(|previous| *previous >= key)
        {
            return Err(Error::Corrupt(format!("key {key:?} is out of order")));
        }
        if create_revision < 1
            || create_revision > mod_revision
            || mod_revision > self.header.revision
        {
            return Err(Error::Corrupt(format!(
                "key {key:?} was created at revision {create_revision} and modified at \
                 {mod_revision}, which a snapshot at revision {} cannot hold",
                self.header.revision
            )));
        }
        self.records_left -= 1;
        self.previous_key = Some(key.clone());
        Ok(Some(KeyValue {
            key,
            value,
            create_revision,
            mod_revision,
        }))
    }

    /// The next file as `(name, contents)`, or `None` after the last one. Only after the last
    /// record.
    pub fn next_file(&mut self) -> Result<Option<(String, Vec<u8>)>, Error> {
        if self.records_left > 0 {
            return Err(Error::Corrupt(
                "files were asked for before the records were read".to_owned(),
            ));
        }
        let Some(expected) = self.header.files.get(self.files_read).cloned() else {
            return Ok(None);
        };
        let name = self.bytes(MAX_FILE_BYTES, "a file name")?;
        if name != expected.as_bytes() {
            return Err(Error::Corrupt(format!(
                "file {:?} is where the header announces {expected:?}",
                String::from_utf8_lossy(&name)
            )));
        }
        let contents = self.bytes(MAX_FILE_BYTES, &format!("file {expected:?}"))?;
        self.files_read += 1;
        Ok(Some((expected, contents)))
    }

    /// Checks the trailer against everything read, and that nothing follows it. Only after
    /// every record and file.
    pub fn finish(mut self) -> Result<Header, Error> {
        if self.records_left > 0 || self.files_read < self.header.files.len() {
            return Err(Error::Corrupt(
                "the backup was closed before its end was read".to_owned(),
            ));
        }
        let mut trailer = [0u8; 32];
        self.inner.read_exact(&mut trailer)?;
        let digest: [u8; 32] = self.hasher.finalize().into();
        if trailer != digest {
            return Err(Error::Corrupt(
                "its checksum does not match its contents".to_owned(),
            ));
        }
        let mut more = [0u8; 1];
        if read_up_to(&mut self.inner, &mut more)? > 0 {
            return Err(Error::Corrupt(
                "data follows the end of the backup".to_owned(),
            ));
        }
        Ok(self.header)
    }

    fn read_exact(&mut self, buffer: &mut [u8]) -> Result<(), Error> {
        self.inner.read_exact(buffer)?;
        self.hasher.update(&*buffer);
        Ok(())
    }

    fn u32(&mut self) -> Result<u32, Error> {
        let mut bytes = [0u8; 4];
        self.read_exact(&mut bytes)?;
        Ok(u32::from_be_bytes(bytes))
    }

    fn i64(&mut self) -> Result<i64, Error> {
        let mut bytes = [0u8; 8];
        self.read_exact(&mut bytes)?;
        Ok(i64::from_be_bytes(bytes))
    }

    /// A length-prefixed part, refused before allocating when longer than `max`.
    fn bytes(&mut self, max: usize, what: &str) -> Result<Vec<u8>, Error> {
        let len = usize::try_from(self.u32()?).unwrap_or(usize::MAX);
        if len > max {
            return Err(Error::Corrupt(format!(
                "{what} claims {len} bytes, more than the {max} a backup may hold"
            )));
        }
        let mut bytes = vec![0u8; len];
        self.read_exact(&mut bytes)?;
        Ok(bytes)
    }
}

/// The records of a reader as storage reads them (for restoring into a backend).
pub(crate) struct Records<'a, R>(pub &'a mut Reader<R>);

impl<R: Read> Iterator for Records<'_, R> {
    type Item = storage::Result<KeyValue>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0
            .next_record()
            .map_err(|error| storage::Error::Backend(Box::new(error)))
            .transpose()
    }
}

/// What the header must say for the rest to be read safely.
fn check_header(header: &Header, format: u32) -> Result<(), Error> {
    if header.format != format {
        return Err(Error::Corrupt(format!(
            "the header says format {} in a format {format} file",
            header.format
        )));
    }
    if header.revision < 0 {
        return Err(Error::Corrupt(format!(
            "the header's revision {} is negative",
            header.revision
        )));
    }
    let mut seen = HashSet::new();
    for name in &header.files {
        if !CREDENTIAL_FILES.contains(&name.as_str()) {
            return Err(Error::Corrupt(format!(
                "the header announces file {name:?}, which is not one a backup carries"
            )));
        }
        if !seen.insert(name) {
            return Err(Error::Corrupt(format!(
                "the header announces file {name:?} twice"
            )));
        }
    }
    Ok(())
}

/// Reads into `buffer` until it is full or the input ends; how many bytes were read.
fn read_up_to(reader: &mut impl Read, buffer: &mut [u8]) -> Result<usize, Error> {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(Error::Io(error)),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::memory::MemoryBackend;

    /// A backup of a memory store holding `n` keys, with made-up credential files.
    async fn backup_of(n: usize) -> (Vec<u8>, Header) {
        let backend = Arc::new(MemoryBackend::new());
        for i in 0..n {
            let key = format!("/registry/core/configmaps/default/c{i:04}");
            backend
                .create(&key, Bytes::from(format!("{{\"i\":{i}}}")))
                .await
                .unwrap();
        }
        let dir = tempfile::tempdir().unwrap();
        for name in CREDENTIAL_FILES {
            std::fs::write(dir.path().join(name), format!("contents of {name}")).unwrap();
        }
        let source = Source {
            backend,
            data_dir: dir.path().to_owned(),
            cluster_name: "c1".into(),
            server: "https://127.0.0.1:6443".into(),
            hosts: vec!["localhost".into(), "127.0.0.1".into()],
            compaction: Default::default(),
            waiting: false,
        };
        let mut out = Vec::new();
        let header = source.write(&mut out).await.unwrap();
        (out, header)
    }

    #[tokio::test]
    async fn a_backup_reads_back_whole() {
        let (bytes, header) = backup_of(600).await;
        assert_eq!(header.objects, 600);
        assert_eq!(header.revision, 600);
        assert_eq!(header.cluster_name, "c1");
        assert_eq!(verify(bytes.as_slice()).unwrap(), header);
        assert_eq!(read_header(&bytes[..4096]).unwrap(), header);

        let mut reader = Reader::open(bytes.as_slice()).unwrap();
        let mut records = Vec::new();
        while let Some(kv) = reader.next_record().unwrap() {
            records.push(kv);
        }
        assert_eq!(records.len(), 600);
        assert_eq!(records[7].key, "/registry/core/configmaps/default/c0007");
        assert_eq!(records[7].value, Bytes::from(r#"{"i":7}"#));
        assert_eq!(
            (records[7].create_revision, records[7].mod_revision),
            (8, 8)
        );
        let mut files = Vec::new();
        while let Some((name, contents)) = reader.next_file().unwrap() {
            files.push((name, String::from_utf8(contents).unwrap()));
        }
        assert_eq!(files.len(), CREDENTIAL_FILES.len());
        assert_eq!(
            files[1],
            ("ca.key".to_owned(), "contents of ca.key".to_owned())
        );
        reader.finish().unwrap();
    }

    #[tokio::test]
    async fn a_truncated_backup_says_so_wherever_it_is_cut() {
        let (bytes, _) = backup_of(20).await;
        for cut in [
            0,
            3,
            8,
            10,
            30,
            bytes.len() / 2,
            bytes.len() - 40,
            bytes.len() - 1,
        ] {
            let error = verify(&bytes[..cut]).unwrap_err();
            assert!(matches!(error, Error::Truncated), "cut at {cut}: {error}");
            assert_eq!(error.to_string(), "the backup is truncated");
        }
        assert!(matches!(read_header(&bytes[..20]), Err(Error::Truncated)));
    }

    #[tokio::test]
    async fn a_foreign_file_is_not_a_backup() {
        for foreign in [
            &b"\x1f\x8b\x08\x00 a gzip file"[..],
            b"apiVersion: v1\nkind: Config\n",
            b"ATOLLBAX and more",
        ] {
            let error = verify(foreign).unwrap_err();
            assert!(matches!(error, Error::NotABackup), "{error}");
            assert_eq!(error.to_string(), "the file is not an atoll backup");
            assert!(matches!(read_header(foreign), Err(Error::NotABackup)));
        }
    }

    #[tokio::test]
    async fn a_newer_format_is_refused_by_name() {
        let (mut bytes, _) = backup_of(3).await;
        bytes[8..12].copy_from_slice(&2u32.to_be_bytes());
        let error = verify(bytes.as_slice()).unwrap_err();
        assert!(matches!(
            error,
            Error::NewerFormat {
                found: 2,
                supported: 1
            }
        ));
        assert_eq!(
            error.to_string(),
            "the backup was written by a newer atoll (format 2; this atoll reads format 1)"
        );
        assert!(matches!(
            read_header(&bytes),
            Err(Error::NewerFormat { found: 2, .. })
        ));
    }

    #[tokio::test]
    async fn a_changed_byte_breaks_the_checksum() {
        let (bytes, _) = backup_of(20).await;
        // A byte inside a stored value: every length still holds, only the checksum tells.
        let at = bytes.windows(8).position(|w| w == br#"{"i":13}"#).unwrap() + 5;
        let mut corrupt = bytes.clone();
        corrupt[at] = b'7';
        let error = verify(corrupt.as_slice()).unwrap_err();
        assert!(matches!(error, Error::Corrupt(_)), "{error}");
        assert_eq!(
            error.to_string(),
            "the backup is corrupt: its checksum does not match its contents"
        );
        // And in the trailer itself.
        let mut corrupt = bytes.clone();
        let last = corrupt.len() - 1;
        corrupt[last] ^= 1;
        assert!(matches!(verify(corrupt.as_slice()), Err(Error::Corrupt(_))));
        // Data after the end.
        let mut longer = bytes;
        longer.push(0);
        assert!(matches!(verify(longer.as_slice()), Err(Error::Corrupt(_))));
    }

    #[tokio::test]
    async fn absurd_lengths_are_refused_before_allocating() {
        let (bytes, header) = backup_of(2).await;
        // The header length: 4 GiB.
        let mut corrupt = bytes.clone();
        corrupt[12..16].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(matches!(
            verify(corrupt.as_slice()),
            Err(Error::Corrupt(message)) if message.contains("the header claims")
        ));
        // The first key's length.
        let header_len = serde_json::to_vec(&header).unwrap().len();
        let first_key = 16 + header_len;
        let mut corrupt = bytes;
        corrupt[first_key..first_key + 4].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(matches!(
            verify(corrupt.as_slice()),
            Err(Error::Corrupt(message)) if message.contains("a key claims")
        ));
    }

    #[test]
    fn a_header_cannot_smuggle_other_files() {
        let header = Header {
            format: FORMAT,
            created_at: String::new(),
            revision: 1,
            cluster_name: "c".into(),
            server: String::new(),
            hosts: Vec::new(),
            atoll_version: String::new(),
            objects: 0,
            files: vec!["../../etc/passwd".into()],
        };
        assert!(matches!(
            check_header(&header, FORMAT),
            Err(Error::Corrupt(_))
        ));
        let twice = Header {
            files: vec!["ca.key".into(), "ca.key".into()],
            ..header
        };
        assert!(matches!(
            check_header(&twice, FORMAT),
            Err(Error::Corrupt(_))
        ));
    }
}
