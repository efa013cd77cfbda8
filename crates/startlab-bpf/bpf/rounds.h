/* SPDX-License-Identifier: MIT */
/*
 * Round trips delimited by sequence number, as Vegas and Linux's beg_snd_nxt delimit them, and
 * the RTT samples of a round (crate startlab-core, cc::rounds). Shared by the ports of Vegas,
 * Vegas slow start, Gallop-Vegas, HyStart, HyStart++ and P-Start.
 *
 * Differs from the Rust model: sequence numbers are the kernel's byte numbers (snd_una,
 * snd_nxt), compared modulo 2^32 (Linux before()/after()); the model counts segments.
 */
#ifndef STARTLAB_ROUNDS_H
#define STARTLAB_ROUNDS_H

enum round_event {
	ROUND_SAME = 0,  /* the ACK belongs to the current round */
	ROUND_FIRST = 1, /* the first ACK since the delimiter was (re)started */
	ROUND_NEXT = 2,  /* the ACK covers data sent after the round began: a new round */
};

struct rounds {
	__u32 end;     /* snd_nxt when the current round began */
	__u32 started; /* 0 until the first ACK (or after rounds_reset) */
};

/* Linux after(seq1, seq2): seq1 is later than seq2, modulo 2^32. */
static __always_inline bool seq_after(__u32 a, __u32 b)
{
	return (__s32)(b - a) < 0;
}

/* Call on every ACK that delivers data (snd_una has advanced): Rounds::on_ack. */
static __always_inline int rounds_on_ack(struct ca *ca, struct rounds *r)
{
	if (r->started && !seq_after(ca->tp->snd_una, r->end))
		return ROUND_SAME;
	r->end = ca->tp->snd_nxt;
	if (!r->started) {
		r->started = 1;
		return ROUND_FIRST;
	}
	return ROUND_NEXT;
}

/* Forget the current round: the next ACK begins a new one (Rounds::reset). */
static __always_inline void rounds_reset(struct rounds *r)
{
	r->started = 0;
}

/* The RTT samples of one round (RttStats). */
struct rtt_stats {
	__u64 sum_us;
	__u32 count;
	__u32 min_us; /* 0: none yet */
};

static __always_inline void rtt_stats_add(struct rtt_stats *s, __u32 rtt_us)
{
	s->sum_us += rtt_us;
	s->count++;
	if (!s->min_us || rtt_us < s->min_us)
		s->min_us = rtt_us;
}

/* The round's mean RTT in microseconds, 0 without samples. */
static __always_inline __u32 rtt_stats_mean_us(const struct rtt_stats *s)
{
	return s->count ? (__u32)(s->sum_us / s->count) : 0;
}

#endif
