/* SPDX-License-Identifier: MIT */
/*
 * The eligible rate estimate (ERE) of TCP Westwood (Wang et al. 2004 §II.B), shared by the
 * ports of Westwood (cc/westwood.bpf.c) and Astart (startup/astart.bpf.c): crate startlab-core,
 * cc::rate. Per ACK: the achieved rate RE (data acknowledged during the last smoothed RTT over
 * that RTT, averaged with the constant gain re_gain), the adaptive interval
 * T_k = RTT x (cwnd/RTT_min - RE) / (cwnd/RTT_min) clamped to [0, RTT], the ERE sample (data
 * acknowledged in (t_k - T, t_k] over T, T = max(T_k, time since the previous ACK)), and the
 * first-order low-pass filter discretised with the Tustin approximation (Ha 2009 eq. 3.7),
 * alpha = (2 tau - dt) / (2 tau + dt), with virtual zero samples every tau/m of silence.
 * Duplicate ACKs count one segment each, taken back from the next cumulative ACK of several
 * (Mascolo et al., TCP Westwood; the counting of Linux's westwood_acked_count).
 *
 * Differs from the Rust model (rate.rs):
 * - Fixed point: rates are segments/s x 2^16 (u64), the filter gains 1 - alpha are Q32, times
 *   are microseconds (tcp_mstamp), tau/m is whole microseconds, and from 65536 segments up
 *   T_k's cwnd ratio drops cwnd's fraction; Rust computes in f64 seconds. On a kernel trace
 *   (50 Mbit/s, 40 ms, 25,000 ACKs) the port's ERE stayed within 0.1 % of a float replica of
 *   rate.rs fed the same ACKs (3 % over the first 20 ACKs, while it is below 100 segments/s).
 *   Against the model in the simulator the gap can be larger: with ACK clocking the start of the
 *   RE window, now - srtt, lands on the time of an earlier ACK (the one that released the
 *   segment acknowledged now) to within nanoseconds once srtt has settled, and whether that ACK
 *   is inside is decided on microseconds here (now, the history and srtt_us truncated), on
 *   nanoseconds in the model; each ACK on the other side moves RE's sample by 1/srtt, and
 *   through T_k the ERE moved by up to 2-4 % on the differential test's lossy path.
 * - The history of (ACK time, segments delivered) is a ring of ERE_HISTORY (2048) entries, one
 *   per distinct microsecond (Rust: 65536 per distinct nanosecond), in a socket storage of its
 *   own (map ere_history, 32 KiB per connection, as struct flow must stay small). With more ACK
 *   instants than that within one srtt the oldest are dropped (as Rust does past its cap), so RE
 *   and a T_k-long sample then cover a shorter span. If the kernel cannot allocate the ring,
 *   ACKs are counted but not recorded. Times are kept as 32-bit microseconds: after a silence of
 *   more than 2^30 us (18 min) the history is collapsed to its newest entry, dated 2^30 us ago.
 * - srtt is tcp_sock srtt_us / 8 (Linux's, which includes the handshake's sample; the simulator
 *   has one only with tcp.handshake = true), else the latest RTT sample of pkts_acked; RTT_min is
 *   Linux's tcp_min_rtt (windowed minimum over net.ipv4.tcp_min_rtt_wlen, 300 s by default, of
 *   the RTT of each ACK's newest segment), not the minimum of all samples.
 * - "Segments delivered by this ACK" (the model's AckSample::acked) is, with SACK, the growth of
 *   tp->delivered since the previous ACK (cumulatively or selectively acknowledged, not counting
 *   again segments SACKed before); without SACK, ack_sample.pkts_acked (the cumulative advance),
 *   because Linux counts a duplicate ACK in tp->delivered (tcp_add_reno_sack) after the hooks ran.
 * - The simulator's CwndEvent::DupAck has no kernel counterpart. A duplicate ACK here is an ACK
 *   processed with data outstanding that moved neither snd_una nor tp->delivered (no new SACK)
 *   and is not a window update (Linux's own test in tcp_ack: not FLAG_NOT_DUP): Westwood takes
 *   it from in_ack_event (CA_ACK_WIN_UPDATE not set; CA_ACK_SLOWPATH no longer marks duplicates,
 *   see ere_in_ack_event_dup), Astart, which has no in_ack_event, from pkts_acked (snd_wnd not
 *   grown; Linux calls pkts_acked for every ACK with data outstanding, duplicates included).
 *   An ACK carrying data would be counted too (the testbed's receivers send none). Pure ACKs
 *   that GRO coalesced count as one duplicate (Linux itself counts skb gso_segs of them).
 *   The simulator calls neither in_ack_event nor pkts_acked for an ACK that delivered nothing,
 *   so there neither port counts a duplicate ACK (the model counts each as one segment).
 */
#ifndef STARTLAB_RATE_H
#define STARTLAB_RATE_H

#define ERE_HISTORY 2048 /* a power of two */
#define ERE_MASK (ERE_HISTORY - 1)
#define ERE_SEARCH_STEPS 12 /* binary search over at most ERE_HISTORY entries */
#define ERE_FAR_US (1ULL << 30)
#define ERE_Q32 (1ULL << 32)

/* include/net/tcp.h: enum tcp_ca_ack_event_flags (the argument of in_ack_event). */
#define ERE_CA_ACK_WIN_UPDATE (1u << 1)

/* The estimator's parameters (rate.rs EreParams), read from the algorithm's config. */
struct ere_params {
	int slot;       /* which history ring of the connection: ERE_SLOT_CC or ERE_SLOT_STARTUP */
	usec_t tau;     /* filter time constant */
	fixed_t m;      /* virtual zero samples every tau/m; 0: none */
	flag_t seed;    /* start the filter at its first sample */
	fixed_t re_gain; /* weight of the previous RE */
};

struct ere_entry {
	__u32 t; /* ACK time, microseconds (low 32 bits of tcp_mstamp) */
	__u32 d; /* segments delivered up to and including that instant (low 32 bits) */
};

/* The history rings of a connection, in a socket storage of their own (struct flow must stay
 * small: controller.bpf.c clears it with an inline memset): one for a congestion control's
 * estimator, one for a start-up algorithm's. */
enum { ERE_SLOT_CC = 0, ERE_SLOT_STARTUP = 1 };

struct ere_history {
	struct ere_entry h[2][ERE_HISTORY];
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ere_history);
} ere_history SEC(".maps");

/* The estimator's state (in the algorithm's per-connection state). */
struct ere {
	__u32 head;      /* ring index of the oldest entry */
	__u32 len;
	__u32 pruned;    /* entries were dropped from the front */
	__u32 accounted; /* segments credited to duplicate ACKs, not yet covered cumulatively */
	__u64 delivered;
	__u64 newest_us; /* time of the newest entry, full width */
	__u64 re;        /* RE, segments/s x 2^16 */
	__u32 has_re;
	__u32 has_value; /* the filter has had its first sample */
	__u64 value;     /* ERE, segments/s x 2^16 */
	__u64 last_input;
	__u64 last_time_us;
	__u64 last_interval_us; /* T_k of the last ACK */
	/* What the previous ACK left, to tell what this one did. */
	__u32 pa_una, pa_delivered, pa_wnd; /* seen by pkts_acked */
	__u32 ev_una, ev_delivered;         /* seen by in_ack_event */
	__u32 latest_rtt_us;                /* the latest RTT sample of pkts_acked */
};

/* ---- arithmetic --------------------------------------------------------------------------- */

/* a x q / 2^32 for q <= 2^32, without overflow for any a. */
static __always_inline __u64 ere_mul_q32(__u64 a, __u64 q)
{
	return (a >> 32) * q + (((a & 0xffffffffULL) * q) >> 32);
}

/* a x b / c for b < 2^32 and 0 < c <= 2^32, without overflow in between. */
static __always_inline __u64 ere_mul_div(__u64 a, __u64 b, __u64 c)
{
	return (a / c) * b + ((a % c) * b) / c;
}

/* 1 if a >= b, else 0, for a, b < 2^63, without a branch: the verifier then follows one path
 * through the searches (barrier_var keeps clang from turning the arithmetic into a branch). */
static __always_inline __u64 ere_ge(__u64 a, __u64 b)
{
	__u64 d = a - b;

	barrier_var(d);
	d = 1 - (d >> 63);
	barrier_var(d);
	return d;
}

/* Segments per second x 2^16 of `segs` segments over `us` microseconds (us > 0). */
static __always_inline __u64 ere_rate_q16(__u64 segs, __u64 us)
{
	return ere_mul_div(segs << 16, USEC_PER_SEC, us);
}

/* ---- Linux's view --------------------------------------------------------------------------- */

/* tcp_is_sack(): the connection negotiated SACK. */
static __always_inline bool ere_sack(struct ca *ca)
{
	struct tcp_options_received *rx = &ca->tp->rx_opt;

	return BPF_CORE_READ_BITFIELD(rx, sack_ok) != 0;
}

/* Linux tcp_min_rtt (0 before the first sample). */
static __always_inline __u32 ere_min_rtt_us(struct ca *ca)
{
	__u32 v = ca->tp->rtt_min.s[0].v;

	return v == ~0U ? 0 : v;
}

/* The model's srtt.or(latest_rtt): Linux's srtt, else the latest sample. */
static __always_inline __u32 ere_srtt_us(struct ca *ca, struct ere *e)
{
	__u32 s = ca->tp->srtt_us >> 3;

	return s ? s : e->latest_rtt_us;
}

/* ---- history -------------------------------------------------------------------------------- */

/* The connection's ring for `slot` (created, zeroed, at first use); 0 if the kernel has no
 * memory for it. */
static __always_inline struct ere_entry *ere_ring(struct ca *ca, int slot)
{
	struct ere_history *r = bpf_sk_storage_get(&ere_history, ca->sk, 0, BPF_SK_STORAGE_GET_F_CREATE);

	return r ? r->h[slot ? 1 : 0] : 0;
}

static __always_inline struct ere_entry *ere_at(struct ere *e, struct ere_entry *h, __u32 i)
{
	return &h[(e->head + i) & ERE_MASK];
}

/* How many entries are at least `age` microseconds older than now32 (Rust partition_point of
 * t <= now - age; entries are in time order, all younger than 2^31 us). A binary search of
 * fixed length without branches. */
static __always_inline __u32 ere_count_older(struct ere *e, struct ere_entry *h, __u32 now32, __u64 age)
{
	__u64 first = 0, n = e->len & (2 * ERE_HISTORY - 1), half, c, nz;
	int i;

	for (i = 0; i < ERE_SEARCH_STEPS; i++) {
		half = n >> 1;
		c = ere_ge((__u32)(now32 - ere_at(e, h, (__u32)(first + half))->t), age);
		nz = n | -n; /* top bit: something left to look at */
		barrier_var(nz);
		c &= nz >> 63;
		barrier_var(c);
		first += c * (half + 1);
		n = half - c * (2 * half + 1 - n);
	}
	return (__u32)first;
}

/* Rust delivered_at(now - age): segments delivered by the latest ACK at or before it. */
static __always_inline __u32 ere_delivered_at(struct ere *e, struct ere_entry *h, __u32 now32, __u64 age)
{
	__u32 i = ere_count_older(e, h, now32, age);

	if (i == 0)
		return e->pruned && e->len ? ere_at(e, h, 0)->d : 0;
	return ere_at(e, h, i - 1)->d;
}

/* ---- the Tustin filter (rate.rs TustinFilter) ------------------------------------------------ */

/* 1 - alpha = 2 dt / (2 tau + dt), Q32; alpha is clamped at 0 (Ha 2009 eq. 3.7). */
static __always_inline __u64 ere_gain(__u64 dt, __u64 tau)
{
	if (dt >= 2 * tau)
		return ERE_Q32;
	return ((2 * dt) << 32) / (2 * tau + dt);
}

/* One step of eq. 3.7: ERE = alpha ERE + (1 - alpha)/2 (x + x_prev). */
static __always_inline void ere_step(struct ere *e, __u64 x, __u64 dt, __u64 tau)
{
	__u64 g = ere_gain(dt, tau);

	e->value = e->value - ere_mul_q32(e->value, g) + (ere_mul_q32(x + e->last_input, g) >> 1);
	e->last_input = x;
}

/* a^k for a Q32 below 1 (square and multiply, without branches). */
static __always_inline __u64 ere_pow_q32(__u64 a, __u64 k)
{
	__u64 r = ERE_Q32, bit;
	int i;

	if (k >> 32)
		return 0;
	for (i = 0; i < 32; i++) {
		bit = k & 1;
		barrier_var(bit);
		r = ere_mul_q32(r, ERE_Q32 - bit * (ERE_Q32 - a));
		a = ere_mul_q32(a, a);
		k >>= 1;
	}
	return r;
}

static __always_inline void ere_filter(struct ere *e, const struct ere_params *p, __u64 x, __u64 now)
{
	__u64 dt, tau, every, n;

	if (!e->has_value) {
		/* A fresh filter starts at 0 (or, seeded, at its first sample). */
		e->value = p->seed ? x : 0;
		e->last_input = x;
		e->last_time_us = now;
		e->has_value = 1;
		return;
	}
	dt = now > e->last_time_us ? now - e->last_time_us : 0;
	e->last_time_us = now;
	tau = p->tau ? p->tau : 1;
	if (p->m > 0) {
		every = (tau << 32) / (__u64)p->m;
		if (!every)
			every = 1;
		if (dt > every) {
			/* Virtual null samples every tau/m: the first blends the last real input with
			 * zero, the rest are pure decay by the same alpha. */
			n = (dt + every - 1) / every - 1;
			if (n < 1)
				n = 1;
			ere_step(e, 0, every, tau);
			if (n > 1)
				e->value = ere_mul_q32(e->value, ere_pow_q32(ERE_Q32 - ere_gain(every, tau), n - 1));
			dt = dt > every * n ? dt - every * n : 0;
		}
	}
	ere_step(e, x, dt, tau);
}

/* ---- the estimator (rate.rs Ere) ----------------------------------------------------------- */

/* Rust Ere::record: `acked` segments arrived at `now`. */
static __always_inline void ere_record(struct ca *ca, const struct ere_params *p, struct ere *e,
				       __u32 acked, __u64 now)
{
	__u32 now32 = (__u32)now, d, d0, n, i, gap, age;
	__u64 rtt, rtt_min, sample, re, eps, tk, cw, w_re, span;
	struct ere_entry *h = ere_ring(ca, p->slot), *last, *prev, *first;

	e->delivered += acked;
	if (!h)
		return;
	d = (__u32)e->delivered;
	if (e->len && e->newest_us == now) {
		ere_at(e, h, e->len - 1)->d = d;
	} else {
		if (e->len && now - e->newest_us > ERE_FAR_US) {
			/* A long silence: only the newest entry matters, dated within 32-bit range. */
			e->head = (e->head + e->len - 1) & ERE_MASK;
			e->len = 1;
			e->pruned = 1;
			ere_at(e, h, 0)->t = now32 - (__u32)ERE_FAR_US;
		}
		if (e->len >= ERE_HISTORY) {
			e->head = (e->head + 1) & ERE_MASK;
			e->len = ERE_HISTORY - 1;
			e->pruned = 1;
		}
		last = ere_at(e, h, e->len);
		last->t = now32;
		last->d = d;
		e->len++;
		e->newest_us = now;
	}
	rtt = ere_srtt_us(ca, e);
	rtt_min = ere_min_rtt_us(ca);
	if (!rtt || !rtt_min)
		return;
	/* Keep one entry at or before now - srtt (the longest span looked back), drop older. */
	if (e->len > 2) {
		i = ere_count_older(e, h, now32, rtt);
		if (i > 1) {
			n = i - 1;
			if (n > e->len - 2)
				n = e->len - 2;
			e->head = (e->head + n) & ERE_MASK;
			e->len -= n;
			e->pruned = 1;
		}
	}

	/* RE: data acknowledged during the latest RTT, divided by it (§II.B), exponentially
	 * averaged with a constant gain, starting at the first sample. */
	sample = ere_rate_q16((__u32)(d - ere_delivered_at(e, h, now32, rtt)), rtt);
	eps = p->re_gain < 0 ? 0 : (__u64)p->re_gain;
	if (eps > ERE_Q32)
		eps = ERE_Q32;
	re = e->has_re ? ere_mul_q32(e->re, eps) + ere_mul_q32(sample, ERE_Q32 - eps) : sample;
	e->re = re;
	e->has_re = 1;

	/* T_k (§II.B) = RTT (expected - RE) / expected, expected = cwnd / RTT_min, in [0, RTT]:
	 * with RE x RTT_min as a window, RTT (cwnd - RE x RTT_min) / cwnd. */
	cw = cwnd_q16(ca);
	w_re = ere_mul_div(re, rtt_min, USEC_PER_SEC);
	if (w_re >= cw) {
		tk = 0;
	} else {
		if (cw >> 32) { /* 65536 segments or more: fewer fraction bits */
			cw >>= 16;
			w_re >>= 16;
		}
		tk = rtt - ere_mul_div(w_re, rtt, cw);
	}
	e->last_interval_us = tk;

	/* The ERE sample (§II.B): data acknowledged in (t_k - T, t_k] over T, T = max(T_k, time
	 * since the previous ACK); T_k cut to the time since the first ACK while younger. */
	if (e->len < 2 || e->len > ERE_HISTORY)
		return;
	prev = ere_at(e, h, e->len - 2);
	first = ere_at(e, h, 0);
	gap = now32 - prev->t;
	age = now32 - first->t;
	if ((__u64)gap >= (tk < age ? tk : (__u64)age)) {
		d0 = prev->d;
		span = gap;
	} else if ((__u64)age <= tk) {
		d0 = first->d;
		span = age;
	} else {
		d0 = ere_delivered_at(e, h, now32, tk);
		span = tk;
	}
	if (span > 0)
		ere_filter(e, p, ere_rate_q16((__u32)(d - d0), span), now);
}

/* Rust Ere::on_ack: a cumulative ACK of several segments after duplicate ACKs counts only what
 * they did not (at least one segment). */
static __always_inline void ere_on_ack(struct ca *ca, const struct ere_params *p, struct ere *e,
				       __u32 acked, __u64 now)
{
	if (acked > 1 && e->accounted > 0) {
		if (e->accounted >= acked) {
			e->accounted -= acked;
			acked = 1;
		} else {
			acked -= e->accounted;
			e->accounted = 0;
		}
	}
	ere_record(ca, p, e, acked, now);
}

/* Rust Ere::on_dupack: one segment received out of order. */
static __always_inline void ere_on_dupack(struct ca *ca, const struct ere_params *p, struct ere *e,
					  __u64 now)
{
	e->accounted++;
	ere_record(ca, p, e, 1, now);
}

/* The ERE in segments/s x 2^16; false before the first sample. */
static __always_inline bool ere_rate(struct ere *e, __u64 *rate)
{
	*rate = e->value;
	return e->has_value;
}

/* Rust Ere::window: ERE x RTT_min in segments x 2^16; false without an estimate. */
static __always_inline bool ere_window_q16(struct ca *ca, struct ere *e, __u64 *w)
{
	__u32 rtt_min = ere_min_rtt_us(ca);

	if (!e->has_value || !rtt_min)
		return false;
	*w = ere_mul_div(e->value, rtt_min, USEC_PER_SEC);
	return true;
}

/* ---- the kernel's hooks --------------------------------------------------------------------- */

static __always_inline void ere_init(struct ca *ca, struct ere *e)
{
	e->pa_una = e->ev_una = ca->tp->snd_una;
	e->pa_delivered = e->ev_delivered = ca->tp->delivered;
	e->pa_wnd = ca->tp->snd_wnd;
}

enum ere_ack {
	ERE_ACK_NONE = 0, /* nothing for the estimator */
	ERE_ACK_DATA = 1, /* it delivered data: Ere::on_ack ran (the model's pkts_acked) */
	ERE_ACK_DUP = 2,  /* a duplicate ACK (the model's CwndEvent::DupAck), not yet counted */
};

/* From pkts_acked (every ACK processed with data outstanding): the segments the ACK delivered go
 * to Ere::on_ack. Returns ERE_ACK_DUP for a duplicate ACK, for callers without in_ack_event. */
static __always_inline int ere_pkts_acked(struct ca *ca, const struct ere_params *p, struct ere *e,
					   const struct ack_sample *s)
{
	struct tcp_sock *tp = ca->tp;
	bool una_moved = tp->snd_una != e->pa_una;
	bool wnd_grew = tp->snd_wnd > e->pa_wnd;
	__u32 acked = ere_sack(ca) ? tp->delivered - e->pa_delivered : s->pkts_acked;

	e->pa_una = tp->snd_una;
	e->pa_delivered = tp->delivered;
	e->pa_wnd = tp->snd_wnd;
	if (s->rtt_us > 0)
		e->latest_rtt_us = s->rtt_us;
	if (acked > 0) {
		ere_on_ack(ca, p, e, acked, ca->now_us);
		return ERE_ACK_DATA;
	}
	return !una_moved && !wnd_grew && tp->packets_out > 0 ? ERE_ACK_DUP : ERE_ACK_NONE;
}

/* From in_ack_event (every ACK): a duplicate ACK, that is one that left snd_una where it was, is
 * not a window update (CA_ACK_WIN_UPDATE; Linux's own test in tcp_ack: not FLAG_NOT_DUP) and
 * delivered nothing (no new SACK), with data outstanding. Not CA_ACK_SLOWPATH: since
 * tcp_in_ack_event moved after tcp_clean_rtx_queue (AccECN preparation, 2025) it is set only for
 * ACKs that took the slow path of tcp_rcv_established, and pure duplicate ACKs pass header
 * prediction (seen on 6.18: duplicate ACKs arrive with flags 0). */
static __always_inline bool ere_in_ack_event_dup(struct ca *ca, struct ere *e, __u32 flags)
{
	struct tcp_sock *tp = ca->tp;
	bool dup = !(flags & ERE_CA_ACK_WIN_UPDATE) && tp->snd_una == e->ev_una && tp->packets_out > 0 &&
		   (!ere_sack(ca) || tp->delivered == e->ev_delivered);

	e->ev_una = tp->snd_una;
	e->ev_delivered = tp->delivered;
	return dup;
}

#endif
