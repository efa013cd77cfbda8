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
 * hz > 0 (cubic_hz_*): Linux 6.18 tcp_cubic.c's bictcp_update, cubictcp_cong_avoid,
 * cubictcp_recalc_ssthresh and cubictcp_acked in its integers (whole segments, jiffies of 1/hz s,
 * t and K in 1/1024 s), as the model's KernelCubic; beta, c, max_growth_per_rtt and
 * min_growth_no_loss become the kernel's integers (717, 410, cnt >= 2, cnt <= 20) by the same
 * rounding of their Q32.32 values on both sides.
 *
 * Differs from the Rust model (hz = 0 unless said):
 * - hz > 0: nothing in the arithmetic (both are the same integers; checked hook by hook by
 *   cc::cubic's test hz_the_ebpf_port_computes_what_the_model_computes). snd_cwnd_cnt is this
 *   port's own (cwnd_cnt, zeroed on CWR, Recovery and Loss as reno.bpf.c does), not tp's, and
 *   jiffies are now_us x hz / 10^6 (tcp_mstamp), not tcp_jiffies32, whose phase against it is not
 *   modelled. Against the kernel: K is the exact floor cube root, where cubic_root's table and
 *   Newton step are within 0.16 % of it (at most 5/1024 s for last_max_cwnd - cwnd <= 100); a
 *   TCP-friendly step (cwnd beta_scale) >> 3 of 0, where the kernel loops for ever (beta below
 *   about 0.5 and cwnd 1 or 2), counts as 1; "no epoch" is has_epoch, not epoch_start = 0.
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
 * - cwnd_event: Linux reports TX_START when it sends with nothing in flight; with hz the idle
 *   time is tcp_jiffies32 minus lsndtime, as cubictcp_cwnd_event; without, now_us (tcp_mstamp)
 *   minus the last pkts_acked, as in the paper's model.
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
	__u32 hz;                     /* 0: continuous time; 1-1000: tcp_cubic.c in jiffies of 1/hz s */
};

struct cubic_state {
	__u64 w_last_max;   /* W_last_max, segments x 2^16; 0 = none (Fig. 5.2) */
	__u64 origin;       /* origin_point, segments x 2^16 */
	__u64 w_tcp;        /* W_tcp of Eq. 5.4 (Fig. 5.3), segments x 2^32 */
	__u64 inc_rem;      /* the growth below 2^-16 segment not yet added, segments x 2^32 */
	__u64 k;            /* K, seconds x 2^16 */
	__u64 epoch_start;  /* us (tcp_mstamp); jiffies when hz > 0 */
	__u64 last_ack;     /* us, the last pkts_acked */
	__u32 d_min;        /* dMin, us */
	__u32 has_epoch;
	__u32 has_d_min;
	__u32 has_last_ack;
	/* hz > 0: struct bictcp of tcp_cubic.c (whole segments; K in 1/1024 s). */
	__u64 last_time;      /* jiffies */
	__u32 cnt;
	__u32 last_max_cwnd;
	__u32 last_cwnd;
	__u32 origin_point;
	__u32 bic_k;
	__u32 delay_min;      /* us; 0 = none */
	__u32 ack_cnt;
	__u32 tcp_cwnd;
	__u32 cwnd_cnt;       /* snd_cwnd_cnt of tcp_cong_avoid_ai, kept here as in reno.bpf.c */
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

/* hz > 0: round(x x 1024) of a Q32.32 parameter (beta, c), as the model's per_1024. */
static __always_inline __u32 cubic_per_1024(fixed_t x)
{
	return (__u32)(((__u64)x + (1ULL << 21)) >> 22);
}

/* hz > 0: round(1 / x) of a Q32.32 parameter, 0 for 0 (the model's reciprocal): the bounds of
 * cnt from max_growth_per_rtt (2) and min_growth_no_loss (20). */
static __always_inline __u32 cubic_reciprocal(fixed_t x)
{
	__u64 q = (__u64)x;

	return q ? (__u32)(((1ULL << 32) + q / 2) / q) : 0;
}

/* hz > 0: tcp_jiffies32 as floor(now x hz), not wrapped; the phase of the kernel's jiffy ticks
 * against tcp_mstamp is not modelled (both start at 0). */
static __always_inline __u64 cubic_jiffies(const volatile struct cubic_config *cfg, __u64 now_us)
{
	return now_us * cfg->hz / USEC_PER_SEC;
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
	/* bictcp_reset (hz > 0); tcp_enter_loss zeroes snd_cwnd_cnt. */
	st->last_time = 0;
	st->cnt = 0;
	st->last_max_cwnd = 0;
	st->last_cwnd = 0;
	st->origin_point = 0;
	st->bic_k = 0;
	st->delay_min = 0;
	st->ack_cnt = 0;
	st->tcp_cwnd = 0;
	st->cwnd_cnt = 0;
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

	if (cfg->hz) {
		/* cubictcp_recalc_ssthresh on snd_cwnd, beta in 1/1024. */
		__u32 w = ca->tp->snd_cwnd, b = cubic_per_1024(cfg->beta), r;

		st->has_epoch = 0;
		if (cfg->fast_convergence && w < st->last_max_cwnd)
			st->last_max_cwnd = w * (1024 + b) / 2048;
		else
			st->last_max_cwnd = w;
		r = w * b / 1024;
		return r > 2 ? r : 2;
	}
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

/* hz > 0: bictcp_update of tcp_cubic.c (the model's KernelCubic::update): st->cnt for `acked`
 * segments at window cwnd, jiffy now; u32 arithmetic wraps as the kernel's. */
static __always_inline void cubic_hz_update(const volatile struct cubic_config *cfg,
					    struct cubic_state *st, __u32 cwnd, __u32 acked, __u64 now)
{
	__u64 hz = cfg->hz, t, offs, d;
	__u32 crs = cubic_per_1024(cfg->c), delta, target, b, step, n, lim;

	/* bictcp_update: count the acknowledged segments. */
	st->ack_cnt += acked;
	/* bictcp_update: same window and at most hz/32 jiffies since the last update: keep cnt. */
	if (st->last_cwnd == cwnd && now - st->last_time <= hz / 32)
		return;
	/* bictcp_update: cnt changes at most once per jiffy (within one, only TCP friendliness). */
	if (!(st->has_epoch && now == st->last_time)) {
		st->last_cwnd = cwnd;
		st->last_time = now;
		if (!st->has_epoch) {
			/* bictcp_update: a new epoch. */
			st->has_epoch = 1;
			st->epoch_start = now;
			st->ack_cnt = acked;
			st->tcp_cwnd = cwnd;
			if (st->last_max_cwnd <= cwnd) {
				st->bic_k = 0;
				st->origin_point = cwnd;
			} else {
				/* bictcp_update: K = cbrt(cube_factor (last_max_cwnd - cwnd)), exact
				 * floor (the kernel's cubic_root is within 0.16 %). */
				d = ((1ULL << 40) / crs) * (__u64)(st->last_max_cwnd - cwnd);
				st->bic_k = (__u32)cubic_icbrt(d);
				st->origin_point = st->last_max_cwnd;
			}
		}
		/* bictcp_update: t = (jiffies - epoch_start + usecs_to_jiffies(delay_min)) << 10 / HZ;
		 * usecs_to_jiffies rounds up. */
		d = ((__u64)st->delay_min * hz + USEC_PER_SEC - 1) / USEC_PER_SEC;
		t = ((now - st->epoch_start + d) << 10) / hz;
		offs = t < st->bic_k ? st->bic_k - t : t - st->bic_k;
		/* bictcp_update: delta = cube_rtt_scale offs^3 >> 40 (u64, then u32). */
		delta = (__u32)((crs * offs * offs * offs) >> 40);
		target = t < st->bic_k ? st->origin_point - delta : st->origin_point + delta;
		/* bictcp_update: cnt = cwnd / (target - cwnd), or 100 cwnd at or above the target. */
		st->cnt = target > cwnd ? cwnd / (target - cwnd) : 100 * cwnd;
		/* bictcp_update: cnt <= 20 while last_max_cwnd = 0 (min_growth_no_loss). */
		lim = cubic_reciprocal(cfg->min_growth_no_loss);
		if (st->last_max_cwnd == 0 && lim && st->cnt > lim)
			st->cnt = lim;
	}
	if (cfg->tcp_friendliness) {
		/* bictcp_update: tcp_cwnd += 1 per (cwnd beta_scale) >> 3 acknowledged segments, the
		 * loop in closed form (a step of 0, where the kernel loops for ever, counts as 1). */
		b = cubic_per_1024(cfg->beta);
		step = (cwnd * (8 * (1024 + b) / 3 / (1024 - b))) >> 3;
		if (!step)
			step = 1;
		if (st->ack_cnt > step) {
			n = (st->ack_cnt - 1) / step;
			st->ack_cnt -= n * step;
			st->tcp_cwnd += n;
		}
		/* bictcp_update: if tcp_cwnd > cwnd, cnt <= cwnd / (tcp_cwnd - cwnd). */
		if (st->tcp_cwnd > cwnd) {
			lim = cwnd / (st->tcp_cwnd - cwnd);
			if (st->cnt > lim)
				st->cnt = lim;
		}
	}
	/* bictcp_update: cnt >= 2 (max_growth_per_rtt). */
	lim = cubic_reciprocal(cfg->max_growth_per_rtt);
	if (st->cnt < lim)
		st->cnt = lim;
}

/* hz > 0: cubictcp_cong_avoid: tcp_slow_start, then bictcp_update and tcp_cong_avoid_ai, on
 * whole segments (cc::reno::linux_slow_start, linux_cong_avoid_ai). */
static __always_inline void cubic_hz_cong_avoid(struct ca *ca, const volatile struct cubic_config *cfg,
						struct cubic_state *st, __u32 acked)
{
	__u32 cwnd = ca->tp->snd_cwnd;

	if (in_slow_start(ca)) {
		acked = linux_slow_start(ca, &cwnd, acked);
		if (!acked) {
			cwnd_set_q16(ca, (__u64)cwnd << FRAC_BITS);
			return;
		}
	}
	cubic_hz_update(cfg, st, cwnd, acked, cubic_jiffies(cfg, ca->now_us));
	cwnd = linux_cong_avoid_ai(cwnd, &st->cwnd_cnt, st->cnt, acked);
	cwnd_set_q16(ca, (__u64)cwnd << FRAC_BITS);
}

static __always_inline void cubic_cong_avoid(struct ca *ca, const volatile struct cubic_config *cfg,
					     struct cubic_state *st, __u32 acked)
{
	if (!cwnd_limited(ca))
		return;
	if (cfg->hz) {
		cubic_hz_cong_avoid(ca, cfg, st, acked);
		return;
	}
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
	if (cfg->hz) {
		/* cubictcp_acked: none without an RTT sample; samples within 1 s (hz jiffies) of the
		 * epoch start discarded; delay 0 counts as 1 us; delay_min = min. */
		__u32 delay;

		if (rtt < 0)
			return;
		if (st->has_epoch && cubic_jiffies(cfg, ca->now_us) - st->epoch_start < cfg->hz)
			return;
		delay = rtt ? (__u32)rtt : 1;
		if (!st->delay_min || st->delay_min > delay)
			st->delay_min = delay;
		return;
	}
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
	/* tcp_init_cwnd_reduction and tcp_enter_loss zero snd_cwnd_cnt (hz > 0). */
	if (new_state == TCP_CA_CWR || new_state == TCP_CA_Recovery || new_state == TCP_CA_Loss)
		st->cwnd_cnt = 0;
}

/* Linux bictcp_cwnd_event: after idle the epoch moves by the idle time (not past now). */
static __always_inline void cubic_cwnd_event(struct ca *ca, const volatile struct cubic_config *cfg,
					     struct cubic_state *st, enum tcp_ca_event ev)
{
	__u64 now = ca->now_us, idle, start;

	if (ev != CA_EVENT_TX_START || !st->has_epoch)
		return;
	if (cfg->hz) {
		/* cubictcp_cwnd_event: idle since the last transmission (lsndtime, tcp_jiffies32),
		 * in jiffies, not past now. */
		__u64 nj = cubic_jiffies(cfg, now);
		__s32 delta = (__s32)((__u32)nj - ca->tp->lsndtime);

		if (delta > 0) {
			start = st->epoch_start + (__u32)delta;
			st->epoch_start = start < nj ? start : nj;
		}
		return;
	}
	if (!st->has_last_ack)
		return;
	idle = now > st->last_ack ? now - st->last_ack : 0;
	start = st->epoch_start + idle;
	st->epoch_start = start < now ? start : now;
}

CC_OPS(cubic) = {
	.init = cubic_init,
	.ssthresh = cubic_ssthresh,
	.cong_avoid = cubic_cong_avoid,
	.pkts_acked = cubic_pkts_acked,
	.set_state = cubic_set_state,
	.cwnd_event = cubic_cwnd_event,
};
