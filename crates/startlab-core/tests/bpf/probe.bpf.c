/* SPDX-License-Identifier: MIT */
/*
 * A probe of the socket a congestion control sees (tests/bpf_user.rs): its cong_avoid sets
 * snd_cwnd to the field that `field` names, so a test fills the socket from a sender's state it
 * chose and reads back what the program read. Fields are declared as a kernel developer's
 * vmlinux.h declares them; CO-RE relocates each.
 */
#include "test_cc.h"
#include <bpf_core_read.h>

struct sock_common {
	volatile unsigned char skc_state;
} __attribute__((preserve_access_index));

struct sock {
	struct sock_common __sk_common;
} __attribute__((preserve_access_index));

struct inet_connection_sock {
	__u32 icsk_rto;
	__u8 icsk_backoff;
} __attribute__((preserve_access_index));

struct tcp_sock {
	struct inet_connection_sock inet_conn;
	__u32 snd_cwnd;
	__u32 snd_ssthresh;
	__u32 packets_out;
	__u32 sacked_out;
	__u32 lost_out;
	__u32 retrans_out;
	__u32 total_retrans;
	__u32 data_segs_out;
	__u32 prr_delivered;
	__u32 mdev_us;
	__u32 srtt_us;
	__u64 bytes_acked;
	__u64 bytes_sent;
	__u64 bytes_retrans;
	__u32 reordering;
	__u32 rate_delivered;
	__u32 rate_interval_us;
	__u8 rate_app_limited: 1;
	__u32 high_seq;
} __attribute__((preserve_access_index));

struct rate_sample;

/* Which field cong_avoid copies into snd_cwnd. */
const volatile __u32 field = 0;

SEC("struct_ops")
void BPF_PROG(probe_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;
	__u32 v;

	switch (field) {
	case 0: v = tp->sacked_out; break;
	case 1: v = tp->lost_out; break;
	case 2: v = tp->retrans_out; break;
	case 3: v = tp->total_retrans; break;
	case 4: v = tp->data_segs_out; break;
	case 5: v = tp->prr_delivered; break;
	case 6: v = tp->mdev_us; break;
	case 7: v = icsk->icsk_rto; break;
	case 8: v = icsk->icsk_backoff; break;
	case 10: v = sk->__sk_common.skc_state; break;
	case 11: v = tp->bytes_acked; break;
	case 12: v = tp->bytes_sent; break;
	case 13: v = tp->bytes_retrans; break;
	case 14: v = tp->reordering; break;
	case 15: v = tp->rate_delivered; break;
	case 16: v = tp->rate_interval_us; break;
	case 17: v = BPF_CORE_READ_BITFIELD(tp, rate_app_limited); break;
	case 18: v = tp->high_seq; break;
	/* Linux's tcp_packets_in_flight from the counters */
	default: v = tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out; break;
	}
	tp->snd_cwnd = v;
}

RENO_LOSS_HOOKS(probe)

SEC(".struct_ops.link")
struct tcp_congestion_ops probe = {
	.ssthresh = (void *)probe_ssthresh,
	.cong_avoid = (void *)probe_cong_avoid,
	.undo_cwnd = (void *)probe_undo_cwnd,
	.name = "probe",
};
