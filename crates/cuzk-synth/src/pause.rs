//! Where synthesis may pause: every [`CHECK_EVERY`] rows a synthesizing thread calls the
//! process's pause hook, if one is installed. What it waits for is the installer's policy
//! (`cuzk-pipeline` pauses ordinary syntheses while a latency-critical one runs).

use std::sync::OnceLock;

/// Rows between two pause points: a few hundred microseconds of witness generation, so that a
/// pause is never far off, while a point without a hook (one atomic load) costs nothing
/// measurable.
pub(crate) const CHECK_EVERY: usize = 1 << 10;

static HOOK: OnceLock<fn()> = OnceLock::new();

/// Installs `hook`, called on the synthesizing thread at every pause point from now on; the
/// first hook installed in the process stays.
pub fn install_pause_hook(hook: fn()) {
    let _ = HOOK.set(hook);
}

/// A pause point: the hook's call, if there is one.
pub(crate) fn pause_point() {
    if let Some(hook) = HOOK.get() {
        hook();
    }
}
