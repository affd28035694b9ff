//! Commit-2 as cuzk runs it: the StackedDRG circuit and public inputs of every partition, built
//! from a C1 output exactly as filecoin-proofs' `seal_commit_phase2` builds them, handed to the
//! engine as one job of N partitions.

use std::sync::Arc;

use bellperson::groth16::aggregate::AggregateVersion;
use cuzk_groth16::Parameters;
use cuzk_math::Scalar;
use cuzk_pipeline::engine::PartitionedCircuit;
use cuzk_pipeline::{unpanicked, JobRequest, Partition};
use cuzk_synth::{CompiledError, CompiledR1cs, ProvingAssignment};
use filecoin_hashers::Domain;
use filecoin_proofs::parameters::public_params;
use filecoin_proofs::{
    aggregate_seal_commit_proofs, as_safe_commitment, with_shape, DefaultPieceDomain,
    DefaultPieceHasher, MerkleTreeTrait, SealCommitOutput,
};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleProofTrait;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked;

use crate::error::filecoin;
use crate::filecoin_types::{Circuit, Compound, Drg};
use crate::partition::{PartitionCircuit, TreeDomain};
use crate::seal_proof::Revision;
use crate::{C1Output, FilecoinError, FilecoinJob, ParamFiles, SealProof};

/// A non-interactive PoRep's proof is the SnarkPack aggregate of its partition proofs, made by
/// filecoin-proofs with the SRS in its parameter directory.
#[derive(Debug)]
struct Aggregation {
    proof: SealProof,
    comm_r: [u8; 32],
    seed: [u8; 32],
}

/// A sector's commit-2 as one engine job: one partition per vanilla proof set
/// ([`SectorCircuits::new`]); for a non-interactive PoRep, its aggregation to finish with.
pub(crate) fn job(
    id: String,
    c1: &C1Output,
    params: Arc<Parameters>,
    files: &ParamFiles,
    compiled: Option<Arc<CompiledR1cs>>,
) -> Result<FilecoinJob, FilecoinError> {
    let aggregation = if c1.proof.revision == Revision::NonInteractive {
        files.require_srs()?;
        let commitments = c1.commitments()?;
        Some(Aggregation {
            proof: c1.proof,
            comm_r: commitments.comm_r,
            seed: commitments.seed,
        })
    } else {
        None
    };
    let (request, partitions) = with_shape!(
        c1.proof.size.bytes(),
        build,
        id,
        c1,
        params,
        files,
        compiled,
    )?;
    Ok(FilecoinJob {
        request,
        partitions,
        finish: ProofFinish { aggregation },
    })
}

/// The last step of a request's proof, after the engine proved its partitions.
#[derive(Debug, Default)]
pub struct ProofFinish {
    aggregation: Option<Aggregation>,
}

impl ProofFinish {
    /// The request's proof from its partition proofs concatenated: those bytes themselves, or
    /// for a non-interactive PoRep their SnarkPack aggregate.
    pub fn finish(self, proofs: Vec<u8>) -> Result<Vec<u8>, FilecoinError> {
        match self.aggregation {
            None => Ok(proofs),
            Some(aggregation) => with_shape!(
                aggregation.proof.size.bytes(),
                aggregate,
                &aggregation,
                proofs,
            ),
        }
    }
}

fn aggregate<Tree: 'static + MerkleTreeTrait>(
    aggregation: &Aggregation,
    proofs: Vec<u8>,
) -> Result<Vec<u8>, FilecoinError> {
    aggregate_seal_commit_proofs::<Tree>(
        &aggregation.proof.porep_config()?,
        &[aggregation.comm_r],
        &[aggregation.seed],
        &[SealCommitOutput { proof: proofs }],
        AggregateVersion::V2,
    )
    .map_err(filecoin("aggregating the partition proofs"))
}

/// A sector's partition circuits and their public inputs, built from its C1 output exactly as
/// filecoin-proofs' commit-2 builds them.
pub struct SectorCircuits<Tree: 'static + MerkleTreeTrait> {
    pub circuits: Vec<PartitionCircuit<Tree>>,
    pub public_inputs: Vec<Vec<Scalar>>,
    compiled: Option<Arc<CompiledR1cs>>,
}

impl<Tree: 'static + MerkleTreeTrait> SectorCircuits<Tree> {
    /// Checks `c1` as `seal_commit_phase2` does, verifies its vanilla proofs against its
    /// commitments (so a tampered C1 output is named as such, not found later as a circuit that
    /// cannot be proven), then builds each partition's circuit and public inputs.
    pub fn new(c1: &C1Output) -> Result<Self, FilecoinError> {
        let invalid = |field: &str, reason: &str| FilecoinError::C1Field {
            file: c1.source.clone(),
            field: field.to_owned(),
            reason: reason.to_owned(),
        };
        let config = c1.proof.porep_config()?;
        let output = c1.typed::<Tree>()?;
        for (name, value) in [
            ("comm_d", &output.comm_d),
            ("comm_r", &output.comm_r),
            ("seed", &output.seed),
        ] {
            if *value == [0; 32] {
                return Err(invalid(name, "all zero"));
            }
        }
        let partitions = usize::from(config.partitions);
        if output.vanilla_proofs.len() != partitions {
            return Err(invalid(
                "vanilla_proofs",
                &format!(
                    "{} partitions, {} has {partitions}",
                    output.vanilla_proofs.len(),
                    c1.proof
                ),
            ));
        }
        if let Some(k) = output.vanilla_proofs.iter().position(Vec::is_empty) {
            return Err(invalid(&format!("vanilla_proofs[{k}]"), "no proofs"));
        }

        let comm_r = as_safe_commitment(&output.comm_r, "comm_r")
            .map_err(|e| invalid("comm_r", &format!("{e:#}")))?;
        let comm_d = DefaultPieceDomain::try_from_bytes(&output.comm_d)
            .map_err(|e| invalid("comm_d", &format!("{e:#}")))?;
        let public_inputs = stacked::PublicInputs {
            replica_id: output.replica_id,
            tau: Some(stacked::Tau { comm_d, comm_r }),
            k: None,
            seed: Some(output.seed),
        };
        let vanilla_params =
            public_params::<Tree>(&config).map_err(filecoin("the public parameters"))?;
        // filecoin's verifier panics on some malformed proofs (a column of the wrong height, a
        // path of the wrong arity) instead of refusing them.
        let malformed =
            |message: String| invalid("vanilla_proofs", &format!("malformed: {message}"));
        let valid = unpanicked(|| {
            Drg::<Tree>::verify_all_partitions(
                &vanilla_params,
                &public_inputs,
                &output.vanilla_proofs,
            )
        })
        .map_err(malformed)?
        .map_err(filecoin("verifying the vanilla proofs"))?;
        // That check compares each comm_d path's stored root with comm_d without hashing the
        // path (commit 1 validates the paths when it makes them); hash them here, so a corrupted
        // path is named now, not found as a proof that does not verify.
        let comm_d_paths_hold = unpanicked(|| {
            output
                .vanilla_proofs
                .iter()
                .flatten()
                .all(|proof| proof.comm_d_proofs.verify())
        })
        .map_err(malformed)?;
        if !valid || !comm_d_paths_hold {
            return Err(FilecoinError::VanillaProofsInvalid {
                file: c1.source.clone(),
            });
        }

        let mut sector = SectorCircuits {
            circuits: Vec::with_capacity(partitions),
            public_inputs: Vec::with_capacity(partitions),
            compiled: None,
        };
        for (k, vanilla) in output.vanilla_proofs.iter().enumerate() {
            sector
                .circuits
                .push(partition_circuit(&public_inputs, vanilla).ok_or_else(|| {
                    invalid(
                        &format!("vanilla_proofs[{k}]"),
                        "its challenges disagree on comm_c or comm_r_last",
                    )
                })?);
            let inputs = unpanicked(|| {
                <Compound<Tree> as CompoundProof<'_, Drg<'_, Tree>, Circuit<Tree>>>::generate_public_inputs(
                    &public_inputs,
                    &vanilla_params,
                    Some(k),
                )
            })
            .map_err(malformed)?
            .map_err(filecoin(format!("the public inputs of partition {k}")))?;
            sector.public_inputs.push(inputs);
        }
        Ok(sector)
    }
}

/// Partition `vanilla`'s circuit as `StackedCompound::circuit` makes it (comm_c and comm_r_last
/// from its first challenge, which all must share); `None` if they do not.
fn partition_circuit<Tree: 'static + MerkleTreeTrait>(
    public_inputs: &stacked::PublicInputs<TreeDomain<Tree>, DefaultPieceDomain>,
    vanilla: &[stacked::Proof<Tree, DefaultPieceHasher>],
) -> Option<PartitionCircuit<Tree>> {
    let first = vanilla.first()?;
    let (comm_c, comm_r_last) = (first.comm_c(), first.comm_r_last());
    let consistent = vanilla
        .iter()
        .all(|p| p.comm_c() == comm_c && p.comm_r_last() == comm_r_last);
    let tau = public_inputs.tau.as_ref()?;
    consistent.then(|| PartitionCircuit {
        replica_id: public_inputs.replica_id,
        comm_d: tau.comm_d,
        comm_r: tau.comm_r,
        comm_r_last,
        comm_c,
        challenges: vanilla.to_vec(),
    })
}

impl<Tree: 'static + MerkleTreeTrait> std::fmt::Debug for SectorCircuits<Tree> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SectorCircuits")
            .field("partitions", &self.circuits.len())
            .field("compiled", &self.compiled.is_some())
            .finish_non_exhaustive()
    }
}

impl<Tree: 'static + MerkleTreeTrait> PartitionedCircuit for SectorCircuits<Tree> {
    type Circuit = PartitionCircuit<Tree>;

    fn partition(&self, k: usize) -> Partition<PartitionCircuit<Tree>> {
        Partition {
            circuit: self.circuits[k].clone(),
            public_inputs: self.public_inputs[k].clone(),
        }
    }

    fn compiled(&self) -> Option<&Arc<CompiledR1cs>> {
        self.compiled.as_ref()
    }

    /// The challenges side by side: a partition's latency is then its slowest challenge's.
    fn witness_compiled(
        &self,
        circuit: PartitionCircuit<Tree>,
        compiled: &Arc<CompiledR1cs>,
    ) -> Result<ProvingAssignment, CompiledError> {
        compiled.witness_sectioned(&circuit)
    }
}

fn build<Tree: 'static + MerkleTreeTrait>(
    id: String,
    c1: &C1Output,
    params: Arc<Parameters>,
    files: &ParamFiles,
    compiled: Option<Arc<CompiledR1cs>>,
) -> Result<(JobRequest, usize), FilecoinError> {
    let mut sector = SectorCircuits::<Tree>::new(c1)?;
    files.check_fit(&params, sector.public_inputs[0].len(), compiled.as_deref())?;
    sector.compiled = compiled;
    let partitions = sector.circuits.len();
    Ok((JobRequest::new(id, params, partitions, sector), partitions))
}
