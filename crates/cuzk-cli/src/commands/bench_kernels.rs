//! `cuzk bench-kernels`: times the GPU kernels on this machine's first device and prints one table.
//!
//! Each figure is the median of `--runs` calls after one warm-up.
//! - MSM: bases and scalars on the device; CUDA events around the call (which allocates its work
//!   buffers and downloads the one result point).
//! - NTT: data on the device, CUDA events around the transform; and, as "h2d2h", wall clock of
//!   upload + transform + download from pageable host memory.

use std::time::Instant;

use anyhow::{Context, Result};
use cuzk_gpu::msm::{msm_device, DeviceBases, MsmAffine};
use cuzk_gpu::ntt::{ntt, NttOrder, NttTables, Transform};
use cuzk_gpu::{DeviceScalars, Gpu};
use cuzk_math::{G1Projective, G2Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use rand::rngs::OsRng;
use rayon::prelude::*;
use serde_json::json;

use crate::args::{BenchKernelsArgs, GlobalArgs};
use crate::Outcome;

fn median_ms(mut runs: Vec<f64>) -> f64 {
    runs.sort_by(f64::total_cmp);
    runs[runs.len() / 2]
}

fn time_msm<A: MsmAffine>(gpu: &Gpu, bases: &DeviceBases<A>, log: u32, runs: usize) -> Result<f64> {
    let scalars = DeviceScalars::upload(gpu, &random_scalars(1 << log))?;
    msm_device(gpu, bases, &scalars).context("warm-up")?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let (_, ms) = gpu.time(|| msm_device(gpu, bases, &scalars))?;
        times.push(f64::from(ms));
    }
    Ok(median_ms(times))
}

fn bench_group<P>(
    gpu: &Gpu,
    group: &str,
    logs: std::ops::RangeInclusive<u32>,
    runs: usize,
    rows: &mut Vec<serde_json::Value>,
    json: bool,
) -> Result<()>
where
    P: Group + Curve + Send + Sync,
    P::AffineRepr: MsmAffine + Send + Copy,
{
    let Some(max) = logs.clone().max() else {
        return Ok(());
    };
    let host = cuzk_testkit::distinct_points::<P>(&mut OsRng, 1 << max);
    let bases = DeviceBases::upload(gpu, &host)?;
    for log in logs {
        let ms = time_msm(gpu, &bases, log, runs)?;
        if !json {
            println!("msm {group:<3} 2^{log:<3} {ms:>10.2} ms");
        }
        rows.push(json!({"kernel": format!("msm_{group}"), "log_n": log, "median_ms": ms}));
    }
    Ok(())
}

fn random_scalars(n: usize) -> Vec<Scalar> {
    (0..n)
        .into_par_iter()
        .map(|_| Scalar::random(OsRng))
        .collect()
}

/// Forward NTT (natural → bit-reversed, the order Groth16's H chain uses), on device and round trip.
fn bench_ntt(
    gpu: &Gpu,
    logs: std::ops::RangeInclusive<u32>,
    runs: usize,
    rows: &mut Vec<serde_json::Value>,
    json: bool,
) -> Result<()> {
    let transform = Transform::ntt(NttOrder::NaturalToBitReversed);
    for log in logs {
        let tables = NttTables::new(gpu, log)?;
        let mut host = random_scalars(1 << log);
        let mut data = DeviceScalars::upload(gpu, &host)?;
        let mut on_device = Vec::with_capacity(runs);
        let mut round_trip = Vec::with_capacity(runs);
        for run in 0..=runs {
            let ((), ms) = gpu.time(|| ntt(gpu, &tables, &mut data, transform))?;
            let start = Instant::now();
            let mut staged = DeviceScalars::upload(gpu, &host)?;
            ntt(gpu, &tables, &mut staged, transform)?;
            staged.download(gpu, &mut host)?;
            let wall = start.elapsed().as_secs_f64() * 1e3;
            if run > 0 {
                on_device.push(f64::from(ms));
                round_trip.push(wall);
            }
        }
        let (device_ms, h2d2h_ms) = (median_ms(on_device), median_ms(round_trip));
        // Bytes read and written once per radix pass would be the memory floor; report data size.
        let gib = (32u64 << log) as f64 / f64::from(1u32 << 30);
        if !json {
            println!(
                "ntt fr  2^{log:<3} {device_ms:>10.3} ms on device {h2d2h_ms:>10.2} ms h2d2h  ({gib:.3} GiB)"
            );
        }
        rows.push(
            json!({"kernel": "ntt_fr", "log_n": log, "median_ms": device_ms, "h2d2h_ms": h2d2h_ms}),
        );
    }
    Ok(())
}

pub fn run(global: &GlobalArgs, args: BenchKernelsArgs) -> Result<Outcome> {
    let gpu = Gpu::first().context("bench-kernels needs a GPU")?;
    if !global.json {
        println!(
            "device: {} ({} SMs), {} runs per size",
            gpu.name(),
            gpu.multiprocessors(),
            args.runs
        );
    }
    let mut rows = Vec::new();
    let runs = args.runs.max(1);
    bench_group::<G1Projective>(
        &gpu,
        "g1",
        args.g1_min..=args.g1_max,
        runs,
        &mut rows,
        global.json,
    )?;
    bench_group::<G2Projective>(
        &gpu,
        "g2",
        args.g2_min..=args.g2_max,
        runs,
        &mut rows,
        global.json,
    )?;
    bench_ntt(
        &gpu,
        args.ntt_min..=args.ntt_max,
        runs,
        &mut rows,
        global.json,
    )?;
    if global.json {
        println!("{}", json!({ "device": gpu.name(), "results": rows }));
    }
    Ok(Outcome::Success)
}
