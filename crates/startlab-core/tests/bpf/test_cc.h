/* SPDX-License-Identifier: MIT */
/*
 * What the test controllers of this directory share: the integer types libbpf's headers use,
 * libbpf's headers, the struct_ops type as far as they fill it, and Reno's loss hooks from the
 * kernel's functions. Each program declares the socket fields it reads itself, as CO-RE wants.
 */
#ifndef STARTLAB_TEST_CC_H
#define STARTLAB_TEST_CC_H

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
#include <bpf_endian.h>

struct sock;
struct rate_sample;

struct tcp_congestion_ops {
	void (*init)(struct sock *sk);
	void (*release)(struct sock *sk);
	__u32 (*ssthresh)(struct sock *sk);
	void (*cong_avoid)(struct sock *sk, __u32 ack, __u32 acked);
	void (*cong_control)(struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs);
	void (*set_state)(struct sock *sk, __u8 new_state);
	__u32 (*undo_cwnd)(struct sock *sk);
	char name[16];
} __attribute__((preserve_access_index));

extern __u32 tcp_reno_ssthresh(struct sock *sk) __attribute__((section(".ksyms")));
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __attribute__((section(".ksyms")));

char _license[] SEC("license") = "GPL";

/* PREFIX_ssthresh and PREFIX_undo_cwnd: Reno's, as tcp_cong.c computes them. */
#define RENO_LOSS_HOOKS(prefix)                                         \
	SEC("struct_ops")                                               \
	__u32 BPF_PROG(prefix##_ssthresh, struct sock *sk)              \
	{                                                               \
		return tcp_reno_ssthresh(sk);                           \
	}                                                               \
	SEC("struct_ops")                                               \
	__u32 BPF_PROG(prefix##_undo_cwnd, struct sock *sk)             \
	{                                                               \
		return tcp_reno_undo_cwnd(sk);                          \
	}

#endif
