//! Filecoin SnapDeals: `prove snap` and `verify snap` of a request file (Curio's fields as JSON,
//! as `seal-test-sector` writes them), and the request a freshly sealed test sector's update
//! gets.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use cuzk_filecoin::{
    parameter_dir, snap_update, verify_snap, FilecoinRequest, RegisteredProof, SealedSector,
    SnapRequest,
};
use serde_json::json;

use crate::args::{GlobalArgs, RequestInputArgs, RequestProveArgs, RequestVerifyArgs};
use crate::Outcome;

/// The parameter directory settled and the request parsed.
fn open(args: &RequestInputArgs) -> Result<(PathBuf, SnapRequest)> {
    let params_dir = parameter_dir(args.params_dir.as_deref())?;
    Ok((params_dir, SnapRequest::read(&args.request)?))
}

pub fn prove(global: &GlobalArgs, args: RequestProveArgs) -> Result<Outcome> {
    let (params_dir, snap) = open(&args.input)?;
    let source = &args.input.request;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| source.with_extension("proof"));
    let request = FilecoinRequest::Snap(snap);
    super::request::prove(global, &request, source, &params_dir, &args.proving, &out)
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
