//! `startlab kernel run` end to end: a scenario on Linux's TCP over the link emulator, in the
//! simulator's tables. Needs root: `make test-kernel`.

mod common;

use common::is_root;
use startlab_core::scenario;
use startlab_emu::EmulatorConfig;
use startlab_kernel::run::{run, RunOptions};

fn resolve(path: &str) -> scenario::ResolvedScenario {
    let text = std::fs::read_to_string(path).unwrap();
    scenario::resolve(&scenario::from_toml(&text).unwrap()).unwrap()
}

#[test]
#[ignore = "kernel: needs root, network namespaces, TUN and tracefs"]
fn kernel_scratch() {
    if !is_root() {
        return;
    }
    let s = resolve(&std::env::var("SCENARIO").unwrap());
    let rt = std::env::var("RT").ok().map(|v| v.parse().unwrap());
    let out = run(&s, &RunOptions { emulator: EmulatorConfig { realtime: rt, ..EmulatorConfig::default() }, ping: None }).unwrap();
    let r = &out.report;
    println!("{:?}", out.facts);
    println!("flows: exit {:?} {:?} {:?} goodput {:?} retrans {:?}", r.flows.ss_exit_ns, r.flows.ss_exit_cwnd, r.flows.ss_exit_reason, r.flows.goodput_bps, r.flows.retransmissions);
    println!("links: {:?} drops {:?} util {:?}", r.links.name, r.links.drops, r.links.utilization);
    println!("windows {:?}", r.windows.utilization);
}
