/* SPDX-License-Identifier: MIT */
/*
 * The state Linux keeps about retransmissions and timeouts, checked against the rules that
 * tcp_input.c, tcp_output.c and tcp_timer.c follow (tests/bpf_user.rs, test_kernel.py).
 * cong_control holds cwnd at `window`; each check that fails once adds its bit to 10000 from
 * then on, so a run whose window never leaves `window` kept them all:
 *   1: rcv_tstamp is the jiffy of this ACK (tcp_ack stamps it before tcp_cong_control; one
 *      tick of slack for a tick between the two);
 *   2: as Recovery begins, undo_retrans is the retransmissions in flight, or -1 for none
 *      (tcp_init_undo runs before tcp_set_ca_state);
 *   4: in Recovery, undo_retrans lies between -1 and the retransmissions since it began plus
 *      those in flight then (tcp_retransmit_skb adds each, a D-SACK takes one off), and is
 *      not -1 once one was sent;
 *   8: in Recovery, once a retransmission was sent, retrans_stamp is set, not after this
 *      ACK's millisecond, and not before Recovery's if it was clear when Recovery began (the
 *      first retransmission not yet acknowledged stamps it: tcp_retransmit_skb);
 *  16: icsk_retransmits is 0 on an ACK that advanced snd_una (tcp_ack);
 *  32: total_rto grows by one each time Loss is entered (tcp_enter_loss, then
 *      tcp_update_rto_stats; a SYN's timeouts count before init), and bounds
 *      icsk_retransmits and total_rto_recoveries;
 *  64: advmss is the path MTU less IPv4's header and TCP's with its timestamp option
 *      (ipv4_default_advmss, less TCPOLEN_TSTAMP_ALIGNED once the handshake agreed on it);
 * 128: a tail-loss probe in flight, tlp_high_seq, lies between snd_una and snd_nxt
 *      (tcp_send_loss_probe records snd_nxt, tcp_process_tlp_ack forgets it before
 *      cong_control once the ACK passes it), and there is none in Loss (tcp_retransmit_timer).
 * `checks` says which run (all by default).
 */
#include "test_cc.h"
#include <bpf_core_read.h>

struct sock {
} __attribute__((preserve_access_index));

struct inet_connection_sock {
	__u8 icsk_ca_state: 5;
	__u8 icsk_retransmits;
	__u64 icsk_ca_priv[13];
} __attribute__((preserve_access_index));

#define TCP_CA_Recovery 3
#define TCP_CA_Loss 4

struct tcp_sock {
	__u32 snd_cwnd;
	__u32 snd_una;
	__u32 snd_nxt;
	__u32 tlp_high_seq;
	__u32 retrans_out;
	__u32 total_retrans;
	__u32 rcv_tstamp;
	int undo_retrans;
	__u32 retrans_stamp;
	__u16 total_rto;
	__u16 total_rto_recoveries;
	__u16 advmss;
	__u16 tcp_header_len;
	__u64 tcp_mstamp;
} __attribute__((preserve_access_index));

const volatile __u32 window = 20;
const volatile __u32 pmtu = 1500;
const volatile __u32 checks = 255;

struct recovery {
	__u32 failed;
	__u32 prior_una;
	__u32 losses;
	__u32 rto_at_init;
	/* As Recovery began: total_retrans, retransmissions in flight, retrans_stamp, ms. */
	__u32 retrans_then;
	__u32 in_flight_then;
	__u32 stamp_then;
	__u32 ms_then;
};

static struct recovery *state(struct sock *sk)
{
	return (struct recovery *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

static __u8 ca_state(struct sock *sk)
{
	return BPF_CORE_READ_BITFIELD((struct inet_connection_sock *)sk, icsk_ca_state);
}

/* The TCP clock in milliseconds, as tcp_skb_timestamp_ts stamps without usec timestamps. */
static __u32 now_ms(struct tcp_sock *tp)
{
	return (__u32)(tp->tcp_mstamp / 1000);
}

SEC("struct_ops")
void BPF_PROG(recovery_init, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct recovery *r = state(sk);

	r->failed = 0;
	r->prior_una = tp->snd_una;
	r->losses = 0;
	r->rto_at_init = tp->total_rto;
	tp->snd_cwnd = window;
}

SEC("struct_ops")
void BPF_PROG(recovery_cong_control, struct sock *sk, __u32 ack, int flag,
	      const struct rate_sample *rs)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;
	struct recovery *r = state(sk);
	__u32 sent_since = tp->total_retrans - r->retrans_then;
	int undo = tp->undo_retrans;

	if ((__u32)bpf_jiffies64() - tp->rcv_tstamp > 1)
		r->failed |= 1;
	if (ca_state(sk) == TCP_CA_Recovery) {
		if (undo < -1 || undo > (int)(sent_since + r->in_flight_then) ||
		    (sent_since > 0 && undo == -1))
			r->failed |= 4;
		if (sent_since > 0 &&
		    (!tp->retrans_stamp || (__s32)(tp->retrans_stamp - now_ms(tp)) > 0 ||
		     (!r->stamp_then && (__s32)(tp->retrans_stamp - r->ms_then) < 0)))
			r->failed |= 8;
	}
	if (tp->snd_una != r->prior_una && icsk->icsk_retransmits)
		r->failed |= 16;
	r->prior_una = tp->snd_una;
	if (tp->total_rto - r->rto_at_init != r->losses || icsk->icsk_retransmits > tp->total_rto ||
	    tp->total_rto_recoveries > tp->total_rto)
		r->failed |= 32;
	if (tp->advmss != pmtu - 20 - tp->tcp_header_len)
		r->failed |= 64;
	if (tp->tlp_high_seq &&
	    (ca_state(sk) == TCP_CA_Loss || (__s32)(tp->tlp_high_seq - tp->snd_una) < 0 ||
	     (__s32)(tp->tlp_high_seq - tp->snd_nxt) > 0))
		r->failed |= 128;
	r->failed &= checks;
	tp->snd_cwnd = r->failed ? 10000 + r->failed : window;
}

SEC("struct_ops")
void BPF_PROG(recovery_set_state, struct sock *sk, __u8 new_state)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct recovery *r = state(sk);

	if (new_state == TCP_CA_Loss)
		r->losses++;
	if (new_state != TCP_CA_Recovery)
		return;
	if (tp->undo_retrans != (tp->retrans_out ? (int)tp->retrans_out : -1))
		r->failed |= 2;
	r->retrans_then = tp->total_retrans;
	r->in_flight_then = tp->retrans_out;
	r->stamp_then = tp->retrans_stamp;
	r->ms_then = now_ms(tp);
}

SEC("struct_ops")
__u32 BPF_PROG(recovery_ssthresh, struct sock *sk)
{
	return ((struct tcp_sock *)sk)->snd_cwnd;
}

SEC("struct_ops")
__u32 BPF_PROG(recovery_undo_cwnd, struct sock *sk)
{
	return ((struct tcp_sock *)sk)->snd_cwnd;
}

SEC(".struct_ops.link")
struct tcp_congestion_ops recovery = {
	.init = (void *)recovery_init,
	.cong_control = (void *)recovery_cong_control,
	.set_state = (void *)recovery_set_state,
	.ssthresh = (void *)recovery_ssthresh,
	.undo_cwnd = (void *)recovery_undo_cwnd,
	.name = "recovery",
};
