//! A thread that waits for the device sleeps instead of spinning: a proof's device region keeps
//! five threads waiting, and the cores they would spin on are synthesis's.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed test should stop loudly

mod common;

#[cfg(target_os = "linux")]
#[test]
fn waiting_for_the_device_leaves_the_core_free() {
    use cuzk_gpu::ntt::{ntt, NttOrder, NttTables, Transform};
    use cuzk_gpu::DeviceScalars;

    let Some(gpu) = common::gpu("waiting_for_the_device_leaves_the_core_free") else {
        return;
    };
    // 2^24: ~4 ms per transform on an H200, so 20 of them keep the device busy for tens of
    // milliseconds, against microseconds of launches.
    let log = 24;
    let tables = NttTables::new(&gpu, log).unwrap();
    let mut values = DeviceScalars::zeros(&gpu, 1 << log).unwrap();
    let transform = Transform::ntt(NttOrder::NaturalToNatural);
    let transforms = |values: &mut DeviceScalars| {
        gpu.time(|| {
            for _ in 0..20 {
                ntt(&gpu, &tables, values, transform)?;
            }
            Ok(())
        })
        .unwrap()
    };
    transforms(&mut values); // the kernels loaded, the pool grown
                             // Both ways a proof waits: timed lanes (events) and the stream itself.
    let (device_ms, timed) = on_core(|| transforms(&mut values).1);
    let ((), synchronized) = on_core(|| {
        for _ in 0..20 {
            ntt(&gpu, &tables, &mut values, transform).unwrap();
        }
        gpu.synchronize().unwrap();
    });
    assert!(
        device_ms > 10.0,
        "the device was busy {device_ms:.1} ms: too short to tell"
    );
    for (wait, (cpu_ms, wall_ms)) in [("timed", timed), ("synchronize", synchronized)] {
        assert!(
            cpu_ms < 0.25 * wall_ms,
            "{wait}: the waiting thread was on a core {cpu_ms:.1} ms of {wall_ms:.1} ms"
        );
    }
}

/// `f`'s result, with the milliseconds the calling thread spent on a core and on the clock.
#[cfg(target_os = "linux")]
fn on_core<T>(f: impl FnOnce() -> T) -> (T, (f64, f64)) {
    let cpu = thread_cpu_ns();
    let start = std::time::Instant::now();
    let out = f();
    let wall_ms = start.elapsed().as_secs_f64() * 1e3;
    (out, ((thread_cpu_ns() - cpu) as f64 / 1e6, wall_ms))
}

/// Nanoseconds the calling thread has run on a core (the first field of its schedstat).
#[cfg(target_os = "linux")]
fn thread_cpu_ns() -> u64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
    stat.split_whitespace().next().unwrap().parse().unwrap()
}
