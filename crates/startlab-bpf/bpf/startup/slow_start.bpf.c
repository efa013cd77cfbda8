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

static __always_inline void slow_start_init(struct ca *ca, const volatile struct slow_start_config *cfg,
					    struct slow_start_state *st)
{
}

static __always_inline __u32 slow_start_on_ack(struct ca *ca, const volatile struct slow_start_config *cfg,
					       struct slow_start_state *st, __u32 acked)
{
	return standard_slow_start(ca, cfg->abc_limit, acked);
}

static __always_inline __u32 slow_start_on_loss(struct ca *ca, const volatile struct slow_start_config *cfg,
						struct slow_start_state *st, __u32 ssthresh)
{
	return ssthresh;
}

static __always_inline void slow_start_pkts_acked(struct ca *ca, const volatile struct slow_start_config *cfg,
						  struct slow_start_state *st, const struct ack_sample *s)
{
}

static __always_inline void slow_start_set_state(struct ca *ca, const volatile struct slow_start_config *cfg,
						 struct slow_start_state *st, __u8 new_state)
{
}

static __always_inline void slow_start_cwnd_event(struct ca *ca, const volatile struct slow_start_config *cfg,
						  struct slow_start_state *st, enum tcp_ca_event ev)
{
}

static __always_inline bool slow_start_in_startup(struct ca *ca, const volatile struct slow_start_config *cfg,
						  struct slow_start_state *st)
{
	return in_slow_start(ca);
}
