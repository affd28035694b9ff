//! Shared helpers of the GPU tests: a device or a printed reason to skip, and seeded randomness.
#![allow(dead_code)]

use std::io::Write;
use std::sync::Arc;

use cuzk_gpu::Gpu;

/// The first device, or `None` after printing why the test is skipped.
pub fn gpu(test: &str) -> Option<Arc<Gpu>> {
    match Gpu::first() {
        Ok(gpu) => Some(gpu),
        Err(why) => {
            // Straight to the stderr handle, past libtest's capture, so CI logs show the skip.
            let _ = writeln!(std::io::stderr(), "{test}: SKIPPED (no GPU: {why})");
            None
        }
    }
}

pub use cuzk_testkit::rng;

/// Largest log2 size the GPU tests go to (`CUZK_GPU_TEST_MAX_LOG`, default 20).
pub fn max_log() -> u32 {
    std::env::var("CUZK_GPU_TEST_MAX_LOG")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20)
}
