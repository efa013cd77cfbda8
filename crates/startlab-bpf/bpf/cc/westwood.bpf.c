/* SPDX-License-Identifier: MIT */
/*
 * TCP Westwood with the eligible rate estimate (ERE): NewReno window growth (RFC 5681 §3.1, the
 * port of cc/reno.bpf.c); after a loss ssthresh = ERE x RTT_min / segment size, at least 2
 * (Wang et al. 2004 §II.B and its loss pseudo-code), and when fast recovery ends cwnd is lowered
 * to the window held when the loss was detected if that was smaller (`recovery_cwnd_cap`).
 * The estimator is rate.h (crate startlab-core, cc::rate); the model is cc::westwood.
 *
 * Hooks: init starts the estimator; ssthresh keeps cwnd at the loss and returns ERE x RTT_min
 * (Reno's FlightSize / 2 before the first estimate); cong_avoid is reno_cong_avoid with beta 0.5;
 * pkts_acked feeds the segments the ACK delivered to the estimator; in_ack_event stands for the
 * simulator's CwndEvent::DupAck (see rate.h); set_state caps cwnd at the end of fast recovery
 * and notes it; undo_cwnd is Linux's tcp_reno_undo_cwnd (the model's default); in_startup is
 * cwnd < ssthresh.
 *
 * Differs from the Rust model:
 * - Everything rate.h lists for the estimator (fixed point, history ring, Linux's srtt and
 *   tcp_min_rtt, newly delivered segments from tp->delivered or pkts_acked). The model's
 *   CwndEvent::DupAck is taken in in_ack_event: an ACK that left snd_una alone, without
 *   CA_ACK_WIN_UPDATE, that SACKed nothing new, with data outstanding. Linux's own Westwood+
 *   (tcp_westwood.c) counts the ACKs flagged CA_ACK_SLOWPATH that leave snd_una alone; on this
 *   kernel (6.18) duplicate ACKs come without that flag (rate.h), so the port does not use it.
 *   The simulator calls no in_ack_event (nor pkts_acked for an ACK that delivered nothing), so
 *   there the port counts no duplicate ACK at all (with SACK those that SACK nothing new are few:
 *   4 on the differential test's lossy path; the model counts each as one segment delivered).
 * - ssthresh and the cap are whole segments (snd_ssthresh holds them): ERE x RTT_min truncated.
 *   Slow start (after the cap left cwnd below ssthresh, or after a timeout) therefore ends at
 *   the whole ssthresh, below the model's by its fraction f, and congestion avoidance goes on
 *   from there: cwnd stays up to f below the model's until the next reduction (Linux's own
 *   tcp_slow_start ends at the whole snd_ssthresh too). T_k reads that cwnd, so the ERE differs
 *   a little more.
 * - The ERE itself runs on Linux's microsecond clock (rate.h): in an ACK-clocked steady state the
 *   RE window's start, now - srtt, falls on an earlier ACK's time to within nanoseconds, and
 *   which side of it that ACK is on (the model decides in ns, the port in us) moves RE's sample
 *   by 1/srtt; through T_k this moves the ERE by a few percent at times (on the differential
 *   test's lossy path ERE x RTT_min, hence ssthresh, was up to 4 segments of 120 below the
 *   model's; 2 when the port was given the model's cwnd before every hook; at most 1 when the
 *   model's ACK times were also truncated to microseconds).
 * - Loss recovery is Linux's (SACK, RACK-TLP, PRR), which sets cwnd during recovery; Linux calls
 *   set_state(Open) before tcp_end_cwnd_reduction sets cwnd = ssthresh (the simulator's sender,
 *   as the model expects, after), so the cap the model applies in set_state is applied there
 *   (what the simulator needs; in Linux overwritten) and again at the next cong_avoid (the same
 *   ACK), which then does not grow cwnd, as the model does not on the ACK that ends recovery; if
 *   no cong_avoid follows, at the next ACK's pkts_acked.
 * - ssthresh is also Linux's choice of when to call it: tcp_enter_loss calls it for the first
 *   timeout of a flight and not during recovery, as the model does; also tcp_enter_cwr (ECN),
 *   which the simulator lacks.
 * - NewReno growth: as cc/reno.bpf.c (n acknowledged segments with byte counting add n/cwnd at
 *   once).
 */
#include "rate.h"

struct westwood_config {
	usec_t tau;                    /* Tustin filter time constant */
	fixed_t virtual_sample_m;      /* virtual zero samples every tau/m; 0: never */
	flag_t seed_with_first_sample; /* start the filter at its first sample */
	fixed_t re_gain;               /* weight of the previous RE */
	flag_t recovery_cwnd_cap;      /* after recovery cwnd = min(ssthresh, cwnd at the loss) */
	__u32 abc_limit;               /* RFC 3465 limit L for NewReno growth; 0 counts ACKs */
};

struct westwood_state {
	struct ere ere;
	__u64 loss_cwnd_q16;   /* cwnd when the last loss was detected, x 2^16 */
	__u32 has_loss_cwnd;
	__u32 recovery_ended;  /* set_state(Open) left Recovery; cwnd not yet capped */
	struct reno_state reno;
};

static __always_inline void westwood_params(const volatile struct westwood_config *cfg,
					    struct ere_params *p)
{
	p->slot = ERE_SLOT_CC;
	p->tau = cfg->tau;
	p->m = cfg->virtual_sample_m;
	p->seed = cfg->seed_with_first_sample;
	p->re_gain = cfg->re_gain;
}

static __always_inline void westwood_init(struct ca *ca, const volatile struct westwood_config *cfg,
					  struct westwood_state *st)
{
	ere_init(ca, &st->ere);
}

/* §II.B: ssthresh = (ERE x RTT_min) / seg_size, at least 2; before an estimate, Reno's rule. */
static __always_inline __u32 westwood_ssthresh(struct ca *ca, const volatile struct westwood_config *cfg,
					       struct westwood_state *st)
{
	__u64 w;
	__u32 s;

	st->loss_cwnd_q16 = cwnd_q16(ca);
	st->has_loss_cwnd = 1;
	if (ere_window_q16(ca, &st->ere, &w)) {
		w >>= FRAC_BITS;
		s = w > TCP_INFINITE_SSTHRESH ? TCP_INFINITE_SSTHRESH : (__u32)w;
	} else {
		s = flight_size(ca) / 2;
	}
	return s > 2 ? s : 2;
}

/* Leaving fast recovery: the pseudo-code lowers cwnd to ssthresh only when it was larger, so
 * cwnd never ends above the window at the loss. */
static __always_inline void westwood_cap(struct ca *ca, const volatile struct westwood_config *cfg,
					 struct westwood_state *st)
{
	st->recovery_ended = 0;
	if (cfg->recovery_cwnd_cap && st->has_loss_cwnd && cwnd_q16(ca) > st->loss_cwnd_q16)
		cwnd_set_q16(ca, st->loss_cwnd_q16);
}

static __always_inline void westwood_cong_avoid(struct ca *ca, const volatile struct westwood_config *cfg,
						struct westwood_state *st, __u32 acked)
{
	struct reno_config rc = { .abc_limit = cfg->abc_limit, .beta = FIXED_ONE / 2 };

	if (st->recovery_ended) {
		/* The ACK that ended recovery (tcp_end_cwnd_reduction has set cwnd = ssthresh). */
		westwood_cap(ca, cfg, st);
		return;
	}
	reno_cong_avoid(ca, &rc, &st->reno, acked);
}

static __always_inline void westwood_pkts_acked(struct ca *ca, const volatile struct westwood_config *cfg,
						struct westwood_state *st, const struct ack_sample *s)
{
	struct ere_params p;

	if (st->recovery_ended)
		westwood_cap(ca, cfg, st);
	westwood_params(cfg, &p);
	ere_pkts_acked(ca, &p, &st->ere, s);
}

static __always_inline void westwood_set_state(struct ca *ca, const volatile struct westwood_config *cfg,
					       struct westwood_state *st, __u8 new_state)
{
	/* icsk_ca_state still holds the old state (tcp_set_ca_state). */
	if (new_state == TCP_CA_Open && inet_csk_ca_state(ca->sk) == TCP_CA_Recovery) {
		/* Cap now, for a sender that has already set cwnd = ssthresh (the simulator, as the
		 * model expects), and again at the next cong_avoid or pkts_acked, for Linux, which
		 * sets it after this hook (tcp_end_cwnd_reduction) and overwrites this cap. */
		westwood_cap(ca, cfg, st);
		st->recovery_ended = 1;
	} else if (new_state == TCP_CA_Recovery || new_state == TCP_CA_Loss) {
		st->recovery_ended = 0;
	}
}

/* The model's CwndEvent::DupAck: one segment received out of order (rate.h). */
static __always_inline void westwood_in_ack_event(struct ca *ca, const volatile struct westwood_config *cfg,
						  struct westwood_state *st, __u32 flags)
{
	struct ere_params p;

	if (!ere_in_ack_event_dup(ca, &st->ere, flags))
		return;
	westwood_params(cfg, &p);
	ere_on_dupack(ca, &p, &st->ere, ca->now_us);
}

CC_OPS(westwood) = {
	.init = westwood_init,
	.ssthresh = westwood_ssthresh,
	.cong_avoid = westwood_cong_avoid,
	.pkts_acked = westwood_pkts_acked,
	.set_state = westwood_set_state,
	.in_ack_event = westwood_in_ack_event,
};
