/* SPDX-License-Identifier: MIT */
/*
 * HighSpeed TCP, RFC 3649 (crate startlab-core, cc::hstcp; Linux net/ipv4/tcp_highspeed.c).
 *
 * Congestion avoidance adds a(w)/w segments per newly delivered segment and a loss sets
 * ssthresh = (1 - b(w)) w, w the congestion window (RFC 3649 §5). At or below low_window
 * a = 1, b = 0.5 (standard TCP); above it a(w) and b(w) follow the HighSpeed response function,
 * which needs logarithms. They come from user space: crates/startlab-bpf/src/derived.rs fills
 * `table` with HSTCP_ROWS rows at windows spaced geometrically from low_window (row 0) to
 * high_window (last row), each with a(w) and b(w) computed by the Rust model's own
 * Hstcp::increase and Hstcp::decrease from the resolved parameters. Between two rows a and b are
 * interpolated linearly in w; above high_window the last row holds (RFC 3649 defines the
 * response function up to High_Window only; the model clamps likewise). Slow start below
 * ssthresh is standard slow start, one segment per ACK (RFC 5681 §3.1), as in the model.
 *
 * Differs from the Rust model:
 * - a(w), b(w): the model evaluates the RFC 3649 formulas at the exact window; here they are
 *   interpolated between table rows 6.2 % apart in w (default parameters; one row sits where the
 *   model's max(a, 1) bends, w = 40.75): relative error below 0.03 % in a, below 5e-5 absolute
 *   in b (checked against the model's formulas from 30 to 100000 segments). a is held in
 *   segments x 2^16 and capped at 65535 segments, b x 2^32; the window is compared with the rows
 *   in segments x 2^16.
 * - The n newly delivered segments of one ACK add n x a(w)/w at once, with w the window before
 *   the ACK; the model adds a(w)/w n times, re-evaluating a(w)/w after each (the difference is of
 *   order n^2 a^2 / w^3 segments, far below 2^-16 for windows above low_window). n is capped at
 *   65535.
 * - ssthresh = (1 - b(w)) w is truncated to whole segments (snd_ssthresh holds whole segments),
 *   with w = snd_cwnd plus the fraction kept beside it (startlab.h) when the kernel calls
 *   ssthresh (tcp_enter_recovery / tcp_enter_loss / CWR); the model uses its float cwnd.
 * - Loss recovery is Linux's own (SACK, RACK-TLP, PRR): the port chooses only ssthresh; the
 *   kernel sets cwnd during recovery and to ssthresh at its end.
 * - `acked` in cong_avoid is Linux's newly delivered count, which the model reproduces with
 *   counting::NewlyDelivered; pkts_acked has nothing else to record.
 * - The parameters themselves (low_window, high_window, high_p, high_decrease) are members as the
 *   loader requires, but only `table` is read: Q32.32 cannot hold high_p = 1e-7 precisely.
 */

/* Rows of the response-function table; a power of two (the search masks its index). */
#define HSTCP_ROWS 128
#define HSTCP_SEARCH_STEPS 7 /* log2(HSTCP_ROWS) */

/* One row, written by derived.rs (three little-endian u64, 24 bytes). */
struct hstcp_row {
	__u64 w; /* window, segments x 2^16 */
	__u64 a; /* a(w), segments per round trip x 2^16 */
	__u64 b; /* b(w) x 2^32 */
};

struct hstcp_config {
	fixed_t low_window;    /* segments; standard TCP at or below (RFC 3649: 38) */
	fixed_t high_window;   /* segments; b(high_window) = high_decrease (RFC 3649: 83000) */
	fixed_t high_p;        /* drop rate at high_window (RFC 3649: 1e-7); not read, see above */
	fixed_t high_decrease; /* b(high_window) (RFC 3649: 0.1) */
	struct hstcp_row table[HSTCP_ROWS]; /* derived: a(w), b(w) from low_window to high_window */
};

struct hstcp_state {
	__u32 unused;
};

/* a(w) (segments x 2^16) and b(w) (x 2^32) at window w (segments x 2^16), RFC 3649 §5. */
static __always_inline void hstcp_response(const volatile struct hstcp_config *cfg, __u64 w,
					   __u64 *a, __u64 *b)
{
	__u32 lo = 0, hi = HSTCP_ROWS - 1, i;
	__u64 w0, w1, a0, a1, b0, b1, frac;

	/* "At most Low_Window": standard TCP, a = 1, b = 0.5 (RFC 3649 §5). */
	if (w <= cfg->table[0].w) {
		*a = FRAC_ONE;
		*b = 1ULL << 31;
		return;
	}
	/* Above High_Window the response function stops: its last values hold. */
	if (w >= cfg->table[HSTCP_ROWS - 1].w) {
		*a = cfg->table[HSTCP_ROWS - 1].a;
		*b = cfg->table[HSTCP_ROWS - 1].b;
		return;
	}
	/* The row below w: table[lo].w <= w < table[hi].w, halving [lo, hi] down to one row. */
	for (i = 0; i < HSTCP_SEARCH_STEPS; i++) {
		__u32 mid = ((lo + hi) >> 1) & (HSTCP_ROWS - 1);

		if (hi - lo <= 1)
			break;
		if (cfg->table[mid].w <= w)
			lo = mid;
		else
			hi = mid;
	}
	lo &= HSTCP_ROWS - 1;
	hi = (lo + 1) & (HSTCP_ROWS - 1);
	w0 = cfg->table[lo].w;
	w1 = cfg->table[hi].w;
	a0 = cfg->table[lo].a;
	a1 = cfg->table[hi].a;
	b0 = cfg->table[lo].b;
	b1 = cfg->table[hi].b;
	if (w1 <= w0 || w < w0) {
		*a = a0;
		*b = b0;
		return;
	}
	/* Linear interpolation in w, the position between the rows x 2^16. */
	frac = ((w - w0) << 16) / (w1 - w0);
	*a = a1 >= a0 ? a0 + (((a1 - a0) * frac) >> 16) : a0 - (((a0 - a1) * frac) >> 16);
	*b = b1 >= b0 ? b0 + (((b1 - b0) * frac) >> 16) : b0 - (((b0 - b1) * frac) >> 16);
}

/* RFC 3649 §5: w <- (1 - b(w)) w at a loss, w the congestion window (as Linux hstcp_ssthresh),
 * at least 2. */
static __always_inline __u32 hstcp_ssthresh(struct ca *ca, const volatile struct hstcp_config *cfg,
					    struct hstcp_state *st)
{
	__u64 w = cwnd_q16(ca), a, b, s;

	hstcp_response(cfg, w, &a, &b);
	if (b > FIXED_ONE)
		b = FIXED_ONE;
	/* (w x 2^8) x ((1 - b) x 2^24) / 2^32 in whole segments; above 2^24 segments whole ones. */
	if (w < (1ULL << 40))
		s = ((w >> 8) * ((FIXED_ONE - b) >> 8)) >> 32;
	else
		s = ((w >> 16) * ((FIXED_ONE - b) >> 8)) >> 24;
	if (s > 0xffffffffULL)
		s = 0xffffffffULL;
	return s > 2 ? (__u32)s : 2;
}

static __always_inline void hstcp_cong_avoid(struct ca *ca, const volatile struct hstcp_config *cfg,
					     struct hstcp_state *st, __u32 acked)
{
	__u64 w, a, b, per_seg, n;

	if (!cwnd_limited(ca))
		return;
	if (in_slow_start(ca)) {
		/* RFC 3649 leaves slow start to RFC 5681: one segment per ACK. */
		acked = standard_slow_start(ca, 0, acked);
		if (!acked)
			return;
	}
	/* RFC 3649 §5: a(w)/w per acknowledged segment, a(w) segments per round trip. */
	w = cwnd_q16(ca);
	if (w == 0)
		return;
	hstcp_response(cfg, w, &a, &b);
	if (a > 0xffffffffULL)
		a = 0xffffffffULL;
	per_seg = (a << 32) / w; /* a(w)/w x 2^32 */
	if (per_seg > (1ULL << 47))
		per_seg = 1ULL << 47;
	n = acked < 0xffff ? acked : 0xffff;
	cwnd_add_q16(ca, (n * per_seg) >> 16);
}

CC_OPS(hstcp) = {
	.ssthresh = hstcp_ssthresh,
	.cong_avoid = hstcp_cong_avoid,
};
