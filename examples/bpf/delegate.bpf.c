/* SPDX-License-Identifier: MIT */
/*
 * A controller that hands every hook to the kernel's own CUBIC (with its HyStart), or with
 * -DBBR to its BBR, through the kfuncs Linux registers for struct_ops programs from tcp_cubic.c
 * (cubictcp_*) and tcp_bbr.c (bbr_*): the pattern of a program that changes one part of an
 * algorithm the kernel has and keeps the rest. It runs in the kernel (startlab kernel run, the
 * kernel's modules) and in the simulator's VM (startlab run, the simulator's models of them).
 *
 *   clang -g -O2 -target bpf -D__TARGET_ARCH_x86 -I/usr/include/bpf -c delegate.bpf.c -o kcubic.bpf.o
 *   clang -g -O2 -target bpf -D__TARGET_ARCH_x86 -I/usr/include/bpf -DBBR -c delegate.bpf.c -o kbbr.bpf.o
 *
 * and in a scenario: cc = { bpf = "kcubic.bpf.o" }.
 */
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

/* The kernel's functions do the work: the program reads no field of its own. */
struct sock {
} __attribute__((preserve_access_index));

/* Defined, not only declared: libbpf matches a kernel function's prototype against the
 * kernel's, and a declared-only struct is not a struct to it. */
struct ack_sample {
	__u32 pkts_acked;
} __attribute__((preserve_access_index));

struct rate_sample {
	__u32 acked_sacked;
} __attribute__((preserve_access_index));
enum tcp_ca_event {
	CA_EVENT_TX_START = 0,
	CA_EVENT_CWND_RESTART = 1,
	CA_EVENT_COMPLETE_CWR = 2,
	CA_EVENT_LOSS = 3,
	CA_EVENT_ECN_NO_CE = 4,
	CA_EVENT_ECN_IS_CE = 5,
};

struct tcp_congestion_ops {
	__u32 (*ssthresh)(struct sock *sk);
	void (*cong_avoid)(struct sock *sk, __u32 ack, __u32 acked);
	void (*set_state)(struct sock *sk, __u8 new_state);
	void (*cwnd_event)(struct sock *sk, enum tcp_ca_event ev);
	void (*pkts_acked)(struct sock *sk, const struct ack_sample *sample);
	void (*cong_control)(struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs);
	__u32 (*undo_cwnd)(struct sock *sk);
	__u32 (*sndbuf_expand)(struct sock *sk);
	void (*init)(struct sock *sk);
	char name[16];
} __attribute__((preserve_access_index));

#define KSYM __attribute__((section(".ksyms")))
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) KSYM;
#ifdef BBR
extern void bbr_init(struct sock *sk) KSYM;
extern void bbr_main(struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs) KSYM;
extern __u32 bbr_ssthresh(struct sock *sk) KSYM;
extern __u32 bbr_undo_cwnd(struct sock *sk) KSYM;
extern void bbr_cwnd_event(struct sock *sk, enum tcp_ca_event event) KSYM;
extern void bbr_set_state(struct sock *sk, __u8 new_state) KSYM;
extern __u32 bbr_sndbuf_expand(struct sock *sk) KSYM;
#else
extern void cubictcp_init(struct sock *sk) KSYM;
extern __u32 cubictcp_recalc_ssthresh(struct sock *sk) KSYM;
extern void cubictcp_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) KSYM;
extern void cubictcp_state(struct sock *sk, __u8 new_state) KSYM;
extern void cubictcp_cwnd_event(struct sock *sk, enum tcp_ca_event event) KSYM;
extern void cubictcp_acked(struct sock *sk, const struct ack_sample *sample) KSYM;
#ifdef DCTCP /* tcp_dctcp.c's: the simulator has no DCTCP model to run it (refused) */
extern void dctcp_init(struct sock *sk) KSYM;
#endif
#endif

char _license[] SEC("license") = "GPL";

#ifdef BBR
/* tcp_bbr.c's tcp_congestion_ops, hook for hook: the model runs in cong_control (bbr_main). */
SEC("struct_ops") void BPF_PROG(d_init, struct sock *sk) { bbr_init(sk); }
SEC("struct_ops") void BPF_PROG(d_main, struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs) { bbr_main(sk, ack, flag, rs); }
SEC("struct_ops") __u32 BPF_PROG(d_ssthresh, struct sock *sk) { return bbr_ssthresh(sk); }
SEC("struct_ops") __u32 BPF_PROG(d_undo, struct sock *sk) { return bbr_undo_cwnd(sk); }
SEC("struct_ops") void BPF_PROG(d_event, struct sock *sk, enum tcp_ca_event ev) { bbr_cwnd_event(sk, ev); }
SEC("struct_ops") void BPF_PROG(d_state, struct sock *sk, __u8 s) { bbr_set_state(sk, s); }
SEC("struct_ops") __u32 BPF_PROG(d_sndbuf, struct sock *sk) { return bbr_sndbuf_expand(sk); }

SEC(".struct_ops.link")
struct tcp_congestion_ops kbbr = {
	.init = (void *)d_init,
	.cong_control = (void *)d_main,
	.ssthresh = (void *)d_ssthresh,
	.undo_cwnd = (void *)d_undo,
	.cwnd_event = (void *)d_event,
	.set_state = (void *)d_state,
	.sndbuf_expand = (void *)d_sndbuf,
	.name = "kbbr",
};
#else
/* tcp_cubic.c's tcp_congestion_ops, hook for hook (HyStart runs in cubictcp_acked). */
SEC("struct_ops") void BPF_PROG(d_init, struct sock *sk)
{
	cubictcp_init(sk);
#ifdef DCTCP
	dctcp_init(sk);
#endif
}
SEC("struct_ops") __u32 BPF_PROG(d_ssthresh, struct sock *sk) { return cubictcp_recalc_ssthresh(sk); }
SEC("struct_ops") void BPF_PROG(d_cong_avoid, struct sock *sk, __u32 ack, __u32 acked) { cubictcp_cong_avoid(sk, ack, acked); }
SEC("struct_ops") void BPF_PROG(d_state, struct sock *sk, __u8 s) { cubictcp_state(sk, s); }
SEC("struct_ops") void BPF_PROG(d_event, struct sock *sk, enum tcp_ca_event ev) { cubictcp_cwnd_event(sk, ev); }
SEC("struct_ops") void BPF_PROG(d_acked, struct sock *sk, const struct ack_sample *sample) { cubictcp_acked(sk, sample); }
SEC("struct_ops") __u32 BPF_PROG(d_undo, struct sock *sk) { return tcp_reno_undo_cwnd(sk); }

SEC(".struct_ops.link")
struct tcp_congestion_ops kcubic = {
	.init = (void *)d_init,
	.ssthresh = (void *)d_ssthresh,
	.cong_avoid = (void *)d_cong_avoid,
	.set_state = (void *)d_state,
	.cwnd_event = (void *)d_event,
	.pkts_acked = (void *)d_acked,
	.undo_cwnd = (void *)d_undo,
	.name = "kcubic",
};
#endif
