/* SPDX-License-Identifier: MIT */
/*
 * Reno and NewReno congestion avoidance: AIMD, RFC 5681 §3.1, with the cc's own standard slow
 * start (crate startlab-core, cc::reno).
 *
 * Differs from the Rust model:
 * - Loss recovery is Linux's own for both names (SACK, RACK-TLP, PRR): the controller chooses
 *   only ssthresh, so "reno" and "newreno" differ in the simulator and not here.
 * - n acknowledged segments with byte counting add n/cwnd at once, where the model adds 1/cwnd
 *   n times (the difference is below n^2/cwnd^3 segments).
 * - FlightSize is snd_nxt - snd_una in whole segments of mss_cache; ssthresh is truncated to
 *   whole segments, as snd_ssthresh holds them.
 */

/* The C spelling of the string parameters (config.rs: enumerator <enum>__<value>). */
enum reno_config__counting {
	reno_config__counting__rfc5681,
	reno_config__counting__linux,
};

struct reno_config {
	__u32 abc_limit; /* RFC 3465 limit L, segments; 0 counts ACKs */
	fixed_t beta;    /* ssthresh = max(FlightSize x beta, 2), or cwnd x beta with linux */
	enum reno_config__counting counting; /* rfc5681, or linux: tcp_slow_start + tcp_cong_avoid_ai */
};

struct reno_state {
	__u32 cwnd_cnt; /* snd_cwnd_cnt of tcp_cong_avoid_ai (linux counting) */
};

/* RFC 5681 eq. 4 with the configured factor. */
static __always_inline __u32 reno_ssthresh(struct ca *ca, const volatile struct reno_config *cfg,
					   struct reno_state *st)
{
	/* tcp_reno_ssthresh: from snd_cwnd, with linux counting. */
	__u32 base = cfg->counting == reno_config__counting__linux ? ca->tp->snd_cwnd : flight_size(ca);
	__u32 s = (__u32)fixed_mul(base, cfg->beta);

	return s > 2 ? s : 2;
}

/* Linux tcp_slow_start and tcp_cong_avoid_ai on whole segments (cc::reno::linux_slow_start,
 * linux_cong_avoid_ai); the cwnd fraction is dropped, as snd_cwnd has none. */
static __always_inline void reno_linux_cong_avoid(struct ca *ca, struct reno_state *st, __u32 acked)
{
	__u32 cwnd = ca->tp->snd_cwnd;

	if (in_slow_start(ca)) {
		acked = linux_slow_start(ca, &cwnd, acked);
		if (!acked) {
			cwnd_set_q16(ca, (__u64)cwnd << FRAC_BITS);
			return;
		}
	}
	cwnd = linux_cong_avoid_ai(cwnd, &st->cwnd_cnt, cwnd, acked);
	cwnd_set_q16(ca, (__u64)cwnd << FRAC_BITS);
}

/* RFC 5681 eq. 3: cwnd += 1/cwnd per ACK, or per acknowledged segment (up to L) with ABC. */
static __always_inline void reno_additive_increase(struct ca *ca, __u32 acked, __u32 abc_limit)
{
	__u32 n = abc_limit == 0 ? 1 : (acked < abc_limit ? acked : abc_limit);
	__u64 w = cwnd_q16(ca);

	if (w == 0)
		return;
	/* n / cwnd in units of 2^-16 segments: (n << 32) / (cwnd << 16). */
	cwnd_add_q16(ca, ((__u64)n << 32) / w);
}

static __always_inline void reno_cong_avoid(struct ca *ca, const volatile struct reno_config *cfg,
					    struct reno_state *st, __u32 acked)
{
	if (!cwnd_limited(ca))
		return;
	if (cfg->counting == reno_config__counting__linux) {
		reno_linux_cong_avoid(ca, st, acked);
		return;
	}
	if (in_slow_start(ca)) {
		acked = standard_slow_start(ca, cfg->abc_limit, acked);
		if (!acked)
			return;
	}
	reno_additive_increase(ca, acked, cfg->abc_limit);
}

static __always_inline void reno_set_state(struct ca *ca, const volatile struct reno_config *cfg,
					   struct reno_state *st, __u8 new_state)
{
	/* tcp_init_cwnd_reduction and tcp_enter_loss zero snd_cwnd_cnt. */
	if (new_state == TCP_CA_CWR || new_state == TCP_CA_Recovery || new_state == TCP_CA_Loss)
		st->cwnd_cnt = 0;
}

CC_OPS(reno) = {
	.ssthresh = reno_ssthresh,
	.cong_avoid = reno_cong_avoid,
	.set_state = reno_set_state,
};

/* NewReno: the same window rules (the simulator's difference is in its recovery). */
#define newreno_config reno_config
#define newreno_state reno_state
#define newreno_ops reno_ops
