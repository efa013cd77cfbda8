/* SPDX-License-Identifier: MIT */
/*
 * Gallop-Vegas: Vegas whose slow start ("stable growth") adds a per-round increment incr that
 * itself grows by one segment per round, judged every round on Vegas's backlog Δ (eq. (1)):
 * Δ < γ grows incr; γ <= Δ < β halves it once per two rounds (status 0/1) and at incr <= 1
 * leaves slow start at the next round (ssthresh = 2); Δ >= β takes the last increment and
 * Δ - β off cwnd and leaves slow start (status 2), the first avoidance round then holding. The
 * round's increment is spread over its ACKs at `smoothing` segments per ACKed segment (one extra
 * segment every second ACK). A timeout resets maxincr = 2, incr = 0, status = 0. Ho, Chan, Chen,
 * "An Enhanced Slow-Start Mechanism for TCP Vegas", §3.2 (scheme, Table 1) and §3.3 (pseudo-code),
 * with Vegas's meter and avoidance from cc/vegas.bpf.c (crate startlab-core, cc::gallop_vegas,
 * whose header lists the choices made where the paper leaves room; the same choices here).
 *
 * Differs from the Rust model:
 * - Everything cc/vegas.bpf.c lists for the meter and the avoidance core: kernel RTT samples
 *   (µs, from pkts_acked, Linux's receiver with delayed/stretch ACKs), "delivers data" =
 *   tp->delivered advanced, Δ in Q32.32 from the round's RTT sum (rounded down, < 2^-32
 *   segment), avoidance decrease with snd_ssthresh = min(snd_ssthresh, snd_cwnd) whole,
 *   Linux's cwnd-limited test, Linux's own loss recovery (only ssthresh chosen here:
 *   FlightSize = snd_nxt - snd_una whole segments x loss_beta, truncated).
 * - incr is whole segments (as in the model, where it only takes whole values); maxincr,
 *   pending and the round's added increment are kept in 2^-16 segments (the model's are f64),
 *   smoothing x acked is rounded down to 2^-16 segments.
 * - The smoothed growth (and Vegas's 1/cwnd) is applied per cong_avoid call, i.e. per ACK that
 *   advances snd_una outside CWR/Recovery with Linux's `acked` (newly delivered segments, SACKed
 *   ones counted when SACKed); the model's ACKs are its receiver's.
 * - ssthresh = 2 on the exits is snd_ssthresh = 2.
 */
#include "vegas.bpf.c"

enum gallop_vegas_config__round_rtt {
	gallop_vegas_config__round_rtt__mean,
	gallop_vegas_config__round_rtt__min,
};

struct gallop_vegas_config {
	fixed_t alpha;     /* avoidance grows while Δ < alpha (segments) */
	fixed_t beta;      /* slow start: Δ >= beta cuts and ends it; avoidance shrinks while Δ > beta */
	fixed_t gamma;     /* slow start: Δ >= gamma halves incr */
	fixed_t loss_beta; /* ssthresh = max(FlightSize x loss_beta, 2) */
	enum gallop_vegas_config__round_rtt round_rtt; /* D of eq. (1): the round's mean or min RTT */
	flag_t integer_delta; /* round Δ to whole segments (ns-2) */
	flag_t strict_gamma;  /* test Δ > gamma (pseudo-code) instead of Δ >= gamma (prose) */
	fixed_t smoothing;    /* growth per ACKed segment while the increment is applied */
};

struct gallop_vegas_state {
	struct vegas_meter meter;
	struct vegas_ca_core ca;
	__u32 incr;        /* the per-round increment of stable growth, segments */
	__u32 status;      /* Table 1: 0, 1 or 2 */
	__u32 finish_in_ca; /* the γ-branch ended slow start: finish this round's increment */
	__u64 maxincr_q16; /* segments x 2^16 */
	__u64 pending_q16; /* increment decided, not yet added */
	__u64 added_q16;   /* added during the current round */
};

/* §3.3 "In Retransmission-Timeout phase": maxincr = 2, incr = 0, status = 0; rounds afresh. */
static __always_inline void gallop_vegas_timeout_reset(struct gallop_vegas_state *st)
{
	st->maxincr_q16 = 2ULL << FRAC_BITS;
	st->incr = 0;
	st->status = 0;
	st->pending_q16 = 0;
	st->added_q16 = 0;
	st->finish_in_ca = 0;
	vegas_meter_restart(&st->meter);
}

static __always_inline void gallop_vegas_init(struct ca *ca, const volatile struct gallop_vegas_config *cfg,
					      struct gallop_vegas_state *st)
{
	vegas_meter_init(ca, &st->meter);
	vegas_ca_init(&st->ca);
	st->incr = 0;
	st->maxincr_q16 = 2ULL << FRAC_BITS;
	st->status = 0;
	st->pending_q16 = 0;
	st->added_q16 = 0;
	st->finish_in_ca = 0;
}

/* Stable growth (§3.3), at a round boundary in slow start; Δ = 0 without samples. */
static __always_inline void gallop_vegas_slow_start_round(struct ca *ca,
							  const volatile struct gallop_vegas_config *cfg,
							  struct gallop_vegas_state *st, __u64 delta)
{
	__u64 last_increment = st->added_q16;
	__u64 w = cwnd_q16(ca);
	__u64 gamma = (__u64)cfg->gamma, beta = (__u64)cfg->beta;

	st->maxincr_q16 = w;
	if (delta >= beta) {
		/* §3.3: cwnd -= (last increment + Δ - β), at least 2 unless it was less; ssthresh = 2;
		 * status = 2. */
		__u64 sub = last_increment + ((delta - beta) >> 16);
		__u64 low = w < (2ULL << FRAC_BITS) ? w : (2ULL << FRAC_BITS);
		__u64 nw = w > sub ? w - sub : 0;

		cwnd_set_q16(ca, nw > low ? nw : low);
		ca->tp->snd_ssthresh = 2;
		SET_HINT(ca, "gallop-beta");
		st->status = 2;
		st->pending_q16 = 0;
		vegas_ca_hold(&st->ca);
	} else if (delta > gamma || (delta == gamma && !cfg->strict_gamma)) {
		/* Table 1 / prose: Δ no smaller than γ (the pseudo-code's Δ > γ with strict_gamma). */
		if (st->status == 0) {
			/* Slow down: halve incr; at 1, leave slow start at the next round. */
			st->incr = st->incr / 2;
			if (st->incr <= 1) {
				st->incr = 1;
				ca->tp->snd_ssthresh = 2;
				SET_HINT(ca, "gallop-gamma");
				st->finish_in_ca = 1;
				/* This round only adds incr; Vegas's rule starts at the next one. */
				vegas_ca_hold(&st->ca);
			}
			/* Prose and Table 1: status 1. */
			st->status = 1;
		} else {
			/* Second consecutive round in [γ, β): do not halve again yet. */
			st->status = 0;
		}
		st->pending_q16 += (__u64)st->incr << FRAC_BITS;
	} else {
		st->pending_q16 += (__u64)st->incr << FRAC_BITS;
		if (((__u64)st->incr << FRAC_BITS) < st->maxincr_q16)
			st->incr += 1;
		st->status = 0;
	}
}

static __always_inline __u32 gallop_vegas_ssthresh(struct ca *ca, const volatile struct gallop_vegas_config *cfg,
						   struct gallop_vegas_state *st)
{
	return vegas_loss_ssthresh(ca, cfg->loss_beta);
}

static __always_inline void gallop_vegas_cong_avoid(struct ca *ca, const volatile struct gallop_vegas_config *cfg,
						    struct gallop_vegas_state *st, __u32 acked)
{
	bool use_min = cfg->round_rtt == gallop_vegas_config__round_rtt__min;
	__u32 b = vegas_meter_take(&st->meter);

	if (b != VEGAS_BOUNDARY_NONE) {
		bool in_ss = in_slow_start(ca);

		if (b == VEGAS_BOUNDARY_NEXT) {
			__u64 delta = 0;

			if (in_ss) {
				/* A round without samples: no evidence of a queue (Δ = 0); the first
				 * judged round adds incr = 0. */
				if (!vegas_meter_delta(&st->meter, cwnd_q16(ca), &st->meter.ended,
						       use_min, cfg->integer_delta, &delta))
					delta = 0;
				gallop_vegas_slow_start_round(ca, cfg, st, delta);
			} else {
				st->pending_q16 = 0;
				st->finish_in_ca = 0;
				if (st->status == 2) {
					/* §3.3: the first avoidance round after the β cut waits. */
					st->status = 0;
					vegas_ca_hold(&st->ca);
				} else {
					vegas_ca_on_round(ca, &st->ca, &st->meter.ended, &st->meter,
							  cfg->alpha, cfg->beta, use_min,
							  cfg->integer_delta);
				}
			}
		}
		st->added_q16 = 0;
	}
	if (!cwnd_limited(ca))
		return;
	if (st->pending_q16 > 0 && (in_slow_start(ca) || st->finish_in_ca)) {
		/* Smoothing (§3.2): half a segment per ACKed segment, so one extra segment goes out
		 * every second ACK instead of the round's increment as a burst. */
		__u64 step = fixed_mul((__u64)acked << FRAC_BITS, cfg->smoothing);

		if (step > st->pending_q16)
			step = st->pending_q16;
		st->pending_q16 -= step;
		if (in_slow_start(ca)) {
			__u64 w = cwnd_q16(ca);
			__u64 s = (__u64)ca->tp->snd_ssthresh << FRAC_BITS;
			__u64 room = s > w ? s - w : 0;

			if (step >= room) {
				/* Reached a configured ssthresh: slow start is over, the rest dropped. */
				step = room;
				st->pending_q16 = 0;
			}
		}
		cwnd_add_q16(ca, step);
		st->added_q16 += step;
		return;
	}
	if (!in_slow_start(ca))
		vegas_ca_grow(ca, &st->ca);
}

static __always_inline void gallop_vegas_pkts_acked(struct ca *ca, const volatile struct gallop_vegas_config *cfg,
						    struct gallop_vegas_state *st, const struct ack_sample *s)
{
	vegas_meter_on_ack(ca, &st->meter, s);
}

static __always_inline void gallop_vegas_set_state(struct ca *ca, const volatile struct gallop_vegas_config *cfg,
						   struct gallop_vegas_state *st, __u8 new_state)
{
	if (new_state == TCP_CA_Loss)
		gallop_vegas_timeout_reset(st);
}

static __always_inline void gallop_vegas_cwnd_event(struct ca *ca, const volatile struct gallop_vegas_config *cfg,
						    struct gallop_vegas_state *st, enum tcp_ca_event ev)
{
	/* Every timeout (tcp_enter_loss), also one while already in Loss. */
	if (ev == CA_EVENT_LOSS)
		gallop_vegas_timeout_reset(st);
}

CC_OPS(gallop_vegas) = {
	.init = gallop_vegas_init,
	.ssthresh = gallop_vegas_ssthresh,
	.cong_avoid = gallop_vegas_cong_avoid,
	.pkts_acked = gallop_vegas_pkts_acked,
	.set_state = gallop_vegas_set_state,
	.cwnd_event = gallop_vegas_cwnd_event,
};
