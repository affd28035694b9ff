//! `cuzk bench-kernels`: times the GPU kernels on this machine's first device and prints one table.
//!
//! Each figure is the median of `--runs` calls after one warm-up.
//! - MSM: bases and scalars on the device, CUDA events around the call (which allocates its work
//!   buffers and downloads the result); and, as "streamed", wall clock of the call with the bases
//!   streamed from page-locked host memory (scalars on the device). Over a witness's scalars
//!   (`--scalars witness`), also each way of summing them forced, resident and streamed:
//!   Pippenger, split (`pippenger_ms` and `split_ms` in JSON: [resident, streamed]).
//! - NTT: data on the device, CUDA events around the transform; and, as "h2d2h", wall clock of
//!   upload + transform + download through page-locked host memory.
//!
//! The share of the arithmetic ceiling counts Fp (MSM) or Fr (NTT) products: a mixed addition is
//! 10 Fp products in G1 and 28 in G2 (8 Fp2 products of 3, 2 squarings of 2), one per point and window; an NTT is
//! one product by a fixed factor (a twiddle, in Shoup's form) per butterfly. The ceilings are the
//! product rates measured first, on this device, with a dependent chain of products per thread at
//! full occupancy (`cuzk_gpu::rate`).

use std::time::Instant;

use anyhow::{Context, Result};
use cuzk_gpu::msm::{
    msm_device_with, msm_streamed_with, multiple_window_bits, shared_bucket_sets, windows,
    DeviceBases, MsmAffine, ZeroOneScalars,
};
use cuzk_gpu::ntt::{ntt, NttOrder, NttTables, Transform};
use cuzk_gpu::rate::{product_rate, ProductField};
use cuzk_gpu::{DeviceScalars, HostLocked, Lane, Pinned};
use cuzk_math::{G1Projective, G2Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use rand::rngs::OsRng;
use rayon::prelude::*;
use serde_json::json;

use crate::args::{BenchKernelsArgs, GlobalArgs, ScalarShape};
use crate::Outcome;

fn median_ms(mut runs: Vec<f64>) -> f64 {
    runs.sort_by(f64::total_cmp);
    runs[runs.len() / 2]
}

/// What every row of the table shares: the device, the runs per figure, the ceilings, the rows.
struct Table<'a> {
    gpu: &'a Lane,
    runs: usize,
    json: bool,
    /// Products by a fixed factor: the NTT's ceiling.
    fr_fixed_rate: f64,
    fp_rate: f64,
    /// Also time MSMs over bases with window multiples.
    window_multiples: Option<Multiples>,
    scalars: ScalarShape,
    rows: Vec<serde_json::Value>,
}

/// Window multiples' width and shared bucket sets, where given (else chosen by size).
#[derive(Clone, Copy)]
struct Multiples {
    bits: Option<u32>,
    sets: Option<u32>,
}

/// Medians in ms of one size's MSMs: resident, streamed, and over a witness's scalars each way of
/// summing them forced.
struct MsmTimes {
    resident: f64,
    streamed: f64,
    /// `--scalars witness` only.
    zero_one: Option<ZeroOneTimes>,
}

/// [resident, streamed] medians in ms with each way of summing 0/1 scalars forced.
#[derive(Clone, Copy)]
struct ZeroOneTimes {
    pippenger: [f64; 2],
    split: [f64; 2],
}

fn time_msm<A: MsmAffine>(
    gpu: &Lane,
    bases: &DeviceBases<A>,
    host: &[A],
    log: u32,
    table: &Table,
) -> Result<MsmTimes> {
    let runs = table.runs;
    let scalars = DeviceScalars::upload(gpu, &table.scalars(1 << log))?;
    let ways = |zero_one| -> Result<[f64; 2]> {
        Ok([
            time_resident(gpu, bases, &scalars, runs, zero_one)?,
            time_streamed(gpu, host, &scalars, runs, zero_one)?,
        ])
    };
    let [resident, streamed] = ways(ZeroOneScalars::Split)?;
    let zero_one = match table.scalars {
        ScalarShape::Witness => Some(ZeroOneTimes {
            pippenger: ways(ZeroOneScalars::Pippenger)?,
            split: [resident, streamed],
        }),
        ScalarShape::Random => None,
    };
    Ok(MsmTimes {
        resident,
        streamed,
        zero_one,
    })
}

/// Median wall-clock ms of MSMs over `host` points streamed from page-locked memory (scalars on
/// the device), after a warm-up.
fn time_streamed<A: MsmAffine>(
    gpu: &Lane,
    host: &[A],
    scalars: &DeviceScalars,
    runs: usize,
    zero_one: ZeroOneScalars,
) -> Result<f64> {
    median_of(runs, || {
        let start = Instant::now();
        msm_streamed_with(gpu, host, scalars, zero_one)?;
        Ok(start.elapsed().as_secs_f64() * 1e3)
    })
}

/// Median ms of resident MSMs over `bases` (CUDA events), after a warm-up.
fn time_resident<A: MsmAffine>(
    gpu: &Lane,
    bases: &DeviceBases<A>,
    scalars: &DeviceScalars,
    runs: usize,
    zero_one: ZeroOneScalars,
) -> Result<f64> {
    median_of(runs, || {
        let (_, ms) = gpu.time(|| msm_device_with(gpu, bases, scalars, zero_one))?;
        Ok(f64::from(ms))
    })
}

/// The median of `runs` of `timed` (ms), after one more as a warm-up.
fn median_of(runs: usize, mut timed: impl FnMut() -> Result<f64>) -> Result<f64> {
    timed().context("warm-up")?;
    let times = (0..runs).map(|_| timed()).collect::<Result<Vec<_>>>()?;
    Ok(median_ms(times))
}

fn bench_group<P>(
    table: &mut Table,
    group: &str,
    products_per_add: f64,
    logs: std::ops::RangeInclusive<u32>,
) -> Result<()>
where
    P: Group + Curve + Send + Sync,
    P::AffineRepr: MsmAffine + Send + Copy,
{
    let Some(max) = logs.clone().max() else {
        return Ok(());
    };
    let (gpu, runs) = (table.gpu, table.runs);
    let host = cuzk_testkit::distinct_points::<P>(&mut OsRng, 1 << max);
    let bases = DeviceBases::upload(gpu, &host)?;
    // Streamed as proofs stream parameters: from the host vector, locked in place.
    let _locked = HostLocked::new(gpu, &host)?;
    let multiples = match table.window_multiples {
        Some(Multiples { bits, sets }) => {
            let bits = bits.unwrap_or_else(|| multiple_window_bits(1 << max));
            let start = Instant::now();
            let bases =
                DeviceBases::upload_with_window_multiples(gpu, &host, bits)?.with_bucket_sets(sets);
            gpu.synchronize()?;
            if !table.json {
                outln!(
                    "{group} {bits}-bit window multiples of 2^{max} bases made in {:.2} s",
                    start.elapsed().as_secs_f64()
                );
            }
            Some(bases)
        }
        None => None,
    };
    for log in logs {
        let MsmTimes {
            resident: ms,
            streamed: streamed_ms,
            zero_one,
        } = time_msm(gpu, &bases, &host, log, table)?;
        // An addition per point and window: random scalars only.
        let products = f64::from(1u32 << log) * f64::from(windows(1 << log)) * products_per_add;
        let ceiling =
            (table.scalars == ScalarShape::Random).then(|| products / table.fp_rate * 1e3 / ms);
        if !table.json {
            let share = ceiling.map_or(String::new(), |c| {
                format!("  ({:.0}% of the Fp product ceiling)", 100.0 * c)
            });
            let ways = zero_one.map_or(String::new(), |ZeroOneTimes { pippenger, split }| {
                format!(
                    "  (resident / streamed: Pippenger {:.2} / {:.2} ms, split {:.2} / {:.2} ms)",
                    pippenger[0], pippenger[1], split[0], split[1]
                )
            });
            outln!(
                "msm {group:<3} 2^{log:<3} {ms:>10.2} ms {streamed_ms:>10.2} ms streamed{share}{ways}"
            );
        }
        table.rows.push(
            json!({"kernel": format!("msm_{group}"), "log_n": log, "median_ms": ms,
            "streamed_ms": streamed_ms, "ceiling_fraction": ceiling,
            "pippenger_ms": zero_one.map(|t| t.pippenger),
            "split_ms": zero_one.map(|t| t.split)}),
        );
        let Some(bases) = &multiples else { continue };
        let Some(sets) = shared_bucket_sets(gpu, bases, 1 << log)? else {
            if !table.json {
                outln!("msm {group:<3} 2^{log:<3} (window multiples: no room for one pass)");
            }
            continue;
        };
        let scalars = DeviceScalars::upload(gpu, &table.scalars(1 << log))?;
        let ms = time_resident(gpu, bases, &scalars, runs, ZeroOneScalars::Split)?;
        if !table.json {
            outln!(
                "msm {group:<3} 2^{log:<3} {ms:>10.2} ms (window multiples, {sets} bucket sets)"
            );
        }
        table
            .rows
            .push(json!({"kernel": format!("msm_{group}_window_multiples"),
            "log_n": log, "median_ms": ms, "bucket_sets": sets}));
    }
    Ok(())
}

impl Table<'_> {
    /// n scalars of the bench's shape.
    fn scalars(&self, n: usize) -> Vec<Scalar> {
        match self.scalars {
            ScalarShape::Random => random_scalars(n),
            ScalarShape::Witness => (0..n)
                .into_par_iter()
                .map(|i| match i % (1 << 20) {
                    0 => Scalar::random(OsRng),
                    _ => Scalar::from(u64::from(rand::random::<bool>())),
                })
                .collect(),
        }
    }
}

fn random_scalars(n: usize) -> Vec<Scalar> {
    (0..n)
        .into_par_iter()
        .map(|_| Scalar::random(OsRng))
        .collect()
}

/// Forward NTT (natural → bit-reversed, the order Groth16's H chain uses), on device and round trip.
fn bench_ntt(table: &mut Table, logs: std::ops::RangeInclusive<u32>) -> Result<()> {
    let (gpu, runs) = (table.gpu, table.runs);
    let transform = Transform::ntt(NttOrder::NaturalToBitReversed);
    for log in logs {
        let tables = NttTables::new(gpu, log)?;
        let host = Pinned::from_slice(gpu, &random_scalars(1 << log))?;
        let mut back = Pinned::from_slice(gpu, &vec![Scalar::ZERO; 1 << log])?;
        let mut data = DeviceScalars::upload_pinned(gpu, &host)?;
        let mut on_device = Vec::with_capacity(runs);
        let mut round_trip = Vec::with_capacity(runs);
        for run in 0..=runs {
            let ((), ms) = gpu.time(|| ntt(gpu, &tables, &mut data, transform))?;
            let start = Instant::now();
            let mut staged = DeviceScalars::upload_pinned(gpu, &host)?;
            ntt(gpu, &tables, &mut staged, transform)?;
            staged.download_pinned(gpu, &mut back)?;
            back.as_slice()?;
            let wall = start.elapsed().as_secs_f64() * 1e3;
            if run > 0 {
                on_device.push(f64::from(ms));
                round_trip.push(wall);
            }
        }
        let (device_ms, h2d2h_ms) = (median_ms(on_device), median_ms(round_trip));
        let gib = (32u64 << log) as f64 / f64::from(1u32 << 30);
        let products = f64::from(log) * f64::from(1u32 << log) / 2.0;
        let ceiling = products / table.fr_fixed_rate * 1e3 / device_ms;
        // Each way over the link: the data size over half the round trip beyond the transform.
        let link_gb_s = 2.0 * (32u64 << log) as f64 / 1e9 / ((h2d2h_ms - device_ms) / 1e3);
        // Where the device lacks the room for direct tables, the top pass's twiddles are products.
        let top = if tables.two_level_top() {
            ", two-level top twiddles"
        } else {
            ""
        };
        if !table.json {
            outln!(
                "ntt fr  2^{log:<3} {device_ms:>10.3} ms on device {h2d2h_ms:>10.2} ms h2d2h  ({gib:.3} GiB, {:.0}% of the fixed-factor product ceiling, {link_gb_s:.1} GB/s copies{top})",
                100.0 * ceiling
            );
        }
        table.rows.push(
            json!({"kernel": "ntt_fr", "log_n": log, "median_ms": device_ms,
            "h2d2h_ms": h2d2h_ms, "ceiling_fraction": ceiling, "copy_gb_per_s": link_gb_s,
            "two_level_top_twiddles": tables.two_level_top()}),
        );
    }
    Ok(())
}

pub fn run(global: &GlobalArgs, args: BenchKernelsArgs) -> Result<Outcome> {
    let gpu = crate::backend::first_gpu(global).context("bench-kernels needs a GPU")?;
    if !global.json {
        outln!(
            "device: {} ({} SMs), {} runs per size",
            gpu.name(),
            gpu.multiprocessors(),
            args.runs
        );
    }
    let fr_rate = product_rate(&gpu, ProductField::Fr)?;
    let fr_fixed_rate = product_rate(&gpu, ProductField::FrFixedFactor)?;
    let fp_rate = product_rate(&gpu, ProductField::Fp)?;
    if !global.json {
        outln!(
            "field products: Fr {:.1} G/s ({:.1} G/s by a fixed factor), Fp {:.1} G/s (the ceilings below)",
            fr_rate / 1e9,
            fr_fixed_rate / 1e9,
            fp_rate / 1e9
        );
    }
    let mut table = Table {
        gpu: &gpu,
        runs: args.runs.max(1),
        json: global.json,
        fr_fixed_rate,
        fp_rate,
        window_multiples: args.window_multiples.then_some(Multiples {
            bits: args.multiple_window_bits,
            sets: args.multiple_sets,
        }),
        scalars: args.scalars,
        rows: Vec::new(),
    };
    bench_group::<G1Projective>(&mut table, "g1", 10.0, args.g1_min..=args.g1_max)?;
    bench_group::<G2Projective>(&mut table, "g2", 28.0, args.g2_min..=args.g2_max)?;
    bench_ntt(&mut table, args.ntt_min..=args.ntt_max)?;
    if global.json {
        outln!(
            "{}",
            json!({ "device": gpu.name(), "fr_products_per_s": fr_rate,
                "fr_fixed_factor_products_per_s": fr_fixed_rate,
                "fp_products_per_s": fp_rate, "results": table.rows })
        );
    }
    Ok(Outcome::Success)
}
