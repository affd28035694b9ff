//! Uncompressed point encoding, one trait over G1 and G2 so files are read by one code path.

use cuzk_math::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;

/// Why bytes are not an acceptable point.
pub(crate) type Rejection = &'static str;

pub(crate) trait UncompressedPoint: PrimeCurveAffine + Send + Sync {
    /// "G1" or "G2", for error messages.
    const GROUP: &'static str;
    const SIZE: usize;

    fn write_uncompressed<W: std::io::Write>(&self, out: &mut W) -> std::io::Result<()> {
        let mut bytes = [0u8; 192];
        let bytes = &mut bytes[..Self::SIZE];
        self.encode_into(bytes);
        out.write_all(bytes)
    }

    /// Writes the encoding into `dst`, exactly `SIZE` bytes.
    fn encode_into(&self, dst: &mut [u8]);

    /// Decodes `bytes` (exactly `SIZE` long). `checked` adds the on-curve and subgroup checks
    /// that trusted files can skip. The point at infinity is refused, as bellperson does: no
    /// honest parameter contains it.
    fn decode(bytes: &[u8], checked: bool) -> Result<Self, Rejection>;
}

macro_rules! uncompressed_point {
    ($affine:ty, $group:literal, $size:literal) => {
        impl UncompressedPoint for $affine {
            const GROUP: &'static str = $group;
            const SIZE: usize = $size;

            fn encode_into(&self, dst: &mut [u8]) {
                dst.copy_from_slice(&self.to_uncompressed());
            }

            fn decode(bytes: &[u8], checked: bool) -> Result<Self, Rejection> {
                let array: &[u8; $size] = bytes.try_into().map_err(|_| "wrong length")?;
                let point = Option::<$affine>::from(<$affine>::from_uncompressed_unchecked(array))
                    .ok_or("not a valid encoding of a point on the curve")?;
                if checked && !bool::from(point.is_on_curve()) {
                    return Err("not on the curve");
                }
                if checked && !bool::from(point.is_torsion_free()) {
                    return Err("not in the prime-order subgroup");
                }
                if bool::from(point.is_identity()) {
                    return Err("the point at infinity");
                }
                Ok(point)
            }
        }
    };
}

uncompressed_point!(G1Affine, "G1", 96);
uncompressed_point!(G2Affine, "G2", 192);
