/* SPDX-License-Identifier: MIT */
/*
 * Hoe's packet-pair slow-start threshold (crate startlab-core, cc::hoe::Hoe): standard slow
 * start, one segment per ACK (RFC 5681 §3.1), whose initial ssthresh is replaced, during the
 * first slow start and before any loss, by the least-squares bandwidth of three closely spaced
 * ACKs times the RTT of the first segment (Wang et al. 2004 §III.C, describing J. Hoe,
 * SIGCOMM 1996). If the estimate is not above cwnd, slow start ends at once ("hoe-estimate").
 * The estimator is in hoe_estimator.h (shared with pstart).
 *
 * Hooks: on_ack = Hoe::on_ack (grow_to_ssthresh by min(acked, 1)); pkts_acked =
 * Hoe::pkts_acked (feeds the estimator, applies the estimate if the state is Open or Disorder
 * and cwnd < ssthresh); set_state (Recovery, Loss) and cwnd_event (CA_EVENT_LOSS, Linux's
 * tcp_enter_loss) end the estimation as in the model; on_loss returns the controller's
 * ssthresh; in_startup is cwnd < ssthresh.
 *
 * Differs from the Rust model:
 * - Everything hoe_estimator.h lists (ACK arrival time = tcp_mstamp when the ACK is processed,
 *   microseconds; newly delivered = growth of tp->delivered; ssthresh in whole segments).
 * - pkts_acked: Linux calls it for every ACK tcp_ack processes (tcp_clean_rtx_queue), also for
 *   ACKs that deliver nothing (pure duplicates); those are skipped here, as the simulator does
 *   not call pkts_acked for them.
 * - TCP_CA_CWR (ECN or local congestion; the simulator has no such state) ends the estimation
 *   like Recovery: the kernel has chosen an ssthresh.
 * - The ca_state test reads icsk_ca_state when pkts_acked runs; Linux changes the state later
 *   in tcp_ack (tcp_fastretrans_alert), as the simulator does after pkts_acked.
 * - `acked` in on_ack is Linux's newly delivered count; growth is min(acked, 1) as in the model.
 */
#include "hoe_estimator.h"

struct hoe_config {
	fixed_t max_gap; /* largest gap in the triple, x the first RTT */
};

struct hoe_state {
	struct hoe_estimator est;
	__u32 last_delivered; /* tp->delivered at the last pkts_acked */
	__u32 done;           /* the estimate was applied, or can no longer be (a loss came first) */
};

static __always_inline void hoe_init(struct ca *ca, const volatile struct hoe_config *cfg,
				     struct hoe_state *st)
{
	st->last_delivered = ca->tp->delivered;
}

static __always_inline __u32 hoe_on_ack(struct ca *ca, const volatile struct hoe_config *cfg,
					struct hoe_state *st, __u32 acked)
{
	/* RFC 5681 slow start: one segment per ACK. */
	return standard_slow_start(ca, 0, acked);
}

static __always_inline void hoe_pkts_acked(struct ca *ca, const volatile struct hoe_config *cfg,
					   struct hoe_state *st, const struct ack_sample *s)
{
	__u32 acked = hoe_newly_delivered(ca, &st->last_delivered);
	__u8 state;

	if (!acked || st->done)
		return;
	if (!hoe_estimator_on_ack(&st->est, cfg->max_gap, acked, s->rtt_us, ca->now_us))
		return;
	st->done = 1;
	/* The estimate sets the initial ssthresh: only in the first slow start, outside recovery. */
	state = inet_csk_ca_state(ca->sk);
	if ((state == TCP_CA_Open || state == TCP_CA_Disorder) && in_slow_start(ca))
		hoe_apply_estimate(ca, st->est.estimate_q16);
}

static __always_inline void hoe_set_state(struct ca *ca, const volatile struct hoe_config *cfg,
					  struct hoe_state *st, __u8 new_state)
{
	/* A loss before the estimate settles ssthresh. */
	if (new_state == TCP_CA_Recovery || new_state == TCP_CA_Loss || new_state == TCP_CA_CWR)
		st->done = 1;
}

static __always_inline void hoe_cwnd_event(struct ca *ca, const volatile struct hoe_config *cfg,
					   struct hoe_state *st, enum tcp_ca_event ev)
{
	/* A retransmission timeout (tcp_enter_loss). */
	if (ev == CA_EVENT_LOSS)
		st->done = 1;
}

STARTUP_OPS(hoe) = {
	.init = hoe_init,
	.on_ack = hoe_on_ack,
	.pkts_acked = hoe_pkts_acked,
	.set_state = hoe_set_state,
	.cwnd_event = hoe_cwnd_event,
};
