/* SPDX-License-Identifier: MIT */
/*
 * The socket's identity, its path and its RTT estimator as sock, inet_sock,
 * inet_connection_sock and tcp_sock hold them, checked against what Linux keeps there
 * (tests/bpf_user.rs, test_kernel.py). Reno (tcp_reno_cong_avoid) checks on every ACK; a check
 * that fails once sets its bit in `failed`, and from then on the window is 10000 + `failed`
 * (`checks` says which count):
 *   1: an IPv4 TCP socket: skc_family AF_INET, sk_type SOCK_STREAM, sk_protocol IPPROTO_TCP;
 *   2: inet_sock's local address and port are sock_common's (inet_sport in network order);
 *   4: sk_pacing_shift is 10 (sock_init_data), sk_gso_max_segs is `gso_max_segs`;
 *   8: icsk_pmtu_cookie is `pmtu`, tcp_header_len `header` (32 with timestamps), there is no
 *      extension header, and a full segment fits the MTU (tcp_sync_mss);
 *  16: the RTO is what tcp_set_rto makes of srtt_us and rttvar_us, in jiffies at CONFIG_HZ
 *      (within one, for the simulator's nanoseconds), while it is not backed off; rttvar_us
 *      and mdev_max_us are at least the minimum RTO (tcp_rtt_estimator keeps them so);
 *  32: segs_out counts data_segs_out and at most 3 segments without data (SYN, the
 *      handshake's ACK, FIN); no data came in (data_segs_in 0); segs_in never falls and counts
 *      at least every ACK this hook saw;
 *  64: sk_mark and sk_priority are 0 (nothing set them).
 */
#include "test_cc.h"

struct sock_common {
	unsigned short skc_family;
	__be32 skc_rcv_saddr;
	__u16 skc_num;
} __attribute__((preserve_access_index));

struct sock {
	struct sock_common __sk_common;
	__u16 sk_type;
	__u16 sk_protocol;
	__u8 sk_pacing_shift;
	__u16 sk_gso_max_segs;
	__u32 sk_mark;
	__u32 sk_priority;
} __attribute__((preserve_access_index));

struct inet_sock {
	__be32 inet_saddr;
	__be16 inet_sport;
} __attribute__((preserve_access_index));

struct inet_connection_sock {
	__u32 icsk_rto;
	__u32 icsk_pmtu_cookie;
	__u16 icsk_ext_hdr_len;
	__u8 icsk_backoff;
	__u64 icsk_ca_priv[13];
} __attribute__((preserve_access_index));

struct tcp_sock {
	__u32 snd_cwnd;
	__u32 mss_cache;
	__u32 srtt_us;
	__u32 rttvar_us;
	__u32 mdev_max_us;
	__u32 segs_in;
	__u32 segs_out;
	__u32 data_segs_in;
	__u32 data_segs_out;
	__u16 tcp_header_len;
} __attribute__((preserve_access_index));

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked)
	__attribute__((section(".ksyms")));
extern int CONFIG_HZ __attribute__((section(".kconfig"), weak));

const volatile __u32 checks = 127;
const volatile __u32 pmtu = 1500;
const volatile __u32 header = 32;
const volatile __u32 gso_max_segs = 65535;
const volatile __u32 rto_min_us = 200000;

struct state {
	__u32 acks;
	__u32 segs_in;
	__u32 failed;
};

static struct state *state(struct sock *sk)
{
	return (struct state *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

static __u32 usecs_to_jiffies(__u32 us)
{
	__u32 per_jiffy = 1000000 / (CONFIG_HZ > 0 ? CONFIG_HZ : 1000);

	return (us + per_jiffy - 1) / per_jiffy;
}

static __u32 check(struct sock *sk, struct state *s)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;
	struct inet_sock *inet = (struct inet_sock *)sk;
	__u32 failed = 0, not_data = tp->segs_out - tp->data_segs_out;

	if (sk->__sk_common.skc_family != 2 || sk->sk_type != 1 || sk->sk_protocol != 6)
		failed |= 1;
	if (inet->inet_saddr != sk->__sk_common.skc_rcv_saddr ||
	    inet->inet_sport != bpf_htons(sk->__sk_common.skc_num))
		failed |= 2;
	if (sk->sk_pacing_shift != 10 || sk->sk_gso_max_segs != gso_max_segs)
		failed |= 4;
	if (icsk->icsk_pmtu_cookie != pmtu || tp->tcp_header_len != header ||
	    icsk->icsk_ext_hdr_len || tp->mss_cache + tp->tcp_header_len + 20 > pmtu)
		failed |= 8;
	if (tp->srtt_us && !icsk->icsk_backoff) {
		__u32 want = usecs_to_jiffies((tp->srtt_us >> 3) + tp->rttvar_us);

		if (icsk->icsk_rto + 1 < want || icsk->icsk_rto > want + 1 ||
		    tp->rttvar_us < rto_min_us || tp->mdev_max_us < rto_min_us)
			failed |= 16;
	}
	if ((__s32)not_data < 0 || not_data > 3 || tp->data_segs_in ||
	    tp->segs_in < s->segs_in || tp->segs_in < s->acks)
		failed |= 32;
	if (sk->sk_mark || sk->sk_priority)
		failed |= 64;
	s->segs_in = tp->segs_in;
	return failed;
}

SEC("struct_ops")
void BPF_PROG(socket_init, struct sock *sk)
{
	struct state *s = state(sk);

	s->acks = 0;
	s->segs_in = 0;
	s->failed = 0;
}

SEC("struct_ops")
void BPF_PROG(socket_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct state *s = state(sk);

	s->acks++;
	s->failed |= check(sk, s);
	tcp_reno_cong_avoid(sk, ack, acked);
	if (s->failed & checks)
		tp->snd_cwnd = 10000 + (s->failed & checks);
}

RENO_LOSS_HOOKS(socket)

SEC(".struct_ops.link")
struct tcp_congestion_ops socket = {
	.init = (void *)socket_init,
	.cong_avoid = (void *)socket_cong_avoid,
	.ssthresh = (void *)socket_ssthresh,
	.undo_cwnd = (void *)socket_undo_cwnd,
	.name = "socket",
};
