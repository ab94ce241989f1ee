//! Link settings of the `atoll` binary.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // Relative relocations packed as DT_RELR instead of 24-byte RELA entries: the dynamic loader
    // reads every one of them at start, so the RELA table (about 800 KiB) stayed resident in
    // every `atoll apiserver`. Loading DT_RELR needs glibc 2.36 (Debian 12, the image's base),
    // so the flag is only given when building on and for such a glibc.
    let native = std::env::var("TARGET").ok() == std::env::var("HOST").ok();
    if native && glibc_at_least((2, 36)) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether this machine's glibc (`getconf GNU_LIBC_VERSION`: "glibc 2.36") is at least `wanted`.
fn glibc_at_least(wanted: (u32, u32)) -> bool {
    let Ok(output) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&output.stdout);
    let Some(version) = text.trim().strip_prefix("glibc ") else {
        return false;
    };
    let mut numbers = version.split('.').map(|n| n.parse::<u32>().ok());
    match (numbers.next().flatten(), numbers.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) >= wanted,
        _ => false,
    }
}
