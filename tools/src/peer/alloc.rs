//! A counting global allocator, installed only in builds with the `peer` feature: it forwards
//! every call to the system allocator and keeps the number of bytes currently allocated, so
//! `sylva bench peer` can measure how much memory rapier's model holds (rapier reports no
//! sizes of its own). The count is of requested sizes (the allocator's own rounding is not
//! included), summed over all threads.
//!
//! `unsafe` is allowed here because `GlobalAlloc` is an unsafe trait: implementing it is the
//! only way to observe allocations. Each method only forwards its arguments unchanged to
//! `System`, which upholds the contract.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator with a live-bytes counter.
pub struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

/// Bytes currently allocated through the global allocator.
pub fn live_bytes() -> usize {
    LIVE.load(Ordering::Relaxed)
}

// SAFETY: every method forwards to `System` with the caller's arguments, so the contract of
// `GlobalAlloc` holds exactly as it does for `System`; the counter has no effect on memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc`'s contract, passed on unchanged.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` through this allocator with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` was allocated by `System` through this allocator with `layout`; the
        // caller upholds the rest of `realloc`'s contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            LIVE.fetch_add(new_size, Ordering::Relaxed);
        }
        p
    }
}
