//! Filecoin's circuits, as Curio sends them: PoRep C2 (every size and revision), SnapDeals
//! updates, WinningPoSt and WindowPoSt partitions.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use base64::Engine as _;
use cuzk_filecoin::{
    compiled_r1cs, prover_id_of_miner, verify_post, verify_seal, verify_snap, C1Output, CircuitId,
    FilecoinError, FilecoinJob, FilecoinRequest, LoadedR1cs, LoadedSet, ParamFiles, PostKind,
    PostProof, PostRequest, R1csOrigin, RegisteredProof, SealProof, SectorIdentity, SectorSize,
    SnapRequest, UpdateProof, MAX_PARTITIONS_PER_DEADLINE, SECTOR_SIZES,
};
use cuzk_groth16::params_file::PointCheck;
use cuzk_groth16::setup::{parameters_for_compiled, Multiplier, ToxicWaste};
use cuzk_pipeline::Devices;
use serde::Deserialize;

use super::{BuildJob, CircuitFiles, Circuits, ParamSet, PreparedJob, SetFiles, Work};
use crate::config::TestParams;
use crate::error::DaemonError;
use crate::kinds::Kind;
use crate::proto::SubmitProofRequest;

/// Filecoin's circuits, their parameters in filecoin-proofs' parameter directory.
#[derive(Debug)]
pub struct FilecoinCircuits {
    params_dir: PathBuf,
    /// Whether partitions are synthesized by the circuit's compiled R1CS (cached beside the
    /// parameters) instead of running the circuit's constraint code.
    compiled: bool,
    /// Random parameters made at load instead of read from the files (`srs.test_params`).
    test_params: Option<TestParams>,
}

impl FilecoinCircuits {
    /// Settles filecoin-proofs' parameter directory (it reads it once per process, so this must
    /// come before any other Filecoin call).
    pub fn new(
        params_dir: Option<&std::path::Path>,
        compiled: bool,
        test_params: Option<TestParams>,
    ) -> Result<Self, String> {
        let params_dir = cuzk_filecoin::parameter_dir(params_dir).map_err(|e| e.to_string())?;
        Ok(FilecoinCircuits {
            params_dir,
            compiled,
            test_params,
        })
    }

    /// Random parameters for `files`' circuit (NOT a trusted setup) from its compiled R1CS,
    /// recorded and cached beside where the files would be when it is not there yet.
    fn test_set(
        &self,
        files: &ParamFiles,
        made: TestParams,
        devices: &Devices,
    ) -> Result<LoadedSet, String> {
        let start = Instant::now();
        let (r1cs, origin) = compiled_r1cs(files).map_err(|e| e.to_string())?;
        let took = start.elapsed();
        let toxic = ToxicWaste::random(&mut rand::rngs::OsRng);
        let start = Instant::now();
        let (params, place) = match made {
            TestParams::Cpu => {
                let params = parameters_for_compiled(&r1cs, &toxic, &Multiplier::Cpu);
                (params.map_err(|e| e.to_string())?, "the host".to_owned())
            }
            TestParams::Gpu => {
                let made = devices.in_service().find_map(|device| {
                    let params = device.test_parameters(&r1cs, &toxic)?;
                    Some((params, device.name().to_owned()))
                });
                match made {
                    Some((params, device)) => (params.map_err(|e| e.to_string())?, device),
                    None => {
                        return Err("srs.test_params = \"gpu\", but no GPU is in service".into())
                    }
                }
            }
        };
        let kept = match (&params.placed, made) {
            (Some(_), _) => ", kept there",
            (None, TestParams::Gpu) => ", brought to the host",
            (None, TestParams::Cpu) => "",
        };
        tracing::warn!(
            circuit = %files.circuit,
            seconds = start.elapsed().as_secs_f64(),
            "random test parameters (NOT a trusted setup) made on {place}{kept}"
        );
        Ok(LoadedSet {
            params: Arc::new(params),
            compiled: self.compiled.then_some(LoadedR1cs { r1cs, origin, took }),
        })
    }
}

/// Every circuit the daemon serves: for each size, PoRep's (the current revision's parameters
/// serve every revision of a size), WinningPoSt's, WindowPoSt's (both versions share them) and
/// SnapDeals'.
pub fn served() -> impl Iterator<Item = CircuitId> {
    SECTOR_SIZES.into_iter().flat_map(|size| {
        [
            CircuitId::Seal(SealProof::current(size)),
            CircuitId::Post(PostProof {
                kind: PostKind::Winning,
                size,
            }),
            CircuitId::Post(PostProof {
                kind: PostKind::Window,
                size,
            }),
            CircuitId::Update(UpdateProof { size }),
        ]
    })
}

/// The circuit id of a circuit's parameters, by the public engine's names: `porep-32g`,
/// `winning-32g`, `wpost-32g`, `snap-32g`.
pub fn circuit_name(circuit: CircuitId) -> String {
    let short = match circuit.size() {
        SectorSize::S2KiB => "2k",
        SectorSize::S8MiB => "8m",
        SectorSize::S512MiB => "512m",
        SectorSize::S32GiB => "32g",
        SectorSize::S64GiB => "64g",
    };
    let kind = match circuit {
        CircuitId::Seal(_) => "porep",
        CircuitId::Post(PostProof {
            kind: PostKind::Winning,
            ..
        }) => "winning",
        CircuitId::Post(_) => "wpost",
        CircuitId::Update(_) => "snap",
    };
    format!("{kind}-{short}")
}

/// The circuit a circuit id (`porep-32g` …) names, if the daemon serves it.
pub fn circuit_of(name: &str) -> Option<CircuitId> {
    served().find(|circuit| circuit_name(*circuit) == name)
}

fn unknown_circuit(circuit: &str) -> DaemonError {
    let known: Vec<String> = served().map(circuit_name).collect();
    DaemonError::invalid(
        "circuit_id",
        format!("unknown circuit {circuit:?} (known: {})", known.join(", ")),
    )
}

/// The PoRep wrapper Curio puts in `vanilla_proof`. Fields a later Curio may add are ignored, as
/// Curio's own daemon ignores them.
#[derive(Deserialize)]
struct PorepWrapper {
    #[serde(rename = "SectorNum")]
    sector_num: u64,
    #[serde(rename = "Phase1Out")]
    phase1_out: String,
    #[serde(rename = "SectorSize")]
    sector_size: u64,
}

/// Reads the wrapper, logging (at debug) the fields it ignores.
fn porep_wrapper(bytes: &[u8], request_id: &str) -> Result<PorepWrapper, DaemonError> {
    let invalid = |e: serde_json::Error| {
        DaemonError::invalid(
            "vanilla_proof",
            format!("not the PoRep wrapper {{SectorNum, Phase1Out, SectorSize}}: {e}"),
        )
    };
    let mut ignored = Vec::new();
    let mut json = serde_json::Deserializer::from_slice(bytes);
    let wrapper: PorepWrapper =
        serde_ignored::deserialize(&mut json, |path| ignored.push(path.to_string()))
            .map_err(invalid)?;
    json.end().map_err(invalid)?;
    if !ignored.is_empty() {
        tracing::debug!(job = request_id, ?ignored, "PoRep wrapper fields ignored");
    }
    Ok(wrapper)
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

fn check_porep(request: SubmitProofRequest) -> Result<FilecoinBuild, DaemonError> {
    let proof = SealProof::from_number(request.registered_proof).ok_or_else(|| {
        DaemonError::invalid(
            "registered_proof",
            format!(
                "{} is not a RegisteredSealProof ({})",
                request.registered_proof,
                SealProof::numbers(|_| true)
            ),
        )
    })?;
    check_size("sector_size", request.sector_size, proof)?;
    let wrapper = porep_wrapper(&request.vanilla_proof, &request.request_id)?;
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
    let identity = SectorIdentity {
        prover_id: prover_id_of_miner(request.miner_id),
        sector_id: wrapper.sector_num,
    };
    Ok(FilecoinBuild {
        request: FilecoinRequest::Porep(c1),
        sector: Some((identity, request.miner_id)),
        params_dir: PathBuf::new(),
        verify: true,
    })
}

/// A SnapDeals request's fields, checked as far as they go without parameters (the partition
/// proofs are decoded and verified against the commitments when the job is built).
fn check_snap(request: SubmitProofRequest) -> Result<SnapRequest, DaemonError> {
    let proof = UpdateProof::from_number(request.registered_proof).ok_or_else(|| {
        DaemonError::invalid(
            "registered_proof",
            format!(
                "{} is not a RegisteredUpdateProof ({})",
                request.registered_proof,
                UpdateProof::numbers(|_| true)
            ),
        )
    })?;
    if request.sector_size != 0 && request.sector_size != proof.size.bytes() {
        return Err(DaemonError::invalid(
            "sector_size",
            format!(
                "{} bytes, but registered proof {} ({proof}) is for {} sectors",
                request.sector_size,
                proof.number(),
                proof.size
            ),
        ));
    }
    let commitment = |field: &str, bytes: &[u8]| -> Result<[u8; 32], DaemonError> {
        bytes
            .try_into()
            .map_err(|_| DaemonError::invalid(field, format!("{} bytes, 32 expected", bytes.len())))
    };
    if request.vanilla_proofs.is_empty() {
        return Err(DaemonError::invalid(
            "vanilla_proofs",
            "none given (one per partition)",
        ));
    }
    Ok(SnapRequest {
        proof,
        comm_r_old: commitment("comm_r_old", &request.comm_r_old)?,
        comm_r_new: commitment("comm_r_new", &request.comm_r_new)?,
        comm_d_new: commitment("comm_d_new", &request.comm_d_new)?,
        vanilla_proofs: request.vanilla_proofs,
    })
}

/// A WinningPoSt or WindowPoSt request's fields, checked as far as they go without parameters
/// (the vanilla proofs are decoded and verified when the job is built).
fn check_post(request: SubmitProofRequest, kind: Kind) -> Result<PostRequest, DaemonError> {
    let winning = kind == Kind::WinningPost;
    let of_kind = |proof: PostProof| (proof.kind == PostKind::Winning) == winning;
    let proof = PostProof::from_number(request.registered_proof)
        .filter(|proof| of_kind(*proof))
        .ok_or_else(|| {
            let what = if winning { "WinningPoSt" } else { "WindowPoSt" };
            DaemonError::invalid(
                "registered_proof",
                format!(
                    "{} is not a {what} RegisteredPoStProof ({})",
                    request.registered_proof,
                    PostProof::numbers(of_kind)
                ),
            )
        })?;
    let randomness: [u8; 32] = request.randomness.as_slice().try_into().map_err(|_| {
        DaemonError::invalid(
            "randomness",
            format!("{} bytes, 32 expected", request.randomness.len()),
        )
    })?;
    if request.vanilla_proofs.is_empty() {
        return Err(DaemonError::invalid(
            "vanilla_proofs",
            "none given (one per sector)",
        ));
    }
    let partition = request.partition_index as usize;
    if partition >= MAX_PARTITIONS_PER_DEADLINE {
        return Err(DaemonError::invalid(
            "partition_index",
            format!("{partition}: a deadline has at most {MAX_PARTITIONS_PER_DEADLINE} partitions"),
        ));
    }
    Ok(PostRequest {
        proof,
        vanilla_proofs: request.vanilla_proofs,
        randomness,
        prover_id: prover_id_of_miner(request.miner_id),
        partition,
    })
}

impl Circuits for FilecoinCircuits {
    fn check(&self, request: SubmitProofRequest, kind: Kind) -> Result<Work, DaemonError> {
        match kind {
            Kind::SnapDeals => {
                let snap = check_snap(request)?;
                Ok(Work::Prove {
                    circuit: circuit_name(CircuitId::Update(snap.proof)),
                    job: Arc::new(FilecoinBuild {
                        request: FilecoinRequest::Snap(snap),
                        sector: None,
                        params_dir: self.params_dir.clone(),
                        verify: self.test_params.is_none(),
                    }),
                })
            }
            Kind::WinningPost | Kind::WindowPost => {
                let post = check_post(request, kind)?;
                // Both WindowPoSt versions are proven with the current one's parameters.
                let circuit = CircuitId::Post(PostProof {
                    kind: match post.proof.kind {
                        PostKind::Winning => PostKind::Winning,
                        PostKind::WindowV1 | PostKind::Window => PostKind::Window,
                    },
                    size: post.proof.size,
                });
                Ok(Work::Prove {
                    circuit: circuit_name(circuit),
                    job: Arc::new(FilecoinBuild {
                        request: FilecoinRequest::Post(post),
                        sector: None,
                        params_dir: self.params_dir.clone(),
                        verify: self.test_params.is_none(),
                    }),
                })
            }
            Kind::PoRep => {
                let mut job = check_porep(request)?;
                job.params_dir = self.params_dir.clone();
                job.verify = self.test_params.is_none();
                let size = job.request.circuit().size();
                Ok(Work::Prove {
                    circuit: circuit_name(CircuitId::Seal(SealProof::current(size))),
                    job: Arc::new(job),
                })
            }
        }
    }

    fn on_disk(&self) -> Vec<String> {
        served()
            .map(circuit_name)
            .filter(|circuit| {
                self.describe(circuit)
                    .is_ok_and(|files| files.bytes.is_some())
            })
            .collect()
    }

    fn describe(&self, circuit: &str) -> Result<CircuitFiles, DaemonError> {
        let id = circuit_of(circuit).ok_or_else(|| unknown_circuit(circuit))?;
        let files = ParamFiles::new(&self.params_dir, id).map_err(|e| DaemonError::Parameters {
            circuit: circuit.to_owned(),
            reason: e.to_string(),
        })?;
        Ok(CircuitFiles {
            location: files.params.display().to_string(),
            bytes: std::fs::metadata(&files.params).ok().map(|m| m.len()),
        })
    }

    fn set_files(&self, circuit: &str) -> Option<SetFiles> {
        let files = ParamFiles::new(&self.params_dir, circuit_of(circuit)?).ok()?;
        Some(SetFiles {
            header: files.header().ok()?,
            r1cs_bytes: self.compiled.then(|| files.r1cs_file_bytes().unwrap_or(0)),
        })
    }

    fn load(&self, circuit: &str, devices: &Devices) -> Result<ParamSet, String> {
        let id = circuit_of(circuit).ok_or_else(|| unknown_circuit(circuit).to_string())?;
        let files = ParamFiles::new(&self.params_dir, id).map_err(|e| e.to_string())?;
        let LoadedSet { params, compiled } = match self.test_params {
            Some(made) => self.test_set(&files, made, devices)?,
            // Every proof is verified before it is returned, so the points need no check here.
            None => files
                .load_set(PointCheck::Unchecked, self.compiled)
                .map_err(|e| e.to_string())?,
        };
        // A set made on a device holds no host copy.
        let key_bytes = match params.placed {
            Some(_) => 0,
            None => params.file_size() as u64,
        };
        let mut bytes = key_bytes;
        let r1cs_origin = compiled.as_ref().map(|loaded| {
            let note = r1cs_note(&loaded.origin, loaded.took);
            match loaded.origin {
                R1csOrigin::RecordedUncached(_) => {
                    tracing::warn!(circuit, file = %files.r1cs.display(), "compiled R1CS {note}")
                }
                _ => tracing::info!(circuit, file = %files.r1cs.display(), "compiled R1CS {note}"),
            }
            bytes += std::fs::metadata(&files.r1cs).map_or(0, |m| m.len());
            note
        });
        Ok(ParamSet {
            params,
            compiled: compiled.map(|loaded| loaded.r1cs),
            bytes,
            key_bytes,
            r1cs_origin,
        })
    }
}

/// Where a compiled R1CS came from and how long it took, as status and logs say it.
fn r1cs_note(origin: &R1csOrigin, took: std::time::Duration) -> String {
    let took = match took.as_secs_f64() {
        s if s < 1.0 => format!("{} ms", took.as_millis()),
        s => format!("{s:.1} s"),
    };
    match origin {
        R1csOrigin::Cache => format!("read from the cache in {took}"),
        R1csOrigin::Recorded => format!("recorded in {took} and cached"),
        R1csOrigin::RecordedUncached(e) => format!("recorded in {took}, not cached: {e}"),
    }
}

/// A checked request, proven as one job; its proof is returned only once filecoin-proofs'
/// verifier accepts it as Curio's chain will check it.
struct FilecoinBuild {
    request: FilecoinRequest,
    /// A PoRep's sector and miner: the statement verify_seal checks.
    sector: Option<(SectorIdentity, u64)>,
    params_dir: PathBuf,
    /// Whether filecoin's verifier checks the proof: not with test parameters, whose verifying
    /// key it does not know (the engine still verifies every partition against them).
    verify: bool,
}

impl BuildJob for FilecoinBuild {
    fn build(self: Arc<Self>, id: &str, params: &ParamSet) -> Result<PreparedJob, String> {
        let files =
            ParamFiles::new(&self.params_dir, self.request.circuit()).map_err(|e| e.to_string())?;
        let FilecoinJob {
            request, finish, ..
        } = self
            .request
            .job(
                id,
                Arc::clone(&params.params),
                &files,
                params.compiled.clone(),
            )
            .map_err(|e| e.to_string())?;
        Ok(PreparedJob {
            request,
            finish: Box::new(move |output| {
                let bytes = finish
                    .finish(output.proof_bytes())
                    .map_err(|e| e.to_string())?;
                self.verified(bytes)
            }),
        })
    }
}

impl FilecoinBuild {
    /// `bytes` if filecoin-proofs' verifier of the request's kind accepts them, else why not.
    /// The engine verified each partition against its public inputs; this checks the whole
    /// statement where filecoin's verifier can see it: a sector for this miner, an update
    /// against its three commitments, a WinningPoSt or WindowPoSt's first partition.
    fn verified(&self, bytes: Vec<u8>) -> Result<Vec<u8>, String> {
        if !self.verify {
            return Ok(bytes);
        }
        let dir = &self.params_dir;
        let (verdict, verifier) = match (&self.request, self.sector) {
            (FilecoinRequest::Porep(c1), Some((identity, miner_id))) => {
                let commitments = c1.commitments().map_err(|e| e.to_string())?;
                (
                    verify_seal(c1.proof, &commitments, identity, &bytes, dir),
                    format!(
                        "verify_seal for miner {miner_id} sector {} (is the C1 output this \
                         miner's and this sector's?)",
                        identity.sector_id
                    ),
                )
            }
            (FilecoinRequest::Snap(snap), _) => (
                verify_snap(snap, &bytes, dir),
                format!(
                    "verify_empty_sector_update_proof for {} (are the partition proofs this \
                     update's?)",
                    snap.proof
                ),
            ),
            (FilecoinRequest::Post(post), _)
                if post.proof.kind == PostKind::Winning || post.partition == 0 =>
            {
                let sectors = post.sectors().map_err(|e| e.to_string())?;
                let (proof, randomness, prover) = (post.proof, post.randomness, post.prover_id);
                (
                    verify_post(proof, randomness, prover, &sectors, &bytes, dir),
                    format!(
                        "the verifier of {proof} (are the vanilla proofs this miner's and this \
                         randomness's?)"
                    ),
                )
            }
            // A later WindowPoSt partition: filecoin's verifier needs the partitions before it.
            (FilecoinRequest::Post(_), _) => return Ok(bytes),
            // Never built so (check_porep sets it), but a proof is not returned unchecked.
            (FilecoinRequest::Porep(_), None) => {
                return Err("a PoRep proof without its sector's identity cannot be verified".into())
            }
        };
        match verdict {
            Ok(true) => Ok(bytes),
            Ok(false) => Err(format!(
                "the proof does not pass filecoin-proofs' {verifier}"
            )),
            Err(e) => Err(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn r1cs_notes_say_where_and_how_long() {
        let ms = std::time::Duration::from_millis;
        assert_eq!(
            r1cs_note(&R1csOrigin::Cache, ms(812)),
            "read from the cache in 812 ms"
        );
        assert_eq!(
            r1cs_note(&R1csOrigin::Recorded, ms(31_400)),
            "recorded in 31.4 s and cached"
        );
        let full = std::io::Error::other("disk full");
        assert_eq!(
            r1cs_note(&R1csOrigin::RecordedUncached(full), ms(2_000)),
            "recorded in 2.0 s, not cached: disk full"
        );
    }

    /// A partition index sizes a WindowPoSt's public inputs (every earlier partition's sectors):
    /// u32::MAX once aborted the process asking for 343 GB.
    #[test]
    fn a_partition_past_a_deadlines_limit_is_refused_before_anything_is_sized() {
        let request = |partition_index| SubmitProofRequest {
            proof_kind: 3,
            registered_proof: 10,
            randomness: vec![0; 32],
            vanilla_proofs: vec![vec![0]],
            partition_index,
            ..Default::default()
        };
        for partition in [MAX_PARTITIONS_PER_DEADLINE as u32, u32::MAX] {
            let error = check_post(request(partition), Kind::WindowPost).unwrap_err();
            assert!(
                error.to_string().starts_with("partition_index: "),
                "{error}"
            );
        }
        let last = MAX_PARTITIONS_PER_DEADLINE as u32 - 1;
        assert!(check_post(request(last), Kind::WindowPost).is_ok());
    }

    #[test]
    fn circuit_ids_round_trip() {
        for circuit in served() {
            assert_eq!(circuit_of(&circuit_name(circuit)), Some(circuit));
        }
        assert_eq!(served().count(), 20);
        let names: Vec<String> = served().take(3).map(circuit_name).collect();
        assert_eq!(names, ["porep-2k", "winning-2k", "wpost-2k"]);
        assert_eq!(circuit_of("porep-1t"), None);
    }
}
