//! Filecoin PoRep: `prove porep`, `verify porep`, `seal-test-sector` and
//! `sample-sector`.
//!
//! Every command that touches filecoin-proofs' parameter directory settles it first
//! ([`cuzk_filecoin::parameter_dir`]), because filecoin-proofs reads its settings only once.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use cuzk_filecoin::{
    parameter_dir, seal_random_sector, verify_seal, C1Output, FilecoinRequest, RegisteredProof,
    SealProof, SealedSector, SectorIdentity,
};
use serde_json::json;

use crate::args::{GlobalArgs, PorepInputArgs, PorepProveArgs, PorepVerifyArgs, TestSectorArgs};
use crate::progress::Progress;
use crate::Outcome;

/// What a PoRep command reads, validated: the parameter directory settled, the C1 output parsed.
struct PorepInput {
    params_dir: PathBuf,
    c1: C1Output,
}

impl PorepInput {
    fn open(args: &PorepInputArgs) -> Result<Self> {
        let params_dir = parameter_dir(args.params_dir.as_deref())?;
        let proof = args
            .seal_proof
            .as_deref()
            .map(SealProof::from_size_or_name)
            .transpose()?;
        let c1 = C1Output::read(&args.c1, proof)?;
        Ok(PorepInput { params_dir, c1 })
    }
}

/// The default proof file: the C1 file's name with the extension `.proof`.
fn default_proof_path(c1: &Path) -> PathBuf {
    c1.with_extension("proof")
}

pub fn prove(global: &GlobalArgs, args: PorepProveArgs) -> Result<Outcome> {
    let input = PorepInput::open(&args.input)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| default_proof_path(&args.input.c1));
    let request = FilecoinRequest::Porep(input.c1);
    let source = &args.input.c1;
    super::request::prove(
        global,
        &request,
        source,
        &input.params_dir,
        &args.proving,
        &out,
    )
}

fn parse_prover_id(text: &str) -> Result<[u8; 32]> {
    let digits = text
        .strip_prefix("0x")
        .with_context(|| format!("--prover-id {text:?}: expected 0x-prefixed hex"))?;
    let bytes = hex::decode(digits).with_context(|| format!("--prover-id {text:?}"))?;
    <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| {
        anyhow::anyhow!(
            "--prover-id {text:?}: expected 32 bytes, got {}",
            bytes.len()
        )
    })
}

pub fn verify(global: &GlobalArgs, args: PorepVerifyArgs) -> Result<Outcome> {
    let input = PorepInput::open(&args.input)?;
    let identity = SectorIdentity {
        prover_id: parse_prover_id(&args.prover_id)?,
        sector_id: args.sector_id,
    };
    let proof_bytes =
        std::fs::read(&args.proof).with_context(|| format!("reading {}", args.proof.display()))?;
    let commitments = input.c1.commitments()?;
    let valid = verify_seal(
        input.c1.proof,
        &commitments,
        identity,
        &proof_bytes,
        &input.params_dir,
    )
    .with_context(|| format!("verifying {}", args.proof.display()))?;
    Ok(super::verdict(
        global,
        valid,
        json!({ "seal_proof": input.c1.proof.name() }),
    ))
}

pub fn seal_test_sector(global: &GlobalArgs, args: TestSectorArgs) -> Result<Outcome> {
    let sector_dir = args.out.join("sector");
    write_test_sector(global, &args, "sealing a random", |proof| {
        let sector = seal_random_sector(proof, &sector_dir, args.miner_id, &mut rand::rngs::OsRng)?;
        // The sealed files are there to prove: PoSt requests of the sector too, and an update.
        std::fs::create_dir_all(&args.out)
            .with_context(|| format!("creating {}", args.out.display()))?;
        super::post::write_test_requests(proof, &sector, &sector_dir, &args.out)
            .context("writing the sector's PoSt requests")?;
        super::snap::write_test_request(&sector, &sector_dir, &args.out)
            .context("updating the sector (SnapDeals)")?;
        Ok(sector)
    })
}

pub fn sample_sector(global: &GlobalArgs, args: TestSectorArgs) -> Result<Outcome> {
    write_test_sector(global, &args, "sampling a committed-capacity", |proof| {
        let sample = cuzk_filecoin::sample_sector(proof, args.miner_id, &mut rand::rngs::OsRng)?;
        std::fs::create_dir_all(&args.out)
            .with_context(|| format!("creating {}", args.out.display()))?;
        for post in &sample.posts {
            post.write(
                &args
                    .out
                    .join(super::post::request_file_name(post.proof.kind)),
            )?;
        }
        sample
            .update
            .write(&args.out.join(super::snap::REQUEST_FILE_NAME))?;
        Ok(sample.sector)
    })
}

/// Makes a sector for `args` with `make` and writes its C1 output (c1.json) and sector.json.
fn write_test_sector(
    global: &GlobalArgs,
    args: &TestSectorArgs,
    doing: &str,
    make: impl FnOnce(SealProof) -> Result<SealedSector>,
) -> Result<Outcome> {
    let proof = SealProof::from_size_or_name(&args.size)?;
    let c1_path = args.out.join("c1.json");
    if c1_path.exists() {
        bail!("{} already holds a sector (c1.json)", args.out.display());
    }
    let progress = Progress::new(global.json);
    let (sector, elapsed) = progress.stage(&format!("{doing} {proof} sector"), || make(proof));
    let sector = sector?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    super::write_output(&c1_path, &sector.c1.to_ffi_json())?;
    let prover_id = format!("0x{}", hex::encode(sector.identity.prover_id));
    let description = json!({
        "seal_proof": proof.name(),
        "prover_id": prover_id,
        "sector_id": sector.identity.sector_id,
        "c1": c1_path,
        "made_s": elapsed.as_secs_f64(),
    });
    super::write_output(
        &args.out.join("sector.json"),
        description.to_string().as_bytes(),
    )?;
    if global.json {
        outln!("{description}");
    } else {
        outln!(
            "wrote {} (prover id {prover_id}, sector id {}) in {:.1} s",
            c1_path.display(),
            sector.identity.sector_id,
            elapsed.as_secs_f64()
        );
    }
    Ok(Outcome::Success)
}
