//! The proving engine: jobs split into partitions, synthesis workers feeding a GPU queue, GPU
//! workers sharing a per-device lock around the device region only, finalizers, a memory budget and
//! TIMELINE logs.
//!
//! - [`engine`]: the engine itself ([`Engine`]), its jobs (each with a [`Priority`]) and
//!   configuration; what a job in flight and each device are doing ([`JobProgress`],
//!   [`DeviceActivity`]); where a finished job's time went ([`JobTimings`]).
//! - [`budget`]: the memory budget, RAII reservations released in steps.
//! - [`sink`]: where TIMELINE records go (stderr, a file, memory).
//! - [`timeline`]: the TIMELINE line format, its events and detail keys, one text form for the
//!   engine that writes it and every reader; [`analysis`] what a log says about the GPU;
//!   [`gantt`] the log as a chart.
//!
//! It schedules and measures; it must not implement Groth16 or GPU arithmetic itself: it drives
//! `cuzk-groth16`'s prover through its backend trait.
#![forbid(unsafe_code)]

pub mod analysis;
pub mod budget;
pub mod engine;
pub mod gantt;
pub mod sink;
pub mod timeline;

pub use engine::{
    unpanicked, DeviceActivity, Devices, Engine, EngineConfig, JobError, JobHandle, JobOutput,
    JobProgress, JobRequest, JobTimings, Partition, Place, Priority, FAULTS_IN_A_ROW,
    SYNTHESIS_NICE,
};
