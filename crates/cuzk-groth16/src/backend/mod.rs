//! Implementations of [`crate::ProverBackend`].

mod cpu;
mod gpu;

pub use cpu::CpuBackend;
pub use gpu::GpuBackend;
