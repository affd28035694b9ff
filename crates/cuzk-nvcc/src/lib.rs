//! Finds or provisions nvcc and compiles `cuda/` into one fatbin, so that `cuzk-gpu`'s build script
//! and `cargo xtask kernels` build the kernels with the same toolchain lookup and the same flags.
//!
//! It owns the toolchain search order, the pinned PyPI toolchain and the nvcc command line. It must
//! stay std-only (it is a build dependency, compiled before anything else), must not know what the
//! kernels do, and only [`provision`] may touch the network: build scripts call [`find`] alone.

mod error;
mod fatbin;
mod toolchain;

pub use error::Error;
pub use fatbin::{compile_fatbin, is_fresh, sources, Archs, ARCHS_ENV, ENTRY};
pub use toolchain::{find, provision, Toolchain};
