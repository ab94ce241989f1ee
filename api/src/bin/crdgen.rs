//! crdgen: writes every CRD of atoll as one YAML file in `manifests/crds/` of the workspace (or
//! the folder given as the only argument), and removes YAML files there that no CRD produces.

use std::collections::BTreeSet;
use std::path::PathBuf;

fn main() -> anyhow::Result<()> {
    let dir = match std::env::args_os().nth(1) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(atoll_api::crd::CRD_DIR),
    };
    std::fs::create_dir_all(&dir)?;
    let files = atoll_api::crd::render()?;
    let wanted: BTreeSet<_> = files.iter().map(|(name, _)| name.clone()).collect();
    for entry in std::fs::read_dir(&dir)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.ends_with(".yaml") && !wanted.contains(name) {
            std::fs::remove_file(&path)?;
        }
    }
    for (name, yaml) in files {
        let path = dir.join(&name);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(yaml.as_str()) {
            std::fs::write(&path, yaml)?;
        }
    }
    Ok(())
}
