//! The compiled R1CS the engine records itself, one per circuit shape
//! ([`PartitionedCircuit::shape`](super::PartitionedCircuit::shape)): the first partition of an
//! unseen shape is synthesized directly with its R1CS recorded in the same run, the later
//! partitions of every job with that key by witness only.
//!
//! At most [`KEPT`] shapes are kept, the least recently used dropped first: one costs about its
//! three matrices (8 bytes per non-zero entry, outside the memory budget), gigabytes for the
//! largest circuits, and an engine serves a few circuits at a time, not dozens. The lock is
//! held only to look up and file entries, never while a circuit runs; while one worker records
//! a shape, the other partitions of that shape are synthesized directly rather than wait for it.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use cuzk_synth::CompiledR1cs;

use super::job::{Method, Synthesize};

/// Shapes kept at once.
pub(crate) const KEPT: usize = 4;

pub(crate) struct CompiledCache {
    enabled: bool,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Least recently used first.
    compiled: VecDeque<(String, Arc<CompiledR1cs>)>,
    /// Shapes a worker is recording now.
    recording: HashSet<String>,
}

/// How one partition is to be synthesized, and the shape it records, if it does.
pub(crate) struct Plan<'a> {
    pub method: Method,
    pub recording: Option<Recording<'a>>,
}

/// A shape one worker is recording. Dropped, recorded or not (a failed or panicking synthesis),
/// it lets the next partition of the shape record it.
pub(crate) struct Recording<'a> {
    cache: &'a CompiledCache,
    key: String,
}

impl CompiledCache {
    /// `enabled` false: every plan is direct synthesis.
    pub fn new(enabled: bool) -> Self {
        CompiledCache {
            enabled,
            state: Mutex::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Every method completes its change or makes none, so a panic elsewhere leaves it whole.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The plan for a partition of a job with `shape`: compiled when the shape is known, recorded
    /// when no worker is recording it yet, direct otherwise, and direct for jobs that bring their
    /// own compiled R1CS (which then serves).
    pub fn plan(&self, shape: Option<&str>, circuit: &dyn Synthesize) -> Plan<'_> {
        let direct = Plan {
            method: Method::Direct,
            recording: None,
        };
        let Some(key) = shape.filter(|_| self.enabled && circuit.own_compiled().is_none()) else {
            return direct;
        };
        let mut state = self.state();
        if let Some(at) = state.compiled.iter().position(|(k, _)| k == key) {
            if let Some(entry) = state.compiled.remove(at) {
                let compiled = Arc::clone(&entry.1);
                state.compiled.push_back(entry);
                return Plan {
                    method: Method::Compiled(compiled),
                    recording: None,
                };
            }
        }
        if !state.recording.insert(key.to_owned()) {
            return direct;
        }
        Plan {
            method: Method::Record,
            recording: Some(Recording {
                cache: self,
                key: key.to_owned(),
            }),
        }
    }

    /// Drops `key`'s entry if it still is `compiled`: a partition did not fit it, and the entry
    /// may be the bad one (recorded from a partition that broke the shape contract), so the next
    /// partition of the key records it afresh rather than every later one failing.
    pub fn forget(&self, key: &str, compiled: &Arc<CompiledR1cs>) {
        self.state()
            .compiled
            .retain(|(k, c)| !(k == key && Arc::ptr_eq(c, compiled)));
    }
}

impl Recording<'_> {
    /// Files the recorded R1CS as the newest shape, dropping the least recently used beyond
    /// [`KEPT`].
    pub fn finish(self, compiled: CompiledR1cs) {
        let compiled = Arc::new(compiled);
        let mut state = self.cache.state();
        state.compiled.retain(|(k, _)| *k != self.key);
        state.compiled.push_back((self.key.clone(), compiled));
        let excess = state.compiled.len().saturating_sub(KEPT);
        state.compiled.drain(..excess);
    }
}

impl Drop for Recording<'_> {
    fn drop(&mut self) {
        self.cache.state().recording.remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use cuzk_synth::circuits::SyntheticCircuit;

    use super::*;
    use crate::engine::job::Partition;

    fn circuit() -> SyntheticCircuit {
        SyntheticCircuit {
            constraints: 8,
            boolean_fraction: 0.5,
            public_inputs: 1,
            seed: 3,
        }
    }

    fn job() -> impl Synthesize {
        |_: usize| Partition {
            circuit: circuit(),
            public_inputs: Vec::new(),
        }
    }

    fn compiled() -> CompiledR1cs {
        CompiledR1cs::record(circuit()).unwrap_or_else(|e| panic!("{e}"))
    }

    fn is_direct(plan: &Plan<'_>) -> bool {
        matches!(plan.method, Method::Direct) && plan.recording.is_none()
    }

    /// Files what a plan that records would have recorded.
    fn file(plan: Plan<'_>) {
        assert!(matches!(plan.method, Method::Record));
        let recording = plan.recording.unwrap_or_else(|| panic!("a recording plan"));
        recording.finish(compiled());
    }

    #[test]
    fn one_worker_records_a_shape_and_later_partitions_use_it() {
        let cache = CompiledCache::new(true);
        let job = job();
        assert!(is_direct(&cache.plan(None, &job)), "no key, no recording");
        let first = cache.plan(Some("k"), &job);
        assert!(matches!(first.method, Method::Record));
        assert!(
            is_direct(&cache.plan(Some("k"), &job)),
            "while it is recorded"
        );
        let failed = first.recording;
        drop(failed);
        // A failed recording is tried again.
        file(cache.plan(Some("k"), &job));
        let Method::Compiled(used) = cache.plan(Some("k"), &job).method else {
            panic!("a recorded shape is compiled");
        };
        cache.forget("k", &Arc::new(compiled()));
        assert!(matches!(
            cache.plan(Some("k"), &job).method,
            Method::Compiled(_)
        ));
        cache.forget("k", &used);
        assert!(matches!(cache.plan(Some("k"), &job).method, Method::Record));
    }

    #[test]
    fn off_means_no_recording() {
        let cache = CompiledCache::new(false);
        assert!(is_direct(&cache.plan(Some("k"), &job())));
        assert!(cache.state().recording.is_empty());
    }

    #[test]
    fn the_least_recently_used_shape_goes_first() {
        let cache = CompiledCache::new(true);
        let job = job();
        for k in 0..KEPT {
            file(cache.plan(Some(&k.to_string()), &job));
        }
        // Shape 0 used again, so shape 1 is the least recently used when one more comes.
        assert!(matches!(
            cache.plan(Some("0"), &job).method,
            Method::Compiled(_)
        ));
        file(cache.plan(Some("new"), &job));
        let kept: Vec<_> = cache
            .state()
            .compiled
            .iter()
            .map(|(k, _)| k.clone())
            .collect();
        assert_eq!(kept.len(), KEPT);
        assert!(!kept.contains(&"1".to_owned()) && kept.contains(&"0".to_owned()));
    }
}
