//! The module being built: an rspirv [`Builder`] with the caches a SPIR-V module needs so that
//! each type, constant and built-in is declared once (SPIR-V forbids duplicate non-aggregate
//! types, and rspirv does not unique constants).
//!
//! Every integer type is declared unsigned-agnostic (`OpTypeInt N 0`): SPIR-V's integer
//! instructions say how they read their operands (`OpSDiv`, `OpUDiv`), as hat's signless
//! integers do, so one integer type per width is enough.

use crate::Failed;
use rspirv::dr::{Builder, Operand};
use rspirv::spirv::{self, BuiltIn, Decoration, StorageClass, Word};
use rustc_hash::FxHashMap;

/// The module under construction.
pub(crate) struct Emitter {
    pub b: Builder,
    glsl: Word,
    constants: FxHashMap<(Word, u64), Word>,
    booleans: [Option<Word>; 2],
    builtins: FxHashMap<u32, Word>,
    capabilities: Vec<spirv::Capability>,
    extensions: Vec<&'static str>,
    /// Runtime arrays and block structs already decorated (rspirv uniques them, and a
    /// decoration must not repeat).
    decorated: Vec<Word>,
    /// The width of `index` on the device.
    pub index_bits: u32,
    /// The specialisation constant [`crate::artifact::WHOLE_GRID_SPEC_ID`], once declared.
    whole_grid: Option<Word>,
}

impl Emitter {
    pub fn new(index_bits: u32) -> Self {
        let mut b = Builder::new();
        b.set_version(1, 3);
        b.capability(spirv::Capability::Shader);
        let glsl = b.ext_inst_import("GLSL.std.450");
        b.memory_model(spirv::AddressingModel::Logical, spirv::MemoryModel::GLSL450);
        let mut emitter = Emitter {
            b,
            glsl,
            constants: FxHashMap::default(),
            booleans: [None, None],
            builtins: FxHashMap::default(),
            capabilities: vec![spirv::Capability::Shader],
            extensions: Vec::new(),
            decorated: Vec::new(),
            index_bits,
            whole_grid: None,
        };
        // A 64-bit `index` appears wherever indices do (constants, ids, sizes), not only where a
        // value's type is checked; lower_module has checked that the device has shaderInt64.
        if index_bits == 64 {
            emitter.capability(spirv::Capability::Int64);
        }
        emitter
    }

    /// Declares a capability once.
    pub fn capability(&mut self, capability: spirv::Capability) {
        if !self.capabilities.contains(&capability) {
            self.capabilities.push(capability);
            self.b.capability(capability);
        }
    }

    /// Declares an extension once.
    pub fn extension(&mut self, extension: &'static str) {
        if !self.extensions.contains(&extension) {
            self.extensions.push(extension);
            self.b.extension(extension);
        }
    }

    /// Whether `id` was decorated already; marks it decorated.
    fn first_decoration(&mut self, id: Word) -> bool {
        if self.decorated.contains(&id) {
            return false;
        }
        self.decorated.push(id);
        true
    }

    /// A runtime array of `element` with stride `stride` (bytes).
    pub fn runtime_array(&mut self, element: Word, stride: u32) -> Word {
        let array = self.b.type_runtime_array(element);
        if self.first_decoration(array) {
            self.b.decorate(array, Decoration::ArrayStride, [Operand::LiteralBit32(stride)]);
        }
        array
    }

    /// A storage-buffer block holding one runtime array at offset 0.
    pub fn block_struct(&mut self, array: Word) -> Word {
        let block = self.b.type_struct([array]);
        if self.first_decoration(block) {
            self.b.decorate(block, Decoration::Block, []);
            self.b.member_decorate(block, 0, Decoration::Offset, [Operand::LiteralBit32(0)]);
        }
        block
    }

    /// A push-constant block of these members at these offsets.
    pub fn push_struct(&mut self, members: &[Word], offsets: &[u32]) -> Word {
        let block = self.b.type_struct(members.iter().copied());
        if self.first_decoration(block) {
            self.b.decorate(block, Decoration::Block, []);
            for (member, &offset) in offsets.iter().enumerate() {
                self.b.member_decorate(block, member as u32, Decoration::Offset, [Operand::LiteralBit32(offset)]);
            }
        }
        block
    }

    // ----- types ----------------------------------------------------------------------------

    pub fn void(&mut self) -> Word {
        self.b.type_void()
    }

    pub fn bool(&mut self) -> Word {
        self.b.type_bool()
    }

    pub fn int(&mut self, bits: u32) -> Word {
        self.b.type_int(bits, 0)
    }

    pub fn u32(&mut self) -> Word {
        self.int(32)
    }

    pub fn float(&mut self, bits: u32) -> Word {
        self.b.type_float(bits)
    }

    /// The device `index` type.
    pub fn index(&mut self) -> Word {
        self.int(self.index_bits)
    }

    pub fn pointer(&mut self, class: StorageClass, pointee: Word) -> Word {
        self.b.type_pointer(None, class, pointee)
    }

    pub fn uvec3(&mut self) -> Word {
        let u32 = self.u32();
        self.b.type_vector(u32, 3)
    }

    // ----- constants ------------------------------------------------------------------------

    /// The constant of type `ty` (an integer or float type of `bits` bits) with these bits.
    pub fn constant_bits(&mut self, ty: Word, bits: u32, value: u64) -> Word {
        let value = if bits >= 64 { value } else { value & ((1u64 << bits) - 1) };
        if let Some(&id) = self.constants.get(&(ty, value)) {
            return id;
        }
        let id = if bits > 32 { self.b.constant_bit64(ty, value) } else { self.b.constant_bit32(ty, value as u32) };
        self.constants.insert((ty, value), id);
        id
    }

    /// An integer constant of `bits` bits (`value`'s low bits).
    pub fn int_constant(&mut self, bits: u32, value: i64) -> Word {
        let ty = self.int(bits);
        self.constant_bits(ty, bits, value as u64)
    }

    pub fn u32_constant(&mut self, value: u32) -> Word {
        self.int_constant(32, value as i64)
    }

    pub fn index_constant(&mut self, value: i64) -> Word {
        self.int_constant(self.index_bits, value)
    }

    /// A float constant of `bits` bits (16, 32 or 64) with the value of `value`.
    pub fn float_constant(&mut self, bits: u32, value: f64) -> Word {
        let ty = self.float(bits);
        let pattern = match bits {
            64 => value.to_bits(),
            32 => (value as f32).to_bits() as u64,
            _ => f32_to_f16_bits(value as f32) as u64,
        };
        self.constant_bits(ty, bits, pattern)
    }

    pub fn bool_constant(&mut self, value: bool) -> Word {
        if let Some(id) = self.booleans[value as usize] {
            return id;
        }
        let ty = self.bool();
        let id = if value { self.b.constant_true(ty) } else { self.b.constant_false(ty) };
        self.booleans[value as usize] = Some(id);
        id
    }

    /// The boolean specialisation constant that says the grid is a whole number of workgroups
    /// (times the work items per invocation) in every dimension: `false` unless the runtime
    /// specialises it, declared once per module (see [`crate::artifact::WHOLE_GRID_SPEC_ID`]).
    pub fn whole_grid_constant(&mut self) -> Word {
        if let Some(id) = self.whole_grid {
            return id;
        }
        let ty = self.bool();
        let id = self.b.spec_constant_false(ty);
        self.b.decorate(id, Decoration::SpecId, [Operand::LiteralBit32(crate::artifact::WHOLE_GRID_SPEC_ID)]);
        self.b.name(id, "grid_is_whole_workgroups");
        self.whole_grid = Some(id);
        id
    }

    // ----- built-ins and extended instructions -----------------------------------------------

    /// The `Input` variable of a `uvec3` built-in, declared once.
    pub fn builtin(&mut self, builtin: BuiltIn) -> Word {
        if let Some(&id) = self.builtins.get(&(builtin as u32)) {
            return id;
        }
        let uvec3 = self.uvec3();
        let pointer = self.pointer(StorageClass::Input, uvec3);
        // Declared while a function is being built: put it among the globals by hand
        // (`Builder::variable` would put it in the current block).
        let id = self.b.id();
        let variable = rspirv::dr::Instruction::new(
            spirv::Op::Variable,
            Some(pointer),
            Some(id),
            vec![Operand::StorageClass(StorageClass::Input)],
        );
        self.b.module_mut().types_global_values.push(variable);
        self.b.decorate(id, Decoration::BuiltIn, [Operand::BuiltIn(builtin)]);
        self.builtins.insert(builtin as u32, id);
        id
    }

    /// Every built-in variable declared: the entry points' interface.
    pub fn builtin_variables(&self) -> Vec<Word> {
        let mut variables: Vec<Word> = self.builtins.values().copied().collect();
        variables.sort_unstable();
        variables
    }

    /// A `GLSL.std.450` instruction.
    pub fn glsl(&mut self, result: Word, instruction: spirv::GLOp, operands: &[Word]) -> Result<Word, Failed> {
        let operands = operands.iter().map(|&id| Operand::IdRef(id));
        Ok(self.b.ext_inst(result, None, self.glsl, instruction as u32, operands)?)
    }
}

/// The nearest `f16` of an `f32`, as bits (round to nearest even; overflow to infinity).
fn f32_to_f16_bits(value: f32) -> u16 {
    let bits = value.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exponent = ((bits >> 23) & 0xff) as i32;
    let mantissa = bits & 0x7f_ffff;
    if exponent == 0xff {
        let nan = if mantissa != 0 { 0x200 | (mantissa >> 13) as u16 } else { 0 };
        return sign | 0x7c00 | nan;
    }
    let unbiased = exponent - 127;
    if unbiased > 15 {
        return sign | 0x7c00;
    }
    if unbiased >= -14 {
        let half = ((unbiased + 15) as u32) << 10 | (mantissa >> 13);
        let rest = mantissa & 0x1fff;
        let rounded = if rest > 0x1000 || (rest == 0x1000 && half & 1 == 1) { half + 1 } else { half };
        return sign | rounded as u16;
    }
    if unbiased < -25 {
        return sign;
    }
    // A subnormal half: shift the full mantissa (with its implicit bit) into place.
    let full = mantissa | 0x80_0000;
    let shift = (-14 - unbiased + 13) as u32;
    let half = full >> shift;
    let rest = full & ((1 << shift) - 1);
    let midpoint = 1 << (shift - 1);
    let rounded = if rest > midpoint || (rest == midpoint && half & 1 == 1) { half + 1 } else { half };
    sign | rounded as u16
}

#[cfg(test)]
mod tests {
    use super::f32_to_f16_bits;

    #[test]
    fn halves_round_to_nearest_even() {
        assert_eq!(f32_to_f16_bits(1.0), 0x3c00);
        assert_eq!(f32_to_f16_bits(-2.0), 0xc000);
        assert_eq!(f32_to_f16_bits(65504.0), 0x7bff);
        assert_eq!(f32_to_f16_bits(1e6), 0x7c00);
        assert_eq!(f32_to_f16_bits(5.960_464_5e-8), 0x0001);
        assert_eq!(f32_to_f16_bits(0.0), 0);
        assert_eq!(f32_to_f16_bits(f32::NAN) & 0x7c00, 0x7c00);
    }
}
