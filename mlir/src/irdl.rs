//! hat's `buffer` dialect declared in IRDL: what `--to-mlir-irdl` writes and what the bridge's
//! MLIR context loads, so that MLIR's verifier checks `buffer` ops' operands and results.
//!
//! Why only `buffer`: IRDL (LLVM 22) declares operands, results, attributes and regions, but no
//! traits. `compute.func`/`kernel.func` need `NoTerminator`-free regions ending in
//! `compute.return`/`kernel.return`, which MLIR accepts only from an op with the `IsTerminator`
//! trait; and a dialect declared in IRDL refuses ops it does not declare. So `compute` and
//! `kernel` stay unregistered generic ops (`--allow-unregistered-dialect`), and `buffer`, whose
//! ops have neither regions nor terminators, is declared whole.

/// The IRDL module declaring `buffer`.
pub const IRDL: &str = r##"// hat's `buffer` dialect, for `mlir-opt --irdl-file=` (written by `hat-opt --to-mlir-irdl`).
// `compute` and `kernel` are not declared: IRDL has no traits, and their functions need
// terminators (see docs/mlir.md); read them with --allow-unregistered-dialect.
module {
  irdl.dialect @buffer {
    irdl.operation @alloc {
      %index = irdl.is index
      %memref = irdl.base "!builtin.memref"
      irdl.operands(sizes: variadic %index)
      irdl.results(buffer: %memref)
    }
    irdl.operation @dealloc {
      %memref = irdl.base "!builtin.memref"
      irdl.operands(buffer: %memref)
    }
    irdl.operation @release {
      %memref = irdl.base "!builtin.memref"
      irdl.operands(buffer: %memref)
    }
    irdl.operation @arena {
      %index = irdl.is index
      irdl.operands(sizes: variadic %index)
    }
    irdl.operation @load {
      %memref = irdl.base "!builtin.memref"
      %index = irdl.is index
      %any = irdl.any
      irdl.operands(buffer: %memref, indices: variadic %index)
      irdl.results(value: %any)
    }
    irdl.operation @store {
      %any = irdl.any
      %memref = irdl.base "!builtin.memref"
      %index = irdl.is index
      irdl.operands(value: %any, buffer: %memref, indices: variadic %index)
    }
    irdl.operation @dim {
      %memref = irdl.base "!builtin.memref"
      %index = irdl.is index
      %integer = irdl.base "#builtin.integer"
      irdl.operands(buffer: %memref)
      irdl.results(size: %index)
      irdl.attributes {"dimension" = %integer}
    }
    irdl.operation @copy {
      %memref = irdl.base "!builtin.memref"
      irdl.operands(source: %memref, destination: %memref)
    }
    irdl.operation @to_device {
      %memref = irdl.base "!builtin.memref"
      %index = irdl.is index
      irdl.operands(buffer: %memref, range: variadic %index)
    }
    irdl.operation @from_device {
      %memref = irdl.base "!builtin.memref"
      %index = irdl.is index
      irdl.operands(buffer: %memref, range: variadic %index)
    }
    irdl.operation @before_host_read {
      %memref = irdl.base "!builtin.memref"
      %index = irdl.is index
      irdl.operands(buffer: %memref, range: variadic %index)
    }
    irdl.operation @after_host_read {
      %memref = irdl.base "!builtin.memref"
      %index = irdl.is index
      irdl.operands(buffer: %memref, range: variadic %index)
    }
    irdl.operation @before_host_write {
      %memref = irdl.base "!builtin.memref"
      %index = irdl.is index
      irdl.operands(buffer: %memref, range: variadic %index)
    }
    irdl.operation @after_host_write {
      %memref = irdl.base "!builtin.memref"
      %index = irdl.is index
      irdl.operands(buffer: %memref, range: variadic %index)
    }
  }
}
"##;
