//! The sender's scoreboard: what is known of every segment between `snd_una` and `high_tx` —
//! sent when, SACKed, deemed lost, retransmitted — and the counters of RFC 6675's pipe
//! (Linux `sacked_out`, `lost_out`, `retrans_out`).

use super::intervals::IntervalSet;
use super::rate::TxRecord;
use crate::cc::LostSegment;
use crate::net::SackBlocks;
use crate::time::Time;
use std::collections::VecDeque;

/// What the sender remembers of each segment between `snd_una` and `high_tx`.
#[derive(Copy, Clone, Debug)]
pub(super) struct SegState {
    /// Last (re)transmission.
    pub sent_at: Time,
    /// What the connection had delivered when it was last sent (rate sampling).
    pub tx: TxRecord,
    pub sacked: bool,
    /// Deemed lost (by duplicate ACKs, SACK or a timeout) and not acknowledged since.
    pub lost: bool,
    /// A retransmission of this lost segment is in the network (counted in `retrans_out`).
    pub retx_in_flight: bool,
    /// Ever retransmitted (Karn's rule: no RTT sample from it).
    pub retransmitted: bool,
}

/// Segment states and the counters of the pipe.
#[derive(Debug, Default)]
pub(super) struct Scoreboard {
    /// One entry per segment from `snd_una` to `high_tx`.
    pub segs: VecDeque<SegState>,
    /// SACKed segments above `snd_una` (SACK recovery only).
    sacked: IntervalSet,
    pub sacked_out: u32,
    pub lost_out: u32,
    pub retrans_out: u32,
    /// No lost, not-yet-retransmitted segment lies below this.
    pub retx_hint: u32,
    /// The three highest SACKed segments, highest first (RFC 6675 IsLost with DupThresh = 3:
    /// an unSACKed segment below the third is lost).
    top_sacked: [Option<u32>; 3],
    /// Unsacked segments below this have been checked by the SACK loss rule.
    lost_mark_hint: u32,
    /// Losses marked so far: a segment newly deemed lost, or a lost segment's retransmission
    /// deemed lost too (Linux `tp->lost`, `tcp_sum_lost`).
    pub marked_lost: u64,
    /// Each loss marked, with `marked_lost` after it, for a controller told of every lost
    /// segment (BBRv3's `skb_marked_lost`); `None` when the controller does not want them.
    pub lost_log: Option<Vec<(LostSegment, u64)>>,
}

/// What a lost segment's send record tells BBRv3 (`TCP_SKB_CB(skb)->tx`).
fn lost_segment(s: &SegState) -> LostSegment {
    LostSegment {
        tx_in_flight: s.tx.in_flight,
        tx_lost: s.tx.lost,
        is_app_limited: s.tx.is_app_limited,
    }
}

impl Scoreboard {
    /// One more loss marked on segment `s`.
    fn count_loss(marked_lost: &mut u64, log: &mut Option<Vec<(LostSegment, u64)>>, s: &SegState) {
        *marked_lost += 1;
        if let Some(log) = log {
            log.push((lost_segment(s), *marked_lost));
        }
    }

    /// Segments in the network out of `packets_out` (Linux `tcp_packets_in_flight`, RFC 6675
    /// pipe).
    pub fn in_flight(&self, packets_out: u32) -> u32 {
        packets_out - self.sacked_out - self.lost_out + self.retrans_out
    }

    /// The cumulative ACK moved from `una` to `ack`: drops those segments and returns how many
    /// of them were delivered by this ACK (not SACKed before), each passed to `delivered`.
    pub fn advance(
        &mut self,
        una: u32,
        ack: u32,
        delivered: &mut dyn FnMut(u32, &SegState),
    ) -> u32 {
        let mut count = 0;
        for seq in una..ack {
            let s = self
                .segs
                .pop_front()
                .expect("scoreboard covers snd_una..high_tx");
            if s.sacked {
                self.sacked_out -= 1;
            } else {
                count += 1;
                delivered(seq, &s);
                if s.lost {
                    self.lost_out -= 1;
                }
                if s.retx_in_flight {
                    self.retrans_out -= 1;
                }
            }
        }
        self.sacked.remove_below(ack);
        self.retx_hint = self.retx_hint.max(ack);
        self.lost_mark_hint = self.lost_mark_hint.max(ack);
        count
    }

    /// Applies the SACK blocks of an ACK for `ack` with the window `(snd_una, high_tx)`; returns
    /// how many segments were newly SACKed, each passed to `delivered`.
    pub fn apply_sack(
        &mut self,
        (una, high_tx): (u32, u32),
        ack: u32,
        blocks: &SackBlocks,
        delivered: &mut dyn FnMut(u32, &SegState),
    ) -> u32 {
        let mut count = 0;
        let mut pieces: Vec<(u32, u32)> = Vec::new();
        for (a, b) in blocks.iter() {
            let (a, b) = (a.max(ack), b.min(high_tx));
            if a < b {
                self.sacked.insert(a, b, |x, y| pieces.push((x, y)));
            }
        }
        for (x, y) in pieces {
            for seq in x..y {
                let s = &mut self.segs[(seq - una) as usize];
                s.sacked = true;
                if s.lost {
                    s.lost = false;
                    self.lost_out -= 1;
                }
                if s.retx_in_flight {
                    s.retx_in_flight = false;
                    self.retrans_out -= 1;
                }
                let copy = *s;
                self.sacked_out += 1;
                count += 1;
                delivered(seq, &copy);
            }
            // Keep the three highest SACKed segments.
            for seq in (x.max(y.saturating_sub(3))..y).rev() {
                self.note_top_sacked(seq);
            }
        }
        count
    }

    fn note_top_sacked(&mut self, seq: u32) {
        let t = &mut self.top_sacked;
        if t.contains(&Some(seq)) {
            return;
        }
        if t[0].is_none_or(|v| seq > v) {
            *t = [Some(seq), t[0], t[1]];
        } else if t[1].is_none_or(|v| seq > v) {
            *t = [t[0], Some(seq), t[1]];
        } else if t[2].is_none_or(|v| seq > v) {
            t[2] = Some(seq);
        }
    }

    /// RFC 6675 IsLost(seq) with all segments full-sized: at least `dupthresh` (1 to 3)
    /// segments above it have been SACKed.
    pub fn is_lost_by_sack(&self, dupthresh: usize, una: u32, seq: u32) -> bool {
        match self.top_sacked[dupthresh - 1] {
            Some(kth) => seq < kth && seq >= una && !self.segs[(seq - una) as usize].sacked,
            None => false,
        }
    }

    /// Marks lost every unSACKed segment that IsLost() now covers.
    pub fn mark_sack_losses(&mut self, dupthresh: usize, una: u32, high_tx: u32) {
        let Some(boundary) = self.top_sacked[dupthresh - 1] else {
            return;
        };
        let start = self.lost_mark_hint.max(una);
        for seq in start..boundary.min(high_tx) {
            self.mark_lost(una, seq);
        }
        self.lost_mark_hint = self.lost_mark_hint.max(boundary);
    }

    /// Deems segment `seq` lost unless it was SACKed or is already.
    pub fn mark_lost(&mut self, una: u32, seq: u32) {
        let s = &mut self.segs[(seq - una) as usize];
        if s.sacked || s.lost {
            return;
        }
        s.lost = true;
        self.lost_out += 1;
        Self::count_loss(&mut self.marked_lost, &mut self.lost_log, s);
        if s.retx_in_flight {
            s.retx_in_flight = false;
            self.retrans_out -= 1;
        }
        self.retx_hint = self.retx_hint.min(seq);
    }

    /// The highest SACKed segment (Linux `tcp_highest_sack_seq` - 1), if any.
    pub fn highest_sacked(&self) -> Option<u32> {
        self.top_sacked[0]
    }

    /// `tcp_mark_skb_lost`: deems `seq` lost, or, if it already is and a retransmission of it
    /// is in flight, that retransmission lost too. Returns whether anything changed (a loss
    /// event).
    pub fn mark_lost_again(&mut self, una: u32, seq: u32) -> bool {
        let s = &mut self.segs[(seq - una) as usize];
        if s.sacked {
            return false;
        }
        if s.lost && !s.retx_in_flight {
            return false;
        }
        Self::count_loss(&mut self.marked_lost, &mut self.lost_log, s);
        if s.lost {
            s.retx_in_flight = false;
            self.retrans_out -= 1;
        } else {
            s.lost = true;
            self.lost_out += 1;
        }
        self.retx_hint = self.retx_hint.min(seq);
        true
    }

    /// A retransmission timeout with RACK (`tcp_timeout_mark_lost`): the first segment and
    /// every unSACKed one not `too_recent` are lost; retransmissions of those are no longer
    /// in flight.
    pub fn mark_lost_on_timeout(&mut self, una: u32, too_recent: &dyn Fn(&SegState) -> bool) {
        for (i, s) in self.segs.iter_mut().enumerate() {
            if s.sacked || (i > 0 && too_recent(s)) {
                continue;
            }
            if !s.lost || s.retx_in_flight {
                Self::count_loss(&mut self.marked_lost, &mut self.lost_log, s);
            }
            if !s.lost {
                s.lost = true;
                self.lost_out += 1;
            }
            if s.retx_in_flight {
                s.retx_in_flight = false;
                self.retrans_out -= 1;
            }
        }
        self.retx_hint = una;
    }

    /// A retransmission timeout: every unSACKed segment is lost and none is being
    /// retransmitted (RFC 6675 §5.1, Linux `tcp_enter_loss`).
    pub fn mark_all_lost(&mut self, una: u32, high_tx: u32) {
        for s in self.segs.iter_mut() {
            if !s.sacked && (!s.lost || s.retx_in_flight) {
                Self::count_loss(&mut self.marked_lost, &mut self.lost_log, s);
            }
            if !s.sacked && !s.lost {
                s.lost = true;
                self.lost_out += 1;
            }
            s.retx_in_flight = false;
        }
        self.retrans_out = 0;
        self.retx_hint = una;
        self.lost_mark_hint = high_tx;
    }
}
