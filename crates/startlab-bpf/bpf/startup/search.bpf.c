/* SPDX-License-Identifier: MIT */
/*
 * SEARCH slow start ("Slow start Exit At Right CHokepoint", Chung et al., IETF draft
 * draft-chung-ccwg-search, the SEARCH 3.0 pseudo-code of the June 2024 text
 * (draft-chung-ietf-ccwg-00), lines 7-42, with the model's two corrections to its bins)
 * (crate startlab-core, cc::search). Standard slow start counting acknowledged segments; the
 * segments delivered are kept in time bins of INITIAL_RTT x window_factor / bins, in a ring of
 * bins + extra_bins + 1; on each ACK past the current bin's end the bins are advanced (lines
 * 24-31: the skipped bins cleared, the latest completed one kept, the new one written) and the
 * segments delivered over the last `bins` bins are compared with those of the same window one RTT
 * earlier (interpolated by the fraction of a bin, lines 32-38); when the current window delivered
 * less than twice the earlier one by THRESH (normalized) slow start ends ("search"), with cwnd
 * lowered by what the last two initial RTTs delivered if `rollback` (lines 39-42; at most the
 * ring's bins but the oldest) and ssthresh = cwnd.
 *
 * Hooks: on_ack = Search::on_ack (grow_to_ssthresh by acked, then the detector); pkts_acked
 * keeps the latest RTT sample (the model reads tcb.latest_rtt); set_state: a loss (Recovery,
 * Loss) ends it for the connection; on_loss returns the
 * controller's ssthresh; cwnd_event does nothing; in_startup is cwnd < ssthresh.
 *
 * Differs from the Rust model:
 * - Times are microseconds (ca->now_us = tcp_mstamp, when the stack processes the ACK; RTTs from
 *   sample->rtt_us): BIN_DURATION = max(floor(INITIAL_RTT x window_factor / bins), 1) us where the
 *   model has nanoseconds; rtt / BIN_DURATION is split into whole bins and a fraction of 2^-16.
 * - The RTT is the last sample->rtt_us >= 0 seen by pkts_acked (Linux's Karn rule), else
 *   srtt_us / 8 (after the handshake, its RTT), as the model's latest_rtt.or(srtt).
 * - Delivered segments are tp->delivered (cumulative and SACKed, as the model's tcb.delivered).
 * - Bins are whole segments (u32); sums and the interpolation are segments x 2^16; the test
 *   (2 prev - curr) / (2 prev) >= THRESH is evaluated as 2 prev - curr >= THRESH x 2 prev with
 *   THRESH in Q32.32 (truncated product).
 * - The ring holds at most SEARCH_MAX_SLOTS = 128 bins (more would make struct flow too large
 *   for the controller's inline memset): with bins + extra_bins + 1 > 128 the detector is off
 *   (standard slow start by acked segments only).
 * - ssthresh = cwnd is whole segments (snd_ssthresh = snd_cwnd after the rollback).
 * - TCP_CA_CWR (no counterpart in the simulator) ends the detector like Recovery.
 * - `acked` is Linux's newly delivered count (cong_avoid's argument), as the model's; Linux calls
 *   cong_avoid, hence the detector, only for ACKs on which it may raise cwnd, and the controller
 *   calls on_ack only while Linux deems the flow cwnd-limited (in slow start cwnd <
 *   2 x max_packets_out, controller.bpf.c), where the model asks whether the last send filled
 *   cwnd: bins advance, and cwnd grows, on those ACKs only.
 * - Loops over the ring run SEARCH_MAX_SLOTS times with a 0/1 factor instead of a break (the
 *   verifier otherwise forks a path per iteration); the results are the model's.
 */

#define SEARCH_MAX_SLOTS 128 /* a power of two: indices are masked for the verifier */

struct search_config {
	fixed_t window_factor; /* WINDOW_SIZE = INITIAL_RTT x this */
	__u32 bins;            /* W: bins per window */
	__u32 extra_bins;      /* EXTRA_BINS: bins kept to look back one RTT */
	fixed_t thresh;        /* THRESH on the normalized difference */
	flag_t rollback;       /* on exit, take back the last two initial RTTs' growth */
};

struct search_state {
	__u32 bin[SEARCH_MAX_SLOTS]; /* delivered segments per bin, modulo bins + extra_bins */
	__s64 curr_idx;              /* the latest completed bin (-1: none yet) */
	__u64 bin_end;               /* us */
	__u64 bin_duration;          /* us */
	__u32 initial_rtt;           /* us */
	__u32 has_initial_rtt;
	__u32 latest_rtt;            /* us, the last RTT sample */
	__u32 has_latest_rtt;
	__u32 prev_delivered;        /* tp->delivered at the last bin boundary */
	__u32 done;
};

/* v x q for v < 2^48 and a Q32.32 q >= 0, truncated. */
static __always_inline __u64 search_mulq(__u64 v, fixed_t q)
{
	__u64 hi = (__u64)q >> 32, lo = (__u64)q & 0xffffffffULL;

	return v * hi + (v >> 32) * lo + (((v & 0xffffffffULL) * lo) >> 32);
}

/* bins + extra_bins + 1, the ring's length: the bins from curr_idx - bins - extra_bins to
 * curr_idx (0: more than the ring holds, detector off). */
static __always_inline __u32 search_len(const volatile struct search_config *cfg)
{
	__u64 n = (__u64)cfg->bins + cfg->extra_bins + 1;

	return n <= SEARCH_MAX_SLOTS ? (__u32)n : 0;
}

/* 1 if a < b, else 0, for |a|, |b| < 2^62, without a branch: loops over the ring then have one
 * path for the verifier. */
static __always_inline __u64 search_less(__s64 a, __s64 b)
{
	__s64 d = a - b;

	/* Hide the difference from clang, which would otherwise turn it into a comparison and
	 * the product into a branch. */
	asm volatile("" : "+r"(d));
	return (__u64)d >> 63;
}

/* i modulo n (Euclidean, as the model's rem_euclid) for i > -n 2^32, masked into the ring for
 * the verifier: i + n 2^32 is not negative and has the same remainder. */
static __always_inline __u32 search_slot(__s64 i, __u32 n)
{
	__u64 m = n ? (__u64)(i + ((__s64)n << 32)) % n : 0;

	return (__u32)m & (SEARCH_MAX_SLOTS - 1);
}

/* Search::reset: empty bins; with an initial RTT, BIN_DURATION and the first bin's end. */
static __always_inline void search_reset(struct ca *ca, const volatile struct search_config *cfg,
					 struct search_state *st)
{
	__u64 d;
	int i;

	for (i = 0; i < SEARCH_MAX_SLOTS; i++)
		st->bin[i] = 0;
	st->curr_idx = -1;
	st->prev_delivered = ca->tp->delivered;
	if (st->has_initial_rtt) {
		/* BIN_DURATION = INITIAL_RTT x window_factor / W (lines 7-9). */
		d = cfg->bins ? fixed_mul(st->initial_rtt, cfg->window_factor) / cfg->bins : 0;
		st->bin_duration = d > 1 ? d : 1;
		st->bin_end = ca->now_us + st->bin_duration;
	}
}

/* Search::sum_bins: the bins strictly between idx1 and idx2, plus `frac` of bin idx1 and
 * 1 - `frac` of bin idx2 (lines 32-38); segments x 2^16, frac in 2^-16. */
static __always_inline __u64 search_sum_bins(struct search_state *st, __u32 n, __s64 idx1,
					     __s64 idx2, __u64 frac)
{
	__s64 count = idx2 - idx1 - 1;
	__u64 middle = 0;
	int j;

	for (j = 0; j < SEARCH_MAX_SLOTS; j++)
		middle += st->bin[search_slot(idx1 + 1 + j, n)] * search_less(j, count);
	return (middle << FRAC_BITS) + (__u64)st->bin[search_slot(idx1, n)] * frac +
	       (__u64)st->bin[search_slot(idx2, n)] * (FRAC_ONE - frac);
}

/* Search::update_bins (lines 24-31). */
static __always_inline void search_update_bins(struct ca *ca, struct search_state *st, __u32 n)
{
	__u64 d = st->bin_duration ? st->bin_duration : 1;
	__u64 late = ca->now_us > st->bin_end ? ca->now_us - st->bin_end : 0;
	__u64 passed = late / d + 1, cnt = passed - 1 < n ? passed - 1 : n;
	__u32 delivered = ca->tp->delivered, k;
	int j;

	st->bin_end += d * passed;
	/* Clear the skipped bins, curr_idx + 1 .. curr_idx + passed - 1, keeping the latest
	 * completed one (the ring has n slots, so more than n clear nothing more). */
	for (j = 0; j < SEARCH_MAX_SLOTS; j++) {
		k = search_slot(st->curr_idx + 1 + j, n);
		st->bin[k] = st->bin[k] * (__u32)(1 - search_less(j, cnt));
	}
	st->curr_idx += passed;
	st->bin[search_slot(st->curr_idx, n)] = delivered - st->prev_delivered;
	st->prev_delivered = delivered;
}

static __always_inline void search_init(struct ca *ca, const volatile struct search_config *cfg,
					struct search_state *st)
{
	st->curr_idx = -1;
}

static __always_inline __u32 search_on_ack(struct ca *ca, const volatile struct search_config *cfg,
					   struct search_state *st, __u32 acked)
{
	__u32 left = grow_to_ssthresh(ca, acked, acked), n = search_len(cfg), rtt;
	__u64 d, shift, frac, curr_delv, prev_delv, two_prev, two_rtts, overshoot, w, v, low;
	__s64 prev_idx, wbins = cfg->bins;

	if (st->done)
		return left;
	/* The RTT: the latest sample, else the smoothed one. */
	if (st->has_latest_rtt)
		rtt = st->latest_rtt;
	else if (ca->tp->srtt_us)
		rtt = ca->tp->srtt_us >> 3;
	else
		return left;
	if (!st->has_initial_rtt) {
		/* INITIAL_RTT is the first RTT measured on the connection (lines 7-9). */
		st->initial_rtt = rtt;
		st->has_initial_rtt = 1;
		search_reset(ca, cfg, st);
		return left;
	}
	if (ca->now_us <= st->bin_end || n == 0)
		return left;
	search_update_bins(ca, st, n);
	d = st->bin_duration ? st->bin_duration : 1;
	/* Line 12: prev_idx = curr_idx - rtt / BIN_DURATION (whole bins). */
	shift = ((__u64)rtt << FRAC_BITS) / d;
	prev_idx = st->curr_idx - (__s64)(shift >> FRAC_BITS);
	if (prev_idx < wbins || st->curr_idx - prev_idx > (__s64)cfg->extra_bins)
		return left;
	curr_delv = search_sum_bins(st, n, st->curr_idx - wbins, st->curr_idx, 0);
	/* Line 16: the fraction of a bin in rtt / BIN_DURATION (as the model reads it). */
	frac = shift & (FRAC_ONE - 1);
	prev_delv = search_sum_bins(st, n, prev_idx - wbins, prev_idx, frac);
	if (prev_delv == 0)
		return left;
	/* norm_diff = (2 prev - curr) / (2 prev) >= THRESH. */
	two_prev = 2 * prev_delv;
	if (two_prev <= curr_delv || two_prev - curr_delv < search_mulq(two_prev, cfg->thresh))
		return left;
	/* exit_slow_start(), lines 39-42. */
	if (cfg->rollback) {
		/* round(2 INITIAL_RTT / BIN_DURATION), at most the ring's bins but the oldest. */
		two_rtts = (2 * (__u64)st->initial_rtt + d / 2) / d;
		if (two_rtts > n - 1)
			two_rtts = n - 1;
		overshoot = search_sum_bins(st, n, st->curr_idx - (__s64)two_rtts, st->curr_idx, 0);
		/* cwnd = max(cwnd - overshoot, min(cwnd, 2), 1). */
		w = cwnd_q16(ca);
		v = w > overshoot ? w - overshoot : 0;
		low = w < (2ULL << FRAC_BITS) ? w : (2ULL << FRAC_BITS);
		if (v < low)
			v = low;
		if (v < FRAC_ONE)
			v = FRAC_ONE;
		cwnd_set_q16(ca, v);
	}
	ca->tp->snd_ssthresh = ca->tp->snd_cwnd;
	SET_HINT(ca, "search");
	st->done = 1;
	return 0;
}

static __always_inline void search_pkts_acked(struct ca *ca, const volatile struct search_config *cfg,
					      struct search_state *st, const struct ack_sample *s)
{
	/* The simulator's latest_rtt: the RTT of the newest segment an ACK delivered. */
	if (s->rtt_us >= 0) {
		st->latest_rtt = (__u32)s->rtt_us;
		st->has_latest_rtt = 1;
	}
}

static __always_inline void search_set_state(struct ca *ca, const volatile struct search_config *cfg,
					     struct search_state *st, __u8 new_state)
{
	/* A loss ends SEARCH for the connection: the slow start after a timeout is standard. */
	if (new_state == TCP_CA_Loss || new_state == TCP_CA_Recovery || new_state == TCP_CA_CWR)
		st->done = 1;
}

STARTUP_OPS(search) = {
	.init = search_init,
	.on_ack = search_on_ack,
	.pkts_acked = search_pkts_acked,
	.set_state = search_set_state,
};
