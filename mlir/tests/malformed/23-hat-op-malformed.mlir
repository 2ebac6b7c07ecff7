"builtin.module"() ({
  "compute.func"() ({
  ^bb0(%a: memref<4xi32>):
    %v = "buffer.load"(%a) : (memref<4xi32>) -> i32
    "compute.return"() : () -> ()
  }) {function_type = (memref<4xi32>) -> (), sym_name = "main"} : () -> ()
}) : () -> ()
