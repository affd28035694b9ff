//! Filecoin's circuits, as Curio sends them: PoRep C2 today (every size and revision); the
//! other kinds are recognised and fail with a clear reason until the engine proves them.

use std::path::PathBuf;
use std::sync::Arc;

use base64::Engine as _;
use cuzk_filecoin::{
    compiled_r1cs, prover_id_of_miner, verify_seal, C1Output, FilecoinError, ParamFiles,
    R1csOrigin, SealProof, SectorIdentity, SectorJob, SectorSize, SECTOR_SIZES,
};
use cuzk_groth16::params_file::PointCheck;
use serde::Deserialize;

use super::{BuildJob, CircuitFiles, Circuits, ParamSet, PreparedJob, Work};
use crate::kinds::Kind;
use crate::proto::SubmitProofRequest;
use crate::DaemonError;

/// Filecoin's circuits, their parameters in filecoin-proofs' parameter directory.
#[derive(Debug)]
pub struct FilecoinCircuits {
    params_dir: PathBuf,
    /// Whether partitions are synthesized by the circuit's compiled R1CS (cached beside the
    /// parameters) instead of running the circuit's constraint code.
    compiled: bool,
}

impl FilecoinCircuits {
    /// Settles filecoin-proofs' parameter directory (it reads it once per process, so this must
    /// come before any other Filecoin call).
    pub fn new(params_dir: Option<&std::path::Path>, compiled: bool) -> Result<Self, String> {
        let params_dir = cuzk_filecoin::parameter_dir(params_dir).map_err(|e| e.to_string())?;
        Ok(FilecoinCircuits {
            params_dir,
            compiled,
        })
    }
}

/// The circuit id of a PoRep sector size: `porep-2k`, `porep-32g` (the public engine's names).
pub fn porep_circuit(size: SectorSize) -> String {
    let short = match size {
        SectorSize::S2KiB => "2k",
        SectorSize::S8MiB => "8m",
        SectorSize::S512MiB => "512m",
        SectorSize::S32GiB => "32g",
        SectorSize::S64GiB => "64g",
    };
    format!("porep-{short}")
}

fn porep_size(circuit: &str) -> Option<SectorSize> {
    SECTOR_SIZES
        .into_iter()
        .find(|size| porep_circuit(*size) == circuit)
}

fn unknown_circuit(circuit: &str) -> DaemonError {
    let known: Vec<String> = SECTOR_SIZES.into_iter().map(porep_circuit).collect();
    DaemonError::invalid(
        "circuit_id",
        format!("unknown circuit {circuit:?} (known: {})", known.join(", ")),
    )
}

/// The PoRep wrapper Curio puts in `vanilla_proof`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PorepWrapper {
    #[serde(rename = "SectorNum")]
    sector_num: u64,
    #[serde(rename = "Phase1Out")]
    phase1_out: String,
    #[serde(rename = "SectorSize")]
    sector_size: u64,
}

/// Checks that a nonzero size in `field` is the registered proof's.
fn check_size(field: &str, bytes: u64, proof: SealProof) -> Result<(), DaemonError> {
    if bytes == 0 || bytes == proof.size.bytes() {
        return Ok(());
    }
    Err(DaemonError::invalid(
        field,
        format!(
            "{bytes} bytes, but registered proof {} ({proof}) is for {} sectors ({} bytes)",
            proof.number(),
            proof.size,
            proof.size.bytes()
        ),
    ))
}

fn check_porep(request: SubmitProofRequest) -> Result<PorepJob, DaemonError> {
    let proof = SealProof::from_number(request.registered_proof).ok_or_else(|| {
        DaemonError::invalid(
            "registered_proof",
            format!(
                "{} is not a RegisteredSealProof (0–19)",
                request.registered_proof
            ),
        )
    })?;
    check_size("sector_size", request.sector_size, proof)?;
    let wrapper: PorepWrapper = serde_json::from_slice(&request.vanilla_proof).map_err(|e| {
        DaemonError::invalid(
            "vanilla_proof",
            format!("not the PoRep wrapper {{SectorNum, Phase1Out, SectorSize}}: {e}"),
        )
    })?;
    check_size("vanilla_proof.SectorSize", wrapper.sector_size, proof)?;
    if request.sector_number != 0 && request.sector_number != wrapper.sector_num {
        return Err(DaemonError::invalid(
            "sector_number",
            format!(
                "{}, but vanilla_proof.SectorNum is {}",
                request.sector_number, wrapper.sector_num
            ),
        ));
    }
    let c1_json = base64::engine::general_purpose::STANDARD
        .decode(wrapper.phase1_out.as_bytes())
        .map_err(|e| DaemonError::invalid("vanilla_proof.Phase1Out", format!("not base64: {e}")))?;
    let source = format!("request {:?} Phase1Out", request.request_id);
    let c1 = C1Output::from_json(&c1_json, &source, Some(proof))
        .and_then(|c1| c1.validate().map(|()| c1))
        .map_err(|e| match e {
            FilecoinError::C1SealProofMismatch { .. } => {
                DaemonError::invalid("registered_proof", e.to_string())
            }
            _ => DaemonError::invalid("vanilla_proof.Phase1Out", e.to_string()),
        })?;
    Ok(PorepJob {
        c1,
        identity: SectorIdentity {
            prover_id: prover_id_of_miner(request.miner_id),
            sector_id: wrapper.sector_num,
        },
        miner_id: request.miner_id,
        params_dir: PathBuf::new(),
    })
}

/// Checks the registered proof of a kind the engine does not prove yet, so a malformed request
/// is still named as such.
fn check_other(request: &SubmitProofRequest, kind: Kind) -> Result<(), DaemonError> {
    let (valid, what) = match kind {
        Kind::SnapDeals => (0..=4, "a RegisteredUpdateProof (0–4)"),
        Kind::WindowPost => (5..=14, "a WindowPoSt RegisteredPoStProof (5–14)"),
        Kind::WinningPost => (0..=4, "a WinningPoSt RegisteredPoStProof (0–4)"),
        Kind::PoRep => (0..=19, "a RegisteredSealProof (0–19)"),
    };
    if !valid.contains(&request.registered_proof) {
        return Err(DaemonError::invalid(
            "registered_proof",
            format!("{} is not {what}", request.registered_proof),
        ));
    }
    Ok(())
}

impl Circuits for FilecoinCircuits {
    fn check(&self, request: SubmitProofRequest, kind: Kind) -> Result<Work, DaemonError> {
        if kind != Kind::PoRep {
            check_other(&request, kind)?;
            return Ok(Work::Unsupported(format!(
                "{} proofs are not supported by this daemon yet (it proves PoRep C2)",
                kind.title()
            )));
        }
        let mut job = check_porep(request)?;
        job.params_dir = self.params_dir.clone();
        Ok(Work::Prove {
            circuit: porep_circuit(job.c1.proof.size),
            job: Box::new(job),
        })
    }

    fn on_disk(&self) -> Vec<String> {
        SECTOR_SIZES
            .into_iter()
            .map(porep_circuit)
            .filter(|circuit| {
                self.describe(circuit)
                    .is_ok_and(|files| files.bytes.is_some())
            })
            .collect()
    }

    fn describe(&self, circuit: &str) -> Result<CircuitFiles, DaemonError> {
        let size = porep_size(circuit).ok_or_else(|| unknown_circuit(circuit))?;
        let files = ParamFiles::new(&self.params_dir, SealProof::current(size)).map_err(|e| {
            DaemonError::Parameters {
                circuit: circuit.to_owned(),
                reason: e.to_string(),
            }
        })?;
        Ok(CircuitFiles {
            location: files.params.display().to_string(),
            bytes: std::fs::metadata(&files.params).ok().map(|m| m.len()),
        })
    }

    fn load(&self, circuit: &str) -> Result<ParamSet, String> {
        let size = porep_size(circuit).ok_or_else(|| unknown_circuit(circuit).to_string())?;
        let files = ParamFiles::new(&self.params_dir, SealProof::current(size))
            .map_err(|e| e.to_string())?;
        // Every proof is verified before it is returned, so the points need no check here.
        let params = files
            .load(PointCheck::Unchecked)
            .map_err(|e| e.to_string())?;
        let mut bytes = params.file_size() as u64;
        let compiled = if self.compiled {
            let (compiled, origin) = compiled_r1cs(&files).map_err(|e| e.to_string())?;
            if let R1csOrigin::RecordedUncached(e) = origin {
                tracing::warn!(file = %files.r1cs.display(), "could not cache the compiled R1CS: {e}");
            }
            bytes += std::fs::metadata(&files.r1cs).map_or(0, |m| m.len());
            Some(compiled)
        } else {
            None
        };
        Ok(ParamSet {
            params: Arc::new(params),
            compiled,
            bytes,
        })
    }
}

/// A checked PoRep C2 request.
struct PorepJob {
    c1: C1Output,
    identity: SectorIdentity,
    miner_id: u64,
    params_dir: PathBuf,
}

impl BuildJob for PorepJob {
    fn build(self: Box<Self>, id: &str, params: &ParamSet) -> Result<PreparedJob, String> {
        let PorepJob {
            c1,
            identity,
            miner_id,
            params_dir,
        } = *self;
        let proof = c1.proof;
        let files = ParamFiles::new(&params_dir, proof).map_err(|e| e.to_string())?;
        let commitments = c1.commitments().map_err(|e| e.to_string())?;
        let job = SectorJob::new(
            id,
            &c1,
            Arc::clone(&params.params),
            &files,
            params.compiled.clone(),
        )
        .map_err(|e| e.to_string())?;
        let (request, finish) = job.split();
        Ok(PreparedJob {
            request,
            finish: Box::new(move |output| {
                let bytes = finish
                    .finish(output.proof_bytes())
                    .map_err(|e| e.to_string())?;
                // The partitions were verified one by one; this checks the sector's proof as
                // Curio will, for this miner and sector.
                match verify_seal(proof, &commitments, identity, &bytes, &params_dir) {
                    Ok(true) => Ok(bytes),
                    Ok(false) => Err(format!(
                        "the proof does not pass filecoin-proofs' verify_seal for miner {miner_id} \
                         sector {} (is the C1 output this miner's and this sector's?)",
                        identity.sector_id
                    )),
                    Err(e) => Err(e.to_string()),
                }
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn circuit_ids_round_trip() {
        for size in SECTOR_SIZES {
            assert_eq!(porep_size(&porep_circuit(size)), Some(size));
        }
        assert_eq!(porep_circuit(SectorSize::S32GiB), "porep-32g");
        assert_eq!(porep_size("porep-1t"), None);
    }
}
