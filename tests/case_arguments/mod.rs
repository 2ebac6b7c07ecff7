//! The arguments of a generated case's `@main` (`program_gen`), for the tests that run generated
//! programs on the executor: the buffers, then the trip counts, the flags and `%seed`.
//! (`program_gen` itself uses only `std`.)

use crate::program_gen::ast::Case;
use hat_runtime::{ArgValue, HostBuffer, Scalar};

/// The arguments of `case`'s `@main`.
pub fn arguments(case: &Case) -> Vec<ArgValue> {
    let mut args: Vec<ArgValue> = case
        .program
        .buffers
        .iter()
        .zip(&case.args.buffers)
        .map(|(shape, values)| {
            let dims: Vec<usize> = shape.0.iter().map(|&d| d as usize).collect();
            ArgValue::Buffer(HostBuffer::from_i32(&dims, values).expect("the values fit the shape"))
        })
        .collect();
    let int = |v: i64| ArgValue::Scalar(Scalar::Int(v));
    args.extend(case.args.trips.iter().map(|&t| int(t as i64)));
    args.extend(case.args.flags.iter().map(|&f| int(f as i64)));
    args.push(int(case.args.seed as i64));
    args
}
