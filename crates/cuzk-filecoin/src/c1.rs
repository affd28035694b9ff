//! C1 outputs (`SealCommitPhase1Output`, serde JSON) in both forms found in the wild:
//!
//! - the raw filecoin-proofs form: `{vanilla_proofs: [[…]], comm_r, comm_d, replica_id, seed,
//!   ticket}`, which does not say which seal proof it is for;
//! - the FFI's form, which adds `registered_proof` and wraps the vanilla proofs in their sector
//!   size's variant: `{registered_proof: "StackedDrg2KiBV1_1", vanilla_proofs:
//!   {"StackedDrg2KiBV1": [[…]]}, …}`.
//!
//! Both become the raw form; the typed value (generic over the sector's tree shape) is decoded
//! only when needed, with errors that name the file and the path of the field at fault.

use std::path::Path;

use filecoin_proofs::{MerkleTreeTrait, SealCommitPhase1Output};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::io;
use crate::{FilecoinError, RegisteredProof, SealProof};

const REGISTERED_PROOF: &str = "registered_proof";
const VANILLA_PROOFS: &str = "vanilla_proofs";

/// A C1 output whose seal proof is known, in the raw filecoin-proofs form.
#[derive(Clone, Debug)]
pub struct C1Output {
    /// Where it came from, for errors.
    pub source: String,
    pub proof: SealProof,
    /// Always an object.
    raw: Value,
}

/// The public values of a C1 output, which verification needs besides the proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SealCommitments {
    pub comm_r: [u8; 32],
    pub comm_d: [u8; 32],
    pub seed: [u8; 32],
    pub ticket: [u8; 32],
}

impl C1Output {
    /// Reads a C1 file. `proof` names the seal proof of a raw-form file; for the FFI's form it
    /// must agree with the file's `registered_proof` when given.
    pub fn read(path: &Path, proof: Option<SealProof>) -> Result<Self, FilecoinError> {
        let bytes = std::fs::read(path).map_err(io(path))?;
        Self::from_json(&bytes, &path.display().to_string(), proof)
    }

    /// Parses C1 JSON; `source` names it in errors.
    pub fn from_json(
        bytes: &[u8],
        source: &str,
        proof: Option<SealProof>,
    ) -> Result<Self, FilecoinError> {
        let syntax = |reason: String| FilecoinError::C1Syntax {
            file: source.to_owned(),
            reason,
        };
        let value: Value = serde_json::from_slice(bytes).map_err(|e| syntax(e.to_string()))?;
        let Value::Object(mut raw) = value else {
            return Err(syntax("the top level is not a JSON object".into()));
        };
        let field = |name: &str, reason: String| FilecoinError::C1Field {
            file: source.to_owned(),
            field: name.to_owned(),
            reason,
        };
        let proof = match raw.remove(REGISTERED_PROOF) {
            None => proof.ok_or_else(|| FilecoinError::C1WithoutSealProof {
                file: source.to_owned(),
            })?,
            Some(Value::String(name)) => {
                let in_file: SealProof = name
                    .parse()
                    .map_err(|e: FilecoinError| field(REGISTERED_PROOF, e.to_string()))?;
                if let Some(given) = proof.filter(|given| *given != in_file) {
                    return Err(FilecoinError::C1SealProofMismatch {
                        file: source.to_owned(),
                        in_file: in_file.name().to_owned(),
                        given: given.name().to_owned(),
                    });
                }
                let variant = in_file.size.vanilla_variant();
                let wrapped = raw
                    .remove(VANILLA_PROOFS)
                    .ok_or_else(|| field(VANILLA_PROOFS, "missing".into()))?;
                let inner = match wrapped {
                    Value::Object(mut variants) if variants.len() == 1 => {
                        variants.remove(&variant).ok_or_else(|| {
                            field(
                                VANILLA_PROOFS,
                                format!(
                                    "{in_file} proofs must be wrapped as {variant:?}, found {:?}",
                                    variants.keys().next().map_or("", String::as_str)
                                ),
                            )
                        })?
                    }
                    _ => {
                        return Err(field(
                            VANILLA_PROOFS,
                            format!("expected an object with the single key {variant:?}"),
                        ))
                    }
                };
                raw.insert(VANILLA_PROOFS.to_owned(), inner);
                in_file
            }
            Some(other) => {
                return Err(field(
                    REGISTERED_PROOF,
                    format!("expected a string, found {other}"),
                ))
            }
        };
        Ok(C1Output {
            source: source.to_owned(),
            proof,
            raw: Value::Object(raw),
        })
    }

    /// The C1 output commit 1 returned (or a sample sector's); `source` names it in errors.
    pub(crate) fn from_output<Tree: MerkleTreeTrait>(
        output: &SealCommitPhase1Output<Tree>,
        proof: SealProof,
        source: &str,
    ) -> Result<Self, FilecoinError> {
        let json = serde_json::to_vec(output).map_err(|e| FilecoinError::Filecoin {
            what: format!("serialising {source}"),
            reason: e.to_string(),
        })?;
        Self::from_json(&json, source, Some(proof))
    }

    /// Decodes one field.
    fn field<T: DeserializeOwned>(&self, name: &str) -> Result<T, FilecoinError> {
        let value = self.raw.get(name).ok_or_else(|| FilecoinError::C1Field {
            file: self.source.clone(),
            field: name.to_owned(),
            reason: "missing".into(),
        })?;
        T::deserialize(value).map_err(|e| FilecoinError::C1Field {
            file: self.source.clone(),
            field: name.to_owned(),
            reason: e.to_string(),
        })
    }

    /// comm_r, comm_d, seed and ticket.
    pub fn commitments(&self) -> Result<SealCommitments, FilecoinError> {
        Ok(SealCommitments {
            comm_r: self.field("comm_r")?,
            comm_d: self.field("comm_d")?,
            seed: self.field("seed")?,
            ticket: self.field("ticket")?,
        })
    }

    /// Checks that the whole output decodes for its sector's tree shape (what [`Self::typed`]
    /// does before proving), so a malformed field is named when the request arrives.
    pub fn validate(&self) -> Result<(), FilecoinError> {
        filecoin_proofs::with_shape!(self.proof.size.bytes(), decodes, self,)
    }

    /// The whole output typed for the sector's tree shape; errors name the path of the field
    /// (such as `vanilla_proofs[0][3].comm_d_proofs`).
    pub(crate) fn typed<Tree: 'static + MerkleTreeTrait>(
        &self,
    ) -> Result<SealCommitPhase1Output<Tree>, FilecoinError> {
        serde_path_to_error::deserialize(&self.raw).map_err(|e| FilecoinError::C1Field {
            file: self.source.clone(),
            field: e.path().to_string(),
            reason: e.inner().to_string(),
        })
    }

    /// The raw filecoin-proofs form as JSON (what `seal_commit_phase1` returns, serialised).
    pub fn to_raw_json(&self) -> Vec<u8> {
        // Serialising JSON values cannot fail.
        serde_json::to_vec(&self.raw).unwrap_or_default()
    }

    /// The FFI's form as JSON: `registered_proof` added, the vanilla proofs wrapped.
    pub fn to_ffi_json(&self) -> Vec<u8> {
        let mut ffi = self.raw.clone();
        if let Value::Object(map) = &mut ffi {
            if let Some(proofs) = map.remove(VANILLA_PROOFS) {
                let wrapped = Map::from_iter([(self.proof.size.vanilla_variant(), proofs)]);
                map.insert(VANILLA_PROOFS.to_owned(), Value::Object(wrapped));
            }
            map.insert(REGISTERED_PROOF.to_owned(), self.proof.name().into());
        }
        serde_json::to_vec(&ffi).unwrap_or_default()
    }
}

fn decodes<Tree: 'static + MerkleTreeTrait>(c1: &C1Output) -> Result<(), FilecoinError> {
    c1.typed::<Tree>().map(drop)
}
