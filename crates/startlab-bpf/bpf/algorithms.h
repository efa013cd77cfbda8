/* SPDX-License-Identifier: MIT */
/*
 * The algorithms compiled into the object, by their C names (the simulator's, with `-` as `_`
 * and `++` as `_pp`). Each NAME has a file cc/NAME.bpf.c or startup/NAME.bpf.c (several names
 * may share one) that defines struct NAME_config (its parameters, named and typed as
 * startlab.h describes), struct NAME_state (per connection) and the hooks below, each taking
 * (struct ca *ca, const volatile struct NAME_config *cfg, struct NAME_state *st, ...):
 *
 * congestion control                        start-up algorithm
 *   NAME_init(...)                            NAME_init(...)
 *   __u32 NAME_ssthresh(...)                  __u32 NAME_on_ack(..., __u32 acked): what is left
 *   NAME_cong_avoid(..., __u32 acked):          for congestion avoidance
 *     its own slow start included             __u32 NAME_on_loss(..., __u32 ssthresh)
 *   NAME_pkts_acked(..., const struct ack_sample *)  NAME_pkts_acked(..., const struct ack_sample *)
 *   NAME_set_state(..., __u8 new_state)       NAME_set_state(..., __u8 new_state)
 *   NAME_cwnd_event(..., enum tcp_ca_event)   NAME_cwnd_event(..., enum tcp_ca_event)
 *   NAME_in_ack_event(..., __u32 flags)       bool NAME_in_startup(...)
 *   __u32 NAME_undo_cwnd(...)
 *   bool NAME_in_startup(...)
 *
 * They mirror the Rust traits CongestionControl and SlowStart (crate startlab-core, cc/mod.rs)
 * hook for hook; controller.bpf.c calls them in the order cc::WithStartup does.
 */
#ifndef STARTLAB_ALGORITHMS_H
#define STARTLAB_ALGORITHMS_H

/* Shared parts. */
#include "rounds.h"

/* One line per file: a port joins the object when its file compiles. */
#include "cc/reno.bpf.c"
#include "cc/hstcp.bpf.c"
#include "cc/bic.bpf.c"   /* before blast.bpf.c, which uses its bic_core */
#include "cc/blast.bpf.c"
#include "cc/vegas.bpf.c"         /* before gallop_vegas and startup/vegas_ss, which use its meter */
#include "cc/gallop_vegas.bpf.c"
#include "cc/westwood.bpf.c"      /* with startup/astart.bpf.c: the estimator rate.h */
#include "cc/cubic.bpf.c"
#include "startup/slow_start.bpf.c"
#include "startup/astart.bpf.c"
#include "startup/lss.bpf.c"
#include "startup/hoe.bpf.c"
#include "startup/pstart.bpf.c"
#include "startup/search.bpf.c"
#include "startup/vegas_ss.bpf.c"
#include "startup/hystart.bpf.c"
#include "startup/hystart_pp.bpf.c"

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
	X(cubic)

#define STARTUP_LIST(X) \
	X(slow_start) \
	X(astart) \
	X(lss) \
	X(hoe) \
	X(pstart) \
	X(search) \
	X(vegas_ss) \
	X(hystart) \
	X(hystart_pp)

#endif
