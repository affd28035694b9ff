//! `cuzk serve`: the configuration read and checked before anything is bound, logging set up,
//! then the daemon until SIGTERM/SIGINT (a second signal exits at once).

use anyhow::{Context, Result};
use cuzk_daemon::config::{Config, EXAMPLE};
use cuzk_daemon::server::circuits;
use cuzk_daemon::{serve, termination, Serving};

use crate::args::{GlobalArgs, ServeArgs};
use crate::Outcome;

pub fn run(global: &GlobalArgs, args: ServeArgs) -> Result<Outcome> {
    if args.print_sample_config {
        print!("{EXAMPLE}");
        return Ok(Outcome::Success);
    }
    let mut config = match &args.config {
        Some(path) => Config::read(path)?,
        None => Config::default(),
    };
    if let Some(listen) = &args.listen {
        config.override_listen(listen)?;
    }
    if let (Some(threads), None) = (config.threads, global.threads) {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build_global()
            .with_context(|| format!("synthesis.threads = {threads}"))?;
    }
    for warning in &config.warnings {
        eprintln!("cuzk: config warning: {warning}");
    }
    if args.check_config {
        println!("configuration ok: listen {}", config.listen);
        return Ok(Outcome::Success);
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(&config.log_level)),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
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
