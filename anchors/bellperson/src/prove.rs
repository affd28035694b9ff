//! A PoSt proven and verified by filecoin-proofs itself: `generate_winning_post_with_vanilla` or
//! `generate_single_window_post_with_vanilla` (bellperson's prover inside, on the GPU with the
//! `cuda` feature), then `verify_winning_post` or `verify_window_post`. The parameters are read by
//! filecoin-proofs from its parameter directory and kept in its in-memory cache after the first
//! proof.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use filecoin_hashers::Domain;
use filecoin_proofs::{
    generate_single_window_post_with_vanilla, generate_winning_post_with_vanilla,
    verify_window_post, verify_winning_post, with_shape, FallbackPoStSectorProof, MerkleTreeTrait,
    PoStConfig, PublicReplicaInfo,
};
use storage_proofs_core::parameter_cache::{
    parameter_cache_params_path, parameter_cache_verifying_key_path,
};
use storage_proofs_core::sector::SectorId;
use storage_proofs_core::settings::SETTINGS;

use crate::request::{PostKind, PostRequest};

/// The environment variable filecoin-proofs reads its parameter directory from.
const PARAMETER_CACHE_ENV: &str = "FIL_PROOFS_PARAMETER_CACHE";

/// Points filecoin-proofs at `dir` (which must exist). Its settings are read once, on first use,
/// so this must run before any other filecoin-proofs call, while no other thread runs.
pub fn use_parameter_dir(dir: &Path) -> Result<PathBuf> {
    let dir = dir
        .canonicalize()
        .with_context(|| format!("parameter directory {}", dir.display()))?;
    std::env::set_var(PARAMETER_CACHE_ENV, &dir);
    let settings = Path::new(&SETTINGS.parameter_cache);
    ensure!(
        settings == dir,
        "filecoin-proofs reads its parameters from {}, not {}",
        settings.display(),
        dir.display()
    );
    Ok(dir)
}

/// A proof and the time filecoin-proofs took to make it.
#[derive(Debug)]
pub struct Proved {
    /// 192 bytes: one Groth16 proof.
    pub proof: Vec<u8>,
    /// The wall time of filecoin-proofs' call alone (not decoding the vanilla proofs).
    pub elapsed: Duration,
}

/// One PoSt request, checked, ready to be proven again and again.
pub trait PostProver {
    /// A proof by filecoin-proofs' prover.
    fn prove(&self) -> Result<Proved>;

    /// `proof` checked by filecoin-proofs' verifier; `Ok(false)` is a proof that does not verify.
    fn verify(&self, proof: &[u8]) -> Result<bool>;
}

/// `request`'s prover, once its vanilla proofs decode and its parameter files are in the
/// parameter directory (see [`use_parameter_dir`]).
pub fn prover(request: &PostRequest) -> Result<Box<dyn PostProver>> {
    with_shape!(request.proof.sector_size(), prover_of, request)
}

fn prover_of<Tree: 'static + MerkleTreeTrait>(
    request: &PostRequest,
) -> Result<Box<dyn PostProver>> {
    let config = request.proof.post_config()?;
    let kind = request.proof.kind();
    let identifier = config
        .get_cache_identifier::<Tree>()
        .with_context(|| format!("the parameter identifier of {}", request.proof))?;
    for file in [
        parameter_cache_params_path(&identifier),
        parameter_cache_verifying_key_path(&identifier),
    ] {
        ensure!(
            file.is_file(),
            "{} has no parameter file {} (make test parameters with `cuzk setup --{} {} --out DIR`)",
            request.proof,
            file.display(),
            kind.name(),
            request.proof.size_name(),
        );
    }
    if kind == PostKind::Winning && request.partition != 0 {
        bail!("a WinningPoSt has no partition {}", request.partition);
    }
    let prover = ShapedProver::<Tree> {
        config,
        kind,
        randomness: request.randomness,
        prover_id: request.prover_id,
        partition: request.partition,
        vanilla_proofs: request.vanilla_proofs.clone(),
        name: request.proof.to_string(),
        replicas: Vec::new(),
        tree: PhantomData,
    };
    let replicas = prover
        .vanilla()?
        .iter()
        .map(|proof| {
            let mut comm_r = [0u8; 32];
            proof.comm_r.write_bytes(&mut comm_r)?;
            Ok((proof.sector_id, PublicReplicaInfo::new(comm_r)?))
        })
        .collect::<Result<_>>()?;
    Ok(Box::new(ShapedProver { replicas, ..prover }))
}

struct ShapedProver<Tree: 'static + MerkleTreeTrait> {
    config: PoStConfig,
    kind: PostKind,
    name: String,
    randomness: [u8; 32],
    prover_id: [u8; 32],
    partition: usize,
    /// The FFI's bincode bytes, decoded for each proof (filecoin-proofs takes them by value and
    /// they are not `Clone`).
    vanilla_proofs: Vec<Vec<u8>>,
    /// The sectors as a verifier is given them: (sector id, comm_r).
    replicas: Vec<(SectorId, PublicReplicaInfo)>,
    tree: PhantomData<Tree>,
}

impl<Tree: 'static + MerkleTreeTrait> ShapedProver<Tree> {
    /// The vanilla proofs decoded, in the verifier's order (by sector id, from a map) as cuzk
    /// orders them.
    fn vanilla(&self) -> Result<Vec<FallbackPoStSectorProof<Tree>>> {
        let mut vanilla = self
            .vanilla_proofs
            .iter()
            .enumerate()
            .map(|(i, bytes)| {
                bincode::deserialize::<FallbackPoStSectorProof<Tree>>(bytes).with_context(|| {
                    format!(
                        "vanilla_proofs[{i}]: not a bincode fallback-PoSt sector proof of {}",
                        self.name
                    )
                })
            })
            .collect::<Result<Vec<_>>>()?;
        vanilla.sort_by_key(|proof| u64::from(proof.sector_id));
        Ok(vanilla)
    }
}

impl<Tree: 'static + MerkleTreeTrait> PostProver for ShapedProver<Tree> {
    fn prove(&self) -> Result<Proved> {
        let vanilla = self.vanilla()?;
        let start = Instant::now();
        let proof = match self.kind {
            PostKind::Winning => generate_winning_post_with_vanilla::<Tree>(
                &self.config,
                &self.randomness,
                self.prover_id,
                vanilla,
            )
            .context("generate_winning_post_with_vanilla"),
            PostKind::Window => generate_single_window_post_with_vanilla::<Tree>(
                &self.config,
                &self.randomness,
                self.prover_id,
                vanilla,
                self.partition,
            )
            .map(|proof| proof.0)
            .context("generate_single_window_post_with_vanilla"),
        }?;
        Ok(Proved {
            proof,
            elapsed: start.elapsed(),
        })
    }

    fn verify(&self, proof: &[u8]) -> Result<bool> {
        let replicas = self.replicas.clone();
        match self.kind {
            PostKind::Winning => verify_winning_post::<Tree>(
                &self.config,
                &self.randomness,
                &replicas,
                self.prover_id,
                proof,
            )
            .context("verify_winning_post"),
            PostKind::Window => {
                // verify_window_post takes all of a PoSt's sectors, from partition 0.
                ensure!(
                    self.partition == 0,
                    "verify_window_post needs every partition's sectors; this request is \
                     partition {} alone",
                    self.partition
                );
                let replicas: BTreeMap<_, _> = replicas.into_iter().collect();
                verify_window_post::<Tree>(
                    &self.config,
                    &self.randomness,
                    &replicas,
                    self.prover_id,
                    proof,
                )
                .context("verify_window_post")
            }
        }
    }
}
