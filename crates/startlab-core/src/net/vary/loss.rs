//! Bursty loss: the Gilbert–Elliott two-state channel, as Linux's netem steps it
//! (`loss_gilb_ell` in net/sched/sch_netem.c; `tc … loss gemodel p r 1-h 1-k`).

use crate::rng::Rng;

/// A Good and a Bad state; per packet, the chain may change state, and the packet is lost with
/// the loss probability of the state it found.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct GilbertElliott {
    /// P(Good → Bad) per packet.
    pub p: f64,
    /// P(Bad → Good) per packet.
    pub r: f64,
    /// Loss probability in Good (netem's 1 - k).
    pub loss_good: f64,
    /// Loss probability in Bad (netem's 1 - h).
    pub loss_bad: f64,
}

impl GilbertElliott {
    /// One packet: `bad` is the chain's state, updated. As netem, the transition is drawn
    /// first and the loss with the probability of the state the packet found.
    pub fn step(&self, bad: &mut bool, rng: &mut Rng) -> bool {
        let was_bad = *bad;
        if was_bad {
            if rng.uniform() < self.r {
                *bad = false;
            }
        } else if rng.uniform() < self.p {
            *bad = true;
        }
        rng.bernoulli(if was_bad {
            self.loss_bad
        } else {
            self.loss_good
        })
    }

    /// The long-run loss rate: π_B·loss_bad + π_G·loss_good with π_B = p / (p + r).
    pub fn mean_loss(&self) -> f64 {
        if self.p + self.r == 0.0 {
            return self.loss_good;
        }
        let bad = self.p / (self.p + self.r);
        bad * self.loss_bad + (1.0 - bad) * self.loss_good
    }
}
