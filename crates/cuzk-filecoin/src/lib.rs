//! Filecoin PoRep commit-2 (C2) on cuzk: a sector's C1 output in, filecoin-proofs' proof bytes
//! out.
//!
//! - [`RegisteredProof`]: every registered proof's number and name, in one table
//!   (`registered`).
//! - [`seal_proof`]: registered seal proofs (`StackedDrg2KiBV1_1` …) and their PoRep configs.
//! - [`post`]: a WinningPoSt's or WindowPoSt partition's fallback PoSt circuit and public inputs,
//!   built from the vanilla proofs Curio sends as filecoin-proofs builds them, as one engine job.
//! - [`post_proof`]: registered PoSt proofs (`StackedDrgWinning2KiBV1` …) and their PoSt
//!   configs.
//! - [`snap`]: a SnapDeals update's empty-sector-update circuits and public inputs, one per
//!   partition, built from the partition proofs Curio sends, as one engine job.
//! - [`update_proof`]: registered update proofs (SnapDeals, one per sector size).
//! - [`c1`]: C1 outputs, raw or in the FFI's form, with errors naming the file and field.
//! - [`c2`]: each partition's StackedDRG circuit and public inputs, built as filecoin-proofs'
//!   `seal_commit_phase2` builds them, as one engine job.
//! - [`FilecoinRequest`]: a request of any of these kinds, proven as one [`FilecoinJob`].
//! - [`params`]: parameter files by filecoin-proofs' names, loaded for proving ([`LoadedSet`]);
//!   test parameters by cuzk's setup.
//! - [`manifest`]: filecoin-proofs' digests of the network's parameter files, and a circuit's
//!   files judged against them (missing, cut short, corrupted, or test parameters).
//! - [`r1cs`]: the circuit's compiled R1CS, cached beside the parameters, for witness-only
//!   synthesis.
//! - [`verify`]: `filecoin_proofs::verify_seal` on a proof.
//! - [`sealer`]: random sectors sealed by filecoin-proofs, for tests and benches.
//! - [`sample`]: committed-capacity sectors' C1 outputs made without sealing (any size, in
//!   seconds), from sparse trees.
//!
//! The circuits are filecoin's own (`storage-proofs-porep`, over `bellpepper-core` 0.2 like
//! cuzk-synth), called for recording and direct synthesis. One exception, for speed: a PoRep
//! partition's witness comes from a re-statement of its circuit (`partition::circuit`, tested
//! row for row against filecoin's) whose SHA-256s cuzk-synth computes natively. This crate glues
//! the circuits to the prover; it must not implement Groth16, schedule work itself or pick a
//! backend.
#![forbid(unsafe_code)]

pub mod c1;
pub mod c2;
mod error;
mod filecoin_types;
mod inclusion;
pub mod manifest;
pub mod params;
mod partition;
pub mod post;
pub mod post_proof;
pub mod r1cs;
mod registered;
mod request;
mod request_file;
pub mod sample;
pub mod seal_proof;
pub mod sealer;
pub mod snap;
mod update_circuit;
pub mod update_proof;
pub mod verify;

pub use c1::{C1Output, SealCommitments};
pub use c2::{ProofFinish, SectorCircuits};
pub use error::FilecoinError;
pub use params::{
    check_parameter_dir, parameter_dir, use_parameter_dir, CircuitId, LoadedR1cs, LoadedSet,
    ParamFiles,
};
pub use partition::PartitionCircuit;
pub use post::{PostCircuits, PostRequest, MAX_PARTITIONS_PER_DEADLINE};
pub use post_proof::{PostKind, PostProof};
pub use r1cs::{compiled_r1cs, R1csOrigin};
pub use registered::RegisteredProof;
pub use request::{FilecoinJob, FilecoinRequest};
pub use sample::{sample_sector, SampledSector};
pub use seal_proof::{Revision, SealProof, SectorSize, SECTOR_SIZES};
pub use sealer::{
    post_vanilla_proofs, prover_id_of_miner, random_field_bytes, seal_random_sector, snap_update,
    SealedSector,
};
pub use snap::{SnapCircuits, SnapRequest};
pub use update_proof::UpdateProof;
pub use verify::{verify_post, verify_seal, verify_snap, SectorIdentity};
