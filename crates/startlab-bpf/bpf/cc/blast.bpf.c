/* SPDX-License-Identifier: MIT */
/*
 * BLAST, BIC-TCP with loss tolerance (crate startlab-core, cc::blast): Ha's dissertation ch. 7,
 * §7.1.1-7.1.2 the loss classifier (Eqs. 7.1-7.5), §7.1.3 RTT estimation (Eqs. 7.6-7.10),
 * §7.2.1 the integration with loss recovery (Figs. 7.6-7.9). Needs cc/bic.bpf.c (included
 * before this file): the window search is BIC's struct bic_core.
 *
 * A loss is classified by the current round's mean queueing delay D = mean RTT - min RTT
 * (Eq. 7.2) against delta_L = gamma_l (maxRTT - minRTT) and delta_H = gamma_h (maxRTT - minRTT)
 * (Eq. 7.5): D <= delta_L is not congestion, D > delta_H or a rising D (D_k > D_k-1) is (Eq. 7.3,
 * ties as Fig. 7.9). BLAST is off (every loss is congestion) while delta_L < min_threshold_ms
 * (§7.2.1). minRTT is the smallest raw sample (Eq. 7.6), maxRTT the largest sRTT (Eq. 7.10) of a
 * median-of-three filter (Eq. 7.8) smoothed by 7/8 (Eq. 7.9), both over the current and the
 * previous T_w window (§7.1.3). A round ends when the segments in flight at its start have been
 * delivered (tp->delivered), so rounds go on in fast recovery.
 *
 * Hooks (Linux tcp_ack order: pkts_acked from tcp_clean_rtx_queue, then tcp_fastretrans_alert
 * with ssthresh / set_state, then tcp_cong_control: PRR in Recovery, cong_avoid otherwise):
 * - ssthresh (Fig. 7.9 blast_recalc_ssthresh): congestion -> BIC's decrease and W_max;
 *   not congestion -> ssthresh = cwnd, W_max untouched. PRR (tcp_cwnd_reduction) then brings
 *   cwnd towards ssthresh, i.e. keeps the window, and tcp_end_cwnd_reduction sets cwnd =
 *   ssthresh when recovery ends.
 * - pkts_acked: the round's RTT statistics (Fig. 7.7); in Recovery, while not congested, BIC's
 *   increment is added to ssthresh ("BLAST Fast Recovery", §7.2.1) before PRR runs on the same
 *   ACK, so PRR's target and the window recovery ends with grow.
 * - set_state(Open/Disorder) from Recovery: a non-congestion loss is judged again and cut as
 *   BIC if the queue has built up (ssthresh written before tcp_end_cwnd_reduction copies it
 *   into cwnd). set_state(Loss): a timeout is congestion whatever the classifier said (§7.2.1),
 *   and the estimators are reset (Fig. 7.9 blast_reset).
 * - cong_avoid: BIC's slow start and search (never called by Linux in Recovery: tcp_cong_control
 *   runs tcp_cwnd_reduction there instead).
 *
 * Differs from the Rust model:
 * - Fast recovery is Linux's PRR (RFC 6937), not RFC 6675's cwnd = ssthresh: after a
 *   non-congestion loss in_flight starts below ssthresh (the lost segments leave the pipe) and
 *   PRR's slow-start reduction bound raises cwnd to ssthresh by at most newly delivered + 1 per
 *   ACK, so the window is kept only once the pipe has refilled, and the recovery growth reaches
 *   cwnd at that pace; the model adds the increment to cwnd at once. The port also adds it to
 *   snd_cwnd in pkts_acked, but PRR overwrites snd_cwnd on the same ACK. So in long recoveries
 *   ssthresh runs ahead of cwnd (seen: ssthresh 350 with cwnd 320), and cwnd jumps to it when
 *   recovery ends (tcp_end_cwnd_reduction), a burst the model does not have.
 * - The window judged again at the end of recovery is ssthresh (what tcp_end_cwnd_reduction
 *   will set cwnd to; the model has cwnd = ssthresh there), or snd_cwnd after an undo
 *   (tp->undo_marker = 0: Linux keeps the restored cwnd). The cut writes snd_ssthresh and
 *   snd_cwnd = min(snd_cwnd, ssthresh).
 * - ssthresh is whole segments: the port keeps the fraction beside it (bic.bpf.c, struct
 *   bic_ssthresh) while snd_ssthresh still equals its integer part, so the recovery growth
 *   accumulates as in the model, and puts it back beside cwnd = ssthresh after recovery. Without
 *   that, a non-congestion loss every round or two truncated the window to whole segments and
 *   froze max probing near W_max (seen on a 1 % random-loss path: cwnd flat at 165 for 17 s).
 * - Delays: RTT samples are Linux's ca_rtt (sample->rtt_us, microseconds, negative = none);
 *   the model's are the newest delivered segment's, in nanoseconds. Mean delays and thresholds
 *   are computed in nanoseconds from microsecond sums, sRTT in microseconds x 2^16; sRTT's 7/8
 *   is s - s/8 (rounding up by at most 2^-16 us). So minRTT, the round's mean and maxRTT are
 *   each up to 1 us off the model's, and a verdict (Eq. 7.3) can differ where D_k is within
 *   about 1 us of delta_L, delta_H or D_k-1. Seen on a 20 Mbit/s path with 0.5 % random loss:
 *   the model's D_k = 4222.529 us <= delta_L = 4222.694 us (no congestion: the recovery grows),
 *   the port's 4222.670 us > 4222.654 us (congestion, rising delay: no growth); from there on
 *   the two windows differ (0.28 segments, then a cut from another window at the end of that
 *   recovery). The kernel has only microsecond RTTs; nothing in the port can decide such ties
 *   as the model does.
 * - pkts_acked: Linux calls it on every ACK (sample->pkts_acked counts only cumulatively acked
 *   segments); the model's sender only on ACKs that deliver data, with the newly delivered
 *   count. The port computes that count from tp->delivered and returns at once when it is 0.
 * - A timeout is recognised as "ssthresh was asked at this instant" by equal tcp_mstamp
 *   (tcp_enter_loss calls ssthresh and set_state on one clock reading), as the model compares
 *   times. Linux calls set_state(Loss) on every timeout, also in Loss; as the model's sender
 *   only changes state once, a Loss -> Loss call is ignored unless Linux asked ssthresh for it
 *   (tcp_enter_loss: a timeout after the previous retransmission was acknowledged), which the
 *   model's sender never does: then it is handled as a new timeout.
 * - Set_state with an unchanged state is ignored otherwise (the model's sender calls it only on
 *   a change). CWR (ECN) is not in the model; it restarts the round as any other state.
 * - Round ends compare the 32-bit tp->delivered modulo 2^32; in_flight is
 *   tcp_packets_in_flight at pkts_acked / cong_avoid time (RACK may mark more segments lost
 *   later on the same ACK).
 * - The loss verdict counts (the model's loss_verdicts) are kept in the state but not exported
 *   (the kernel tables have no column for them); compiled with -DBLAST_TRACE the port prints
 *   them with bpf_printk on every verdict.
 * - Undo: Linux undoes spurious recoveries by default (tcp_undo_cwnd_reduction: cwnd from
 *   undo_cwnd = tcp_reno_undo_cwnd, ssthresh = max(ssthresh, prior_ssthresh)), the simulator
 *   only with tcp.undo = true; neither restores W_max nor the verdict counts.
 * - BIC's own differences (bic.bpf.c): the search in segments x 2^32 beside cwnd's 2^-16
 *   fraction, ssthresh in whole segments with the fraction kept beside it, slow start up to
 *   the fractional ssthresh, cong_avoid also on the ACK that ends recovery.
 */

/* What a round with too few RTT samples uses as its mean queueing delay (blast::FewSamples). */
enum blast_config__few_samples {
	blast_config__few_samples__previous,
	blast_config__few_samples__zero,
};

enum blast_config__ss_counting {
	blast_config__ss_counting__segments,
	blast_config__ss_counting__acks,
};

struct blast_config {
	fixed_t gamma_l;              /* delta_L = gamma_l (maxRTT - minRTT), Eq. 7.5 */
	fixed_t gamma_h;              /* delta_H = gamma_h (maxRTT - minRTT), Eq. 7.5 */
	usec_t min_threshold_ms;      /* BLAST acts only while delta_L >= this (§7.2.1) */
	usec_t rtt_window_s;          /* T_w (§7.1.3); 0 keeps the extremes for the connection */
	__u32 min_round_samples;      /* fewer samples in a round use the few_samples rule */
	enum blast_config__few_samples few_samples;
	flag_t recovery_growth;       /* BLAST Fast Recovery (§7.2.1) */
	flag_t recheck_at_recovery_end; /* Fig. 7.9, snd_una >= high_seq */
	fixed_t beta;                 /* BIC-TCP (bic.bpf.c) */
	fixed_t s_max;
	fixed_t s_min;
	fixed_t low_window;
	fixed_t search_divisor;
	flag_t fast_convergence;
	enum blast_config__ss_counting ss_counting;
};

#define BLAST_NO_MIN ((__u64)-1)

/* The last loss ssthresh was asked about (blast::LossEvent). */
struct blast_loss {
	__u64 at_us;
	__u64 cwnd;       /* segments x 2^32 */
	__u32 valid;
	__u32 congestion; /* the verdict */
};

struct blast_state {
	struct bic_core bic;
	/* RTT estimators (§7.1.3) */
	__u64 min_cur, min_prev;  /* minRTT (Eq. 7.6), us; BLAST_NO_MIN: none */
	__u64 max_cur, max_prev;  /* maxRTT (Eq. 7.10) of sRTT, us x 2^16; 0: none */
	__u64 window_start;       /* us */
	__u32 window_started;
	__u32 n_recent;           /* raw samples in recent[] (at most 3) */
	__u32 recent[3];          /* the last three raw samples, us, newest last (Eq. 7.8) */
	__u32 s_rtt_valid;
	__u64 s_rtt;              /* sRTT (Eq. 7.9), us x 2^16 */
	__u64 sum;                /* this round's raw samples, us (Eq. 7.7) */
	__u32 cnt;
	__u32 round_started;
	__u32 round_end;          /* the round ends once tp->delivered passes this */
	__u32 prev_delivered;     /* tp->delivered at the last pkts_acked */
	__u64 prev_delay;         /* D_k-1, ns */
	struct blast_loss last_loss;
	struct bic_ssthresh ss;   /* snd_ssthresh with its fraction (bic.bpf.c) */
	__u64 congestion_losses;
	__u64 non_congestion_losses;
};

#ifdef BLAST_TRACE
#define blast_trace(ca, what, st, d)                                                   \
	do {                                                                           \
		bpf_printk("blast %u %s D=%llu", (ca)->sk->__sk_common.skc_num, what, d); \
		bpf_printk("blast %u c=%llu nc=%llu", (ca)->sk->__sk_common.skc_num,      \
			   (st)->congestion_losses, (st)->non_congestion_losses);          \
	} while (0)
#else
#define blast_trace(ca, what, st, d) do { } while (0)
#endif

static __always_inline void blast_bic_params(struct bic_params *p, const volatile struct blast_config *cfg)
{
	bic_params_set(p, cfg->beta, cfg->s_max, cfg->s_min, cfg->low_window, cfg->search_divisor,
		       cfg->fast_convergence, cfg->ss_counting == blast_config__ss_counting__segments);
}

/* min RTT, us (BLAST_NO_MIN: none yet). */
static __always_inline __u64 blast_d_min(const struct blast_state *st)
{
	return st->min_cur < st->min_prev ? st->min_cur : st->min_prev;
}

/* (delta_L, delta_H), Eq. 7.5, ns. */
static __always_inline void blast_thresholds(const volatile struct blast_config *cfg,
					     const struct blast_state *st, __u64 *low, __u64 *high)
{
	__u64 dmin = blast_d_min(st), dmax, range;

	*low = 0;
	*high = 0;
	if (dmin == BLAST_NO_MIN)
		return;
	dmax = st->max_cur > st->max_prev ? st->max_cur : st->max_prev;
	dmax = (dmax * 1000) >> FRAC_BITS;
	dmin *= 1000;
	range = dmax > dmin ? dmax - dmin : 0;
	*low = fixed_mul(range, cfg->gamma_l);
	*high = fixed_mul(range, cfg->gamma_h);
}

/* D_k, the current round's mean queueing delay (Eq. 7.2), ns. */
static __always_inline __u64 blast_avg_delay(const volatile struct blast_config *cfg,
					     const struct blast_state *st)
{
	__u32 need = cfg->min_round_samples > 1 ? cfg->min_round_samples : 1;
	__u64 dmin = blast_d_min(st), mean;

	if (st->cnt >= need && st->cnt && dmin != BLAST_NO_MIN) {
		mean = st->sum * 1000 / st->cnt;
		return mean > dmin * 1000 ? mean - dmin * 1000 : 0;
	}
	if (cfg->few_samples == blast_config__few_samples__zero)
		return 0; /* Fig. 7.9: avg_delay() is 0 without samples */
	return st->prev_delay; /* §7.1.2: "the estimate of the previous round" */
}

/* Eq. 7.3 (Fig. 7.9 blast_loss_predictor): true for congestion. */
static __always_inline bool blast_is_congestion(const volatile struct blast_config *cfg,
						const struct blast_state *st)
{
	__u64 low, high, d;

	/* §7.2.1: off while delta_L < 2 ms (Linux's 1 ms timer granularity). */
	if (blast_d_min(st) == BLAST_NO_MIN)
		return true;
	blast_thresholds(cfg, st, &low, &high);
	if (low < cfg->min_threshold_ms * 1000)
		return true;
	d = blast_avg_delay(cfg, st);
	if (d <= low)
		return false;
	return d > high || d > st->prev_delay;
}

/* Fig. 7.9 blast_reset, on a timeout. */
static __always_inline void blast_reset(struct blast_state *st)
{
	bic_core_reset(&st->bic);
	st->prev_delay = 0;
	st->min_cur = BLAST_NO_MIN;
	st->min_prev = BLAST_NO_MIN;
	st->max_cur = 0;
	st->max_prev = 0;
	st->window_started = 0;
	st->n_recent = 0;
	st->s_rtt_valid = 0;
	st->sum = 0;
	st->cnt = 0;
	st->round_started = 0;
	st->last_loss.valid = 0;
}

/* One RTT sample, us: Eqs. 7.6-7.10 and the round's sum (Fig. 7.7 "On each ACK"). */
static __always_inline void blast_on_rtt(struct ca *ca, const volatile struct blast_config *cfg,
					 struct blast_state *st, __u32 r)
{
	__u32 a, b, c, m;
	__u64 s;

	/* T_w (§7.1.3): extremes over the current and the previous window. */
	if (!st->window_started) {
		st->window_start = ca->now_us;
		st->window_started = 1;
	} else if (cfg->rtt_window_s && ca->now_us - st->window_start >= cfg->rtt_window_s) {
		st->min_prev = st->min_cur;
		st->max_prev = st->max_cur;
		st->min_cur = BLAST_NO_MIN;
		st->max_cur = 0;
		st->window_start = ca->now_us;
	}
	/* Eq. 7.6 */
	if (r < st->min_cur)
		st->min_cur = r;
	/* Eq. 7.8: median of the last three raw samples; fewer than three pass through. */
	st->recent[0] = st->recent[1];
	st->recent[1] = st->recent[2];
	st->recent[2] = r;
	if (st->n_recent < 3)
		st->n_recent++;
	if (st->n_recent < 3) {
		m = r;
	} else {
		a = st->recent[0];
		b = st->recent[1];
		c = st->recent[2];
		/* min(max(a, b), max(min(a, b), c)) */
		__u32 hi = a > b ? a : b, lo = a < b ? a : b;
		__u32 x = lo > c ? lo : c;
		m = hi < x ? hi : x;
	}
	/* Eq. 7.9, from the first filtered sample. */
	if (!st->s_rtt_valid) {
		s = (__u64)m << FRAC_BITS;
		st->s_rtt_valid = 1;
	} else {
		s = st->s_rtt - (st->s_rtt >> 3) + (((__u64)m << FRAC_BITS) >> 3);
	}
	st->s_rtt = s;
	/* Eq. 7.10 */
	if (s > st->max_cur)
		st->max_cur = s;
	/* Eq. 7.7 over the current round. */
	st->sum += r;
	st->cnt++;
}

static __always_inline void blast_init(struct ca *ca, const volatile struct blast_config *cfg,
				       struct blast_state *st)
{
	blast_reset(st);
	st->prev_delivered = ca->tp->delivered;
	st->bic.cwnd_x = 0;
	st->ss.q32 = 0;
	st->ss.pending = 0;
}

/* Fig. 7.9 blast_recalc_ssthresh. */
static __always_inline __u32 blast_ssthresh(struct ca *ca, const volatile struct blast_config *cfg,
					    struct blast_state *st)
{
	struct bic_params p;
	bool cong = blast_is_congestion(cfg, st);
	__u64 w, s;

	bic_ssthresh_apply(ca, &st->bic, &st->ss);
	w = bic_cwnd_get(ca, &st->bic, &st->ss);
	blast_bic_params(&p, cfg);
	st->last_loss.at_us = ca->now_us;
	st->last_loss.cwnd = w;
	st->last_loss.valid = 1;
	st->last_loss.congestion = cong;
	bic_core_restart_round(&st->bic);
	if (cong) {
		st->congestion_losses++;
		s = bic_core_on_loss(&p, &st->bic, w);
	} else {
		/* ssthresh <- cwnd: recovery keeps the window; W_max is not set. */
		st->non_congestion_losses++;
		s = w > 2 * FIXED_ONE ? w : 2 * FIXED_ONE;
	}
	blast_trace(ca, cong ? "loss-cong" : "loss-noncong", st, blast_avg_delay(cfg, st));
	return bic_ssthresh_returned(&st->ss, s);
}

static __always_inline void blast_cong_avoid(struct ca *ca, const volatile struct blast_config *cfg,
					     struct blast_state *st, __u32 acked)
{
	struct bic_params p;

	bic_ssthresh_apply(ca, &st->bic, &st->ss);
	/* Linux never calls this in Recovery (tcp_cong_control runs PRR there); BLAST's growth
	 * there is in pkts_acked. */
	if (!cwnd_limited(ca) || inet_csk_ca_state(ca->sk) == TCP_CA_Recovery)
		return;
	blast_bic_params(&p, cfg);
	bic_core_cong_avoid(&p, &st->bic, &st->ss, ca, acked);
}

static __always_inline void blast_pkts_acked(struct ca *ca, const volatile struct blast_config *cfg,
					     struct blast_state *st, const struct ack_sample *s)
{
	struct tcp_sock *tp = ca->tp;
	__u32 newly = tp->delivered - st->prev_delivered;
	struct bic_params p;
	__u64 w0, w, x;

	st->prev_delivered = tp->delivered;
	/* The model's sender calls pkts_acked only on ACKs that deliver data. */
	if (!newly)
		return;
	/* Fig. 7.7 "At the start of each RTT round": D_k-1 <- D_k, restart the sum. */
	if (!st->round_started || seq_after(tp->delivered, st->round_end)) {
		st->prev_delay = blast_avg_delay(cfg, st);
		st->sum = 0;
		st->cnt = 0;
		st->round_end = tp->delivered + in_flight(ca);
		st->round_started = 1;
	}
	if (s->rtt_us >= 0)
		blast_on_rtt(ca, cfg, st, (__u32)s->rtt_us);
	/* BLAST Fast Recovery (§7.2.1): on every ACK of the recovery that delivers data, grow the
	 * window recovery returns to (ssthresh, PRR's target) by BIC's increment unless the
	 * classifier sees congestion (the prose, not Fig. 7.9's inverted test; see blast.rs). */
	if (inet_csk_ca_state(ca->sk) == TCP_CA_Recovery && cfg->recovery_growth &&
	    !blast_is_congestion(cfg, st)) {
		blast_bic_params(&p, cfg);
		w0 = bic_ssthresh_get(ca, &st->ss);
		w = w0;
		bic_core_grow(&p, &st->bic, &w, tp->delivered, in_flight(ca), newly);
		if (w > w0) {
			/* cwnd first: bic_cwnd_get recognises the old ssthresh in it. */
			x = bic_cwnd_get(ca, &st->bic, &st->ss);
			bic_ssthresh_set(ca, &st->ss, w);
			/* The model's cwnd += inc; PRR (tcp_cwnd_reduction) sets snd_cwnd again
			 * on this ACK from in_flight and the grown ssthresh. */
			bic_cwnd_set(ca, &st->bic, x + (w - w0));
		}
	}
}

static __always_inline void blast_set_state(struct ca *ca, const volatile struct blast_config *cfg,
					    struct blast_state *st, __u8 new_state)
{
	struct bic_params p;
	__u8 old = inet_csk_ca_state(ca->sk);
	bool fresh = st->last_loss.valid && st->last_loss.at_us == ca->now_us;

	if (new_state == old && !(new_state == TCP_CA_Loss && fresh))
		return;
	st->ss.pending = 0;
	blast_bic_params(&p, cfg);
	if (new_state == TCP_CA_Loss) {
		/* A timeout: one BIC decrease whatever the classifier said (§7.2.1). */
		if (st->last_loss.valid && !st->last_loss.congestion) {
			if (fresh) {
				/* ssthresh was asked for this timeout (tcp_enter_loss). */
				st->non_congestion_losses--;
				st->congestion_losses++;
				bic_ssthresh_set(ca, &st->ss,
					bic_core_on_loss(&p, &st->bic, st->last_loss.cwnd));
				blast_trace(ca, "timeout-recut", st, 0);
			} else if (old == TCP_CA_Recovery) {
				/* A timeout during a non-congestion recovery keeps its ssthresh
				 * (tcp_enter_loss does not ask again): cut it here, once. */
				bic_ssthresh_set(ca, &st->ss,
					bic_core_on_loss(&p, &st->bic, bic_ssthresh_get(ca, &st->ss)));
				blast_trace(ca, "timeout-in-recovery", st, 0);
			}
		}
		st->last_loss.valid = 0;
		blast_reset(st);
		return;
	}
	if ((new_state == TCP_CA_Open || new_state == TCP_CA_Disorder) && old == TCP_CA_Recovery) {
		/* Fast recovery is over (Fig. 7.9, snd_una >= high_seq). */
		bool judge = st->last_loss.valid && !st->last_loss.congestion;

		st->last_loss.valid = 0;
		if (cfg->recheck_at_recovery_end && judge && blast_is_congestion(cfg, st)) {
			/* Judged again, now congestion: BIC's decrease, once. The window recovery
			 * ends with is ssthresh (tcp_end_cwnd_reduction copies it into cwnd next),
			 * or the restored cwnd after an undo (undo_marker cleared). */
			__u64 w = ca->tp->undo_marker ? bic_ssthresh_get(ca, &st->ss) :
							 bic_cwnd_get(ca, &st->bic, &st->ss);
			__u64 s = bic_core_on_loss(&p, &st->bic, w);

			st->non_congestion_losses--;
			st->congestion_losses++;
			if (bic_cwnd_get(ca, &st->bic, &st->ss) > s)
				bic_cwnd_set(ca, &st->bic, s);
			bic_ssthresh_set(ca, &st->ss, s);
			blast_trace(ca, "recheck-cong", st, blast_avg_delay(cfg, st));
		}
		st->prev_delay = blast_avg_delay(cfg, st);
		bic_ssthresh_recovery_end(ca, &st->ss);
		bic_core_restart_round(&st->bic);
		return;
	}
	bic_core_restart_round(&st->bic);
}

static __always_inline bool blast_in_startup(struct ca *ca, const volatile struct blast_config *cfg,
					     struct blast_state *st)
{
	return bic_in_slow_start(ca, &st->bic, &st->ss);
}

CC_OPS(blast) = {
	.init = blast_init,
	.ssthresh = blast_ssthresh,
	.cong_avoid = blast_cong_avoid,
	.pkts_acked = blast_pkts_acked,
	.set_state = blast_set_state,
	.in_startup = blast_in_startup,
};
