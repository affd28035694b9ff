//! Shared helpers of the GPU tests: a device or a printed reason to skip, seeded randomness, and
//! field values as the device's 32-bit limbs.
#![allow(dead_code)]

use std::io::Write;
use std::sync::Arc;

use cuzk_gpu::{GpuError, Lane, MemoryBudget};

/// The first device, or `None` after printing why the test is skipped.
pub fn gpu(test: &str) -> Option<Arc<Lane>> {
    or_skip(test, Lane::first())
}

/// The first device opened with `budget` for everything cuzk holds there (the process's first
/// open of it sets the budget), or `None` after printing why the test is skipped.
pub fn gpu_with_budget(test: &str, budget: MemoryBudget) -> Option<Arc<Lane>> {
    or_skip(test, Lane::open(0, budget))
}

fn or_skip(test: &str, opened: Result<Arc<Lane>, GpuError>) -> Option<Arc<Lane>> {
    match opened {
        Ok(gpu) => Some(gpu),
        Err(why) => {
            // Straight to the stderr handle, past libtest's capture, so CI logs show the skip.
            let _ = writeln!(std::io::stderr(), "{test}: SKIPPED (no GPU: {why})");
            None
        }
    }
}

#[allow(unused_imports)] // not every test binary draws random values
pub use cuzk_testkit::rng;

/// `work`'s result with the free memory `gpu` plans with capped at `limit` (`None`: what the
/// device has), the cap lifted after, whatever `work` returned.
pub fn with_memory_limit<T>(gpu: &Lane, limit: Option<usize>, work: impl FnOnce() -> T) -> T {
    gpu.limit_memory(limit);
    let result = work();
    gpu.limit_memory(None);
    result
}

/// Largest log2 size the GPU tests go to (`CUZK_GPU_TEST_MAX_LOG`, default 20).
pub fn max_log() -> u32 {
    std::env::var("CUZK_GPU_TEST_MAX_LOG")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20)
}

/// Little-endian 32-bit limbs of little-endian bytes.
pub fn limbs(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// A field's modulus as limbs, from its −1 (little-endian bytes): (−1) + 1 as an integer.
pub fn modulus(minus_one: &[u8]) -> Vec<u32> {
    let mut out = limbs(minus_one);
    for limb in &mut out {
        let (sum, carry) = limb.overflowing_add(1);
        *limb = sum;
        if !carry {
            break;
        }
    }
    out
}
