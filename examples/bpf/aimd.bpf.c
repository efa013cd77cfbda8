/* SPDX-License-Identifier: MIT */
/*
 * A user's congestion control, as a user would write it for Linux: additive increase of
 * `increase` segments per RTT, multiplicative decrease to `decrease_percent` % of cwnd on a loss,
 * Linux's own slow start. It runs unchanged in the kernel (`startlab kernel run`) and in the
 * simulator's VM (`startlab run`); docs/bpf.md explains how.
 *
 *   clang -g -O2 -target bpf -D__TARGET_ARCH_x86 -I/usr/include/bpf -c aimd.bpf.c -o aimd.bpf.o
 *
 * and in a scenario: cc = { bpf = "aimd.bpf.o" }, cc_params = { increase = 2, decrease_percent = 70 }.
 */

/* The integer types libbpf's headers use (vmlinux.h or linux/types.h would give them too). */
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

/* Only the fields this controller reads; CO-RE relocates them against whatever kernel (or the
 * simulator) runs it. */
struct sock {
} __attribute__((preserve_access_index));

struct tcp_sock {
	__u32 snd_cwnd;
	__u32 snd_ssthresh;
} __attribute__((preserve_access_index));

struct rate_sample;

struct tcp_congestion_ops {
	__u32 (*ssthresh)(struct sock *sk);
	void (*cong_avoid)(struct sock *sk, __u32 ack, __u32 acked);
	void (*cong_control)(struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs);
	__u32 (*undo_cwnd)(struct sock *sk);
	void (*init)(struct sock *sk);
	char name[16];
} __attribute__((preserve_access_index));

extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __attribute__((section(".ksyms")));
extern void tcp_cong_avoid_ai(struct tcp_sock *tp, __u32 w, __u32 acked) __attribute__((section(".ksyms")));
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __attribute__((section(".ksyms")));

char _license[] SEC("license") = "GPL";

/* Parameters, set from the scenario's cc_params before the object is loaded. */
const volatile __u32 increase = 1;
const volatile __u32 decrease_percent = 50;

SEC("struct_ops")
void BPF_PROG(aimd_init, struct sock *sk)
{
}

SEC("struct_ops")
__u32 BPF_PROG(aimd_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u32 s = tp->snd_cwnd * decrease_percent / 100;

	return s > 2 ? s : 2;
}

SEC("struct_ops")
void BPF_PROG(aimd_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u32 w;

	if (tp->snd_cwnd < tp->snd_ssthresh) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	/* `increase` segments per window: one every cwnd / increase acknowledged. */
	w = increase ? tp->snd_cwnd / increase : tp->snd_cwnd;
	tcp_cong_avoid_ai(tp, w ? w : 1, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(aimd_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops aimd = {
	.init = (void *)aimd_init,
	.ssthresh = (void *)aimd_ssthresh,
	.cong_avoid = (void *)aimd_cong_avoid,
	.undo_cwnd = (void *)aimd_undo_cwnd,
	.name = "aimd",
};
