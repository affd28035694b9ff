//! The daemon's host memory: the whole of it (`[memory] total_budget`, or the memory the process
//! may use, its cgroup's limit included, less `safety_margin`), its two shares (warm parameter
//! sets: `srs_budget`; partitions in flight: the rest), and the plan a set is checked against
//! before it loads, so that a request too big for the host fails naming memory instead of the
//! kernel killing the daemon.

use cuzk_pipeline::engine::memory::gib;
use cuzk_pipeline::engine::{machine_memory, HostMemory, HostPlan, MemoryError};

use crate::circuits::SetFiles;
use crate::config::{Budget, Config};
use crate::error::ServeError;

/// The safety margin never takes more than this fraction of the machine's memory, so that a
/// small host or cgroup (a 3 GiB one under the default 5 GiB margin) still proves small circuits.
const MAX_MARGIN_FRACTION: u64 = 4;

/// The host memory the daemon plans with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostBudgets {
    /// Everything the daemon may hold, and where that figure comes from.
    pub total: HostMemory,
    /// Warm parameter sets' share.
    pub sets: u64,
    /// Partitions in flight's share: the engine's budget.
    pub partitions: u64,
}

impl HostBudgets {
    pub fn from_config(config: &Config) -> Result<Self, ServeError> {
        let total = match config.total_budget {
            Budget::Bytes(bytes) => HostMemory::new(bytes, "[memory] total_budget"),
            Budget::Auto => {
                let machine = machine_memory().map_err(|e| {
                    ServeError::Setup(format!("memory.total_budget = \"auto\": {e}"))
                })?;
                let margin = config
                    .safety_margin
                    .min(machine.bytes / MAX_MARGIN_FRACTION);
                HostMemory::new(
                    machine.bytes - margin,
                    format!("{machine} less memory.safety_margin {}", gib(margin)),
                )
            }
        };
        let sets = match config.srs_budget {
            Budget::Auto => total.bytes / 2,
            Budget::Bytes(bytes) => bytes,
        };
        if sets >= total.bytes {
            return Err(ServeError::Setup(format!(
                "memory.srs_budget ({sets} bytes) leaves nothing of memory.total_budget ({} bytes) \
                 for partitions",
                total.bytes
            )));
        }
        Ok(HostBudgets {
            partitions: total.bytes - sets,
            sets,
            total,
        })
    }

    /// Checks what proving with a set takes, from its files, before it loads: everything within
    /// the total, and one partition within the partitions' share (the set's own share is the
    /// parameter manager's to check, as it evicts to make room).
    pub fn check(&self, files: &SetFiles) -> Result<(), MemoryError> {
        // Whether the devices compute a, b and c is known once the set is loaded: not yet.
        let plan = HostPlan::for_set(&files.header, files.r1cs_bytes, false);
        plan.partitions_budget(&self.total)?;
        let share = HostMemory::new(
            self.partitions,
            format!(
                "the partitions' share of {}, less memory.srs_budget",
                self.total
            ),
        );
        plan.partition_fits(&share)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use cuzk_groth16::keys::QueryLengths;
    use cuzk_groth16::params_file::ParamsHeader;

    use super::*;

    const GIB: u64 = 1 << 30;

    fn budgets(total: u64, sets: u64) -> HostBudgets {
        HostBudgets {
            total: HostMemory::new(total, "[memory] total_budget"),
            sets,
            partitions: total - sets,
        }
    }

    /// A set of 2^20 rows in a file of `file` bytes: one partition holds 128 MiB (0.12 GiB as printed).
    fn files(file: u64) -> SetFiles {
        SetFiles {
            header: ParamsHeader {
                inputs: 1,
                lengths: QueryLengths {
                    h: (1 << 20) - 1,
                    l: (1 << 20) - 1,
                    a: 1 << 20,
                    b_g1: 1 << 19,
                    b_g2: 1 << 19,
                },
                file_bytes: file,
            },
            r1cs_bytes: None,
        }
    }

    #[test]
    fn a_set_is_checked_against_the_total_and_the_partitions_share() {
        assert_eq!(budgets(4 * GIB, 2 * GIB).check(&files(GIB)), Ok(()));
        // Too big for the total: every part named.
        let error = budgets(GIB, GIB / 2)
            .check(&files(GIB))
            .unwrap_err()
            .to_string();
        assert!(error.contains("not enough host memory"), "{error}");
        assert!(error.contains("parameters 1.00 GiB"), "{error}");
        assert!(
            error.contains("one partition in flight 0.12 GiB"),
            "{error}"
        );
        assert!(error.contains("[memory] total_budget"), "{error}");
        // Within the total, but the partitions' share is too small for one.
        let error = budgets(4 * GIB, 4 * GIB - (64 << 20))
            .check(&files(GIB))
            .unwrap_err()
            .to_string();
        assert!(error.contains("the partitions' share"), "{error}");
    }
}
