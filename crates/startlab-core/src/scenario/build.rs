//! Running: a resolved scenario made into the simulation that runs it. The simulation reads
//! only [`super::resolved`]; this stage is the only part of the scenario that knows it.

use super::parse::from_json;
use super::{resolve, ResolvedScenario, Scenario, ScenarioError};
use crate::measure::Report;
use crate::simulation::Simulation;

/// The simulation of a resolved scenario.
pub fn build(s: ResolvedScenario) -> Simulation {
    Simulation::from_resolved(s)
}

/// Parses, resolves and runs a scenario given as JSON. Returns the filled-in document and the
/// report.
pub fn run_json(text: &str) -> Result<(Scenario, Report), ScenarioError> {
    let resolved = resolve(&from_json(text)?)?;
    let document = resolved.document.clone();
    Ok((document, build(resolved).run()))
}
