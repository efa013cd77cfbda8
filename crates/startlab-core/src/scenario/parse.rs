//! Parsing: text (TOML, or the JSON the Python package sends) into the text model, where every
//! field a user may leave out is optional. A document that parses has known fields of the right
//! types, and (from TOML) no NaN or infinity anywhere.

use super::model::Scenario;
use super::{err, ScenarioError};
use std::fmt;

fn from_path_error<E: fmt::Display>(e: serde_path_to_error::Error<E>) -> ScenarioError {
    let path = e.path().to_string();
    let path = if path == "." { String::new() } else { path };
    let message = e.inner().to_string();
    // toml renders the location over several lines: keep the position and the reason.
    let lines: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let message = match (lines.first(), lines.last()) {
        (Some(first), Some(last)) if lines.len() > 1 && first.starts_with("TOML parse error") => {
            format!("{last} ({first})")
        }
        _ => message.trim().to_string(),
    };
    err(path, message)
}

/// Parses a scenario from its JSON form (what the Python package sends).
pub fn from_json(text: &str) -> Result<Scenario, ScenarioError> {
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de)
        .map_err(from_path_error)
        .map_err(|mut e| {
            // Positions in the JSON text mean nothing to the author of the TOML file it came from.
            if let Some(i) = e.message.rfind(" at line ") {
                if e.message[i..].contains(" column ") {
                    e.message.truncate(i);
                }
            }
            e
        })
}

/// Parses a scenario from TOML.
pub fn from_toml(text: &str) -> Result<Scenario, ScenarioError> {
    // TOML has nan and inf; no field of a scenario means anything by them, and an algorithm's
    // parameters would otherwise read them as "not given" (JSON has neither).
    if let Ok(value) = text.parse::<toml::Table>() {
        if let Some((path, x)) = non_finite(&toml::Value::Table(value), String::new()) {
            return Err(err(
                path,
                format!("invalid value {x}: expected a finite number"),
            ));
        }
    }
    let de = toml::Deserializer::new(text);
    serde_path_to_error::deserialize(de).map_err(from_path_error)
}

/// The dotted path of the first NaN or infinity in a TOML value.
fn non_finite(v: &toml::Value, path: String) -> Option<(String, f64)> {
    match v {
        toml::Value::Float(x) if !x.is_finite() => Some((path, *x)),
        toml::Value::Table(t) => t.iter().find_map(|(k, v)| {
            non_finite(
                v,
                if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                },
            )
        }),
        toml::Value::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, v)| non_finite(v, format!("{path}[{i}]"))),
        _ => None,
    }
}
