//! `cuzk serve` (and `cuzk` with no command, as Curio runs its daemon): the configuration read
//! and checked before anything is bound, logging set up, then the daemon until SIGTERM/SIGINT
//! (a second signal exits at once).

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use cuzk_daemon::config::{Config, LogFormat, EXAMPLE};
use cuzk_daemon::server::circuits;
use cuzk_daemon::{serve, termination, Serving};
use tracing_subscriber::EnvFilter;

use crate::args::{GlobalArgs, ServeArgs};
use crate::Outcome;

/// Where Curio's daemon reads its configuration when given none; so does this one.
pub const DEFAULT_CONFIG: &str = "/data/zk/cuzk.toml";

/// Where the configuration came from, as the first log line says.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// `--config`.
    Given(PathBuf),
    /// No `--config`, and [`DEFAULT_CONFIG`] exists.
    DefaultPath(PathBuf),
    /// No `--config`, and nothing at the default path.
    Defaults(PathBuf),
}

impl Source {
    pub(crate) fn pick(given: Option<&Path>, default: &Path) -> Self {
        match given {
            Some(path) => Source::Given(path.to_owned()),
            None if default.is_file() => Source::DefaultPath(default.to_owned()),
            None => Source::Defaults(default.to_owned()),
        }
    }

    pub(crate) fn read(&self) -> Result<Config> {
        Ok(match self {
            Source::Given(path) | Source::DefaultPath(path) => Config::read(path)?,
            Source::Defaults(_) => Config::default(),
        })
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Given(path) => write!(f, "configuration {}", path.display()),
            Source::DefaultPath(path) => write!(
                f,
                "configuration {} (no --config: the default path)",
                path.display()
            ),
            Source::Defaults(path) => write!(
                f,
                "configuration: the defaults (no --config, and no {})",
                path.display()
            ),
        }
    }
}

pub fn run(global: &GlobalArgs, args: ServeArgs) -> Result<Outcome> {
    if args.print_sample_config {
        crate::output::write(format_args!("{EXAMPLE}"));
        return Ok(Outcome::Success);
    }
    let source = Source::pick(args.daemon.config.as_deref(), Path::new(DEFAULT_CONFIG));
    let mut config = source.read()?;
    if let Some(listen) = &args.daemon.listen {
        config.override_listen(listen)?;
    }
    let filter = log_filter(args.daemon.log_level.as_deref(), &config)?;
    if let (Some(threads), None) = (config.threads, global.threads) {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build_global()
            .with_context(|| format!("synthesis.threads = {threads}"))?;
    }
    if args.check_config {
        for warning in &config.warnings {
            eprintln!("cuzk: config warning: {warning}");
        }
        outln!("configuration ok: listen {}", config.listen);
        return Ok(Outcome::Success);
    }
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match config.log_format {
        LogFormat::Json => logs.json().init(),
        LogFormat::Text => logs
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
    }
    tracing::info!("cuzk {}: {source}", env!("CARGO_PKG_VERSION"));
    for warning in &config.warnings {
        tracing::warn!("config: {warning}");
    }
    // Before the runtime's threads exist: filecoin-proofs reads its parameter directory once,
    // from the environment.
    let circuits = circuits(&config)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(serve(config, circuits, Serving::default(), termination()))?;
    // Not the runtime's drop, which waits for every blocking task: a cancelled job's partition
    // still in synthesis would hold the exit past drain_timeout.
    runtime.shutdown_background();
    Ok(Outcome::Success)
}

/// What is logged: `--log-level`, else `RUST_LOG`, else `[logging] level`.
fn log_filter(flag: Option<&str>, config: &Config) -> Result<EnvFilter> {
    let env = std::env::var("RUST_LOG").ok().filter(|v| !v.is_empty());
    let (filter, from) = match (flag, env) {
        (Some(level), _) => (level.to_owned(), "--log-level"),
        (None, Some(env)) => (env, "RUST_LOG"),
        (None, None) => (config.log_level.clone(), "logging.level"),
    };
    EnvFilter::try_new(&filter).with_context(|| format!("{from} {filter:?}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn without_config_the_default_path_is_read_when_it_exists() {
        let dir = tempfile::tempdir().unwrap();
        let default = dir.path().join("cuzk.toml");
        let given = dir.path().join("given.toml");
        assert_eq!(
            Source::pick(Some(&given), &default),
            Source::Given(given.clone())
        );
        let none = Source::pick(None, &default);
        assert_eq!(none, Source::Defaults(default.clone()));
        assert!(none.to_string().contains("the defaults"), "{none}");
        assert_eq!(none.read().unwrap(), Config::default());

        std::fs::write(&default, "[daemon]\nlisten = \"127.0.0.1:9820\"\n").unwrap();
        let found = Source::pick(None, &default);
        assert_eq!(found, Source::DefaultPath(default.clone()));
        assert!(found.to_string().contains("the default path"), "{found}");
        assert_ne!(found.read().unwrap().listen, Config::default().listen);
    }
}
