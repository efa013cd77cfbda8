/* SPDX-License-Identifier: MIT */
/*
 * release, and the socket's addresses and ports (tests/bpf_user.rs, test_kernel.py): release
 * counts, per path (local address, remote address), the connections that went away; init sets
 * snd_cwnd to 10 + 10 x that count, + 500 if the remote port is not in 5001-20000, the local
 * port not in 20000-35000, or an address is outside 198.18.0.0/15. cong_avoid leaves cwnd alone.
 */
#include "test_cc.h"

#define BPF_MAP_TYPE_HASH 1
#define BPF_ANY 0

struct sock_common {
	__be32 skc_daddr;
	__be32 skc_rcv_saddr;
	__be16 skc_dport;
	__u16 skc_num;
} __attribute__((preserve_access_index));

struct sock {
	struct sock_common __sk_common;
} __attribute__((preserve_access_index));

struct tcp_sock {
	__u32 snd_cwnd;
} __attribute__((preserve_access_index));

struct path {
	__be32 local;
	__be32 remote;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct path);
	__type(value, __u32);
} released SEC(".maps");

static struct path path_of(struct sock *sk)
{
	struct path p = {
		.local = sk->__sk_common.skc_rcv_saddr,
		.remote = sk->__sk_common.skc_daddr,
	};
	return p;
}

static int benchmarking(__be32 addr)
{
	/* 198.18.0.0/15 */
	return (bpf_ntohl(addr) & 0xfffe0000) == 0xc6120000;
}

SEC("struct_ops")
void BPF_PROG(release_init, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct path p = path_of(sk);
	__u32 *count = bpf_map_lookup_elem(&released, &p);
	__u32 cwnd = 10 + (count ? 10 * *count : 0);

	__u16 remote_port = bpf_ntohs(sk->__sk_common.skc_dport);
	__u16 local_port = sk->__sk_common.skc_num;

	if (remote_port < 5001 || remote_port >= 20000 || local_port < 20000 || local_port >= 35000 ||
	    !benchmarking(p.local) || !benchmarking(p.remote) || p.local == p.remote)
		cwnd += 500;
	tp->snd_cwnd = cwnd;
}

SEC("struct_ops")
void BPF_PROG(release_release, struct sock *sk)
{
	struct path p = path_of(sk);
	__u32 *count = bpf_map_lookup_elem(&released, &p);
	__u32 one = 1;

	if (count)
		*count += 1;
	else
		bpf_map_update_elem(&released, &p, &one, BPF_ANY);
}

SEC("struct_ops")
void BPF_PROG(release_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
}

RENO_LOSS_HOOKS(release)

SEC(".struct_ops.link")
struct tcp_congestion_ops released_ops = {
	.init = (void *)release_init,
	.release = (void *)release_release,
	.ssthresh = (void *)release_ssthresh,
	.cong_avoid = (void *)release_cong_avoid,
	.undo_cwnd = (void *)release_undo_cwnd,
	.name = "releasing",
};
