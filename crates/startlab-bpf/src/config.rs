//! A scenario's controller written into the object's `config` (bpf/controller.bpf.c) before it
//! is loaded: which congestion control and start-up algorithm run, the pacing mode, the initial
//! ssthresh, and every parameter with the simulator's name and value.
//!
//! The layout comes from the object's own BTF, member by member and by name, so the C structs
//! are the only declaration of it. A member's type name says how a value is written:
//! `fixed_t` Q32.32, `usec_t` microseconds (from the parameter's unit), `flag_t` 0 or 1,
//! integer types as they are; a member of an enum type takes the enumerator
//! `<enum>__<value>` (so the C enums name every string a parameter allows).

use crate::btf::Btf;
use serde_json::{Map, Value};

/// What the encoder needs to know of the simulator's algorithms (crate startlab-core implements
/// it from its registry): the unit of each parameter, the values computed from parameters, and
/// the simulator's spelling of the C names.
pub trait Catalogue {
    /// The unit of parameter `param` of `algorithm` (`cc` says which role), `None` if the
    /// algorithm has no such parameter.
    fn unit(&self, cc: bool, algorithm: &str, param: &str) -> Option<String>;
    /// The bytes of member `member` of `algorithm`'s configuration if it is a value computed
    /// from the parameters (`bytes` is its size), `Ok(None)` if it is not one.
    fn derived(
        &self,
        algorithm: &str,
        member: &str,
        params: &Map<String, Value>,
        bytes: usize,
    ) -> Result<Option<Vec<u8>>, String>;
    /// The simulator's name for the C name `c` (`hystart_pp` → `hystart++`), or `c`.
    fn simulator_name(&self, c: &str) -> String;
}

/// What one registered controller runs: the simulator's names and resolved parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct ControllerSpec {
    pub cc: String,
    /// Every parameter of `cc` with its value (`ControllerFactory::resolved_params`).
    pub cc_params: Value,
    /// A start-up algorithm, or `"default"` for the controller's own slow start.
    pub startup: String,
    pub startup_params: Option<Value>,
    /// `tcp.pacing`: `"none"`, `"linux"`, `"window"` or `"initial-spreading"`.
    pub pacing: String,
    /// Segments; `None` leaves Linux's (infinite).
    pub initial_ssthresh: Option<u32>,
    /// Segments (Initial Spreading paces this many over the first RTT).
    pub initial_window: u32,
}

impl ControllerSpec {
    /// A key equal for specs that can share one registered controller.
    pub fn key(&self) -> String {
        format!(
            "{}|{}|{}|{}|{}|{:?}|{}",
            self.cc,
            self.cc_params,
            self.startup,
            self.startup_params
                .as_ref()
                .map(|p| p.to_string())
                .unwrap_or_default(),
            self.pacing,
            self.initial_ssthresh,
            self.initial_window
        )
    }
}

/// Why the object cannot run a spec: `field` is the scenario's field relative to the flow
/// (`cc`, `startup`, `tcp.pacing`, `cc_params.NAME`, `startup_params.NAME`, or empty when it
/// is the object's fault).
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigError {
    pub field: String,
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.field.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

fn err(field: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError {
        field: field.into(),
        message: message.into(),
    }
}

/// The C spelling of a simulator name: `hystart++` → `hystart_pp`, `gallop-vegas` →
/// `gallop_vegas`.
pub fn c_name(name: &str) -> String {
    name.replace("++", "_pp").replace('-', "_")
}

/// The `.rodata` image with `spec` written into `config`; `rodata` is the section as compiled.
pub fn encode(
    btf: &Btf,
    rodata: &[u8],
    spec: &ControllerSpec,
    catalogue: &dyn Catalogue,
) -> Result<Vec<u8>, ConfigError> {
    let (config_ty, base) = btf
        .variable(".rodata", "config")
        .ok_or_else(|| err("", "the object has no `config` in .rodata"))?;
    let mut out = rodata.to_vec();
    let size = btf
        .size_of(config_ty)
        .ok_or_else(|| err("", "`config` has no size"))?;
    if out.len() < (base + size) as usize {
        return Err(err("", "`config` lies outside .rodata"));
    }
    let cc = c_name(&spec.cc);
    let startup = c_name(&spec.startup);
    let mut seen_cc = false;
    let mut seen_startup = spec.startup == "default";
    for m in btf.members(config_ty) {
        let at = (base + m.bit_offset / 8) as usize;
        let bytes = btf.size_of(m.ty).unwrap_or(0) as usize;
        match m.name.as_str() {
            "cc" | "startup" | "pacing" => {
                let (field, value) = match m.name.as_str() {
                    "cc" => ("cc", &spec.cc),
                    "startup" => ("startup", &spec.startup),
                    _ => ("tcp.pacing", &spec.pacing),
                };
                let v = choice(btf, &btf.type_name(m.ty), value, catalogue)
                    .map_err(|e| err(field, e))?;
                put(&mut out, at, bytes, v as u64);
            }
            "initial_ssthresh" => put(
                &mut out,
                at,
                bytes,
                spec.initial_ssthresh.unwrap_or(0) as u64,
            ),
            "initial_window" => put(&mut out, at, bytes, spec.initial_window as u64),
            name if name == cc => {
                seen_cc = true;
                let group = Params {
                    algorithm: &spec.cc,
                    cc: true,
                    values: &spec.cc_params,
                };
                write_params(btf, &mut out, at, m.ty, &group, catalogue)?;
            }
            name if name == startup && spec.startup != "default" => {
                seen_startup = true;
                let p = spec
                    .startup_params
                    .clone()
                    .unwrap_or(Value::Object(Default::default()));
                let group = Params {
                    algorithm: &spec.startup,
                    cc: false,
                    values: &p,
                };
                write_params(btf, &mut out, at, m.ty, &group, catalogue)?;
            }
            _ => {}
        }
    }
    if !seen_cc {
        return Err(err(
            "cc",
            format!("\"{}\" has no parameters in the eBPF port", spec.cc),
        ));
    }
    if !seen_startup {
        return Err(err(
            "startup",
            format!("\"{}\" has no parameters in the eBPF port", spec.startup),
        ));
    }
    Ok(out)
}

/// The names the object knows for `config.<member>` (`cc`, `startup`, `pacing`), in the
/// simulator's spelling where it has one.
pub fn choices(btf: &Btf, member: &str, catalogue: &dyn Catalogue) -> Vec<String> {
    let prefix = format!("startlab_config__{member}__");
    btf.enum_values(&format!("startlab_config__{member}"))
        .into_iter()
        .filter_map(|v| v.strip_prefix(&prefix).map(|c| catalogue.simulator_name(c)))
        .collect()
}

fn choice(btf: &Btf, e: &str, value: &str, catalogue: &dyn Catalogue) -> Result<i64, String> {
    btf.enum_value(e, &format!("{e}__{}", c_name(value)))
        .ok_or_else(|| {
            let prefix = format!("{e}__");
            let known: Vec<String> = btf
                .enum_values(e)
                .into_iter()
                .filter_map(|v| {
                    v.strip_prefix(&prefix)
                        .map(|s| format!("\"{}\"", catalogue.simulator_name(s)))
                })
                .collect();
            format!(
                "\"{value}\" has no eBPF port (there are {})",
                known.join(", ")
            )
        })
}

fn put(out: &mut [u8], at: usize, bytes: usize, v: u64) {
    let b = v.to_le_bytes();
    out[at..at + bytes.min(8)].copy_from_slice(&b[..bytes.min(8)]);
}

/// One algorithm's parameters as the scenario gives them: the congestion control's
/// (`cc_params`) or the start-up algorithm's (`startup_params`).
struct Params<'a> {
    algorithm: &'a str,
    cc: bool,
    values: &'a Value,
}

/// `params` written into the struct of type `ty` at `base` of `out`, member by member.
fn write_params(
    btf: &Btf,
    out: &mut [u8],
    base: usize,
    ty: u32,
    params: &Params,
    catalogue: &dyn Catalogue,
) -> Result<(), ConfigError> {
    let &Params {
        algorithm,
        cc,
        values,
    } = params;
    let group = if cc { "cc_params" } else { "startup_params" };
    let empty = serde_json::Map::new();
    let map = values.as_object().unwrap_or(&empty);
    let mut used = Vec::new();
    for m in btf.members(ty) {
        let at = base + (m.bit_offset / 8) as usize;
        let bytes = btf.size_of(m.ty).unwrap_or(0) as usize;
        let field = format!("{group}.{}", m.name);
        if let Some(value) = map.get(&m.name) {
            used.push(m.name.clone());
            let unit = catalogue.unit(cc, algorithm, &m.name).unwrap_or_default();
            let v = encode_value(btf, m.ty, &unit, value, catalogue).map_err(|e| err(&field, e))?;
            put(out, at, bytes, v);
        } else if let Some(image) = catalogue
            .derived(algorithm, &m.name, map, bytes)
            .map_err(|e| err(&field, e))?
        {
            out[at..at + image.len()].copy_from_slice(&image);
        } else {
            return Err(err(field, format!("the eBPF port of \"{algorithm}\" reads a value the simulator has no parameter for")));
        }
    }
    if let Some(missing) = map.keys().find(|k| !used.contains(k)) {
        return Err(err(
            format!("{group}.{missing}"),
            format!("the eBPF port of \"{algorithm}\" has no such parameter"),
        ));
    }
    Ok(())
}

fn encode_value(
    btf: &Btf,
    ty: u32,
    unit: &str,
    v: &Value,
    catalogue: &dyn Catalogue,
) -> Result<u64, String> {
    let kind = btf.type_name(ty);
    if let Some(crate::btf::Type::Enum { .. }) = btf.get(btf.unqualified(ty)) {
        let s = v.as_str().ok_or_else(|| format!("{v} is not a string"))?;
        return Ok(choice(btf, &kind, s, catalogue)? as u64);
    }
    let number = || v.as_f64().ok_or_else(|| format!("{v} is not a number"));
    match kind.as_str() {
        "fixed_t" => {
            let x = number()?;
            if x.is_nan() || x.abs() >= 2f64.powi(31) {
                return Err(format!("{x} does not fit Q32.32"));
            }
            Ok(((x * 2f64.powi(32)).round() as i64) as u64)
        }
        "usec_t" => {
            let x = number()?;
            let scale = match unit {
                "s" => 1e6,
                "ms" => 1e3,
                "us" | "µs" => 1.0,
                u => return Err(format!("a duration in unknown unit \"{u}\"")),
            };
            let us = (x * scale).round();
            if !(0.0..1.8e19).contains(&us) {
                return Err(format!("{x} {unit} is out of range"));
            }
            Ok(us as u64)
        }
        "flag_t" => v
            .as_bool()
            .map(u64::from)
            .ok_or_else(|| format!("{v} is not true or false")),
        _ => {
            if let Some(b) = v.as_bool() {
                return Ok(b as u64);
            }
            let x = number()?;
            if x.fract() != 0.0 || x < 0.0 {
                return Err(format!(
                    "{x} is not a whole number (the port's {kind} holds one)"
                ));
            }
            Ok(x as u64)
        }
    }
}

/// For a user's object: `value` written into the global variable `name` of one of its data
/// sections (`const volatile` variables live in `.rodata`). Returns the section's index in
/// `sections`, the variable's offset in it and its bytes. The variable's type says how: as for
/// startlab's own parameters (`fixed_t` Q32.32, `flag_t` and `bool` 0 or 1, an enum by
/// enumerator name `<enum>__<value>`, integers as they are), and `usec_t` in microseconds.
pub fn encode_variable(
    btf: &Btf,
    sections: &[crate::elf::DataSection],
    name: &str,
    value: &Value,
) -> Result<(usize, (usize, Vec<u8>)), String> {
    struct Plain;
    impl Catalogue for Plain {
        fn unit(&self, _: bool, _: &str, _: &str) -> Option<String> {
            Some("us".into())
        }
        fn derived(
            &self,
            _: &str,
            _: &str,
            _: &Map<String, Value>,
            _: usize,
        ) -> Result<Option<Vec<u8>>, String> {
            Ok(None)
        }
        fn simulator_name(&self, c: &str) -> String {
            c.to_string()
        }
    }
    for (i, s) in sections.iter().enumerate() {
        if let Some((ty, offset)) = btf.variable(&s.name, name) {
            let size = btf
                .size_of(ty)
                .ok_or_else(|| format!("the variable {name} has no size"))?
                as usize;
            if size > 8 {
                return Err(format!(
                    "the variable {name} is {size} bytes; a parameter is a number of at most 8"
                ));
            }
            let v = encode_value(btf, ty, "us", value, &Plain)?;
            return Ok((i, (offset as usize, v.to_le_bytes()[..size].to_vec())));
        }
    }
    Err(format!("the object has no global variable \"{name}\" to take it (declare `const volatile` {name} in it)"))
}

/// Where a user's program keeps the reason it ended its slow start.
#[derive(Clone, Debug, PartialEq)]
pub enum ExitPlace {
    /// A global variable in this writable data section (`.data` or `.bss`; libbpf's map of it
    /// ends with this name): `cc_params.exit_reason_global`.
    Section(String),
    /// The value at key 0 (`key_bytes` zero bytes) of this array or hash map:
    /// `cc_params.exit_reason_map`.
    Map { name: String, key_bytes: usize },
}

/// The number a user's program writes to say why it ended its slow start, named by
/// `cc_params.exit_reason_global` or `exit_reason_map`: its value after the exit names the
/// exit, in both worlds.
#[derive(Clone, Debug, PartialEq)]
pub struct ExitRecord {
    pub place: ExitPlace,
    /// Where the number lies in the section or in the map's value.
    pub offset: usize,
    pub bytes: usize,
    pub signed: bool,
    /// The enumerators of its type, if that is an enum.
    pub enumerators: Vec<(String, i64)>,
}

/// How a number of a program's is stored: an integer or an enum of at most 8 bytes.
struct NumberType {
    bytes: usize,
    signed: bool,
    /// An enum's enumerators (none for an integer).
    enumerators: Vec<(String, i64)>,
}

/// The number type `ty` is; `None` for another type.
fn number_type(btf: &Btf, ty: u32) -> Option<NumberType> {
    let bytes = btf.size_of(ty).unwrap_or(0) as usize;
    let (signed, enumerators) = match btf.get(btf.resolved(ty))? {
        crate::btf::Type::Int { signed, .. } => (*signed, Vec::new()),
        crate::btf::Type::Enum { values, .. } => {
            (values.iter().any(|(_, v)| *v < 0), values.clone())
        }
        _ => return None,
    };
    (1..=8).contains(&bytes).then_some(NumberType {
        bytes,
        signed,
        enumerators,
    })
}

impl ExitRecord {
    /// The writable global `name` of the object; refused, with the reason, if the program
    /// cannot write it or it is not a number.
    pub fn global(
        btf: &Btf,
        sections: &[crate::elf::DataSection],
        name: &str,
    ) -> Result<ExitRecord, String> {
        let Some((section, (ty, offset))) = sections
            .iter()
            .find_map(|s| btf.variable(&s.name, name).map(|v| (s, v)))
        else {
            return Err(format!(
                "the object has no global variable \"{name}\" (declare it in .data or .bss, and write it when the program ends its slow start)"
            ));
        };
        if !section.writable {
            return Err(format!(
                "\"{name}\" is in {}, which the program cannot write (declare it without const)",
                section.name
            ));
        }
        let Some(NumberType {
            bytes,
            signed,
            enumerators,
        }) = number_type(btf, ty).filter(|n| offset as usize + n.bytes <= section.bytes.len())
        else {
            return Err(format!(
                "\"{name}\" is not an integer or an enum of at most 8 bytes"
            ));
        };
        Ok(ExitRecord {
            place: ExitPlace::Section(section.name.clone()),
            offset: offset as usize,
            bytes,
            signed,
            enumerators,
        })
    }

    /// The number at key 0 of map `MAP` (`spec` is `MAP`, or `MAP.member.member` for a member
    /// of a struct value); refused, with the reason, for a map the program cannot keep one
    /// value in for every CPU, a value without a type, or a path to something not a number.
    pub fn in_map(
        btf: &Btf,
        maps: &[crate::elf::MapDef],
        spec: &str,
    ) -> Result<ExitRecord, String> {
        use crate::elf::{MAP_TYPE_ARRAY, MAP_TYPE_HASH, MAP_TYPE_LRU_HASH};
        let mut path = spec.split('.');
        let name = path.next().unwrap_or_default();
        let Some(map) = maps.iter().find(|m| m.name == name) else {
            let names: Vec<&str> = maps.iter().map(|m| m.name.as_str()).collect();
            return Err(format!(
                "the object has no map \"{name}\" (it has {})",
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ));
        };
        if !matches!(map.kind, MAP_TYPE_ARRAY | MAP_TYPE_HASH | MAP_TYPE_LRU_HASH) {
            return Err(format!(
                "map \"{name}\" is of type {}; the reason is read from an array, a hash map or an LRU hash map (a per-CPU map keeps one value per CPU in the kernel)",
                map.kind
            ));
        }
        if map.value_type == 0 {
            return Err(format!(
                "map \"{name}\" declares its value by size only; declare it with __type(value, ...)"
            ));
        }
        let (mut ty, mut offset) = (map.value_type, 0usize);
        for member in path {
            let Some(m) = btf.members(ty).iter().find(|m| m.name == member) else {
                return Err(format!(
                    "the value of map \"{name}\" has no member \"{member}\" on the way to {spec}"
                ));
            };
            if m.bit_size != 0 || m.bit_offset % 8 != 0 {
                return Err(format!(
                    "{spec} is a bit field; name a whole integer or enum"
                ));
            }
            (ty, offset) = (m.ty, offset + (m.bit_offset / 8) as usize);
        }
        let Some(NumberType {
            bytes,
            signed,
            enumerators,
        }) = number_type(btf, ty).filter(|n| offset + n.bytes <= map.value_size as usize)
        else {
            return Err(format!(
                "{spec} is not an integer or an enum of at most 8 bytes (name a member of the map's value with MAP.MEMBER)"
            ));
        };
        Ok(ExitRecord {
            place: ExitPlace::Map {
                name: name.to_string(),
                key_bytes: map.key_size as usize,
            },
            offset,
            bytes,
            signed,
            enumerators,
        })
    }

    /// The exit its value in `bytes` (the data section, or the map's value) names: the
    /// enumerator's name, or `<program>:<value>` for a number without one; `None` while it is 0
    /// (the program said nothing: the exit is named after the program).
    pub fn reason(&self, bytes: &[u8], program: &str) -> Option<String> {
        let raw = bytes.get(self.offset..self.offset + self.bytes)?;
        let mut b = [0u8; 8];
        b[..self.bytes].copy_from_slice(raw);
        let mut v = u64::from_le_bytes(b) as i64;
        if self.signed && self.bytes < 8 {
            let shift = 64 - 8 * self.bytes as u32;
            v = (v << shift) >> shift;
        }
        if v == 0 {
            return None;
        }
        Some(
            self.enumerators
                .iter()
                .find(|(_, e)| *e == v)
                .map_or_else(|| format!("{program}:{v}"), |(n, _)| n.clone()),
        )
    }
}

#[cfg(test)]
mod exit_record_tests {
    use super::{ExitPlace, ExitRecord};

    fn global(bytes: usize, signed: bool, enumerators: &[(&str, i64)]) -> ExitRecord {
        ExitRecord {
            place: ExitPlace::Section(".bss".into()),
            offset: 4,
            bytes,
            signed,
            enumerators: enumerators
                .iter()
                .map(|(n, v)| (n.to_string(), *v))
                .collect(),
        }
    }

    #[test]
    fn an_enumerator_names_the_exit_and_zero_says_nothing() {
        let g = global(
            4,
            false,
            &[("EXIT_NONE", 0), ("EXIT_TRAIN", 1), ("EXIT_DELAY", 2)],
        );
        let mut bss = [0u8; 8];
        assert_eq!(g.reason(&bss, "my_cc"), None);
        bss[4] = 2;
        assert_eq!(g.reason(&bss, "my_cc").as_deref(), Some("EXIT_DELAY"));
        // A value the enum does not name: the program's name and the number.
        bss[4] = 7;
        assert_eq!(g.reason(&bss, "my_cc").as_deref(), Some("my_cc:7"));
    }

    #[test]
    fn a_signed_integer_is_read_with_its_sign_from_its_own_bytes() {
        let g = global(2, true, &[]);
        // Bytes 4..6 hold -3 as an __s16; byte 6 (another variable) is ignored.
        let bss = [0, 0, 0, 0, 0xfd, 0xff, 9, 0];
        assert_eq!(g.reason(&bss, "p").as_deref(), Some("p:-3"));
        // Too short a section (a damaged object) names nothing.
        assert_eq!(g.reason(&bss[..5], "p"), None);
    }
}
