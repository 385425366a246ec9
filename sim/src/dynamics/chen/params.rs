//! The constants of Chen's animation (Chen 2011 §4.1–4.2), with defaults derived from the
//! forest's [`Material`].

use crate::error::{check_positive, check_range, SimError};
use crate::material::{Damping, Material};

/// The time step K_d is given for: Chen's damping (Eq. 4.9) takes away the fraction K_d of a
/// stem's angular velocity once per step of this length \[s\] (see [`ChenParams::damping`]).
pub const DAMPING_STEP: f32 = 1.0 / 60.0;

/// Largest time step accepted \[s\].
pub const MAX_DT: f32 = 0.1;

/// Settings of [`ChenModel`](super::ChenModel).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChenParams {
    /// Time step Δt \[s\] of Eqs. 4.8 and 4.10.
    pub dt: f32,
    /// Scale of the rigidity k_r of Eq. 4.2: a segment of the forest's joint stiffness k
    /// [N·m/rad] and length l gets k_r = `stiffness_scale`·k/l² [N/m], the tip spring whose
    /// moment about the base, l·k_r·(l·θ), is the joint's k·θ for a small turn θ. 1 keeps the
    /// forest's beam stiffness.
    pub stiffness_scale: f32,
    /// K_t of Eq. 4.3, the transitivity: how much of its children's load a stem passes on.
    pub transitivity: f32,
    /// K_r of Eq. 4.3, the rigidity factor of the transfer force (dimensionless; Chen's
    /// second K_r, not the spring's k_r). K_t·K_r = 1 passes the whole load of a subtree on to
    /// the stem it hangs from, as statics would.
    pub transfer_rigidity: f32,
    /// K_d of Eq. 4.9: the fraction of its angular velocity a stem (or leaf) loses per step of
    /// [`DAMPING_STEP`]; at another Δt it loses 1 − (1 − K_d)^(Δt/[`DAMPING_STEP`]), so the
    /// damping per second does not change with the step.
    pub damping: f32,
    /// C_W of Eq. 4.4 per m² of blade [N·s/m³]: a leaf of area A feels C_W·A·n·(w·n).
    pub leaf_wind: f32,
    /// Natural frequency of a leaf turning about its attachment \[Hz\]: its k_r (Eq. 4.2) is
    /// m·(2π·f)² with m its mass. The forest has no stiffness for a leaf's stalk.
    pub leaf_frequency: f32,
    /// |g| of Eq. 4.1 \[m/s²\], along −y.
    pub gravity: f32,
    /// The m of Eq. 4.7: true takes the mass the stem's turn swings, its own and what hangs
    /// beyond its tip turned rigidly about its base as Eq. 4.10 carries it (its moment about
    /// the base over l²); false, the stem's own mass as the thesis prints it (the stiff twigs
    /// then follow the wind almost statically).
    pub carried_inertia: bool,
    /// P1 and P2 of Eq. 5.2 on a stem a self-collision pair acts on: the weights of its
    /// original forces (F_W + F_G + F_T + F_Restore) and of the response force. Along the path
    /// to the pair's common ancestor the response's weight falls to 0 and the original's rises
    /// to 1 (`SelfCollision::with_transfer`). Chen leaves them to the user; (1, 1) keeps every
    /// force whole where the pair acts.
    pub response_weights: (f32, f32),
}

impl ChenParams {
    /// Defaults for trees of `material`: K_d from the material's damping ratio ζ (a decay rate
    /// of 2·ζ·2π·1 Hz, a 1 Hz sway's), C_W the material's leaf drag coefficient, the rest
    /// statics' own values (K_t·K_r = 1, the forest's stiffness).
    pub fn for_material(material: &Material) -> ChenParams {
        let ratio = match material.damping {
            Damping::Ratio(z) => z,
            Damping::Power { .. } => 0.15,
        };
        let rate = 2.0 * ratio * std::f32::consts::TAU;
        ChenParams {
            dt: 1.0 / 60.0,
            stiffness_scale: 1.0,
            transitivity: 1.0,
            transfer_rigidity: 1.0,
            damping: (1.0 - (-rate * DAMPING_STEP).exp()).clamp(0.0, 0.5),
            leaf_wind: material.leaf_drag,
            leaf_frequency: 6.0,
            gravity: 9.81,
            carried_inertia: true,
            response_weights: (1.0, 1.0),
        }
    }

    /// Checks every setting against its allowed range, naming the first one out of it.
    pub fn validate(&self) -> Result<(), SimError> {
        check_positive("time step (dt)", self.dt, MAX_DT)?;
        check_positive("stiffness scale (k_r)", self.stiffness_scale, 1.0e3)?;
        check_range("transitivity (K_t)", self.transitivity, 0.0, 1.0)?;
        check_range("transfer rigidity (K_r)", self.transfer_rigidity, 0.0, 1.0)?;
        check_range("damping (K_d)", self.damping, 0.0, 0.99)?;
        check_range("leaf wind (C_W)", self.leaf_wind, 0.0, 1.0e4)?;
        check_positive("leaf frequency", self.leaf_frequency, 1.0e3)?;
        check_range("gravity", self.gravity, 0.0, 100.0)?;
        check_range("response weight P1 (Eq. 5.2)", self.response_weights.0, 0.0, 1.0)?;
        check_range("response weight P2 (Eq. 5.2)", self.response_weights.1, 0.0, 1.0)?;
        Ok(())
    }

    /// K_t·K_r, the share of a child's load its parent takes (Eq. 4.3).
    pub fn transfer(&self) -> f32 {
        self.transitivity * self.transfer_rigidity
    }

    /// The factor Eq. 4.9 multiplies an angular velocity by over one step of [`dt`](Self::dt).
    pub fn keep(&self) -> f32 {
        (1.0 - self.damping).powf(self.dt / DAMPING_STEP)
    }
}

impl Default for ChenParams {
    fn default() -> Self {
        ChenParams::for_material(&Material::default())
    }
}
