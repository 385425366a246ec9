//! Scene files: `sylva view scene.toml` and `sylva render scene.toml`. A TOML file with any
//! number of trees, each a spec file's species or a built-in one standing where the file says,
//! and optionally the wind, the camera and sphere colliders:
//!
//! ```toml
//! [[tree]]
//! spec = "specs/birch.xml"    # relative to this file, or absolute
//! species = "Betula"          # the file's species, when it holds several
//! position = [0.0, 0.0, 0.0]  # metres: x east, y up, z south
//! seed = 7                    # optional (default: the command's --seed plus the tree's number)
//!
//! [[tree]]
//! species = "sassafras"       # a built-in species: no spec
//! position = [8.0, 0.0, -3.0]
//!
//! [[tree]]
//! lsystem = "abop-1.24a"      # an L-system: a preset's name, or a file (relative as `spec`)
//! iterations = 5              # optional (default: the L-system's own)
//! position = [-6.0, 0.0, 2.0]
//!
//! [[tree]]                    # space colonization into an envelope over the tree's position
//! colonize = { envelope = ["sphere:0,6,0,3"], points = 4000 }
//! position = [0.0, 0.0, 9.0]  # (optional: growth, influence, kill distances in metres)
//!
//! [wind]
//! speed = 8.0                 # m/s, 0..=60
//! heading = 120.0             # the compass heading it blows towards, degrees from north
//! model = "fluid"             # or "uniform"
//!
//! [camera]
//! azimuth = 145.0             # bearing from the scene's centre, degrees clockwise from north
//! elevation = 10.0            # degrees above the horizon
//! distance = 0.0              # metres; 0 frames the scene
//!
//! [[collider]]
//! center = [3.0, 2.0, 0.0]
//! radius = 1.0
//! ```
//!
//! Invariants: every value is checked before anything is grown (finite, within the ranges the
//! command line allows), unknown keys are refused, and every message names the file and the
//! table it is about; the file is read through the bounded reader, at most
//! [`MAX_SCENE_BYTES`].

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, ensure, Context, Result};
use glam::Vec3;
use serde::{Deserialize, Serialize};
use sylva_sim::colonize::{self, ColonizeParams, Envelope};
use sylva_sim::lsystem::{self, LSystem};
use sylva_sim::scene::MAX_PLACEMENT;
use sylva_sim::spec::load::load_file;
use sylva_sim::spec::WeberPennSpec;
use sylva_sim::{species, Motion, Skeleton, SphereCollider};

use super::{WindModel, MAX_WIND_SPEED};
use crate::args::{CameraPlace, MAX_CAMERA_DISTANCE};

/// Largest scene file read \[bytes\].
pub const MAX_SCENE_BYTES: u64 = 1 << 20;
/// Most trees a scene file places.
pub const MAX_SCENE_TREES: usize = 10_000;
/// Most colliders a scene file places.
pub const MAX_SCENE_COLLIDERS: usize = 64;
/// Largest collider radius \[m\].
pub const MAX_COLLIDER_RADIUS: f32 = 1_000.0;

/// Whether `path` names a scene file (its extension is `.toml`, any case).
pub fn is_scene_file(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("toml"))
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RawScene {
    #[serde(default)]
    tree: Vec<RawTree>,
    wind: Option<RawWind>,
    camera: Option<RawCamera>,
    #[serde(default)]
    collider: Vec<RawCollider>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RawTree {
    spec: Option<PathBuf>,
    species: Option<String>,
    lsystem: Option<String>,
    iterations: Option<u64>,
    colonize: Option<RawColonize>,
    position: [f32; 3],
    seed: Option<u64>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RawColonize {
    envelope: Vec<String>,
    points: Option<u64>,
    growth: Option<f32>,
    influence: Option<f32>,
    kill: Option<f32>,
}

/// A tree grown by an algorithm rather than from a species (its seed and position are the
/// scene tree's).
#[derive(Clone, Debug, PartialEq)]
pub enum Grown {
    /// A bracketed L-system: a preset (by name) or a file (absolute), rewritten `iterations`
    /// times (default: the L-system's own).
    LSystem {
        preset: Option<String>,
        file: Option<PathBuf>,
        iterations: Option<u32>,
    },
    /// Space colonization (Runions et al. 2007) into the union of `envelopes` (the forms of
    /// `sylva grow colonize --envelope`, relative to the tree's position), one trunk at the
    /// position.
    Colonize {
        envelopes: Vec<String>,
        points: u64,
        growth: f32,
        influence: f32,
        kill: f32,
    },
}

impl Grown {
    /// The L-system or colonization parameters, checked (a file read and parsed), naming what
    /// is wrong.
    fn lsystem(&self) -> Result<Option<(LSystem, u32)>> {
        let Grown::LSystem {
            preset,
            file,
            iterations,
        } = self
        else {
            return Ok(None);
        };
        let ls = match (preset, file) {
            (Some(name), _) => lsystem::preset(name).ok_or_else(|| {
                anyhow!(
                    "`{name}` is neither an L-system preset ({}) nor a file",
                    lsystem::preset_names().join(", ")
                )
            })?,
            (None, Some(path)) => {
                crate::input::check_regular(path)?;
                let text = crate::input::read_text(path, lsystem::MAX_TEXT_BYTES as u64, "L-system file")?;
                LSystem::parse(&text, &path.display().to_string())?
            }
            (None, None) => bail!("an L-system needs a preset or a file"),
        };
        let n = iterations.unwrap_or(ls.iterations);
        ensure!(
            n as u64 <= lsystem::MAX_ITERATIONS as u64,
            "{n} iterations; allowed at most {}",
            lsystem::MAX_ITERATIONS
        );
        Ok(Some((ls, n)))
    }

    fn colonize_params(&self, seed: u64) -> Result<Option<ColonizeParams>> {
        let Grown::Colonize {
            envelopes,
            points,
            growth,
            influence,
            kill,
        } = self
        else {
            return Ok(None);
        };
        let mut shapes = Vec::with_capacity(envelopes.len());
        for e in envelopes {
            shapes.push(crate::args::parse_envelope(e).map_err(|m| anyhow!("envelope {m}"))?);
        }
        ensure!(
            !shapes.is_empty(),
            "colonize needs at least one envelope, e.g. \"sphere:0,6,0,3\""
        );
        let params = ColonizeParams {
            crown: if shapes.len() == 1 {
                shapes.remove(0)
            } else {
                Envelope::Union(shapes)
            },
            points: *points as usize,
            growth_distance: *growth,
            influence_distance: *influence,
            kill_distance: *kill,
            trunks: vec![Vec3::ZERO],
            roots: None,
            seed,
            ..ColonizeParams::default()
        };
        params.validate()?;
        Ok(Some(params))
    }

    /// Checks everything before anything grows.
    pub fn check(&self) -> Result<()> {
        self.lsystem()?;
        self.colonize_params(0)?;
        Ok(())
    }

    /// Grows the tree from `seed`, at the origin.
    pub fn grow(&self, seed: u64) -> Result<Skeleton> {
        if let Some((ls, n)) = self.lsystem()? {
            return Ok(lsystem::grow(&ls, n, seed, &mut |_| {})?.skeleton);
        }
        let params = self.colonize_params(seed)?.expect("an L-system or a colonization");
        let grown = colonize::colonize(&params, &mut |_| {})?;
        grown
            .trees
            .into_iter()
            .next()
            .ok_or_else(|| anyhow!("space colonization grew no tree"))
    }
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RawWind {
    speed: Option<f32>,
    heading: Option<f32>,
    model: Option<String>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RawCamera {
    azimuth: f32,
    elevation: f32,
    #[serde(default)]
    distance: f32,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RawCollider {
    center: [f32; 3],
    radius: f32,
}

/// The wind a scene file sets (each part optional: the command line's where it is silent).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SceneWind {
    pub speed: Option<f32>,
    /// Compass heading it blows towards \[degrees clockwise from north\].
    pub heading: Option<f32>,
    pub model: Option<WindModel>,
}

/// A scene file, checked and its species loaded: what the scene grows and how it is shown.
#[derive(Clone, Debug)]
pub struct SceneFile {
    /// The species the trees use, each once, and where each came from: its spec file (as
    /// resolved) and the species asked for.
    pub specs: Vec<WeberPennSpec>,
    pub sources: Vec<(Option<PathBuf>, Option<String>)>,
    /// Each tree: what it grows from, its seed and position.
    pub trees: Vec<SceneTree>,
    pub wind: SceneWind,
    pub camera: Option<CameraPlace>,
    pub colliders: Vec<SphereCollider>,
}

/// A tree of a scene file.
#[derive(Clone, Debug, PartialEq)]
pub struct SceneTree {
    pub kind: TreeKind,
    pub seed: u64,
    pub position: Vec3,
}

/// What a scene tree grows from.
#[derive(Clone, Debug, PartialEq)]
pub enum TreeKind {
    /// A species: an index into `SceneFile::specs`.
    Species(usize),
    /// An L-system or space colonization.
    Grown(Grown),
}

/// `v` as a number in `lo..=hi`, or an error naming `what` and the range.
fn within(what: &str, v: f32, lo: f32, hi: f32) -> Result<f32> {
    ensure!(
        v.is_finite() && v >= lo && v <= hi,
        "{what} is {v}; allowed a finite number in {lo}..={hi}"
    );
    Ok(v)
}

/// A point whose coordinates are finite and within `most` of the origin.
fn point(what: &str, p: [f32; 3], most: f32) -> Result<Vec3> {
    let v = Vec3::from(p);
    ensure!(
        v.is_finite() && v.abs().max_element() <= most,
        "{what} is {v}; allowed finite coordinates within ±{most} m"
    );
    Ok(v)
}

/// Reads and checks the scene file `path`, loading the species its trees name (spec paths
/// relative to the file's folder); a tree without a seed grows from `seed` plus its number.
pub fn load(path: &Path, seed: u64) -> Result<SceneFile> {
    crate::input::check_regular(path)?;
    let text = crate::input::read_text(path, MAX_SCENE_BYTES, "scene file")?;
    let raw: RawScene = toml::from_str(&text).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    let at = |what: String| format!("{}: {what}", path.display());
    ensure!(
        !raw.tree.is_empty(),
        "{}: no trees; a scene file needs at least one [[tree]] table with a `spec` or a `species`",
        path.display()
    );
    ensure!(
        raw.tree.len() <= MAX_SCENE_TREES,
        "{}: {} trees; allowed at most {MAX_SCENE_TREES}",
        path.display(),
        raw.tree.len()
    );
    ensure!(
        raw.collider.len() <= MAX_SCENE_COLLIDERS,
        "{}: {} colliders; allowed at most {MAX_SCENE_COLLIDERS}",
        path.display(),
        raw.collider.len()
    );
    let folder = path.parent().unwrap_or(Path::new("."));
    let mut specs: Vec<WeberPennSpec> = Vec::new();
    // Each (file, species) or built-in species loaded once.
    let mut loaded: Vec<(Option<PathBuf>, Option<String>)> = Vec::new();
    let mut trees = Vec::with_capacity(raw.tree.len());
    for (k, t) in raw.tree.iter().enumerate() {
        let which = || at(format!("tree {} of {}", k + 1, raw.tree.len()));
        let position = point("its position", t.position, MAX_PLACEMENT).with_context(which)?;
        let seed = t.seed.unwrap_or(seed.wrapping_add(k as u64));
        let resolve = |p: &Path| {
            if p.is_absolute() {
                p.to_path_buf()
            } else {
                folder.join(p)
            }
        };
        let kinds = [
            t.spec.is_some() || t.species.is_some(),
            t.lsystem.is_some(),
            t.colonize.is_some(),
        ];
        ensure!(
            kinds.iter().filter(|&&k| k).count() <= 1,
            "{}: it names more than one of `spec`/`species`, `lsystem` and `colonize`; a tree grows from one",
            which()
        );
        ensure!(
            t.iterations.is_none() || t.lsystem.is_some(),
            "{}: `iterations` is for an `lsystem` tree",
            which()
        );
        let grown = if let Some(name) = &t.lsystem {
            let (preset, file) = if lsystem::preset_names().contains(&name.as_str()) {
                (Some(name.clone()), None)
            } else {
                (None, Some(resolve(Path::new(name))))
            };
            Some(Grown::LSystem {
                preset,
                file,
                iterations: t.iterations.map(|n| n.min(u32::MAX as u64) as u32),
            })
        } else {
            t.colonize.as_ref().map(|c| {
                let d = ColonizeParams::default();
                Grown::Colonize {
                    envelopes: c.envelope.clone(),
                    points: c.points.unwrap_or(d.points as u64),
                    growth: c.growth.unwrap_or(d.growth_distance),
                    influence: c.influence.unwrap_or(d.influence_distance),
                    kill: c.kill.unwrap_or(d.kill_distance),
                }
            })
        };
        if let Some(grown) = grown {
            grown.check().with_context(which)?;
            trees.push(SceneTree {
                kind: TreeKind::Grown(grown),
                seed,
                position,
            });
            continue;
        }
        let spec = t.spec.as_deref().map(resolve);
        let key = (spec.clone(), t.species.clone());
        let species = match loaded.iter().position(|l| *l == key) {
            Some(i) => i,
            None => {
                let grown = match (&spec, &t.species) {
                    (Some(file), name) => {
                        crate::input::check_regular(file).with_context(which)?;
                        let library = load_file(file).with_context(which)?;
                        library.pick(name.as_deref()).with_context(which)?.clone()
                    }
                    (None, Some(name)) => species::builtin(name).with_context(which)?,
                    (None, None) => bail!(
                        "{}: it names no `spec` (a spec file), `species` (a built-in one: {}), `lsystem` or `colonize`",
                        which(),
                        species::names().collect::<Vec<_>>().join(", ")
                    ),
                };
                specs.push(grown);
                loaded.push(key);
                specs.len() - 1
            }
        };
        trees.push(SceneTree {
            kind: TreeKind::Species(species),
            seed,
            position,
        });
    }
    let wind = match &raw.wind {
        None => SceneWind::default(),
        Some(w) => {
            let which = || at("[wind]".into());
            SceneWind {
                speed: w
                    .speed
                    .map(|v| within("speed", v, 0.0, MAX_WIND_SPEED as f32))
                    .transpose()
                    .with_context(which)?,
                heading: w
                    .heading
                    .map(|v| within("heading", v, 0.0, 360.0))
                    .transpose()
                    .with_context(which)?,
                model: match w.model.as_deref() {
                    None => None,
                    Some("fluid") => Some(WindModel::Fluid),
                    Some("uniform") => Some(WindModel::Uniform),
                    Some(other) => bail!("{}: model `{other}`; allowed: fluid, uniform", which()),
                },
            }
        }
    };
    let camera = match &raw.camera {
        None => None,
        Some(c) => {
            let which = || at("[camera]".into());
            Some(CameraPlace {
                azimuth: within("azimuth", c.azimuth, 0.0, 360.0).with_context(which)?,
                elevation: within("elevation", c.elevation, -89.0, 89.0).with_context(which)?,
                distance: within("distance", c.distance, 0.0, MAX_CAMERA_DISTANCE as f32).with_context(which)?,
            })
        }
    };
    let mut colliders = Vec::with_capacity(raw.collider.len());
    for (k, c) in raw.collider.iter().enumerate() {
        let which = || at(format!("collider {} of {}", k + 1, raw.collider.len()));
        let center = point("its center", c.center, MAX_PLACEMENT).with_context(which)?;
        let radius = within("its radius", c.radius, 1e-3, MAX_COLLIDER_RADIUS).with_context(which)?;
        colliders.push(SphereCollider::new(center, radius, Motion::Static).with_context(which)?);
    }
    Ok(SceneFile {
        specs,
        sources: loaded,
        trees,
        wind,
        camera,
        colliders,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bad scene files are refused before anything grows, naming the file, the table and what
    /// is allowed.
    #[test]
    fn bad_scene_files_are_refused_naming_what_is_wrong() {
        let dir = std::env::temp_dir().join(format!("sylva-scene-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("bad.toml");
        let tree = "[[tree]]\nspecies = \"sassafras\"\nposition = [0.0, 0.0, 0.0]\n";
        let cases: Vec<(String, &[&str])> = vec![
            (String::new(), &["no trees"]),
            (
                "[[tree]]\nposition = [0.0, 0.0, 0.0]\n".into(),
                &["tree 1 of 1", "no `spec`", "sassafras"],
            ),
            (
                "[[tree]]\nspecies = \"baobab\"\nposition = [0.0, 0.0, 0.0]\n".into(),
                &["tree 1 of 1", "baobab"],
            ),
            (
                "[[tree]]\nspec = \"missing.xml\"\nposition = [0.0, 0.0, 0.0]\n".into(),
                &["tree 1 of 1", "missing.xml"],
            ),
            (
                "[[tree]]\nspecies = \"sassafras\"\nposition = [0.0, 0.0, 1e9]\n".into(),
                &["tree 1 of 1", "position"],
            ),
            (
                "[[tree]]\nspecies = \"sassafras\"\nposition = [0.0, nan, 0.0]\n".into(),
                &["tree 1 of 1", "position"],
            ),
            (
                "[[tree]]\nspecies = \"sassafras\"\nposition = [0.0, 0.0]\n".into(),
                &["bad.toml"],
            ),
            (
                "[[tree]]\nspecies = \"sassafras\"\nposition = [0.0, 0.0, 0.0]\nheight = 3\n".into(),
                &["height"],
            ),
            (format!("{tree}[wind]\nspeed = 99.0\n"), &["[wind]", "speed", "0..=60"]),
            (
                format!("{tree}[wind]\nmodel = \"storm\"\n"),
                &["[wind]", "storm", "fluid, uniform"],
            ),
            (
                format!("{tree}[camera]\nazimuth = 10.0\nelevation = 95.0\n"),
                &["[camera]", "elevation"],
            ),
            (
                format!("{tree}[[collider]]\ncenter = [0.0, 1.0, 0.0]\nradius = -1.0\n"),
                &["collider 1 of 1", "radius"],
            ),
            ("[[tree]\n".into(), &["bad.toml"]),
            (
                "[[tree]]\nspecies = \"sassafras\"\nlsystem = \"abop-1.24a\"\nposition = [0.0, 0.0, 0.0]\n".into(),
                &["tree 1 of 1", "more than one"],
            ),
            (
                "[[tree]]\nspecies = \"sassafras\"\niterations = 3\nposition = [0.0, 0.0, 0.0]\n".into(),
                &["tree 1 of 1", "iterations"],
            ),
            (
                "[[tree]]\nlsystem = \"no-such-preset\"\nposition = [0.0, 0.0, 0.0]\n".into(),
                &["tree 1 of 1", "no-such-preset"],
            ),
            (
                "[[tree]]\nlsystem = \"abop-1.24a\"\niterations = 99\nposition = [0.0, 0.0, 0.0]\n".into(),
                &["tree 1 of 1", "99 iterations", "at most 32"],
            ),
            (
                "[[tree]]\ncolonize = { envelope = [\"blob:1,2\"] }\nposition = [0.0, 0.0, 0.0]\n".into(),
                &["tree 1 of 1", "blob"],
            ),
            (
                "[[tree]]\ncolonize = { envelope = [\"sphere:0,5,0,2\"], points = 0 }\nposition = [0.0, 0.0, 0.0]\n"
                    .into(),
                &["tree 1 of 1", "points"],
            ),
            (
                "[[tree]]\ncolonize = { envelope = [], points = 10 }\nposition = [0.0, 0.0, 0.0]\n".into(),
                &["tree 1 of 1", "envelope"],
            ),
        ];
        for (text, expect) in cases {
            std::fs::write(&file, &text).unwrap();
            let err = format!("{:#}", load(&file, 1).expect_err(&text));
            for e in expect {
                assert!(err.contains(e), "{text:?}: expected `{e}` in: {err}");
            }
        }
        std::fs::write(&file, vec![b'#'; MAX_SCENE_BYTES as usize + 1]).unwrap();
        assert!(load(&file, 1).is_err(), "a file over the size limit is refused");
        // A good one: seeds default to the command's plus the tree's number.
        std::fs::write(&file, format!("{tree}{tree}")).unwrap();
        let ok = load(&file, 40).unwrap();
        assert_eq!(ok.specs.len(), 1, "one species loaded once");
        assert_eq!(ok.trees.iter().map(|t| t.seed).collect::<Vec<_>>(), [40, 41]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Where a tree of a scene came from and where it stands, so that the scene can be written
/// back as a file ([`to_text`]).
#[derive(Clone, Debug, PartialEq)]
pub struct TreeSource {
    /// Grown by an L-system or space colonization (then `spec` and `species` are none).
    pub grown: Option<Grown>,
    /// Its spec file (absolute), or none for a built-in species.
    pub spec: Option<PathBuf>,
    /// The species: the built-in one, or the spec file's one asked for (none: the file's only).
    pub species: Option<String>,
    pub seed: u64,
    pub position: Vec3,
}

#[derive(Serialize)]
struct SavedScene {
    tree: Vec<SavedTree>,
    wind: SavedWind,
    camera: SavedCamera,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    collider: Vec<SavedCollider>,
}

#[derive(Serialize)]
struct SavedTree {
    #[serde(skip_serializing_if = "Option::is_none")]
    spec: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    species: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lsystem: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    iterations: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    colonize: Option<SavedColonize>,
    position: [f32; 3],
    seed: u64,
}

#[derive(Serialize)]
struct SavedColonize {
    envelope: Vec<String>,
    points: u64,
    growth: f32,
    influence: f32,
    kill: f32,
}

/// `p` as text for a scene file, or an error naming it (TOML holds only UTF-8).
fn utf8(p: &Path) -> Result<String> {
    Ok(p.to_str()
        .with_context(|| format!("the path {} is not UTF-8, which a scene file cannot hold", p.display()))?
        .to_string())
}

#[derive(Serialize)]
struct SavedWind {
    speed: f32,
    heading: f32,
    model: &'static str,
}

#[derive(Serialize)]
struct SavedCamera {
    azimuth: f32,
    elevation: f32,
    distance: f32,
}

#[derive(Serialize)]
struct SavedCollider {
    center: [f32; 3],
    radius: f32,
}

/// The scene as a scene file's text: its trees, the wind (speed \[m/s\], compass heading
/// \[degrees\], model), the camera and the colliders. Fails for a spec path that is not UTF-8
/// (TOML holds only text).
pub fn to_text(
    trees: &[TreeSource],
    (speed, heading, model): (f32, f32, WindModel),
    camera: CameraPlace,
    colliders: &[SphereCollider],
) -> Result<String> {
    let mut tree = Vec::with_capacity(trees.len());
    for t in trees {
        let mut saved = SavedTree {
            spec: t.spec.as_deref().map(utf8).transpose()?,
            species: t.species.clone(),
            lsystem: None,
            iterations: None,
            colonize: None,
            position: t.position.to_array(),
            seed: t.seed,
        };
        match &t.grown {
            None => {}
            Some(Grown::LSystem {
                preset,
                file,
                iterations,
            }) => {
                saved.lsystem = match (preset, file) {
                    (Some(name), _) => Some(name.clone()),
                    (None, Some(path)) => Some(utf8(path)?),
                    (None, None) => None,
                };
                saved.iterations = *iterations;
            }
            Some(Grown::Colonize {
                envelopes,
                points,
                growth,
                influence,
                kill,
            }) => {
                saved.colonize = Some(SavedColonize {
                    envelope: envelopes.clone(),
                    points: *points,
                    growth: *growth,
                    influence: *influence,
                    kill: *kill,
                })
            }
        }
        tree.push(saved);
    }
    let saved = SavedScene {
        tree,
        wind: SavedWind {
            speed,
            heading,
            model: match model {
                WindModel::Fluid => "fluid",
                WindModel::Uniform => "uniform",
            },
        },
        camera: SavedCamera {
            azimuth: camera.azimuth,
            elevation: camera.elevation,
            distance: camera.distance,
        },
        collider: colliders
            .iter()
            .map(|c| SavedCollider {
                center: c.center.to_array(),
                radius: c.radius,
            })
            .collect(),
    };
    Ok(format!(
        "# A Sylva scene: sylva view FILE or sylva render FILE --out picture.png\n{}",
        toml::to_string(&saved).context("cannot write the scene as TOML")?
    ))
}
