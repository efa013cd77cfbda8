/* SPDX-License-Identifier: MIT */
/*
 * Standard slow start as a start-up algorithm: cwnd += 1 per ACK (RFC 5681 §3.1), or
 * min(acked, L) with byte counting (RFC 3465) (crate startlab-core, cc::slow_start::Standard).
 *
 * Differs from the Rust model: nothing beyond the shared fixed-point window (startlab.h).
 */

struct slow_start_config {
	__u32 abc_limit; /* RFC 3465 limit L, segments; 0 counts ACKs */
};

struct slow_start_state {
	__u32 unused;
};

static __always_inline __u32 slow_start_on_ack(struct ca *ca, const volatile struct slow_start_config *cfg,
					       struct slow_start_state *st, __u32 acked)
{
	return standard_slow_start(ca, cfg->abc_limit, acked);
}

STARTUP_OPS(slow_start) = {
	.on_ack = slow_start_on_ack,
};
