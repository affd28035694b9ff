//! Implementations of [`crate::ProverBackend`].

mod cpu;

pub use cpu::CpuBackend;
