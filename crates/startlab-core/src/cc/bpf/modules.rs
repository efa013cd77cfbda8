//! The kfuncs Linux registers for struct_ops programs from its own congestion-control modules
//! (`tcp_cubic.c`'s `cubictcp_*`, `tcp_bbr.c`'s `bbr_*`), run by the simulator's models of
//! those algorithms on the connection's state: a program that hands its hooks to the kernel's
//! CUBIC (with its HyStart) or BBR decides as `cc = "cubic"` with `startup = "hystart"`
//! (Linux's variant) or `cc = "bbr"` does on the Linux stack.
//!
//! Each module keeps its state per connection, as the kernel keeps it in `icsk_ca_priv`; it is
//! made at the module's first call (normally its `*_init`, which also runs `init`). A call
//! reads the socket image the program may have changed (cwnd, ssthresh), runs the model's hook
//! on the connection's state at the hook being run, and writes what the model set back into the
//! image (cwnd, ssthresh, pacing rate, the application-limited mark), as the kernel's function
//! writes `tcp_sock`.

use super::super::registry::{Model, Params};
use super::super::{Ack, AckSample, CaState, CongestionControl, CwndEvent, RateSample, Tcb};
use super::{app_limited_image, pacing_image, ssthresh_image, ssthresh_of_image};
use crate::rng::Rng;
use crate::time::Time;
use startlab_bpf::layout;
use startlab_bpf::vm::KernelModules;

/// The connection's side of the kernel modules' functions.
#[derive(Debug)]
pub(super) struct Modules {
    /// The connection's state at the hook being run, and when (set before each hook).
    pub tcb: Tcb,
    pub now: Time,
    /// The ACK sample of `pkts_acked` and the rate sample of `cong_control`, for the
    /// functions that take them (`cubictcp_acked`, `bbr_main`).
    pub ack: Option<AckSample>,
    pub rs: Option<RateSample>,
    /// The kernel's CONFIG_HZ (the flow's jiffies), for the models' clocks.
    hz: u32,
    /// The connection's random stream (BBR's ProbeBW phase draws from it).
    rng: Option<Rng>,
    cubic: Option<Box<dyn CongestionControl>>,
    bbr: Option<Box<dyn CongestionControl>>,
    /// The pacing rate a module last set: what it wrote into `sk_pacing_rate` (payload bytes
    /// per second) and the sender's rate it came from, which the sender then keeps exactly.
    pub published: Option<(u64, crate::units::Rate)>,
}

impl Modules {
    pub fn new(tcb: Tcb, hz: u32) -> Self {
        Modules {
            tcb,
            now: Time::ZERO,
            ack: None,
            rs: None,
            hz,
            rng: None,
            cubic: None,
            bbr: None,
            published: None,
        }
    }

    pub fn seed(&mut self, rng: Rng) {
        self.rng = Some(rng);
    }

    /// What BBR's module shows of its model, once the program has called it.
    pub fn model_state(&self, tcb: &Tcb) -> Option<super::super::ModelState> {
        self.bbr.as_ref()?.model_state(tcb)
    }
}

/// The model of a module in `slot`, made (and initialised on `tcb`) at its first call.
fn model<'a>(
    slot: &'a mut Option<Box<dyn CongestionControl>>,
    module: &str,
    hz: u32,
    rng: Option<&Rng>,
    tcb: &mut Tcb,
    now: Time,
) -> Result<&'a mut Box<dyn CongestionControl>, String> {
    if slot.is_none() {
        let (cc, startup) = match module {
            "cubic" => ("cubic", "hystart"),
            _ => ("bbr", "default"),
        };
        let mut cc_params = Params::new();
        cc_params.insert("hz".into(), hz.into());
        let mut startup_params = Params::new();
        if startup == "hystart" {
            startup_params.insert("variant".into(), "linux".into());
        }
        let model = Model::new(cc, &cc_params, startup, &startup_params)
            .map_err(|e| format!("the model of tcp_{cc}.c: {}", e.message))?;
        let mut m = model.build();
        if let Some(rng) = rng {
            m.seed(rng.clone());
        }
        m.init(tcb, now);
        *slot = Some(m);
    }
    Ok(slot.as_mut().expect("made above"))
}

/// `enum tcp_ca_state` → the simulator's.
fn ca_state(v: u64) -> Result<CaState, String> {
    Ok(match v {
        0 => CaState::Open,
        1 => CaState::Disorder,
        2 => CaState::Cwr,
        3 => CaState::Recovery,
        4 => CaState::Loss,
        _ => return Err(format!("{v} is not a TCP_CA_* state")),
    })
}

/// `enum tcp_ca_event` → the simulator's, where it has one (the ECN events change nothing in
/// the models).
fn ca_event(v: u64) -> Option<CwndEvent> {
    match v {
        0 => Some(CwndEvent::TxStart),
        1 => Some(CwndEvent::CwndRestart),
        2 => Some(CwndEvent::CompleteCwr),
        3 => Some(CwndEvent::Loss),
        _ => None,
    }
}

impl KernelModules for Modules {
    fn call(&mut self, name: &str, args: &[u64; 5], sock: &mut [u8]) -> Result<u64, String> {
        let f = layout::sock();
        // What the program wrote before the call is the state the kernel's function sees.
        let cwnd = layout::get(sock, f.snd_cwnd) as f64;
        if cwnd != self.tcb.cwnd.max(1.0).floor() {
            self.tcb.cwnd = cwnd.max(1.0);
        }
        let ssthresh = layout::get(sock, f.snd_ssthresh);
        if ssthresh != ssthresh_image(self.tcb.ssthresh) {
            self.tcb.ssthresh = ssthresh_of_image(ssthresh);
        }
        let pacing_before = self.tcb.pacing_rate;
        let app_limited_before = self.tcb.app_limited;
        let now = self.now;
        let module = if name.starts_with("cubictcp_") {
            "cubic"
        } else {
            "bbr"
        };
        let ack = self.ack;
        let rs = self.rs;
        let sample_missing = |what: &str| {
            format!("{name} reads the {what} of the hook it is called from, and was called from another hook")
        };
        let slot = if module == "cubic" {
            &mut self.cubic
        } else {
            &mut self.bbr
        };
        let tcb = &mut self.tcb;
        let m = model(slot, module, self.hz, self.rng.as_ref(), tcb, now)?;
        let ret = match name {
            "cubictcp_init" | "bbr_init" => 0,
            "cubictcp_recalc_ssthresh" | "bbr_ssthresh" => ssthresh_image(m.ssthresh(tcb, now)),
            // tcp_cubic.c cubictcp_cong_avoid(sk, ack, acked)
            "cubictcp_cong_avoid" => {
                let a = Ack {
                    acked: args[2] as u32,
                    ack_seq: tcb.snd_una,
                };
                m.cong_avoid(tcb, &a, now);
                0
            }
            "cubictcp_state" | "bbr_set_state" => {
                m.set_state(tcb, ca_state(args[1])?, now);
                tcb.ca_state = ca_state(args[1])?;
                0
            }
            "cubictcp_cwnd_event" | "bbr_cwnd_event" => {
                if let Some(e) = ca_event(args[1]) {
                    m.cwnd_event(tcb, e, now);
                }
                0
            }
            "cubictcp_acked" => {
                let a = ack.ok_or_else(|| sample_missing("ACK sample"))?;
                m.pkts_acked(tcb, &a, now);
                0
            }
            // tcp_bbr.c bbr_main(sk, ack, flag, rs)
            "bbr_main" => {
                let r = rs.ok_or_else(|| sample_missing("rate sample"))?;
                m.cong_control(tcb, &r, now);
                0
            }
            "bbr_undo_cwnd" => m.undo_cwnd(tcb).max(1.0) as u64,
            "bbr_sndbuf_expand" => 3,
            // bbr_min_tso_segs: bursts of 2 above 1.2 Mbit/s (sk_pacing_rate, bytes/s).
            "bbr_min_tso_segs" => {
                if layout::get(sock, f.sk_pacing_rate) < 1_200_000 / 8 {
                    1
                } else {
                    2
                }
            }
            _ => return Err(format!("kernel function {name} is not provided")),
        };
        // The function's writes to tcp_sock.
        layout::put(sock, f.snd_cwnd, tcb.cwnd.max(1.0).floor() as u64);
        layout::put(sock, f.snd_ssthresh, ssthresh_image(tcb.ssthresh));
        if tcb.pacing_rate != pacing_before {
            let rate = pacing_image(tcb.pacing_rate, tcb);
            layout::put(sock, f.sk_pacing_rate, rate);
            self.published = tcb.pacing_rate.map(|r| (rate, r));
        }
        if tcb.app_limited != app_limited_before {
            layout::put(sock, f.app_limited, app_limited_image(tcb.app_limited));
        }
        Ok(ret)
    }

    /// A copy for a connection that has not started: the modules' state is made afresh at
    /// its first call (the kernel's `icsk_ca_priv` is not copied either).
    fn clone_box(&self) -> Box<dyn KernelModules> {
        Box::new(Modules {
            tcb: self.tcb.clone(),
            now: self.now,
            ack: None,
            rs: None,
            hz: self.hz,
            rng: self.rng.clone(),
            cubic: None,
            bbr: None,
            published: None,
        })
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}
