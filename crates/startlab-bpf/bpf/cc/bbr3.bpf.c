/* SPDX-License-Identifier: MIT */
/*
 * BBR v3 (crate startlab-core, cc::bbr3; Google's v3 net/ipv4/tcp_bbr.c, github.com/google/bbr
 * branch v3; draft-ietf-ccwg-bbr): BBR's model of the path with bounds on both sides — bw_hi
 * and inflight_hi probed upward, bw_lo and inflight_lo cut by beta in lossy rounds — and the
 * modes Startup (full-bandwidth and loss exits), Drain, ProbeBW (Down, Cruise, Refill, Up) and
 * ProbeRTT, setting sk_pacing_rate and snd_cwnd itself from cong_control.
 *
 * Hooks (MODEL_OPS, the struct_ops startlab_model, which has cong_control and no cong_avoid):
 * init = bbr_init; ssthresh = bbr_ssthresh (saves cwnd and the bounds for undo, ssthresh
 * unchanged); cong_control = bbr_main; set_state = bbr_set_state (Loss, and leaving it);
 * cwnd_event = bbr_cwnd_event (TX_START while application-limited); undo_cwnd = bbr_undo_cwnd;
 * in_startup = until full_bw_reached.
 *
 * Signals: only the model's `signals = "mainline"`, what a struct_ops program has on mainline
 * Linux 6.18, which lacks v3's rs->tx_in_flight, rs->lost and the skb_marked_lost hook. A loss
 * in an ACK's rs->losses marks the round lossy (bbr_note_loss at the start of cong_control),
 * tx_in_flight is rs->prior_in_flight, and lost is what tp->lost grew by since the start of the
 * previous round (lost_at_round, taken at each round start). The enum of the `signals`
 * parameter has no `v3` enumerator, so the loader refuses a configuration asking for it.
 *
 * The arithmetic is the kernel's and the model's: bandwidth in packets/us << 24, gains in 1/256
 * (the configuration's Q32.32 gains rounded to the nearest 1/256, as the model rounds them),
 * times in microseconds from tcp_mstamp, delivered_mstamp and tcp_wstamp_ns, the kernel's
 * bit-field saturations (rounds_since_probe 8 bits, extra_acked_win_rtts 5, full_bw_cnt 2,
 * loss_events_in_round 4, ack_epoch_acked 20, init_cwnd 7).
 *
 * Differs from the Rust model: nothing in the arithmetic (checked hook by hook by the
 * differential test). Jiffies are now_us x hz / 10^6 (as bbr.bpf.c), not tcp_jiffies32. The
 * random draws (bbr_pick_probe_wait: rounds, then microseconds) are bpf_get_prandom_u32() x n
 * >> 32, which the simulator's VM draws from the connection's stream, the same the model draws
 * from; the kernel's get_random_u32_below(n) rejects a sliver of draws to remove the bias.
 * tp->delivered, tp->lost, next_rtt_delivered, loss_round_delivered and lost_at_round are 32
 * bits as in the kernel, compared with before() (the model's are 64 bits, compared plainly).
 * bbr_bdp and bbr_rate_bytes_per_sec are computed without the overflow of the kernel's 64-bit
 * products (the model computes them in 128 bits). rs->is_ack_delayed keeps a delayed ACK's RTT
 * out of an expired ProbeRTT filter as in v3 (the simulator gives 0, the model has none). The
 * pacing rate is not capped by sk_max_pacing_rate, and the least burst is the configuration's
 * min_tso_segs, not the namespace's sysctl_tcp_min_tso_segs.
 *
 * Left out, as in the model: the ECN response, PLB, fast_ack_mode, CA_EVENT_TLP_RECOVERY and
 * the TLP exception of bbr_advance_latest_delivery_signals.
 */

/* The sources of v3's loss signals the port implements (cc::bbr3::Signals); `v3` has no
 * enumerator: mainline Linux gives a struct_ops program nothing to take it from. */
enum bbr3_config__signals {
	bbr3_config__signals__mainline = 1,
};

struct bbr3_config {
	fixed_t startup_pacing_gain; /* 710/256 */
	fixed_t startup_cwnd_gain;   /* Startup's and Drain's cwnd gain (2) */
	fixed_t drain_gain;          /* 88/256 */
	fixed_t cwnd_gain;           /* ProbeBW's cwnd gain (2) */
	fixed_t probe_up_gain;       /* ProbeBW Up's pacing gain (5/4) */
	fixed_t probe_down_gain;     /* ProbeBW Down's (232/256) */
	fixed_t bw_probe_cwnd_gain;  /* added to cwnd_gain in Up (1/4) */
	__u32 min_rtt_win_s;         /* seconds of the min-RTT filter */
	__u32 probe_rtt_win_ms;      /* window of the ProbeRTT min-RTT filter */
	__u32 probe_rtt_ms;          /* least time in ProbeRTT; 0: none */
	fixed_t probe_rtt_cwnd_gain; /* ProbeRTT's cwnd as a fraction of the BDP (1/2) */
	fixed_t full_bw_thresh;      /* growth that restarts the plateau count (5/4) */
	__u32 full_bw_cnt;           /* rounds without it that mean the pipe is full (3) */
	__u32 full_loss_cnt;         /* loss events of a recovery round ending Startup (6) */
	fixed_t loss_thresh;         /* 5/256 */
	fixed_t beta;                /* 76/256 */
	fixed_t inflight_headroom;   /* 38/256 */
	__u32 cwnd_min_target;
	__u32 pacing_margin_percent;
	fixed_t extra_acked_gain;
	__u32 extra_acked_win_rtts;
	__u32 extra_acked_max_ms;
	__u32 bw_probe_max_rounds;
	__u32 bw_probe_rand_rounds;
	__u32 bw_probe_base_ms;
	__u32 bw_probe_rand_ms;
	__u32 tso_rtt_shift;
	__u32 pacing_shift;          /* sk_pacing_shift */
	__u32 min_tso_segs;          /* net.ipv4.tcp_min_tso_segs */
	flag_t fast_path;
	enum bbr3_config__signals signals;
	__u32 hz;                    /* jiffies per second (CONFIG_HZ) */
};

enum bbr3_mode {
	BBR3_STARTUP = 0,
	BBR3_DRAIN = 1,
	BBR3_PROBE_BW = 2,
	BBR3_PROBE_RTT = 3,
};

/* enum bbr_pacing_gain_phase. */
enum bbr3_phase {
	BBR3_BW_PROBE_UP = 0,
	BBR3_BW_PROBE_DOWN = 1,
	BBR3_BW_PROBE_CRUISE = 2,
	BBR3_BW_PROBE_REFILL = 3,
};

/* enum bbr_ack_phase. */
enum bbr3_ack_phase {
	BBR3_ACKS_INIT = 0,
	BBR3_ACKS_REFILLING = 1,
	BBR3_ACKS_PROBE_STARTING = 2,
	BBR3_ACKS_PROBE_FEEDBACK = 3,
	BBR3_ACKS_PROBE_STOPPING = 4,
};

#define BBR3_BW_SCALE 24
#define BBR3_BW_UNIT (1ULL << BBR3_BW_SCALE)
#define BBR3_SCALE 8
#define BBR3_UNIT (1u << BBR3_SCALE)
#define BBR3_UNSET (~0U)
#define BBR3_GSO_LEGACY_MAX_SIZE 65536ULL
#define BBR3_TSO_MAX_BYTES (65536 - 1 - 320) /* GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER */

struct bbr3_state {
	__u64 cycle_mstamp;
	__u64 ack_epoch_mstamp;
	__u32 min_rtt_us;
	__u32 min_rtt_stamp;
	__u32 probe_rtt_done_stamp;
	__u32 probe_rtt_min_us;
	__u32 probe_rtt_min_stamp;
	__u32 next_rtt_delivered;
	__u32 mode;
	__u32 prev_ca_state;
	__u32 round_start;
	__u32 bw_probe_up_rounds;
	__u32 try_fast_path;
	__u32 idle_restart;
	__u32 probe_rtt_round_done;
	__u32 init_cwnd;
	__u32 pacing_gain;
	__u32 cwnd_gain;
	__u32 full_bw_reached;
	__u32 full_bw_cnt;
	__u32 cycle_idx;
	__u32 has_seen_rtt;
	__u32 prior_cwnd;
	__u32 full_bw;
	__u32 extra_acked[2];
	__u32 ack_epoch_acked;
	__u32 extra_acked_win_rtts;
	__u32 extra_acked_win_idx;
	__u32 full_bw_now;
	__u32 loss_in_cycle;
	__u32 loss_round_delivered;
	__u32 undo_bw_lo;
	__u32 undo_inflight_lo;
	__u32 undo_inflight_hi;
	__u32 bw_latest;
	__u32 bw_lo;
	__u32 bw_hi[2];
	__u32 inflight_latest;
	__u32 inflight_lo;
	__u32 inflight_hi;
	__u32 bw_probe_up_cnt;
	__u32 bw_probe_up_acks;
	__u32 probe_wait_us;
	__u32 bw_probe_samples;
	__u32 prev_probe_too_high;
	__u32 stopped_risky_probe;
	__u32 rounds_since_probe;
	__u32 loss_round_start;
	__u32 loss_in_round;
	__u32 ack_phase;
	__u32 loss_events_in_round;
	__u32 sample_bw;        /* this ACK's bandwidth sample (bbr_context.sample_bw) */
	__u32 lost_at_round[2]; /* tp->lost at the start of the previous round and of this one */
};

/* What bbr_is_inflight_too_high judges of a rate sample (v3's rs->lost, rs->tx_in_flight). */
struct bbr3_loss {
	__u32 lost;
	__u32 tx_in_flight;
	__u32 is_app_limited;
};

#define BBR3_ARGS struct ca *ca, const volatile struct bbr3_config *cfg, struct bbr3_state *st
#define BBR3_PASS ca, cfg, st

/* A Q32.32 gain in 1/256, rounded to the nearest (the model's (g * 256).round()). */
static __always_inline __u32 bbr3_unit(fixed_t g)
{
	return (__u32)(((__u64)g + (1ULL << 23)) >> 24);
}

/* tcp_jiffies32. */
static __always_inline __u32 bbr3_jiffies(BBR3_ARGS)
{
	return (__u32)(ca->now_us * cfg->hz / USEC_PER_SEC);
}

/* msecs_to_jiffies, rounding up. */
static __always_inline __u32 bbr3_ms_to_jiffies(BBR3_ARGS, __u32 ms)
{
	return (__u32)(((__u64)ms * cfg->hz + 999) / 1000);
}

/* get_random_u32_below(n). */
static __always_inline __u32 bbr3_random_below(__u32 n)
{
	return (__u32)(((__u64)bpf_get_prandom_u32() * n) >> 32);
}

/* The kernel's after() on 32-bit clocks and its !before() on delivered counts. */
static __always_inline bool bbr3_after(__u32 a, __u32 b)
{
	return (__s32)(a - b) > 0;
}

static __always_inline bool bbr3_not_before(__u32 a, __u32 b)
{
	return (__s32)(a - b) >= 0;
}

static __always_inline __u32 bbr3_min(__u32 a, __u32 b)
{
	return a < b ? a : b;
}

static __always_inline __u32 bbr3_max(__u32 a, __u32 b)
{
	return a > b ? a : b;
}

/* bbr_max_bw: the larger of the two windows of the max filter. */
static __always_inline __u32 bbr3_max_bw(struct bbr3_state *st)
{
	return bbr3_max(st->bw_hi[0], st->bw_hi[1]);
}

/* bbr_bw: the estimate, bounded by bw_lo. */
static __always_inline __u32 bbr3_bw(struct bbr3_state *st)
{
	return bbr3_min(bbr3_max_bw(st), st->bw_lo);
}

/* bbr_extra_acked. */
static __always_inline __u32 bbr3_extra_acked(struct bbr3_state *st)
{
	return bbr3_max(st->extra_acked[0], st->extra_acked[1]);
}

/* bbr_rate_bytes_per_sec: rate x mss x gain >> 8 x (10^6 / 100 x (100 - margin)) >> 24, at
 * least 1; the last product split so that it does not overflow. */
static __always_inline __u64 bbr3_rate_bytes_per_sec(struct ca *ca, __u64 rate, __u32 gain,
						     __u32 margin)
{
	__u64 x, m;

	if (margin > 99)
		margin = 99;
	x = (rate * ca->tp->mss_cache * gain) >> BBR3_SCALE;
	m = USEC_PER_SEC / 100 * (100 - margin);
	rate = (x >> BBR3_BW_SCALE) * m + (((x & (BBR3_BW_UNIT - 1)) * m) >> BBR3_BW_SCALE);
	return rate ? rate : 1;
}

/* bbr_bw_to_pacing_rate. */
static __always_inline __u64 bbr3_bw_to_pacing_rate(BBR3_ARGS, __u32 bw, __u32 gain)
{
	return bbr3_rate_bytes_per_sec(ca, bw, gain, cfg->pacing_margin_percent);
}

/* bbr_init_pacing_rate_from_rtt: Startup's gain x cwnd / srtt (1 ms before any RTT sample). */
static __always_inline void bbr3_init_pacing_rate_from_rtt(BBR3_ARGS)
{
	__u64 bw, rtt_us;

	if (ca->tp->srtt_us) {
		rtt_us = ca->tp->srtt_us >> 3;
		if (!rtt_us)
			rtt_us = 1;
		st->has_seen_rtt = 1;
	} else {
		rtt_us = 1000;
	}
	bw = (__u64)ca->tp->snd_cwnd * BBR3_BW_UNIT / rtt_us;
	if (bw > 0xffffffffULL)
		bw = 0xffffffffULL;
	ca->sk->sk_pacing_rate =
		bbr3_bw_to_pacing_rate(BBR3_PASS, (__u32)bw, bbr3_unit(cfg->startup_pacing_gain));
}

/* bbr_set_pacing_rate: only up until the pipe is known full. */
static __always_inline void bbr3_set_pacing_rate(BBR3_ARGS, __u32 bw, __u32 gain)
{
	__u64 rate = bbr3_bw_to_pacing_rate(BBR3_PASS, bw, gain);

	if (!st->has_seen_rtt && ca->tp->srtt_us)
		bbr3_init_pacing_rate_from_rtt(BBR3_PASS);
	if (st->full_bw_reached || rate > ca->sk->sk_pacing_rate)
		ca->sk->sk_pacing_rate = rate;
}

/* bbr_tso_segs_goal (bbr_tso_segs_generic with mss_cache and GSO_LEGACY_MAX_SIZE): about 1 ms
 * at the pacing rate plus 64 KB halved for every 2^tso_rtt_shift us of min RTT, in segments. */
static __always_inline __u32 bbr3_tso_segs_goal(BBR3_ARGS)
{
	__u32 shift = cfg->pacing_shift < 63 ? cfg->pacing_shift : 63;
	__u64 bytes = ca->sk->sk_pacing_rate >> shift;
	__u32 mss = ca->tp->mss_cache ? ca->tp->mss_cache : 1;
	__u32 r, segs;

	if (cfg->tso_rtt_shift) {
		r = st->min_rtt_us >> (cfg->tso_rtt_shift & 31);
		if (r < 32)
			bytes += BBR3_GSO_LEGACY_MAX_SIZE >> r;
	}
	bytes = (__u32)bytes;
	if (bytes > BBR3_TSO_MAX_BYTES)
		bytes = BBR3_TSO_MAX_BYTES;
	segs = (__u32)(bytes / mss);
	return bbr3_max(segs, cfg->min_tso_segs);
}

/* bbr_save_cwnd. */
static __always_inline void bbr3_save_cwnd(BBR3_ARGS)
{
	__u32 cwnd = ca->tp->snd_cwnd;

	if (st->prev_ca_state < TCP_CA_Recovery && st->mode != BBR3_PROBE_RTT)
		st->prior_cwnd = cwnd;
	else
		st->prior_cwnd = bbr3_max(st->prior_cwnd, cwnd);
}

/* bbr_bdp: ceil(bw x min_rtt x gain), or the initial window without an RTT sample. The
 * product w x gain is taken in two halves of w, so that it is exact past 2^64. */
static __always_inline __u32 bbr3_bdp(BBR3_ARGS, __u32 bw, __u32 gain)
{
	__u64 w, hi, lo;

	if (st->min_rtt_us == BBR3_UNSET)
		return st->init_cwnd;
	w = (__u64)bw * st->min_rtt_us;
	hi = (w >> 32) * gain;
	lo = (w & 0xffffffffULL) * gain;
	/* ((w x gain >> 8) + BW_UNIT - 1) / BW_UNIT, with w x gain = hi x 2^32 + lo */
	return (__u32)(hi + (((lo >> BBR3_SCALE) + BBR3_BW_UNIT - 1) >> BBR3_BW_SCALE));
}

/* bbr_quantization_budget: room for three bursts, the least cwnd, and 2 more in Up. */
static __always_inline __u32 bbr3_quantization_budget(BBR3_ARGS, __u32 cwnd)
{
	cwnd = bbr3_max(cwnd, 3 * bbr3_tso_segs_goal(BBR3_PASS));
	cwnd = bbr3_max(cwnd, cfg->cwnd_min_target);
	if (st->mode == BBR3_PROBE_BW && st->cycle_idx == BBR3_BW_PROBE_UP)
		cwnd += 2;
	return cwnd;
}

/* bbr_inflight. */
static __always_inline __u32 bbr3_inflight(BBR3_ARGS, __u32 bw, __u32 gain)
{
	return bbr3_quantization_budget(BBR3_PASS, bbr3_bdp(BBR3_PASS, bw, gain));
}

/* bbr_packets_in_net_at_edt. */
static __always_inline __u32 bbr3_packets_in_net_at_edt(BBR3_ARGS, __u32 inflight_now)
{
	__u64 now_ns = ca->tp->tcp_clock_cache;
	__u64 edt_ns = ca->tp->tcp_wstamp_ns > now_ns ? ca->tp->tcp_wstamp_ns : now_ns;
	__u64 interval_us = (edt_ns - now_ns) / 1000;
	__u32 interval_delivered = (__u32)(((__u64)bbr3_bw(st) * interval_us) >> BBR3_BW_SCALE);
	__u32 inflight_at_edt = inflight_now;

	if (st->pacing_gain > BBR3_UNIT)
		inflight_at_edt += bbr3_tso_segs_goal(BBR3_PASS);
	if (interval_delivered >= inflight_at_edt)
		return 0;
	return inflight_at_edt - interval_delivered;
}

/* bbr_ack_aggregation_cwnd. */
static __always_inline __u32 bbr3_ack_aggregation_cwnd(BBR3_ARGS)
{
	__u32 gain = bbr3_unit(cfg->extra_acked_gain);
	__u64 max_aggr;
	__u32 aggr;

	if (!gain)
		return 0;
	max_aggr = (__u64)bbr3_bw(st) * cfg->extra_acked_max_ms * 1000 / BBR3_BW_UNIT;
	aggr = (gain * bbr3_extra_acked(st)) >> BBR3_SCALE;
	return (__u64)aggr < max_aggr ? aggr : (__u32)max_aggr;
}

/* bbr_probe_rtt_cwnd: a fraction of the BDP, at least cwnd_min_target. */
static __always_inline __u32 bbr3_probe_rtt_cwnd(BBR3_ARGS)
{
	return bbr3_max(cfg->cwnd_min_target,
			bbr3_bdp(BBR3_PASS, bbr3_bw(st), bbr3_unit(cfg->probe_rtt_cwnd_gain)));
}

/* bbr_set_cwnd: grow toward the target by what was ACKed; above it, down to it once the pipe
 * is full. */
static __always_inline void bbr3_set_cwnd(BBR3_ARGS, __u32 acked, __u32 bw, __u32 gain)
{
	__u32 cwnd = ca->tp->snd_cwnd, target;

	if (acked) {
		target = bbr3_bdp(BBR3_PASS, bw, gain);
		target += bbr3_ack_aggregation_cwnd(BBR3_PASS);
		target = bbr3_quantization_budget(BBR3_PASS, target);
		st->try_fast_path = 0;
		if (st->full_bw_reached) {
			cwnd += acked;
			if (cwnd >= target) {
				cwnd = target;
				st->try_fast_path = 1;
			}
		} else if (cwnd < target || cwnd < 2 * st->init_cwnd) {
			cwnd += acked;
		} else {
			st->try_fast_path = 1;
		}
		cwnd = bbr3_max(cwnd, cfg->cwnd_min_target);
	}
	if (cwnd > ca->tp->snd_cwnd_clamp)
		cwnd = ca->tp->snd_cwnd_clamp;
	if (st->mode == BBR3_PROBE_RTT)
		cwnd = bbr3_min(cwnd, bbr3_probe_rtt_cwnd(BBR3_PASS));
	ca->tp->snd_cwnd = cwnd;
}

/* bbr_update_round_start. */
static __always_inline void bbr3_update_round_start(BBR3_ARGS, const struct rate_sample *rs)
{
	st->round_start = 0;
	if (rs->interval_us > 0 && bbr3_not_before(rs->prior_delivered, st->next_rtt_delivered)) {
		st->next_rtt_delivered = ca->tp->delivered;
		st->round_start = 1;
	}
}

/* bbr_calculate_bw_sample: delivered / interval, rounded up. */
static __always_inline void bbr3_calculate_bw_sample(BBR3_ARGS, const struct rate_sample *rs)
{
	__u64 interval = rs->interval_us, bw;

	st->sample_bw = 0;
	if (rs->interval_us > 0 && rs->delivered >= 0) {
		bw = ((__u64)rs->delivered * BBR3_BW_UNIT + interval - 1) / interval;
		st->sample_bw = (__u32)bw;
	}
}

/* bbr_update_ack_aggregation: the largest excess of ACKed data over what the estimate
 * expected, over two windows of extra_acked_win_rtts rounds. */
static __always_inline void bbr3_update_ack_aggregation(BBR3_ARGS, const struct rate_sample *rs)
{
	__u32 epoch_us, expected, extra, idx, thresh;
	__u64 delivered_mstamp = ca->tp->delivered_mstamp;

	if (!bbr3_unit(cfg->extra_acked_gain) || rs->acked_sacked == 0 || rs->delivered < 0 ||
	    rs->interval_us <= 0)
		return;
	if (st->round_start) {
		st->extra_acked_win_rtts = bbr3_min(st->extra_acked_win_rtts + 1, 0x1f);
		thresh = st->full_bw_reached ? cfg->extra_acked_win_rtts : 1;
		if (st->extra_acked_win_rtts >= thresh) {
			st->extra_acked_win_rtts = 0;
			st->extra_acked_win_idx ^= 1;
			st->extra_acked[st->extra_acked_win_idx & 1] = 0;
		}
	}
	epoch_us = delivered_mstamp > st->ack_epoch_mstamp ?
			   (__u32)(delivered_mstamp - st->ack_epoch_mstamp) : 0;
	expected = (__u32)((__u64)bbr3_bw(st) * epoch_us / BBR3_BW_UNIT);
	if (st->ack_epoch_acked <= expected ||
	    st->ack_epoch_acked + rs->acked_sacked >= (1 << 20)) {
		st->ack_epoch_acked = 0;
		st->ack_epoch_mstamp = delivered_mstamp;
		expected = 0;
	}
	st->ack_epoch_acked = bbr3_min(st->ack_epoch_acked + rs->acked_sacked, 0xfffff);
	extra = bbr3_min(st->ack_epoch_acked - expected, ca->tp->snd_cwnd);
	idx = st->extra_acked_win_idx & 1;
	if (extra > st->extra_acked[idx])
		st->extra_acked[idx] = extra;
}

/* bbr_reset_full_bw. */
static __always_inline void bbr3_reset_full_bw(struct bbr3_state *st)
{
	st->full_bw = 0;
	st->full_bw_cnt = 0;
	st->full_bw_now = 0;
}

/* bbr_reset_lower_bounds. */
static __always_inline void bbr3_reset_lower_bounds(struct bbr3_state *st)
{
	st->bw_lo = BBR3_UNSET;
	st->inflight_lo = BBR3_UNSET;
}

/* bbr_reset_congestion_signals. */
static __always_inline void bbr3_reset_congestion_signals(struct bbr3_state *st)
{
	st->loss_in_round = 0;
	st->loss_in_cycle = 0;
	st->bw_latest = 0;
	st->inflight_latest = 0;
}

/* bbr_set_cycle_idx. */
static __always_inline void bbr3_set_cycle_idx(struct bbr3_state *st, __u32 phase)
{
	st->cycle_idx = phase;
	st->try_fast_path = 0;
}

/* bbr_pick_probe_wait: 0..rand_rounds - 1 rounds counted as waited, and base + 0..rand us of
 * wall clock. */
static __always_inline void bbr3_pick_probe_wait(BBR3_ARGS)
{
	__u64 base_us = (__u64)cfg->bw_probe_base_ms * 1000;
	__u64 rand_us = (__u64)cfg->bw_probe_rand_ms * 1000;

	st->rounds_since_probe = bbr3_random_below(cfg->bw_probe_rand_rounds);
	if (base_us > 0xffffffffULL)
		base_us = 0xffffffffULL;
	if (rand_us > 0xffffffffULL)
		rand_us = 0xffffffffULL;
	st->probe_wait_us = (__u32)base_us + bbr3_random_below((__u32)rand_us);
}

/* bbr_start_bw_probe_refill. */
static __always_inline void bbr3_start_bw_probe_refill(BBR3_ARGS, __u32 bw_probe_up_rounds)
{
	bbr3_reset_lower_bounds(st);
	st->bw_probe_up_rounds = bw_probe_up_rounds;
	st->bw_probe_up_acks = 0;
	st->stopped_risky_probe = 0;
	st->ack_phase = BBR3_ACKS_REFILLING;
	st->next_rtt_delivered = ca->tp->delivered;
	bbr3_set_cycle_idx(st, BBR3_BW_PROBE_REFILL);
}

/* bbr_raise_inflight_hi_slope: the growth per round doubles. */
static __always_inline void bbr3_raise_inflight_hi_slope(BBR3_ARGS)
{
	__u32 growth_this_round = 1u << (st->bw_probe_up_rounds & 31);

	st->bw_probe_up_rounds = bbr3_min(st->bw_probe_up_rounds + 1, 30);
	st->bw_probe_up_cnt = bbr3_max(ca->tp->snd_cwnd / growth_this_round, 1);
}

/* bbr_start_bw_probe_up. */
static __always_inline void bbr3_start_bw_probe_up(BBR3_ARGS)
{
	st->ack_phase = BBR3_ACKS_PROBE_STARTING;
	st->next_rtt_delivered = ca->tp->delivered;
	st->cycle_mstamp = ca->now_us;
	bbr3_reset_full_bw(st);
	st->full_bw = st->sample_bw;
	bbr3_set_cycle_idx(st, BBR3_BW_PROBE_UP);
	bbr3_raise_inflight_hi_slope(BBR3_PASS);
}

/* bbr_start_bw_probe_down. */
static __always_inline void bbr3_start_bw_probe_down(BBR3_ARGS)
{
	bbr3_reset_congestion_signals(st);
	st->bw_probe_up_cnt = BBR3_UNSET;
	bbr3_pick_probe_wait(BBR3_PASS);
	st->cycle_mstamp = ca->now_us;
	st->ack_phase = BBR3_ACKS_PROBE_STOPPING;
	st->next_rtt_delivered = ca->tp->delivered;
	bbr3_set_cycle_idx(st, BBR3_BW_PROBE_DOWN);
}

/* bbr_start_bw_probe_cruise. */
static __always_inline void bbr3_start_bw_probe_cruise(struct bbr3_state *st)
{
	if (st->inflight_lo != BBR3_UNSET)
		st->inflight_lo = bbr3_min(st->inflight_lo, st->inflight_hi);
	bbr3_set_cycle_idx(st, BBR3_BW_PROBE_CRUISE);
}

/* bbr_exit_probe_rtt: back to ProbeBW (cruising) or Startup. */
static __always_inline void bbr3_exit_probe_rtt(BBR3_ARGS)
{
	bbr3_reset_lower_bounds(st);
	if (st->full_bw_reached) {
		st->mode = BBR3_PROBE_BW;
		bbr3_start_bw_probe_down(BBR3_PASS);
		/* Leaving ProbeRTT, the flight is below the BDP: cruise. */
		bbr3_start_bw_probe_cruise(st);
	} else {
		st->mode = BBR3_STARTUP;
	}
}

/* bbr_check_probe_rtt_done. */
static __always_inline void bbr3_check_probe_rtt_done(BBR3_ARGS)
{
	__u32 now = bbr3_jiffies(BBR3_PASS);

	if (!(st->probe_rtt_done_stamp && bbr3_after(now, st->probe_rtt_done_stamp)))
		return;
	st->probe_rtt_min_stamp = now;
	ca->tp->snd_cwnd = bbr3_max(ca->tp->snd_cwnd, st->prior_cwnd);
	bbr3_exit_probe_rtt(BBR3_PASS);
}

/* bbr_update_min_rtt: the two min-RTT filters (probe_rtt_win_ms for ProbeRTT, min_rtt_win_s
 * for the model) and ProbeRTT. */
static __always_inline void bbr3_update_min_rtt(BBR3_ARGS, const struct rate_sample *rs)
{
	__u32 now = bbr3_jiffies(BBR3_PASS);
	bool probe_rtt_expired =
		bbr3_after(now, st->probe_rtt_min_stamp +
					bbr3_ms_to_jiffies(BBR3_PASS, cfg->probe_rtt_win_ms));
	bool min_rtt_expired;

	if (rs->rtt_us >= 0) {
		__u32 rtt = rs->rtt_us < 0xfffffffeLL ? (__u32)rs->rtt_us : 0xfffffffe;

		if (rtt < st->probe_rtt_min_us || (probe_rtt_expired && !rs->is_ack_delayed)) {
			st->probe_rtt_min_us = rtt;
			st->probe_rtt_min_stamp = now;
		}
	}
	min_rtt_expired = bbr3_after(now, st->min_rtt_stamp + cfg->min_rtt_win_s * cfg->hz);
	if (st->probe_rtt_min_us <= st->min_rtt_us || min_rtt_expired) {
		st->min_rtt_us = st->probe_rtt_min_us;
		st->min_rtt_stamp = st->probe_rtt_min_stamp;
	}
	if (cfg->probe_rtt_ms > 0 && probe_rtt_expired && !st->idle_restart &&
	    st->mode != BBR3_PROBE_RTT) {
		st->mode = BBR3_PROBE_RTT;
		bbr3_save_cwnd(BBR3_PASS);
		st->probe_rtt_done_stamp = 0;
		st->ack_phase = BBR3_ACKS_PROBE_STOPPING;
		st->next_rtt_delivered = ca->tp->delivered;
	}
	if (st->mode == BBR3_PROBE_RTT) {
		/* Its own low-rate samples are marked application-limited. */
		__u32 limited = ca->tp->delivered + in_flight(ca);

		ca->tp->app_limited = limited ? limited : 1;
		if (!st->probe_rtt_done_stamp && in_flight(ca) <= bbr3_probe_rtt_cwnd(BBR3_PASS)) {
			st->probe_rtt_done_stamp =
				now + bbr3_ms_to_jiffies(BBR3_PASS, cfg->probe_rtt_ms);
			st->probe_rtt_round_done = 0;
			st->next_rtt_delivered = ca->tp->delivered;
		} else if (st->probe_rtt_done_stamp) {
			if (st->round_start)
				st->probe_rtt_round_done = 1;
			if (st->probe_rtt_round_done)
				bbr3_check_probe_rtt_done(BBR3_PASS);
		}
	}
	if (rs->delivered > 0)
		st->idle_restart = 0;
}

/* bbr_update_gains. */
static __always_inline void bbr3_update_gains(BBR3_ARGS)
{
	switch (st->mode) {
	case BBR3_STARTUP:
		st->pacing_gain = bbr3_unit(cfg->startup_pacing_gain);
		st->cwnd_gain = bbr3_unit(cfg->startup_cwnd_gain);
		break;
	case BBR3_DRAIN:
		st->pacing_gain = bbr3_unit(cfg->drain_gain);
		st->cwnd_gain = bbr3_unit(cfg->startup_cwnd_gain);
		break;
	case BBR3_PROBE_BW:
		st->cwnd_gain = bbr3_unit(cfg->cwnd_gain);
		if (st->cycle_idx == BBR3_BW_PROBE_UP) {
			st->pacing_gain = bbr3_unit(cfg->probe_up_gain);
			st->cwnd_gain += bbr3_unit(cfg->bw_probe_cwnd_gain);
		} else if (st->cycle_idx == BBR3_BW_PROBE_DOWN) {
			st->pacing_gain = bbr3_unit(cfg->probe_down_gain);
		} else {
			st->pacing_gain = BBR3_UNIT;
		}
		break;
	default:
		st->pacing_gain = BBR3_UNIT;
		st->cwnd_gain = BBR3_UNIT;
		break;
	}
}

/* bbr_advance_max_bw_filter: each cycle, the older window is forgotten. */
static __always_inline void bbr3_advance_max_bw_filter(struct bbr3_state *st)
{
	if (!st->bw_hi[1])
		return;
	st->bw_hi[0] = st->bw_hi[1];
	st->bw_hi[1] = 0;
}

/* bbr_target_inflight: the BDP, unless cwnd is smaller. */
static __always_inline __u32 bbr3_target_inflight(BBR3_ARGS)
{
	return bbr3_min(bbr3_inflight(BBR3_PASS, bbr3_bw(st), BBR3_UNIT), ca->tp->snd_cwnd);
}

/* bbr_is_probing_bandwidth. */
static __always_inline bool bbr3_is_probing_bandwidth(struct bbr3_state *st)
{
	return st->mode == BBR3_STARTUP ||
	       (st->mode == BBR3_PROBE_BW && (st->cycle_idx == BBR3_BW_PROBE_REFILL ||
					      st->cycle_idx == BBR3_BW_PROBE_UP));
}

/* bbr_has_elapsed_in_phase. */
static __always_inline bool bbr3_has_elapsed_in_phase(BBR3_ARGS, __u32 interval_us)
{
	return ca->now_us > st->cycle_mstamp + interval_us;
}

/* full_bw_reached = 1, reported as Startup's end when Startup is on. */
static __always_inline void bbr3_set_full_bw_reached(BBR3_ARGS, bool loss)
{
	if (!st->full_bw_reached && st->mode == BBR3_STARTUP) {
		if (loss)
			SET_HINT(ca, "bbr-loss");
		else
			SET_HINT(ca, "bbr-full-bw");
	}
	st->full_bw_reached = 1;
}

/* bbr_handle_queue_too_high_in_startup. */
static __always_inline void bbr3_handle_queue_too_high_in_startup(BBR3_ARGS)
{
	__u32 bdp;

	bbr3_set_full_bw_reached(BBR3_PASS, true);
	bdp = bbr3_inflight(BBR3_PASS, bbr3_max_bw(st), BBR3_UNIT);
	st->inflight_hi = bbr3_max(bdp, st->inflight_latest);
}

/* bbr_probe_inflight_hi_upward. */
static __always_inline void bbr3_probe_inflight_hi_upward(BBR3_ARGS, const struct rate_sample *rs)
{
	__u32 delta;

	if (!BPF_CORE_READ_BITFIELD(ca->tp, is_cwnd_limited) || ca->tp->snd_cwnd < st->inflight_hi)
		return;
	st->bw_probe_up_acks += rs->acked_sacked;
	if (st->bw_probe_up_acks >= st->bw_probe_up_cnt) {
		delta = st->bw_probe_up_acks / st->bw_probe_up_cnt;
		st->bw_probe_up_acks -= delta * st->bw_probe_up_cnt;
		st->inflight_hi += delta;
		st->try_fast_path = 0;
	}
	if (st->round_start)
		bbr3_raise_inflight_hi_slope(BBR3_PASS);
}

/* bbr_is_inflight_too_high: more than loss_thresh of the flight lost (no ECN). */
static __always_inline bool bbr3_is_inflight_too_high(BBR3_ARGS, const struct bbr3_loss *s)
{
	__u64 thresh;

	if (s->lost > 0 && s->tx_in_flight > 0) {
		thresh = ((__u64)s->tx_in_flight * bbr3_unit(cfg->loss_thresh)) >> BBR3_SCALE;
		return s->lost > (__u32)thresh;
	}
	return false;
}

/* bbr_inflight_with_headroom. */
static __always_inline __u32 bbr3_inflight_with_headroom(BBR3_ARGS)
{
	__u64 headroom;
	__s32 v, min = (__s32)cfg->cwnd_min_target;

	if (st->inflight_hi == BBR3_UNSET)
		return BBR3_UNSET;
	headroom = ((__u64)st->inflight_hi * bbr3_unit(cfg->inflight_headroom)) >> BBR3_SCALE;
	if (headroom < 1)
		headroom = 1;
	v = (__s32)(st->inflight_hi - (__u32)headroom);
	return (__u32)(v > min ? v : min);
}

/* bbr_bound_cwnd_for_inflight_model. */
static __always_inline void bbr3_bound_cwnd_for_inflight_model(BBR3_ARGS)
{
	__u32 cap = BBR3_UNSET;

	if (st->mode == BBR3_PROBE_BW && st->cycle_idx != BBR3_BW_PROBE_CRUISE)
		cap = st->inflight_hi;
	else if (st->mode == BBR3_PROBE_RTT ||
		 (st->mode == BBR3_PROBE_BW && st->cycle_idx == BBR3_BW_PROBE_CRUISE))
		cap = bbr3_inflight_with_headroom(BBR3_PASS);
	cap = bbr3_min(cap, st->inflight_lo);
	cap = bbr3_max(cap, cfg->cwnd_min_target);
	ca->tp->snd_cwnd = bbr3_min(cap, ca->tp->snd_cwnd);
}

/* bbr_adapt_lower_bounds: outside probing, each lossy round cuts bw_lo and inflight_lo by
 * beta, not below what the last round delivered. */
static __always_inline void bbr3_adapt_lower_bounds(BBR3_ARGS)
{
	__u64 cut;

	if (bbr3_is_probing_bandwidth(st))
		return;
	if (st->loss_in_round) {
		/* bbr_init_lower_bounds */
		if (st->bw_lo == BBR3_UNSET)
			st->bw_lo = bbr3_max_bw(st);
		if (st->inflight_lo == BBR3_UNSET)
			st->inflight_lo = ca->tp->snd_cwnd;
		/* bbr_loss_lower_bounds */
		cut = BBR3_UNIT - bbr3_unit(cfg->beta);
		st->bw_lo = bbr3_max(st->bw_latest,
				     (__u32)(((__u64)st->bw_lo * cut) >> BBR3_SCALE));
		st->inflight_lo = bbr3_max(st->inflight_latest,
					   (__u32)(((__u64)st->inflight_lo * cut) >> BBR3_SCALE));
	}
	st->bw_lo = bbr3_max(st->bw_lo, 1);
}

/* rs->delivered as u32 (0 when absent). */
static __always_inline __u32 bbr3_delivered32(const struct rate_sample *rs)
{
	return rs->delivered > 0 ? (__u32)rs->delivered : 0;
}

/* bbr_update_latest_delivery_signals. */
static __always_inline void bbr3_update_latest_delivery_signals(BBR3_ARGS,
								const struct rate_sample *rs)
{
	st->loss_round_start = 0;
	if (rs->interval_us <= 0 || !rs->acked_sacked)
		return;
	st->bw_latest = bbr3_max(st->bw_latest, st->sample_bw);
	st->inflight_latest = bbr3_max(st->inflight_latest, bbr3_delivered32(rs));
	if (bbr3_not_before(rs->prior_delivered, st->loss_round_delivered)) {
		st->loss_round_delivered = ca->tp->delivered;
		st->loss_round_start = 1;
	}
}

/* bbr_advance_latest_delivery_signals. */
static __always_inline void bbr3_advance_latest_delivery_signals(BBR3_ARGS,
								 const struct rate_sample *rs)
{
	if (st->loss_round_start) {
		st->bw_latest = st->sample_bw;
		st->inflight_latest = bbr3_delivered32(rs);
	}
}

/* bbr_update_congestion_signals: the max filter, and once per loss round the lower bounds. */
static __always_inline void bbr3_update_congestion_signals(BBR3_ARGS, const struct rate_sample *rs)
{
	__u32 bw;

	if (rs->interval_us <= 0 || !rs->acked_sacked)
		return;
	bw = st->sample_bw;
	if (!rs->is_app_limited || bw >= bbr3_max_bw(st))
		st->bw_hi[1] = bbr3_max(st->bw_hi[1], bw);
	if (rs->losses > 0)
		st->loss_in_round = 1;
	if (!st->loss_round_start)
		return;
	bbr3_adapt_lower_bounds(BBR3_PASS);
	st->loss_in_round = 0;
}

/* bbr_is_reno_coexistence_probe_time. */
static __always_inline bool bbr3_is_reno_coexistence_probe_time(BBR3_ARGS)
{
	__u32 rounds = bbr3_min(cfg->bw_probe_max_rounds, bbr3_target_inflight(BBR3_PASS));

	return st->rounds_since_probe >= rounds;
}

/* bbr_handle_inflight_too_high: once per probe, inflight_hi comes down to the flight that saw
 * the loss (at least (1 - beta) of the target), and Up ends. */
static __always_inline void bbr3_handle_inflight_too_high(BBR3_ARGS, const struct bbr3_loss *s)
{
	__u64 floor;

	st->prev_probe_too_high = 1;
	st->bw_probe_samples = 0;
	if (!s->is_app_limited) {
		floor = ((__u64)bbr3_target_inflight(BBR3_PASS) *
			 (BBR3_UNIT - bbr3_unit(cfg->beta))) >> BBR3_SCALE;
		st->inflight_hi = bbr3_max(s->tx_in_flight, (__u32)floor);
	}
	if (st->mode == BBR3_PROBE_BW && st->cycle_idx == BBR3_BW_PROBE_UP)
		bbr3_start_bw_probe_down(BBR3_PASS);
}

/* bbr_adapt_upper_bounds; true when it decided a phase change. */
static __always_inline bool bbr3_adapt_upper_bounds(BBR3_ARGS, const struct rate_sample *rs,
						    const struct bbr3_loss *s)
{
	if (st->ack_phase == BBR3_ACKS_PROBE_STARTING && st->round_start)
		st->ack_phase = BBR3_ACKS_PROBE_FEEDBACK;
	if (st->ack_phase == BBR3_ACKS_PROBE_STOPPING && st->round_start) {
		st->bw_probe_samples = 0;
		st->ack_phase = BBR3_ACKS_INIT;
		if (st->mode == BBR3_PROBE_BW && !rs->is_app_limited)
			bbr3_advance_max_bw_filter(st);
		if (st->mode == BBR3_PROBE_BW && st->stopped_risky_probe &&
		    !st->prev_probe_too_high) {
			bbr3_start_bw_probe_refill(BBR3_PASS, 0);
			return true;
		}
	}
	if (bbr3_is_inflight_too_high(BBR3_PASS, s)) {
		if (st->bw_probe_samples)
			bbr3_handle_inflight_too_high(BBR3_PASS, s);
	} else {
		if (st->inflight_hi == BBR3_UNSET)
			return false;
		if (s->tx_in_flight > st->inflight_hi)
			st->inflight_hi = s->tx_in_flight;
		if (st->mode == BBR3_PROBE_BW && st->cycle_idx == BBR3_BW_PROBE_UP)
			bbr3_probe_inflight_hi_upward(BBR3_PASS, rs);
	}
	return false;
}

/* bbr_check_time_to_probe_bw (no ECN re-probe). */
static __always_inline bool bbr3_check_time_to_probe_bw(BBR3_ARGS)
{
	if (bbr3_has_elapsed_in_phase(BBR3_PASS, st->probe_wait_us) ||
	    bbr3_is_reno_coexistence_probe_time(BBR3_PASS)) {
		bbr3_start_bw_probe_refill(BBR3_PASS, 0);
		return true;
	}
	return false;
}

/* bbr_check_time_to_cruise. */
static __always_inline bool bbr3_check_time_to_cruise(BBR3_ARGS, __u32 inflight, __u32 bw)
{
	if (inflight > bbr3_inflight_with_headroom(BBR3_PASS))
		return false;
	return inflight <= bbr3_inflight(BBR3_PASS, bw, BBR3_UNIT);
}

/* bbr_update_cycle_phase: ProbeBW's state machine. */
static __always_inline void bbr3_update_cycle_phase(BBR3_ARGS, const struct rate_sample *rs,
						    const struct bbr3_loss *s)
{
	__u32 inflight, bw;
	bool done = false;

	if (!st->full_bw_reached)
		return;
	if (bbr3_adapt_upper_bounds(BBR3_PASS, rs, s))
		return;
	if (st->mode != BBR3_PROBE_BW)
		return;
	inflight = bbr3_packets_in_net_at_edt(BBR3_PASS, rs->prior_in_flight);
	bw = bbr3_max_bw(st);
	switch (st->cycle_idx) {
	case BBR3_BW_PROBE_CRUISE:
		bbr3_check_time_to_probe_bw(BBR3_PASS);
		break;
	case BBR3_BW_PROBE_REFILL:
		if (st->round_start) {
			st->bw_probe_samples = 1;
			bbr3_start_bw_probe_up(BBR3_PASS);
		}
		break;
	case BBR3_BW_PROBE_UP:
		if (st->prev_probe_too_high && inflight >= st->inflight_hi) {
			st->stopped_risky_probe = 1;
			done = true;
		} else if (BPF_CORE_READ_BITFIELD(ca->tp, is_cwnd_limited) &&
			   ca->tp->snd_cwnd >= st->inflight_hi) {
			/* inflight_hi is what limits growth: the plateau count starts over. */
			bbr3_reset_full_bw(st);
			st->full_bw = st->sample_bw;
		} else if (st->full_bw_now) {
			done = true;
		}
		if (done) {
			st->prev_probe_too_high = 0;
			bbr3_start_bw_probe_down(BBR3_PASS);
		}
		break;
	case BBR3_BW_PROBE_DOWN:
		if (bbr3_check_time_to_probe_bw(BBR3_PASS))
			return;
		if (bbr3_check_time_to_cruise(BBR3_PASS, inflight, bw))
			bbr3_start_bw_probe_cruise(st);
		break;
	}
}

/* bbr_check_loss_too_high_in_startup: at the end of a round of recovery with at least
 * full_loss_cnt loss events and a loss rate above loss_thresh. */
static __always_inline void bbr3_check_loss_too_high_in_startup(BBR3_ARGS,
								const struct rate_sample *rs,
								const struct bbr3_loss *s)
{
	if (st->full_bw_reached)
		return;
	if (rs->losses > 0 && st->loss_events_in_round < 0xf)
		st->loss_events_in_round++;
	if (cfg->full_loss_cnt > 0 && st->loss_round_start &&
	    inet_csk_ca_state(ca->sk) == TCP_CA_Recovery &&
	    st->loss_events_in_round >= cfg->full_loss_cnt &&
	    bbr3_is_inflight_too_high(BBR3_PASS, s)) {
		bbr3_handle_queue_too_high_in_startup(BBR3_PASS);
		return;
	}
	if (st->loss_round_start)
		st->loss_events_in_round = 0;
}

/* bbr_check_full_bw_reached: a sample full_bw_thresh above full_bw starts the count over;
 * full_bw_cnt rounds without one mean the pipe is full. */
static __always_inline void bbr3_check_full_bw_reached(BBR3_ARGS, const struct rate_sample *rs)
{
	__u32 thresh;

	if (st->full_bw_now || rs->is_app_limited)
		return;
	thresh = (__u32)(((__u64)st->full_bw * bbr3_unit(cfg->full_bw_thresh)) >> BBR3_SCALE);
	if (st->sample_bw >= thresh) {
		bbr3_reset_full_bw(st);
		st->full_bw = st->sample_bw;
		return;
	}
	if (!st->round_start)
		return;
	st->full_bw_cnt = (st->full_bw_cnt + 1) & 3; /* 2 bits */
	st->full_bw_now = st->full_bw_cnt >= cfg->full_bw_cnt;
	if (st->full_bw_now)
		bbr3_set_full_bw_reached(BBR3_PASS, false);
}

/* bbr_check_drain. */
static __always_inline void bbr3_check_drain(BBR3_ARGS)
{
	if (st->mode == BBR3_STARTUP && st->full_bw_reached) {
		st->mode = BBR3_DRAIN;
		/* ssthresh only reports the end of Startup. */
		ca->tp->snd_ssthresh = bbr3_inflight(BBR3_PASS, bbr3_max_bw(st), BBR3_UNIT);
		bbr3_reset_congestion_signals(st);
	}
	if (st->mode == BBR3_DRAIN &&
	    bbr3_packets_in_net_at_edt(BBR3_PASS, in_flight(ca)) <=
		    bbr3_inflight(BBR3_PASS, bbr3_max_bw(st), BBR3_UNIT)) {
		st->mode = BBR3_PROBE_BW;
		bbr3_start_bw_probe_down(BBR3_PASS);
	}
}

/* bbr_update_model. */
static __always_inline void bbr3_update_model(BBR3_ARGS, const struct rate_sample *rs,
					      const struct bbr3_loss *s)
{
	bbr3_update_congestion_signals(BBR3_PASS, rs);
	bbr3_update_ack_aggregation(BBR3_PASS, rs);
	bbr3_check_loss_too_high_in_startup(BBR3_PASS, rs, s);
	bbr3_check_full_bw_reached(BBR3_PASS, rs);
	bbr3_check_drain(BBR3_PASS);
	bbr3_update_cycle_phase(BBR3_PASS, rs, s);
	bbr3_update_min_rtt(BBR3_PASS, rs);
}

/* bbr_run_fast_path: an application-limited ACK below the estimate, without loss, that changes
 * neither mode nor min RTT changes nothing. Returns 1 to skip everything, 2 to skip the model
 * update only, 0 to run both. */
static __always_inline int bbr3_run_fast_path(BBR3_ARGS, const struct rate_sample *rs,
					      const struct bbr3_loss *s)
{
	__u32 prev_mode, prev_min_rtt;

	if (cfg->fast_path && st->try_fast_path && rs->is_app_limited &&
	    st->sample_bw < bbr3_max_bw(st) && !st->loss_in_round) {
		prev_mode = st->mode;
		prev_min_rtt = st->min_rtt_us;
		bbr3_check_drain(BBR3_PASS);
		bbr3_update_cycle_phase(BBR3_PASS, rs, s);
		bbr3_update_min_rtt(BBR3_PASS, rs);
		if (st->mode == prev_mode && st->min_rtt_us == prev_min_rtt && st->try_fast_path)
			return 1;
		return 2;
	}
	return 0;
}

/* bbr_note_loss: this round has loss. */
static __always_inline void bbr3_note_loss(BBR3_ARGS)
{
	if (!st->loss_in_round)
		st->loss_round_delivered = ca->tp->delivered;
	st->loss_in_round = 1;
	st->loss_in_cycle = 1;
}

static void bbr3_init(BBR3_ARGS)
{
	__u32 j = bbr3_jiffies(BBR3_PASS);
	__u32 min_rtt = ca->tp->rtt_min.s[0].v; /* tcp_min_rtt */

	st->init_cwnd = bbr3_min(ca->tp->snd_cwnd, 0x7f);
	st->prior_cwnd = ca->tp->prior_cwnd;
	ca->tp->snd_ssthresh = TCP_INFINITE_SSTHRESH;
	st->next_rtt_delivered = ca->tp->delivered;
	st->prev_ca_state = TCP_CA_Open;
	st->probe_rtt_done_stamp = 0;
	st->probe_rtt_round_done = 0;
	st->probe_rtt_min_us = min_rtt;
	st->probe_rtt_min_stamp = j;
	st->min_rtt_us = min_rtt;
	st->min_rtt_stamp = j;
	st->has_seen_rtt = 0;
	bbr3_init_pacing_rate_from_rtt(BBR3_PASS);
	st->round_start = 0;
	st->idle_restart = 0;
	st->full_bw_reached = 0;
	st->cycle_mstamp = 0;
	st->cycle_idx = BBR3_BW_PROBE_UP;
	st->mode = BBR3_STARTUP;
	st->ack_epoch_mstamp = ca->now_us;
	st->ack_epoch_acked = 0;
	st->extra_acked_win_rtts = 0;
	st->extra_acked_win_idx = 0;
	st->extra_acked[0] = 0;
	st->extra_acked[1] = 0;
	st->try_fast_path = 0;
	st->loss_round_delivered = ca->tp->delivered + 1;
	st->loss_round_start = 0;
	st->undo_bw_lo = 0;
	st->undo_inflight_lo = 0;
	st->undo_inflight_hi = 0;
	st->loss_events_in_round = 0;
	bbr3_reset_congestion_signals(st);
	st->bw_lo = BBR3_UNSET;
	st->bw_hi[0] = 0;
	st->bw_hi[1] = 0;
	st->inflight_lo = BBR3_UNSET;
	st->inflight_hi = BBR3_UNSET;
	bbr3_reset_full_bw(st);
	st->bw_probe_up_cnt = BBR3_UNSET;
	st->bw_probe_up_acks = 0;
	st->bw_probe_up_rounds = 0;
	st->probe_wait_us = 0;
	st->stopped_risky_probe = 0;
	st->ack_phase = BBR3_ACKS_INIT;
	st->rounds_since_probe = 0;
	st->bw_probe_samples = 0;
	st->prev_probe_too_high = 0;
	st->lost_at_round[0] = ca->tp->lost;
	st->lost_at_round[1] = ca->tp->lost;
	ca->sk->sk_pacing_status = SK_PACING_NEEDED;
}

/* bbr_ssthresh: entering recovery saves cwnd and the bounds for an undo; ssthresh is
 * unchanged. */
static __u32 bbr3_ssthresh(BBR3_ARGS)
{
	bbr3_save_cwnd(BBR3_PASS);
	st->undo_bw_lo = st->bw_lo;
	st->undo_inflight_lo = st->inflight_lo;
	st->undo_inflight_hi = st->inflight_hi;
	return ca->tp->snd_ssthresh;
}

/* bbr_main, with the mainline stand-ins for v3's loss signals. */
static void bbr3_cong_control(BBR3_ARGS, const struct rate_sample *rs)
{
	__u32 losses = rs->losses > 0 ? (__u32)rs->losses : 0;
	__u32 lost = ca->tp->lost, bw;
	struct bbr3_loss s;
	int fast;

	/* No skb_marked_lost on mainline: the ACK's fresh losses mark the round. */
	if (losses > 0)
		bbr3_note_loss(BBR3_PASS);
	bbr3_update_round_start(BBR3_PASS, rs);
	if (st->round_start) {
		st->rounds_since_probe = bbr3_min(st->rounds_since_probe + 1, 0xff);
		st->lost_at_round[0] = st->lost_at_round[1];
		st->lost_at_round[1] = lost > losses ? lost - losses : 0;
	}
	/* rs->lost: what tp->lost grew by since the previous round began; rs->tx_in_flight:
	 * the flight before this ACK. */
	s.lost = lost > st->lost_at_round[0] ? lost - st->lost_at_round[0] : 0;
	s.tx_in_flight = rs->prior_in_flight;
	s.is_app_limited = rs->is_app_limited;
	bbr3_calculate_bw_sample(BBR3_PASS, rs);
	bbr3_update_latest_delivery_signals(BBR3_PASS, rs);
	fast = bbr3_run_fast_path(BBR3_PASS, rs, &s);
	if (fast != 1) {
		if (fast == 0)
			bbr3_update_model(BBR3_PASS, rs, &s);
		bbr3_update_gains(BBR3_PASS);
		bw = bbr3_bw(st);
		bbr3_set_pacing_rate(BBR3_PASS, bw, st->pacing_gain);
		bbr3_set_cwnd(BBR3_PASS, rs->acked_sacked, bw, st->cwnd_gain);
		bbr3_bound_cwnd_for_inflight_model(BBR3_PASS);
	}
	bbr3_advance_latest_delivery_signals(BBR3_PASS, rs);
	st->prev_ca_state = inet_csk_ca_state(ca->sk);
	if (s.lost > 0)
		st->loss_in_cycle = 1;
}

/* bbr_set_state: a timeout restarts the full-pipe count and, outside probing, sets inflight_lo
 * from the window before it; leaving Loss restores the saved cwnd (bbr_exit_loss_recovery). */
static void bbr3_set_state(BBR3_ARGS, __u8 new_state)
{
	if (new_state == TCP_CA_Loss) {
		st->prev_ca_state = TCP_CA_Loss;
		bbr3_reset_full_bw(st);
		if (!bbr3_is_probing_bandwidth(st) && st->inflight_lo == BBR3_UNSET)
			st->inflight_lo = bbr3_max(ca->tp->snd_cwnd, st->prior_cwnd);
	} else if (st->prev_ca_state == TCP_CA_Loss) {
		ca->tp->snd_cwnd = bbr3_max(ca->tp->snd_cwnd, st->prior_cwnd);
		st->try_fast_path = 0;
	}
}

/* bbr_cwnd_event: restarting from idle while application-limited. */
static void bbr3_cwnd_event(BBR3_ARGS, enum tcp_ca_event ev)
{
	if (ev == CA_EVENT_TX_START && ca->tp->app_limited) {
		st->idle_restart = 1;
		st->ack_epoch_mstamp = ca->now_us;
		st->ack_epoch_acked = 0;
		if (st->mode == BBR3_PROBE_BW)
			bbr3_set_pacing_rate(BBR3_PASS, bbr3_bw(st), BBR3_UNIT);
		else if (st->mode == BBR3_PROBE_RTT)
			bbr3_check_probe_rtt_done(BBR3_PASS);
	}
}

/* bbr_undo_cwnd: the loss was spurious; the bounds come back and cwnd is the saved one. */
static __u32 bbr3_undo_cwnd(BBR3_ARGS)
{
	bbr3_reset_full_bw(st);
	st->loss_in_round = 0;
	st->bw_lo = bbr3_max(st->bw_lo, st->undo_bw_lo);
	st->inflight_lo = bbr3_max(st->inflight_lo, st->undo_inflight_lo);
	st->inflight_hi = bbr3_max(st->inflight_hi, st->undo_inflight_hi);
	st->try_fast_path = 0;
	return st->prior_cwnd;
}

/* Until the pipe is full or Startup's losses say so: a PROBE_RTT forced during a long
 * Startup returns to it. */
static bool bbr3_in_startup(BBR3_ARGS)
{
	return !st->full_bw_reached;
}

MODEL_OPS(bbr3) = {
	.init = bbr3_init,
	.ssthresh = bbr3_ssthresh,
	.cong_control = bbr3_cong_control,
	.set_state = bbr3_set_state,
	.cwnd_event = bbr3_cwnd_event,
	.undo_cwnd = bbr3_undo_cwnd,
	.in_startup = bbr3_in_startup,
};
