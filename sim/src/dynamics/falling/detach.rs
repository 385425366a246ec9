//! Which leaves come off: the ones the key drops (a seeded pick) and the ones whose petiole
//! the wind tears (`Material::petiole_strength`).

use sylva_engine::JobSystem;

use crate::forest::Forest;
use crate::material::Material;
use crate::rng::Rng;
use crate::wind::WindField;

/// Leaves a petiole-check job looks at.
const CHECK_CHUNK: usize = 4096;

/// Leaf `j`'s own strength factor, spread evenly over [0.5, 1.5) (a hash of its index: the
/// same leaf is as strong in every run and every model).
#[inline]
pub(super) fn strength_factor(j: usize) -> f32 {
    let mut r = Rng::new(0x9E7C_1E55 ^ j as u64);
    0.5 + r.unit()
}

/// The wind's drag pressure on a leaf, over `leaf_drag`: g(s) = s·drag_scale(s) for the wind
/// speed `s` (the force per area is `leaf_drag`·g(s); it grows with s under either drag law).
#[inline]
fn pressure_over_coefficient(material: &Material, s: f32) -> f32 {
    s * material.drag_scale(s, true)
}

/// The g(s) above which leaf `j` tears off: `petiole_strength`·factor / `leaf_drag`
/// (infinite when the wind cannot tear it).
#[inline]
fn tearing(material: &Material, j: usize) -> f32 {
    if material.leaf_drag <= 0.0 || material.petiole_strength == f32::INFINITY {
        return f32::INFINITY;
    }
    material.petiole_strength * strength_factor(j) / material.leaf_drag
}

/// The attached leaves (`attached[j]`) whose petiole the wind tears this step, in increasing
/// order: the wind sampled at each leaf's position `leaf_pos[j]` (the drag on the wind's speed
/// alone, the leaf's own motion being slow beside a wind that tears leaves). `phase`/`period`:
/// a wind that varies in space is sampled at every `period`-th leaf only, those with
/// j % period == phase; a uniform wind checks every leaf. Deterministic, independent of the
/// number of workers.
pub(super) fn torn(
    forest: &Forest,
    attached: &[bool],
    leaf_pos: &[glam::Vec3],
    wind: &dyn WindField,
    (phase, period): (usize, usize),
    jobs: &JobSystem,
) -> Vec<u32> {
    let material = &forest.material;
    let weakest = if material.leaf_drag <= 0.0 || material.petiole_strength == f32::INFINITY {
        return Vec::new();
    } else {
        0.5 * material.petiole_strength / material.leaf_drag
    };
    let uniform = wind.uniform();
    if let Some(s) = wind.speed_bound() {
        // No leaf is weaker than the weakest, and the pressure grows with the speed.
        if pressure_over_coefficient(material, s) <= weakest {
            return Vec::new();
        }
    }
    let (phase, period) = match uniform {
        Some(_) => (0, 1),
        None => (phase, period),
    };
    let m = attached.len().min(leaf_pos.len());
    let check = |range: std::ops::Range<usize>, out: &mut Vec<u32>| {
        let start = range.start + (phase + period - range.start % period) % period;
        let looked_at = (start..range.end).step_by(period).filter(|&j| attached[j]);
        match uniform {
            Some(w) => {
                let g = pressure_over_coefficient(material, w.length());
                out.extend(looked_at.filter(|&j| g > tearing(material, j)).map(|j| j as u32));
            }
            None => {
                // One batch per job: a grid samples many points at once far faster than one
                // through the trait object, bit for bit the same.
                let leaves: Vec<usize> = looked_at.collect();
                let mut w: Vec<glam::Vec3> = leaves.iter().map(|&j| leaf_pos[j]).collect();
                wind.sample_in_place(&mut w);
                for (&j, w) in leaves.iter().zip(&w) {
                    if pressure_over_coefficient(material, w.length()) > tearing(material, j) {
                        out.push(j as u32);
                    }
                }
            }
        }
    };
    let chunks = m.div_ceil(CHECK_CHUNK);
    let mut found: Vec<Vec<u32>> = vec![Vec::new(); chunks];
    if jobs.threads() == 1 || chunks <= 1 {
        for (c, out) in found.iter_mut().enumerate() {
            check(c * CHECK_CHUNK..((c + 1) * CHECK_CHUNK).min(m), out);
        }
    } else {
        let check = &check;
        jobs.scope(|s| {
            for (c, out) in found.iter_mut().enumerate() {
                s.spawn(move |_| check(c * CHECK_CHUNK..((c + 1) * CHECK_CHUNK).min(m), out));
            }
        });
    }
    found.concat()
}

/// `count` of the attached leaves (`attached[j]`), chosen by the generator seeded with `seed`
/// (a partial Fisher-Yates shuffle of the attached leaves in index order), in the order
/// chosen; all of them when there are no more than `count`.
pub(super) fn pick(attached: &[bool], count: usize, seed: u64) -> Vec<u32> {
    let mut pool: Vec<u32> = (0..attached.len() as u32).filter(|&j| attached[j as usize]).collect();
    let n = count.min(pool.len());
    let mut rng = Rng::new(seed);
    for k in 0..n {
        let left = (pool.len() - k) as u64;
        let r = k + (rng.next_u64() % left) as usize;
        pool.swap(k, r);
    }
    pool.truncate(n);
    pool
}
