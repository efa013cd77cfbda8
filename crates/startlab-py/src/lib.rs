//! `startlab._core`: the Python face of startlab-core.
//!
//! Scenarios cross the boundary as JSON text; tables come back as columns of little-endian bytes
//! with a validity mask for nullable columns (read with `numpy.frombuffer`) or lists of strings,
//! so no Arrow library is needed on either side. The columns are walked from the core's declared
//! schema ([`startlab_core::measure::schema`]), which `schema()` also hands to Python. The
//! simulation runs with the GIL released.

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use pyo3::IntoPyObjectExt;
use startlab_core::cc::registry;
use startlab_core::cc::Phase;
use startlab_core::measure::schema::{ColumnData, ColumnDef, Table};
use startlab_core::measure::{
    self, FlowSeries, Flows, Links, QueueSeries, Report, Requests, Windows,
};
use startlab_core::scenario;

#[cfg(feature = "kernel")]
mod kernel;
#[cfg(not(feature = "kernel"))]
mod kernel_absent;
#[cfg(not(feature = "kernel"))]
use kernel_absent as kernel;

create_exception!(
    _core,
    KernelUnavailable,
    pyo3::exceptions::PyException,
    "The machine cannot run the kernel world now (not root, no TUN, another run holds it, or \
     this build has no kernel world)."
);

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
    Ok(serde_json::to_string(&r.document).expect("a resolved scenario serializes"))
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
            pd.set_item("unit", p.unit)?;
            pd.set_item("allowed", p.allowed)?;
            params.append(pd)?;
        }
        d.set_item("params", params)?;
        list.append(d)?;
    }
    Ok(list)
}

/// The little-endian bytes of fixed-width numbers.
trait Le: Copy + Default {
    fn put(self, out: &mut Vec<u8>);
}
macro_rules! le {
    ($($t:ty),*) => { $( impl Le for $t {
        fn put(self, out: &mut Vec<u8>) { out.extend_from_slice(&self.to_le_bytes()); }
    } )* };
}
le!(f64, i64, u64, u32, u8);

fn le_bytes<T: Le>(values: impl Iterator<Item = T>) -> Vec<u8> {
    let mut out = Vec::new();
    for v in values {
        v.put(&mut out);
    }
    out
}

/// A column as Python gets it: `(dtype, values, validity)` for numbers — little-endian bytes,
/// and one byte per row (1 = present) or `None` when the column cannot hold nulls — or a list
/// of `str`/`None` for text.
fn column<'py>(
    py: Python<'py>,
    def: &ColumnDef,
    data: ColumnData<'_>,
) -> PyResult<Bound<'py, PyAny>> {
    fn numbers<'py, T: Le>(
        py: Python<'py>,
        dtype: &str,
        values: &[Option<T>],
    ) -> PyResult<Bound<'py, PyAny>> {
        let bytes = le_bytes(values.iter().map(|v| v.unwrap_or_default()));
        let valid: Vec<u8> = values.iter().map(|v| v.is_some() as u8).collect();
        (dtype, PyBytes::new(py, &bytes), PyBytes::new(py, &valid)).into_bound_py_any(py)
    }
    fn plain<'py, T: Le>(
        py: Python<'py>,
        dtype: &str,
        values: &[T],
    ) -> PyResult<Bound<'py, PyAny>> {
        let bytes = le_bytes(values.iter().copied());
        (dtype, PyBytes::new(py, &bytes), py.None()).into_bound_py_any(py)
    }
    let dtype = def.dtype.name();
    match data {
        ColumnData::F64(v) => plain(py, dtype, v),
        ColumnData::I64(v) => plain(py, dtype, v),
        ColumnData::U64(v) => plain(py, dtype, v),
        ColumnData::U32(v) => plain(py, dtype, v),
        ColumnData::U8(v) => plain(py, dtype, v),
        ColumnData::OptF64(v) => numbers(py, dtype, v),
        ColumnData::OptI64(v) => numbers(py, dtype, v),
        ColumnData::OptU64(v) => numbers(py, dtype, v),
        ColumnData::Str(v) => PyList::new(py, v.iter().map(String::as_str))?.into_bound_py_any(py),
        ColumnData::OptStr(v) => {
            PyList::new(py, v.iter().map(Option::as_deref))?.into_bound_py_any(py)
        }
    }
}

fn table<'py, T: Table>(py: Python<'py>, t: &T) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (def, data) in t.columns() {
        dict.set_item(def.name, column(py, def, data)?)?;
    }
    Ok(dict)
}

fn tables<'py>(py: Python<'py>, r: &Report) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item(FlowSeries::DEF.name, table(py, &r.flow_series)?)?;
    out.set_item(QueueSeries::DEF.name, table(py, &r.queue_series)?)?;
    out.set_item(Flows::DEF.name, table(py, &r.flows)?)?;
    out.set_item(Links::DEF.name, table(py, &r.links)?)?;
    out.set_item(Windows::DEF.name, table(py, &r.windows)?)?;
    out.set_item(Requests::DEF.name, table(py, &r.requests)?)?;
    Ok(out)
}

/// The declared tables: `[{"name", "doc", "columns": [{"name", "dtype", "nullable", "unit",
/// "doc"}]}]`, in the order they are written.
#[pyfunction]
fn schema(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let list = PyList::empty(py);
    for t in measure::TABLES {
        let d = PyDict::new(py);
        d.set_item("name", t.name)?;
        d.set_item("doc", t.doc.trim())?;
        let columns = PyList::empty(py);
        for c in t.columns {
            let cd = PyDict::new(py);
            cd.set_item("name", c.name)?;
            cd.set_item("dtype", c.dtype.name())?;
            cd.set_item("nullable", c.nullable)?;
            cd.set_item("unit", c.unit)?;
            cd.set_item("doc", c.doc.trim())?;
            columns.append(cd)?;
        }
        d.set_item("columns", columns)?;
        list.append(d)?;
    }
    Ok(list)
}

/// What a scenario (JSON text) resolves to, without running it: its links, hosts, flows with
/// their propagation RTTs, the BDP and the sampled links.
#[pyfunction]
fn describe<'py>(py: Python<'py>, scenario_json: &str) -> PyResult<Bound<'py, PyDict>> {
    let s = scenario::from_json(scenario_json).map_err(scenario_error)?;
    let resolved = scenario::resolve(&s).map_err(scenario_error)?;
    let d = resolved.describe();
    let out = PyDict::new(py);
    let warnings: Vec<String> = resolved.warnings.iter().map(|w| w.to_string()).collect();
    out.set_item("warnings", warnings)?;
    let links = PyList::empty(py);
    for l in &d.links {
        let ld = PyDict::new(py);
        ld.set_item("link", l.link)?;
        ld.set_item("name", &l.name)?;
        ld.set_item("alias", &l.alias)?;
        ld.set_item("src", &l.src)?;
        ld.set_item("dst", &l.dst)?;
        ld.set_item("rate_bps", l.rate.bps_f64())?;
        ld.set_item("delay_ns", l.delay.as_nanos())?;
        links.append(ld)?;
    }
    out.set_item("links", links)?;
    out.set_item("hosts", &d.hosts)?;
    let flows = PyList::empty(py);
    for f in &d.flows {
        let fd = PyDict::new(py);
        fd.set_item("entry", f.entry)?;
        fd.set_item("label", &f.label)?;
        fd.set_item("kind", &f.kind)?;
        fd.set_item("src", &f.src)?;
        fd.set_item("dst", &f.dst)?;
        fd.set_item("rtt_ns", f.rtt.as_nanos())?;
        flows.append(fd)?;
    }
    out.set_item("flows", flows)?;
    out.set_item("bdp_rtt_ns", d.bdp.rtt.as_nanos())?;
    out.set_item("bdp_packets", d.bdp.packets)?;
    out.set_item("sampled_links", &d.sampled_links)?;
    Ok(out)
}

/// Runs a scenario (JSON text): returns {"resolved": str, "tables": {...}, "stats": {...}}.
#[pyfunction]
fn run<'py>(py: Python<'py>, scenario_json: &str) -> PyResult<Bound<'py, PyDict>> {
    let text = scenario_json.to_owned();
    let (outcome, wall) = py.allow_threads(move || {
        let t0 = std::time::Instant::now();
        let outcome = scenario::from_json(&text)
            .and_then(|s| scenario::resolve(&s))
            .map(|r| {
                let document = serde_json::to_string(&r.document).expect("serializes");
                let warnings: Vec<String> = r.warnings.iter().map(|w| w.to_string()).collect();
                (document, warnings, scenario::build(r).run())
            });
        (outcome, t0.elapsed().as_secs_f64())
    });
    let (resolved, warnings, report) = outcome.map_err(scenario_error)?;
    run_output(py, resolved, warnings, &report, wall)
}

/// The dict `run` and `kernel_run` return: the resolved scenario, the warnings, the tables and
/// the run's counters.
fn run_output<'py>(
    py: Python<'py>,
    resolved: String,
    warnings: Vec<String>,
    report: &Report,
    wall: f64,
) -> PyResult<Bound<'py, PyDict>> {
    if let Some(e) = report.errors.first() {
        // A controller that broke while running: no result is written.
        return Err(PyValueError::new_err(format!("flows: {e}")));
    }
    let out = PyDict::new(py);
    out.set_item("resolved", resolved)?;
    out.set_item("warnings", warnings)?;
    out.set_item("tables", tables(py, report)?)?;
    let stats = PyDict::new(py);
    stats.set_item("events", report.stats.events)?;
    stats.set_item("packets_forwarded", report.stats.packets_forwarded)?;
    stats.set_item("sim_time_ns", report.stats.sim_time_ns)?;
    stats.set_item("wall_time_s", wall)?;
    stats.set_item("jain_index", report.stats.jain_index)?;
    stats.set_item("packets_created", report.stats.packets_created)?;
    stats.set_item("packets_delivered", report.stats.packets_delivered)?;
    stats.set_item("packets_dropped", report.stats.packets_dropped)?;
    stats.set_item("packets_in_network", report.stats.packets_in_network)?;
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
    m.add_function(wrap_pyfunction!(schema, m)?)?;
    m.add_function(wrap_pyfunction!(describe, m)?)?;
    m.add("KernelUnavailable", m.py().get_type::<KernelUnavailable>())?;
    m.add("HAS_KERNEL_WORLD", cfg!(feature = "kernel"))?;
    // The kernel world's functions, from the world or from the stand-ins of a build without it.
    m.add_function(wrap_pyfunction!(kernel::kernel_run, m)?)?;
    m.add_function(wrap_pyfunction!(kernel::kernel_plan, m)?)?;
    m.add_function(wrap_pyfunction!(kernel::kernel_controls, m)?)?;
    m.add_function(wrap_pyfunction!(kernel::kernel_preflight, m)?)?;
    m.add_function(wrap_pyfunction!(kernel::kernel_clean, m)?)?;
    Ok(())
}
