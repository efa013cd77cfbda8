/* SPDX-License-Identifier: MIT */
/*
 * Limited Slow Start, RFC 3742 §2 (surveyed in Ha 2009 §3.2.3) (crate startlab-core, cc::lss).
 * At or below max_ssthresh it is standard slow start (one segment per ACK); above it each ACK
 * adds 1/K segment with K = int(cwnd / (0.5 max_ssthresh)), so that slow start adds at most
 * max_ssthresh/2 segments per RTT.
 *
 * Hooks: on_ack is the model's on_ack; the other hooks do nothing, as in the model (the trait's
 * defaults); in_startup is cwnd < ssthresh.
 *
 * Differs from the Rust model:
 * - cwnd is snd_cwnd plus a fraction of 2^-16 segment (startlab.h), so 1/K is truncated to a
 *   multiple of 2^-16 (an error below 2^-16 segment per ACK); max_ssthresh is Q32.32, compared
 *   with cwnd at 2^-16 precision.
 * - ssthresh is whole segments (snd_ssthresh), so the cap "min(cwnd + 1/K, max(ssthresh, cwnd))"
 *   uses an integer ssthresh.
 * - `acked` is Linux's newly delivered count (cong_avoid's argument); the model's is the segments
 *   the ACK delivered. Only "acked == 0" is tested here and in the model, so the growth per ACK is
 *   the same; but Linux calls cong_avoid only when it may raise cwnd (tcp_may_raise_cwnd) and the
 *   controller only when the flow is cwnd-limited (tcp_is_cwnd_limited), and delayed ACKs make the
 *   ACK count (and so the growth per RTT) depend on the receiver, as in the model.
 */

struct lss_config {
	fixed_t max_ssthresh; /* RFC 3742 §2: max_ssthresh, segments */
};

struct lss_state {
	__u32 unused;
};

static __always_inline __u32 lss_on_ack(struct ca *ca, const volatile struct lss_config *cfg,
					struct lss_state *st, __u32 acked)
{
	__u64 w, max_q16, s, k, next;

	if (acked == 0)
		return 0;
	w = cwnd_q16(ca);
	/* max_ssthresh in segments x 2^16 (it is at least 1, so not 0). */
	max_q16 = (__u64)cfg->max_ssthresh >> (32 - FRAC_BITS);
	if (w <= max_q16)
		/* RFC 3742 §2: "If (cwnd <= max_ssthresh) cwnd += MSS". */
		return grow_to_ssthresh(ca, 1, acked);
	/* RFC 3742 §2: K = int(cwnd / (0.5 max_ssthresh)) = int(2 cwnd / max_ssthresh). */
	k = max_q16 ? (2 * w) / max_q16 : 1;
	if (k < 1)
		k = 1;
	/* "cwnd += int(MSS / K)": 1/K segment, not past max(ssthresh, cwnd). */
	next = w + FRAC_ONE / k;
	s = (__u64)ca->tp->snd_ssthresh << FRAC_BITS;
	if (s < w)
		s = w;
	if (next > s)
		next = s;
	cwnd_set_q16(ca, next);
	return 0;
}

STARTUP_OPS(lss) = {
	.on_ack = lss_on_ack,
};
