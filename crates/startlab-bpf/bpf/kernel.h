/* SPDX-License-Identifier: MIT */
/*
 * The kernel types the controllers read and write: only the fields they use, marked
 * preserve_access_index so that libbpf relocates every access against the running kernel's BTF
 * (CO-RE). Member names are the kernel's (include/linux/tcp.h, include/net/sock.h,
 * include/net/inet_connection_sock.h, include/net/tcp.h); their order here does not matter.
 */
#ifndef STARTLAB_KERNEL_H
#define STARTLAB_KERNEL_H

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
typedef _Bool bool;
#define true 1
#define false 0

enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_RINGBUF = 27,
	BPF_MAP_TYPE_SK_STORAGE = 24,
};

enum {
	BPF_F_NO_PREALLOC = 1,
	BPF_SK_STORAGE_GET_F_CREATE = 1,
	BPF_ANY = 0, /* bpf_map_update_elem: create or replace */
};

#define __ksym __attribute__((section(".ksyms")))
#define __PRESERVE __attribute__((preserve_access_index))

struct sock_common {
	__be32 skc_daddr;
	__be32 skc_rcv_saddr;
	__be16 skc_dport;
	__u16 skc_num;
} __PRESERVE;

struct sock {
	struct sock_common __sk_common;
	unsigned long sk_pacing_rate;
	unsigned long sk_max_pacing_rate;
	__u32 sk_pacing_status;
} __PRESERVE;

struct inet_connection_sock {
	__u8 icsk_ca_state: 5;
	struct {
		__u8 pending; /* enum inet_csk_ack_state_t: ICSK_ACK_TIMER, ICSK_ACK_NOW, ... */
	} icsk_ack;
	__u64 icsk_ca_priv[13];
} __PRESERVE;

struct minmax_sample {
	__u32 t;
	__u32 v;
} __PRESERVE;

struct minmax {
	struct minmax_sample s[3];
} __PRESERVE;

/* include/linux/tcp.h: the options the peer sent (sack_ok: tcp_is_sack). */
struct tcp_options_received {
	__u16 sack_ok: 3;
} __PRESERVE;

struct tcp_sock {
	__u32 snd_cwnd;
	__u32 snd_cwnd_cnt;
	__u32 snd_cwnd_clamp;
	__u32 snd_cwnd_stamp;
	__u32 snd_ssthresh;
	__u32 prior_cwnd;
	__u32 mss_cache;
	__u32 srtt_us;
	__u32 mdev_us;
	struct minmax rtt_min;
	__u32 snd_una;
	__u32 snd_nxt;
	__u32 packets_out;
	__u32 sacked_out;
	__u32 lost_out;
	__u32 retrans_out;
	__u32 max_packets_out;
	__u32 delivered;
	__u32 lost;
	__u32 app_limited;
	__u64 tcp_mstamp;
	__u64 tcp_clock_cache;
	__u64 tcp_wstamp_ns;    /* earliest departure time of the next segment (pacing) */
	__u64 delivered_mstamp; /* when the last delivery was acknowledged, us */
	__u32 total_retrans;
	__u32 undo_marker; /* snd_una at the start of a reduction that may still be undone; 0: none */
	__u8 is_cwnd_limited: 1;
	struct tcp_options_received rx_opt;
	__u32 snd_wnd; /* the peer's advertised window, bytes */
	__u8 ecn_flags;     /* TCP_ECN_OK, TCP_ECN_QUEUE_CWR, TCP_ECN_DEMAND_CWR (tcp_ecn.h) */
	__u32 delivered_ce; /* segments delivered with an ECN echo (tcp_count_delivered) */
	__u32 rcv_nxt;      /* what the receiver expects next */
	__u32 lsndtime;     /* tcp_jiffies32 at the last data transmission (tcp_event_data_sent) */
} __PRESERVE;

/* include/net/tcp_ecn.h (6.18: TCP_ECN_OK is spelt TCP_ECN_MODE_RFC3168) */
#define TCP_ECN_OK 0x1
#define TCP_ECN_QUEUE_CWR 0x2
#define TCP_ECN_DEMAND_CWR 0x4

/* include/net/inet_connection_sock.h: enum inet_csk_ack_state_t */
#define ICSK_ACK_TIMER 0x2
#define ICSK_ACK_NOW 0x10

/* include/net/tcp.h: enum tcp_ca_ack_event_flags, the argument of in_ack_event */
#define CA_ACK_SLOWPATH 0x1
#define CA_ACK_WIN_UPDATE 0x2
#define CA_ACK_ECE 0x4

/* include/net/tcp.h: tcp_congestion_ops.flags */
#define TCP_CONG_NEEDS_ECN 0x2

/* include/net/inet_connection_sock.h: enum tcp_ca_state */
enum {
	TCP_CA_Open = 0,
	TCP_CA_Disorder = 1,
	TCP_CA_CWR = 2,
	TCP_CA_Recovery = 3,
	TCP_CA_Loss = 4,
};

/* include/net/tcp.h: enum tcp_ca_event */
enum tcp_ca_event {
	CA_EVENT_TX_START = 0,
	CA_EVENT_CWND_RESTART = 1,
	CA_EVENT_COMPLETE_CWR = 2,
	CA_EVENT_LOSS = 3,
	CA_EVENT_ECN_NO_CE = 4,
	CA_EVENT_ECN_IS_CE = 5,
};

/* include/net/sock.h: enum sk_pacing */
enum {
	SK_PACING_NONE = 0,
	SK_PACING_NEEDED = 1,
	SK_PACING_FQ = 2,
};

#define TCP_INFINITE_SSTHRESH 0x7fffffff

/* include/net/tcp.h: struct ack_sample, the argument of pkts_acked */
struct ack_sample {
	__u32 pkts_acked;
	__s32 rtt_us;
	__u32 in_flight;
} __PRESERVE;

/* include/net/tcp.h: struct rate_sample, the argument of cong_control (tcp_rate.c) */
struct rate_sample {
	__u64 prior_mstamp;
	__u32 prior_delivered;
	__u32 prior_delivered_ce;
	__s32 delivered;    /* -1: no timing information */
	__s32 delivered_ce;
	long interval_us;   /* -1: no valid rate */
	__u32 snd_interval_us;
	__u32 rcv_interval_us;
	long rtt_us;        /* -1: no sample */
	int losses;
	__u32 acked_sacked;
	__u32 prior_in_flight;
	__u32 last_end_seq;
	bool is_app_limited;
	bool is_retrans;
	bool is_ack_delayed;
} __PRESERVE;

struct tcp_congestion_ops {
	__u32 (*ssthresh)(struct sock *sk);
	void (*cong_avoid)(struct sock *sk, __u32 ack, __u32 acked);
	void (*set_state)(struct sock *sk, __u8 new_state);
	void (*cwnd_event)(struct sock *sk, enum tcp_ca_event ev);
	void (*in_ack_event)(struct sock *sk, __u32 flags);
	void (*pkts_acked)(struct sock *sk, const struct ack_sample *sample);
	__u32 (*min_tso_segs)(struct sock *sk);
	void (*cong_control)(struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs);
	__u32 (*undo_cwnd)(struct sock *sk);
	__u32 (*sndbuf_expand)(struct sock *sk);
	char name[16];
	__u32 flags;
	void (*init)(struct sock *sk);
	void (*release)(struct sock *sk);
} __PRESERVE;

/* Kernel functions callable from a TCP congestion control (net/ipv4/bpf_tcp_ca.c). */
extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;
extern void tcp_cong_avoid_ai(struct tcp_sock *tp, __u32 w, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

#endif
