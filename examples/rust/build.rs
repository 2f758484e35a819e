// Links libhakmem into the program.
//
// Where:   $HAKMEM_LIB_DIR, else `pkg-config --variable=libdir hakmem`,
//          else ../../build (a hakmem source tree built with `make`).
// How:     $HAKMEM_LINK = "static" (default: libhakmem.a, nothing to ship)
//          or "dylib" (-lhakmem with an rpath to that directory; "dynamic",
//          the spelling hakmem's docs once gave, is taken as "dylib").
//
// Either way the whole process's malloc becomes hakmem's too (C libraries
// linked in, libc's own allocations), not only Rust's global allocator.
use std::env;
use std::path::PathBuf;
use std::process::Command;

fn lib_dir() -> PathBuf {
    if let Some(dir) = env::var_os("HAKMEM_LIB_DIR") {
        return PathBuf::from(dir);
    }
    let pc = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into());
    if let Ok(out) = Command::new(pc).args(["--variable=libdir", "hakmem"]).output() {
        let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if out.status.success() && !dir.is_empty() {
            return PathBuf::from(dir);
        }
    }
    let tree = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../build");
    if tree.join("libhakmem.a").exists() {
        return tree.canonicalize().unwrap_or(tree);
    }
    panic!(
        "libhakmem not found: install hakmem (so that `pkg-config --variable=libdir hakmem` \
         answers), or set HAKMEM_LIB_DIR=/path/to/dir/with/libhakmem"
    );
}

fn main() {
    println!("cargo:rerun-if-env-changed=HAKMEM_LIB_DIR");
    println!("cargo:rerun-if-env-changed=HAKMEM_LINK");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let dir = lib_dir();
    let kind = env::var("HAKMEM_LINK").unwrap_or_else(|_| "static".into());
    println!("cargo:rustc-link-search=native={}", dir.display());
    match kind.as_str() {
        "static" => {
            let a = dir.join("libhakmem.a");
            assert!(a.exists(), "{} not found", a.display());
            println!("cargo:rerun-if-changed={}", a.display());
            println!("cargo:rustc-link-lib=static=hakmem");
        }
        "dylib" | "dynamic" => {
            println!("cargo:rustc-link-lib=dylib=hakmem");
            println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
        }
        other => panic!("HAKMEM_LINK={other}: use \"static\" or \"dylib\" (libhakmem.a or libhakmem.so)"),
    }
    println!("cargo:rustc-link-lib=dylib=pthread");
}
