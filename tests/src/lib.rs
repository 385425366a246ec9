//! Helpers shared by the cross-crate tests.

pub mod arbaro_model;
pub mod hostile;

/// The Vulkan device the GPU tests share.
pub mod device {
    use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

    use sylva_render::{Gpu, GpuOptions};

    /// One device for the whole test binary, validation on (opening lavapipe with validation is
    /// slow); tests take turns. Panics without a Vulkan device: a GPU test must not pass
    /// without one.
    pub fn gpu() -> MutexGuard<'static, Arc<Gpu>> {
        static G: OnceLock<Mutex<Arc<Gpu>>> = OnceLock::new();
        G.get_or_init(|| {
            let gpu = Gpu::new(
                &GpuOptions {
                    validation: true,
                    device_name: None,
                },
                None,
            )
            .unwrap_or_else(|e| panic!("no Vulkan device for the GPU tests (they must not pass without one): {e}"));
            Mutex::new(Arc::new(gpu))
        })
        .lock()
        .unwrap_or_else(|e| e.into_inner())
    }

    /// Fails with the validation layer's messages when it reported any error.
    pub fn assert_no_validation_errors(gpu: &Gpu) {
        assert_eq!(
            gpu.validation_errors(),
            0,
            "validation errors: {:#?}",
            gpu.validation_messages()
        );
    }

    /// Largest position difference \[m\] and largest packed-orientation difference (snorm16
    /// steps) between two fills' segment and leaf instances (a patch on the device against the
    /// CPU fill); panics when anything else differs: radii, lengths, widths and shades are
    /// copied, so they agree exactly.
    pub fn instance_difference(
        a: (
            &[sylva_render::frame::SegmentInstance],
            &[sylva_render::frame::LeafInstance],
        ),
        b: (
            &[sylva_render::frame::SegmentInstance],
            &[sylva_render::frame::LeafInstance],
        ),
    ) -> (f32, i32) {
        use glam::Vec3;
        assert_eq!(a.0.len(), b.0.len(), "segment instances");
        assert_eq!(a.1.len(), b.1.len(), "leaf instances");
        let v3 = |p: [f32; 4]| Vec3::new(p[0], p[1], p[2]);
        let steps = |x: [i16; 4], y: [i16; 4]| (0..4).map(|k| (x[k] as i32 - y[k] as i32).abs()).max().unwrap();
        let (mut pos, mut turn) = (0.0f32, 0);
        for (x, y) in a.0.iter().zip(b.0) {
            assert_eq!((x.base_radius[3], x.length_tip), (y.base_radius[3], y.length_tip));
            pos = pos.max(v3(x.base_radius).distance(v3(y.base_radius)));
            turn = turn.max(steps(x.orient, y.orient));
        }
        for (x, y) in a.1.iter().zip(b.1) {
            assert_eq!((x.pos_length[3], x.width_shade), (y.pos_length[3], y.width_shade));
            pos = pos.max(v3(x.pos_length).distance(v3(y.pos_length)));
            turn = turn.max(steps(x.orient, y.orient));
        }
        (pos, turn)
    }
}

use glam::Vec3;
use std::path::{Path, PathBuf};
use sylva_engine::{FrameTimings, JobSystem};
use sylva_sim::dynamics::weber::{WeberModel, WeberParams, PHASES};
use sylva_sim::dynamics::{DynamicsModel, ModelKind};
use sylva_sim::skeleton::{Skeleton, SkeletonSegment};
use sylva_sim::{test_tree, Forest, Material, SimError, TreePlacement, TreeSize, WindField};

/// The guidance a corpus test panics with when the corpus is missing.
pub const CORPUS_HELP: &str = "the third-party tree-spec corpus (shared/data/tree-specs) was not found: set \
     SYLVA_TREE_SPECS to its folder, or put shared/data/tree-specs beside the checkout (as ../shared/data/tree-specs); \
     ./scripts/test.sh finds it and runs the corpus tests (cargo test -- --ignored corpus_)";

/// The third-party spec corpus, `shared/data/tree-specs` (real files written by Arbaro,
/// Sapling, tree-gen and Helios; not part of the repository): `$SYLVA_TREE_SPECS` (unless
/// empty), or found beside the checkout or one of its ancestors (the project's `../shared`).
///
/// Only the `corpus_*` tests call this; they are `#[ignore]`d, so the normal suite passes
/// without the corpus, and `scripts/test.sh` runs them with `--ignored` when it finds the
/// corpus (and lists them as skipped when it does not). Panics when the corpus is missing, so a
/// corpus test run without it fails instead of passing.
pub fn tree_specs_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SYLVA_TREE_SPECS").filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        assert!(
            dir.is_dir(),
            "SYLVA_TREE_SPECS={} is not a folder; {CORPUS_HELP}",
            dir.display()
        );
        return dir;
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|a| a.join("shared/data/tree-specs"))
        .find(|p| p.is_dir())
        .unwrap_or_else(|| panic!("{CORPUS_HELP}"))
}

/// Every file of a folder and its subfolders but `*.md` notes, sorted.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let p = entry.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_none_or(|e| e != "md") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, &mut out);
    out.sort();
    out
}

/// Every spec file of the third-party corpus (the SOURCES.md notes left out), sorted. Panics
/// when the corpus is missing (see [`tree_specs_dir`]).
pub fn tree_spec_files() -> Vec<PathBuf> {
    files_under(&tree_specs_dir())
}

/// The repository's own spec fixtures, `tests/fixtures/specs/<format>/`: small files written
/// for these tests in each tool's format (see the README there). Always present.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/specs")
}

/// A fixture by its path under [`fixtures_dir`], e.g. `arbaro/small_birch.xml`.
pub fn fixture(rel: &str) -> PathBuf {
    let path = fixtures_dir().join(rel);
    assert!(path.is_file(), "fixture {} missing", path.display());
    path
}

/// Every spec fixture of the format folders (`tests/fixtures/specs/<format>/...`; files
/// directly in `tests/fixtures/specs` belong to the tests that name them), sorted.
pub fn fixture_spec_files() -> Vec<PathBuf> {
    let dir = fixtures_dir();
    let mut out: Vec<PathBuf> = files_under(&dir)
        .into_iter()
        .filter(|p| p.parent() != Some(dir.as_path()))
        .collect();
    out.sort();
    out
}

/// A simulation of one test tree of a named size.
pub fn tree_sim(size: TreeSize, seed: u64, material: Material, params: WeberParams) -> WeberModel {
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
pub fn sim_of(skeletons: &[Skeleton], material: Material, params: WeberParams) -> WeberModel {
    WeberModel::new(row_of(skeletons, &material), params).expect("simulation")
}

/// A forest of skeletons placed 20 m apart along x.
fn row_of(skeletons: &[Skeleton], material: &Material) -> Forest {
    let placements: Vec<_> = skeletons
        .iter()
        .enumerate()
        .map(|(k, s)| TreePlacement {
            skeleton: s,
            position: Vec3::new(20.0 * k as f32, 0.0, 0.0),
        })
        .collect();
    Forest::build(&placements, material).expect("forest")
}

/// A model of `kind` over skeletons placed 20 m apart along x, with its default settings.
pub fn model_of(kind: ModelKind, skeletons: &[Skeleton], material: Material) -> Box<dyn DynamicsModel> {
    kind.build(row_of(skeletons, &material))
        .unwrap_or_else(|e| panic!("{kind}: {e}"))
}

/// A wind the same everywhere and at all times (a uniform wind, so the models take their
/// uniform-wind paths).
pub struct Steady(pub Vec3);

impl WindField for Steady {
    fn advance(&mut self, _time: f64) {}
    fn sample(&self, _p: Vec3) -> Vec3 {
        self.0
    }
    fn uniform(&self) -> Option<Vec3> {
        Some(self.0)
    }
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
pub fn run(sim: &mut WeberModel, jobs: &JobSystem, steps: usize, mut check: impl FnMut(usize, &WeberModel)) {
    let timings = FrameTimings::new(&PHASES);
    for k in 0..steps {
        sim.step(jobs, &timings);
        check(k, sim);
    }
}

/// Tip of segment `i` in the current pose.
pub fn tip(sim: &WeberModel, i: usize) -> Vec3 {
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
