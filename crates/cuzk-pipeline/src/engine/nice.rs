//! Synthesis at a lower scheduling priority than the threads that drive the GPU.
//!
//! Synthesis is nearly all of the engine's CPU work and keeps every core busy; the device region
//! needs little CPU, but needs it at once: a thread that launches an MSM's kernels or wakes from a
//! stream synchronisation behind 16 busy synthesis threads leaves the GPU waiting
//! (measured: docs/performance.md, "Why the code is as it is"). With the synthesis threads'
//! nice value raised, the scheduler gives the others the CPU first.
//!
//! On Linux the nice value belongs to a thread. Raising it needs no privilege, but lowering it
//! back does, so only threads that run nothing but synthesis are lowered: the rayon global pool
//! (whose jobs are the syntheses' parallel sections; the GPU backend copies on a pool of its own)
//! and a thread started for each synthesis. Elsewhere this is a no-op: there a process's threads
//! share one value, and lowering it would lower the GPU's threads too.

use std::io;
use std::sync::OnceLock;

/// The calling thread's nice value (0 where threads have none).
pub fn current_nice() -> io::Result<i32> {
    imp::current_nice()
}

/// Raises the calling thread's nice value by `delta`, to at most 19.
pub fn lower_current_thread(delta: i32) -> io::Result<()> {
    if delta <= 0 {
        return Ok(());
    }
    let nice = current_nice()?.saturating_add(delta).min(19);
    imp::set_nice(nice)
}

/// Lowers every thread of the rayon global pool by `delta`, once per process (later calls, with
/// any delta, do nothing: lowering twice would add up).
pub(crate) fn lower_rayon_pool_once(delta: i32) {
    static LOWERED: OnceLock<()> = OnceLock::new();
    if delta > 0 {
        LOWERED.get_or_init(|| {
            // A thread that cannot be lowered keeps its priority: slower device regions under
            // load, never a wrong proof, so not worth failing the engine's start for.
            rayon::broadcast(|_| {
                let _ = lower_current_thread(delta);
            });
        });
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use std::io;

    /// `None`: the calling thread, as Linux keeps nice values per thread.
    pub fn current_nice() -> io::Result<i32> {
        Ok(rustix::process::getpriority_process(None)?)
    }

    pub fn set_nice(nice: i32) -> io::Result<()> {
        Ok(rustix::process::setpriority_process(None, nice)?)
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::io;

    pub fn current_nice() -> io::Result<i32> {
        Ok(0)
    }

    pub fn set_nice(_nice: i32) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn lowers_only_the_calling_thread_and_caps_at_19() {
        let base = current_nice().unwrap();
        let lowered = std::thread::spawn(move || {
            lower_current_thread(3).unwrap();
            let once = current_nice().unwrap();
            lower_current_thread(40).unwrap();
            (once, current_nice().unwrap())
        })
        .join()
        .unwrap();
        assert_eq!(lowered, ((base + 3).min(19), 19));
        assert_eq!(
            current_nice().unwrap(),
            base,
            "the spawning thread keeps its priority"
        );
        lower_current_thread(0).unwrap();
        assert_eq!(
            current_nice().unwrap(),
            base,
            "a delta of 0 changes nothing"
        );
    }
}
