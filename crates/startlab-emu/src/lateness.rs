//! How late packets left the emulator against their schedule.
//!
//! A histogram with 1 µs bins up to 1 ms and 100 µs bins up to 100 ms (and one bin beyond),
//! so that a run of any length takes the same 4 KiB and percentiles are exact to a bin.

/// Bins of 1 µs below this, ns.
const FINE_END_NS: u64 = 1_000_000;
const FINE_BINS: usize = 1000;
/// Bins of 100 µs from `FINE_END_NS` up to this, ns.
const COARSE_END_NS: u64 = 100_000_000;
const COARSE_BIN_NS: u64 = 100_000;
const COARSE_BINS: usize = ((COARSE_END_NS - FINE_END_NS) / COARSE_BIN_NS) as usize;

#[derive(Clone, Debug)]
pub struct Lateness {
    bins: Vec<u64>,
    count: u64,
    sum_ns: u128,
    max_ns: u64,
}

impl Default for Lateness {
    fn default() -> Self {
        Lateness {
            bins: vec![0; FINE_BINS + COARSE_BINS + 1],
            count: 0,
            sum_ns: 0,
            max_ns: 0,
        }
    }
}

fn bin(ns: u64) -> usize {
    if ns < FINE_END_NS {
        (ns / 1000) as usize
    } else if ns < COARSE_END_NS {
        FINE_BINS + ((ns - FINE_END_NS) / COARSE_BIN_NS) as usize
    } else {
        FINE_BINS + COARSE_BINS
    }
}

/// The upper edge of bin `i`, ns.
fn upper_edge(i: usize) -> u64 {
    if i < FINE_BINS {
        (i as u64 + 1) * 1000
    } else if i < FINE_BINS + COARSE_BINS {
        FINE_END_NS + (i - FINE_BINS + 1) as u64 * COARSE_BIN_NS
    } else {
        u64::MAX
    }
}

impl Lateness {
    pub fn record(&mut self, late_ns: u64) {
        self.bins[bin(late_ns)] += 1;
        self.count += 1;
        self.sum_ns += late_ns as u128;
        self.max_ns = self.max_ns.max(late_ns);
    }

    pub fn merge(&mut self, other: &Lateness) {
        for (a, b) in self.bins.iter_mut().zip(&other.bins) {
            *a += b;
        }
        self.count += other.count;
        self.sum_ns += other.sum_ns;
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn max_ns(&self) -> u64 {
        self.max_ns
    }

    pub fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_ns as f64 / self.count as f64
        }
    }

    /// The upper edge of the bin holding the `q`-quantile (0 < q ≤ 1), ns; at most the maximum.
    pub fn quantile_ns(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (i, &n) in self.bins.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return upper_edge(i).min(self.max_ns);
            }
        }
        self.max_ns
    }

    /// Packets at least `ns` late, exact when `ns` is a bin edge (a whole µs below 1 ms, a
    /// whole 100 µs below 100 ms).
    pub fn at_least(&self, ns: u64) -> u64 {
        let b = bin(ns);
        let first = if b == 0 || upper_edge(b - 1) == ns {
            b
        } else {
            b + 1
        };
        self.bins[first..].iter().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_by_hand() {
        let mut l = Lateness::default();
        // 98 packets 0.5 µs late, one 150 µs, one 3 ms.
        for _ in 0..98 {
            l.record(500);
        }
        l.record(150_000);
        l.record(3_000_000);
        assert_eq!(l.count(), 100);
        assert_eq!(l.quantile_ns(0.5), 1000); // the 0-1 µs bin
        assert_eq!(l.quantile_ns(0.99), 151_000); // the 150-151 µs bin
        assert_eq!(l.quantile_ns(1.0), 3_000_000); // capped at the maximum
        assert_eq!(l.max_ns(), 3_000_000);
        assert_eq!(l.at_least(1_000_000), 1);
        assert_eq!(l.at_least(150_000), 2);
        assert!((l.mean_ns() - (98.0 * 500.0 + 150_000.0 + 3_000_000.0) / 100.0).abs() < 1e-9);
        let mut m = Lateness::default();
        m.merge(&l);
        m.record(200_000_000); // beyond the last edge
        assert_eq!(m.count(), 101);
        assert_eq!(m.quantile_ns(1.0), 200_000_000);
    }
}
