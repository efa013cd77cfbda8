/* SPDX-License-Identifier: MIT */
/*
 * HyStart, hybrid slow start (crate startlab-core, cc::hystart): Ha 2009 ch. 6 — §6.3.1 safe
 * exit points, §6.3.2 the ACK-train and delay-increase detectors, Fig. 6.7 the algorithm
 * (variant "dissertation") — and the variant of today's Linux net/ipv4/tcp_cubic.c (variant
 * "linux", Linux 6.13 and later: hystart_update, bictcp_hystart_reset, hystart_ack_delay;
 * round_start = "low-window" gives the round start of earlier kernels). Slow start doubles as
 * standard slow start; when a detector fires at cwnd >= low_window, ssthresh = cwnd
 * ("hystart-train", "hystart-delay") and the congestion control's avoidance takes over.
 *
 * Hooks: init = reset (Fig. 6.7 "Timeout"; Linux bictcp_reset); on_ack = standard growth up to
 * ssthresh (§6.3) counting ACKs or segments (ss_counting); pkts_acked = dMin, the round
 * boundary (rounds.h, as Linux's end_seq) and the two detectors (Fig. 6.7; hystart_update);
 * set_state(Loss) = reset, re-arming HyStart; on_loss, cwnd_event: nothing (the trait's
 * defaults); in_startup = cwnd < ssthresh.
 *
 * Differs from the Rust model:
 * - Times are microseconds (tcp_mstamp, sample->rtt_us), the model's nanoseconds: dMin/2, the
 *   thresholds and the ms parameters (usec_t) are truncated to 1 us. The dissertation's
 *   eta = clamp(ceil(lastRTT / delay_divisor) ms, delay_min, delay_max) and Linux's
 *   clamp(dMin / delay_divisor, ...) divide a microsecond RTT by the Q32.32 divisor.
 * - RTT samples come only from pkts_acked's sample->rtt_us (negative = none); Linux's rate-sample
 *   RTT is the RTT of the most recently sent segment the ACK covers, the model's the ACK's sample.
 * - The round boundary compares byte sequence numbers (snd_una after the snd_nxt of the round's
 *   start, modulo 2^32, rounds.h), the model segment numbers; same rule.
 * - `acked` is Linux's newly delivered count (the controller's argument), which is what the
 *   model's NewlyDelivered recovers; the model's "0 if pkts_acked did not run for this ACK" has
 *   no counterpart (Linux runs pkts_acked on every ACK that reaches cong_avoid).
 * - ssthresh = cwnd is whole segments (snd_ssthresh = snd_cwnd), the model keeps a fraction; cwnd
 *   compared with low_window is snd_cwnd plus its 2^-16 fraction.
 * - "Paced" (Linux variant's train threshold dMin + cushion, not halved) is sk_pacing_status !=
 *   SK_PACING_NONE, the model's tcb.pacing_rate set; with tcp.pacing = "linux" or "window" both
 *   are on, with "none" both off, with "initial-spreading" both only during the first round.
 * - The cushion (hystart_ack_delay) reads sk_pacing_rate, which Linux keeps for every socket
 *   (tcp_update_pacing_rate, after each ACK). The model takes a paced flow's tcb.pacing_rate and
 *   computes an unpaced flow's from the ACK's state (srtt with this ACK's sample, flight after it)
 *   at the default ratios 200 % / 120 %; the simulator's VM fills an unpaced socket's
 *   sk_pacing_rate with the same value. Where it is 0 (a socket before any ACK) the port computes
 *   it the same way.
 * - Linux's recovery (SACK/RACK/PRR) and Linux's timeout decide when set_state(Loss) comes.
 * - The detectors run in any CA state while snd_cwnd < snd_ssthresh (cubictcp_acked), in whole
 *   segments; so does the model's "linux" variant, while its "dissertation" variant compares the
 *   fractional cwnd and ssthresh (they differ when cwnd is held at floor(ssthresh), as PRR may).
 * Where the model's "linux" variant differs from the kernel's own tcp_cubic.c (so this port too):
 * no RTT samples discarded in the second after a loss epoch began; the cushion's GSO size is
 * GSO_LEGACY_MAX_SIZE (65536 bytes), where Linux takes sk_gso_max_size (the device's GSO size
 * less MAX_TCP_HEADER + 1), about 0.5 % more cushion where it is below its 1 ms cap (pacing
 * rates above about 2 Gbit/s); an unpaced flow's rate is computed from this ACK's state, Linux's
 * after the previous ACK.
 */

enum hystart_config__variant {
	hystart_config__variant__dissertation,
	hystart_config__variant__linux,
};

enum hystart_config__detect {
	hystart_config__detect__both,
	hystart_config__detect__train,
	hystart_config__detect__delay,
};

enum hystart_config__ss_counting {
	hystart_config__ss_counting__segments,
	hystart_config__ss_counting__acks,
};

enum hystart_config__round_start {
	hystart_config__round_start__any_cwnd,   /* Linux 6.13 and later */
	hystart_config__round_start__low_window, /* before 6.13 */
};

struct hystart_config {
	enum hystart_config__variant variant;
	enum hystart_config__detect detect;
	fixed_t low_window;            /* segments: no exit below it (Linux: detectors off) */
	__u32 samples;                 /* nSampling, HYSTART_MIN_SAMPLES */
	usec_t ack_delta_ms;           /* train spacing, us */
	usec_t delay_min_ms;           /* lower clamp of the delay threshold, us */
	usec_t delay_max_ms;           /* upper clamp, us */
	fixed_t delay_divisor;         /* threshold = reference RTT / this */
	flag_t latch_below_low_window; /* dissertation: a detection below low_window stops HyStart */
	enum hystart_config__ss_counting ss_counting;
	enum hystart_config__round_start round_start; /* linux: rounds at any cwnd or from low_window */
};

#define HYSTART_GSO_MAX_BYTES 65536ULL /* GSO_LEGACY_MAX_SIZE */

enum {
	HYSTART_FOUND_NONE = 0,
	HYSTART_FOUND_TRAIN = 1,
	HYSTART_FOUND_DELAY = 2,
};

struct hystart_state {
	struct rounds round;  /* end_seq / round_open */
	__u64 round_start;    /* us, roundStart */
	__u64 last_ack;       /* us, lastJiffies: the last closely spaced ACK */
	__u32 found;          /* HYSTART_FOUND_*: slow start left by a detector */
	__u32 latched;        /* a detection below low_window kept (latch_below_low_window) */
	__u32 d_min;          /* dMin / delay_min, us */
	__u32 cur_rtt;        /* curRTT, us */
	__u32 last_rtt;       /* lastRTT, us */
	__u32 has_d_min;
	__u32 has_cur_rtt;
	__u32 has_last_rtt;
	__u32 sample_cnt;
};

/* Fig. 6.7 "Timeout": dMin <- infinity, found <- 0 (Linux bictcp_reset + bictcp_hystart_reset). */
static __always_inline void hystart_reset(struct ca *ca, struct hystart_state *st)
{
	st->found = HYSTART_FOUND_NONE;
	st->latched = 0;
	st->has_d_min = 0;
	st->has_cur_rtt = 0;
	st->has_last_rtt = 0;
	st->sample_cnt = 0;
	st->round_start = ca->now_us;
	st->last_ack = ca->now_us;
	rounds_reset(&st->round);
}

/* Fig. 6.7 "at the start of each RTT round" (Linux bictcp_hystart_reset); rounds_on_ack has set
 * the round's end (snd_nxt). */
static __always_inline void hystart_start_round(struct ca *ca, struct hystart_state *st)
{
	st->round_start = ca->now_us;
	st->last_ack = ca->now_us;
	/* lastRTT <- curRTT; a round without samples keeps the older reference. */
	if (st->has_cur_rtt) {
		st->last_rtt = st->cur_rtt;
		st->has_last_rtt = 1;
	}
	st->has_cur_rtt = 0;
	st->sample_cnt = 0;
}

/* sk_pacing_rate, bytes/s; on an unpaced socket where it is 0, tcp_update_pacing_rate's value
 * at the default ratios (200 % while cwnd < ssthresh / 2, 120 % after). */
static __always_inline __u64 hystart_pacing_rate(struct ca *ca)
{
	struct tcp_sock *tp = ca->tp;
	__u64 rate = ca->sk->sk_pacing_rate;
	__u32 w = tp->snd_cwnd > tp->packets_out ? tp->snd_cwnd : tp->packets_out;

	if (rate || ca->sk->sk_pacing_status != SK_PACING_NONE)
		return rate;
	/* tcp_update_pacing_rate: mss * ((USEC_PER_SEC / 100) << 3) * ratio * w / srtt_us. */
	rate = (__u64)tp->mss_cache * ((USEC_PER_SEC / 100) << 3);
	rate *= tp->snd_cwnd < tp->snd_ssthresh / 2 ? 200 : 120;
	rate *= w;
	if (tp->srtt_us)
		rate /= tp->srtt_us;
	return rate;
}

/* tcp_cubic.c hystart_ack_delay: min(1 ms, 4 GSO sizes at sk_pacing_rate), us; 0 without a rate. */
static __always_inline __u64 hystart_ack_delay(struct ca *ca)
{
	__u64 rate = hystart_pacing_rate(ca), d;

	if (!rate)
		return 0;
	d = HYSTART_GSO_MAX_BYTES * 4 * USEC_PER_SEC / rate;
	return d < 1000 ? d : 1000;
}

/* The ACK-train test (§6.3.2): true when the train reached the threshold. */
static __always_inline bool hystart_train_fires(struct ca *ca, const volatile struct hystart_config *cfg,
						struct hystart_state *st, __u32 d_min)
{
	__u64 now = ca->now_us;
	__u64 since = now > st->last_ack ? now - st->last_ack : 0;
	__u64 train, threshold;

	/* Fig. 6.7: "ACK is closely spaced": within ack_delta of the previous close ACK. */
	if (since > cfg->ack_delta_ms)
		return false;
	st->last_ack = now;
	train = now > st->round_start ? now - st->round_start : 0;
	if (cfg->variant == hystart_config__variant__dissertation)
		/* Fig. 6.7: train >= dMin / 2 (D_min ~ min RTT / 2, §6.3.2 item 3). */
		return train >= d_min / 2;
	/* tcp_cubic.c hystart_update: delay_min + hystart_ack_delay, halved when not paced; strict. */
	threshold = d_min + hystart_ack_delay(ca);
	if (ca->sk->sk_pacing_status == SK_PACING_NONE)
		threshold >>= 1;
	return train > threshold;
}

/* RTT (us) / divisor (Q32.32 >= 1), in us. */
static __always_inline __u64 hystart_div(__u32 rtt, const volatile struct hystart_config *cfg)
{
	__u64 d = (__u64)cfg->delay_divisor;

	return d ? ((__u64)rtt << 32) / d : rtt;
}

static __always_inline __u64 hystart_clamp(__u64 v, const volatile struct hystart_config *cfg)
{
	if (v < cfg->delay_min_ms)
		v = cfg->delay_min_ms;
	if (v > cfg->delay_max_ms)
		v = cfg->delay_max_ms;
	return v;
}

/* The delay-increase test (§6.3.2) for one RTT sample. */
static __always_inline bool hystart_delay_fires(struct ca *ca, const volatile struct hystart_config *cfg,
						struct hystart_state *st, __u32 rtt, __u32 d_min)
{
	if (cfg->variant == hystart_config__variant__dissertation) {
		__u64 d, eta;

		/* Fig. 6.7: sample the first nSampling ACKs of the round. */
		if (st->sample_cnt < cfg->samples) {
			if (!st->has_cur_rtt || rtt < st->cur_rtt)
				st->cur_rtt = rtt;
			st->has_cur_rtt = 1;
			st->sample_cnt++;
		}
		/* lastRTT unknown in the first round: no test (the model's choice). */
		if (!st->has_cur_rtt || !st->has_last_rtt)
			return false;
		/* eta = min(8, max(2, ceil(lastRTT / 16))) ms (HZ = 1000): the ceiling in ms. */
		d = (__u64)cfg->delay_divisor * 1000;
		eta = d ? ((((__u64)st->last_rtt << 32) + d - 1) / d) * 1000 : 0;
		eta = hystart_clamp(eta, cfg);
		/* curRTT >= lastRTT + eta, once nSampling samples are in. */
		return st->sample_cnt >= cfg->samples && st->cur_rtt >= st->last_rtt + eta;
	}
	/* tcp_cubic.c: curr_rtt is the round's minimum; the test runs after HYSTART_MIN_SAMPLES. */
	if (!st->has_cur_rtt || rtt < st->cur_rtt)
		st->cur_rtt = rtt;
	st->has_cur_rtt = 1;
	if (st->sample_cnt < cfg->samples) {
		st->sample_cnt++;
		return false;
	}
	/* HYSTART_DELAY_THRESH: clamp(delay_min / 8, 4 ms, 16 ms). */
	return st->cur_rtt > d_min + hystart_clamp(hystart_div(d_min, cfg), cfg);
}

static __always_inline void hystart_init(struct ca *ca, const volatile struct hystart_config *cfg,
					 struct hystart_state *st)
{
	hystart_reset(ca, st);
}

/* §6.3: HyStart keeps slow start's doubling: standard growth up to ssthresh. */
static __always_inline __u32 hystart_on_ack(struct ca *ca, const volatile struct hystart_config *cfg,
					    struct hystart_state *st, __u32 acked)
{
	__u32 inc;

	if (!cwnd_limited(ca))
		return 0;
	inc = cfg->ss_counting == hystart_config__ss_counting__acks ? (acked < 1 ? acked : 1) : acked;
	return grow_to_ssthresh(ca, inc, acked);
}

static __always_inline void hystart_pkts_acked(struct ca *ca, const volatile struct hystart_config *cfg,
					       struct hystart_state *st, const struct ack_sample *s)
{
	__s32 rtt_s = s->rtt_us;
	__u32 rtt, d_min, fired = HYSTART_FOUND_NONE;
	bool low, is_linux = cfg->variant == hystart_config__variant__linux;

	/* Both detectors work on ACKs carrying an RTT sample (Linux bictcp_acked). */
	if (rtt_s < 0)
		return;
	rtt = (__u32)rtt_s;
	/* Fig. 6.7: dMin <- min(dMin, RTT) on every ACK. */
	d_min = st->has_d_min && st->d_min < rtt ? st->d_min : rtt;
	st->d_min = d_min;
	st->has_d_min = 1;
	/* cubictcp_acked: !ca->found && tcp_in_slow_start(tp), whatever the CA state. */
	if (st->found || st->latched || !in_slow_start(ca))
		return;
	low = (cwnd_q16(ca) << (32 - FRAC_BITS)) < (__u64)cfg->low_window;
	/* Before Linux 6.13, bictcp_acked called hystart_update only from hystart_low_window on. */
	if (is_linux && low && cfg->round_start == hystart_config__round_start__low_window)
		return;
	/* hystart_update: bictcp_hystart_reset when after(snd_una, end_seq), before (6.13+) the
	 * low-window test. */
	if (rounds_on_ack(ca, &st->round) != ROUND_SAME)
		hystart_start_round(ca, st);
	/* hystart_update (6.13+): the detectors run only from hystart_low_window on. */
	if (is_linux && low)
		return;
	if (cfg->detect != hystart_config__detect__delay && hystart_train_fires(ca, cfg, st, d_min))
		fired = HYSTART_FOUND_TRAIN;
	if (cfg->detect != hystart_config__detect__train && hystart_delay_fires(ca, cfg, st, rtt, d_min) &&
	    !fired)
		fired = HYSTART_FOUND_DELAY;
	if (!fired)
		return;
	if (low) {
		/* Dissertation only: a detection below low_ssthresh is ignored (the model's choice),
		 * or kept for good with latch_below_low_window (Fig. 6.7 read literally). */
		if (cfg->latch_below_low_window)
			st->latched = 1;
		return;
	}
	/* Exit (Fig. 6.7; tcp_cubic.c): ssthresh <- cwnd, no reduction. */
	st->found = fired;
	ca->tp->snd_ssthresh = ca->tp->snd_cwnd;
	if (fired == HYSTART_FOUND_TRAIN)
		SET_HINT(ca, "hystart-train");
	else
		SET_HINT(ca, "hystart-delay");
}

/* A timeout re-arms HyStart for the slow start that follows. */
static __always_inline void hystart_set_state(struct ca *ca, const volatile struct hystart_config *cfg,
					      struct hystart_state *st, __u8 new_state)
{
	if (new_state == TCP_CA_Loss)
		hystart_reset(ca, st);
}

STARTUP_OPS(hystart) = {
	.init = hystart_init,
	.on_ack = hystart_on_ack,
	.pkts_acked = hystart_pkts_acked,
	.set_state = hystart_set_state,
};
