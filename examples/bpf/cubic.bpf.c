/* SPDX-License-Identifier: MIT */
/*
 * CUBIC with HyStart as Linux 6.18's net/ipv4/tcp_cubic.c computes it, written as a kernel
 * developer writes a struct_ops controller: its own state in icsk_ca_priv, the kernel's integer
 * arithmetic (segments, jiffies, t and K in 1/1024 s), tcp_slow_start and tcp_cong_avoid_ai
 * from the kernel, HZ from the kernel's configuration. It runs unchanged in the kernel
 * (`startlab kernel run`) and in the simulator (`startlab run`); `startlab compare` runs both.
 *
 *   clang -g -O2 -target bpf -D__TARGET_ARCH_x86 -I/usr/include/bpf -c cubic.bpf.c -o cubic.bpf.o
 *
 * and in a scenario: cc = { bpf = "cubic.bpf.o" }. `hystart = 0` in cc_params turns HyStart off;
 * `exit_reason_global = "hystart_exit"` names a HyStart exit after the detector that fired.
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

#define TCP_CA_Loss 4
#define CA_EVENT_TX_START 0
#define SK_PACING_NONE 0

struct sock {
	unsigned long sk_pacing_rate;
	__u32 sk_pacing_status;
	unsigned int sk_gso_max_size;
} __attribute__((preserve_access_index));

struct inet_connection_sock {
	__u64 icsk_ca_priv[13];
} __attribute__((preserve_access_index));

struct tcp_sock {
	__u32 snd_cwnd;
	__u32 snd_ssthresh;
	__u32 snd_una;
	__u32 snd_nxt;
	__u32 max_packets_out;
	__u8 is_cwnd_limited: 1;
	__u64 tcp_mstamp;
	__u32 lsndtime;
} __attribute__((preserve_access_index));

struct ack_sample {
	__u32 pkts_acked;
	__s32 rtt_us;
	__u32 in_flight;
} __attribute__((preserve_access_index));

struct tcp_congestion_ops {
	void (*init)(struct sock *sk);
	__u32 (*ssthresh)(struct sock *sk);
	void (*cong_avoid)(struct sock *sk, __u32 ack, __u32 acked);
	void (*set_state)(struct sock *sk, __u8 new_state);
	void (*cwnd_event)(struct sock *sk, int ev);
	void (*pkts_acked)(struct sock *sk, const struct ack_sample *sample);
	__u32 (*undo_cwnd)(struct sock *sk);
	char name[16];
} __attribute__((preserve_access_index));

extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __attribute__((section(".ksyms")));
extern void tcp_cong_avoid_ai(struct tcp_sock *tp, __u32 w, __u32 acked) __attribute__((section(".ksyms")));
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __attribute__((section(".ksyms")));
extern const unsigned int CONFIG_HZ __kconfig;

char _license[] SEC("license") = "GPL";

#define HZ CONFIG_HZ
#define USEC_PER_SEC 1000000ULL
#define USEC_PER_MSEC 1000ULL

/* tcp_cubic.c's module parameters, at their defaults. */
#define BICTCP_BETA_SCALE 1024
#define BICTCP_HZ 10
#define HYSTART_ACK_TRAIN 0x1
#define HYSTART_DELAY 0x2
#define HYSTART_MIN_SAMPLES 8
#define HYSTART_DELAY_MIN 4000U
#define HYSTART_DELAY_MAX 16000U
const volatile int hystart = 1;
static const int fast_convergence = 1;
static const int beta = 717;
static const int bic_scale = 41;
static const int tcp_friendliness = 1;
static const int hystart_detect = HYSTART_ACK_TRAIN | HYSTART_DELAY;
static const int hystart_low_window = 16;
static const int hystart_ack_delta_us = 2000;

/* tcp_cubic.c counts each detector's exits in the namespace's MIB
 * (LINUX_MIB_TCPHYSTARTTRAINDETECT, _DELAYDETECT), which a struct_ops program cannot reach: here
 * the last detector that fired, for every socket of the controller. */
enum hystart_found {
	HYSTART_FOUND_NONE,
	hystart_train,
	hystart_delay,
};
enum hystart_found hystart_exit = HYSTART_FOUND_NONE;

/* cubictcp_register's derived constants. */
#define CUBE_RTT_SCALE (bic_scale * 10)
#define BETA_SCALE (8 * (BICTCP_BETA_SCALE + beta) / 3 / (BICTCP_BETA_SCALE - beta))
#define CUBE_FACTOR ((1ULL << (10 + 3 * BICTCP_HZ)) / CUBE_RTT_SCALE)

struct bictcp {
	__u32 cnt;
	__u32 last_max_cwnd;
	__u32 last_cwnd;
	__u32 last_time;
	__u32 bic_origin_point;
	__u32 bic_K;
	__u32 delay_min;
	__u32 epoch_start;
	__u32 ack_cnt;
	__u32 tcp_cwnd;
	__u16 unused;
	__u8 sample_cnt;
	__u8 found;
	__u32 round_start;
	__u32 end_seq;
	__u32 last_ack;
	__u32 curr_rtt;
};

static struct bictcp *ca_of(struct sock *sk)
{
	return (struct bictcp *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

static __u32 tcp_jiffies32(void)
{
	return (__u32)bpf_jiffies64();
}

static __u32 usecs_to_jiffies(__u32 us)
{
	return (__u32)(((__u64)us * HZ + USEC_PER_SEC - 1) / USEC_PER_SEC);
}

static int before(__u32 a, __u32 b)
{
	return (__s32)(a - b) < 0;
}
#define after(a, b) before(b, a)

static void bictcp_reset(struct bictcp *ca)
{
	/* Everything before `unused`, then `found`. */
	__builtin_memset(ca, 0, __builtin_offsetof(struct bictcp, unused));
	ca->found = 0;
}

static __u32 bictcp_clock_us(struct sock *sk)
{
	return (__u32)((struct tcp_sock *)sk)->tcp_mstamp;
}

static void bictcp_hystart_reset(struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct bictcp *ca = ca_of(sk);

	ca->round_start = ca->last_ack = bictcp_clock_us(sk);
	ca->end_seq = tp->snd_nxt;
	ca->curr_rtt = ~0U;
	ca->sample_cnt = 0;
}

SEC("struct_ops")
void BPF_PROG(cubic_init, struct sock *sk)
{
	bictcp_reset(ca_of(sk));
	if (hystart)
		bictcp_hystart_reset(sk);
}

SEC("struct_ops")
void BPF_PROG(cubic_cwnd_event, struct sock *sk, int event)
{
	struct bictcp *ca = ca_of(sk);
	__u32 now;
	__s32 delta;

	if (event != CA_EVENT_TX_START)
		return;
	/* Idle for a while: the epoch moves on, so cwnd keeps to the cubic curve. */
	now = tcp_jiffies32();
	delta = now - ((struct tcp_sock *)sk)->lsndtime;
	if (ca->epoch_start && delta > 0) {
		ca->epoch_start += delta;
		if (after(ca->epoch_start, now))
			ca->epoch_start = now;
	}
}

/* The integer cube root of tcp_cubic.c: a first estimate from a table of the top bits, then one
 * Newton-Raphson step, x = (2x + a / x^2) / 3. */
static const __u8 cbrt_table[64] = {
	0,   54,  54,  54,  118, 118, 118, 118, 123, 129, 134, 138, 143, 147, 151, 156,
	157, 161, 164, 168, 170, 173, 176, 179, 181, 185, 187, 190, 192, 194, 197, 199,
	200, 202, 204, 206, 209, 211, 213, 215, 217, 219, 221, 222, 224, 225, 227, 229,
	231, 232, 234, 236, 237, 239, 240, 242, 244, 245, 246, 248, 250, 251, 252, 254,
};

static __u32 fls64(__u64 x)
{
	__u32 n = 0;

	for (int i = 0; i < 64 && x; i++) {
		x >>= 1;
		n++;
	}
	return n;
}

static __u32 cubic_root(__u64 a)
{
	__u32 x, b, shift;

	b = fls64(a);
	if (b < 7)
		return ((__u32)cbrt_table[(__u32)a & 63] + 35) >> 6;
	b = ((b * 84) >> 8) - 1;
	shift = (a >> (b * 3));
	x = ((__u32)(((__u32)cbrt_table[shift & 63] + 10) << b)) >> 6;
	x = (2 * x + (__u32)(a / ((__u64)x * (__u64)(x - 1))));
	x = ((x * 341) >> 10);
	return x;
}

static void bictcp_update(struct bictcp *ca, __u32 cwnd, __u32 acked)
{
	__u32 delta, bic_target, max_cnt;
	__u64 offs, t;
	__u32 now = tcp_jiffies32();

	ca->ack_cnt += acked;

	if (ca->last_cwnd == cwnd && (__s32)(now - ca->last_time) <= (__s32)(HZ / 32))
		return;

	/* ca->cnt changes at most once per jiffy; a reduction zeroes epoch_start. */
	if (ca->epoch_start && now == ca->last_time)
		goto tcp_friendliness;

	ca->last_cwnd = cwnd;
	ca->last_time = now;

	if (ca->epoch_start == 0) {
		ca->epoch_start = now;
		ca->ack_cnt = acked;
		ca->tcp_cwnd = cwnd;
		if (ca->last_max_cwnd <= cwnd) {
			ca->bic_K = 0;
			ca->bic_origin_point = cwnd;
		} else {
			/* K = cbrt((W_max - cwnd) / C), t and K in 1/1024 s */
			ca->bic_K = cubic_root(CUBE_FACTOR * (ca->last_max_cwnd - cwnd));
			ca->bic_origin_point = ca->last_max_cwnd;
		}
	}

	/* t: the epoch's age plus the minimum delay, from jiffies to 1/1024 s */
	t = (__s32)(now - ca->epoch_start);
	t += usecs_to_jiffies(ca->delay_min);
	t <<= BICTCP_HZ;
	t /= HZ;

	offs = t < ca->bic_K ? ca->bic_K - t : t - ca->bic_K;
	/* C (t - K)^3 */
	delta = (CUBE_RTT_SCALE * offs * offs * offs) >> (10 + 3 * BICTCP_HZ);
	bic_target = t < ca->bic_K ? ca->bic_origin_point - delta : ca->bic_origin_point + delta;

	if (bic_target > cwnd)
		ca->cnt = cwnd / (bic_target - cwnd);
	else
		ca->cnt = 100 * cwnd;

	/* Without a previous maximum, at least 5 % per RTT. */
	if (ca->last_max_cwnd == 0 && ca->cnt > 20)
		ca->cnt = 20;

tcp_friendliness:
	if (tcp_friendliness) {
		delta = (cwnd * BETA_SCALE) >> 3;
		/* The Reno window an AIMD of the same average rate would have. */
		for (int i = 0; i < 1024 && delta && ca->ack_cnt > delta; i++) {
			ca->ack_cnt -= delta;
			ca->tcp_cwnd++;
		}
		if (ca->tcp_cwnd > cwnd) {
			delta = ca->tcp_cwnd - cwnd;
			max_cnt = cwnd / delta;
			if (ca->cnt > max_cnt)
				ca->cnt = max_cnt;
		}
	}

	/* At most one segment per two acknowledged: 1.5x per RTT. */
	if (ca->cnt < 2)
		ca->cnt = 2;
}

static int tcp_is_cwnd_limited(struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;

	if (tp->snd_cwnd < tp->snd_ssthresh)
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited);
}

SEC("struct_ops")
void BPF_PROG(cubic_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct bictcp *ca = ca_of(sk);

	if (!tcp_is_cwnd_limited(sk))
		return;
	if (tp->snd_cwnd < tp->snd_ssthresh) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	bictcp_update(ca, tp->snd_cwnd, acked);
	tcp_cong_avoid_ai(tp, ca->cnt, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(cubic_recalc_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct bictcp *ca = ca_of(sk);
	__u32 cwnd = tp->snd_cwnd;

	ca->epoch_start = 0;
	/* W_max, with fast convergence */
	if (cwnd < ca->last_max_cwnd && fast_convergence)
		ca->last_max_cwnd = (cwnd * (BICTCP_BETA_SCALE + beta)) / (2 * BICTCP_BETA_SCALE);
	else
		ca->last_max_cwnd = cwnd;
	cwnd = (cwnd * beta) / BICTCP_BETA_SCALE;
	return cwnd > 2 ? cwnd : 2;
}

SEC("struct_ops")
void BPF_PROG(cubic_state, struct sock *sk, __u8 new_state)
{
	if (new_state == TCP_CA_Loss) {
		bictcp_reset(ca_of(sk));
		bictcp_hystart_reset(sk);
	}
}

/* The TSO/GRO cushion: at most 1 ms, 4 GSO packets at the pacing rate. */
static __u32 hystart_ack_delay(struct sock *sk)
{
	__u64 rate = sk->sk_pacing_rate;
	__u64 d;

	if (!rate)
		return 0;
	d = (__u64)sk->sk_gso_max_size * 4 * USEC_PER_SEC / rate;
	return d < USEC_PER_MSEC ? d : USEC_PER_MSEC;
}

static void hystart_update(struct sock *sk, __u32 delay)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct bictcp *ca = ca_of(sk);
	__u32 threshold;

	if (after(tp->snd_una, ca->end_seq))
		bictcp_hystart_reset(sk);

	if (tp->snd_cwnd < hystart_low_window)
		return;

	if (hystart_detect & HYSTART_ACK_TRAIN) {
		__u32 now = bictcp_clock_us(sk);

		/* ACKs closer than 2 ms extend the train; it ends slow start once longer than
		 * half the minimum delay (all of it when paced). */
		if ((__s32)(now - ca->last_ack) <= hystart_ack_delta_us) {
			ca->last_ack = now;
			threshold = ca->delay_min + hystart_ack_delay(sk);
			if (sk->sk_pacing_status == SK_PACING_NONE)
				threshold >>= 1;
			if ((__s32)(now - ca->round_start) > threshold) {
				ca->found = 1;
				hystart_exit = hystart_train;
				tp->snd_ssthresh = tp->snd_cwnd;
			}
		}
	}

	if (hystart_detect & HYSTART_DELAY) {
		/* The round's least delay over its first 8 samples against delay_min + 1/8. */
		if (ca->curr_rtt > delay)
			ca->curr_rtt = delay;
		if (ca->sample_cnt < HYSTART_MIN_SAMPLES) {
			ca->sample_cnt++;
		} else {
			__u32 eta = ca->delay_min >> 3;

			if (eta < HYSTART_DELAY_MIN)
				eta = HYSTART_DELAY_MIN;
			if (eta > HYSTART_DELAY_MAX)
				eta = HYSTART_DELAY_MAX;
			if (ca->curr_rtt > ca->delay_min + eta) {
				ca->found = 1;
				hystart_exit = hystart_delay;
				tp->snd_ssthresh = tp->snd_cwnd;
			}
		}
	}
}

SEC("struct_ops")
void BPF_PROG(cubic_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct bictcp *ca = ca_of(sk);
	__u32 delay;

	if (sample->rtt_us < 0)
		return;
	/* No delay samples for a second after a reduction. */
	if (ca->epoch_start && (__s32)(tcp_jiffies32() - ca->epoch_start) < (__s32)HZ)
		return;

	delay = sample->rtt_us;
	if (delay == 0)
		delay = 1;
	if (ca->delay_min == 0 || ca->delay_min > delay)
		ca->delay_min = delay;

	if (!ca->found && tp->snd_cwnd < tp->snd_ssthresh && hystart)
		hystart_update(sk, delay);
}

SEC("struct_ops")
__u32 BPF_PROG(cubic_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops user_cubic = {
	.init = (void *)cubic_init,
	.ssthresh = (void *)cubic_recalc_ssthresh,
	.cong_avoid = (void *)cubic_cong_avoid,
	.set_state = (void *)cubic_state,
	.cwnd_event = (void *)cubic_cwnd_event,
	.pkts_acked = (void *)cubic_acked,
	.undo_cwnd = (void *)cubic_undo_cwnd,
	.name = "user_cubic",
};
