//! Every algorithm parameter is checked against its declaration before a run: the inputs that
//! used to exhaust memory or run silently are refused with the parameter named, and no value,
//! however extreme, crashes a run.

use proptest::prelude::*;
use startlab_core::cc::params::Allowed;
use startlab_core::cc::registry::{self, Role};
use startlab_core::scenario;

fn resolve(flow: &str) -> Result<scenario::ResolvedScenario, String> {
    let text = format!(
        "duration = \"2s\"\n[topology]\nkind = \"dumbbell\"\nbottleneck = {{ rate = \"10Mbps\", delay = \"20ms\" }}\n[[flows]]\n{flow}\n"
    );
    scenario::from_toml(&text)
        .and_then(|s| scenario::resolve(&s))
        .map_err(|e| e.to_string())
}

fn refusal(flow: &str) -> String {
    match resolve(flow) {
        Ok(_) => panic!("accepted: {flow}"),
        Err(e) => e,
    }
}

#[test]
fn the_inputs_that_exhausted_memory_or_ran_silently_are_refused_by_name() {
    let cases = [
        ("cc = \"reno\"\ncc_params = { beta = 1e12 }", "flows[0].cc_params.beta: invalid value 1000000000000.0: expected 0 < beta < 1"),
        ("cc = \"newreno\"\ncc_params = { beta = 2 }", "flows[0].cc_params.beta: invalid value 2: expected 0 < beta < 1"),
        ("startup = \"pstart\"\nstartup_params = { gamma = 1e12 }", "flows[0].startup_params.gamma: invalid value 1000000000000.0: expected 0 < gamma <= 100"),
        ("startup = \"search\"\nstartup_params = { bins = 1000000000 }", "flows[0].startup_params.bins: invalid value 1000000000: expected 1 <= bins <= 1000"),
        ("startup = \"search\"\nstartup_params = { extra_bins = 1000000000 }", "flows[0].startup_params.extra_bins: invalid value 1000000000: expected 0 <= extra_bins <= 1000"),
        ("cc = \"vegas\"\ncc_params = { loss_beta = 1e12 }", "flows[0].cc_params.loss_beta: invalid value 1000000000000.0: expected 0 < loss_beta < 1"),
        ("cc = \"gallop-vegas\"\ncc_params = { loss_beta = 1e12 }", "flows[0].cc_params.loss_beta"),
        ("startup = \"hystart++\"\nstartup_params = { css_growth_divisor = 0 }", "flows[0].startup_params.css_growth_divisor: invalid value 0: expected 1 <= css_growth_divisor <= 1000"),
        ("cc = \"vegas\"\ncc_params = { alpha = 5, beta = 3 }", "flows[0].cc_params.alpha: alpha = 5 is above beta = 3"),
        ("cc = \"reno\"\ncc_params = { beta = nan }", "flows[0].cc_params.beta: invalid value NaN: expected a finite number"),
        ("cc = \"reno\"\ncc_params = { beta = -inf }", "flows[0].cc_params.beta: invalid value -inf: expected a finite number"),
        // Wrong types: the value and what is allowed, under the parameter's name.
        ("cc = \"reno\"\ncc_params = { beta = \"x\" }", "flows[0].cc_params.beta: invalid value \"x\": expected a number, 0 < beta < 1"),
        ("cc = \"cubic\"\ncc_params = { constants = \"both\" }", "flows[0].cc_params.constants: invalid value \"both\": expected one of \"linux\", \"dissertation\""),
        ("startup = \"hystart\"\nstartup_params = { detect = 2 }", "flows[0].startup_params.detect: invalid value 2: expected one of \"both\", \"train\", \"delay\""),
        ("startup = \"search\"\nstartup_params = { bins = 2.5 }", "flows[0].startup_params.bins: invalid value 2.5: expected a whole number, 1 <= bins <= 1000"),
        ("startup = \"search\"\nstartup_params = { rollback = 1 }", "flows[0].startup_params.rollback: invalid value 1: expected true or false"),
        // Combinations, each value in its range: named too.
        ("cc = \"bic\"\ncc_params = { s_min = 64 }", "flows[0].cc_params.s_min: s_min = 64 is above s_max = 32: expected s_min <= s_max"),
        ("cc = \"blast\"\ncc_params = { gamma_l = 0.5 }", "flows[0].cc_params.gamma_l: gamma_l = 0.5 is above gamma_h = 0.35"),
        ("startup = \"hystart\"\nstartup_params = { delay_max_ms = 1 }", "flows[0].startup_params.delay_max_ms: delay_min_ms = 2 is above delay_max_ms = 1"),
        ("cc = \"hstcp\"\ncc_params = { low_window = 100000 }", "flows[0].cc_params.high_window: high_window = 83000 is not above low_window = 100000"),
        ("cc = \"hstcp\"\ncc_params = { high_p = 0.005 }", "flows[0].cc_params.high_p: high_p = 0.005 is not below Low_P"),
    ];
    for (flow, expected) in cases {
        let e = refusal(flow);
        assert!(
            e.starts_with(expected),
            "{flow}\n  gave: {e}\n  expected: {expected}"
        );
    }
}

/// A value for a declared parameter: inside its range, at its bounds, or far outside.
fn value_for(allowed: Allowed, pick: u8, t: f64) -> String {
    match allowed {
        Allowed::Any => {
            ["true", "false", "\"linux\"", "\"both\"", "1", "\"x\""][pick as usize % 6].to_string()
        }
        Allowed::Range { min, max, .. } => {
            let x = match pick % 8 {
                0 => min,
                1 => max,
                2 => min + (max - min) * t,
                3 => -1.0,
                4 => 1e12,
                5 => 0.0,
                6 => max * 2.0 + 1.0,
                _ => (min + (max - min) * t).round(),
            };
            if x.fract() == 0.0 && x.abs() < 1e15 {
                format!("{}", x as i64)
            } else {
                format!("{x:e}")
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Any algorithm with any of its parameters at any value: refused naming that parameter (or,
    /// for a combination, naming another one and saying this one's value), or a run that
    /// completes with sane windows.
    #[test]
    fn any_parameter_value_is_refused_by_name_or_runs(which in any::<prop::sample::Index>(), param in any::<prop::sample::Index>(), pick in any::<u8>(), t in 0.0..1.0f64) {
        let algorithms: Vec<_> = registry::algorithms().into_iter().filter(|a| !a.params.is_empty() && matches!(a.role, Role::Cc | Role::Startup)).collect();
        let a = which.get(&algorithms);
        let p = param.get(&a.params);
        let value = value_for(p.range, pick, t);
        let flow = match a.role {
            Role::Cc => format!("cc = \"{}\"\ncc_params = {{ {} = {value} }}", a.name, p.name),
            _ => format!("cc = \"{}\"\nstartup = \"{}\"\nstartup_params = {{ {} = {value} }}", registry::host_controller(a.name), a.name, p.name),
        };
        match resolve(&flow) {
            Err(e) => {
                let group = if a.role == Role::Cc { "cc_params" } else { "startup_params" };
                let this = e.starts_with(&format!("flows[0].{group}.{}: ", p.name));
                let other = a.params.iter().any(|q| e.starts_with(&format!("flows[0].{group}.{}: ", q.name)));
                prop_assert!(this || (other && e.contains(p.name)), "{flow}: {e}");
            }
            Ok(r) => {
                let report = scenario::build(r).run();
                let fs = &report.flow_series;
                for i in 0..fs.len() {
                    prop_assert!(fs.cwnd[i].is_finite() && fs.cwnd[i] >= 1.0, "{flow}: cwnd {}", fs.cwnd[i]);
                }
                prop_assert!(report.flows.row(0).delivered_bytes > 0, "{flow}: nothing delivered");
            }
        }
    }
}
