//! A daemon served on a real socket for one test, and its orderly stop.

use std::path::{Path, PathBuf};

use std::sync::Arc;
use std::time::Duration;

use cuzk_daemon::circuits::Circuits;
use cuzk_daemon::client::{connect, Client};
use cuzk_daemon::config::Config;
use cuzk_daemon::proto::{self, AwaitProofResponse, SubmitProofRequest};
use cuzk_daemon::server::circuits;
use cuzk_daemon::{serve, ServeError, Serving};
use cuzk_filecoin::{
    post_vanilla_proofs, seal_random_sector, PostProof, RegisteredProof, SealProof, SealedSector,
    SectorSize,
};
use rand::RngCore;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The config of a daemon serving Filecoin's circuits on the CPU from the tests' one parameter
/// directory, on a unix socket in `dir`, with `total_budget` of host memory; and its circuits,
/// made here because making them settles filecoin-proofs' parameter directory.
pub fn filecoin_daemon(dir: &Path, total_budget: &str) -> (Config, Arc<dyn Circuits>) {
    let config = Config::from_toml(
        &format!(
            "[daemon]\nlisten = \"unix://{}\"\n[gpus]\nbackend = \"cpu\"\n[memory]\n\
             total_budget = \"{total_budget}\"\n[srs]\nparam_cache = \"{}\"\n",
            dir.join("cuzk.sock").display(),
            crate::filecoin::params_dir().display()
        ),
        "test.toml",
    )
    .unwrap();
    let circuits = circuits(&config).unwrap();
    (config, circuits)
}

/// A 2 KiB sector of miner 1000 sealed by filecoin-proofs in `<dir>/sector`: that directory and
/// the sector.
pub fn sealed_sector(dir: &Path, rng: &mut impl RngCore) -> (PathBuf, SealedSector) {
    let sector_dir = dir.join("sector");
    let proof = SealProof::current(SectorSize::S2KiB);
    let sector = seal_random_sector(proof, &sector_dir, Some(1000), rng).unwrap();
    (sector_dir, sector)
}

/// The WinningPoSt request Curio would send for `sector` (sealed into `sector_dir`) of miner
/// 1000 at `randomness`.
pub fn winning_request(
    id: &str,
    sector: &SealedSector,
    sector_dir: &Path,
    randomness: [u8; 32],
) -> SubmitProofRequest {
    let winning = PostProof::from_number(0).unwrap();
    SubmitProofRequest {
        request_id: id.into(),
        proof_kind: proto::ProofKind::WinningPost.into(),
        registered_proof: winning.number(),
        vanilla_proofs: post_vanilla_proofs(winning, &[(sector, sector_dir)], randomness).unwrap(),
        randomness: randomness.to_vec(),
        miner_id: 1000,
        ..Default::default()
    }
}

/// `submit` proven by the daemon `client` talks to: its answer, whatever the job's end.
pub async fn prove(client: &mut Client, submit: SubmitProofRequest) -> AwaitProofResponse {
    client
        .prove(proto::ProveRequest {
            submit: Some(submit),
        })
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap()
}

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
