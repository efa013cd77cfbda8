//! One direction of a link: an output queue, a transmitter of fixed rate and a propagation delay.
//!
//! With a FIFO discipline (drop-tail, RED) and a fixed rate, a packet's whole future is known
//! when it is admitted: it starts transmission when the transmitter is free (`busy_until`),
//! finishes after its serialization time and arrives `delay` later. The link therefore needs no
//! per-packet "transmission complete" event (smoltcp's netsim and htsim's `drainTime` use the
//! same time arithmetic); arrivals at the far end are in order, so they wait in `pipe` and the
//! simulation only keeps one event per link: the arrival of its head packet.
//!
//! An AQM (CoDel, FQ-CoDel, PIE) decides at dequeue, so its packets stay in the discipline
//! until the transmitter frees. The link runs those dequeues (and the discipline's timer)
//! lazily, in time order, whenever it is touched at a later instant — an arrival offered, its
//! head packet arriving, a sample — and each at the instant it was due: the result is the same
//! as running them on time, because nothing else touches the queue in between. The head
//! packet's arrival is always after the next dequeue is due, so the one event per link still
//! suffices; a packet lost on the wire stays in `pipe` as a placeholder to keep it so.

use super::aqm::{Queued, Verdicts};
use super::packet::{FlowId, NodeId, Packet, PacketKind};
use super::queue::{Discipline, Limit, Occupancy};
use super::sojourn::Sojourns;
use super::vary::{Variation, Varying};
use crate::rng::Rng;
use crate::time::{Duration, Time};
use crate::units::Rate;
use std::collections::VecDeque;

pub type LinkId = u32;

/// The parameters of one link direction.
#[derive(Clone, Debug)]
pub struct LinkParams {
    pub rate: Rate,
    pub delay: Duration,
    pub discipline: Discipline,
    /// Probability that an admitted packet is lost on the wire (non-congestion loss).
    pub loss: f64,
    /// What changes with time on this direction (rate, delay, loss, reordering); `rate`,
    /// `delay` and `loss` above are then the values at time 0.
    pub variation: Option<Box<Variation>>,
}

/// Counters of one link direction.
#[derive(Clone, Debug, Default)]
pub struct LinkStats {
    /// Packets and bytes that started transmission.
    pub forwarded_packets: u64,
    pub forwarded_bytes: u64,
    /// Packets dropped by the queue discipline (arrivals refused, and an AQM's drops).
    pub drops: u64,
    /// Admitted packets lost on the wire (random loss).
    pub losses: u64,
    /// Packets the discipline marked CE.
    pub marks: u64,
    pub max_queue_packets: u32,
}

/// A link's transmitting time and, when its capacity varies, bytes carried and offered, at
/// one instant ([`Link::usage`]).
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct Usage {
    pub at: Time,
    pub busy: Duration,
    pub served_bytes: f64,
    pub offered_bytes: Option<f64>,
}

/// What became of a packet offered to a link.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Refused by the queue discipline.
    Dropped,
    /// Admitted, but will be lost on the wire.
    Lost,
    /// Admitted; it reaches the far end at `arrival`. `became_head` is true when it is now the
    /// first packet in flight, so the caller must schedule the link's next arrival.
    Scheduled { arrival: Time, became_head: bool },
    /// Held by an AQM, which decides when it leaves. When `became_head`, the link has a new
    /// first packet in flight (`next_arrival`) and the caller must schedule it.
    Queued { became_head: bool },
}

#[derive(Clone, Debug)]
struct InFlight {
    arrival: Time,
    /// The event-order number of its arrival; with [`LOST`] set, a placeholder for a packet
    /// lost on the wire, which only keeps the link's next event (an AQM's link). A flag in the
    /// number rather than a field keeps the pipe's entries small.
    seq: u64,
    packet: Packet,
}

/// `t + d`, or the end of time.
fn later(t: Time, d: Duration) -> Time {
    Time::from_nanos(t.as_nanos().saturating_add(d.as_nanos()))
}

/// The flag of a placeholder's `seq` (event-order numbers never reach 2^63).
const LOST: u64 = 1 << 63;

#[derive(Clone, Debug)]
pub struct Link {
    pub from: NodeId,
    pub to: NodeId,
    pub params: LinkParams,
    rng: Rng,
    /// When the transmitter finishes everything admitted so far.
    busy_until: Time,
    /// Total serialization time of everything admitted so far.
    busy_total: Duration,
    /// Packets admitted but not yet started: (transmission start, wire bytes), oldest first.
    waiting: VecDeque<(Time, u32)>,
    waiting_bytes: u64,
    /// Packets transmitted or being transmitted, not yet arrived, oldest first.
    pipe: VecDeque<InFlight>,
    pub stats: LinkStats,
    /// The sojourn times (queued until transmission starts) of the packets an AQM sent, and of
    /// those a FIFO admitted (whose sojourn is fixed when they are admitted: counting them then
    /// keeps the FIFO's hot path short).
    sojourns: Sojourns,
    /// Scripted losses: the next data segment of (flow, seq) to cross the link is lost
    /// (like ns-3's `ListErrorModel`); for tests and for reproducing a paper's loss pattern.
    scripted_losses: Vec<(FlowId, u32)>,
    /// Placeholders in `pipe`: an AQM's packets lost on the wire (already handed as
    /// discarded) or taking the long way round (in `detour`).
    placeholders: usize,
    /// The running state of `params.variation`.
    varying: Option<Box<Varying>>,
    /// A FIFO whose rate, delay and loss are constant: the enqueue of `Link::enqueue` itself
    /// (set when the link is built; its parameters do not change afterwards).
    plain: bool,
    /// Packets held longer on the wire by reordering, in their own arrival order: the link's
    /// next arrival is the earlier of this queue's head and `pipe`'s.
    /// (None on a link that does not reorder: its hot path checks only that.)
    detour: Option<VecDeque<InFlight>>,
    /// Scratch for an AQM's decisions.
    verdicts: Verdicts,
    /// An AQM's drops, and packets it sent that the wire lost, not yet taken by the caller:
    /// (when, packet, event-order number).
    discarded: Vec<(Time, Packet, u64)>,
}

impl Link {
    pub fn new(from: NodeId, to: NodeId, params: LinkParams, rng: Rng) -> Self {
        // Its own stream, drawn from the link's without consuming it: a link that varies
        // keeps the loss draws of the same link that does not.
        let plain = params.variation.is_none() && !matches!(params.discipline, Discipline::Aqm(_));
        let detour = params
            .variation
            .as_deref()
            .is_some_and(|v| v.reorder.is_some())
            .then(VecDeque::new);
        let varying = params
            .variation
            .as_deref()
            .map(|v| Box::new(Varying::new(v, Rng::stream(rng.clone().next_u64(), 1))));
        Link {
            from,
            to,
            params,
            rng,
            busy_until: Time::ZERO,
            busy_total: Duration::ZERO,
            waiting: VecDeque::new(),
            waiting_bytes: 0,
            pipe: VecDeque::new(),
            stats: LinkStats::default(),
            sojourns: Sojourns::default(),
            scripted_losses: Vec::new(),
            placeholders: 0,
            plain,
            varying,
            detour,
            verdicts: Verdicts::default(),
            discarded: Vec::new(),
        }
    }

    /// Whether the discipline decides at dequeue.
    #[inline]
    pub fn is_aqm(&self) -> bool {
        matches!(self.params.discipline, Discipline::Aqm(_))
    }

    /// Loses the next transmission of data segment `seq` of `flow` on this link.
    pub fn lose_once(&mut self, flow: FlowId, seq: u32) {
        self.scripted_losses.push((flow, seq));
    }

    fn scripted_loss(&mut self, p: &Packet) -> bool {
        if self.scripted_losses.is_empty() || p.kind != PacketKind::Data {
            return false;
        }
        match self
            .scripted_losses
            .iter()
            .position(|&(f, s)| f == p.flow && s == p.seq)
        {
            Some(i) => {
                self.scripted_losses.swap_remove(i);
                true
            }
            None => false,
        }
    }

    /// Forgets waiting packets whose transmission has started by `now`.
    fn advance(&mut self, now: Time) {
        while let Some(&(start, bytes)) = self.waiting.front() {
            if start > now {
                break;
            }
            self.waiting.pop_front();
            self.waiting_bytes -= bytes as u64;
        }
    }

    /// Queue occupancy at `now`: packets waiting, not counting the one being transmitted.
    pub fn occupancy(&mut self, now: Time) -> Occupancy {
        if self.is_aqm() {
            return self.aqm_occupancy(now);
        }
        self.fifo_occupancy(now)
    }

    #[inline(never)]
    fn aqm_occupancy(&mut self, now: Time) -> Occupancy {
        self.serve(now);
        let Discipline::Aqm(q) = &self.params.discipline else {
            unreachable!("an AQM link")
        };
        let idle_since = (q.is_empty() && self.busy_until <= now).then_some(self.busy_until);
        Occupancy {
            packets: q.len(),
            bytes: q.backlog(),
            idle_since,
        }
    }

    #[inline]
    fn fifo_occupancy(&mut self, now: Time) -> Occupancy {
        self.advance(now);
        let idle_since =
            (self.waiting.is_empty() && self.busy_until <= now).then_some(self.busy_until);
        Occupancy {
            packets: self.waiting.len() as u32,
            bytes: self.waiting_bytes,
            idle_since,
        }
    }

    /// Offers `packet` to the link at `now`. `seq` is the event-order number reserved for its
    /// arrival (see `EventQueue::reserve_seq`).
    pub fn enqueue(&mut self, now: Time, packet: Packet, seq: u64) -> Admission {
        if !self.plain {
            return self.enqueue_special(now, packet, seq);
        }
        if !self.fifo_admits(now, packet.wire_bytes) {
            return Admission::Dropped;
        }
        let start = self.busy_until.max(now);
        let tx = self.params.rate.transmit_time(packet.wire_bytes as u64);
        self.busy_until = start + tx;
        self.busy_total += tx;
        self.stats.forwarded_packets += 1;
        self.stats.forwarded_bytes += packet.wire_bytes as u64;
        let sojourn = start.saturating_since(now);
        self.sojourns.record(sojourn);
        if start > now {
            self.waiting.push_back((start, packet.wire_bytes));
            self.waiting_bytes += packet.wire_bytes as u64;
            self.stats.max_queue_packets =
                self.stats.max_queue_packets.max(self.waiting.len() as u32);
        }
        if self.rng.bernoulli(self.params.loss) || self.scripted_loss(&packet) {
            self.stats.losses += 1;
            return Admission::Lost;
        }
        let arrival = self.busy_until + self.params.delay;
        let became_head = self.pipe.is_empty();
        self.pipe.push_back(InFlight {
            arrival,
            seq,
            packet,
        });
        Admission::Scheduled {
            arrival,
            became_head,
        }
    }

    /// [`Self::enqueue`] on an AQM's link, or a FIFO's that varies.
    #[inline(never)]
    fn enqueue_special(&mut self, now: Time, packet: Packet, seq: u64) -> Admission {
        if self.is_aqm() {
            return self.enqueue_aqm(now, packet, seq);
        }
        if !self.fifo_admits(now, packet.wire_bytes) {
            return Admission::Dropped;
        }
        self.enqueue_varying(now, packet, seq)
    }

    /// A FIFO discipline's verdict on `bytes` arriving at `now` (a refusal counted as a drop).
    #[inline(always)]
    fn fifo_admits(&mut self, now: Time, bytes: u32) -> bool {
        let occ = self.fifo_occupancy(now);
        let admitted = self.params.discipline.admit(&occ, bytes, now);
        if !admitted {
            self.stats.drops += 1;
        }
        admitted
    }

    /// A FIFO's admitted packet on a link that varies: the same steps as a constant link's,
    /// with its start, finish, delay and loss from the schedules.
    #[cold]
    #[inline(never)]
    fn enqueue_varying(&mut self, now: Time, packet: Packet, seq: u64) -> Admission {
        let (start, finish) = self.transmission(now, packet.wire_bytes);
        self.busy_until = finish;
        self.busy_total += finish.saturating_since(start);
        self.stats.forwarded_packets += 1;
        self.stats.forwarded_bytes += packet.wire_bytes as u64;
        self.sojourns.record(start.saturating_since(now));
        if start > now {
            self.waiting.push_back((start, packet.wire_bytes));
            self.waiting_bytes += packet.wire_bytes as u64;
            self.stats.max_queue_packets =
                self.stats.max_queue_packets.max(self.waiting.len() as u32);
        }
        let v = self.varying.as_deref_mut().expect("a varying link");
        if v.lost(start, self.params.loss) || self.scripted_loss(&packet) {
            self.stats.losses += 1;
            return Admission::Lost;
        }
        let arrival = self.put_on_wire(finish, seq, packet, false);
        Admission::Scheduled {
            arrival,
            became_head: self.next_arrival() == Some((arrival, seq)),
        }
    }

    /// When a packet of `bytes`, ready at `ready`, starts and finishes transmission.
    #[inline]
    fn transmission(&mut self, ready: Time, bytes: u32) -> (Time, Time) {
        match self.varying.as_deref_mut() {
            None => {
                let start = self.busy_until.max(ready);
                (start, start + self.params.rate.transmit_time(bytes as u64))
            }
            Some(v) => v.serve(ready, self.busy_until, bytes, self.params.rate),
        }
    }

    /// Puts a packet whose transmission ends at `finish` on a varying link's wire (a lost
    /// one, `lost`, as a placeholder): its delay is the one in force then, it never overtakes
    /// the packet before it, unless reordering holds it back (then an AQM's link keeps a
    /// placeholder at its normal time, which serves the queue). Returns its arrival.
    fn put_on_wire(&mut self, finish: Time, seq: u64, packet: Packet, lost: bool) -> Time {
        let v = self.varying.as_deref_mut().expect("a varying link");
        let delay = v.delay_at(finish, self.params.delay);
        let in_order = |q: &VecDeque<InFlight>, t: Time| q.back().map_or(t, |b| b.arrival.max(t));
        let arrival = in_order(&self.pipe, later(finish, delay));
        let detour = if lost { None } else { v.detoured() };
        let Some(extra) = detour else {
            if lost {
                self.placeholders += 1;
            }
            self.pipe.push_back(InFlight {
                arrival,
                seq: if lost { seq | LOST } else { seq },
                packet,
            });
            return arrival;
        };
        if self.is_aqm() {
            self.placeholders += 1;
            self.pipe.push_back(InFlight {
                arrival,
                seq: seq | LOST,
                packet,
            });
        }
        let queue = self.detour.as_mut().expect("a reordering link's detour");
        let late = in_order(queue, later(arrival, extra));
        queue.push_back(InFlight {
            arrival: late,
            seq,
            packet,
        });
        late
    }

    /// An arrival at an AQM: the dequeues due before it first, then the discipline's verdict,
    /// then, if the transmitter is idle, its dequeue now.
    #[inline(never)]
    fn enqueue_aqm(&mut self, now: Time, packet: Packet, seq: u64) -> Admission {
        self.serve(now);
        let was_empty = self.pipe.is_empty();
        let Discipline::Aqm(q) = &mut self.params.discipline else {
            unreachable!("an AQM link")
        };
        let item = Queued {
            packet,
            seq,
            enqueued: now,
        };
        let refused = q.enqueue(item, &mut self.verdicts).is_err();
        self.take_verdicts(now);
        if refused {
            self.stats.drops += 1;
            return Admission::Dropped;
        }
        if self.busy_until <= now {
            self.dequeue_at(now);
        }
        if let Discipline::Aqm(q) = &self.params.discipline {
            self.stats.max_queue_packets = self.stats.max_queue_packets.max(q.len());
        }
        Admission::Queued {
            became_head: was_empty && !self.pipe.is_empty(),
        }
    }

    /// Runs the AQM's dequeues and timer firings due by `now`, in time order (a dequeue before
    /// a timer firing at the same instant).
    #[inline(never)]
    fn serve(&mut self, now: Time) {
        loop {
            let Discipline::Aqm(q) = &mut self.params.discipline else {
                return;
            };
            let dequeue = (!q.is_empty() && self.busy_until <= now).then_some(self.busy_until);
            let timer = q.next_timer().filter(|&t| t <= now);
            match (dequeue, timer) {
                (Some(d), Some(t)) if t < d => q.on_timer(t),
                (Some(d), _) => self.dequeue_at(d),
                (None, Some(_)) => q.on_timer(now),
                (None, None) => return,
            }
        }
    }

    /// The AQM's dequeue at `at`, the transmitter being free: the packet it returns (if any)
    /// starts transmission.
    fn dequeue_at(&mut self, at: Time) {
        let Discipline::Aqm(q) = &mut self.params.discipline else {
            unreachable!("an AQM link")
        };
        let sent = q.dequeue(at, &mut self.verdicts);
        self.take_verdicts(at);
        let Some(item) = sent else {
            return;
        };
        let bytes = item.packet.wire_bytes;
        let sojourn = at.saturating_since(item.enqueued);
        self.sojourns.record(sojourn);
        self.stats.forwarded_packets += 1;
        self.stats.forwarded_bytes += bytes as u64;
        if self.varying.is_some() {
            return self.send_varying(at, item);
        }
        let tx = self.params.rate.transmit_time(bytes as u64);
        self.busy_until = at + tx;
        self.busy_total += tx;
        let lost = self.rng.bernoulli(self.params.loss) || self.scripted_loss(&item.packet);
        if lost {
            self.stats.losses += 1;
            self.placeholders += 1;
            self.discarded.push((at, item.packet, item.seq));
        }
        self.pipe.push_back(InFlight {
            arrival: self.busy_until + self.params.delay,
            seq: if lost { item.seq | LOST } else { item.seq },
            packet: item.packet,
        });
    }

    /// An AQM's packet, dequeued at `at`, sent on a link that varies. It was ready since it
    /// was enqueued (a trace's leftover bytes may serve it).
    #[cold]
    #[inline(never)]
    fn send_varying(&mut self, at: Time, item: Queued) {
        // The transmitter frees at `at` (or was idle and `at` is the enqueue), so the
        // transmission starts at `at`; a trace's leftover bytes may serve it, since it waited.
        let (start, finish) = self.transmission(item.enqueued, item.packet.wire_bytes);
        debug_assert!(start >= at && finish >= start, "{start} {finish} {at}");
        self.busy_until = finish;
        self.busy_total += finish.saturating_since(start);
        let v = self.varying.as_deref_mut().expect("a varying link");
        let lost = v.lost(start, self.params.loss) || self.scripted_loss(&item.packet);
        if lost {
            self.stats.losses += 1;
            self.discarded.push((at, item.packet, item.seq));
        }
        self.put_on_wire(finish, item.seq, item.packet, lost);
    }

    /// Counts an AQM's decisions made at `at` and logs its drops.
    fn take_verdicts(&mut self, at: Time) {
        self.stats.drops += self.verdicts.dropped.len() as u64;
        self.stats.marks += std::mem::take(&mut self.verdicts.marks);
        for q in self.verdicts.dropped.drain(..) {
            self.discarded.push((at, q.packet, q.seq));
        }
    }

    /// Hands every packet an AQM dropped, or sent and the wire lost, since the last call to `f`
    /// (when, the packet, its event-order number), and forgets them.
    pub fn take_discarded(&mut self, mut f: impl FnMut(Time, &Packet, u64)) {
        for (at, p, seq) in self.discarded.drain(..) {
            f(at, &p, seq);
        }
    }

    /// Whether `take_discarded` has anything to hand.
    #[inline]
    pub fn has_discarded(&self) -> bool {
        !self.discarded.is_empty()
    }

    /// Runs what an AQM has due by `now` (nothing for a FIFO): for exact counters at `now`.
    pub fn settle(&mut self, now: Time) {
        if self.is_aqm() {
            self.serve(now);
        }
    }

    /// Whether the next packet to arrive came out of `detour` rather than `pipe`.
    #[inline]
    fn detour_first(&self) -> bool {
        let Some(detour) = self.detour.as_ref() else {
            return false;
        };
        match (detour.front(), self.pipe.front()) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(d), Some(p)) => (d.arrival, d.seq) < (p.arrival, p.seq & !LOST),
        }
    }

    /// Whether the head packet in flight is delivered when it arrives: not a placeholder (of a
    /// packet an AQM sent and the wire lost, which `take_discarded` handed when it was sent,
    /// or of one in `detour`).
    #[inline]
    pub fn head_delivered(&self) -> bool {
        if self.detour_first() {
            return true;
        }
        self.pipe.front().is_some_and(|f| f.seq & LOST == 0)
    }

    /// Removes the head packet, which arrives now (`now`, the time of `next_arrival`); see
    /// [`Self::head_delivered`] for a placeholder.
    #[inline]
    pub fn pop_arrival(&mut self, now: Time) -> Packet {
        if self.detour.is_some() || self.is_aqm() {
            return self.pop_arrival_slow(now);
        }
        // A FIFO that does not reorder: the pipe's head, never a placeholder.
        self.pipe
            .pop_front()
            .expect("link arrival without a packet in flight")
            .packet
    }

    /// [`Self::pop_arrival`] on an AQM's link (placeholders, the queue served) or one that
    /// reorders (the earlier of two heads).
    #[inline(never)]
    fn pop_arrival_slow(&mut self, now: Time) -> Packet {
        let queue = if self.detour_first() {
            self.detour.as_mut().expect("a detour")
        } else {
            &mut self.pipe
        };
        let head = queue
            .pop_front()
            .expect("link arrival without a packet in flight");
        if self.is_aqm() {
            self.serve(now);
        }
        if head.seq & LOST != 0 {
            self.placeholders -= 1;
        }
        head.packet
    }

    /// Arrival time and event-order number of the head packet, if any.
    #[inline]
    pub fn next_arrival(&self) -> Option<(Time, u64)> {
        if self.detour_first() {
            return self
                .detour
                .as_ref()
                .and_then(|d| d.front())
                .map(|f| (f.arrival, f.seq));
        }
        self.pipe.front().map(|f| (f.arrival, f.seq & !LOST))
    }

    /// Whether the head packet arrives at `now`: an event of a reordering link may have been
    /// overtaken by a packet that arrives earlier, and then it finds nothing due (a link that
    /// does not reorder always has its head due at its event).
    #[inline]
    pub fn head_due(&self, now: Time) -> bool {
        self.detour.is_none() || self.next_arrival().is_some_and(|(t, _)| t == now)
    }

    /// The rate and propagation delay in force at `now` (the schedules', for a link that
    /// varies; a trace's rate is its opportunities' over the last 100 ms). `now` never
    /// decreases between calls.
    pub fn scheduled(&mut self, now: Time) -> (Rate, Duration) {
        match self.varying.as_deref_mut() {
            None => (self.params.rate, self.params.delay),
            Some(v) => (
                v.rate_at(now, self.params.rate),
                v.delay_sample(now, self.params.delay),
            ),
        }
    }

    /// What the link carried, and could have carried, by `now`: the terms of a utilization
    /// ([`Self::utilization_between`]). `now` never decreases between calls.
    pub fn usage(&mut self, now: Time) -> Usage {
        let busy = self.busy_time(now);
        let offered = self
            .varying
            .as_deref_mut()
            .and_then(|v| v.offered_bytes(now));
        let served = offered.map(|_| self.stats_at(now).forwarded_bytes as f64);
        Usage {
            at: now,
            busy,
            served_bytes: served.unwrap_or(0.0),
            offered_bytes: offered,
        }
    }

    /// [`Self::usage`] at t = 0, before anything was sent.
    pub fn usage_at_start(&self) -> Usage {
        Usage {
            offered_bytes: self
                .varying
                .as_deref()
                .is_some_and(Varying::capacity_varies)
                .then_some(0.0),
            ..Usage::default()
        }
    }

    /// The utilization between two [`Usage`]s: the fraction of the time the transmitter was
    /// busy on a constant-rate link; on a link whose capacity varies, the bytes that started
    /// transmission over the bytes the capacity offered (0 if it offered none).
    pub fn utilization_between(a: &Usage, b: &Usage) -> f64 {
        match (a.offered_bytes, b.offered_bytes) {
            (Some(x), Some(y)) => {
                let offered = y - x;
                if offered <= 0.0 {
                    0.0
                } else {
                    ((b.served_bytes - a.served_bytes) / offered).min(1.0)
                }
            }
            _ => {
                let span = b.at.saturating_since(a.at).as_nanos();
                if span == 0 {
                    return 0.0;
                }
                b.busy.saturating_sub(a.busy).as_nanos() as f64 / span as f64
            }
        }
    }

    /// Cumulative transmitting time up to `now` (exact: everything admitted is sent back to back).
    pub fn busy_time(&self, now: Time) -> Duration {
        self.busy_total
            .saturating_sub(self.busy_until.saturating_since(now))
    }

    /// Counters as of `now`: packets admitted but not yet started are not counted as forwarded.
    /// The sojourn times so far; call after [`Link::stats_at`] for the same instant.
    pub fn sojourns(&self) -> &Sojourns {
        &self.sojourns
    }

    pub fn stats_at(&mut self, now: Time) -> LinkStats {
        if self.is_aqm() {
            self.serve(now);
        }
        self.advance(now);
        let mut s = self.stats.clone();
        s.forwarded_packets -= self.waiting.len() as u64;
        s.forwarded_bytes -= self.waiting_bytes;
        s
    }

    pub fn limit(&self) -> Limit {
        self.params.discipline.limit()
    }

    /// Packets on this link not yet delivered, dropped or lost (for conservation checks): in
    /// flight on the wire, and held by an AQM.
    pub fn in_flight(&self) -> usize {
        let held = match &self.params.discipline {
            Discipline::Aqm(q) => q.len() as usize,
            _ => 0,
        };
        self.pipe.len() - self.placeholders + self.detour.as_ref().map_or(0, |d| d.len()) + held
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::queue::DropTail;
    use crate::net::vary::{Capacity, Schedule};

    fn pkt(bytes: u32) -> Packet {
        Packet::datagram(0, 0, 1, bytes, 0, Time::ZERO)
    }

    fn link(limit: u32) -> Link {
        Link::new(
            0,
            1,
            LinkParams {
                rate: Rate::from_mbps(8), // 1000 B in 1 ms
                delay: Duration::from_millis(10),
                discipline: Discipline::DropTail(DropTail {
                    limit: Limit::Packets(limit),
                }),
                loss: 0.0,
                variation: None,
            },
            Rng::stream(0, 0),
        )
    }

    #[test]
    fn arrival_is_serialization_plus_propagation() {
        let mut l = link(10);
        let a = l.enqueue(Time::ZERO, pkt(1000), 0);
        assert_eq!(
            a,
            Admission::Scheduled {
                arrival: Time::from_nanos(11_000_000),
                became_head: true
            }
        );
        // The second packet waits 1 ms for the first.
        let b = l.enqueue(Time::ZERO, pkt(1000), 1);
        assert_eq!(
            b,
            Admission::Scheduled {
                arrival: Time::from_nanos(12_000_000),
                became_head: false
            }
        );
    }

    #[test]
    fn a_fifo_records_each_admitted_packets_wait() {
        // A burst of 4 packets of 1 ms each: they wait 0, 1, 2 and 3 ms; the fifth is dropped
        // and not counted.
        let mut l = link(3);
        for i in 0..5 {
            l.enqueue(Time::ZERO, pkt(1000), i);
        }
        let s = l.sojourns();
        assert_eq!(s.packets(), 4);
        assert_eq!(s.mean(), Some(Duration::from_micros(1500)));
        assert_eq!(s.max(), Duration::from_millis(3));
        // Rank 2 of 4 is 1 ms, read as the middle of its bucket [983040, 1015808) ns.
        assert_eq!(s.quantile(0.5), Some(Duration::from_nanos(999_423)));
        // Rank 4 is 3 ms = 22 << 17 ns + 0.05 ms: bucket [22 << 17, 23 << 17), middle 2949119.
        assert_eq!(s.quantile(0.99), Some(Duration::from_nanos(2_949_119)));
    }

    #[test]
    fn droptail_drops_exactly_what_overflows() {
        // A burst of 10 packets into a limit of 3: one goes straight to the transmitter, three
        // wait, six are dropped.
        let mut l = link(3);
        let outcomes: Vec<_> = (0..10)
            .map(|i| l.enqueue(Time::ZERO, pkt(1000), i))
            .collect();
        let dropped = outcomes
            .iter()
            .filter(|a| **a == Admission::Dropped)
            .count();
        assert_eq!(dropped, 6);
        assert!(outcomes[..4]
            .iter()
            .all(|a| matches!(a, Admission::Scheduled { .. })));
        assert_eq!(l.occupancy(Time::ZERO).packets, 3);
        // 1.5 ms later the first has left and the second is being sent: two wait.
        assert_eq!(l.occupancy(Time::from_nanos(1_500_000)).packets, 2);
    }

    #[test]
    fn busy_time_is_exact_mid_packet() {
        let mut l = link(10);
        l.enqueue(Time::ZERO, pkt(1000), 0);
        l.enqueue(Time::ZERO, pkt(1000), 1);
        assert_eq!(
            l.busy_time(Time::from_nanos(1_500_000)),
            Duration::from_micros(1500)
        );
        assert_eq!(
            l.busy_time(Time::from_nanos(5_000_000)),
            Duration::from_millis(2)
        );
    }

    fn varying_link(v: Variation, discipline: Discipline) -> Link {
        Link::new(
            0,
            1,
            LinkParams {
                rate: Rate::from_mbps(8),
                delay: Duration::from_millis(10),
                discipline,
                loss: 0.0,
                variation: Some(Box::new(v)),
            },
            Rng::stream(0, 0),
        )
    }

    fn droptail(limit: u32) -> Discipline {
        Discipline::DropTail(DropTail {
            limit: Limit::Packets(limit),
        })
    }

    fn ms(x: u64) -> Time {
        Time::from_nanos(x * 1_000_000)
    }

    /// Takes every packet off the link in arrival order: (arrival, event-order number).
    fn drain(l: &mut Link) -> Vec<(Time, u64)> {
        let mut out = Vec::new();
        while let Some((t, seq)) = l.next_arrival() {
            assert!(l.head_delivered());
            l.pop_arrival(t);
            out.push((t, seq));
        }
        out
    }

    #[test]
    fn a_fall_in_delay_bunches_packets_but_never_reorders_them() {
        // 10 ms until 1.5 ms, then 2 ms. The first packet ends transmission at 1 ms (arrives
        // at 11 ms); the second at 2 ms, when the delay is 2 ms: 4 ms, held behind the first
        // until 11 ms; the tenth ends at 10 ms and arrives at 12 ms.
        let v = Variation {
            delay: Some(Schedule::Steps {
                steps: vec![
                    (Duration::ZERO, Duration::from_millis(10)),
                    (Duration::from_micros(1500), Duration::from_millis(2)),
                ]
                .into(),
                period: None,
            }),
            ..Variation::default()
        };
        let mut l = varying_link(v, droptail(100));
        for i in 0..10 {
            l.enqueue(Time::ZERO, pkt(1000), i);
        }
        let got = drain(&mut l);
        assert_eq!(got[0], (ms(11), 0));
        assert_eq!(got[1], (ms(11), 1));
        assert_eq!(got[9], (ms(12), 9));
        assert!(got.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(l.scheduled(ms(1)).1, Duration::from_millis(10));
        assert_eq!(l.scheduled(ms(2)).1, Duration::from_millis(2));
    }

    #[test]
    fn a_rate_schedule_paces_a_fifo_and_counts_its_capacity() {
        // 8 Mbit/s for 5 ms, then 4 Mbit/s: five 1000-byte packets end at 1..5 ms, the next
        // ones every 2 ms.
        let v = Variation {
            capacity: Some(Capacity::Rate(Schedule::Steps {
                steps: vec![
                    (Duration::ZERO, Rate::from_mbps(8)),
                    (Duration::from_millis(5), Rate::from_mbps(4)),
                ]
                .into(),
                period: None,
            })),
            ..Variation::default()
        };
        let mut l = varying_link(v, droptail(100));
        let start = l.usage_at_start();
        for i in 0..8 {
            l.enqueue(Time::ZERO, pkt(1000), i);
        }
        let arrivals: Vec<u64> = drain(&mut l)
            .iter()
            .map(|(t, _)| t.as_nanos() / 1_000_000 - 10)
            .collect();
        assert_eq!(arrivals, [1, 2, 3, 4, 5, 7, 9, 11]);
        // By 15 ms the capacity offered 5000 + 5000 bytes; 8000 were sent.
        let end = l.usage(ms(15));
        assert_eq!(end.offered_bytes, Some(10_000.0));
        assert_eq!(Link::utilization_between(&start, &end), 0.8);
        assert_eq!(l.scheduled(ms(6)).0, Rate::from_mbps(4));
    }

    #[test]
    fn reordered_packets_are_overtaken_and_each_arrives_once() {
        // Half the packets take 3 ms longer: those sent after them (1 ms apart) overtake them.
        let v = Variation {
            reorder: Some(crate::net::vary::Reorder {
                probability: 0.5,
                extra: Duration::from_millis(3),
            }),
            ..Variation::default()
        };
        for discipline in [
            droptail(1000),
            Discipline::Aqm(Box::new(crate::net::aqm::Aqm::Codel(
                crate::net::aqm::Codel::new(
                    crate::net::aqm::CodelParams {
                        target: Duration::from_millis(500),
                        interval: Duration::from_secs(1),
                        ce_threshold: None,
                        ecn: false,
                        mtu: 1500,
                    },
                    1000,
                ),
            ))),
        ] {
            let aqm = matches!(discipline, Discipline::Aqm(_));
            let mut l = varying_link(v.clone(), discipline);
            let mut got = Vec::new();
            for i in 0..200u64 {
                // Offer one packet per millisecond, taking off what arrives before it.
                let now = ms(i);
                while let Some((t, seq)) = l.next_arrival().filter(|&(t, _)| t <= now) {
                    if l.head_delivered() {
                        got.push((t, seq));
                    }
                    l.pop_arrival(t);
                }
                l.enqueue(now, pkt(1000), i);
            }
            while let Some((t, seq)) = l.next_arrival() {
                if l.head_delivered() {
                    got.push((t, seq));
                }
                l.pop_arrival(t);
            }
            let mut seqs: Vec<u64> = got.iter().map(|g| g.1).collect();
            let out_of_order = seqs.windows(2).filter(|w| w[1] < w[0]).count();
            assert!(out_of_order > 30, "aqm {aqm}: {out_of_order}");
            assert!(got.windows(2).all(|w| w[0].0 <= w[1].0), "aqm {aqm}");
            seqs.sort_unstable();
            assert_eq!(seqs, (0..200).collect::<Vec<_>>(), "aqm {aqm}");
            assert_eq!(l.in_flight(), 0);
        }
    }
}
