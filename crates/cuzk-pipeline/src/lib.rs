//! The proving engine: jobs split into partitions, synthesis workers feeding a GPU queue, GPU
//! workers sharing a per-device lock around the device region only, finalizers, a memory budget and
//! TIMELINE logs. Built so far: the memory budget ([`budget`]), the TIMELINE format ([`timeline`])
//! its analysis ([`analysis`]) and
//! Gantt chart ([`gantt`]).
//!
//! It schedules and measures; it must not implement Groth16 or GPU arithmetic itself: it drives
//! `cuzk-groth16`'s prover through its backend trait.
#![forbid(unsafe_code)]

pub mod analysis;
pub mod budget;
pub mod gantt;
pub mod timeline;
