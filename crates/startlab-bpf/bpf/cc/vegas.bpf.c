/* SPDX-License-Identifier: MIT */
/*
 * TCP Vegas: congestion avoidance on the estimated backlog Δ = W (D - BaseRTT) / D (Ho, Chan,
 * Chen, "An Enhanced Slow-Start Mechanism for TCP Vegas", §2 eq. (1), after Brakmo and
 * Peterson 1995), +1 segment per round while Δ < alpha, -1 at once while Δ > beta; and its own
 * slow start, which doubles cwnd only every other round and ends when Δ > gamma with cwnd cut
 * by 1/8 (Ho et al. §2), the check made at the start of the round that would double cwnd, with
 * the RTT of the hold round just ended (Wang et al. 2004 §III.D) (crate startlab-core,
 * cc::vegas, name "vegas"). The meter (BaseRTT, per-round RTT statistics), the slow-start core
 * and the avoidance core are shared with startup/vegas_ss.bpf.c ("vegas-ss") and
 * cc/gallop_vegas.bpf.c, which include this file. Rounds come from rounds.h (cc::rounds), as
 * Linux tcp_vegas.c delimits them with beg_snd_nxt.
 *
 * Differs from the Rust model:
 * - RTT samples are the kernel's (ack_sample.rtt_us from pkts_acked, microseconds, taken from the
 *   newest segment the ACK delivers, cumulatively or by SACK; negative = none). The model's are
 *   exact durations. The receiver is Linux's (delayed ACKs, quick-ACK mode, GRO stretch ACKs).
 * - "An ACK that delivers data" (when the model calls pkts_acked) is here an ACK on which
 *   tp->delivered advanced: Linux calls pkts_acked on every ACK tcp_clean_rtx_queue sees,
 *   duplicates included; those that delivered nothing are ignored.
 * - Δ is computed in integers: the round's mean RTT is not rounded to a microsecond but used as
 *   sum/count (Δ = W (sum - BaseRTT count) / sum), W is cwnd in 2^-16 segments, and Δ is Q32.32
 *   rounded down (error below 2^-32 segment); if W x (D - BaseRTT) would pass 2^64 both RTT
 *   terms lose low bits first. With round_rtt = "min" D is the round's smallest sample in µs
 *   (rounds.h keeps 0 for "none", so a 0 µs sample would not be taken as the minimum).
 * - The 1/8 cut is computed on cwnd in 2^-16 segments (w - w/8 rounded down to 2^-16); the
 *   model's ssthresh = cwnd (fractional) becomes snd_ssthresh = snd_cwnd (whole segments, the
 *   fraction dropped, so that cwnd >= ssthresh as in the model). Likewise the avoidance
 *   decrease's ssthresh = min(ssthresh, cwnd) uses snd_cwnd.
 * - Slow-start growth is +1 segment per cong_avoid call and avoidance growth 1/cwnd per call, as
 *   the model counts per ACK; Linux calls cong_avoid once per ACK that advances snd_una outside
 *   CWR/Recovery (tcp_may_raise_cwnd), so stretch ACKs (GRO, delayed ACKs) grow cwnd less than
 *   one ACK per segment would.
 * - Loss recovery is Linux's own (SACK, RACK-TLP, PRR): the controller chooses only ssthresh
 *   (FlightSize = snd_nxt - snd_una in whole segments, x loss_beta, truncated). A timeout
 *   restarts the rounds on CA_EVENT_LOSS and on set_state(TCP_CA_Loss), as the model does
 *   (Linux raises CA_EVENT_LOSS only when tcp_enter_loss recomputes ssthresh; set_state comes
 *   on every timeout). The model's ssthresh may keep a fraction (0.75 x FlightSize); here it is
 *   truncated, so a slow start toward it ends at floor(S). When a hold round begins at
 *   cwnd = floor(S) < S, the model holds, then raises cwnd to S. Here
 *   snd_cwnd >= snd_ssthresh already, so that round is congestion avoidance
 *   (startup/vegas_ss.bpf.c has the same difference).
 * - cwnd_limited is Linux's tcp_is_cwnd_limited (startlab.h), the model's its sender's flag.
 */
#ifndef STARTLAB_CC_VEGAS
#define STARTLAB_CC_VEGAS

/* ---- the meter (cc::vegas::VegasMeter) -------------------------------------------------- */

/* How the last round ended (cc::vegas::Boundary); kept until taken by cong_avoid / on_ack. */
enum vegas_boundary {
	VEGAS_BOUNDARY_NONE = 0,
	VEGAS_BOUNDARY_FIRST = 1, /* the first round after a (re)start begins */
	VEGAS_BOUNDARY_NEXT = 2,  /* a round ended, its samples in `ended` */
};

struct vegas_meter {
	struct rounds rounds;
	struct rtt_stats current; /* the samples of the round under way */
	struct rtt_stats ended;   /* the samples of the round the pending boundary ended */
	__u32 boundary;           /* enum vegas_boundary */
	__u32 has_base;
	__u32 base_rtt_us;        /* BaseRTT: the smallest RTT ever seen */
	__u32 last_delivered;     /* tp->delivered at the last pkts_acked */
};

static __always_inline void vegas_meter_init(struct ca *ca, struct vegas_meter *m)
{
	m->last_delivered = ca->tp->delivered;
}

/* VegasMeter::on_ack, on every ACK that delivers data (pkts_acked). The ACK's own sample goes
 * to the round it begins. */
static __always_inline void vegas_meter_on_ack(struct ca *ca, struct vegas_meter *m,
					       const struct ack_sample *s)
{
	__u32 delivered = ca->tp->delivered;
	__s32 rtt_us = s->rtt_us;
	int ev;

	/* Linux calls pkts_acked for duplicate ACKs too: only those that delivered count. */
	if (delivered == m->last_delivered)
		return;
	m->last_delivered = delivered;
	ev = rounds_on_ack(ca, &m->rounds);
	if (ev == ROUND_FIRST) {
		__builtin_memset(&m->current, 0, sizeof(m->current));
		m->boundary = VEGAS_BOUNDARY_FIRST;
	} else if (ev == ROUND_NEXT) {
		m->ended = m->current;
		__builtin_memset(&m->current, 0, sizeof(m->current));
		m->boundary = VEGAS_BOUNDARY_NEXT;
	}
	if (rtt_us >= 0) {
		rtt_stats_add(&m->current, (__u32)rtt_us);
		if (!m->has_base || (__u32)rtt_us < m->base_rtt_us) {
			m->base_rtt_us = (__u32)rtt_us;
			m->has_base = 1;
		}
	}
}

/* VegasMeter::take_boundary: the round that ended at the last ACK, once. */
static __always_inline __u32 vegas_meter_take(struct vegas_meter *m)
{
	__u32 b = m->boundary;

	m->boundary = VEGAS_BOUNDARY_NONE;
	return b;
}

/* VegasMeter::restart (after a timeout): fresh rounds, BaseRTT kept. */
static __always_inline void vegas_meter_restart(struct vegas_meter *m)
{
	rounds_reset(&m->rounds);
	__builtin_memset(&m->current, 0, sizeof(m->current));
	m->boundary = VEGAS_BOUNDARY_NONE;
}

/* Bits needed for x (0 for 0), without a loop. */
static __always_inline __u32 vegas_bits(__u64 x)
{
	__u32 n = 0;

	if (x >> 32) { n += 32; x >>= 32; }
	if (x >> 16) { n += 16; x >>= 16; }
	if (x >> 8) { n += 8; x >>= 8; }
	if (x >> 4) { n += 4; x >>= 4; }
	if (x >> 2) { n += 2; x >>= 2; }
	if (x >> 1) { n += 1; x >>= 1; }
	return n + (__u32)x;
}

/* Eq. (1) of Ho et al. (cc::vegas::backlog): Δ = W (D - BaseRTT) / D, not below zero, for W in
 * 2^-16 segments and D = num / count (so that the mean is not rounded): Δ = W (num - BaseRTT
 * count) / num, as Q32.32. */
static __always_inline __u64 vegas_backlog_q32(__u64 w_q16, __u64 num, __u64 base)
{
	__u64 diff, prod, q, r;
	__u32 bits;

	if (num == 0 || num <= base)
		return 0;
	diff = num - base;
	bits = vegas_bits(w_q16) + vegas_bits(diff);
	if (bits > 63) {
		/* Keep W x (D - BaseRTT) below 2^64: drop low bits of both RTT terms. */
		__u32 sh = bits - 63;

		diff >>= sh;
		num >>= sh;
		if (num == 0)
			return 0;
	}
	prod = w_q16 * diff;
	q = prod / num;
	r = prod % num;
	/* Q16 x 2^16 = Q32; the remainder gives the low 16 bits (r < num < 2^48). */
	return (q << 16) + ((r << 16) / num);
}

/* VegasMeter::delta: Δ for window w over a finished round; false without samples (or BaseRTT).
 * With `integer`, rounded to the nearest whole segment as ns-2 does (int(x + 0.5)). */
static __always_inline bool vegas_meter_delta(const struct vegas_meter *m, __u64 w_q16,
					      const struct rtt_stats *stats, bool use_min,
					      bool integer, __u64 *delta)
{
	__u64 d;

	if (!stats->count || !m->has_base)
		return false;
	if (use_min)
		d = vegas_backlog_q32(w_q16, stats->min_us, m->base_rtt_us);
	else
		d = vegas_backlog_q32(w_q16, stats->sum_us, (__u64)m->base_rtt_us * stats->count);
	if (integer)
		d = ((d + (1ULL << 31)) >> 32) << 32;
	*delta = d;
	return true;
}

/* ---- slow start (cc::vegas::VegasSlowStartCore) ------------------------------------------- */

enum vegas_growing {
	VEGAS_GROWING_NONE = 0, /* before the first round */
	VEGAS_GROWING_YES = 1,  /* a growth round: +1 per ACK */
	VEGAS_GROWING_HOLD = 2, /* a hold round: cwnd fixed, its RTT measured */
};

struct vegas_slow_core {
	__u32 growing; /* enum vegas_growing */
};

/* At a round boundary while in slow start; true if slow start ended here. */
static __always_inline bool vegas_slow_on_boundary(struct ca *ca, struct vegas_slow_core *c,
						   __u32 boundary, const struct vegas_meter *m,
						   fixed_t gamma, bool use_min, bool integer,
						   bool first_round_grows)
{
	__u64 delta, w, cut, low;

	if (c->growing == VEGAS_GROWING_NONE || boundary == VEGAS_BOUNDARY_FIRST) {
		/* The first round: nothing measured yet; it grows unless told otherwise. */
		c->growing = first_round_grows ? VEGAS_GROWING_YES : VEGAS_GROWING_HOLD;
		return false;
	}
	if (c->growing == VEGAS_GROWING_YES) {
		c->growing = VEGAS_GROWING_HOLD;
		return false;
	}
	/* Wang et al. 2004 §III.D: judged at the start of the doubling round, with the RTT of the
	 * hold round that just ended. */
	w = cwnd_q16(ca);
	/* Ho et al. §2: Δ > γ ends slow start (strict); a round without samples: grow. */
	if (vegas_meter_delta(m, w, &m->ended, use_min, integer, &delta) &&
	    delta > (__u64)gamma) {
		/* Ho et al. §2: "decreases its congestion window size by 1/8", never below two
		 * segments unless it was already. */
		cut = w - (w >> 3);
		low = w < (2ULL << FRAC_BITS) ? w : (2ULL << FRAC_BITS);
		cwnd_set_q16(ca, cut > low ? cut : low);
		ca->tp->snd_ssthresh = ca->tp->snd_cwnd;
		SET_HINT(ca, "vegas-gamma");
		c->growing = VEGAS_GROWING_NONE;
		return true;
	}
	c->growing = VEGAS_GROWING_YES;
	return false;
}

/* Growth for one ACK in slow start: +1 segment per ACK in a growth round (RFC 5681 counting);
 * returns the acknowledged segments left for congestion avoidance. */
static __always_inline __u32 vegas_slow_grow(struct ca *ca, const struct vegas_slow_core *c, __u32 acked)
{
	if (c->growing == VEGAS_GROWING_YES)
		return grow_to_ssthresh(ca, acked < 1 ? acked : 1, acked);
	return 0;
}

/* ---- congestion avoidance (cc::vegas::VegasCaCore) ---------------------------------------- */

struct vegas_ca_core {
	__u32 increase; /* grow 1/cwnd per ACK during this round */
};

static __always_inline void vegas_ca_init(struct vegas_ca_core *c)
{
	/* Before the first judgement the window grows as Reno's would. */
	c->increase = 1;
}

/* At the end of a round in congestion avoidance (Brakmo and Peterson's rule, Ho et al. §2). */
static __always_inline void vegas_ca_on_round(struct ca *ca, struct vegas_ca_core *c,
					      const struct rtt_stats *stats,
					      const struct vegas_meter *m, fixed_t alpha,
					      fixed_t beta, bool use_min, bool integer)
{
	__u64 delta, w, low;

	w = cwnd_q16(ca);
	if (!vegas_meter_delta(m, w, stats, use_min, integer, &delta))
		return;
	if (delta < (__u64)alpha) {
		c->increase = 1;
	} else if (delta > (__u64)beta) {
		c->increase = 0;
		/* cwnd -= 1, never below two segments unless it was already. */
		low = w < (2ULL << FRAC_BITS) ? w : (2ULL << FRAC_BITS);
		cwnd_set_q16(ca, w > low + FRAC_ONE ? w - FRAC_ONE : low);
		/* Keep ssthresh at or below cwnd so a decrease does not restart slow start. */
		if (ca->tp->snd_ssthresh > ca->tp->snd_cwnd)
			ca->tp->snd_ssthresh = ca->tp->snd_cwnd;
	} else {
		c->increase = 0;
	}
}

/* No change of cwnd during the next round (after a slow-start exit, as ns-2). */
static __always_inline void vegas_ca_hold(struct vegas_ca_core *c)
{
	c->increase = 0;
}

/* 1/cwnd per ACK in an increasing round: about one segment per round (ns-2 v_incr_ = 1/cwnd_). */
static __always_inline void vegas_ca_grow(struct ca *ca, const struct vegas_ca_core *c)
{
	__u64 w;

	if (!c->increase)
		return;
	w = cwnd_q16(ca);
	if (w == 0)
		return;
	/* 1 / cwnd in units of 2^-16 segments: 2^32 / (cwnd << 16). */
	cwnd_add_q16(ca, (1ULL << 32) / w);
}

/* Linux-style loss response with the configured factor: max(FlightSize x loss_beta, 2). */
static __always_inline __u32 vegas_loss_ssthresh(struct ca *ca, fixed_t loss_beta)
{
	__u32 s = (__u32)fixed_mul(flight_size(ca), loss_beta);

	return s > 2 ? s : 2;
}

/* ---- `vegas` ------------------------------------------------------------------------------- */

enum vegas_config__round_rtt {
	vegas_config__round_rtt__mean,
	vegas_config__round_rtt__min,
};

struct vegas_config {
	fixed_t alpha;     /* grow while Δ < alpha (segments) */
	fixed_t beta;      /* shrink while Δ > beta (segments) */
	fixed_t gamma;     /* slow start ends when Δ > gamma (segments) */
	fixed_t loss_beta; /* ssthresh = max(FlightSize x loss_beta, 2) */
	enum vegas_config__round_rtt round_rtt; /* D of eq. (1): the round's mean or min RTT */
	flag_t integer_delta;     /* round Δ to whole segments (ns-2) */
	flag_t first_round_grows; /* the first slow-start round doubles (else holds) */
};

struct vegas_state {
	struct vegas_meter meter;
	struct vegas_slow_core ss;
	struct vegas_ca_core ca;
};

static __always_inline void vegas_init(struct ca *ca, const volatile struct vegas_config *cfg,
				       struct vegas_state *st)
{
	vegas_meter_init(ca, &st->meter);
	st->ss.growing = VEGAS_GROWING_NONE;
	vegas_ca_init(&st->ca);
}

static __always_inline __u32 vegas_ssthresh(struct ca *ca, const volatile struct vegas_config *cfg,
					    struct vegas_state *st)
{
	return vegas_loss_ssthresh(ca, cfg->loss_beta);
}

static __always_inline void vegas_cong_avoid(struct ca *ca, const volatile struct vegas_config *cfg,
					     struct vegas_state *st, __u32 acked)
{
	bool use_min = cfg->round_rtt == vegas_config__round_rtt__min;
	__u32 b = vegas_meter_take(&st->meter);

	if (b != VEGAS_BOUNDARY_NONE) {
		if (in_slow_start(ca)) {
			if (vegas_slow_on_boundary(ca, &st->ss, b, &st->meter, cfg->gamma, use_min,
						   cfg->integer_delta, cfg->first_round_grows))
				/* ns-2: no increase in the round after the exit. */
				vegas_ca_hold(&st->ca);
		} else if (b == VEGAS_BOUNDARY_NEXT) {
			vegas_ca_on_round(ca, &st->ca, &st->meter.ended, &st->meter, cfg->alpha,
					  cfg->beta, use_min, cfg->integer_delta);
		}
	}
	if (!cwnd_limited(ca))
		return;
	/* In slow start the ACK goes to avoidance only if slow start reached ssthresh with
	 * segments left over. */
	if (in_slow_start(ca) && vegas_slow_grow(ca, &st->ss, acked) == 0)
		return;
	vegas_ca_grow(ca, &st->ca);
}

static __always_inline void vegas_pkts_acked(struct ca *ca, const volatile struct vegas_config *cfg,
					     struct vegas_state *st, const struct ack_sample *s)
{
	vegas_meter_on_ack(ca, &st->meter, s);
}

static __always_inline void vegas_set_state(struct ca *ca, const volatile struct vegas_config *cfg,
					    struct vegas_state *st, __u8 new_state)
{
	/* Slow start begins again after a timeout, with fresh rounds. */
	if (new_state == TCP_CA_Loss) {
		vegas_meter_restart(&st->meter);
		st->ss.growing = VEGAS_GROWING_NONE;
	}
}

static __always_inline void vegas_cwnd_event(struct ca *ca, const volatile struct vegas_config *cfg,
					     struct vegas_state *st, enum tcp_ca_event ev)
{
	/* Every timeout (tcp_enter_loss), also one while already in Loss. */
	if (ev == CA_EVENT_LOSS) {
		vegas_meter_restart(&st->meter);
		st->ss.growing = VEGAS_GROWING_NONE;
	}
}

CC_OPS(vegas) = {
	.init = vegas_init,
	.ssthresh = vegas_ssthresh,
	.cong_avoid = vegas_cong_avoid,
	.pkts_acked = vegas_pkts_acked,
	.set_state = vegas_set_state,
	.cwnd_event = vegas_cwnd_event,
};

#endif
