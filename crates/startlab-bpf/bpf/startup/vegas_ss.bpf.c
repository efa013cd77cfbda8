/* SPDX-License-Identifier: MIT */
/*
 * Vegas slow start as a start-up algorithm on another controller: rounds alternate between
 * growth (+1 segment per ACK) and hold (cwnd fixed, its RTT measured); at the start of each
 * growth round Δ = W (D - BaseRTT) / D of the hold round just ended is compared with gamma and
 * Δ > gamma ends slow start with cwnd cut by 1/8 and ssthresh set to it (Ho, Chan, Chen §2 and
 * eq. (1); timing after Wang et al. 2004 §III.D, Table 3 / Fig. 4 look at it this way) (crate
 * startlab-core, cc::vegas::VegasSlowStart, name "vegas-ss"). The meter and the slow-start core
 * are cc/vegas.bpf.c's, included below.
 *
 * Differs from the Rust model: as cc/vegas.bpf.c says for the meter and the slow start (kernel
 * RTT samples in µs from pkts_acked, "delivers data" = tp->delivered advanced, Δ in Q32.32
 * from the round's RTT sum, the 1/8 cut in 2^-16 segments with snd_ssthresh = snd_cwnd whole,
 * growth per cong_avoid call = per ACK that advances snd_una, Linux's cwnd-limited test and
 * Linux's own loss recovery). The controller calls on_ack only while snd_cwnd < snd_ssthresh
 * and the flow is cwnd-limited, as cc::WithStartup does.
 *
 * ssthresh is the controller's and whole segments (snd_ssthresh), where the model's may have a
 * fraction: Reno's loss response FlightSize x 0.5 is 4.5 for a flight of 9 in the model, 4 in
 * Linux (tcp_reno_ssthresh) and in the reno port, and a timeout during fast recovery keeps it
 * (tcp_enter_loss does not ask again). A slow start toward such an S ends at floor(S) here. When
 * a hold round begins at cwnd = floor(S) < S, the model is still in slow start: it holds cwnd
 * for the round, then the next growth round's first ACK raises it to S. Linux's
 * tcp_in_slow_start is already false (snd_cwnd >= snd_ssthresh), so on_ack is no longer called
 * and the controller's congestion avoidance grows cwnd through that round (Reno: +1/cwnd per
 * ACK). This is inherent in whole segments, not something this file can follow: the fraction
 * never reaches the program.
 */
#include "../cc/vegas.bpf.c"

enum vegas_ss_config__round_rtt {
	vegas_ss_config__round_rtt__mean,
	vegas_ss_config__round_rtt__min,
};

struct vegas_ss_config {
	fixed_t gamma; /* slow start ends when Δ > gamma (segments) */
	enum vegas_ss_config__round_rtt round_rtt; /* D of eq. (1): the round's mean or min RTT */
	flag_t integer_delta;     /* round Δ to whole segments (ns-2) */
	flag_t first_round_grows; /* the first round doubles (else holds, as ns-2) */
};

struct vegas_ss_state {
	struct vegas_meter meter;
	struct vegas_slow_core core;
};

static __always_inline void vegas_ss_init(struct ca *ca, const volatile struct vegas_ss_config *cfg,
					  struct vegas_ss_state *st)
{
	vegas_meter_init(ca, &st->meter);
	st->core.growing = VEGAS_GROWING_NONE;
}

static __always_inline __u32 vegas_ss_on_ack(struct ca *ca, const volatile struct vegas_ss_config *cfg,
					     struct vegas_ss_state *st, __u32 acked)
{
	__u32 b = vegas_meter_take(&st->meter);

	/* Wang et al. 2004 §III.D: judged at the first ACK of the round. */
	if (b != VEGAS_BOUNDARY_NONE &&
	    vegas_slow_on_boundary(ca, &st->core, b, &st->meter, cfg->gamma,
				   cfg->round_rtt == vegas_ss_config__round_rtt__min,
				   cfg->integer_delta, cfg->first_round_grows))
		return 0;
	return vegas_slow_grow(ca, &st->core, acked);
}

static __always_inline void vegas_ss_pkts_acked(struct ca *ca, const volatile struct vegas_ss_config *cfg,
						struct vegas_ss_state *st, const struct ack_sample *s)
{
	vegas_meter_on_ack(ca, &st->meter, s);
}

static __always_inline void vegas_ss_set_state(struct ca *ca, const volatile struct vegas_ss_config *cfg,
					       struct vegas_ss_state *st, __u8 new_state)
{
	/* After a timeout: fresh rounds, the alternation restarts. */
	if (new_state == TCP_CA_Loss) {
		vegas_meter_restart(&st->meter);
		st->core.growing = VEGAS_GROWING_NONE;
	}
}

static __always_inline void vegas_ss_cwnd_event(struct ca *ca, const volatile struct vegas_ss_config *cfg,
						struct vegas_ss_state *st, enum tcp_ca_event ev)
{
	if (ev == CA_EVENT_LOSS) {
		vegas_meter_restart(&st->meter);
		st->core.growing = VEGAS_GROWING_NONE;
	}
}

STARTUP_OPS(vegas_ss) = {
	.init = vegas_ss_init,
	.on_ack = vegas_ss_on_ack,
	.pkts_acked = vegas_ss_pkts_acked,
	.set_state = vegas_ss_set_state,
	.cwnd_event = vegas_ss_cwnd_event,
};
