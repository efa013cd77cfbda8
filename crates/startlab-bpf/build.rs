//! Compiles `bpf/controller.bpf.c` (with every algorithm under `bpf/cc` and `bpf/startup`) into
//! one eBPF object with `compile.sh`, embedded by `src/lib.rs`. Needs clang and libbpf's headers (Debian: `clang`,
//! `libbpf-dev`); without them the crate builds with no object and says so at run time.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("startlab.bpf.o");
    println!("cargo:rerun-if-changed=bpf");
    println!("cargo:rerun-if-env-changed=STARTLAB_CLANG");
    println!("cargo:rerun-if-changed=compile.sh");
    let clang = std::env::var("STARTLAB_CLANG").unwrap_or_else(|_| "clang".into());
    let headers = Path::new("/usr/include/bpf/bpf_helpers.h");
    let why_not = if !headers.exists() {
        Some(format!("{} is missing (install libbpf-dev)", headers.display()))
    } else if Command::new(&clang).arg("--version").output().is_err() {
        Some(format!("{clang} cannot run; install clang"))
    } else {
        match Command::new("sh").arg("compile.sh").arg(&out).output() {
            Ok(o) if o.status.success() => None,
            Ok(o) => panic!(
                "clang failed on bpf/controller.bpf.c:\n{}",
                String::from_utf8_lossy(&o.stderr)
            ),
            Err(e) => Some(format!("sh compile.sh cannot run ({e})")),
        }
    };
    if let Some(why) = why_not {
        println!("cargo:warning=the eBPF controllers are not built: {why}");
        std::fs::write(&out, b"").unwrap();
        println!("cargo:rustc-env=STARTLAB_BPF_MISSING={why}");
    } else {
        println!("cargo:rustc-env=STARTLAB_BPF_MISSING=");
    }
}
