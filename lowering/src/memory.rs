//! Buffers on the device: storage buffers (kernel parameters) and workgroup memory
//! (`kernel.local_alloc`), and the loads, stores, sizes and atomics on them.
//!
//! SPIR-V's logical addressing cannot select, carry in a loop or pass to a function a pointer to
//! one of several buffers without the variable-pointers feature. So a buffer *value* is lowered
//! to a [`BufferValue`]: a 32-bit *handle* naming one of the kernel's buffers (*leaves*: its
//! buffer parameters, then its workgroup allocations) and the set of leaves the handle may name.
//! A handle with one candidate is a constant, and an access through it is direct; an access
//! through a handle with several candidates is an `OpSwitch` on the handle with one direct
//! access per candidate (`arith.select` of buffers, buffers carried by loops or returned from
//! helpers). Helpers are instantiated per set of candidates of their buffer parameters
//! (`calls.rs`), so inside a helper a parameter that can only be one buffer is direct too.
//!
//! Elements are stored exactly as on the host ([`StoredElement`]); see [`Storage`] for the
//! element types that need converting on the way in and out. Indices are row-major, flattened
//! in the device `index` type.

use crate::artifact::{Access, StoredElement};
use crate::function::{FunctionEmitter, Kind, Lowered};
use crate::options::Feature;
use crate::Failed;
use hat_dialects::buffer::{DimOp, LoadOp, StoreOp};
use hat_dialects::kernel::AtomicRmwOp;
use hat_ir::types::DYNAMIC;
use hat_ir::{Context, Op, Type, TypeKind, Value};
use rspirv::dr::Operand;
use rspirv::spirv::{self, Decoration, StorageClass, Word};

/// A lowered buffer value: a handle and the leaves it may name (sorted, not empty for a
/// buffer that is accessed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BufferValue {
    pub handle: Word,
    pub candidates: Vec<u32>,
}

/// The leaf of `value` when it is one of the kernel's `parameters`: its position among the
/// buffer parameters, the order in which their leaves are declared (`None`: not a parameter).
pub(crate) fn parameter_leaf(ctx: &Context, parameters: &[Value], value: Value) -> Option<u32> {
    let position = parameters.iter().position(|&a| a == value)?;
    Some(parameters[..position].iter().filter(|&&a| ctx.type_kind(ctx.value_type(a)).is_memref()).count() as u32)
}

/// How a leaf's elements are stored, when not as the value type.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Storage {
    /// As the value type.
    Value,
    /// `i1` in a storage buffer: one byte, 0 or 1.
    BoolByte,
    /// `index` of a 32-bit device `index` in a storage buffer: two 32-bit words, low first;
    /// loads read the low word, stores write the high word as the sign.
    IndexPair,
    /// A float of this width stored as an integer of the same width, so that atomics can
    /// compare and swap it.
    FloatBits(u32),
}

/// One buffer a kernel can name.
#[derive(Clone, Debug)]
pub(crate) struct Leaf {
    /// Its memref type.
    pub memref: Type,
    pub shape: Vec<i64>,
    /// The `OpVariable`.
    pub variable: Word,
    /// `StorageBuffer` or `Workgroup`.
    pub class: StorageClass,
    /// The element type in memory.
    pub stored: Word,
    pub storage: Storage,
    /// The kernel parameter, for a storage buffer.
    pub parameter: Option<usize>,
    pub access: Access,
}

impl FunctionEmitter<'_> {
    // ----- declarations -----------------------------------------------------------------------

    /// The shape and element type of a memref type.
    pub fn memref_parts(&mut self, op: Op, ty: Type) -> Result<(Vec<i64>, Type), Failed> {
        match self.ctx.type_kind(ty) {
            TypeKind::MemRef { shape, element } => Ok((shape.to_vec(), *element)),
            _ => Err(self.error(op, format!("expected a memref, got '{}'", self.type_name(ty)))),
        }
    }

    /// How an element of type `element` is stored on the host, and the features storing it in a
    /// storage buffer needs.
    pub fn stored_element(&mut self, op: Op, element: Type) -> Result<StoredElement, Failed> {
        let kind = self.kind(op, element)?;
        let what = format!("a buffer of '{}'", self.type_name(element));
        let stored = match (kind, self.ctx.type_kind(element)) {
            (Kind::Bool, _) => StoredElement::I1,
            (Kind::Int(_), TypeKind::Index) => StoredElement::Index,
            (Kind::Int(8), _) => StoredElement::I8,
            (Kind::Int(16), _) => StoredElement::I16,
            (Kind::Int(32), _) => StoredElement::I32,
            (Kind::Int(_), _) => StoredElement::I64,
            (Kind::Float(16), _) => StoredElement::F16,
            (Kind::Float(32), _) => StoredElement::F32,
            (Kind::Float(_), _) => StoredElement::F64,
        };
        match stored {
            StoredElement::I1 | StoredElement::I8 => {
                self.require(op, Feature::StorageBuffer8Bit, &what)?;
                self.e.capability(spirv::Capability::StorageBuffer8BitAccess);
                self.e.extension("SPV_KHR_8bit_storage");
            }
            StoredElement::I16 | StoredElement::F16 => {
                self.require(op, Feature::StorageBuffer16Bit, &what)?;
                self.e.capability(spirv::Capability::StorageBuffer16BitAccess);
            }
            _ => {}
        }
        Ok(stored)
    }

    /// Declares the storage buffer of kernel parameter `parameter` (memref type `memref`) at
    /// `binding` of set 0; `float_atomic_bits` are the float widths some atomic of the kernel
    /// works on.
    pub fn declare_parameter_leaf(
        &mut self,
        kernel: Op,
        parameter: usize,
        binding: u32,
        memref: Type,
        float_atomic_bits: &[u32],
    ) -> Result<StoredElement, Failed> {
        let (shape, element) = self.memref_parts(kernel, memref)?;
        let kind = self.kind(kernel, element)?;
        let stored_element = self.stored_element(kernel, element)?;
        let (stored, storage, stride) = match (kind, stored_element) {
            (Kind::Bool, _) => (self.e.int(8), Storage::BoolByte, 1),
            (_, StoredElement::Index) if self.e.index_bits == 32 => (self.e.u32(), Storage::IndexPair, 4),
            (Kind::Float(bits), _) if float_atomic_bits.contains(&bits) => {
                (self.e.int(bits), Storage::FloatBits(bits), bits / 8)
            }
            _ => (self.kind_type(kind), Storage::Value, stored_element.bytes()),
        };
        let array = self.e.runtime_array(stored, stride);
        let block = self.e.block_struct(array);
        let pointer = self.e.pointer(StorageClass::StorageBuffer, block);
        let variable = self.e.b.variable(pointer, None, StorageClass::StorageBuffer, None);
        self.e.b.decorate(variable, Decoration::DescriptorSet, [Operand::LiteralBit32(0)]);
        self.e.b.decorate(variable, Decoration::Binding, [Operand::LiteralBit32(binding)]);
        self.k.leaves.push(Leaf {
            memref,
            shape,
            variable,
            class: StorageClass::StorageBuffer,
            stored,
            storage,
            parameter: Some(parameter),
            access: Access::default(),
        });
        Ok(stored_element)
    }

    /// Declares the workgroup memory of `kernel.local_alloc` `op`; returns its bytes.
    pub fn declare_local_leaf(&mut self, op: Op, float_atomic_bits: &[u32]) -> Result<u64, Failed> {
        let memref = self.ctx.value_type(self.ctx.result(op, 0));
        let (shape, element) = self.memref_parts(op, memref)?;
        let kind = self.kind(op, element)?;
        let count = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(u64::try_from(d).ok()?));
        let Some(count) = count.filter(|&n| n > 0 && n <= u32::MAX as u64) else {
            return Err(self.error(op, "workgroup memory needs a static shape of 1 to 2^32 - 1 elements"));
        };
        let (stored, storage) = match kind {
            Kind::Float(bits) if float_atomic_bits.contains(&bits) => (self.e.int(bits), Storage::FloatBits(bits)),
            _ => (self.kind_type(kind), Storage::Value),
        };
        let bytes = count
            * match kind {
                Kind::Bool => 4,
                Kind::Int(bits) | Kind::Float(bits) => bits as u64 / 8,
            };
        let length = self.e.u32_constant(count as u32);
        let array = self.e.b.type_array(stored, length);
        let pointer = self.e.pointer(StorageClass::Workgroup, array);
        let variable = self.e.b.variable(pointer, None, StorageClass::Workgroup, None);
        self.e.b.name(variable, format!("local{}", self.k.local_leaves.len()));
        let leaf = self.k.leaves.len() as u32;
        self.k.local_leaves.insert(op, leaf);
        self.k.leaves.push(Leaf {
            memref,
            shape,
            variable,
            class: StorageClass::Workgroup,
            stored,
            storage,
            parameter: None,
            access: Access::default(),
        });
        Ok(bytes)
    }

    /// A handle naming one leaf.
    pub fn leaf_value(&mut self, leaf: u32) -> BufferValue {
        BufferValue { handle: self.e.u32_constant(leaf), candidates: vec![leaf] }
    }

    /// Every leaf of memref type `ty`: what a buffer of that type may be when nothing more is
    /// known.
    pub fn leaves_of_type(&self, ty: Type) -> Vec<u32> {
        (0..self.k.leaves.len() as u32).filter(|&leaf| self.k.leaves[leaf as usize].memref == ty).collect()
    }

    /// A buffer value of type `ty` held in `handle`, which may be any buffer of that type.
    pub fn dynamic_buffer(&mut self, handle: Word, ty: Type) -> BufferValue {
        let candidates = self.leaves_of_type(ty);
        match *candidates {
            [leaf] => self.leaf_value(leaf),
            _ => BufferValue { handle, candidates },
        }
    }

    pub fn select_buffers(&mut self, condition: Word, a: &BufferValue, b: &BufferValue) -> Result<BufferValue, Failed> {
        if a.candidates.len() == 1 && a.candidates == b.candidates {
            return Ok(a.clone());
        }
        let u32 = self.e.u32();
        let handle = self.e.b.select(u32, None, condition, a.handle, b.handle)?;
        Ok(BufferValue { handle, candidates: union(&a.candidates, &b.candidates) })
    }

    pub fn local_alloc(&mut self, op: Op) -> Result<(), Failed> {
        let Some(&leaf) = self.k.local_leaves.get(&op) else {
            return Err(self.error(op, "workgroup memory that the kernel's walk did not find"));
        };
        let value = self.leaf_value(leaf);
        self.define_result(op, Lowered::Buffer(value))
    }

    // ----- accesses ---------------------------------------------------------------------------

    /// Runs `access` on each leaf `buffer` may name: directly when it names one, else in the
    /// cases of an `OpSwitch` on its handle, whose results (of type `result`) meet in a phi.
    pub fn with_leaf(
        &mut self,
        op: Op,
        buffer: &BufferValue,
        result: Option<Word>,
        mut access: impl FnMut(&mut Self, u32) -> Result<Option<Word>, Failed>,
    ) -> Result<Option<Word>, Failed> {
        match *buffer.candidates {
            [] => Err(self.error(op, "accesses a buffer that names none of the kernel's buffers")),
            [leaf] => access(self, leaf),
            ref candidates => {
                let candidates = candidates.to_vec();
                let merge = self.e.b.id();
                let labels: Vec<Word> = candidates.iter().map(|_| self.e.b.id()).collect();
                let (&default, cases) = labels.split_last().expect("several candidates");
                let targets = candidates.iter().zip(cases).map(|(&leaf, &label)| (Operand::LiteralBit32(leaf), label));
                self.e.b.selection_merge(merge, spirv::SelectionControl::NONE)?;
                self.e.b.switch(buffer.handle, default, targets.collect::<Vec<_>>())?;
                let mut incoming = Vec::new();
                for (&leaf, &label) in candidates.iter().zip(&labels) {
                    self.start_block(label)?;
                    let value = access(self, leaf)?;
                    if let Some(value) = value {
                        incoming.push((value, self.block));
                    }
                    self.e.b.branch(merge)?;
                }
                self.start_block(merge)?;
                match result {
                    Some(ty) => Ok(Some(self.e.b.phi(ty, None, incoming)?)),
                    None => Ok(None),
                }
            }
        }
    }

    /// The size of dimension `dimension` of `leaf`, as a device `index`.
    pub(crate) fn leaf_size(&mut self, leaf: u32, dimension: usize) -> Result<Word, Failed> {
        let leaf = &self.k.leaves[leaf as usize];
        let size = leaf.shape[dimension];
        if size != DYNAMIC {
            return Ok(self.e.index_constant(size));
        }
        let parameter = leaf.parameter.expect("only parameters have dynamic sizes");
        self.k.dim_size(self.e, parameter, dimension)
    }

    /// The row-major flat index of `indices` in `leaf`.
    fn flat_index(&mut self, leaf: u32, indices: &[Word]) -> Result<Word, Failed> {
        let index = self.e.index();
        let Some((&first, rest)) = indices.split_first() else {
            return Ok(self.e.index_constant(0));
        };
        let mut flat = first;
        for (offset, &next) in rest.iter().enumerate() {
            let size = self.leaf_size(leaf, offset + 1)?;
            let scaled = self.e.b.i_mul(index, None, flat, size)?;
            flat = self.e.b.i_add(index, None, scaled, next)?;
        }
        Ok(flat)
    }

    /// A pointer to element `indices` of `leaf`; `word` picks the word of an
    /// [`Storage::IndexPair`] element.
    fn element_pointer(&mut self, leaf: u32, indices: &[Word], word: u32) -> Result<Word, Failed> {
        let flat = self.flat_index(leaf, indices)?;
        let Leaf { variable, class, stored, storage, .. } = self.k.leaves[leaf as usize];
        let pointer = self.e.pointer(class, stored);
        let element = if storage == Storage::IndexPair {
            let u32 = self.e.u32();
            let two = self.e.u32_constant(2);
            let word = self.e.u32_constant(word);
            let pair = self.e.b.i_mul(u32, None, flat, two)?;
            self.e.b.i_add(u32, None, pair, word)?
        } else {
            flat
        };
        if class == StorageClass::StorageBuffer {
            let member = self.e.u32_constant(0);
            Ok(self.e.b.access_chain(pointer, None, variable, [member, element])?)
        } else {
            Ok(self.e.b.access_chain(pointer, None, variable, [element])?)
        }
    }

    /// Loads element `indices` of `leaf` as a value of kind `kind`.
    pub(crate) fn load_leaf(&mut self, leaf: u32, indices: &[Word], kind: Kind) -> Result<Word, Failed> {
        self.k.leaves[leaf as usize].access.read = true;
        let pointer = self.element_pointer(leaf, indices, 0)?;
        let Leaf { stored, storage, .. } = self.k.leaves[leaf as usize];
        let loaded = self.e.b.load(stored, None, pointer, None, [])?;
        let value_type = self.kind_type(kind);
        Ok(match storage {
            Storage::Value | Storage::IndexPair => loaded,
            Storage::BoolByte => {
                // 8-bit storage allows conversions only: widen before comparing.
                let u32 = self.e.u32();
                let zero = self.e.u32_constant(0);
                let wide = self.e.b.u_convert(u32, None, loaded)?;
                let bool = self.e.bool();
                self.e.b.i_not_equal(bool, None, wide, zero)?
            }
            Storage::FloatBits(_) => self.e.b.bitcast(value_type, None, loaded)?,
        })
    }

    /// Stores `value` at element `indices` of `leaf`.
    pub(crate) fn store_leaf(&mut self, leaf: u32, indices: &[Word], value: Word) -> Result<(), Failed> {
        self.k.leaves[leaf as usize].access.write = true;
        let pointer = self.element_pointer(leaf, indices, 0)?;
        let Leaf { stored, storage, .. } = self.k.leaves[leaf as usize];
        let stored_value = match storage {
            Storage::Value => value,
            Storage::BoolByte => {
                let u32 = self.e.u32();
                let one = self.e.u32_constant(1);
                let zero = self.e.u32_constant(0);
                let wide = self.e.b.select(u32, None, value, one, zero)?;
                self.e.b.u_convert(stored, None, wide)?
            }
            Storage::FloatBits(_) => self.e.b.bitcast(stored, None, value)?,
            Storage::IndexPair => {
                let u32 = self.e.u32();
                let sign_shift = self.e.u32_constant(31);
                let high = self.e.b.shift_right_arithmetic(u32, None, value, sign_shift)?;
                let high_pointer = self.element_pointer(leaf, indices, 1)?;
                self.e.b.store(high_pointer, high, None, [])?;
                value
            }
        };
        self.e.b.store(pointer, stored_value, None, [])?;
        Ok(())
    }

    /// Runs `effect` only for work items inside the grid when `leaf` is a storage buffer and the
    /// kernel has a barrier (work items past the grid then run, but must leave buffers alone:
    /// no store, no atomic, and no load, which could be out of bounds and whose value must not
    /// depend on elements the kernel-effects analysis does not count as read); a skipped
    /// effect's result, of kind `result`, is zero (as on the CPU backend).
    fn in_grid_only(
        &mut self,
        leaf: u32,
        result: Option<Kind>,
        effect: impl FnOnce(&mut Self) -> Result<Option<Word>, Failed>,
    ) -> Result<Option<Word>, Failed> {
        let guard = self.in_grid.filter(|_| self.k.leaves[leaf as usize].class == StorageClass::StorageBuffer);
        let Some(in_grid) = guard else {
            return effect(self);
        };
        let (before, then, merge) = (self.block, self.e.b.id(), self.e.b.id());
        self.e.b.selection_merge(merge, spirv::SelectionControl::NONE)?;
        self.e.b.branch_conditional(in_grid, then, merge, [])?;
        self.start_block(then)?;
        let value = effect(self)?;
        let then_end = self.block;
        self.e.b.branch(merge)?;
        self.start_block(merge)?;
        match (result, value) {
            (Some(kind), Some(value)) => {
                let (ty, skipped) = (self.kind_type(kind), self.zero(kind));
                Ok(Some(self.e.b.phi(ty, None, [(value, then_end), (skipped, before)])?))
            }
            _ => Ok(None),
        }
    }

    fn indices(&mut self, op: Op, values: &[Value]) -> Result<Vec<Word>, Failed> {
        values.iter().map(|&v| self.scalar(op, v)).collect()
    }

    pub fn load(&mut self, op: Op, load: LoadOp) -> Result<(), Failed> {
        let ctx = self.ctx;
        let buffer = self.buffer(op, load.buffer(ctx))?;
        let indices = self.indices(op, load.indices(ctx))?;
        let kind = self.kind(op, ctx.value_type(ctx.result(op, 0)))?;
        if let [leaf] = buffer.candidates[..] {
            if let Some(value) = self.wide_load(leaf)? {
                return self.define_result(op, Lowered::Scalar(value));
            }
            if let Some(value) = self.coarse_load(op, leaf, load.indices(ctx), kind)? {
                return self.define_result(op, Lowered::Scalar(value));
            }
        }
        let ty = self.kind_type(kind);
        let value = self.with_leaf(op, &buffer, Some(ty), |this, leaf| {
            this.in_grid_only(leaf, Some(kind), |this| Ok(Some(this.load_leaf(leaf, &indices, kind)?)))
        })?;
        let value = value.ok_or(Failed::Builder("a load without a value".to_string()))?;
        self.define_result(op, Lowered::Scalar(value))
    }

    pub fn store(&mut self, op: Op, store: StoreOp) -> Result<(), Failed> {
        let ctx = self.ctx;
        let buffer = self.buffer(op, store.buffer(ctx))?;
        let indices = self.indices(op, store.indices(ctx))?;
        let value = self.scalar(op, store.value(ctx))?;
        if let [leaf] = buffer.candidates[..] {
            if self.wide_store(leaf, value)? {
                return Ok(());
            }
        }
        self.with_leaf(op, &buffer, None, |this, leaf| {
            this.in_grid_only(leaf, None, |this| {
                this.store_leaf(leaf, &indices, value)?;
                Ok(None)
            })
        })?;
        Ok(())
    }

    pub fn dim(&mut self, op: Op, dim: DimOp) -> Result<(), Failed> {
        let ctx = self.ctx;
        let buffer = self.buffer(op, dim.buffer(ctx))?;
        let Some(dimension) = dim.dimension(ctx).and_then(|d| usize::try_from(d).ok()) else {
            return Err(self.error(op, "has no valid 'dimension'"));
        };
        let (shape, _) = self.memref_parts(op, ctx.value_type(dim.buffer(ctx)))?;
        let value = match shape.get(dimension) {
            None => return Err(self.error(op, "asks for a dimension the buffer does not have")),
            Some(&size) if size != DYNAMIC => self.e.index_constant(size),
            Some(_) => {
                let index = self.e.index();
                let value =
                    self.with_leaf(op, &buffer, Some(index), |this, leaf| Ok(Some(this.leaf_size(leaf, dimension)?)))?;
                value.ok_or(Failed::Builder("a size without a value".to_string()))?
            }
        };
        self.define_result(op, Lowered::Scalar(value))
    }

    pub fn atomic(&mut self, op: Op, atomic: AtomicRmwOp) -> Result<(), Failed> {
        let ctx = self.ctx;
        let buffer = self.buffer(op, atomic.buffer(ctx))?;
        let indices = self.indices(op, atomic.indices(ctx))?;
        let value = self.scalar(op, atomic.value(ctx))?;
        let element = ctx.value_type(atomic.value(ctx));
        let kind = self.kind(op, element)?;
        let name = ctx.attribute(op, "kind").and_then(|a| ctx.attribute_kind(a).as_str()).unwrap_or("").to_string();
        let element_name = self.type_name(element);
        let is_index = matches!(ctx.type_kind(element), TypeKind::Index);
        match kind {
            Kind::Int(32) if !is_index => {}
            Kind::Int(64) | Kind::Float(64) => {
                self.require(op, Feature::Int64Atomics, &format!("an atomic on '{element_name}' elements"))?;
                self.e.capability(spirv::Capability::Int64Atomics);
                if kind == Kind::Float(64) {
                    self.require(
                        op,
                        Feature::Int64,
                        "an atomic on 'f64' elements (a compare-and-swap of 64-bit integers)",
                    )?;
                    self.e.capability(spirv::Capability::Int64);
                }
            }
            Kind::Float(32) => {}
            _ => {
                let message = if is_index {
                    "atomics on 'index' elements have no SPIR-V lowering: the device stores 'index' elements in 64 bits but computes 'index' in 32; use 'i32' or 'i64' elements".to_string()
                } else {
                    format!(
                        "atomics on '{element_name}' elements have no SPIR-V lowering (32- and 64-bit elements only)"
                    )
                };
                return Err(self.error(op, message));
            }
        }
        let ty = self.kind_type(kind);
        let result = self.with_leaf(op, &buffer, Some(ty), |this, leaf| {
            this.in_grid_only(leaf, Some(kind), |this| this.atomic_leaf(op, &name, leaf, &indices, value, kind))
        })?;
        let result = result.ok_or(Failed::Builder("an atomic without a value".to_string()))?;
        self.define_result(op, Lowered::Scalar(result))
    }

    fn atomic_leaf(
        &mut self,
        op: Op,
        name: &str,
        leaf: u32,
        indices: &[Word],
        value: Word,
        kind: Kind,
    ) -> Result<Option<Word>, Failed> {
        let access = &mut self.k.leaves[leaf as usize].access;
        access.read = true;
        access.write = true;
        let pointer = self.element_pointer(leaf, indices, 0)?;
        let Leaf { class, stored, .. } = self.k.leaves[leaf as usize];
        let scope = if class == StorageClass::Workgroup { spirv::Scope::Workgroup } else { spirv::Scope::Device };
        let scope = self.e.u32_constant(scope as u32);
        // Relaxed: an atomic orders nothing but itself, as on the CPU backend.
        let relaxed = self.e.u32_constant(0);
        if let Kind::Float(bits) = kind {
            return Ok(Some(self.float_atomic(op, name, pointer, scope, relaxed, value, bits)?));
        }
        let b = &mut self.e.b;
        let old = match name {
            "add" => b.atomic_i_add(stored, None, pointer, scope, relaxed, value)?,
            "min" => b.atomic_s_min(stored, None, pointer, scope, relaxed, value)?,
            "max" => b.atomic_s_max(stored, None, pointer, scope, relaxed, value)?,
            "and" => b.atomic_and(stored, None, pointer, scope, relaxed, value)?,
            "or" => b.atomic_or(stored, None, pointer, scope, relaxed, value)?,
            "xor" => b.atomic_xor(stored, None, pointer, scope, relaxed, value)?,
            "exchange" => b.atomic_exchange(stored, None, pointer, scope, relaxed, value)?,
            _ => return Err(self.error(op, format!("unknown atomic kind '{name}'"))),
        };
        Ok(Some(old))
    }

    /// A float atomic as a compare-and-swap loop on the element's bits (stored as an integer:
    /// [`Storage::FloatBits`]), computing the new value as the scalar op of the same name does.
    #[allow(clippy::too_many_arguments)]
    fn float_atomic(
        &mut self,
        op: Op,
        name: &str,
        pointer: Word,
        scope: Word,
        relaxed: Word,
        value: Word,
        bits: u32,
    ) -> Result<Word, Failed> {
        let float = self.e.float(bits);
        let int = self.e.int(bits);
        let bool = self.e.bool();
        let first = self.e.b.atomic_load(int, None, pointer, scope, relaxed)?;
        let before = self.block;
        let (header, body, continuing, merge) = (self.e.b.id(), self.e.b.id(), self.e.b.id(), self.e.b.id());
        let (expected, actual) = (self.e.b.id(), self.e.b.id());
        self.e.b.branch(header)?;
        self.start_block(header)?;
        self.e.b.phi(int, Some(expected), [(first, before), (actual, continuing)])?;
        self.e.b.loop_merge(merge, continuing, spirv::LoopControl::NONE, [])?;
        self.e.b.branch(body)?;
        self.start_block(body)?;
        let old = self.e.b.bitcast(float, None, expected)?;
        let new = match name {
            "add" => {
                let sum = self.e.b.f_add(float, None, old, value)?;
                self.e.b.decorate(sum, spirv::Decoration::NoContraction, []);
                sum
            }
            "min" | "max" => self.float_extremum(old, value, bits, name == "max", true)?,
            "exchange" => value,
            _ => return Err(self.error(op, format!("atomic kind '{name}' needs an integer element"))),
        };
        let new_bits = self.e.b.bitcast(int, None, new)?;
        self.e.b.atomic_compare_exchange(int, Some(actual), pointer, scope, relaxed, relaxed, new_bits, expected)?;
        let swapped = self.e.b.i_equal(bool, None, actual, expected)?;
        self.e.b.branch_conditional(swapped, merge, continuing, [])?;
        self.start_block(continuing)?;
        self.e.b.branch(header)?;
        self.start_block(merge)?;
        Ok(self.e.b.bitcast(float, None, expected)?)
    }
}

/// The sorted union of two sorted leaf sets.
pub(crate) fn union(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut all: Vec<u32> = a.iter().chain(b).copied().collect();
    all.sort_unstable();
    all.dedup();
    all
}
