//! Public inputs as JSON: an array of `0x`-prefixed hex strings, each the 32-byte little-endian
//! canonical encoding of a scalar; or an array of such arrays, one per proof.

use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use cuzk_math::Scalar;
use ff::PrimeField;
use serde_json::Value;

pub fn scalar_to_hex(x: &Scalar) -> String {
    format!("0x{}", hex::encode(x.to_repr()))
}

pub fn scalar_from_hex(text: &str) -> Result<Scalar> {
    let digits = text
        .strip_prefix("0x")
        .ok_or_else(|| anyhow!("{text:?} does not start with 0x"))?;
    let mut bytes = [0u8; 32];
    hex::decode_to_slice(digits, &mut bytes)
        .map_err(|e| anyhow!("{text:?} is not 64 hex digits: {e}"))?;
    Option::from(Scalar::from_repr(bytes)).ok_or_else(|| {
        anyhow!("{text:?} is not a canonical scalar (it is not below the field modulus)")
    })
}

/// The JSON text of one proof's inputs.
pub fn to_json(inputs: &[Scalar]) -> String {
    let list: Vec<Value> = inputs
        .iter()
        .map(|x| Value::String(scalar_to_hex(x)))
        .collect();
    Value::Array(list).to_string()
}

fn parse_list(list: &[Value], path: &Path, at: &str) -> Result<Vec<Scalar>> {
    list.iter()
        .enumerate()
        .map(|(i, item)| {
            let text = item
                .as_str()
                .ok_or_else(|| anyhow!("{}: element {at}{i} is not a string", path.display()))?;
            scalar_from_hex(text).with_context(|| format!("{}: element {at}{i}", path.display()))
        })
        .collect()
}

/// Reads an inputs file: one list (one proof) or a list of lists (one per proof).
pub fn read(path: &Path) -> Result<Vec<Vec<Scalar>>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let value: Value = serde_json::from_str(&text)
        .with_context(|| format!("{}: not valid JSON", path.display()))?;
    let Value::Array(items) = value else {
        bail!(
            "{}: expected a JSON array of 0x-hex scalars",
            path.display()
        );
    };
    let lists: Option<Vec<&Vec<Value>>> = items.iter().map(Value::as_array).collect();
    match lists {
        Some(lists) if !lists.is_empty() => lists
            .iter()
            .enumerate()
            .map(|(p, list)| parse_list(list, path, &format!("{p}.")))
            .collect(),
        _ => Ok(vec![parse_list(&items, path, "")?]),
    }
}
