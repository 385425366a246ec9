//! Errors for input a caller cannot be trusted to get right: parameters, skeletons, sizes.

use thiserror::Error;

/// What went wrong, naming the offending parameter or element and what is allowed.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum SimError {
    /// A parameter outside its allowed range.
    #[error("invalid {name} = {value}: {allowed}")]
    Parameter {
        /// The parameter, as the input names it.
        name: &'static str,
        /// The value given.
        value: String,
        /// What is allowed.
        allowed: String,
    },
    /// A tree skeleton that breaks the rules a forest is built from.
    #[error("invalid tree skeleton: {0}")]
    Skeleton(String),
    /// A forest whose arrays break an invariant (see `Forest::validate`).
    #[error("forest invariant broken: {0}")]
    Invariant(String),
}

impl SimError {
    pub(crate) fn param(name: &'static str, value: impl std::fmt::Display, allowed: impl Into<String>) -> Self {
        SimError::Parameter {
            name,
            value: value.to_string(),
            allowed: allowed.into(),
        }
    }
}

/// Checks that `value` is finite and inside `[lo, hi]`.
pub(crate) fn check_range(name: &'static str, value: f32, lo: f32, hi: f32) -> Result<(), SimError> {
    if value.is_finite() && value >= lo && value <= hi {
        Ok(())
    } else {
        Err(SimError::param(
            name,
            value,
            format!("must be a finite number in [{lo}, {hi}]"),
        ))
    }
}

/// Checks that `value` is finite and strictly positive and at most `hi`.
pub(crate) fn check_positive(name: &'static str, value: f32, hi: f32) -> Result<(), SimError> {
    if value.is_finite() && value > 0.0 && value <= hi {
        Ok(())
    } else {
        Err(SimError::param(
            name,
            value,
            format!("must be a finite number greater than 0 and at most {hi}"),
        ))
    }
}
