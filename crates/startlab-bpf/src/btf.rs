//! Just enough of BTF (Documentation/bpf/btf.rst) to find a variable of an object's data
//! sections, the members of its structs and the values of its enums, by name: the loader writes
//! the configuration this way instead of mirroring the C structs in Rust.

use std::collections::HashMap;

/// The longest chain of qualifiers, typedefs or nested arrays followed (a malformed BTF may
/// have cycles).
const MAX_CHAIN: usize = 64;

/// One BTF type, with what this crate needs of it.
#[derive(Clone, Debug, PartialEq)]
pub enum Type {
    /// An integer of `bytes` bytes.
    Int {
        name: String,
        bytes: u32,
        signed: bool,
    },
    Struct {
        name: String,
        size: u32,
        members: Vec<Member>,
    },
    Union {
        name: String,
        size: u32,
        members: Vec<Member>,
    },
    Enum {
        name: String,
        values: Vec<(String, i64)>,
    },
    Typedef {
        name: String,
        ty: u32,
    },
    /// `const`, `volatile`, `restrict` and type tags: the type they qualify.
    Qualifier {
        ty: u32,
    },
    Array {
        elem: u32,
        len: u32,
    },
    /// A global variable: its name and type.
    Var {
        name: String,
        ty: u32,
    },
    /// A data section (`.rodata`, `.bss`, …): its variables' types, offsets and sizes.
    DataSec {
        name: String,
        vars: Vec<(u32, u32, u32)>,
    },
    /// A pointer to `ty`.
    Ptr {
        ty: u32,
    },
    /// Functions, prototypes, floats, forward declarations, declaration tags.
    Other {
        name: String,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    pub name: String,
    pub ty: u32,
    /// Offset from the start of the struct, in bits.
    pub bit_offset: u32,
    /// Width of a bit field, 0 for an ordinary member.
    pub bit_size: u32,
}

/// The types of one BTF blob; type ids start at 1 (0 is `void`).
#[derive(Clone, Debug)]
pub struct Btf {
    types: Vec<Type>,
    by_name: HashMap<String, u32>,
    strings: Vec<u8>,
}

fn u32_at(b: &[u8], at: usize) -> Result<u32, String> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes(s.try_into().unwrap()))
        .ok_or_else(|| format!("BTF is truncated at byte {at}"))
}

impl Btf {
    /// Parses the `.BTF` section of an object (little-endian, as BPF objects built here are).
    pub fn parse(b: &[u8]) -> Result<Btf, String> {
        let magic = b.get(0..2).ok_or("BTF is empty")?;
        if magic != [0x9f, 0xeb] {
            return Err("not BTF (bad magic, or big-endian)".into());
        }
        let hdr_len = u32_at(b, 4)? as usize;
        let (type_off, type_len) = (u32_at(b, 8)? as usize, u32_at(b, 12)? as usize);
        let (str_off, str_len) = (u32_at(b, 16)? as usize, u32_at(b, 20)? as usize);
        let types_bytes = b
            .get(hdr_len + type_off..hdr_len + type_off + type_len)
            .ok_or("BTF type section out of bounds")?;
        let strings = b
            .get(hdr_len + str_off..hdr_len + str_off + str_len)
            .ok_or("BTF string section out of bounds")?;
        let name = |off: u32| -> String {
            let s = strings.get(off as usize..).unwrap_or(&[]);
            let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
            String::from_utf8_lossy(&s[..end]).into_owned()
        };
        let mut types = Vec::new();
        let mut at = 0usize;
        while at < types_bytes.len() {
            let t = types_bytes;
            let name_off = u32_at(t, at)?;
            let info = u32_at(t, at + 4)?;
            let size_or_type = u32_at(t, at + 8)?;
            at += 12;
            let kind = (info >> 24) & 0x1f;
            let vlen = (info & 0xffff) as usize;
            let kflag = info >> 31 == 1;
            let n = name(name_off);
            let ty = match kind {
                1 => {
                    let enc = u32_at(t, at)?;
                    at += 4;
                    Type::Int {
                        name: n,
                        bytes: size_or_type,
                        signed: (enc >> 24) & 1 == 1,
                    }
                }
                3 => {
                    let elem = u32_at(t, at)?;
                    let len = u32_at(t, at + 8)?;
                    at += 12;
                    Type::Array { elem, len }
                }
                4 | 5 => {
                    let mut members = Vec::with_capacity(vlen);
                    for _ in 0..vlen {
                        let (mname, mty, off) =
                            (u32_at(t, at)?, u32_at(t, at + 4)?, u32_at(t, at + 8)?);
                        at += 12;
                        let (bit_offset, bit_size) = if kflag {
                            (off & 0xff_ffff, off >> 24)
                        } else {
                            (off, 0)
                        };
                        members.push(Member {
                            name: name(mname),
                            ty: mty,
                            bit_offset,
                            bit_size,
                        });
                    }
                    if kind == 4 {
                        Type::Struct {
                            name: n,
                            size: size_or_type,
                            members,
                        }
                    } else {
                        Type::Union {
                            name: n,
                            size: size_or_type,
                            members,
                        }
                    }
                }
                6 | 19 => {
                    let mut values = Vec::with_capacity(vlen);
                    for _ in 0..vlen {
                        let vname = u32_at(t, at)?;
                        let v = if kind == 6 {
                            at += 8;
                            u32_at(t, at - 4)? as i32 as i64
                        } else {
                            at += 12;
                            (u32_at(t, at - 8)? as u64 | (u32_at(t, at - 4)? as u64) << 32) as i64
                        };
                        values.push((name(vname), v));
                    }
                    Type::Enum { name: n, values }
                }
                8 => Type::Typedef {
                    name: n,
                    ty: size_or_type,
                },
                9 | 10 | 11 | 18 => Type::Qualifier { ty: size_or_type },
                13 => {
                    at += 8 * vlen;
                    Type::Other { name: n }
                }
                14 => {
                    at += 4;
                    Type::Var {
                        name: n,
                        ty: size_or_type,
                    }
                }
                15 => {
                    let mut vars = Vec::with_capacity(vlen);
                    for _ in 0..vlen {
                        vars.push((u32_at(t, at)?, u32_at(t, at + 4)?, u32_at(t, at + 8)?));
                        at += 12;
                    }
                    Type::DataSec { name: n, vars }
                }
                17 => {
                    at += 4;
                    Type::Other { name: n }
                }
                2 => Type::Ptr { ty: size_or_type },
                7 | 12 | 16 => Type::Other { name: n },
                k => return Err(format!("BTF kind {k} is not known to this reader")),
            };
            types.push(ty);
        }
        let mut by_name = HashMap::new();
        for (i, t) in types.iter().enumerate() {
            let n = match t {
                Type::Struct { name, .. }
                | Type::Union { name, .. }
                | Type::Enum { name, .. }
                | Type::Typedef { name, .. } => name,
                _ => continue,
            };
            if !n.is_empty() {
                by_name.entry(n.clone()).or_insert(i as u32 + 1);
            }
        }
        Ok(Btf {
            types,
            by_name,
            strings: strings.to_vec(),
        })
    }

    /// The string at `off` of the string section (names, and the access strings of CO-RE
    /// relocations in .BTF.ext).
    pub fn string_at(&self, off: u32) -> Option<&str> {
        let s = self.strings.get(off as usize..)?;
        let end = s.iter().position(|&c| c == 0)?;
        std::str::from_utf8(&s[..end]).ok()
    }

    /// The name of a struct, union, enum, typedef, integer or variable (`""` for others).
    pub fn name_of(&self, id: u32) -> &str {
        match self.get(id) {
            Some(Type::Int { name, .. })
            | Some(Type::Struct { name, .. })
            | Some(Type::Union { name, .. })
            | Some(Type::Enum { name, .. })
            | Some(Type::Typedef { name, .. })
            | Some(Type::Var { name, .. })
            | Some(Type::DataSec { name, .. })
            | Some(Type::Other { name }) => name,
            _ => "",
        }
    }

    /// Sets the offsets of the variables of every data section from the object's symbols, as
    /// libbpf does when it loads an object (btf_fixup_datasec): the compiler may leave them 0.
    /// `offset(section, variable)` is the symbol's value.
    pub fn fix_variable_offsets(&mut self, offset: &dyn Fn(&str, &str) -> Option<u32>) {
        let names: Vec<Option<String>> = self
            .types
            .iter()
            .map(|t| match t {
                Type::Var { name, .. } => Some(name.clone()),
                _ => None,
            })
            .collect();
        for t in &mut self.types {
            if let Type::DataSec { name, vars } = t {
                for v in vars.iter_mut() {
                    if let Some(Some(var)) = names.get((v.0 as usize).wrapping_sub(1)) {
                        if let Some(off) = offset(name, var) {
                            v.1 = off;
                        }
                    }
                }
            }
        }
    }

    /// The type of id `id` (1-based).
    pub fn get(&self, id: u32) -> Option<&Type> {
        self.types.get((id as usize).checked_sub(1)?)
    }

    /// A named struct, union, enum or typedef.
    /// Whether a function (or another type kept as [`Type::Other`]) named `name` is declared.
    pub fn declares(&self, name: &str) -> bool {
        self.types
            .iter()
            .any(|t| matches!(t, Type::Other { name: n } if n == name))
    }

    pub fn named(&self, name: &str) -> Option<&Type> {
        self.get(*self.by_name.get(name)?)
    }

    /// `id` with qualifiers removed (typedefs kept: their names carry the encoding).
    pub fn unqualified(&self, mut id: u32) -> u32 {
        // A bound on the chain: a malformed BTF may loop.
        for _ in 0..MAX_CHAIN {
            match self.get(id) {
                Some(Type::Qualifier { ty }) => id = *ty,
                _ => return id,
            }
        }
        0
    }

    /// `id` with qualifiers and typedefs removed.
    pub fn resolved(&self, mut id: u32) -> u32 {
        for _ in 0..MAX_CHAIN {
            match self.get(id) {
                Some(Type::Qualifier { ty }) | Some(Type::Typedef { ty, .. }) => id = *ty,
                _ => return id,
            }
        }
        0
    }

    /// The size in bytes of a type.
    pub fn size_of(&self, id: u32) -> Option<u32> {
        self.size_at_depth(id, 0)
    }

    fn size_at_depth(&self, id: u32, depth: usize) -> Option<u32> {
        if depth > MAX_CHAIN {
            return None;
        }
        match self.get(self.resolved(id))? {
            Type::Int { bytes, .. } => Some(*bytes),
            Type::Struct { size, .. } | Type::Union { size, .. } => Some(*size),
            Type::Enum { .. } => Some(4),
            Type::Array { elem, len } => self.size_at_depth(*elem, depth + 1)?.checked_mul(*len),
            _ => None,
        }
    }

    /// The variable `name` of data section `section`: its type and offset in the section.
    pub fn variable(&self, section: &str, name: &str) -> Option<(u32, u32)> {
        self.types.iter().find_map(|t| match t {
            Type::DataSec { name: s, vars } if s == section => {
                vars.iter().find_map(|&(var, off, _)| match self.get(var) {
                    Some(Type::Var { name: n, ty }) if n == name => Some((*ty, off)),
                    _ => None,
                })
            }
            _ => None,
        })
    }

    /// The members of the struct or union `id` (after qualifiers and typedefs).
    pub fn members(&self, id: u32) -> &[Member] {
        match self.get(self.resolved(id)) {
            Some(Type::Struct { members, .. }) | Some(Type::Union { members, .. }) => members,
            _ => &[],
        }
    }

    /// The value of enumerator `value` of enum `name`.
    pub fn enum_value(&self, name: &str, value: &str) -> Option<i64> {
        match self.named(name)? {
            Type::Enum { values, .. } => values.iter().find(|(n, _)| n == value).map(|(_, v)| *v),
            _ => None,
        }
    }

    /// The enumerators of enum `name`.
    pub fn enum_values(&self, name: &str) -> Vec<String> {
        match self.named(name) {
            Some(Type::Enum { values, .. }) => values.iter().map(|(n, _)| n.clone()).collect(),
            _ => Vec::new(),
        }
    }

    /// The name of a type, for the encoding of a member (`fixed_t`, `usec_t`, …).
    pub fn type_name(&self, id: u32) -> String {
        match self.get(self.unqualified(id)) {
            Some(Type::Int { name, .. })
            | Some(Type::Typedef { name, .. })
            | Some(Type::Struct { name, .. })
            | Some(Type::Enum { name, .. }) => name.clone(),
            Some(Type::Array { .. }) => "array".into(),
            _ => String::new(),
        }
    }
}
