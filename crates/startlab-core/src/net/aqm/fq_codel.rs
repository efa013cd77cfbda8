//! FQ-CoDel (RFC 8290) as Linux implements it in `net/sched/sch_fq_codel.c`: packets hashed
//! into `flows` buckets, each a FIFO under its own CoDel state, served by deficit round robin
//! from a list of new flows (served first) and a list of old ones; when the qdisc is over its
//! packet limit (or memory limit), up to `drop_batch` packets are dropped from the head of the
//! fattest flow until half of its backlog is gone (`fq_codel_drop`).

use super::codel::{CodelParams, CodelSource, CodelVars, Units};
use super::{Queued, Verdicts};
use crate::time::Time;
use std::collections::VecDeque;

/// How a packet is given its bucket.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Classifier {
    /// A hash of the packet's flow (its hosts and connection) with a perturbation, scaled to
    /// the bucket count as `fq_codel_hash` scales `skb_get_hash` (`reciprocal_scale`).
    Hash { perturbation: u32 },
    /// Bucket = flow number modulo the bucket count (packet-by-packet replays).
    FlowNumber,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FqCodelParams {
    pub codel: CodelParams,
    /// Buckets (`flows`).
    pub flows: u32,
    /// Bytes a flow may send per round (`quantum`).
    pub quantum: u32,
    /// Bytes the queued packets may occupy (`memory_limit`; counted in packet bytes here, where
    /// Linux counts each skb's `truesize`).
    pub memory_limit: u32,
    /// Packets dropped at most per overflow (`drop_batch_size`).
    pub drop_batch: u32,
}

#[derive(Clone, Debug, Default)]
struct Flow {
    packets: VecDeque<Queued>,
    /// Bytes it may still send this round (`deficit`).
    deficit: i32,
    vars: CodelVars,
    /// On the new or the old list (`!list_empty(&flow->flowchain)`).
    listed: bool,
}

#[derive(Clone, Debug)]
pub struct FqCodel {
    pub params: FqCodelParams,
    /// Packets the qdisc holds before it drops from the fattest flow (`limit`).
    pub limit: u32,
    pub classifier: Classifier,
    units: Units,
    flows: Vec<Flow>,
    /// Bytes queued per bucket (`backlogs`).
    backlogs: Vec<u32>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    qlen: u32,
    backlog: u64,
    memory_usage: u64,
    /// Overflow drops (`drop_overlimit`).
    pub overlimit_drops: u64,
    /// Flows that became new (`new_flow_count`).
    pub new_flow_count: u64,
}

/// One flow seen by `codel_dequeue`: its FIFO, and the qdisc's backlog.
struct FlowSource<'a> {
    flow: &'a mut VecDeque<Queued>,
    bucket_backlog: &'a mut u32,
    qlen: &'a mut u32,
    backlog: &'a mut u64,
    memory_usage: &'a mut u64,
}

impl CodelSource for FlowSource<'_> {
    /// fq_codel's `dequeue_func`.
    fn pop(&mut self) -> Option<Queued> {
        let q = self.flow.pop_front()?;
        let bytes = q.packet.wire_bytes;
        *self.bucket_backlog -= bytes;
        *self.memory_usage -= bytes as u64;
        *self.qlen -= 1;
        *self.backlog -= bytes as u64;
        Some(q)
    }
    fn backlog(&self) -> u64 {
        *self.backlog
    }
}

/// A 32-bit mix of the flow's identity (the finaliser of MurmurHash3), standing in for
/// `skb_get_hash`'s jhash of the 5-tuple: any good hash gives the same collision statistics.
fn mix(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

impl FqCodel {
    pub fn new(params: FqCodelParams, limit: u32, classifier: Classifier) -> Self {
        let n = params.flows as usize;
        FqCodel {
            limit,
            units: params.codel.units(),
            flows: vec![Flow::default(); n],
            backlogs: vec![0; n],
            params,
            classifier,
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            qlen: 0,
            backlog: 0,
            memory_usage: 0,
            overlimit_drops: 0,
            new_flow_count: 0,
        }
    }

    /// The bucket of a packet (`fq_codel_classify` without an external filter).
    pub fn bucket(&self, q: &Queued) -> u32 {
        let p = &q.packet;
        match self.classifier {
            Classifier::FlowNumber => p.flow % self.params.flows,
            Classifier::Hash { perturbation } => {
                let h = mix(mix(mix(p.flow ^ perturbation) ^ p.src) ^ p.dst.rotate_left(16));
                ((h as u64 * self.params.flows as u64) >> 32) as u32
            }
        }
    }

    /// `fq_codel_enqueue`: queue the packet on its flow, then, over the limit, drop from the
    /// fattest flow (possibly the arrival's own). Drops go to `out.dropped`.
    pub fn enqueue(&mut self, item: Queued, out: &mut Verdicts) {
        let idx = self.bucket(&item) as usize;
        let bytes = item.packet.wire_bytes;
        let flow = &mut self.flows[idx];
        flow.packets.push_back(item);
        self.backlogs[idx] += bytes;
        self.backlog += bytes as u64;
        if !flow.listed {
            flow.listed = true;
            flow.deficit = self.params.quantum as i32;
            self.new_flows.push_back(idx as u32);
            self.new_flow_count += 1;
        }
        self.memory_usage += bytes as u64;
        let memory_limited = self.memory_usage > self.params.memory_limit as u64;
        self.qlen += 1;
        if self.qlen <= self.limit && !memory_limited {
            return;
        }
        let before = out.dropped.len();
        self.drop_from_fattest(out);
        self.overlimit_drops += (out.dropped.len() - before) as u64;
    }

    /// `fq_codel_drop`: the first bucket with the largest backlog loses head packets until half
    /// its backlog is gone, at most `drop_batch`; its CoDel count grows by as many.
    fn drop_from_fattest(&mut self, out: &mut Verdicts) {
        let mut idx = 0;
        let mut max = 0;
        for (i, &b) in self.backlogs.iter().enumerate() {
            if b > max {
                max = b;
                idx = i;
            }
        }
        let threshold = max >> 1;
        let flow = &mut self.flows[idx];
        let mut len = 0u32;
        let mut i = 0u32;
        loop {
            // The fattest flow holds at least one packet: the qdisc is over its limit.
            let q = flow
                .packets
                .pop_front()
                .expect("the fattest flow has a packet");
            len += q.packet.wire_bytes;
            out.dropped.push(q);
            i += 1;
            if !(i < self.params.drop_batch && len < threshold) {
                break;
            }
        }
        flow.vars.count = flow.vars.count.wrapping_add(i);
        self.backlogs[idx] -= len;
        self.memory_usage -= len as u64;
        self.backlog -= len as u64;
        self.qlen -= i;
    }

    /// `fq_codel_dequeue`.
    pub fn dequeue(&mut self, now: Time, out: &mut Verdicts) -> Option<Queued> {
        loop {
            let from_new = !self.new_flows.is_empty();
            let list = if from_new {
                &mut self.new_flows
            } else if !self.old_flows.is_empty() {
                &mut self.old_flows
            } else {
                return None;
            };
            let idx = *list.front().expect("non-empty list") as usize;
            let flow = &mut self.flows[idx];
            if flow.deficit <= 0 {
                flow.deficit += self.params.quantum as i32;
                list.pop_front();
                self.old_flows.push_back(idx as u32);
                continue;
            }
            let mut src = FlowSource {
                flow: &mut flow.packets,
                bucket_backlog: &mut self.backlogs[idx],
                qlen: &mut self.qlen,
                backlog: &mut self.backlog,
                memory_usage: &mut self.memory_usage,
            };
            match flow.vars.dequeue(&self.units, now, &mut src, out) {
                Some(q) => {
                    flow.deficit -= q.packet.wire_bytes as i32;
                    return Some(q);
                }
                None => {
                    // An emptied new flow goes to the old list once, so that old flows are not
                    // starved; an emptied old flow leaves the lists.
                    let list = if from_new {
                        &mut self.new_flows
                    } else {
                        &mut self.old_flows
                    };
                    list.pop_front();
                    if from_new && !self.old_flows.is_empty() {
                        self.old_flows.push_back(idx as u32);
                    } else {
                        flow.listed = false;
                    }
                }
            }
        }
    }

    pub fn len(&self) -> u32 {
        self.qlen
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
    use super::super::tests::item_of;
    use super::*;
    use crate::net::Ecn;
    use crate::time::Duration;

    fn fq(limit: u32) -> FqCodel {
        FqCodel::new(
            FqCodelParams {
                codel: CodelParams {
                    target: Duration::from_millis(5),
                    interval: Duration::from_millis(100),
                    ce_threshold: None,
                    ecn: true,
                    mtu: 1500,
                },
                flows: 1024,
                quantum: 1514,
                memory_limit: 32 << 20,
                drop_batch: 64,
            },
            limit,
            Classifier::FlowNumber,
        )
    }

    #[test]
    fn drr_alternates_flows_by_quantum() {
        // Both flows start on the new list with a deficit of one quantum (1514). A flow is
        // served while its deficit is positive: flow 1 sends 1500 (14 left) and 1500 again (now
        // negative), then moves to the old list; flow 2 sends 300-byte packets while its deficit
        // goes 1514, 1214, 914, 614, 314, 14: six of them.
        let mut q = fq(10_000);
        let mut out = Verdicts::default();
        for _ in 0..10 {
            q.enqueue(item_of(1, 1500, Time::ZERO, Ecn::NotEct), &mut out);
        }
        for _ in 0..10 {
            q.enqueue(item_of(2, 300, Time::ZERO, Ecn::NotEct), &mut out);
        }
        let order: Vec<u32> = (0..8)
            .map(|_| q.dequeue(Time::ZERO, &mut out).unwrap().packet.flow)
            .collect();
        assert_eq!(order, vec![1, 1, 2, 2, 2, 2, 2, 2]);
        assert!(out.dropped.is_empty());
    }

    #[test]
    fn overflow_drops_half_the_fattest_flow_from_its_head() {
        let mut q = fq(20);
        let mut out = Verdicts::default();
        for i in 0..16 {
            let mut it = item_of(1, 1000, Time::ZERO, Ecn::NotEct);
            it.seq = i;
            q.enqueue(it, &mut out);
        }
        for _ in 0..4 {
            q.enqueue(item_of(2, 1000, Time::ZERO, Ecn::NotEct), &mut out);
        }
        assert!(out.dropped.is_empty());
        // The 21st packet (flow 2) overflows: flow 1 (16000 bytes) loses its 8 oldest.
        q.enqueue(item_of(2, 1000, Time::ZERO, Ecn::NotEct), &mut out);
        let seqs: Vec<u64> = out.dropped.iter().map(|d| d.seq).collect();
        assert_eq!(seqs, (0..8).collect::<Vec<_>>());
        assert_eq!(q.len(), 13);
        assert_eq!(q.overlimit_drops, 8);
    }

    #[test]
    fn an_emptied_new_flow_visits_the_old_list_before_leaving() {
        let mut q = fq(100);
        let mut out = Verdicts::default();
        // Flow 1 becomes old by spending its deficit; flow 2 is new with one packet.
        for _ in 0..3 {
            q.enqueue(item_of(1, 1500, Time::ZERO, Ecn::NotEct), &mut out);
        }
        assert_eq!(q.dequeue(Time::ZERO, &mut out).unwrap().packet.flow, 1);
        q.enqueue(item_of(2, 100, Time::ZERO, Ecn::NotEct), &mut out);
        // Flow 1 still has deficit 14 > 0 at the head of the new list.
        assert_eq!(q.dequeue(Time::ZERO, &mut out).unwrap().packet.flow, 1);
        // Flow 1's deficit is negative: it moves to old; flow 2 (new) is served.
        assert_eq!(q.dequeue(Time::ZERO, &mut out).unwrap().packet.flow, 2);
        // Flow 2 is empty: it goes to the old list behind flow 1, flow 1 is served.
        assert_eq!(q.dequeue(Time::ZERO, &mut out).unwrap().packet.flow, 1);
        assert!(q.dequeue(Time::ZERO, &mut out).is_none());
        assert!(q.new_flows.is_empty() && q.old_flows.is_empty());
        assert!(q.flows.iter().all(|f| !f.listed));
    }

    #[test]
    fn hashing_spreads_flows_over_the_buckets() {
        let q = FqCodel::new(fq(10).params, 10, Classifier::Hash { perturbation: 7 });
        let mut used = std::collections::HashSet::new();
        for f in 0..100 {
            used.insert(q.bucket(&item_of(f, 100, Time::ZERO, Ecn::NotEct)));
        }
        // 100 flows into 1024 buckets: about 95 distinct buckets expected.
        assert!(used.len() > 85, "{}", used.len());
        assert!(used.iter().all(|&b| b < 1024));
    }
}
