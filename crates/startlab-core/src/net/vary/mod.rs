//! Links that change: a direction's rate, delay and loss as functions of time, Mahimahi's
//! delivery-opportunity traces, bursty (Gilbert–Elliott) loss, and reordering.
//!
//! A [`Schedule`] is a piecewise-constant value: steps written in the scenario (optionally
//! repeating), steps streamed from a CSV file, or a seeded random walk. Each is read through a
//! [`Cursor`], which only moves forward in time and holds O(1) state, so a long trace costs no
//! memory. A [`Variation`] gathers what varies on one link direction; [`Varying`] is its running
//! state inside a [`super::Link`].
//!
//! The semantics (docs/variable-links.md states them for users):
//! - **rate**: a packet's bits are served at the rate in force while it is transmitted, so a
//!   packet in service when the rate changes finishes its remaining bits at the new rate (a
//!   fluid server); a rate of 0 serves nothing until it rises;
//! - **trace**: Mahimahi's LinkShell (`link_queue.cc`): each line is one delivery opportunity of
//!   1504 bytes at that millisecond; a packet uses opportunities after the millisecond it
//!   arrived in, leftover bytes of an opportunity go to the next queued packet, and unused ones
//!   are lost; the file repeats, shifted by its last timestamp;
//! - **delay**: the one in force when a packet's transmission ends; packets never overtake one
//!   another, so a fall in delay bunches them behind the last one sent;
//! - **loss**: the probability in force when a packet starts transmission.

mod file;
mod loss;

pub use file::{check_csv, check_trace, Opportunities, TraceError, TRACE_RATE_WINDOW};
pub use loss::GilbertElliott;

use crate::rng::Rng;
use crate::time::{Duration, Time};
use crate::units::Rate;
use std::path::PathBuf;
use std::sync::Arc;

/// Bytes one Mahimahi delivery opportunity carries (`LinkQueue::PACKET_SIZE`, a TUN MTU).
pub const OPPORTUNITY_BYTES: u32 = 1504;

/// A value a schedule can hold: converted to and from `f64` for random walks.
pub trait Level: Copy + PartialEq + std::fmt::Debug + Send + Sync + 'static {
    fn to_f64(self) -> f64;
    fn from_f64(x: f64) -> Self;
    /// Parses one value as a scenario writes it (`"40Mbps"`, `"25ms"`, `0.01`).
    fn parse(text: &str) -> Result<Self, String>;
}

impl Level for Rate {
    fn to_f64(self) -> f64 {
        self.bps_f64()
    }
    fn from_f64(x: f64) -> Self {
        Rate::from_bps(x.round().max(0.0) as u64)
    }
    fn parse(text: &str) -> Result<Self, String> {
        crate::scenario::units::parse_rate_or_zero(text)
    }
}

impl Level for Duration {
    fn to_f64(self) -> f64 {
        self.as_nanos() as f64
    }
    fn from_f64(x: f64) -> Self {
        Duration::from_nanos(x.round().max(0.0) as u64)
    }
    fn parse(text: &str) -> Result<Self, String> {
        crate::scenario::units::parse_duration(text)
    }
}

impl Level for f64 {
    fn to_f64(self) -> f64 {
        self
    }
    fn from_f64(x: f64) -> Self {
        x
    }
    fn parse(text: &str) -> Result<Self, String> {
        let x: f64 = text
            .trim()
            .parse()
            .map_err(|_| format!("invalid probability {text:?}: expected a number"))?;
        if (0.0..=1.0).contains(&x) {
            Ok(x)
        } else {
            Err(format!("invalid probability {x}: expected 0 to 1"))
        }
    }
}

/// A piecewise-constant value of time.
#[derive(Clone, Debug, PartialEq)]
pub enum Schedule<T> {
    /// The value from each time on; the first step is at 0, times strictly increase. With a
    /// `period` (longer than the last step's time), the steps repeat every period.
    Steps {
        steps: Arc<[(Duration, T)]>,
        period: Option<Duration>,
    },
    /// Steps read from a CSV file of `time,value` lines (checked when the scenario is
    /// resolved, streamed while it runs).
    Csv {
        path: Arc<PathBuf>,
        period: Option<Duration>,
        /// Its first value, read when the file was checked ([`check_csv`]).
        first: T,
    },
    /// Starts at `start`; every `every`, moves by a uniform draw in [-step, +step], reflected
    /// into [min, max]. Seeded by the link's own stream.
    Walk {
        start: T,
        min: T,
        max: T,
        step: T,
        every: Duration,
    },
}

impl<T: Level> Schedule<T> {
    /// A schedule that is `value` for ever.
    pub fn constant(value: T) -> Self {
        Schedule::Steps {
            steps: Arc::from(vec![(Duration::ZERO, value)]),
            period: None,
        }
    }

    /// The value at time 0 (what a scenario's `BDP` and the tables' nominal columns use).
    pub fn initial(&self) -> T {
        match self {
            Schedule::Steps { steps, .. } => steps[0].1,
            Schedule::Csv { first, .. } => *first,
            Schedule::Walk { start, .. } => *start,
        }
    }

    /// A cursor at time 0; `rng` seeds a walk.
    pub fn cursor(&self, rng: &Rng) -> Cursor<T> {
        let source = match self {
            Schedule::Steps { steps, period } => Source::Steps {
                steps: Arc::clone(steps),
                period: *period,
                next: 0,
                offset: Duration::ZERO,
            },
            Schedule::Csv { path, period, .. } => {
                Source::Csv(Box::new(file::CsvSteps::open(path, *period)))
            }
            Schedule::Walk {
                start,
                min,
                max,
                step,
                every,
            } => Source::Walk {
                value: start.to_f64(),
                min: min.to_f64(),
                max: max.to_f64(),
                step: step.to_f64(),
                every: *every,
                at: Duration::ZERO,
                rng: rng.clone(),
                started: false,
            },
        };
        Cursor::new(source)
    }
}

/// Where a cursor's steps come from (a link holds a handful, behind its one box).
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
enum Source<T> {
    Steps {
        steps: Arc<[(Duration, T)]>,
        period: Option<Duration>,
        next: usize,
        offset: Duration,
    },
    Csv(Box<file::CsvSteps<T>>),
    Walk {
        value: f64,
        min: f64,
        max: f64,
        step: f64,
        every: Duration,
        at: Duration,
        rng: Rng,
        started: bool,
    },
}

impl<T: Level> Source<T> {
    /// The next step (time, value), in increasing time; `None` when the value never changes
    /// again.
    fn next(&mut self) -> Option<(Time, T)> {
        match self {
            Source::Steps {
                steps,
                period,
                next,
                offset,
            } => {
                if *next == steps.len() {
                    *offset += (*period)?;
                    *next = 0;
                }
                let (at, v) = steps[*next];
                *next += 1;
                Some((Time::ZERO + *offset + at, v))
            }
            Source::Csv(f) => f.next(),
            Source::Walk {
                value,
                min,
                max,
                step,
                every,
                at,
                rng,
                started,
            } => {
                if *started {
                    *at += *every;
                    let mut x = *value + (2.0 * rng.uniform() - 1.0) * *step;
                    // Reflect into [min, max] (twice is enough: a step is at most the width).
                    for _ in 0..2 {
                        if x < *min {
                            x = 2.0 * *min - x;
                        }
                        if x > *max {
                            x = 2.0 * *max - x;
                        }
                    }
                    *value = x.clamp(*min, *max);
                }
                *started = true;
                Some((Time::ZERO + *at, T::from_f64(*value)))
            }
        }
    }
}

/// Reads a schedule forward in time: the value in force at `t`, and until when.
#[derive(Debug)]
pub struct Cursor<T> {
    source: Source<T>,
    /// The value in force from `since`.
    value: T,
    since: Time,
    /// The step after it, if the value ever changes again.
    next: Option<(Time, T)>,
}

impl<T: Level> Cursor<T> {
    fn new(mut source: Source<T>) -> Self {
        let (since, value) = source.next().unwrap_or((Time::ZERO, T::from_f64(0.0)));
        let next = source.next();
        Cursor {
            source,
            value,
            since,
            next,
        }
    }

    /// Moves to the step in force at `t` (never backwards).
    fn seek(&mut self, t: Time) {
        while let Some((at, v)) = self.next {
            if at > t {
                break;
            }
            self.value = v;
            self.since = at;
            self.next = self.source.next();
        }
    }

    /// The value in force at `t`; `t` must not be earlier than the last query's.
    pub fn at(&mut self, t: Time) -> T {
        self.seek(t);
        self.value
    }

    /// The value in force at `t` and the time it changes (None: never).
    pub fn segment(&mut self, t: Time) -> (T, Option<Time>) {
        self.seek(t);
        (self.value, self.next.map(|(at, _)| at))
    }
}

/// Times past this are "never" (a rate schedule that serves nothing for centuries).
const HORIZON: Time = Time::from_nanos(1 << 62);

/// The service of a rate schedule: when a packet of `bytes` that starts at `start` finishes.
/// Integer-exact within a step (as [`Rate::transmit_time`]); at a step boundary the bits
/// served so far are carried at nanosecond resolution.
fn fluid_finish(rate: &mut Cursor<Rate>, start: Time, bytes: u32) -> Time {
    // Bits still to serve, times 10^9 (bit·ns per second), so that rate × ns is exact.
    let mut left = bytes as u128 * 8 * 1_000_000_000;
    let mut t = start;
    while t < HORIZON {
        let (r, end) = rate.segment(t);
        let bps = r.bps() as u128;
        if bps > 0 {
            let need = left.div_ceil(bps);
            match end {
                Some(e) if (t + Duration::from_nanos(need.min(u64::MAX as u128) as u64)) > e => {
                    left -= bps * e.saturating_since(t).as_nanos() as u128;
                    t = e;
                }
                _ => return t + Duration::from_nanos(need as u64),
            }
        } else {
            match end {
                Some(e) => t = e,
                None => return Time::MAX,
            }
        }
    }
    Time::MAX
}

/// Offered capacity of a rate schedule, integrated forward: bytes it could carry by `t`.
#[derive(Debug)]
struct Integral {
    at: Time,
    bits_ns: u128,
}

impl Integral {
    fn advance(&mut self, rate: &mut Cursor<Rate>, t: Time) -> f64 {
        while self.at < t {
            let (r, end) = rate.segment(self.at);
            let to = end.map_or(t, |e| e.min(t));
            self.bits_ns += r.bps() as u128 * to.saturating_since(self.at).as_nanos() as u128;
            self.at = to;
        }
        self.bits_ns as f64 / 8e9
    }
}

/// How a direction's capacity is given.
#[derive(Clone, Debug, PartialEq)]
pub enum Capacity {
    /// A rate schedule served as a fluid.
    Rate(Schedule<Rate>),
    /// A Mahimahi trace of delivery opportunities; `repeat` as mm-link without `--once`.
    Trace { path: Arc<PathBuf>, repeat: bool },
}

/// Reordering: each packet, with `probability`, is held `extra` longer on the wire and may be
/// overtaken by those sent after it (netem's `delay … reorder` taken the other way round).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Reorder {
    pub probability: f64,
    pub extra: Duration,
}

/// What varies on one link direction (the constant parts stay in [`super::LinkParams`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Variation {
    pub capacity: Option<Capacity>,
    pub delay: Option<Schedule<Duration>>,
    pub loss: Option<Schedule<f64>>,
    pub bursty_loss: Option<GilbertElliott>,
    /// Extra delay drawn uniformly in [0, jitter] per packet, without reordering.
    pub jitter: Duration,
    pub reorder: Option<Reorder>,
}

impl Variation {
    /// Whether anything varies at all.
    pub fn is_some(&self) -> bool {
        *self != Variation::default()
    }
}

/// The server of a varying capacity (one per link, behind its box).
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
enum Server {
    Fluid {
        service: Cursor<Rate>,
        sampled: Cursor<Rate>,
        offered: Cursor<Rate>,
        integral: Integral,
    },
    Trace {
        service: Opportunities,
        sampled: Opportunities,
        offered: Opportunities,
        /// The last opportunity a packet used and the bytes left in it.
        last: Option<(Time, u32)>,
        /// The opportunities counted as offered so far, and up to when.
        offered_count: u64,
        offered_at: Time,
    },
}

/// The running state of a [`Variation`] inside a link.
#[derive(Debug)]
pub struct Varying {
    server: Option<Server>,
    delay: Option<(Cursor<Duration>, Cursor<Duration>)>,
    loss: Option<Cursor<f64>>,
    bursty: Option<(GilbertElliott, bool)>,
    jitter: Duration,
    pub reorder: Option<Reorder>,
    rng: Rng,
    /// What it was made from, for [`Clone`].
    origin: (Variation, Rng),
}

/// A link is cloned before it runs (a resolved scenario's network, for each run): the clone
/// starts the schedules afresh, as the original did.
impl Clone for Varying {
    fn clone(&self) -> Self {
        Varying::new(&self.origin.0, self.origin.1.clone())
    }
}

impl Varying {
    pub fn new(v: &Variation, rng: Rng) -> Self {
        let server = v.capacity.as_ref().map(|c| match c {
            Capacity::Rate(s) => Server::Fluid {
                service: s.cursor(&rng),
                sampled: s.cursor(&rng),
                offered: s.cursor(&rng),
                integral: Integral {
                    at: Time::ZERO,
                    bits_ns: 0,
                },
            },
            Capacity::Trace { path, repeat } => Server::Trace {
                service: Opportunities::open(path, *repeat),
                sampled: Opportunities::open(path, *repeat),
                offered: Opportunities::open(path, *repeat),
                last: None,
                offered_count: 0,
                offered_at: Time::ZERO,
            },
        });
        // Each schedule's walk gets its own stream, drawn from the link's.
        let mut seeds = rng.clone();
        let mut sub = || Rng::stream(seeds.next_u64(), 0);
        let delay_rng = sub();
        let loss_rng = sub();
        Varying {
            server,
            delay: v
                .delay
                .as_ref()
                .map(|s| (s.cursor(&delay_rng), s.cursor(&delay_rng))),
            loss: v.loss.as_ref().map(|s| s.cursor(&loss_rng)),
            bursty: v.bursty_loss.map(|g| (g, false)),
            jitter: v.jitter,
            reorder: v.reorder,
            rng: sub(),
            origin: (v.clone(), rng),
        }
    }

    /// When a packet of `bytes`, offered at `ready`, starts and finishes transmission, the
    /// transmitter being free from `free` (the previous packet's finish); `fixed` is the
    /// link's constant rate, used when only delay or loss vary.
    pub fn serve(&mut self, ready: Time, free: Time, bytes: u32, fixed: Rate) -> (Time, Time) {
        let start = ready.max(free);
        match &mut self.server {
            None => (start, start + fixed.transmit_time(bytes as u64)),
            Some(Server::Fluid { service, .. }) => (start, fluid_finish(service, start, bytes)),
            Some(Server::Trace { service, last, .. }) => {
                let mut left = bytes;
                let mut first = None;
                // The rest of the last opportunity used, if this packet was queued before it
                // came: Mahimahi burns the opportunities of a millisecond before it enqueues
                // what arrives in it (`read_packet` calls `rationalize` first).
                if let Some((at, rest)) = last.as_mut() {
                    if *rest > 0 && ready < *at {
                        let used = (*rest).min(left);
                        *rest -= used;
                        left -= used;
                        first = Some(*at);
                        if left == 0 {
                            return (*at, *at);
                        }
                    }
                }
                loop {
                    let Some(at) = service.next_after(ready) else {
                        *last = None;
                        return (first.unwrap_or(Time::MAX), Time::MAX);
                    };
                    service.take();
                    first.get_or_insert(at);
                    let used = OPPORTUNITY_BYTES.min(left);
                    left -= used;
                    if left == 0 {
                        *last = Some((at, OPPORTUNITY_BYTES - used));
                        return (first.unwrap_or(at), at);
                    }
                }
            }
        }
    }

    /// The rate in force at `t`, for the tables; a trace's is the rate of its opportunities
    /// in the [`file::TRACE_RATE_WINDOW`] that ends at `t`. `t` never decreases.
    pub fn rate_at(&mut self, t: Time, fixed: Rate) -> Rate {
        match &mut self.server {
            None => fixed,
            Some(Server::Fluid { sampled, .. }) => sampled.at(t),
            Some(Server::Trace { sampled, .. }) => sampled.rate_around(t),
        }
    }

    /// Whether the capacity varies (a rate schedule or a trace), not only delay or loss.
    pub fn capacity_varies(&self) -> bool {
        self.server.is_some()
    }

    /// Bytes the capacity offered in [0, t]; `t` never decreases between calls.
    pub fn offered_bytes(&mut self, t: Time) -> Option<f64> {
        match &mut self.server {
            None => None,
            Some(Server::Fluid {
                offered, integral, ..
            }) => Some(integral.advance(offered, t)),
            Some(Server::Trace {
                offered,
                offered_count,
                offered_at,
                ..
            }) => {
                if t > *offered_at {
                    *offered_count += offered.count_through(t);
                    *offered_at = t;
                }
                Some(*offered_count as f64 * OPPORTUNITY_BYTES as f64)
            }
        }
    }

    /// The propagation delay of a packet whose transmission ends at `finish`.
    pub fn delay_at(&mut self, finish: Time, fixed: Duration) -> Duration {
        let base = match &mut self.delay {
            Some((c, _)) => c.at(finish),
            None => fixed,
        };
        if self.jitter.is_zero() {
            return base;
        }
        let extra = (self.rng.uniform() * (self.jitter.as_nanos() + 1) as f64) as u64;
        base + Duration::from_nanos(extra.min(self.jitter.as_nanos()))
    }

    /// The scheduled delay at `t`, for the tables.
    pub fn delay_sample(&mut self, t: Time, fixed: Duration) -> Duration {
        match &mut self.delay {
            Some((_, c)) => c.at(t),
            None => fixed,
        }
    }

    /// Whether a packet that starts transmission at `start` is lost on the wire.
    pub fn lost(&mut self, start: Time, fixed: f64) -> bool {
        let p = match &mut self.loss {
            Some(c) => c.at(start),
            None => fixed,
        };
        let random = self.rng.bernoulli(p);
        let bursty = match &mut self.bursty {
            Some((g, bad)) => g.step(bad, &mut self.rng),
            None => false,
        };
        random || bursty
    }

    /// Whether this packet takes the long way round (reordering).
    pub fn detoured(&mut self) -> Option<Duration> {
        let r = self.reorder?;
        self.rng.bernoulli(r.probability).then_some(r.extra)
    }
}

#[cfg(test)]
mod tests;
