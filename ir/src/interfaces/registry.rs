//! Storage of the interfaces attached to one op name: a short list keyed by the interface's type
//! id. Each entry holds a `&'static I` (a sized value) behind `dyn Any`, so any trait object type
//! can be stored and recovered by downcasting to exactly that reference type.

use std::any::{Any, TypeId};

/// The interfaces attached to one op name.
#[derive(Default)]
pub(crate) struct InterfaceSet {
    entries: Vec<(TypeId, &'static str, Box<dyn Any + Send + Sync>)>,
}

impl InterfaceSet {
    /// Attaches `implementation` as the `I` of this op name, replacing an earlier one.
    pub(crate) fn attach<I: ?Sized + Sync + 'static>(&mut self, implementation: &'static I) {
        let id = TypeId::of::<&'static I>();
        let entry: Box<dyn Any + Send + Sync> = Box::new(implementation);
        match self.entries.iter_mut().find(|(existing, _, _)| *existing == id) {
            Some(slot) => slot.2 = entry,
            None => self.entries.push((id, std::any::type_name::<I>(), entry)),
        }
    }

    /// The attached `I`, if any.
    pub(crate) fn get<I: ?Sized + Sync + 'static>(&self) -> Option<&'static I> {
        let id = TypeId::of::<&'static I>();
        let (_, _, entry) = self.entries.iter().find(|(existing, _, _)| *existing == id)?;
        entry.downcast_ref::<&'static I>().copied()
    }

    /// The type names of the attached interfaces, in attachment order.
    pub(crate) fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.entries.iter().map(|(_, name, _)| *name)
    }
}
