//! The committed generated code matches `hub.proto`. Regenerate with
//! `ATOLL_REGENERATE=1 cargo test -p atoll-proto --test generated` (needs `protoc`).

use std::path::Path;

const GENERATED: &str = "src/generated/atoll.hub.v1.rs";

#[test]
fn generated_code_matches_the_proto_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = tempfile::tempdir().expect("temp dir");
    tonic_prost_build::configure()
        .build_transport(false)
        .codec_path("crate::codec::HubCodec")
        .emit_rerun_if_changed(false)
        .out_dir(out.path())
        .compile_protos(
            &[root.join("proto/atoll/hub/v1/hub.proto")],
            &[root.join("proto")],
        )
        .expect("protoc compiles hub.proto");
    let fresh = std::fs::read_to_string(out.path().join("atoll.hub.v1.rs")).expect("generated");
    let committed_path = root.join(GENERATED);
    if std::env::var_os("ATOLL_REGENERATE").is_some() {
        std::fs::write(&committed_path, &fresh).expect("write generated code");
        return;
    }
    let committed = std::fs::read_to_string(&committed_path).unwrap_or_default();
    assert!(
        committed == fresh,
        "proto/{GENERATED} is out of date with hub.proto; regenerate it with \
         `ATOLL_REGENERATE=1 cargo test -p atoll-proto --test generated` and commit the result"
    );
}
