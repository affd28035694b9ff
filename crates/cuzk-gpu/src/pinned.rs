//! Page-locked host buffers: the only host memory the DMA engines copy from or to while kernels
//! run, at full link speed (pageable copies are staged through a driver bounce buffer, at a
//! fraction of it, and block the host).

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};

use cudarc::driver::PinnedHostSlice;

use crate::error::DriverContext;
use crate::layout::DeviceWords;
use crate::{Gpu, GpuError};

/// Page-locked bytes held by every [`Pinned`] buffer of the process: page-locked memory is
/// taken from what the OS can page, so a daemon reports it beside its limit.
static PINNED_BYTES: AtomicU64 = AtomicU64::new(0);

/// Page-locked host bytes the process's [`Pinned`] buffers hold now.
pub fn pinned_bytes() -> u64 {
    PINNED_BYTES.load(Ordering::Relaxed)
}

/// One buffer's share of [`PINNED_BYTES`], given back when the buffer goes.
#[derive(Debug)]
struct Accounted(u64);

impl Accounted {
    fn words(words: usize) -> Self {
        let bytes = (words * std::mem::size_of::<u32>()) as u64;
        PINNED_BYTES.fetch_add(bytes, Ordering::Relaxed);
        Accounted(bytes)
    }
}

impl Drop for Accounted {
    fn drop(&mut self) {
        PINNED_BYTES.fetch_sub(self.0, Ordering::Relaxed);
    }
}

/// `len` values of `T` in page-locked host memory, in the device layout (see [`crate::layout`]).
#[derive(Debug)]
pub struct Pinned<T> {
    pub(crate) words: PinnedHostSlice<u32>,
    len: usize,
    _accounted: Accounted,
    _values: PhantomData<T>,
}

impl<T: DeviceWords> Pinned<T> {
    /// A page-locked copy of `values`.
    pub fn from_slice(gpu: &Gpu, values: &[T]) -> Result<Self, GpuError> {
        let words = values.len() * T::WORDS;
        // Plain page-locked memory (not write-combined): the host reads results back from it too.
        // SAFETY: every word is written by the copy below before anything reads it.
        let mut buffer = unsafe { gpu.context().alloc_pinned_with_flags::<u32>(words, 0) }
            .call("cuMemHostAlloc")?;
        buffer
            .as_mut_slice()
            .call("cuEventSynchronize (pinned buffer)")?
            .copy_from_slice(crate::layout::as_words(values));
        Ok(Pinned {
            words: buffer,
            len: values.len(),
            _accounted: Accounted::words(words),
            _values: PhantomData,
        })
    }

    /// `len` zero values (a reusable staging buffer).
    pub fn zeroed(gpu: &Gpu, len: usize) -> Result<Self, GpuError> {
        let words = len * T::WORDS;
        // Plain page-locked memory, as in `from_slice`.
        // SAFETY: every word is zeroed below before anything reads it.
        let mut buffer = unsafe { gpu.context().alloc_pinned_with_flags::<u32>(words, 0) }
            .call("cuMemHostAlloc")?;
        buffer
            .as_mut_slice()
            .call("cuEventSynchronize (pinned buffer)")?
            .fill(0);
        Ok(Pinned {
            words: buffer,
            len,
            _accounted: Accounted::words(words),
            _values: PhantomData,
        })
    }

    /// The values for writing, once every copy the device has scheduled on them has finished.
    /// All-zero words must be a valid `T` (true of scalars and of the identity point).
    pub fn as_mut_slice(&mut self) -> Result<&mut [T], GpuError> {
        let words = self
            .words
            .as_mut_slice()
            .call("cuEventSynchronize (pinned buffer)")?;
        // SAFETY: as in `as_slice`, and the borrow of `self` is exclusive.
        Ok(unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<T>(), self.len) })
    }

    /// The values, once every copy the device has scheduled on them has finished.
    pub fn as_slice(&self) -> Result<&[T], GpuError> {
        let words = self
            .words
            .as_slice()
            .call("cuEventSynchronize (pinned buffer)")?;
        // SAFETY: the buffer holds len·WORDS words written from `T` values (or by the device in
        // the same layout), so it is `len` valid, aligned `T: DeviceWords`.
        Ok(unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<T>(), self.len) })
    }

    /// The device layout's words of values [start, end), for copies on a stream the caller
    /// synchronises before the buffer can change (it is borrowed meanwhile).
    pub(crate) fn words_of(&self, start: usize, end: usize) -> Result<&[u32], GpuError> {
        let words = self
            .words
            .as_slice()
            .call("cuEventSynchronize (pinned buffer)")?;
        Ok(&words[start * T::WORDS..end * T::WORDS])
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}
