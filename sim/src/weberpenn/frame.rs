//! Arbaro's frames (a rotation and a position, stems growing along local z) and a stem's
//! radius profile.

use glam::{DMat3, DVec3};

/// A rotation and a position: Arbaro's `Transformation`. The columns of `m` are the local axes;
/// stems grow along the local z axis.
#[derive(Clone, Copy, Debug)]
pub(super) struct Frame {
    pub(super) m: DMat3,
    pub(super) t: DVec3,
}

/// A matrix from its rows.
pub(super) fn rows(r: [f64; 9]) -> DMat3 {
    DMat3::from_cols(
        DVec3::new(r[0], r[3], r[6]),
        DVec3::new(r[1], r[4], r[7]),
        DVec3::new(r[2], r[5], r[8]),
    )
}

impl Frame {
    pub(super) fn identity() -> Frame {
        Frame {
            m: DMat3::IDENTITY,
            t: DVec3::ZERO,
        }
    }
    pub(super) fn z(&self) -> DVec3 {
        self.m.z_axis
    }
    pub(super) fn y(&self) -> DVec3 {
        self.m.y_axis
    }
    /// A rotation in the local frame.
    pub(super) fn local(&self, r: DMat3) -> Frame {
        Frame {
            m: self.m * r,
            t: self.t,
        }
    }
    pub(super) fn rotx(&self, deg: f64) -> Frame {
        let (s, c) = deg.to_radians().sin_cos();
        self.local(rows([1.0, 0.0, 0.0, 0.0, c, -s, 0.0, s, c]))
    }
    /// Arbaro's `roty` (which turns by -angle about the local y axis).
    pub(super) fn roty(&self, deg: f64) -> Frame {
        let (s, c) = deg.to_radians().sin_cos();
        self.local(rows([c, 0.0, -s, 0.0, 1.0, 0.0, s, 0.0, c]))
    }
    /// Down angle `delta` away from the local z axis, then rotation `rho` about it.
    pub(super) fn rotxz(&self, delta: f64, rho: f64) -> Frame {
        let (sd, cd) = delta.to_radians().sin_cos();
        let (sr, cr) = rho.to_radians().sin_cos();
        self.local(rows([cr, -sr * cd, sr * sd, sr, cr * cd, -cr * sd, 0.0, sd, cd]))
    }
    /// Turn by `delta` away from the local z axis about the local axis at angle `rho` in the
    /// x-y plane.
    pub(super) fn rotaxisz(&self, delta: f64, rho: f64) -> Frame {
        let (si, co) = delta.to_radians().sin_cos();
        let (b, a) = rho.to_radians().sin_cos();
        self.local(rows([
            co + a * a * (1.0 - co),
            b * a * (1.0 - co),
            b * si,
            a * b * (1.0 - co),
            co + b * b * (1.0 - co),
            -a * si,
            -b * si,
            a * si,
            co,
        ]))
    }
    /// A rotation about a world axis.
    pub(super) fn rotaxis(&self, deg: f64, axis: DVec3) -> Frame {
        let r = DMat3::from_axis_angle(axis.normalize(), deg.to_radians());
        Frame {
            m: r * self.m,
            t: self.t,
        }
    }
    pub(super) fn translate(&self, v: DVec3) -> Frame {
        Frame {
            m: self.m,
            t: self.t + v,
        }
    }
}

/// A stem's radius along its length (Arbaro's `stemRadius`, without lobes).
#[derive(Clone, Copy, Debug)]
pub(super) struct Profile {
    pub(super) length: f64,
    pub(super) base_radius: f64,
    pub(super) taper: f64,
    /// Trunk: flare and 0Scale apply.
    pub(super) trunk: bool,
    pub(super) flare: f64,
    pub(super) scale0: f64,
}

impl Profile {
    pub(super) fn radius(&self, h: f64) -> f64 {
        let z = if self.length > 0.0 {
            (h / self.length).min(1.0)
        } else {
            1.0
        };
        let taper = self.taper;
        let unit_taper = if taper <= 1.0 {
            taper
        } else if taper <= 2.0 {
            2.0 - taper
        } else {
            0.0
        };
        let mut radius = self.base_radius * (1.0 - unit_taper * z);
        if taper > 1.0 {
            // Spherical end (1..2) or periodic tapering (2..3).
            let z2 = (1.0 - z) * self.length;
            let depth = if taper < 2.0 || z2 < radius { 1.0 } else { taper - 2.0 };
            let z3 = if taper < 2.0 {
                z2
            } else if radius > 0.0 {
                (z2 - 2.0 * radius * ((z2 / 2.0 / radius + 0.5) as i64) as f64).abs()
            } else {
                z2
            };
            if taper > 2.0 || z3 < radius {
                let inner = (radius * radius - (z3 - radius) * (z3 - radius)).max(0.0);
                radius = (1.0 - depth) * radius + depth * inner.sqrt();
            }
        }
        if self.trunk {
            if self.flare != 0.0 {
                let y = (1.0 - 8.0 * z).max(0.0);
                radius *= 1.0 + self.flare * (100f64.powf(y) - 1.0) / 100.0;
            }
            radius *= self.scale0;
        }
        radius.max(0.0)
    }
}
