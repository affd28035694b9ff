//! Request files (`cuzk prove winning-post|window-post|snap --request`): Curio's fields as JSON,
//! bytes as 0x-prefixed hex, every error naming the file and the field.

use std::path::Path;

use cuzk_groth16::params_file::write_atomically;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::io;
use crate::{FilecoinError, RegisteredProof};

/// `path`'s JSON as `T`, or an error naming the field that does not fit.
pub(crate) fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T, FilecoinError> {
    let bytes = std::fs::read(path).map_err(io(path))?;
    serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_slice(&bytes))
        .map_err(|e| field_error(path, &e.path().to_string(), e.inner().to_string()))
}

/// Writes `value` as pretty JSON, atomically.
pub(crate) fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), FilecoinError> {
    write_atomically(path, |out| {
        serde_json::to_writer_pretty(out, value).map_err(std::io::Error::other)
    })
    .map_err(io(path))
}

/// What is wrong with `field` of the request file `path`.
fn field_error(path: &Path, field: &str, reason: String) -> FilecoinError {
    FilecoinError::RequestField {
        file: path.display().to_string(),
        field: field.to_owned(),
        reason,
    }
}

/// The `registered_proof` field of `path`: the name or the number of a proof of kind `P`.
pub(crate) fn registered_proof<P: RegisteredProof>(
    path: &Path,
    value: &serde_json::Value,
) -> Result<P, FilecoinError> {
    match value {
        serde_json::Value::String(name) => P::from_name(name).ok(),
        serde_json::Value::Number(number) => number.as_u64().and_then(P::from_number),
        _ => None,
    }
    .ok_or_else(|| {
        field_error(
            path,
            "registered_proof",
            format!("{value}: not a registered {} proof", P::KIND),
        )
    })
}

/// `field` of `path`: exactly 32 bytes of hex.
pub(crate) fn bytes32(path: &Path, field: &str, text: &str) -> Result<[u8; 32], FilecoinError> {
    hex_bytes(text)
        .and_then(|b| {
            b.try_into()
                .map_err(|b: Vec<u8>| format!("{} bytes, 32 expected", b.len()))
        })
        .map_err(|reason| field_error(path, field, reason))
}

/// `field` of `path`: a list of hex byte strings, the bad one named by its index.
pub(crate) fn byte_strings(
    path: &Path,
    field: &str,
    texts: &[String],
) -> Result<Vec<Vec<u8>>, FilecoinError> {
    texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            hex_bytes(text).map_err(|r| field_error(path, &format!("{field}[{i}]"), r))
        })
        .collect()
}

/// `bytes` as 0x-prefixed hex.
pub(crate) fn to_hex(bytes: &[u8]) -> String {
    format!("0x{}", hex::encode(bytes))
}

/// `text` as bytes: 0x-prefixed hex.
fn hex_bytes(text: &str) -> Result<Vec<u8>, String> {
    let digits = text
        .strip_prefix("0x")
        .ok_or_else(|| format!("{:?}: expected 0x-prefixed hex", truncated(text)))?;
    hex::decode(digits).map_err(|e| format!("{:?}: {e}", truncated(text)))
}

/// The start of a long value, for an error message.
fn truncated(text: &str) -> &str {
    text.get(..text.len().min(40)).unwrap_or(text)
}
