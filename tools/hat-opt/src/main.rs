//! `hat-opt`: hat's opt tool, the library's [`hat_opt::main`] with hat's dialects, passes and
//! backends.

/// mimalloc: the passes allocate many small, short-lived values (see Cargo.toml).
#[global_allocator]
static ALLOCATOR: hat_opt::allocator_policy::MiMalloc = hat_opt::allocator_policy::MiMalloc;

fn main() -> std::process::ExitCode {
    hat_opt::allocator_policy::keep_freed_memory();
    hat_opt::main(hat_opt::Tool::hat())
}
