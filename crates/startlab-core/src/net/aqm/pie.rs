//! PIE (RFC 8033) as Linux implements it: `net/sched/sch_pie.c` and `include/net/pie.h`, in the
//! kernel's integer arithmetic.
//!
//! The drop probability is a fixed-point fraction of `MAX_PROB` = 2^56 - 1, recomputed by a
//! timer every `tupdate` (the first time half a second after the queue is created, as
//! `pie_init` arms it) from the queueing delay: by default the sojourn time of the last
//! dequeued packet (timestamps; `dq_rate_estimator` = false), else the backlog over a
//! departure-rate estimate. Times are psched ticks (64 ns). Arrivals are dropped (or, with
//! `ecn`, ECT ones marked while the probability is at most 10 %) at enqueue.

use super::{Queued, Verdicts};
use crate::rng::Rng;
use crate::time::{Duration, Time};
use std::collections::VecDeque;

/// `MAX_PROB`: probability 1.
const MAX_PROB: u64 = u64::MAX >> 8;
/// `DTIME_INVALID`.
const DTIME_INVALID: u64 = u64::MAX;
/// `QUEUE_THRESHOLD`: bytes of backlog needed to measure the departure rate.
const QUEUE_THRESHOLD: u64 = 16384;
/// `DQCOUNT_INVALID` (-1 in a u64).
const DQCOUNT_INVALID: u64 = u64::MAX;
/// `PIE_SCALE`.
const PIE_SCALE: u32 = 8;
/// `PSCHED_SHIFT`: a psched tick is 64 ns.
const PSCHED_SHIFT: u32 = 6;
const PSCHED_TICKS_PER_SEC: u64 = 1_000_000_000 >> PSCHED_SHIFT;
/// `pie_init` arms the first update `HZ / 2` after the qdisc is created.
const FIRST_UPDATE: Duration = Duration::from_millis(500);

fn ticks(t: u64) -> u64 {
    t >> PSCHED_SHIFT
}

#[derive(Clone, Debug, PartialEq)]
pub struct PieParams {
    /// Target queueing delay (`target`).
    pub target: Duration,
    /// Probability update interval (`tupdate`).
    pub tupdate: Duration,
    /// `alpha` and `beta`, in sixteenths per second as `tc` gives them (RFC 8033's 0.125 and
    /// 1.25 are 2 and 20).
    pub alpha: u32,
    pub beta: u32,
    /// Mark ECT arrivals instead of dropping them while the probability is at most 10 %.
    pub ecn: bool,
    /// Scale the probability by the packet's size over the mtu.
    pub bytemode: bool,
    /// Estimate the delay from the departure rate (Little's law) instead of timestamps.
    pub dq_rate_estimator: bool,
    /// `psched_mtu` of the device: no early drop while the backlog is under two of these.
    pub mtu: u32,
}

/// `struct pie_vars`.
#[derive(Clone, Debug)]
struct Vars {
    qdelay: u64,
    qdelay_old: u64,
    burst_time: u64,
    dq_tstamp: u64,
    prob: u64,
    accu_prob: u64,
    dq_count: u64,
    avg_dq_rate: u32,
}

impl Vars {
    fn new() -> Self {
        let mut v = Vars {
            qdelay: 0,
            qdelay_old: 0,
            burst_time: 0,
            dq_tstamp: 0,
            prob: 0,
            accu_prob: 0,
            dq_count: 0,
            avg_dq_rate: 0,
        };
        v.init();
        v
    }

    /// `pie_vars_init`: leaves the probability and the delays alone.
    fn init(&mut self) {
        self.burst_time = ticks(150_000_000);
        self.dq_tstamp = DTIME_INVALID;
        self.accu_prob = 0;
        self.dq_count = DQCOUNT_INVALID;
        self.avg_dq_rate = 0;
    }
}

#[derive(Clone, Debug)]
pub struct Pie {
    pub params: PieParams,
    /// Packets (`limit`).
    pub limit: u32,
    target: u64,
    vars: Vars,
    fifo: VecDeque<Queued>,
    backlog: u64,
    next_update: Time,
    rng: Rng,
    /// Arrivals refused at the limit (`overlimit`) and by the early-drop test.
    pub overlimit_drops: u64,
    pub early_drops: u64,
}

impl Pie {
    pub fn new(params: PieParams, limit: u32, rng: Rng) -> Self {
        Pie {
            limit,
            target: ticks(params.target.as_nanos()),
            params,
            vars: Vars::new(),
            fifo: VecDeque::new(),
            backlog: 0,
            next_update: Time::ZERO + FIRST_UPDATE,
            rng,
            overlimit_drops: 0,
            early_drops: 0,
        }
    }

    /// The drop probability, 0 to 1 (for the tables).
    pub fn probability(&self) -> f64 {
        self.vars.prob as f64 / MAX_PROB as f64
    }

    /// When the probability is next recomputed.
    pub fn next_update(&self) -> Time {
        self.next_update
    }

    /// The timer (`pie_timer`) due at `next_update`: recompute the probability, re-arm. An
    /// empty queue with no delay and no probability is a fixed point of the update, so the
    /// firings up to `now` after it change nothing and are skipped.
    pub fn update(&mut self, now: Time) {
        self.calculate_probability();
        self.next_update += self.params.tupdate;
        let v = &self.vars;
        let idle = self.fifo.is_empty() && v.prob == 0 && v.qdelay == 0 && v.qdelay_old == 0;
        if idle && self.next_update <= now {
            let period = self.params.tupdate.as_nanos();
            let behind = now.saturating_since(self.next_update).as_nanos();
            self.next_update += Duration::from_nanos((behind / period + 1) * period);
        }
    }

    /// `pie_drop_early`.
    fn drop_early(&mut self, packet_size: u32) -> bool {
        let v = &mut self.vars;
        let p = &self.params;
        if v.burst_time > 0 {
            return false;
        }
        if v.qdelay < self.target / 2 && v.prob < MAX_PROB / 5 {
            return false;
        }
        if self.backlog < 2 * p.mtu as u64 {
            return false;
        }
        let local_prob = if p.bytemode && packet_size <= p.mtu {
            packet_size as u64 * (v.prob / p.mtu as u64)
        } else {
            v.prob
        };
        if local_prob == 0 {
            v.accu_prob = 0;
        } else {
            v.accu_prob = v.accu_prob.wrapping_add(local_prob);
        }
        // Derandomisation (RFC 8033 §5.1): never below 0.85, always from 8.5 accumulated.
        if v.accu_prob < (MAX_PROB / 100) * 85 {
            return false;
        }
        if v.accu_prob >= (MAX_PROB / 2) * 17 {
            return true;
        }
        if (self.rng.next_u64() >> 8) < local_prob {
            v.accu_prob = 0;
            return true;
        }
        false
    }

    /// `pie_qdisc_enqueue`: Ok if queued (perhaps marked: `out.marks`), Err if refused.
    pub fn enqueue(&mut self, mut item: Queued, out: &mut Verdicts) -> Result<(), Queued> {
        if self.fifo.len() as u32 >= self.limit {
            self.overlimit_drops += 1;
            self.vars.accu_prob = 0;
            return Err(item);
        }
        let enqueue = if !self.drop_early(item.packet.wire_bytes) {
            true
        } else if self.params.ecn && self.vars.prob <= MAX_PROB / 10 && item.packet.ecn.set_ce() {
            out.marks += 1;
            true
        } else {
            false
        };
        if !enqueue {
            self.early_drops += 1;
            self.vars.accu_prob = 0;
            return Err(item);
        }
        self.backlog += item.packet.wire_bytes as u64;
        self.fifo.push_back(item);
        Ok(())
    }

    /// `pie_qdisc_dequeue`.
    pub fn dequeue(&mut self, now: Time) -> Option<Queued> {
        let q = self.fifo.pop_front()?;
        self.backlog -= q.packet.wire_bytes as u64;
        self.process_dequeue(&q, now);
        Some(q)
    }

    /// `pie_process_dequeue`: the delay (timestamps) or the departure rate, and the burst
    /// allowance spent.
    fn process_dequeue(&mut self, q: &Queued, now: Time) {
        let now = ticks(now.as_nanos());
        let v = &mut self.vars;
        let dtime: u32;
        if !self.params.dq_rate_estimator {
            v.qdelay = now.wrapping_sub(ticks(q.enqueued.as_nanos()));
            dtime = if v.dq_tstamp != DTIME_INVALID {
                now.wrapping_sub(v.dq_tstamp) as u32
            } else {
                0
            };
            v.dq_tstamp = now;
            if self.backlog == 0 {
                v.qdelay = 0;
            }
            if dtime == 0 {
                return;
            }
        } else {
            if self.backlog >= QUEUE_THRESHOLD && v.dq_count == DQCOUNT_INVALID {
                v.dq_tstamp = now;
                v.dq_count = 0;
            }
            if v.dq_count == DQCOUNT_INVALID {
                return;
            }
            v.dq_count += q.packet.wire_bytes as u64;
            if v.dq_count < QUEUE_THRESHOLD {
                return;
            }
            let count = (v.dq_count << PIE_SCALE) as u32;
            dtime = now.wrapping_sub(v.dq_tstamp) as u32;
            if dtime == 0 {
                return;
            }
            let count = count / dtime;
            v.avg_dq_rate = if v.avg_dq_rate == 0 {
                count
            } else {
                (v.avg_dq_rate - (v.avg_dq_rate >> 3)) + (count >> 3)
            };
            if self.backlog < QUEUE_THRESHOLD {
                v.dq_count = DQCOUNT_INVALID;
            } else {
                v.dq_count = 0;
                v.dq_tstamp = now;
            }
        }
        // burst_allowance_reduction
        if v.burst_time > 0 {
            v.burst_time = v.burst_time.saturating_sub(dtime as u64);
        }
    }

    /// `pie_calculate_probability` (RFC 8033 §4.2 with Linux's scaling of alpha and beta).
    fn calculate_probability(&mut self) {
        let p = &self.params;
        let v = &mut self.vars;
        let backlog = self.backlog;
        let (qdelay, qdelay_old) = if p.dq_rate_estimator {
            let old = v.qdelay;
            v.qdelay_old = v.qdelay;
            let q = if v.avg_dq_rate > 0 {
                ((backlog as u32) << PIE_SCALE) as u64 / v.avg_dq_rate as u64
            } else {
                0
            };
            (q, old)
        } else {
            (v.qdelay, v.qdelay_old)
        };
        // A zero delay with a backlog means the backlog is tiny: no update this round.
        let mut update_prob = !(qdelay == 0 && backlog != 0);
        let mut alpha = (p.alpha as u64 * (MAX_PROB / PSCHED_TICKS_PER_SEC)) >> 4;
        let mut beta = (p.beta as u64 * (MAX_PROB / PSCHED_TICKS_PER_SEC)) >> 4;
        // Auto-tuning: smaller steps at smaller probabilities (RFC 8033 §5.2).
        if v.prob < MAX_PROB / 10 {
            alpha >>= 1;
            beta >>= 1;
            let mut power = 100u64;
            while v.prob < MAX_PROB / power && power <= 1_000_000 {
                alpha >>= 2;
                beta >>= 2;
                power *= 10;
            }
        }
        let mut delta = alpha.wrapping_mul(qdelay.wrapping_sub(self.target)) as i64;
        delta = delta.wrapping_add(beta.wrapping_mul(qdelay.wrapping_sub(qdelay_old)) as i64);
        let oldprob = v.prob;
        // Steps of at most 2 % once the probability is 10 % or more.
        if delta > (MAX_PROB / 50) as i64 && v.prob >= MAX_PROB / 10 {
            delta = ((MAX_PROB / 100) * 2) as i64;
        }
        // Above 250 ms of delay, 2 % more every update.
        if qdelay > ticks(250_000_000) {
            delta += (MAX_PROB / 50) as i64;
        }
        v.prob = v.prob.wrapping_add(delta as u64);
        if delta > 0 {
            if v.prob < oldprob {
                v.prob = MAX_PROB;
                update_prob = false;
            }
        } else if v.prob > oldprob {
            v.prob = 0;
        }
        // Two updates without delay: decay to 98.4 %.
        if qdelay == 0 && qdelay_old == 0 && update_prob {
            v.prob -= v.prob / 64;
        }
        v.qdelay = qdelay;
        if v.qdelay < self.target / 2
            && v.qdelay_old < self.target / 2
            && v.prob == 0
            && (!p.dq_rate_estimator || v.avg_dq_rate > 0)
        {
            v.init();
        }
        if !p.dq_rate_estimator {
            v.qdelay_old = qdelay;
        }
    }

    pub fn len(&self) -> u32 {
        self.fifo.len() as u32
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn backlog(&self) -> u64 {
        self.backlog
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::item;
    use super::*;
    use crate::net::Ecn;

    fn pie(ecn: bool) -> Pie {
        Pie::new(
            PieParams {
                target: Duration::from_millis(15),
                tupdate: Duration::from_millis(15),
                alpha: 2,
                beta: 20,
                ecn,
                bytemode: false,
                dq_rate_estimator: false,
                mtu: 1500,
            },
            1000,
            Rng::stream(3, 0),
        )
    }

    #[test]
    fn alpha_and_beta_in_probability_units() {
        // alpha = 2/16 per second of delay error: 0.125 * MAX_PROB per second, i.e. per
        // 15625000 ticks, before the auto-tuning shifts.
        let a = (2 * (MAX_PROB / PSCHED_TICKS_PER_SEC)) >> 4;
        let per_second = a as f64 * PSCHED_TICKS_PER_SEC as f64 / MAX_PROB as f64;
        assert!((per_second - 0.125).abs() < 1e-6, "{per_second}");
    }

    /// Holds a standing queue of about 20 packets, dequeuing one every ms for `ms` ms, each
    /// stamped so that its sojourn at its dequeue is `wait_ms`.
    fn hold(q: &mut Pie, wait_ms: u64, ms: u64) -> Verdicts {
        let mut out = Verdicts::default();
        for t in 1..=ms {
            let now = Time::from_nanos(t * 1_000_000);
            while now >= q.next_update() {
                q.update(now);
            }
            // Refill to 20 packets, giving up after 40 refused arrivals.
            for _ in 0..40 {
                if q.len() >= 20 {
                    break;
                }
                // Dequeued `len` iterations from now.
                let leaves = (t + q.len() as u64) * 1_000_000;
                let stamp = Time::from_nanos(leaves.saturating_sub(wait_ms * 1_000_000));
                let _ = q.enqueue(item(1500, stamp, Ecn::Ect0), &mut out);
            }
            q.dequeue(now);
        }
        out
    }

    #[test]
    fn the_first_update_follows_the_auto_tuned_alpha_and_beta() {
        // From probability 0 the auto-tuning divides alpha and beta by 2 and then by 4 for each
        // of the five decades below 1 % (RFC 8033 §5.2 as Linux scales it): by 2048. With the
        // delay at 40 ms (previous 0) the first update adds
        // (0.125 * (0.040 - 0.015) + 1.25 * (0.040 - 0)) / 2048.
        let mut q = pie(false);
        hold(&mut q, 40, 500);
        let expected = (0.125 * 0.025 + 1.25 * 0.040) / 2048.0;
        let got = q.probability();
        assert!(
            (got - expected).abs() / expected < 0.01,
            "{got} vs {expected}"
        );
    }

    #[test]
    fn a_delay_above_target_raises_the_probability_below_it_lowers_it() {
        let mut q = pie(false);
        hold(&mut q, 40, 3000);
        let high = q.probability();
        assert!(high > 0.1, "{high}");
        // Above 10 % each update at 2 ms moves it by alpha * (delay - target) = 0.125 * -0.013:
        // it is under 10 % after (high - 0.1) / 0.0016 updates, well within 6 s (400 updates).
        hold(&mut q, 2, 6000);
        let low = q.probability();
        assert!(low < 0.1, "{high} -> {low}");
    }

    #[test]
    fn the_first_update_is_half_a_second_in_and_the_burst_allowance_protects_150_ms() {
        let q = pie(false);
        assert_eq!(q.next_update(), Time::from_nanos(500_000_000));
        let mut q = pie(false);
        // Within the first 150 ms of dequeues nothing is dropped early.
        let out = hold(&mut q, 40, 150);
        assert!(out.dropped.is_empty() && q.early_drops == 0);
    }

    #[test]
    fn with_ecn_ect_arrivals_are_marked_up_to_ten_percent_then_dropped() {
        let mut q = pie(true);
        let out = hold(&mut q, 25, 1500);
        assert!(out.marks > 0, "{}", out.marks);
        assert!(q.probability() <= 0.1, "{}", q.probability());
        assert_eq!(q.early_drops, 0);
        // A delay that does not yield pushes the probability past 10 %: ECT arrivals are then
        // dropped.
        hold(&mut q, 25, 20_000);
        assert!(q.probability() > 0.1, "{}", q.probability());
        assert!(q.early_drops > 0);
    }

    #[test]
    fn the_limit_refuses_arrivals() {
        let mut q = Pie::new(pie(false).params, 1, Rng::stream(1, 1));
        let mut out = Verdicts::default();
        assert!(q
            .enqueue(item(100, Time::ZERO, Ecn::NotEct), &mut out)
            .is_ok());
        assert!(q
            .enqueue(item(100, Time::ZERO, Ecn::NotEct), &mut out)
            .is_err());
        assert_eq!(q.overlimit_drops, 1);
    }
}
