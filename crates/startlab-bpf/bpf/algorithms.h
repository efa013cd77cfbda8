/* SPDX-License-Identifier: MIT */
/*
 * The algorithms compiled into the object, by their C names (the simulator's, with `-` as `_`
 * and `++` as `_pp`). Each NAME has a file cc/NAME.bpf.c or startup/NAME.bpf.c (several names
 * may share one) that defines struct NAME_config (its parameters, named and typed as
 * startlab.h describes), struct NAME_state (per connection), the hooks it implements, each
 * taking (struct ca *ca, const volatile struct NAME_config *cfg, struct NAME_state *st, ...),
 * and its table of them, `CC_OPS(NAME) = { .hook = NAME_hook, ... };` (or STARTUP_OPS).
 *
 * As in Linux's struct tcp_congestion_ops, a hook the algorithm does not need is left out of
 * its table (NULL), and controller.bpf.c does what Linux does without it; the hooks every
 * algorithm must have, as tcp_validate_congestion_control requires ssthresh and cong_avoid,
 * are checked when the object is compiled.
 *
 * congestion control (CC_OPS)               without it
 *   init(...)                                 nothing
 *   __u32 ssthresh(...)                       required
 *   cong_avoid(..., __u32 acked),             required
 *     its own slow start included
 *   pkts_acked(..., const struct ack_sample *)  nothing
 *   set_state(..., __u8 new_state)            nothing
 *   cwnd_event(..., enum tcp_ca_event)        nothing
 *   in_ack_event(..., __u32 flags)            nothing
 *   __u32 undo_cwnd(...)                      tcp_reno_undo_cwnd, as Linux's own controllers
 *   bool in_startup(...)                      cwnd < ssthresh (tcp_in_slow_start)
 *
 * start-up algorithm (STARTUP_OPS)          without it
 *   init(...)                                 nothing
 *   __u32 on_ack(..., __u32 acked): what is   required
 *     left for congestion avoidance
 *   __u32 on_loss(..., __u32 ssthresh)        ssthresh unchanged
 *   pkts_acked(..., const struct ack_sample *)  nothing
 *   set_state(..., __u8 new_state)            nothing
 *   cwnd_event(..., enum tcp_ca_event)        nothing
 *   bool in_startup(...)                      cwnd < ssthresh (tcp_in_slow_start)
 *   before_cong_avoid(..., __u32 ack,         nothing
 *     __u32 acked): every cong_avoid, first,
 *     in or out of slow start
 *   before_ssthresh(...): before the          nothing
 *     controller's ssthresh
 *   release(...): the connection closes       nothing
 *     (no bpf_setsockopt: Linux refuses it
 *     to release)
 *
 * model-based congestion control (MODEL_OPS), run by the struct_ops startlab_model, whose
 * cong_control replaces cong_avoid (and the stack's PRR and pacing rate) as in Linux's
 * tcp_cong_control; no start-up algorithm replaces theirs
 *   init(...)                                 nothing
 *   __u32 ssthresh(...)                       required
 *   cong_control(..., const struct rate_sample *)  required
 *   set_state(..., __u8 new_state)            nothing
 *   cwnd_event(..., enum tcp_ca_event)        nothing
 *   __u32 undo_cwnd(...)                      tcp_reno_undo_cwnd
 *   bool in_startup(...)                      cwnd < ssthresh (tcp_in_slow_start)
 *
 * They mirror the Rust traits CongestionControl and SlowStart (crate startlab-core, cc/mod.rs),
 * whose default methods are the same; controller.bpf.c calls them in the order cc::WithStartup
 * does.
 */
#ifndef STARTLAB_ALGORITHMS_H
#define STARTLAB_ALGORITHMS_H

/* The arguments every hook of algorithm n takes first. */
#define HOOK_ARGS(n) struct ca *, const volatile struct n##_config *, struct n##_state *

/* struct n##_ops, the hooks of congestion control n, and its table n##_ops (see above). */
#define CC_OPS(n)                                                                       \
	struct n##_ops {                                                                \
		void (*init)(HOOK_ARGS(n));                                             \
		__u32 (*ssthresh)(HOOK_ARGS(n));                                        \
		void (*cong_avoid)(HOOK_ARGS(n), __u32 acked);                          \
		void (*pkts_acked)(HOOK_ARGS(n), const struct ack_sample *sample);      \
		void (*set_state)(HOOK_ARGS(n), __u8 new_state);                        \
		void (*cwnd_event)(HOOK_ARGS(n), enum tcp_ca_event ev);                 \
		void (*in_ack_event)(HOOK_ARGS(n), __u32 flags);                        \
		__u32 (*undo_cwnd)(HOOK_ARGS(n));                                       \
		bool (*in_startup)(HOOK_ARGS(n));                                       \
	};                                                                              \
	static const struct n##_ops n##_ops

/* The same for start-up algorithm n. */
#define STARTUP_OPS(n)                                                                  \
	struct n##_ops {                                                                \
		void (*init)(HOOK_ARGS(n));                                             \
		__u32 (*on_ack)(HOOK_ARGS(n), __u32 acked);                             \
		__u32 (*on_loss)(HOOK_ARGS(n), __u32 ssthresh);                         \
		void (*pkts_acked)(HOOK_ARGS(n), const struct ack_sample *sample);      \
		void (*set_state)(HOOK_ARGS(n), __u8 new_state);                        \
		void (*cwnd_event)(HOOK_ARGS(n), enum tcp_ca_event ev);                 \
		bool (*in_startup)(HOOK_ARGS(n));                                       \
		void (*before_cong_avoid)(HOOK_ARGS(n), __u32 ack, __u32 acked);        \
		void (*before_ssthresh)(HOOK_ARGS(n));                                  \
		void (*release)(HOOK_ARGS(n));                                          \
	};                                                                              \
	static const struct n##_ops n##_ops

/* The same for model-based congestion control n. */
#define MODEL_OPS(n)                                                                    \
	struct n##_ops {                                                                \
		void (*init)(HOOK_ARGS(n));                                             \
		__u32 (*ssthresh)(HOOK_ARGS(n));                                        \
		void (*cong_control)(HOOK_ARGS(n), const struct rate_sample *rs);       \
		void (*set_state)(HOOK_ARGS(n), __u8 new_state);                        \
		void (*cwnd_event)(HOOK_ARGS(n), enum tcp_ca_event ev);                 \
		__u32 (*undo_cwnd)(HOOK_ARGS(n));                                       \
		bool (*in_startup)(HOOK_ARGS(n));                                       \
	};                                                                              \
	static const struct n##_ops n##_ops

/* Shared parts. */
#include "rounds.h"

/* One line per file: a port joins the object when its file compiles. */
#include "cc/reno.bpf.c"
#include "cc/dctcp.bpf.c"  /* after reno.bpf.c, whose Linux growth it uses */
#include "cc/hstcp.bpf.c"
#include "cc/bic.bpf.c"   /* before blast.bpf.c, which uses its bic_core */
#include "cc/blast.bpf.c"
#include "cc/vegas.bpf.c"         /* before gallop_vegas and startup/vegas_ss, which use its meter */
#include "cc/gallop_vegas.bpf.c"
#include "cc/westwood.bpf.c"      /* with startup/astart.bpf.c: the estimator rate.h */
#include "cc/cubic.bpf.c"
#include "cc/bbr.bpf.c"
#include "cc/bbr3.bpf.c"
#include "startup/slow_start.bpf.c"
#include "startup/astart.bpf.c"
#include "startup/lss.bpf.c"
#include "startup/hoe.bpf.c"
#include "startup/pstart.bpf.c"
#include "startup/search.bpf.c"
#include "startup/vegas_ss.bpf.c"
#include "startup/hystart.bpf.c"
#include "startup/hystart_pp.bpf.c"
#include "startup/suss.bpf.c"  /* after hystart.bpf.c, whose hystart_pacing_rate it uses */
#include "startup/careful_resume.bpf.c"

/* One line per name (several names may share a file). */
#define CC_LIST(X) \
	X(reno)    \
	X(newreno) \
	X(westwood) \
	X(bic)     \
	X(blast)   \
	X(hstcp)   \
	X(vegas)   \
	X(gallop_vegas) \
	X(cubic)   \
	X(dctcp)

/* Model-based controllers: run by the struct_ops startlab_model (cong_control). */
#define MODEL_LIST(X) \
	X(bbr)     \
	X(bbr3)

#define STARTUP_LIST(X) \
	X(slow_start) \
	X(astart) \
	X(lss) \
	X(hoe) \
	X(pstart) \
	X(search) \
	X(vegas_ss) \
	X(hystart) \
	X(hystart_pp) \
	X(suss) \
	X(careful_resume)

#endif
