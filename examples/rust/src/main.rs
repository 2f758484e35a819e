//! A Rust program whose global allocator is hakmem.
//!
//! `Hakmem` implements `GlobalAlloc` over hakmem's C API (`hakmem.h`);
//! build.rs links libhakmem. Run: `cargo run --offline` (see docs/RUST.md).
//! Exits 1 if anything is inconsistent.

use std::alloc::{GlobalAlloc, Layout};
use std::collections::HashMap;
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};
use std::ptr;
use std::sync::mpsc;
use std::thread;

/// The C API, from hakmem.h.
mod ffi {
    use super::*;
    extern "C" {
        pub fn hak_malloc(size: usize) -> *mut c_void;
        pub fn hak_free(ptr: *mut c_void);
        pub fn hak_calloc(count: usize, size: usize) -> *mut c_void;
        pub fn hak_realloc(ptr: *mut c_void, size: usize) -> *mut c_void;
        pub fn hak_aligned_alloc(alignment: usize, size: usize) -> *mut c_void;
        pub fn hak_usable_size(ptr: *const c_void) -> usize;
        pub fn hak_version() -> *const c_char;
        pub fn hak_is_active() -> c_int;
        pub fn hak_owns(ptr: *const c_void) -> c_int;
    }
}

/// hakmem as Rust's global allocator.
pub struct Hakmem;

/// Every hakmem block of 16 bytes or more is 16-byte aligned, so plain
/// hak_malloc does for alignments up to this (when align <= size, as in
/// Rust's own System allocator); larger ones go to hak_aligned_alloc.
const MIN_ALIGN: usize = 16;

#[inline]
fn plain(layout: &Layout) -> bool {
    layout.align() <= MIN_ALIGN && layout.align() <= layout.size()
}

unsafe impl GlobalAlloc for Hakmem {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if plain(&layout) {
            ffi::hak_malloc(layout.size()) as *mut u8
        } else {
            ffi::hak_aligned_alloc(layout.align(), layout.size()) as *mut u8
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if plain(&layout) {
            ffi::hak_calloc(1, layout.size()) as *mut u8
        } else {
            let p = ffi::hak_aligned_alloc(layout.align(), layout.size()) as *mut u8;
            if !p.is_null() {
                ptr::write_bytes(p, 0, layout.size());
            }
            p
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        ffi::hak_free(ptr as *mut c_void)
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= MIN_ALIGN && layout.align() <= new_size {
            return ffi::hak_realloc(ptr as *mut c_void, new_size) as *mut u8;
        }
        // over-aligned: allocate, copy, free
        let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
        let p = self.alloc(new_layout);
        if !p.is_null() {
            ptr::copy_nonoverlapping(ptr, p, layout.size().min(new_size));
            self.dealloc(ptr, layout);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Hakmem = Hakmem;

fn owns<T: ?Sized>(p: *const T) -> bool {
    unsafe { ffi::hak_owns(p as *const c_void) == 1 }
}

#[repr(C, align(4096))]
struct Page([u8; 4096]);

fn main() {
    let mut ok = true;
    let mut check = |what: &str, cond: bool| {
        if !cond {
            eprintln!("hakmem-example: FAILED: {what}");
            ok = false;
        }
    };

    let version = unsafe { CStr::from_ptr(ffi::hak_version()) }.to_string_lossy().into_owned();
    let active = unsafe { ffi::hak_is_active() };
    println!("hakmem {version}");
    println!("hak_is_active={active}");

    // Box, Vec, String, HashMap: all served by hakmem
    let b = Box::new(42u64);
    check("Box from hakmem", owns(&*b));
    let mut v: Vec<u32> = Vec::new();
    for i in 0..100_000 {
        v.push(i); // grows through realloc
    }
    check("Vec from hakmem", owns(v.as_ptr()));
    check("Vec usable size", unsafe { ffi::hak_usable_size(v.as_ptr() as *const c_void) } >= v.len() * 4);
    let mut m: HashMap<String, usize> = HashMap::new();
    for i in 0..10_000 {
        m.insert(format!("key {i}"), i);
    }
    check("HashMap", m.len() == 10_000 && m["key 9999"] == 9999);
    let z = vec![0u8; 1 << 20]; // alloc_zeroed
    check("zeroed", owns(z.as_ptr()) && z.iter().all(|&x| x == 0));

    // over-aligned type: hak_aligned_alloc
    let page = Box::new(Page([7; 4096]));
    let pp = &*page as *const Page;
    check("4096-byte alignment", pp as usize % 4096 == 0 && owns(pp) && page.0[4095] == 7);

    // small blocks of every alignment up to 16
    for size in 1..64usize {
        for align in [1usize, 2, 4, 8, 16] {
            let l = Layout::from_size_align(size, align).unwrap();
            let p = unsafe { GLOBAL.alloc(l) };
            check("small alignment", !p.is_null() && p as usize % align == 0);
            unsafe { GLOBAL.dealloc(p, l) };
        }
    }

    // blocks allocated on one thread, freed on another
    let (tx, rx) = mpsc::channel::<Vec<String>>();
    let producers: Vec<_> = (0..4)
        .map(|t| {
            let tx = tx.clone();
            thread::spawn(move || {
                for round in 0..50 {
                    let batch: Vec<String> = (0..200).map(|i| format!("{t}/{round}/{i}")).collect();
                    tx.send(batch).unwrap();
                }
            })
        })
        .collect();
    drop(tx);
    let mut received = 0;
    for batch in rx {
        received += batch.len(); // dropped here: remote frees
    }
    for p in producers {
        p.join().unwrap();
    }
    check("cross-thread", received == 4 * 50 * 200);

    // the C library's malloc is hakmem's too when libhakmem is linked
    println!("Box owned by hakmem: {}", owns(&*b) as i32);
    if !ok {
        std::process::exit(1);
    }
}
