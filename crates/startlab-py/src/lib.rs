//! `startlab._core`: the Python face of startlab-core.
//!
//! Scenarios cross the boundary as JSON text; tables come back as columns of little-endian bytes
//! (read with `numpy.frombuffer`) or lists of strings, so no Arrow library is needed on either
//! side. The simulation runs with the GIL released.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use startlab_core::cc::registry;
use startlab_core::cc::Phase;
use startlab_core::measure::Report;
use startlab_core::scenario;

fn scenario_error(e: scenario::ScenarioError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// The version of the simulator core.
#[pyfunction]
fn version() -> &'static str {
    startlab_core::VERSION
}

/// Validates a scenario (JSON text) and returns it resolved, as JSON text.
#[pyfunction]
fn resolve(scenario_json: &str) -> PyResult<String> {
    let s = scenario::from_json(scenario_json).map_err(scenario_error)?;
    let r = scenario::resolve(&s).map_err(scenario_error)?;
    Ok(serde_json::to_string(&r).expect("a resolved scenario serializes"))
}

/// Names of the `phase` codes of the flow series.
#[pyfunction]
fn phase_names() -> Vec<&'static str> {
    Phase::NAMES.to_vec()
}

/// Every algorithm with its role, summary, source and parameters.
#[pyfunction]
fn algorithms(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let list = PyList::empty(py);
    for a in registry::algorithms() {
        let d = PyDict::new(py);
        d.set_item("name", a.name)?;
        d.set_item("role", a.role.name())?;
        d.set_item("summary", a.summary)?;
        d.set_item("source", a.source)?;
        let params = PyList::empty(py);
        for p in a.params {
            let pd = PyDict::new(py);
            pd.set_item("name", p.name)?;
            pd.set_item("default", p.default)?;
            pd.set_item("description", p.description)?;
            params.append(pd)?;
        }
        d.set_item("params", params)?;
        list.append(d)?;
    }
    Ok(list)
}

/// A column of fixed-width numbers as (dtype, little-endian bytes).
trait Column {
    const DTYPE: &'static str;
    fn put(&self, out: &mut Vec<u8>);
}
macro_rules! column {
    ($t:ty, $name:expr) => {
        impl Column for $t {
            const DTYPE: &'static str = $name;
            fn put(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    };
}
column!(f64, "f64");
column!(i64, "i64");
column!(u64, "u64");
column!(u32, "u32");
column!(u8, "u8");

struct Table<'py> {
    py: Python<'py>,
    dict: Bound<'py, PyDict>,
}

impl<'py> Table<'py> {
    fn new(py: Python<'py>) -> Self {
        Table { py, dict: PyDict::new(py) }
    }
    fn num<T: Column>(&self, name: &str, values: impl Iterator<Item = T>) -> PyResult<()> {
        let mut bytes = Vec::new();
        for v in values {
            v.put(&mut bytes);
        }
        self.dict.set_item(name, (T::DTYPE, PyBytes::new(self.py, &bytes)))
    }
    fn text<'a>(&self, name: &str, values: impl Iterator<Item = &'a str>) -> PyResult<()> {
        self.dict.set_item(name, PyList::new(self.py, values.collect::<Vec<_>>())?)
    }
}

fn tables<'py>(py: Python<'py>, r: &Report) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);

    let fs = &r.flow_series;
    let t = Table::new(py);
    t.num("time_ns", fs.time_ns.iter().copied())?;
    t.num("flow", fs.flow.iter().copied())?;
    t.num("cwnd", fs.cwnd.iter().copied())?;
    t.num("ssthresh", fs.ssthresh.iter().copied())?;
    t.num("srtt_ns", fs.srtt_ns.iter().copied())?;
    t.num("rtt_ns", fs.rtt_ns.iter().copied())?;
    t.num("in_flight", fs.in_flight.iter().copied())?;
    t.num("delivered_bytes", fs.delivered_bytes.iter().copied())?;
    t.num("phase", fs.phase.iter().copied())?;
    t.num("pacing_rate_bps", fs.pacing_rate_bps.iter().copied())?;
    out.set_item("flow_series", t.dict)?;

    let qs = &r.queue_series;
    let t = Table::new(py);
    t.num("time_ns", qs.time_ns.iter().copied())?;
    t.num("link", qs.link.iter().copied())?;
    t.num("queue_packets", qs.queue_packets.iter().copied())?;
    t.num("queue_bytes", qs.queue_bytes.iter().copied())?;
    t.num("drops", qs.drops.iter().copied())?;
    t.num("losses", qs.losses.iter().copied())?;
    t.num("busy_ns", qs.busy_ns.iter().copied())?;
    out.set_item("queue_series", t.dict)?;

    let f = &r.flows;
    let t = Table::new(py);
    t.num("flow", f.iter().map(|x| x.flow))?;
    t.text("label", f.iter().map(|x| x.label.as_str()))?;
    t.text("kind", f.iter().map(|x| x.kind.as_str()))?;
    t.text("cc", f.iter().map(|x| x.cc.as_str()))?;
    t.text("startup", f.iter().map(|x| x.startup.as_str()))?;
    t.text("src", f.iter().map(|x| x.src.as_str()))?;
    t.text("dst", f.iter().map(|x| x.dst.as_str()))?;
    t.num("start_ns", f.iter().map(|x| x.start_ns))?;
    t.num("size_bytes", f.iter().map(|x| x.size_bytes))?;
    t.num("delivered_bytes", f.iter().map(|x| x.delivered_bytes))?;
    t.num("goodput_bps", f.iter().map(|x| x.goodput_bps))?;
    t.num("sent_packets", f.iter().map(|x| x.sent_packets))?;
    t.num("retransmissions", f.iter().map(|x| x.retransmissions))?;
    t.num("timeouts", f.iter().map(|x| x.timeouts))?;
    t.num("fast_recoveries", f.iter().map(|x| x.fast_recoveries))?;
    t.num("undos", f.iter().map(|x| x.undos))?;
    t.num("drops", f.iter().map(|x| x.drops))?;
    t.num("ss_exit_ns", f.iter().map(|x| x.ss_exit_ns))?;
    t.num("ss_exit_cwnd", f.iter().map(|x| x.ss_exit_cwnd))?;
    t.text("ss_exit_reason", f.iter().map(|x| x.ss_exit_reason.as_str()))?;
    t.num("congestion_losses", f.iter().map(|x| x.congestion_losses))?;
    t.num("noncongestion_losses", f.iter().map(|x| x.noncongestion_losses))?;
    t.num("completion_ns", f.iter().map(|x| x.completion_ns))?;
    out.set_item("flows", t.dict)?;

    let l = &r.links;
    let t = Table::new(py);
    t.num("link", l.iter().map(|x| x.link))?;
    t.text("name", l.iter().map(|x| x.name.as_str()))?;
    t.text("alias", l.iter().map(|x| x.alias.as_str()))?;
    t.text("src", l.iter().map(|x| x.src.as_str()))?;
    t.text("dst", l.iter().map(|x| x.dst.as_str()))?;
    t.num("rate_bps", l.iter().map(|x| x.rate_bps))?;
    t.num("delay_ns", l.iter().map(|x| x.delay_ns))?;
    t.text("queue", l.iter().map(|x| x.queue.as_str()))?;
    t.num("limit_packets", l.iter().map(|x| x.limit_packets))?;
    t.num("limit_bytes", l.iter().map(|x| x.limit_bytes))?;
    t.num("forwarded_packets", l.iter().map(|x| x.forwarded_packets))?;
    t.num("forwarded_bytes", l.iter().map(|x| x.forwarded_bytes))?;
    t.num("drops", l.iter().map(|x| x.drops))?;
    t.num("losses", l.iter().map(|x| x.losses))?;
    t.num("utilization", l.iter().map(|x| x.utilization))?;
    t.num("max_queue_packets", l.iter().map(|x| x.max_queue_packets))?;
    out.set_item("links", t.dict)?;

    let w = &r.windows;
    let t = Table::new(py);
    t.text("link", w.iter().map(|x| x.link.as_str()))?;
    t.num("from_ns", w.iter().map(|x| x.from_ns))?;
    t.num("to_ns", w.iter().map(|x| x.to_ns))?;
    t.num("utilization", w.iter().map(|x| x.utilization))?;
    out.set_item("windows", t.dict)?;
    Ok(out)
}

/// Runs a scenario (JSON text): returns {"resolved": str, "tables": {...}, "stats": {...}}.
#[pyfunction]
fn run<'py>(py: Python<'py>, scenario_json: &str) -> PyResult<Bound<'py, PyDict>> {
    let text = scenario_json.to_owned();
    let (outcome, wall) = py.allow_threads(move || {
        let t0 = std::time::Instant::now();
        let outcome = scenario::run_json(&text);
        (outcome, t0.elapsed().as_secs_f64())
    });
    let (resolved, report) = outcome.map_err(scenario_error)?;
    let out = PyDict::new(py);
    out.set_item("resolved", serde_json::to_string(&resolved).expect("serializes"))?;
    out.set_item("tables", tables(py, &report)?)?;
    let stats = PyDict::new(py);
    stats.set_item("events", report.stats.events)?;
    stats.set_item("packets_forwarded", report.stats.packets_forwarded)?;
    stats.set_item("sim_time_ns", report.stats.sim_time_ns)?;
    stats.set_item("wall_time_s", wall)?;
    stats.set_item("jain_index", report.stats.jain_index)?;
    out.set_item("stats", stats)?;
    Ok(out)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(resolve, m)?)?;
    m.add_function(wrap_pyfunction!(phase_names, m)?)?;
    m.add_function(wrap_pyfunction!(algorithms, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    Ok(())
}
