//! Helpers shared by the cross-crate tests.

pub mod arbaro_model;
pub mod hostile;

use glam::Vec3;
use sylva_engine::{FrameTimings, JobSystem};
use sylva_sim::skeleton::{Skeleton, SkeletonSegment};
use sylva_sim::{test_tree, Forest, Material, SimError, SimParams, Simulation, TreePlacement, TreeSize, PHASES};

/// `shared/data/tree-specs`, the real spec files: `$SYLVA_TREE_SPECS`, or found beside the
/// checkout or one of its ancestors (the project's `../shared`). Panics when missing, so tests
/// that need the files fail instead of passing without them.
pub fn tree_specs_dir() -> std::path::PathBuf {
    if let Ok(dir) = std::env::var("SYLVA_TREE_SPECS") {
        return std::path::PathBuf::from(dir);
    }
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|a| a.join("shared/data/tree-specs"))
        .find(|p| p.is_dir())
        .expect("shared/data/tree-specs not found beside the checkout (set SYLVA_TREE_SPECS)")
}

/// Every file of the shared spec data but the SOURCES.md notes, sorted.
pub fn tree_spec_files() -> Vec<std::path::PathBuf> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let p = entry.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.file_name().is_some_and(|n| n != "SOURCES.md") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&tree_specs_dir(), &mut out);
    out.sort();
    out
}

/// A simulation of one test tree of a named size.
pub fn tree_sim(size: TreeSize, seed: u64, material: Material, params: SimParams) -> Simulation {
    let (n, m) = size.counts();
    let skel = test_tree(seed, n, m).expect("test tree");
    sim_of(&[skel], material, params)
}

/// A forest of one skeleton at the origin.
pub fn forest_of(skeleton: &Skeleton, material: &Material) -> Result<Forest, SimError> {
    Forest::build(
        &[TreePlacement {
            skeleton,
            position: Vec3::ZERO,
        }],
        material,
    )
}

/// A simulation of skeletons placed 20 m apart along x.
pub fn sim_of(skeletons: &[Skeleton], material: Material, params: SimParams) -> Simulation {
    let placements: Vec<_> = skeletons
        .iter()
        .enumerate()
        .map(|(k, s)| TreePlacement {
            skeleton: s,
            position: Vec3::new(20.0 * k as f32, 0.0, 0.0),
        })
        .collect();
    let forest = Forest::build(&placements, &material).expect("forest");
    Simulation::new(forest, params).expect("simulation")
}

/// A straight chain of `n` segments of length `l` and radius `r` from the origin along `dir`.
pub fn chain(n: usize, l: f32, r: f32, dir: Vec3) -> Skeleton {
    let dir = dir.normalize();
    let segments = (0..n)
        .map(|i| SkeletonSegment {
            parent: if i == 0 { None } else { Some(i as u32 - 1) },
            base: dir * (l * i as f32),
            tip: dir * (l * (i + 1) as f32),
            radius_base: r,
            radius_tip: r,
        })
        .collect();
    Skeleton {
        segments,
        leaves: Vec::new(),
    }
}

/// Steps a simulation `steps` times on `jobs`, calling `check` after each step.
pub fn run(sim: &mut Simulation, jobs: &JobSystem, steps: usize, mut check: impl FnMut(usize, &Simulation)) {
    let timings = FrameTimings::new(&PHASES);
    for k in 0..steps {
        sim.step(jobs, &timings);
        check(k, sim);
    }
}

/// Tip of segment `i` in the current pose.
pub fn tip(sim: &Simulation, i: usize) -> Vec3 {
    sim.pose().tip(i, sim.forest().seg.length[i])
}

/// Telling rendered tree pixels apart from ground and sky by colour. The renderer's palette
/// (`sylva_render::renderer::palette`) keeps the hues apart: bark is red-brown (red well above
/// green and blue), leaves are green (green well above red and blue), the ground is a dry
/// meadow whose red and green are about equal, the sky is blue, the collider violet.
pub mod pixels {
    /// What a pixel shows.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Class {
        Bark,
        Leaf,
        Other,
    }

    /// Classifies an sRGB pixel.
    pub fn classify(p: [u8; 4]) -> Class {
        let [r, g, b] = [p[0] as f32, p[1] as f32, p[2] as f32];
        if g > 1.18 * r && g > 1.3 * b {
            Class::Leaf
        } else if r > 1.15 * g && r > 1.3 * b {
            Class::Bark
        } else {
            Class::Other
        }
    }

    /// Pixels of each class in a rectangle (x0..x1, y0..y1) of an RGBA image.
    pub fn count(image: &sylva_render::Rgba, x0: u32, y0: u32, x1: u32, y1: u32) -> (usize, usize) {
        let (mut bark, mut leaf) = (0, 0);
        for y in y0..y1.min(image.height) {
            for x in x0..x1.min(image.width) {
                match classify(image.pixel(x, y)) {
                    Class::Bark => bark += 1,
                    Class::Leaf => leaf += 1,
                    Class::Other => {}
                }
            }
        }
        (bark, leaf)
    }
}
