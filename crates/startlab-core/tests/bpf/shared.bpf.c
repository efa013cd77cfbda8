/* SPDX-License-Identifier: MIT */
/*
 * Global data and maps shared by a controller's connections, as the kernel shares them
 * (tests/bpf_user.rs). init numbers its connection from a global counter, counts it in an
 * array map and records it in a four-entry hash map, checking the map helpers' answers on the
 * way; it sets snd_cwnd to `base` + its number, plus 20 when the hash map was full (the fifth
 * connection), plus 500 if any answer was not the kernel's. cong_avoid leaves cwnd alone.
 */
#include "test_cc.h"

#define BPF_MAP_TYPE_HASH 1
#define BPF_MAP_TYPE_ARRAY 2
#define BPF_ANY 0
#define BPF_NOEXIST 1
#define BPF_EXIST 2
#define ENOENT 2
#define E2BIG 7
#define EEXIST 17
#define EINVAL 22

struct sock {
} __attribute__((preserve_access_index));

struct tcp_sock {
	__u32 snd_cwnd;
} __attribute__((preserve_access_index));

/* -DARRAY_KEY=__u64, -DHASH_TYPE=13 (a hash of maps) and -DHASH_ENTRIES=N make maps the
 * simulator refuses; -DARRAY_TYPE=6 and -DHASH_TYPE=5 make them per-CPU, -DHASH_TYPE=9 an LRU
 * hash map (tests/python/test_bpf.py). */
#ifndef ARRAY_KEY
#define ARRAY_KEY __u32
#endif
#ifndef ARRAY_TYPE
#define ARRAY_TYPE BPF_MAP_TYPE_ARRAY
#endif
#ifndef HASH_TYPE
#define HASH_TYPE BPF_MAP_TYPE_HASH
#endif
#ifndef HASH_ENTRIES
#define HASH_ENTRIES 4
#endif

struct {
	__uint(type, ARRAY_TYPE);
	__uint(max_entries, 2);
	__type(key, ARRAY_KEY);
	__type(value, __u64);
} counts SEC(".maps");

struct {
	__uint(type, HASH_TYPE);
	__uint(max_entries, HASH_ENTRIES);
	__type(key, __u32);
	__type(value, __u64);
} numbers SEC(".maps");

__u32 started = 0;
/* The first connection's window (cc_params.base). */
const volatile __u32 base = 10;

SEC("struct_ops")
void BPF_PROG(shared_init, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u32 n = started++;
	__u32 zero = 0, two = 2, missing = 1000;
	__u64 value = n * 100ULL, *v;
	__u32 cwnd = base + n;
	long r;

	/* The array: every index exists, counted by each connection; none past the end. */
	v = bpf_map_lookup_elem(&counts, &zero);
	if (!v || *v != n)
		cwnd += 500;
	else
		*v += 1;
	if (bpf_map_lookup_elem(&counts, &two))
		cwnd += 500;
	if (bpf_map_update_elem(&counts, &two, &value, BPF_ANY) != -E2BIG)
		cwnd += 500;
	if (bpf_map_update_elem(&counts, &zero, &value, BPF_NOEXIST) != -EEXIST)
		cwnd += 500;
	if (bpf_map_delete_elem(&counts, &zero) != -EINVAL)
		cwnd += 500;

	/* The hash map: this connection's number, once; the map holds four. */
	r = bpf_map_update_elem(&numbers, &n, &value, BPF_NOEXIST);
	if (r == -E2BIG) {
		cwnd += 20;
	} else if (r != 0) {
		cwnd += 500;
	} else {
		v = bpf_map_lookup_elem(&numbers, &n);
		if (!v || *v != value)
			cwnd += 500;
		if (bpf_map_update_elem(&numbers, &n, &value, BPF_NOEXIST) != -EEXIST)
			cwnd += 500;
		if (bpf_map_update_elem(&numbers, &missing, &value, BPF_EXIST) != -ENOENT)
			cwnd += 500;
	}
	if (bpf_map_lookup_elem(&numbers, &missing) || bpf_map_delete_elem(&numbers, &missing) != -ENOENT)
		cwnd += 500;
	/* The previous connection's entry is there. */
	if (n > 0 && n < 5) {
		__u32 previous = n - 1;
		v = bpf_map_lookup_elem(&numbers, &previous);
		if (!v || *v != previous * 100ULL)
			cwnd += 500;
	}
	tp->snd_cwnd = cwnd;
}

SEC("struct_ops")
void BPF_PROG(shared_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
}

RENO_LOSS_HOOKS(shared)

SEC(".struct_ops.link")
struct tcp_congestion_ops shared = {
	.init = (void *)shared_init,
	.ssthresh = (void *)shared_ssthresh,
	.cong_avoid = (void *)shared_cong_avoid,
	.undo_cwnd = (void *)shared_undo_cwnd,
	.name = "shared",
};
