//! A daemon served on a real socket for one test, and its orderly stop.

use std::sync::Arc;
use std::time::Duration;

use cuzk_daemon::circuits::Circuits;
use cuzk_daemon::client::{connect, Client};
use cuzk_daemon::config::Config;
use cuzk_daemon::server::ServeError;
use cuzk_daemon::{serve, Serving};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A running daemon: [`Served::stop`] shuts it down and checks that it ended cleanly.
pub struct Served {
    stop: oneshot::Sender<()>,
    task: JoinHandle<Result<(), ServeError>>,
}

/// Serves `config` with `circuits` on the engine's own backends and connects a client to it.
pub async fn start(config: Config, circuits: &Arc<dyn Circuits>) -> (Client, Served) {
    let (tell, bound) = oneshot::channel();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(serve(
        config,
        Arc::clone(circuits),
        Serving {
            backends: None,
            on_bound: Some(tell),
        },
        async {
            let _ = stopped.await;
        },
    ));
    let bound = bound.await.unwrap();
    let client = connect(&bound.grpc.to_string(), None).await.unwrap();
    (client, Served { stop, task })
}

impl Served {
    pub async fn stop(self) {
        self.stop.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(30), self.task)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
    }
}
