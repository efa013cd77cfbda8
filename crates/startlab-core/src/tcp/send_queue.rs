//! What the application has written and not yet had acknowledged, counted in segments (Linux's
//! write queue, `tcp_sendmsg`): new data may go up to [`SendQueue::written`].
//!
//! A bulk flow writes everything at once (its [`FlowSize`]); an application that sends requests
//! ([`crate::traffic::RequestSpec`]) writes one response at a time. Each write starts a new
//! segment, so a write that is not a whole number of MSS ends with a short segment: what a
//! write followed by a push gives when the connection was idle, as it is between requests.

use super::FlowSize;

#[derive(Clone, Debug)]
pub struct SendQueue {
    /// One past the last segment written.
    written: u32,
    /// The application writes nothing more: once everything written is acknowledged, the
    /// connection is done.
    last_write_done: bool,
    /// Segments shorter than the MSS (the last of a write), ascending by sequence number, with
    /// their payload.
    short: Vec<(u32, u32)>,
    mss: u32,
    /// Payload bytes written.
    bytes: u64,
}

impl SendQueue {
    /// Everything of a bulk flow, written at once (an unlimited flow never runs dry).
    pub fn bulk(size: FlowSize, mss: u32) -> Self {
        let short = if !size.is_unlimited() && size.segments > 0 && size.last_segment_bytes < mss {
            vec![(size.segments - 1, size.last_segment_bytes)]
        } else {
            Vec::new()
        };
        SendQueue {
            written: size.segments,
            last_write_done: true,
            short,
            mss,
            bytes: size.total_bytes(mss).unwrap_or(u64::MAX),
        }
    }

    /// Nothing written yet; the application writes with [`SendQueue::write`].
    pub fn empty(mss: u32) -> Self {
        SendQueue {
            written: 0,
            last_write_done: false,
            short: Vec::new(),
            mss,
            bytes: 0,
        }
    }

    /// The application writes `bytes` (at least one) after everything written before; `last`
    /// if it writes nothing more. Returns the segments the write occupies, `first..end`.
    pub fn write(&mut self, bytes: u64, last: bool) -> (u32, u32) {
        debug_assert!(!self.last_write_done, "a write after the last one");
        let size = FlowSize::from_bytes(bytes.max(1), self.mss);
        let first = self.written;
        // Sequence numbers count segments in a u32: a run that would overflow them stops
        // taking writes (a scenario's sizes are bounded far below this).
        let end = first.saturating_add(size.segments).min(u32::MAX - 1);
        if size.last_segment_bytes < self.mss && end > first {
            self.short.push((end - 1, size.last_segment_bytes));
        }
        self.written = end;
        self.last_write_done = last;
        self.bytes += bytes.max(1);
        (first, end)
    }

    /// One past the last segment written.
    pub fn written(&self) -> u32 {
        self.written
    }

    /// Whether everything the application will ever write has been acknowledged, given the
    /// first unacknowledged segment.
    pub fn all_acked(&self, snd_una: u32) -> bool {
        self.last_write_done && self.written != u32::MAX && snd_una >= self.written
    }

    /// Whether the application will write nothing more.
    pub fn last_write_done(&self) -> bool {
        self.last_write_done
    }

    /// The flow's size, once the application has written everything it will (`None` for an
    /// unlimited flow or one still writing).
    pub fn total_bytes(&self) -> Option<u64> {
        (self.last_write_done && self.written != u32::MAX).then_some(self.bytes)
    }

    /// Payload bytes of segment `seq`.
    pub fn payload(&self, seq: u32) -> u32 {
        match self.short.last() {
            None => self.mss,
            // The common cases: no short segment, or only the one at the end.
            Some(&(s, b)) if s == seq => b,
            Some(&(s, _)) if s < seq => self.mss,
            Some(_) => match self.short.binary_search_by_key(&seq, |&(s, _)| s) {
                Ok(i) => self.short[i].1,
                Err(_) => self.mss,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bulk_flow_has_one_short_segment_at_its_end() {
        let q = SendQueue::bulk(FlowSize::from_bytes(2500, 1000), 1000);
        assert_eq!(q.written(), 3);
        assert_eq!(
            (q.payload(0), q.payload(1), q.payload(2)),
            (1000, 1000, 500)
        );
        assert!(q.all_acked(3) && !q.all_acked(2));
        assert_eq!(q.total_bytes(), Some(2500));
        let q = SendQueue::bulk(FlowSize::UNLIMITED, 1000);
        assert!(!q.all_acked(u32::MAX - 1));
        assert_eq!(q.total_bytes(), None);
    }

    #[test]
    fn each_write_starts_a_segment() {
        let mut q = SendQueue::empty(1000);
        assert_eq!(q.write(1500, false), (0, 2));
        assert_eq!(q.write(3000, false), (2, 5));
        assert_eq!(q.write(10, true), (5, 6));
        // 1000 + 500 | 1000 × 3 | 10
        let payloads: Vec<u32> = (0..6).map(|s| q.payload(s)).collect();
        assert_eq!(payloads, [1000, 500, 1000, 1000, 1000, 10]);
        assert_eq!(q.total_bytes(), Some(4510));
        assert!(q.all_acked(6) && !q.all_acked(5));
    }

    #[test]
    fn an_open_queue_is_never_all_acked() {
        let mut q = SendQueue::empty(1000);
        assert!(!q.all_acked(0));
        q.write(1000, false);
        assert!(!q.all_acked(1));
        assert_eq!(q.total_bytes(), None);
    }
}
