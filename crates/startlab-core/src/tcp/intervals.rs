//! A set of segment numbers kept as sorted, disjoint, non-adjacent half-open ranges: the
//! receiver's out-of-order data and the sender's SACK scoreboard.

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IntervalSet {
    ranges: Vec<(u32, u32)>,
}

impl IntervalSet {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    pub fn ranges(&self) -> &[(u32, u32)] {
        &self.ranges
    }

    pub fn contains(&self, x: u32) -> bool {
        self.find(x).is_some()
    }

    /// The range holding `x`.
    pub fn find(&self, x: u32) -> Option<(u32, u32)> {
        let i = self.ranges.partition_point(|r| r.1 <= x);
        self.ranges.get(i).copied().filter(|r| r.0 <= x)
    }

    /// Adds `[start, end)`, calling `newly(a, b)` for each sub-range that was not in the set.
    pub fn insert(&mut self, start: u32, end: u32, mut newly: impl FnMut(u32, u32)) {
        if start >= end {
            return;
        }
        // Ranges that overlap or touch [start, end).
        let lo = self.ranges.partition_point(|r| r.1 < start);
        let hi = self.ranges.partition_point(|r| r.0 <= end);
        let mut cursor = start;
        for &(a, b) in &self.ranges[lo..hi] {
            if a > cursor {
                newly(cursor, a.min(end));
            }
            cursor = cursor.max(b);
        }
        if cursor < end {
            newly(cursor, end);
        }
        let merged_start = self
            .ranges
            .get(lo)
            .filter(|_| lo < hi)
            .map_or(start, |r| r.0.min(start));
        let merged_end = if lo < hi {
            self.ranges[hi - 1].1.max(end)
        } else {
            end
        };
        self.ranges.splice(lo..hi, [(merged_start, merged_end)]);
    }

    /// Removes everything below `x`.
    pub fn remove_below(&mut self, x: u32) {
        let i = self.ranges.partition_point(|r| r.1 <= x);
        self.ranges.drain(..i);
        if let Some(first) = self.ranges.first_mut() {
            first.0 = first.0.max(x);
        }
    }

    /// If the set starts exactly at `x`, removes that range and returns its end.
    pub fn pop_starting_at(&mut self, x: u32) -> Option<u32> {
        match self.ranges.first() {
            Some(&(a, b)) if a == x => {
                self.ranges.remove(0);
                Some(b)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_merges_and_reports_only_new_parts() {
        let mut s = IntervalSet::new();
        let mut new = Vec::new();
        s.insert(10, 20, |a, b| new.push((a, b)));
        s.insert(30, 40, |a, b| new.push((a, b)));
        assert_eq!(new, [(10, 20), (30, 40)]);
        new.clear();
        s.insert(15, 35, |a, b| new.push((a, b)));
        assert_eq!(new, [(20, 30)]);
        assert_eq!(s.ranges(), [(10, 40)]);
        new.clear();
        s.insert(40, 41, |a, b| new.push((a, b)));
        assert_eq!(s.ranges(), [(10, 41)]);
        s.insert(12, 13, |a, b| new.push((a, b)));
        assert_eq!(new, [(40, 41)]);
    }

    #[test]
    fn remove_below_trims() {
        let mut s = IntervalSet::new();
        s.insert(5, 10, |_, _| {});
        s.insert(20, 30, |_, _| {});
        s.remove_below(25);
        assert_eq!(s.ranges(), [(25, 30)]);
        assert!(s.contains(29) && !s.contains(30) && !s.contains(7));
        assert_eq!(s.pop_starting_at(25), Some(30));
        assert!(s.is_empty());
    }
}
