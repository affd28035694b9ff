//! Byte fields of request files (`cuzk prove winning-post|window-post|snap --request`): 0x-prefixed
//! hex, as Curio's bytes are written into JSON.

/// `text` as bytes: 0x-prefixed hex.
pub(crate) fn hex_bytes(text: &str) -> Result<Vec<u8>, String> {
    let digits = text
        .strip_prefix("0x")
        .ok_or_else(|| format!("{:?}: expected 0x-prefixed hex", truncated(text)))?;
    hex::decode(digits).map_err(|e| format!("{:?}: {e}", truncated(text)))
}

/// `text` as exactly 32 bytes of 0x-prefixed hex.
pub(crate) fn hex_32(text: &str) -> Result<[u8; 32], String> {
    hex_bytes(text)?
        .try_into()
        .map_err(|b: Vec<u8>| format!("{} bytes, 32 expected", b.len()))
}

/// `bytes` as 0x-prefixed hex.
pub(crate) fn to_hex(bytes: &[u8]) -> String {
    format!("0x{}", hex::encode(bytes))
}

/// The start of a long value, for an error message.
fn truncated(text: &str) -> &str {
    text.get(..text.len().min(40)).unwrap_or(text)
}
