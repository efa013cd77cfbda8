/* SPDX-License-Identifier: MIT */
/*
 * The kernel functions and the clock and socket helpers, checked against what Linux computes
 * (tests/bpf_user.rs, test_kernel.py). The program is Reno built from tcp_cong.c's kfuncs:
 * tcp_slow_start and tcp_cong_avoid_ai on odd ACKs, tcp_reno_cong_avoid on even ones. Before
 * each call it computes what the function must do from net/ipv4/tcp_cong.c's rules, and on
 * every ACK it compares the helpers' answers with the relations the kernel keeps. A check
 * that fails once sets its bit in `failed`; from then on the window is 10000 + `failed`
 * (`checks` says which count), so a run whose window never reaches 10000 passed them all:
 *   1: tcp_slow_start's window and return value;
 *   2: tcp_cong_avoid_ai's window and snd_cwnd_cnt;
 *   4: tcp_reno_cong_avoid's (slow start, then additive increase, only when cwnd-limited);
 *   8: tcp_reno_ssthresh is max(cwnd / 2, 2), tcp_reno_undo_cwnd max(cwnd, prior_cwnd);
 *  16: bpf_ktime_get_ns never goes back;
 *  32: bpf_jiffies64 follows it at CONFIG_HZ (their difference in ticks stays within 2);
 *  64: bpf_ktime_get_coarse_ns is at most the clock and at most 4 ticks behind it;
 * 128: bpf_ktime_get_boot_ns keeps its distance to bpf_ktime_get_ns (within 1 ms);
 * 256: bpf_getsockopt(SO_MAX_PACING_RATE) gives min(sk_max_pacing_rate, ~0U): ~0U before
 *      anything sets a cap, the cap after bpf_setsockopt sets one; -EINVAL with the buffer
 *      zeroed for an 8-byte option.
 * With -DRELEASE_GETSOCKOPT, release calls bpf_getsockopt, which Linux refuses to load.
 */
#include "test_cc.h"
#include <bpf_core_read.h>

#define SOL_SOCKET 1
#define SO_MAX_PACING_RATE 47
#define EINVAL 22

struct sock {
	unsigned long sk_max_pacing_rate;
} __attribute__((preserve_access_index));

struct inet_connection_sock {
	__u64 icsk_ca_priv[13];
} __attribute__((preserve_access_index));

struct tcp_sock {
	__u32 snd_cwnd;
	__u32 snd_cwnd_cnt;
	__u32 snd_cwnd_clamp;
	__u32 snd_ssthresh;
	__u32 prior_cwnd;
	__u32 max_packets_out;
	__u8 is_cwnd_limited: 1;
} __attribute__((preserve_access_index));

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked)
	__attribute__((section(".ksyms")));
extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __attribute__((section(".ksyms")));
extern void tcp_cong_avoid_ai(struct tcp_sock *tp, __u32 w, __u32 acked)
	__attribute__((section(".ksyms")));
extern int CONFIG_HZ __attribute__((section(".kconfig"), weak));

const volatile __u32 checks = 511;
/* A cap bpf_setsockopt sets in init (bytes per second; 0: none). */
const volatile __u32 cap = 0;
/* Added to the counter tcp_cong_avoid_ai is expected to leave (a test shows check 2 fire). */
const volatile __u32 ai_bias = 0;

struct state {
	__u64 last_ns;
	__s64 jiffies_offset;
	__s64 boot_offset;
	__u32 acks;
	__u32 failed;
};

static struct state *state(struct sock *sk)
{
	return (struct state *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

static __u32 min_u32(__u32 a, __u32 b)
{
	return a < b ? a : b;
}

static __u64 tick_ns(void)
{
	return 1000000000ULL / (CONFIG_HZ > 0 ? CONFIG_HZ : 1000);
}

/* tcp_cong.c, tcp_cong_avoid_ai: the window and counter it leaves. */
static void expect_ai(__u32 cwnd, __u32 cnt, __u32 clamp, __u32 w, __u32 acked, __u32 *out_cwnd,
		      __u32 *out_cnt)
{
	if (cnt >= w) {
		cnt = 0;
		cwnd++;
	}
	cnt += acked;
	if (cnt >= w) {
		__u32 delta = cnt / w;

		cnt -= delta * w;
		cwnd += delta;
	}
	*out_cwnd = min_u32(cwnd, clamp);
	*out_cnt = cnt + ai_bias;
}

static __u32 getsockopt_cap(struct sock *sk, int *err)
{
	__u32 v = 7;

	*err = bpf_getsockopt(sk, SOL_SOCKET, SO_MAX_PACING_RATE, &v, sizeof(v));
	return v;
}

static void check_clocks(struct sock *sk, struct state *s)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 jiffies = bpf_jiffies64();
	__u64 coarse = bpf_ktime_get_coarse_ns();
	__u64 later = bpf_ktime_get_ns();
	__u64 boot = bpf_ktime_get_boot_ns();
	__s64 j = (__s64)(jiffies - now / tick_ns()) - s->jiffies_offset;
	__s64 b = (__s64)(boot - later) - s->boot_offset;

	if (now < s->last_ns || later < now)
		s->failed |= 16;
	s->last_ns = later;
	if (j > 2 || j < -2)
		s->failed |= 32;
	if (coarse > later || later - coarse > 4 * tick_ns())
		s->failed |= 64;
	if (b > 1000000 || b < -1000000)
		s->failed |= 128;
}

static void show(struct tcp_sock *tp, struct state *s)
{
	if (s->failed & checks)
		tp->snd_cwnd = 10000 + (s->failed & checks);
}

SEC("struct_ops")
void BPF_PROG(calls_init, struct sock *sk)
{
	struct state *s = state(sk);
	__u64 now = bpf_ktime_get_ns();
	__u64 v8 = 7;
	int err;

	s->last_ns = now;
	s->jiffies_offset = (__s64)(bpf_jiffies64() - now / tick_ns());
	now = bpf_ktime_get_ns();
	s->boot_offset = (__s64)(bpf_ktime_get_boot_ns() - now);
	s->acks = 0;
	s->failed = 0;
	if (getsockopt_cap(sk, &err) != 0xffffffff || err)
		s->failed |= 256;
	err = bpf_getsockopt(sk, SOL_SOCKET, SO_MAX_PACING_RATE, &v8, sizeof(v8));
	if (err != -EINVAL || v8)
		s->failed |= 256;
	if (cap) {
		__u32 c = cap;

		bpf_setsockopt(sk, SOL_SOCKET, SO_MAX_PACING_RATE, &c, sizeof(c));
		if (getsockopt_cap(sk, &err) != cap || err || sk->sk_max_pacing_rate != cap)
			s->failed |= 256;
	}
}

SEC("struct_ops")
void BPF_PROG(calls_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct state *s = state(sk);
	__u32 cwnd = tp->snd_cwnd, cnt = tp->snd_cwnd_cnt, clamp = tp->snd_cwnd_clamp;
	__u32 ssthresh = tp->snd_ssthresh, want_cwnd, want_cnt;
	int err;

	if (s->failed & checks) {
		show(tp, s);
		return;
	}
	if (tcp_reno_ssthresh(sk) != (cwnd >> 1 > 2 ? cwnd >> 1 : 2))
		s->failed |= 8;
	if (tcp_reno_undo_cwnd(sk) != (cwnd > tp->prior_cwnd ? cwnd : tp->prior_cwnd))
		s->failed |= 8;
	if (getsockopt_cap(sk, &err) != min_u32(sk->sk_max_pacing_rate > 0xffffffff ?
							0xffffffff :
							(__u32)sk->sk_max_pacing_rate,
						0xffffffff) ||
	    err)
		s->failed |= 256;
	check_clocks(sk, s);

	if (++s->acks & 1) {
		/* tcp_reno_cong_avoid's own steps, each through its kfunc. */
		if (cwnd < ssthresh) {
			__u32 grown = min_u32(cwnd + acked, ssthresh);
			__u32 left = acked - (grown - cwnd);

			if (tcp_slow_start(tp, acked) != left || tp->snd_cwnd != min_u32(grown, clamp))
				s->failed |= 1;
			acked = left;
			if (!acked) {
				show(tp, s);
				return;
			}
			cwnd = tp->snd_cwnd;
		}
		expect_ai(cwnd, cnt, clamp, cwnd, acked, &want_cwnd, &want_cnt);
		tcp_cong_avoid_ai(tp, cwnd, acked);
		if (tp->snd_cwnd != want_cwnd || tp->snd_cwnd_cnt != want_cnt)
			s->failed |= 2;
	} else {
		/* tcp_reno_cong_avoid: nothing unless cwnd-limited (tcp_is_cwnd_limited). */
		int limited = BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited) ||
			      (cwnd < ssthresh && cwnd < 2 * tp->max_packets_out);

		__u32 given = acked;

		want_cwnd = cwnd;
		want_cnt = cnt;
		if (limited) {
			if (cwnd < ssthresh) {
				__u32 grown = min_u32(cwnd + acked, ssthresh);

				acked -= grown - cwnd;
				want_cwnd = min_u32(grown, clamp);
			}
			if (acked)
				expect_ai(want_cwnd, cnt, clamp, want_cwnd, acked, &want_cwnd,
					  &want_cnt);
		}
		tcp_reno_cong_avoid(sk, ack, given);
		if (tp->snd_cwnd != want_cwnd || tp->snd_cwnd_cnt != want_cnt)
			s->failed |= 4;
	}
	show(tp, s);
}

RENO_LOSS_HOOKS(calls)

#ifdef RELEASE_GETSOCKOPT
SEC("struct_ops")
void BPF_PROG(calls_release, struct sock *sk)
{
	int err;

	getsockopt_cap(sk, &err);
}
#endif

SEC(".struct_ops.link")
struct tcp_congestion_ops calls = {
	.init = (void *)calls_init,
#ifdef RELEASE_GETSOCKOPT
	.release = (void *)calls_release,
#endif
	.cong_avoid = (void *)calls_cong_avoid,
	.ssthresh = (void *)calls_ssthresh,
	.undo_cwnd = (void *)calls_undo_cwnd,
	.name = "calls",
};
