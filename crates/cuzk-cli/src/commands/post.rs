//! Filecoin PoSt: `prove winning-post|window-post` and `verify winning-post|window-post` of a
//! request file (Curio's fields as JSON, as `seal-test-sector` writes them), and the requests a
//! freshly sealed test sector gets.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use cuzk_filecoin::{
    parameter_dir, post_vanilla_proofs, random_field_bytes, verify_post, FilecoinRequest, PostKind,
    PostProof, PostRequest, RegisteredProof, SealProof, SealedSector,
};
use serde_json::json;

use crate::args::{GlobalArgs, RequestInputArgs, RequestProveArgs, RequestVerifyArgs};
use crate::Outcome;

/// What a PoSt command reads, validated: the parameter directory settled, the request parsed
/// and of the kind the command names.
struct PostInput {
    params_dir: PathBuf,
    post: PostRequest,
}

impl PostInput {
    fn open(args: &RequestInputArgs, winning: bool) -> Result<Self> {
        let params_dir = parameter_dir(args.params_dir.as_deref())?;
        let post = PostRequest::read(&args.request)?;
        if (post.proof.kind == PostKind::Winning) != winning {
            bail!(
                "{}: registered_proof {} is not a {}",
                args.request.display(),
                post.proof,
                if winning { "WinningPoSt" } else { "WindowPoSt" }
            );
        }
        Ok(PostInput { params_dir, post })
    }
}

pub fn prove(global: &GlobalArgs, args: RequestProveArgs, winning: bool) -> Result<Outcome> {
    let input = PostInput::open(&args.input, winning)?;
    let source = &args.input.request;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| source.with_extension("proof"));
    let request = FilecoinRequest::Post(input.post);
    super::request::prove(
        global,
        &request,
        source,
        &input.params_dir,
        &args.proving,
        &out,
    )
}

pub fn verify(global: &GlobalArgs, args: RequestVerifyArgs, winning: bool) -> Result<Outcome> {
    let input = PostInput::open(&args.input, winning)?;
    let post = &input.post;
    let proof_bytes =
        std::fs::read(&args.proof).with_context(|| format!("reading {}", args.proof.display()))?;
    let valid = verify_post(
        post.proof,
        post.randomness,
        post.prover_id,
        &post.sectors()?,
        &proof_bytes,
        &input.params_dir,
    )
    .with_context(|| format!("verifying {}", args.proof.display()))?;
    Ok(super::verdict(
        global,
        valid,
        json!({ "post_proof": post.proof.name() }),
    ))
}

/// Where `seal-test-sector` and `sample-sector` write a request of `kind`.
pub fn request_file_name(kind: PostKind) -> &'static str {
    match kind {
        PostKind::Winning => "winning-post.json",
        PostKind::WindowV1 | PostKind::Window => "window-post.json",
    }
}

/// Writes a WinningPoSt and a WindowPoSt request for `sector` (sealed for `seal` into
/// `sector_dir`) into `out`, with fresh randomness: `winning-post.json`, `window-post.json`.
pub fn write_test_requests(
    seal: SealProof,
    sector: &SealedSector,
    sector_dir: &Path,
    out: &Path,
) -> Result<Vec<PathBuf>> {
    [PostKind::Winning, PostKind::Window]
        .into_iter()
        .map(|kind| {
            let proof = PostProof {
                kind,
                size: seal.size,
            };
            let randomness = random_field_bytes(&mut rand::rngs::OsRng);
            let request = PostRequest {
                proof,
                vanilla_proofs: post_vanilla_proofs(proof, &[(sector, sector_dir)], randomness)?,
                randomness,
                prover_id: sector.identity.prover_id,
                partition: 0,
            };
            let path = out.join(request_file_name(kind));
            request.write(&path)?;
            Ok(path)
        })
        .collect()
}
