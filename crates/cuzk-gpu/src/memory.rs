//! The device memory cuzk may hold: one memory pool per device, capped at the device's budget.
//!
//! Every device buffer of this crate is a stream-ordered allocation (cudarc's `alloc` is
//! `cuMemAllocAsync` where the device supports memory pools), which comes from the device's
//! current pool. So a pool of our own, made with a maximum size and set as the current one, holds
//! everything cuzk allocates, and the driver refuses what would take it past the budget: a 141 GB
//! device with a 16 GiB budget then behaves as a 16 GiB card would for cuzk's allocations, whatever
//! else is free. The context and the kernel module are outside the pool; [`CONTEXT_ALLOWANCE`]
//! stands for them when a budget is given.

use std::sync::{Arc, Mutex, PoisonError};

use cudarc::driver::sys::{self, CUmemPool_attribute};
use cudarc::driver::CudaContext;

use crate::error::DriverContext;
use crate::{GpuError, MEMORY_MARGIN};

/// Device memory a context and its kernel module take outside the pool, counted against a budget
/// given in bytes (`--gpu-memory`): what a primary context with our module holds, rounded up
/// (measured: docs/performance.md, "Why the code is as it is").
pub const CONTEXT_ALLOWANCE: usize = 512 << 20;

/// The budget is rounded down to a multiple of this: the driver rounds a pool's maximum size up to
/// the blocks it maps, so an aligned one is what the pool can really reach
/// (measured: docs/performance.md, "Why the code is as it is").
const POOL_GRANULE: usize = 64 << 20;

/// The pool of one device and the bytes it may hold.
#[derive(Debug)]
pub(crate) struct DevicePool {
    pool: Pool,
    /// Bytes the pool may hold at most.
    limit: usize,
    /// Whether the driver enforces `limit` (a pool with a maximum size); otherwise only plans
    /// keep to it.
    enforced: bool,
    /// Device bytes in use when the pool was made: the contexts, the module, other processes.
    used_at_start: usize,
}

/// A pool handle: a pointer the driver owns, valid for the process's life (pools are never
/// destroyed), usable from any thread.
#[derive(Debug, Clone, Copy)]
struct Pool(sys::CUmemoryPool);

// SAFETY: a CUmemoryPool is an opaque driver handle; the driver's pool calls are thread-safe.
unsafe impl Send for Pool {}
// SAFETY: as for Send: nothing is read or written through the handle outside driver calls.
unsafe impl Sync for Pool {}

/// The pools made so far, by device ordinal: one per device for the process, since a device has
/// one current pool.
static POOLS: Mutex<Vec<(usize, Arc<DevicePool>)>> = Mutex::new(Vec::new());

/// How the bytes cuzk may hold on a device are chosen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MemoryBudget {
    /// What the device reports free when it is first opened, less [`MEMORY_MARGIN`].
    #[default]
    FreeAtStart,
    /// At most this many bytes for everything cuzk holds on the device, its context included
    /// ([`CONTEXT_ALLOWANCE`]) and the local memory of its kernels' stack frames.
    Bytes(usize),
}

impl DevicePool {
    /// The pool of device `ordinal` (whose context is `ctx`), made now with `budget` if this is
    /// the process's first open of the device; a later open keeps the first one's budget.
    /// `local`: device bytes the kernels' stack frames took when the device opened, which a
    /// budget in bytes counts too.
    pub(crate) fn of(
        ctx: &CudaContext,
        ordinal: usize,
        budget: MemoryBudget,
        local: usize,
    ) -> Result<Arc<Self>, GpuError> {
        let mut pools = POOLS.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, pool)) = pools.iter().find(|(o, _)| *o == ordinal) {
            return Ok(Arc::clone(pool));
        }
        ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        let (free, total) = ctx.mem_get_info().call("cuMemGetInfo")?;
        let used_at_start = total.saturating_sub(free);
        let limit = match budget {
            MemoryBudget::FreeAtStart => free.saturating_sub(MEMORY_MARGIN),
            MemoryBudget::Bytes(bytes) => bytes.saturating_sub(CONTEXT_ALLOWANCE + local),
        };
        let limit = limit / POOL_GRANULE * POOL_GRANULE;
        let made = match capped_pool(ctx, limit) {
            Ok(pool) => DevicePool {
                pool,
                limit,
                enforced: true,
                used_at_start,
            },
            // A driver without pools of a maximum size: the default pool, the budget kept by
            // plans alone (every plan sizes itself from `free`).
            Err(_) => DevicePool {
                pool: default_pool(ctx)?,
                limit,
                enforced: false,
                used_at_start,
            },
        };
        configure(&made.pool)?;
        let made = Arc::new(made);
        pools.push((ordinal, Arc::clone(&made)));
        Ok(made)
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    pub(crate) fn enforced(&self) -> bool {
        self.enforced
    }

    /// Device bytes taken since the pool was made by anything but the pool, given the device's
    /// (free, total) now: what no budget counts — the driver's local memory for kernels with
    /// stack frames (reserved for every thread the device can hold), other processes.
    pub(crate) fn outside_since_start(
        &self,
        (free, total): (usize, usize),
    ) -> Result<usize, GpuError> {
        let (reserved, _) = self.usage()?;
        let used = total.saturating_sub(free).saturating_sub(reserved);
        Ok(used.saturating_sub(self.used_at_start))
    }

    /// (reserved, used): bytes the pool holds from the device now, and of those the bytes
    /// allocated.
    pub(crate) fn usage(&self) -> Result<(usize, usize), GpuError> {
        let reserved = self.attribute(CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)?;
        let used = self.attribute(CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_CURRENT)?;
        Ok((reserved, used))
    }

    /// The most bytes the pool has held from the device since it was made.
    pub(crate) fn peak(&self) -> Result<usize, GpuError> {
        self.attribute(CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)
    }

    /// Gives the device back what the pool holds unused: its free blocks may lie in pieces none
    /// of which holds a large buffer, while a pool at its budget cannot map a new one.
    pub(crate) fn trim(&self) -> Result<(), GpuError> {
        // SAFETY: the pool handle lives for the process; trimming releases only unused memory.
        unsafe { sys::cuMemPoolTrimTo(self.pool.0, 0) }
            .result()
            .call("cuMemPoolTrimTo")
    }

    fn attribute(&self, attribute: CUmemPool_attribute) -> Result<usize, GpuError> {
        let mut value = 0u64;
        // SAFETY: `value` is a live u64, the value type of the pool's memory attributes; the pool
        // handle lives for the process.
        unsafe {
            sys::cuMemPoolGetAttribute(self.pool.0, attribute, (&mut value as *mut u64).cast())
        }
        .result()
        .call("cuMemPoolGetAttribute")?;
        Ok(usize::try_from(value).unwrap_or(usize::MAX))
    }
}

/// A pool of at most `limit` bytes on `ctx`'s device, made the device's current pool.
fn capped_pool(ctx: &CudaContext, limit: usize) -> Result<Pool, GpuError> {
    // SAFETY: an all-zero CUmemPoolProps is a valid value of the plain C struct; the fields that
    // matter are set below.
    let mut props: sys::CUmemPoolProps = unsafe { std::mem::zeroed() };
    props.allocType = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE;
    props.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = ctx.cu_device();
    // 0 would mean "as much as the device has".
    props.maxSize = limit.max(1);
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: `pool` is a live out-pointer and `props` a fully initialised struct; the device
    // handle comes from a live context.
    unsafe {
        sys::cuMemPoolCreate(&mut pool, &props)
            .result()
            .call("cuMemPoolCreate")?;
        sys::cuDeviceSetMemPool(ctx.cu_device(), pool)
            .result()
            .call("cuDeviceSetMemPool")?;
    }
    Ok(Pool(pool))
}

fn default_pool(ctx: &CudaContext) -> Result<Pool, GpuError> {
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: `pool` is a live out-pointer; the device handle comes from a live context.
    unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device()) }
        .result()
        .call("cuDeviceGetDefaultMemPool")?;
    Ok(Pool(pool))
}

/// The pool's policies for proving: keep what is freed, and never make an allocation wait for
/// another stream's work to reuse memory.
fn configure(pool: &Pool) -> Result<(), GpuError> {
    // The pool keeps what is freed instead of returning it at every synchronisation (its
    // default): a proof's MSMs allocate and free gigabytes each time, and mapping them afresh
    // costs host time on every proof (measured: docs/performance.md, "Why the code is as it is").
    // `Lane::memory` counts what the pool holds unused as free.
    let mut keep = u64::MAX;
    // Lanes that run side by side (a proof's five MSMs) would otherwise wait for one another's
    // progress.
    let mut no = 0i32;
    // SAFETY: `keep` is a live u64 and `no` a live i32, the value types of these attributes; the
    // pool handle lives for the process.
    unsafe {
        sys::cuMemPoolSetAttribute(
            pool.0,
            CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut keep as *mut u64).cast(),
        )
        .result()
        .call("cuMemPoolSetAttribute (release threshold)")?;
        sys::cuMemPoolSetAttribute(
            pool.0,
            CUmemPool_attribute::CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES,
            (&mut no as *mut i32).cast(),
        )
        .result()
        .call("cuMemPoolSetAttribute (reuse policy)")
    }
}
