//! How slow start counts an ACK: one segment per ACK or per segment acknowledged (RFC 5681,
//! RFC 3465), and the segments an ACK newly delivered (Linux `tp->delivered`), shared by HyStart
//! and by the controllers that run their own slow start (CUBIC, BIC, BLAST, HighSpeed TCP).

use super::{AckSample, Tcb};
use crate::time::Time;
use serde::{Deserialize, Serialize};

/// How standard slow start counts an ACK (used by HyStart and by the CUBIC / BIC / BLAST
/// controllers for their own slow start).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SsCounting {
    /// cwnd += segments acknowledged (Linux `tcp_slow_start` since 3.18, RFC 3465 without limit).
    Segments,
    /// cwnd += 1 per ACK, whatever it acknowledges (Eq. 2.1, Fig. 5.2, Linux 2.6.2x without ABC).
    Acks,
}

impl SsCounting {
    /// Segments to add for an ACK that acknowledged `acked` segments.
    pub fn increase(self, acked: u32) -> u32 {
        match self {
            SsCounting::Segments => acked,
            SsCounting::Acks => acked.min(1),
        }
    }
}

/// The segments the current ACK newly delivered, for `cong_avoid`.
///
/// `Ack::acked` counts every segment the cumulative ACK covers, including those SACKed earlier;
/// after a hole is filled it can cover a whole window. Linux gives `cong_avoid` the segments
/// newly delivered by the ACK (`tp->delivered` − prior), which is what `AckSample::acked` holds;
/// this remembers it from `pkts_acked` (called just before `cong_avoid` on the same ACK). An ACK
/// for which `pkts_acked` did not run delivered nothing new.
#[derive(Copy, Clone, Debug, Default)]
pub struct NewlyDelivered {
    last: Option<(Time, u64, u32)>,
}

impl NewlyDelivered {
    /// From `pkts_acked`.
    pub fn record(&mut self, tcb: &Tcb, sample: &AckSample, now: Time) {
        self.last = Some((now, tcb.delivered, sample.acked));
    }

    /// From `cong_avoid`: the count recorded for this ACK, or 0. Callers bound it by
    /// `Ack::acked`, which after a start-up algorithm holds what slow start left over.
    pub fn take(&mut self, tcb: &Tcb, now: Time) -> u32 {
        match self.last.take() {
            Some((t, delivered, n)) if t == now && delivered == tcb.delivered => n,
            _ => 0,
        }
    }
}
