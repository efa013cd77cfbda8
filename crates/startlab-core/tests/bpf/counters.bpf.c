/* SPDX-License-Identifier: MIT */
/*
 * tcp_sock's byte counters, reordering and delivery-rate record, checked against the
 * relations Linux keeps among them (tests/bpf_user.rs, test_kernel.py). cong_control holds
 * cwnd at `window` and checks on every ACK; each relation that fails once adds its bit x 100
 * to the window from then on, so a run whose window never leaves `window` kept them all:
 *   1: snd_una - bytes_acked never changes (it is the initial sequence number:
 *      tcp_snd_una_update adds every acknowledged byte, the handshake's included);
 *   2: snd_nxt - that number - 1 is bytes_sent - bytes_retrans (each new byte is sent once,
 *      retransmissions count in both), or one more once the FIN is out;
 *   4: bytes_retrans is total_retrans full segments;
 *   8: reordering is `reordering` (the sysctl: nothing reorders on the path);
 *  16: after a sample that is not application-limited, rate_delivered, rate_interval_us and
 *      rate_app_limited are that sample's (tcp_rate_gen runs before cong_control);
 *  32: in Recovery, high_seq lies after snd_una and not after snd_nxt (tcp_fastretrans_alert
 *      ends Recovery, before cong_control, once snd_una reaches it);
 *  64: when ssthresh is asked for, prior_ssthresh is what tcp_current_ssthresh was
 *      (tcp_enter_recovery and tcp_enter_loss set it first): ssthresh in CWR or Recovery,
 *      else the larger of ssthresh and 3/4 of cwnd;
 * 128: undo_marker is snd_una as Recovery begins (tcp_init_undo runs first), and never after
 *      snd_una.
 * `checks` says which run (all by default).
 */
#include "test_cc.h"
#include <bpf_core_read.h>

struct sock {
} __attribute__((preserve_access_index));

struct inet_connection_sock {
	__u8 icsk_ca_state: 5;
	__u64 icsk_ca_priv[13];
} __attribute__((preserve_access_index));

#define TCP_CA_CWR 2
#define TCP_CA_Recovery 3

struct tcp_sock {
	__u32 snd_cwnd;
	__u32 snd_ssthresh;
	__u32 prior_ssthresh;
	__u32 undo_marker;
	__u32 snd_una;
	__u32 snd_nxt;
	__u32 mss_cache;
	__u32 total_retrans;
	__u32 reordering;
	__u32 rate_delivered;
	__u32 rate_interval_us;
	__u8 rate_app_limited: 1;
	__u32 high_seq;
	__u64 bytes_acked;
	__u64 bytes_sent;
	__u64 bytes_retrans;
} __attribute__((preserve_access_index));

struct rate_sample {
	__s32 delivered;
	long interval_us;
	__u8 is_app_limited;
} __attribute__((preserve_access_index));

const volatile __u32 window = 20;
const volatile __u32 reordering = 3;
const volatile __u32 checks = 255;

struct counters {
	__u32 isn;
	__u32 failed;
};

static struct counters *state(struct sock *sk)
{
	return (struct counters *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

SEC("struct_ops")
void BPF_PROG(counters_init, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct counters *c = state(sk);

	c->isn = tp->snd_una - (__u32)tp->bytes_acked;
	c->failed = 0;
	tp->snd_cwnd = window;
}

SEC("struct_ops")
void BPF_PROG(counters_cong_control, struct sock *sk, __u32 ack, int flag,
	      const struct rate_sample *rs)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct counters *c = state(sk);
	__u32 new_bytes = tp->snd_nxt - c->isn - 1;
	__u32 sent_once = (__u32)(tp->bytes_sent - tp->bytes_retrans);

	if (tp->snd_una - (__u32)tp->bytes_acked != c->isn)
		c->failed |= 1;
	if (new_bytes != sent_once && new_bytes != sent_once + 1)
		c->failed |= 2;
	if (tp->bytes_retrans != (__u64)tp->total_retrans * tp->mss_cache)
		c->failed |= 4;
	if (tp->reordering != reordering)
		c->failed |= 8;
	if (rs->interval_us > 0 && !rs->is_app_limited &&
	    (tp->rate_delivered != (__u32)rs->delivered ||
	     tp->rate_interval_us != (__u32)rs->interval_us ||
	     BPF_CORE_READ_BITFIELD(tp, rate_app_limited)))
		c->failed |= 16;
	if (tp->undo_marker && (__s32)(tp->undo_marker - tp->snd_una) > 0)
		c->failed |= 128;
	if (BPF_CORE_READ_BITFIELD((struct inet_connection_sock *)sk, icsk_ca_state) ==
		    TCP_CA_Recovery &&
	    ((__s32)(tp->high_seq - tp->snd_una) <= 0 || (__s32)(tp->high_seq - tp->snd_nxt) > 0))
		c->failed |= 32;
	tp->snd_cwnd = window + 100 * (c->failed & checks);
}

SEC("struct_ops")
void BPF_PROG(counters_set_state, struct sock *sk, __u8 new_state)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;

	if (new_state == TCP_CA_Recovery && tp->undo_marker != tp->snd_una)
		state(sk)->failed |= 128;
}

SEC("struct_ops")
__u32 BPF_PROG(counters_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u8 ca_state = BPF_CORE_READ_BITFIELD((struct inet_connection_sock *)sk, icsk_ca_state);
	__u32 cwnd = tp->snd_cwnd, want = tp->snd_ssthresh;

	if (ca_state != TCP_CA_CWR && ca_state != TCP_CA_Recovery &&
	    want < (cwnd >> 1) + (cwnd >> 2))
		want = (cwnd >> 1) + (cwnd >> 2);
	if (tp->prior_ssthresh != want)
		state(sk)->failed |= 64;
	return cwnd;
}

SEC("struct_ops")
__u32 BPF_PROG(counters_undo_cwnd, struct sock *sk)
{
	return ((struct tcp_sock *)sk)->snd_cwnd;
}

SEC(".struct_ops.link")
struct tcp_congestion_ops counters = {
	.init = (void *)counters_init,
	.cong_control = (void *)counters_cong_control,
	.set_state = (void *)counters_set_state,
	.ssthresh = (void *)counters_ssthresh,
	.undo_cwnd = (void *)counters_undo_cwnd,
	.name = "counters",
};
