//! How many workers of each kind an engine runs, and how much host memory its partitions may
//! hold (what the rest of a run holds, and the machine's memory: [`super::memory`]).

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineConfig {
    /// Synthesis tasks; each takes the most urgent (then oldest) job's lowest unsynthesized
    /// partition.
    pub partition_workers: usize,
    /// How many jobs may be synthesizing at once; a job more urgent than all of them may start
    /// past it.
    pub synthesis_concurrency: usize,
    /// GPU workers per device; they share the device's lock, so one prepares while one computes.
    pub gpu_workers_per_device: usize,
    /// Host bytes that partitions in flight may hold together.
    pub memory_budget: u64,
    /// Whether the engine compiles the R1CS of circuits with a shape key
    /// ([`PartitionedCircuit::shape`](super::PartitionedCircuit::shape)) and synthesizes their
    /// later partitions by witness only. Off, every partition is synthesized directly, but for
    /// jobs that bring their own compiled R1CS.
    pub compiled_synthesis: bool,
    /// How much lower than the rest of the process synthesis runs, as a nice value added to its
    /// threads' (the rayon global pool's and each synthesis's own; see [`nice`]), so that the
    /// few threads driving the GPU get a core at once. 0 leaves every thread as it is.
    ///
    /// [`nice`]: super::nice
    pub synthesis_nice: i32,
    /// Whether a NORMAL job of a circuit (parameter set) already in flight starts before older
    /// NORMAL jobs of other circuits (each passed over at most
    /// [`MAX_PASSED_OVER`](super::MAX_PASSED_OVER) times), so a device too small for
    /// both sets switches less often. Off: the oldest first.
    pub group_by_circuit: bool,
}

/// The default of [`EngineConfig::synthesis_nice`]: off. Niced by 10 (a thread then weighs ~1/10
/// of one at 0 in Linux's scheduler), synthesis gave shorter device regions but fewer proofs a
/// second (measured: docs/performance.md, "Why the code is as it is"): the GPU's threads
/// spun while they waited, and took the cores at once. They sleep now (`cuzk_gpu::Lane::new`);
/// until that is measured, synthesis keeps the process's priority.
pub const SYNTHESIS_NICE: i32 = 0;

impl EngineConfig {
    /// `partition_workers` synthesis tasks, two jobs synthesizing at once (so the next job starts
    /// while the last partitions of the previous one are still being synthesized), two GPU
    /// workers per device, `memory_budget` bytes, compiled synthesis on, synthesis at
    /// [`SYNTHESIS_NICE`], jobs in submission order (not grouped by circuit).
    pub fn new(partition_workers: usize, memory_budget: u64) -> Self {
        EngineConfig {
            partition_workers,
            synthesis_concurrency: 2,
            gpu_workers_per_device: 2,
            memory_budget,
            compiled_synthesis: true,
            synthesis_nice: SYNTHESIS_NICE,
            group_by_circuit: false,
        }
    }

    pub(crate) fn check(&self, devices: usize) -> Result<(), ConfigError> {
        for (name, value) in [
            ("partition_workers", self.partition_workers),
            ("synthesis_concurrency", self.synthesis_concurrency),
            ("gpu_workers_per_device", self.gpu_workers_per_device),
            ("devices", devices),
        ] {
            if value == 0 {
                return Err(ConfigError::Zero(name));
            }
        }
        if self.memory_budget == 0 {
            return Err(ConfigError::Zero("memory_budget"));
        }
        if !(0..=19).contains(&self.synthesis_nice) {
            return Err(ConfigError::Nice(self.synthesis_nice));
        }
        Ok(())
    }
}

/// A configuration the engine cannot run with.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{0} must be at least 1")]
    Zero(&'static str),
    #[error("synthesis_nice {0}: expected 0 to 19")]
    Nice(i32),
    #[error("the engine must be started from within a tokio runtime")]
    NoRuntime,
    #[error("cannot tell the machine's memory: {0}")]
    MachineMemory(String),
}
