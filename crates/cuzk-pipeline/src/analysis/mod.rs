//! What a TIMELINE says about the GPU: its busy intervals merged over all workers, the idle
//! windows between them, the busy fraction and the steady state after a warm-up; the partitions
//! that placed a parameter set on the device, apart; each partition's stage times as median and
//! spread; the same per device for multi-GPU runs, where the merged view would hide one device
//! idling behind another.
//!
//! - `stats`: percentiles and [`Spread`], the form of every per-partition figure.
//! - `busy`: intervals from their records, busy stretches and idle windows, starvation,
//!   syntheses in flight, job-to-job transitions.
//! - `steady_state`: the whole run's [`GpuSummary`] and its [`SteadyState`] after a warm-up.
//! - `regions`: each partition's device region, and the partitions that placed a parameter set.
//! - `partitions`: stage and synthesis figures per partition.
//! - `devices`: the same per device.

mod busy;
mod devices;
mod partitions;
mod regions;
mod stats;
mod steady_state;

pub use busy::{
    balance, gpu_intervals, max_synth_in_flight, starved_fraction, synth_in_flight_histogram,
    synth_intervals, transitions, IdleWindow, JobBalance, Span, Transition,
};
pub use devices::{per_device, DeviceSummary};
pub use partitions::{partition_figures, synth_stats_by_path, PartitionFigures, STAGE_KEYS};
pub use regions::SrsPlacement;
pub use stats::{percentiles, Spread};
pub use steady_state::{summarize, GpuSummary, SteadyState, DEFAULT_WARMUP_JOBS};

#[cfg(test)]
mod tests;
