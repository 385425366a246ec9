//! The settings of the falling leaves, checked by name.

use crate::error::{check_positive, check_range, SimError};

/// Settings of the falling leaves (see `dynamics::falling` and its `aero` for the model the
/// coefficients belong to).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FallingParams {
    /// Most leaves detached at once, falling or lying (1..=10,000,000): beyond it the key and
    /// the wind detach no more until a reset.
    pub cap: usize,
    /// Gravity \[m/s²\], down -y (0..=1000).
    pub gravity: f32,
    /// Density of the air \[kg/m³\] (0..=10; 1.225 at sea level).
    pub air_density: f32,
    /// Drag coefficient of the blade face on, C_N (0..=10). 1.17 for a thin disk at high
    /// Reynolds number (Hoerner, Fluid-Dynamic Drag, 1965, §3); 1.2 by default.
    pub normal_drag: f32,
    /// Drag coefficient of the blade edge on (skin friction and edge pressure), C_T (0..=10);
    /// 0.1 by default, Andersen et al.'s A - B for the flat plate scaled to C_N = 1.2.
    pub tangential_drag: f32,
    /// Rotational lift coefficient C_R (0..=10); π in Andersen et al.'s 2-D fit, 1 by default
    /// for the 3-D leaf, whose tip vortices weaken the bound circulation.
    pub rotation_lift: f32,
    /// Centre of pressure at grazing incidence, ahead of the centre, as a fraction of the
    /// blade's half extent (0..=1); 0.5, a quarter chord, by default.
    pub pressure_offset: f32,
    /// Factor on the rotational damping of the blade's own rotation in the air (0..=100).
    pub spin_damping: f32,
    /// Substeps of the leaves' integration per model step (1..=16).
    pub substeps: u32,
    /// The wind checks each attached leaf's petiole once in this many steps (1..=64); in a
    /// wind the same everywhere all leaves are checked at once at every step.
    pub check_period: u32,
    /// Seed of the choice of leaves the key drops.
    pub seed: u64,
}

impl Default for FallingParams {
    fn default() -> Self {
        FallingParams {
            cap: 1_000_000,
            gravity: 9.81,
            air_density: crate::material::AIR_DENSITY,
            normal_drag: 1.2,
            tangential_drag: 0.1,
            rotation_lift: 1.0,
            pressure_offset: 0.5,
            spin_damping: 1.0,
            substeps: 2,
            check_period: 4,
            seed: 0x5EED_1EAF,
        }
    }
}

impl FallingParams {
    /// Checks every field against its range, naming the first one out of it.
    pub fn validate(&self) -> Result<(), SimError> {
        if !(1..=10_000_000).contains(&self.cap) {
            return Err(SimError::param("falling cap", self.cap, "allowed 1..=10000000 leaves"));
        }
        check_range("falling gravity", self.gravity, 0.0, 1000.0)?;
        check_positive("falling air density", self.air_density, 10.0)?;
        check_range("falling normal drag", self.normal_drag, 0.0, 10.0)?;
        check_range("falling tangential drag", self.tangential_drag, 0.0, 10.0)?;
        check_range("falling rotation lift", self.rotation_lift, 0.0, 10.0)?;
        check_range("falling pressure offset", self.pressure_offset, 0.0, 1.0)?;
        check_range("falling spin damping", self.spin_damping, 0.0, 100.0)?;
        if !(1..=16).contains(&self.substeps) {
            return Err(SimError::param("falling substeps", self.substeps, "allowed 1..=16"));
        }
        if !(1..=64).contains(&self.check_period) {
            return Err(SimError::param(
                "falling check period",
                self.check_period,
                "allowed 1..=64 steps",
            ));
        }
        Ok(())
    }
}
