//! The compiled R1CS of a PoRep circuit, cached beside its parameters: recorded once from the
//! blank circuit, then every partition of every sector of that size is synthesized by witness
//! only (`cuzk_synth::CompiledR1cs`).

use std::io::ErrorKind;
use std::sync::Arc;

use cuzk_groth16::params_file::write_atomically;
use cuzk_synth::CompiledR1cs;
use filecoin_proofs::{with_shape, MerkleTreeTrait};

use crate::error::io;
use crate::shapes::blank_circuit;
use crate::{FilecoinError, ParamFiles, SealProof};

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

/// The compiled R1CS of `files.proof`'s circuit: from `files.r1cs` when it holds a current one,
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
    let compiled = with_shape!(files.proof.size.bytes(), record, files.proof,)?;
    let origin = match write_atomically(&files.r1cs, |out| compiled.write(out)) {
        Ok(()) => R1csOrigin::Recorded,
        Err(e) => R1csOrigin::RecordedUncached(e),
    };
    Ok((Arc::new(compiled), origin))
}

fn record<Tree: 'static + MerkleTreeTrait>(
    proof: SealProof,
) -> Result<CompiledR1cs, FilecoinError> {
    CompiledR1cs::record(blank_circuit::<Tree>(proof)?).map_err(|e| FilecoinError::Filecoin {
        what: format!("recording the R1CS of {proof}"),
        reason: e.to_string(),
    })
}
