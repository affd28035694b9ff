//! Precedence for latency-critical synthesis: while a [`Precedence`] lives, every other synthesis
//! in the process waits at its next checkpoint (every [`CHECK_EVERY`] rows), so that a critical
//! circuit (a WinningPoSt) has the cores, caches and memory bandwidth to itself instead of sharing
//! them with a dozen PoRep partitions. Threads that run the critical work are marked
//! [`exempt`](exempt_current_thread) and never wait.
//!
//! Cooperative by design: the OS cannot raise an unprivileged thread above the others' priority,
//! and nicing the others (weight 110 against 1024) left the critical synthesis 2.2× slower than
//! alone on a 16-core host, where hyperthreads and memory bandwidth are shared whatever the
//! scheduler's weights.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};

/// Rows between two checks: a few hundred microseconds of witness generation, so that a
/// critical synthesis waits for no one longer than that, while the check (one atomic load)
/// costs nothing measurable.
pub(crate) const CHECK_EVERY: usize = 1 << 10;

/// How many [`Precedence`]s live.
static HOLDERS: AtomicUsize = AtomicUsize::new(0);
/// Waiters sleep on `RELEASED` under `GATE`; the last holder to go wakes them.
static GATE: Mutex<()> = Mutex::new(());
static RELEASED: Condvar = Condvar::new();

thread_local! {
    static EXEMPT: Cell<bool> = const { Cell::new(false) };
}

/// While this lives, synthesis on threads not marked exempt pauses at its next checkpoint.
#[derive(Debug)]
#[must_use = "other syntheses resume as soon as it is dropped"]
pub struct Precedence(());

/// Takes precedence over every synthesis outside the exempt threads until the value is dropped.
pub fn take_precedence() -> Precedence {
    HOLDERS.fetch_add(1, Ordering::AcqRel);
    Precedence(())
}

impl Drop for Precedence {
    fn drop(&mut self) {
        HOLDERS.fetch_sub(1, Ordering::AcqRel);
        // Under the gate: a waiter that saw a holder is asleep on the condvar, not between its
        // check and its wait, when this notifies.
        let _gate = GATE.lock().unwrap_or_else(PoisonError::into_inner);
        RELEASED.notify_all();
    }
}

/// Marks the calling thread as one that runs critical work: its checkpoints never wait (for a
/// dedicated pool's threads, from its start handler).
pub fn exempt_current_thread() {
    EXEMPT.set(true);
}

/// Waits while a [`Precedence`] lives, unless this thread is exempt.
pub(crate) fn checkpoint() {
    if HOLDERS.load(Ordering::Acquire) == 0 || EXEMPT.get() {
        return;
    }
    let mut gate = GATE.lock().unwrap_or_else(PoisonError::into_inner);
    while HOLDERS.load(Ordering::Acquire) > 0 {
        gate = RELEASED.wait(gate).unwrap_or_else(PoisonError::into_inner);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    /// A checkpoint on an ordinary thread waits for the holder to go; on an exempt one it does
    /// not wait at all.
    #[test]
    fn others_wait_while_precedence_is_held_and_exempt_threads_do_not() {
        let held = take_precedence();
        let exempt = std::thread::spawn(|| {
            exempt_current_thread();
            checkpoint();
        });
        exempt.join().unwrap();
        let (passed, seen) = mpsc::channel();
        let other = std::thread::spawn(move || {
            checkpoint();
            passed.send(()).unwrap();
        });
        assert!(seen.recv_timeout(Duration::from_millis(100)).is_err());
        drop(held);
        seen.recv_timeout(Duration::from_secs(10)).unwrap();
        other.join().unwrap();
        checkpoint();
    }
}
