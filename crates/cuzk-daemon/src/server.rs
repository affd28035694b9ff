//! Assembly and lifecycle: the configuration becomes backends, an engine, a parameter manager
//! and a [`Daemon`]; the listeners are bound; the gRPC server and the status port run until the
//! shutdown signal; then the drain: no new proofs, running ones given `drain_timeout` to finish,
//! the rest cancelled with a clear status, the servers stopped, the socket file removed.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk_groth16::backend::{select, DeviceOptions};
use cuzk_groth16::ProverBackend;
use cuzk_pipeline::sink::{StderrSink, TimelineSink, WriterSink};
use cuzk_pipeline::{Engine, EngineConfig};
use tokio::sync::{oneshot, watch};
use tokio_stream::wrappers::{TcpListenerStream, UnixListenerStream};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Server;

use crate::circuits::filecoin::FilecoinCircuits;
use crate::circuits::synthetic::SyntheticCircuits;
use crate::circuits::Circuits;
use crate::config::{CircuitSet, Config, Listen, TimelineTarget};
use crate::error::ServeError;
use crate::feed::Feed;
use crate::jobs::{Daemon, Parts};
use crate::live::Live;
use crate::memory::HostBudgets;
use crate::metrics::Metrics;
use crate::service::Service;
use crate::sink::RecordSink;
use crate::srs::SrsManager;
use crate::transport::{bind_tcp, bind_unix, tls_config, TokenCheck};

fn setup(what: &str) -> impl FnOnce(String) -> ServeError + '_ {
    move |reason| ServeError::Setup(format!("{what}: {reason}"))
}

/// Where the servers ended up listening (port 0 resolved).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bound {
    pub grpc: Listen,
    pub status: Option<SocketAddr>,
}

/// What `serve` runs with beyond the configuration.
#[derive(Default)]
pub struct Serving {
    /// The backends to prove with, instead of those the configuration picks (tests bring
    /// their own, a slow or failing one say).
    pub backends: Option<Vec<Arc<dyn ProverBackend>>>,
    /// Told where the servers listen once they do.
    pub on_bound: Option<oneshot::Sender<Bound>>,
}

impl std::fmt::Debug for Serving {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Serving").finish_non_exhaustive()
    }
}

/// The circuits the configuration names. For Filecoin's this settles filecoin-proofs'
/// parameter directory, so it must run before any other Filecoin call in the process.
pub fn circuits(config: &Config) -> Result<Arc<dyn Circuits>, ServeError> {
    Ok(match config.circuits {
        CircuitSet::Filecoin => Arc::new(
            FilecoinCircuits::new(
                config.param_cache.as_deref(),
                config.compiled_synthesis,
                config.test_params,
            )
            .map_err(setup("srs.param_cache"))?,
        ),
        CircuitSet::Synthetic => Arc::new(SyntheticCircuits),
    })
}

/// How the configuration opens each GPU (`cuzk doctor` opens them the same way).
pub fn device_options(config: &Config) -> DeviceOptions {
    DeviceOptions {
        staging_threads: config.staging_threads,
        memory_limit: config.gpu_memory_limit,
    }
}

/// The backends the configuration asks for.
fn backends(config: &Config) -> Result<Vec<Arc<dyn ProverBackend>>, ServeError> {
    let options = device_options(config);
    let selection = select(config.backend, config.devices.as_deref(), &options)
        .map_err(|e| ServeError::Setup(format!("gpus: {e}")))?;
    if let Some(why) = selection.fallback {
        tracing::warn!("no usable GPU ({why}); proving on the CPU");
    }
    Ok(selection.backends)
}

fn timeline(target: &TimelineTarget) -> Result<Option<Arc<dyn TimelineSink>>, ServeError> {
    Ok(match target {
        TimelineTarget::Off => None,
        TimelineTarget::Stderr => Some(Arc::new(StderrSink)),
        TimelineTarget::File(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| {
                    ServeError::Setup(format!("logging.timeline: {}: {e}", path.display()))
                })?;
            Some(Arc::new(WriterSink::new(file)))
        }
    })
}

/// Builds the daemon the configuration describes (the engine starts on the current runtime).
pub fn build(
    config: &Config,
    circuits: Arc<dyn Circuits>,
    backends_override: Option<Vec<Arc<dyn ProverBackend>>>,
) -> Result<Arc<Daemon>, ServeError> {
    let devices = match backends_override {
        Some(devices) => devices,
        None => backends(config)?,
    };
    let memory = HostBudgets::from_config(config)?;
    let (engine_budget, srs_budget) = (memory.partitions, memory.sets);
    // One synthesis task per core by default, as `cuzk bench`: a task waits on its partition's
    // memory reservation and on the blocking pool, so fewer would leave cores idle.
    let workers = config
        .partition_workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    let mut engine_config = EngineConfig::new(workers, engine_budget);
    // Partitions are taken oldest job first, so a bound on jobs only idles workers when the
    // oldest jobs have no partition left to take (one-partition PoSt, 2 KiB sectors).
    engine_config.synthesis_concurrency = config.jobs_synthesizing.unwrap_or(workers);
    engine_config.gpu_workers_per_device = config.gpu_workers_per_device;
    engine_config.compiled_synthesis = config.compiled_synthesis;
    engine_config.synthesis_nice = config.synthesis_nice;
    engine_config.group_by_circuit = config.group_by_circuit;
    let metrics = Arc::new(Metrics::new().map_err(|e| ServeError::Setup(format!("metrics: {e}")))?);
    let live = Arc::new(Live::new(devices.len(), config.gpu_workers_per_device));
    let feed = Arc::new(Feed::new(config.page_records));
    let sink = Arc::new(RecordSink {
        metrics: Arc::clone(&metrics),
        live: Arc::clone(&live),
        feed: Arc::clone(&feed),
        log: timeline(&config.timeline)?,
    });
    let gpu_workers = devices.len() * config.gpu_workers_per_device;
    let engine = Engine::start(engine_config, devices, sink)
        .map_err(|e| ServeError::Setup(format!("the engine: {e}")))?;
    let devices = engine.lend_devices();
    let srs = SrsManager::new(
        Arc::clone(&circuits),
        devices.clone(),
        memory.clone(),
        config.eviction_min_idle,
        Arc::clone(&metrics),
    );
    tracing::info!(
        devices = ?devices.backends().map(|d| d.name().to_owned()).collect::<Vec<_>>(),
        engine_budget,
        srs_budget,
        host_memory = %memory.total,
        "daemon built"
    );
    Ok(Daemon::start(Parts {
        engine,
        circuits,
        srs,
        devices,
        metrics,
        live,
        feed,
        retention: config.result_retention,
        gpu_workers,
        partition_workers: workers,
        srs_budget,
        pinned_limit: config.pinned_limit,
    }))
}

/// Serves until `shutdown` resolves, then drains and returns.
pub async fn serve(
    config: Config,
    circuits: Arc<dyn Circuits>,
    serving: Serving,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let daemon = build(&config, circuits, serving.backends)?;

    let (stop, stopped) = watch::channel(false);
    let stop_signal = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };

    let status = match config.status_listen {
        Some(addr) => {
            let listener = bind_tcp(&addr.to_string()).await?;
            let local = listener.local_addr().ok();
            let daemon = Arc::clone(&daemon);
            let signal = stop_signal(stopped.clone());
            tokio::spawn(async move {
                if let Err(e) = crate::http::serve(listener, daemon, signal).await {
                    tracing::error!("status port: {e}");
                }
            });
            local
        }
        None => None,
    };

    let service = Service::new(Arc::clone(&daemon)).server();
    let mut builder = Server::builder()
        .http2_keepalive_interval(config.keepalive_interval)
        .http2_keepalive_timeout(Some(config.keepalive_timeout));
    let (grpc, socket_file, server) = match &config.listen {
        Listen::Unix(path) => {
            let listener = bind_unix(path, config.socket_mode)?;
            let incoming = UnixListenerStream::new(listener);
            let server = builder
                .add_service(service)
                .serve_with_incoming_shutdown(incoming, stop_signal(stopped.clone()));
            (
                Listen::Unix(path.clone()),
                Some(path.clone()),
                tokio::spawn(server),
            )
        }
        Listen::Tcp(addr) => {
            let listener = bind_tcp(addr).await?;
            let local = listener
                .local_addr()
                .map(|a| a.to_string())
                .unwrap_or_else(|_| addr.clone());
            if let Some(tls) = &config.tls {
                builder = builder.tls_config(tls_config(tls)?)?;
            }
            let check = TokenCheck::new(config.token.as_deref());
            let server = builder
                .add_service(InterceptedService::new(service, check))
                .serve_with_incoming_shutdown(
                    TcpListenerStream::new(listener),
                    stop_signal(stopped.clone()),
                );
            (Listen::Tcp(local), None, tokio::spawn(server))
        }
    };
    tracing::info!(grpc = %grpc, status = ?status, "serving cuzk.v1");
    if let Some(tell) = serving.on_bound {
        let _ = tell.send(Bound {
            grpc: grpc.clone(),
            status,
        });
    }

    for circuit in &config.preload {
        let daemon = Arc::clone(&daemon);
        let circuit = circuit.clone();
        tokio::spawn(async move {
            match daemon.srs().preload(&circuit).await {
                Ok(done) => tracing::info!(%circuit, load_ms = done.load_ms, "preloaded"),
                Err(e) => tracing::error!(%circuit, "srs.preload: {e}"),
            }
        });
    }

    tokio::pin!(server);
    tokio::select! {
        () = shutdown => {}
        ended = &mut server => {
            // The server stopped by itself: report why.
            return match ended {
                Ok(result) => result.map_err(ServeError::from),
                Err(e) => Err(ServeError::Setup(format!("the gRPC server task: {e}"))),
            };
        }
    }
    drain(&daemon, config.drain_timeout).await;
    let _ = stop.send(true);
    // In-flight calls have their answers; connections that linger are not waited for long.
    if tokio::time::timeout(Duration::from_secs(5), &mut server)
        .await
        .is_err()
    {
        tracing::warn!("connections still open after 5 s; closing them");
    }
    if let Some(path) = socket_file {
        remove_socket(&path);
    }
    tracing::info!("stopped");
    Ok(())
}

/// No new proofs; running ones get `timeout` to finish, with progress every 5 s; the rest are
/// cancelled with a clear status.
async fn drain(daemon: &Daemon, timeout: Duration) {
    daemon.begin_drain();
    let start = Instant::now();
    tracing::info!(
        unfinished = daemon.unfinished(),
        "shutting down: no new proofs; waiting up to {timeout:?} for the running ones"
    );
    let idle = daemon.idle();
    tokio::pin!(idle);
    loop {
        let left = timeout.saturating_sub(start.elapsed());
        if left.is_zero() {
            let unfinished = daemon.unfinished();
            if unfinished > 0 {
                tracing::warn!(
                    unfinished,
                    "drain timeout: cancelling the proofs still running"
                );
                daemon.cancel_all("cancelled: the daemon shut down before the proof finished");
                // Cancelled jobs end at once; give their tasks a moment to file the result.
                let _ = tokio::time::timeout(Duration::from_secs(5), daemon.idle()).await;
            }
            return;
        }
        match tokio::time::timeout(left.min(Duration::from_secs(5)), &mut idle).await {
            Ok(()) => return,
            Err(_) => tracing::info!(
                unfinished = daemon.unfinished(),
                left_s = timeout.saturating_sub(start.elapsed()).as_secs(),
                "draining"
            ),
        }
    }
}

fn remove_socket(path: &PathBuf) {
    if let Err(e) = std::fs::remove_file(path) {
        tracing::warn!(path = %path.display(), "removing the socket: {e}");
    }
}

/// SIGTERM or SIGINT; a second one ends the process at once, without the drain.
pub async fn termination() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot listen for SIGTERM/SIGINT; stop the daemon with SIGKILL");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM"),
        _ = int.recv() => tracing::info!("SIGINT"),
    }
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        tracing::warn!("second signal: exiting without finishing the drain");
        std::process::exit(1);
    });
}
