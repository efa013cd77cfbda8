/* SPDX-License-Identifier: MIT */
/*
 * bpf_setsockopt(SOL_SOCKET, SO_MAX_PACING_RATE) from a congestion control (tests/bpf_user.rs,
 * test_kernel.py). `mode` chooses what cong_avoid does after Reno's growth:
 *   0: caps the rate at 1,000,000 bytes/s; snd_cwnd = 100 x sk_pacing_status
 *      + 10 x (sk_pacing_rate <= the cap) + (sk_max_pacing_rate == the cap): 111 as Linux runs it
 *      (sk_setsockopt asks for pacing and lowers the rate);
 *   1: the same with an 8-byte option: snd_cwnd = -return (22, EINVAL: sol_socket_sockopt
 *      takes an int);
 *   2: ~0U, no cap: snd_cwnd = 100 x sk_pacing_status + 10 x (sk_max_pacing_rate == ~0UL): 10
 *      (the status stays SK_PACING_NONE);
 *   3: SO_SNDBUF, an option the simulator does not provide;
 *   4: nothing: init capped the rate at `cap` bytes/s, and Linux paces the connection at most
 *      that fast, with Reno's window.
 * With -DRELEASE_SETSOCKOPT, release calls bpf_setsockopt too (through a function of its own),
 * which Linux refuses to load.
 */
#include "test_cc.h"

#define SOL_SOCKET 1
#define SO_SNDBUF 7
#define SO_MAX_PACING_RATE 47

struct sock {
	unsigned long sk_pacing_rate;
	unsigned long sk_max_pacing_rate;
	__u32 sk_pacing_status;
} __attribute__((preserve_access_index));

struct tcp_sock {
	__u32 snd_cwnd;
} __attribute__((preserve_access_index));

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __attribute__((section(".ksyms")));

const volatile __u32 mode = 0;
const volatile __u32 cap = 125000;

SEC("struct_ops")
void BPF_PROG(cap_init, struct sock *sk)
{
	int rate = cap;

	if (mode == 4)
		bpf_setsockopt(sk, SOL_SOCKET, SO_MAX_PACING_RATE, &rate, sizeof(rate));
}

SEC("struct_ops")
void BPF_PROG(cap_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	int rate = 1000000, unlimited = ~0, sndbuf = 1 << 20;
	long wide = 1000000;
	long ret;

	tcp_reno_cong_avoid(sk, ack, acked);
	switch (mode) {
	case 0:
		bpf_setsockopt(sk, SOL_SOCKET, SO_MAX_PACING_RATE, &rate, sizeof(rate));
		tp->snd_cwnd = 100 * sk->sk_pacing_status + 10 * (sk->sk_pacing_rate <= 1000000) +
			       (sk->sk_max_pacing_rate == 1000000);
		break;
	case 1:
		ret = bpf_setsockopt(sk, SOL_SOCKET, SO_MAX_PACING_RATE, &wide, sizeof(wide));
		tp->snd_cwnd = -ret;
		break;
	case 2:
		bpf_setsockopt(sk, SOL_SOCKET, SO_MAX_PACING_RATE, &unlimited, sizeof(unlimited));
		tp->snd_cwnd = 100 * sk->sk_pacing_status + 10 * (sk->sk_max_pacing_rate == ~0UL);
		break;
	case 3:
		bpf_setsockopt(sk, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
		break;
	default:
		break;
	}
}

#ifdef RELEASE_SETSOCKOPT
/* A function of its own (a BPF-to-BPF call): the verifier follows it, and so does the loader. */
static __attribute__((noinline)) int lift_cap(struct sock *sk)
{
	int unlimited = ~0;

	return bpf_setsockopt(sk, SOL_SOCKET, SO_MAX_PACING_RATE, &unlimited, sizeof(unlimited));
}

SEC("struct_ops")
void BPF_PROG(cap_release, struct sock *sk)
{
	lift_cap(sk);
}
#endif

RENO_LOSS_HOOKS(cap)

SEC(".struct_ops.link")
struct tcp_congestion_ops pacing_cap = {
	.init = (void *)cap_init,
#ifdef RELEASE_SETSOCKOPT
	.release = (void *)cap_release,
#endif
	.cong_avoid = (void *)cap_cong_avoid,
	.ssthresh = (void *)cap_ssthresh,
	.undo_cwnd = (void *)cap_undo_cwnd,
	.name = "pacing_cap",
};
