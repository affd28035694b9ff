//! The process's logger: prints records at `RUST_LOG`'s level (one level for every crate: error,
//! warn, info, debug, trace; warn when unset) to stderr, and counts what bellperson says of its
//! GPU kernels whatever the level, which is how the anchor knows whether the GPU proved.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use log::{Level, LevelFilter, Log, Metadata, Record};

/// How often bellperson reported each GPU event so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct GpuEvents {
    /// "GPU FFT kernel instantiated!"
    pub fft_kernels: u64,
    /// "GPU Multiexp kernel instantiated!"
    pub multiexp_kernels: u64,
    /// "Cannot instantiate GPU … kernel" or "GPU … failed! Falling back to CPU".
    pub fallbacks: u64,
}

impl GpuEvents {
    /// The events since `earlier`.
    pub fn since(self, earlier: GpuEvents) -> GpuEvents {
        GpuEvents {
            fft_kernels: self.fft_kernels - earlier.fft_kernels,
            multiexp_kernels: self.multiexp_kernels - earlier.multiexp_kernels,
            fallbacks: self.fallbacks - earlier.fallbacks,
        }
    }

    /// Whether these events show bellperson's FFTs and multiexps on the GPU and nothing falling
    /// back to the CPU.
    pub fn on_gpu(self) -> bool {
        self.fft_kernels > 0 && self.multiexp_kernels > 0 && self.fallbacks == 0
    }
}

struct Logger {
    /// The printed level, as `LevelFilter as usize`.
    print: AtomicUsize,
    fft_kernels: AtomicU64,
    multiexp_kernels: AtomicU64,
    fallbacks: AtomicU64,
}

static LOGGER: Logger = Logger {
    print: AtomicUsize::new(LevelFilter::Warn as usize),
    fft_kernels: AtomicU64::new(0),
    multiexp_kernels: AtomicU64::new(0),
    fallbacks: AtomicU64::new(0),
};

const LEVELS: [LevelFilter; 6] = [
    LevelFilter::Off,
    LevelFilter::Error,
    LevelFilter::Warn,
    LevelFilter::Info,
    LevelFilter::Debug,
    LevelFilter::Trace,
];

/// Installs the logger, printing at `RUST_LOG`'s level; an unknown value is an error.
pub fn init() -> anyhow::Result<()> {
    let print = match std::env::var("RUST_LOG") {
        Ok(text) => LEVELS
            .into_iter()
            .find(|level| level.as_str().eq_ignore_ascii_case(text.trim()))
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "RUST_LOG={text:?}: expected one of off, error, warn, info, debug, trace"
                )
            })?,
        Err(_) => LevelFilter::Warn,
    };
    LOGGER.print.store(print as usize, Ordering::Relaxed);
    log::set_logger(&LOGGER).map_err(|e| anyhow::anyhow!("installing the logger: {e}"))?;
    log::set_max_level(print.max(LevelFilter::Info));
    Ok(())
}

/// The GPU events bellperson has reported so far.
pub fn events() -> GpuEvents {
    GpuEvents {
        fft_kernels: LOGGER.fft_kernels.load(Ordering::Relaxed),
        multiexp_kernels: LOGGER.multiexp_kernels.load(Ordering::Relaxed),
        fallbacks: LOGGER.fallbacks.load(Ordering::Relaxed),
    }
}

impl Logger {
    fn print_level(&self) -> LevelFilter {
        LEVELS
            .get(self.print.load(Ordering::Relaxed))
            .copied()
            .unwrap_or(LevelFilter::Warn)
    }
}

impl Log for Logger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= self.print_level() || metadata.target().starts_with("bellperson")
    }

    fn log(&self, record: &Record<'_>) {
        if record.target().starts_with("bellperson") && record.level() <= Level::Info {
            let message = record.args().to_string();
            let counter = if message.starts_with("GPU FFT kernel instantiated") {
                Some(&self.fft_kernels)
            } else if message.starts_with("GPU Multiexp kernel instantiated") {
                Some(&self.multiexp_kernels)
            } else if message.starts_with("Cannot instantiate GPU")
                || message.contains("Falling back to CPU")
            {
                Some(&self.fallbacks)
            } else {
                None
            };
            if let Some(counter) = counter {
                counter.fetch_add(1, Ordering::Relaxed);
            }
        }
        if record.level() <= self.print_level() {
            eprintln!(
                "{} {} {}: {}",
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|t| format!("{:.3}", t.as_secs_f64()))
                    .unwrap_or_default(),
                record.level(),
                record.target(),
                record.args()
            );
        }
    }

    fn flush(&self) {}
}
