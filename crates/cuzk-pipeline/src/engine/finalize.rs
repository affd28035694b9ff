//! Finalizers: the epilogue of a partition whose device work is done (`prove_finish`), the check
//! of its proof, and its filing with its job.

use std::sync::Arc;
use std::time::Instant;

use cuzk_groth16::{prove_finish, verify_proof, Randomness, Started};
use cuzk_math::Scalar;
use rand::rngs::OsRng;

use super::job::{JobError, SynthesisPath};
use super::scheduler::JobInfo;
use super::shared::{blocking, Shared};
use crate::budget::Reservation;
use crate::sink::{kv, ms};
use crate::timeline::{key, Event};

/// Totals over the holds of one partition (a backend may hold the lock more than once).
#[derive(Clone, Copy, Default)]
pub(super) struct Held {
    pub(super) count: usize,
    pub(super) wait_ms: f64,
    pub(super) gpu_ms: f64,
}

/// What the finalizer logs in the partition's PARTITION_STATS line.
pub(super) struct Timings {
    pub(super) worker: usize,
    pub(super) synth_ms: f64,
    pub(super) synthesis: SynthesisPath,
    pub(super) queue_ms: f64,
    pub(super) prove_start_ms: f64,
    pub(super) held: Held,
}

/// The epilogue and the check of one partition's proof; files it, and ends the job with its last.
pub(super) async fn finalize(
    shared: Arc<Shared>,
    job: Arc<JobInfo>,
    partition: usize,
    started: Started,
    public_inputs: Vec<Scalar>,
    reservation: Reservation,
    timings: Timings,
) {
    let begin = Instant::now();
    let Started { sums, stages } = started;
    let checked = Arc::clone(&job);
    let outcome = blocking(move || {
        let proof = prove_finish(&checked.params.vk, &sums, Randomness::random(&mut OsRng));
        let valid = verify_proof(&checked.pvk, &proof, &public_inputs);
        (proof, valid, public_inputs)
    })
    .await;
    let finalize_ms = ms(begin.elapsed());
    let (proof, valid, public_inputs) = match outcome {
        Ok(done) => done,
        Err(message) => {
            let stage = "prove_finish";
            return shared.fail(
                &job,
                JobError::Panicked {
                    partition,
                    stage,
                    message,
                },
            );
        }
    };
    let detail = || {
        vec![
            kv(key::PARTITION, partition),
            kv(key::WORKER, timings.worker),
        ]
    };
    shared.clock.emit(Event::FinalizeEnd, &job.id, detail());
    let reason = match valid {
        Ok(true) => None,
        Ok(false) => Some("the proof does not verify against its public inputs".to_owned()),
        Err(e) => Some(e.to_string()),
    };
    if let Some(reason) = reason {
        return shared.fail(&job, JobError::Verify { partition, reason });
    }
    let mut stats = detail();
    stats.extend([
        kv(key::SYNTH_MS, timings.synth_ms),
        kv(key::SYNTHESIS, timings.synthesis.as_str()),
        kv(key::QUEUE_MS, timings.queue_ms),
        kv(key::PROVE_START_MS, timings.prove_start_ms),
        kv(key::DEVICE_WAIT_MS, timings.held.wait_ms),
        kv(key::GPU_MS, timings.held.gpu_ms),
        kv(key::FINALIZE_MS, finalize_ms),
    ]);
    stats.extend(stages.iter().map(|s| kv(s.key, s.value)));
    shared.clock.emit(Event::PartitionStats, &job.id, stats);
    // Logged before the memory goes back, so the log never shows more in flight than the budget.
    drop(reservation);
    let completed =
        shared
            .scheduler()
            .proved(job.seq, partition, proof, public_inputs, finalize_ms);
    if let Some(ended) = completed {
        shared.ended(ended, "ok");
    }
}
