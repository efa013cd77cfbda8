/* SPDX-License-Identifier: MIT */
/*
 * BBR v1 (crate startlab-core, cc::bbr; Linux 6.18 net/ipv4/tcp_bbr.c; Cardwell et al., ACM
 * Queue 14(5), 2016): a model of the path updated on every ACK through cong_control — the
 * max-bandwidth filter over bw_rtts rounds, the min-RTT filter over min_rtt_win_s, the modes
 * Startup, Drain, ProbeBW (eight-phase gain cycle) and ProbeRTT, the long-term (policer)
 * estimator and the ACK-aggregation allowance — setting sk_pacing_rate and snd_cwnd itself.
 *
 * Hooks (MODEL_OPS, the struct_ops startlab_model, which has cong_control and no cong_avoid):
 * init = bbr_init; ssthresh = bbr_ssthresh (saves cwnd, ssthresh unchanged); cong_control =
 * bbr_main; set_state = bbr_set_state (Loss); cwnd_event = bbr_cwnd_event (TX_START while
 * application-limited); undo_cwnd = bbr_undo_cwnd; in_startup = until full_bw_reached.
 *
 * The arithmetic is the kernel's and the model's: bandwidth in packets/us << 24, gains in 1/256
 * (the configuration's Q32.32 gains rounded to the nearest 1/256, as the model rounds them),
 * times in microseconds from tcp_mstamp, delivered_mstamp and tcp_wstamp_ns.
 *
 * Differs from the Rust model: nothing in the arithmetic (checked hook by hook by the
 * differential test). Jiffies are now_us x hz / 10^6 (as cubic.bpf.c), not tcp_jiffies32.
 * The ProbeBW phase is bpf_get_prandom_u32() x 7 >> 32, which the simulator's VM draws from
 * the connection's stream, the same the model draws from; the kernel's own bbr uses
 * get_random_u32_below(7), which rejects a sliver of draws to remove the bias. tp->delivered
 * and the filters' counters are 32 bits as in the kernel (the model's are 64).
 */

struct bbr_config {
	fixed_t high_gain;          /* Startup's pacing and cwnd gain (739/256) */
	fixed_t drain_gain;         /* Drain's pacing gain (88/256) */
	fixed_t cwnd_gain;          /* ProbeBW's cwnd gain (2) */
	fixed_t probe_up_gain;      /* ProbeBW's probing phase (5/4) */
	fixed_t probe_down_gain;    /* ProbeBW's draining phase (3/4) */
	__u32 bw_rtts;              /* rounds of the max-bandwidth filter */
	__u32 min_rtt_win_s;        /* seconds of the min-RTT filter */
	__u32 probe_rtt_ms;         /* least time in ProbeRTT */
	fixed_t full_bw_thresh;     /* growth per round that keeps Startup going (5/4) */
	__u32 full_bw_cnt;          /* rounds without it that end Startup (3) */
	__u32 cwnd_min_target;      /* smallest cwnd, ProbeRTT's (4) */
	__u32 pacing_margin_percent;
	fixed_t extra_acked_gain;
	__u32 extra_acked_win_rtts;
	flag_t lt_bw;               /* the long-term (policer) estimator */
	__u32 pacing_shift;         /* sk_pacing_shift of bbr_tso_segs_goal */
	__u32 hz;                   /* jiffies per second (CONFIG_HZ) */
};

enum bbr_mode {
	BBR_STARTUP = 0,
	BBR_DRAIN = 1,
	BBR_PROBE_BW = 2,
	BBR_PROBE_RTT = 3,
};

#define BBR_BW_SCALE 24
#define BBR_BW_UNIT (1ULL << BBR_BW_SCALE)
#define BBR_SCALE 8
#define BBR_UNIT (1u << BBR_SCALE)
#define BBR_CYCLE_LEN 8
#define BBR_INIT_CWND 10
#define BBR_TSO_MAX_BYTES (65536 - 1 - 320)

struct bbr_state {
	__u32 min_rtt_us;
	__u32 min_rtt_stamp;
	__u32 probe_rtt_done_stamp;
	__u32 bw_t[3];   /* lib/win_minmax.c's three samples: round, value */
	__u32 bw_v[3];
	__u32 rtt_cnt;
	__u32 next_rtt_delivered;
	__u64 cycle_mstamp;
	__u32 mode;
	__u32 prev_ca_state;
	__u32 packet_conservation;
	__u32 round_start;
	__u32 idle_restart;
	__u32 probe_rtt_round_done;
	__u32 lt_is_sampling;
	__u32 lt_rtt_cnt;
	__u32 lt_use_bw;
	__u32 lt_bw;
	__u32 lt_last_delivered;
	__u32 lt_last_stamp;
	__u32 lt_last_lost;
	__u32 pacing_gain;
	__u32 cwnd_gain;
	__u32 full_bw_reached;
	__u32 full_bw_cnt;
	__u32 cycle_idx;
	__u32 has_seen_rtt;
	__u32 prior_cwnd;
	__u32 full_bw;
	__u64 ack_epoch_mstamp;
	__u32 extra_acked[2];
	__u32 ack_epoch_acked;
	__u32 extra_acked_win_rtts;
	__u32 extra_acked_win_idx;
};

#define BBR_ARGS struct ca *ca, const volatile struct bbr_config *cfg, struct bbr_state *st

/* A Q32.32 gain in 1/256, rounded to the nearest (the model's (g * 256).round()). */
static __always_inline __u32 bbr_unit(fixed_t g)
{
	return (__u32)(((__u64)g + (1ULL << 23)) >> 24);
}

static __always_inline __u32 bbr_jiffies(struct ca *ca, const volatile struct bbr_config *cfg)
{
	return (__u32)(ca->now_us * cfg->hz / USEC_PER_SEC);
}

static __always_inline __u32 bbr_max_bw(struct bbr_state *st)
{
	return st->bw_v[0];
}

static __always_inline __u32 bbr_bw(struct bbr_state *st)
{
	return st->lt_use_bw ? st->lt_bw : bbr_max_bw(st);
}

/* minmax_running_max with minmax_subwin_update (lib/win_minmax.c). */
static __always_inline void bbr_minmax_reset(struct bbr_state *st, __u32 t, __u32 v)
{
	st->bw_t[0] = st->bw_t[1] = st->bw_t[2] = t;
	st->bw_v[0] = st->bw_v[1] = st->bw_v[2] = v;
}

static __always_inline void bbr_running_max(struct bbr_state *st, __u32 win, __u32 t, __u32 v)
{
	__u32 dt;

	if (v >= st->bw_v[0] || t - st->bw_t[2] > win) {
		bbr_minmax_reset(st, t, v);
		return;
	}
	if (v >= st->bw_v[1]) {
		st->bw_t[1] = st->bw_t[2] = t;
		st->bw_v[1] = st->bw_v[2] = v;
	} else if (v >= st->bw_v[2]) {
		st->bw_t[2] = t;
		st->bw_v[2] = v;
	}
	dt = t - st->bw_t[0];
	if (dt > win) {
		st->bw_t[0] = st->bw_t[1];
		st->bw_v[0] = st->bw_v[1];
		st->bw_t[1] = st->bw_t[2];
		st->bw_v[1] = st->bw_v[2];
		st->bw_t[2] = t;
		st->bw_v[2] = v;
		if (t - st->bw_t[0] > win) {
			st->bw_t[0] = st->bw_t[1];
			st->bw_v[0] = st->bw_v[1];
			st->bw_t[1] = st->bw_t[2];
			st->bw_v[1] = st->bw_v[2];
			st->bw_t[2] = t;
			st->bw_v[2] = v;
		}
	} else if (st->bw_t[1] == st->bw_t[0] && dt > win / 4) {
		st->bw_t[1] = st->bw_t[2] = t;
		st->bw_v[1] = st->bw_v[2] = v;
	} else if (st->bw_t[2] == st->bw_t[1] && dt > win / 2) {
		st->bw_t[2] = t;
		st->bw_v[2] = v;
	}
}

/* bbr_rate_bytes_per_sec. */
static __always_inline __u64 bbr_rate_bytes(BBR_ARGS, __u64 rate, __u32 gain)
{
	__u32 margin = cfg->pacing_margin_percent < 99 ? cfg->pacing_margin_percent : 99;

	rate *= ca->tp->mss_cache;
	rate *= gain;
	rate >>= BBR_SCALE;
	rate *= USEC_PER_SEC / 100 * (100 - margin);
	return rate >> BBR_BW_SCALE;
}

/* bbr_init_pacing_rate_from_rtt: high_gain x cwnd / srtt (1 ms before any RTT sample). */
static __always_inline void bbr_init_pacing_rate(BBR_ARGS)
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
	bw = (__u64)ca->tp->snd_cwnd * BBR_BW_UNIT / rtt_us;
	ca->sk->sk_pacing_rate = bbr_rate_bytes(ca, cfg, st, bw, bbr_unit(cfg->high_gain));
}

/* bbr_set_pacing_rate: only up while Startup has not filled the pipe. */
static __always_inline void bbr_set_pacing_rate(BBR_ARGS, __u32 bw, __u32 gain)
{
	__u64 rate = bbr_rate_bytes(ca, cfg, st, bw, gain);

	if (!st->has_seen_rtt && ca->tp->srtt_us)
		bbr_init_pacing_rate(ca, cfg, st);
	if (st->full_bw_reached || rate > ca->sk->sk_pacing_rate)
		ca->sk->sk_pacing_rate = rate;
}

/* bbr_tso_segs_goal with bbr_min_tso_segs. */
static __always_inline __u32 bbr_tso_segs_goal(BBR_ARGS)
{
	__u64 rate = ca->sk->sk_pacing_rate;
	__u32 shift = cfg->pacing_shift < 63 ? cfg->pacing_shift : 63;
	__u64 bytes = rate >> shift;
	__u32 mss = ca->tp->mss_cache ? ca->tp->mss_cache : 1;
	__u32 min = rate < 1200000 / 8 ? 1 : 2;
	__u32 segs;

	if (bytes > BBR_TSO_MAX_BYTES)
		bytes = BBR_TSO_MAX_BYTES;
	segs = (__u32)(bytes / mss);
	if (segs < min)
		segs = min;
	return segs < 0x7f ? segs : 0x7f;
}

/* bbr_save_cwnd. */
static __always_inline void bbr_save_cwnd(BBR_ARGS)
{
	__u32 cwnd = ca->tp->snd_cwnd;

	if (st->prev_ca_state < TCP_CA_Recovery && st->mode != BBR_PROBE_RTT)
		st->prior_cwnd = cwnd;
	else if (cwnd > st->prior_cwnd)
		st->prior_cwnd = cwnd;
}

/* bbr_bdp: ceil(bw x min_rtt x gain), the initial window without an RTT sample. */
static __always_inline __u32 bbr_bdp(BBR_ARGS, __u32 bw, __u32 gain)
{
	__u64 w;

	if (st->min_rtt_us == ~0U)
		return BBR_INIT_CWND;
	w = (__u64)bw * st->min_rtt_us;
	return (__u32)((((w * gain) >> BBR_SCALE) + BBR_BW_UNIT - 1) / BBR_BW_UNIT);
}

/* bbr_quantization_budget. */
static __always_inline __u32 bbr_quantization_budget(BBR_ARGS, __u32 cwnd)
{
	cwnd += 3 * bbr_tso_segs_goal(ca, cfg, st);
	cwnd = (cwnd + 1) & ~1U;
	if (st->mode == BBR_PROBE_BW && st->cycle_idx == 0)
		cwnd += 2;
	return cwnd;
}

static __always_inline __u32 bbr_inflight(BBR_ARGS, __u32 bw, __u32 gain)
{
	return bbr_quantization_budget(ca, cfg, st, bbr_bdp(ca, cfg, st, bw, gain));
}

/* bbr_packets_in_net_at_edt. */
static __always_inline __u32 bbr_in_net_at_edt(BBR_ARGS, __u32 inflight_now)
{
	__u64 now_ns = ca->tp->tcp_clock_cache;
	__u64 edt_ns = ca->tp->tcp_wstamp_ns > now_ns ? ca->tp->tcp_wstamp_ns : now_ns;
	__u64 interval_us = (edt_ns - now_ns) / 1000;
	__u64 delivered = ((__u64)bbr_bw(st) * interval_us) >> BBR_BW_SCALE;
	__u64 at_edt = inflight_now;

	if (st->pacing_gain > BBR_UNIT)
		at_edt += bbr_tso_segs_goal(ca, cfg, st);
	return delivered >= at_edt ? 0 : (__u32)(at_edt - delivered);
}

/* bbr_ack_aggregation_cwnd. */
static __always_inline __u32 bbr_ack_aggregation_cwnd(BBR_ARGS)
{
	__u32 gain = bbr_unit(cfg->extra_acked_gain);
	__u64 max_aggr, aggr;
	__u32 extra = st->extra_acked[0] > st->extra_acked[1] ? st->extra_acked[0] : st->extra_acked[1];

	if (!gain || !st->full_bw_reached)
		return 0;
	max_aggr = (__u64)bbr_bw(st) * 100000 / BBR_BW_UNIT;
	aggr = ((__u64)gain * extra) >> BBR_SCALE;
	return (__u32)(aggr < max_aggr ? aggr : max_aggr);
}

/* bbr_advance_cycle_phase. */
static __always_inline void bbr_advance_cycle_phase(BBR_ARGS)
{
	st->cycle_idx = (st->cycle_idx + 1) & (BBR_CYCLE_LEN - 1);
	st->cycle_mstamp = ca->tp->delivered_mstamp;
}

/* bbr_reset_probe_bw_mode: ProbeBW at a random phase other than the draining one. */
static __always_inline void bbr_reset_probe_bw_mode(BBR_ARGS)
{
	__u32 r = (__u32)(((__u64)bpf_get_prandom_u32() * 7) >> 32);

	st->mode = BBR_PROBE_BW;
	st->cycle_idx = BBR_CYCLE_LEN - 1 - r;
	bbr_advance_cycle_phase(ca, cfg, st);
}

static __always_inline void bbr_reset_mode(BBR_ARGS)
{
	if (!st->full_bw_reached)
		st->mode = BBR_STARTUP;
	else
		bbr_reset_probe_bw_mode(ca, cfg, st);
}

static __always_inline void bbr_reset_lt_interval(BBR_ARGS)
{
	st->lt_last_stamp = (__u32)(ca->tp->delivered_mstamp / 1000);
	st->lt_last_delivered = ca->tp->delivered;
	st->lt_last_lost = ca->tp->lost;
	st->lt_rtt_cnt = 0;
}

static __always_inline void bbr_reset_lt(BBR_ARGS)
{
	st->lt_bw = 0;
	st->lt_use_bw = 0;
	st->lt_is_sampling = 0;
	bbr_reset_lt_interval(ca, cfg, st);
}

/* bbr_lt_bw_interval_done. */
static __always_inline void bbr_lt_interval_done(BBR_ARGS, __u32 bw)
{
	__u32 diff;

	if (st->lt_bw) {
		diff = bw > st->lt_bw ? bw - st->lt_bw : st->lt_bw - bw;
		if ((__u64)diff * BBR_UNIT <= (__u64)(BBR_UNIT / 8) * st->lt_bw ||
		    bbr_rate_bytes(ca, cfg, st, diff, BBR_UNIT) <= 4000 / 8) {
			st->lt_bw = (__u32)(((__u64)bw + st->lt_bw) >> 1);
			st->lt_use_bw = 1;
			st->pacing_gain = BBR_UNIT;
			st->lt_rtt_cnt = 0;
			return;
		}
	}
	st->lt_bw = bw;
	bbr_reset_lt_interval(ca, cfg, st);
}

/* bbr_lt_bw_sampling. */
static __always_inline void bbr_lt_sampling(BBR_ARGS, __u32 losses, bool app_limited)
{
	__u32 lost, delivered;
	__s64 t;

	if (!cfg->lt_bw)
		return;
	if (st->lt_use_bw) {
		if (st->mode == BBR_PROBE_BW && st->round_start && ++st->lt_rtt_cnt >= 48) {
			bbr_reset_lt(ca, cfg, st);
			bbr_reset_probe_bw_mode(ca, cfg, st);
		}
		return;
	}
	if (!st->lt_is_sampling) {
		if (!losses)
			return;
		bbr_reset_lt_interval(ca, cfg, st);
		st->lt_is_sampling = 1;
	}
	if (app_limited) {
		bbr_reset_lt(ca, cfg, st);
		return;
	}
	if (st->round_start)
		st->lt_rtt_cnt = (st->lt_rtt_cnt + 1) & 0x7f;
	if (st->lt_rtt_cnt < 4)
		return;
	if (st->lt_rtt_cnt > 16) {
		bbr_reset_lt(ca, cfg, st);
		return;
	}
	if (!losses)
		return;
	lost = ca->tp->lost - st->lt_last_lost;
	delivered = ca->tp->delivered - st->lt_last_delivered;
	if (!delivered || ((__u64)lost << BBR_SCALE) < 50ULL * delivered)
		return;
	t = (__s64)(ca->tp->delivered_mstamp / 1000) - (__s64)st->lt_last_stamp;
	if (t < 1)
		return;
	if (t >= 0xffffffffLL / 1000) {
		bbr_reset_lt(ca, cfg, st);
		return;
	}
	bbr_lt_interval_done(ca, cfg, st,
			     (__u32)((__u64)delivered * BBR_BW_UNIT / ((__u64)t * 1000)));
}

/* bbr_update_bw. */
static __always_inline void bbr_update_bw(BBR_ARGS, const struct rate_sample *rs)
{
	__u64 bw;

	st->round_start = 0;
	if (rs->delivered < 0 || rs->interval_us <= 0)
		return;
	if ((__s32)(rs->prior_delivered - st->next_rtt_delivered) >= 0) {
		st->next_rtt_delivered = ca->tp->delivered;
		st->rtt_cnt++;
		st->round_start = 1;
		st->packet_conservation = 0;
	}
	bbr_lt_sampling(ca, cfg, st, rs->losses, rs->is_app_limited);
	bw = (__u64)rs->delivered * BBR_BW_UNIT / (__u64)rs->interval_us;
	if (bw > 0xffffffffULL)
		bw = 0xffffffffULL;
	if (!rs->is_app_limited || bw >= bbr_max_bw(st))
		bbr_running_max(st, cfg->bw_rtts, st->rtt_cnt, (__u32)bw);
}

/* bbr_update_ack_aggregation. */
static __always_inline void bbr_update_ack_aggregation(BBR_ARGS, const struct rate_sample *rs)
{
	__u64 epoch_us, expected;
	__u32 extra;

	if (!bbr_unit(cfg->extra_acked_gain) || rs->acked_sacked == 0 || rs->delivered < 0 ||
	    rs->interval_us <= 0)
		return;
	if (st->round_start) {
		st->extra_acked_win_rtts = st->extra_acked_win_rtts + 1 < 0x1f ? st->extra_acked_win_rtts + 1 : 0x1f;
		if (st->extra_acked_win_rtts >= cfg->extra_acked_win_rtts) {
			st->extra_acked_win_rtts = 0;
			st->extra_acked_win_idx ^= 1;
			st->extra_acked[st->extra_acked_win_idx & 1] = 0;
		}
	}
	epoch_us = ca->tp->delivered_mstamp > st->ack_epoch_mstamp ?
			   ca->tp->delivered_mstamp - st->ack_epoch_mstamp : 0;
	expected = (__u64)bbr_bw(st) * epoch_us / BBR_BW_UNIT;
	if (st->ack_epoch_acked <= expected ||
	    (__u64)st->ack_epoch_acked + rs->acked_sacked >= (1 << 20)) {
		st->ack_epoch_acked = 0;
		st->ack_epoch_mstamp = ca->tp->delivered_mstamp;
		expected = 0;
	}
	st->ack_epoch_acked = st->ack_epoch_acked + rs->acked_sacked < 0xfffff ?
				      st->ack_epoch_acked + rs->acked_sacked : 0xfffff;
	extra = (__u32)(st->ack_epoch_acked - expected);
	if (extra > ca->tp->snd_cwnd)
		extra = ca->tp->snd_cwnd;
	if (extra > st->extra_acked[st->extra_acked_win_idx & 1])
		st->extra_acked[st->extra_acked_win_idx & 1] = extra;
}

/* bbr_is_next_cycle_phase. */
static __always_inline bool bbr_is_next_cycle_phase(BBR_ARGS, const struct rate_sample *rs)
{
	__u64 since = ca->tp->delivered_mstamp > st->cycle_mstamp ?
			      ca->tp->delivered_mstamp - st->cycle_mstamp : 0;
	bool full_length = since > st->min_rtt_us;
	__u32 inflight;

	if (st->pacing_gain == BBR_UNIT)
		return full_length;
	inflight = bbr_in_net_at_edt(ca, cfg, st, rs->prior_in_flight);
	if (st->pacing_gain > BBR_UNIT)
		return full_length &&
		       (rs->losses ||
			inflight >= bbr_inflight(ca, cfg, st, bbr_max_bw(st), st->pacing_gain));
	return full_length || inflight <= bbr_inflight(ca, cfg, st, bbr_max_bw(st), BBR_UNIT);
}

/* bbr_check_full_bw_reached. */
static __always_inline void bbr_check_full_bw(BBR_ARGS, const struct rate_sample *rs)
{
	__u32 thresh;

	if (st->full_bw_reached || !st->round_start || rs->is_app_limited)
		return;
	thresh = (__u32)(((__u64)st->full_bw * bbr_unit(cfg->full_bw_thresh)) >> BBR_SCALE);
	if (bbr_max_bw(st) >= thresh) {
		st->full_bw = bbr_max_bw(st);
		st->full_bw_cnt = 0;
		return;
	}
	st->full_bw_cnt++;
	st->full_bw_reached = st->full_bw_cnt >= cfg->full_bw_cnt;
	if (st->full_bw_reached && st->mode == BBR_STARTUP)
		SET_HINT(ca, "bbr-full-bw");
}

/* bbr_check_drain. */
static __always_inline void bbr_check_drain(BBR_ARGS)
{
	if (st->mode == BBR_STARTUP && st->full_bw_reached) {
		st->mode = BBR_DRAIN;
		ca->tp->snd_ssthresh = bbr_inflight(ca, cfg, st, bbr_max_bw(st), BBR_UNIT);
	}
	if (st->mode == BBR_DRAIN &&
	    bbr_in_net_at_edt(ca, cfg, st, in_flight(ca)) <=
		    bbr_inflight(ca, cfg, st, bbr_max_bw(st), BBR_UNIT))
		bbr_reset_probe_bw_mode(ca, cfg, st);
}

/* bbr_check_probe_rtt_done. */
static __always_inline void bbr_check_probe_rtt_done(BBR_ARGS)
{
	__u32 now = bbr_jiffies(ca, cfg);

	if (!(st->probe_rtt_done_stamp && (__s32)(now - st->probe_rtt_done_stamp) > 0))
		return;
	st->min_rtt_stamp = now;
	if (st->prior_cwnd > ca->tp->snd_cwnd)
		ca->tp->snd_cwnd = st->prior_cwnd;
	bbr_reset_mode(ca, cfg, st);
}

/* bbr_update_min_rtt. */
static __always_inline void bbr_update_min_rtt(BBR_ARGS, const struct rate_sample *rs)
{
	__u32 now = bbr_jiffies(ca, cfg);
	bool expired = (__s32)(now - (st->min_rtt_stamp + cfg->min_rtt_win_s * cfg->hz)) > 0;

	if (rs->rtt_us >= 0) {
		__u32 rtt = rs->rtt_us < 0xfffffffeLL ? (__u32)rs->rtt_us : 0xfffffffe;

		if (rtt <= st->min_rtt_us || expired) {
			st->min_rtt_us = rtt;
			st->min_rtt_stamp = now;
		}
	}
	if (cfg->probe_rtt_ms > 0 && expired && !st->idle_restart && st->mode != BBR_PROBE_RTT) {
		st->mode = BBR_PROBE_RTT;
		bbr_save_cwnd(ca, cfg, st);
		st->probe_rtt_done_stamp = 0;
	}
	if (st->mode == BBR_PROBE_RTT) {
		__u32 limited = ca->tp->delivered + in_flight(ca);

		ca->tp->app_limited = limited ? limited : 1;
		if (!st->probe_rtt_done_stamp && in_flight(ca) <= cfg->cwnd_min_target) {
			__u32 j = (__u32)(((__u64)cfg->probe_rtt_ms * cfg->hz + 999) / 1000);

			st->probe_rtt_done_stamp = now + j ? now + j : 1;
			st->probe_rtt_round_done = 0;
			st->next_rtt_delivered = ca->tp->delivered;
		} else if (st->probe_rtt_done_stamp) {
			if (st->round_start)
				st->probe_rtt_round_done = 1;
			if (st->probe_rtt_round_done)
				bbr_check_probe_rtt_done(ca, cfg, st);
		}
	}
	if (rs->delivered > 0)
		st->idle_restart = 0;
}

static __always_inline void bbr_update_gains(BBR_ARGS)
{
	switch (st->mode) {
	case BBR_STARTUP:
		st->pacing_gain = bbr_unit(cfg->high_gain);
		st->cwnd_gain = bbr_unit(cfg->high_gain);
		break;
	case BBR_DRAIN:
		st->pacing_gain = bbr_unit(cfg->drain_gain);
		st->cwnd_gain = bbr_unit(cfg->high_gain);
		break;
	case BBR_PROBE_BW:
		if (st->lt_use_bw)
			st->pacing_gain = BBR_UNIT;
		else if (st->cycle_idx == 0)
			st->pacing_gain = bbr_unit(cfg->probe_up_gain);
		else if (st->cycle_idx == 1)
			st->pacing_gain = bbr_unit(cfg->probe_down_gain);
		else
			st->pacing_gain = BBR_UNIT;
		st->cwnd_gain = bbr_unit(cfg->cwnd_gain);
		break;
	default:
		st->pacing_gain = BBR_UNIT;
		st->cwnd_gain = BBR_UNIT;
		break;
	}
}

/* bbr_set_cwnd with bbr_set_cwnd_to_recover_or_restore. */
static __always_inline void bbr_set_cwnd(BBR_ARGS, const struct rate_sample *rs, __u32 acked,
					 __u32 bw, __u32 gain)
{
	__u32 cwnd = ca->tp->snd_cwnd, state = inet_csk_ca_state(ca->sk), prev = st->prev_ca_state;
	bool conserving;

	if (acked) {
		if (rs->losses > 0)
			cwnd = (__s64)cwnd - rs->losses > 1 ? cwnd - rs->losses : 1;
		if (state == TCP_CA_Recovery && prev != TCP_CA_Recovery) {
			st->packet_conservation = 1;
			st->next_rtt_delivered = ca->tp->delivered;
			cwnd = in_flight(ca) + acked;
		} else if (prev >= TCP_CA_Recovery && state < TCP_CA_Recovery) {
			if (st->prior_cwnd > cwnd)
				cwnd = st->prior_cwnd;
			st->packet_conservation = 0;
		}
		st->prev_ca_state = state;
		conserving = st->packet_conservation;
		if (conserving) {
			if (in_flight(ca) + acked > cwnd)
				cwnd = in_flight(ca) + acked;
		} else {
			__u32 target = bbr_bdp(ca, cfg, st, bw, gain);

			target += bbr_ack_aggregation_cwnd(ca, cfg, st);
			target = bbr_quantization_budget(ca, cfg, st, target);
			if (st->full_bw_reached)
				cwnd = cwnd + acked < target ? cwnd + acked : target;
			else if (cwnd < target || ca->tp->delivered < BBR_INIT_CWND)
				cwnd = cwnd + acked;
			if (cwnd < cfg->cwnd_min_target)
				cwnd = cfg->cwnd_min_target;
		}
	}
	if (st->mode == BBR_PROBE_RTT && cwnd > cfg->cwnd_min_target)
		cwnd = cfg->cwnd_min_target;
	if (cwnd > ca->tp->snd_cwnd_clamp)
		cwnd = ca->tp->snd_cwnd_clamp;
	ca->tp->snd_cwnd = cwnd;
}

static void bbr_init(BBR_ARGS)
{
	st->prior_cwnd = 0;
	ca->tp->snd_ssthresh = TCP_INFINITE_SSTHRESH;
	st->rtt_cnt = 0;
	st->next_rtt_delivered = 0;
	st->prev_ca_state = TCP_CA_Open;
	st->packet_conservation = 0;
	st->probe_rtt_done_stamp = 0;
	st->probe_rtt_round_done = 0;
	st->min_rtt_us = ca->tp->rtt_min.s[0].v;
	st->min_rtt_stamp = bbr_jiffies(ca, cfg);
	bbr_minmax_reset(st, 0, 0);
	st->has_seen_rtt = 0;
	bbr_init_pacing_rate(ca, cfg, st);
	st->round_start = 0;
	st->idle_restart = 0;
	st->full_bw_reached = 0;
	st->full_bw = 0;
	st->full_bw_cnt = 0;
	st->cycle_mstamp = 0;
	st->cycle_idx = 0;
	bbr_reset_lt(ca, cfg, st);
	st->mode = BBR_STARTUP;
	st->ack_epoch_mstamp = ca->now_us;
	st->ack_epoch_acked = 0;
	st->extra_acked_win_rtts = 0;
	st->extra_acked_win_idx = 0;
	st->extra_acked[0] = 0;
	st->extra_acked[1] = 0;
	ca->sk->sk_pacing_status = SK_PACING_NEEDED;
}

/* bbr_ssthresh: the loss saves cwnd; ssthresh is unchanged. */
static __u32 bbr_ssthresh(BBR_ARGS)
{
	bbr_save_cwnd(ca, cfg, st);
	return ca->tp->snd_ssthresh;
}

/* bbr_main. */
static void bbr_cong_control(BBR_ARGS, const struct rate_sample *rs)
{
	__u32 bw;

	bbr_update_bw(ca, cfg, st, rs);
	bbr_update_ack_aggregation(ca, cfg, st, rs);
	if (st->mode == BBR_PROBE_BW && bbr_is_next_cycle_phase(ca, cfg, st, rs))
		bbr_advance_cycle_phase(ca, cfg, st);
	bbr_check_full_bw(ca, cfg, st, rs);
	bbr_check_drain(ca, cfg, st);
	bbr_update_min_rtt(ca, cfg, st, rs);
	bbr_update_gains(ca, cfg, st);
	bw = bbr_bw(st);
	bbr_set_pacing_rate(ca, cfg, st, bw, st->pacing_gain);
	bbr_set_cwnd(ca, cfg, st, rs, rs->acked_sacked, bw, st->cwnd_gain);
}

/* bbr_set_state: a timeout ends the round and starts over the full-pipe estimate. */
static void bbr_set_state(BBR_ARGS, __u8 new_state)
{
	if (new_state == TCP_CA_Loss) {
		st->prev_ca_state = TCP_CA_Loss;
		st->full_bw = 0;
		st->round_start = 1;
		bbr_lt_sampling(ca, cfg, st, 1, false);
	}
}

/* bbr_cwnd_event: restarting from idle while application-limited. */
static void bbr_cwnd_event(BBR_ARGS, enum tcp_ca_event ev)
{
	if (ev == CA_EVENT_TX_START && ca->tp->app_limited) {
		st->idle_restart = 1;
		st->ack_epoch_mstamp = ca->now_us;
		st->ack_epoch_acked = 0;
		if (st->mode == BBR_PROBE_BW)
			bbr_set_pacing_rate(ca, cfg, st, bbr_bw(st), BBR_UNIT);
		else if (st->mode == BBR_PROBE_RTT)
			bbr_check_probe_rtt_done(ca, cfg, st);
	}
}

/* bbr_undo_cwnd: the reduction was spurious; the full-pipe count starts over. */
static __u32 bbr_undo_cwnd(BBR_ARGS)
{
	st->full_bw = 0;
	st->full_bw_cnt = 0;
	bbr_reset_lt(ca, cfg, st);
	return ca->tp->snd_cwnd;
}

/* Until the pipe is full: a PROBE_RTT forced during a long Startup returns to it. */
static bool bbr_in_startup(BBR_ARGS)
{
	return !st->full_bw_reached;
}

MODEL_OPS(bbr) = {
	.init = bbr_init,
	.ssthresh = bbr_ssthresh,
	.cong_control = bbr_cong_control,
	.set_state = bbr_set_state,
	.cwnd_event = bbr_cwnd_event,
	.undo_cwnd = bbr_undo_cwnd,
	.in_startup = bbr_in_startup,
};
