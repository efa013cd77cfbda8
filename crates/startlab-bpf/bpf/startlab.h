/* SPDX-License-Identifier: MIT */
/*
 * What every controller shares: the configuration written by the loader before the object is
 * loaded, the per-connection state, the events reported to user space, and the arithmetic.
 *
 * Numbers. BPF has no floating point: the simulator's fractional values become fixed point.
 * A `fixed_t` is a Q32.32 number (value x 2^32, signed), a `usec_t` a duration in microseconds
 * (the resolution of tcp_sock's clocks, tcp_mstamp and srtt_us), a `flag_t` a boolean; a
 * parameter that is one of several strings is an enum whose enumerators are named
 * <enum>__<value>, so that the loader finds each by name. The congestion window keeps a fraction of a segment beside
 * snd_cwnd (see cwnd_add), so per-ACK increments of 1/cwnd are not lost as in integer counting.
 */
#ifndef STARTLAB_H
#define STARTLAB_H

#include "kernel.h"
#include <bpf_helpers.h>
#include <bpf_core_read.h>
#include <bpf_tracing.h>

typedef __s64 fixed_t;
typedef __u64 usec_t;
typedef __u32 flag_t;

#define FIXED_ONE (1LL << 32)
#define FRAC_BITS 16
#define FRAC_ONE (1u << FRAC_BITS)
#define USEC_PER_SEC 1000000ULL

/* The simulator's phases (crate startlab-core, cc::Phase). */
enum phase {
	PHASE_SLOW_START = 0,
	PHASE_CONGESTION_AVOIDANCE = 1,
	PHASE_RECOVERY = 2,
	PHASE_LOSS = 3,
};

enum event_kind {
	EVENT_EXIT = 1,  /* the first slow start ended */
	EVENT_PHASE = 2, /* the reported phase changed */
};

#define REASON_LEN 24

/* One record in the ring buffer `events`; read by crates/startlab-bpf/src/events.rs. */
struct event {
	__u64 time_ns;   /* bpf_ktime_get_ns: CLOCK_MONOTONIC, the trace's `mono` clock */
	__u32 saddr;     /* network byte order */
	__u32 daddr;
	__u16 sport;     /* host byte order */
	__u16 dport;
	__u32 kind;      /* enum event_kind */
	__u32 phase;     /* enum phase */
	__u32 ssthresh;
	__u64 cwnd_q16;  /* cwnd in segments x 2^16 (fraction included) */
	char reason[REASON_LEN]; /* the simulator's exit-reason name */
};

#endif

/* What every algorithm reads and writes besides its own state: one per connection, first in
 * the connection's storage. */
struct flow_common {
	__u32 last_cwnd;   /* snd_cwnd as this program last wrote it */
	__u32 cwnd_frac;   /* the fraction of a segment beside snd_cwnd, x 2^16 */
	__u32 exited;      /* the first slow start has ended (and was reported) */
	__u32 phase;       /* the phase last reported */
	__u32 pacing_off;  /* Initial Spreading: the spread window is over */
	char hint[REASON_LEN]; /* the reason a start-up detector gave when it ended slow start */
};

/* The arguments of one hook call. */
struct ca {
	struct sock *sk;
	struct tcp_sock *tp;
	struct flow_common *f;
	__u64 now_us; /* tcp_mstamp: the connection's clock, microseconds */
};

#define SET_HINT(ca, lit)                                        \
	do {                                                     \
		char __reason[REASON_LEN] = lit;                 \
		__builtin_memcpy((ca)->f->hint, __reason, REASON_LEN); \
	} while (0)

static __always_inline __u64 fixed_mul(__u64 v, fixed_t q)
{
	/* v x q for q in [0, 2^31): split so that nothing overflows for v < 2^32. */
	__u64 hi = (__u64)q >> 32, lo = (__u64)q & 0xffffffffULL;
	return v * hi + ((v * lo) >> 32);
}

/* The congestion window in segments x 2^16, its fraction reset when something other than this
 * program (recovery, a timeout, undo) changed snd_cwnd. */
static __always_inline __u64 cwnd_q16(struct ca *ca)
{
	if (ca->tp->snd_cwnd != ca->f->last_cwnd) {
		ca->f->last_cwnd = ca->tp->snd_cwnd;
		ca->f->cwnd_frac = 0;
	}
	return ((__u64)ca->tp->snd_cwnd << FRAC_BITS) + ca->f->cwnd_frac;
}

static __always_inline void cwnd_set_q16(struct ca *ca, __u64 w)
{
	__u64 segs = w >> FRAC_BITS;
	__u32 clamp = ca->tp->snd_cwnd_clamp;

	if (segs < 1) {
		segs = 1;
		w = FRAC_ONE;
	}
	if (segs >= clamp) {
		segs = clamp;
		w = (__u64)clamp << FRAC_BITS;
	}
	ca->tp->snd_cwnd = (__u32)segs;
	ca->f->last_cwnd = (__u32)segs;
	ca->f->cwnd_frac = (__u32)(w & (FRAC_ONE - 1));
}

static __always_inline void cwnd_add_q16(struct ca *ca, __u64 inc)
{
	cwnd_set_q16(ca, cwnd_q16(ca) + inc);
}

/* The congestion state (inet_csk(sk)->icsk_ca_state, a bit field). */
static __always_inline __u8 inet_csk_ca_state(struct sock *sk)
{
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;

	return BPF_CORE_READ_BITFIELD(icsk, icsk_ca_state);
}

/* Linux tcp_in_slow_start. */
static __always_inline bool in_slow_start(struct ca *ca)
{
	return ca->tp->snd_cwnd < ca->tp->snd_ssthresh;
}

/* Linux tcp_is_cwnd_limited (include/net/tcp.h, 6.x): limited by cwnd in the last window, or
 * in slow start and cwnd below twice what was in flight. */
static __always_inline bool cwnd_limited(struct ca *ca)
{
	struct tcp_sock *tp = ca->tp;

	if (BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited))
		return true;
	if (in_slow_start(ca))
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return false;
}

/* Linux tcp_packets_in_flight: packets_out - (sacked_out + lost_out) + retrans_out. */
static __always_inline __u32 in_flight(struct ca *ca)
{
	struct tcp_sock *tp = ca->tp;

	return tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
}

/* RFC 5681 FlightSize: snd_nxt - snd_una in segments. */
static __always_inline __u32 flight_size(struct ca *ca)
{
	__u32 mss = ca->tp->mss_cache ? ca->tp->mss_cache : 1;

	return (ca->tp->snd_nxt - ca->tp->snd_una) / mss;
}

/* Grow cwnd by `inc` whole segments without passing ssthresh; return the acknowledged segments
 * not used (crate startlab-core, cc::slow_start::grow_to_ssthresh). */
static __always_inline __u32 grow_to_ssthresh(struct ca *ca, __u32 inc, __u32 acked)
{
	__u64 w = cwnd_q16(ca);
	__u64 s = (__u64)ca->tp->snd_ssthresh << FRAC_BITS;
	__u64 room = s > w ? s - w : 0;
	__u32 used;

	if (((__u64)inc << FRAC_BITS) <= room) {
		cwnd_set_q16(ca, w + ((__u64)inc << FRAC_BITS));
		return 0;
	}
	cwnd_set_q16(ca, w > s ? w : s);
	used = (__u32)((room + FRAC_ONE - 1) >> FRAC_BITS);
	return acked > used ? acked - used : 0;
}

/* Linux tcp_slow_start on whole segments (cc::reno::linux_slow_start): *cwnd grows by the
 * acknowledged segments up to ssthresh; returns those left over. */
static __always_inline __u32 linux_slow_start(struct ca *ca, __u32 *cwnd, __u32 acked)
{
	__u32 ssthresh = ca->tp->snd_ssthresh;
	__u32 to = *cwnd + acked < ssthresh ? *cwnd + acked : ssthresh;

	if (to < *cwnd)
		to = *cwnd;
	acked -= to - *cwnd;
	*cwnd = to;
	return acked;
}

/* Linux tcp_cong_avoid_ai on whole segments (cc::reno::linux_cong_avoid_ai): one segment per
 * w acknowledged, the remainder carried in *cwnd_cnt (snd_cwnd_cnt); returns the new window. */
static __always_inline __u32 linux_cong_avoid_ai(__u32 cwnd, __u32 *cwnd_cnt, __u32 w, __u32 acked)
{
	if (!w)
		w = 1;
	/* "If credits accumulated at a higher w, apply them gently now." */
	if (*cwnd_cnt >= w) {
		*cwnd_cnt = 0;
		cwnd++;
	}
	*cwnd_cnt += acked;
	if (*cwnd_cnt >= w) {
		__u32 delta = *cwnd_cnt / w;

		*cwnd_cnt -= delta * w;
		cwnd += delta;
	}
	return cwnd;
}

/* Standard slow start: cwnd += 1 per ACK (RFC 5681 §3.1), or min(acked, L) with byte counting
 * (RFC 3465); returns what is left for congestion avoidance (cc::slow_start::Standard). */
static __always_inline __u32 standard_slow_start(struct ca *ca, __u32 abc_limit, __u32 acked)
{
	__u32 inc = abc_limit == 0 ? (acked < 1 ? acked : 1) : (acked < abc_limit ? acked : abc_limit);

	return grow_to_ssthresh(ca, inc, acked);
}
