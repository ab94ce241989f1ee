//! The format of a data directory. The file `format` records it (`atoll-data-format N`), so
//! that a newer atoll migrates an older directory as it starts and an older atoll refuses a
//! newer one rather than misread it. A directory without the file was written before formats
//! were recorded (format 0) when it holds anything, and is new otherwise.
//!
//! Formats: 0, before the file existed; 1, the same files, with the format recorded. A change
//! to what the directory holds adds a format and its migration here.

use std::path::{Path, PathBuf};

/// The file that records the format.
pub const FILE: &str = "format";
/// The format this atoll writes, and the newest it reads.
pub const CURRENT: u32 = 1;
/// What the file says before the number.
const PREFIX: &str = "atoll-data-format ";
/// Files whose presence tells a directory written before formats were recorded from a new one.
const WRITTEN_BEFORE: [&str; 3] = ["state.db", "ca.crt", "tokens.csv"];

/// Why a data directory's format cannot be read or recorded.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// Written by a newer atoll.
    #[error(
        "the data directory {dir} was written by a newer atoll (data format {found}; this atoll reads formats up to {CURRENT}): run that atoll, or restore a backup into a new directory"
    )]
    Newer {
        /// The directory.
        dir: PathBuf,
        /// Its format.
        found: u32,
    },
    /// The file does not say a format.
    #[error("{path} does not record a data format ({text:?}); it should read \"{PREFIX}N\"")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What it holds (cut to 64 characters).
        text: String,
    },
    /// The file cannot be read or written.
    #[error("cannot read or write {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// Reads the directory's format, migrates an older one to [`CURRENT`] and records it; refuses a
/// newer one. Returns the format found (`None`: a new directory). Runs under the directory's
/// lock, before storage opens.
pub fn check_and_migrate(dir: &Path) -> Result<Option<u32>, FormatError> {
    let path = dir.join(FILE);
    let found = match std::fs::read_to_string(&path) {
        Ok(text) => Some(parse(&text).ok_or_else(|| FormatError::Unreadable {
            path: path.clone(),
            text: text.chars().take(64).collect(),
        })?),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => WRITTEN_BEFORE
            .iter()
            .any(|f| dir.join(f).exists())
            .then_some(0),
        Err(source) => return Err(FormatError::Io { path, source }),
    };
    match found {
        Some(found) if found > CURRENT => {
            return Err(FormatError::Newer {
                dir: dir.to_owned(),
                found,
            });
        }
        Some(CURRENT) => return Ok(found),
        Some(older) => {
            // 0 → 1: the files are the same; only the record is new.
            tracing::info!(dir = %dir.display(), from = older, to = CURRENT, "migrating the data directory to the current format");
        }
        None => {}
    }
    write(&path).map_err(|source| FormatError::Io { path, source })?;
    Ok(found)
}

fn parse(text: &str) -> Option<u32> {
    text.trim().strip_prefix(PREFIX)?.trim().parse().ok()
}

/// Writes the current format through a temporary file, synced, then renamed into place.
fn write(path: &Path) -> std::io::Result<()> {
    use std::io::Write as _;
    let partial = path.with_extension("partial");
    let mut file = std::fs::File::create(&partial)?;
    file.write_all(format!("{PREFIX}{CURRENT}\n").as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&partial, path)?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_directory_is_recorded_at_the_current_format() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(check_and_migrate(dir.path()).unwrap(), None);
        assert_eq!(
            std::fs::read_to_string(dir.path().join(FILE)).unwrap(),
            "atoll-data-format 1\n"
        );
        assert_eq!(check_and_migrate(dir.path()).unwrap(), Some(CURRENT));
    }

    #[test]
    fn a_directory_written_before_formats_were_recorded_is_migrated() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("state.db"), b"").unwrap();
        assert_eq!(check_and_migrate(dir.path()).unwrap(), Some(0));
        assert_eq!(check_and_migrate(dir.path()).unwrap(), Some(CURRENT));
    }

    #[test]
    fn a_newer_or_unreadable_format_is_refused_and_left_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE), "atoll-data-format 7\n").unwrap();
        let error = check_and_migrate(dir.path()).unwrap_err().to_string();
        assert!(
            error.ends_with("was written by a newer atoll (data format 7; this atoll reads formats up to 1): run that atoll, or restore a backup into a new directory"),
            "{error}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join(FILE)).unwrap(),
            "atoll-data-format 7\n"
        );
        std::fs::write(dir.path().join(FILE), "seven").unwrap();
        let error = check_and_migrate(dir.path()).unwrap_err().to_string();
        assert!(
            error.ends_with(
                "does not record a data format (\"seven\"); it should read \"atoll-data-format N\""
            ),
            "{error}"
        );
    }
}
