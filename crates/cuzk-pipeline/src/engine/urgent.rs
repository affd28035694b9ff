//! How latency-critical work overtakes (a CRITICAL job: a WinningPoSt due in seconds while PoRep
//! partitions fill every core and the device):
//!
//! - **Its synthesis comes first.** It runs on a pool of its own ([`critical_pool`]: the rayon
//!   global pool would queue its sections behind every other synthesis's), and while it runs
//!   every other synthesis waits at its next pause point ([`overtaking`], through
//!   `cuzk_synth`'s pause hook), so that it has the cores, caches and memory bandwidth to itself.
//!   Cooperative by design: the OS cannot raise an unprivileged thread above the others, and
//!   nicing the others (weight 110 against 1024) left it 2.2× slower than alone on a 16-core host,
//!   where hyperthreads and memory bandwidth are shared whatever the scheduler's weights.
//! - **Its device work comes first** (`device.rs`, `prove.rs`): a GPU worker of its own per device
//!   that takes nothing less urgent, the device lock handed to it before waiting workers, other
//!   workers held back from starting a region while it synthesizes, and, when a region is in
//!   progress, its own run beside that region where the backend can (`acquire_beside`).

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

/// How many overtaking syntheses run.
static OVERTAKING: AtomicUsize = AtomicUsize::new(0);
/// Paused syntheses sleep on `RESUMED` under `GATE`; the last overtaking one to end wakes them.
static GATE: Mutex<()> = Mutex::new(());
static RESUMED: Condvar = Condvar::new();

thread_local! {
    /// Whether this thread runs critical work, whose pause points never wait.
    static CRITICAL_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// While this lives, syntheses on threads other than the critical pool's wait at their next pause
/// point.
#[derive(Debug)]
#[must_use = "the other syntheses resume as soon as it is dropped"]
pub(super) struct Overtaking(());

/// Pauses every synthesis outside the critical pool until the value is dropped (through the pause
/// hook [`critical_pool`] installed).
pub(super) fn overtaking() -> Overtaking {
    OVERTAKING.fetch_add(1, Ordering::AcqRel);
    Overtaking(())
}

impl Drop for Overtaking {
    fn drop(&mut self) {
        OVERTAKING.fetch_sub(1, Ordering::AcqRel);
        // Under the gate: a waiter that saw an overtaking synthesis is asleep on the condvar, not
        // between its check and its wait, when this notifies.
        let _gate = GATE.lock().unwrap_or_else(PoisonError::into_inner);
        RESUMED.notify_all();
    }
}

/// The pause hook: waits while an [`Overtaking`] lives, unless this is a critical thread.
fn wait_while_overtaken() {
    if OVERTAKING.load(Ordering::Acquire) == 0 || CRITICAL_THREAD.get() {
        return;
    }
    let mut gate = GATE.lock().unwrap_or_else(PoisonError::into_inner);
    while OVERTAKING.load(Ordering::Acquire) > 0 {
        gate = RESUMED.wait(gate).unwrap_or_else(PoisonError::into_inner);
    }
}

/// As many threads as the rayon global pool, at the process's own priority, whose pause points
/// never wait; `None` if they could not be started. Made once per engine, with the pause hook
/// that lets [`overtaking`] hold the other syntheses.
pub(super) fn critical_pool() -> Option<Arc<rayon::ThreadPool>> {
    cuzk_synth::install_pause_hook(wait_while_overtaken);
    rayon::ThreadPoolBuilder::new()
        .num_threads(rayon::current_num_threads())
        .thread_name(|i| format!("cuzk-critical-{i}"))
        .start_handler(|_| CRITICAL_THREAD.set(true))
        .build()
        .ok()
        .map(Arc::new)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    /// A pause point on an ordinary thread waits for the overtaking synthesis to end; on a
    /// critical thread it does not wait at all.
    #[test]
    fn others_pause_while_a_synthesis_overtakes_and_critical_threads_do_not() {
        let overtaking = overtaking();
        let critical = std::thread::spawn(|| {
            CRITICAL_THREAD.set(true);
            wait_while_overtaken();
        });
        critical.join().unwrap();
        let (passed, seen) = mpsc::channel();
        let other = std::thread::spawn(move || {
            wait_while_overtaken();
            passed.send(()).unwrap();
        });
        assert!(seen.recv_timeout(Duration::from_millis(100)).is_err());
        drop(overtaking);
        seen.recv_timeout(Duration::from_secs(10)).unwrap();
        other.join().unwrap();
        wait_while_overtaken();
    }
}
