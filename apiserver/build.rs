//! The default RBAC policy (`src/authz/defaults.yaml`, YAML to be read and reviewed) converted
//! to JSON at build time: a server reads it at every start, and with the JSON decoder that runs
//! for every request the YAML decoder's code no longer stays resident in an idle server.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/authz/defaults.yaml");
    let yaml = std::fs::read_to_string("src/authz/defaults.yaml")
        .expect("src/authz/defaults.yaml is readable");
    let policy: serde_json::Value =
        serde_yaml_ng::from_str(&yaml).expect("the default RBAC policy is valid YAML");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("rbac-defaults.json"), policy.to_string())
        .expect("the converted RBAC policy is written");
}
