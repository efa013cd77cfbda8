/* SPDX-License-Identifier: MIT */
/*
 * Hoe's packet-pair estimate of the bandwidth x delay product (crate startlab-core,
 * cc::hoe::HoeEstimator and cc::hoe::apply_estimate): the least-squares slope of cumulative
 * delivered segments against ACK arrival time over three closely spaced ACKs (each gap at most
 * max_gap x the first RTT), times the RTT of the first segment (Wang et al. 2004 §III.C,
 * describing J. Hoe, SIGCOMM 1996). Shared by the ports of "hoe" and "pstart" (Deng et al.
 * §2.3: "ssthresh can be gained by the method of J. Hoe").
 *
 * Differs from the Rust model:
 * - ACK arrival time is ca->now_us, tcp_mstamp in microseconds: the time the stack processes
 *   the ACK (tcp_rcv_established refreshes it per segment), not the instant it reached the host
 *   as in the simulator. ACKs that wait in the socket backlog (the socket owned by the sending
 *   process) or that one NAPI poll delivers together are processed back to back, so their
 *   spacing is compressed (the slope, and the estimate, come out larger), and a softirq
 *   delayed by the scheduler stretches a gap (which can then exceed max_gap x RTT and void the
 *   triple). Gaps are whole microseconds; the simulator's are exact (nanoseconds).
 * - The "segments delivered" of an ACK are the growth of tp->delivered (cumulative and SACKed
 *   segments, as the model's AckSample::acked); the caller feeds only ACKs that delivered
 *   something, as the simulator calls pkts_acked only for those.
 * - The first RTT is the first sample->rtt_us >= 0 of pkts_acked (Karn's rule is the kernel's;
 *   with timestamps the kernel can also take a sample from a retransmitted segment's echo).
 * - The slope is computed exactly in integers (3 x the sums of squares and products, relative
 *   to the first ACK of the triple); the estimate is bandwidth x RTT in segments x 2^16,
 *   truncated; a product that could overflow 64 bits is computed with its larger factor and
 *   the divisor shifted right by the excess bits (only for gaps of many seconds).
 * - The model's ssthresh is fractional; snd_ssthresh takes the estimate truncated to whole
 *   segments (at least 2, at most TCP_INFINITE_SSTHRESH). Whether slow start ends at once
 *   (the "hoe-estimate" reason) is decided on the untruncated estimate, as in the model.
 */
#ifndef STARTLAB_HOE_ESTIMATOR_H
#define STARTLAB_HOE_ESTIMATOR_H

struct hoe_estimator {
	__u64 delivered;      /* cumulative segments delivered, fed so far */
	__u64 t[3];           /* the last three ACKs: arrival time (us) ... */
	__u64 y[3];           /* ... and cumulative segments delivered then */
	__u32 n;              /* how many of t/y hold ACKs (at most 3) */
	__u32 first_rtt_us;   /* the first RTT sample */
	__u32 has_first_rtt;
	__u32 has_estimate;   /* the estimate has been made (only once) */
	__u64 estimate_q16;   /* bandwidth x first RTT, segments x 2^16 */
};

/* Every ACK that delivered something is also the last delivered-count seen, so that the next
 * pkts_acked can tell how much it delivered: the growth of tp->delivered. */
static __always_inline __u32 hoe_newly_delivered(struct ca *ca, __u32 *last_delivered)
{
	__u32 d = ca->tp->delivered - *last_delivered;

	*last_delivered = ca->tp->delivered;
	return d;
}

/* 1 if x != 0, else 0, for x < 2^63, without a branch (the verifier then follows one path). */
static __always_inline __u64 hoe_nonzero(__u64 x)
{
	return (x | -x) >> 63;
}

/* The number of significant bits of x (0 for 0), by halving steps without branches. */
static __always_inline __u32 hoe_bits(__u64 x)
{
	__u64 n = 0, s;

	s = hoe_nonzero(x >> 32) << 5;
	x >>= s;
	n += s;
	s = hoe_nonzero(x >> 16) << 4;
	x >>= s;
	n += s;
	s = hoe_nonzero(x >> 8) << 3;
	x >>= s;
	n += s;
	s = hoe_nonzero(x >> 4) << 2;
	x >>= s;
	n += s;
	s = hoe_nonzero(x >> 2) << 1;
	x >>= s;
	n += s;
	s = hoe_nonzero(x >> 1);
	x >>= s;
	n += s;
	return (__u32)(n + x);
}

/* floor(a x b / c) for c > 0; when a x b could overflow, the larger operand and c are shifted
 * right by the excess bits first. */
static __always_inline __u64 hoe_mul_div(__u64 a, __u64 b, __u64 c)
{
	__u32 sa = hoe_bits(a), sb = hoe_bits(b), excess;

	if (sa + sb > 64) {
		excess = sa + sb - 64;
		if (excess >= 63)
			return ~0ULL;
		if (sa >= sb)
			a >>= excess;
		else
			b >>= excess;
		c >>= excess;
	}
	if (c == 0)
		return ~0ULL;
	return a * b / c;
}

/* HoeEstimator::on_ack: feeds one ACK (acked segments newly delivered, the ACK's RTT sample or
 * a negative value, the arrival time); returns true the first (only) time the estimate is made,
 * leaving it in est->estimate_q16. */
static __always_inline bool hoe_estimator_on_ack(struct hoe_estimator *est, fixed_t max_gap,
						 __u32 acked, __s32 rtt_us, __u64 now_us)
{
	__u64 limit, x1, x2, y1, y2, sx, sy, sxx, sxy, nxx, nxy;

	if (est->has_estimate)
		return false;
	/* "RTT is obtained by measuring the round trip time of the first segment transmitted"
	 * (Wang et al. §III.C): the first RTT sample. */
	if (!est->has_first_rtt && rtt_us >= 0) {
		est->first_rtt_us = (__u32)rtt_us;
		est->has_first_rtt = 1;
	}
	est->delivered += acked;
	if (!est->has_first_rtt)
		return false;
	/* Keep the last three ACKs. */
	if (est->n == 3) {
		est->t[0] = est->t[1];
		est->y[0] = est->y[1];
		est->t[1] = est->t[2];
		est->y[1] = est->y[2];
		est->n = 2;
	}
	if (est->n == 0) {
		est->t[0] = now_us;
		est->y[0] = est->delivered;
	} else if (est->n == 1) {
		est->t[1] = now_us;
		est->y[1] = est->delivered;
	} else {
		est->t[2] = now_us;
		est->y[2] = est->delivered;
	}
	est->n++;
	if (est->n < 3)
		return false;
	/* "Closely spaced": each gap of the triple at most max_gap x the first RTT (gaps are whole
	 * microseconds, so comparing with the truncated limit is exact). */
	limit = fixed_mul(est->first_rtt_us, max_gap);
	x1 = est->t[1] > est->t[0] ? est->t[1] - est->t[0] : 0;
	x2 = est->t[2] > est->t[1] ? est->t[2] - est->t[1] : 0;
	if (x1 > limit || x2 > limit)
		return false;
	/* Least squares of (t - t0, y - y0) (the slope does not depend on the origin):
	 * slope = (3 Sxy - Sx Sy) / (3 Sxx - Sx^2), segments per microsecond. */
	x2 += x1;
	y1 = est->y[1] - est->y[0];
	y2 = est->y[2] - est->y[0];
	sx = x1 + x2;
	sy = y1 + y2;
	sxx = x1 * x1 + x2 * x2;
	sxy = x1 * y1 + x2 * y2;
	nxx = 3 * sxx - sx * sx;
	if ((__s64)nxx <= 0)
		return false; /* every x equal: no slope */
	if (3 * sxy <= sx * sy)
		return false; /* the slope must be positive */
	nxy = 3 * sxy - sx * sy;
	/* bandwidth x first RTT = first_rtt x nxy / nxx segments, x 2^16. */
	est->estimate_q16 = hoe_mul_div((__u64)est->first_rtt_us << FRAC_BITS, nxy, nxx);
	est->has_estimate = 1;
	return true;
}

/* apply_estimate: ssthresh = max(estimate, 2); if cwnd is not below it, slow start ends now with
 * the "hoe-estimate" reason. */
static __always_inline void hoe_apply_estimate(struct ca *ca, __u64 estimate_q16)
{
	__u64 s = estimate_q16 > (2ULL << FRAC_BITS) ? estimate_q16 : (2ULL << FRAC_BITS);
	__u64 segs = s >> FRAC_BITS;

	ca->tp->snd_ssthresh = segs < TCP_INFINITE_SSTHRESH ? (__u32)segs : TCP_INFINITE_SSTHRESH;
	if (cwnd_q16(ca) >= s)
		SET_HINT(ca, "hoe-estimate");
}

#endif
