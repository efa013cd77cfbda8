/* SPDX-License-Identifier: MIT */
/*
 * DCTCP (RFC 8257) as Linux 6.18's net/ipv4/tcp_dctcp.c and tcp_dctcp.h compute it, written as a
 * kernel developer writes a struct_ops controller: alpha, the fraction of CE-marked segments
 * in 1024ths, updated once per window from tp->delivered and tp->delivered_ce with g = 1/16;
 * an ECN echo reduces cwnd by alpha / 2 (ssthresh), a loss halves it; Reno's growth from the
 * kernel (tcp_reno_cong_avoid). It asks for ECN (TCP_CONG_NEEDS_ECN). Its receiver half (the
 * CE state machine that acknowledges at once when the CE state of arriving segments changes,
 * cwnd_event with CA_EVENT_ECN_IS_CE / _NO_CE) is here too, for a receiver that runs it.
 *
 *   clang -g -O2 -target bpf -D__TARGET_ARCH_x86 -I/usr/include/bpf -c dctcp.bpf.c -o dctcp.bpf.o
 *
 * and in a scenario: cc = { bpf = "dctcp.bpf.o" }, behind a queue that marks (docs/aqm.md).
 * It runs unchanged in the kernel (`startlab kernel run`) and in the simulator (`startlab run`).
 */

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed char __s8;
typedef short __s16;
typedef int __s32;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;

#include <bpf_helpers.h>
#include <bpf_tracing.h>

#define TCP_CA_Recovery 3
#define CA_EVENT_LOSS 3
#define CA_EVENT_ECN_NO_CE 4
#define CA_EVENT_ECN_IS_CE 5
#define TCP_ECN_OK 1
#define TCP_ECN_DEMAND_CWR 4
#define ICSK_ACK_TIMER 2
#define ICSK_ACK_NOW 8
#define TCP_CLOSE 7
#define TCP_LISTEN 10
#define TCP_CONG_NEEDS_ECN 2
#define DCTCP_MAX_ALPHA 1024U

struct sock_common {
	volatile unsigned char skc_state;
} __attribute__((preserve_access_index));

struct sock {
	struct sock_common __sk_common;
} __attribute__((preserve_access_index));

struct inet_connection_sock {
	__u8 icsk_ca_state: 5;
	struct {
		__u8 pending;
	} icsk_ack;
	__u64 icsk_ca_priv[13];
} __attribute__((preserve_access_index));

struct tcp_sock {
	__u32 snd_cwnd;
	__u32 snd_ssthresh;
	__u32 snd_una;
	__u32 snd_nxt;
	__u32 rcv_nxt;
	__u32 delivered;
	__u32 delivered_ce;
	__u8 ecn_flags;
} __attribute__((preserve_access_index));

struct tcp_congestion_ops {
	void (*init)(struct sock *sk);
	__u32 (*ssthresh)(struct sock *sk);
	void (*cong_avoid)(struct sock *sk, __u32 ack, __u32 acked);
	void (*set_state)(struct sock *sk, __u8 new_state);
	void (*cwnd_event)(struct sock *sk, int ev);
	void (*in_ack_event)(struct sock *sk, __u32 flags);
	__u32 (*undo_cwnd)(struct sock *sk);
	__u32 flags;
	char name[16];
} __attribute__((preserve_access_index));

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __attribute__((section(".ksyms")));
extern __u32 tcp_reno_ssthresh(struct sock *sk) __attribute__((section(".ksyms")));
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __attribute__((section(".ksyms")));

char _license[] SEC("license") = "GPL";

/* tcp_dctcp.c's module parameters: the EWMA gain g = 1/2^shift_g, alpha at the start. */
const volatile __u32 shift_g = 4;
const volatile __u32 alpha_on_init = DCTCP_MAX_ALPHA;

/* struct dctcp, in icsk_ca_priv. */
struct dctcp {
	__u32 old_delivered;
	__u32 old_delivered_ce;
	__u32 prior_rcv_nxt;
	__u32 alpha;
	__u32 next_seq;
	__u32 ce_state;
	__u32 loss_cwnd;
	__u32 reno; /* no ECN: Reno's loss hooks (the kernel switches to its dctcp_reno ops) */
};

static struct dctcp *ca_of(struct sock *sk)
{
	return (struct dctcp *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

static __u32 max_u32(__u32 a, __u32 b)
{
	return a > b ? a : b;
}

/* Linux before(): seq1 is earlier than seq2, modulo 2^32. */
static int before(__u32 seq1, __u32 seq2)
{
	return (__s32)(seq1 - seq2) < 0;
}

static void dctcp_reset(struct tcp_sock *tp, struct dctcp *ca)
{
	ca->next_seq = tp->snd_nxt;
	ca->old_delivered = tp->delivered;
	ca->old_delivered_ce = tp->delivered_ce;
}

SEC("struct_ops")
void BPF_PROG(dctcp_init, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct dctcp *ca = ca_of(sk);
	unsigned char state = sk->__sk_common.skc_state;

	if ((tp->ecn_flags & TCP_ECN_OK) || state == TCP_LISTEN || state == TCP_CLOSE) {
		ca->prior_rcv_nxt = tp->rcv_nxt;
		ca->alpha = alpha_on_init < DCTCP_MAX_ALPHA ? alpha_on_init : DCTCP_MAX_ALPHA;
		ca->loss_cwnd = 0;
		ca->ce_state = 0;
		ca->reno = 0;
		dctcp_reset(tp, ca);
		return;
	}
	/* The peer did not negotiate ECN. */
	ca->reno = 1;
}

/* cwnd x (1 - alpha / 2), at least 2. */
SEC("struct_ops")
__u32 BPF_PROG(dctcp_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct dctcp *ca = ca_of(sk);

	if (ca->reno)
		return tcp_reno_ssthresh(sk);
	ca->loss_cwnd = tp->snd_cwnd;
	return max_u32(tp->snd_cwnd - ((tp->snd_cwnd * ca->alpha) >> 11U), 2U);
}

/* Once the window that began at next_seq is acknowledged: alpha = (1 - g) alpha + g F. */
SEC("struct_ops")
void BPF_PROG(dctcp_update_alpha, struct sock *sk, __u32 flags)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct dctcp *ca = ca_of(sk);
	__u32 delivered, delivered_ce, alpha, decay;

	if (ca->reno || before(tp->snd_una, ca->next_seq))
		return;
	delivered = tp->delivered - ca->old_delivered;
	delivered_ce = tp->delivered_ce - ca->old_delivered_ce;
	alpha = ca->alpha;
	/* min_not_zero(alpha, alpha >> g) */
	decay = alpha >> shift_g;
	alpha -= decay ? (decay < alpha ? decay : alpha) : alpha;
	if (delivered_ce) {
		delivered_ce <<= (10 - shift_g);
		delivered_ce /= max_u32(1U, delivered);
		alpha = alpha + delivered_ce < DCTCP_MAX_ALPHA ? alpha + delivered_ce : DCTCP_MAX_ALPHA;
	}
	ca->alpha = alpha;
	dctcp_reset(tp, ca);
}

static void dctcp_react_to_loss(struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct dctcp *ca = ca_of(sk);

	ca->loss_cwnd = tp->snd_cwnd;
	tp->snd_ssthresh = max_u32(tp->snd_cwnd >> 1U, 2U);
}

SEC("struct_ops")
void BPF_PROG(dctcp_state, struct sock *sk, __u8 new_state)
{
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;

	if (ca_of(sk)->reno)
		return;
	if (new_state == TCP_CA_Recovery && new_state != icsk->icsk_ca_state)
		dctcp_react_to_loss(sk);
}

/* tcp_dctcp.h: the receiver's ECN-Echo follows the CE state of the last segment. */
static void dctcp_ece_ack_cwr(struct sock *sk, __u32 ce_state)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;

	if (ce_state == 1)
		tp->ecn_flags |= TCP_ECN_DEMAND_CWR;
	else
		tp->ecn_flags &= ~TCP_ECN_DEMAND_CWR;
}

static void dctcp_ece_ack_update(struct sock *sk, int ev, struct dctcp *ca)
{
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u32 new_ce_state = ev == CA_EVENT_ECN_IS_CE;

	if (ca->ce_state != new_ce_state) {
		/* The CE state changed: acknowledge at once, and first what a delayed ACK held
		 * with the prior state. */
		if (icsk->icsk_ack.pending & ICSK_ACK_TIMER) {
			dctcp_ece_ack_cwr(sk, ca->ce_state);
			bpf_tcp_send_ack(sk, ca->prior_rcv_nxt);
		}
		icsk->icsk_ack.pending |= ICSK_ACK_NOW;
	}
	ca->prior_rcv_nxt = tp->rcv_nxt;
	ca->ce_state = new_ce_state;
	dctcp_ece_ack_cwr(sk, new_ce_state);
}

SEC("struct_ops")
void BPF_PROG(dctcp_cwnd_event, struct sock *sk, int ev)
{
	struct dctcp *ca = ca_of(sk);

	if (ca->reno)
		return;
	switch (ev) {
	case CA_EVENT_ECN_IS_CE:
	case CA_EVENT_ECN_NO_CE:
		dctcp_ece_ack_update(sk, ev, ca);
		break;
	case CA_EVENT_LOSS:
		dctcp_react_to_loss(sk);
		break;
	default:
		break;
	}
}

SEC("struct_ops")
__u32 BPF_PROG(dctcp_cwnd_undo, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct dctcp *ca = ca_of(sk);

	if (ca->reno)
		return tcp_reno_undo_cwnd(sk);
	return max_u32(tp->snd_cwnd, ca->loss_cwnd);
}

SEC("struct_ops")
void BPF_PROG(dctcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops dctcp = {
	.init = (void *)dctcp_init,
	.in_ack_event = (void *)dctcp_update_alpha,
	.cwnd_event = (void *)dctcp_cwnd_event,
	.ssthresh = (void *)dctcp_ssthresh,
	.cong_avoid = (void *)dctcp_cong_avoid,
	.undo_cwnd = (void *)dctcp_cwnd_undo,
	.set_state = (void *)dctcp_state,
	.flags = TCP_CONG_NEEDS_ECN,
	.name = "user_dctcp",
};
