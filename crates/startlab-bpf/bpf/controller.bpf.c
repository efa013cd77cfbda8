/* SPDX-License-Identifier: MIT */
/*
 * startlab's congestion controls as one BPF struct_ops program.
 *
 * Each algorithm lives in its own file under cc/ (congestion control) or startup/ (slow-start
 * algorithms); this file composes them the way the simulator composes `cc` and `startup`
 * (crate startlab-core, cc::WithStartup): while cwnd < ssthresh the start-up algorithm takes the
 * ACK and hands what it did not use to congestion avoidance, as Linux's tcp_slow_start returns
 * the leftover `acked`. Which algorithms run, and with which parameters, is `config` in .rodata:
 * the loader (crates/startlab-bpf/src/load.rs) writes it before loading, the verifier sees it
 * as constant and drops every branch of the algorithms not chosen. One load is one registered
 * controller with a name of its own, so flows with different parameters run side by side.
 *
 * Per connection, the state lives in socket storage (icsk_ca_priv has only 104 bytes). Each
 * hook reports the phase when it changes and the first slow-start exit with the simulator's
 * reason names, through the ring buffer `events`.
 */
#include "startlab.h"

char _license[] SEC("license") = "GPL";

#include "algorithms.h"

/* The congestion controls; enumerator names are the simulator's (`-` written `_`). */
#define CC_ENUM(n) startlab_config__cc__##n,
enum startlab_config__cc { CC_LIST(CC_ENUM) MODEL_LIST(CC_ENUM) };

/* The slow-start algorithms; `default` is the congestion control's own. */
#define STARTUP_ENUM(n) startlab_config__startup__##n,
enum startlab_config__startup {
	startlab_config__startup__default,
	STARTUP_LIST(STARTUP_ENUM)
};

/* tcp.pacing: "none", "linux" and "window" are Linux's internal pacing (the last two at the
 * namespace's ratios, set by the testbed); "initial_spreading" paces the initial window over the
 * handshake's RTT (Sallantin et al. 2013 §III.C). */
enum startlab_config__pacing {
	startlab_config__pacing__none,
	startlab_config__pacing__linux,
	startlab_config__pacing__window,
	startlab_config__pacing__initial_spreading,
};

#define CONFIG_MEMBER(n) struct n##_config n;
struct startlab_config {
	enum startlab_config__cc cc;
	enum startlab_config__startup startup;
	enum startlab_config__pacing pacing;
	__u32 initial_ssthresh; /* segments; 0: Linux's (infinite) */
	__u32 initial_window;   /* segments; 0: the route's (the simulator sets its own) */
	CC_LIST(CONFIG_MEMBER)
	MODEL_LIST(CONFIG_MEMBER)
	STARTUP_LIST(CONFIG_MEMBER)
};

const volatile struct startlab_config config = {};

#define STATE_MEMBER(n) struct n##_state n;
struct flow {
	struct flow_common c;
	union {
		CC_LIST(STATE_MEMBER)
		MODEL_LIST(STATE_MEMBER)
	} cc;
	union {
		STARTUP_LIST(STATE_MEMBER)
	} ss;
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct flow);
} flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} events SEC(".maps");

/* Events the ring buffer had no room for. */
__u64 lost_events = 0;

/* Never written: it puts struct event into the object's BTF, where the loader checks the layout
 * it decodes (crates/startlab-bpf/tests/object.rs). */
struct event event_layout = {};

#define CC_IS(n) (config.cc == startlab_config__cc__##n)
#define STARTUP_IS(n) (config.startup == startlab_config__startup__##n)
#define FLOW(ca) ((struct flow *)(ca)->f)

static __always_inline bool ca_begin(struct ca *ca, struct sock *sk, bool create)
{
	ca->sk = sk;
	ca->tp = (struct tcp_sock *)sk;
	ca->f = bpf_sk_storage_get(&flows, sk, 0, create ? BPF_SK_STORAGE_GET_F_CREATE : 0);
	ca->now_us = ca->tp->tcp_mstamp;
	return ca->f != 0;
}

/* ---- dispatch: the chosen algorithm's hook, or what Linux does where a tcp_congestion_ops
 * leaves it NULL (algorithms.h); the verifier drops the algorithms not chosen ---------------- */

/* Called where an algorithm's table lacks a hook it must have: the object then does not compile,
 * as tcp_validate_congestion_control refuses a controller without ssthresh or cong_avoid. */
extern void startlab_required_hook_missing(void)
	__attribute__((error("an algorithm's table lacks a required hook (see algorithms.h)")));

#define CC_CALL(n, hook, otherwise, ...)                                                     \
	if (CC_IS(n))                                                                        \
		return n##_ops.hook ? n##_ops.hook(ca, &config.n, &FLOW(ca)->cc.n, ##__VA_ARGS__) \
				    : otherwise;
#define STARTUP_CALL(n, hook, otherwise, ...)                                                \
	if (STARTUP_IS(n))                                                                   \
		return n##_ops.hook ? n##_ops.hook(ca, &config.n, &FLOW(ca)->ss.n, ##__VA_ARGS__) \
				    : otherwise;
#define REQUIRED(n, hook)          \
	if (!n##_ops.hook)         \
		startlab_required_hook_missing();
#define NOTHING ((void)0)

#define CC_INIT(n) CC_CALL(n, init, NOTHING)
static __always_inline void cc_init(struct ca *ca) { CC_LIST(CC_INIT) }
#define CC_SSTHRESH(n) REQUIRED(n, ssthresh) CC_CALL(n, ssthresh, 0)
static __always_inline __u32 cc_ssthresh(struct ca *ca) { CC_LIST(CC_SSTHRESH) return tcp_reno_ssthresh(ca->sk); }
#define CC_CONG_AVOID(n) REQUIRED(n, cong_avoid) CC_CALL(n, cong_avoid, NOTHING, acked)
static __always_inline void cc_cong_avoid(struct ca *ca, __u32 acked) { CC_LIST(CC_CONG_AVOID) }
#define CC_PKTS_ACKED(n) CC_CALL(n, pkts_acked, NOTHING, s)
static __always_inline void cc_pkts_acked(struct ca *ca, const struct ack_sample *s) { CC_LIST(CC_PKTS_ACKED) }
#define CC_SET_STATE(n) CC_CALL(n, set_state, NOTHING, new_state)
static __always_inline void cc_set_state(struct ca *ca, __u8 new_state) { CC_LIST(CC_SET_STATE) }
#define CC_CWND_EVENT(n) CC_CALL(n, cwnd_event, NOTHING, ev)
static __always_inline void cc_cwnd_event(struct ca *ca, enum tcp_ca_event ev) { CC_LIST(CC_CWND_EVENT) }
#define CC_IN_ACK_EVENT(n) CC_CALL(n, in_ack_event, NOTHING, flags)
static __always_inline void cc_in_ack_event(struct ca *ca, __u32 flags) { CC_LIST(CC_IN_ACK_EVENT) }
#define CC_UNDO(n) CC_CALL(n, undo_cwnd, tcp_reno_undo_cwnd(ca->sk))
static __always_inline __u32 cc_undo_cwnd(struct ca *ca) { CC_LIST(CC_UNDO) return tcp_reno_undo_cwnd(ca->sk); }
#define CC_IN_STARTUP(n) CC_CALL(n, in_startup, in_slow_start(ca))
static __always_inline bool cc_in_startup(struct ca *ca) { CC_LIST(CC_IN_STARTUP) return in_slow_start(ca); }

#define MODEL_INIT(n) CC_CALL(n, init, NOTHING)
static __always_inline void model_init(struct ca *ca) { MODEL_LIST(MODEL_INIT) }
#define MODEL_SSTHRESH(n) REQUIRED(n, ssthresh) CC_CALL(n, ssthresh, 0)
static __always_inline __u32 model_ssthresh(struct ca *ca) { MODEL_LIST(MODEL_SSTHRESH) return ca->tp->snd_ssthresh; }
#define MODEL_CONG_CONTROL(n) REQUIRED(n, cong_control) CC_CALL(n, cong_control, NOTHING, rs)
static __always_inline void model_cong_control(struct ca *ca, const struct rate_sample *rs) { MODEL_LIST(MODEL_CONG_CONTROL) }
#define MODEL_SET_STATE(n) CC_CALL(n, set_state, NOTHING, new_state)
static __always_inline void model_set_state(struct ca *ca, __u8 new_state) { MODEL_LIST(MODEL_SET_STATE) }
#define MODEL_CWND_EVENT(n) CC_CALL(n, cwnd_event, NOTHING, ev)
static __always_inline void model_cwnd_event(struct ca *ca, enum tcp_ca_event ev) { MODEL_LIST(MODEL_CWND_EVENT) }
#define MODEL_UNDO(n) CC_CALL(n, undo_cwnd, tcp_reno_undo_cwnd(ca->sk))
static __always_inline __u32 model_undo_cwnd(struct ca *ca) { MODEL_LIST(MODEL_UNDO) return tcp_reno_undo_cwnd(ca->sk); }
#define MODEL_IN_STARTUP(n) CC_CALL(n, in_startup, in_slow_start(ca))
static __always_inline bool model_in_startup(struct ca *ca) { MODEL_LIST(MODEL_IN_STARTUP) return in_slow_start(ca); }

#define SS_INIT(n) STARTUP_CALL(n, init, NOTHING)
static __always_inline void startup_init(struct ca *ca) { STARTUP_LIST(SS_INIT) }
#define SS_ON_ACK(n) REQUIRED(n, on_ack) STARTUP_CALL(n, on_ack, 0, acked)
static __always_inline __u32 startup_on_ack(struct ca *ca, __u32 acked) { STARTUP_LIST(SS_ON_ACK) return acked; }
#define SS_ON_LOSS(n) STARTUP_CALL(n, on_loss, ssthresh, ssthresh)
static __always_inline __u32 startup_on_loss(struct ca *ca, __u32 ssthresh) { STARTUP_LIST(SS_ON_LOSS) return ssthresh; }
#define SS_PKTS_ACKED(n) STARTUP_CALL(n, pkts_acked, NOTHING, s)
static __always_inline void startup_pkts_acked(struct ca *ca, const struct ack_sample *s) { STARTUP_LIST(SS_PKTS_ACKED) }
#define SS_SET_STATE(n) STARTUP_CALL(n, set_state, NOTHING, new_state)
static __always_inline void startup_set_state(struct ca *ca, __u8 new_state) { STARTUP_LIST(SS_SET_STATE) }
#define SS_CWND_EVENT(n) STARTUP_CALL(n, cwnd_event, NOTHING, ev)
static __always_inline void startup_cwnd_event(struct ca *ca, enum tcp_ca_event ev) { STARTUP_LIST(SS_CWND_EVENT) }
#define SS_BEFORE_CONG_AVOID(n) STARTUP_CALL(n, before_cong_avoid, NOTHING, ack, acked)
static __always_inline void startup_before_cong_avoid(struct ca *ca, __u32 ack, __u32 acked) { STARTUP_LIST(SS_BEFORE_CONG_AVOID) }
#define SS_BEFORE_SSTHRESH(n) STARTUP_CALL(n, before_ssthresh, NOTHING)
static __always_inline void startup_before_ssthresh(struct ca *ca) { STARTUP_LIST(SS_BEFORE_SSTHRESH) }
#define SS_RELEASE(n) STARTUP_CALL(n, release, NOTHING)
static __always_inline void startup_release(struct ca *ca) { STARTUP_LIST(SS_RELEASE) }
#define SS_IN_STARTUP(n) STARTUP_CALL(n, in_startup, in_slow_start(ca))
static __always_inline bool startup_in_startup(struct ca *ca) { STARTUP_LIST(SS_IN_STARTUP) return cc_in_startup(ca); }

/* ---- reporting ---------------------------------------------------------------------------- */

static __always_inline void emit(struct ca *ca, __u32 kind, __u32 phase, const char *reason,
				 __u64 cwnd)
{
	struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		__sync_fetch_and_add(&lost_events, 1);
		return;
	}
	e->time_ns = bpf_ktime_get_ns();
	e->saddr = ca->sk->__sk_common.skc_rcv_saddr;
	e->daddr = ca->sk->__sk_common.skc_daddr;
	e->sport = ca->sk->__sk_common.skc_num;
	e->dport = __builtin_bswap16(ca->sk->__sk_common.skc_dport);
	e->kind = kind;
	e->phase = phase;
	e->ssthresh = ca->tp->snd_ssthresh;
	e->cwnd_q16 = cwnd;
	__builtin_memcpy(e->reason, reason, REASON_LEN);
	bpf_ringbuf_submit(e, 0);
}

/* After a hook: the phase `state` (the congestion state, the new one in set_state) means, and
 * the first slow-start exit, with the detector's hint or the state's reason. */
static __always_inline void report(struct ca *ca, __u8 state)
{
	bool startup = STARTUP_IS(default) ? cc_in_startup(ca) : startup_in_startup(ca);
	__u32 phase;

	if (state == TCP_CA_Recovery || state == TCP_CA_CWR)
		phase = PHASE_RECOVERY;
	else if (state == TCP_CA_Loss)
		phase = PHASE_LOSS;
	else if (startup)
		phase = PHASE_SLOW_START;
	else
		phase = PHASE_CONGESTION_AVOIDANCE;

	if (!ca->f->exited && (!startup || phase == PHASE_RECOVERY || phase == PHASE_LOSS)) {
		char reason[REASON_LEN] = {};
		/* A loss or timeout has its reduction under way: report the window it ended
		 * (prior_cwnd, set by tcp_enter_recovery and tcp_enter_loss before the state). */
		__u64 cwnd = phase == PHASE_SLOW_START || phase == PHASE_CONGESTION_AVOIDANCE ?
				     cwnd_q16(ca) : (__u64)ca->tp->prior_cwnd << FRAC_BITS;

		ca->f->exited = 1;
		if (ca->f->hint[0]) {
			__builtin_memcpy(reason, ca->f->hint, REASON_LEN);
		} else if (phase == PHASE_LOSS) {
			char t[REASON_LEN] = "timeout";
			__builtin_memcpy(reason, t, REASON_LEN);
		} else if (state == TCP_CA_CWR) {
			/* CWR: a reduction for an ECN echo (tcp_enter_cwr). */
			char e[REASON_LEN] = "ecn";
			__builtin_memcpy(reason, e, REASON_LEN);
		} else if (phase == PHASE_RECOVERY) {
			char l[REASON_LEN] = "loss";
			__builtin_memcpy(reason, l, REASON_LEN);
		} else {
			char th[REASON_LEN] = "threshold";
			__builtin_memcpy(reason, th, REASON_LEN);
		}
		emit(ca, EVENT_EXIT, phase, reason, cwnd);
	}
	if (phase != ca->f->phase) {
		char none[REASON_LEN] = {};

		ca->f->phase = phase;
		emit(ca, EVENT_PHASE, phase, none, cwnd_q16(ca));
	}
}

/* After a hook of a model-based controller: its phase, and the end of its start-up, which only
 * the controller decides (a loss does not end BBR's Startup). */
static __always_inline void report_model(struct ca *ca, __u8 state)
{
	bool startup = model_in_startup(ca);
	__u32 phase;

	if (state == TCP_CA_Recovery || state == TCP_CA_CWR)
		phase = PHASE_RECOVERY;
	else if (state == TCP_CA_Loss)
		phase = PHASE_LOSS;
	else if (startup)
		phase = PHASE_SLOW_START;
	else
		phase = PHASE_CONGESTION_AVOIDANCE;

	if (!ca->f->exited && !startup) {
		char reason[REASON_LEN] = "threshold";

		if (ca->f->hint[0])
			__builtin_memcpy(reason, ca->f->hint, REASON_LEN);
		ca->f->exited = 1;
		emit(ca, EVENT_EXIT, phase, reason, cwnd_q16(ca));
	}
	if (phase != ca->f->phase) {
		char none[REASON_LEN] = {};

		ca->f->phase = phase;
		emit(ca, EVENT_PHASE, phase, none, cwnd_q16(ca));
	}
}

/* ---- the hooks, composed as cc::WithStartup composes them ---------------------------------- */

static __always_inline bool own_slow_start(void)
{
	return STARTUP_IS(default);
}

SEC("struct_ops")
void BPF_PROG(startlab_init, struct sock *sk)
{
	struct ca ca;

	if (!ca_begin(&ca, sk, true))
		return;
	__builtin_memset(ca.f, 0, sizeof(struct flow));
	ca.f->last_cwnd = ca.tp->snd_cwnd;
	ca.f->phase = PHASE_SLOW_START;
	if (config.initial_ssthresh)
		ca.tp->snd_ssthresh = config.initial_ssthresh;
	/* The scenario's initial window, per connection (Linux sets it per route, initcwnd, in
	 * tcp_init_transfer just before calling init). */
	if (config.initial_window) {
		ca.tp->snd_cwnd = config.initial_window;
		ca.f->last_cwnd = config.initial_window;
	}
	if (config.pacing == startlab_config__pacing__none) {
		sk->sk_pacing_status = SK_PACING_NONE;
	} else if (config.pacing == startlab_config__pacing__initial_spreading) {
		/* One segment every RTT / IW (Sallantin et al. 2013 §III.C), from the handshake's
		 * RTT (srtt_us is 8 x the RTT); bytes per second with 52 bytes of headers. */
		__u32 srtt_us = ca.tp->srtt_us >> 3;
		__u64 iw = config.initial_window ? config.initial_window : ca.tp->snd_cwnd;

		if (srtt_us) {
			sk->sk_pacing_status = SK_PACING_NEEDED;
			sk->sk_pacing_rate = iw * (ca.tp->mss_cache + 52) * USEC_PER_SEC / srtt_us;
		}
	} else {
		/* Linux's internal pacing (tcp_update_pacing_rate) at the namespace's ratios. */
		sk->sk_pacing_status = SK_PACING_NEEDED;
	}
	cc_init(&ca);
	if (!own_slow_start())
		startup_init(&ca);
	report(&ca, TCP_CA_Open);
}

SEC("struct_ops")
void BPF_PROG(startlab_release, struct sock *sk)
{
	struct ca ca;

	/* tcp_cleanup_congestion_control: what a start-up algorithm keeps beyond the connection
	 * (Careful Resume's saved path state), then the connection's own storage. */
	if (!own_slow_start() && ca_begin(&ca, sk, false))
		startup_release(&ca);
	bpf_sk_storage_delete(&flows, sk);
}

SEC("struct_ops")
__u32 BPF_PROG(startlab_ssthresh, struct sock *sk)
{
	struct ca ca;
	__u32 s;

	if (!ca_begin(&ca, sk, false))
		return tcp_reno_ssthresh(sk);
	if (!own_slow_start())
		startup_before_ssthresh(&ca);
	s = cc_ssthresh(&ca);
	if (!own_slow_start())
		s = startup_on_loss(&ca, s);
	return s;
}

SEC("struct_ops")
void BPF_PROG(startlab_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct ca ca;

	if (!ca_begin(&ca, sk, false))
		return;
	if (!own_slow_start())
		startup_before_cong_avoid(&ca, ack, acked);
	if (!own_slow_start() && in_slow_start(&ca)) {
		/* Linux grows cwnd only when the flow is cwnd-limited (tcp_is_cwnd_limited). */
		if (!cwnd_limited(&ca)) {
			goto out;
		}
		acked = startup_on_ack(&ca, acked);
		if (!acked)
			goto out;
	}
	cc_cong_avoid(&ca, acked);
out:
	report(&ca, inet_csk_ca_state(sk));
}

SEC("struct_ops")
void BPF_PROG(startlab_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct ca ca;

	if (!ca_begin(&ca, sk, false))
		return;
	if (config.pacing == startlab_config__pacing__initial_spreading && !ca.f->pacing_off &&
	    sample->pkts_acked > 0) {
		/* The first ACK of data: the spread initial window is over, ordinary ACK clocking
		 * from now on (as the simulator's sender, tcp/sender.rs). */
		sk->sk_pacing_status = SK_PACING_NONE;
		ca.f->pacing_off = 1;
	}
	if (!own_slow_start())
		startup_pkts_acked(&ca, sample);
	cc_pkts_acked(&ca, sample);
	report(&ca, inet_csk_ca_state(sk));
}

SEC("struct_ops")
void BPF_PROG(startlab_set_state, struct sock *sk, __u8 new_state)
{
	struct ca ca;

	if (!ca_begin(&ca, sk, false))
		return;
	if (!own_slow_start())
		startup_set_state(&ca, new_state);
	cc_set_state(&ca, new_state);
	report(&ca, new_state);
}

SEC("struct_ops")
void BPF_PROG(startlab_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct ca ca;

	if (!ca_begin(&ca, sk, false))
		return;
	cc_cwnd_event(&ca, ev);
	if (!own_slow_start())
		startup_cwnd_event(&ca, ev);
}

SEC("struct_ops")
void BPF_PROG(startlab_in_ack_event, struct sock *sk, __u32 flags)
{
	struct ca ca;

	if (!ca_begin(&ca, sk, false))
		return;
	cc_in_ack_event(&ca, flags);
}

SEC("struct_ops")
__u32 BPF_PROG(startlab_undo_cwnd, struct sock *sk)
{
	struct ca ca;

	if (!ca_begin(&ca, sk, false))
		return tcp_reno_undo_cwnd(sk);
	return cc_undo_cwnd(&ca);
}

/* ---- the model-based controllers' hooks (struct_ops startlab_model) ------------------------- */

SEC("struct_ops")
void BPF_PROG(startlab_model_init, struct sock *sk)
{
	struct ca ca;

	if (!ca_begin(&ca, sk, true))
		return;
	__builtin_memset(ca.f, 0, sizeof(struct flow));
	if (config.initial_window)
		ca.tp->snd_cwnd = config.initial_window;
	ca.f->last_cwnd = ca.tp->snd_cwnd;
	ca.f->phase = PHASE_SLOW_START;
	/* The controller paces itself (bbr_init sets SK_PACING_NEEDED). */
	model_init(&ca);
	report_model(&ca, TCP_CA_Open);
}

SEC("struct_ops")
void BPF_PROG(startlab_model_release, struct sock *sk)
{
	bpf_sk_storage_delete(&flows, sk);
}

SEC("struct_ops")
__u32 BPF_PROG(startlab_model_ssthresh, struct sock *sk)
{
	struct ca ca;

	if (!ca_begin(&ca, sk, false))
		return ((struct tcp_sock *)sk)->snd_ssthresh;
	return model_ssthresh(&ca);
}

SEC("struct_ops")
void BPF_PROG(startlab_model_cong_control, struct sock *sk, __u32 ack, int flag,
	      const struct rate_sample *rs)
{
	struct ca ca;

	if (!ca_begin(&ca, sk, false))
		return;
	model_cong_control(&ca, rs);
	report_model(&ca, inet_csk_ca_state(sk));
}

SEC("struct_ops")
void BPF_PROG(startlab_model_set_state, struct sock *sk, __u8 new_state)
{
	struct ca ca;

	if (!ca_begin(&ca, sk, false))
		return;
	model_set_state(&ca, new_state);
	report_model(&ca, new_state);
}

SEC("struct_ops")
void BPF_PROG(startlab_model_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct ca ca;

	if (!ca_begin(&ca, sk, false))
		return;
	model_cwnd_event(&ca, ev);
}

SEC("struct_ops")
__u32 BPF_PROG(startlab_model_undo_cwnd, struct sock *sk)
{
	struct ca ca;

	if (!ca_begin(&ca, sk, false))
		return tcp_reno_undo_cwnd(sk);
	return model_undo_cwnd(&ca);
}

/* The model-based controllers (MODEL_LIST): cong_control in place of cong_avoid. */
SEC(".struct_ops.link")
struct tcp_congestion_ops startlab_model = {
	.init = (void *)startlab_model_init,
	.release = (void *)startlab_model_release,
	.ssthresh = (void *)startlab_model_ssthresh,
	.cong_control = (void *)startlab_model_cong_control,
	.set_state = (void *)startlab_model_set_state,
	.cwnd_event = (void *)startlab_model_cwnd_event,
	.undo_cwnd = (void *)startlab_model_undo_cwnd,
	.name = "startlab_model",
};

/* The window-based controllers (CC_LIST) with any start-up algorithm. */
SEC(".struct_ops.link")
struct tcp_congestion_ops startlab = {
	.init = (void *)startlab_init,
	.release = (void *)startlab_release,
	.ssthresh = (void *)startlab_ssthresh,
	.cong_avoid = (void *)startlab_cong_avoid,
	.pkts_acked = (void *)startlab_pkts_acked,
	.set_state = (void *)startlab_set_state,
	.cwnd_event = (void *)startlab_cwnd_event,
	.in_ack_event = (void *)startlab_in_ack_event,
	.undo_cwnd = (void *)startlab_undo_cwnd,
	.name = "startlab",
};
