/* SPDX-License-Identifier: MIT */
/*
 * Careful Resume (draft-ietf-tsvwg-careful-resume-24, RFC 9959) (crate startlab-core,
 * cc::careful_resume, simulator name "careful-resume"): a connection reuses the capacity and
 * minimum RTT an earlier connection between the same hosts saved, in the draft's phases (§3):
 * Reconnaissance (slow start from the initial window), Unvalidated (cwnd jumps to half the saved
 * window, paced over the current RTT), Validating, then Normal, or Safe Retreat on congestion.
 *
 * The saved state is the program's own: the hash map `cr_paths`, keyed by the socket's (local,
 * remote) IPv4 address (the draft's Remote Endpoint, ports not included), written by release
 * (§3.1) and read by init (§3.2), with its expiry (bpf_ktime_get_ns) and the one-user-at-a-time
 * mark in the value. One registration keeps one map for all its sockets, in the kernel and in
 * the simulator's VM alike, so connections of flow entries with other parameters do not share it
 * (the model's path cache is the host's: shared whatever the parameters).
 *
 * Pacing during Unvalidated (§4.3.2): sk_pacing_rate = jump x mss / latest RTT and
 * sk_pacing_status = SK_PACING_NEEDED, and bpf_setsockopt(SO_MAX_PACING_RATE) to the same rate,
 * because a kernel rewrites sk_pacing_rate after every cong_avoid (tcp_update_pacing_rate, at
 * 200 % of cwnd / srtt in slow start) but never above sk_max_pacing_rate. It ends with rate 0,
 * the status as it was, and the cap lifted (~0U). The cap holds 32 bits (sol_socket_sockopt
 * takes an int): at most 2^32 - 2 bytes/s, 34 Gbit/s.
 *
 * Hooks: init = the lookup (§3.2: an expired entry is deleted, one in use is not taken); on_ack =
 * CarefulResume::on_ack (Reconnaissance's slow start and the path check, Validating's and
 * Normal's growth; called only while Linux deems the flow cwnd-limited); pkts_acked = the RTT
 * samples, Unvalidated's pacing and "check flight_size", and the ends of Validating and Safe
 * Retreat, on every ACK of data; set_state(Recovery, Loss, CWR) = congestion (§3.2, §3.5);
 * on_loss = Safe Retreat's ssthresh; release = saving or deleting the path's state (§3.1,
 * §3.5).
 *
 * Differs from the Rust model:
 * - Windows are segments x 2^16 (the saved window and the jump, startlab.h); PipeSize, the
 *   flight and the initial window are whole segments; ssthresh = PipeSize / 2 and
 *   PipeSize x beta are whole segments (Linux's snd_ssthresh), the model's real numbers.
 * - Sequence numbers are the kernel's bytes, compared modulo 2^32; segments acknowledged since
 *   the jump are bytes / mss.
 * - Times are microseconds (tcp_mstamp, sample->rtt_us), the saved RTT tp->rtt_min
 *   (tcp_min_rtt, a windowed minimum over tcp_min_rtt_wlen = 300 s) in microseconds.
 * - The saved state is looked up when init runs, after the handshake; the model's cache hands
 *   it over when the connection opens (one handshake earlier).
 * - The pacing rate is payload bytes per second (Linux's sk_pacing_rate); the model's wire bits
 *   per second.
 */

#define CR_SOL_SOCKET 1
#define CR_SO_MAX_PACING_RATE 47
#define CR_PATHS 1024 /* paths one registration remembers */

struct careful_resume_config {
	fixed_t beta;           /* ssthresh = PipeSize x beta when Safe Retreat ends (§3.5) */
	fixed_t max_jump;       /* segments: the jump is min(max_jump, saved_cwnd / 2) (§3.3) */
	fixed_t rtt_max_factor; /* the RTT may be at most this many saved RTTs (§4.2.1) */
	usec_t lifetime;        /* how long saved state may be used (§3.1) */
	fixed_t min_saved_iw;   /* a window below this many initial windows is not saved (§4.1) */
};

enum {
	CR_NORMAL = 0,
	CR_RECONNAISSANCE = 1,
	CR_UNVALIDATED = 2,
	CR_VALIDATING = 3,
	CR_SAFE_RETREAT = 4,
};

struct cr_path {
	__u32 saddr; /* network byte order, as sock_common keeps them */
	__u32 daddr;
};

struct cr_saved {
	__u64 cwnd_q16;   /* saved_cwnd, segments x 2^16 */
	__u64 expires_ns; /* bpf_ktime_get_ns */
	__u32 rtt_us;     /* saved_rtt */
	__u32 in_use;     /* a connection is using it */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CR_PATHS);
	__type(key, struct cr_path);
	__type(value, struct cr_saved);
} cr_paths SEC(".maps");

struct careful_resume_state {
	__u32 phase;
	__u32 iw;              /* segments: Reconnaissance ends once they are acknowledged */
	__u32 first_seq;       /* snd_una at init: the first byte of data */
	__u32 holds;           /* this connection took the saved state (in_use) */
	__u32 congested;
	__u32 retreated;       /* Safe Retreat was entered: the state is deleted at release */
	__u64 saved_cwnd_q16;
	__u32 saved_rtt_us;
	__u32 min_rtt_recon_us; /* 0: no sample yet */
	__u32 latest_rtt_us;    /* 0: no sample yet */
	__u32 pipe_at_jump;     /* segments: the flight at the jump */
	__u64 jump_q16;
	__u32 first_unvalidated; /* snd_nxt at the jump */
	__u32 end_unvalidated;   /* snd_nxt after the last unvalidated segment */
	__u64 unvalidated_since_us;
	__u32 paced;             /* this program set the pacing rate */
	__u32 status_before;     /* sk_pacing_status before it did */
};

static __always_inline struct cr_path cr_path_of(struct ca *ca)
{
	struct cr_path p = {
		.saddr = ca->sk->__sk_common.skc_rcv_saddr,
		.daddr = ca->sk->__sk_common.skc_daddr,
	};
	return p;
}

/* Whole segments from sequence `from` up to snd_una (0 if snd_una is not past it). */
static __always_inline __u32 cr_acked_since(struct ca *ca, __u32 from)
{
	__u32 mss = ca->tp->mss_cache ? ca->tp->mss_cache : 1;
	__u32 una = ca->tp->snd_una;

	return seq_after(una, from) ? (una - from) / mss : 0;
}

/* PipeSize (§2.4): the flight at the jump plus the segments sent after it that were
 * cumulatively acknowledged. */
static __always_inline __u32 cr_pipe_size(struct ca *ca, struct careful_resume_state *st)
{
	return st->pipe_at_jump + cr_acked_since(ca, st->first_unvalidated);
}

/* §4.3.2: the jump spread over the latest RTT, payload bytes per second; the cap keeps a kernel
 * from pacing faster (tcp_update_pacing_rate). */
static __always_inline void cr_pace(struct ca *ca, struct careful_resume_state *st)
{
	__u64 rate;
	int cap;

	if (!st->latest_rtt_us)
		return;
	rate = (st->jump_q16 * ca->tp->mss_cache >> FRAC_BITS) * USEC_PER_SEC / st->latest_rtt_us;
	if (rate < 1)
		rate = 1;
	if (rate > 0xfffffffeULL)
		rate = 0xfffffffeULL;
	if (!st->paced) {
		st->paced = 1;
		st->status_before = ca->sk->sk_pacing_status;
	}
	cap = (int)(__u32)rate;
	ca->sk->sk_pacing_status = SK_PACING_NEEDED;
	ca->sk->sk_pacing_rate = rate;
	bpf_setsockopt(ca->sk, CR_SOL_SOCKET, CR_SO_MAX_PACING_RATE, &cap, sizeof(cap));
}

static __always_inline void cr_pacing_off(struct ca *ca, struct careful_resume_state *st)
{
	int unlimited = ~0;

	if (!st->paced)
		return;
	st->paced = 0;
	ca->sk->sk_pacing_rate = 0;
	ca->sk->sk_pacing_status = st->status_before;
	bpf_setsockopt(ca->sk, CR_SOL_SOCKET, CR_SO_MAX_PACING_RATE, &unlimited, sizeof(unlimited));
}

/* §3.2: the saved state of this path, if it is within its lifetime (an expired one is deleted)
 * and no other connection uses it. */
static __always_inline void careful_resume_init(struct ca *ca, const volatile struct careful_resume_config *cfg,
						struct careful_resume_state *st)
{
	struct cr_path key = cr_path_of(ca);
	struct cr_saved *saved;

	st->iw = ca->tp->snd_cwnd;
	st->first_seq = ca->tp->snd_una;
	saved = bpf_map_lookup_elem(&cr_paths, &key);
	if (!saved)
		return;
	if (bpf_ktime_get_ns() >= saved->expires_ns) {
		bpf_map_delete_elem(&cr_paths, &key);
		return;
	}
	if (saved->in_use)
		return;
	saved->in_use = 1;
	st->holds = 1;
	st->saved_cwnd_q16 = saved->cwnd_q16;
	st->saved_rtt_us = saved->rtt_us;
	st->phase = CR_RECONNAISSANCE;
}

/* §3.2 Reconnaissance -> Unvalidated: the initial window acknowledged, no congestion (checked by
 * the caller), the window full (on_ack runs only then), and saved_rtt / 2 < min RTT <=
 * rtt_max_factor x saved_rtt. */
static __always_inline void cr_confirm_path(struct ca *ca, const volatile struct careful_resume_config *cfg,
					    struct careful_resume_state *st)
{
	__u64 jump = st->saved_cwnd_q16 / 2;
	__u64 max_jump = (__u64)cfg->max_jump >> (32 - FRAC_BITS);
	__u32 rtt = st->min_rtt_recon_us;

	if (cr_acked_since(ca, st->first_seq) < st->iw || !rtt)
		return;
	if (jump > max_jump)
		jump = max_jump;
	if (!((__u64)rtt * 2 > st->saved_rtt_us &&
	      rtt <= fixed_mul(st->saved_rtt_us, cfg->rtt_max_factor)) ||
	    jump <= cwnd_q16(ca)) {
		st->phase = CR_NORMAL;
		return;
	}
	/* §3.3 on entry: PipeSize = the flight; cwnd = jump; the next segment is the first
	 * unvalidated one; paced over the current RTT. */
	st->pipe_at_jump = in_flight(ca);
	st->jump_q16 = jump;
	cwnd_set_q16(ca, jump);
	st->first_unvalidated = ca->tp->snd_nxt;
	st->unvalidated_since_us = ca->now_us;
	st->phase = CR_UNVALIDATED;
	cr_pace(ca, st);
}

/* §3.3 "Check flight_size": when all unvalidated packets are sent, the first is acknowledged, or
 * an RTT has passed. */
static __always_inline void cr_check_flight(struct ca *ca, struct careful_resume_state *st)
{
	__u32 flight = in_flight(ca), pipe;
	bool all_sent = flight >= ca->tp->snd_cwnd;
	bool first_acked = seq_after(ca->tp->snd_una, st->first_unvalidated);
	bool rtt_passed = st->latest_rtt_us &&
			  ca->now_us - st->unvalidated_since_us > st->latest_rtt_us;

	if (!(all_sent || first_acked || rtt_passed))
		return;
	cr_pacing_off(ca, st);
	pipe = cr_pipe_size(ca, st);
	if (flight < st->iw || flight <= pipe) {
		/* Rate-limited: the jump was not used; what was validated stays. */
		cwnd_set_q16(ca, (__u64)(pipe > st->iw ? pipe : st->iw) << FRAC_BITS);
		st->phase = CR_NORMAL;
	} else {
		cwnd_set_q16(ca, (__u64)flight << FRAC_BITS);
		st->end_unvalidated = ca->tp->snd_nxt;
		st->phase = CR_VALIDATING;
	}
}

static __always_inline __u32 careful_resume_on_ack(struct ca *ca, const volatile struct careful_resume_config *cfg,
						   struct careful_resume_state *st, __u32 acked)
{
	__u32 left;

	switch (st->phase) {
	case CR_RECONNAISSANCE:
		left = grow_to_ssthresh(ca, acked, acked);
		if (!st->congested)
			cr_confirm_path(ca, cfg, st);
		return left;
	case CR_UNVALIDATED: /* §3.3: cwnd does not grow */
	case CR_SAFE_RETREAT:
		return 0;
	default:
		return grow_to_ssthresh(ca, acked, acked);
	}
}

static __always_inline void careful_resume_pkts_acked(struct ca *ca, const volatile struct careful_resume_config *cfg,
						      struct careful_resume_state *st,
						      const struct ack_sample *sample)
{
	__u32 pipe;

	if (sample->rtt_us >= 0) {
		st->latest_rtt_us = sample->rtt_us;
		if (st->phase == CR_RECONNAISSANCE &&
		    (!st->min_rtt_recon_us || (__u32)sample->rtt_us < st->min_rtt_recon_us))
			st->min_rtt_recon_us = sample->rtt_us;
	}
	switch (st->phase) {
	case CR_UNVALIDATED:
		cr_pace(ca, st);
		cr_check_flight(ca, st);
		break;
	case CR_VALIDATING:
		/* The ACK of the last unvalidated segment ends Validating (§3.4) ... */
		if (!seq_after(st->end_unvalidated, ca->tp->snd_una))
			st->phase = CR_NORMAL;
		break;
	case CR_SAFE_RETREAT:
		/* ... and Safe Retreat, with ssthresh = PipeSize x beta (§3.5). */
		if (!seq_after(st->end_unvalidated, ca->tp->snd_una)) {
			pipe = (__u32)fixed_mul(cr_pipe_size(ca, st), cfg->beta);
			ca->tp->snd_ssthresh = pipe > 2 ? pipe : 2;
			st->phase = CR_NORMAL;
		}
		break;
	default:
		break;
	}
}

static __always_inline void careful_resume_set_state(struct ca *ca, const volatile struct careful_resume_config *cfg,
						     struct careful_resume_state *st, __u8 new_state)
{
	if (new_state != TCP_CA_Recovery && new_state != TCP_CA_Loss && new_state != TCP_CA_CWR)
		return;
	st->congested = 1;
	switch (st->phase) {
	case CR_RECONNAISSANCE:
		/* §3.2: the controller reacts; Careful Resume ends. */
		st->phase = CR_NORMAL;
		break;
	case CR_UNVALIDATED:
		st->end_unvalidated = ca->tp->snd_nxt;
		/* fallthrough */
	case CR_VALIDATING:
		cr_pacing_off(ca, st);
		st->retreated = 1;
		st->phase = CR_SAFE_RETREAT;
		break;
	default:
		break;
	}
}

/* §3.5 on entry: ssthresh = PipeSize / 2, at least 2 segments (the stack's recovery reduces
 * cwnd to it). */
static __always_inline __u32 careful_resume_on_loss(struct ca *ca, const volatile struct careful_resume_config *cfg,
						    struct careful_resume_state *st, __u32 ssthresh)
{
	__u32 half;

	if (st->phase != CR_UNVALIDATED && st->phase != CR_VALIDATING &&
	    st->phase != CR_SAFE_RETREAT)
		return ssthresh;
	half = cr_pipe_size(ca, st) / 2;
	return half > 2 ? half : 2;
}

/* §3.1 when the connection closes: the state it used is free again; then it is deleted (Safe
 * Retreat, §3.5), or replaced by what this connection saw (cwnd, or half of it while still in
 * slow start; not below min_saved_iw initial windows; nothing from Unvalidated or Validating,
 * §4.6). No bpf_setsockopt here: Linux does not give it to release. */
static __always_inline void careful_resume_release(struct ca *ca, const volatile struct careful_resume_config *cfg,
						   struct careful_resume_state *st)
{
	struct cr_path key = cr_path_of(ca);
	struct cr_saved *held, saved = {};
	__u64 cwnd = cwnd_q16(ca);
	__u32 min_rtt = ca->tp->rtt_min.s[0].v;

	if (st->holds) {
		held = bpf_map_lookup_elem(&cr_paths, &key);
		if (held)
			held->in_use = 0;
	}
	if (st->retreated) {
		bpf_map_delete_elem(&cr_paths, &key);
		return;
	}
	if (st->phase == CR_UNVALIDATED || st->phase == CR_VALIDATING)
		return;
	if (in_slow_start(ca))
		cwnd /= 2;
	/* ~0U: no RTT sample (minmax_reset's value). */
	if (min_rtt == ~0U || cwnd < fixed_mul((__u64)st->iw << FRAC_BITS, cfg->min_saved_iw))
		return;
	saved.cwnd_q16 = cwnd;
	saved.rtt_us = min_rtt;
	saved.expires_ns = bpf_ktime_get_ns() + cfg->lifetime * 1000;
	bpf_map_update_elem(&cr_paths, &key, &saved, BPF_ANY);
}

STARTUP_OPS(careful_resume) = {
	.init = careful_resume_init,
	.on_ack = careful_resume_on_ack,
	.on_loss = careful_resume_on_loss,
	.pkts_acked = careful_resume_pkts_acked,
	.set_state = careful_resume_set_state,
	.release = careful_resume_release,
};
