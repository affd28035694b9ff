//! Filecoin SnapDeals: `prove snap` and `verify snap` of a request file (Curio's fields as JSON,
//! as `seal-test-sector` writes them), and the request a freshly sealed test sector's update
//! gets.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use cuzk_filecoin::{
    parameter_dir, snap_update, verify_snap, ParamFiles, SealedSector, SnapJob, SnapRequest,
};
use serde_json::json;

use super::porep::Prover;
use crate::args::{GlobalArgs, RequestInputArgs, RequestProveArgs, RequestVerifyArgs};
use crate::progress::Progress;
use crate::Outcome;

/// The parameter directory settled and the request parsed.
fn open(args: &RequestInputArgs) -> Result<(PathBuf, SnapRequest)> {
    let params_dir = parameter_dir(args.params_dir.as_deref())?;
    Ok((params_dir, SnapRequest::read(&args.request)?))
}

pub fn prove(global: &GlobalArgs, args: RequestProveArgs) -> Result<Outcome> {
    let progress = Progress::new(global.json);
    let (params_dir, snap) = open(&args.input)?;
    let proof = snap.proof;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| args.input.request.with_extension("proof"));
    let files = ParamFiles::new(&params_dir, proof)?;
    let prover = Prover::load(global, &args.proving, &files)?;
    let (job, _) = progress.stage("building the circuits", || {
        SnapJob::new(
            args.input.request.display().to_string(),
            &snap,
            Arc::clone(&prover.params),
            &files,
            prover.compiled.clone(),
        )
    });
    let job = job?;
    let partitions = job.partitions;
    let (bytes, elapsed) = progress.stage(&format!("proving {proof}"), || {
        prover.run(partitions, job.request)
    });
    let bytes = bytes.with_context(|| format!("proving {}", args.input.request.display()))?;
    super::write_proof(
        global,
        &out,
        &bytes,
        elapsed,
        json!({
            "update_proof": proof.name(),
            "partitions": partitions,
        }),
    )
}

pub fn verify(global: &GlobalArgs, args: RequestVerifyArgs) -> Result<Outcome> {
    let (params_dir, snap) = open(&args.input)?;
    let proof_bytes =
        std::fs::read(&args.proof).with_context(|| format!("reading {}", args.proof.display()))?;
    let valid = verify_snap(&snap, &proof_bytes, &params_dir)
        .with_context(|| format!("verifying {}", args.proof.display()))?;
    Ok(super::verdict(
        global,
        valid,
        json!({ "update_proof": snap.proof.name() }),
    ))
}

/// The update request a test or sample sector comes with, beside its c1.json.
pub(super) const REQUEST_FILE_NAME: &str = "snap.json";

/// Updates `sector` (sealed into `sector_dir`) with new random data and writes the SnapDeals
/// request Curio would send for it into `out/snap.json`.
pub fn write_test_request(sector: &SealedSector, sector_dir: &Path, out: &Path) -> Result<PathBuf> {
    let request = snap_update(sector, sector_dir, &mut rand::rngs::OsRng)?;
    let path = out.join(REQUEST_FILE_NAME);
    request.write(&path)?;
    Ok(path)
}
