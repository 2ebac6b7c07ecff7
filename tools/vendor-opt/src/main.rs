//! `vendor-opt`: the vendor's opt tool, every flag of hat-opt's with the vendor's dialects,
//! pipeline and backend (see the library, and docs/vendor-backend.md).

/// hat-opt's allocator and its policy (a compiler's many small, short-lived allocations).
#[global_allocator]
static ALLOCATOR: hat_opt::allocator_policy::MiMalloc = hat_opt::allocator_policy::MiMalloc;

fn main() -> std::process::ExitCode {
    hat_opt::allocator_policy::keep_freed_memory();
    hat_opt::main(vendor_opt::tool())
}
