/* SPDX-License-Identifier: MIT */
/*
 * HyStart, hybrid slow start (crate startlab-core, cc::hystart): Ha 2009 ch. 6 — §6.3.1 safe
 * exit points, §6.3.2 the ACK-train and delay-increase detectors, Fig. 6.7 the algorithm
 * (variant "dissertation") — and the variant of today's Linux net/ipv4/tcp_cubic.c (variant
 * "linux": hystart_update, bictcp_hystart_reset). Slow start doubles as standard slow start;
 * when a detector fires at cwnd >= low_window, ssthresh = cwnd ("hystart-train",
 * "hystart-delay") and the congestion control's avoidance takes over.
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
 * - "Paced" (Linux variant's train threshold dMin instead of dMin/2) is sk_pacing_status !=
 *   SK_PACING_NONE, the model's tcb.pacing_rate set; with tcp.pacing = "linux" or "window" both
 *   are on, with "none" both off, with "initial-spreading" both only during the first round.
 * - Linux's recovery (SACK/RACK/PRR) and Linux's timeout decide when set_state(Loss) comes.
 * Where the model's "linux" variant differs from the kernel's own tcp_cubic.c (so this port too):
 * no TSO/GRO cushion (hystart_ack_delay) on the train threshold; no RTT samples discarded in the
 * second after a loss epoch began; and rounds delimited only from low_window on, where today's
 * hystart_update resets the round before its low-window test (rounds tracked from the start).
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
};

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

/* The ACK-train test (§6.3.2): true when the train reached the threshold. */
static __always_inline bool hystart_train_fires(struct ca *ca, const volatile struct hystart_config *cfg,
						struct hystart_state *st, __u32 d_min)
{
	__u64 now = ca->now_us;
	__u64 since = now > st->last_ack ? now - st->last_ack : 0;
	__u64 train;

	/* Fig. 6.7: "ACK is closely spaced": within ack_delta of the previous close ACK. */
	if (since > cfg->ack_delta_ms)
		return false;
	st->last_ack = now;
	train = now > st->round_start ? now - st->round_start : 0;
	if (cfg->variant == hystart_config__variant__dissertation)
		/* Fig. 6.7: train >= dMin / 2 (D_min ~ min RTT / 2, §6.3.2 item 3). */
		return train >= d_min / 2;
	/* tcp_cubic.c hystart_update: threshold delay_min, halved when not paced; strict. */
	if (ca->sk->sk_pacing_status != SK_PACING_NONE)
		return train > d_min;
	return train > d_min / 2;
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

static __always_inline __u32 hystart_on_loss(struct ca *ca, const volatile struct hystart_config *cfg,
					     struct hystart_state *st, __u32 ssthresh)
{
	return ssthresh;
}

static __always_inline void hystart_pkts_acked(struct ca *ca, const volatile struct hystart_config *cfg,
					       struct hystart_state *st, const struct ack_sample *s)
{
	__s32 rtt_s = s->rtt_us;
	__u32 rtt, d_min, fired = HYSTART_FOUND_NONE;
	bool low;

	/* Both detectors work on ACKs carrying an RTT sample (Linux bictcp_acked). */
	if (rtt_s < 0)
		return;
	rtt = (__u32)rtt_s;
	/* Fig. 6.7: dMin <- min(dMin, RTT) on every ACK. */
	d_min = st->has_d_min && st->d_min < rtt ? st->d_min : rtt;
	st->d_min = d_min;
	st->has_d_min = 1;
	if (st->found || st->latched || !in_slow_start(ca))
		return;
	low = (cwnd_q16(ca) << (32 - FRAC_BITS)) < (__u64)cfg->low_window;
	/* Linux runs the detectors only from hystart_low_window on (rounds included). */
	if (cfg->variant == hystart_config__variant__linux && low)
		return;
	/* A round starts on the ACK past end_seq (Linux: after(snd_una, end_seq)). */
	if (rounds_on_ack(ca, &st->round) != ROUND_SAME)
		hystart_start_round(ca, st);
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

static __always_inline void hystart_cwnd_event(struct ca *ca, const volatile struct hystart_config *cfg,
					       struct hystart_state *st, enum tcp_ca_event ev)
{
}

static __always_inline bool hystart_in_startup(struct ca *ca, const volatile struct hystart_config *cfg,
					       struct hystart_state *st)
{
	return in_slow_start(ca);
}
