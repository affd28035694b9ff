//! A backend that fails on purpose, as a device would: the way to check, with CPU backends or
//! one GPU, what an engine does when a device of a multi-GPU host fails (`cuzk bench
//! --inject-device-fault`, the engine's and the daemon's tests).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use cuzk_synth::{CompiledR1cs, ProvingAssignment};

use crate::keys::{PlacedPart, QueryLengths};
use crate::prover::{DeviceLock, DeviceStatus, Started};
use crate::setup::ToxicWaste;
use crate::{Parameters, ProveError, ProverBackend, SetupError};

/// Which of a [`FaultyBackend`]'s proofs fail, counted from 0 in the order they start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Faults {
    /// This one and every later one: a device that died.
    From(usize),
    /// This one only: a transient fault.
    Only(usize),
}

impl Faults {
    fn hits(self, proof: usize) -> bool {
        match self {
            Faults::From(first) => proof >= first,
            Faults::Only(only) => proof == only,
        }
    }
}

/// Proves with `inner`, but for the proofs `faults` names, which fail with
/// [`ProveError::DeviceFault`] before any work (so a failed proof leaves the device as it was).
/// Once dead ([`Faults::From`] reached), it fails preloads too.
pub struct FaultyBackend {
    inner: Arc<dyn ProverBackend>,
    faults: Faults,
    started: AtomicUsize,
}

impl std::fmt::Debug for FaultyBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultyBackend")
            .field("inner", &self.inner.name())
            .field("faults", &self.faults)
            .finish_non_exhaustive()
    }
}

impl FaultyBackend {
    pub fn new(inner: Arc<dyn ProverBackend>, faults: Faults) -> Self {
        FaultyBackend {
            inner,
            faults,
            started: AtomicUsize::new(0),
        }
    }

    /// Counts one proof start; the fault if it is one `faults` names.
    fn next_proof(&self) -> Result<(), ProveError> {
        let proof = self.started.fetch_add(1, Ordering::Relaxed);
        match self.faults.hits(proof) {
            false => Ok(()),
            true => Err(ProveError::DeviceFault {
                device: self.inner.name().to_owned(),
                reason: format!("injected fault (proof {proof}, {:?})", self.faults),
            }),
        }
    }
}

impl ProverBackend for FaultyBackend {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn prove_start(
        &self,
        params: &Parameters,
        assignment: ProvingAssignment,
        device: &dyn DeviceLock,
    ) -> Result<Started, ProveError> {
        self.next_proof()?;
        self.inner.prove_start(params, assignment, device)
    }

    fn preload(
        &self,
        params: &Parameters,
        compiled: Option<&Arc<CompiledR1cs>>,
    ) -> Result<u64, ProveError> {
        match self.faults {
            Faults::From(first) if self.started.load(Ordering::Relaxed) >= first => {
                Err(ProveError::DeviceFault {
                    device: self.inner.name().to_owned(),
                    reason: "injected fault (dead: preload)".to_owned(),
                })
            }
            _ => self.inner.preload(params, compiled),
        }
    }

    fn evict(&self, params: &Parameters) -> u64 {
        self.inner.evict(params)
    }

    fn resident(&self, params: &Parameters) -> Option<u64> {
        self.inner.resident(params)
    }

    fn test_parameters(
        &self,
        compiled: &CompiledR1cs,
        toxic: &ToxicWaste,
    ) -> Option<Result<Parameters, SetupError>> {
        self.inner.test_parameters(compiled, toxic)
    }

    fn settle(&self, params: &Parameters) -> Option<PlacedPart> {
        self.inner.settle(params)
    }

    fn host_bytes_per_proof(&self, params: &Parameters, products_deferred: bool) -> u64 {
        self.inner.host_bytes_per_proof(params, products_deferred)
    }

    fn plan(&self, params: &Parameters) -> Option<String> {
        self.inner.plan(params)
    }

    fn plan_ahead(
        &self,
        inputs: usize,
        lengths: QueryLengths,
        r1cs_bytes: Option<u64>,
    ) -> Option<Result<String, String>> {
        self.inner.plan_ahead(inputs, lengths, r1cs_bytes)
    }

    fn computes_products(&self, params: &Parameters, compiled: &Arc<CompiledR1cs>) -> bool {
        self.inner.computes_products(params, compiled)
    }

    fn device(&self) -> Result<Option<DeviceStatus>, ProveError> {
        self.inner.device()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn faults_name_the_proofs_they_fail() {
        let from: Vec<bool> = (0..4).map(|k| Faults::From(2).hits(k)).collect();
        assert_eq!(from, [false, false, true, true]);
        let only: Vec<bool> = (0..4).map(|k| Faults::Only(1).hits(k)).collect();
        assert_eq!(only, [false, true, false, false]);
    }
}
