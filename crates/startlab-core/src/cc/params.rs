//! Algorithm parameters, declared next to each algorithm: name, unit, allowed values and one
//! line of meaning (as ns-3's `TypeId::AddAttribute` with a checker, or Linux's `module_param`
//! with its bounds), and checked before a run starts.
//!
//! A configuration struct is the algorithm's parameters: its fields are the names a scenario
//! writes in `cc_params` / `startup_params`, its `Default` the paper's constants. Its
//! [`AlgorithmConfig::PARAMS`] declares each field; [`parse`] refuses an unknown name, a value of
//! the wrong type, a value outside its declared range and a combination the algorithm cannot run
//! ([`AlgorithmConfig::check`]), naming the parameter.

use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt;

/// Parameters as written in a scenario (`cc_params`, `startup_params`).
pub type Params = serde_json::Map<String, serde_json::Value>;

/// The values a parameter may take beyond its type (which serde checks).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Allowed {
    /// Any value of the type: a flag or one of the names of an enumeration.
    Any,
    /// A number between two bounds, each inclusive or not.
    Range {
        min: f64,
        min_inclusive: bool,
        max: f64,
        max_inclusive: bool,
    },
}

/// `[min, max]`.
pub const fn closed(min: f64, max: f64) -> Allowed {
    Allowed::Range {
        min,
        min_inclusive: true,
        max,
        max_inclusive: true,
    }
}

/// `(min, max)`.
pub const fn open(min: f64, max: f64) -> Allowed {
    Allowed::Range {
        min,
        min_inclusive: false,
        max,
        max_inclusive: false,
    }
}

/// `(min, max]`.
pub const fn above(min: f64, max: f64) -> Allowed {
    Allowed::Range {
        min,
        min_inclusive: false,
        max,
        max_inclusive: true,
    }
}

/// `[min, max)`.
pub const fn below(min: f64, max: f64) -> Allowed {
    Allowed::Range {
        min,
        min_inclusive: true,
        max,
        max_inclusive: false,
    }
}

/// One declared parameter.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Param {
    pub name: &'static str,
    /// `"segments"`, `"s"`, `"ms"`, … or `""` for a plain number, a flag or a name.
    pub unit: &'static str,
    pub allowed: Allowed,
    pub description: &'static str,
}

/// A declaration.
pub const fn param(
    name: &'static str,
    unit: &'static str,
    allowed: Allowed,
    description: &'static str,
) -> Param {
    Param {
        name,
        unit,
        allowed,
        description,
    }
}

impl Param {
    /// The allowed values in words: `0 < beta < 1`, or `""` for [`Allowed::Any`].
    pub fn allowed_text(&self) -> String {
        match self.allowed {
            Allowed::Any => String::new(),
            Allowed::Range {
                min,
                min_inclusive,
                max,
                max_inclusive,
            } => format!(
                "{min} {} {} {} {max}",
                if min_inclusive { "<=" } else { "<" },
                self.name,
                if max_inclusive { "<=" } else { "<" }
            ),
        }
    }

    /// Checks a value as written; `null` (the default) is always allowed.
    pub fn check(&self, value: &serde_json::Value) -> Result<(), ParamError> {
        let Allowed::Range {
            min,
            min_inclusive,
            max,
            max_inclusive,
        } = self.allowed
        else {
            return Ok(());
        };
        let Some(x) = value.as_f64() else {
            // Not a number: serde says what type it needed.
            return Ok(());
        };
        let fits = x.is_finite()
            && (if min_inclusive { x >= min } else { x > min })
            && (if max_inclusive { x <= max } else { x < max });
        if fits {
            Ok(())
        } else {
            Err(ParamError::of(
                self.name,
                format!("invalid value {value}: expected {}", self.allowed_text()),
            ))
        }
    }
}

/// What is wrong with an algorithm's parameters: which one (if one), and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError {
    pub name: Option<String>,
    pub message: String,
}

impl ParamError {
    /// An error about parameter `name`.
    pub fn of(name: &str, message: impl Into<String>) -> Self {
        ParamError {
            name: Some(name.to_string()),
            message: message.into(),
        }
    }
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<String> for ParamError {
    fn from(message: String) -> Self {
        ParamError {
            name: None,
            message,
        }
    }
}

/// A configuration struct of an algorithm.
pub trait AlgorithmConfig: Serialize + DeserializeOwned + Default {
    /// Every field, declared.
    const PARAMS: &'static [Param];

    /// Combinations of values the algorithm cannot run with (each value already in range).
    fn check(&self) -> Result<(), ParamError> {
        Ok(())
    }
}

/// Reads an algorithm's parameters: unknown names, wrong types, values out of their declared
/// range and impossible combinations are refused.
pub fn parse<C: AlgorithmConfig>(params: &Params) -> Result<C, ParamError> {
    for (name, value) in params {
        if let Some(p) = C::PARAMS.iter().find(|p| p.name == name) {
            p.check(value)?;
        }
    }
    let config: C = serde_path_to_error::deserialize(serde_json::Value::Object(params.clone()))
        .map_err(|e| {
            // The parameter whose value serde refused, if one was (an unknown name is not).
            let declared = match e.path().iter().next() {
                Some(serde_path_to_error::Segment::Map { key }) => C::PARAMS
                    .iter()
                    .find(|p| p.name == key.as_str())
                    .zip(params.get(key.as_str())),
                _ => None,
            };
            let message = e.inner().to_string();
            match declared {
                Some((p, value)) => wrong_type::<C>(p, value, &message),
                None => ParamError::from(message),
            }
        })?;
    config.check()?;
    Ok(config)
}

/// Parameter `p` refused by serde with `message` (`invalid type: string "x", expected f64`), in
/// the words of the range check: the value as written and what is allowed.
fn wrong_type<C: AlgorithmConfig>(
    p: &Param,
    value: &serde_json::Value,
    message: &str,
) -> ParamError {
    let serde_expected = message.rsplit_once(", expected ").map_or("", |(_, e)| e);
    let kind = match serde_expected {
        "f32" | "f64" => "a number".to_string(),
        "u8" | "u16" | "u32" | "u64" | "usize" | "i8" | "i16" | "i32" | "i64" | "isize" => {
            "a whole number".to_string()
        }
        "a boolean" => "true or false".to_string(),
        other => match names_of::<C>(p.name) {
            Some(names) => format!("one of {names}"),
            None => other.replace('`', "\""),
        },
    };
    let expected = match p.allowed {
        Allowed::Any => kind,
        Allowed::Range { .. } => format!("{kind}, {}", p.allowed_text()),
    };
    ParamError::of(
        p.name,
        format!("invalid value {value}: expected {expected}"),
    )
}

/// The names an enumeration parameter takes (`"linux", "dissertation"`), from serde's refusal
/// of an empty name; `None` if `name` is not an enumeration.
fn names_of<C: AlgorithmConfig>(name: &str) -> Option<String> {
    let mut probe = Params::new();
    probe.insert(name.to_string(), serde_json::Value::String(String::new()));
    let refusal = serde_json::from_value::<C>(serde_json::Value::Object(probe))
        .err()?
        .to_string();
    let listed = refusal.strip_prefix("unknown variant ``, expected ")?;
    // `a` or `b`, or one of `a`, `b`, `c`: the names are between the backquotes.
    let names: Vec<String> = listed
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|n| format!("\"{n}\""))
        .collect();
    (!names.is_empty()).then(|| names.join(", "))
}

/// `Err` naming `name` unless `ok`.
pub fn require(ok: bool, name: &str, message: impl FnOnce() -> String) -> Result<(), ParamError> {
    if ok {
        Ok(())
    } else {
        Err(ParamError::of(name, message()))
    }
}

/// Checks that `C::PARAMS` lists exactly the fields of `C`, that the defaults read back as the
/// same configuration, and that an unknown parameter is refused.
#[cfg(test)]
pub(crate) fn assert_params_listed<C: AlgorithmConfig>() {
    let defaults = serde_json::to_value(C::default()).unwrap();
    let mut keys: Vec<String> = defaults.as_object().unwrap().keys().cloned().collect();
    let mut listed: Vec<String> = C::PARAMS.iter().map(|p| p.name.to_string()).collect();
    keys.sort();
    listed.sort();
    assert_eq!(keys, listed);
    let back: C = parse(defaults.as_object().unwrap()).unwrap();
    assert_eq!(serde_json::to_value(back).unwrap(), defaults);
    let mut bad = Params::new();
    bad.insert("no_such_parameter".into(), serde_json::json!(1));
    assert!(parse::<C>(&bad).is_err());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_name_the_parameter_and_the_bounds() {
        let beta = param("beta", "", open(0.0, 1.0), "multiplicative decrease");
        assert!(beta.check(&serde_json::json!(0.5)).is_ok());
        let e = beta.check(&serde_json::json!(1e12)).unwrap_err();
        assert_eq!(e.name.as_deref(), Some("beta"));
        assert_eq!(
            e.message,
            "invalid value 1000000000000.0: expected 0 < beta < 1"
        );
        assert!(beta.check(&serde_json::json!(0)).is_err());
        assert!(beta.check(&serde_json::json!(1)).is_err());
        let bins = param("bins", "", closed(1.0, 1000.0), "bins");
        assert!(bins.check(&serde_json::json!(1000)).is_ok());
        assert_eq!(bins.allowed_text(), "1 <= bins <= 1000");
        assert_eq!(
            param("x", "", above(0.0, 10.0), "").allowed_text(),
            "0 < x <= 10"
        );
        // Not a number, or null: left to serde and to the default.
        assert!(beta.check(&serde_json::json!("half")).is_ok());
        assert!(beta.check(&serde_json::Value::Null).is_ok());
    }

    #[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum Constants {
        Linux,
        Dissertation,
    }

    #[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
    #[serde(deny_unknown_fields, default)]
    struct Config {
        beta: f64,
        bins: u32,
        rollback: bool,
        constants: Option<Constants>,
    }

    impl Default for Config {
        fn default() -> Self {
            Config {
                beta: 0.5,
                bins: 10,
                rollback: true,
                constants: None,
            }
        }
    }

    impl AlgorithmConfig for Config {
        const PARAMS: &'static [Param] = &[
            param("beta", "", open(0.0, 1.0), ""),
            param("bins", "", closed(1.0, 1000.0), ""),
            param("rollback", "", Allowed::Any, ""),
            param("constants", "", Allowed::Any, ""),
        ];
    }

    fn refusal(key: &str, value: serde_json::Value) -> ParamError {
        let mut p = Params::new();
        p.insert(key.into(), value);
        parse::<Config>(&p).unwrap_err()
    }

    #[test]
    fn wrong_types_name_the_parameter_the_value_and_what_is_allowed() {
        let cases = [
            (
                "beta",
                serde_json::json!("x"),
                "invalid value \"x\": expected a number, 0 < beta < 1",
            ),
            (
                "bins",
                serde_json::json!(2.5),
                "invalid value 2.5: expected a whole number, 1 <= bins <= 1000",
            ),
            (
                "rollback",
                serde_json::json!(1),
                "invalid value 1: expected true or false",
            ),
            (
                "constants",
                serde_json::json!("both"),
                "invalid value \"both\": expected one of \"linux\", \"dissertation\"",
            ),
            (
                "constants",
                serde_json::json!(1),
                "invalid value 1: expected one of \"linux\", \"dissertation\"",
            ),
        ];
        for (key, value, message) in cases {
            let e = refusal(key, value);
            assert_eq!(
                (e.name.as_deref(), e.message.as_str()),
                (Some(key), message)
            );
        }
        // An unknown name is no parameter's: serde's message lists the names.
        let e = refusal("betta", serde_json::json!(0.5));
        assert_eq!(e.name, None);
        assert!(e.message.contains("unknown field `betta`"), "{}", e.message);
    }
}
