//! A synthesis worker: takes the most urgent (then oldest) job's lowest unsynthesized partition
//! (or one to retry after a device fault), reserves its memory (waiting for room), synthesizes it
//! on a blocking thread and queues it for the GPU.

use std::sync::Arc;
use std::time::Instant;

use cuzk_synth::{CompiledError, CompiledR1cs};

use super::compiled::Plan;
use super::device::Coming;
use super::job::{JobError, Priority};
use super::scheduler::{JobInfo, Ready, Scheduler, Taken};
use super::shared::{unless_ended, Shared};
use crate::sink::{kv, ms};
use crate::timeline::{key, Event};

pub(super) async fn worker(shared: Arc<Shared>, worker: usize) {
    loop {
        let taken = shared
            .wait_for(&shared.synthesis_wake, Scheduler::next_synthesis)
            .await;
        let (job, partition) = (Arc::clone(&taken.job), taken.partition);
        match synthesize(&shared, taken, worker).await {
            Ok(Some(ready)) => {
                shared.clock.emit(
                    Event::GpuQueue,
                    &job.id,
                    vec![kv(key::PARTITION, partition)],
                );
                let queued = shared.scheduler().enqueue(ready);
                if queued {
                    shared.gpu_wake.notify_waiters();
                    // The job's last synthesis frees its concurrency slot.
                    shared.synthesis_wake.notify_waiters();
                }
            }
            Ok(None) => {}
            Err(error) => shared.fail(&job, error),
        }
    }
}

/// `None` when the job ended while this partition waited for memory.
async fn synthesize(
    shared: &Shared,
    taken: Taken,
    worker: usize,
) -> Result<Option<Ready>, JobError> {
    let Taken {
        ref job,
        partition,
        failed_on,
    } = taken;
    let what = format!("job {} partition {partition}", job.id);
    // A job's own compiled R1CS means witness-only synthesis, and products deferred to the
    // device if it computes them (what is held beyond the witness goes back at `prove_start`).
    let defer_products = shared.defers_products(job);
    let bytes = job.memory.reserved(defer_products);
    let reserving = shared.budget.reserve(&what, bytes);
    let Some(reserved) = unless_ended(job, reserving).await else {
        return Ok(None);
    };
    let reservation = reserved.map_err(|source| JobError::OverBudget { partition, source })?;

    let detail = || vec![kv(key::PARTITION, partition), kv(key::WORKER, worker)];
    let coming = (job.priority == Priority::Critical).then(|| Coming::to(&shared.devices));
    shared.clock.emit(Event::SynthStart, &job.id, detail());
    let start = Instant::now();
    shared.scheduler().synthesis_started(job.seq, start);
    let Plan { method, recording } = shared
        .compiled
        .plan(job.shape.as_deref(), job.circuit.as_ref());
    let cached = method.compiled().cloned();
    let circuit = Arc::clone(&job.circuit);
    let synthesis = move || circuit.synthesize(partition, &method, defer_products);
    let outcome = shared.synthesize(job.priority, synthesis).await;
    let synth_ms = ms(start.elapsed());
    let mut end = detail();
    end.push(kv(key::SYNTH_MS, synth_ms));
    shared.clock.emit(Event::SynthEnd, &job.id, end);

    let synthesis = outcome
        .map_err(|message| JobError::Panicked {
            partition,
            stage: "synthesis",
            message,
        })?
        .map_err(|e| failed(shared, job, partition, cached.as_ref(), e))?;
    if let (Some(recording), Some(compiled)) = (recording, synthesis.recorded) {
        recording.finish(compiled);
    }
    Ok(Some(Ready {
        job: Arc::clone(job),
        partition,
        failed_on,
        synthesized: synthesis.synthesized,
        reservation,
        synth_ms,
        synthesis: synthesis.path,
        queued: Instant::now(),
        coming,
    }))
}

/// The job's error for a failed synthesis. A partition that does not fit the compiled R1CS of
/// its shape broke the shape contract (or the recording came from one that did). It fails with
/// the key named rather than fall back to direct synthesis: a fallback would hide a broken
/// contract that, with equal counts, cannot be seen here at all. The entry is dropped, so that a
/// bad recording cannot fail every later job of the key.
fn failed(
    shared: &Shared,
    job: &JobInfo,
    partition: usize,
    cached: Option<&Arc<CompiledR1cs>>,
    error: CompiledError,
) -> JobError {
    let reason = match (&error, cached, &job.shape) {
        (CompiledError::ShapeMismatch { .. }, Some(compiled), Some(key)) => {
            shared.compiled.forget(key, compiled);
            format!("circuit shape {key:?}: {error}")
        }
        _ => error.to_string(),
    };
    JobError::Synthesis { partition, reason }
}
