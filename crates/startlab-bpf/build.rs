//! Compiles `bpf/controller.bpf.c` (with every algorithm under `bpf/cc` and `bpf/startup`) into
//! one eBPF object, and `bpf/ecn_echo.bpf.c` (DCTCP's receiving half) into another, with
//! `compile.sh`, embedded by `src/lib.rs`. Needs clang and libbpf's headers
//! (Debian: `clang`, `libbpf-dev`); without them the crate builds with no object and says so at
//! run time.

use std::path::{Path, PathBuf};
use std::process::Command;

/// libbpf's headers (compile.sh's `-I`), and the directory they appear in when installed.
const HEADERS: &str = "/usr/include/bpf";
const HEADERS_PARENT: &str = "/usr/include";

fn main() {
    let dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let out = dir.join("startlab.bpf.o");
    let echo = dir.join("ecn_echo.bpf.o");
    println!("cargo:rerun-if-changed=bpf");
    println!("cargo:rerun-if-changed=compile.sh");
    println!("cargo:rerun-if-env-changed=STARTLAB_CLANG");
    println!("cargo:rerun-if-env-changed=PATH");
    let clang = std::env::var("STARTLAB_CLANG").unwrap_or_else(|_| "clang".into());
    watch_tools(&clang);
    let headers = Path::new(HEADERS).join("bpf_helpers.h");
    let why_not = if !headers.exists() {
        Some(format!(
            "{} is missing (install libbpf-dev)",
            headers.display()
        ))
    } else if Command::new(&clang).arg("--version").output().is_err() {
        Some(format!("{clang} cannot run; install clang"))
    } else {
        [(&out, "controller.bpf.c"), (&echo, "ecn_echo.bpf.c")]
            .into_iter()
            .find_map(|(object, source)| {
                match Command::new("sh")
                    .arg("compile.sh")
                    .arg(object)
                    .arg(source)
                    .output()
                {
                    Ok(o) if o.status.success() => None,
                    Ok(o) => panic!(
                        "clang failed on bpf/{source}:\n{}",
                        String::from_utf8_lossy(&o.stderr)
                    ),
                    Err(e) => Some(format!("sh compile.sh cannot run ({e})")),
                }
            })
    };
    if let Some(why) = why_not {
        println!("cargo:warning=the eBPF controllers are not built: {why}");
        std::fs::write(&out, b"").unwrap();
        std::fs::write(&echo, b"").unwrap();
        println!("cargo:rustc-env=STARTLAB_BPF_MISSING={why}");
    } else {
        println!("cargo:rustc-env=STARTLAB_BPF_MISSING=");
    }
}

/// Declares what the object depends on outside the crate: libbpf's headers and clang, so that a
/// build made before they were installed is redone once they are (and one made with them, when
/// they change).
///
/// Cargo reruns a build script when a path it was told to watch has changed since the last run,
/// and on every build while such a path is missing (it cannot tell a file deleted from one never
/// there), so watching the missing header or compiler itself would rebuild the crate every time.
/// A tool that is missing is watched instead through the directory it will appear in, whose
/// modification time changes when an entry is added: /usr/include for the headers' directory,
/// and each directory of PATH for clang (PATH itself is watched as a variable). Cargo scans a
/// watched directory recursively, which costs a few milliseconds, and only while a tool is
/// missing. A tool that is present is watched itself (for clang, the file PATH resolves it to).
fn watch_tools(clang: &str) {
    let watch = |p: &Path| {
        if p.exists() {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    };
    if Path::new(HEADERS).exists() {
        watch(Path::new(HEADERS));
    } else {
        watch(Path::new(HEADERS_PARENT));
    }
    match find_program(clang) {
        Some(path) => watch(&path),
        None if clang.contains('/') => {
            if let Some(dir) = Path::new(clang).parent() {
                watch(dir);
            }
        }
        None => {
            for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
                if dir.is_absolute() {
                    watch(&dir);
                }
            }
        }
    }
}

/// The file `name` runs: itself if it is a path, else the first match on PATH.
fn find_program(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let path = PathBuf::from(name);
        return path.is_file().then_some(path);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}
