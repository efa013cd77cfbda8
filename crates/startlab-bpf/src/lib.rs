//! startlab's congestion controls for the Linux kernel: one eBPF `struct_ops` object built from
//! `bpf/` (a file per algorithm, composed by `bpf/controller.bpf.c`), the configuration a
//! scenario writes into it, and the events it reports. Loading it is the kernel world's
//! (crate startlab-kernel, `bpf`); this crate needs no privileges.

pub mod btf;
pub mod config;
pub mod elf;
pub mod events;
pub mod isa;
pub mod layout;
pub mod memory;
pub mod vm;

pub use config::{c_name, Catalogue, ConfigError, ControllerSpec};

use btf::Btf;
use object::{Object as _, ObjectSection as _};

/// 8-byte alignment, which ELF parsing needs.
#[repr(C, align(8))]
struct Aligned<T: ?Sized>(T);

/// The compiled object, empty when the build had no clang.
static OBJECT: &Aligned<[u8]> =
    &Aligned(*include_bytes!(concat!(env!("OUT_DIR"), "/startlab.bpf.o")));

/// The receiving half of DCTCP (`bpf/ecn_echo.bpf.c`, struct_ops `ecn_echo`), which the kernel
/// world registers on the receiving side of a flow whose controller needs ECN; empty when the
/// build had no clang.
static ECN_ECHO: &Aligned<[u8]> =
    &Aligned(*include_bytes!(concat!(env!("OUT_DIR"), "/ecn_echo.bpf.o")));

/// See [`ECN_ECHO`]: its ELF bytes, or why there are none.
pub fn ecn_echo_object() -> Result<&'static [u8], String> {
    if ECN_ECHO.0.is_empty() {
        return Err(format!(
            "startlab was built without its eBPF controllers: {MISSING}"
        ));
    }
    Ok(&ECN_ECHO.0)
}

/// The environment variable that names an object to use instead of the built one.
pub const OBJECT_VARIABLE: &str = "STARTLAB_BPF_OBJECT";

/// Why the object was not built, if it was not.
const MISSING: &str = env!("STARTLAB_BPF_MISSING");

/// The eBPF object and what the loader needs of it.
pub struct Controllers {
    pub elf: &'static [u8],
    pub btf: Btf,
    pub rodata: Vec<u8>,
}

impl Controllers {
    /// The object built with this crate, or why there is none (parsed once). The environment
    /// variable `STARTLAB_BPF_OBJECT` names another build of `bpf/controller.bpf.c` to use
    /// instead (to try a changed port without rebuilding startlab).
    pub fn built() -> Result<&'static Controllers, String> {
        static BUILT: std::sync::OnceLock<Result<Controllers, String>> = std::sync::OnceLock::new();
        BUILT
            .get_or_init(|| {
                if let Some(path) = std::env::var_os(OBJECT_VARIABLE) {
                    let bytes = elf::read_object(&path.to_string_lossy()).map_err(|e| {
                        format!("{OBJECT_VARIABLE}={}: {e}", path.to_string_lossy())
                    })?;
                    // Aligned for the ELF reader, and kept for the life of the process.
                    let words: &'static mut [u64] = vec![0u64; bytes.len().div_ceil(8)].leak();
                    // SAFETY: u64 has no invalid bit patterns; the byte view covers the words.
                    let view: &'static mut [u8] = unsafe {
                        std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), bytes.len())
                    };
                    view.copy_from_slice(&bytes);
                    return Self::from_elf(view)
                        .map_err(|e| format!("{OBJECT_VARIABLE}={}: {e}", path.to_string_lossy()));
                }
                if OBJECT.0.is_empty() {
                    return Err(format!(
                        "startlab was built without its eBPF controllers: {MISSING}"
                    ));
                }
                Self::from_elf(&OBJECT.0)
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    pub fn from_elf(elf: &'static [u8]) -> Result<Controllers, String> {
        let file = object::File::parse(elf).map_err(|e| format!("not an ELF object: {e}"))?;
        let section = |name: &str| -> Result<Vec<u8>, String> {
            let s = file
                .section_by_name(name)
                .ok_or_else(|| format!("the object has no {name} section"))?;
            s.data()
                .map(<[u8]>::to_vec)
                .map_err(|e| format!("{name}: {e}"))
        };
        let mut btf = Btf::parse(&section(".BTF")?)?;
        elf::fix_offsets(&file, &mut btf);
        Ok(Controllers {
            elf,
            btf,
            rodata: section(".rodata")?,
        })
    }

    /// The `.rodata` image that configures the object for `spec`, or the reason it cannot run it.
    pub fn configure(
        &self,
        spec: &ControllerSpec,
        catalogue: &dyn Catalogue,
    ) -> Result<Vec<u8>, ConfigError> {
        config::encode(&self.btf, &self.rodata, spec, catalogue)
    }

    /// The names of the congestion controls the object has.
    pub fn ccs(&self, catalogue: &dyn Catalogue) -> Vec<String> {
        config::choices(&self.btf, "cc", catalogue)
    }

    /// The start-up algorithms the object has (`default` is the controller's own).
    pub fn startups(&self, catalogue: &dyn Catalogue) -> Vec<String> {
        config::choices(&self.btf, "startup", catalogue)
    }
}
