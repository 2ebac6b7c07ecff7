//! How a strategy compares with the oracle over many runs: per run its figure (bytes, or
//! copies) over the oracle's, summarised as median, 95th percentile and maximum, with the share
//! of runs exactly at the oracle and the runs below it (which would be a bug in the oracle or
//! the run: every correct plan moves at least the oracle's bytes).
//!
//! Percentiles are nearest-rank: the `q`-quantile is the smallest ratio with at least `q` of
//! the runs at or below it (the median is the lower median). Ratios are over the runs whose
//! oracle figure is not zero; a run whose oracle figure is zero is *at the oracle* when the
//! strategy's is zero too, and is counted apart otherwise.

/// The summary of one strategy's figures against the oracle's. See the module documentation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RatioSummary {
    /// Runs compared.
    pub runs: usize,
    /// Runs where the strategy's figure equals the oracle's.
    pub at_oracle: usize,
    /// Runs where it is below the oracle's.
    pub below_oracle: usize,
    /// Runs where the oracle's figure is zero and the strategy's is not (no ratio).
    pub above_zero_oracle: usize,
    /// The median ratio, over the runs with a ratio (`None` if there is none).
    pub median: Option<f64>,
    /// The 95th percentile.
    pub p95: Option<f64>,
    /// The largest ratio.
    pub max: Option<f64>,
}

impl RatioSummary {
    /// The summary of `pairs`: (the strategy's figure, the oracle's) per run.
    pub fn of(pairs: &[(u64, u64)]) -> RatioSummary {
        let mut ratios: Vec<f64> = pairs
            .iter()
            .filter(|&&(_, oracle)| oracle > 0)
            .map(|&(value, oracle)| value as f64 / oracle as f64)
            .collect();
        ratios.sort_by(f64::total_cmp);
        let quantile = |q: f64| {
            let rank = ((q * ratios.len() as f64).ceil() as usize).max(1);
            ratios.get(rank - 1).copied()
        };
        RatioSummary {
            runs: pairs.len(),
            at_oracle: pairs.iter().filter(|(v, o)| v == o).count(),
            below_oracle: pairs.iter().filter(|(v, o)| v < o).count(),
            above_zero_oracle: pairs.iter().filter(|&&(v, o)| o == 0 && v > 0).count(),
            median: quantile(0.5),
            p95: quantile(0.95),
            max: ratios.last().copied(),
        }
    }

    /// The share of runs at the oracle (0 when there is none).
    pub fn share_at_oracle(&self) -> f64 {
        if self.runs == 0 {
            0.0
        } else {
            self.at_oracle as f64 / self.runs as f64
        }
    }

    /// The columns of a report's row: median, 95th percentile and maximum with `decimals`
    /// digits ("-" where there is no ratio), then the share at the oracle in percent.
    pub fn columns(&self, decimals: usize) -> String {
        let ratio = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.decimals$}"));
        format!(
            "{:>20} {:>5} {:>5} {:>5.1}%",
            ratio(self.median),
            ratio(self.p95),
            ratio(self.max),
            100.0 * self.share_at_oracle()
        )
    }

    /// Every figure, and the share at the oracle, as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "median": self.median,
            "p95": self.p95,
            "max": self.max,
            "at_oracle": self.at_oracle,
            "share_at_oracle": self.share_at_oracle(),
            "below_oracle": self.below_oracle,
            "above_zero_oracle": self.above_zero_oracle,
            "runs": self.runs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_quantiles_and_the_runs_apart() {
        // Ratios 1, 1, 1.5, 2 (20 runs would be needed for p95 to differ from the max).
        let pairs = [(10, 10), (4, 4), (6, 4), (8, 4), (0, 0), (5, 0)];
        let s = RatioSummary::of(&pairs);
        assert_eq!((s.runs, s.at_oracle, s.below_oracle, s.above_zero_oracle), (6, 3, 0, 1));
        assert_eq!((s.median, s.p95, s.max), (Some(1.0), Some(2.0), Some(2.0)));
        assert_eq!(s.share_at_oracle(), 0.5);
        let many: Vec<(u64, u64)> = (1..=20).map(|k| (100 + k, 100)).collect();
        let s = RatioSummary::of(&many);
        assert_eq!((s.median, s.p95, s.max), (Some(1.10), Some(1.19), Some(1.20)));
        assert_eq!(RatioSummary::of(&[(3, 4)]).below_oracle, 1);
        assert_eq!(RatioSummary::of(&[]).median, None);
    }

    #[test]
    fn a_report_row_and_its_json() {
        let s = RatioSummary::of(&[(10, 10), (4, 4), (6, 4), (8, 4), (0, 0), (5, 0)]);
        assert_eq!(s.columns(2), format!("{:>20} {:>5} {:>5} {:>5.1}%", "1.00", "2.00", "2.00", 50.0));
        assert_eq!(RatioSummary::of(&[]).columns(3), format!("{:>20} {:>5} {:>5} {:>5.1}%", "-", "-", "-", 0.0));
        let json = s.to_json();
        assert_eq!((json["median"].as_f64(), json["runs"].as_u64()), (Some(1.0), Some(6)));
        assert_eq!(json["share_at_oracle"].as_f64(), Some(0.5));
    }
}
