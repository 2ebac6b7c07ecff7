//! [`HandleTable`]: slots with generations, from which backends mint opaque handles
//! ([`DeviceBuffer`](crate::DeviceBuffer)) that go stale when their object is removed. A slot
//! freed and reused gets the next generation, so an old handle to it is refused, never taken
//! for the new object.

/// Objects of type `T` in slots, each slot with a generation. See the module documentation.
#[derive(Debug)]
pub struct HandleTable<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
}

#[derive(Debug)]
struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

impl<T> Default for HandleTable<T> {
    fn default() -> Self {
        HandleTable { slots: Vec::new(), free: Vec::new() }
    }
}

impl<T> HandleTable<T> {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Puts `value` in a free slot (or a new one) and gives its index and generation; `None`
    /// when 2^32 slots are in use.
    pub fn insert(&mut self, value: T) -> Option<(u32, u32)> {
        if let Some(index) = self.free.pop() {
            let slot = &mut self.slots[index as usize];
            slot.value = Some(value);
            return Some((index, slot.generation));
        }
        let index = u32::try_from(self.slots.len()).ok()?;
        self.slots.push(Slot { generation: 0, value: Some(value) });
        Some((index, 0))
    }

    /// The object of slot `index` in `generation`, if it is still there.
    pub fn get(&self, index: u32, generation: u32) -> Option<&T> {
        self.slots.get(index as usize).filter(|s| s.generation == generation)?.value.as_ref()
    }

    /// The same, to change.
    pub fn get_mut(&mut self, index: u32, generation: u32) -> Option<&mut T> {
        self.slots.get_mut(index as usize).filter(|s| s.generation == generation)?.value.as_mut()
    }

    /// Takes the object of slot `index` in `generation` out; the slot's next object gets the
    /// next generation. `None` when it was not there (a stale handle).
    pub fn remove(&mut self, index: u32, generation: u32) -> Option<T> {
        let slot = self.slots.get_mut(index as usize).filter(|s| s.generation == generation)?;
        let value = slot.value.take()?;
        // A slot whose generations ran out is retired rather than reused.
        match slot.generation.checked_add(1) {
            Some(next) => {
                slot.generation = next;
                self.free.push(index);
            }
            None => slot.generation = u32::MAX,
        }
        Some(value)
    }

    /// The objects in the table.
    pub fn values(&self) -> impl Iterator<Item = &T> {
        self.slots.iter().filter_map(|s| s.value.as_ref())
    }

    /// Takes every object out (their handles go stale).
    pub fn take_all(&mut self) -> Vec<T> {
        let indices: Vec<(u32, u32)> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.value.is_some())
            .map(|(i, s)| (i as u32, s.generation))
            .collect();
        indices.into_iter().filter_map(|(index, generation)| self.remove(index, generation)).collect()
    }

    /// How many objects are in the table.
    pub fn len(&self) -> usize {
        self.values().count()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.values().next().is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::HandleTable;

    #[test]
    fn a_removed_slot_is_reused_with_a_new_generation() {
        let mut table = HandleTable::new();
        let (a, ga) = table.insert("a").unwrap();
        let (b, gb) = table.insert("b").unwrap();
        assert_eq!(table.remove(a, ga), Some("a"));
        assert_eq!(table.remove(a, ga), None, "twice");
        let (c, gc) = table.insert("c").unwrap();
        assert_eq!(c, a, "the slot is reused");
        assert_ne!(gc, ga);
        assert_eq!(table.get(a, ga), None, "the old handle is stale");
        assert_eq!(table.get(c, gc), Some(&"c"));
        assert_eq!(table.get(b, gb), Some(&"b"));
        assert_eq!(table.len(), 2);
        assert!(!table.is_empty());
    }
}
