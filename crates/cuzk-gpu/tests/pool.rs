//! The device's memory pool as lanes plan with it: a buffer within the budget is allocated even
//! when the pool's free memory lies in pieces too small for it (the pool, at its budget, gives
//! back what it keeps unused and maps the buffer anew: an H100 with 16 GiB free refused one MSM
//! pass in 19 before, docs/perf-notes.md); bytes held back for proofs beside a region are left
//! out of what other lanes plan with.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed test should stop loudly

mod common;

use std::sync::{Arc, Mutex, MutexGuard};

use cuzk_gpu::{Lane, MemoryBudget};

/// The tests of this binary measure the one pool: one at a time.
static POOL: Mutex<()> = Mutex::new(());

/// The budget this test binary opens its device with: a pool of ~2 GiB once the context and the
/// kernels' local memory (~1.7 GB on an H100 or H200: a 6 KiB frame for every thread the device
/// holds) are taken. At 2 GiB, 192 MiB were left for the pool on an H100 (docs/perf-notes.md).
const BUDGET: usize = 4 << 30;
const PIECE: usize = 64 << 20;

/// The device with this binary's budget, held by `test` alone; `None` after saying why it skips.
fn pool(test: &str) -> Option<(Arc<Lane>, MutexGuard<'static, ()>)> {
    let gpu = common::gpu_with_budget(test, MemoryBudget::Bytes(BUDGET))?;
    Some((gpu, POOL.lock().unwrap_or_else(|e| e.into_inner())))
}

#[test]
fn a_buffer_fits_where_freed_pieces_lie_apart() {
    let test = "a_buffer_fits_where_freed_pieces_lie_apart";
    let Some((gpu, _pool)) = pool(test) else {
        return;
    };
    if !gpu.budget_enforced() {
        eprintln!("{test}: SKIPPED (this driver makes no pool of a maximum size)");
        return;
    }
    // The pool filled with pieces, then every other one freed: half of it free, in pieces.
    let mut pieces = Vec::new();
    while let Ok(piece) = gpu.zeros::<u8>(PIECE, "piece") {
        pieces.push(piece);
    }
    assert!(
        pieces.len() >= 8,
        "{} pieces of 64 MiB in a budget of {BUDGET} bytes",
        pieces.len()
    );
    let kept: Vec<_> = pieces
        .into_iter()
        .enumerate()
        .filter_map(|(k, piece)| (k % 2 == 0).then_some(piece))
        .collect();
    gpu.synchronize().unwrap();
    let (free, _) = gpu.memory().unwrap();
    let wanted = 4 * PIECE;
    assert!(
        free >= wanted,
        "{free} bytes free by the pool's account, {wanted} wanted"
    );

    let buffer = gpu.zeros::<u8>(wanted, "the large buffer").unwrap();
    let mut back = vec![1u8; wanted];
    gpu.stream().memcpy_dtoh(&buffer, &mut back).unwrap();
    gpu.synchronize().unwrap();
    assert!(back.iter().all(|&b| b == 0));
    drop(kept);
}

#[test]
fn bytes_held_back_are_left_to_lanes_beside_the_region() {
    let test = "bytes_held_back_are_left_to_lanes_beside_the_region";
    let Some((gpu, _pool)) = pool(test) else {
        return;
    };
    let beside = gpu.beside_lane().unwrap();
    let side = beside.side_lane().unwrap();
    let ordinary = gpu.lane().unwrap();
    let held = 100 << 20;
    gpu.hold_back(held);
    assert_eq!(ordinary.held_back(), held, "held back for the whole device");
    let free = |lane: &Lane| lane.memory().unwrap().0;
    let whole = gpu.memory_beside().unwrap().0;
    assert!(
        whole > held,
        "{whole} bytes free in a budget of {BUDGET} bytes"
    );
    assert_eq!(free(&gpu), whole - held);
    assert_eq!(free(&ordinary), whole - held);
    assert_eq!(
        free(&beside),
        whole,
        "a beside lane plans with what is held back"
    );
    assert_eq!(free(side), whole, "and so does the side lane it makes");
    gpu.hold_back(0);
    assert_eq!(free(&gpu), whole);
}
