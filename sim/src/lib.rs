//! Sylva simulation.
