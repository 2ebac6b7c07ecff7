//! hat's passes, registered by name with [`register_all`].
#![deny(missing_docs)]

use hat_ir::pass::PassRegistry;

/// Registers every hat pass.
pub fn register_all(registry: &mut PassRegistry) {
    let _ = registry;
}

/// A registry holding every hat pass.
pub fn registry() -> PassRegistry {
    let mut registry = PassRegistry::new();
    register_all(&mut registry);
    registry
}
