//! Generates the cuzk.v1 messages, server and client from proto/cuzk/v1/proving.proto with the
//! protoc shipped inside the `protoc-bin-vendored` crate (no system protoc needed).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/cuzk/v1/proving.proto";
    println!("cargo:rerun-if-changed={proto}");
    // A build script runs on one thread: setting the variable races nothing.
    std::env::set_var("PROTOC", protoc_bin_vendored::protoc_bin_path()?);
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_protos(&[proto], &["proto"])?;
    Ok(())
}
