/* SPDX-License-Identifier: MIT */
/*
 * Adaptive Start (Astart): during start-up ssthresh is raised on every ACK to the eligible rate
 * estimate x RTT_min / segment size, so the window alternates between mini-exponential growth
 * (cwnd < ssthresh: +1 per ACK) and mini-linear growth (cwnd >= ssthresh: the controller's
 * congestion avoidance) until the first fast retransmit, and again after every timeout.
 * Wang et al. 2004 §IV (pseudo-code, Fig. 5-6) with the estimator of §II.B (rate.h); the model
 * is crate startlab-core, cc::astart.
 *
 * Hooks: init starts the estimator, active; on_ack grows cwnd by one segment per ACK up to
 * ssthresh (grow_to_ssthresh) and hands the rest to the controller; on_loss keeps the
 * controller's ssthresh; pkts_acked feeds the estimator, counts a duplicate ACK (the model's
 * CwndEvent::DupAck, see rate.h), and while active and not in Recovery raises ssthresh to
 * ERE x RTT_min; set_state(Recovery) deactivates ("3 DUPACKS => congestion avoidance"),
 * set_state(Loss) and CA_EVENT_LOSS activate; in_startup is active and not in Recovery.
 *
 * Differs from the Rust model:
 * - Everything rate.h lists for the estimator (fixed point, history ring, Linux's srtt and
 *   tcp_min_rtt, newly delivered segments from tp->delivered or pkts_acked). A start-up has no
 *   in_ack_event here: duplicate ACKs are told in pkts_acked (which Linux calls for every ACK
 *   with data outstanding): snd_una, tp->delivered and snd_wnd unchanged. The simulator calls
 *   pkts_acked only for ACKs that delivered data, so there the port counts no duplicate ACK.
 * - ssthresh holds whole segments: it is raised to ERE x RTT_min truncated, when that is larger.
 * - Every timeout reaches set_state(Loss) (Linux calls it even when already in Loss), as every
 *   timeout raises CwndEvent::Loss in the model; Linux sends CA_EVENT_LOSS only with a new
 *   ssthresh.
 * - Recovery is Linux's (see cc/westwood.bpf.c and cc/reno.bpf.c); its CWR state (ECN) does not
 *   deactivate Astart, as the model has none.
 */
#include "rate.h"

struct astart_config {
	usec_t tau;                    /* Tustin filter time constant */
	fixed_t virtual_sample_m;      /* virtual zero samples every tau/m; 0: never */
	flag_t seed_with_first_sample; /* start the filter at its first sample */
	fixed_t re_gain;               /* weight of the previous RE */
};

struct astart_state {
	struct ere ere;
	__u32 active; /* between the start (or a timeout) and the next fast retransmit */
};

static __always_inline void astart_params(const volatile struct astart_config *cfg,
					  struct ere_params *p)
{
	p->slot = ERE_SLOT_STARTUP;
	p->tau = cfg->tau;
	p->m = cfg->virtual_sample_m;
	p->seed = cfg->seed_with_first_sample;
	p->re_gain = cfg->re_gain;
}

static __always_inline void astart_init(struct ca *ca, const volatile struct astart_config *cfg,
					struct astart_state *st)
{
	ere_init(ca, &st->ere);
	st->active = 1;
}

/* Mini-exponential phase: cwnd += 1 per ACK up to ssthresh; the rest of the ACK goes to the
 * controller (the mini-linear phase). */
static __always_inline __u32 astart_on_ack(struct ca *ca, const volatile struct astart_config *cfg,
					   struct astart_state *st, __u32 acked)
{
	return grow_to_ssthresh(ca, acked < 1 ? acked : 1, acked);
}

static __always_inline void astart_pkts_acked(struct ca *ca, const volatile struct astart_config *cfg,
					      struct astart_state *st, const struct ack_sample *s)
{
	struct ere_params p;
	__u64 w;
	int kind;

	astart_params(cfg, &p);
	kind = ere_pkts_acked(ca, &p, &st->ere, s);
	if (kind == ERE_ACK_DUP) {
		ere_on_dupack(ca, &p, &st->ere, ca->now_us);
		return;
	}
	if (kind != ERE_ACK_DATA || !st->active || inet_csk_ca_state(ca->sk) == TCP_CA_Recovery)
		return;
	/* §IV: if (ssthresh < ERE x RTT_min / seg_size) ssthresh = ERE x RTT_min / seg_size. */
	if (ere_window_q16(ca, &st->ere, &w)) {
		w >>= FRAC_BITS;
		if (w > TCP_INFINITE_SSTHRESH)
			w = TCP_INFINITE_SSTHRESH;
		if (w > ca->tp->snd_ssthresh)
			ca->tp->snd_ssthresh = (__u32)w;
	}
}

static __always_inline void astart_set_state(struct ca *ca, const volatile struct astart_config *cfg,
					     struct astart_state *st, __u8 new_state)
{
	if (new_state == TCP_CA_Recovery)
		st->active = 0; /* "3 DUPACKS => switch to congestion avoidance phase" */
	else if (new_state == TCP_CA_Loss)
		st->active = 1; /* "... and after every coarse timeout" */
}

static __always_inline void astart_cwnd_event(struct ca *ca, const volatile struct astart_config *cfg,
					      struct astart_state *st, enum tcp_ca_event ev)
{
	if (ev == CA_EVENT_LOSS)
		st->active = 1;
}

/* Start-up lasts until the first fast retransmit, through the mini-linear phases at ssthresh,
 * and again after every timeout. */
static __always_inline bool astart_in_startup(struct ca *ca, const volatile struct astart_config *cfg,
					      struct astart_state *st)
{
	return st->active && inet_csk_ca_state(ca->sk) != TCP_CA_Recovery;
}

STARTUP_OPS(astart) = {
	.init = astart_init,
	.on_ack = astart_on_ack,
	.pkts_acked = astart_pkts_acked,
	.set_state = astart_set_state,
	.cwnd_event = astart_cwnd_event,
	.in_startup = astart_in_startup,
};
