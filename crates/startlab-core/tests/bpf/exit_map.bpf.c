/* SPDX-License-Identifier: MIT */
/*
 * A program that says why it ended its slow start in a map, as programs written for the
 * kernel often keep their statistics (tests/bpf_user.rs, test_kernel.py): Reno from the
 * kernel's functions, whose slow start ends when cwnd reaches `exit_window`; at that exit it
 * records WHY_WINDOW in the `why` member of key 0 of the array `stats` and counts the exit in
 * the hash map `exits` (key 0). `cc_params.exit_reason_map = "stats.why"` names the exit
 * `why_window` in both worlds; `"exits"` names it `exit_map:<count>`.
 */
#include "test_cc.h"

#define BPF_MAP_TYPE_HASH 1
#define BPF_MAP_TYPE_ARRAY 2
#define BPF_MAP_TYPE_PERCPU_ARRAY 6

struct sock {
} __attribute__((preserve_access_index));

struct tcp_sock {
	__u32 snd_cwnd;
	__u32 snd_ssthresh;
} __attribute__((preserve_access_index));

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked)
	__attribute__((section(".ksyms")));

enum exit_why {
	why_none,
	why_window,
};

struct exit_stats {
	__u64 acks;
	struct {
		__u32 at_window;
	} last;
	enum exit_why why;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct exit_stats);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} exits SEC(".maps");

/* Not a place for a reason: one value per CPU in the kernel. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} per_cpu SEC(".maps");

const volatile __u32 exit_window = 100;

SEC("struct_ops")
void BPF_PROG(exit_map_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u32 zero = 0;
	struct exit_stats *s = bpf_map_lookup_elem(&stats, &zero);
	__u64 one = 1, *n;

	tcp_reno_cong_avoid(sk, ack, acked);
	if (s)
		s->acks++;
	if (tp->snd_cwnd >= exit_window && tp->snd_cwnd < tp->snd_ssthresh) {
		tp->snd_ssthresh = tp->snd_cwnd;
		if (s) {
			s->why = why_window;
			s->last.at_window = tp->snd_cwnd;
		}
		n = bpf_map_lookup_elem(&exits, &zero);
		if (n)
			(*n)++;
		else
			bpf_map_update_elem(&exits, &zero, &one, 0);
		n = bpf_map_lookup_elem(&per_cpu, &zero);
		if (n)
			(*n)++;
	}
}

RENO_LOSS_HOOKS(exit_map)

SEC(".struct_ops.link")
struct tcp_congestion_ops exit_map = {
	.cong_avoid = (void *)exit_map_cong_avoid,
	.ssthresh = (void *)exit_map_ssthresh,
	.undo_cwnd = (void *)exit_map_undo_cwnd,
	.name = "exit_map",
};
