//! SnapDeals as cuzk runs them: each partition's empty-sector-update circuit and public inputs,
//! built from the partition proofs Curio sends exactly as filecoin-proofs'
//! `generate_empty_sector_update_proof_with_vanilla` builds them, as one engine job whose proof
//! is the partitions' proofs in order (filecoin's `EmptySectorUpdateProof` bytes).

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use cuzk_groth16::Parameters;
use cuzk_math::Scalar;
use cuzk_pipeline::engine::PartitionedCircuit;
use cuzk_pipeline::{unpanicked, JobRequest, Partition};
use cuzk_synth::{CompiledError, CompiledR1cs, ProvingAssignment, Sectioned};
use ff::PrimeField;
use filecoin_hashers::Domain;
use filecoin_proofs::{with_shape, DefaultPieceDomain, MerkleTreeTrait, TreeRHasher};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_update::circuit::PrivateInputs;
use storage_proofs_update::constants::TreeRDomain;
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PartitionProof,
    PublicInputs, PublicParams,
};

use crate::error::filecoin;
use crate::request_file::{byte_strings, bytes32, read_json, registered_proof, to_hex, write_json};
use crate::{FilecoinError, FilecoinJob, ParamFiles, RegisteredProof, UpdateProof};

/// What Curio sends for one SnapDeals update: the registered update proof, one vanilla proof per
/// partition (the FFI's bincode bytes), and the sector's old and new commitments (raw 32 bytes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapRequest {
    pub proof: UpdateProof,
    pub vanilla_proofs: Vec<Vec<u8>>,
    pub comm_r_old: [u8; 32],
    pub comm_r_new: [u8; 32],
    pub comm_d_new: [u8; 32],
}

/// A SnapDeals update as one engine job of its partitions, whose proofs concatenated are the
/// update's; its partition proofs decoded and checked first.
pub(crate) fn job(
    id: String,
    snap: &SnapRequest,
    params: Arc<Parameters>,
    files: &ParamFiles,
    compiled: Option<Arc<CompiledR1cs>>,
) -> Result<FilecoinJob, FilecoinError> {
    with_shape!(
        snap.proof.size.bytes(),
        build,
        id,
        snap,
        params,
        files,
        compiled,
    )
}

fn build<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    id: String,
    snap: &SnapRequest,
    params: Arc<Parameters>,
    files: &ParamFiles,
    compiled: Option<Arc<CompiledR1cs>>,
) -> Result<FilecoinJob, FilecoinError> {
    let mut circuits = SnapCircuits::<Tree>::new(snap)?;
    let inputs = circuits.public_inputs.first().map_or(0, Vec::len);
    files.check_fit(&params, inputs, compiled.as_deref())?;
    circuits.compiled = compiled;
    let partitions = circuits.circuits.len();
    let request = JobRequest::new(id, params, partitions, circuits);
    Ok(FilecoinJob::concatenated(request, partitions))
}

/// An update's circuits and public inputs, one per partition.
pub struct SnapCircuits<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    pub circuits: Vec<UpdateCircuit<Tree>>,
    pub public_inputs: Vec<Vec<Scalar>>,
    compiled: Option<Arc<CompiledR1cs>>,
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> SnapCircuits<Tree> {
    /// Decodes `snap`'s partition proofs (naming the one that does not decode), checks that the
    /// commitments are field elements and that each partition proof verifies against them (so a
    /// tampered proof or a wrong commitment is named now, not found as a proof that does not
    /// verify), then builds each partition's circuit and public inputs.
    pub fn new(snap: &SnapRequest) -> Result<Self, FilecoinError> {
        let invalid = |field: &str, reason: String| FilecoinError::ProofInput {
            proof: snap.proof.to_string(),
            field: field.to_owned(),
            reason,
        };
        let config = snap.proof.update_config()?;
        let partitions = usize::from(config.update_partitions);
        if snap.vanilla_proofs.len() != partitions {
            return Err(invalid(
                "vanilla_proofs",
                format!(
                    "{} partition proofs, {} has {partitions} partitions",
                    snap.vanilla_proofs.len(),
                    snap.proof
                ),
            ));
        }
        let vanilla = snap
            .vanilla_proofs
            .iter()
            .enumerate()
            .map(|(k, bytes)| {
                bincode::deserialize::<PartitionProof<Tree>>(bytes).map_err(|e| {
                    invalid(
                        &format!("vanilla_proofs[{k}]"),
                        format!(
                            "not a bincode update partition proof of {}: {e}",
                            snap.proof
                        ),
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        // filecoin's domains take any 32 bytes; the circuit and the verifier read them as field
        // elements, so a value past the modulus could never verify.
        let element = |field: &str, bytes: &[u8; 32]| -> Result<[u8; 32], FilecoinError> {
            match Scalar::from_repr_vartime(*bytes) {
                Some(_) => Ok(*bytes),
                None => Err(invalid(
                    field,
                    "not a field element (at least the modulus)".into(),
                )),
            }
        };
        let domain = |e: anyhow::Error| filecoin(format!("the commitments of {}", snap.proof))(e);
        let comm_r_old = TreeRDomain::try_from_bytes(&element("comm_r_old", &snap.comm_r_old)?)
            .map_err(domain)?;
        let comm_r_new = TreeRDomain::try_from_bytes(&element("comm_r_new", &snap.comm_r_new)?)
            .map_err(domain)?;
        let comm_d_new =
            DefaultPieceDomain::try_from_bytes(&element("comm_d_new", &snap.comm_d_new)?)
                .map_err(domain)?;
        let public_params = PublicParams::from_sector_size(snap.proof.size.bytes());
        let inputs = |k| PublicInputs {
            k,
            comm_r_old,
            comm_d_new,
            comm_r_new,
            h: config.h,
        };
        for (k, proof) in vanilla.iter().enumerate() {
            // filecoin's verifier panics on some malformed proofs instead of refusing them.
            let valid =
                unpanicked(|| EmptySectorUpdate::<Tree>::verify(&public_params, &inputs(k), proof))
                    .map_err(|message| {
                        invalid(
                            &format!("vanilla_proofs[{k}]"),
                            format!("malformed: {message}"),
                        )
                    })?
                    .map_err(filecoin(format!(
                        "verifying partition proof {k} of {}",
                        snap.proof
                    )))?;
            if !valid {
                return Err(invalid(
                    &format!("vanilla_proofs[{k}]"),
                    "does not verify against comm_r_old, comm_r_new and comm_d_new (tampered, \
                     or for another sector or partition)"
                        .into(),
                ));
            }
        }
        type Compound<Tree> = EmptySectorUpdateCompound<Tree>;
        let all = inputs(partitions);
        let mut circuits = Vec::with_capacity(partitions);
        let mut public_inputs = Vec::with_capacity(partitions);
        for (k, proof) in vanilla.iter().enumerate() {
            // Verified partition proofs can still hold values the circuit cannot read: its
            // construction panics on those.
            let (circuit, inputs) = unpanicked(|| {
                let circuit = <Compound<Tree> as CompoundProof<
                    '_,
                    EmptySectorUpdate<Tree>,
                    EmptySectorUpdateCircuit<Tree>,
                >>::circuit(&all, (), proof, &public_params, Some(k))
                .map_err(filecoin(format!(
                    "the circuit of partition {k} of {}",
                    snap.proof
                )))?;
                let inputs =
                    <Compound<Tree> as CompoundProof<
                        '_,
                        EmptySectorUpdate<Tree>,
                        EmptySectorUpdateCircuit<Tree>,
                    >>::generate_public_inputs(&all, &public_params, Some(k))
                    .map_err(filecoin(format!(
                        "the public inputs of partition {k} of {}",
                        snap.proof
                    )))?;
                Ok::<_, FilecoinError>((circuit, inputs))
            })
            .map_err(|message| {
                invalid(
                    &format!("vanilla_proofs[{k}]"),
                    format!("malformed: {message}"),
                )
            })??;
            circuits.push(UpdateCircuit(circuit));
            public_inputs.push(inputs);
        }
        Ok(SnapCircuits {
            circuits,
            public_inputs,
            compiled: None,
        })
    }
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> std::fmt::Debug for SnapCircuits<Tree> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnapCircuits")
            .field("partitions", &self.circuits.len())
            .field("compiled", &self.compiled.is_some())
            .finish_non_exhaustive()
    }
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> PartitionedCircuit
    for SnapCircuits<Tree>
{
    type Circuit = UpdateCircuit<Tree>;

    fn partition(&self, k: usize) -> Partition<UpdateCircuit<Tree>> {
        Partition {
            circuit: self.circuits[k].clone(),
            public_inputs: self.public_inputs[k].clone(),
        }
    }

    fn compiled(&self) -> Option<&Arc<CompiledR1cs>> {
        self.compiled.as_ref()
    }

    /// The challenges side by side, each with native hashes ([`crate::update_circuit`]).
    fn witness_compiled(
        &self,
        circuit: UpdateCircuit<Tree>,
        compiled: &Arc<CompiledR1cs>,
    ) -> Result<ProvingAssignment, CompiledError> {
        compiled.witness_sectioned(&circuit)
    }
}

/// filecoin's empty-sector-update circuit of one partition, which the engine clones per
/// synthesis (filecoin's type is not `Clone`, its parts are). Its challenges are its sections
/// in the re-implementation ([`crate::update_circuit`]); as a [`Circuit`] it is filecoin's own.
pub struct UpdateCircuit<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    pub EmptySectorUpdateCircuit<Tree>,
);

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> std::fmt::Debug
    for UpdateCircuit<Tree>
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpdateCircuit")
            .field("challenges", &self.0.priv_inputs.challenge_proofs.len())
            .finish_non_exhaustive()
    }
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> Clone for UpdateCircuit<Tree> {
    fn clone(&self) -> Self {
        UpdateCircuit(EmptySectorUpdateCircuit {
            pub_params: self.0.pub_params.clone(),
            pub_inputs: self.0.pub_inputs.clone(),
            // By field: the derived Clone asks the tree type to be Clone, which it is not.
            priv_inputs: PrivateInputs {
                comm_c: self.0.priv_inputs.comm_c,
                root_r_old: self.0.priv_inputs.root_r_old,
                root_r_new: self.0.priv_inputs.root_r_new,
                apex_leafs: self.0.priv_inputs.apex_leafs.clone(),
                challenge_proofs: self.0.priv_inputs.challenge_proofs.clone(),
            },
        })
    }
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> Circuit<Scalar>
    for UpdateCircuit<Tree>
{
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        self.0.synthesize(cs)
    }
}

/// Sections an update partition's challenges are grouped into, at most, and the challenges a
/// section has at least (2 KiB … 16 MiB: 10 challenges, 2 sections; larger: 86, 8 sections).
/// Each section reruns the prologue, whose apex tree is 127 SHA-256 hashes at 32 GiB (~7M rows,
/// a twelfth of the circuit; at 2 KiB 7 hashes, a third of it): one section per challenge would
/// record it 87 times over.
const UPDATE_SECTIONS: usize = 8;
const UPDATE_SECTION_CHALLENGES: usize = 4;

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> UpdateCircuit<Tree> {
    /// The challenges of sections [0, `section`): an even share each.
    fn challenges_before(&self, section: usize) -> usize {
        let challenges = self.0.priv_inputs.challenge_proofs.len();
        challenges * section / self.sections().max(1)
    }
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> Sectioned for UpdateCircuit<Tree> {
    fn sections(&self) -> usize {
        let challenges = self.0.priv_inputs.challenge_proofs.len();
        (challenges / UPDATE_SECTION_CHALLENGES).clamp(1, UPDATE_SECTIONS)
    }

    fn synthesize_sections<CS: ConstraintSystem<Scalar> + 'static>(
        &self,
        cs: &mut CS,
        range: Range<usize>,
    ) -> Result<(), SynthesisError> {
        let challenges = self.challenges_before(range.start)..self.challenges_before(range.end);
        crate::update_circuit::synthesize(cs, &self.0, challenges)
    }
}

/// A [`SnapRequest`] as a JSON file (what `cuzk seal-test-sector` writes and `cuzk prove snap`
/// reads): Curio's fields, bytes as 0x-prefixed hex.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestFile {
    /// The registered update proof's name (`StackedDrg2KiBV1` …) or number (0–4).
    registered_proof: serde_json::Value,
    comm_r_old: String,
    comm_r_new: String,
    comm_d_new: String,
    vanilla_proofs: Vec<String>,
}

impl SnapRequest {
    /// Reads a request file, naming the file and the field at fault.
    pub fn read(path: &Path) -> Result<Self, FilecoinError> {
        let raw: RequestFile = read_json(path)?;
        let proof = registered_proof(path, &raw.registered_proof)?;
        Ok(SnapRequest {
            proof,
            comm_r_old: bytes32(path, "comm_r_old", &raw.comm_r_old)?,
            comm_r_new: bytes32(path, "comm_r_new", &raw.comm_r_new)?,
            comm_d_new: bytes32(path, "comm_d_new", &raw.comm_d_new)?,
            vanilla_proofs: byte_strings(path, "vanilla_proofs", &raw.vanilla_proofs)?,
        })
    }

    /// Writes the request file atomically.
    pub fn write(&self, path: &Path) -> Result<(), FilecoinError> {
        write_json(
            path,
            &RequestFile {
                registered_proof: self.proof.name().into(),
                comm_r_old: to_hex(&self.comm_r_old),
                comm_r_new: to_hex(&self.comm_r_new),
                comm_d_new: to_hex(&self.comm_d_new),
                vanilla_proofs: self.vanilla_proofs.iter().map(|b| to_hex(b)).collect(),
            },
        )
    }
}
