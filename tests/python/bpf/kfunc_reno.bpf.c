/* SPDX-License-Identifier: MIT */
/*
 * Reno made of Linux's exported functions alone (tcp_reno_ssthresh, tcp_reno_cong_avoid,
 * tcp_reno_undo_cwnd), as a user writes it: it reads no field of the socket, so the object
 * carries no CO-RE relocation and its .BTF.ext has none.
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

/* Linux's socket, of which this controller reads nothing. */
struct sock {
} __attribute__((preserve_access_index));

struct tcp_congestion_ops {
	__u32 (*ssthresh)(struct sock *sk);
	void (*cong_avoid)(struct sock *sk, __u32 ack, __u32 acked);
	__u32 (*undo_cwnd)(struct sock *sk);
	char name[16];
	__u32 flags;
} __attribute__((preserve_access_index));

extern __u32 tcp_reno_ssthresh(struct sock *sk) __attribute__((section(".ksyms")));
extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __attribute__((section(".ksyms")));
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __attribute__((section(".ksyms")));

#ifdef KCONFIG_SSTHRESH
/* With -DKCONFIG_SSTHRESH, ssthresh is the kernel's CONFIG_HZ / 10 (a __kconfig extern). */
extern const unsigned int CONFIG_HZ __kconfig;
#endif
#ifdef KCONFIG_UNKNOWN
extern const unsigned int CONFIG_NO_SUCH_OPTION __kconfig;
#endif

char _license[] SEC("license") = "GPL";

SEC("struct_ops")
__u32 BPF_PROG(kreno_ssthresh, struct sock *sk)
{
#if defined(KCONFIG_SSTHRESH)
	return CONFIG_HZ / 10;
#elif defined(KCONFIG_UNKNOWN)
	return CONFIG_NO_SUCH_OPTION;
#else
	return tcp_reno_ssthresh(sk);
#endif
}

SEC("struct_ops")
void BPF_PROG(kreno_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(kreno_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops kreno = {
	.ssthresh = (void *)kreno_ssthresh,
	.cong_avoid = (void *)kreno_cong_avoid,
	.undo_cwnd = (void *)kreno_undo_cwnd,
#ifdef NAME
	/* With -DNAME='"..."': another name, which Linux may refuse. */
	.name = NAME,
#else
	.name = "kreno",
#endif
#ifdef FLAGS
	/* With -DFLAGS=N: the struct_ops's flags (TCP_CONG_NEEDS_ECN is 0x2). */
	.flags = FLAGS,
#endif
};

#ifdef TWO_OPS
/* With -DTWO_OPS, a second controller in the same object: a window that never grows. An object
 * with two struct_ops runs only with the one it names ({ bpf = "FILE.o", ops = "kfrozen" }). */
SEC("struct_ops")
void BPF_PROG(kfrozen_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
}

SEC("struct_ops")
__u32 BPF_PROG(kfrozen_ssthresh, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(kfrozen_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops kfrozen = {
	.ssthresh = (void *)kfrozen_ssthresh,
	.cong_avoid = (void *)kfrozen_cong_avoid,
	.undo_cwnd = (void *)kfrozen_undo_cwnd,
	.name = "kfrozen",
};
#endif
