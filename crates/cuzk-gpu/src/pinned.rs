//! Page-locked host buffers: the only host memory the DMA engines copy from or to while kernels
//! run, at full link speed (pageable copies are staged through a driver bounce buffer, at a
//! fraction of it, and block the host).

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};

use std::sync::Arc;

use cudarc::driver::sys;
use cudarc::driver::{CudaContext, PinnedHostSlice};

use crate::error::DriverContext;
use crate::layout::DeviceWords;
use crate::{GpuError, Lane};

/// Page-locked bytes held by every [`Pinned`] buffer of the process: page-locked memory is
/// taken from what the OS can page, so a daemon reports it beside its limit.
static PINNED_BYTES: AtomicU64 = AtomicU64::new(0);

/// Page-locked host bytes the process's [`Pinned`] buffers and [`HostLocked`] ranges hold now.
pub fn pinned_bytes() -> u64 {
    PINNED_BYTES.load(Ordering::Relaxed)
}

/// One buffer's share of [`PINNED_BYTES`], given back when the buffer goes.
#[derive(Debug)]
struct Accounted(u64);

impl Accounted {
    fn words(words: usize) -> Self {
        Self::bytes((words * std::mem::size_of::<u32>()) as u64)
    }

    fn bytes(bytes: u64) -> Self {
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
    pub fn from_slice(gpu: &Lane, values: &[T]) -> Result<Self, GpuError> {
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
    pub fn zeroed(gpu: &Lane, len: usize) -> Result<Self, GpuError> {
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

    /// The device layout's words of values [start, end) for writing, once every copy the device
    /// has scheduled on them has finished: for a form of the values other than `T`'s (packed
    /// scalars), which only the device reads back.
    pub fn words_mut(&mut self, start: usize, end: usize) -> Result<&mut [u32], GpuError> {
        if start > end || end > self.len {
            return Err(GpuError::InvalidInput {
                what: "page-locked words",
                reason: format!("range {start}..{end} of {} values", self.len),
            });
        }
        let words = self
            .words
            .as_mut_slice()
            .call("cuEventSynchronize (pinned buffer)")?;
        Ok(&mut words[start * T::WORDS..end * T::WORDS])
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

/// Host memory the caller owns, page-locked where it is (`cuMemHostRegister`), for every device
/// of the process: copies from it run at full link speed and overlap kernels, as from a
/// [`Pinned`] buffer, without a second copy of it (a 32 GiB PoRep's parameters are 47 GB).
/// Unlocked when dropped.
///
/// The registration does not borrow the memory: copies still read it through slices the caller
/// borrows for as long as they run. A caller drops the registration before the memory is freed;
/// if it does not, the driver's unlock of memory no longer mapped only fails (ignored here).
#[derive(Debug)]
pub struct HostLocked {
    /// Start of the locked range, as an address: the registration never reads through it.
    address: usize,
    ctx: Arc<CudaContext>,
    _accounted: Accounted,
}

impl HostLocked {
    /// Page-locks the memory of `values` in place.
    pub fn new<T: DeviceWords>(gpu: &Lane, values: &[T]) -> Result<Self, GpuError> {
        let bytes = std::mem::size_of_val(values);
        if bytes == 0 {
            return Err(GpuError::InvalidInput {
                what: "host memory to lock",
                reason: "an empty range".into(),
            });
        }
        gpu.context().bind_to_thread().call("cuCtxSetCurrent")?;
        let address = values.as_ptr() as usize;
        // SAFETY: the range is the live memory of `values`; registering changes how its pages are
        // held, not their contents, and the device only reads them through copies the caller
        // schedules from borrowed slices.
        unsafe {
            sys::cuMemHostRegister_v2(
                address as *mut std::ffi::c_void,
                bytes,
                sys::CU_MEMHOSTREGISTER_PORTABLE,
            )
        }
        .result()
        .call("cuMemHostRegister")?;
        Ok(HostLocked {
            address,
            ctx: Arc::clone(gpu.context()),
            _accounted: Accounted::bytes(bytes as u64),
        })
    }
}

impl Drop for HostLocked {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: `address` starts a range this value registered and nothing unregistered
            // since; the call only unlocks pages.
            let _ = unsafe { sys::cuMemHostUnregister(self.address as *mut std::ffi::c_void) };
        }
    }
}
