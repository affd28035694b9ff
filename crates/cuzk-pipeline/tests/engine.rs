//! The engine with the CPU backend on tiny circuits: ordering, back-pressure, cancellation,
//! duplicate ids, failures and panics, the dual-worker interlock with a recording backend,
//! compiled synthesis of circuits with a shape key, priorities, progress and per-job timings.
//! Every proof that comes back is checked again here against the inputs its partition should have.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use cuzk_groth16::backend::{CpuBackend, Faults, FaultyBackend};
use cuzk_groth16::setup::generate_random_parameters;
use cuzk_groth16::{
    verify_proof, DeviceLock, Parameters, PreparedVerifyingKey, ProveError, ProverBackend,
    StageMetric, Started,
};
use cuzk_math::Scalar;
use cuzk_pipeline::engine::nice::current_nice;
use cuzk_pipeline::engine::{JobResult, PartitionMemory, PartitionedCircuit};
use cuzk_pipeline::sink::MemorySink;
use cuzk_pipeline::timeline::{Event, EventName, Record, Timeline};
use cuzk_pipeline::{
    DeviceActivity, Engine, EngineConfig, JobError, JobHandle, JobProgress, JobRequest, Partition,
    Priority, FAULTS_IN_A_ROW, SYNTHESIS_NICE,
};
use cuzk_synth::circuits::SyntheticCircuit;
use cuzk_synth::{CompiledR1cs, ProvingAssignment};
use ff::Field;

const ROUNDS: usize = 48;
const MIB: u64 = 1 << 20;

/// x squared `ROUNDS` times; the public input is the result. The shape does not depend on x, so
/// one set of parameters serves every (job, partition), and each has its own input.
#[derive(Clone)]
struct Squares {
    x: Scalar,
    fault: Fault,
}

#[derive(Clone, Copy, PartialEq)]
enum Fault {
    None,
    Error,
    Panic,
}

impl Circuit<Scalar> for Squares {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        match self.fault {
            Fault::Error => return Err(SynthesisError::Unsatisfiable),
            Fault::Panic => panic!("synthesis exploded on purpose"),
            Fault::None => {}
        }
        let mut value = self.x;
        let mut var = cs.alloc(|| "x", || Ok(value))?;
        for i in 0..ROUNDS {
            let next = value.square();
            let next_var = cs.alloc(|| format!("x^2^{i}"), || Ok(next))?;
            cs.enforce(
                || format!("square {i}"),
                |lc| lc + var,
                |lc| lc + var,
                |lc| lc + next_var,
            );
            (value, var) = (next, next_var);
        }
        let y = cs.alloc_input(|| "y", || Ok(value))?;
        cs.enforce(|| "y", |lc| lc + var, |lc| lc + CS::one(), |lc| lc + y);
        Ok(())
    }
}

/// The witness of (job, partition): distinct for every pair, so a mixed-up proof fails.
fn x(job: u64, k: usize) -> Scalar {
    Scalar::from(job * 1000 + k as u64 + 2)
}

fn expected_input(job: u64, k: usize) -> Scalar {
    (0..ROUNDS).fold(x(job, k), |v, _| v.square())
}

fn partition(job: u64, k: usize, fault: Fault) -> Partition<Squares> {
    Partition {
        circuit: Squares {
            x: x(job, k),
            fault,
        },
        public_inputs: vec![expected_input(job, k)],
    }
}

fn params() -> Arc<Parameters> {
    let mut rng = cuzk_testkit::rng("engine params");
    let circuit = Squares {
        x: Scalar::ONE,
        fault: Fault::None,
    };
    Arc::new(generate_random_parameters(circuit, &mut rng).unwrap())
}

/// A job whose partitions are all fine.
fn job(id: &str, job: u64, partitions: usize, params: &Arc<Parameters>) -> JobRequest {
    JobRequest::new(id, Arc::clone(params), partitions, move |k| {
        partition(job, k, Fault::None)
    })
}

fn config(partition_workers: usize, synthesis_concurrency: usize, gpu: usize) -> EngineConfig {
    EngineConfig {
        partition_workers,
        synthesis_concurrency,
        gpu_workers_per_device: gpu,
        memory_budget: 64 * MIB,
        compiled_synthesis: true,
        synthesis_nice: SYNTHESIS_NICE,
        group_by_circuit: false,
    }
}

fn start(config: EngineConfig, backend: Arc<dyn ProverBackend>) -> (Engine, Arc<MemorySink>) {
    let sink = Arc::new(MemorySink::default());
    let engine = Engine::start(config, vec![backend], sink.clone()).unwrap();
    (engine, sink)
}

/// Checks a finished job: one proof per partition, in order, each valid for its own input.
fn check_proofs(result: &JobResult, job: u64, partitions: usize, params: &Parameters) {
    let output = result.as_ref().unwrap_or_else(|e| panic!("job {job}: {e}"));
    let pvk = PreparedVerifyingKey::new(&params.vk);
    assert_eq!(output.proofs.len(), partitions);
    for (k, proof) in output.proofs.iter().enumerate() {
        let input = [expected_input(job, k)];
        assert_eq!(output.public_inputs[k], input);
        assert!(
            verify_proof(&pvk, proof, &input).unwrap(),
            "job {job} partition {k}"
        );
    }
}

fn events(timeline: &Timeline, event: Event) -> Vec<&Record> {
    timeline
        .records
        .iter()
        .filter(|r| r.event == event)
        .collect()
}

fn job_and_partition(record: &Record) -> (String, u32) {
    (record.job_id.clone(), record.partition().unwrap())
}

/// Partitions of failed jobs may still be finishing when the other jobs are done: give them a
/// moment, then nothing may be left in flight.
async fn assert_drained(engine: &Engine) {
    for _ in 0..200 {
        if engine.memory().in_use() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(engine.memory().in_use(), 0);
    assert_eq!(engine.jobs_in_flight(), 0);
}

async fn wait_all(handles: Vec<JobHandle>) -> Vec<JobResult> {
    let mut results = Vec::new();
    for handle in handles {
        results.push(handle.wait().await);
    }
    results
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oldest_job_first_and_proofs_in_partition_order() {
    let params = params();
    let (engine, sink) = start(config(1, 1, 1), Arc::new(CpuBackend));
    let handles = (0..3)
        .map(|j| engine.submit(job(&format!("job{j}"), j, 3, &params)))
        .collect();
    let results = wait_all(handles).await;
    for (j, result) in results.iter().enumerate() {
        check_proofs(result, j as u64, 3, &params);
    }
    let timeline = sink.timeline();
    let order: Vec<_> = (0..3)
        .flat_map(|j| (0..3).map(move |k| (format!("job{j}"), k)))
        .collect();
    for event in [
        Event::SynthStart,
        Event::GpuQueue,
        Event::GpuPickup,
        Event::GpuStart,
    ] {
        let seen: Vec<_> = events(&timeline, event)
            .into_iter()
            .map(job_and_partition)
            .collect();
        assert_eq!(seen, order, "{event}");
    }
    assert_eq!(events(&timeline, Event::JobDone).len(), 3);
    assert_eq!(events(&timeline, Event::PartitionStats).len(), 9);
    assert_drained(&engine).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_memory_budget_holds_back_synthesis() {
    let params = params();
    // Room for two partitions, four synthesis workers that would like to run at once.
    let config = EngineConfig {
        memory_budget: 2 * MIB,
        ..config(4, 3, 2)
    };
    let (engine, sink) = start(config, Arc::new(CpuBackend));
    let memory = PartitionMemory { abc: 0, rest: MIB };
    let handles = (0..3)
        .map(|j| engine.submit(job(&format!("job{j}"), j, 4, &params).with_memory(memory)))
        .collect();
    for (j, result) in wait_all(handles).await.iter().enumerate() {
        check_proofs(result, j as u64, 4, &params);
    }
    // Partitions alive (from synthesis start to finalization) counted over the log.
    let (mut alive, mut most) = (0i32, 0i32);
    for record in &sink.timeline().records {
        match record.event {
            EventName::Known(Event::SynthStart) => alive += 1,
            EventName::Known(Event::FinalizeEnd) => alive -= 1,
            _ => {}
        }
        most = most.max(alive);
    }
    assert_eq!(
        most, 2,
        "at most (and, with 4 workers, exactly) two in flight"
    );
    assert_eq!(engine.memory().peak(), 2 * MIB);
    assert_drained(&engine).await;
}

/// Sums on the CPU (the assignment used up), then holds the device a while, saying in it that the
/// partition is staged when `stages` (the GPU backend says so from a thread of its own once the
/// vectors are freed, while its region runs): a synthesis the signal lets start then starts
/// inside the region, whatever the thread timings.
struct StagesThenKernels {
    stages: bool,
}

impl ProverBackend for StagesThenKernels {
    fn name(&self) -> &str {
        "stages-then-kernels"
    }

    fn prove_start(
        &self,
        params: &Parameters,
        assignment: ProvingAssignment,
        device: &dyn DeviceLock,
    ) -> Result<Started, ProveError> {
        let sums = CpuBackend.query_sums(params, assignment)?;
        let _device = device.acquire();
        if self.stages {
            device.staged();
        }
        std::thread::sleep(Duration::from_millis(250));
        Ok(Started {
            sums,
            stages: Vec::new(),
        })
    }
}

/// Syntheses started while another partition's device region was in progress.
fn syntheses_during_regions(timeline: &Timeline) -> usize {
    let regions: Vec<(f64, f64)> = events(timeline, Event::GpuStart)
        .iter()
        .zip(events(timeline, Event::GpuEnd))
        .map(|(start, end)| (start.ms, end.ms))
        .collect();
    events(timeline, Event::SynthStart)
        .iter()
        .filter(|s| regions.iter().any(|&(from, to)| from < s.ms && s.ms < to))
        .count()
}

/// With room for one partition, a backend that says its vectors are staged lets the next
/// synthesis start beside its device region; one that does not holds it back until the region
/// ends. The budget is never exceeded either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_staged_partition_gives_its_memory_back_before_its_region() {
    let params = params();
    for stages in [true, false] {
        let config = EngineConfig {
            memory_budget: MIB,
            ..config(2, 2, 1)
        };
        let (engine, sink) = start(config, Arc::new(StagesThenKernels { stages }));
        let memory = PartitionMemory {
            abc: MIB / 2,
            rest: MIB / 2,
        };
        let handle = engine.submit(job("job", 0, 4, &params).with_memory(memory));
        check_proofs(&handle.wait().await, 0, 4, &params);
        let overlapped = syntheses_during_regions(&sink.timeline());
        match stages {
            true => assert!(overlapped >= 2, "{overlapped} syntheses beside a region"),
            false => assert_eq!(overlapped, 0, "the reservation was held through the region"),
        }
        assert_eq!(engine.memory().peak(), MIB);
        assert_drained(&engine).await;
    }
}

/// Blocks a synthesis until opened, and says when one is blocked.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    opened: Condvar,
    entered: tokio::sync::Notify,
}

impl Gate {
    fn pass(&self) {
        self.entered.notify_one();
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.opened.wait(open).unwrap();
        }
    }

    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_jobs_end_at_once_and_others_go_on() {
    let params = params();
    let (engine, sink) = start(config(1, 2, 2), Arc::new(CpuBackend));
    let gate = Arc::new(Gate::default());
    let held = Arc::clone(&gate);
    let blocked = engine.submit(JobRequest::new(
        "blocked",
        Arc::clone(&params),
        3,
        move |k| {
            held.pass();
            partition(0, k, Fault::None)
        },
    ));
    let queued = engine.submit(job("queued", 1, 2, &params));
    let fine = engine.submit(job("fine", 2, 2, &params));
    gate.entered.notified().await;
    // "blocked" is mid-synthesis, "queued" has not started.
    assert!(engine.cancel("queued"));
    assert!(engine.cancel("blocked"));
    assert!(!engine.cancel("blocked"), "already ended");
    assert!(!engine.cancel("never submitted"));
    assert_eq!(blocked.wait().await, Err(JobError::Cancelled));
    assert_eq!(queued.wait().await, Err(JobError::Cancelled));
    gate.open();
    check_proofs(&fine.wait().await, 2, 2, &params);
    let timeline = sink.timeline();
    assert!(events(&timeline, Event::SynthStart)
        .iter()
        .all(|r| r.job_id != "queued"));
    assert!(events(&timeline, Event::GpuPickup)
        .iter()
        .all(|r| r.job_id == "fine"));
    assert_drained(&engine).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_request_id_twice_is_one_job() {
    let params = params();
    let (engine, sink) = start(config(2, 2, 2), Arc::new(CpuBackend));
    let first = engine.submit(job("twice", 0, 3, &params));
    let second = engine.submit(job("twice", 0, 3, &params));
    let other = engine.submit(job("other", 1, 2, &params));
    let (first, second) = (first.wait().await, second.wait().await);
    check_proofs(&first, 0, 3, &params);
    assert_eq!(first, second, "both submitters get the very same proofs");
    check_proofs(&other.wait().await, 1, 2, &params);
    let timeline = sink.timeline();
    let syntheses = events(&timeline, Event::SynthStart);
    assert_eq!(syntheses.iter().filter(|r| r.job_id == "twice").count(), 3);
    assert_eq!(events(&timeline, Event::JobDone).len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_partition_fails_only_its_job() {
    let params = params();
    let mut rng = cuzk_testkit::rng("other circuit's params");
    let other_params = Arc::new(
        generate_random_parameters(
            SyntheticCircuit {
                constraints: 30,
                boolean_fraction: 0.5,
                public_inputs: 1,
                seed: 1,
            },
            &mut rng,
        )
        .unwrap(),
    );
    let (engine, _sink) = start(
        EngineConfig {
            memory_budget: 8 * MIB,
            ..config(2, 3, 2)
        },
        Arc::new(CpuBackend),
    );
    let faulty = |id: &str, j: u64, bad: usize, fault: Fault| {
        JobRequest::new(id, Arc::clone(&params), 3, move |k| {
            partition(j, k, if k == bad { fault } else { Fault::None })
        })
    };
    let handles = vec![
        engine.submit(job("ok-before", 0, 3, &params)),
        engine.submit(faulty("error", 1, 1, Fault::Error)),
        engine.submit(faulty("panic", 2, 2, Fault::Panic)),
        engine.submit(JobRequest::new(
            "wrong-input",
            Arc::clone(&params),
            2,
            |k| Partition {
                public_inputs: vec![Scalar::ZERO],
                ..partition(3, k, Fault::None)
            },
        )),
        engine.submit(JobRequest::new("wrong-params", other_params, 2, |k| {
            partition(4, k, Fault::None)
        })),
        engine.submit(job("too-big", 5, 2, &params).with_memory(PartitionMemory {
            abc: 8 * MIB,
            rest: 1,
        })),
        engine.submit(job("no-partitions", 6, 0, &params)),
        engine.submit(job("ok-after", 7, 3, &params)),
    ];
    let results = wait_all(handles).await;
    check_proofs(&results[0], 0, 3, &params);
    assert_eq!(
        results[1],
        Err(JobError::Synthesis {
            partition: 1,
            reason: SynthesisError::Unsatisfiable.to_string()
        })
    );
    assert_eq!(
        results[2],
        Err(JobError::Panicked {
            partition: 2,
            stage: "synthesis",
            message: "synthesis exploded on purpose".into()
        })
    );
    assert!(
        matches!(&results[3], Err(JobError::Verify { reason, .. }) if reason.contains("does not verify")),
        "{:?}",
        results[3]
    );
    assert!(
        matches!(&results[4], Err(JobError::Prove { reason, .. }) if reason.contains("parameters do not fit")),
        "{:?}",
        results[4]
    );
    assert!(
        matches!(&results[5], Err(JobError::OverBudget { partition: 0, .. })),
        "{:?}",
        results[5]
    );
    assert_eq!(results[6], Err(JobError::NoPartitions));
    check_proofs(&results[7], 7, 3, &params);
    assert_drained(&engine).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_engine_ends_its_jobs() {
    let params = params();
    let (engine, _sink) = start(config(1, 1, 1), Arc::new(CpuBackend));
    let gate = Arc::new(Gate::default());
    let held = Arc::clone(&gate);
    let handle = engine.submit(JobRequest::new("stuck", params, 1, move |k| {
        held.pass();
        partition(0, k, Fault::None)
    }));
    gate.entered.notified().await;
    drop(engine);
    assert_eq!(handle.wait().await, Err(JobError::ShutDown));
    gate.open();
}

/// Proves with the CPU, outside the lock, then pretends to run kernels inside it, logging when
/// each part of each call ran.
#[derive(Default)]
struct Recording {
    calls: AtomicUsize,
    /// (call, inside the lock, start, end)
    parts: Mutex<Vec<(usize, bool, Instant, Instant)>>,
}

impl Recording {
    fn part(&self, call: usize, locked: bool, length: Duration) {
        let start = Instant::now();
        std::thread::sleep(length);
        self.parts
            .lock()
            .unwrap()
            .push((call, locked, start, Instant::now()));
    }
}

impl ProverBackend for Recording {
    fn name(&self) -> &str {
        "recording"
    }

    fn prove_start(
        &self,
        params: &Parameters,
        assignment: ProvingAssignment,
        device: &dyn DeviceLock,
    ) -> Result<Started, ProveError> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        let sums = CpuBackend.query_sums(params, assignment)?;
        self.part(call, false, Duration::from_millis(20));
        {
            let _device = device.acquire();
            self.part(call, true, Duration::from_millis(40));
        }
        self.part(call, false, Duration::from_millis(20));
        Ok(Started {
            sums,
            stages: vec![StageMetric {
                key: "fake_kernels_ms",
                value: 40.0,
            }],
        })
    }
}

fn overlap(a: (Instant, Instant), b: (Instant, Instant)) -> Duration {
    a.1.min(b.1).saturating_duration_since(a.0.max(b.0))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_share_the_device_only_inside_the_lock() {
    let params = params();
    let backend = Arc::new(Recording::default());
    let (engine, sink) = start(config(2, 2, 2), backend.clone());
    let handles = (0..2)
        .map(|j| engine.submit(job(&format!("job{j}"), j, 3, &params)))
        .collect();
    for (j, result) in wait_all(handles).await.iter().enumerate() {
        check_proofs(result, j as u64, 3, &params);
    }
    let parts = backend.parts.lock().unwrap().clone();
    let locked: Vec<_> = parts.iter().filter(|p| p.1).collect();
    assert_eq!(locked.len(), 6);
    for a in &locked {
        for b in &locked {
            if a.0 != b.0 {
                assert_eq!(overlap((a.2, a.3), (b.2, b.3)), Duration::ZERO);
            }
        }
    }
    let host_during_kernels = parts.iter().filter(|host| !host.1).any(|host| {
        locked.iter().any(|dev| {
            dev.0 != host.0 && overlap((host.2, host.3), (dev.2, dev.3)) > Duration::from_millis(5)
        })
    });
    assert!(
        host_during_kernels,
        "one worker's host work overlaps the other's device region"
    );

    // The TIMELINE's GPU intervals are the locked regions: they never overlap either.
    let timeline = sink.timeline();
    let mut intervals = cuzk_pipeline::analysis::gpu_intervals(&timeline);
    intervals.sort_by(|a, b| a.start_ms.total_cmp(&b.start_ms));
    assert_eq!(intervals.len(), 6);
    for pair in intervals.windows(2) {
        assert!(pair[0].end_ms <= pair[1].start_ms, "{pair:?}");
    }
    let workers: std::collections::BTreeSet<_> =
        intervals.iter().filter_map(|i| i.worker).collect();
    assert_eq!(workers.len(), 2, "both workers proved");
    let stats = events(&timeline, Event::PartitionStats);
    assert!(stats.iter().all(|r| r.get("fake_kernels_ms") == Some("40")));
    assert!(stats.iter().all(|r| r.get("prove_start_ms").is_some()));
}

/// Panics inside its device region for job 9's partition 0.
struct PanicsOnJob9;

impl ProverBackend for PanicsOnJob9 {
    fn name(&self) -> &str {
        "panics"
    }

    fn prove_start(
        &self,
        params: &Parameters,
        assignment: ProvingAssignment,
        device: &dyn DeviceLock,
    ) -> Result<Started, ProveError> {
        Started::holding(device, || {
            if assignment.input_assignment[1] == expected_input(9, 0) {
                panic!("kernel exploded on purpose");
            }
            CpuBackend.query_sums(params, assignment)
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_inside_the_device_region_fails_only_its_job() {
    let params = params();
    let (engine, _sink) = start(config(2, 3, 2), Arc::new(PanicsOnJob9));
    let handles = vec![
        engine.submit(job("before", 0, 2, &params)),
        engine.submit(job("boom", 9, 2, &params)),
        engine.submit(job("after", 1, 3, &params)),
    ];
    let results = wait_all(handles).await;
    check_proofs(&results[0], 0, 2, &params);
    assert_eq!(
        results[1],
        Err(JobError::Panicked {
            partition: 0,
            stage: "prove_start",
            message: "kernel exploded on purpose".into()
        })
    );
    // The device lock was held by the panicking call; the next job still gets the device.
    check_proofs(&results[2], 1, 3, &params);
    assert_drained(&engine).await;
}

/// With a backend per device, one job's partitions are spread over the devices, and two devices'
/// regions may run at once (each device has its own lock); the TIMELINE says which device ran what.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_spread_over_devices() {
    let params = params();
    let devices = [
        Arc::new(Recording::default()),
        Arc::new(Recording::default()),
    ];
    let sink = Arc::new(MemorySink::default());
    let backends: Vec<Arc<dyn ProverBackend>> = devices
        .iter()
        .map(|d| Arc::clone(d) as Arc<dyn ProverBackend>)
        .collect();
    let engine = Engine::start(config(4, 1, 1), backends, sink.clone()).unwrap();
    let result = engine.submit(job("spread", 0, 6, &params)).wait().await;
    check_proofs(&result, 0, 6, &params);
    let locked = |d: &Recording| -> Vec<(Instant, Instant)> {
        let parts = d.parts.lock().unwrap();
        parts.iter().filter(|p| p.1).map(|p| (p.2, p.3)).collect()
    };
    let (first, second) = (locked(&devices[0]), locked(&devices[1]));
    assert_eq!(first.len() + second.len(), 6);
    assert!(
        !first.is_empty() && !second.is_empty(),
        "both devices proved: {} and {}",
        first.len(),
        second.len()
    );
    let concurrent = first
        .iter()
        .any(|a| second.iter().any(|b| overlap(*a, *b) > Duration::ZERO));
    assert!(
        concurrent,
        "the two devices' regions overlapped at least once"
    );

    let timeline = sink.timeline();
    for event in [Event::GpuPickup, Event::GpuStart, Event::GpuEnd] {
        let on = |device: &str| {
            let records = events(&timeline, event);
            records
                .iter()
                .filter(|r| r.get("device") == Some(device))
                .count()
        };
        assert_eq!((on("0"), on("1")), (first.len(), second.len()), "{event}");
    }
    let gpu = cuzk_pipeline::analysis::summarize(&timeline, 0);
    let (intervals, per_device) = (
        &gpu.intervals,
        cuzk_pipeline::analysis::per_device(&gpu, &timeline),
    );
    let partitions: Vec<_> = per_device
        .iter()
        .map(|d| (d.device, d.partitions))
        .collect();
    assert_eq!(partitions, [(0, first.len()), (1, second.len())]);
    // One worker per device, numbered across devices: worker 0 on device 0, worker 1 on device 1.
    assert!(intervals
        .iter()
        .all(|i| i.worker.is_some() && i.worker == i.device));
}

/// A CPU backend whose proofs `faults` names fail as a device fault would.
fn faulty(faults: Faults) -> Arc<dyn ProverBackend> {
    Arc::new(FaultyBackend::new(Arc::new(CpuBackend), faults))
}

fn start_on(
    config: EngineConfig,
    devices: Vec<Arc<dyn ProverBackend>>,
) -> (Engine, Arc<MemorySink>) {
    let sink = Arc::new(MemorySink::default());
    let engine = Engine::start(config, devices, sink.clone()).unwrap();
    (engine, sink)
}

/// The device of the last pickup of each (job, partition) a DEVICE_FAULT names.
fn retried_on(timeline: &Timeline) -> Vec<String> {
    let pickups = events(timeline, Event::GpuPickup);
    let faults = events(timeline, Event::DeviceFault);
    faults
        .iter()
        .map(|fault| {
            let last = pickups
                .iter()
                .rev()
                .find(|p| job_and_partition(p) == job_and_partition(fault))
                .unwrap();
            last.get("device").unwrap().to_owned()
        })
        .collect()
}

/// A device that dies after its first proof: its next partitions fail on it, go back to
/// synthesis and are proven on the other device; after `FAULTS_IN_A_ROW` it is out of service,
/// its worker stops, and every job still comes back whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_that_dies_loses_no_job() {
    let params = params();
    let devices = vec![Arc::new(CpuBackend) as _, faulty(Faults::From(1))];
    let (engine, sink) = start_on(config(3, 2, 1), devices);
    let handles = (0..6)
        .map(|j| engine.submit(job(&format!("job{j}"), j, 3, &params)))
        .collect();
    for (j, result) in wait_all(handles).await.iter().enumerate() {
        check_proofs(result, j as u64, 3, &params);
    }
    let [healthy, dead] = <[DeviceActivity; 2]>::try_from(engine.devices()).unwrap();
    assert_eq!((dead.partitions, dead.faults), (1, FAULTS_IN_A_ROW as u64));
    let dead_fault = dead.last_fault.clone().unwrap();
    let reason = dead.out_of_service.unwrap();
    assert!(
        reason.contains("3 faults in a row") && reason.contains("injected"),
        "{reason}"
    );
    assert_eq!((healthy.partitions, healthy.faults), (17, 0));
    assert_eq!(healthy.out_of_service, None);

    let timeline = sink.timeline();
    let faults = events(&timeline, Event::DeviceFault);
    assert_eq!(faults.len(), FAULTS_IN_A_ROW);
    assert!(faults.iter().all(|f| f.get("fault") == Some("injected")));
    assert!(dead_fault.contains("injected fault"), "{dead_fault}");
    assert!(faults
        .iter()
        .all(|f| f.get("device") == Some("1") && f.get("retry") == Some("1")));
    assert!(retried_on(&timeline).iter().all(|d| d == "0"));
    let out = events(&timeline, Event::DeviceOut);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].get("device"), Some("1"));
    assert_eq!(events(&timeline, Event::PartitionStats).len(), 18);
    assert_drained(&engine).await;
}

/// One fault is retried on the other device and the faulty device stays in service.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transient_fault_is_retried_elsewhere() {
    let params = params();
    let devices = vec![faulty(Faults::Only(0)), Arc::new(CpuBackend) as _];
    let (engine, sink) = start_on(config(2, 1, 1), devices);
    let result = engine.submit(job("once", 0, 4, &params)).wait().await;
    check_proofs(&result, 0, 4, &params);
    let first = &engine.devices()[0];
    assert_eq!((first.faults, &first.out_of_service), (1, &None));
    let timeline = sink.timeline();
    assert_eq!(retried_on(&timeline), ["1"]);
    assert!(events(&timeline, Event::DeviceOut).is_empty());
    assert_drained(&engine).await;
}

/// On a lone device that fails every proof, a partition is retried there once, then its job
/// fails with both faults named; the device stays in service (the last one does), so that a
/// later job that fits may still be proven.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_device_in_service_stays() {
    let params = params();
    let (engine, sink) = start_on(config(1, 1, 1), vec![faulty(Faults::From(0))]);
    for (j, id) in ["first", "second"].into_iter().enumerate() {
        let result = engine.submit(job(id, j as u64, 1, &params)).wait().await;
        let Err(JobError::Prove {
            partition: 0,
            reason,
        }) = result
        else {
            panic!("{result:?}");
        };
        assert!(
            reason.contains("(on device 0, after one on device 0)"),
            "{reason}"
        );
    }
    let device = &engine.devices()[0];
    assert_eq!((device.faults, &device.out_of_service), (4, &None));
    let timeline = sink.timeline();
    let retries: Vec<_> = events(&timeline, Event::DeviceFault)
        .iter()
        .map(|f| f.get("retry").unwrap().to_owned())
        .collect();
    assert_eq!(retries, ["1", "0", "1", "0"]);
    assert!(events(&timeline, Event::DeviceOut).is_empty());
    assert_drained(&engine).await;
}

/// Two devices that both die: the first to fail three times goes out, the other stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_two_dead_devices_one_stays() {
    let params = params();
    let devices = vec![faulty(Faults::From(0)), faulty(Faults::From(0))];
    let (engine, _sink) = start_on(config(2, 2, 2), devices);
    let handles = (0..4)
        .map(|j| engine.submit(job(&format!("job{j}"), j, 2, &params)))
        .collect();
    for result in wait_all(handles).await {
        assert!(matches!(result, Err(JobError::Prove { .. })), "{result:?}");
    }
    let out: Vec<bool> = engine
        .devices()
        .iter()
        .map(|d| d.out_of_service.is_some())
        .collect();
    assert_eq!(out.iter().filter(|o| **o).count(), 1, "{out:?}");
    assert_drained(&engine).await;
}

/// The shape key of [`Squares`] in the tests below.
const SQUARES: &str = "squares";

/// Keeps every assignment it is given (a/b/c, witness, densities), then proves with the CPU.
#[derive(Default)]
struct Keeps {
    seen: Mutex<Vec<ProvingAssignment>>,
}

impl Keeps {
    /// What it was given, ordered by the public input (which tells (job, partition) apart).
    fn seen(&self) -> Vec<ProvingAssignment> {
        let mut seen = self.seen.lock().unwrap().clone();
        seen.sort_by_key(|a| a.input_assignment[1].to_bytes_le());
        seen
    }
}

impl ProverBackend for Keeps {
    fn name(&self) -> &str {
        "keeps"
    }

    fn prove_start(
        &self,
        params: &Parameters,
        assignment: ProvingAssignment,
        device: &dyn DeviceLock,
    ) -> Result<Started, ProveError> {
        Started::holding(device, || {
            self.seen.lock().unwrap().push(assignment.clone());
            CpuBackend.query_sums(params, assignment)
        })
    }
}

/// The nice value of the thread that synthesized a partition, and those of the rayon pool's.
type NicesSeen = Arc<Mutex<Vec<(i32, Vec<i32>)>>>;

/// `Squares`, noting the nice values its synthesis runs at.
#[derive(Clone)]
struct NiceProbe {
    squares: Squares,
    seen: NicesSeen,
}

impl Circuit<Scalar> for NiceProbe {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let pool = rayon::broadcast(|_| current_nice().unwrap());
        self.seen
            .lock()
            .unwrap()
            .push((current_nice().unwrap(), pool));
        self.squares.synthesize(cs)
    }
}

/// Notes the nice value of the thread that runs each `prove_start`, then proves with the CPU.
#[derive(Default)]
struct NiceAtProve {
    seen: Mutex<Vec<i32>>,
}

impl ProverBackend for NiceAtProve {
    fn name(&self) -> &str {
        "nice at prove"
    }

    fn prove_start(
        &self,
        params: &Parameters,
        assignment: ProvingAssignment,
        device: &dyn DeviceLock,
    ) -> Result<Started, ProveError> {
        Started::holding(device, || {
            self.seen.lock().unwrap().push(current_nice().unwrap());
            CpuBackend.query_sums(params, assignment)
        })
    }
}

/// Synthesis runs `synthesis_nice` below the process (its own thread and the rayon pool's), the
/// backend's `prove_start` at the process's priority; with 0, synthesis keeps it too.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn synthesis_runs_below_the_threads_that_drive_the_device() {
    let params = params();
    let base = current_nice().unwrap();
    let lowered = (base + 10).min(19);
    for nice in [10, 0] {
        let backend = Arc::new(NiceAtProve::default());
        let (engine, _sink) = start(
            EngineConfig {
                synthesis_nice: nice,
                ..config(2, 2, 2)
            },
            backend.clone(),
        );
        let seen = Arc::new(Mutex::new(Vec::new()));
        let probes = Arc::clone(&seen);
        let request = JobRequest::new("nice", Arc::clone(&params), 3, move |k| {
            let Partition {
                circuit,
                public_inputs,
            } = partition(0, k, Fault::None);
            Partition {
                circuit: NiceProbe {
                    squares: circuit,
                    seen: Arc::clone(&probes),
                },
                public_inputs,
            }
        });
        check_proofs(&engine.submit(request).wait().await, 0, 3, &params);
        let synthesis_at = if nice == 0 { base } else { lowered };
        for (thread, pool) in seen.lock().unwrap().iter() {
            assert_eq!(
                *thread, synthesis_at,
                "synthesis thread, synthesis_nice {nice}"
            );
            // Lowered once per process, by the first engine (this test's or another's).
            assert!(pool.iter().all(|&n| n == lowered), "rayon pool: {pool:?}");
        }
        assert_eq!(
            *backend.seen.lock().unwrap(),
            vec![base; 3],
            "synthesis_nice {nice}"
        );
    }
}

/// How each partition was synthesized, by (job, partition), from PARTITION_STATS.
fn synthesis_paths(timeline: &Timeline) -> Vec<((String, u32), String)> {
    let mut paths: Vec<_> = events(timeline, Event::PartitionStats)
        .into_iter()
        .map(|r| (job_and_partition(r), r.get("synthesis").unwrap().to_owned()))
        .collect();
    paths.sort();
    paths
}

/// Checks how each partition was synthesized against `(job, partition, path)`, in any order.
fn assert_paths(sink: &MemorySink, expected: &[(&str, u32, &str)]) {
    let mut expected: Vec<_> = expected
        .iter()
        .map(|&(job, k, path)| ((job.to_owned(), k), path.to_owned()))
        .collect();
    expected.sort();
    assert_eq!(synthesis_paths(&sink.timeline()), expected);
}

/// Two keyed jobs, one after the other, with compiled synthesis on or off: the backend sees the
/// very same a/b/c and witness either way, and the log says which way each partition went.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_circuit_is_recorded_once_then_compiled_with_identical_results() {
    let params = params();
    let mut seen = Vec::new();
    for compiled_synthesis in [true, false] {
        let backend = Arc::new(Keeps::default());
        let (engine, sink) = start(
            EngineConfig {
                compiled_synthesis,
                ..config(1, 1, 1)
            },
            backend.clone(),
        );
        for j in 0..2 {
            let request = job(&format!("job{j}"), j, 3, &params).with_shape(SQUARES);
            check_proofs(&engine.submit(request).wait().await, j, 3, &params);
        }
        let expected: Vec<_> = if compiled_synthesis {
            vec![
                ("job0", 0, "recorded"),
                ("job0", 1, "compiled"),
                ("job0", 2, "compiled"),
                ("job1", 0, "compiled"),
                ("job1", 1, "compiled"),
                ("job1", 2, "compiled"),
            ]
        } else {
            ["job0", "job1"]
                .into_iter()
                .flat_map(|j| (0..3).map(move |k| (j, k, "direct")))
                .collect()
        };
        assert_paths(&sink, &expected);
        seen.push(backend.seen());
    }
    assert_eq!(seen[0].len(), 6);
    assert!(seen[0] == seen[1], "compiled and direct synthesis differ");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_workers_record_a_shape_once() {
    let params = params();
    let (engine, sink) = start(config(4, 2, 2), Arc::new(CpuBackend));
    let handles = (0..3)
        .map(|j| engine.submit(job(&format!("job{j}"), j, 4, &params).with_shape(SQUARES)))
        .collect();
    for (j, result) in wait_all(handles).await.iter().enumerate() {
        check_proofs(result, j as u64, 4, &params);
    }
    let paths = synthesis_paths(&sink.timeline());
    let recorded = paths.iter().filter(|(_, p)| p == "recorded").count();
    assert_eq!(recorded, 1, "{paths:?}");
    assert_drained(&engine).await;
}

/// Breaks its shape key: a circuit with other counts of variables and constraints.
fn liar(_: usize) -> Partition<SyntheticCircuit> {
    Partition {
        circuit: SyntheticCircuit {
            constraints: 10,
            boolean_fraction: 0.5,
            public_inputs: 1,
            seed: 1,
        },
        public_inputs: vec![Scalar::ONE],
    }
}

/// The job that breaks the contract fails, naming the key; the recording it did not fit is
/// dropped, so the next job of the key records afresh and proves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_breaks_its_shape_fails_and_the_engine_goes_on() {
    let params = params();
    let (engine, sink) = start(config(1, 1, 1), Arc::new(CpuBackend));
    let first = engine.submit(job("first", 0, 2, &params).with_shape(SQUARES));
    check_proofs(&first.wait().await, 0, 2, &params);
    let lying = JobRequest::new("liar", Arc::clone(&params), 2, liar).with_shape(SQUARES);
    let result = engine.submit(lying).wait().await;
    assert!(
        matches!(&result, Err(JobError::Synthesis { partition: 0, reason })
            if reason.starts_with("circuit shape \"squares\": ")
                && reason.contains("not the circuit it was compiled from")),
        "{result:?}"
    );
    let after = engine.submit(job("after", 1, 2, &params).with_shape(SQUARES));
    check_proofs(&after.wait().await, 1, 2, &params);
    assert_paths(
        &sink,
        &[
            ("first", 0, "recorded"),
            ("first", 1, "compiled"),
            ("after", 0, "recorded"),
            ("after", 1, "compiled"),
        ],
    );
    assert_drained(&engine).await;
}

/// A job with its own compiled R1CS (and a key): its own serves every partition, the engine
/// records nothing for it.
struct OwnCompiled {
    compiled: Arc<CompiledR1cs>,
}

impl PartitionedCircuit for OwnCompiled {
    type Circuit = Squares;

    fn partition(&self, k: usize) -> Partition<Squares> {
        partition(0, k, Fault::None)
    }

    fn compiled(&self) -> Option<&Arc<CompiledR1cs>> {
        Some(&self.compiled)
    }

    fn shape(&self) -> Option<String> {
        Some(SQUARES.to_owned())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_with_its_own_compiled_r1cs_uses_it() {
    let params = params();
    let (engine, sink) = start(config(1, 1, 1), Arc::new(CpuBackend));
    let own = OwnCompiled {
        compiled: Arc::new(CompiledR1cs::record(partition(0, 0, Fault::None).circuit).unwrap()),
    };
    let result = engine
        .submit(JobRequest::new("own", Arc::clone(&params), 2, own))
        .wait()
        .await;
    check_proofs(&result, 0, 2, &params);
    // The engine recorded nothing: the next keyed job records the shape itself.
    check_proofs(
        &engine
            .submit(job("keyed", 1, 1, &params).with_shape(SQUARES))
            .wait()
            .await,
        1,
        1,
        &params,
    );
    assert_paths(
        &sink,
        &[
            ("own", 0, "compiled"),
            ("own", 1, "compiled"),
            ("keyed", 0, "recorded"),
        ],
    );
}

/// Sums a `k=v` field of a job's records of one event.
fn total(timeline: &Timeline, event: Event, job: &str, key: &str) -> f64 {
    events(timeline, event)
        .iter()
        .filter(|r| r.job_id == job)
        .map(|r| r.get(key).unwrap().parse::<f64>().unwrap())
        .sum()
}

/// Every partition is in exactly one stage.
fn assert_adds_up(progress: &JobProgress) {
    let stages = progress.waiting
        + progress.synthesizing
        + progress.queued_for_gpu
        + progress.on_gpu
        + progress.finalizing
        + progress.proven;
    assert_eq!(stages, progress.partitions, "{progress:?}");
}

/// Polls until `ready` holds for the job's progress (which must stay in flight meanwhile).
async fn until(engine: &Engine, id: &str, ready: impl Fn(&JobProgress) -> bool) -> JobProgress {
    for _ in 0..1000 {
        let progress = engine.progress(id).unwrap();
        assert_adds_up(&progress);
        if ready(&progress) {
            return progress;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("{id} never got there: {:?}", engine.progress(id));
}

/// With one synthesis worker and one GPU worker, a Critical job submitted after three Normal ones
/// is synthesized and proven at the next partition boundary, past the synthesis concurrency
/// limit, and finishes first; the Normal jobs keep their order. Each job's timings are the
/// TIMELINE's figures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_critical_job_overtakes_the_normal_jobs_queued_ahead_of_it() {
    let params = params();
    let (engine, sink) = start(config(1, 1, 1), Arc::new(CpuBackend));
    let gate = Arc::new(Gate::default());
    let held = Arc::clone(&gate);
    let mut handles =
        vec![
            engine.submit(JobRequest::new("job0", Arc::clone(&params), 3, move |k| {
                if k == 0 {
                    held.pass();
                }
                partition(0, k, Fault::None)
            })),
        ];
    // job0's first partition holds the one worker and the one synthesis slot.
    gate.entered.notified().await;
    handles.extend((1..3).map(|j| engine.submit(job(&format!("job{j}"), j, 3, &params))));
    let critical = job("critical", 3, 3, &params).with_priority(Priority::Critical);
    assert_eq!(critical.priority(), Priority::Critical);
    handles.push(engine.submit(critical));
    tokio::time::sleep(Duration::from_millis(50)).await;
    gate.open();
    let results = wait_all(handles).await;
    for (j, result) in results.iter().enumerate() {
        check_proofs(result, j as u64, 3, &params);
    }

    let timeline = sink.timeline();
    let done: Vec<_> = events(&timeline, Event::JobDone)
        .iter()
        .map(|r| r.job_id.clone())
        .collect();
    assert_eq!(done[0], "critical", "{done:?}");
    let normal: Vec<_> = done.iter().filter(|id| *id != "critical").collect();
    assert_eq!(normal, ["job0", "job1", "job2"]);
    let at = |id: &str, k: u32| (id.to_owned(), k);
    let mut order = vec![at("job0", 0)];
    order.extend((0..3).map(|k| at("critical", k)));
    order.extend((1..3).map(|k| at("job0", k)));
    order.extend(
        ["job1", "job2"]
            .iter()
            .flat_map(|j| (0..3).map(|k| at(j, k))),
    );
    let seen = |event| -> Vec<_> {
        let records = events(&timeline, event);
        records.into_iter().map(job_and_partition).collect()
    };
    assert_eq!(seen(Event::SynthStart), order);
    // job0's first partition was queued first, but Critical ones queued before the GPU worker
    // came back for it go ahead of it.
    let mut picked = seen(Event::GpuPickup);
    let first = picked.iter().position(|p| *p == at("job0", 0)).unwrap();
    assert!(first <= 3, "{picked:?}");
    picked.remove(first);
    assert_eq!(picked, order[1..]);

    for (j, result) in results.iter().enumerate() {
        let output = result.as_ref().unwrap();
        let timings = output.timings;
        let id = output.id.as_str();
        let close = |a: f64, b: f64| (a - b).abs() < 0.01;
        let synth_ms = total(&timeline, Event::SynthEnd, id, "synth_ms");
        assert!(close(timings.synthesis_ms, synth_ms), "{id}: {timings:?}");
        let gpu_ms = total(&timeline, Event::PartitionStats, id, "gpu_ms");
        assert!(close(timings.gpu_ms, gpu_ms), "{id}: {timings:?}");
        let finalize_ms = total(&timeline, Event::PartitionStats, id, "finalize_ms");
        assert!(close(timings.finalize_ms, finalize_ms), "{id}: {timings:?}");
        let around = total(&timeline, Event::PartitionStats, id, "queue_ms")
            + total(&timeline, Event::PartitionStats, id, "prove_start_ms")
            - gpu_ms;
        assert!(close(timings.gpu_wait_ms, around), "{id}: {timings:?}");
        assert!(timings.synthesis_ms > 0.0 && timings.gpu_ms > 0.0, "{id}");
        // job1 and job2 waited behind job0's gated partition at least.
        if j == 1 || j == 2 {
            assert!(timings.queue_wait_ms >= 50.0, "{id}: {timings:?}");
        }
    }
    assert_drained(&engine).await;
}

/// The public input of job 0's partition 0, the partition [`Stalls`] holds.
fn stalled_input() -> Scalar {
    expected_input(0, 0)
}

/// Proves with the CPU inside the device lock; the partition of job 0, partition 0 stays there
/// until its gate opens.
#[derive(Default)]
struct Stalls {
    gate: Gate,
    stalled: AtomicBool,
}

impl ProverBackend for Stalls {
    fn name(&self) -> &str {
        "stalls"
    }

    fn prove_start(
        &self,
        params: &Parameters,
        assignment: ProvingAssignment,
        device: &dyn DeviceLock,
    ) -> Result<Started, ProveError> {
        Started::holding(device, || {
            let first = assignment.input_assignment[1] == stalled_input();
            if first && !self.stalled.swap(true, Ordering::SeqCst) {
                self.gate.pass();
            }
            CpuBackend.query_sums(params, assignment)
        })
    }
}

/// Holds job 0's partition 0 in `prove_start` before it takes the device, until its gate opens:
/// its GPU worker is busy, the device free.
#[derive(Default)]
struct StallsBeforeDevice(Stalls);

impl ProverBackend for StallsBeforeDevice {
    fn name(&self) -> &str {
        "stalls-before-device"
    }

    fn prove_start(
        &self,
        params: &Parameters,
        assignment: ProvingAssignment,
        device: &dyn DeviceLock,
    ) -> Result<Started, ProveError> {
        let first = assignment.input_assignment[1] == stalled_input();
        if first && !self.0.stalled.swap(true, Ordering::SeqCst) {
            self.0.gate.pass();
        }
        let _device = device.acquire();
        Ok(Started {
            sums: CpuBackend.query_sums(params, assignment)?,
            stages: Vec::new(),
        })
    }
}

/// A CRITICAL job is proven on its device's own lane while the one GPU worker is held by a
/// partition it already picked; a NORMAL job waits for that worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_critical_job_has_a_gpu_lane_of_its_own() {
    let params = params();
    let backend = Arc::new(StallsBeforeDevice::default());
    let (engine, sink) = start(config(2, 3, 1), backend.clone());
    let held = engine.submit(job("held", 0, 1, &params));
    backend.0.gate.entered.notified().await;
    let normal = engine.submit(job("normal", 1, 1, &params));
    let critical = engine.submit(job("critical", 2, 1, &params).with_priority(Priority::Critical));
    check_proofs(&critical.wait().await, 2, 1, &params);
    let progress = engine.progress("normal").unwrap();
    assert_eq!(
        (progress.queued_for_gpu, progress.proven),
        (1, 0),
        "{progress:?}"
    );
    backend.0.gate.open();
    check_proofs(&held.wait().await, 0, 1, &params);
    check_proofs(&normal.wait().await, 1, 1, &params);
    // The lane is numbered after the regular worker.
    let timeline = sink.timeline();
    let worker = |id: &str| {
        let records = events(&timeline, Event::GpuPickup);
        let record = records.iter().find(|r| r.job_id == id).unwrap();
        record.get("worker").unwrap().to_owned()
    };
    assert_eq!(
        (worker("held"), worker("critical"), worker("normal")),
        ("0".into(), "1".into(), "0".into())
    );
    assert_drained(&engine).await;
}

/// While a partition is in `prove_start`, its device names its job and the job counts it on the
/// GPU; when it is done the device is idle again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_names_the_job_in_its_prove_start() {
    let params = params();
    let backend = Arc::new(Stalls::default());
    let (engine, _sink) = start(config(1, 1, 1), backend.clone());
    let idle = DeviceActivity {
        index: 0,
        backend: "stalls".into(),
        job: None,
        partitions: 0,
        faults: 0,
        last_fault: None,
        out_of_service: None,
    };
    assert_eq!(engine.devices(), std::slice::from_ref(&idle));
    let handle = engine.submit(job("on-gpu", 0, 2, &params));
    backend.gate.entered.notified().await;
    let busy = DeviceActivity {
        job: Some("on-gpu".into()),
        ..idle.clone()
    };
    assert_eq!(engine.devices(), [busy]);
    let idle = DeviceActivity {
        partitions: 2,
        ..idle
    };
    let progress = until(&engine, "on-gpu", |p| p.queued_for_gpu == 1).await;
    assert_eq!((progress.on_gpu, progress.waiting), (1, 0));
    assert!(progress.running());
    assert_eq!(engine.jobs(), [("on-gpu".to_owned(), progress)]);
    backend.gate.open();
    check_proofs(&handle.wait().await, 0, 2, &params);
    assert_eq!(engine.progress("on-gpu"), None);
    // The GPU worker leaves the device just after the job's last proof is filed.
    for _ in 0..200 {
        if engine.devices() == std::slice::from_ref(&idle) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(engine.devices(), [idle]);
}

/// Partitions queued for the GPU behind a busy device go to it most urgent first, whatever order
/// they were synthesized in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn urgent_partitions_go_first_in_the_gpu_queue() {
    let params = params();
    let backend = Arc::new(Stalls::default());
    let (engine, sink) = start(config(2, 3, 1), backend.clone());
    let first = engine.submit(job("first", 0, 1, &params));
    backend.gate.entered.notified().await;
    let low = engine.submit(job("low", 1, 2, &params).with_priority(Priority::Low));
    let normal = engine.submit(job("normal", 2, 2, &params));
    until(&engine, "low", |p| p.queued_for_gpu == 2).await;
    until(&engine, "normal", |p| p.queued_for_gpu == 2).await;
    let high = engine.submit(job("high", 3, 2, &params).with_priority(Priority::High));
    until(&engine, "high", |p| p.queued_for_gpu == 2).await;
    let jobs: Vec<_> = engine
        .jobs()
        .into_iter()
        .map(|(id, p)| (id, p.priority))
        .collect();
    assert_eq!(
        jobs,
        [
            ("first".to_owned(), Priority::Normal),
            ("low".to_owned(), Priority::Low),
            ("normal".to_owned(), Priority::Normal),
            ("high".to_owned(), Priority::High),
        ]
    );
    backend.gate.open();
    let results = wait_all(vec![first, low, normal, high]).await;
    for (j, result) in results.iter().enumerate() {
        let partitions = if j == 0 { 1 } else { 2 };
        check_proofs(result, j as u64, partitions, &params);
    }
    let picked: Vec<_> = events(&sink.timeline(), Event::GpuPickup)
        .into_iter()
        .map(job_and_partition)
        .collect();
    let at = |id: &str, k: u32| (id.to_owned(), k);
    let expected = [
        at("first", 0),
        at("high", 0),
        at("high", 1),
        at("normal", 0),
        at("normal", 1),
        at("low", 0),
        at("low", 1),
    ];
    assert_eq!(picked, expected);
    assert_drained(&engine).await;
}

/// A partition blocked in synthesis counts as synthesizing, and so does one that a worker took but
/// that waits for its memory; cancelling the job ends its progress and its waiters, and a job
/// starved of memory meanwhile goes on once the memory is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_counts_blocked_and_memory_starved_synthesis_until_cancel() {
    let params = params();
    let config = EngineConfig {
        memory_budget: 2 * MIB,
        ..config(3, 2, 1)
    };
    let (engine, _sink) = start(config, Arc::new(CpuBackend));
    let gate = Arc::new(Gate::default());
    let held = Arc::clone(&gate);
    // Each partition takes the whole budget: the second waits for the first's memory.
    let whole = PartitionMemory {
        abc: MIB,
        rest: MIB,
    };
    let blocked = engine.submit(
        JobRequest::new("blocked", Arc::clone(&params), 2, move |k| {
            held.pass();
            partition(0, k, Fault::None)
        })
        .with_memory(whole)
        .with_priority(Priority::High),
    );
    gate.entered.notified().await;
    let progress = until(&engine, "blocked", |p| p.synthesizing == 2).await;
    assert_eq!(
        progress,
        JobProgress {
            priority: Priority::High,
            partitions: 2,
            waiting: 0,
            synthesizing: 2,
            queued_for_gpu: 0,
            on_gpu: 0,
            finalizing: 0,
            proven: 0,
        }
    );
    assert!(progress.running());

    let starved = engine
        .submit(job("starved", 1, 2, &params).with_memory(PartitionMemory { abc: 0, rest: MIB }));
    // The third worker takes starved's first partition and waits for memory with it.
    let progress = until(&engine, "starved", |p| p.synthesizing == 1).await;
    assert_eq!((progress.waiting, progress.priority), (1, Priority::Normal));
    assert!(progress.running());
    let ids: Vec<_> = engine.jobs().into_iter().map(|(id, _)| id).collect();
    assert_eq!(ids, ["blocked", "starved"]);

    assert!(engine.cancel("blocked"));
    assert_eq!(engine.progress("blocked"), None);
    assert_eq!(blocked.wait().await, Err(JobError::Cancelled));
    assert_eq!(engine.jobs().len(), 1);
    // Its memory comes back when its blocked synthesis returns, discarded.
    gate.open();
    check_proofs(&starved.wait().await, 1, 2, &params);
    assert_eq!(engine.progress("starved"), None);
    assert!(engine.jobs().is_empty());
    assert_drained(&engine).await;
}
