//! The response to one candidate pair (Chen 2011 §5, Eq. 5.1): its gap (between the
//! centrelines, or between the pieces as strips for leaves that turn), its spring, and, for a
//! model that moves its pieces apart, its contacts (`Contact`: the centrelines' and, for a
//! pair that holds a leaf, the strips'). The module header of `runtime` says what each
//! measure is for and what was measured; this file answers one pair at a time and shares
//! nothing between pairs, so the answers of a step's chunks run in parallel.

use glam::{Mat3, Vec3};

use super::{Answer, LeafTurn, RtPiece, SelfCollisionParams, Spring, TreeSet, HOLD_FADE, LEAF_TURN_SCALE, NO_LEAF};
use crate::collision::modelling::leaf_joints;
use crate::collision::primitives::Owner;
use crate::collision::strip::{strips_closest, strips_closest_from, Strip};
use crate::collision::tritri::segment_segment_closest;
use crate::dynamics::pose::Pose;

/// Two strips nearer than this \[m\] cross (their hulls meet, `strips_closest` giving two
/// points of one place to rounding): the response parts them the way they lay in the pose
/// built in (`TreeSet::rest_side`).
const CROSSING: f32 = 5.0e-4;

/// A pair within its safe distance, for a model that keeps pieces apart by moving them
/// ([`SelfCollision::with_contacts`](super::SelfCollision::with_contacts)): the segments of
/// the forest its two pieces belong to (a leaf's: the one it hangs from), the nearest points
/// of their centrelines where the step starts, and the distance those points are to be kept
/// apart (the spring's rest length: the radii and the skins, or the pair's distance in the
/// rest pose if less).
///
/// A pair that holds a leaf has a second contact, between the pieces as strips
/// (`TreeSet::blade_contact`): the strips' nearest points, held apart along the line between
/// them (`dir`) to the stems' radii and one skin, or the pair's gap as strips in the rest pose
/// if less; for two strips that cross where the step starts, whose nearest points coincide,
/// along the way the pair lay in the rest pose instead (`TreeSet::rest_side`). The first
/// point is held at least `rest` beyond the second along `dir`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Contact {
    pub seg: [u32; 2],
    pub at: [Vec3; 2],
    pub rest: f32,
    /// Zero: the points are kept `rest` apart along the line between them. Otherwise a unit
    /// vector: the first point is kept `rest` beyond the second along it.
    pub dir: Vec3,
    /// Whether the pair holds a leaf: its centrelines' contact is then kept out to the blades'
    /// largest half-widths, wide of most of a blade's edge, and its strips' contact is the
    /// close one.
    pub leaf: bool,
    /// Whether this is the contact between the pieces as strips (else their centrelines').
    pub strips: bool,
}

/// Piece `i` of `pieces` as a strip, its centreline ends and across vector from `ends` and
/// `across`.
fn strip_of(pieces: &[RtPiece], (ends, across): (&[[Vec3; 2]], &[Vec3]), i: usize) -> Strip {
    Strip::new(ends[i], across[i], (pieces[i].t0, pieces[i].t1)).with_joints(leaf_joints(pieces[i].owner.is_root()))
}

/// The gap between pieces `p` and `q` of `pieces`, their ends and across vectors from `pose`,
/// as `TreeSet::answer` measures it: between them as strips (`strips`: leaves that turn) or
/// between their centrelines.
fn rest_gap(pieces: &[RtPiece], pose: (&[[Vec3; 2]], &[Vec3]), (p, q): (usize, usize), strips: bool) -> f32 {
    if !strips {
        let ([a0, a1], [b0, b1]) = (pose.0[p], pose.0[q]);
        return segment_segment_closest(a0, a1, b0, b1).0.sqrt();
    }
    let (a, b) = (strip_of(pieces, pose, p), strip_of(pieces, pose, q));
    let (pa, pb) = strips_closest(&a, &b);
    pa.distance(pb)
}

impl TreeSet {
    /// Candidate `pair` in a step of `dt`: when the exact count is asked for, notes it if it is
    /// closer than its radii and, when it is closer than its rest length, pushes its response
    /// (Eq. 5.1, before its cap) into `answer`, with its leaves' levers about their
    /// attachments in `turning` (the pose) when the model's leaves turn on their own.
    pub(super) fn answer(
        &self,
        index: u32,
        (params, dt, turning, (contacts, ahead), step): (&SelfCollisionParams, f32, Option<&Pose>, (bool, bool), u32),
        answer: &mut Answer,
    ) {
        let t = self;
        let pair = &t.tracked[index as usize];
        let (p, q) = (pair.p as usize, pair.q as usize);
        let [a0, a1] = t.ends[p];
        let [b0, b1] = t.ends[q];
        let (d2, cs, ct) = segment_segment_closest(a0, a1, b0, b1);
        let d = d2.sqrt();
        let d_safe = t.safe[p] + t.safe[q];
        // A NaN distance (a non-finite pose) answers nothing.
        if d.partial_cmp(&d_safe) != Some(std::cmp::Ordering::Less) {
            return;
        }
        // Every point of a piece lies within its radius of its centreline (a prism inside its
        // frustum, a blade within its longest venation of its mid-venation), so only a pair
        // closer than its radii can interpenetrate.
        let radii = t.radius[p] + t.radius[q];
        if params.count_interpenetrating && d < radii {
            answer.near.push((p as u32, q as u32));
        }
        let seg = |i: usize| t.seg0 + t.pieces[i].owner.segment();
        if contacts && turning.is_none() && params.stiffness > 0.0 {
            // Within its safe distance: held at Chen's rest length while the model moves it
            // (the spring made rigid; a spring constant of 0 answers nothing, as it does as a
            // force).
            let most = radii + 2.0 * params.extra_safe;
            let rest = if pair.rest.is_nan() {
                let pose = (&t.rest_ends[..], &t.rest_across[..]);
                let rest = rest_gap(&t.pieces, pose, (p, q), false);
                answer.rests.push((index, rest));
                rest
            } else {
                pair.rest
            };
            let (cp, cq) = (a0 + (a1 - a0) * cs, b0 + (b1 - b0) * ct);
            answer.contacts.push(Contact {
                seg: [seg(p), seg(q)],
                at: [cp, cq],
                rest: most.min(rest),
                dir: Vec3::ZERO,
                leaf: t.is_leaf(p) || t.is_leaf(q),
                strips: false,
            });
            let rest_strips = (pair.rest_strips, &mut answer.strip_rests, index);
            if let Some(c) = t.blade_contact(p, q, (d, cp - cq), params.extra_safe, ahead, rest_strips) {
                answer.contacts.push(Contact {
                    seg: [seg(p), seg(q)],
                    ..c
                });
            }
        }
        // The spring's gap, its most rest length (the rest length is this or the pair's rest
        // distance, if less: found only for a pair nearer than this) and its direction (see
        // the module header).
        let centres = || (t.kdop[p].centre() - t.kdop[q].centre()).normalize_or_zero();
        let (gap, most, dir) = if turning.is_some() {
            // Leaves that turn: the gap between the two as strips (a blade's surface, a
            // stem's axis), the rest length the stems' radii and the skins, the push between
            // the strips' nearest points (their centrelines' where the strips cross).
            let core = t.core(p) + t.core(q);
            let most = core + 2.0 * params.extra_safe;
            // A blade lies within its radius (largest half-width) of its centreline, so the
            // strips are no nearer than the centrelines less the blades' radii.
            if d - (radii - core) >= most {
                return;
            }
            let now = (&t.ends[..], &t.across[..]);
            let (sp, sq) = (strip_of(&t.pieces, now, p), strip_of(&t.pieces, now, q));
            let (cp, cq) = (a0 + (a1 - a0) * cs, b0 + (b1 - b0) * ct);
            let (pa, pb) = strips_closest_from(&sp, &sq, cp - cq);
            let gap = pa.distance(pb);
            // Strips that cross meet along a line, their nearest points on it: the line between
            // them says nothing of which way the pair parts. They part the way they lay in the
            // pose built in, carried by the leaves' turns since.
            let dir = if gap < CROSSING {
                t.rest_side(p, q)
            } else {
                (pa - pb).try_normalize()
            };
            let dir = dir.or((cp - cq).try_normalize());
            (gap, most, dir.unwrap_or_else(centres))
        } else {
            // Chen's: the centrelines' distance, the radii, the k-DOPs' centres (Fig. 5.2).
            (d, radii + 2.0 * params.extra_safe, centres())
        };
        if gap.partial_cmp(&most) != Some(std::cmp::Ordering::Less) {
            return;
        }
        let rest = match answer.rests.last() {
            // (Found just above for the contact.)
            Some(&(i, rest)) if i == index => rest,
            _ if pair.rest.is_nan() => {
                let pose = (&t.rest_ends[..], &t.rest_across[..]);
                let rest = rest_gap(&t.pieces, pose, (p, q), turning.is_some());
                answer.rests.push((index, rest));
                rest
            }
            _ => pair.rest,
        };
        let rest = most.min(rest);
        if gap.partial_cmp(&rest) != Some(std::cmp::Ordering::Less) {
            return;
        }
        let overlap = rest - gap;
        let (mut leaf, mut turn) = ([NO_LEAF; 2], [LeafTurn::default(); 2]);
        if let Some(pose) = turning {
            // A leaf that turns on its own takes the spring about its attachment too, uncapped
            // and stiffer ([`LEAF_TURN_SCALE`]): the model takes its stiffness implicitly.
            let k = params.stiffness * LEAF_TURN_SCALE;
            for (n, (piece, sign)) in [(p, 1.0), (q, -1.0)].into_iter().enumerate() {
                if let Owner::Leaf { leaf: j, .. } = t.pieces[piece].owner {
                    let j = t.leaf0 + j;
                    let [e0, e1] = t.ends[piece];
                    let lever = 0.5 * (e0 + e1) - pose.leaf_pos[j as usize];
                    leaf[n] = j;
                    turn[n] = LeafTurn {
                        torque: lever.cross(dir * (sign * k * overlap)),
                        stiffness: k * lever.length_squared(),
                    };
                }
            }
        }
        let hold = if pair.hold > 0.0 {
            pair.hold * HOLD_FADE.powi(step.wrapping_sub(pair.held).saturating_sub(1).min(64) as i32)
        } else {
            0.0
        };
        answer.springs.push(Spring {
            index,
            hold,
            deep: radii - gap,
            seg: [seg(p), seg(q)],
            dir,
            overlap,
            closing: (-(t.moved[p] - t.moved[q]).dot(dir) / dt).max(0.0),
            mass: t.mass[p].min(t.mass[q]),
            force: Vec3::ZERO,
            leaf,
            turn,
        });
    }

    /// For a pair that holds a leaf, in a model that moves its pieces apart: a contact between
    /// the pieces as strips (a blade's surface, a stem's axis), which their centrelines' does
    /// not see (two blades meeting while their mid-venations stay apart, a blade on a stem):
    /// the strips' nearest points held apart along the line between them to the stems' radii
    /// and one `skin`, or the pair's gap as strips in the pose built in if less; or, for two
    /// that cross now (two blades through each other, a blade through a stem's axis), along
    /// the way they lay in the pose built in (`rest_side`). `None` for a pair farther apart
    /// than that (`ahead`: farther than that and the pieces' buffers, the most the pair may
    /// close in the step), or of two stems. (`d`: the centrelines' distance and `toward` the
    /// line between their nearest points, where the search for the strips' starts; the pair's
    /// gap as strips in the pose built in if known, else NaN, and where to note it with the
    /// pair's index once found.)
    fn blade_contact(
        &self,
        p: usize,
        q: usize,
        (d, toward): (f32, Vec3),
        skin: f32,
        ahead: bool,
        (known, found, index): (f32, &mut Vec<(u32, f32)>, u32),
    ) -> Option<Contact> {
        if !(self.is_leaf(p) || self.is_leaf(q)) {
            return None;
        }
        // A blade lies within its radius (largest half-width) of its centreline, so the strips
        // are no nearer than the centrelines less the blades' radii.
        let (core, radii) = (self.core(p) + self.core(q), self.radius[p] + self.radius[q]);
        let most = core + skin;
        // Looking ahead: from as far as the pair may close in the step (the pieces' buffers).
        let reach = if ahead {
            let buffers = (self.safe[p] - self.radius[p]) + (self.safe[q] - self.radius[q]) - 2.0 * skin;
            most + buffers.max(0.0)
        } else {
            most
        };
        if d - (radii - core) >= reach {
            return None;
        }
        let now = (&self.ends[..], &self.across[..]);
        let (sp, sq) = (strip_of(&self.pieces, now, p), strip_of(&self.pieces, now, q));
        let (pa, pb) = strips_closest_from(&sp, &sq, toward);
        let gap = pa.distance(pb);
        let crossing = gap < CROSSING;
        // A NaN gap (a non-finite pose) is no contact.
        if !crossing && gap.partial_cmp(&reach) != Some(std::cmp::Ordering::Less) {
            return None;
        }
        let rest = if known.is_nan() {
            let rest_pose = (&self.rest_ends[..], &self.rest_across[..]);
            let rest = rest_gap(&self.pieces, rest_pose, (p, q), true);
            found.push((index, rest));
            rest
        } else {
            known
        };
        let rest = most.min(rest);
        let dir = if crossing {
            self.rest_side(p, q)?
        } else {
            (pa - pb).try_normalize()?
        };
        (ahead || (pa - pb).dot(dir) < rest).then_some(Contact {
            seg: [0, 0],
            at: [pa, pb],
            rest,
            dir,
            leaf: true,
            strips: true,
        })
    }

    /// The way piece `p` lay from piece `q` in the pose built in (between their nearest points
    /// as strips), turned as each leaf among them has turned since (the mean of their turns),
    /// if any.
    fn rest_side(&self, p: usize, q: usize) -> Option<Vec3> {
        let rest = (&self.rest_ends[..], &self.rest_across[..]);
        let ([a0, a1], [b0, b1]) = (rest.0[p], rest.0[q]);
        let (sp, sq) = (strip_of(&self.pieces, rest, p), strip_of(&self.pieces, rest, q));
        let (pa, pb) = strips_closest(&sp, &sq);
        let side = (pa - pb).try_normalize().or(((a0 + a1) - (b0 + b1)).try_normalize())?;
        let frame = |[e0, e1]: [Vec3; 2], x: Vec3| {
            let y = (e1 - e0).try_normalize()?;
            let x = (x - y * x.dot(y)).try_normalize()?;
            Some(Mat3::from_cols(x, y, x.cross(y)))
        };
        let turned = |i: usize| match self.pieces[i].owner {
            Owner::Leaf { .. } => {
                let now = frame(self.ends[i], self.across[i])?;
                let rest = frame(self.rest_ends[i], self.rest_across[i])?;
                Some(now * rest.transpose() * side)
            }
            Owner::Stem { .. } => None,
        };
        match (turned(p), turned(q)) {
            (None, None) => Some(side),
            (a, b) => (a.unwrap_or(Vec3::ZERO) + b.unwrap_or(Vec3::ZERO)).try_normalize(),
        }
    }
}
