//! The voxel grid of Chen 2011 §3.3, in levels by size.
//!
//! Chen files every primitive in the cube of edge 2·SR that holds its centre, SR being the
//! radius that holds the largest primitive about its centre, so two primitives in cubes that
//! are not adjacent cannot touch (Fig. 3.7). One edge for a whole Weber-Penn tree is set by
//! its trunk, a metre or more, and a cube of that size holds thousands of twigs and leaves.
//! So the grid here has levels: level ℓ has cubes of edge e·2^ℓ and holds the pieces whose
//! SR is at most half that (each level is Chen's grid for the pieces filed in it). A piece
//! of reach r can only touch a piece of level ℓ whose centre is within r + e·2^ℓ/2 of its
//! own, so a query visits, on each level, the cubes that range covers: its own cube and the
//! 26 around it on the levels of its size and above, as Chen's, more on finer levels (or that
//! level's filled cubes, when they are fewer).
//!
//! Invariant: a query visits every filed piece that could touch the piece it is asked about;
//! the order it visits them in depends only on what was filed and in what order.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use glam::Vec3;

/// A map from cube to the pieces filed there, hashed the same way in every run.
type Cells = HashMap<[i32; 3], Vec<u32>, BuildHasherDefault<CellHasher>>;

/// Hashes a cube's three coordinates by multiplying and rotating (the keys are small
/// integers; a cryptographic hash costs more than the lookups it serves).
#[derive(Default)]
pub struct CellHasher(u64);

impl Hasher for CellHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u32(b as u32);
        }
    }

    fn write_i32(&mut self, i: i32) {
        self.write_u32(i as u32);
    }

    fn write_u32(&mut self, i: u32) {
        self.0 = (self.0.rotate_left(21) ^ i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// Levels below the largest piece's: cubes down to 2^-23 times its size.
const MAX_LEVELS: usize = 24;

/// Pieces filed by their centre and reach, in levels of cube size.
pub struct VoxelGrid {
    edge0: f32,
    levels: Vec<Cells>,
}

impl VoxelGrid {
    /// A grid for pieces of reach from `min_reach` to `max_reach` \[m\] (both > 0).
    pub fn new(min_reach: f32, max_reach: f32) -> VoxelGrid {
        let max_reach = max_reach.max(min_reach);
        let edge0 = 2.0 * min_reach.max(max_reach / 2f32.powi(MAX_LEVELS as i32 - 1));
        let mut grid = VoxelGrid {
            edge0,
            levels: vec![Cells::default()],
        };
        grid.reach_up_to(max_reach);
        grid
    }

    /// Adds levels until the top one holds pieces of reach `r`.
    fn reach_up_to(&mut self, r: f32) {
        while self.edge(self.levels.len() - 1) < 2.0 * r && r.is_finite() {
            self.levels.push(Cells::default());
        }
    }

    /// The level a piece of reach `r` is filed on: the first whose cubes' half edge holds it.
    fn level_of(&self, r: f32) -> usize {
        let mut l = 0;
        while l + 1 < self.levels.len() && self.edge(l) < 2.0 * r {
            l += 1;
        }
        l
    }

    fn edge(&self, level: usize) -> f32 {
        self.edge0 * 2f32.powi(level as i32)
    }

    fn cell(edge: f32, p: Vec3) -> [i32; 3] {
        let c = (p / edge).floor();
        [c.x as i32, c.y as i32, c.z as i32]
    }

    /// Files piece `id` centred at `centre` with reach `reach`.
    pub fn insert(&mut self, id: u32, centre: Vec3, reach: f32) {
        self.reach_up_to(reach);
        let l = self.level_of(reach);
        let e = self.edge(l);
        self.levels[l].entry(Self::cell(e, centre)).or_default().push(id);
    }

    /// Calls `f` on every filed piece that could touch a piece centred at `centre` with reach
    /// `reach`, until it returns true; returns whether it did.
    pub fn any_near(&self, centre: Vec3, reach: f32, mut f: impl FnMut(u32) -> bool) -> bool {
        for (l, cells) in self.levels.iter().enumerate() {
            if cells.is_empty() {
                continue;
            }
            let e = self.edge(l);
            let range = reach + 0.5 * e;
            let (lo, hi) = (Self::cell(e, centre - range), Self::cell(e, centre + range));
            let span = |k: usize| (hi[k] as i64 - lo[k] as i64 + 1) as u64;
            let inside = |c: &[i32; 3]| (0..3).all(|k| lo[k] <= c[k] && c[k] <= hi[k]);
            if span(0) * span(1) * span(2) > cells.len() as u64 {
                // Fewer filled cubes than cubes in range: walk the filled ones.
                for (c, ids) in cells {
                    if inside(c) && ids.iter().any(|&id| f(id)) {
                        return true;
                    }
                }
                continue;
            }
            for z in lo[2]..=hi[2] {
                for y in lo[1]..=hi[1] {
                    for x in lo[0]..=hi[0] {
                        if let Some(ids) = cells.get(&[x, y, z]) {
                            if ids.iter().any(|&id| f(id)) {
                                return true;
                            }
                        }
                    }
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// Every pair of balls that touch is found by the grid, for balls of sizes over four
    /// orders of magnitude (the grid's one promise).
    #[test]
    fn every_touching_pair_is_visited() {
        let mut rng = Rng::new(5);
        let balls: Vec<(Vec3, f32)> = (0..3000)
            .map(|_| {
                let c = Vec3::new(rng.range(-5.0, 5.0), rng.range(0.0, 10.0), rng.range(-5.0, 5.0));
                (c, 10f32.powf(rng.range(-3.0, 0.3)))
            })
            .collect();
        let (lo, hi) = balls
            .iter()
            .fold((f32::MAX, 0.0f32), |(a, b), &(_, r)| (a.min(r), b.max(r)));
        let mut grid = VoxelGrid::new(lo, hi);
        for (k, &(c, r)) in balls.iter().enumerate() {
            grid.insert(k as u32, c, r);
        }
        let mut visited_total = 0u64;
        for &(c, r) in &balls {
            let mut seen = vec![false; balls.len()];
            grid.any_near(c, r, |id| {
                seen[id as usize] = true;
                false
            });
            for (k, &(c2, r2)) in balls.iter().enumerate() {
                if (c - c2).length() <= r + r2 {
                    assert!(seen[k], "ball at {c} r {r} and ball {k} at {c2} r {r2} touch");
                }
            }
            visited_total += seen.iter().filter(|&&s| s).count() as u64;
        }
        // And it prunes: far fewer visits than all pairs.
        assert!(
            visited_total < (balls.len() * balls.len() / 4) as u64,
            "{visited_total}"
        );
    }
}
