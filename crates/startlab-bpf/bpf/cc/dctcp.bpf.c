/* SPDX-License-Identifier: MIT */
/*
 * DCTCP, RFC 8257, as Linux's net/ipv4/tcp_dctcp.c (crate startlab-core, cc::dctcp): Reno's
 * growth (tcp_reno_cong_avoid), and on an ECN echo a reduction to cwnd x (1 - alpha/2), alpha
 * being the moving average (gain 1/2^shift_g) of the fraction of the segments delivered in a
 * window of data whose ACKs echoed CE (§3.3), updated once per window in in_ack_event.
 *
 * The controller needs ECN (TCP_CONG_NEEDS_ECN): the kernel world registers it with that flag,
 * and the receiving side with the receiver's half, ecn_echo.bpf.c (dctcp_ece_ack_update: an ACK
 * at each change of CE state). In the simulator the receiver runs the same machine
 * (TcpConfig::ecn_ca) for a flow whose controller needs ECN.
 *
 * Differs from the Rust model:
 * - ssthresh, loss_cwnd and the undo are whole segments (snd_cwnd), as in Linux; the model keeps
 *   loss_cwnd with the window's fraction, so an undo may differ by that fraction.
 * - Where ECN was not negotiated (ecn_flags without TCP_ECN_OK at init), Linux switches the
 *   socket to dctcp_reno (tcp_reno_ssthresh, tcp_reno_cong_avoid, tcp_reno_undo_cwnd); a
 *   struct_ops cannot change a socket's ops, so the port keeps those rules itself (`reno`). The
 *   simulator always negotiates ECN for a controller that needs it.
 */

struct dctcp_config {
	__u32 shift_g;       /* dctcp_shift_g: alpha's gain is 1/2^shift_g */
	__u32 alpha_on_init; /* dctcp_alpha_on_init, 1024ths */
};

struct dctcp_state {
	struct reno_state reno; /* snd_cwnd_cnt of tcp_cong_avoid_ai */
	__u32 alpha;            /* dctcp_alpha, 1024ths */
	__u32 next_seq;         /* the window of the alpha update ends when snd_una reaches it */
	__u32 old_delivered;
	__u32 old_delivered_ce;
	__u32 loss_cwnd;
	__u32 reno_only;        /* ECN not negotiated: dctcp_reno */
};

#define DCTCP_MAX_ALPHA 1024u

/* dctcp_reset: a new observation window from now. */
static __always_inline void dctcp_reset(struct ca *ca, struct dctcp_state *st)
{
	st->next_seq = ca->tp->snd_nxt;
	st->old_delivered = ca->tp->delivered;
	st->old_delivered_ce = ca->tp->delivered_ce;
}

static __always_inline void dctcp_init(struct ca *ca, const volatile struct dctcp_config *cfg,
				       struct dctcp_state *st)
{
	if (!(ca->tp->ecn_flags & TCP_ECN_OK)) {
		st->reno_only = 1;
		return;
	}
	st->alpha = cfg->alpha_on_init < DCTCP_MAX_ALPHA ? cfg->alpha_on_init : DCTCP_MAX_ALPHA;
	st->loss_cwnd = 0;
	dctcp_reset(ca, st);
}

/* dctcp_ssthresh: cwnd x (1 - alpha/2), at least 2 (RFC 8257 §3.4). */
static __always_inline __u32 dctcp_ssthresh(struct ca *ca, const volatile struct dctcp_config *cfg,
					    struct dctcp_state *st)
{
	__u32 cwnd = ca->tp->snd_cwnd;
	__u32 s;

	if (st->reno_only)
		return cwnd >> 1 > 2 ? cwnd >> 1 : 2;
	st->loss_cwnd = cwnd;
	s = cwnd - (__u32)(((__u64)cwnd * st->alpha) >> 11);
	return s > 2 ? s : 2;
}

/* dctcp_update_alpha, once the window's last segment is acknowledged (§3.3). */
static __always_inline void dctcp_in_ack_event(struct ca *ca, const volatile struct dctcp_config *cfg,
					       struct dctcp_state *st, __u32 flags)
{
	struct tcp_sock *tp = ca->tp;
	__u32 delivered_ce, delivered, alpha, decay, g = cfg->shift_g;

	if (st->reno_only || (__s32)(tp->snd_una - st->next_seq) < 0)
		return;
	delivered_ce = tp->delivered_ce - st->old_delivered_ce;
	alpha = st->alpha;
	/* alpha = (1 - g) alpha; min_not_zero: alpha >> g of 0 takes all of alpha. */
	decay = alpha >> g;
	alpha -= decay == 0 || decay > alpha ? alpha : decay;
	if (delivered_ce) {
		delivered = tp->delivered - st->old_delivered;
		/* + g F, F = delivered_ce / delivered, in 1024ths. */
		delivered_ce <<= 10 - g;
		delivered_ce /= delivered > 1 ? delivered : 1;
		alpha = alpha + delivered_ce < DCTCP_MAX_ALPHA ? alpha + delivered_ce : DCTCP_MAX_ALPHA;
	}
	st->alpha = alpha;
	dctcp_reset(ca, st);
}

/* dctcp_react_to_loss: Reno's halving. */
static __always_inline void dctcp_react_to_loss(struct ca *ca, struct dctcp_state *st)
{
	__u32 cwnd = ca->tp->snd_cwnd;

	st->loss_cwnd = cwnd;
	ca->tp->snd_ssthresh = cwnd >> 1 > 2 ? cwnd >> 1 : 2;
}

static __always_inline void dctcp_cong_avoid(struct ca *ca, const volatile struct dctcp_config *cfg,
					     struct dctcp_state *st, __u32 acked)
{
	if (!cwnd_limited(ca))
		return;
	reno_linux_cong_avoid(ca, &st->reno, acked);
}

/* dctcp_state: entering Recovery (a loss) halves as Reno. */
static __always_inline void dctcp_set_state(struct ca *ca, const volatile struct dctcp_config *cfg,
					    struct dctcp_state *st, __u8 new_state)
{
	/* tcp_init_cwnd_reduction and tcp_enter_loss zero snd_cwnd_cnt. */
	if (new_state == TCP_CA_CWR || new_state == TCP_CA_Recovery || new_state == TCP_CA_Loss)
		st->reno.cwnd_cnt = 0;
	if (!st->reno_only && new_state == TCP_CA_Recovery && new_state != inet_csk_ca_state(ca->sk))
		dctcp_react_to_loss(ca, st);
}

/* dctcp_cwnd_event: a timeout reacts as a loss (the receiver's CE events are ecn_echo's). */
static __always_inline void dctcp_cwnd_event(struct ca *ca, const volatile struct dctcp_config *cfg,
					     struct dctcp_state *st, enum tcp_ca_event ev)
{
	if (!st->reno_only && ev == CA_EVENT_LOSS)
		dctcp_react_to_loss(ca, st);
}

/* dctcp_cwnd_undo (tcp_reno_undo_cwnd for dctcp_reno). */
static __always_inline __u32 dctcp_undo_cwnd(struct ca *ca, const volatile struct dctcp_config *cfg,
					     struct dctcp_state *st)
{
	__u32 cwnd = ca->tp->snd_cwnd;

	if (st->reno_only)
		return tcp_reno_undo_cwnd(ca->sk);
	return cwnd > st->loss_cwnd ? cwnd : st->loss_cwnd;
}

CC_OPS(dctcp) = {
	.init = dctcp_init,
	.ssthresh = dctcp_ssthresh,
	.cong_avoid = dctcp_cong_avoid,
	.set_state = dctcp_set_state,
	.cwnd_event = dctcp_cwnd_event,
	.in_ack_event = dctcp_in_ack_event,
	.undo_cwnd = dctcp_undo_cwnd,
};
