//! The body of a kernel: each work item's element of every parameter, its guards, and the
//! reads, combination and writes its parameters' roles ask for.

use super::super::ast::*;
use super::Writer;

/// Where a parameter's element is, for one work item.
struct Place {
    /// In bounds (`i1`).
    inside: String,
    /// The indices of the element.
    indices: Vec<String>,
}

pub(super) struct KernelWriter<'w, 'p> {
    w: &'w mut Writer<'p>,
    kernel: &'p Kernel,
    /// `L`, the position guards test.
    position: String,
    /// The work item's element as `i32`.
    element: String,
    /// 1-D: `e`. 2-D: `(x, y)`, the 1-D flat position and `global_size x`.
    e: String,
    y: String,
    flat: String,
    places: Vec<Place>,
}

impl<'w, 'p> KernelWriter<'w, 'p> {
    pub(super) fn new(w: &'w mut Writer<'p>, kernel: &'p Kernel) -> Self {
        let mut writer = KernelWriter {
            w,
            kernel,
            position: String::new(),
            element: String::new(),
            e: String::new(),
            y: String::new(),
            flat: String::new(),
            places: Vec::new(),
        };
        writer.ids();
        writer
    }

    fn ids(&mut self) {
        let w = &mut *self.w;
        if self.kernel.dims == 1 {
            let id = w.def("kernel.global_id x");
            let mut e = id;
            if self.kernel.stride != 1 {
                let stride = w.index(self.kernel.stride);
                e = w.def(&format!("arith.muli {e}, {stride} : index"));
            }
            if self.kernel.offset != 0 {
                let offset = w.index(self.kernel.offset);
                e = w.def(&format!("arith.addi {e}, {offset} : index"));
            }
            self.flat = e.clone();
            self.e = e;
        } else {
            self.e = w.def("kernel.global_id x");
            self.y = w.def("kernel.global_id y");
            let width = w.def("kernel.global_size x");
            let row = w.def(&format!("arith.muli {}, {width} : index", self.y));
            self.flat = w.def(&format!("arith.addi {row}, {} : index", self.e));
        }
        self.position = self.e.clone();
        self.element = w.def(&format!("arith.index_cast {} : index to i32", self.flat));
        for j in 0..self.kernel.params.len() {
            let place = self.place(j, 0);
            self.places.push(place);
        }
    }

    /// Dimension `d` of parameter `j`: `buffer.dim` or a constant.
    fn dim(&mut self, j: usize, d: usize) -> String {
        let shape = &self.kernel.params[j].shape;
        if self.kernel.dims_from_buffer {
            let ty = shape.memref();
            self.w.def(&format!("buffer.dim %q{j}, {d} : {ty}"))
        } else {
            self.w.index(shape.0[d])
        }
    }

    fn below(&mut self, a: &str, b: &str) -> String {
        self.w.def(&format!("arith.cmpi ult, {a}, {b} : index"))
    }

    fn and(&mut self, a: &str, b: &str) -> String {
        self.w.def(&format!("arith.andi {a}, {b} : i1"))
    }

    /// The element of parameter `j` this work item touches, `shift` elements on.
    fn place(&mut self, j: usize, shift: u64) -> Place {
        let shape = self.kernel.params[j].shape.clone();
        let (e, flat) = (self.e.clone(), self.flat.clone());
        if self.kernel.dims == 2 && shape.rank() == 2 {
            let rows = self.dim(j, 0);
            let cols = self.dim(j, 1);
            let x_in = self.below(&e, &cols);
            let y_in = self.below(&self.y.clone(), &rows);
            let inside = self.and(&x_in, &y_in);
            let mut x = e;
            if shift != 0 {
                let k = self.w.index(shift);
                let moved = self.w.def(&format!("arith.addi {x}, {k} : index"));
                x = self.w.def(&format!("arith.remui {moved}, {cols} : index"));
            }
            return Place { inside, indices: vec![self.y.clone(), x] };
        }
        // A flat position: the element `flat` in row-major order.
        let mut inside = match shape.rank() {
            1 => {
                let n = self.dim(j, 0);
                self.below(&flat, &n)
            }
            _ => {
                let total = if self.kernel.dims_from_buffer {
                    let rows = self.dim(j, 0);
                    let cols = self.dim(j, 1);
                    self.w.def(&format!("arith.muli {rows}, {cols} : index"))
                } else {
                    self.w.index(shape.elements())
                };
                self.below(&flat, &total)
            }
        };
        if self.kernel.dims == 2 {
            let width = self.w.def("kernel.global_size x");
            let x_in = self.below(&e, &width);
            inside = self.and(&x_in, &inside);
        }
        let mut position = flat;
        if shift != 0 {
            let k = self.w.index(shift);
            let n = self.w.index(shape.elements());
            let moved = self.w.def(&format!("arith.addi {position}, {k} : index"));
            position = self.w.def(&format!("arith.remui {moved}, {n} : index"));
        }
        let indices = match shape.rank() {
            1 => vec![position],
            _ => {
                let cols = self.w.index(shape.0[1]);
                let row = self.w.def(&format!("arith.divui {position}, {cols} : index"));
                let col = self.w.def(&format!("arith.remui {position}, {cols} : index"));
                vec![row, col]
            }
        };
        Place { inside, indices }
    }

    /// Reads parameter `j` at `place` if in bounds, else 0.
    fn read(&mut self, j: usize, place: &Place) -> String {
        let ty = self.kernel.params[j].shape.memref();
        let value = self.w.fresh();
        self.w.line(&format!("{value} = scf.if {} -> (i32) {{", place.inside));
        self.w.indent += 1;
        let loaded = self.w.def(&format!("buffer.load %q{j}[{}] : {ty}", place.indices.join(", ")));
        self.w.line(&format!("scf.yield {loaded} : i32"));
        self.w.indent -= 1;
        self.w.line("} else {");
        self.w.indent += 1;
        let zero = self.w.int(0);
        self.w.line(&format!("scf.yield {zero} : i32"));
        self.w.indent -= 1;
        self.w.line("}");
        value
    }

    /// Stores `value` to `target` (parameter `j`'s type) at parameter `j`'s place, if in bounds.
    fn write(&mut self, j: usize, target: &str, value: &str) {
        let shape = self.kernel.params[j].shape.clone();
        let place = &self.places[j];
        let (inside, indices) = (place.inside.clone(), place.indices.join(", "));
        self.w.line(&format!("scf.if {inside} {{"));
        self.w.indent += 1;
        if self.kernel.store_helper {
            self.w.used.put_helpers.insert(shape.clone());
            let types = vec!["index"; shape.rank()].join(", ");
            self.w.line(&format!(
                "kernel.call @put_{}({target}, {indices}, {value}) : ({}, {types}, i32) -> ()",
                shape.tag(),
                shape.memref()
            ));
        } else {
            self.w.line(&format!("buffer.store {value}, {target}[{indices}] : {}", shape.memref()));
        }
        self.w.indent -= 1;
        self.w.line("}");
    }

    pub(super) fn body(mut self) {
        let kernel = self.kernel;
        // The work item's condition.
        let mut conditions = Vec::new();
        if kernel.grid_guard {
            let size = self.w.def("kernel.global_size x");
            conditions.push(self.below(&self.e.clone(), &size));
            if kernel.dims == 2 {
                let size = self.w.def("kernel.global_size y");
                conditions.push(self.below(&self.y.clone(), &size));
            }
        }
        let position = self.position.clone();
        let mut guard_value = None;
        match kernel.guard {
            Guard::None => {}
            Guard::Below(k) => {
                let k = self.w.index(k);
                conditions.push(self.below(&position, &k));
            }
            Guard::HalfOf(j) => {
                let n = self.dim(j, 0);
                let two = self.w.index(2);
                let half = self.w.def(&format!("arith.divui {n}, {two} : index"));
                conditions.push(self.below(&position, &half));
            }
            Guard::Even => {
                let two = self.w.index(2);
                let rem = self.w.def(&format!("arith.remui {position}, {two} : index"));
                let zero = self.w.index(0);
                conditions.push(self.w.def(&format!("arith.cmpi eq, {rem}, {zero} : index")));
            }
            Guard::Positive(j) => {
                let place = Place { inside: self.places[j].inside.clone(), indices: self.places[j].indices.clone() };
                let value = self.read(j, &place);
                guard_value = Some((j, value.clone()));
                let zero = self.w.int(0);
                conditions.push(self.w.def(&format!("arith.cmpi sgt, {value}, {zero} : i32")));
            }
        }
        let mut ok: Option<String> = None;
        for condition in conditions {
            ok = Some(match ok {
                None => condition,
                Some(previous) => self.and(&previous, &condition),
            });
        }
        if let Some(ok) = &ok {
            self.w.line(&format!("scf.if {ok} {{"));
            self.w.indent += 1;
        }
        // Read, combine, write.
        let mut acc = "%sc".to_string();
        for (j, param) in kernel.params.iter().enumerate() {
            let value = match param.role {
                Role::Read | Role::ReadWrite(_) => match &guard_value {
                    Some((g, value)) if *g == j => value.clone(),
                    _ => {
                        let place =
                            Place { inside: self.places[j].inside.clone(), indices: self.places[j].indices.clone() };
                        self.read(j, &place)
                    }
                },
                Role::ReadShifted(k) => {
                    let place = self.place(j, k);
                    self.read(j, &place)
                }
                _ => continue,
            };
            acc = self.mix(&acc, &value);
        }
        let five = self.w.int(5);
        let scaled = self.w.def(&format!("arith.muli {acc}, {five} : i32"));
        let acc = self.w.def(&format!("arith.addi {scaled}, {} : i32", self.element));
        for (j, param) in kernel.params.iter().enumerate() {
            let ty = param.shape.memref();
            match param.role {
                Role::Write(c) | Role::ReadWrite(c) => {
                    let value = self.plus(&acc, c);
                    self.write(j, &format!("%q{j}"), &value);
                }
                Role::WriteAliased(c) => {
                    let value = self.plus(&acc, c);
                    let inside = self.places[j].inside.clone();
                    let alias = self.w.def(&format!("arith.select {inside}, %q{j}, %q{j} : {ty}"));
                    self.write(j, &alias, &value);
                }
                Role::WriteEither { other, add } => {
                    let value = self.plus(&acc, add);
                    let two = self.w.index(2);
                    let rem = self.w.def(&format!("arith.remui {position}, {two} : index"));
                    let zero = self.w.index(0);
                    let even = self.w.def(&format!("arith.cmpi eq, {rem}, {zero} : index"));
                    let target = self.w.def(&format!("arith.select {even}, %q{j}, %q{other} : {ty}"));
                    self.write(j, &target, &value);
                }
                Role::Atomic { kind, element } => {
                    let indices: Vec<String> = match param.shape.rank() {
                        1 => vec![self.w.index(element)],
                        _ => {
                            let cols = param.shape.0[1];
                            vec![self.w.index(element / cols), self.w.index(element % cols)]
                        }
                    };
                    self.w.def(&format!("kernel.atomic_rmw {kind} %q{j}[{}], {acc} : {ty}", indices.join(", ")));
                }
                Role::Unused | Role::Read | Role::ReadShifted(_) => {}
            }
        }
        if ok.is_some() {
            self.w.indent -= 1;
            self.w.line("}");
        }
    }

    fn plus(&mut self, value: &str, c: i32) -> String {
        let c = self.w.int(c);
        self.w.def(&format!("arith.addi {value}, {c} : i32"))
    }

    fn mix(&mut self, acc: &str, value: &str) -> String {
        if self.kernel.mix_helper {
            self.w.used.mix = true;
            self.w.def(&format!("kernel.call @mix({acc}, {value}) : (i32, i32) -> i32"))
        } else {
            let three = self.w.int(3);
            let scaled = self.w.def(&format!("arith.muli {acc}, {three} : i32"));
            self.w.def(&format!("arith.addi {scaled}, {value} : i32"))
        }
    }
}
