//! Settings of Weber's model: the time step, gravity, the linear solver, the mass matrix and
//! the integrator of Eq. 1, and the contact response.

use crate::error::{check_positive, check_range, SimError};

/// Which linear solver runs Weber's Eq. 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SolverKind {
    /// Exact elimination in tip-to-root order: the matrix graph is the tree, so Gaussian
    /// elimination has no fill-in and costs O(n).
    #[default]
    Direct,
    /// The paper's conjugate gradient with the preconditioner C = sqrt(diag A).
    Cg,
}

impl SolverKind {
    /// The solver's name on the command line and in reports (`direct`, `cg`).
    pub fn name(self) -> &'static str {
        match self {
            SolverKind::Direct => "direct",
            SolverKind::Cg => "cg",
        }
    }
}

impl std::str::FromStr for SolverKind {
    type Err = SimError;
    fn from_str(s: &str) -> Result<Self, SimError> {
        match s {
            "direct" => Ok(SolverKind::Direct),
            "cg" => Ok(SolverKind::Cg),
            other => Err(SimError::param("solver", other, "must be `direct` or `cg`")),
        }
    }
}

/// Which mass matrix Eq. 1 uses in each plane.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum InertiaKind {
    /// The exact mass matrix of the articulated tree, M = Jᵀ·m·J plus each segment's own
    /// rotational inertia (turning a segment by its absolute angle carries everything outboard
    /// of it), solved in O(n) per tree (see `weber::articulated`).
    #[default]
    Articulated,
    /// Weber's diagonal mass matrix ("M is a diagonal matrix"): each segment's own entry of the
    /// articulated matrix, m·l²/3 + M_out·l², without the coupling to its ancestors.
    Diagonal,
}

impl InertiaKind {
    /// The option's name on the command line and in reports (`articulated`, `diagonal`).
    pub fn name(self) -> &'static str {
        match self {
            InertiaKind::Articulated => "articulated",
            InertiaKind::Diagonal => "diagonal",
        }
    }
}

impl std::str::FromStr for InertiaKind {
    type Err = SimError;
    fn from_str(s: &str) -> Result<Self, SimError> {
        match s {
            "articulated" => Ok(InertiaKind::Articulated),
            "diagonal" => Ok(InertiaKind::Diagonal),
            other => Err(SimError::param("inertia", other, "must be `articulated` or `diagonal`")),
        }
    }
}

/// How Eq. 1 advances the state: both solve (M + γh·C + γ²h²·K)·Δv = h·(f0 - γK·(h·v0 + y))
/// with the same O(n) solvers and update Θ += y + h·(v0 + γ·Δv).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum IntegratorKind {
    /// γ = 1/2: Newmark's average acceleration (the trapezoidal rule, which for the linear
    /// system is the implicit midpoint rule). Second order, unconditionally stable for the
    /// linear system, and it keeps the energy of an undamped linear system. The loads depend
    /// on the pose (wind and gravity act through the lever arms); their restoring part (a
    /// branch pulled along its axis) enters Eq. 1's Jacobian, so the matrix is refactored
    /// every step (see `kernels::load_stiffness`), while their softening part stays explicit.
    /// Not the default: in Weber's "ridiculous wind" (60 m/s gusts) joints still swing past
    /// the mapping's valid range (π/2 from their shape) without the first-order step's
    /// numerical damping; at 20 m/s it bends the dense tree as far as the semi-implicit step.
    Newmark,
    /// γ = 1: Weber's (Baraff and Witkin's) first-order semi-implicit step, linearised backward
    /// Euler. Unconditionally stable; it dissipates energy (per period, (1 + ω²h²)^(-T/h)).
    #[default]
    SemiImplicit,
}

impl IntegratorKind {
    /// The integrator's name on the command line and in reports (`newmark`, `semi-implicit`).
    pub fn name(self) -> &'static str {
        match self {
            IntegratorKind::Newmark => "newmark",
            IntegratorKind::SemiImplicit => "semi-implicit",
        }
    }

    /// γ: the weight of the end-of-step velocity in the step's position change.
    pub fn gamma(self) -> f32 {
        match self {
            IntegratorKind::Newmark => 0.5,
            IntegratorKind::SemiImplicit => 1.0,
        }
    }
}

impl std::str::FromStr for IntegratorKind {
    type Err = SimError;
    fn from_str(s: &str) -> Result<Self, SimError> {
        match s {
            "newmark" => Ok(IntegratorKind::Newmark),
            "semi-implicit" => Ok(IntegratorKind::SemiImplicit),
            other => Err(SimError::param(
                "integrator",
                other,
                "must be `newmark` or `semi-implicit`",
            )),
        }
    }
}

/// Settings of the time integration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WeberParams {
    /// Time step h \[s\].
    pub dt: f32,
    /// Gravitational acceleration [m/s²], acting along -y.
    pub gravity: f32,
    /// Which linear solver runs Eq. 1.
    pub solver: SolverKind,
    /// Which mass matrix Eq. 1 uses.
    pub inertia: InertiaKind,
    /// How Eq. 1 advances the state.
    pub integrator: IntegratorKind,
    /// Conjugate gradient: stop when the preconditioned residual norm falls below this fraction
    /// of the right-hand side's.
    pub cg_tolerance: f64,
    /// Conjugate gradient: iteration cap per solve (a multiple of the tree size is never needed
    /// in exact arithmetic; the cap guards against a non-converging system).
    pub cg_max_iterations: u32,
    /// Collision response: penetration passes per contacting segment (Weber uses one; a few
    /// more clear deep contacts in the same step).
    pub contact_passes: u32,
    /// Collision response: Weber's multiplicative tweak factor on the desired correction.
    pub contact_stiffness: f32,
}

impl Default for WeberParams {
    fn default() -> Self {
        WeberParams {
            dt: 1.0 / 60.0,
            gravity: 9.81,
            solver: SolverKind::Direct,
            inertia: InertiaKind::Articulated,
            integrator: IntegratorKind::SemiImplicit,
            cg_tolerance: 1e-10,
            cg_max_iterations: 10_000,
            contact_passes: 4,
            contact_stiffness: 1.0,
        }
    }
}

impl WeberParams {
    /// Checks every field against its allowed range, naming the first one out of it.
    pub fn validate(&self) -> Result<(), SimError> {
        check_positive("time step", self.dt, 1.0)?;
        check_range("gravity", self.gravity, 0.0, 1000.0)?;
        if !(self.cg_tolerance.is_finite() && self.cg_tolerance > 0.0 && self.cg_tolerance < 1.0) {
            return Err(SimError::param(
                "cg_tolerance",
                self.cg_tolerance,
                "must be a number in (0, 1)",
            ));
        }
        if self.cg_max_iterations == 0 {
            return Err(SimError::param("cg_max_iterations", 0, "must be at least 1"));
        }
        if self.contact_passes == 0 || self.contact_passes > 64 {
            return Err(SimError::param(
                "contact_passes",
                self.contact_passes,
                "must be in 1..=64",
            ));
        }
        check_range("contact_stiffness", self.contact_stiffness, 0.0, 4.0)?;
        Ok(())
    }
}
