//! The kernel world's functions in a build without it (the `kernel` feature off, as on macOS or
//! wherever libbpf cannot be built): each raises ``KernelUnavailable`` saying so, and
//! `kernel_preflight` names it as what the machine lacks, so `startlab kernel …` exits with
//! status 2 and the reason.

use super::KernelUnavailable;
use pyo3::prelude::*;

/// Why this build cannot run the kernel world.
const ABSENT: &str = "this build of startlab has no kernel world: it was built without the \
    `kernel` feature (it needs Linux with libelf, zlib and pkg-config; build it with \
    `make setup`, or `MATURIN_PEP517_ARGS=\"--features kernel\" pip install startlab`)";

fn absent<T>() -> PyResult<T> {
    Err(KernelUnavailable::new_err(ABSENT))
}

#[pyfunction]
#[pyo3(signature = (scenario_json, realtime_priority = Some(50), spin_us = 30, ping = None))]
pub(crate) fn kernel_run(
    scenario_json: &str,
    realtime_priority: Option<i32>,
    spin_us: u64,
    ping: Option<(String, String, u32, u64, u64)>,
) -> PyResult<PyObject> {
    let _ = (scenario_json, realtime_priority, spin_us, ping);
    absent()
}

#[pyfunction]
pub(crate) fn kernel_plan(scenario_json: &str) -> PyResult<Vec<String>> {
    let _ = scenario_json;
    absent()
}

#[pyfunction]
pub(crate) fn kernel_controls(scenario_json: &str) -> PyResult<Vec<String>> {
    let _ = scenario_json;
    absent()
}

#[pyfunction]
pub(crate) fn kernel_preflight() -> Option<String> {
    Some(ABSENT.to_string())
}

#[pyfunction]
pub(crate) fn kernel_clean() -> PyResult<Vec<String>> {
    absent()
}
