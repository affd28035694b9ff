//! Medians and spreads: the form every per-partition figure takes.

/// The `qs` quantiles (each in [0, 1]) of `values`, interpolated linearly between the nearest
/// ranks (so the median of an even count is the mean of the middle two); `None` for no values.
pub fn percentiles<const N: usize>(values: &[f64], qs: [f64; N]) -> Option<[f64; N]> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let last = sorted.len().checked_sub(1)?;
    Some(qs.map(|q| {
        let rank = q.clamp(0.0, 1.0) * last as f64;
        let (below, above) = (rank.floor() as usize, rank.ceil() as usize);
        sorted[below] + (sorted[above] - sorted[below]) * (rank - below as f64)
    }))
}

/// A sample's median and spread, the form every per-partition figure takes: a mean alone lets one
/// slow partition (an SRS placement, a cold start) stand for all.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    pub count: usize,
    pub p10: f64,
    pub median: f64,
    pub p90: f64,
    /// Kept beside the median for totals (mean × count).
    pub mean: f64,
}

impl Spread {
    /// `None` for no values.
    pub fn of(values: &[f64]) -> Option<Self> {
        let [p10, median, p90] = percentiles(values, [0.1, 0.5, 0.9])?;
        Some(Spread {
            count: values.len(),
            p10,
            median,
            p90,
            mean: values.iter().sum::<f64>() / values.len() as f64,
        })
    }
}
