//! The [`Context`] owns everything: the registry of dialects and operations, the uniqued types,
//! attributes and identifiers, the arenas of operations, blocks, regions and values, and the source
//! files that locations point into. IR is mutated through `&mut Context`; there is no interior
//! mutability.
//!
//! Invariants kept by the mutation methods here:
//! - an operation is in at most one block, a block in at most one region, a region in exactly the
//!   operation that created it;
//! - the results of an operation are consecutive values in the value arena;
//! - attribute lists are sorted by name and hold each name once.
//!
//! Erased operations and the reuse of their slots: [`Context::erase_op`] detaches an op and marks
//! it erased; its handle (and those of the ops nested in it and of their results) stays valid,
//! naming the erased op, until [`Context::reclaim_erased_ops`] is called. That call frees the
//! slots of every op erased since the last one (the ops nested in them included), and
//! [`Context::create_op`] then reuses a free slot whose op had as many results as the new one,
//! with its result values. So after a reclaim a stale handle may name a new op: it must be called
//! only where nobody holds a handle to an erased op (nor to its results) any more. The pass
//! manager calls it after each pass run (passes keep no handles from one run to the next, and a
//! pass only erases ops nested in the op it runs on); a tool that never calls it never sees a
//! handle reused. Blocks, regions and block arguments are not reused. Without the reuse, a
//! pipeline that rewrites every function would grow the arenas by every op it ever created.

use crate::arena::ChunkedVec;
use crate::attributes::{sign_extend, AttributeKind};
use crate::dialect::{DialectInfo, OpDefinition, OpTraits};
use crate::interfaces::InterfaceSet;
use crate::interner::Interner;
use crate::location::{Location, SourceMap};
use crate::rewrite::FoldFn;
use crate::types::{FloatKind, Signedness, TypeKind};
use crate::{Attribute, Block, Ident, Op, OpName, Region, Type, Value};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::sync::Arc;

/// What a value is: the `index`-th result of an op, or the `index`-th argument of a block.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ValueDef {
    /// An operation result.
    Result {
        /// The defining op.
        op: Op,
        /// Which result.
        index: u32,
    },
    /// A block argument.
    BlockArgument {
        /// The owning block.
        block: Block,
        /// Which argument.
        index: u32,
    },
}

#[derive(Clone, Debug)]
struct ValueData {
    ty: Type,
    def: ValueDef,
}

#[derive(Clone, Debug)]
struct OpData {
    name: OpName,
    location: Location,
    operands: SmallVec<[Value; 3]>,
    first_result: u32,
    result_count: u32,
    attributes: Vec<(Ident, Attribute)>,
    regions: Box<[Region]>,
    successors: Box<[Block]>,
    parent: Option<Block>,
    prev: Option<Op>,
    next: Option<Op>,
    /// Erased (see the module documentation): waiting for a reclaim, or free.
    erased: bool,
}

#[derive(Clone, Debug, Default)]
struct BlockData {
    arguments: Vec<Value>,
    first: Option<Op>,
    last: Option<Op>,
    parent: Option<Region>,
    location: Option<Location>,
}

#[derive(Clone, Debug, Default)]
struct RegionData {
    blocks: Vec<Block>,
    parent: Option<Op>,
}

struct OpNameInfo {
    name: Box<str>,
    definition: Option<Arc<dyn OpDefinition>>,
    interfaces: InterfaceSet,
}

/// What an operation is made from; [`Context::create_op`] turns it into an op.
#[derive(Clone, Debug)]
pub struct OperationState {
    /// The op's name.
    pub name: OpName,
    /// Where it comes from.
    pub location: Location,
    /// Operand values.
    pub operands: Vec<Value>,
    /// Types of the results to create.
    pub result_types: Vec<Type>,
    /// Attributes, in any order (they are sorted on creation; a later duplicate wins).
    pub attributes: Vec<(Ident, Attribute)>,
    /// Regions, created beforehand with [`Context::create_region`] and not yet owned.
    pub regions: Vec<Region>,
    /// Successor blocks.
    pub successors: Vec<Block>,
}

impl OperationState {
    /// An empty state for an op named `name`.
    pub fn new(name: OpName, location: Location) -> Self {
        OperationState {
            name,
            location,
            operands: Vec::new(),
            result_types: Vec::new(),
            attributes: Vec::new(),
            regions: Vec::new(),
            successors: Vec::new(),
        }
    }
}

/// Owner of all IR. See the module documentation.
pub struct Context {
    op_names: Vec<OpNameInfo>,
    op_name_lookup: FxHashMap<Box<str>, OpName>,
    dialects: Vec<DialectInfo>,
    types: Interner<TypeKind>,
    attributes: Interner<AttributeKind>,
    identifiers: Interner<Box<str>>,
    ops: ChunkedVec<OpData>,
    blocks: Vec<BlockData>,
    regions: Vec<RegionData>,
    values: ChunkedVec<ValueData>,
    /// Ops erased since the last [`Context::reclaim_erased_ops`].
    erased_ops: Vec<Op>,
    /// Free op slots, by the number of results (and result values) that they come with.
    free_ops: Vec<Vec<Op>>,
    /// Folders by op name index (see [`Context::register_folder`]).
    folders: Vec<Option<FoldFn>>,
    /// Source names of region arguments (`%grid`, without the `%`), kept from the parser for
    /// tools that address arguments by name; not printed.
    argument_names: FxHashMap<Value, Box<str>>,
    /// The files that locations point into.
    pub sources: SourceMap,
    /// Whether parsing accepts ops of dialects that are not registered.
    pub allow_unregistered: bool,
}

impl Default for Context {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").field("ops", &self.ops.len()).field("values", &self.values.len()).finish()
    }
}

impl Context {
    /// An empty context with no dialects registered.
    pub fn new() -> Self {
        Context {
            op_names: Vec::new(),
            op_name_lookup: FxHashMap::default(),
            dialects: Vec::new(),
            types: Interner::default(),
            attributes: Interner::default(),
            identifiers: Interner::default(),
            ops: ChunkedVec::new(),
            blocks: Vec::new(),
            regions: Vec::new(),
            values: ChunkedVec::new(),
            erased_ops: Vec::new(),
            free_ops: Vec::new(),
            folders: Vec::new(),
            argument_names: FxHashMap::default(),
            sources: SourceMap::default(),
            allow_unregistered: false,
        }
    }

    // ----- registry -------------------------------------------------------------------------

    /// Registers a dialect namespace (idempotent).
    pub fn register_dialect(&mut self, name: &str, summary: &str) {
        if !self.dialects.iter().any(|d| d.name == name) {
            self.dialects.push(DialectInfo { name: name.to_string(), summary: summary.to_string() });
        }
    }

    /// Registered dialects, in registration order.
    pub fn dialects(&self) -> &[DialectInfo] {
        &self.dialects
    }

    /// Whether a dialect namespace is registered.
    pub fn is_dialect_registered(&self, name: &str) -> bool {
        self.dialects.iter().any(|d| d.name == name)
    }

    /// Registers an operation definition; a later registration of the same name replaces it.
    pub fn register_op(&mut self, definition: impl OpDefinition) -> OpName {
        let definition: Arc<dyn OpDefinition> = Arc::new(definition);
        let name = self.op_name(definition.name());
        self.op_names[name.index()].definition = Some(definition);
        name
    }

    /// The handle of an op name, registered or not (unregistered names are remembered too).
    pub fn op_name(&mut self, name: &str) -> OpName {
        if let Some(&handle) = self.op_name_lookup.get(name) {
            return handle;
        }
        let handle = OpName::from_index(self.op_names.len());
        self.op_names.push(OpNameInfo { name: name.into(), definition: None, interfaces: InterfaceSet::default() });
        self.op_name_lookup.insert(name.into(), handle);
        handle
    }

    /// The handle of an op name if the context has seen it.
    pub fn find_op_name(&self, name: &str) -> Option<OpName> {
        self.op_name_lookup.get(name).copied()
    }

    /// The text of an op name.
    pub fn op_name_str(&self, name: OpName) -> &str {
        &self.op_names[name.index()].name
    }

    /// The definition of a registered op name.
    pub fn definition(&self, name: OpName) -> Option<&Arc<dyn OpDefinition>> {
        self.op_names[name.index()].definition.as_ref()
    }

    /// All registered op definitions, sorted by name.
    pub fn registered_ops(&self) -> Vec<&Arc<dyn OpDefinition>> {
        let mut ops: Vec<_> = self.op_names.iter().filter_map(|info| info.definition.as_ref()).collect();
        ops.sort_by(|a, b| a.name().cmp(b.name()));
        ops
    }

    /// The traits of an op (none for unregistered ops).
    pub fn traits(&self, op: Op) -> OpTraits {
        self.definition(self.op(op).name).map_or(OpTraits::NONE, |d| d.traits())
    }

    /// Whether an op has all of `traits`.
    pub fn has_traits(&self, op: Op, traits: OpTraits) -> bool {
        self.traits(op).contains(traits)
    }

    /// Attaches an implementation of the interface `I` (a `dyn Trait`) to the ops named `name`,
    /// registered or not, replacing an earlier one (see [`crate::interfaces`]).
    pub fn attach_interface<I: ?Sized + Sync + 'static>(&mut self, name: &str, implementation: &'static I) {
        let name = self.op_name(name);
        self.op_names[name.index()].interfaces.attach(implementation);
    }

    /// The implementation of interface `I` attached to `op`'s name.
    pub fn interface<I: ?Sized + Sync + 'static>(&self, op: Op) -> Option<&'static I> {
        self.name_interface(self.op(op).name)
    }

    /// The implementation of interface `I` attached to an op name.
    pub fn name_interface<I: ?Sized + Sync + 'static>(&self, name: OpName) -> Option<&'static I> {
        self.op_names[name.index()].interfaces.get::<I>()
    }

    /// The type names of the interfaces attached to an op name (for `--show-dialects` and tests).
    pub fn interface_names(&self, name: OpName) -> Vec<&'static str> {
        self.op_names[name.index()].interfaces.names().collect()
    }

    /// Registers the folder of the ops named `name` (a later registration replaces it). A folder
    /// computes an op's result from constant operands or algebraic identities without changing
    /// the IR; the rewrite drivers call it (see [`crate::rewrite::fold`]).
    pub fn register_folder(&mut self, name: &str, folder: FoldFn) {
        let index = self.op_name(name).index();
        if self.folders.len() <= index {
            self.folders.resize(index + 1, None);
        }
        self.folders[index] = Some(folder);
    }

    /// The folder registered for an op name, if any.
    pub fn folder(&self, name: OpName) -> Option<FoldFn> {
        self.folders.get(name.index()).copied().flatten()
    }

    // ----- identifiers, types, attributes ----------------------------------------------------

    /// Interns a string.
    pub fn ident(&mut self, text: &str) -> Ident {
        if let Some(index) = self.identifiers.find(text) {
            return Ident::from_index(index);
        }
        Ident::from_index(self.identifiers.intern(text.into()))
    }

    /// An identifier if the string was interned before.
    pub fn find_ident(&self, text: &str) -> Option<Ident> {
        self.identifiers.find(text).map(Ident::from_index)
    }

    /// The text of an identifier.
    pub fn ident_str(&self, ident: Ident) -> &str {
        self.identifiers.get(ident.index())
    }

    /// Uniques a type.
    pub fn intern_type(&mut self, kind: TypeKind) -> Type {
        Type::from_index(self.types.intern(kind))
    }

    /// The structure of a type.
    pub fn type_kind(&self, ty: Type) -> &TypeKind {
        self.types.get(ty.index())
    }

    /// `iN`.
    pub fn integer_type(&mut self, width: u32) -> Type {
        self.intern_type(TypeKind::Integer { width, signedness: Signedness::Signless })
    }

    /// `index`.
    pub fn index_type(&mut self) -> Type {
        self.intern_type(TypeKind::Index)
    }

    /// A float type.
    pub fn float_type(&mut self, kind: FloatKind) -> Type {
        self.intern_type(TypeKind::Float(kind))
    }

    /// `none`.
    pub fn none_type(&mut self) -> Type {
        self.intern_type(TypeKind::None)
    }

    /// `memref<shape x element>`.
    pub fn memref_type(&mut self, shape: &[i64], element: Type) -> Type {
        self.intern_type(TypeKind::MemRef { shape: shape.into(), element })
    }

    /// `(inputs) -> results`.
    pub fn function_type(&mut self, inputs: &[Type], results: &[Type]) -> Type {
        self.intern_type(TypeKind::Function { inputs: inputs.into(), results: results.into() })
    }

    /// Uniques an attribute.
    pub fn intern_attribute(&mut self, kind: AttributeKind) -> Attribute {
        Attribute::from_index(self.attributes.intern(kind))
    }

    /// The structure of an attribute.
    pub fn attribute_kind(&self, attribute: Attribute) -> &AttributeKind {
        self.attributes.get(attribute.index())
    }

    /// An integer attribute, sign-extended from the type's width.
    pub fn integer_attr(&mut self, value: i64, ty: Type) -> Attribute {
        let width = self.type_kind(ty).bit_width().unwrap_or(64);
        let value = sign_extend(value, width);
        self.intern_attribute(AttributeKind::Integer { value, ty })
    }

    /// A float attribute (rounded to the type's precision).
    pub fn float_attr(&mut self, value: f64, ty: Type) -> Attribute {
        let value = match self.type_kind(ty) {
            TypeKind::Float(FloatKind::F32) => value as f32 as f64,
            _ => value,
        };
        self.intern_attribute(AttributeKind::Float { bits: value.to_bits(), ty })
    }

    /// A string attribute.
    pub fn string_attr(&mut self, text: &str) -> Attribute {
        self.intern_attribute(AttributeKind::String(text.into()))
    }

    /// A type attribute.
    pub fn type_attr(&mut self, ty: Type) -> Attribute {
        self.intern_attribute(AttributeKind::Type(ty))
    }

    /// The unit attribute.
    pub fn unit_attr(&mut self) -> Attribute {
        self.intern_attribute(AttributeKind::Unit)
    }

    /// A flat symbol reference `@name`.
    pub fn symbol_ref_attr(&mut self, name: &str) -> Attribute {
        let ident = self.ident(name);
        self.intern_attribute(AttributeKind::SymbolRef(Box::new([ident])))
    }

    /// `array<i64: ...>`.
    pub fn dense_i64_array_attr(&mut self, values: &[i64]) -> Attribute {
        let element = self.integer_type(64);
        self.intern_attribute(AttributeKind::DenseArray { element, values: values.into() })
    }

    /// An array attribute.
    pub fn array_attr(&mut self, elements: &[Attribute]) -> Attribute {
        self.intern_attribute(AttributeKind::Array(elements.into()))
    }

    // ----- creation -------------------------------------------------------------------------

    /// A new, empty, unowned region.
    pub fn create_region(&mut self) -> Region {
        self.regions.push(RegionData::default());
        Region::from_index(self.regions.len() - 1)
    }

    /// A new, unowned block with arguments of the given types.
    pub fn create_block(&mut self, argument_types: &[Type]) -> Block {
        let block = Block::from_index(self.blocks.len());
        self.blocks.push(BlockData::default());
        for &ty in argument_types {
            self.add_block_argument(block, ty);
        }
        block
    }

    /// Appends an argument to a block.
    pub fn add_block_argument(&mut self, block: Block, ty: Type) -> Value {
        let index = self.blocks[block.index()].arguments.len() as u32;
        let value = self.new_value(ty, ValueDef::BlockArgument { block, index });
        self.blocks[block.index()].arguments.push(value);
        value
    }

    /// Sets where a block was written (its label, or its region's brace).
    pub fn set_block_location(&mut self, block: Block, location: Location) {
        self.blocks[block.index()].location = Some(location);
    }

    fn new_value(&mut self, ty: Type, def: ValueDef) -> Value {
        self.values.push(ValueData { ty, def });
        Value::from_index(self.values.len() - 1)
    }

    /// Creates a detached operation from `state`, taking ownership of its regions. The slot of
    /// a reclaimed op with as many results is reused when there is one (see the module
    /// documentation).
    pub fn create_op(&mut self, state: OperationState) -> Op {
        let result_count = state.result_types.len();
        let reused = self.free_ops.get_mut(result_count).and_then(Vec::pop);
        let op = reused.unwrap_or_else(|| Op::from_index(self.ops.len()));
        let first_result = match reused {
            Some(op) => {
                let first = self.ops[op.index()].first_result;
                for (index, &ty) in state.result_types.iter().enumerate() {
                    self.values[first as usize + index] =
                        ValueData { ty, def: ValueDef::Result { op, index: index as u32 } };
                }
                first
            }
            None => {
                let first = self.values.len() as u32;
                for (index, &ty) in state.result_types.iter().enumerate() {
                    self.new_value(ty, ValueDef::Result { op, index: index as u32 });
                }
                first
            }
        };
        let mut attributes = state.attributes;
        self.sort_attributes(&mut attributes);
        for &region in &state.regions {
            debug_assert!(self.regions[region.index()].parent.is_none(), "region already owned");
            self.regions[region.index()].parent = Some(op);
        }
        let data = OpData {
            name: state.name,
            location: state.location,
            operands: SmallVec::from_vec(state.operands),
            first_result,
            result_count: result_count as u32,
            attributes,
            regions: state.regions.into_boxed_slice(),
            successors: state.successors.into_boxed_slice(),
            parent: None,
            prev: None,
            next: None,
            erased: false,
        };
        match reused {
            Some(op) => self.ops[op.index()] = data,
            None => self.ops.push(data),
        }
        op
    }

    fn sort_attributes(&self, attributes: &mut Vec<(Ident, Attribute)>) {
        if attributes.len() < 2 {
            return;
        }
        // Stable sort keeps a later duplicate after an earlier one; keep the later.
        attributes.sort_by(|a, b| self.ident_str(a.0).cmp(self.ident_str(b.0)));
        let mut deduplicated: Vec<(Ident, Attribute)> = Vec::with_capacity(attributes.len());
        for entry in attributes.drain(..) {
            match deduplicated.last_mut() {
                Some(last) if last.0 == entry.0 => *last = entry,
                _ => deduplicated.push(entry),
            }
        }
        *attributes = deduplicated;
    }

    // ----- structure edits ------------------------------------------------------------------

    /// Appends a detached block to a region.
    pub fn append_block(&mut self, region: Region, block: Block) {
        debug_assert!(self.blocks[block.index()].parent.is_none(), "block already in a region");
        self.blocks[block.index()].parent = Some(region);
        self.regions[region.index()].blocks.push(block);
    }

    /// Appends a detached op at the end of a block.
    pub fn append_op(&mut self, block: Block, op: Op) {
        debug_assert!(self.ops[op.index()].parent.is_none(), "op already in a block");
        let last = self.blocks[block.index()].last;
        {
            let data = &mut self.ops[op.index()];
            data.parent = Some(block);
            data.prev = last;
            data.next = None;
        }
        match last {
            Some(last) => self.ops[last.index()].next = Some(op),
            None => self.blocks[block.index()].first = Some(op),
        }
        self.blocks[block.index()].last = Some(op);
    }

    /// Inserts a detached op right before `anchor`, in `anchor`'s block.
    pub fn insert_op_before(&mut self, anchor: Op, op: Op) {
        let block = self.ops[anchor.index()].parent.expect("anchor op is not in a block");
        let prev = self.ops[anchor.index()].prev;
        {
            let data = &mut self.ops[op.index()];
            data.parent = Some(block);
            data.prev = prev;
            data.next = Some(anchor);
        }
        self.ops[anchor.index()].prev = Some(op);
        match prev {
            Some(prev) => self.ops[prev.index()].next = Some(op),
            None => self.blocks[block.index()].first = Some(op),
        }
    }

    /// Inserts a detached op right after `anchor`, in `anchor`'s block.
    pub fn insert_op_after(&mut self, anchor: Op, op: Op) {
        match self.ops[anchor.index()].next {
            Some(next) => self.insert_op_before(next, op),
            None => {
                let block = self.ops[anchor.index()].parent.expect("anchor op is not in a block");
                self.append_op(block, op);
            }
        }
    }

    /// Removes an op from its block, leaving it detached (it can be inserted elsewhere).
    pub fn detach_op(&mut self, op: Op) {
        let Some(block) = self.ops[op.index()].parent else { return };
        let (prev, next) = (self.ops[op.index()].prev, self.ops[op.index()].next);
        match prev {
            Some(prev) => self.ops[prev.index()].next = next,
            None => self.blocks[block.index()].first = next,
        }
        match next {
            Some(next) => self.ops[next.index()].prev = prev,
            None => self.blocks[block.index()].last = prev,
        }
        let data = &mut self.ops[op.index()];
        data.parent = None;
        data.prev = None;
        data.next = None;
    }

    /// Replaces operand `index` of `op`.
    pub fn set_operand(&mut self, op: Op, index: usize, value: Value) {
        self.ops[op.index()].operands[index] = value;
    }

    /// Replaces all operands of `op`.
    pub fn set_operands(&mut self, op: Op, operands: &[Value]) {
        self.ops[op.index()].operands = SmallVec::from_slice(operands);
    }

    /// Sets (or replaces) an attribute.
    pub fn set_attribute(&mut self, op: Op, name: Ident, value: Attribute) {
        let position = {
            let attributes = &self.ops[op.index()].attributes;
            attributes.binary_search_by(|(n, _)| self.ident_str(*n).cmp(self.ident_str(name)))
        };
        let attributes = &mut self.ops[op.index()].attributes;
        match position {
            Ok(i) => attributes[i].1 = value,
            Err(i) => attributes.insert(i, (name, value)),
        }
    }

    /// Removes an attribute; returns it if it was there.
    pub fn remove_attribute(&mut self, op: Op, name: Ident) -> Option<Attribute> {
        let attributes = &mut self.ops[op.index()].attributes;
        let i = attributes.iter().position(|(n, _)| *n == name)?;
        Some(attributes.remove(i).1)
    }

    /// Erases an op: detaches it from its block and drops the operands of the op and of every op
    /// nested in it, so that nothing it held keeps a value in use. Its handle stays valid, naming
    /// the erased op, until the next [`reclaim_erased_ops`](Self::reclaim_erased_ops) (see the
    /// module documentation); it is no longer reachable from any block, so printing and walking
    /// never see it. Callers that track uses (the [`crate::rewrite::Rewriter`]) must check that
    /// its results have no uses left. Erasing an erased op does nothing.
    pub fn erase_op(&mut self, op: Op) {
        if self.ops[op.index()].erased {
            return;
        }
        self.detach_op(op);
        self.ops[op.index()].erased = true;
        self.erased_ops.push(op);
        if self.ops[op.index()].regions.is_empty() {
            self.ops[op.index()].operands = SmallVec::new();
            return;
        }
        for nested in self.walk(op) {
            self.ops[nested.index()].operands = SmallVec::new();
        }
    }

    /// Whether `op` was erased by [`erase_op`](Self::erase_op) (an op nested in an erased op is
    /// marked too once its slot is reclaimed, not before).
    pub fn is_erased(&self, op: Op) -> bool {
        self.ops[op.index()].erased
    }

    /// Frees the slots of the ops erased since the last call, and of the ops nested in them, for
    /// [`create_op`](Self::create_op) to reuse; returns those ops. Call it only where no handle
    /// to them or to their results is held any more (see the module documentation).
    ///
    /// It touches each freed op once and allocates nothing per op: what an op still owns (its
    /// attributes) is dropped when its slot is reused.
    pub fn reclaim_erased_ops(&mut self) -> Vec<Op> {
        let mut reclaimed = Vec::new();
        let mut stack = std::mem::take(&mut self.erased_ops);
        while let Some(op) = stack.pop() {
            let data = &mut self.ops[op.index()];
            data.erased = true;
            let result_count = data.result_count as usize;
            if !data.regions.is_empty() {
                // The nested ops go with it; its regions and blocks are left empty and unowned.
                let regions = std::mem::take(&mut data.regions);
                for region in regions.iter() {
                    let blocks = std::mem::take(&mut self.regions[region.index()].blocks);
                    self.regions[region.index()].parent = None;
                    for block in blocks {
                        let mut cursor = self.blocks[block.index()].first;
                        while let Some(child) = cursor {
                            let child_data = &mut self.ops[child.index()];
                            cursor = child_data.next;
                            (child_data.parent, child_data.prev, child_data.next) = (None, None, None);
                            stack.push(child);
                        }
                        self.blocks[block.index()] = BlockData::default();
                    }
                }
            }
            if self.free_ops.len() <= result_count {
                self.free_ops.resize_with(result_count + 1, Vec::new);
            }
            self.free_ops[result_count].push(op);
            reclaimed.push(op);
        }
        reclaimed
    }

    /// Changes the type of a value (used when a forward reference is resolved).
    pub fn set_value_type(&mut self, value: Value, ty: Type) {
        self.values[value.index()].ty = ty;
    }

    // ----- queries --------------------------------------------------------------------------

    fn op(&self, op: Op) -> &OpData {
        &self.ops[op.index()]
    }

    /// Number of op slots: every op ever created, less those created in reused slots.
    pub fn op_count(&self) -> usize {
        self.ops.len()
    }

    /// Number of values ever created.
    pub fn value_count(&self) -> usize {
        self.values.len()
    }

    /// Number of blocks ever created.
    pub fn block_count(&self) -> usize {
        self.blocks.len()
    }

    /// An op's name handle.
    pub fn name(&self, op: Op) -> OpName {
        self.op(op).name
    }

    /// An op's name as text.
    pub fn name_str(&self, op: Op) -> &str {
        self.op_name_str(self.op(op).name)
    }

    /// Whether an op's name is registered.
    pub fn is_registered(&self, op: Op) -> bool {
        self.definition(self.op(op).name).is_some()
    }

    /// Where an op comes from.
    pub fn location(&self, op: Op) -> Location {
        self.op(op).location
    }

    /// Sets where an op comes from.
    pub fn set_location(&mut self, op: Op, location: Location) {
        self.ops[op.index()].location = location;
    }

    /// An op's operands.
    pub fn operands(&self, op: Op) -> &[Value] {
        &self.op(op).operands
    }

    /// Operand `index` of an op.
    pub fn operand(&self, op: Op, index: usize) -> Value {
        self.op(op).operands[index]
    }

    /// An op's results.
    pub fn results(&self, op: Op) -> impl ExactSizeIterator<Item = Value> + Clone {
        let data = self.op(op);
        (data.first_result..data.first_result + data.result_count).map(|i| Value::from_index(i as usize))
    }

    /// How many results an op has.
    pub fn result_count(&self, op: Op) -> usize {
        self.op(op).result_count as usize
    }

    /// Result `index` of an op.
    pub fn result(&self, op: Op, index: usize) -> Value {
        let data = self.op(op);
        assert!(index < data.result_count as usize, "result index out of range");
        Value::from_index(data.first_result as usize + index)
    }

    /// An op's attributes, sorted by name.
    pub fn attributes(&self, op: Op) -> &[(Ident, Attribute)] {
        &self.op(op).attributes
    }

    /// An attribute of an op by name.
    pub fn attribute(&self, op: Op, name: &str) -> Option<Attribute> {
        // An op has a few attributes: comparing their names costs less than hashing `name`.
        self.op(op).attributes.iter().find(|&&(n, _)| self.ident_str(n) == name).map(|&(_, a)| a)
    }

    /// An op's regions.
    pub fn regions(&self, op: Op) -> &[Region] {
        &self.op(op).regions
    }

    /// An op's successor blocks.
    pub fn successors(&self, op: Op) -> &[Block] {
        &self.op(op).successors
    }

    /// The block holding an op.
    pub fn parent_block(&self, op: Op) -> Option<Block> {
        self.op(op).parent
    }

    /// The op whose region holds this op's block.
    pub fn parent_op(&self, op: Op) -> Option<Op> {
        let block = self.op(op).parent?;
        let region = self.blocks[block.index()].parent?;
        self.regions[region.index()].parent
    }

    /// The next op in the same block.
    pub fn next_op(&self, op: Op) -> Option<Op> {
        self.op(op).next
    }

    /// The previous op in the same block.
    pub fn prev_op(&self, op: Op) -> Option<Op> {
        self.op(op).prev
    }

    /// A block's arguments.
    pub fn block_arguments(&self, block: Block) -> &[Value] {
        &self.blocks[block.index()].arguments
    }

    /// The ops of a block in order.
    pub fn block_ops(&self, block: Block) -> BlockOps<'_> {
        BlockOps { ctx: self, next: self.blocks[block.index()].first }
    }

    /// The first op of a block.
    pub fn first_op(&self, block: Block) -> Option<Op> {
        self.blocks[block.index()].first
    }

    /// The last op of a block (its terminator, in a verified block that needs one).
    pub fn last_op(&self, block: Block) -> Option<Op> {
        self.blocks[block.index()].last
    }

    /// The region holding a block.
    pub fn block_parent(&self, block: Block) -> Option<Region> {
        self.blocks[block.index()].parent
    }

    /// Where a block was written, if known.
    pub fn block_location(&self, block: Block) -> Option<Location> {
        self.blocks[block.index()].location
    }

    /// A region's blocks in order.
    pub fn region_blocks(&self, region: Region) -> &[Block] {
        &self.regions[region.index()].blocks
    }

    /// The op owning a region.
    pub fn region_parent(&self, region: Region) -> Option<Op> {
        self.regions[region.index()].parent
    }

    /// Records the source name of a region argument.
    pub fn set_argument_name(&mut self, value: Value, name: &str) {
        self.argument_names.insert(value, name.into());
    }

    /// The source name of a region argument (without `%`), if it was parsed from text.
    pub fn argument_name(&self, value: Value) -> Option<&str> {
        self.argument_names.get(&value).map(|n| &**n)
    }

    /// The type of a value.
    pub fn value_type(&self, value: Value) -> Type {
        self.values[value.index()].ty
    }

    /// What defines a value.
    pub fn value_def(&self, value: Value) -> ValueDef {
        self.values[value.index()].def
    }

    /// The op defining a value, if it is a result.
    pub fn defining_op(&self, value: Value) -> Option<Op> {
        match self.value_def(value) {
            ValueDef::Result { op, .. } => Some(op),
            ValueDef::BlockArgument { .. } => None,
        }
    }

    /// The block in which a value is defined (for results: the block of the defining op).
    pub fn value_block(&self, value: Value) -> Option<Block> {
        match self.value_def(value) {
            ValueDef::Result { op, .. } => self.parent_block(op),
            ValueDef::BlockArgument { block, .. } => Some(block),
        }
    }

    /// `op`, or the op enclosing it, that is in `block` (MLIR's `Block::findAncestorOpInBlock`);
    /// `None` when `op` is not nested in `block`.
    pub fn ancestor_in_block(&self, block: Block, op: Op) -> Option<Op> {
        let mut current = Some(op);
        while let Some(o) = current {
            if self.parent_block(o) == Some(block) {
                return Some(o);
            }
            current = self.parent_op(o);
        }
        None
    }

    /// Whether `ancestor` is `op` or encloses it.
    pub fn is_ancestor(&self, ancestor: Op, op: Op) -> bool {
        let mut current = Some(op);
        while let Some(o) = current {
            if o == ancestor {
                return true;
            }
            current = self.parent_op(o);
        }
        false
    }

    /// Every op nested in `root` (including `root`), in pre-order. Iterative: deep nesting is fine.
    pub fn walk(&self, root: Op) -> Vec<Op> {
        let mut out = Vec::new();
        self.walk_with(root, |op| out.push(op));
        out
    }

    /// Calls `visit` on every op nested in `root` (including `root`), in pre-order, as
    /// [`Context::walk`] lists them but without the list: one cursor per block being walked.
    pub fn walk_with(&self, root: Op, mut visit: impl FnMut(Op)) {
        let mut cursors: Vec<Op> = vec![root];
        while let Some(op) = cursors.pop() {
            visit(op);
            if op != root {
                if let Some(next) = self.next_op(op) {
                    cursors.push(next);
                }
            }
            // The first op of each block, the first block's on top.
            for &region in self.regions(op).iter().rev() {
                for &block in self.region_blocks(region).iter().rev() {
                    cursors.extend(self.first_op(block));
                }
            }
        }
    }

    /// The ops of the single block of the first region of `op` (such as a module's body).
    pub fn body_ops(&self, op: Op) -> Vec<Op> {
        self.regions(op)
            .first()
            .and_then(|&r| self.region_blocks(r).first())
            .map(|&b| self.block_ops(b).collect())
            .unwrap_or_default()
    }
}

/// Iterator over the ops of a block.
pub struct BlockOps<'a> {
    ctx: &'a Context,
    next: Option<Op>,
}

impl Iterator for BlockOps<'_> {
    type Item = Op;
    fn next(&mut self) -> Option<Op> {
        let op = self.next?;
        self.next = self.ctx.next_op(op);
        Some(op)
    }
}
