//! Makes memory freed after a burst go back to the operating system.
//!
//! glibc serves large blocks from its heap once it has seen a few freed, and
//! a heap rarely shrinks: after a thousand clients read big answers and
//! left, hsd would keep their peak for good. A fixed threshold keeps every
//! block of 256 KiB or more in its own mapping, returned the moment it is
//! freed; smaller blocks are reused as before.

/// Call once at start, before other threads exist.
pub fn return_large_blocks() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; called before any
    // other thread could be allocating.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1024 * 1024);
    }
}
