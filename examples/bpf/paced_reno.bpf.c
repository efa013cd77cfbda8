/* SPDX-License-Identifier: MIT */
/*
 * A controller that owns its window and its pacing rate on every ACK (`cong_control`), as BBR
 * does in Linux, written as a kernel developer writes a struct_ops program: Reno's window
 * (slow start by the segments each ACK delivers, then one segment per window) taken down to
 * ssthresh at once when a reduction sets a new ssthresh in recovery (no PRR: Linux leaves the
 * window to a controller with cong_control), and paced at `ss_gain` / `ca_gain` percent of
 * cwnd / srtt,
 * as tcp_update_pacing_rate's ratios, with Linux's internal pacing asked for in init. It runs
 * unchanged in the kernel (`startlab kernel run`) and in the simulator (`startlab run`).
 *
 *   clang -g -O2 -target bpf -D__TARGET_ARCH_x86 -I/usr/include/bpf -c paced_reno.bpf.c -o paced_reno.bpf.o
 *
 * and in a scenario: cc = { bpf = "paced_reno.bpf.o" }, cc_params = { ss_gain = 200, ca_gain = 120 }.
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
#include <bpf_core_read.h>

#define TCP_CA_Recovery 3
#define SK_PACING_NEEDED 1
#define USEC_PER_SEC 1000000ULL

struct sock {
	unsigned long sk_pacing_rate;
	__u32 sk_pacing_status;
} __attribute__((preserve_access_index));

struct inet_connection_sock {
	__u8 icsk_ca_state: 5;
	__u64 icsk_ca_priv[13];
} __attribute__((preserve_access_index));

struct tcp_sock {
	__u32 snd_cwnd;
	__u32 snd_ssthresh;
	__u32 mss_cache;
	__u32 srtt_us;
} __attribute__((preserve_access_index));

struct rate_sample {
	__u32 acked_sacked;
} __attribute__((preserve_access_index));

struct tcp_congestion_ops {
	void (*init)(struct sock *sk);
	__u32 (*ssthresh)(struct sock *sk);
	void (*cong_control)(struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs);
	__u32 (*undo_cwnd)(struct sock *sk);
	char name[16];
} __attribute__((preserve_access_index));

extern void tcp_cong_avoid_ai(struct tcp_sock *tp, __u32 w, __u32 acked) __attribute__((section(".ksyms")));
extern __u32 tcp_reno_ssthresh(struct sock *sk) __attribute__((section(".ksyms")));
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __attribute__((section(".ksyms")));

char _license[] SEC("license") = "GPL";

/* Pacing gains, percent of cwnd / srtt. */
const volatile __u32 ss_gain = 200;
const volatile __u32 ca_gain = 120;

struct paced {
	/* The ssthresh the window was last taken down to. A new recovery may begin without the
	 * connection passing through Open between two ACKs, so a new reduction is a new ssthresh. */
	__u32 reduced_to;
};

static struct paced *priv(struct sock *sk)
{
	return (struct paced *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

static void set_pacing_rate(struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u32 gain = tp->snd_cwnd < tp->snd_ssthresh ? ss_gain : ca_gain;
	__u64 rate = (__u64)tp->mss_cache * tp->snd_cwnd * USEC_PER_SEC / 100 * gain;

	/* srtt_us is 8 x the smoothed RTT; none yet: leave the rate as it is. */
	if (tp->srtt_us)
		sk->sk_pacing_rate = rate * 8 / tp->srtt_us;
}

SEC("struct_ops")
void BPF_PROG(paced_init, struct sock *sk)
{
	priv(sk)->reduced_to = 0;
	sk->sk_pacing_status = SK_PACING_NEEDED;
	set_pacing_rate(sk);
}

SEC("struct_ops")
void BPF_PROG(paced_cong_control, struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;
	__u32 acked = rs->acked_sacked;

	if (BPF_CORE_READ_BITFIELD(icsk, icsk_ca_state) >= TCP_CA_Recovery) {
		/* Down to each new ssthresh once, then hold until recovery ends. */
		if (priv(sk)->reduced_to != tp->snd_ssthresh && tp->snd_cwnd > tp->snd_ssthresh)
			tp->snd_cwnd = tp->snd_ssthresh;
		priv(sk)->reduced_to = tp->snd_ssthresh;
	} else {
		if (tp->snd_cwnd < tp->snd_ssthresh) {
			__u32 grown = tp->snd_cwnd + acked;

			tp->snd_cwnd = grown < tp->snd_ssthresh ? grown : tp->snd_ssthresh;
		} else if (acked) {
			tcp_cong_avoid_ai(tp, tp->snd_cwnd, acked);
		}
	}
	set_pacing_rate(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(paced_ssthresh, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(paced_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops paced_reno = {
	.init = (void *)paced_init,
	.ssthresh = (void *)paced_ssthresh,
	.cong_control = (void *)paced_cong_control,
	.undo_cwnd = (void *)paced_undo_cwnd,
	.name = "paced_reno",
};
