/* SPDX-License-Identifier: MIT */
/*
 * The receiving half of DCTCP (RFC 8257 §3.2; Linux net/ipv4/tcp_dctcp.h,
 * dctcp_ece_ack_update), registered by the kernel world on the receiving side of a connection
 * whose sender's controller needs ECN (cc/dctcp.bpf.c): every ACK echoes the CE state of the
 * segments it acknowledges exactly, instead of RFC 3168's ECE until CWR. At a change of state
 * the receiver ACKs at once, and an ACK it was holding back (delayed) goes first, with the old
 * state, for the segments it covers.
 *
 * Its own object (not in controller.bpf.c): it calls bpf_tcp_send_ack, which only a receiver
 * needs, and the simulator runs controllers on senders (its receiver has the same machine,
 * crates/startlab-core/src/tcp/receiver.rs, on_ecn_dctcp). The sending hooks are Reno's
 * kernel functions: the receiver sends no data.
 */
#include "startlab.h"

char _license[] SEC("license") = "GPL";

struct echo {
	__u32 prior_rcv_nxt; /* rcv_nxt when the previous segment arrived */
	__u32 ce_state;      /* that segment was CE */
};

static __always_inline struct echo *echo_of(struct sock *sk)
{
	return (struct echo *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

/* dctcp_ece_ack_cwr: the ECE of the next ACKs. */
static __always_inline void demand_cwr(struct tcp_sock *tp, __u32 ce)
{
	if (ce)
		tp->ecn_flags |= TCP_ECN_DEMAND_CWR;
	else
		tp->ecn_flags &= ~TCP_ECN_DEMAND_CWR;
}

SEC("struct_ops")
void BPF_PROG(ecn_echo_init, struct sock *sk)
{
	struct echo *e = echo_of(sk);

	e->prior_rcv_nxt = ((struct tcp_sock *)sk)->rcv_nxt;
	e->ce_state = 0;
}

SEC("struct_ops")
void BPF_PROG(ecn_echo_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct echo *e = echo_of(sk);
	__u32 ce;

	if (ev != CA_EVENT_ECN_IS_CE && ev != CA_EVENT_ECN_NO_CE)
		return;
	ce = ev == CA_EVENT_ECN_IS_CE;
	if (e->ce_state != ce) {
		if (icsk->icsk_ack.pending & ICSK_ACK_TIMER) {
			demand_cwr(tp, e->ce_state);
			bpf_tcp_send_ack(tp, e->prior_rcv_nxt);
		}
		icsk->icsk_ack.pending |= ICSK_ACK_NOW;
	}
	e->prior_rcv_nxt = tp->rcv_nxt;
	e->ce_state = ce;
	demand_cwr(tp, ce);
}

SEC("struct_ops")
__u32 BPF_PROG(ecn_echo_ssthresh, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}

SEC("struct_ops")
void BPF_PROG(ecn_echo_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(ecn_echo_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops ecn_echo = {
	.init = (void *)ecn_echo_init,
	.cwnd_event = (void *)ecn_echo_cwnd_event,
	.ssthresh = (void *)ecn_echo_ssthresh,
	.cong_avoid = (void *)ecn_echo_cong_avoid,
	.undo_cwnd = (void *)ecn_echo_undo_cwnd,
	.flags = TCP_CONG_NEEDS_ECN,
	.name = "startlab_echo",
};
