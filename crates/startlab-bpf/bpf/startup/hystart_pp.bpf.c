/* SPDX-License-Identifier: MIT */
/*
 * HyStart++ (RFC 9406) (crate startlab-core, cc::hystart_pp, simulator name "hystart++"): slow
 * start that tracks the minimum RTT of each round (§4.2), moves to Conservative Slow Start (CSS)
 * when it rises by RttThresh = clamp(lastRoundMinRTT / MIN_RTT_DIVISOR, MIN_RTT_THRESH,
 * MAX_RTT_THRESH), back to slow start if the RTT falls below the CSS baseline, and to congestion
 * avoidance (ssthresh = cwnd, exit "hystart++") after CSS_ROUNDS rounds of CSS. Growth per ACK
 * is min(acked, L) segments (L infinite when paced), divided by CSS_GROWTH_DIVISOR in CSS. The
 * constants are those of §4.3.
 *
 * Hooks: init = windowEnd <- snd_nxt; pkts_acked = the round boundary (rounds.h, started at init
 * so that the first ACK past windowEnd starts a round, as in the model), the CSS round count and
 * the RTT test (§4.2); on_ack = the growth (§4.2), not past ssthresh, nothing left for congestion
 * avoidance (the model returns 0); set_state(Recovery or Loss) = HyStart++ done (§4.2: a loss ends
 * it; after a timeout slow start is standard, §4.3); on_loss, cwnd_event: nothing; in_startup =
 * cwnd < ssthresh.
 *
 * Differs from the Rust model:
 * - Times are microseconds (sample->rtt_us), the model's nanoseconds; RttThresh divides a
 *   microsecond RTT by the Q32.32 divisor (truncated to 1 us); MIN/MAX_RTT_THRESH are usec_t.
 * - RTT samples come only from pkts_acked's sample->rtt_us (negative = none).
 * - Round ends compare byte sequence numbers modulo 2^32 (rounds.h), the model segment numbers.
 * - cwnd is snd_cwnd plus a 2^-16 fraction (startlab.h): the CSS increment n / CSS_GROWTH_DIVISOR
 *   is truncated to 2^-16 segment; ssthresh = cwnd is whole segments (snd_ssthresh = snd_cwnd).
 * - `acked` is Linux's newly delivered count, the model's the segments the ACK covered (the same
 *   unless SACK delivered some of them earlier).
 * - "Paced" is sk_pacing_status != SK_PACING_NONE, the model's tcb.pacing_rate set.
 * - The kernel also enters CWR (ECN) and Disorder; only Recovery and Loss end HyStart++, as in
 *   the model (which has no CWR). Linux's own recovery (SACK/RACK/PRR) decides when they come.
 */

struct hystart_pp_config {
	usec_t min_rtt_thresh_ms;  /* MIN_RTT_THRESH, us */
	usec_t max_rtt_thresh_ms;  /* MAX_RTT_THRESH, us */
	fixed_t min_rtt_divisor;   /* MIN_RTT_DIVISOR */
	__u32 n_rtt_sample;        /* N_RTT_SAMPLE */
	fixed_t css_growth_divisor; /* CSS_GROWTH_DIVISOR */
	__u32 css_rounds;          /* CSS_ROUNDS */
	__u32 l_limit;             /* L, segments */
};

enum {
	HYSTART_PP_SLOW_START = 0,
	HYSTART_PP_CSS = 1,
	HYSTART_PP_DONE = 2,
};

struct hystart_pp_state {
	struct rounds round;        /* windowEnd */
	__u32 mode;                 /* HYSTART_PP_* */
	__u32 css_baseline;         /* cssBaselineMinRtt, us */
	__u32 css_rounds;           /* rounds of CSS so far */
	__u32 last_round_min_rtt;   /* us */
	__u32 current_round_min_rtt; /* us */
	__u32 has_last;
	__u32 has_current;
	__u32 rtt_sample_count;
	__u32 growth_in_css;        /* the mode this ACK grows by (judged before its RTT sample) */
};

static __always_inline void hystart_pp_init(struct ca *ca, const volatile struct hystart_pp_config *cfg,
					    struct hystart_pp_state *st)
{
	/* windowEnd <- the highest sequence sent (RFC 9406 §4.2). */
	st->round.end = ca->tp->snd_nxt;
	st->round.started = 1;
	st->mode = HYSTART_PP_SLOW_START;
}

/* RttThresh = max(MIN_RTT_THRESH, min(lastRoundMinRTT / MIN_RTT_DIVISOR, MAX_RTT_THRESH)). */
static __always_inline __u64 hystart_pp_rtt_thresh(const volatile struct hystart_pp_config *cfg, __u32 last)
{
	__u64 d = (__u64)cfg->min_rtt_divisor;
	__u64 x = d ? ((__u64)last << 32) / d : last;

	if (x > cfg->max_rtt_thresh_ms)
		x = cfg->max_rtt_thresh_ms;
	if (x < cfg->min_rtt_thresh_ms)
		x = cfg->min_rtt_thresh_ms;
	return x;
}

/* §4.2: a new round; rounds_on_ack has set windowEnd to snd_nxt. */
static __always_inline void hystart_pp_start_round(struct hystart_pp_state *st)
{
	st->last_round_min_rtt = st->current_round_min_rtt;
	st->has_last = st->has_current;
	st->has_current = 0;
	st->rtt_sample_count = 0;
}

static __always_inline void hystart_pp_pkts_acked(struct ca *ca, const volatile struct hystart_pp_config *cfg,
						  struct hystart_pp_state *st, const struct ack_sample *s)
{
	__s32 rtt_s;
	__u32 rtt;

	if (st->mode == HYSTART_PP_DONE || !in_slow_start(ca)) {
		/* Outside HyStart++ a later slow start (after a timeout) is standard (§4.3). */
		st->growth_in_css = 0;
		return;
	}
	/* A round ends when the ACK passes windowEnd (§4.2). */
	if (rounds_on_ack(ca, &st->round) != ROUND_SAME) {
		hystart_pp_start_round(st);
		if (st->mode == HYSTART_PP_CSS) {
			st->css_rounds++;
			if (st->css_rounds >= cfg->css_rounds) {
				/* CSS_ROUNDS rounds of CSS: enter congestion avoidance. */
				st->mode = HYSTART_PP_DONE;
				st->growth_in_css = 0;
				ca->tp->snd_ssthresh = ca->tp->snd_cwnd;
				SET_HINT(ca, "hystart++");
				return;
			}
		}
	}
	st->growth_in_css = st->mode == HYSTART_PP_CSS;
	rtt_s = s->rtt_us;
	if (rtt_s < 0)
		return;
	rtt = (__u32)rtt_s;
	if (!st->has_current || rtt < st->current_round_min_rtt)
		st->current_round_min_rtt = rtt;
	st->has_current = 1;
	st->rtt_sample_count++;
	if (st->rtt_sample_count < cfg->n_rtt_sample)
		return;
	if (!st->has_last)
		return;
	if (st->mode == HYSTART_PP_SLOW_START) {
		/* currentRoundMinRTT >= lastRoundMinRTT + RttThresh: enter CSS. */
		if (st->current_round_min_rtt >= st->last_round_min_rtt +
							  hystart_pp_rtt_thresh(cfg, st->last_round_min_rtt)) {
			st->mode = HYSTART_PP_CSS;
			st->css_baseline = st->current_round_min_rtt;
			st->css_rounds = 0;
		}
	} else if (st->mode == HYSTART_PP_CSS && st->current_round_min_rtt < st->css_baseline) {
		/* §4.2: a lower RTT in CSS means the rise was spurious: back to slow start. */
		st->mode = HYSTART_PP_SLOW_START;
	}
}

/* §4.2: cwnd += min(acked, L) in slow start, divided by CSS_GROWTH_DIVISOR in CSS. */
static __always_inline __u32 hystart_pp_on_ack(struct ca *ca, const volatile struct hystart_pp_config *cfg,
					       struct hystart_pp_state *st, __u32 acked)
{
	__u64 n = acked, w, s, inc, d;

	/* L applies unless paced. */
	if (ca->sk->sk_pacing_status == SK_PACING_NONE && n > cfg->l_limit)
		n = cfg->l_limit;
	if (st->growth_in_css) {
		d = (__u64)cfg->css_growth_divisor >> (32 - FRAC_BITS);
		inc = d ? (n << 32) / d : n << FRAC_BITS;
	} else {
		inc = n << FRAC_BITS;
	}
	w = cwnd_q16(ca);
	s = (__u64)ca->tp->snd_ssthresh << FRAC_BITS;
	if (w + inc >= s) {
		cwnd_set_q16(ca, w > s ? w : s);
		return 0;
	}
	cwnd_set_q16(ca, w + inc);
	return 0;
}

/* A loss in slow start or CSS ends HyStart++ (§4.2); after a timeout slow start is standard. */
static __always_inline void hystart_pp_set_state(struct ca *ca, const volatile struct hystart_pp_config *cfg,
						 struct hystart_pp_state *st, __u8 new_state)
{
	if (new_state == TCP_CA_Recovery || new_state == TCP_CA_Loss) {
		st->mode = HYSTART_PP_DONE;
		st->growth_in_css = 0;
	}
}

STARTUP_OPS(hystart_pp) = {
	.init = hystart_pp_init,
	.on_ack = hystart_pp_on_ack,
	.pkts_acked = hystart_pp_pkts_acked,
	.set_state = hystart_pp_set_state,
};
