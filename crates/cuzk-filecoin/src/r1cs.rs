//! The compiled R1CS of a Filecoin circuit, cached beside its parameters: recorded once (for
//! PoRep from a sample partition, its challenges side by side, or else from the blank circuit;
//! for PoSt from the blank circuit, its sectors side by side; for SnapDeals from an update of a
//! zero replica, its challenges side by side), then every partition of that circuit is
//! synthesized by witness only (`cuzk_synth::CompiledR1cs`).

use std::io::ErrorKind;
use std::sync::Arc;

use cuzk_groth16::params_file::write_atomically;
use cuzk_synth::CompiledR1cs;
use filecoin_proofs::{with_shape, MerkleTreeTrait, TreeRHasher};

use cuzk_synth::Sectioned;
use filecoin_proofs::parameters::public_params;

use crate::error::{filecoin, io};
use crate::filecoin_types::{blank_circuit, blank_post_circuit, blank_update_circuit};
use crate::post::PostCircuit;
use crate::sample::zero_replica_update;
use crate::snap::UpdateCircuit;
use crate::{
    sample_sector, CircuitId, FilecoinError, ParamFiles, PartitionCircuit, Revision, SealProof,
    SectorCircuits, SnapCircuits, UpdateProof,
};

/// Where a compiled R1CS came from.
#[derive(Debug)]
pub enum R1csOrigin {
    /// Read from the cache file.
    Cache,
    /// Recorded now and written to the cache file.
    Recorded,
    /// Recorded now; the cache file could not be written (the next run records again).
    RecordedUncached(std::io::Error),
}

/// The compiled R1CS of `files.circuit`: from `files.r1cs` when it holds a current one,
/// else recorded and written there atomically. A damaged or older-format file is replaced.
pub fn compiled_r1cs(files: &ParamFiles) -> Result<(Arc<CompiledR1cs>, R1csOrigin), FilecoinError> {
    match std::fs::read(&files.r1cs) {
        Ok(bytes) => {
            if let Ok(compiled) =
                CompiledR1cs::from_bytes(&bytes, &files.r1cs.display().to_string())
            {
                return Ok((Arc::new(compiled), R1csOrigin::Cache));
            }
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(io(&files.r1cs)(e)),
    }
    let compiled = with_shape!(files.circuit.size().bytes(), record, files.circuit,)?;
    let origin = match write_atomically(&files.r1cs, |out| compiled.write(out)) {
        Ok(()) => R1csOrigin::Recorded,
        Err(e) => R1csOrigin::RecordedUncached(e),
    };
    Ok((Arc::new(compiled), origin))
}

fn record<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    circuit: CircuitId,
) -> Result<CompiledR1cs, FilecoinError> {
    let recorded = match circuit {
        CircuitId::Seal(proof) => match sample_partition::<Tree>(proof)? {
            Some(circuit) => CompiledR1cs::record_sectioned(&circuit),
            None => CompiledR1cs::record(blank_circuit::<Tree>(proof)?),
        },
        // The sectors side by side: a 32 GiB WindowPoSt's 2,349 took ~470 s on one thread.
        CircuitId::Post(proof) => {
            CompiledR1cs::record_sectioned(&PostCircuit::blank(blank_post_circuit::<Tree>(proof)?))
        }
        CircuitId::Update(proof) => match zero_replica_partition::<Tree>(proof)? {
            Some(circuit) => CompiledR1cs::record_sectioned(&circuit),
            None => CompiledR1cs::record(blank_update_circuit::<Tree>(proof)),
        },
    };
    recorded.map_err(|e| FilecoinError::Filecoin {
        what: format!("recording the R1CS of {circuit}"),
        reason: e.to_string(),
    })
}

/// A partition of a sample sector of `proof`'s size, whose challenges can be recorded side by
/// side (at 32 GiB, 18 of them: ~10 s on 16 cores instead of ~120 s in sequence). The values do
/// not matter, only the circuit's shape, which is the blank circuit's when its challenges per
/// partition are: a synthetic or non-interactive revision, which has no sample, is sampled as
/// the interactive one and used only if that holds. `None`: record the blank circuit.
fn sample_partition<Tree: 'static + MerkleTreeTrait>(
    proof: SealProof,
) -> Result<Option<PartitionCircuit<Tree>>, FilecoinError> {
    let sampled = match proof.revision {
        Revision::V1 | Revision::V1_1 => proof,
        Revision::Synthetic | Revision::NonInteractive => SealProof {
            revision: Revision::V1_1,
            ..proof
        },
    };
    let sector = sample_sector(sampled, None, &mut rand::rngs::OsRng)?.sector;
    let circuit = SectorCircuits::<Tree>::new(&sector.c1)?
        .circuits
        .into_iter()
        .next();
    let challenges = public_params::<Tree>(&proof.porep_config()?)
        .map_err(filecoin(format!("the public parameters of {proof}")))?
        .challenges
        .num_challenges_per_partition();
    Ok(circuit.filter(|c| c.sections() == challenges))
}

/// Partition 0 of an update (zero data of a zero replica), whose challenges can be recorded side
/// by side; its shape is the blank circuit's (an update's shape is its sector size's).
fn zero_replica_partition<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    proof: UpdateProof,
) -> Result<Option<UpdateCircuit<Tree>>, FilecoinError> {
    let update = zero_replica_update::<Tree>(proof.size)?;
    Ok(SnapCircuits::<Tree>::new(&update)?
        .circuits
        .into_iter()
        .next())
}
