//! The memory budget: one byte count that everything in flight reserves from, so back-pressure
//! (waiting) replaces running out of memory, whatever the worker counts say.
//!
//! A partition reserves its synthesis output before synthesis starts and gives it back in two
//! steps: a/b/c after `prove_start` ([`Reservation::keep`] the rest), the rest after
//! `prove_finish`. Products deferred to the device are never reserved.
//! Bytes are counted in whole MiB, so budgets up to 4 PiB fit the semaphore's permits.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

const UNIT: u64 = 1 << 20;

/// A request that can never be met: more than the whole budget.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{what} needs {needed} bytes, more than the whole memory budget of {budget} bytes")]
pub struct OverBudget {
    pub what: String,
    pub needed: u64,
    pub budget: u64,
}

/// Shared by every task of an engine.
#[derive(Debug, Clone)]
pub struct MemoryBudget {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    semaphore: Arc<Semaphore>,
    units: u64,
    in_use: AtomicU64,
    peak: AtomicU64,
}

/// Bytes held until released or dropped.
#[derive(Debug)]
pub struct Reservation {
    permit: Option<OwnedSemaphorePermit>,
    budget: Arc<Inner>,
}

fn units(bytes: u64) -> u64 {
    bytes.div_ceil(UNIT)
}

impl MemoryBudget {
    pub fn new(bytes: u64) -> Self {
        let units = units(bytes).min(Semaphore::MAX_PERMITS as u64);
        MemoryBudget {
            inner: Arc::new(Inner {
                semaphore: Arc::new(Semaphore::new(units as usize)),
                units,
                in_use: AtomicU64::new(0),
                peak: AtomicU64::new(0),
            }),
        }
    }

    /// The budget in bytes (rounded up to whole MiB).
    pub fn bytes(&self) -> u64 {
        self.inner.units * UNIT
    }

    /// Bytes reserved right now.
    pub fn in_use(&self) -> u64 {
        self.inner.in_use.load(Ordering::SeqCst) * UNIT
    }

    /// The most bytes ever reserved at once.
    pub fn peak(&self) -> u64 {
        self.inner.peak.load(Ordering::SeqCst) * UNIT
    }

    /// Waits until `bytes` are free and reserves them; refuses at once what can never fit.
    pub async fn reserve(&self, what: &str, bytes: u64) -> Result<Reservation, OverBudget> {
        let needed = units(bytes);
        if needed > self.inner.units {
            return Err(OverBudget {
                what: what.to_owned(),
                needed: bytes,
                budget: self.bytes(),
            });
        }
        // The semaphore is never closed, so acquiring only waits.
        let permit = Arc::clone(&self.inner.semaphore)
            .acquire_many_owned(needed as u32)
            .await
            .map_err(|_| OverBudget {
                what: what.to_owned(),
                needed: bytes,
                budget: self.bytes(),
            })?;
        let now = self.inner.in_use.fetch_add(needed, Ordering::SeqCst) + needed;
        self.inner.peak.fetch_max(now, Ordering::SeqCst);
        Ok(Reservation {
            permit: Some(permit),
            budget: Arc::clone(&self.inner),
        })
    }
}

impl Reservation {
    /// Bytes still held.
    pub fn bytes(&self) -> u64 {
        self.permit.as_ref().map_or(0, |p| p.num_permits() as u64) * UNIT
    }

    /// Gives back all but `bytes` of this reservation now (nothing if it holds no more).
    pub fn keep(&mut self, bytes: u64) {
        self.release(self.bytes().saturating_sub(bytes));
    }

    /// Gives back `bytes` of this reservation now (at most what it holds), keeping the rest.
    fn release(&mut self, bytes: u64) {
        let Some(permit) = self.permit.as_mut() else {
            return;
        };
        let give = units(bytes).min(permit.num_permits() as u64);
        if let Some(split) = permit.split(give as usize) {
            self.budget.in_use.fetch_sub(give, Ordering::SeqCst);
            drop(split);
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Some(permit) = self.permit.take() {
            self.budget
                .in_use
                .fetch_sub(permit.num_permits() as u64, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[tokio::test]
    async fn reservations_wait_for_room_and_release_in_steps() {
        let budget = MemoryBudget::new(10 * MIB);
        let mut first = budget
            .reserve("p0", 6 * MIB)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let waiting = {
            let budget = budget.clone();
            tokio::spawn(async move { budget.reserve("p1", 6 * MIB).await })
        };
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "only 4 MiB are free");
        first.keep(4 * MIB); // a/b/c given back after prove_start
        assert_eq!(first.bytes(), 4 * MIB);
        let second = waiting
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(budget.in_use(), 10 * MIB);
        drop(first); // the rest after prove_finish
        drop(second);
        assert_eq!(budget.in_use(), 0);
        assert_eq!(budget.peak(), 10 * MIB);
    }

    #[tokio::test]
    async fn a_request_larger_than_the_budget_is_refused_not_left_waiting() {
        let budget = MemoryBudget::new(3 * MIB);
        let err = budget.reserve("huge partition", 4 * MIB).await.err();
        assert_eq!(
            err.map(|e| e.to_string()),
            Some(format!(
                "huge partition needs {} bytes, more than the whole memory budget of {} bytes",
                4 * MIB,
                3 * MIB
            ))
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn many_tasks_never_exceed_the_budget() {
        let budget = MemoryBudget::new(16 * MIB);
        let tasks: Vec<_> = (0..64u64)
            .map(|i| {
                let budget = budget.clone();
                tokio::spawn(async move {
                    let mut r = budget
                        .reserve("task", (1 + i % 5) * MIB)
                        .await
                        .unwrap_or_else(|e| panic!("{e}"));
                    assert!(budget.in_use() <= budget.bytes());
                    tokio::task::yield_now().await;
                    r.keep(r.bytes() - MIB);
                    tokio::task::yield_now().await;
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap_or_else(|e| panic!("{e}"));
        }
        assert!(budget.peak() <= 16 * MIB);
        assert_eq!(budget.in_use(), 0);
    }
}
