//! The kernel world from Python: `kernel_run`, `kernel_clean`, `kernel_preflight`.
//!
//! A kernel run goes on in a thread of its own while the calling thread waits with the GIL
//! released in short slices and checks for Python signals between them: Ctrl-C (or a SIGTERM
//! handler that raises) tells the run to end, waits for it to remove everything it created, and
//! then raises.

use super::{run_output, scenario_error, KernelUnavailable};
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use startlab_core::scenario;
use startlab_core::time::Duration;
use startlab_emu::EmulatorConfig;
use startlab_kernel::run::{self, KernelError, KernelFacts, PingSpec, RunOptions};
use startlab_kernel::traffic::ABORT;
use std::sync::atomic::Ordering;

fn facts_dict<'py>(py: Python<'py>, f: &KernelFacts) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("kernel_release", &f.kernel_release)?;
    d.set_item("differences", &f.differences)?;
    d.set_item("trace_overruns", f.trace_overruns)?;
    d.set_item("global_settings", &f.global_settings)?;
    d.set_item("cleaned", &f.cleaned)?;
    let e = &f.emulator;
    let emu = PyDict::new(py);
    emu.set_item("packets", e.packets)?;
    emu.set_item("lateness_mean_ns", e.lateness_mean_ns)?;
    emu.set_item("lateness_p50_ns", e.lateness_p50_ns)?;
    emu.set_item("lateness_p99_ns", e.lateness_p99_ns)?;
    emu.set_item("lateness_p999_ns", e.lateness_p999_ns)?;
    emu.set_item("lateness_max_ns", e.lateness_max_ns)?;
    emu.set_item("late_1ms_packets", e.late_1ms_packets)?;
    emu.set_item("steal_ns", e.steal_ns)?;
    emu.set_item("wake_latency_held", e.wake_latency_held)?;
    emu.set_item("foreign_packets", e.foreign_packets)?;
    emu.set_item("write_errors", e.write_errors)?;
    d.set_item("emulator", emu)?;
    let conns = PyList::empty(py);
    for c in &f.connections {
        let cd = PyDict::new(py);
        cd.set_item("flow", c.flow)?;
        cd.set_item("cc", &c.cc)?;
        cd.set_item("paced", c.paced)?;
        cd.set_item("rwnd_limited_ns", c.rwnd_limited_ns)?;
        cd.set_item("sndbuf_limited_ns", c.sndbuf_limited_ns)?;
        cd.set_item("final_cwnd", c.final_cwnd)?;
        cd.set_item("final_ssthresh", c.final_ssthresh)?;
        cd.set_item("pacing_rate_bps", c.pacing_rate_bps)?;
        cd.set_item("mss", c.mss)?;
        conns.append(cd)?;
    }
    d.set_item("connections", conns)?;
    let udp = PyList::empty(py);
    for u in &f.udp {
        let ud = PyDict::new(py);
        ud.set_item("flow", u.flow)?;
        ud.set_item("delivered_packets", u.delivered_packets)?;
        ud.set_item("delivered_bytes", u.delivered_bytes)?;
        ud.set_item("first_ns", u.first_ns)?;
        ud.set_item("last_ns", u.last_ns)?;
        ud.set_item("received_rate_bps", u.received_rate_bps)?;
        ud.set_item("send_errors", u.send_errors)?;
        ud.set_item("socket_drops", u.socket_drops)?;
        ud.set_item(
            "received_bytes_per_100ms",
            u.received_bytes_per_100ms.clone(),
        )?;
        udp.append(ud)?;
    }
    d.set_item("udp", udp)?;
    d.set_item("pings_ns", &f.pings)?;
    let bpf = PyList::empty(py);
    for b in &f.bpf_controllers {
        let bd = PyDict::new(py);
        bd.set_item("name", &b.name)?;
        bd.set_item("cc", &b.cc)?;
        bd.set_item("startup", &b.startup)?;
        bd.set_item("pacing", &b.pacing)?;
        bd.set_item("events", b.events)?;
        bd.set_item("lost_events", b.lost_events)?;
        bpf.append(bd)?;
    }
    d.set_item("bpf_controllers", bpf)?;
    Ok(d)
}

/// Runs a scenario (JSON text) on the kernel's TCP over the link emulator; returns what `run`
/// returns plus `kernel` (what only the kernel world has). Raises ``ValueError`` for a field the
/// kernel cannot honour, ``KernelUnavailable`` when the machine cannot run it,
/// ``KeyboardInterrupt`` when interrupted (after removing what it created).
#[pyfunction]
#[pyo3(signature = (scenario_json, realtime_priority = Some(50), spin_us = 30, ping = None))]
pub(crate) fn kernel_run<'py>(
    py: Python<'py>,
    scenario_json: &str,
    realtime_priority: Option<i32>,
    spin_us: u64,
    ping: Option<(String, String, u32, u64, u64)>,
) -> PyResult<Bound<'py, PyDict>> {
    let s = scenario::from_json(scenario_json).map_err(scenario_error)?;
    let resolved = scenario::resolve(&s).map_err(scenario_error)?;
    let document = serde_json::to_string(&resolved.document).expect("serializes");
    let warnings: Vec<String> = resolved.warnings.iter().map(|w| w.to_string()).collect();
    let options = RunOptions {
        emulator: EmulatorConfig {
            spin: Duration::from_micros(spin_us),
            realtime: realtime_priority,
            ..EmulatorConfig::default()
        },
        ping: ping.map(|(src, dst, count, start_ns, interval_ns)| PingSpec {
            src,
            dst,
            count,
            start: Duration::from_nanos(start_ns),
            interval: Duration::from_nanos(interval_ns),
            payload: 56,
        }),
    };
    ABORT.store(false, Ordering::SeqCst);
    let t0 = std::time::Instant::now();
    let worker = std::thread::spawn(move || run::run(&resolved, &options));
    while !worker.is_finished() {
        py.allow_threads(|| std::thread::sleep(std::time::Duration::from_millis(50)));
        if let Err(e) = py.check_signals() {
            ABORT.store(true, Ordering::SeqCst);
            // Everything the run created is removed before the exception goes on.
            let _ = py.allow_threads(|| worker.join());
            return Err(e);
        }
    }
    let outcome = worker
        .join()
        .map_err(|_| PyRuntimeError::new_err("the kernel run panicked"))?;
    let wall = t0.elapsed().as_secs_f64();
    match outcome {
        Ok(k) => {
            let out = run_output(py, document, warnings, &k.report, wall)?;
            out.set_item("kernel", facts_dict(py, &k.facts)?)?;
            Ok(out)
        }
        Err(KernelError::Refused(e)) => Err(PyValueError::new_err(e.to_string())),
        Err(KernelError::Unavailable(m)) => Err(KernelUnavailable::new_err(m)),
        Err(KernelError::Interrupted) => Err(PyKeyboardInterrupt::new_err("interrupted")),
        Err(KernelError::Failed(m)) => Err(PyRuntimeError::new_err(m)),
    }
}

/// Checks a scenario (JSON text) against what this kernel can run, without running it: raises
/// ``ValueError`` naming the first field it cannot honour.
#[pyfunction]
pub(crate) fn kernel_plan(scenario_json: &str) -> PyResult<Vec<String>> {
    let s = scenario::from_json(scenario_json).map_err(scenario_error)?;
    let resolved = scenario::resolve(&s).map_err(scenario_error)?;
    let available = run::available_controls();
    let plan = startlab_kernel::plan::plan(&resolved, &available).map_err(scenario_error)?;
    startlab_kernel::testbed::layout(&resolved.network, &plan).map_err(scenario_error)?;
    Ok(plan.differences)
}

/// What runs each flow entry's connections in the kernel: one line per entry, naming Linux's
/// built-in controller or startlab's eBPF port and what it is configured with.
#[pyfunction]
pub(crate) fn kernel_controls(scenario_json: &str) -> PyResult<Vec<String>> {
    let s = scenario::from_json(scenario_json).map_err(scenario_error)?;
    let resolved = scenario::resolve(&s).map_err(scenario_error)?;
    let available = run::available_controls();
    let plan = startlab_kernel::plan::plan(&resolved, &available).map_err(scenario_error)?;
    let mut lines: Vec<String> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for c in &plan.connections {
        if !seen.insert(c.entry) {
            continue;
        }
        let what = match c.bpf {
            None => format!("Linux's built-in {}", c.cc),
            Some(k) => {
                let spec = &plan.controllers[k].spec;
                let startup = if spec.startup == "default" {
                    String::new()
                } else {
                    format!(" + {}", spec.startup)
                };
                let ssthresh = spec
                    .initial_ssthresh
                    .map_or(String::new(), |s| format!(", initial ssthresh {s}"));
                format!(
                    "startlab's eBPF port of {}{startup} (registered as {} for the run; pacing {}{ssthresh})",
                    spec.cc, c.cc, spec.pacing
                )
            }
        };
        lines.push(format!("flows[{}]: {what}", c.entry));
    }
    Ok(lines)
}

/// What the machine lacks for the kernel world, or ``None``.
#[pyfunction]
pub(crate) fn kernel_preflight() -> Option<String> {
    run::preflight().err().map(|e| e.to_string())
}

/// Removes what killed kernel runs left (namespaces, trace instances, changed module
/// parameters); returns what was removed. Refused while a run holds the machine.
#[pyfunction]
pub(crate) fn kernel_clean() -> PyResult<Vec<String>> {
    run::preflight().map_err(|e| KernelUnavailable::new_err(e.to_string()))?;
    run::clean().map_err(|e| KernelUnavailable::new_err(e.to_string()))
}
