//! Between MLIR's `file:line:col` and hat's locations (byte offsets into a registered source).

use hat_ir::location::SourceId;
use hat_ir::{Context, Location, Op};

/// The location `line`:`column` (1-based, columns in bytes) of the source `id`, if it has that
/// line.
pub fn location_in(ctx: &Context, id: SourceId, line: usize, column: usize) -> Option<Location> {
    let source = ctx.sources.file(id);
    let start = *source.line_starts().get(line.checked_sub(1)?)?;
    let offset = start as usize + column.saturating_sub(1);
    Some(Location::new(id, offset.min(source.text().len()) as u32))
}

/// The location in the source named `file` at `line`:`column`, where `file` is a source that
/// some op of `module` is located in (hat's source map is not searchable by name).
pub fn hat_location(ctx: &Context, module: Op, file: &str, line: usize, column: usize) -> Option<Location> {
    let id = std::iter::once(module)
        .chain(ctx.walk(module))
        .filter_map(|op| ctx.location(op).source())
        .find(|&id| ctx.sources.file(id).name() == file)?;
    location_in(ctx, id, line, column)
}
