//! Progress on stderr for anything slow; silent under --json or when stderr is not a terminal.

use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// Shows one spinner per stage.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    visible: bool,
}

impl Progress {
    pub fn new(json: bool) -> Self {
        Progress { visible: !json }
    }

    /// Runs `work` under a spinner named `what`, returning its result and how long it took.
    pub fn stage<T>(&self, what: &str, work: impl FnOnce() -> T) -> (T, Duration) {
        let bar = if self.visible {
            let bar = ProgressBar::new_spinner().with_message(what.to_owned());
            if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} [{elapsed}]") {
                bar.set_style(style);
            }
            bar.enable_steady_tick(Duration::from_millis(100));
            bar
        } else {
            ProgressBar::hidden()
        };
        let start = Instant::now();
        let result = work();
        let elapsed = start.elapsed();
        bar.finish_and_clear();
        if self.visible {
            eprintln!("{what}: {:.3} s", elapsed.as_secs_f64());
        }
        (result, elapsed)
    }
}
