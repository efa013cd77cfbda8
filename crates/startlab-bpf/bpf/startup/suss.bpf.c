/* SPDX-License-Identifier: MIT */
/*
 * SUSS, Speeding Up Slow Start (crate startlab-core, cc::suss; Arghavani et al., SIGCOMM 2024;
 * the authors' Linux, SUSSdeveloper/SUSS sourceCode/linux-6.8/suss: tcp_cubic.c
 * suss_measurements, suss_speedup, suss_cap, hystart_update, cubictcp_acked), on CUBIC only.
 * While a round's blue ACK train (the ACKs of the segments the previous round's ACK clock
 * released) is short against minRTT and the next one is predicted to fit in minRTT, the round's
 * window is 4 times the previous round's; the extra (red) segments are paced. Linux's HyStart
 * runs beside it: its delay exit unchanged ("hystart-delay"), its ACK-train exit replaced by
 * SUSS's cap ("suss-train"), or kept for a flow SUSS turned off ("hystart-train").
 *
 * Hooks: init = cubictcp_init; pkts_acked = cubictcp_acked (minRTT, the round it last fell,
 * hystart_update with suss_cap); before_cong_avoid = the start of cubictcp_cong_avoid
 * (suss_measurements: rounds, the blue train, the decision and plan at its tail, red ACKs);
 * on_ack = tcp_slow_start; before_ssthresh = SUSS's part of tcp_init_cwnd_reduction (from an
 * ACK); set_state(Recovery, CWR) = the same from a timer, set_state(Loss) = bictcp_reset and
 * bictcp_hystart_reset; cwnd_event(CA_EVENT_LOSS) = SUSS's part of tcp_enter_loss.
 *
 * What a tcp_congestion_ops cannot do, and the model's hooks = "struct-ops" does with it (the
 * only value this port takes): no hook runs per segment sent, so the authors'
 * tcp_update_skb_after_send (cwnd += 2 per send that fills the window, pacing switched on at the
 * planned start through tcp_wstamp_ns, which BPF cannot write) becomes cwnd = the round's target
 * at the decision, and pacing from the decision at red_pkt x mss / (guard + pacing period), the
 * same segments to the same end; red ACKs then leave cwnd as it is. snd_wnd is read-only, so
 * receive_window = "override" (the 6.8 floor on snd_wnd) is refused. Pacing: sk_pacing_status
 * and sk_pacing_rate are written directly; on a kernel, tcp_update_pacing_rate rewrites
 * sk_pacing_rate after every cong_avoid unless the controller has cong_control (the authors
 * suppress that in tcp_input.c), so in the kernel world the red segments go at Linux's rate
 * (200 % x cwnd / srtt in slow start) rather than SUSS's: a documented departure
 * (docs/algorithms/suss.md).
 *
 * Differs from the Rust model: sequence numbers are bytes compared modulo 2^32 (after()), the
 * blue tail head + blue x mss - 1 as in the kernel; the model counts segments. RTTs, minRTT and
 * the clock are microseconds in both (the model truncates nanoseconds as tcp_mstamp does).
 */

enum suss_config__hooks {
	suss_config__hooks__struct_ops = 1, /* "kernel" has no port: it needs per-segment hooks */
};

enum suss_config__round_start {
	suss_config__round_start__any_cwnd,   /* the 6.8 code, Linux 6.13 and later */
	suss_config__round_start__low_window, /* the evaluated 5.19.10 */
};

enum suss_config__receive_window {
	suss_config__receive_window__honour = 1, /* "override" writes snd_wnd, read-only to BPF */
};

struct suss_config {
	enum suss_config__hooks hooks;
	__u32 suss_max;   /* rounds r >= 3 may jump while r < suss_max + 2 */
	__u32 iw;         /* segments: the blue bookkeeping's initial window */
	__u32 low_window; /* segments: hystart_low_window */
	enum suss_config__round_start round_start;
	enum suss_config__receive_window receive_window;
};

#define SUSS_MIN_RTT_US 10000ULL
#define SUSS_SCALE 10
#define SUSS_BW_SCALE 24
#define SUSS_RTO_OFF_CWND 40
#define SUSS_ACK_DELTA_US 2000
#define SUSS_MIN_SAMPLES 8
#define SUSS_DELAY_MIN_US 4000
#define SUSS_DELAY_MAX_US 16000
#define SUSS_MAX_SHIFT 16

/* suss_state */
enum {
	SUSS_CLOCKED = 1,
	SUSS_PACING = 2,
	SUSS_CAP_EXIT = 3,
	SUSS_DELAY_EXIT = 4,
	SUSS_REDUCED = 9,
	SUSS_OFF = 10,
};

enum {
	SUSS_EXIT_TRAIN,
	SUSS_EXIT_HYSTART_TRAIN,
	SUSS_EXIT_HYSTART_DELAY,
};

struct suss_state {
	/* HyStart (struct bictcp) */
	__u32 found;
	__u32 delay_min;   /* us, 0: none */
	__u32 round_start; /* us */
	__u32 last_ack;    /* us */
	__u32 end_seq;     /* snd_nxt when the HyStart round began */
	__u32 curr_rtt;
	__u32 sample_cnt;
	/* SUSS */
	__u32 state;
	__u32 head;        /* suss_head_seq, bytes */
	__u32 tail;        /* suss_tail_seq, bytes */
	__u32 round_no;
	__u32 suss_round_start; /* us */
	__u32 gf;
	__u32 is_blue;
	__u32 flag;
	__u32 r_minupdate;
	__u32 blue_cnt;
	__u32 jumps;
	__u32 hold;        /* a red ACK during a jump: no growth */
	__u32 pacing;      /* SUSS set SK_PACING_NEEDED */
	__u32 last_ack_us; /* the last ACK's pkts_acked */
	__u32 has_last_ack;
	__u64 cap;
	__u64 prev_dtb;
	__u64 limit;
	__u64 rate;        /* suss_rate, bytes/s */
	__u64 paced_rate;  /* what SUSS paces at, bytes/s */
};

static __always_inline void suss_hystart_round(struct ca *ca, struct suss_state *st, __u32 now)
{
	st->round_start = now;
	st->last_ack = now;
	st->end_seq = ca->tp->snd_nxt;
	st->curr_rtt = 0xffffffff;
	st->sample_cnt = 0;
}

static __always_inline void suss_set_cwnd(struct ca *ca, __u64 w)
{
	cwnd_set_q16(ca, w << FRAC_BITS);
}

static __always_inline void suss_pacing_on(struct ca *ca, struct suss_state *st, __u64 rate)
{
	st->pacing = 1;
	st->paced_rate = rate ? rate : 1;
	ca->sk->sk_pacing_status = SK_PACING_NEEDED;
	ca->sk->sk_pacing_rate = st->paced_rate;
}

static __always_inline void suss_pacing_off(struct ca *ca, struct suss_state *st)
{
	if (!st->pacing)
		return;
	st->pacing = 0;
	ca->sk->sk_pacing_status = SK_PACING_NONE;
	ca->sk->sk_pacing_rate = 0;
}

/* hystart_ack_delay, us: min(1 ms, 4 x 65536 B / sk_pacing_rate), 0 without a rate. */
static __always_inline __u64 suss_ack_delay(struct ca *ca)
{
	__u64 rate = hystart_pacing_rate(ca), d;

	if (!rate)
		return 0;
	d = HYSTART_GSO_MAX_BYTES * 4 * USEC_PER_SEC / rate;
	return d < 1000 ? d : 1000;
}

static __always_inline void suss_exit(struct ca *ca, struct suss_state *st, bool cut, int why)
{
	__u32 f;

	st->found = 1;
	if (cut && st->jumps > 1) {
		f = in_flight(ca);
		suss_set_cwnd(ca, f ? f : 1);
	}
	ca->tp->snd_ssthresh = ca->tp->snd_cwnd;
	if (why == SUSS_EXIT_TRAIN)
		SET_HINT(ca, "suss-train");
	else if (why == SUSS_EXIT_HYSTART_TRAIN)
		SET_HINT(ca, "hystart-train");
	else
		SET_HINT(ca, "hystart-delay");
}

/* suss_cap: SUSS's ACK-train exit, and the cap it waits for. */
static __always_inline void suss_cap(struct ca *ca, struct suss_state *st, __u32 now)
{
	__u64 threshold, train;
	__u32 shift = st->jumps < SUSS_MAX_SHIFT ? st->jumps : SUSS_MAX_SHIFT;

	if (st->flag && ca->tp->snd_cwnd > st->cap) {
		st->state = SUSS_CAP_EXIT;
		suss_exit(ca, st, true, SUSS_EXIT_TRAIN);
		return;
	}
	if (!st->flag && st->state < SUSS_CAP_EXIT && st->is_blue &&
	    (__s32)(now - st->last_ack) <= SUSS_ACK_DELTA_US) {
		st->last_ack = now;
		threshold = ((__u64)st->delay_min + suss_ack_delay(ca)) >> 1;
		train = (__u64)(now - st->round_start) << shift;
		if (train > threshold) {
			st->flag = 1;
			st->cap = (__u64)ca->tp->snd_cwnd + (__u64)st->blue_cnt * ((1ULL << shift) - 1);
		}
	}
}

/* hystart_update as the authors changed it. */
static __always_inline void suss_hystart_update(struct ca *ca, const volatile struct suss_config *cfg,
						struct suss_state *st, __u32 delay, __u32 now)
{
	__u64 threshold;
	__u32 thresh;

	if (seq_after(ca->tp->snd_una, st->end_seq))
		suss_hystart_round(ca, st, now);
	if (ca->tp->snd_cwnd < cfg->low_window)
		return;
	suss_cap(ca, st, now);
	if (st->state == SUSS_OFF && (__s32)(now - st->last_ack) <= SUSS_ACK_DELTA_US) {
		st->last_ack = now;
		threshold = (__u64)st->delay_min + suss_ack_delay(ca);
		if (!st->pacing)
			threshold >>= 1;
		if ((__s64)(__s32)(now - st->round_start) > (__s64)threshold)
			suss_exit(ca, st, false, SUSS_EXIT_HYSTART_TRAIN);
	}
	if (delay < st->curr_rtt)
		st->curr_rtt = delay;
	if (st->sample_cnt < SUSS_MIN_SAMPLES) {
		st->sample_cnt++;
		return;
	}
	thresh = st->delay_min >> 3;
	if (thresh < SUSS_DELAY_MIN_US)
		thresh = SUSS_DELAY_MIN_US;
	if (thresh > SUSS_DELAY_MAX_US)
		thresh = SUSS_DELAY_MAX_US;
	if ((__u64)st->curr_rtt > (__u64)st->delay_min + thresh) {
		bool cut = st->state < SUSS_REDUCED;

		if (cut)
			st->state = SUSS_DELAY_EXIT;
		suss_exit(ca, st, cut, SUSS_EXIT_HYSTART_DELAY);
	}
}

/* red_pkt x mss / period in bytes per second, through BW_SCALE as the kernel rounds it. */
static __always_inline __u64 suss_paced_rate(__u64 red_pkt, __u64 mss, __u64 period_us)
{
	__u64 rate;

	if (!period_us)
		return 0;
	rate = ((red_pkt * mss) << SUSS_BW_SCALE) / period_us;
	return (rate * USEC_PER_SEC) >> SUSS_BW_SCALE;
}

/* suss_speedup: whether the current round may jump, with its delta_t_bat. */
static __always_inline bool suss_speedup(const volatile struct suss_config *cfg, struct suss_state *st,
					 __u64 dtb)
{
	__u32 r = st->round_no;
	__u32 s2 = r - 2 < SUSS_MAX_SHIFT ? r - 2 : SUSS_MAX_SHIFT;
	__u32 s3, k;
	__u64 d_t, d_prev, mu, pred, kk, m;

	if (r == 2) {
		if ((__u64)st->delay_min > SUSS_MIN_RTT_US && dtb < (__u64)(st->delay_min >> 2))
			return true;
		st->state = SUSS_OFF;
		return false;
	}
	s3 = r - 3 < SUSS_MAX_SHIFT ? r - 3 : SUSS_MAX_SHIFT;
	d_t = dtb << s2;
	d_prev = st->prev_dtb << s3;
	if (!d_prev)
		return false;
	mu = (d_t << SUSS_SCALE) / (d_prev << 1);
	pred = (mu * d_t) >> (SUSS_SCALE - 1);
	if (pred > (__u64)st->delay_min || r >= cfg->suss_max + 2)
		return false;
	/* Condition 2: (k+1) curr_rtt <= (k+1) minRTT + k minRTT / 8. */
	k = r > st->r_minupdate ? r - st->r_minupdate : 0;
	kk = k;
	m = st->delay_min;
	return (kk + 1) * st->curr_rtt <= (kk + 1) * m + ((kk * m) >> 3);
}

/* suss_measurements. */
static __always_inline void suss_measure(struct ca *ca, const volatile struct suss_config *cfg,
					 struct suss_state *st, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = ca->tp;
	__u32 now = (__u32)ca->now_us;
	__u64 mss = tp->mss_cache;

	if (st->is_blue == 2)
		st->is_blue = 0;
	if (seq_after(ack, st->head)) {
		st->is_blue = 1;
		st->blue_cnt = 0;
		st->round_no++;
		st->suss_round_start = now;
		st->head = tp->snd_nxt;
		suss_pacing_off(ca, st);
		st->state = SUSS_CLOCKED;
	}
	if (seq_after(ack, st->tail)) {
		__u32 elapsed = now - st->suss_round_start;
		__u32 round = st->round_no > 2 ? st->round_no : 2;
		__u32 r1 = round - 1 < SUSS_MAX_SHIFT ? round - 1 : SUSS_MAX_SHIFT;
		__u32 r2 = round - 2 < SUSS_MAX_SHIFT ? round - 2 : SUSS_MAX_SHIFT;
		__u64 blue_pkt = (__u64)cfg->iw << r1, blue_ack = blue_pkt >> 1;
		__u64 dtb = 0;
		bool have = st->blue_cnt > 0;

		st->is_blue = 2;
		st->tail = st->head + (__u32)(blue_pkt * mss) - 1;
		if (have)
			dtb = blue_pkt * elapsed / ((__u64)st->blue_cnt << 1);
		if (st->gf)
			st->gf = have && suss_speedup(cfg, st, dtb);
		if (st->gf && have) {
			__u64 red_pkt = (blue_pkt << r1) - blue_pkt;
			__u64 red_ack = (blue_ack << r2) - blue_ack;
			__u64 m = st->delay_min;
			__u64 dur = m - (m >> r1), slot = m - dur, guard;

			st->prev_dtb = dtb;
			st->limit = (__u64)tp->snd_cwnd + acked + red_pkt - red_ack;
			st->rate = suss_paced_rate(red_pkt, mss, dur);
			if (slot > dtb && dur > 0) {
				guard = (slot - dtb) >> 1;
				st->state = SUSS_PACING;
				st->jumps++;
				/* hooks = "struct-ops": the target at once (this ACK's slow start adds
				 * `acked`), the red segments spread over the guard and the period. */
				if (st->limit - acked > tp->snd_cwnd)
					suss_set_cwnd(ca, st->limit - acked);
				suss_pacing_on(ca, st, suss_paced_rate(red_pkt, mss, dur + guard));
			} else {
				st->state = SUSS_CLOCKED;
			}
		}
	}
	if (st->is_blue)
		st->blue_cnt += acked;
	if (!st->is_blue && st->state == SUSS_PACING)
		st->hold = 1;
}

/* SUSS's part of tcp_init_cwnd_reduction: the un-sent window dropped, SUSS ended. */
static __always_inline void suss_reduce(struct ca *ca, struct suss_state *st)
{
	__u32 f;

	if (st->state >= SUSS_REDUCED)
		return;
	if (st->state < SUSS_CAP_EXIT) {
		f = in_flight(ca);
		suss_set_cwnd(ca, f ? f : 1);
	}
	st->state = SUSS_REDUCED;
	suss_pacing_off(ca, st);
}

/* cubictcp_init. */
static __always_inline void suss_init(struct ca *ca, const volatile struct suss_config *cfg,
				      struct suss_state *st)
{
	__builtin_memset(st, 0, sizeof(*st));
	suss_hystart_round(ca, st, (__u32)ca->now_us);
	st->gf = 1;
	st->round_no = 1;
	st->state = SUSS_CLOCKED;
	st->head = ca->tp->snd_nxt;
	st->tail = ca->tp->snd_nxt + cfg->iw * ca->tp->mss_cache - 1;
	/* A socket already paced is not SUSS's (sk_pacing_status != SK_PACING_NONE). */
	if (ca->sk->sk_pacing_status != SK_PACING_NONE)
		st->state = SUSS_OFF;
}

/* tcp_slow_start. */
static __always_inline __u32 suss_on_ack(struct ca *ca, const volatile struct suss_config *cfg,
					 struct suss_state *st, __u32 acked)
{
	if (st->hold) {
		st->hold = 0;
		return 0;
	}
	return grow_to_ssthresh(ca, acked, acked);
}

/* cubictcp_acked. */
static __always_inline void suss_pkts_acked(struct ca *ca, const volatile struct suss_config *cfg,
					    struct suss_state *st, const struct ack_sample *s)
{
	__s32 rtt = s->rtt_us;
	__u32 delay;

	st->last_ack_us = (__u32)ca->now_us;
	st->has_last_ack = 1;
	if (rtt < 0)
		return;
	delay = rtt > 0 ? (__u32)rtt : 1;
	if (!st->delay_min || delay < st->delay_min) {
		st->delay_min = delay;
		st->r_minupdate = st->round_no;
	}
	if (st->found || !in_slow_start(ca))
		return;
	if (cfg->round_start == suss_config__round_start__low_window && ca->tp->snd_cwnd < cfg->low_window)
		return;
	suss_hystart_update(ca, cfg, st, delay, (__u32)ca->now_us);
}

/* The start of cubictcp_cong_avoid. */
static __always_inline void suss_before_cong_avoid(struct ca *ca, const volatile struct suss_config *cfg,
						   struct suss_state *st, __u32 ack, __u32 acked)
{
	st->hold = 0;
	if (st->state >= SUSS_CAP_EXIT && st->state < SUSS_OFF)
		suss_pacing_off(ca, st);
	if (st->state < SUSS_CAP_EXIT && !st->flag)
		suss_measure(ca, cfg, st, ack, acked);
}

/* tcp_init_cwnd_reduction from an ACK (a timeout's comes at another time). */
static __always_inline void suss_before_ssthresh(struct ca *ca, const volatile struct suss_config *cfg,
						 struct suss_state *st)
{
	if (st->has_last_ack && st->last_ack_us == (__u32)ca->now_us)
		suss_reduce(ca, st);
}

static __always_inline void suss_set_state(struct ca *ca, const volatile struct suss_config *cfg,
					   struct suss_state *st, __u8 new_state)
{
	if (new_state == TCP_CA_Recovery || new_state == TCP_CA_CWR) {
		suss_reduce(ca, st);
	} else if (new_state == TCP_CA_Loss) {
		st->found = 0;
		st->delay_min = 0;
		suss_hystart_round(ca, st, (__u32)ca->now_us);
	}
}

/* tcp_enter_loss: cwnd < 40 turns SUSS off; a larger window in a growth state ends it. */
static __always_inline void suss_cwnd_event(struct ca *ca, const volatile struct suss_config *cfg,
					    struct suss_state *st, enum tcp_ca_event ev)
{
	if (ev != CA_EVENT_LOSS || st->state >= SUSS_OFF)
		return;
	if (ca->tp->snd_cwnd < SUSS_RTO_OFF_CWND)
		st->state = SUSS_OFF;
	else if (st->state < SUSS_CAP_EXIT)
		st->state = SUSS_REDUCED;
	suss_pacing_off(ca, st);
}

STARTUP_OPS(suss) = {
	.init = suss_init,
	.on_ack = suss_on_ack,
	.pkts_acked = suss_pkts_acked,
	.set_state = suss_set_state,
	.cwnd_event = suss_cwnd_event,
	.before_cong_avoid = suss_before_cong_avoid,
	.before_ssthresh = suss_before_ssthresh,
};
