//! Delivery-rate estimation as Linux computes it (net/ipv4/tcp_rate.c;
//! draft-cheng-iccrg-delivery-rate-estimation-02), shared by both stacks.
//!
//! Every transmission records what the connection had delivered, and when, at that moment
//! ([`TxRecord`], `tcp_rate_skb_sent`). An ACK takes the most recently sent segment it
//! delivers ([`Sampling::on_delivered`], `tcp_rate_skb_delivered`) and turns the difference into
//! a sample ([`DeliveryRate::generate`], `tcp_rate_gen`): the segments delivered since that
//! segment was sent, over the longer of its send phase and its ACK phase. A connection that runs
//! out of data marks itself application-limited until the bubble is delivered
//! ([`check_app_limited`], `tcp_rate_check_app_limited`).
//!
//! The connection's counters that controllers read — `delivered`, `delivered_mstamp`, `lost`,
//! `app_limited` — live in the [`Tcb`], so that a controller can write `app_limited` as BBR's
//! ProbeRTT does.

use crate::cc::{DeliveryRateRecord, RateSample, Tcb};
use crate::time::{Duration, Time};

/// What a segment remembers of the connection when it was last (re)sent (Linux
/// `TCP_SKB_CB(skb)->tx`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct TxRecord {
    /// `tp->delivered` at the send.
    pub delivered: u64,
    /// `tp->delivered_mstamp` at the send: when the last delivery before it was acknowledged.
    pub delivered_mstamp: Time,
    /// `tp->first_tx_mstamp` at the send: the start of this send phase.
    pub first_tx_mstamp: Time,
    /// The connection was application-limited when it was sent.
    pub is_app_limited: bool,
    /// Segments in flight just after the send, this one included (BBRv3's `tx.in_flight`,
    /// `tcp_set_tx_in_flight`).
    pub in_flight: u32,
    /// `tp->lost` at the send (BBRv3's `tx.lost`).
    pub lost: u64,
    /// `tp->delivered_ce` at the send (`tx.delivered_ce`).
    pub delivered_ce: u64,
}

/// The connection's side of rate sampling that controllers do not see.
#[derive(Clone, Debug, Default)]
pub(super) struct DeliveryRate {
    /// `tp->first_tx_mstamp`: the send time of the most recently sampled segment, or of the
    /// first segment sent after the connection had nothing in flight.
    first_tx_mstamp: Time,
}

/// One ACK's choice of segment to sample (the fields of `struct rate_sample` that
/// `tcp_rate_skb_delivered` fills).
#[derive(Clone, Debug, Default)]
pub(super) struct Sampling {
    prior_delivered: u64,
    prior_mstamp: Option<Time>,
    is_app_limited: bool,
    is_retrans: bool,
    /// The chosen segment's sequence number (`rs->last_end_seq`, here in segments).
    last_seq: u32,
    /// The chosen segment's send phase (`rs->interval_us` before `tcp_rate_gen`).
    send_interval: Duration,
    /// The chosen segment's `tx.in_flight` and `tx.lost` (BBRv3).
    tx_in_flight: u32,
    prior_lost: u64,
    /// The chosen segment's `tx.delivered_ce` (`rs->prior_delivered_ce`).
    prior_delivered_ce: u64,
}

impl Sampling {
    /// `rs->prior_delivered` of the chosen segment; `None` if the ACK delivered nothing new.
    /// (Linux's `tp->delivered` counts the SYN, so its `prior_delivered` is 0 only then.)
    pub fn prior_delivered(&self) -> Option<u64> {
        self.prior_mstamp.map(|_| self.prior_delivered)
    }
}

impl DeliveryRate {
    /// `tcp_rate_skb_sent`: a segment leaves at `now` with `packets_out` segments already out,
    /// `in_flight` of them in the network, and `lost` marked lost so far.
    pub fn on_send(
        &mut self,
        tcb: &mut Tcb,
        packets_out: u32,
        in_flight: u32,
        lost: u64,
        now: Time,
    ) -> TxRecord {
        // Nothing in flight: the samples of this flight start now, from the send and from the
        // (absent) ACKs alike.
        if packets_out == 0 {
            self.first_tx_mstamp = now;
            tcb.delivered_mstamp = now;
        }
        TxRecord {
            delivered: tcb.delivered,
            delivered_mstamp: tcb.delivered_mstamp,
            first_tx_mstamp: self.first_tx_mstamp,
            is_app_limited: tcb.app_limited.is_some(),
            in_flight: in_flight + 1,
            lost,
            delivered_ce: tcb.delivered_ce,
        }
    }

    /// `tcp_rate_skb_delivered`: segment `seq`, last sent at `sent_at` with record `tx` (a
    /// retransmission if `retransmitted`), is delivered by the ACK being processed. The most
    /// recently sent delivered segment (ties: the highest) gives the sample.
    pub fn on_delivered(
        &mut self,
        s: &mut Sampling,
        seq: u32,
        sent_at: Time,
        tx: &TxRecord,
        retransmitted: bool,
    ) {
        // Linux tests `!rs->prior_delivered` for "no segment chosen yet": a segment sent before
        // anything was delivered never blocks a later one (tcp_skb_sent_after breaks ties by
        // sequence).
        let sent_after =
            sent_at > self.first_tx_mstamp || (sent_at == self.first_tx_mstamp && seq > s.last_seq);
        if s.prior_delivered == 0 || sent_after {
            s.prior_delivered = tx.delivered;
            s.prior_mstamp = Some(tx.delivered_mstamp);
            s.is_app_limited = tx.is_app_limited;
            s.is_retrans = retransmitted;
            s.last_seq = seq;
            s.tx_in_flight = tx.in_flight;
            s.prior_lost = tx.lost;
            s.prior_delivered_ce = tx.delivered_ce;
            self.first_tx_mstamp = sent_at;
            s.send_interval = sent_at.saturating_since(tx.first_tx_mstamp);
        }
    }

    /// `tcp_rate_gen`: the sample of an ACK that delivered `delivered` segments and after which
    /// `lost` more were deemed lost, given what [`Self::on_delivered`] chose. `tcb.delivered`
    /// and `tcb.lost` already count this ACK.
    pub fn generate(
        &mut self,
        tcb: &mut Tcb,
        s: &Sampling,
        acked: AckedCounts,
        now: Time,
    ) -> RateSample {
        // The application-limited bubble is delivered and gone.
        if tcb.app_limited.is_some_and(|until| tcb.delivered > until) {
            tcb.app_limited = None;
        }
        if acked.delivered > 0 {
            tcb.delivered_mstamp = now;
        }
        let mut rs = RateSample {
            prior_delivered: s.prior_delivered,
            delivered: None,
            interval: None,
            send_interval: s.send_interval,
            ack_interval: Duration::ZERO,
            prior_in_flight: acked.prior_in_flight,
            rtt: acked.rtt,
            acked_sacked: acked.delivered,
            losses: acked.lost,
            is_app_limited: s.is_app_limited,
            is_retrans: s.is_retrans,
            tx_in_flight: 0,
            lost: 0,
            prior_delivered_ce: s.prior_delivered_ce,
            delivered_ce: 0,
        };
        // No segment with timing information was delivered: no sample.
        let Some(prior_mstamp) = s.prior_mstamp else {
            return rs;
        };
        let delivered = tcb.delivered - s.prior_delivered;
        rs.delivered = Some(delivered);
        // tcp_rate_gen: delivered_ce counts like delivered, from the sampled segment's send.
        rs.delivered_ce = tcb.delivered_ce.saturating_sub(s.prior_delivered_ce);
        rs.tx_in_flight = s.tx_in_flight;
        rs.lost = tcb.lost.saturating_sub(s.prior_lost).min(u32::MAX as u64) as u32;
        // Sending and acknowledging are two phases of one window: with ACK compression the send
        // phase is the longer, so the longer of the two is the interval.
        rs.ack_interval = now.saturating_since(prior_mstamp);
        let interval = s.send_interval.max(rs.ack_interval);
        // An interval shorter than the minimum RTT cannot be right (a spurious retransmission
        // sampled first, for example): no rate from it. Without any RTT sample Linux's min_rtt
        // is ~0U, so nothing is shorter.
        if tcb.min_rtt.is_none_or(|m| interval < m) {
            return rs;
        }
        rs.interval = Some(interval);
        // Keep the last sample not application-limited, or the fastest that is.
        let faster = |r: &DeliveryRateRecord| {
            delivered as u128 * r.interval.as_nanos() as u128
                >= r.delivered as u128 * interval.as_nanos() as u128
        };
        if !s.is_app_limited || tcb.delivery_rate.as_ref().is_none_or(faster) {
            tcb.delivery_rate = Some(DeliveryRateRecord {
                delivered,
                interval,
                app_limited: s.is_app_limited,
            });
        }
        rs
    }
}

/// What one ACK did, for [`DeliveryRate::generate`].
#[derive(Copy, Clone, Debug, Default)]
pub(super) struct AckedCounts {
    /// Segments newly delivered, cumulatively or by SACK.
    pub delivered: u32,
    /// Segments newly deemed lost.
    pub lost: u32,
    /// `tcp_packets_in_flight` before the ACK.
    pub prior_in_flight: u32,
    /// The RTT of the newest segment delivered, if it was never retransmitted.
    pub rtt: Option<Duration>,
}

/// `tcp_rate_check_app_limited`: the sender has less than a segment to send, is not limited by
/// cwnd and has retransmitted every lost segment: it is application-limited until what is
/// delivered and in flight now has been delivered.
pub(super) fn check_app_limited(tcb: &mut Tcb, out_of_data: bool, lost_out: u32, retrans_out: u32) {
    let cwnd = tcb.cwnd.floor().max(0.0) as u32;
    if out_of_data && tcb.in_flight < cwnd && lost_out <= retrans_out {
        tcb.app_limited = Some(tcb.delivered + tcb.in_flight as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Time {
        Time::ZERO + Duration::from_millis(x)
    }

    fn tcb() -> Tcb {
        let mut t = Tcb::new(1000, 1040, 10.0, f64::INFINITY);
        t.min_rtt = Some(Duration::from_millis(100));
        t
    }

    fn counts(delivered: u32) -> AckedCounts {
        AckedCounts {
            delivered,
            ..AckedCounts::default()
        }
    }

    /// Ten segments sent 1 ms apart from t = 0 into an idle connection and acknowledged
    /// 100 ms after each was sent: the tenth ACK's sample is the ten segments delivered since
    /// the flight began, over max(send phase 9 ms, ACK phase 109 ms) = 109 ms.
    #[test]
    fn a_flight_from_idle_is_timed_from_its_first_send() {
        let (mut r, mut t) = (DeliveryRate::default(), tcb());
        let tx: Vec<TxRecord> = (0..10)
            .map(|i| {
                let rec = r.on_send(&mut t, i, i, 0, ms(i as u64));
                t.high_tx += 1;
                rec
            })
            .collect();
        assert!(tx
            .iter()
            .all(|x| x.delivered == 0 && x.first_tx_mstamp == ms(0)));
        assert_eq!(tx[0].delivered_mstamp, ms(0));
        let mut last = None;
        for (i, rec) in tx.iter().enumerate() {
            let mut s = Sampling::default();
            r.on_delivered(&mut s, i as u32, ms(i as u64), rec, false);
            t.delivered += 1;
            last = Some(r.generate(&mut t, &s, counts(1), ms(100 + i as u64)));
        }
        let rs = last.unwrap();
        assert_eq!(rs.delivered, Some(10));
        assert_eq!(rs.prior_delivered, 0);
        assert_eq!(rs.send_interval, Duration::from_millis(9));
        assert_eq!(rs.ack_interval, Duration::from_millis(109));
        assert_eq!(rs.interval, Some(Duration::from_millis(109)));
        assert_eq!(t.delivered_mstamp, ms(109));
    }

    /// delivered_ce counts as delivered does: a segment sent when 10 were delivered, 3 of them
    /// with an echo, is acknowledged when 15 are, 7 with an echo: its sample has
    /// prior_delivered_ce 3 and delivered_ce 7 - 3 = 4.
    #[test]
    fn delivered_ce_is_counted_from_the_sampled_segments_send() {
        let (mut r, mut t) = (DeliveryRate::default(), tcb());
        r.on_send(&mut t, 0, 0, 0, ms(0));
        t.delivered = 10;
        t.delivered_ce = 3;
        t.delivered_mstamp = ms(109);
        let rec = r.on_send(&mut t, 5, 5, 0, ms(110));
        assert_eq!(rec.delivered_ce, 3);
        let mut s = Sampling::default();
        r.on_delivered(&mut s, 20, ms(110), &rec, false);
        t.delivered = 15;
        t.delivered_ce = 7;
        let rs = r.generate(&mut t, &s, counts(5), ms(210));
        assert_eq!((rs.prior_delivered_ce, rs.delivered_ce), (3, 4));
    }

    /// A segment sent at 110 ms, when 10 had been delivered (the last at 109 ms) and the flight
    /// had started at 0: acknowledged at 210 ms with 15 delivered in all, its sample is
    /// 5 segments over max(110, 101) = 110 ms. A stale segment delivered by the same ACK (sent
    /// at 50 ms) does not replace it.
    #[test]
    fn the_most_recently_sent_segment_gives_the_sample() {
        let (mut r, mut t) = (DeliveryRate::default(), tcb());
        r.on_send(&mut t, 0, 0, 0, ms(0));
        t.delivered = 10;
        t.delivered_mstamp = ms(109);
        let newest = r.on_send(&mut t, 5, 5, 0, ms(110));
        let stale = TxRecord {
            delivered: 2,
            delivered_mstamp: ms(40),
            first_tx_mstamp: ms(0),
            is_app_limited: false,
            ..TxRecord::default()
        };
        let mut s = Sampling::default();
        r.on_delivered(&mut s, 20, ms(110), &newest, false);
        r.on_delivered(&mut s, 8, ms(50), &stale, true);
        t.delivered = 15;
        let rs = r.generate(&mut t, &s, counts(5), ms(210));
        assert_eq!((rs.prior_delivered, rs.delivered), (10, Some(5)));
        assert_eq!(rs.send_interval, Duration::from_millis(110));
        assert_eq!(rs.ack_interval, Duration::from_millis(101));
        assert_eq!(rs.interval, Some(Duration::from_millis(110)));
        assert!(!rs.is_retrans);
    }

    /// An interval shorter than min_rtt gives the count but no rate; an ACK that delivered no
    /// timed segment gives neither.
    #[test]
    fn short_intervals_and_untimed_acks_give_no_rate() {
        let (mut r, mut t) = (DeliveryRate::default(), tcb());
        let rec = r.on_send(&mut t, 0, 0, 0, ms(0));
        let mut s = Sampling::default();
        r.on_delivered(&mut s, 0, ms(0), &rec, true);
        t.delivered = 1;
        let rs = r.generate(&mut t, &s, counts(1), ms(30));
        assert_eq!((rs.delivered, rs.interval), (Some(1), None));
        assert!(rs.is_retrans);
        let rs = r.generate(&mut t, &Sampling::default(), counts(0), ms(40));
        assert_eq!((rs.delivered, rs.interval), (None, None));
        assert_eq!(t.delivery_rate, None);
    }

    /// Out of data with 4 in flight and 6 delivered: application-limited until the 10th
    /// delivery; segments sent meanwhile carry the mark, and the mark goes once delivered > 10.
    #[test]
    fn an_application_limited_bubble_lasts_until_it_is_delivered() {
        let (mut r, mut t) = (DeliveryRate::default(), tcb());
        t.delivered = 6;
        t.in_flight = 4;
        check_app_limited(&mut t, true, 0, 0);
        assert_eq!(t.app_limited, Some(10));
        assert!(r.on_send(&mut t, 4, 4, 0, ms(1)).is_app_limited);
        t.delivered = 10;
        r.generate(&mut t, &Sampling::default(), counts(4), ms(2));
        assert_eq!(t.app_limited, Some(10));
        t.delivered = 11;
        r.generate(&mut t, &Sampling::default(), counts(1), ms(3));
        assert_eq!(t.app_limited, None);
        // Limited by cwnd, or with lost segments not yet retransmitted: not marked.
        t.in_flight = 10;
        check_app_limited(&mut t, true, 0, 0);
        t.in_flight = 2;
        check_app_limited(&mut t, true, 1, 0);
        check_app_limited(&mut t, false, 0, 0);
        assert_eq!(t.app_limited, None);
    }

    /// BBRv3's per-segment signals: a segment sent with 7 others in the network and 3 losses
    /// marked, sampled when 5 have been marked, carries tx_in_flight 8 and lost 5 - 3 = 2.
    #[test]
    fn the_sample_carries_the_flight_and_the_losses_since_its_segment_was_sent() {
        let (mut r, mut t) = (DeliveryRate::default(), tcb());
        let rec = r.on_send(&mut t, 9, 7, 3, ms(0));
        assert_eq!((rec.in_flight, rec.lost), (8, 3));
        let mut s = Sampling::default();
        r.on_delivered(&mut s, 0, ms(0), &rec, false);
        t.delivered += 4;
        t.lost = 5;
        let rs = r.generate(&mut t, &s, counts(4), ms(150));
        assert_eq!((rs.tx_in_flight, rs.lost), (8, 2));
        // An ACK that samples no segment carries neither.
        let rs = r.generate(&mut t, &Sampling::default(), counts(0), ms(160));
        assert_eq!((rs.tx_in_flight, rs.lost), (0, 0));
    }

    /// The recorded rate keeps a slower sample only if it is not application-limited.
    #[test]
    fn the_recorded_rate_prefers_unlimited_or_faster_samples() {
        let (mut r, mut t) = (DeliveryRate::default(), tcb());
        let rate = |r: &mut DeliveryRate, t: &mut Tcb, delivered: u64, limited: bool| {
            let rec = TxRecord {
                delivered: t.delivered,
                delivered_mstamp: ms(0),
                first_tx_mstamp: ms(0),
                is_app_limited: limited,
                ..TxRecord::default()
            };
            let mut s = Sampling::default();
            r.on_delivered(&mut s, 0, ms(0), &rec, false);
            t.delivered += delivered;
            r.generate(t, &s, counts(delivered as u32), ms(200));
            t.delivery_rate.map(|l| l.delivered)
        };
        t.delivered = 1;
        assert_eq!(rate(&mut r, &mut t, 20, false), Some(20));
        assert_eq!(rate(&mut r, &mut t, 5, true), Some(20));
        assert_eq!(rate(&mut r, &mut t, 30, true), Some(30));
        assert_eq!(rate(&mut r, &mut t, 5, false), Some(5));
    }
}
