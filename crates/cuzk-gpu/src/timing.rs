//! Device time between two events on a stream: how stages are timed without waiting for them.

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaStream};

use crate::error::{DriverContext, GpuError};

/// The device time of work queued between two events (see [`Lane::timed`]).
#[derive(Debug)]
pub struct Timing {
    start: CudaEvent,
    end: CudaEvent,
}

/// Flags of events whose times are read: cudarc's default disables timing (elapsed times fail),
/// and a wait on an event made without the blocking flag spins whatever the context says.
pub(crate) const TIMED_EVENT: Option<CUevent_flags> = Some(CUevent_flags::CU_EVENT_BLOCKING_SYNC);

impl Timing {
    /// Runs `f`, which enqueues work on `stream`, between the two events.
    pub(crate) fn around<T>(
        stream: &CudaStream,
        f: impl FnOnce() -> Result<T, GpuError>,
    ) -> Result<(T, Timing), GpuError> {
        let start = stream
            .record_event(TIMED_EVENT)
            .call("cuEventRecord (start)")?;
        let out = f()?;
        let end = stream
            .record_event(TIMED_EVENT)
            .call("cuEventRecord (end)")?;
        Ok((out, Timing { start, end }))
    }

    /// The event recorded after the work, for another stream to wait on.
    pub(crate) fn end(&self) -> &CudaEvent {
        &self.end
    }

    /// Milliseconds between the events, once the device has passed the second (waits for it).
    pub fn ms(&self) -> Result<f32, GpuError> {
        self.start.elapsed_ms(&self.end).call("cuEventElapsedTime")
    }
}
