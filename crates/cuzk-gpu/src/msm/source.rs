//! The scalars an MSM reads: a vector on the device, its tail, or the entries of a query's
//! variables among a witness, read in place.

use cudarc::driver::{CudaSlice, CudaView};

use crate::layout::SCALAR_WORDS;
use crate::{DeviceIndex, DeviceScalars, GpuError, Lane};

/// The scalars of an MSM on the device: `values[skip..]`, or `values[index[i]]` for each i. A
/// query over some of a witness's variables reads them in place: no gathered copy of the witness
/// per query (4.2 GB each for A and B at 32 GiB).
#[derive(Clone, Copy, Debug)]
pub struct MsmScalars<'a> {
    values: &'a DeviceScalars,
    skip: usize,
    index: Option<&'a DeviceIndex>,
}

/// Words of a range of scalars: in place, or gathered for the range.
pub(super) enum RangeWords<'a> {
    InPlace(CudaView<'a, u32>),
    Gathered(CudaSlice<u32>),
}

impl RangeWords<'_> {
    pub(super) fn view(&self) -> CudaView<'_, u32> {
        match self {
            RangeWords::InPlace(view) => view.slice(..),
            RangeWords::Gathered(words) => words.slice(..),
        }
    }
}

impl<'a> MsmScalars<'a> {
    /// Every value.
    pub fn all(values: &'a DeviceScalars) -> Self {
        MsmScalars {
            values,
            skip: 0,
            index: None,
        }
    }

    /// The values after the first `skip` (L's, after the public inputs).
    pub fn after(values: &'a DeviceScalars, skip: usize) -> Result<Self, GpuError> {
        if skip > values.len {
            return Err(GpuError::InvalidInput {
                what: "MSM scalars",
                reason: format!("{skip} skipped of {} values", values.len),
            });
        }
        Ok(MsmScalars {
            values,
            skip,
            index: None,
        })
    }

    /// values[index[i]] for each i.
    pub fn indexed(values: &'a DeviceScalars, index: &'a DeviceIndex) -> Result<Self, GpuError> {
        if !index.is_empty() && index.max as usize >= values.len {
            return Err(GpuError::InvalidInput {
                what: "MSM scalars",
                reason: format!("index {} of {} values", index.max, values.len),
            });
        }
        Ok(MsmScalars {
            values,
            skip: 0,
            index: Some(index),
        })
    }

    pub fn len(&self) -> usize {
        match self.index {
            Some(index) => index.len,
            None => self.values.len - self.skip,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values' words from the first one read (after `skip`).
    pub(super) fn values(&self) -> CudaView<'a, u32> {
        self.values.words.slice(self.skip * SCALAR_WORDS..)
    }

    /// The positions, if the scalars are read through them.
    pub(super) fn index(&self) -> Option<CudaView<'a, u32>> {
        self.index
            .map(|index| index.words.slice(..index.len.max(1)))
    }

    /// The words of scalars [start, end) (within `len`): in place when they lie together, else
    /// gathered through the positions into a buffer of the range's size.
    pub(super) fn range(
        &self,
        gpu: &Lane,
        start: usize,
        end: usize,
    ) -> Result<RangeWords<'a>, GpuError> {
        match self.index {
            None => Ok(RangeWords::InPlace(
                self.values()
                    .slice(start * SCALAR_WORDS..end * SCALAR_WORDS),
            )),
            Some(index) => {
                let count = end - start;
                gpu.ensure_fits("gathered scalars", 4 * count * SCALAR_WORDS)?;
                let mut out =
                    gpu.zeros::<u32>(count.max(1) * SCALAR_WORDS, "cuMemAlloc (gathered scalars)")?;
                super::split::gather_words(
                    gpu,
                    &self.values.words.slice(..),
                    &index.words.slice(start..end),
                    0,
                    SCALAR_WORDS,
                    &mut out.slice_mut(..count * SCALAR_WORDS),
                )?;
                Ok(RangeWords::Gathered(out))
            }
        }
    }
}

impl<'a> From<&'a DeviceScalars> for MsmScalars<'a> {
    fn from(values: &'a DeviceScalars) -> Self {
        MsmScalars::all(values)
    }
}
