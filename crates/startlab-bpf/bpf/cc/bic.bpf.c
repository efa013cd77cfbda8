/* SPDX-License-Identifier: MIT */
/*
 * BIC-TCP, binary increase congestion control (crate startlab-core, cc::bic): Ha's
 * dissertation §5.1.1 (Fig. 5.1(a)), S_max = 32 segments per RTT (Table 5.1), standard TCP below
 * 14 segments (§5.4.4), S_min = 0.01 (Xu, Harfoush, Rhee 2004), beta = 0.8 (Linux tcp_bic.c
 * 819/1024), fast convergence as Linux tcp_bic.c.
 *
 * After a loss W_max is the window before the reduction. Each round trip the increment is
 * decided once (§5.1.1's unit) and spread evenly over the segments acknowledged in the round:
 * below W_max, half the distance to it (binary search), at most S_max, and W_max itself once
 * the half-step falls below S_min; past W_max the mirror image (max probing), between S_min and
 * S_max; one segment per round below low_window; S_max while W_max is unknown. A round ends when
 * the segments in flight at its start have been delivered (tp->delivered, SACKed segments
 * included). Slow start is the controller's own: one segment per ACK ("acks", Linux 2.6.23,
 * RFC 5681 §3.1) or per acknowledged segment ("segments", RFC 3465 without limit).
 *
 * The search (struct bic_core, bic_core_*) is shared with BLAST (cc/blast.bpf.c), which grows
 * with it inside and outside fast recovery and cuts with it on congestion losses.
 *
 * Differs from the Rust model:
 * - The search computes in segments x 2^32 (W_max, the round's base, increment and last window,
 *   ssthresh; the model: f64); S_min and the other parameters are the configuration's Q32.32
 *   values, the divisor is applied as search_divisor x 2^16 (and search_divisor - 1 x 2^16; if
 *   that rounds to 0, max probing adds S_max). cwnd itself is snd_cwnd with a fraction of 2^-16
 *   (startlab.h); the port keeps the exact window it last wrote (bic_core.cwnd_x) and uses it
 *   while snd_cwnd and that fraction still hold it. 2^-16 was not enough: max probing doubles
 *   its distance from W_max every round, and any error in W_max or the window with it, so
 *   truncations of 2^-16 grew to 0.01-0.06 segments within a dozen rounds (seen: 57.995 where
 *   the model had 58.0004) and the window crossed whole segments at other ACKs than the model's.
 *   Windows must stay below 65536 segments (2^48 in these units).
 * - ssthresh is whole segments (snd_ssthresh), e.g. 0.8 x 101 = 80.8 gives 80; the port keeps
 *   the fraction beside it (struct bic_ssthresh) and, when recovery ends with the kernel's
 *   cwnd = ssthresh (tcp_end_cwnd_reduction, after set_state), adds it to cwnd at the next
 *   cong_avoid or ssthresh (both on the same ACK), so the window continues from the model's
 *   fractional value.
 *   Without this, max probing near W_max (increments from S_min = 0.01 per RTT) would be
 *   truncated away at every recovery.
 * - Slow start lasts while cwnd < ssthresh with their fractions, as in the model: after a
 *   timeout in fast recovery (ssthresh 39.2, snd_ssthresh 39) the window grows to 39.2 before
 *   congestion avoidance; Linux tcp_in_slow_start (snd_cwnd < snd_ssthresh) would stop at 39
 *   and start BIC's round from there, 0.2 below the model (seen: 0.9 segments apart at 674).
 *   The kernel's own tcp_is_cwnd_limited still compares the whole numbers.
 * - Loss recovery is Linux's (SACK, RACK-TLP, PRR: tcp_cwnd_reduction sets cwnd on every ACK of
 *   the recovery, tcp_end_cwnd_reduction sets cwnd = ssthresh when it ends); the model's sender
 *   sets cwnd = ssthresh at once (RFC 6675). On the ACK that ends recovery Linux calls
 *   cong_avoid (tcp_cong_control runs after the state is Open again); the model's sender does
 *   not.
 * - `acked` in cong_avoid is Linux's newly delivered count (tcp_newly_delivered), which the
 *   model reproduces with counting::NewlyDelivered; pkts_acked has nothing to record.
 * - Round ends compare tp->delivered (32 bits, modulo 2^32 as Linux after()) with the model's
 *   64-bit count; in_flight is tcp_packets_in_flight, whose lost_out may not yet include losses
 *   RACK marks later on the same ACK.
 * - set_state: Linux calls it from tcp_set_ca_state even when the state does not change; the
 *   model's sender only on a change. A call with the same state is ignored, except Loss, which
 *   always forgets the search (Linux asks ssthresh again on a timeout in Loss once the previous
 *   retransmission was acknowledged, tcp_enter_loss; the model's sender does not; the reset
 *   makes that event a timeout like any other).
 * - undo_cwnd is Linux tcp_reno_undo_cwnd, as the model's default; W_max is not restored
 *   (nor in the model). Linux undoes spurious recoveries (DSACK, timestamps) by default; the
 *   simulator only with tcp.undo = true (default false), so undos happen in one world only.
 */

/* Slow-start counting (crate startlab-core, counting::SsCounting). */
enum bic_config__ss_counting {
	bic_config__ss_counting__segments,
	bic_config__ss_counting__acks,
};

struct bic_config {
	fixed_t beta;           /* window multiplier on a loss (Linux tcp_bic.c 819/1024) */
	fixed_t s_max;          /* largest increment per RTT, segments (Table 5.1) */
	fixed_t s_min;          /* smallest increment per RTT, segments (Xu et al. 2004) */
	fixed_t low_window;     /* standard TCP below this window, segments (§5.4.4) */
	fixed_t search_divisor; /* binary search goes 1/divisor of the way to W_max */
	flag_t fast_convergence;
	enum bic_config__ss_counting ss_counting;
};

/* The search computes with windows in segments x 2^32 (a "q32", below 2^48: windows under
 * 65536 segments); snd_cwnd keeps them to 2^-16 (startlab.h cwnd_q16). */
#define BIC_Q32_PER_Q16 16

/* The search's parameters in the units it computes with, from either config (BIC or BLAST). */
struct bic_params {
	fixed_t beta;      /* Q32.32 */
	fixed_t fc_factor; /* (1 + beta) / 2, Q32.32 */
	__u64 s_max;       /* segments x 2^32 */
	__u64 s_min;       /* segments x 2^32 */
	__u64 low_window;  /* segments x 2^32 */
	__u64 div;         /* search_divisor x 2^16 */
	__u64 div1;        /* (search_divisor - 1) x 2^16 */
	bool fast_convergence;
	bool ss_segments;  /* slow start counts segments, not ACKs */
};

/* One round trip of growth: from `base`, `inc` spread over `segments` acknowledged segments. */
struct bic_round {
	__u64 base;          /* segments x 2^32 */
	__u64 inc;           /* segments x 2^32 */
	__u64 last;          /* the window this round last wrote, segments x 2^32 */
	__u32 end_delivered; /* the round ends once tp->delivered passes this */
	__u32 segments;
	__u32 acked;
	__u32 valid;         /* 0: the next ACK starts a round (the model's `round: None`) */
};

/* BicCore: the window search on a window held by the caller. */
struct bic_core {
	__u64 w_max;  /* segments x 2^32 (Linux last_max_cwnd); 0 before the first loss */
	__u64 cwnd_x; /* cwnd as this program last wrote it, segments x 2^32 (bic_cwnd_get) */
	struct bic_round round;
};

/* ssthresh with the fraction of a segment the model keeps (snd_ssthresh holds whole segments). */
struct bic_ssthresh {
	__u64 q32;     /* segments x 2^32; valid while its integer part equals snd_ssthresh */
	__u32 pending; /* recovery ended: the fraction goes beside cwnd = ssthresh */
};

struct bic_state {
	struct bic_core core;
	struct bic_ssthresh ss;
};

/* v x q for a window v (segments x 2^32, below 2^48) and a factor q in [0, 1) (Q32.32): split so
 * that nothing overflows (startlab.h fixed_mul needs v < 2^32). */
static __always_inline __u64 bic_mul(__u64 v, fixed_t q)
{
	__u64 ql = (__u64)q & 0xffffffffULL;

	return (v >> 32) * ql + (((v & 0xffffffffULL) * ql) >> 32);
}

/* a x n / d for n <= d: without overflow, as (a / d) n + (a mod d) n / d. */
static __always_inline __u64 bic_scale(__u64 a, __u32 n, __u32 d)
{
	return (a / d) * n + ((a % d) * n) / d;
}

static __always_inline void bic_params_set(struct bic_params *p, fixed_t beta, fixed_t s_max,
					   fixed_t s_min, fixed_t low_window, fixed_t divisor,
					   flag_t fast_convergence, bool ss_segments)
{
	p->beta = beta;
	p->fc_factor = (fixed_t)(((__u64)FIXED_ONE + (__u64)beta) >> 1);
	p->s_max = (__u64)s_max;
	p->s_min = (__u64)s_min;
	p->low_window = (__u64)low_window;
	p->div = (__u64)divisor >> 16;
	p->div1 = divisor > FIXED_ONE ? (__u64)(divisor - FIXED_ONE) >> 16 : 0;
	p->fast_convergence = fast_convergence;
	p->ss_segments = ss_segments;
}

static __always_inline void bic_params_of(struct bic_params *p, const volatile struct bic_config *cfg)
{
	bic_params_set(p, cfg->beta, cfg->s_max, cfg->s_min, cfg->low_window, cfg->search_divisor,
		       cfg->fast_convergence, cfg->ss_counting == bic_config__ss_counting__segments);
}

/* Forget everything (after a timeout, as Linux bictcp_reset): BicCore::reset. */
static __always_inline void bic_core_reset(struct bic_core *c)
{
	c->w_max = 0;
	c->round.valid = 0;
}

/* The next ACK starts a new round (the window was just set from outside). */
static __always_inline void bic_core_restart_round(struct bic_core *c)
{
	c->round.valid = 0;
}

/* The increment for one round trip that starts at window w (§5.1.1), segments x 2^32. */
static __always_inline __u64 bic_core_round_increment(const struct bic_params *p,
						      const struct bic_core *c, __u64 w)
{
	__u64 step;

	/* TCP mode (§5.4.4): standard additive increase, one segment per round trip. */
	if (w < p->low_window)
		return FIXED_ONE;
	/* W_max unknown (no loss yet, or forgotten after a timeout): S_max, as Linux with
	 * last_max_cwnd = 0. */
	if (c->w_max == 0)
		return p->s_max;
	if (w < c->w_max) {
		/* Binary search: towards the midpoint of W_min (the current window) and W_max. */
		step = p->div ? ((c->w_max - w) << 16) / p->div : 0;
		/* "until the window increment is less than S_min, at which point the window is
		 * set to the current maximum". */
		if (step < p->s_min)
			return c->w_max - w;
		/* Additive increase while the midpoint is more than S_max away. */
		return step < p->s_max ? step : p->s_max;
	}
	/* Max probing: the mirror image, slow at W_max, then additive increase by S_max. */
	step = p->div1 ? ((w - c->w_max) << 16) / p->div1 : p->s_max;
	if (step < p->s_min)
		step = p->s_min;
	return step < p->s_max ? step : p->s_max;
}

/* Grows window *w (segments x 2^32) for `acked` newly delivered segments; `delivered` and
 * `in_flight` are the sender's after this ACK and delimit the round trip (BicCore::grow). */
static __always_inline void bic_core_grow(const struct bic_params *p, struct bic_core *c, __u64 *w,
					  __u32 delivered, __u32 in_flight, __u32 acked)
{
	struct bic_round *r = &c->round;
	__u32 n;

	if (!acked)
		return;
	if (!r->valid || seq_after(delivered, r->end_delivered) || *w != r->last) {
		/* The segments acknowledged in this round: this ACK's and those in flight. */
		__u32 segments = in_flight + acked;

		r->end_delivered = delivered + in_flight;
		r->base = *w;
		r->inc = bic_core_round_increment(p, c, *w);
		r->segments = segments ? segments : 1;
		r->acked = 0;
		r->last = *w;
		r->valid = 1;
	}
	r->acked += acked;
	n = r->acked < r->segments ? r->acked : r->segments;
	*w = r->base + bic_scale(r->inc, n, r->segments);
	r->last = *w;
}

/* The window after a congestion loss at cwnd, segments x 2^32 (BicCore::decreased). */
static __always_inline __u64 bic_core_decreased(const struct bic_params *p, __u64 cwnd)
{
	__u64 w;

	if (cwnd < p->low_window)
		w = cwnd / 2; /* TCP mode: halve */
	else
		w = bic_mul(cwnd, p->beta);
	return w > 2 * FIXED_ONE ? w : 2 * FIXED_ONE;
}

/* A congestion loss at window cwnd: records W_max, returns the new ssthresh (segments x 2^32). */
static __always_inline __u64 bic_core_on_loss(const struct bic_params *p, struct bic_core *c,
					      __u64 cwnd)
{
	c->round.valid = 0;
	/* Fast convergence: W_max <- (W_max + W_min) / 2 with W_max = cwnd, W_min = beta cwnd. */
	if (p->fast_convergence && cwnd < c->w_max)
		c->w_max = bic_mul(cwnd, p->fc_factor);
	else
		c->w_max = cwnd;
	return bic_core_decreased(p, cwnd);
}

/* ---- cwnd and ssthresh with the model's fractions ------------------------------------------ */

/* ssthresh, segments x 2^32, without updating the kept value: the kept fraction while
 * snd_ssthresh still holds its integer. (in_startup runs after the ssthresh hook too, before the
 * kernel has written the returned value into snd_ssthresh.) */
static __always_inline __u64 bic_ssthresh_peek(struct ca *ca, const struct bic_ssthresh *ss)
{
	if ((ss->q32 >> 32) != ca->tp->snd_ssthresh)
		return (__u64)ca->tp->snd_ssthresh << 32;
	return ss->q32;
}

/* The same, forgetting a kept value snd_ssthresh no longer holds. */
static __always_inline __u64 bic_ssthresh_get(struct ca *ca, struct bic_ssthresh *ss)
{
	ss->q32 = bic_ssthresh_peek(ca, ss);
	return ss->q32;
}

/* What the ssthresh hook returns (the kernel writes snd_ssthresh with the integer part). */
static __always_inline __u32 bic_ssthresh_returned(struct bic_ssthresh *ss, __u64 s)
{
	ss->q32 = s;
	ss->pending = 0;
	return (__u32)(s >> 32);
}

static __always_inline void bic_ssthresh_set(struct ca *ca, struct bic_ssthresh *ss, __u64 s)
{
	ss->q32 = s;
	ca->tp->snd_ssthresh = (__u32)(s >> 32);
}

/* cwnd, segments x 2^32: the value this program last wrote (c->cwnd_x) or ssthresh's (recovery
 * ends with cwnd = ssthresh), if snd_cwnd and its 2^-16 fraction still hold it; otherwise what
 * they hold (something else changed the window). The search's windows stay exact to 2^-32 so:
 * max probing doubles its distance from W_max every round, and with it any error in the window,
 * so 2^-16 steps grew to hundredths of a segment within a dozen rounds. */
static __always_inline __u64 bic_cwnd_get(struct ca *ca, const struct bic_core *c,
					  const struct bic_ssthresh *ss)
{
	__u64 w = cwnd_q16(ca);

	if ((c->cwnd_x >> BIC_Q32_PER_Q16) == w)
		return c->cwnd_x;
	if ((ss->q32 >> BIC_Q32_PER_Q16) == w)
		return ss->q32;
	return w << BIC_Q32_PER_Q16;
}

static __always_inline void bic_cwnd_set(struct ca *ca, struct bic_core *c, __u64 w)
{
	__u64 q16 = w >> BIC_Q32_PER_Q16;

	cwnd_set_q16(ca, q16);
	/* cwnd_set_q16 keeps cwnd between 1 and snd_cwnd_clamp. */
	c->cwnd_x = cwnd_q16(ca) == q16 ? w : cwnd_q16(ca) << BIC_Q32_PER_Q16;
}

/* Slow start as the model judges it: cwnd < ssthresh, both with their fractions (Linux
 * tcp_in_slow_start compares the whole snd_cwnd and snd_ssthresh: at cwnd 39 with ssthresh 39.2
 * the model is still in slow start, which ends at 39.2). */
static __always_inline bool bic_in_slow_start(struct ca *ca, const struct bic_core *c,
					      const struct bic_ssthresh *ss)
{
	return bic_cwnd_get(ca, c, ss) < bic_ssthresh_peek(ca, ss);
}

/* set_state(Open/Disorder) from Recovery: tcp_end_cwnd_reduction sets cwnd = ssthresh right
 * after (when the reduction is not undone, undo_marker != 0); the model's sender sets its
 * fractional cwnd = ssthresh. The fraction is put back at the next cong_avoid. */
static __always_inline void bic_ssthresh_recovery_end(struct ca *ca, struct bic_ssthresh *ss)
{
	ss->pending = ca->tp->undo_marker != 0;
}

/* At the next cong_avoid, or ssthresh (tcp_fastretrans_alert may enter a new recovery on the
 * ACK that ended the last one, before cong_avoid): cwnd = ssthresh with the model's fraction,
 * if the kernel did set cwnd to it. */
static __always_inline void bic_ssthresh_apply(struct ca *ca, struct bic_core *c,
					       struct bic_ssthresh *ss)
{
	__u64 s;

	if (!ss->pending)
		return;
	ss->pending = 0;
	s = bic_ssthresh_get(ca, ss);
	if (cwnd_q16(ca) == ((s >> 32) << FRAC_BITS))
		bic_cwnd_set(ca, c, s);
}

/* Standard slow start from cwnd w up to ssthresh s (both segments x 2^32, with their fractions:
 * the model grows cwnd to its fractional ssthresh before congestion avoidance); returns the
 * acknowledged segments left for congestion avoidance (startlab.h grow_to_ssthresh). */
static __always_inline __u32 bic_core_slow_start(const struct bic_params *p, struct bic_core *c,
						 struct ca *ca, __u64 w, __u64 s, __u32 acked)
{
	__u32 inc = p->ss_segments ? acked : (acked < 1 ? acked : 1);
	__u64 room = s > w ? s - w : 0;
	__u32 used;

	if (((__u64)inc << 32) <= room) {
		bic_cwnd_set(ca, c, w + ((__u64)inc << 32));
		return 0;
	}
	bic_cwnd_set(ca, c, w > s ? w : s);
	used = (__u32)((room + FIXED_ONE - 1) >> 32);
	return acked > used ? acked - used : 0;
}

/* Congestion avoidance on cwnd itself (Bic::cong_avoid after the cwnd-limited check and slow
 * start). */
static __always_inline void bic_core_grow_cwnd(const struct bic_params *p, struct bic_core *c,
					       const struct bic_ssthresh *ss, struct ca *ca,
					       __u32 acked)
{
	__u64 w = bic_cwnd_get(ca, c, ss);

	bic_core_grow(p, c, &w, ca->tp->delivered, in_flight(ca), acked);
	bic_cwnd_set(ca, c, w);
	/* What snd_cwnd holds now (clamped): not a change from outside on the next ACK. */
	c->round.last = c->cwnd_x;
}

/* Slow start and congestion avoidance on one ACK (Bic::cong_avoid after the cwnd-limited
 * check; BLAST's outside fast recovery). */
static __always_inline void bic_core_cong_avoid(const struct bic_params *p, struct bic_core *c,
						struct bic_ssthresh *ss, struct ca *ca, __u32 acked)
{
	__u64 w = bic_cwnd_get(ca, c, ss), s = bic_ssthresh_get(ca, ss);

	if (w < s) {
		acked = bic_core_slow_start(p, c, ca, w, s, acked);
		if (!acked)
			return;
	}
	bic_core_grow_cwnd(p, c, ss, ca, acked);
}

/* ---- BIC-TCP as a controller --------------------------------------------------------------- */

static __always_inline void bic_init(struct ca *ca, const volatile struct bic_config *cfg,
				     struct bic_state *st)
{
	bic_core_reset(&st->core);
	st->core.cwnd_x = 0;
	st->ss.q32 = 0;
	st->ss.pending = 0;
}

static __always_inline __u32 bic_ssthresh(struct ca *ca, const volatile struct bic_config *cfg,
					  struct bic_state *st)
{
	struct bic_params p;

	bic_ssthresh_apply(ca, &st->core, &st->ss);
	bic_params_of(&p, cfg);
	return bic_ssthresh_returned(&st->ss, bic_core_on_loss(&p, &st->core,
							       bic_cwnd_get(ca, &st->core, &st->ss)));
}

static __always_inline void bic_cong_avoid(struct ca *ca, const volatile struct bic_config *cfg,
					   struct bic_state *st, __u32 acked)
{
	struct bic_params p;

	bic_ssthresh_apply(ca, &st->core, &st->ss);
	if (!cwnd_limited(ca))
		return;
	bic_params_of(&p, cfg);
	bic_core_cong_avoid(&p, &st->core, &st->ss, ca, acked);
}

/* Linux bictcp_state: a timeout forgets the search; any other change restarts the round. */
static __always_inline void bic_set_state(struct ca *ca, const volatile struct bic_config *cfg,
					  struct bic_state *st, __u8 new_state)
{
	__u8 old = inet_csk_ca_state(ca->sk);

	st->ss.pending = 0;
	if (new_state == TCP_CA_Loss) {
		bic_core_reset(&st->core);
	} else if (new_state != old) {
		if (old == TCP_CA_Recovery)
			bic_ssthresh_recovery_end(ca, &st->ss);
		bic_core_restart_round(&st->core);
	}
}

static __always_inline bool bic_in_startup(struct ca *ca, const volatile struct bic_config *cfg,
					   struct bic_state *st)
{
	return bic_in_slow_start(ca, &st->core, &st->ss);
}

CC_OPS(bic) = {
	.init = bic_init,
	.ssthresh = bic_ssthresh,
	.cong_avoid = bic_cong_avoid,
	.set_state = bic_set_state,
	.in_startup = bic_in_startup,
};
