//! hat
