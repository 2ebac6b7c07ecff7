//! The grid of a dispatch on the CPU backend: how many workgroups it runs, and the bound on its
//! size.
//!
//! The backend interprets every work item, at some millions per second on all cores, so a grid of
//! 2^40 work items would run for days. A dispatch of more than the backend's limit of work items
//! ([`super::DEFAULT_MAX_WORK_ITEMS`] unless set otherwise), counting the work items of the last,
//! partial workgroup in each dimension (which run as padding in a kernel with barriers), is
//! refused before anything runs, as is a grid whose size does not fit in 64 bits. The executor checks the grid first and reports the
//! dispatch's location; this check protects callers that drive the backend directly.

use crate::error::RuntimeError;

/// How a dispatch's grid divides into workgroups.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Workgroups {
    /// Workgroups per dimension: `ceil(grid / workgroup size)`.
    pub count: [u64; 3],
    /// All workgroups (0 for an empty grid).
    pub total: usize,
}

/// The workgroups of a dispatch of `grid` work items per dimension, with workgroups of
/// `workgroup` work items per dimension (each positive), or the error when the grid is over
/// `limit` work items or its size overflows.
pub(crate) fn workgroups(
    kernel: &str,
    grid: [u64; 3],
    workgroup: [u64; 3],
    limit: u64,
) -> Result<Workgroups, RuntimeError> {
    let [x, y, z] = grid;
    let too_large = |what: String| {
        RuntimeError::Backend(format!(
            "cpu backend: the grid ({x}, {y}, {z}) of a dispatch of kernel '{kernel}' {what}, over the CPU backend's limit of {limit} work items per dispatch"
        ))
    };
    let count = [0, 1, 2].map(|d| grid[d].div_ceil(workgroup[d]));
    if count.contains(&0) {
        return Ok(Workgroups { count, total: 0 });
    }
    let Some(items) = grid.iter().try_fold(1u64, |a, &n| a.checked_mul(n)) else {
        return Err(too_large("has more work items than fit in 64 bits".to_string()));
    };
    if items > limit {
        return Err(too_large(format!("has {items} work items")));
    }
    // The partial workgroups may run whole (as padding past the grid): count what may run.
    let running = (0..3).try_fold(1u64, |a, d| a.checked_mul(count[d].checked_mul(workgroup[d])?));
    match running {
        Some(running) if running <= limit => {}
        _ => {
            let [wx, wy, wz] = workgroup;
            return Err(too_large(format!("runs more work items than that in whole workgroups of ({wx}, {wy}, {wz})")));
        }
    }
    let total = count.iter().product::<u64>();
    // At most `limit` workgroups, which fits a usize on the 64-bit hosts the backend
    // supports; a smaller usize is checked.
    let total = usize::try_from(total).map_err(|_| too_large(format!("has {total} workgroups")))?;
    Ok(Workgroups { count, total })
}

#[cfg(test)]
mod tests {
    const LIMIT: u64 = crate::cpu::DEFAULT_MAX_WORK_ITEMS;
    use super::*;

    #[test]
    fn grids_divide_into_whole_workgroups() {
        let groups = workgroups("k", [100, 3, 1], [64, 2, 1], LIMIT).unwrap();
        assert_eq!(groups, Workgroups { count: [2, 2, 1], total: 4 });
        assert_eq!(workgroups("k", [0, 5, 5], [64, 1, 1], LIMIT).unwrap().total, 0);
        assert!(workgroups("k", [1 << 16, 1 << 16, 1], [64, 1, 1], LIMIT).is_ok(), "exactly the limit runs");
    }

    #[test]
    fn oversized_grids_are_refused_with_the_grid_and_the_limit() {
        let message = workgroups("big", [1 << 20, 1 << 20, 1], [64, 1, 1], LIMIT).unwrap_err().to_string();
        assert_eq!(
            message,
            "cpu backend: the grid (1048576, 1048576, 1) of a dispatch of kernel 'big' has 1099511627776 work items, over the CPU backend's limit of 4294967296 work items per dispatch"
        );
        let message = workgroups("big", [u64::MAX, u64::MAX, 2], [1, 1, 1], LIMIT).unwrap_err().to_string();
        assert!(message.contains("(18446744073709551615, 18446744073709551615, 2)"), "{message}");
        assert!(message.contains("more work items than fit in 64 bits"), "{message}");
        // Within the limit as a grid, over it once the last workgroups run whole.
        let message = workgroups("padded", [LIMIT - 1, 1, 1], [48, 1, 1], LIMIT).unwrap_err().to_string();
        assert!(message.contains("runs more work items than that in whole workgroups of (48, 1, 1)"), "{message}");
    }
}
