//! startlab's eBPF congestion controls in the kernel: each distinct controller of a run
//! (`startlab_bpf::ControllerSpec`) is the object of crate startlab-bpf, configured, loaded
//! and registered under a name of its own (`startlab_<k>`), chosen per socket with
//! `TCP_CONGESTION` like a built-in one. Dropping a [`Registered`] unregisters it; the kernel
//! does the same when the process dies (the `struct_ops` link is the process's file
//! descriptor, nothing is pinned), so no run leaves a controller behind.

use libbpf_rs::{MapCore as _, ObjectBuilder, RingBufferBuilder};
use startlab_bpf::events::Event;
use startlab_bpf::{ControllerSpec, Controllers};
use std::sync::{Arc, Mutex};

/// The kernel's limit on a controller's name (TCP_CA_NAME_MAX, with the terminating NUL).
const NAME_MAX: usize = 16;

/// One registered controller and its events.
pub struct Registered {
    pub name: String,
    pub spec: ControllerSpec,
    events: Arc<Mutex<Vec<Event>>>,
    /// Where `lost_events` lies in .bss.
    btf_bss_offset: Option<(u32, u32)>,
    ring: libbpf_rs::RingBuffer<'static>,
    // Dropped last: unregisters the controller, then frees the object.
    _link: libbpf_rs::Link,
    _object: libbpf_rs::Object,
}

impl Registered {
    /// Configures, loads and registers the object for `spec` as `name`.
    pub fn new(controllers: &Controllers, spec: &ControllerSpec, name: &str) -> Result<Registered, String> {
        if name.len() >= NAME_MAX {
            return Err(format!("controller name \"{name}\" is longer than {} bytes", NAME_MAX - 1));
        }
        let rodata = controllers.configure(spec).map_err(|e| e.to_string())?;
        let mut open = ObjectBuilder::default()
            .open_memory(controllers.elf)
            .map_err(|e| format!("opening the eBPF object: {e}"))?;
        let name_at = name_offset(controllers)?;
        for mut map in open.maps_mut() {
            let map_name = map.name().to_string_lossy().into_owned();
            if map_name.ends_with(".rodata") {
                map.set_initial_value(&rodata)
                    .map_err(|e| format!("configuring the eBPF object: {e}"))?;
            } else if map_name == "startlab" {
                let data = map
                    .initial_value_mut()
                    .ok_or("the struct_ops map has no data")?;
                let field = &mut data[name_at..name_at + NAME_MAX];
                field.fill(0);
                field[..name.len()].copy_from_slice(name.as_bytes());
            }
        }
        let mut object = open.load().map_err(|e| format!("loading the eBPF controller (the verifier's log is above): {e}"))?;
        let mut link = None;
        let mut ring_map = None;
        for mut map in object.maps_mut() {
            match map.name().to_string_lossy().as_ref() {
                "startlab" => {
                    link = Some(map.attach_struct_ops().map_err(|e| format!("registering \"{name}\": {e}"))?);
                }
                "events" => {
                    ring_map = Some(libbpf_rs::MapHandle::try_from(&*map).map_err(|e| e.to_string())?);
                }
                _ => {}
            }
        }
        let ring_map = ring_map.ok_or("the object has no ring buffer \"events\"")?;
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = events.clone();
        let mut rings = RingBufferBuilder::new();
        rings
            .add(&ring_map, move |b: &[u8]| {
                if let Some(e) = Event::decode(b) {
                    sink.lock().unwrap().push(e);
                }
                0
            })
            .map_err(|e| format!("events: {e}"))?;
        let ring = rings.build().map_err(|e| format!("events: {e}"))?;
        Ok(Registered {
            name: name.to_string(),
            spec: spec.clone(),
            events,
            btf_bss_offset: controllers.btf.variable(".bss", "lost_events"),
            ring,
            _link: link.ok_or("the object has no struct_ops map \"startlab\"")?,
            _object: object,
        })
    }

    /// Reads what the ring buffer holds; call during the run so that it never fills.
    pub fn poll(&self) {
        let _ = self.ring.consume();
    }

    /// Events the controller could not report because the ring buffer was full (its
    /// `lost_events` counter in .bss).
    pub fn lost_events(&self) -> u64 {
        let Some((_, offset)) = self.btf_bss_offset else { return 0 };
        self._object
            .maps()
            .find(|m| m.name().to_string_lossy().ends_with(".bss"))
            .and_then(|m| m.lookup(&0u32.to_ne_bytes(), libbpf_rs::MapFlags::ANY).ok().flatten())
            .and_then(|v| v.get(offset as usize..offset as usize + 8).map(|b| u64::from_le_bytes(b.try_into().unwrap())))
            .unwrap_or(0)
    }

    /// Every event so far.
    pub fn events(&self) -> Vec<Event> {
        self.poll();
        self.events.lock().unwrap().clone()
    }
}

/// Where `name` lies in the object's `struct tcp_congestion_ops`.
fn name_offset(controllers: &Controllers) -> Result<usize, String> {
    let btf = &controllers.btf;
    let ops = match btf.named("tcp_congestion_ops") {
        Some(startlab_bpf::btf::Type::Struct { members, .. }) => members.clone(),
        _ => return Err("the object has no struct tcp_congestion_ops".into()),
    };
    ops.iter()
        .find(|m| m.name == "name")
        .map(|m| (m.bit_offset / 8) as usize)
        .ok_or_else(|| "struct tcp_congestion_ops has no name".into())
}
