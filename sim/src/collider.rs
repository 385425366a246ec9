//! Colliders and contacts. The collision response (Weber's spatial model) consumes
//! [`Contact`]s; spheres are the first source, and any other collision detection can feed the
//! same path by producing contacts for a segment's capsule.

use glam::Vec3;

use crate::error::{check_positive, check_range, SimError};

/// A penetration of a segment's capsule: Weber's desired correction vector C0.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Contact {
    /// Where along the segment's axis the contact is, 0 at the base and 1 at the tip.
    pub along: f32,
    /// Displacement that would take the contact point out of the collider \[m\].
    pub correction: Vec3,
}

impl Contact {
    /// How deep the contact is \[m\].
    pub fn depth(&self) -> f32 {
        self.correction.length()
    }
}

/// How a sphere moves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Motion {
    /// Standing still.
    Static,
    /// A horizontal circle around `center` of `radius`, one turn per `period` seconds.
    Orbit {
        /// Centre of the circle \[m\].
        center: Vec3,
        /// Radius of the circle \[m\].
        radius: f32,
        /// Seconds per turn.
        period: f32,
    },
    /// Straight from `start` at constant `velocity` [m/s].
    Linear {
        /// Where the sphere is at time 0 \[m\].
        start: Vec3,
        /// Its velocity [m/s].
        velocity: Vec3,
    },
}

/// A sphere the trees bend around.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SphereCollider {
    /// Centre \[m\], where `motion` last placed it.
    pub center: Vec3,
    /// Radius \[m\].
    pub radius: f32,
    /// How the sphere moves.
    pub motion: Motion,
}

impl SphereCollider {
    /// A sphere of `radius` at `center` moving by `motion`; a radius or position out of range
    /// is refused, naming it.
    pub fn new(center: Vec3, radius: f32, motion: Motion) -> Result<Self, SimError> {
        check_positive("collider radius", radius, 1.0e4)?;
        if !center.is_finite() {
            return Err(SimError::param(
                "collider center",
                format!("{center:?}"),
                "must be finite",
            ));
        }
        match motion {
            Motion::Static => {}
            Motion::Orbit { center, radius, period } => {
                if !center.is_finite() {
                    return Err(SimError::param("orbit center", format!("{center:?}"), "must be finite"));
                }
                check_range("orbit radius", radius, 0.0, 1.0e4)?;
                check_positive("orbit period", period, 1.0e6)?;
            }
            Motion::Linear { start, velocity } => {
                if !(start.is_finite() && velocity.is_finite()) {
                    return Err(SimError::param(
                        "collider path",
                        format!("{start:?} + t·{velocity:?}"),
                        "must be finite",
                    ));
                }
            }
        }
        let mut s = SphereCollider { center, radius, motion };
        s.move_to(0.0);
        Ok(s)
    }

    /// Places the sphere where its motion has it at `time` \[s\].
    pub fn move_to(&mut self, time: f64) {
        match self.motion {
            Motion::Static => {}
            Motion::Orbit { center, radius, period } => {
                let a = (std::f64::consts::TAU * time / period as f64) as f32;
                self.center = center + Vec3::new(a.cos(), 0.0, a.sin()) * radius;
            }
            Motion::Linear { start, velocity } => self.center = start + velocity * time as f32,
        }
    }

    /// The contact of a capsule from `base` to `tip` with radii `r0` at the base and `r1` at the
    /// tip, if it penetrates the sphere.
    ///
    /// When the tip is inside, the contact is at the tip (Weber's response gives the end of a
    /// segment the full correction; its base is the parent's tip, handled before it). Its
    /// correction then moves the tip to the nearest point it can reach by turning about the
    /// base that lies outside the sphere, so that a sphere met head-on along the segment
    /// still bends it aside (pushing along the axis could not be expressed by the two
    /// direction vectors at all). Otherwise the contact is the axis point nearest the centre,
    /// pushed straight out.
    #[inline]
    pub fn contact(&self, base: Vec3, tip: Vec3, r0: f32, r1: f32) -> Option<Contact> {
        let reach_tip = self.radius + r1;
        let to_tip = tip - self.center;
        if to_tip.length_squared() < reach_tip * reach_tip {
            return Some(Contact {
                along: 1.0,
                correction: self.tip_exit(base, tip, reach_tip) - tip,
            });
        }
        let axis = tip - base;
        let len2 = axis.length_squared();
        let t = if len2 > 0.0 {
            ((self.center - base).dot(axis) / len2).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let closest = base + axis * t;
        let reach = self.radius + r0 + (r1 - r0) * t;
        let offset = closest - self.center;
        let d2 = offset.length_squared();
        if d2 >= reach * reach {
            return None;
        }
        let d = d2.sqrt();
        let normal = if d > 1e-9 * reach {
            offset / d
        } else {
            // The centre lies on the axis: any direction across the segment will do.
            axis.any_orthonormal_vector()
        };
        Some(Contact {
            along: t,
            correction: normal * (reach - d),
        })
    }

    /// Where a tip inside the sphere (grown by `reach` - radius) should go: the nearest point
    /// outside it on the sphere of points the tip reaches by turning about the base, i.e. on
    /// the circle where the two spheres meet. Straight out along the normal when the base is
    /// inside too.
    fn tip_exit(&self, base: Vec3, tip: Vec3, reach: f32) -> Vec3 {
        let to_tip = tip - self.center;
        let push = |v: Vec3| {
            let d = v.length();
            let n = if d > 1e-9 * reach {
                v / d
            } else {
                (tip - base).normalize_or(Vec3::Y)
            };
            self.center + n * reach
        };
        let from_base = self.center - base;
        let d = from_base.length();
        let l = (tip - base).length();
        if d <= reach || l <= 0.0 || d >= reach + l {
            return push(to_tip);
        }
        let u = from_base / d;
        // The circle lies in the plane u·(x - base) = a, with radius ρ.
        let a = (l * l - reach * reach + d * d) / (2.0 * d);
        let rho = (l * l - a * a).max(0.0).sqrt();
        let centre = base + u * a;
        let across = tip - base - u * (tip - base).dot(u);
        let across = if across.length_squared() > 1e-12 * l * l {
            across.normalize()
        } else {
            u.any_orthonormal_vector()
        };
        centre + across * rho
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capsule_contact_geometry() {
        let s = SphereCollider::new(Vec3::new(0.5, 0.5, 0.0), 0.6, Motion::Static).unwrap();
        let c = s.contact(Vec3::ZERO, Vec3::Y, 0.1, 0.1).unwrap();
        assert!((c.along - 0.5).abs() < 1e-6);
        assert!(
            (c.correction - Vec3::new(-0.2, 0.0, 0.0)).length() < 1e-5,
            "{:?}",
            c.correction
        );
        let s = SphereCollider::new(Vec3::new(1.0, 0.5, 0.0), 0.6, Motion::Static).unwrap();
        // A tip inside the sphere is the contact, at the end of the segment; it is sent to the
        // nearest point outside that it reaches by turning about the base.
        let base = Vec3::new(0.0, 0.5, 0.0);
        let c = s.contact(base, Vec3::new(0.8, 0.5, 0.0), 0.05, 0.05).unwrap();
        assert_eq!(c.along, 1.0);
        let exit = Vec3::new(0.8, 0.5, 0.0) + c.correction;
        assert!(
            ((exit - base).length() - 0.8).abs() < 1e-5,
            "the tip keeps its distance from the base"
        );
        assert!(
            ((exit - s.center).length() - 0.65).abs() < 1e-5,
            "the tip ends on the grown sphere"
        );
        // Head-on along the segment: still a sideways exit.
        let c = s.contact(base, Vec3::new(0.9, 0.5, 0.0), 0.05, 0.05).unwrap();
        let exit = Vec3::new(0.9, 0.5, 0.0) + c.correction;
        assert!(((exit - s.center).length() - 0.65).abs() < 1e-5);
        assert!(c.correction.y.abs() + c.correction.z.abs() > 0.3, "{:?}", c.correction);
        assert!(s.contact(Vec3::ZERO, Vec3::Y, 0.1, 0.1).is_none());
        assert!(s
            .contact(Vec3::new(-1.0, 0.0, 0.0), Vec3::new(-1.0, 1.0, 0.0), 0.1, 0.1)
            .is_none());
    }

    #[test]
    fn orbit_moves_on_its_circle() {
        let mut s = SphereCollider::new(
            Vec3::ZERO,
            0.5,
            Motion::Orbit {
                center: Vec3::new(0.0, 2.0, 0.0),
                radius: 1.0,
                period: 4.0,
            },
        )
        .unwrap();
        s.move_to(1.0);
        assert!((s.center - Vec3::new(0.0, 2.0, 1.0)).length() < 1e-5);
        assert!(SphereCollider::new(Vec3::ZERO, -1.0, Motion::Static).is_err());
    }
}
