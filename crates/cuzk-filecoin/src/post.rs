//! WinningPoSt and WindowPoSt as cuzk runs them: the fallback PoSt circuit and its public inputs,
//! built from the per-sector vanilla proofs Curio sends exactly as filecoin-proofs'
//! `generate_winning_post_with_vanilla` and `generate_single_window_post_with_vanilla` build
//! them, handed to the engine as a job of one partition.

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};

use cuzk_groth16::Parameters;
use cuzk_math::Scalar;
use cuzk_pipeline::engine::PartitionedCircuit;
use cuzk_pipeline::{unpanicked, JobRequest, Partition};
use cuzk_synth::{CompiledError, CompiledR1cs, ProvingAssignment, Sectioned, Witness};
use filecoin_hashers::Domain;
use filecoin_proofs::{
    as_safe_commitment, partition_vanilla_proofs, single_partition_vanilla_proofs, with_shape,
    FallbackPoStSectorProof, MerkleTreeTrait,
};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::gadgets::constraint;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_post::fallback::{
    self, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound, PublicSector, Sector,
};
use typenum::U2;

use crate::error::filecoin;
use crate::filecoin_types::post_public_params;
use crate::inclusion::{self, TreePathLevel};
use crate::request_file::{byte_strings, bytes32, read_json, registered_proof, to_hex, write_json};
use crate::{FilecoinError, FilecoinJob, ParamFiles, PostKind, PostProof, RegisteredProof};

/// Partitions a WindowPoSt deadline may have (the miner actor's limit): a partition index past
/// it is refused, as it sizes the public inputs (the sectors of every partition before it).
pub const MAX_PARTITIONS_PER_DEADLINE: usize = 3000;

/// What Curio sends for one PoSt: the registered proof, the vanilla proof of each sector (the
/// FFI's bincode bytes), the 32-byte randomness, the prover (from the miner id) and, for
/// WindowPoSt, the partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostRequest {
    pub proof: PostProof,
    pub vanilla_proofs: Vec<Vec<u8>>,
    pub randomness: [u8; 32],
    pub prover_id: [u8; 32],
    /// WindowPoSt's partition index; 0 for WinningPoSt.
    pub partition: usize,
}

/// A PoSt as one engine job of one partition, whose proof (192 bytes) is the PoSt's as
/// filecoin-proofs returns it; its vanilla proofs decoded and checked first.
pub(crate) fn job(
    id: String,
    post: &PostRequest,
    params: Arc<Parameters>,
    files: &ParamFiles,
    compiled: Option<Arc<CompiledR1cs>>,
) -> Result<FilecoinJob, FilecoinError> {
    let request = with_shape!(
        post.proof.size.bytes(),
        build,
        id,
        post,
        params,
        files,
        compiled,
    )?;
    Ok(FilecoinJob::concatenated(request, 1))
}

fn build<Tree: 'static + MerkleTreeTrait>(
    id: String,
    post: &PostRequest,
    params: Arc<Parameters>,
    files: &ParamFiles,
    compiled: Option<Arc<CompiledR1cs>>,
) -> Result<JobRequest, FilecoinError> {
    let mut circuits = PostCircuits::<Tree>::new(post)?;
    files.check_fit(&params, circuits.public_inputs.len(), compiled.as_deref())?;
    circuits.compiled = compiled;
    Ok(JobRequest::new(id, params, 1, circuits))
}

/// A PoSt's circuit and public inputs, built from its vanilla proofs as filecoin-proofs builds
/// them.
pub struct PostCircuits<Tree: 'static + MerkleTreeTrait> {
    pub circuit: PostCircuit<Tree>,
    pub public_inputs: Vec<Scalar>,
    compiled: Option<Arc<CompiledR1cs>>,
}

impl<Tree: 'static + MerkleTreeTrait> PostCircuits<Tree> {
    /// Decodes `post`'s vanilla proofs (naming the one that does not decode), verifies them
    /// against its randomness and prover (so a tampered proof or a wrong randomness is named now,
    /// not found as a proof that does not verify), then builds the circuit and public inputs.
    pub fn new(post: &PostRequest) -> Result<Self, FilecoinError> {
        let invalid = |field: String, reason: String| FilecoinError::ProofInput {
            proof: post.proof.to_string(),
            field,
            reason,
        };
        // filecoin's verifiers panic on some malformed vanilla proofs (a path of the wrong arity,
        // an index past it, no inclusion proofs) instead of refusing them.
        let malformed =
            |message: String| invalid("vanilla_proofs".into(), format!("malformed: {message}"));
        if post.partition >= MAX_PARTITIONS_PER_DEADLINE {
            return Err(invalid(
                "partition".into(),
                format!(
                    "{}: a deadline has at most {MAX_PARTITIONS_PER_DEADLINE} partitions",
                    post.partition
                ),
            ));
        }
        let config = post.proof.post_config()?;
        let mut vanilla = decode::<Tree>(post)?;
        // In the order the verifier takes the sectors (by id, from a map), whatever the request's.
        vanilla.sort_by_key(|proof| u64::from(proof.sector_id));
        let randomness = as_safe_commitment(&post.randomness, "randomness")
            .map_err(|e| invalid("randomness".into(), format!("{e:#}")))?;
        let prover_id = as_safe_commitment(&post.prover_id, "prover_id")
            .map_err(|e| invalid("prover_id".into(), format!("{e:#}")))?;
        let params = post_public_params::<Tree>(post.proof)?;
        let sectors: Vec<PublicSector<_>> = vanilla
            .iter()
            .map(|proof| PublicSector {
                id: proof.sector_id,
                comm_r: proof.comm_r,
            })
            .collect();
        let too_many = |limit: usize| {
            invalid(
                "vanilla_proofs".into(),
                format!("{} sectors, {} takes {limit}", vanilla.len(), post.proof),
            )
        };
        let (partition_proof, partition) = match post.proof.kind {
            PostKind::Winning => {
                if vanilla.len() != config.sector_count {
                    return Err(too_many(config.sector_count));
                }
                let inputs = fallback::PublicInputs {
                    randomness,
                    prover_id,
                    sectors: sectors.clone(),
                    k: None,
                };
                let mut partitions =
                    unpanicked(|| partition_vanilla_proofs(&config, &params, &inputs, 1, &vanilla))
                        .map_err(malformed)?
                        .map_err(|e| invalid("vanilla_proofs".into(), format!("{e:#}")))?;
                (partitions.remove(0), 0)
            }
            PostKind::WindowV1 | PostKind::Window => {
                if vanilla.len() > params.sector_count {
                    return Err(too_many(params.sector_count));
                }
                let inputs = fallback::PublicInputs {
                    randomness,
                    prover_id,
                    sectors: sectors.clone(),
                    k: Some(post.partition),
                };
                let proof = unpanicked(|| {
                    single_partition_vanilla_proofs(&config, &params, &inputs, &vanilla)
                })
                .map_err(malformed)?
                .map_err(|e| invalid("vanilla_proofs".into(), format!("{e:#}")))?;
                (proof, post.partition)
            }
        };
        // The public inputs see the sectors as the verifier does. WinningPoSt's one sector is
        // repeated for each of its challenges (one "sector" each in the circuit); a WindowPoSt
        // partition's sectors come behind `partition` partitions of others (whose values do not
        // matter here, only their number, which API 1.0's challenges count from).
        let placed = match post.proof.kind {
            PostKind::Winning => vec![sectors[0].clone(); params.sector_count],
            PostKind::WindowV1 | PostKind::Window => {
                let mut placed = vec![sectors[0].clone(); partition * params.sector_count];
                placed.extend(sectors);
                placed
            }
        };
        let inputs = fallback::PublicInputs {
            randomness,
            prover_id,
            sectors: placed,
            k: Some(partition),
        };
        // filecoin-proofs checks a WinningPoSt's vanilla proof at its first challenge only (its
        // one public sector meets the first of 66 sector proofs): every challenge here, so that a
        // wrong randomness is named now rather than found as a proof that does not verify. A
        // WindowPoSt partition's were all checked above.
        if post.proof.kind == PostKind::Winning {
            let opens =
                unpanicked(|| FallbackPoSt::<Tree>::verify(&params, &inputs, &partition_proof))
                    .map_err(malformed)?
                    .map_err(|e| invalid("vanilla_proofs".into(), format!("{e:#}")))?;
            if !opens {
                return Err(invalid(
                    "vanilla_proofs".into(),
                    "they do not open the leaves this randomness and prover challenge".into(),
                ));
            }
        }
        // Verified vanilla proofs can still hold values the circuit cannot read (a WindowPoSt
        // path hash past the modulus): the circuit's construction panics on those too.
        let (circuit, public_inputs) = unpanicked(|| {
            let circuit = <FallbackPoStCompound<Tree> as CompoundProof<
                '_,
                FallbackPoSt<'_, Tree>,
                FallbackPoStCircuit<Tree>,
            >>::circuit(
                &inputs,
                Default::default(),
                &partition_proof,
                &params,
                Some(partition),
            )
            .map_err(filecoin(format!("the circuit of {}", post.proof)))?;
            let public_inputs =
                <FallbackPoStCompound<Tree> as CompoundProof<
                    '_,
                    FallbackPoSt<'_, Tree>,
                    FallbackPoStCircuit<Tree>,
                >>::generate_public_inputs(&inputs, &params, Some(partition))
                .map_err(filecoin(format!("the public inputs of {}", post.proof)))?;
            Ok::<_, FilecoinError>((circuit, public_inputs))
        })
        .map_err(malformed)??;
        // The circuit's sectors are the vanilla proof's, in order (the last repeated to fill it).
        let paths: Vec<_> = partition_proof
            .sectors
            .iter()
            .map(|s| s.as_options())
            .collect();
        if paths.len() != circuit.sectors.len() {
            return Err(malformed(format!(
                "{} sector proofs for a circuit of {} sectors",
                paths.len(),
                circuit.sectors.len()
            )));
        }
        Ok(PostCircuits {
            circuit: PostCircuit {
                circuit,
                paths: Arc::new(paths),
            },
            public_inputs,
            compiled: None,
        })
    }
}

/// `post`'s vanilla proofs decoded (the FFI's bincode form), naming the one that does not.
fn decode<Tree: 'static + MerkleTreeTrait>(
    post: &PostRequest,
) -> Result<Vec<FallbackPoStSectorProof<Tree>>, FilecoinError> {
    let invalid = |field: String, reason: String| FilecoinError::ProofInput {
        proof: post.proof.to_string(),
        field,
        reason,
    };
    if post.vanilla_proofs.is_empty() {
        return Err(invalid("vanilla_proofs".into(), "none given".into()));
    }
    post.vanilla_proofs
        .iter()
        .enumerate()
        .map(|(i, bytes)| {
            bincode::deserialize(bytes).map_err(|e| {
                invalid(
                    format!("vanilla_proofs[{i}]"),
                    format!(
                        "not a bincode fallback-PoSt sector proof of {}: {e}",
                        post.proof
                    ),
                )
            })
        })
        .collect()
}

impl<Tree: 'static + MerkleTreeTrait> std::fmt::Debug for PostCircuits<Tree> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostCircuits")
            .field("circuit", &self.circuit)
            .field("public_inputs", &self.public_inputs.len())
            .field("compiled", &self.compiled.is_some())
            .finish_non_exhaustive()
    }
}

impl<Tree: 'static + MerkleTreeTrait> PartitionedCircuit for PostCircuits<Tree> {
    type Circuit = PostCircuit<Tree>;

    fn partition(&self, _k: usize) -> Partition<PostCircuit<Tree>> {
        Partition {
            circuit: PostCircuit {
                circuit: self.circuit.circuit.clone(),
                paths: Arc::clone(&self.circuit.paths),
            },
            public_inputs: self.public_inputs.clone(),
        }
    }

    fn compiled(&self) -> Option<&Arc<CompiledR1cs>> {
        self.compiled.as_ref()
    }

    /// The sectors side by side: a WinningPoSt's latency is then its slowest sector's (one of
    /// 66, a few Poseidon paths each) instead of all of them on one thread.
    fn witness_compiled(
        &self,
        circuit: PostCircuit<Tree>,
        compiled: &Arc<CompiledR1cs>,
    ) -> Result<ProvingAssignment, CompiledError> {
        compiled.witness_sectioned(&circuit)
    }
}

/// filecoin's fallback PoSt circuit, whose sectors are its sections: each sector's circuit reads
/// nothing another allocated, and the whole circuit is the sectors in order. Its witness comes
/// from the sectors re-implemented ([`sector_witness`]: Poseidon natively), which read their
/// paths from the vanilla proofs kept beside it (filecoin's circuit keeps them private).
pub struct PostCircuit<Tree: 'static + MerkleTreeTrait> {
    circuit: FallbackPoStCircuit<Tree>,
    /// Per sector, per challenge: the leaf's path in tree R.
    paths: Arc<Vec<Vec<Vec<TreePathLevel>>>>,
}

impl<Tree: 'static + MerkleTreeTrait> PostCircuit<Tree> {
    /// `circuit` (filecoin's blank circuit) for its shape alone, which is recorded sector by
    /// sector side by side: it has no witness (no paths).
    pub(crate) fn blank(circuit: FallbackPoStCircuit<Tree>) -> Self {
        PostCircuit {
            circuit,
            paths: Arc::new(Vec::new()),
        }
    }
}

impl<Tree: 'static + MerkleTreeTrait> std::fmt::Debug for PostCircuit<Tree> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostCircuit")
            .field("sectors", &self.circuit.sectors.len())
            .finish_non_exhaustive()
    }
}

impl<Tree: 'static + MerkleTreeTrait> Circuit<Scalar> for PostCircuit<Tree> {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        self.circuit.synthesize(cs)
    }
}

impl<Tree: 'static + MerkleTreeTrait> Sectioned for PostCircuit<Tree> {
    fn sections(&self) -> usize {
        self.circuit.sectors.len()
    }

    fn synthesize_sections<CS: ConstraintSystem<Scalar> + 'static>(
        &self,
        cs: &mut CS,
        range: Range<usize>,
    ) -> Result<(), SynthesisError> {
        let sectors = self
            .circuit
            .sectors
            .get(range.clone())
            .ok_or(SynthesisError::Unsatisfiable)?;
        for (i, sector) in range.zip(sectors) {
            sector.synthesize(&mut cs.namespace(|| format!("sector_{i}")))?;
        }
        Ok(())
    }

    fn witness_sections(&self, w: &mut Witness, range: Range<usize>) -> Result<(), SynthesisError> {
        let sectors = self.circuit.sectors.get(range.clone());
        let paths = self.paths.get(range);
        let (Some(sectors), Some(paths)) = (sectors, paths) else {
            return Err(SynthesisError::Unsatisfiable);
        };
        for (sector, paths) in sectors.iter().zip(paths) {
            sector_witness(w, sector, paths)?;
        }
        Ok(())
    }
}

/// storage-proofs-post's `Sector::synthesize` re-implemented, in the same order: comm_r_last,
/// comm_c and comm_r (public), comm_r = H(comm_c, comm_r_last), then each challenged leaf and its
/// inclusion under comm_r_last.
fn sector_witness<Tree: 'static + MerkleTreeTrait>(
    w: &mut Witness,
    sector: &Sector<Tree>,
    paths: &[Vec<TreePathLevel>],
) -> Result<(), SynthesisError> {
    let value = |v: Option<Scalar>| v.ok_or(SynthesisError::AssignmentMissing);
    if paths.len() != sector.leafs.len() {
        return Err(inclusion::malformed(format!(
            "{} paths for {} challenged leaves",
            paths.len(),
            sector.leafs.len()
        )));
    }
    let comm_r_last = inclusion::private(w, value(sector.comm_r_last)?)?;
    let comm_c = inclusion::private(w, value(sector.comm_c)?)?;
    let comm_r = inclusion::private(w, value(sector.comm_r)?)?;
    comm_r.inputize(&mut *w)?;
    let hash = inclusion::tree_hash::<Tree, U2, _>(w, &[comm_c, comm_r_last.clone()])?;
    constraint::equal(w, || "comm_r = H(comm_c, comm_r_last)", &comm_r, &hash);
    for (leaf, path) in sector.leafs.iter().zip(paths) {
        let leaf = inclusion::private(w, value(*leaf)?)?;
        inclusion::tree_inclusion::<Tree, _>(w, path.clone(), &comm_r_last, &leaf)?;
    }
    Ok(())
}

/// A [`PostRequest`] as a JSON file (what `cuzk seal-test-sector` writes and `cuzk prove
/// winning-post|window-post` reads): Curio's gRPC fields, bytes as 0x-prefixed hex.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestFile {
    /// The registered PoSt proof's name (`StackedDrgWinning2KiBV1` …) or number.
    registered_proof: serde_json::Value,
    randomness: String,
    prover_id: String,
    #[serde(default)]
    partition: usize,
    vanilla_proofs: Vec<String>,
}

impl PostRequest {
    /// Reads a request file, naming the file and the field at fault.
    pub fn read(path: &Path) -> Result<Self, FilecoinError> {
        let raw: RequestFile = read_json(path)?;
        let proof = registered_proof(path, &raw.registered_proof)?;
        Ok(PostRequest {
            proof,
            randomness: bytes32(path, "randomness", &raw.randomness)?,
            prover_id: bytes32(path, "prover_id", &raw.prover_id)?,
            partition: raw.partition,
            vanilla_proofs: byte_strings(path, "vanilla_proofs", &raw.vanilla_proofs)?,
        })
    }

    /// Writes the request file atomically.
    pub fn write(&self, path: &Path) -> Result<(), FilecoinError> {
        write_json(
            path,
            &RequestFile {
                registered_proof: self.proof.name().into(),
                randomness: to_hex(&self.randomness),
                prover_id: to_hex(&self.prover_id),
                partition: self.partition,
                vanilla_proofs: self.vanilla_proofs.iter().map(|b| to_hex(b)).collect(),
            },
        )
    }

    /// The sectors its vanilla proofs are for, as (sector id, comm_r): what a verifier is given.
    pub fn sectors(&self) -> Result<Vec<(u64, [u8; 32])>, FilecoinError> {
        with_shape!(self.proof.size.bytes(), sectors_of, self)
    }
}

fn sectors_of<Tree: 'static + MerkleTreeTrait>(
    post: &PostRequest,
) -> Result<Vec<(u64, [u8; 32])>, FilecoinError> {
    decode::<Tree>(post)?
        .iter()
        .map(|proof| {
            let comm_r: [u8; 32] =
                proof
                    .comm_r
                    .into_bytes()
                    .try_into()
                    .map_err(|_| FilecoinError::ProofInput {
                        proof: post.proof.to_string(),
                        field: "vanilla_proofs".into(),
                        reason: "a comm_r that is not 32 bytes".into(),
                    })?;
            Ok((u64::from(proof.sector_id), comm_r))
        })
        .collect()
}
