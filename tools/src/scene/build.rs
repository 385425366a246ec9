//! Building a scene: the trees a command line, a spec, an L-system file or a scene file asks
//! for, grown and standing where they should, their looks, the dynamics model that moves them
//! and the camera that frames them. What happens to a scene frame by frame is the `Driver`'s.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use glam::Vec3;
use sylva_render::frame::{Camera, Look};
use sylva_sim::dynamics::{DynamicsModel, ModelKind};
use sylva_sim::scene::SpeciesForest;
use sylva_sim::spec::WeberPennSpec;
use sylva_sim::Material;

use sylva_sim::scene::{MAX_TEST_FOREST_LEAVES, MAX_TEST_FOREST_SEGMENTS};
use sylva_sim::skeleton::{MAX_LEAVES_PER_TREE, MAX_SEGMENTS_PER_TREE};
use sylva_sim::spec::load::load_file;
use sylva_sim::species;
use sylva_sim::weberpenn::{generate, GenOptions};

use super::file::{self, TreeKind, TreeSource};
use super::{OrbitCamera, SceneArgs, DEFAULT_SPECIES, DEFAULT_TREES, MIN_FRAMING_DISTANCE};

/// The species and title a scene request names.
pub fn resolve_species(spec: Option<&Path>, species: Option<&str>) -> Result<(Vec<WeberPennSpec>, String)> {
    match (spec, species) {
        (Some(file), name) => {
            crate::input::check_regular(file)?;
            let library = load_file(file)?;
            let picked = library.pick(name)?.clone();
            let title = format!(
                "{} ({})",
                picked.species,
                file.file_name().map(|f| f.to_string_lossy()).unwrap_or_default()
            );
            Ok((vec![picked], title))
        }
        (None, Some(name)) => Ok((vec![species::builtin(name)?], name.to_string())),
        (None, None) => {
            let specs = DEFAULT_SPECIES
                .iter()
                .map(|n| species::builtin(n))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((specs, "default forest".to_string()))
        }
    }
}

/// Refuses, before the forest is grown, a number of trees whose forest would pass the size cap
/// (`MAX_TEST_FOREST_SEGMENTS`, `MAX_TEST_FOREST_LEAVES`): it grows the first tree of each
/// species (as the forest will) and multiplies. Trees of one species differ by their seeds, so
/// this is an estimate; the forest checks the exact totals as it is built.
pub fn check_forest_size(specs: &[WeberPennSpec], trees: usize, seed: u64) -> Result<()> {
    let fits = |per_tree_segments: usize, per_tree_leaves: usize| {
        trees.saturating_mul(per_tree_segments) <= MAX_TEST_FOREST_SEGMENTS
            && trees.saturating_mul(per_tree_leaves) <= MAX_TEST_FOREST_LEAVES
    };
    // So few trees that even the largest ones allowed fit need no estimate.
    if specs.is_empty() || fits(MAX_SEGMENTS_PER_TREE, MAX_LEAVES_PER_TREE) {
        return Ok(());
    }
    let (mut segments, mut leaves) = (0usize, 0usize);
    let mut largest = (String::new(), 0usize, 0usize);
    for (k, spec) in specs.iter().enumerate().take(trees) {
        let opts = GenOptions {
            seed: seed.wrapping_add(k as u64),
            ..GenOptions::default()
        };
        let grown = generate(spec, &opts, &mut |_| {}).with_context(|| format!("cannot grow {}", spec.species))?;
        let (s, l) = (grown.skeleton.segments.len(), grown.skeleton.leaves.len());
        // Trees k, k + n, k + 2n, ... are of this species.
        let count = (trees - k).div_ceil(specs.len());
        segments = segments.saturating_add(count.saturating_mul(s));
        leaves = leaves.saturating_add(count.saturating_mul(l));
        if s > largest.1 {
            largest = (spec.species.clone(), s, l);
        }
    }
    if segments > MAX_TEST_FOREST_SEGMENTS || leaves > MAX_TEST_FOREST_LEAVES {
        let per_tree = |total: usize| total.div_ceil(trees).max(1);
        let most = (MAX_TEST_FOREST_SEGMENTS / per_tree(segments)).min(MAX_TEST_FOREST_LEAVES / per_tree(leaves));
        bail!(
            "--trees {trees} is too many for this forest: {} grows about {} segments and {} leaves per tree, so \
             {trees} trees would hold about {segments} segments and {leaves} leaves; a forest holds at most \
             {MAX_TEST_FOREST_SEGMENTS} segments and {MAX_TEST_FOREST_LEAVES} leaves (about {most} trees of these)",
            largest.0,
            largest.1,
            largest.2
        );
    }
    Ok(())
}

/// A grown scene ready to simulate.
pub struct Scene {
    /// The trees' dynamics model, with the wind and colliders it steps with.
    pub sim: Box<dyn DynamicsModel>,
    pub title: String,
    /// Centre and radius of the forest's bounding sphere.
    pub bounds: (Vec3, f32),
    /// Tallest tree \[m\].
    pub height: f32,
    /// The scene file it was read from, if any: its wind, camera and colliders apply.
    pub file: Option<file::SceneFile>,
    /// Where each tree came from and stands (to save the scene as a file).
    pub trees: Vec<TreeSource>,
    /// How each species of the scene looks (the renderer's palette), and each tree's entry.
    pub looks: Vec<Look>,
    pub tree_looks: Vec<u8>,
}

/// How a tree of a scene grew: an L-system or colonization, else its spec file and species;
/// and its seed.
type Source = (Option<file::Grown>, Option<PathBuf>, Option<String>, u64);

/// How trees of `spec` look in the renderer.
pub fn look_of(spec: &WeberPennSpec) -> Look {
    let f = |c: [f64; 3]| c.map(|x| x as f32);
    Look {
        leaf: f(spec.leaf_colour()),
        bark: f(spec.bark_colour()),
        shape: spec.leaf_shape_kind() as u32,
    }
}

/// A scene's title from the file it came from: its name (the whole path when it has none).
fn file_title(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| path.display().to_string(), |f| f.to_string_lossy().into_owned())
}

/// `path` made absolute against the current folder (as it was given when that fails).
fn absolute(path: Option<&Path>) -> Option<PathBuf> {
    path.map(|p| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()))
}

/// The trees of a scene file grown and standing where it says: its species' trees on up to
/// `threads` threads (`grow_all`, which refuses a forest over the caps before growing), then its
/// L-system and colonization trees, in the file's order.
fn grow_scene_file(loaded: &file::SceneFile, material: &Material, threads: usize) -> Result<SpeciesForest> {
    let plan: Vec<(usize, u64)> = loaded
        .trees
        .iter()
        .filter_map(|t| match t.kind {
            TreeKind::Species(k) => Some((k, t.seed)),
            TreeKind::Grown(_) => None,
        })
        .collect();
    let mut species_trees = sylva_sim::scene::grow_all(&loaded.specs, &plan, threads)?.into_iter();
    let mut skeletons = Vec::with_capacity(loaded.trees.len());
    for (k, t) in loaded.trees.iter().enumerate() {
        skeletons.push(match &t.kind {
            TreeKind::Species(_) => species_trees.next().expect("one grown per species tree"),
            TreeKind::Grown(g) => g
                .grow(t.seed)
                .with_context(|| format!("tree {} of {}", k + 1, loaded.trees.len()))?,
        });
    }
    let positions = loaded.trees.iter().map(|t| t.position).collect();
    Ok(SpeciesForest::from_skeletons(skeletons, positions, material)?)
}

impl Scene {
    /// A scene with the default fork rules and dynamics model.
    #[cfg(test)]
    pub fn build(spec: Option<&Path>, species: Option<&str>, trees: Option<u64>, seed: u64) -> Result<Scene> {
        Scene::build_with(
            spec,
            species,
            trees,
            seed,
            crate::trees::GrowArgs::default(),
            ModelKind::default(),
            &Material::default(),
        )
    }

    /// The scene the command line asks for (see [`build_with`](Self::build_with)).
    pub fn from_args(a: &SceneArgs) -> Result<Scene> {
        Scene::build_with(
            a.spec.as_deref(),
            a.species.as_deref(),
            a.trees,
            a.seed,
            a.grow,
            a.model.model,
            &a.model.material(),
        )
    }

    /// The scene of a spec file, a built-in species or the default forest, grown with the fork
    /// rules, of `material` (its drag law from `--drag`), and moved by the dynamics model asked
    /// for on the command line.
    pub fn build_with(
        spec: Option<&Path>,
        species: Option<&str>,
        trees: Option<u64>,
        seed: u64,
        grow: crate::trees::GrowArgs,
        model: ModelKind,
        material: &Material,
    ) -> Result<Scene> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        if let Some(path) = spec.filter(|p| file::is_scene_file(p)) {
            // A scene file places its own trees.
            if species.is_some() || trees.is_some() {
                bail!(
                    "--species and --trees do not apply to a scene file ({}): each of its [[tree]] tables names its species and position",
                    path.display()
                );
            }
            let mut loaded = file::load(path, seed)?;
            for s in &mut loaded.specs {
                grow.apply(s);
            }
            let title = file_title(path);
            let forest = grow_scene_file(&loaded, material, threads)
                .with_context(|| format!("cannot grow the trees of {}", path.display()))?;
            let sources = loaded
                .trees
                .iter()
                .map(|t| match &t.kind {
                    TreeKind::Species(k) => {
                        let (spec, species) = &loaded.sources[*k];
                        (None, absolute(spec.as_deref()), species.clone(), t.seed)
                    }
                    TreeKind::Grown(g) => (Some(g.clone()), None, None, t.seed),
                })
                .collect();
            let mut scene = Scene::of_forest(forest, title, model, sources)?;
            // A look per species, the grown trees the default one after them.
            scene.looks = loaded.specs.iter().map(look_of).collect();
            scene.looks.push(Look::default());
            scene.tree_looks = loaded
                .trees
                .iter()
                .map(|t| match t.kind {
                    TreeKind::Species(k) => k.min(u8::MAX as usize) as u8,
                    TreeKind::Grown(_) => loaded.specs.len().min(u8::MAX as usize) as u8,
                })
                .collect();
            scene.file = Some(loaded);
            return Ok(scene);
        }
        if let Some(path) = spec.filter(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("lsys"))) {
            // An L-system file: its one tree at the origin.
            if species.is_some() || trees.is_some_and(|n| n != 1) {
                bail!(
                    "--species and --trees do not apply to an L-system file ({}): it grows one tree (a scene file places several)",
                    path.display()
                );
            }
            let grown = file::Grown::LSystem {
                preset: None,
                file: absolute(Some(path)),
                iterations: None,
            };
            grown
                .check()
                .with_context(|| format!("cannot grow {}", path.display()))?;
            let skeleton = grown
                .grow(seed)
                .with_context(|| format!("cannot grow {}", path.display()))?;
            let forest = SpeciesForest::from_skeletons(vec![skeleton], vec![Vec3::ZERO], material)?;
            let title = file_title(path);
            return Scene::of_forest(forest, title, model, vec![(Some(grown), None, None, seed)]);
        }
        let (mut specs, title) = resolve_species(spec, species)?;
        for s in &mut specs {
            grow.apply(s);
        }
        let trees = trees.unwrap_or(if spec.is_none() && species.is_none() {
            DEFAULT_TREES as u64
        } else {
            1
        }) as usize;
        check_forest_size(&specs, trees, seed)?;
        let forest = SpeciesForest::new(&specs, trees, seed, material, threads)
            .with_context(|| format!("cannot grow {title}"))?;
        // Tree k: species k of the list, from seed + k (as `SpeciesForest::new` grows them).
        let sources = (0..trees)
            .map(|k| {
                let species = match (spec, species) {
                    (None, None) => Some(DEFAULT_SPECIES[k % DEFAULT_SPECIES.len()].to_string()),
                    (_, name) => name.map(str::to_string),
                };
                (None, absolute(spec), species, seed.wrapping_add(k as u64))
            })
            .collect();
        let mut scene = Scene::of_forest(forest, title, model, sources)?;
        // Tree k is species k of the list (as `SpeciesForest::new` plants them).
        scene.looks = specs.iter().map(look_of).collect();
        scene.tree_looks = (0..trees).map(|k| (k % specs.len()) as u8).collect();
        Ok(scene)
    }

    /// The scene of a grown forest, moved by a `model`; `sources`: how each tree grew (an
    /// L-system or colonization, else its spec file and species) and its seed.
    fn of_forest(forest: SpeciesForest, title: String, model: ModelKind, sources: Vec<Source>) -> Result<Scene> {
        let trees = sources
            .into_iter()
            .zip(&forest.positions)
            .map(|((grown, spec, species, seed), &position)| TreeSource {
                grown,
                spec,
                species,
                seed,
                position,
            })
            .collect();
        let height = forest.skeletons.iter().map(|s| s.height()).fold(0.0f32, f32::max);
        // Stems and leaves alike (a palm's crown is its leaves).
        let (mut lo, mut hi) = (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN));
        for (s, p) in forest.skeletons.iter().zip(&forest.positions) {
            for seg in &s.segments {
                lo = lo.min(seg.base.min(seg.tip) + *p);
                hi = hi.max(seg.base.max(seg.tip) + *p);
            }
            for leaf in &s.leaves {
                let seg = &s.segments[leaf.segment as usize];
                let at = seg.base + (seg.tip - seg.base) * leaf.along + *p;
                let tip = at + leaf.orientation * Vec3::Y * leaf.length;
                let side = Vec3::splat(0.5 * leaf.width);
                lo = lo.min(at.min(tip) - side);
                hi = hi.max(at.max(tip) + side);
            }
        }
        let bounds = ((lo + hi) * 0.5, ((hi - lo) * 0.5).length());
        let sim = model
            .build(forest.forest)
            .with_context(|| format!("cannot set up the {model} model"))?;
        Ok(Scene {
            sim,
            title,
            bounds,
            height,
            file: None,
            trees,
            looks: vec![Look::default()],
            tree_looks: Vec::new(),
        })
    }

    /// A camera that frames the whole scene from a little above.
    pub fn default_camera(&self, aspect: f32, height_px: f32) -> OrbitCamera {
        let (c, r) = self.bounds;
        // The bounding sphere fits the narrower of the two fields of view (a seedling fills
        // the frame as a forest does).
        let half_fov = 0.5 * Camera::FOV_Y * aspect.min(1.0);
        OrbitCamera {
            target: c,
            yaw: 0.6,
            pitch: 0.15,
            distance: (r / half_fov.sin()).max(MIN_FRAMING_DISTANCE),
            aspect,
            height_px,
        }
    }

    /// The camera `--camera` asks for, else the scene file's (`None` for both:
    /// [`default_camera`](Self::default_camera)), aimed at the scene's centre; a distance of 0
    /// is the framing one.
    pub fn camera_at(&self, place: Option<crate::args::CameraPlace>, aspect: f32, height_px: f32) -> OrbitCamera {
        let mut cam = self.default_camera(aspect, height_px);
        if let Some(p) = place.or(self.file.as_ref().and_then(|f| f.camera)) {
            // The orbit's direction from its target is (cos p·sin y, sin p, cos p·cos y): yaw 0
            // looks from the south (+z); a bearing b clockwise from north is the direction
            // (sin b, 0, −cos b), i.e. yaw π − b.
            cam.yaw = std::f32::consts::PI - p.azimuth.to_radians();
            cam.pitch = p.elevation.to_radians();
            if p.distance > 0.0 {
                cam.distance = p.distance;
            }
        }
        cam
    }
}
