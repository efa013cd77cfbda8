//! startlab's eBPF congestion controls in the kernel: each distinct controller of a run
//! (`startlab_bpf::ControllerSpec`) is the object of crate startlab-bpf, configured, loaded
//! and registered under a name of its own (`startlab_<k>`), chosen per socket with
//! `TCP_CONGESTION` like a built-in one. Dropping a [`Registered`] unregisters it; the kernel
//! does the same when the process dies (the `struct_ops` link is the process's file
//! descriptor, nothing is pinned), so no run leaves a controller behind.

use libbpf_rs::{MapCore as _, MapType, ObjectBuilder, RingBufferBuilder};
use startlab_bpf::btf::{Btf, Type};
use startlab_bpf::config::{ExitPlace, ExitRecord};
use startlab_bpf::events::Event;
use std::sync::{Arc, Mutex};

/// An object to register: its ELF bytes and the initial values of its data sections (by
/// section name: `.rodata` with the configuration written).
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectImage {
    pub elf: Arc<Vec<u8>>,
    pub sections: Vec<(String, Vec<u8>)>,
    /// The `struct_ops` variable to register (`None`: the object's only one). startlab's
    /// object has two: `startlab` (cong_avoid) and `startlab_model` (cong_control).
    pub struct_ops: Option<String>,
    /// Register it with `TCP_CONG_NEEDS_ECN` added to its flags (startlab's object serves
    /// every algorithm, and only DCTCP needs ECN).
    pub needs_ecn: bool,
    /// Where a user's program names its slow-start exit (`cc_params.exit_reason_global` or
    /// `exit_reason_map`), read when the run ends.
    pub exit_record: Option<Box<ExitRecord>>,
}

impl ObjectImage {
    /// DCTCP's receiving half (`ecn_echo.bpf.c`), for the receiver of a flow whose controller
    /// needs ECN.
    pub fn ecn_echo() -> Result<ObjectImage, String> {
        Ok(ObjectImage {
            elf: Arc::new(startlab_bpf::ecn_echo_object()?.to_vec()),
            sections: Vec::new(),
            struct_ops: Some("ecn_echo".into()),
            // Its own .flags have TCP_CONG_NEEDS_ECN.
            needs_ecn: false,
            exit_record: None,
        })
    }
}

/// The name DCTCP's receiving half is registered under.
pub const ECN_ECHO_NAME: &str = "startlab_echo";

/// The kernel's limit on a controller's name (TCP_CA_NAME_MAX, with the terminating NUL).
const NAME_MAX: usize = 16;

/// One registered controller and its events.
pub struct Registered {
    pub name: String,
    events: Arc<Mutex<Vec<Event>>>,
    /// Where `lost_events` lies in .bss.
    btf_bss_offset: Option<(u32, u32)>,
    exit_record: Option<Box<ExitRecord>>,
    ring: Option<libbpf_rs::RingBuffer<'static>>,
    // Dropped last: unregisters the controller, then frees the object.
    _link: libbpf_rs::Link,
    _object: libbpf_rs::Object,
}

impl Registered {
    /// Loads `image` and registers its `struct_ops` as `name`.
    pub fn new(image: &ObjectImage, name: &str) -> Result<Registered, String> {
        if name.len() >= NAME_MAX {
            return Err(format!(
                "controller name \"{name}\" is longer than {} bytes",
                NAME_MAX - 1
            ));
        }
        let btf = btf_of(&image.elf)?;
        let mut open = ObjectBuilder::default()
            .open_memory(&image.elf)
            .map_err(|e| format!("opening the eBPF object: {e}"))?;
        let name_at = member_offset(&btf, "name")?;
        // A user's object may declare a tcp_congestion_ops without `flags` (its own header,
        // with only the members it fills): looked up only when it must be written.
        let flags_at = if image.needs_ecn {
            Some(member_offset(&btf, "flags")?)
        } else {
            None
        };
        let mut struct_ops = None;
        for mut map in open.maps_mut() {
            let map_name = map.name().to_string_lossy().into_owned();
            // libbpf names a data section's map "<object>.<section>" (truncated).
            if let Some((_, bytes)) = image
                .sections
                .iter()
                .find(|(s, _)| map_name.ends_with(s.as_str()))
            {
                map.set_initial_value(bytes)
                    .map_err(|e| format!("configuring the eBPF object: {e}"))?;
            } else if map.map_type() == MapType::StructOps {
                match &image.struct_ops {
                    Some(want) if *want != map_name => continue,
                    None if struct_ops.is_some() => {
                        return Err("the object has several struct_ops: name the one to run".into())
                    }
                    _ => {}
                }
                struct_ops = Some(map_name.clone());
                let data = map
                    .initial_value_mut()
                    .ok_or("the struct_ops map has no data")?;
                let field = &mut data[name_at..name_at + NAME_MAX];
                field.fill(0);
                field[..name.len()].copy_from_slice(name.as_bytes());
                if let Some(flags_at) = flags_at {
                    // include/net/tcp.h: TCP_CONG_NEEDS_ECN.
                    let flags = &mut data[flags_at..flags_at + 4];
                    let v = u32::from_le_bytes(flags.try_into().unwrap())
                        | startlab_bpf::elf::TCP_CONG_NEEDS_ECN;
                    flags.copy_from_slice(&v.to_le_bytes());
                }
            }
        }
        let mut object = open.load().map_err(|e| {
            format!("loading the eBPF controller (the verifier's log is above): {e}")
        })?;
        let struct_ops = struct_ops.ok_or("the object has no struct_ops map")?;
        let mut link = None;
        let mut ring_map = None;
        for mut map in object.maps_mut() {
            let n = map.name().to_string_lossy().into_owned();
            if n == struct_ops {
                link = Some(
                    map.attach_struct_ops()
                        .map_err(|e| format!("registering \"{name}\": {e}"))?,
                );
            } else if n == "events" && map.map_type() == MapType::RingBuf {
                ring_map = Some(libbpf_rs::MapHandle::try_from(&*map).map_err(|e| e.to_string())?);
            }
        }
        // startlab's own objects report through the ring buffer `events`; a user's may not.
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = events.clone();
        let mut rings = RingBufferBuilder::new();
        if let Some(ring_map) = &ring_map {
            rings
                .add(ring_map, move |b: &[u8]| {
                    if let Some(e) = Event::decode(b) {
                        sink.lock().unwrap().push(e);
                    }
                    0
                })
                .map_err(|e| format!("events: {e}"))?;
        }
        let ring = if ring_map.is_some() {
            Some(rings.build().map_err(|e| format!("events: {e}"))?)
        } else {
            None
        };
        Ok(Registered {
            name: name.to_string(),
            events,
            btf_bss_offset: btf.variable(".bss", "lost_events"),
            exit_record: image.exit_record.clone(),
            ring,
            _link: link.ok_or("the object has no such struct_ops map")?,
            _object: object,
        })
    }

    /// Reads what the ring buffer holds; call during the run so that it never fills.
    pub fn poll(&self) {
        if let Some(r) = &self.ring {
            let _ = r.consume();
        }
    }

    /// The bytes of the object's data section `section` as they are now (libbpf's map of it,
    /// "<object>.<section>", whose one value is at key 0).
    fn section(&self, section: &str) -> Option<Vec<u8>> {
        self.lookup(|name| name.ends_with(section), &0u32.to_ne_bytes())
    }

    /// The value at `key` of the object's map `map` as it is now.
    fn map_value(&self, map: &str, key: &[u8]) -> Option<Vec<u8>> {
        self.lookup(|name| name == map, key)
    }

    /// The value at `key` of the first of the object's maps whose name `named` accepts.
    fn lookup(&self, named: impl Fn(&str) -> bool, key: &[u8]) -> Option<Vec<u8>> {
        self._object
            .maps()
            .find(|m| named(&m.name().to_string_lossy()))
            .and_then(|m| m.lookup(key, libbpf_rs::MapFlags::ANY).ok().flatten())
    }

    /// The exit the user's `cc_params.exit_reason_global` or `exit_reason_map` names, as the
    /// number is now (`None`: no such number, or the program left it 0).
    pub fn exit_reason(&self, program: &str) -> Option<String> {
        let r = self.exit_record.as_ref()?;
        let bytes = match &r.place {
            ExitPlace::Section(section) => self.section(section)?,
            ExitPlace::Map { name, key_bytes } => self.map_value(name, &vec![0; *key_bytes])?,
        };
        r.reason(&bytes, program)
    }

    /// Events the controller could not report because the ring buffer was full (its
    /// `lost_events` counter in .bss).
    pub fn lost_events(&self) -> u64 {
        let Some((_, offset)) = self.btf_bss_offset else {
            return 0;
        };
        self.section(".bss")
            .and_then(|v| {
                v.get(offset as usize..offset as usize + 8)
                    .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
            })
            .unwrap_or(0)
    }

    /// Every event so far.
    pub fn events(&self) -> Vec<Event> {
        self.poll();
        self.events.lock().unwrap().clone()
    }
}

/// The object's BTF.
fn btf_of(elf: &[u8]) -> Result<Btf, String> {
    use object::{Object as _, ObjectSection as _};
    let file = object::File::parse(elf).map_err(|e| format!("not an ELF object: {e}"))?;
    let s = file
        .section_by_name(".BTF")
        .ok_or("the object has no BTF")?;
    let mut btf = Btf::parse(s.data().map_err(|e| e.to_string())?)?;
    startlab_bpf::elf::fix_offsets(&file, &mut btf);
    Ok(btf)
}

/// Where `member` lies in the object's `struct tcp_congestion_ops`.
fn member_offset(btf: &Btf, member: &str) -> Result<usize, String> {
    let ops = match btf.named("tcp_congestion_ops") {
        Some(Type::Struct { members, .. }) => members.clone(),
        _ => return Err("the object has no struct tcp_congestion_ops".into()),
    };
    ops.iter()
        .find(|m| m.name == member)
        .map(|m| (m.bit_offset / 8) as usize)
        .ok_or_else(|| format!("struct tcp_congestion_ops has no {member}"))
}
