//! Embeds the kernel fatbin when one has been built (`cargo xtask kernels`), so a binary copied to
//! a GPU machine needs nothing but the driver. Without one the crate still builds and reports
//! "GPU kernels not built" at run time.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=CUZK_FATBIN");
    println!("cargo::rustc-check-cfg=cfg(cuzk_kernels)");
    let fatbin = match std::env::var_os("CUZK_FATBIN") {
        Some(path) => PathBuf::from(path),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/cuda/cuzk.fatbin"),
    };
    println!("cargo:rerun-if-changed={}", fatbin.display());
    if fatbin.is_file() {
        println!("cargo:rustc-cfg=cuzk_kernels");
        println!("cargo:rustc-env=CUZK_FATBIN_PATH={}", fatbin.display());
    }
}
