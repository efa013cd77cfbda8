//! The project's object run by the simulator's virtual machine, hook by hook, against values
//! worked out by hand from the C source.

use serde_json::json;
use startlab_bpf::elf::Loaded;
use startlab_bpf::events::{Event, KIND_EXIT};
use startlab_bpf::layout::{get, known, put};
use startlab_bpf::vm::{region_base, Vm, ACK_REGION, RATE_REGION, SOCK_REGION};
use startlab_bpf::{ControllerSpec, Controllers};
use startlab_core::cc::bpf::SimulatorCatalogue;
use std::sync::Arc;

fn vm_for(spec: &ControllerSpec) -> Vm {
    let c = Controllers::built().expect("the eBPF object is built");
    let loaded = Arc::new(Loaded::parse_ops(c.elf, Some("startlab")).unwrap());
    let rodata = c.configure(spec, &SimulatorCatalogue).unwrap();
    let data = loaded
        .data
        .iter()
        .map(|d| {
            if d.name == ".rodata" {
                rodata.clone()
            } else {
                d.bytes.clone()
            }
        })
        .collect();
    Vm::new(loaded, data)
}

fn set(vm: &mut Vm, path: &str, v: u64) {
    put(vm.sock(), known("tcp_sock", path), v);
}

fn cwnd(vm: &mut Vm) -> u64 {
    get(vm.sock(), known("tcp_sock", "snd_cwnd"))
}

fn newreno(initial_ssthresh: Option<u32>) -> ControllerSpec {
    ControllerSpec {
        cc: "newreno".into(),
        cc_params: json!({"abc_limit": 0, "beta": 0.5, "counting": "rfc5681"}),
        startup: "default".into(),
        startup_params: None,
        pacing: "none".into(),
        initial_ssthresh,
        initial_window: 10,
    }
}

#[test]
fn newreno_grows_one_segment_per_ack_in_slow_start_then_one_per_window() {
    let mut vm = vm_for(&newreno(Some(12)));
    let sk = region_base(SOCK_REGION);
    set(&mut vm, "snd_cwnd", 10);
    set(&mut vm, "snd_ssthresh", 0x7fff_ffff);
    set(&mut vm, "snd_cwnd_clamp", u32::MAX as u64);
    set(&mut vm, "max_packets_out", 10);
    set(&mut vm, "mss_cache", 1448);
    vm.call("init", &[sk]).unwrap();
    // init wrote the scenario's ssthresh.
    assert_eq!(get(vm.sock(), known("tcp_sock", "snd_ssthresh")), 12);
    // Two ACKs of 2 segments each: +1 per ACK (RFC 5681 ACK counting) up to ssthresh 12.
    vm.call("cong_avoid", &[sk, 0, 2]).unwrap();
    assert_eq!(cwnd(&mut vm), 11);
    vm.call("cong_avoid", &[sk, 0, 2]).unwrap();
    assert_eq!(cwnd(&mut vm), 12);
    // The exit was reported: threshold, at cwnd 12.
    let exits: Vec<Event> = vm
        .events
        .iter()
        .filter_map(|b| Event::decode(b))
        .filter(|e| e.kind == KIND_EXIT)
        .collect();
    assert_eq!(exits.len(), 1);
    assert_eq!(
        (exits[0].reason.as_str(), exits[0].cwnd),
        ("threshold", 12.0)
    );
    // Congestion avoidance: cwnd += 1/cwnd per ACK, the fraction kept beside snd_cwnd in
    // units of 2^-16: from 12, the increments 2^32 / w (5461, 5423, 5386, ...) sum to 63203
    // after 12 ACKs and pass 65536 at the 13th (as 12 + sum 1/w_k passes 13 at the 13th ACK in
    // the Rust model). The flow must be cwnd-limited.
    set(&mut vm, "is_cwnd_limited", 1);
    for _ in 0..12 {
        vm.call("cong_avoid", &[sk, 0, 1]).unwrap();
    }
    assert_eq!(cwnd(&mut vm), 12);
    vm.call("cong_avoid", &[sk, 0, 1]).unwrap();
    assert_eq!(cwnd(&mut vm), 13);
    // A loss: ssthresh = max(FlightSize x 0.5, 2) with FlightSize = (snd_nxt - snd_una) / mss.
    set(&mut vm, "snd_una", 1000);
    set(&mut vm, "snd_nxt", 1000 + 20 * 1448);
    assert_eq!(vm.call("ssthresh", &[sk]).unwrap(), Some(10));
    // Hooks the object does not have return nothing.
    assert_eq!(vm.call("cong_control", &[sk]).unwrap(), None);
}

#[test]
fn pkts_acked_reads_the_ack_sample() {
    let mut vm = vm_for(&newreno(None));
    let sk = region_base(SOCK_REGION);
    set(&mut vm, "snd_cwnd", 10);
    set(&mut vm, "snd_ssthresh", 0x7fff_ffff);
    vm.call("init", &[sk]).unwrap();
    let sample = vm.ack_sample();
    put(sample, known("ack_sample", "pkts_acked"), 1);
    put(sample, known("ack_sample", "rtt_us"), 40_000);
    vm.call("pkts_acked", &[sk, region_base(ACK_REGION)])
        .unwrap();
    assert!(vm.executed > 0);
}

/// A damaged object never panics the loader or the VM: 300 copies of the built object with a
/// few bytes changed (seeded) are each loaded, and each one that loads is run through its hooks;
/// every failure is an error value.
/// startlab's object has two struct_ops: loading it must name one, and the error lists them.
#[test]
fn an_object_with_several_struct_ops_must_name_one() {
    let c = Controllers::built().expect("the eBPF object is built");
    let e = Loaded::parse(c.elf).unwrap_err();
    assert!(
        e.contains("several struct_ops")
            && e.contains("\"startlab\"")
            && e.contains("\"startlab_model\""),
        "{e}"
    );
    let e = Loaded::parse_ops(c.elf, Some("other")).unwrap_err();
    assert!(e.contains("no struct_ops \"other\""), "{e}");
    let window = Loaded::parse_ops(c.elf, Some("startlab")).unwrap();
    let model = Loaded::parse_ops(c.elf, Some("startlab_model")).unwrap();
    assert_eq!(
        (window.name.as_str(), model.name.as_str()),
        ("startlab", "startlab_model")
    );
    assert!(window.hooks.contains_key("cong_avoid") && !window.hooks.contains_key("cong_control"));
    assert!(model.hooks.contains_key("cong_control") && !model.hooks.contains_key("cong_avoid"));
}

#[test]
fn damaged_objects_give_errors_not_panics() {
    let c = Controllers::built().expect("the eBPF object is built");
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        // xorshift64*
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let mut loaded_ok = 0;
    for k in 0..300 {
        let mut bytes = c.elf.to_vec();
        for _ in 0..1 + next() % 8 {
            let at = (next() % bytes.len() as u64) as usize;
            bytes[at] = next() as u8;
        }
        // Either struct_ops of the object (cong_avoid's, or cong_control's).
        let ops = if k % 2 == 0 {
            "startlab"
        } else {
            "startlab_model"
        };
        let Ok(loaded) = Loaded::parse_ops(&bytes, Some(ops)) else {
            continue;
        };
        loaded_ok += 1;
        let data = loaded.data.iter().map(|d| d.bytes.clone()).collect();
        let mut vm = Vm::new(Arc::new(loaded), data);
        for hook in [
            "init",
            "cong_avoid",
            "cong_control",
            "pkts_acked",
            "ssthresh",
            "set_state",
        ] {
            let _ = vm.call(
                hook,
                &[
                    region_base(SOCK_REGION),
                    region_base(ACK_REGION),
                    1,
                    region_base(RATE_REGION),
                ],
            );
        }
    }
    // Most changes fall in debug sections and leave the object loadable.
    assert!(loaded_ok > 100, "{loaded_ok}");
}
