//! Sojourn times of one link direction: their sum, maximum and distribution.
//!
//! The distribution is a log-linear histogram (HdrHistogram's layout with 16 sub-buckets per
//! power of two): exact below 32 ns, and above that each bucket spans 1/16 to 1/31 of its lower
//! bound, so a percentile read from it is within 1/32 of the true one. Its memory is fixed
//! (608 counters, allocated at the first non-zero sojourn) whatever the run's length.

use crate::time::Duration;

/// Sub-bucket bits: 2^4 = 16 sub-buckets per power of two.
const SUB_BITS: u32 = 4;
const SUB: u64 = 1 << SUB_BITS;
/// Values below this are counted exactly, one bucket each.
const EXACT: u64 = 2 * SUB;
/// The largest power of two kept apart: sojourns of 2^41 ns (37 min) and more are counted in
/// the last bucket.
const MAX_EXP: u32 = 40;
const BUCKETS: usize = (EXACT + (MAX_EXP as u64 - SUB_BITS as u64) * SUB) as usize;

#[derive(Clone, Debug, Default)]
pub struct Sojourns {
    total: Duration,
    max: Duration,
    packets: u64,
    /// Packets that did not wait at all (the common case on an idle link: kept apart so that
    /// a link that never queues allocates no histogram).
    zero: u64,
    histogram: Option<Box<[u64; BUCKETS]>>,
}

impl Sojourns {
    #[inline]
    pub fn record(&mut self, sojourn: Duration) {
        self.total += sojourn;
        self.max = self.max.max(sojourn);
        self.packets += 1;
        let ns = sojourn.as_nanos();
        if ns == 0 {
            self.zero += 1;
        } else {
            self.histogram.get_or_insert_with(|| Box::new([0; BUCKETS]))[bucket(ns)] += 1;
        }
    }

    pub fn total(&self) -> Duration {
        self.total
    }

    pub fn max(&self) -> Duration {
        self.max
    }

    /// Sojourns recorded.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    pub fn mean(&self) -> Option<Duration> {
        (self.packets > 0).then(|| Duration::from_nanos(self.total.as_nanos() / self.packets))
    }

    /// The nearest-rank `q`-quantile (0 < q ≤ 1): the middle of the bucket holding the
    /// ⌈q·n⌉-th smallest sojourn, never above the largest one; `None` before any.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        if self.packets == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.packets as f64).ceil() as u64).max(1);
        if rank <= self.zero {
            return Some(Duration::ZERO);
        }
        let mut seen = self.zero;
        let histogram = self.histogram.as_deref()?;
        for (index, &count) in histogram.iter().enumerate() {
            seen += count;
            if seen >= rank {
                let (low, width) = bounds(index);
                let middle = low + (width - 1) / 2;
                return Some(Duration::from_nanos(middle).min(self.max));
            }
        }
        Some(self.max)
    }
}

/// The bucket of a sojourn of `ns` > 0 nanoseconds.
#[inline]
fn bucket(ns: u64) -> usize {
    if ns < EXACT {
        return ns as usize;
    }
    let exp = 63 - ns.leading_zeros();
    if exp > MAX_EXP {
        return BUCKETS - 1;
    }
    let sub = (ns >> (exp - SUB_BITS)) & (SUB - 1);
    (EXACT + (exp as u64 - SUB_BITS as u64 - 1) * SUB + sub) as usize
}

/// Lower bound and width (ns) of bucket `index`.
fn bounds(index: usize) -> (u64, u64) {
    let index = index as u64;
    if index < EXACT {
        return (index, 1);
    }
    let exp = (index - EXACT) / SUB + SUB_BITS as u64 + 1;
    let sub = (index - EXACT) % SUB;
    let width = 1 << (exp - SUB_BITS as u64);
    ((SUB + sub) * width, width)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_below_32_ns_are_exact_then_sixteen_per_power_of_two() {
        assert_eq!(bucket(1), 1);
        assert_eq!(bucket(31), 31);
        // 32 = 0b10_0000: exponent 5, sub-bucket 0 -> the first inexact bucket, 2 ns wide.
        assert_eq!(bucket(32), 32);
        assert_eq!(bucket(33), 32);
        assert_eq!(bucket(34), 33);
        assert_eq!(bounds(32), (32, 2));
        assert_eq!(bounds(33), (34, 2));
        // 1 ms = 1_000_000 ns: exponent 19, sub = (10^6 >> 15) & 15 = 30 & 15 = 14;
        // bucket 32 + (19 - 5) * 16 + 14 = 270, spanning [30 * 32768, 31 * 32768).
        assert_eq!(bucket(1_000_000), 270);
        assert_eq!(bounds(270), (983_040, 32_768));
    }

    #[test]
    fn every_value_falls_inside_its_bucket() {
        let mut ns = 1u64;
        while ns < 1 << 44 {
            let (low, width) = bounds(bucket(ns));
            if ns < 1 << (MAX_EXP + 1) {
                assert!(low <= ns && ns < low + width, "{ns} in [{low}, +{width})");
                assert!(width * 16 <= low.max(16), "bucket of {ns} too wide");
            } else {
                assert_eq!(bucket(ns), BUCKETS - 1);
            }
            ns = ns * 9 / 8 + 1;
        }
    }

    #[test]
    fn quantiles_by_nearest_rank() {
        let mut s = Sojourns::default();
        assert_eq!(s.quantile(0.5), None);
        // 6 zeros and 4 of 1 ms: ranks 1-6 are 0, 7-10 are 1 ms.
        for _ in 0..6 {
            s.record(Duration::ZERO);
        }
        for _ in 0..4 {
            s.record(Duration::from_millis(1));
        }
        assert_eq!(s.quantile(0.5), Some(Duration::ZERO));
        assert_eq!(s.quantile(0.6), Some(Duration::ZERO));
        // Rank 7: 1 ms's bucket [983040, 1015808), whose middle 999423 is under the max.
        assert_eq!(s.quantile(0.7), Some(Duration::from_nanos(999_423)));
        assert_eq!(s.quantile(1.0), Some(Duration::from_nanos(999_423)));
        assert_eq!(s.mean(), Some(Duration::from_nanos(400_000)));
        assert_eq!(s.packets(), 10);
        // Never above the largest sojourn seen: one of 983041 ns is read as itself, not as
        // its bucket's middle.
        let mut one = Sojourns::default();
        one.record(Duration::from_nanos(983_041));
        assert_eq!(one.quantile(0.5), Some(Duration::from_nanos(983_041)));
    }

    #[test]
    fn an_idle_link_allocates_no_histogram() {
        let mut s = Sojourns::default();
        s.record(Duration::ZERO);
        assert!(s.histogram.is_none());
        assert_eq!(s.quantile(0.99), Some(Duration::ZERO));
    }
}
