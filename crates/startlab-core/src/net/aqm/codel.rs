//! CoDel (RFC 8289) as Linux implements it: `include/net/codel.h`, `include/net/codel_impl.h`
//! and `net/sched/sch_codel.c`, in the kernel's integer arithmetic.
//!
//! Time is `codel_time_t`: nanoseconds >> 10 in a wrapping `u32` (`codel_get_time`), compared
//! as signed differences (`codel_time_before`). The control law `t + interval / sqrt(count)` uses
//! the reciprocal square root kept in Q0.16 and refined by one Newton step per change of
//! `count` (`codel_Newton_step`), as the kernel does; the RFC's pseudo-code uses `sqrt()`.

use super::{Queued, Verdicts};
use crate::time::{Duration, Time};
use std::collections::VecDeque;

/// `CODEL_SHIFT`: a CoDel time unit is 1024 ns.
const CODEL_SHIFT: u32 = 10;
/// `REC_INV_SQRT_BITS` = 16: `rec_inv_sqrt` is a `u16` holding the high bits of a Q0.32.
const REC_INV_SQRT_SHIFT: u32 = 32 - 16;
/// `CODEL_DISABLED_THRESHOLD`: `ce_threshold` when off.
const DISABLED_THRESHOLD: u32 = i32::MAX as u32;

/// A CoDel time: `codel_get_time()` at `t`.
pub fn codel_time(t: Time) -> u32 {
    (t.as_nanos() >> CODEL_SHIFT) as u32
}

/// A duration in CoDel time units, as `tc`'s microseconds are converted (`(us * 1000) >> 10`).
pub fn codel_duration(d: Duration) -> u32 {
    (d.as_nanos() >> CODEL_SHIFT).min(u32::MAX as u64) as u32
}

/// `codel_time_before(a, b)`.
fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// `codel_time_after(a, b)`.
fn after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// `codel_time_after_eq(a, b)`.
fn after_eq(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) >= 0
}

/// `struct codel_params`.
#[derive(Clone, Debug, PartialEq)]
pub struct CodelParams {
    pub target: Duration,
    pub interval: Duration,
    /// Mark (never drop) ECT packets whose sojourn exceeds this (`ce_threshold`); `None` = off.
    pub ce_threshold: Option<Duration>,
    /// Mark ECT packets instead of dropping them.
    pub ecn: bool,
    /// CoDel does not drop while the backlog left is at most this many bytes (`psched_mtu`).
    pub mtu: u32,
}

/// The parameters in CoDel time units.
#[derive(Copy, Clone, Debug)]
pub(super) struct Units {
    target: u32,
    interval: u32,
    ce_threshold: u32,
    ecn: bool,
    mtu: u32,
}

impl CodelParams {
    pub(super) fn units(&self) -> Units {
        Units {
            target: codel_duration(self.target),
            interval: codel_duration(self.interval),
            ce_threshold: self.ce_threshold.map_or(DISABLED_THRESHOLD, codel_duration),
            ecn: self.ecn,
            mtu: self.mtu,
        }
    }
}

/// `struct codel_vars`: one per CoDel queue (one per flow in FQ-CoDel).
#[derive(Clone, Debug, Default)]
pub(super) struct CodelVars {
    /// Drops (or marks) since entering the dropping state.
    pub(super) count: u32,
    /// `count` when the dropping state was last entered.
    lastcount: u32,
    dropping: bool,
    /// 1 / sqrt(count), Q0.16.
    rec_inv_sqrt: u16,
    /// When the sojourn time will have been above target for an interval (0 = below).
    first_above_time: u32,
    /// When the next drop is due in the dropping state.
    drop_next: u32,
    /// Sojourn time of the last dequeued packet.
    ldelay: u32,
}

/// Where CoDel takes packets from: a FIFO (sch_codel) or one flow of FQ-CoDel.
pub(super) trait CodelSource {
    /// Removes the head packet (`dequeue_func`), lowering the backlog by its size.
    fn pop(&mut self) -> Option<Queued>;
    /// The backlog the mtu rule looks at, after the pop (the whole qdisc's, in FQ-CoDel too).
    fn backlog(&self) -> u64;
}

impl CodelVars {
    /// `codel_Newton_step`: rec_inv_sqrt = (rec_inv_sqrt / 2) * (3 - count * rec_inv_sqrt^2).
    fn newton_step(&mut self) {
        let invsqrt = (self.rec_inv_sqrt as u32) << REC_INV_SQRT_SHIFT;
        let invsqrt2 = ((invsqrt as u64 * invsqrt as u64) >> 32) as u32;
        let mut val = (3u64 << 32).wrapping_sub(self.count as u64 * invsqrt2 as u64);
        val >>= 2; // avoid overflow in the multiply
        val = (val.wrapping_mul(invsqrt as u64)) >> (32 - 2 + 1);
        self.rec_inv_sqrt = (val >> REC_INV_SQRT_SHIFT) as u16;
    }

    /// `codel_control_law`: t + interval / sqrt(count), with `reciprocal_scale`.
    fn control_law(&self, t: u32, interval: u32) -> u32 {
        let scale = (self.rec_inv_sqrt as u32) << REC_INV_SQRT_SHIFT;
        t.wrapping_add(((interval as u64 * scale as u64) >> 32) as u32)
    }

    /// `codel_should_drop`.
    fn should_drop(&mut self, head: Option<&Queued>, p: &Units, backlog: u64, now: u32) -> bool {
        let Some(head) = head else {
            self.first_above_time = 0;
            return false;
        };
        self.ldelay = now.wrapping_sub(codel_time(head.enqueued));
        if before(self.ldelay, p.target) || backlog <= p.mtu as u64 {
            // Went below: stay below for at least an interval.
            self.first_above_time = 0;
            return false;
        }
        if self.first_above_time == 0 {
            self.first_above_time = now.wrapping_add(p.interval);
            false
        } else {
            after(now, self.first_above_time)
        }
    }

    /// `codel_dequeue`: the next packet to send from `src`, dropping or marking on the way.
    /// Dropped packets go to `out.dropped`; `out.marks` counts CE marks (both kinds).
    pub(super) fn dequeue(
        &mut self,
        p: &Units,
        now: Time,
        src: &mut impl CodelSource,
        out: &mut Verdicts,
    ) -> Option<Queued> {
        let mut skb = src.pop();
        if skb.is_none() {
            self.dropping = false;
            return None;
        }
        let now = codel_time(now);
        let mut drop = self.should_drop(skb.as_ref(), p, src.backlog(), now);
        if self.dropping {
            if !drop {
                // Sojourn time below target: leave the dropping state.
                self.dropping = false;
            } else if after_eq(now, self.drop_next) {
                // Time for the next drop; a large backlog may make several due at once.
                while self.dropping && after_eq(now, self.drop_next) {
                    self.count = self.count.wrapping_add(1);
                    self.newton_step();
                    let q = skb.as_mut().expect("a packet in the dropping state");
                    if p.ecn && q.packet.ecn.set_ce() {
                        out.marks += 1;
                        self.drop_next = self.control_law(self.drop_next, p.interval);
                        return self.ce_threshold(skb, p, out);
                    }
                    out.dropped.push(skb.take().expect("checked"));
                    skb = src.pop();
                    if !self.should_drop(skb.as_ref(), p, src.backlog(), now) {
                        self.dropping = false;
                    } else {
                        self.drop_next = self.control_law(self.drop_next, p.interval);
                    }
                }
            }
        } else if drop {
            let q = skb.as_mut().expect("a packet to drop");
            if p.ecn && q.packet.ecn.set_ce() {
                out.marks += 1;
            } else {
                out.dropped.push(skb.take().expect("checked"));
                skb = src.pop();
                drop = self.should_drop(skb.as_ref(), p, src.backlog(), now);
            }
            let _ = drop; // codel_impl.h computes it and enters the dropping state regardless
            self.dropping = true;
            // If the queue went above target soon after it last went below, resume at the drop
            // rate that controlled it then (RFC 8289 §5.6's "count - lastcount").
            let delta = self.count.wrapping_sub(self.lastcount);
            if delta > 1 && before(now.wrapping_sub(self.drop_next), 16 * p.interval) {
                self.count = delta;
                self.newton_step();
            } else {
                self.count = 1;
                self.rec_inv_sqrt = (u32::MAX >> REC_INV_SQRT_SHIFT) as u16;
            }
            self.lastcount = self.count;
            self.drop_next = self.control_law(now, p.interval);
        }
        self.ce_threshold(skb, p, out)
    }

    /// The `ce_threshold` mark at the end of `codel_dequeue`.
    fn ce_threshold(
        &self,
        mut skb: Option<Queued>,
        p: &Units,
        out: &mut Verdicts,
    ) -> Option<Queued> {
        if let Some(q) = skb.as_mut() {
            if after(self.ldelay, p.ce_threshold) && q.packet.ecn.set_ce() {
                out.marks += 1;
            }
        }
        skb
    }
}

/// sch_codel: one FIFO under CoDel, a limit in packets.
#[derive(Clone, Debug)]
pub struct Codel {
    pub params: CodelParams,
    pub limit: u32,
    units: Units,
    vars: CodelVars,
    fifo: Fifo,
}

#[derive(Clone, Debug, Default)]
struct Fifo {
    packets: VecDeque<Queued>,
    backlog: u64,
}

impl CodelSource for Fifo {
    fn pop(&mut self) -> Option<Queued> {
        let q = self.packets.pop_front()?;
        self.backlog -= q.packet.wire_bytes as u64;
        Some(q)
    }
    fn backlog(&self) -> u64 {
        self.backlog
    }
}

impl Codel {
    pub fn new(params: CodelParams, limit: u32) -> Self {
        Codel {
            units: params.units(),
            params,
            limit,
            vars: CodelVars::default(),
            fifo: Fifo::default(),
        }
    }

    /// `codel_qdisc_enqueue`: tail drop at the limit; otherwise stamped and queued.
    pub fn enqueue(&mut self, item: Queued) -> Result<(), Queued> {
        if self.fifo.packets.len() as u32 >= self.limit {
            return Err(item);
        }
        self.fifo.backlog += item.packet.wire_bytes as u64;
        self.fifo.packets.push_back(item);
        Ok(())
    }

    pub fn dequeue(&mut self, now: Time, out: &mut Verdicts) -> Option<Queued> {
        self.vars.dequeue(&self.units, now, &mut self.fifo, out)
    }

    pub fn len(&self) -> u32 {
        self.fifo.packets.len() as u32
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn backlog(&self) -> u64 {
        self.fifo.backlog
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::item;
    use super::*;

    #[test]
    fn newton_steps_approach_the_reciprocal_square_root() {
        // One step from 1.0 at count 2: (1/2) * (3 - 2 * 1^2) = 0.5.
        let mut v = CodelVars {
            count: 2,
            rec_inv_sqrt: (u32::MAX >> REC_INV_SQRT_SHIFT) as u16,
            ..Default::default()
        };
        v.newton_step();
        assert!(
            (v.rec_inv_sqrt as f64 / 65536.0 - 0.5).abs() < 1e-3,
            "{}",
            v.rec_inv_sqrt
        );
        // One step per increment of count tracks 1/sqrt(count) from below, the error shrinking
        // as count grows (the kernel relies on it: "Next Newton steps will correct it").
        let mut worst_after_16: f64 = 0.0;
        for count in 3..=1000u32 {
            v.count = count;
            v.newton_step();
            let exact = 1.0 / (count as f64).sqrt();
            let err = (v.rec_inv_sqrt as f64 / 65536.0 - exact) / exact;
            assert!(err <= 1e-4 && err > -0.05, "count {count}: error {err}");
            if count >= 16 {
                worst_after_16 = worst_after_16.max(-err);
            }
        }
        assert!(worst_after_16 < 0.01, "{worst_after_16}");
    }

    #[test]
    fn control_law_at_count_one_is_one_interval() {
        let v = CodelVars {
            count: 1,
            rec_inv_sqrt: u16::MAX,
            ..Default::default()
        };
        // 100 ms = 97656 units; 0xffff/0x10000 of it, truncated.
        assert_eq!(v.control_law(1000, 97_656), 1000 + 97_654);
    }

    fn codel(ecn: bool) -> Codel {
        Codel::new(
            CodelParams {
                target: Duration::from_millis(5),
                interval: Duration::from_millis(100),
                ce_threshold: None,
                ecn,
                mtu: 1500,
            },
            1000,
        )
    }

    /// A standing queue of 1500-byte packets each waiting `wait`, one dequeued every `gap`.
    fn run(q: &mut Codel, wait: Duration, gap: Duration, n: u64, ecn: crate::net::Ecn) -> Verdicts {
        let mut out = Verdicts::default();
        for i in 0..n {
            let now = Time::ZERO + gap * (i + 1) + wait;
            // Keep five packets queued behind the head so the backlog exceeds the mtu.
            while q.len() < 6 {
                let k = q.len() as u64;
                q.enqueue(item(1500, Time::ZERO + gap * (i + 1 + k), ecn))
                    .unwrap();
            }
            q.dequeue(now, &mut out);
        }
        out
    }

    #[test]
    fn below_target_nothing_is_dropped() {
        let mut q = codel(false);
        let out = run(
            &mut q,
            Duration::from_millis(4),
            Duration::from_millis(1),
            2000,
            crate::net::Ecn::NotEct,
        );
        assert!(out.dropped.is_empty() && out.marks == 0);
    }

    #[test]
    fn above_target_the_first_drop_comes_after_an_interval() {
        // Every packet waits 20 ms: the first dequeue sets first_above_time = now + 100 ms, the
        // first drop is the first dequeue strictly after it.
        let mut q = codel(false);
        let mut out = Verdicts::default();
        let gap = Duration::from_millis(1);
        let mut first_drop = None;
        for i in 0..300u64 {
            let now = Time::ZERO + Duration::from_millis(20) + gap * i;
            while q.len() < 6 {
                q.enqueue(item(
                    1500,
                    Time::from_nanos(now.as_nanos() - 20_000_000),
                    crate::net::Ecn::NotEct,
                ))
                .unwrap();
            }
            let before = out.dropped.len();
            q.dequeue(now, &mut out);
            if out.dropped.len() > before && first_drop.is_none() {
                first_drop = Some(i);
            }
        }
        // first_above_time = 20 ms + 100 ms in codel units; the first dequeue after it is the
        // one at 121 ms (i = 101), allowing for the 1024-ns truncation.
        assert_eq!(first_drop, Some(101));
        // In the dropping state drops come at interval / sqrt(count): the second 100 ms after
        // the first, the third ~71 ms after that...
        assert!(out.dropped.len() >= 3, "{}", out.dropped.len());
    }

    #[test]
    fn with_ecn_ect_packets_are_marked_not_dropped() {
        let mut q = codel(true);
        let out = run(
            &mut q,
            Duration::from_millis(20),
            Duration::from_millis(1),
            1000,
            crate::net::Ecn::Ect0,
        );
        assert!(out.dropped.is_empty());
        assert!(out.marks >= 3, "{}", out.marks);
        // Not-ECT packets are dropped even with ecn on.
        let mut q = codel(true);
        let out = run(
            &mut q,
            Duration::from_millis(20),
            Duration::from_millis(1),
            1000,
            crate::net::Ecn::NotEct,
        );
        assert!(out.marks == 0 && !out.dropped.is_empty());
    }

    #[test]
    fn ce_threshold_marks_every_ect_packet_above_it() {
        let mut q = Codel::new(
            CodelParams {
                ce_threshold: Some(Duration::from_millis(1)),
                ..codel(false).params
            },
            1000,
        );
        let out = run(
            &mut q,
            Duration::from_millis(2),
            Duration::from_millis(1),
            50,
            crate::net::Ecn::Ect1,
        );
        assert_eq!(out.marks, 50);
        assert!(out.dropped.is_empty());
    }

    #[test]
    fn the_limit_refuses_arrivals() {
        let mut q = Codel::new(codel(false).params, 2);
        assert!(q
            .enqueue(item(100, Time::ZERO, crate::net::Ecn::NotEct))
            .is_ok());
        assert!(q
            .enqueue(item(100, Time::ZERO, crate::net::Ecn::NotEct))
            .is_ok());
        assert!(q
            .enqueue(item(100, Time::ZERO, crate::net::Ecn::NotEct))
            .is_err());
        assert_eq!((q.len(), q.backlog()), (2, 200));
    }
}
