//! The proving engine: jobs split into partitions, synthesis workers feeding a GPU queue, GPU
//! workers sharing a per-device lock around the device region only, finalizers, a memory budget and
//! TIMELINE logs. (Being built; this crate is the place for it.)
//!
//! It schedules and measures; it must not implement Groth16 or GPU arithmetic itself: it drives
//! `cuzk-groth16`'s prover through its backend trait.
#![forbid(unsafe_code)]
