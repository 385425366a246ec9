//! Sylva simulation: tree data, generators and dynamics.
pub mod error;
pub mod forest;
pub mod mapping;
pub mod params;
pub mod rng;
pub mod skeleton;
pub mod testtree;

pub use error::SimError;
