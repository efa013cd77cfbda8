/* SPDX-License-Identifier: MIT */
/*
 * CUBIC (crate startlab-core, cc::cubic): Ha 2009 ch. 5 — §5.1.2 the window function
 * W(t) = C (t - K)^3 + W_max (Eq. 5.1) in real time since the epoch start, §5.1.3 the TCP-friendly
 * region (Eq. 5.4), §5.1.4-5.1.5 concave and convex regions, §5.1.6 multiplicative decrease,
 * §5.1.7 fast convergence, Figs. 5.2-5.3 (Linux CUBIC v2.2 pseudo-code) — with the constant sets
 * "linux" (net/ipv4/tcp_cubic.c) and "dissertation". Slow start is CUBIC's own standard slow start
 * (Fig. 5.2; Linux tcp_slow_start), counting ACKs or acknowledged segments (ss_counting).
 *
 * Hooks: init = reset (Fig. 5.2 cubic_reset); ssthresh = "Packet loss" of Fig. 5.2 (§5.1.6-5.1.7);
 * cong_avoid = slow start, then cubic_update and the window increase (Figs. 5.2-5.3); pkts_acked
 * = dMin and the time of the last ACK; set_state(Loss) = reset (Linux bictcp_state); cwnd_event
 * (TX_START) = the epoch shifted by the idle time (Linux bictcp_cwnd_event); undo_cwnd = Linux
 * tcp_reno_undo_cwnd (the trait's default); in_startup = cwnd < ssthresh.
 *
 * `beta` is the window multiplier (Linux's reading); `constants` only chose the defaults of the
 * other parameters, which the loader hands over resolved, so it is carried but not read.
 *
 * Differs from the Rust model:
 * - Fixed point instead of f64: cwnd, W_last_max and origin are segments x 2^16 (cwnd is
 *   snd_cwnd plus the fraction of startlab.h), W_tcp segments x 2^32; t and K are seconds x 2^16
 *   (15.3 us), t from the microsecond clock tcp_mstamp; beta, C, max_growth_per_rtt,
 *   min_growth_no_loss, alpha and the per-ACK increment are Q32.32. Products and quotients are
 *   truncated: W(t) by less than 2e-4 segment for |t - K| < 100 s (plus W'(t) x 15 us from t),
 *   alpha and the increment by less than 2^-32. The growth below 2^-16 segment is carried to
 *   the next ACK (cwnd += inc x acked keeps its remainder), so it is not lost, only delayed.
 * - K = cbrt(x) by an exact integer cube root (binary digit-by-digit, 22 bounded steps) of x in
 *   s^3 x 2^48, so K is the floor of the true K at 2^-16 s; when x >= 2^16 s^3 (K > 40 s) it is
 *   computed on x shifted right by a multiple of 3 bits (K then at 2^-16 s x 2^j, j <= 11). |t - K|
 *   is capped at 1024 s (the model's is not; the window is then clamped by max_growth_per_rtt).
 * - ssthresh is whole segments (snd_ssthresh): max(beta cwnd, 2) truncated; the model keeps the
 *   fraction. W_last_max keeps the fraction, as in the model. Slow start after a timeout thus
 *   ends at the whole ssthresh S, as Linux's tcp_slow_start does, where the model's ends at S + f
 *   (an ACK at cwnd S is the model's last of slow start and the port's first of congestion
 *   avoidance), so cwnd goes on up to f below the model's until cubic_update's target closes the
 *   gap or the next reduction (f - 0.05 = 0.26 segment on the differential test's timeout path,
 *   S + f = 34.31).
 * - `acked` is Linux's newly delivered count (cong_avoid's argument, tp->delivered - prior), which
 *   is what the model's NewlyDelivered recovers from pkts_acked; the model's additional bound
 *   "0 if pkts_acked did not run for this ACK" does not exist here (Linux runs pkts_acked on every
 *   ACK that reaches cong_avoid). acked is capped at 2^20 in the products.
 * - RTT samples come only from pkts_acked's sample->rtt_us (negative = no sample): dMin is the
 *   minimum of Linux's RTT samples (rate-sample RTTs, Karn's rule as Linux applies it).
 * - Loss recovery is Linux's (SACK/RACK/PRR): the kernel sets cwnd during recovery and calls
 *   ssthresh on entering Recovery, Loss (RTO) and CWR (ECN), the model on fast retransmit and RTO.
 * - cwnd_event: Linux reports TX_START when it sends with nothing in flight; the idle time is
 *   now_us (tcp_mstamp, refreshed by tcp_write_xmit) minus the last pkts_acked, as in the model.
 *   The simulator's DupAck event does not exist in the kernel (CUBIC ignores it anyway).
 * - The cwnd-limited test is Linux's tcp_is_cwnd_limited (the model's is the sender's flag).
 */

/* The C spelling of the string parameters (config.rs: enumerator <enum>__<value>). */
enum cubic_config__constants {
	cubic_config__constants__linux,
	cubic_config__constants__dissertation,
};

enum cubic_config__k_rule {
	cubic_config__k_rule__pseudo_code,
	cubic_config__k_rule__equation,
};

enum cubic_config__ss_counting {
	cubic_config__ss_counting__segments,
	cubic_config__ss_counting__acks,
};

struct cubic_config {
	enum cubic_config__constants constants; /* only chose the defaults below */
	fixed_t beta;                 /* window multiplier on a loss (linux 717/1024, dissertation 0.8) */
	fixed_t c;                    /* C of Eq. 5.1, segments / s^3 */
	flag_t fast_convergence;      /* §5.1.7 */
	flag_t tcp_friendliness;      /* §5.1.3 */
	enum cubic_config__k_rule k_rule;
	fixed_t max_growth_per_rtt;   /* largest increment per acknowledged segment */
	fixed_t min_growth_no_loss;   /* least increment per acknowledged segment while W_last_max = 0 */
	enum cubic_config__ss_counting ss_counting;
};

struct cubic_state {
	__u64 w_last_max;   /* W_last_max, segments x 2^16; 0 = none (Fig. 5.2) */
	__u64 origin;       /* origin_point, segments x 2^16 */
	__u64 w_tcp;        /* W_tcp of Eq. 5.4 (Fig. 5.3), segments x 2^32 */
	__u64 inc_rem;      /* the growth below 2^-16 segment not yet added, segments x 2^32 */
	__u64 k;            /* K, seconds x 2^16 */
	__u64 epoch_start;  /* us (tcp_mstamp) */
	__u64 last_ack;     /* us, the last pkts_acked */
	__u32 d_min;        /* dMin, us */
	__u32 has_epoch;
	__u32 has_d_min;
	__u32 has_last_ack;
};

#define CUBIC_TICK_BITS 16             /* t and K: seconds x 2^16 */
#define CUBIC_MAX_OFFS (1ULL << 26)    /* |t - K| <= 1024 s */
#define CUBIC_INC_CAP (16ULL << 32)    /* per-ACK increments above 16 segments are clamped anyway */
#define CUBIC_ACKED_CAP (1U << 20)

/* floor(v x q / 2^32) for any v, q < 2^64 whose result fits in 64 bits. */
static __always_inline __u64 cubic_mulq(__u64 v, __u64 q)
{
	__u64 vh = v >> 32, vl = v & 0xffffffffULL, qh = q >> 32, ql = q & 0xffffffffULL;

	return ((vh * qh) << 32) + vh * ql + vl * qh + ((vl * ql) >> 32);
}

/* a / b x 2^32 for a <= 16 b (both segments x 2^16, b >= 1 segment): a ratio in Q32.32. */
static __always_inline __u64 cubic_ratio_q32(__u64 a, __u64 b)
{
	if (!b)
		return 0;
	if (a > 16 * b)
		a = 16 * b;
	if (a < (1ULL << 31))
		return (a << 32) / b;
	/* Large windows: drop the fraction of a segment from both. */
	a >>= FRAC_BITS;
	b >>= FRAC_BITS;
	if (!b)
		return 0;
	if (a >= (1ULL << 31))
		a = (1ULL << 31) - 1;
	return (a << 32) / b;
}

/* 1 if a >= b, else 0, for a, b < 2^63, without a branch (the verifier then walks the cube
 * root's steps as one straight path); the barrier keeps clang from turning it into one. */
static __always_inline __u64 cubic_ge(__u64 a, __u64 b)
{
	__u64 ge = ((a - b) >> 63) ^ 1;

	asm volatile("" : "+r"(ge));
	return ge;
}

/* 1 if v != 0, else 0, for v < 2^63, without a branch. */
static __always_inline __u64 cubic_nonzero(__u64 v)
{
	__u64 nz = (v | (0 - v)) >> 63;

	asm volatile("" : "+r"(nz));
	return nz;
}

/* floor(cbrt(x)) for a 64-bit x: binary digit-by-digit, one bit of the root per step (22 steps).
 * At each step the root so far y is doubled, and its next bit set when (2y + 1)^3 - (2y)^3 =
 * 3 (2y)(2y + 1) + 1, at this digit's weight 2^s, still fits in the remainder. The remainder
 * stays below 2^61 once the first step is done, as cubic_ge needs. */
static __always_inline __u64 cubic_icbrt(__u64 x)
{
	__u64 y, b, bit;
	int i;

	/* s = 63: the top bit alone. */
	y = x >> 63;
	x -= y << 63;
#pragma clang loop unroll(full)
	for (i = 20; i >= 0; i--) {
		int s = 3 * i;

		y <<= 1;
		b = 3 * y * (y + 1) + 1;
		bit = cubic_ge(x >> s, b);
		x -= (b << s) & (0 - bit);
		y += bit;
	}
	return y;
}

/* K in seconds x 2^16 from x = K^3 in seconds^3 x 2^16: cbrt(x x 2^32). When x x 2^32 does not
 * fit in 64 bits, the argument is shifted down by 3j bits more and the root up by j: j is the
 * number of j' in 0..10 with x >= 2^(32 + 3 j'). */
static __always_inline __u64 cubic_cbrt_q16(__u64 x)
{
	__u64 j = 0;
	int i;

#pragma clang loop unroll(full)
	for (i = 0; i <= 10; i++)
		j += cubic_nonzero(x >> (32 + 3 * i));
	if (j > 10)
		return cubic_icbrt(x >> 1) << 11;
	return cubic_icbrt(x << (32 - 3 * j)) << j;
}

/* (w / C) in seconds^3 x 2^16, w in segments x 2^16 and C in Q32.32 (> 0). */
static __always_inline __u64 cubic_div_c(__u64 w, __u64 c)
{
	if (!c)
		return 0;
	if (w < (1ULL << 31))
		return (w << 32) / c;
	if ((c >> 16) == 0 || w >= (1ULL << 47))
		return ~0ULL >> 2;
	return (w << 16) / (c >> 16);
}

/* alpha = 3 (1 - beta) / (1 + beta) in Q32.32 (§5.1.3: 3 beta_d / (2 - beta_d), beta_d = 1 - beta). */
static __always_inline __u64 cubic_alpha(const volatile struct cubic_config *cfg)
{
	__u64 beta = (__u64)cfg->beta;
	__u64 num = 3 * (FIXED_ONE - beta);
	__u64 den = (FIXED_ONE + beta) >> 4;

	return den ? (num << 28) / den : 0;
}

/* Fig. 5.3 cubic_reset (Linux bictcp_reset). */
static __always_inline void cubic_reset(struct cubic_state *st)
{
	st->w_last_max = 0;
	st->has_epoch = 0;
	st->origin = 0;
	st->k = 0;
	st->has_d_min = 0;
	st->d_min = 0;
	st->w_tcp = 0;
	st->inc_rem = 0;
}

static __always_inline void cubic_init(struct ca *ca, const volatile struct cubic_config *cfg,
				       struct cubic_state *st)
{
	cubic_reset(st);
}

/* §5.1.6-5.1.7, Fig. 5.2 "Packet loss" (Linux bictcp_recalc_ssthresh). */
static __always_inline __u32 cubic_ssthresh(struct ca *ca, const volatile struct cubic_config *cfg,
					    struct cubic_state *st)
{
	__u64 cwnd = cwnd_q16(ca);
	__u64 beta = (__u64)cfg->beta;
	__u64 s;

	st->has_epoch = 0;
	if (cfg->fast_convergence && cwnd < st->w_last_max)
		/* §5.1.7 fast convergence: W_last_max <- cwnd (1 + beta) / 2. */
		st->w_last_max = cubic_mulq(cwnd, (FIXED_ONE + beta) >> 1);
	else
		st->w_last_max = cwnd;
	/* ssthresh <- beta cwnd, at least 2 (Linux). */
	s = cubic_mulq(cwnd, beta) >> FRAC_BITS;
	return s > 2 ? (__u32)s : 2;
}

/* cubic_update and the window increase (Figs. 5.2-5.3) for `acked` segments. */
static __always_inline void cubic_update(struct ca *ca, const volatile struct cubic_config *cfg,
					 struct cubic_state *st, __u32 acked)
{
	__u64 cwnd = cwnd_q16(ca);
	__u64 now = ca->now_us;
	__u64 t_us, t, offs, sq, cube, delta, target, inc, c = (__u64)cfg->c;

	if (!st->has_epoch) {
		if (cwnd < st->w_last_max) {
			__u64 w;

			if (cfg->k_rule == cubic_config__k_rule__equation)
				/* Eq. 5.2: K = cbrt(W_max beta_d / C), beta_d = 1 - beta. */
				w = cubic_mulq(st->w_last_max, FIXED_ONE - (__u64)cfg->beta);
			else
				/* Fig. 5.3: K = cbrt((W_last_max - cwnd) / C). */
				w = st->w_last_max - cwnd;
			st->k = cubic_cbrt_q16(cubic_div_c(w, c));
			st->origin = st->w_last_max;
		} else {
			/* No plateau above: grow convexly from here. */
			st->k = 0;
			st->origin = cwnd;
		}
		st->w_tcp = cwnd << 16;
		st->epoch_start = now;
		st->has_epoch = 1;
	}
	/* t + dMin: the target is W one RTT ahead (§5.1.2). */
	t_us = now > st->epoch_start ? now - st->epoch_start : 0;
	if (st->has_d_min)
		t_us += st->d_min;
	if (t_us > (1ULL << 40))
		t_us = 1ULL << 40;
	t = (t_us << CUBIC_TICK_BITS) / USEC_PER_SEC;
	offs = t < st->k ? st->k - t : t - st->k;
	if (offs > CUBIC_MAX_OFFS)
		offs = CUBIC_MAX_OFFS;
	/* Eq. 5.1: W(t) = C (t - K)^3 + W_max, (t - K)^3 in s^3 x 2^16, then x C. */
	sq = (offs * offs) >> CUBIC_TICK_BITS;
	cube = (sq * offs) >> CUBIC_TICK_BITS;
	delta = cubic_mulq(cube, c);
	if (t < st->k)
		target = st->origin > delta ? st->origin - delta : 0;
	else
		target = st->origin + delta;

	/* §5.1.4-5.1.5: (W(t + RTT) - cwnd) / cwnd per acknowledged segment; at or above the
	 * target 1/100 of a segment per RTT (cnt = 100 cwnd). */
	if (target > cwnd)
		inc = cubic_ratio_q32(target - cwnd, cwnd);
	else
		inc = cwnd ? ((__u64)42949673 << FRAC_BITS) / cwnd : 0; /* 0.01 x 2^32 / cwnd */
	/* Linux: cnt <= 20 while there is no W_last_max (min_growth_no_loss). */
	if (st->w_last_max == 0 && inc < (__u64)cfg->min_growth_no_loss)
		inc = (__u64)cfg->min_growth_no_loss;
	if (acked > CUBIC_ACKED_CAP)
		acked = CUBIC_ACKED_CAP;
	/* §5.1.3, Eq. 5.4, Fig. 5.3 cubic_tcp_friendliness: W_tcp += alpha / cwnd per segment
	 * (alpha x acked / cwnd at 2^-32 segment: quotient and remainder of the x 2^16 division). */
	if (cwnd) {
		__u64 q = cubic_alpha(cfg) * acked;

		st->w_tcp += ((q / cwnd) << 16) + (((q % cwnd) << 16) / cwnd);
	}
	if (cfg->tcp_friendliness && (st->w_tcp >> 16) > cwnd) {
		__u64 f = cubic_ratio_q32((st->w_tcp >> 16) - cwnd, cwnd);

		if (f > inc)
			inc = f;
	}
	if (inc > CUBIC_INC_CAP)
		inc = CUBIC_INC_CAP;
	if (inc > (__u64)cfg->max_growth_per_rtt)
		inc = (__u64)cfg->max_growth_per_rtt;
	/* cwnd += inc x acked, inc in Q32.32, cwnd in x 2^16; what is below 2^-16 segment is
	 * carried to the next ACK rather than dropped (near the plateau 1/100 segment per RTT is
	 * less than 2^-16 per ACK from cwnd = 656 on). */
	inc = inc * acked + st->inc_rem;
	st->inc_rem = inc & ((1ULL << (32 - FRAC_BITS)) - 1);
	cwnd_add_q16(ca, inc >> (32 - FRAC_BITS));
}

static __always_inline void cubic_cong_avoid(struct ca *ca, const volatile struct cubic_config *cfg,
					     struct cubic_state *st, __u32 acked)
{
	if (!cwnd_limited(ca))
		return;
	/* Slow start while cwnd < ssthresh (Fig. 5.2; Linux tcp_slow_start); the rest goes to the
	 * cubic update. */
	if (in_slow_start(ca)) {
		__u32 inc = cfg->ss_counting == cubic_config__ss_counting__acks ?
				    (acked < 1 ? acked : 1) : acked;

		acked = grow_to_ssthresh(ca, inc, acked);
		if (!acked)
			return;
	}
	cubic_update(ca, cfg, st, acked);
}

static __always_inline void cubic_pkts_acked(struct ca *ca, const volatile struct cubic_config *cfg,
					     struct cubic_state *st, const struct ack_sample *s)
{
	__s32 rtt = s->rtt_us;

	st->last_ack = ca->now_us;
	st->has_last_ack = 1;
	/* Fig. 5.2: dMin <- min(dMin, RTT). */
	if (rtt >= 0 && (!st->has_d_min || (__u32)rtt < st->d_min)) {
		st->d_min = (__u32)rtt;
		st->has_d_min = 1;
	}
}

/* Fig. 5.2 "Timeout: cubic_reset()" (Linux bictcp_state on TCP_CA_Loss). */
static __always_inline void cubic_set_state(struct ca *ca, const volatile struct cubic_config *cfg,
					    struct cubic_state *st, __u8 new_state)
{
	if (new_state == TCP_CA_Loss)
		cubic_reset(st);
}

/* Linux bictcp_cwnd_event: after idle the epoch moves by the idle time (not past now). */
static __always_inline void cubic_cwnd_event(struct ca *ca, const volatile struct cubic_config *cfg,
					     struct cubic_state *st, enum tcp_ca_event ev)
{
	__u64 now = ca->now_us, idle, start;

	if (ev != CA_EVENT_TX_START || !st->has_epoch || !st->has_last_ack)
		return;
	idle = now > st->last_ack ? now - st->last_ack : 0;
	start = st->epoch_start + idle;
	st->epoch_start = start < now ? start : now;
}

static __always_inline void cubic_in_ack_event(struct ca *ca, const volatile struct cubic_config *cfg,
					       struct cubic_state *st, __u32 flags)
{
}

/* The trait's default, Linux tcp_reno_undo_cwnd: max(cwnd, prior_cwnd). */
static __always_inline __u32 cubic_undo_cwnd(struct ca *ca, const volatile struct cubic_config *cfg,
					     struct cubic_state *st)
{
	return tcp_reno_undo_cwnd(ca->sk);
}

static __always_inline bool cubic_in_startup(struct ca *ca, const volatile struct cubic_config *cfg,
					     struct cubic_state *st)
{
	return in_slow_start(ca);
}
