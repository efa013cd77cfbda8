//! Packet-by-packet replay of an arrival sequence into one queue and its transmitter: what
//! became of each packet. It drives the simulator's own `Link` (zero propagation delay, no
//! random loss), so a replay checks the link's handling of a discipline as well as the
//! discipline, against an independent implementation fed the same sequence.
//!
//! Semantics: the transmitter serializes at the link's rate; when it frees and the queue holds
//! packets, the discipline dequeues; an arrival finding it idle and the queue empty is enqueued
//! and dequeued at once; a dequeue due at the same nanosecond as an arrival happens first.

use super::link::{Admission, Link, LinkParams};
use super::packet::{Ecn, Packet};
use super::queue::Discipline;
use crate::rng::Rng;
use crate::time::{Duration, Time};
use crate::units::Rate;

/// One packet offered to the queue.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ReplayArrival {
    pub time: Time,
    pub bytes: u32,
    pub flow: u32,
    pub ecn: Ecn,
}

/// What became of a packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Dequeued and transmitted from `at`.
    Sent,
    /// Dequeued with CE set by the discipline.
    SentMarked,
    /// Refused at enqueue.
    DroppedAtEnqueue,
    /// Dropped after it was queued (at dequeue, or by an overflow).
    DroppedAfter,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Sent => "sent",
            Outcome::SentMarked => "sent-marked",
            Outcome::DroppedAtEnqueue => "dropped-enqueue",
            Outcome::DroppedAfter => "dropped-dequeue",
        }
    }
}

/// A packet's outcome and its instant (the dequeue for a sent packet, else the drop).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub outcome: Outcome,
    pub at: Time,
}

/// Replays `arrivals` (in time order) into `discipline` behind a transmitter of `rate`; one
/// decision per arrival, in the same order.
pub fn replay(discipline: Discipline, rate: Rate, arrivals: &[ReplayArrival]) -> Vec<Decision> {
    let mut link = Link::new(
        0,
        1,
        LinkParams {
            rate,
            delay: Duration::ZERO,
            discipline,
            loss: 0.0,
            variation: None,
        },
        Rng::stream(0, 0),
    );
    let mut decisions: Vec<Option<Decision>> = vec![None; arrivals.len()];
    let note_discarded = |link: &mut Link, decisions: &mut Vec<Option<Decision>>| {
        link.take_discarded(|at, _, id| {
            decisions[id as usize] = Some(Decision {
                outcome: Outcome::DroppedAfter,
                at,
            });
        });
    };
    // The head packet's arrival at the far end is drained as time passes, so that the pipe
    // stays short.
    let drain = |link: &mut Link, until: Time, decisions: &mut Vec<Option<Decision>>| {
        while let Some((t, id)) = link.next_arrival() {
            if t > until {
                break;
            }
            assert!(link.head_delivered(), "no loss on a replay's link");
            let p = link.pop_arrival(t);
            let a = &arrivals[id as usize];
            let marked = p.ecn == Ecn::Ce && a.ecn != Ecn::Ce;
            decisions[id as usize] = Some(Decision {
                outcome: if marked {
                    Outcome::SentMarked
                } else {
                    Outcome::Sent
                },
                at: Time::from_nanos(
                    t.as_nanos() - rate.transmit_time(p.wire_bytes as u64).as_nanos(),
                ),
            });
        }
    };
    let mut last = Time::ZERO;
    for (id, a) in arrivals.iter().enumerate() {
        drain(&mut link, a.time, &mut decisions);
        note_discarded(&mut link, &mut decisions);
        let packet = Packet {
            ecn: a.ecn,
            ..Packet::datagram(a.flow, 0, 1, a.bytes, id as u32, a.time)
        };
        if let Admission::Dropped = link.enqueue(a.time, packet, id as u64) {
            decisions[id] = Some(Decision {
                outcome: Outcome::DroppedAtEnqueue,
                at: a.time,
            });
        }
        note_discarded(&mut link, &mut decisions);
        last = last.max(a.time);
    }
    // Everything queued has left by the time the transmitter has sent it all.
    let total_bytes: u64 = arrivals.iter().map(|a| a.bytes as u64).sum();
    let end = last + rate.transmit_time(total_bytes) + Duration::from_secs(1);
    drain(&mut link, end, &mut decisions);
    note_discarded(&mut link, &mut decisions);
    decisions
        .into_iter()
        .map(|d| d.expect("every packet is sent or dropped by the end"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::queue::{DropTail, Limit};

    fn arrival(ns: u64) -> ReplayArrival {
        ReplayArrival {
            time: Time::from_nanos(ns),
            bytes: 1000,
            flow: 0,
            ecn: Ecn::NotEct,
        }
    }

    #[test]
    fn a_fifo_sends_back_to_back_and_drops_the_overflow() {
        // 8 Mbit/s: 1 ms per 1000-byte packet. Four at once into a limit of 2 waiting: the
        // first is sent at 0, two wait (1 ms, 2 ms), the fourth is refused.
        let d = Discipline::DropTail(DropTail {
            limit: Limit::Packets(2),
        });
        let out = replay(
            d,
            Rate::from_mbps(8),
            &[arrival(0), arrival(0), arrival(0), arrival(0)],
        );
        let ms = |m: u64| Time::from_nanos(m * 1_000_000);
        assert_eq!(
            out,
            vec![
                Decision {
                    outcome: Outcome::Sent,
                    at: ms(0)
                },
                Decision {
                    outcome: Outcome::Sent,
                    at: ms(1)
                },
                Decision {
                    outcome: Outcome::Sent,
                    at: ms(2)
                },
                Decision {
                    outcome: Outcome::DroppedAtEnqueue,
                    at: ms(0)
                },
            ]
        );
    }

    #[test]
    fn an_aqm_that_never_drops_sends_when_a_fifo_does() {
        // CoDel with a target it never reaches, and PIE whose early drops are off until its
        // first update at 0.5 s, are FIFOs: their lazily run dequeues must happen exactly
        // when the FIFO's precomputed departures do.
        let mut rng = crate::rng::Rng::stream(5, 0);
        let mut t = 0u64;
        let arrivals: Vec<_> = (0..3000)
            .map(|i| {
                t += (rng.exponential(300_000.0)) as u64;
                ReplayArrival {
                    time: Time::from_nanos(t),
                    bytes: 64 + (i * 37 % 1437) as u32,
                    flow: (i % 5) as u32,
                    ecn: Ecn::NotEct,
                }
            })
            .filter(|a| a.time.as_nanos() < 450_000_000)
            .collect();
        let rate = Rate::from_mbps(20);
        let fifo = replay(
            Discipline::DropTail(DropTail {
                limit: Limit::Packets(1000),
            }),
            rate,
            &arrivals,
        );
        for queue in [
            r#"{ kind = "codel", target = "1000s", interval = "1000s" }"#,
            r#"{ kind = "pie" }"#,
        ] {
            let d = crate::scenario::topology::replay_discipline(queue, rate, 1).unwrap();
            assert_eq!(replay(d, rate, &arrivals), fifo, "{queue}");
        }
        assert!(fifo.iter().all(|d| d.outcome == Outcome::Sent));
    }

    #[test]
    fn codel_replay_is_deterministic_and_accounts_for_every_packet() {
        let d = || {
            crate::scenario::topology::replay_discipline(
                r#"{ kind = "codel" }"#,
                Rate::from_mbps(8),
                1,
            )
            .unwrap()
        };
        // Twice the link's rate for 2 s: a standing queue CoDel must control.
        let arrivals: Vec<_> = (0..4000).map(|i| arrival(i * 500_000)).collect();
        let a = replay(d(), Rate::from_mbps(8), &arrivals);
        assert_eq!(a, replay(d(), Rate::from_mbps(8), &arrivals));
        let dropped = a
            .iter()
            .filter(|x| x.outcome == Outcome::DroppedAfter)
            .count();
        assert!(dropped > 100, "{dropped}");
        // Sent packets leave one transmission time apart at least, in order of their dequeue.
        let mut sent: Vec<_> = a
            .iter()
            .filter(|x| x.outcome == Outcome::Sent)
            .map(|x| x.at)
            .collect();
        sent.sort();
        assert!(sent
            .windows(2)
            .all(|w| w[1].as_nanos() - w[0].as_nanos() >= 1_000_000));
    }
}
