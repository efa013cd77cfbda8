/* SPDX-License-Identifier: MIT */
/*
 * P-Start (Deng, Chen, Zhang, "A Parameterized Model of TCP Slow Start", §2.2 eq. 2 and the
 * algorithm, §2.3 eq. 3 and eq. 4) (crate startlab-core, cc::pstart). Per round, with W = cwnd
 * at the round's first ACK and S = ssthresh: W < S/2: cwnd += gamma per ACKed segment (x (gamma
 * + 1) per round, eq. 3 first case); else while S - W >= delta (or > delta, `strict_gap`, step 5
 * of the listing) the round adds G = gamma (S - W) / (gamma + 1) spread over the N segments
 * outstanding when it began (G k / N after k of them, eq. 3 second case); else cwnd = S and slow
 * start ends (eq. 3 third case). gamma is fixed or adaptive (§2.3, eq. 4); S is the configured
 * ssthresh or Hoe's packet-pair estimate (§2.3; hoe_estimator.h, shared with the hoe port).
 * At most abc_limit ACKed segments count per ACK (RFC 3465's L).
 *
 * Hooks: on_ack = PStart::on_ack (voids an approach plan under a lowered window, plans the round
 * at its first ACK, grows); pkts_acked = PStart::pkts_acked (Hoe's estimator, then the round
 * delimiter of rounds.h); set_state: Loss restarts (fresh rounds, no estimator), Recovery drops
 * the estimator and the plan; cwnd_event CA_EVENT_LOSS (tcp_enter_loss) restarts; on_loss
 * returns the controller's ssthresh; in_startup is cwnd < ssthresh.
 *
 * Differs from the Rust model:
 * - cwnd is snd_cwnd plus 2^-16 segment (startlab.h): gamma x segments, the approach's G k / N
 *   and ceil(room / gamma) are computed in that precision (truncated); gamma, delta and alpha
 *   are Q32.32. ssthresh is whole segments (snd_ssthresh): S, S/2 and S - W use that integer,
 *   and Hoe's estimate is truncated to it (hoe_estimator.h). Where the model's S has a fraction
 *   (the controller's loss response: Reno's FlightSize x 0.5 is 4.5 for a flight of 9, 4 in
 *   Linux's tcp_reno_ssthresh and in the reno port; a timeout during fast recovery keeps it, as
 *   tcp_enter_loss does not ask again), the rounds are planned against floor(S), and eq. 3 can
 *   take a different case. Example: after a timeout, at W = 2, the model doubles
 *   (2 < 4.5/2), while here 2 >= 4/2 begins an approach round (+1/2 per segment toward 4). The
 *   approach's target G, the exit gap S - W < delta and the end of slow start (at floor(S))
 *   also follow the whole S. This is inherent in whole segments: the fraction never reaches
 *   the program.
 * - The adaptive gamma (§2.3) is computed without floating point: log2 S to 2^-20 (integer part
 *   by bit count, fraction by repeated squaring), log2 5 as a Q32.32 constant, and the fifth root
 *   of eq. 4 by bisection to 2^-16. S is "infinite" (fixed gamma) at TCP_INFINITE_SSTHRESH.
 * - Rounds are delimited in bytes by snd_una / snd_nxt (rounds.h); N, the segments outstanding
 *   when a round begins, is FlightSize (snd_nxt - snd_una in whole mss_cache segments) + acked.
 * - Hoe's estimator: ACK arrival time is ca->now_us = tcp_mstamp, when the stack processes the
 *   ACK, in microseconds (see hoe_estimator.h for how that spacing differs from the simulator's
 *   exact arrival times); pkts_acked ignores ACKs that delivered nothing (tp->delivered did not
 *   grow), which Linux reports and the simulator does not.
 * - `acked` in on_ack is Linux's newly delivered count (cong_avoid's argument), as the model's.
 *   The controller calls on_ack only while Linux deems the flow cwnd-limited (in slow start
 *   cwnd < 2 x max_packets_out, controller.bpf.c); the model only asks whether the last send
 *   filled cwnd. With gamma > 1 a round wants (gamma + 1) x the window, so when the kernel has
 *   not put that much in flight (receive window, send buffer) growth stops early in the round.
 * - TCP_CA_CWR (no counterpart in the simulator) is treated as Recovery: the kernel chose an
 *   ssthresh and reduces cwnd. Linux's loss recovery sets cwnd meanwhile (PRR), not the model's.
 */
#include "hoe_estimator.h"

/* The readings of the adaptive rule's middle band (AdaptiveMiddle). */
enum pstart_config__adaptive_middle {
	pstart_config__adaptive_middle__log_of_ratio,
	pstart_config__adaptive_middle__ratio_of_log,
};

/* Which ssthresh P-Start approaches (SsthreshSource). */
enum pstart_config__ssthresh_source {
	pstart_config__ssthresh_source__configured,
	pstart_config__ssthresh_source__hoe,
};

struct pstart_config {
	fixed_t gamma;         /* acceleration (§2.3) */
	fixed_t delta;         /* exit distance, segments */
	flag_t adaptive_gamma; /* gamma from ssthresh by §2.3's rule (eq. 4) */
	fixed_t alpha;         /* alpha of the rule's middle band */
	enum pstart_config__adaptive_middle adaptive_middle;
	flag_t strict_gap;     /* approach while S - W > delta (step 5) instead of >= (eq. 3) */
	enum pstart_config__ssthresh_source ssthresh_source;
	fixed_t hoe_max_gap;   /* Hoe: largest gap of the triple, x the first RTT */
	__u32 abc_limit;       /* ACKed segments counted per ACK at most; 0: no limit */
};

enum pstart_plan {
	PSTART_PLAN_NONE = 0,
	PSTART_PLAN_EXPONENTIAL = 1, /* cwnd += gamma per ACKed segment, up to ssthresh */
	PSTART_PLAN_APPROACH = 2,    /* cwnd = start + target x min(acked, expected) / expected */
};

struct pstart_state {
	struct rounds rounds;
	struct hoe_estimator hoe;
	__u32 hoe_on;         /* Hoe's estimator still runs (Option<HoeEstimator> is Some) */
	__u32 last_delivered; /* tp->delivered at the last pkts_acked */
	__u32 new_round;
	__u32 plan;           /* enum pstart_plan */
	fixed_t gamma;        /* exponential round: gamma */
	__u64 start_q16;      /* approach round: W, segments x 2^16 */
	__u64 target_q16;     /* approach round: G, segments x 2^16 */
	__u32 expected;       /* approach round: N */
	__u32 acked;          /* approach round: segments counted so far */
};

#define PSTART_LOG2_5 9972605232LL /* log2(5) x 2^32 */

/* v x q for v < 2^48 and a Q32.32 q >= 0, truncated. */
static __always_inline __u64 pstart_mulq(__u64 v, fixed_t q)
{
	__u64 hi = (__u64)q >> 32, lo = (__u64)q & 0xffffffffULL;

	return v * hi + (v >> 32) * lo + (((v & 0xffffffffULL) * lo) >> 32);
}

/* log2(s) as Q32.32 for 1 <= s < 2^32: the integer part from the bit count, 20 bits of fraction by
 * repeated squaring of the mantissa (without branches, so the verifier follows one path). */
static __always_inline fixed_t pstart_log2(__u32 s)
{
	__u32 k = hoe_bits(s) - 1;
	__u64 y = ((__u64)s << 30) >> k; /* s / 2^k in [1, 2), Q30 */
	__u64 frac = 0, bit;
	int i;

	for (i = 0; i < 20; i++) {
		y = (y * y) >> 30;
		bit = y >> 31; /* y >= 2 */
		y >>= bit;
		frac |= bit << (31 - i);
	}
	return ((fixed_t)k << 32) + (fixed_t)frac;
}

/* The fifth root of x (segments x 2^16, x < 2^46) in segments x 2^16, by bisection. */
static __always_inline __u64 pstart_root5_q16(__u64 x)
{
	__u64 r = 0, c, p, ok;
	int b;

	for (b = 21; b >= 0; b--) {
		c = r | (1ULL << b);
		p = (c * c) >> 16;
		p = (p * c) >> 16;
		p = (p * c) >> 16;
		p = (p * c) >> 16;
		ok = ((x - p) >> 63) ^ 1; /* p <= x (both below 2^63) */
		r |= ok << b;
	}
	return r;
}

/* adaptive_gamma (§2.3) for ssthresh s (whole segments): log2 S <= 5: 1; 5 < log2 S <= 10:
 * alpha log2(S / 5) as printed, or alpha log2(S) / 5; log2 S > 10: the smallest gamma with
 * log_{gamma+1}(S/2 - delta) <= 5 (eq. 4), (S/2 - delta)^(1/5) - 1; never below 1. */
static __always_inline fixed_t pstart_adaptive_gamma(const volatile struct pstart_config *cfg,
						     __u32 s)
{
	fixed_t g, l;
	__s64 x;

	if (s <= 32) {
		g = FIXED_ONE;
	} else if (s <= 1024) {
		l = pstart_log2(s);
		if (cfg->adaptive_middle == pstart_config__adaptive_middle__log_of_ratio)
			g = (fixed_t)pstart_mulq((__u64)(l - PSTART_LOG2_5), cfg->alpha);
		else
			g = (fixed_t)(pstart_mulq((__u64)l, cfg->alpha) / 5);
	} else {
		/* S/2 - delta in segments x 2^16, at least 1. */
		x = ((__s64)s << (FRAC_BITS - 1)) - (cfg->delta >> (32 - FRAC_BITS));
		if (x < (__s64)FRAC_ONE)
			x = FRAC_ONE;
		g = ((fixed_t)pstart_root5_q16((__u64)x) << (32 - FRAC_BITS)) - FIXED_ONE;
	}
	return g > FIXED_ONE ? g : FIXED_ONE;
}

/* PStart::gamma: the adaptive gamma for a finite ssthresh, else the fixed one (never 0). */
static __always_inline fixed_t pstart_gamma(const volatile struct pstart_config *cfg, __u32 s)
{
	if (cfg->adaptive_gamma && s > 0 && s < TCP_INFINITE_SSTHRESH)
		return pstart_adaptive_gamma(cfg, s);
	return cfg->gamma > 0 ? cfg->gamma : 1;
}

/* PStart::plan: the case of eq. 3 for a round starting now; false if slow start ends. */
static __always_inline bool pstart_plan(struct ca *ca, const volatile struct pstart_config *cfg,
					struct pstart_state *st, __u32 acked)
{
	__u32 s = ca->tp->snd_ssthresh;
	__u64 w = cwnd_q16(ca), s_q16 = (__u64)s << FRAC_BITS, inv;
	fixed_t gamma = pstart_gamma(cfg, s);
	__s64 gap, delta = cfg->delta >> (32 - FRAC_BITS);
	bool go_on;

	/* Eq. 3, first case: W < S/2. */
	if (2 * w < s_q16) {
		st->plan = PSTART_PLAN_EXPONENTIAL;
		st->gamma = gamma;
		return true;
	}
	gap = (__s64)s_q16 - (__s64)w;
	/* Eq. 3 (and eq. 2, and the prose): continue while S - W >= delta; step 5 of the
	 * listing: while S - W > delta. */
	go_on = cfg->strict_gap ? gap > delta : gap >= delta;
	if (!go_on) {
		st->plan = PSTART_PLAN_NONE;
		return false;
	}
	/* Eq. 3, second case: the round adds G = gamma (S - W) / (gamma + 1), spread over the
	 * segments outstanding before this ACK. */
	st->plan = PSTART_PLAN_APPROACH;
	st->start_q16 = w;
	/* gamma / (gamma + 1) = 1 - 1 / (gamma + 1), Q32.32. */
	inv = ((1ULL << 63) / ((__u64)gamma + FIXED_ONE)) << 1;
	st->target_q16 = pstart_mulq((__u64)gap, FIXED_ONE - (fixed_t)inv);
	st->expected = flight_size(ca) + acked;
	if (st->expected < 1)
		st->expected = 1;
	st->acked = 0;
	return true;
}

/* A timeout: slow start begins again from cwnd = 1 with fresh rounds (PStart::restart). */
static __always_inline void pstart_restart(struct pstart_state *st)
{
	st->hoe_on = 0;
	rounds_reset(&st->rounds);
	st->plan = PSTART_PLAN_NONE;
	st->new_round = 0;
}

static __always_inline void pstart_init(struct ca *ca, const volatile struct pstart_config *cfg,
					struct pstart_state *st)
{
	st->hoe_on = cfg->ssthresh_source == pstart_config__ssthresh_source__hoe;
	st->last_delivered = ca->tp->delivered;
}

static __always_inline __u32 pstart_on_ack(struct ca *ca, const volatile struct pstart_config *cfg,
					   struct pstart_state *st, __u32 acked)
{
	__u64 w = cwnd_q16(ca), s_q16, inc, room, used, k, q, r, v;
	__u32 counted;

	/* A window lowered under the round's plan (a loss the hooks did not announce) voids it. */
	if (st->plan == PSTART_PLAN_APPROACH && w < st->start_q16)
		st->plan = PSTART_PLAN_NONE;
	if (st->new_round || st->plan == PSTART_PLAN_NONE) {
		st->new_round = 0;
		if (!pstart_plan(ca, cfg, st, acked)) {
			/* Eq. 3, third case: cwnd = ssthresh; slow start is over. This ACK was used. */
			s_q16 = (__u64)ca->tp->snd_ssthresh << FRAC_BITS;
			cwnd_set_q16(ca, w > s_q16 ? w : s_q16);
			return 0;
		}
	}
	/* Segments counted for this ACK: all of them, up to L (RFC 3465). */
	counted = cfg->abc_limit == 0 ? acked : (acked < cfg->abc_limit ? acked : cfg->abc_limit);
	if (st->plan == PSTART_PLAN_EXPONENTIAL) {
		/* §2.3: "cwnd increases gamma packets if one packet is successfully acked". */
		s_q16 = (__u64)ca->tp->snd_ssthresh << FRAC_BITS;
		inc = pstart_mulq((__u64)counted << FRAC_BITS, st->gamma);
		room = s_q16 > w ? s_q16 - w : 0;
		if (inc <= room) {
			cwnd_set_q16(ca, w + inc);
			return 0;
		}
		/* Eq. 3, "cwnd > ssthresh => ssthresh": stop there, give back the segments not
		 * needed to get there (ceil(room / gamma)). */
		cwnd_set_q16(ca, w > s_q16 ? w : s_q16);
		used = st->gamma > 0 ? ((room << 16) + (__u64)st->gamma - 1) / (__u64)st->gamma : counted;
		return counted > used ? counted - (__u32)used : 0;
	}
	/* Approach round: cwnd = W + G min(counted so far, N) / N (eq. 3, second case). */
	st->acked = st->acked + counted < st->acked ? ~0U : st->acked + counted;
	k = st->acked < st->expected ? st->acked : st->expected;
	q = st->target_q16 / st->expected;
	r = st->target_q16 % st->expected;
	v = st->start_q16 + q * k + r * k / st->expected;
	cwnd_set_q16(ca, w > v ? w : v);
	return 0;
}

static __always_inline void pstart_pkts_acked(struct ca *ca, const volatile struct pstart_config *cfg,
					      struct pstart_state *st, const struct ack_sample *s)
{
	__u32 acked = hoe_newly_delivered(ca, &st->last_delivered);
	__u8 state;

	/* The simulator calls pkts_acked only for ACKs that deliver data. */
	if (!acked)
		return;
	if (cfg->ssthresh_source == pstart_config__ssthresh_source__hoe && st->hoe_on &&
	    hoe_estimator_on_ack(&st->hoe, cfg->hoe_max_gap, acked, s->rtt_us, ca->now_us)) {
		st->hoe_on = 0;
		/* §2.3: "ssthresh can be gained by the method of J. Hoe", once, in the first slow
		 * start. */
		state = inet_csk_ca_state(ca->sk);
		if ((state == TCP_CA_Open || state == TCP_CA_Disorder) && in_slow_start(ca)) {
			hoe_apply_estimate(ca, st->hoe.estimate_q16);
			/* A new ssthresh: choose the case again at the next ACK. */
			st->plan = PSTART_PLAN_NONE;
		}
	}
	if (rounds_on_ack(ca, &st->rounds) != ROUND_SAME)
		st->new_round = 1;
}

static __always_inline void pstart_set_state(struct ca *ca, const volatile struct pstart_config *cfg,
					     struct pstart_state *st, __u8 new_state)
{
	if (new_state == TCP_CA_Loss) {
		pstart_restart(st);
	} else if (new_state == TCP_CA_Recovery || new_state == TCP_CA_CWR) {
		/* Hoe's estimate sets the initial ssthresh only. */
		st->hoe_on = 0;
		st->plan = PSTART_PLAN_NONE;
	}
}

static __always_inline void pstart_cwnd_event(struct ca *ca, const volatile struct pstart_config *cfg,
					      struct pstart_state *st, enum tcp_ca_event ev)
{
	/* Every timeout (tcp_enter_loss), also one while already in Loss. */
	if (ev == CA_EVENT_LOSS)
		pstart_restart(st);
}

STARTUP_OPS(pstart) = {
	.init = pstart_init,
	.on_ack = pstart_on_ack,
	.pkts_acked = pstart_pkts_acked,
	.set_state = pstart_set_state,
	.cwnd_event = pstart_cwnd_event,
};
