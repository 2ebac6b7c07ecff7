//! Device memory and staging.
//!
//! - **Device buffers** are `VkBuffer`s (storage, transfer source and destination) in
//!   device-local memory from `gpu-allocator`, each bound whole to its kernels' bindings. A
//!   buffer larger than `maxStorageBufferRange` (it could not be bound) or
//!   `maxMemoryAllocationSize` is [`RuntimeError::BufferTooLarge`]; memory the device cannot
//!   give is [`RuntimeError::Allocation`]. Sizes are rounded up to 4 bytes (a buffer of no
//!   elements gets 4).
//! - **Staging** goes through two reusable host-visible rings, one each way ([`Ring`]): a copy
//!   to the device writes its bytes into the upload ring when it is recorded, a copy back
//!   lands in the download ring (which is host-cached where the device has such memory). A
//!   span of a ring is released when its batch is done (and, for a read, once its bytes were
//!   taken or discarded), oldest first. A copy that does not fit in the ring's free space goes
//!   through *pieces* ([`Pieces`]): host-visible blocks of one size, as many as the copy needs,
//!   given back when its batch is done and kept for later copies (up to a bound), so that a
//!   program that moves the same large buffer every run allocates (and the OS pins and zeroes)
//!   its staging once, not per copy. The runtime never waits for staging space.
//! - **Host copies** into and out of staging of a megabyte or more are split between threads
//!   ([`copy_bytes`]): one thread's `memcpy` into pinned memory moves about 10 GB/s, well
//!   below what the bus takes.

use crate::errors::{allocation_error, vk_error};
use ash::vk;
use gpu_allocator::vulkan::{Allocation, AllocationCreateDesc, AllocationScheme, Allocator};
use gpu_allocator::MemoryLocation;
use hat_runtime::{BufferLayout, RuntimeError};
use std::collections::VecDeque;

/// A buffer and its memory.
pub(crate) struct Block {
    pub buffer: vk::Buffer,
    pub allocation: Allocation,
}

impl Block {
    /// A buffer of `bytes` (at least 4) for `usage`, in memory of `location`.
    pub(crate) fn new(
        device: &ash::Device,
        allocator: &mut Allocator,
        bytes: u64,
        usage: vk::BufferUsageFlags,
        location: MemoryLocation,
        name: &str,
    ) -> Result<Block, RuntimeError> {
        let size = bytes.max(4).next_multiple_of(4);
        let info = vk::BufferCreateInfo::default().size(size).usage(usage).sharing_mode(vk::SharingMode::EXCLUSIVE);
        // SAFETY: a valid create info.
        let buffer = unsafe { device.create_buffer(&info, None) }.map_err(vk_error("create a buffer"))?;
        // SAFETY: the buffer was just made.
        let requirements = unsafe { device.get_buffer_memory_requirements(buffer) };
        let desc = AllocationCreateDesc {
            name,
            requirements,
            location,
            linear: true,
            allocation_scheme: AllocationScheme::GpuAllocatorManaged,
        };
        let allocation = match allocator.allocate(&desc) {
            Ok(allocation) => allocation,
            Err(error) => {
                // SAFETY: the buffer is unused.
                unsafe { device.destroy_buffer(buffer, None) };
                return Err(allocation_error(bytes, name)(error));
            }
        };
        // SAFETY: the memory was allocated for this buffer's requirements.
        let bound = unsafe { device.bind_buffer_memory(buffer, allocation.memory(), allocation.offset()) };
        if let Err(error) = bound {
            // SAFETY: unused.
            unsafe { device.destroy_buffer(buffer, None) };
            let _ = allocator.free(allocation);
            return Err(vk_error("bind a buffer's memory")(error));
        }
        Ok(Block { buffer, allocation })
    }

    /// Destroys the buffer and frees its memory (no command may still use it).
    pub(crate) fn destroy(self, device: &ash::Device, allocator: &mut Allocator) {
        // SAFETY: the caller knows no command uses it any more.
        unsafe { device.destroy_buffer(self.buffer, None) };
        let _ = allocator.free(self.allocation);
    }

    /// Destroys the buffer and frees its memory, leaving a null block (for a block that cannot be
    /// moved out of its owner).
    pub(crate) fn destroy_in_place(&mut self, device: &ash::Device, allocator: &mut Allocator) {
        let block =
            Block { buffer: std::mem::take(&mut self.buffer), allocation: std::mem::take(&mut self.allocation) };
        block.destroy(device, allocator);
    }

    /// The mapped bytes (host-visible memory only).
    pub(crate) fn mapped(&mut self) -> &mut [u8] {
        self.allocation.mapped_slice_mut().expect("staging memory is host-visible and mapped")
    }
}

/// Host-visible staging blocks of one size, for copies that do not fit a ring (see the module
/// documentation).
pub(crate) struct Pieces {
    /// The bytes of each piece.
    pub piece: u64,
    usage: vk::BufferUsageFlags,
    location: MemoryLocation,
    name: &'static str,
    free: Vec<Block>,
    /// How many free pieces to keep.
    keep: usize,
}

impl Pieces {
    pub(crate) fn new(
        piece: u64,
        keep_bytes: u64,
        usage: vk::BufferUsageFlags,
        location: MemoryLocation,
        name: &'static str,
    ) -> Pieces {
        let piece = piece.max(ALIGN).next_multiple_of(ALIGN);
        Pieces { piece, usage, location, name, free: Vec::new(), keep: (keep_bytes / piece) as usize }
    }

    /// A piece: a kept one, else a new one.
    pub(crate) fn take(&mut self, device: &ash::Device, allocator: &mut Allocator) -> Result<Block, RuntimeError> {
        match self.free.pop() {
            Some(block) => Ok(block),
            None => Block::new(device, allocator, self.piece, self.usage, self.location, self.name),
        }
    }

    /// Gives back a piece no command uses any more: kept, or destroyed past the bound.
    pub(crate) fn give(&mut self, block: Block, device: &ash::Device, allocator: &mut Allocator) {
        if self.free.len() < self.keep {
            self.free.push(block);
        } else {
            block.destroy(device, allocator);
        }
    }

    /// Destroys the kept pieces.
    pub(crate) fn destroy(&mut self, device: &ash::Device, allocator: &mut Allocator) {
        for block in self.free.drain(..) {
            block.destroy(device, allocator);
        }
    }
}

/// Below this, one thread copies.
const PARALLEL_COPY_BYTES: usize = 1 << 20;

/// Copies `from` into `into` (of the same length), split between up to 8 threads when it is a
/// megabyte or more.
pub(crate) fn copy_bytes(into: &mut [u8], from: &[u8]) {
    debug_assert_eq!(into.len(), from.len());
    let threads =
        std::thread::available_parallelism().map_or(1, |n| n.get()).min(8).min(from.len() / PARALLEL_COPY_BYTES);
    if threads <= 1 {
        into.copy_from_slice(from);
        return;
    }
    let part = from.len().div_ceil(threads).next_multiple_of(64);
    std::thread::scope(|scope| {
        for (into, from) in into.chunks_mut(part).zip(from.chunks(part)) {
            scope.spawn(move || into.copy_from_slice(from));
        }
    });
}

/// A device buffer of a program.
pub(crate) struct DeviceMemory {
    pub storage: Storage,
    pub layout: BufferLayout,
    /// The buffer's bytes (the layout's).
    pub bytes: u64,
}

/// Where a device buffer's bytes are.
pub(crate) enum Storage {
    /// A `VkBuffer` and memory of its own.
    Own(Block),
    /// Bytes `offset..offset + bytes` of an arena's `VkBuffer` (`plan-memory`): a window, bound
    /// as a descriptor range, that owns nothing.
    Window { buffer: vk::Buffer, offset: u64 },
}

impl DeviceMemory {
    /// The `VkBuffer` that holds the bytes.
    pub fn buffer(&self) -> vk::Buffer {
        match &self.storage {
            Storage::Own(block) => block.buffer,
            Storage::Window { buffer, .. } => *buffer,
        }
    }

    /// Where the bytes start in [`DeviceMemory::buffer`].
    pub fn offset(&self) -> u64 {
        match &self.storage {
            Storage::Own(_) => 0,
            Storage::Window { offset, .. } => *offset,
        }
    }
}

/// Checks a buffer of `bytes` against the device's limits.
pub(crate) fn check_size(
    bytes: u64,
    max_storage_buffer_range: u64,
    max_allocation_size: u64,
    device_local_bytes: u64,
) -> Result<(), RuntimeError> {
    if bytes > max_storage_buffer_range {
        return Err(RuntimeError::BufferTooLarge {
            bytes,
            limit: max_storage_buffer_range,
            limit_name: "maxStorageBufferRange",
        });
    }
    if bytes > max_allocation_size {
        return Err(RuntimeError::BufferTooLarge {
            bytes,
            limit: max_allocation_size,
            limit_name: "maxMemoryAllocationSize",
        });
    }
    // Within those limits, still no larger than the device's memory (0: a device that reports
    // no device-local heap, whose limits then decide).
    if device_local_bytes > 0 && bytes > device_local_bytes {
        return Err(RuntimeError::BufferTooLarge {
            bytes,
            limit: device_local_bytes,
            limit_name: "the device's memory (its device-local heaps)",
        });
    }
    Ok(())
}

/// A span of a ring: its id (spans are numbered in the order allocated) and offset.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub id: u64,
    pub offset: u64,
}

#[derive(Debug)]
struct Live {
    start: u64,
    end: u64,
    released: bool,
}

/// The bookkeeping of a ring: which spans are live, oldest first.
#[derive(Debug, Default)]
pub(crate) struct RingState {
    capacity: u64,
    /// The spans not yet reclaimed, oldest first; the first has id `first_id`.
    live: VecDeque<Live>,
    first_id: u64,
}

/// Offsets in a ring are multiples of this.
const ALIGN: u64 = 16;

impl RingState {
    pub(crate) fn new(capacity: u64) -> RingState {
        RingState { capacity, live: VecDeque::new(), first_id: 0 }
    }

    /// A span of `len` bytes, if the free space has one.
    pub(crate) fn allocate(&mut self, len: u64) -> Option<Span> {
        let len = len.max(1).next_multiple_of(ALIGN);
        if len > self.capacity {
            return None;
        }
        let offset = match (self.live.front(), self.live.back()) {
            (Some(first), Some(last)) => {
                let head = last.end;
                if last.start >= first.start {
                    // Not wrapped: after the last span, or from the start up to the first.
                    if head + len <= self.capacity {
                        head
                    } else if len <= first.start {
                        0
                    } else {
                        return None;
                    }
                } else if head + len <= first.start {
                    head
                } else {
                    return None;
                }
            }
            _ => 0,
        };
        self.live.push_back(Live { start: offset, end: offset + len, released: false });
        Some(Span { id: self.first_id + self.live.len() as u64 - 1, offset })
    }

    /// Releases a span; the space of the oldest released spans is reclaimed.
    pub(crate) fn release(&mut self, id: u64) {
        if let Some(live) = id.checked_sub(self.first_id).and_then(|i| self.live.get_mut(i as usize)) {
            live.released = true;
        }
        while self.live.front().is_some_and(|l| l.released) {
            self.live.pop_front();
            self.first_id += 1;
        }
    }
}

/// A host-visible buffer used as a ring of spans, released oldest first. See the module
/// documentation.
pub(crate) struct Ring {
    pub block: Block,
    pub state: RingState,
}

impl Ring {
    /// The ring's bytes.
    pub(crate) fn bytes(&mut self) -> &mut [u8] {
        self.block.mapped()
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_buffer_within_the_allocation_limits_but_beyond_the_device_memory_is_refused() {
        let gib = 1u64 << 30;
        assert!(check_size(gib, 4 * gib, 4 * gib, 2 * gib).is_ok());
        let error = check_size(3 * gib, 4 * gib, 4 * gib, 2 * gib).unwrap_err();
        assert!(error.to_string().contains("the device's memory"), "{error}");
        let error = check_size(5 * gib, 4 * gib, 8 * gib, 2 * gib).unwrap_err();
        assert!(error.to_string().contains("maxStorageBufferRange"), "{error}");
        assert!(check_size(3 * gib, 4 * gib, 4 * gib, 0).is_ok(), "no heap reported: the limits decide");
    }
    use super::{check_size, RingState};

    #[test]
    fn spans_wrap_around_and_are_reclaimed_oldest_first() {
        let mut ring = RingState::new(64);
        let offset = |ring: &mut RingState, len| ring.allocate(len).map(|s| s.offset);
        assert_eq!(
            [offset(&mut ring, 16), offset(&mut ring, 16), offset(&mut ring, 16)],
            [Some(0), Some(16), Some(32)]
        );
        assert_eq!(offset(&mut ring, 32), None, "no room");
        ring.release(1);
        assert_eq!(offset(&mut ring, 16), Some(48), "span 1 is released, but span 0 before it is not");
        assert_eq!(offset(&mut ring, 16), None);
        ring.release(0);
        assert_eq!(offset(&mut ring, 32), Some(0), "spans 0 and 1 are reclaimed: the ring wraps");
        assert_eq!(offset(&mut ring, 16), None, "up to span 2 at 32");
        ring.release(2);
        ring.release(3);
        assert_eq!(offset(&mut ring, 16), Some(32), "only the wrapped span is left");
        assert_eq!(offset(&mut ring, 100), None, "larger than the ring");
    }
}
