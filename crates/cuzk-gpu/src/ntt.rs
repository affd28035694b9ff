//! Number-theoretic transforms over Fr on the device (see `cuda/ntt/ntt.cuh`), bit-for-bit those of
//! `cuzk_math::EvaluationDomain`: forward and inverse, on the subgroup or on its coset g·H, with the
//! order in and out chosen so that chains of transforms need no permutation pass.
//!
//! A transform of 2^L points is ⌈L/10⌉ in-place passes of up to 2^10-point sub-transforms in
//! shared memory. The forward order natural → bit-reversed is Gentleman–Sande, bit-reversed →
//! natural is Cooley–Tukey; so `intt(ntt(x))` in those two orders round-trips with no permutation.
//! The coset shift and 1/n ride on the first pass's loads or the last pass's stores.

use blstrs::Scalar;
use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaSlice, DeviceRepr, LaunchConfig, PushKernelArg};
use ff::{Field, PrimeField};

use crate::error::DriverContext;
use crate::layout::{as_words, shoup_factor_words, SCALAR_WORDS};
use crate::scalars::DeviceScalars;
use crate::{GpuError, Lane};

/// Largest supported transform: 2^28 points (8 GiB of scalars).
pub const MAX_LOG: u32 = 28;

/// Stages per pass at most; mirrors `NTT_MAX_PASS_BITS` (the stage table's size is 2^this).
const MAX_PASS_BITS: u32 = 10;
/// Elements per block at most, log2: 2^10 scalars are 32 KiB of shared memory, twice that with
/// the twiddle tile of a DIF top pass.
const BLOCK_LOG: u32 = 10;
/// Blocks per SM the kernel is compiled for; mirrors `NTT_MIN_BLOCKS`.
const MIN_BLOCKS: u32 = 3;
/// Shared memory of a block with its twiddle tile: two tiles of 2^BLOCK_LOG scalars.
const TWO_TILES: u32 = 2 << BLOCK_LOG << 5;
/// The top passes' direct tables are built when both take at most this share of the free memory.
const TOP_TABLES_SHARE: usize = 16;
/// Threads per block at most; mirrors `NTT_THREADS` (the kernel's launch bound).
const THREADS: u32 = 256;

/// Scaling modes of a pass's loads or stores; mirror `NTT_SCALE_*`.
const SCALE_NONE: u32 = 0;
const SCALE_CONST: u32 = 1;
const SCALE_POWERS: u32 = 2;

/// Evaluation (forward, root ω) or interpolation (inverse, root ω⁻¹, scaled by 1/n).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Forward,
    Inverse,
}

/// On the subgroup H itself, or on the coset g·H (g = `Scalar::MULTIPLICATIVE_GENERATOR`): the
/// forward transform first multiplies coefficient i by g^i, the inverse then by g^-i.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coset {
    None,
    Shifted,
}

/// Orders of the values before → after. Bit-reversed means position p holds the value of index
/// rev(p), the L-bit reversal of p.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NttOrder {
    NaturalToBitReversed,
    BitReversedToNatural,
    /// Natural → bit-reversed followed by a permutation pass.
    NaturalToNatural,
}

/// One transform, as `EvaluationDomain`'s ntt, intt, coset_ntt or coset_intt in a chosen order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transform {
    pub direction: Direction,
    pub coset: Coset,
    pub order: NttOrder,
}

impl Transform {
    pub const fn ntt(order: NttOrder) -> Self {
        Transform {
            direction: Direction::Forward,
            coset: Coset::None,
            order,
        }
    }

    pub const fn intt(order: NttOrder) -> Self {
        Transform {
            direction: Direction::Inverse,
            coset: Coset::None,
            order,
        }
    }

    pub const fn coset_ntt(order: NttOrder) -> Self {
        Transform {
            direction: Direction::Forward,
            coset: Coset::Shifted,
            order,
        }
    }

    pub const fn coset_intt(order: NttOrder) -> Self {
        Transform {
            direction: Direction::Inverse,
            coset: Coset::Shifted,
            order,
        }
    }
}

/// Launch parameters of one pass, mirrored by `ntt_pass_params` in `cuda/ntt/ntt.cuh`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct NttPassParams {
    log_n: u32,
    lo: u32,
    bits: u32,
    log_cols: u32,
    split: u32,
    dit: u32,
    pre_scale: u32,
    post_scale: u32,
}

// SAFETY: #[repr(C)] of eight u32 with no padding, passed by value, field for field as the
// kernel's `ntt_pass_params`.
unsafe impl DeviceRepr for NttPassParams {}
const _: () = assert!(std::mem::size_of::<NttPassParams>() == 32);

/// One pass: index bits [lo, lo + bits), 2^log_cols sub-transforms per block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pass {
    lo: u32,
    bits: u32,
    log_cols: u32,
}

impl Pass {
    /// Elements per block, log2.
    fn block_log(&self) -> u32 {
        self.log_cols + self.bits
    }

    /// The top pass above the bottom one: its twiddles are powers of ω_n itself.
    fn is_top(&self, log_n: u32) -> bool {
        self.lo > 0 && self.lo + self.bits == log_n
    }

    /// `twiddle_tile`: the block also holds its elements' twiddles, fetched as it starts (a DIF
    /// top pass with a direct table, see ntt.cuh).
    fn launch_config(&self, log_n: u32, twiddle_tile: bool) -> LaunchConfig {
        let size = 1u32 << self.block_log();
        let tiles = if twiddle_tile { 2 } else { 1 };
        LaunchConfig {
            grid_dim: (1 << (log_n - self.block_log()), 1, 1),
            block_dim: ((size / 2).min(THREADS), 1, 1),
            shared_mem_bytes: tiles * size * 4 * SCALAR_WORDS as u32,
        }
    }
}

/// The passes of a transform of 2^log_n points in Gentleman–Sande order (top bits first): ⌈L/10⌉
/// passes of near-equal radix. Blocks take as many sub-transforms as fit 2^BLOCK_LOG elements,
/// but, above the bottom pass, no more than the 2^lo that are consecutive in memory.
fn plan(log_n: u32) -> Vec<Pass> {
    if log_n == 0 {
        return Vec::new();
    }
    let count = log_n.div_ceil(MAX_PASS_BITS);
    let (base, extra) = (log_n / count, log_n % count);
    let mut top = log_n;
    (0..count)
        .map(|i| {
            let bits = base + u32::from(i < extra);
            let lo = top - bits;
            top = lo;
            let mut log_cols = (BLOCK_LOG - bits).min(log_n - bits);
            if lo > 0 {
                log_cols = log_cols.min(lo);
            }
            Pass { lo, bits, log_cols }
        })
        .collect()
}

/// The low tables hold 2^split entries, the high ones 2^(L − split).
fn split(log_n: u32) -> u32 {
    log_n.div_ceil(2)
}

/// The number of points as log2, or why it is not a supported size.
fn log_of_len(len: usize) -> Result<u32, GpuError> {
    let log = len.trailing_zeros();
    if !len.is_power_of_two() || log > MAX_LOG {
        return Err(GpuError::InvalidInput {
            what: "NTT size",
            reason: format!("{len} points; a transform takes a power of two up to 2^{MAX_LOG}"),
        });
    }
    Ok(log)
}

/// The primitive 2^log-th root of unity of `EvaluationDomain` (or its inverse): Scalar's 2^S-th
/// root squared S − log times.
fn root_of_unity(log: u32, inverse: bool) -> Scalar {
    let mut root = if inverse {
        Scalar::ROOT_OF_UNITY_INV
    } else {
        Scalar::ROOT_OF_UNITY
    };
    for _ in log..Scalar::S {
        root = root.square();
    }
    root
}

/// `[first·base^i for i < count]`.
fn powers(base: Scalar, first: Scalar, count: usize) -> Vec<Scalar> {
    std::iter::successors(Some(first), |x| Some(*x * base))
        .take(count)
        .collect()
}

fn upload_scalars(gpu: &Lane, values: &[Scalar]) -> Result<CudaSlice<u32>, GpuError> {
    gpu.upload(as_words(values), "cuMemcpyHtoD (NTT tables)")
}

/// Fixed factors for the Shoup product (`mont::mul_shoup`), one per value.
fn upload_factors(gpu: &Lane, values: &[Scalar]) -> Result<CudaSlice<u32>, GpuError> {
    let words: Vec<u32> = values.iter().flat_map(shoup_factor_words).collect();
    gpu.upload(&words, "cuMemcpyHtoD (NTT tables)")
}

/// first·base^e for e < 2^L as two tables: lo[j] = first·base^j (j < 2^split) and
/// hi[j] = base^(j·2^split), so that first·base^e = lo[e mod 2^split]·hi[e >> split].
#[derive(Debug)]
struct PowerTables {
    lo: CudaSlice<u32>,
    hi: CudaSlice<u32>,
}

impl PowerTables {
    fn new(gpu: &Lane, log_n: u32, base: Scalar, first: Scalar) -> Result<Self, GpuError> {
        let split = split(log_n);
        let mut step = base;
        for _ in 0..split {
            step = step.square();
        }
        Ok(PowerTables {
            lo: upload_scalars(gpu, &powers(base, first, 1 << split))?,
            hi: upload_scalars(gpu, &powers(step, Scalar::ONE, 1 << (log_n - split)))?,
        })
    }

    /// `[first·base^e for e < count]` (count ≤ 2^log_n), one product each on the device.
    fn expand(&self, gpu: &Lane, log_n: u32, count: u32) -> Result<CudaSlice<u32>, GpuError> {
        let mut out = gpu.zeros::<u32>(
            count as usize * SCALAR_WORDS,
            "cuMemAlloc (NTT direct table)",
        )?;
        let kernel = gpu.kernel("ntt_power_table")?;
        let config = LaunchConfig {
            grid_dim: (count.div_ceil(THREADS), 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let split = split(log_n);
        // SAFETY: `out` holds `count` scalars, one written per e < count; e < count ≤ 2^log_n
        // keeps the reads below 2^split entries of lo and 2^(log_n − split) of hi, as built.
        unsafe {
            gpu.stream()
                .launch_builder(&kernel)
                .arg(&mut out)
                .arg(&self.lo)
                .arg(&self.hi)
                .arg(&split)
                .arg(&count)
                .launch(config)
                .call("ntt_power_table")?;
        }
        Ok(out)
    }
}

/// The twiddles of one direction: the stage table `stages[2^t + m] = ω_{2^(t+1)}^m` shared by
/// every pass (as fixed factors for the Shoup product), the powers of ω_n for the twiddles after
/// the top pass, and direct tables that give a twiddle in one read instead of a product of two:
/// - for a pass strictly between the top and the bottom one (lo ≥ 1, lo + bits < L),
///   `direct[e] = ω_{n'}^e` as fixed factors, n' = 2^(lo+bits); only one pass of a plan has one
///   (plans have at most three passes): 2^18 entries (16 MiB) at 2^27;
/// - with `with_top`, for the top pass (lo ≥ 1, lo + bits = L), `top[e] = ω_n^e` for e < n/2, the
///   other half being its negation (ω_n^(n/2) = −1): n/2 entries, 2 GiB at 2^27.
#[derive(Debug)]
struct RootTables {
    stages: CudaSlice<u32>,
    powers: PowerTables,
    direct: Option<(u32, CudaSlice<u32>)>,
    top: Option<CudaSlice<u32>>,
}

impl RootTables {
    fn new(gpu: &Lane, log_n: u32, inverse: bool, with_top: bool) -> Result<Self, GpuError> {
        let top = powers(
            root_of_unity(MAX_PASS_BITS, inverse),
            Scalar::ONE,
            1 << (MAX_PASS_BITS - 1),
        );
        // ω_{2^(t+1)}^m = ω_{2^10}^(m·2^(9−t)); entry 0 is never read.
        let mut stages = vec![Scalar::ONE; 1 << MAX_PASS_BITS];
        for t in 0..MAX_PASS_BITS {
            for m in 0..1usize << t {
                stages[(1 << t) + m] = top[m << (MAX_PASS_BITS - 1 - t)];
            }
        }
        let direct = match direct_pass(log_n) {
            Some(pass) => {
                let log = pass.lo + pass.bits;
                let table = powers(root_of_unity(log, inverse), Scalar::ONE, 1 << log);
                Some((pass.lo, upload_factors(gpu, &table)?))
            }
            None => None,
        };
        let powers = PowerTables::new(gpu, log_n, root_of_unity(log_n, inverse), Scalar::ONE)?;
        let top_table = if with_top {
            Some(powers.expand(gpu, log_n, 1 << (log_n - 1))?)
        } else {
            None
        };
        Ok(RootTables {
            stages: upload_factors(gpu, &stages)?,
            powers,
            direct,
            top: top_table,
        })
    }

    /// The direct table of a pass, if it has one.
    fn direct_for(&self, log_n: u32, pass: &Pass) -> Option<&CudaSlice<u32>> {
        if pass.is_top(log_n) {
            return self.top.as_ref();
        }
        self.direct
            .as_ref()
            .filter(|(at, _)| *at == pass.lo)
            .map(|(_, table)| table)
    }
}

/// The pass of a plan whose twiddles come from a direct table: one strictly between the top
/// pass (whose n' = n would need a table as large as the data) and the bottom one (lo = 0: no
/// twiddles).
fn direct_pass(log_n: u32) -> Option<Pass> {
    plan(log_n)
        .into_iter()
        .find(|p| p.lo > 0 && p.lo + p.bits < log_n)
}

/// Everything the transforms of one size read besides the data, built once per domain size and
/// kept by the caller: as much memory as the data where the top passes' direct tables are built
/// (4 GiB at 2^27), else ~35 MiB at 2^27 and 2^28 and about 200 KiB up to 2^16.
#[derive(Debug)]
pub struct NttTables {
    log_n: u32,
    forward: RootTables,
    inverse: RootTables,
    /// g^i.
    coset: PowerTables,
    /// g^-i / n.
    coset_inverse: PowerTables,
    /// 1/n, one scalar.
    inverse_n: CudaSlice<u32>,
}

impl NttTables {
    /// The tables of transforms of 2^log_n points (log_n ≤ [`MAX_LOG`]).
    pub fn new(gpu: &Lane, log_n: u32) -> Result<Self, GpuError> {
        if log_n > MAX_LOG {
            return Err(GpuError::InvalidInput {
                what: "NTT size",
                reason: format!("2^{log_n} points; the largest transform is 2^{MAX_LOG}"),
            });
        }
        // Two direct tables of n/2 scalars (one per direction), where they fit the free memory
        // comfortably and the SM holds its blocks with their twiddle tiles (sm_90: 228 KiB).
        let top_bytes = (1usize << log_n) * SCALAR_WORDS * 4;
        let with_top = plan(log_n).len() >= 2
            && gpu.shared_per_multiprocessor() >= MIN_BLOCKS * TWO_TILES
            && top_bytes <= gpu.memory()?.0 / TOP_TABLES_SHARE;
        if with_top {
            // Past the default 48 KiB, once for the context: a block with its twiddle tile.
            gpu.kernel("ntt_pass")?
                .set_attribute(
                    CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    TWO_TILES as i32,
                )
                .call("cuFuncSetAttribute (ntt_pass)")?;
        }
        let generator = Scalar::MULTIPLICATIVE_GENERATOR;
        // The generator is not zero: the default is never taken.
        let generator_inv = generator.invert().unwrap_or(Scalar::ZERO);
        let inverse_n = Scalar::TWO_INV.pow_vartime([u64::from(log_n)]);
        Ok(NttTables {
            log_n,
            forward: RootTables::new(gpu, log_n, false, with_top)?,
            inverse: RootTables::new(gpu, log_n, true, with_top)?,
            coset: PowerTables::new(gpu, log_n, generator, Scalar::ONE)?,
            coset_inverse: PowerTables::new(gpu, log_n, generator_inv, inverse_n)?,
            inverse_n: upload_scalars(gpu, &[inverse_n])?,
        })
    }

    /// The tables for transforms of `len` points, a power of two up to 2^[`MAX_LOG`].
    pub fn for_len(gpu: &Lane, len: usize) -> Result<Self, GpuError> {
        Self::new(gpu, log_of_len(len)?)
    }

    pub fn log_n(&self) -> u32 {
        self.log_n
    }

    /// Whether the top pass of these transforms takes its twiddles as products of two table
    /// entries: it has some (two or more passes) but the device lacked the memory or the shared
    /// memory for the direct tables.
    pub fn two_level_top(&self) -> bool {
        plan(self.log_n).len() >= 2 && self.forward.top.is_none()
    }

    /// Points per transform.
    pub fn size(&self) -> usize {
        1 << self.log_n
    }
}

/// Transforms `data` in place; `data` must hold exactly the tables' size.
pub fn ntt(
    gpu: &Lane,
    tables: &NttTables,
    data: &mut DeviceScalars,
    transform: Transform,
) -> Result<(), GpuError> {
    let log_n = tables.log_n;
    if data.len != tables.size() {
        return Err(GpuError::InvalidInput {
            what: "NTT",
            reason: format!("{} scalars for tables of 2^{log_n} points", data.len),
        });
    }
    // One point: g^0 = 1/n = 1, every transform is the identity.
    if log_n == 0 {
        return Ok(());
    }
    let (roots, scale, pre_scale, post_scale) = match (transform.direction, transform.coset) {
        (Direction::Forward, Coset::None) => {
            (&tables.forward, &tables.coset, SCALE_NONE, SCALE_NONE)
        }
        (Direction::Forward, Coset::Shifted) => {
            (&tables.forward, &tables.coset, SCALE_POWERS, SCALE_NONE)
        }
        (Direction::Inverse, Coset::None) => (
            &tables.inverse,
            &tables.coset_inverse,
            SCALE_NONE,
            SCALE_CONST,
        ),
        (Direction::Inverse, Coset::Shifted) => (
            &tables.inverse,
            &tables.coset_inverse,
            SCALE_NONE,
            SCALE_POWERS,
        ),
    };
    // SCALE_CONST reads its factor from the low table's first entry.
    let scale_lo = if post_scale == SCALE_CONST {
        &tables.inverse_n
    } else {
        &scale.lo
    };
    let dit = transform.order == NttOrder::BitReversedToNatural;
    let mut passes = plan(log_n);
    if dit {
        passes.reverse();
    }
    let kernel = gpu.kernel("ntt_pass")?;
    let stream = gpu.stream();
    let last = passes.len() - 1;
    for (i, pass) in passes.iter().enumerate() {
        let params = NttPassParams {
            log_n,
            lo: pass.lo,
            bits: pass.bits,
            log_cols: pass.log_cols,
            split: split(log_n),
            dit: u32::from(dit),
            pre_scale: if i == 0 { pre_scale } else { SCALE_NONE },
            post_scale: if i == last { post_scale } else { SCALE_NONE },
        };
        // SAFETY: `data` holds n = 2^log_n scalars (checked above); the pass touches exactly the
        // indices below n: grid·2^block_log = n elements, one per (block, slot). `plan` keeps
        // 1 ≤ bits ≤ 10 (stage-table index < 2^10), block elements ≤ 2^10 (the shared memory
        // given: one tile, or two with the twiddle tile, which only tables with direct top
        // twiddles ask for, and NttTables::new raised the limit for them) and
        // cols ≤ 2^lo when lo ≥ 1. Twiddle exponents are < n and scale indices < n, so table
        // reads stay below 2^split (lo) and 2^(L − split) (hi) entries, as built for this log_n;
        // a direct table, given only to the pass it was built for, holds 2^(lo+bits) entries
        // (n/2 for the top pass, read at exponent mod n/2) and its exponents low·rev(mid) are
        // below that; SCALE_CONST reads one entry. The blocks touch disjoint elements, and
        // passes run in stream order.
        unsafe {
            let mut launch = stream.launch_builder(&kernel);
            launch
                .arg(&mut data.words)
                .arg(&roots.stages)
                .arg(&roots.powers.lo)
                .arg(&roots.powers.hi);
            let direct = roots.direct_for(log_n, pass);
            let config = pass.launch_config(log_n, direct.is_some() && !dit && pass.is_top(log_n));
            match direct {
                Some(direct) => launch.arg(direct),
                None => launch.arg(&crate::NULL),
            };
            launch
                .arg(scale_lo)
                .arg(&scale.hi)
                .arg(&params)
                .launch(config)
                .call("ntt_pass")?;
        }
    }
    if transform.order == NttOrder::NaturalToNatural {
        bit_reverse(gpu, data)?;
    }
    Ok(())
}

/// Transforms host values in place (upload, transform, download); `values` must hold exactly the
/// tables' size.
pub fn ntt_host(
    gpu: &Lane,
    tables: &NttTables,
    values: &mut [Scalar],
    transform: Transform,
) -> Result<(), GpuError> {
    let mut data = DeviceScalars::upload(gpu, values)?;
    ntt(gpu, tables, &mut data, transform)?;
    data.download(gpu, values)
}

/// Permutes `data` (2^L scalars, L ≤ [`MAX_LOG`]) from natural to bit-reversed order, or back.
pub fn bit_reverse(gpu: &Lane, data: &mut DeviceScalars) -> Result<(), GpuError> {
    let log_n = log_of_len(data.len)?;
    if log_n == 0 {
        return Ok(());
    }
    let kernel = gpu.kernel("ntt_bit_reverse")?;
    let config = LaunchConfig {
        grid_dim: ((data.len as u32).div_ceil(THREADS), 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: `data` holds 2^log_n scalars with 1 ≤ log_n ≤ 28; threads at or past 2^log_n return,
    // the others swap elements i and rev(i), both below 2^log_n, each pair by one thread.
    unsafe {
        gpu.stream()
            .launch_builder(&kernel)
            .arg(&mut data.words)
            .arg(&log_n)
            .launch(config)
            .call("ntt_bit_reverse")?;
    }
    Ok(())
}

/// a ← (a∘b − c)·factor element-wise, for quotients by the vanishing polynomial on the coset g·H,
/// where it is the constant Z = g^n − 1 (`factor` = Z⁻¹). a, b, c in any one common order.
pub fn ab_minus_c(
    gpu: &Lane,
    a: &mut DeviceScalars,
    b: &DeviceScalars,
    c: &DeviceScalars,
    factor: Scalar,
) -> Result<(), GpuError> {
    elementwise(gpu, "ntt_ab_minus_c", "a∘b − c", a, &[b, c], Some(factor))
}

/// a ← a∘b element-wise: [`ab_minus_c`]'s first half, for a device that holds two vectors of
/// the domain's size at a time (c then takes b's place).
pub fn mul_assign(gpu: &Lane, a: &mut DeviceScalars, b: &DeviceScalars) -> Result<(), GpuError> {
    elementwise(gpu, "ntt_mul", "a∘b", a, &[b], None)
}

/// a ← (a − c)·factor element-wise: [`ab_minus_c`]'s second half, after [`mul_assign`].
pub fn minus_scaled(
    gpu: &Lane,
    a: &mut DeviceScalars,
    c: &DeviceScalars,
    factor: Scalar,
) -> Result<(), GpuError> {
    elementwise(
        gpu,
        "ntt_minus_scaled",
        "(a − c)·factor",
        a,
        &[c],
        Some(factor),
    )
}

/// One element-wise kernel over `a` (read and written) and `others` (read), of equal lengths,
/// with a scalar `factor` after them if given, then n: `kernel(a, others…, [factor,] n)`.
fn elementwise(
    gpu: &Lane,
    kernel: &'static str,
    what: &'static str,
    a: &mut DeviceScalars,
    others: &[&DeviceScalars],
    factor: Option<Scalar>,
) -> Result<(), GpuError> {
    let n = a.len;
    if let Some(other) = others.iter().find(|o| o.len != n) {
        return Err(GpuError::InvalidInput {
            what,
            reason: format!("lengths {n} and {} differ", other.len),
        });
    }
    let Ok(n32) = u32::try_from(n) else {
        return Err(GpuError::InvalidInput {
            what,
            reason: format!("{n} scalars exceed the 2^32 one launch takes"),
        });
    };
    if n == 0 {
        return Ok(());
    }
    let factor_words = factor.map(|factor| {
        let mut words = [0u32; SCALAR_WORDS];
        words.copy_from_slice(as_words(std::slice::from_ref(&factor)));
        words
    });
    let function = gpu.kernel(kernel)?;
    let config = LaunchConfig {
        grid_dim: (n32.div_ceil(THREADS), 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    let stream = gpu.stream();
    let mut launch = stream.launch_builder(&function);
    launch.arg(&mut a.words);
    for other in others {
        launch.arg(&other.words);
    }
    if let Some(words) = &factor_words {
        launch.arg(words);
    }
    launch.arg(&n32);
    // SAFETY: `a` and every vector of `others` hold n < 2^32 scalars (checked above), in the
    // order of the kernel's parameters, which the kernels of this family share: threads at or
    // past n return, the others read element i of each and read and write a[i]; a factor is
    // one Montgomery scalar, passed by value as the kernel's `fr_t` (eight u32).
    unsafe { launch.launch(config) }.call(kernel)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_cover_every_bit_within_limits() {
        for log_n in 0..=MAX_LOG {
            let passes = plan(log_n);
            assert_eq!(passes.len() as u32, log_n.div_ceil(MAX_PASS_BITS));
            let mut top = log_n;
            for pass in &passes {
                assert!(
                    (1..=MAX_PASS_BITS).contains(&pass.bits),
                    "{log_n}: {pass:?}"
                );
                assert_eq!(pass.lo + pass.bits, top, "{log_n}: {pass:?}");
                top = pass.lo;
                assert!(pass.block_log() <= BLOCK_LOG && pass.block_log() <= log_n);
                if pass.lo > 0 {
                    assert!(pass.log_cols <= pass.lo, "{log_n}: {pass:?}");
                }
                for twiddle_tile in [false, true] {
                    let config = pass.launch_config(log_n, twiddle_tile);
                    assert!(config.block_dim.0 >= 1 && config.block_dim.0 <= THREADS);
                    assert!(config.shared_mem_bytes <= TWO_TILES, "{log_n}: {pass:?}");
                    assert_eq!(
                        u64::from(config.grid_dim.0) << pass.block_log(),
                        1u64 << log_n
                    );
                }
                // Only the first pass of a plan of two or more is the top one.
                assert_eq!(
                    pass.is_top(log_n),
                    passes.len() > 1 && std::ptr::eq(pass, &passes[0]),
                    "{log_n}: {pass:?}"
                );
            }
            assert_eq!(top, 0);
        }
        // The radix the design is built around: 2^27 = three passes of 2^9.
        let bits: Vec<u32> = plan(27).iter().map(|p| p.bits).collect();
        assert_eq!(bits, [9, 9, 9]);
    }

    /// One pass at most is between the top and the bottom one (so the pass a direct table was
    /// built for is the only one it is given to), and its table stays small: 2^18 entries at 2^27
    /// and 2^28, none up to 2^20.
    #[test]
    fn direct_tables_serve_one_middle_pass() {
        for log_n in 0..=MAX_LOG {
            let middle: Vec<Pass> = plan(log_n)
                .into_iter()
                .filter(|p| p.lo > 0 && p.lo + p.bits < log_n)
                .collect();
            assert!(middle.len() <= 1, "{log_n}: {middle:?}");
            assert_eq!(direct_pass(log_n), middle.first().copied());
            if let Some(pass) = direct_pass(log_n) {
                assert!(
                    log_n > 2 * MAX_PASS_BITS && pass.lo + pass.bits <= 19,
                    "{log_n}: {pass:?}"
                );
            }
        }
        assert_eq!(direct_pass(20), None);
        assert_eq!(direct_pass(27).map(|p| (p.lo, p.bits)), Some((9, 9)));
    }

    #[test]
    fn roots_match_the_cpu_domain() {
        for log_n in [0, 1, 5, 10, 20, 28] {
            let domain = cuzk_math::EvaluationDomain::new(1 << log_n).ok();
            assert_eq!(domain.map(|d| d.omega()), Some(root_of_unity(log_n, false)));
            assert_eq!(
                root_of_unity(log_n, false) * root_of_unity(log_n, true),
                Scalar::ONE
            );
        }
    }

    #[test]
    fn sizes_are_checked() {
        assert!(log_of_len(0).is_err());
        assert!(log_of_len(3).is_err());
        assert!(log_of_len(1 << 29).is_err());
        assert_eq!(log_of_len(1).ok(), Some(0));
        assert_eq!(log_of_len(1 << 28).ok(), Some(28));
    }
}
