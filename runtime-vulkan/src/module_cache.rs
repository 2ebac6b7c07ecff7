//! Lowered modules on disk (the first layer of the kernel cache, [`hat_runtime::kernel_cache`]):
//! a [`SpirvModule`] and its entry points, kept between processes so that a second run of the
//! same program does not lower it again.
//!
//! - **The key** ([`module_key`]): the module's generic form without locations, the lowering's
//!   options in full (the device's features and limits, the workgroup reshaping, the
//!   vectorisation, the coarsening), the format of this file, hat's version and the build of the
//!   running program (the executable's size and modification time): a rebuilt hat, whose
//!   lowering may have changed, finds none of the entries an older build wrote. Locations are
//!   left out (the SPIR-V holds none): a program moved to another directory still hits.
//! - **Locations.** An entry point's location is where its kernel is defined in the program as
//!   this process read it: found again, by the kernel's symbol, when an entry is loaded
//!   ([`load`]). A module whose kernels are not all there is not used.
//! - **The payload** ([`encode`], [`decode`]): the words and each entry point's fields,
//!   little-endian, every length checked on the way back; anything that does not decode to a
//!   whole module, or whose words are not a SPIR-V module, is ignored.

use hat_ir::{Context, Location, Op};
use hat_lowering::{
    Access, BufferBinding, DimSlot, EntryPoint, LoweringOptions, PushConstantLayout, ScalarEncoding, ScalarSlot,
    SpirvModule, StoredElement,
};
use hat_runtime::kernel_cache::{entry_path, read_entry, write_entry, EntryProblem};
use std::path::{Path, PathBuf};

/// The kind of a module entry in its header.
const KIND: [u8; 4] = *b"SPVM";
/// The version of the payload's layout: bump it when [`encode`] changes.
const PAYLOAD_VERSION: u32 = 1;
/// The SPIR-V magic number, the first word of every module.
const SPIRV_MAGIC: u32 = 0x0723_0203;

/// The build of the running program: the executable's path, size and modification time, or
/// `unknown` where they cannot be had. Part of every key, so that a rebuilt hat (whose lowering
/// may lower differently) never reads what another build wrote.
fn build_fingerprint() -> String {
    let exe = std::env::current_exe().ok();
    let metadata = exe.as_ref().and_then(|path| std::fs::metadata(path).ok());
    let modified =
        metadata.as_ref().and_then(|m| m.modified().ok()).and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
    match (exe, metadata, modified) {
        (Some(path), Some(metadata), Some(modified)) => {
            format!("{} {} {}.{:09}", path.display(), metadata.len(), modified.as_secs(), modified.subsec_nanos())
        }
        _ => "unknown".to_string(),
    }
}

/// The key of the module whose generic form without locations is `text`, lowered with `options`.
pub(crate) fn module_key(text: &str, options: &LoweringOptions) -> Vec<u8> {
    format!(
        "hat {} module cache {PAYLOAD_VERSION}\nbuild {}\noptions {options:?}\n{text}",
        env!("CARGO_PKG_VERSION"),
        build_fingerprint()
    )
    .into_bytes()
}

/// Where the module of `key` lives under `directory`.
pub(crate) fn module_path(directory: &Path, key: &[u8]) -> PathBuf {
    entry_path(directory, "modules", key, "spvm")
}

/// The module of `key` from `directory`, its entry points located at the kernels of `root` (the
/// module as this process has it): `Err(Missing)` when there is none, `Err(Ignored(why))` when
/// the entry is not a whole module of this key (or names a kernel `root` lacks).
pub(crate) fn load(directory: &Path, key: &[u8], ctx: &Context, root: Op) -> Result<SpirvModule, EntryProblem> {
    let payload = read_entry(&module_path(directory, key), KIND, key)?;
    let mut module = decode(&payload).ok_or_else(|| EntryProblem::Ignored("not a whole lowered module".into()))?;
    let kernels: Vec<(String, Location)> = ctx
        .walk(root)
        .into_iter()
        .filter(|&op| hat_lowering::is_entry_kernel(ctx, op))
        .filter_map(|op| Some((hat_ir::verifier::symbol_name(ctx, op)?.to_string(), ctx.location(op))))
        .collect();
    for entry in &mut module.entry_points {
        let Some((_, location)) = kernels.iter().find(|(name, _)| *name == entry.name) else {
            return Err(EntryProblem::Ignored(format!("it names a kernel '{}' the program lacks", entry.name)));
        };
        entry.location = *location;
    }
    Ok(module)
}

/// Writes `module` as the entry of `key` under `directory` (best effort: an error is dropped).
pub(crate) fn store(directory: &Path, key: &[u8], module: &SpirvModule) -> bool {
    write_entry(&module_path(directory, key), KIND, key, &encode(module)).is_ok()
}

/// Little-endian writing of the payload.
struct Writer(Vec<u8>);

impl Writer {
    fn u32(&mut self, value: u32) {
        self.0.extend_from_slice(&value.to_le_bytes());
    }
    fn u64(&mut self, value: u64) {
        self.0.extend_from_slice(&value.to_le_bytes());
    }
    fn bool(&mut self, value: bool) {
        self.0.push(value as u8);
    }
    fn len(&mut self, len: usize) {
        self.u64(len as u64);
    }
    fn str(&mut self, text: &str) {
        self.len(text.len());
        self.0.extend_from_slice(text.as_bytes());
    }
}

/// Reading of the payload: `None` past its end or on a value out of range.
struct Reader<'b>(&'b [u8]);

impl Reader<'_> {
    fn bytes(&mut self, count: usize) -> Option<&[u8]> {
        if self.0.len() < count {
            return None;
        }
        let (taken, rest) = self.0.split_at(count);
        self.0 = rest;
        Some(taken)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.bytes(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.bytes(8)?.try_into().ok()?))
    }
    fn bool(&mut self) -> Option<bool> {
        match self.bytes(1)?[0] {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }
    /// A count of items of at least `item_bytes` bytes each, no more than what is left can hold.
    fn len(&mut self, item_bytes: usize) -> Option<usize> {
        let len = usize::try_from(self.u64()?).ok()?;
        (len.checked_mul(item_bytes.max(1))? <= self.0.len()).then_some(len)
    }
    fn str(&mut self) -> Option<String> {
        let len = self.len(1)?;
        String::from_utf8(self.bytes(len)?.to_vec()).ok()
    }
}

const ELEMENTS: [StoredElement; 9] = [
    StoredElement::I1,
    StoredElement::I8,
    StoredElement::I16,
    StoredElement::I32,
    StoredElement::I64,
    StoredElement::Index,
    StoredElement::F16,
    StoredElement::F32,
    StoredElement::F64,
];

const ENCODINGS: [ScalarEncoding; 5] = [
    ScalarEncoding::Bool32,
    ScalarEncoding::Int32,
    ScalarEncoding::Int64,
    ScalarEncoding::Float32,
    ScalarEncoding::Float64,
];

fn tag<T: PartialEq>(list: &[T], value: &T) -> u32 {
    list.iter().position(|v| v == value).expect("every variant is listed") as u32
}

fn untag<T: Copy>(list: &[T], tag: u32) -> Option<T> {
    list.get(tag as usize).copied()
}

/// The payload of `module` (its entry points' locations left out).
pub(crate) fn encode(module: &SpirvModule) -> Vec<u8> {
    let mut w = Writer(Vec::new());
    w.u32(PAYLOAD_VERSION);
    w.len(module.words.len());
    for &word in &module.words {
        w.u32(word);
    }
    w.len(module.entry_points.len());
    for entry in &module.entry_points {
        w.str(&entry.name);
        entry.workgroup_size.iter().for_each(|&size| w.u32(size));
        w.len(entry.bindings.len());
        for binding in &entry.bindings {
            w.len(binding.parameter);
            w.u32(binding.set);
            w.u32(binding.binding);
            w.u32(tag(&ELEMENTS, &binding.element));
            w.len(binding.shape.len());
            for dimension in &binding.shape {
                w.bool(dimension.is_some());
                w.u64(dimension.unwrap_or(0));
            }
            w.bool(binding.access.read);
            w.bool(binding.access.write);
        }
        let push = &entry.push_constants;
        w.u32(push.size);
        w.u32(push.grid_offset);
        w.len(push.scalars.len());
        for slot in &push.scalars {
            w.len(slot.parameter);
            w.u32(slot.offset);
            w.u32(tag(&ENCODINGS, &slot.encoding));
        }
        w.len(push.dims.len());
        for slot in &push.dims {
            w.len(slot.parameter);
            w.len(slot.dimension);
            w.u32(slot.offset);
            w.u32(tag(&ENCODINGS, &slot.encoding));
        }
        w.bool(entry.has_barrier);
        w.u32(entry.workgroup_memory_bytes);
        w.u32(entry.items_per_invocation);
        w.u32(entry.rows_per_invocation);
        w.bool(entry.whole_grid_constant.is_some());
        w.u32(entry.whole_grid_constant.unwrap_or(0));
    }
    w.0
}

/// The module of a payload [`encode`] wrote (locations unknown), or `None` for anything else.
pub(crate) fn decode(payload: &[u8]) -> Option<SpirvModule> {
    let mut r = Reader(payload);
    if r.u32()? != PAYLOAD_VERSION {
        return None;
    }
    let count = r.len(4)?;
    let words = (0..count).map(|_| r.u32()).collect::<Option<Vec<u32>>>()?;
    if words.len() < 5 || words[0] != SPIRV_MAGIC {
        return None;
    }
    let mut entry_points = Vec::new();
    for _ in 0..r.len(1)? {
        let name = r.str()?;
        let workgroup_size = [r.u32()?, r.u32()?, r.u32()?];
        let mut bindings = Vec::new();
        for _ in 0..r.len(8)? {
            let parameter = r.len(0)?;
            let (set, binding) = (r.u32()?, r.u32()?);
            let element = untag(&ELEMENTS, r.u32()?)?;
            let mut shape = Vec::new();
            for _ in 0..r.len(9)? {
                let known = r.bool()?;
                let size = r.u64()?;
                shape.push(known.then_some(size));
            }
            let access = Access { read: r.bool()?, write: r.bool()? };
            bindings.push(BufferBinding { parameter, set, binding, element, shape, access });
        }
        let (size, grid_offset) = (r.u32()?, r.u32()?);
        let mut scalars = Vec::new();
        for _ in 0..r.len(8)? {
            let parameter = r.len(0)?;
            let offset = r.u32()?;
            let encoding = untag(&ENCODINGS, r.u32()?)?;
            scalars.push(ScalarSlot { parameter, offset, encoding });
        }
        let mut dims = Vec::new();
        for _ in 0..r.len(8)? {
            let parameter = r.len(0)?;
            let dimension = r.len(0)?;
            let offset = r.u32()?;
            let encoding = untag(&ENCODINGS, r.u32()?)?;
            dims.push(DimSlot { parameter, dimension, offset, encoding });
        }
        let has_barrier = r.bool()?;
        let workgroup_memory_bytes = r.u32()?;
        let items_per_invocation = r.u32()?;
        let rows_per_invocation = r.u32()?;
        let has_constant = r.bool()?;
        let constant = r.u32()?;
        entry_points.push(EntryPoint {
            name,
            location: Location::UNKNOWN,
            workgroup_size,
            bindings,
            push_constants: PushConstantLayout { size, grid_offset, scalars, dims },
            has_barrier,
            workgroup_memory_bytes,
            items_per_invocation,
            rows_per_invocation,
            whole_grid_constant: has_constant.then_some(constant),
        });
    }
    (r.0.is_empty() && !entry_points.is_empty()).then_some(SpirvModule { words, entry_points })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A module with every kind of field set to something other than its default.
    fn sample() -> SpirvModule {
        let entry = |name: &str, constant| EntryPoint {
            name: name.to_string(),
            location: Location::UNKNOWN,
            workgroup_size: [32, 8, 1],
            bindings: vec![
                BufferBinding {
                    parameter: 0,
                    set: 0,
                    binding: 0,
                    element: StoredElement::F16,
                    shape: vec![Some(64), None],
                    access: Access { read: true, write: false },
                },
                BufferBinding {
                    parameter: 2,
                    set: 0,
                    binding: 1,
                    element: StoredElement::Index,
                    shape: vec![],
                    access: Access { read: true, write: true },
                },
            ],
            push_constants: PushConstantLayout {
                size: 32,
                grid_offset: 0,
                scalars: vec![ScalarSlot { parameter: 1, offset: 16, encoding: ScalarEncoding::Float64 }],
                dims: vec![DimSlot { parameter: 0, dimension: 1, offset: 24, encoding: ScalarEncoding::Int32 }],
            },
            has_barrier: true,
            workgroup_memory_bytes: 1024,
            items_per_invocation: 4,
            rows_per_invocation: 8,
            whole_grid_constant: constant,
        };
        SpirvModule {
            words: vec![SPIRV_MAGIC, 0x0001_0300, 0, 42, 0, 0x1234_5678],
            entry_points: vec![entry("first", Some(0)), entry("second", None)],
        }
    }

    #[test]
    fn a_module_decodes_to_itself() {
        let module = sample();
        assert_eq!(decode(&encode(&module)), Some(module));
    }

    #[test]
    fn nothing_but_a_whole_payload_decodes() {
        let bytes = encode(&sample());
        for len in 0..bytes.len() {
            assert_eq!(decode(&bytes[..len]), None, "truncated to {len} bytes");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(decode(&longer), None);
        // A length that claims more than the payload holds is refused before anything is allocated.
        let mut huge = bytes.clone();
        huge[4..12].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(decode(&huge), None);
        // Words that are not SPIR-V.
        let mut module = sample();
        module.words[0] = 0;
        assert_eq!(decode(&encode(&module)), None);
    }

    #[test]
    fn the_key_holds_the_options() {
        let options = LoweringOptions::default();
        let other = LoweringOptions { coarsen_rows: 2, ..LoweringOptions::default() };
        assert_ne!(module_key("text", &options), module_key("text", &other));
        assert_ne!(module_key("text", &options), module_key("texts", &options));
        assert_eq!(module_key("text", &options), module_key("text", &options));
    }
}
