//! Scalars packed for a short upload. A circuit's witness is mostly 0 and 1 (a 32 GiB PoRep
//! partition's: all but ~3% of 130M scalars, 4.2 GB dense), so it is sent as a bitmap of the ones
//! and the positions and values of the others (~0.16 GB there) and unpacked on the device
//! (`cuda/util/packed_scalars.cuh`) into the dense layout.
//!
//! Layout, in 32-bit words: the bitmap (bit i % 32 of word i / 32 set where scalar i is one),
//! the others' positions in order, zero words up to a whole scalar, the others' values.

use blstrs::Scalar;
use cudarc::driver::PushKernelArg;
use ff::Field;
use rayon::prelude::*;

use crate::error::DriverContext;
use crate::layout::{as_words, SCALAR_WORDS};
use crate::msm::grid;
use crate::{DeviceScalars, GpuError, Lane, Pinned};

/// Scalars packed only when at most one in this many is neither 0 nor 1: past that the packed
/// form saves too little of the upload to pay for the packing.
const PACK_SHARE: usize = 4;
/// Scalars each task of the packing classifies: a whole number of bitmap words.
const PACK_CHUNK: usize = 1 << 16;
/// Scalars looked at before packing: where more than half of them are neither 0 nor 1, the vector
/// goes up dense at once (a WindowPoSt's Poseidon state) instead of after a quarter of it was
/// packed. A sample can only send a packable vector up dense, never the reverse: the packing
/// checks every scalar.
const DENSE_SAMPLE: usize = 1 << 12;

/// Where the parts of a packed vector lie: its length and how many of its scalars are neither
/// 0 nor 1 say it all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PackedLayout {
    /// Scalars unpacked.
    pub len: usize,
    /// Scalars neither 0 nor 1.
    pub others: usize,
}

impl PackedLayout {
    fn ones_words(&self) -> usize {
        self.len.div_ceil(32)
    }

    /// The first word of the others' values (after the bitmap and the positions, padded).
    fn values_at(&self) -> usize {
        (self.ones_words() + self.others).next_multiple_of(SCALAR_WORDS)
    }

    /// Words of the packed form.
    pub fn words(&self) -> usize {
        self.values_at() + self.others * SCALAR_WORDS
    }

    /// Room for the packed form in a buffer of scalars (a whole number of them).
    pub fn scalars(&self) -> usize {
        self.words() / SCALAR_WORDS
    }
}

/// Scalars packed on the host (see the module's layout), ready to be written into a page-locked
/// buffer.
#[derive(Debug)]
pub struct PackedScalars {
    layout: PackedLayout,
    ones: Vec<u32>,
    positions: Vec<u32>,
    values: Vec<Scalar>,
}

/// One chunk's share of a packed vector.
#[derive(Debug)]
struct PackedChunk {
    ones: Vec<u32>,
    positions: Vec<u32>,
    values: Vec<Scalar>,
}

impl PackedScalars {
    /// `parts` one after another, packed; None when more than one scalar in [`PACK_SHARE`] is
    /// neither 0 nor 1, or they are more than 2^32 (positions are 32-bit).
    pub fn of(parts: &[&[Scalar]]) -> Option<Self> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len > u32::MAX as usize {
            return None;
        }
        if looks_dense(parts, len) {
            return None;
        }
        let limit = len / PACK_SHARE;
        let others = std::sync::atomic::AtomicUsize::new(0);
        let chunks: Vec<PackedChunk> = (0..len.div_ceil(PACK_CHUNK))
            .into_par_iter()
            .map(|c| {
                let chunk = pack_chunk(parts, c * PACK_CHUNK, len.min((c + 1) * PACK_CHUNK));
                let seen = chunk.positions.len();
                let total = others.fetch_add(seen, std::sync::atomic::Ordering::Relaxed) + seen;
                (total <= limit).then_some(chunk)
            })
            .collect::<Option<_>>()?;
        let layout = PackedLayout {
            len,
            others: chunks.iter().map(|c| c.positions.len()).sum(),
        };
        let mut packed = PackedScalars {
            layout,
            ones: Vec::with_capacity(layout.ones_words()),
            positions: Vec::with_capacity(layout.others),
            values: Vec::with_capacity(layout.others),
        };
        for chunk in chunks {
            packed.ones.extend_from_slice(&chunk.ones);
            packed.positions.extend_from_slice(&chunk.positions);
            packed.values.extend_from_slice(&chunk.values);
        }
        Some(packed)
    }

    pub fn layout(&self) -> PackedLayout {
        self.layout
    }

    /// Writes the packed form into `out`, [`PackedLayout::words`] long.
    pub fn write(&self, out: &mut [u32]) -> Result<(), GpuError> {
        let layout = self.layout;
        if out.len() != layout.words() {
            return Err(GpuError::InvalidInput {
                what: "packed scalars",
                reason: format!(
                    "{} words for a packed form of {}",
                    out.len(),
                    layout.words()
                ),
            });
        }
        let (ones, rest) = out.split_at_mut(layout.ones_words());
        let (positions, rest) = rest.split_at_mut(layout.others);
        let (padding, values) =
            rest.split_at_mut(layout.values_at() - layout.ones_words() - layout.others);
        ones.copy_from_slice(&self.ones);
        positions.copy_from_slice(&self.positions);
        padding.fill(0);
        values.copy_from_slice(as_words(&self.values));
        Ok(())
    }
}

/// Whether more than half of [`DENSE_SAMPLE`] scalars of `parts` (`len` in all), spread by
/// Fibonacci hashing (no period of the vector lines up with it), are neither 0 nor 1; false for
/// vectors too short for a sample to save anything.
fn looks_dense(parts: &[&[Scalar]], len: usize) -> bool {
    if len < 4 * DENSE_SAMPLE {
        return false;
    }
    const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;
    let at = |k: usize| -> Option<&Scalar> {
        let fraction = u128::from((k as u64).wrapping_mul(GOLDEN));
        let mut i = ((fraction * len as u128) >> 64) as usize;
        for part in parts {
            match part.get(i) {
                Some(value) => return Some(value),
                None => i -= part.len(),
            }
        }
        None
    };
    let others = (0..DENSE_SAMPLE)
        .filter_map(at)
        .filter(|&&value| value != Scalar::ZERO && value != Scalar::ONE)
        .count();
    others > DENSE_SAMPLE / 2
}

/// The chunk [start, end) of the concatenation of `parts` (start a multiple of 32).
fn pack_chunk(parts: &[&[Scalar]], start: usize, end: usize) -> PackedChunk {
    let words_of = |value: Scalar| -> [u32; SCALAR_WORDS] {
        let mut words = [0; SCALAR_WORDS];
        words.copy_from_slice(as_words(&[value]));
        words
    };
    let (zero, one) = (words_of(Scalar::ZERO), words_of(Scalar::ONE));
    let mut chunk = PackedChunk {
        ones: vec![0; (end - start).div_ceil(32)],
        positions: Vec::new(),
        values: Vec::new(),
    };
    let mut part_start = 0;
    for part in parts {
        let part_end = part_start + part.len();
        let (from, to) = (start.max(part_start), end.min(part_end));
        if from < to {
            let values = &part[from - part_start..to - part_start];
            let (words, _) = as_words(values).as_chunks::<SCALAR_WORDS>();
            for ((i, value), words) in (from..to).zip(values).zip(words) {
                // Ones set without a branch: they are half of a witness, at random.
                let is_one = *words == one;
                chunk.ones[(i - start) / 32] |= u32::from(is_one) << ((i - start) % 32);
                if !is_one && *words != zero {
                    chunk.positions.push(i as u32);
                    chunk.values.push(*value);
                }
            }
        }
        part_start = part_end;
    }
    chunk
}

impl DeviceScalars {
    /// Scalars packed by [`PackedScalars`], written in `staging` from scalar `start` on: uploaded
    /// in their short form and unpacked on the device.
    pub fn upload_packed(
        gpu: &Lane,
        staging: &Pinned<Scalar>,
        start: usize,
        layout: PackedLayout,
    ) -> Result<Self, GpuError> {
        let end = start + layout.scalars();
        if end > staging.len() || layout.len > u32::MAX as usize {
            return Err(GpuError::InvalidInput {
                what: "packed scalar upload",
                reason: format!(
                    "{layout:?} from {start} of {} staged scalars",
                    staging.len()
                ),
            });
        }
        if layout.len == 0 {
            return DeviceScalars::zeros(gpu, 0);
        }
        gpu.ensure_fits("packed scalars", 4 * layout.words())?;
        let stream = gpu.stream();
        let mut packed = gpu.zeros::<u32>(layout.words(), "cuMemAlloc (packed scalars)")?;
        stream
            .memcpy_htod(
                staging.words_of(start, end)?,
                &mut packed.slice_mut(..layout.words()),
            )
            .call("cuMemcpyHtoDAsync (packed scalars)")?;
        let mut out = DeviceScalars::zeros(gpu, layout.len)?;
        let len32 = layout.len as u32;
        let unpack = gpu.kernel("unpack_ones")?;
        let threads = layout.len.min(1 << 22);
        // SAFETY: `packed` holds the bitmap's ⌈len/32⌉ words first (the layout), `out` len
        // scalars; the kernel's threads stride over i < len.
        unsafe {
            stream
                .launch_builder(&unpack)
                .arg(&packed)
                .arg(&len32)
                .arg(&mut out.words)
                .launch(grid(threads, 256))
                .call("unpack_ones")?;
        }
        if layout.others == 0 {
            return Ok(out);
        }
        let positions = packed.slice(layout.ones_words()..layout.ones_words() + layout.others);
        let values = packed.slice(layout.values_at()..layout.words());
        let (others32, words32) = (layout.others as u32, SCALAR_WORDS as u32);
        let scatter = gpu.kernel("scatter_words")?;
        let threads = (layout.others * SCALAR_WORDS).min(1 << 22);
        // SAFETY: `values` holds the others' scalars (others·8 words) and `positions` their
        // positions, each below len by the packing (the staging the caller filled from
        // `PackedScalars::write`); `out` holds len scalars.
        unsafe {
            stream
                .launch_builder(&scatter)
                .arg(&values)
                .arg(&positions)
                .arg(&others32)
                .arg(&words32)
                .arg(&mut out.words)
                .launch(grid(threads, 256))
                .call("scatter_words")?;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scalars a packed form stands for, read back on the host.
    fn unpack(layout: PackedLayout, words: &[u32]) -> Vec<Scalar> {
        let mut out: Vec<Scalar> = (0..layout.len)
            .map(|i| match (words[i / 32] >> (i % 32)) & 1 {
                1 => Scalar::ONE,
                _ => Scalar::ZERO,
            })
            .collect();
        let positions = &words[layout.ones_words()..layout.ones_words() + layout.others];
        let mut others = vec![Scalar::ZERO; layout.others];
        crate::layout::scalars_as_words_mut(&mut others)
            .copy_from_slice(&words[layout.values_at()..]);
        for (&at, value) in positions.iter().zip(others) {
            out[at as usize] = value;
        }
        out
    }

    fn packed_round_trip(parts: &[&[Scalar]]) -> Option<Vec<Scalar>> {
        let packed = PackedScalars::of(parts)?;
        let mut words = vec![u32::MAX; packed.layout().words()];
        packed.write(&mut words).ok()?;
        Some(unpack(packed.layout(), &words))
    }

    #[test]
    fn witnesses_mostly_bits_come_back_whole() {
        let mut rng = cuzk_testkit::rng("packed scalars");
        for len in [
            0,
            1,
            31,
            32,
            33,
            PACK_CHUNK - 1,
            PACK_CHUNK + 77,
            3 * PACK_CHUNK,
        ] {
            let values: Vec<Scalar> = (0..len)
                .map(|i| match i % 13 {
                    12 => Scalar::random(&mut rng),
                    1 | 5 | 8 => Scalar::ONE,
                    11 => -Scalar::ONE,
                    _ => Scalar::ZERO,
                })
                .collect();
            // Split at an odd point, as inputs ++ aux are.
            let (inputs, aux) = values.split_at(len.min(7));
            let back = packed_round_trip(&[inputs, aux]).expect("1 in 13 others packs");
            assert_eq!(back, values, "length {len}");
        }
    }

    #[test]
    fn the_share_of_others_decides() {
        let at_limit: Vec<Scalar> = (0..4 * PACK_CHUNK)
            .map(|i| {
                if i % PACK_SHARE == 0 {
                    Scalar::from(2u64)
                } else {
                    Scalar::ONE
                }
            })
            .collect();
        let packed = PackedScalars::of(&[&at_limit]).expect("one in four packs");
        assert_eq!(packed.layout().others, PACK_CHUNK);
        assert_eq!(packed_round_trip(&[&at_limit]).expect("packs"), at_limit);
        let mut over = at_limit.clone();
        over[1] = Scalar::from(3u64);
        assert!(
            PackedScalars::of(&[&over]).is_none(),
            "one more than a quarter: dense"
        );
        // All ones or all zeros: the bitmap alone.
        let ones = vec![Scalar::ONE; 1000];
        let layout = PackedScalars::of(&[&ones]).expect("packs").layout();
        assert_eq!((layout.others, layout.words()), (0, 32));
        assert_eq!(
            packed_round_trip(&[&ones, &[Scalar::ZERO; 5]])
                .expect("packs")
                .len(),
            1005
        );
    }

    /// The sample sends clearly dense vectors up dense at once, and no vector whose others are
    /// a quarter or less, however they are laid out.
    #[test]
    fn a_sample_spots_dense_vectors_only() {
        let mut rng = cuzk_testkit::rng("dense sample");
        let len = 8 * DENSE_SAMPLE;
        let dense: Vec<Scalar> = (0..len).map(|_| Scalar::random(&mut rng)).collect();
        let (inputs, aux) = dense.split_at(3);
        assert!(looks_dense(&[inputs, aux], len));
        assert!(PackedScalars::of(&[inputs, aux]).is_none());
        for period in [4, 5, 7, 8, 16, 64, 4096] {
            let periodic: Vec<Scalar> = (0..len)
                .map(|i| match i % period {
                    0 => Scalar::from(5u64),
                    _ => Scalar::ONE,
                })
                .collect();
            assert!(!looks_dense(&[&periodic], len), "one in {period}");
        }
        // Dense for its first quarter only.
        let mut quarter = dense.clone();
        quarter[len / 4..].fill(Scalar::ZERO);
        assert!(!looks_dense(&[&quarter], len));
    }

    #[test]
    fn a_short_buffer_is_refused() {
        let mut values = vec![Scalar::ONE; 40];
        values[3] = Scalar::from(9u64);
        let packed = PackedScalars::of(&[&values]).expect("packs");
        let mut words = vec![0; packed.layout().words() - 1];
        assert!(packed.write(&mut words).is_err());
    }
}
