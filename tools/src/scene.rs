//! The scene the viewer and the headless renderer show (its arguments here, its building in
//! `build`), and the simulation side of a frame (`Driver`): stepping in real time, reacting to
//! the user's commands, filling the render command cache.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use glam::Vec3;
use sylva_engine::{FrameTimings, JobSystem};
use sylva_render::cache::CacheWriter;
use sylva_render::field::slice_arrows;
use sylva_render::frame::{Camera, FillIndex, LodSettings, RenderFrame, SceneInfo, SimTimings};
use sylva_render::{Downloads, Gpu, GpuOliapuram, GpuWind};
use sylva_sim::collision::runtime::SelfCollisionParams;
use sylva_sim::dynamics::weber::{SolverKind, WeberModel};
use sylva_sim::dynamics::{DynamicsModel, ModelKind, ModelParts, Refused};
use sylva_sim::fluid::{FluidGrid, FluidParams, FluidWind, WindBall, FLUID_PHASES};
use sylva_sim::{Calm, GustingWind, Motion, SphereCollider};

mod build;
pub mod file;
#[cfg(test)]
use build::check_forest_size;
pub use build::Scene;
mod sim_lod;
pub use sim_lod::SimLod;

impl SceneArgs {
    /// The renderer's settings these arguments ask for.
    pub fn renderer_options(&self) -> sylva_render::RendererOptions {
        sylva_render::RendererOptions {
            samples: self.msaa,
            ..sylva_render::RendererOptions::default()
        }
    }
}

/// The species of the default forest, planted in turn.
pub const DEFAULT_SPECIES: [&str; 2] = ["quaking_aspen", "lombardy_poplar"];
/// Trees in the default forest.
pub const DEFAULT_TREES: u32 = 9;
/// Most trees a scene may hold.
pub const MAX_TREES: u64 = 10_000;
/// Strongest wind a scene may have (m/s), from the command line or the viewer's keys.
pub const MAX_WIND_SPEED: f64 = 60.0;

/// The storm key's wind [m/s]: Manavi's ~80 mph (Figure 4), where branches break.
pub const STORM_SPEED: f32 = 36.0;

/// What to grow.
#[derive(Args, Clone, Debug)]
pub struct SceneArgs {
    /// A spec file (Arbaro XML, Sapling preset, tree-gen parameters, Helios XML, Sylva spec),
    /// an L-system file (.lsys, its one tree), or a scene file (.toml: trees placed where it
    /// says, grown from species, L-systems or space colonization, its wind, camera and
    /// colliders; its `[wind]` wins over --wind, --wind-heading and --wind-model, --camera over
    /// its `[camera]`).
    /// Without one, a built-in species (`--species`) or the default forest.
    pub spec: Option<PathBuf>,
    /// The species: one of the file's species, or a built-in one (quaking_aspen,
    /// lombardy_poplar, eastern_cottonwood, black_tupelo, sassafras) without a file.
    #[arg(long)]
    pub species: Option<String>,
    /// Number of trees (default: 9 for the default forest, 1 for a spec or species).
    #[arg(long, allow_hyphen_values = true, value_parser = |s: &str| crate::args::count_in(s, 1, MAX_TREES))]
    pub trees: Option<u64>,
    /// Seed of the trees' random streams (tree k uses seed + k).
    #[arg(long, default_value = "13", allow_hyphen_values = true, value_parser = crate::args::seed)]
    pub seed: u64,
    /// Wind speed [m/s].
    #[arg(long, default_value = "6", allow_hyphen_values = true,
          value_parser = |s: &str| crate::args::number_in(s, 0.0, MAX_WIND_SPEED))]
    pub wind: f64,
    /// `fluid`: a stable-fluids wind grid over the forest, entering at its border, that trunks
    /// block and wind balls stir; `uniform`: the same gusting wind everywhere.
    #[arg(long, value_enum, default_value = "fluid")]
    pub wind_model: WindModel,
    /// Cells of the fluid wind grid, east × north × up.
    #[arg(long, default_value = "96x96x16", allow_hyphen_values = true, value_parser = crate::args::parse_cells)]
    pub wind_grid: [usize; 3],
    /// Show the fluid wind as arrows on a horizontal slice at half the tallest tree's height
    /// (the viewer's W key toggles it, Page Up / Page Down move the slice).
    #[arg(long)]
    pub wind_field: bool,
    /// Vorticity confinement strength of the fluid wind (0: none; about 0.1 to 0.5 keeps
    /// eddies spinning for gustier wind).
    #[arg(long, default_value = "0", allow_hyphen_values = true, value_parser = |s: &str| crate::args::number_in(s, 0.0, sylva_sim::fluid::FluidGrid::MAX_VORTICITY as f64))]
    pub vorticity: f64,
    /// Step the fluid wind as Vulkan compute shaders on the rendering device (the dedicated
    /// compute queue when it has one) instead of on the CPU; trees stepped on the CPU read the
    /// field back after each frame's wind steps (with `--dynamics-gpu` the trees read it on the
    /// device: it is downloaded only while the wind arrows are shown).
    #[arg(long)]
    pub wind_gpu: bool,
    /// Step Oliapuram & Kumar's model (`--model oliapuram`) as Vulkan compute shaders on the
    /// rendering device (the dedicated compute queue when it has one) instead of on the CPU.
    /// With `--wind-gpu` too, the dynamics read the wind's field on the device. The frames are
    /// drawn from the pose on the device: nothing of it is read back.
    #[arg(long)]
    pub dynamics_gpu: bool,
    /// `on`: trees small on screen step less often, by a longer step (Weber's model: every
    /// 2nd frame at the middle level of detail, every 4th at the coarsest and outside the
    /// view), and a fluid grid on the CPU steps every 2nd frame, or every 4th when it has over
    /// 524,288 cells and the wind crosses at most a cell in four frames; `off`: every tree and
    /// the fluid step every frame.
    #[arg(long, value_enum, default_value = "on")]
    pub sim_lod: SimLod,
    /// The compass heading the wind blows towards, in degrees clockwise from north (90: towards
    /// the east; the viewer's arrow keys turn it).
    #[arg(long, default_value_t = DEFAULT_WIND_HEADING, allow_hyphen_values = true,
          value_parser = |s: &str| crate::args::number_in(s, 0.0, 360.0).map(|h| h as f32))]
    pub wind_heading: f32,
    /// Where the camera starts: AZIMUTH,ELEVATION,DISTANCE, its bearing from the scene's centre
    /// in degrees clockwise from north, its height above the horizon in degrees and its
    /// distance in metres (0: far enough to frame the scene). Without it, the camera frames the
    /// scene from the south-east, a little above.
    #[arg(long, allow_hyphen_values = true, value_parser = crate::args::parse_camera)]
    pub camera: Option<crate::args::CameraPlace>,
    /// Leave out the sphere the viewer's right-drag pushes through the trees (the viewer's X
    /// key brings it back).
    #[arg(long)]
    pub no_collider: bool,
    /// Samples per pixel (multisample anti-aliasing, the leaves' cut-out edges smoothed by
    /// alpha-to-coverage): 1 (off), 2, 4 or 8, as the device allows. Default: 4 on a hardware
    /// GPU, 1 on a software one such as lavapipe (where every sample costs CPU time).
    #[arg(long, value_name = "SAMPLES", allow_hyphen_values = true,
          value_parser = |s: &str| crate::args::count_in(s, 1, 8).map(|n| n as u32))]
    pub msaa: Option<u32>,
    #[command(flatten)]
    pub grow: crate::trees::GrowArgs,
    #[command(flatten)]
    pub model: crate::args::ModelArgs,
}

/// The wind's compass heading unless `--wind-heading` says otherwise \[degrees clockwise from
/// north, towards\].
pub const DEFAULT_WIND_HEADING: f32 = 120.0;

/// The world's heading of a wind blowing towards compass heading `compass` (degrees clockwise
/// from north): the angle from east (+x) towards south (+z) that `GustingWind` and the fluid's
/// border take, in degrees (the world's axes: x east, y up, z south).
pub fn world_heading(compass: f32) -> f32 {
    (compass - 90.0).rem_euclid(360.0)
}

/// The compass heading (degrees clockwise from north) of a wind whose world heading is
/// `world` degrees (see [`world_heading`]).
pub fn compass_heading(world: f32) -> f32 {
    (world + 90.0).rem_euclid(360.0)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum WindModel {
    Fluid,
    Uniform,
}

/// The simulation thread's job system size in the viewer: every core but the one the render
/// thread keeps busy, at least one.
pub fn viewer_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .saturating_sub(1)
        .max(1)
}

/// Nearest the framing camera comes to the scene's centre \[m\].
pub const MIN_FRAMING_DISTANCE: f32 = 0.25;

/// The viewer's camera: orbits a target.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OrbitCamera {
    pub target: Vec3,
    pub yaw: f32,
    pub pitch: f32,
    pub distance: f32,
    pub aspect: f32,
    pub height_px: f32,
}

impl OrbitCamera {
    pub fn camera(&self) -> Camera {
        Camera::orbit(
            self.target,
            self.yaw,
            self.pitch,
            self.distance,
            self.aspect,
            self.height_px,
        )
    }

    pub fn orbit(&mut self, dx: f32, dy: f32) {
        self.yaw -= dx * 0.006;
        self.pitch = (self.pitch + dy * 0.006).clamp(-0.2, 1.5);
    }

    /// Moves the target in the view plane by a drag of (dx, dy) pixels.
    pub fn pan(&mut self, dx: f32, dy: f32) {
        let c = self.camera();
        let forward = (c.target - c.eye).normalize();
        let right = forward.cross(Vec3::Y).normalize_or(Vec3::X);
        let up = right.cross(forward);
        let metres_per_px = self.distance / c.pixels_per_radian();
        self.target += (-right * dx + up * dy) * metres_per_px;
        self.target.y = self.target.y.max(0.0);
    }

    pub fn zoom(&mut self, steps: f32) {
        self.distance = (self.distance * 0.9f32.powf(steps)).clamp(0.5, 5000.0);
    }
}

/// What the user asks the simulation to do.
#[derive(Clone, Debug)]
pub enum SimCommand {
    TogglePause,
    /// Advance one frame while paused.
    Step,
    Reset,
    /// Turn the wind by this many degrees.
    TurnWind(f32),
    /// Change the wind speed by this many m/s.
    ChangeWind(f32),
    /// A storm ([`STORM_SPEED`]), or back to the speed before it.
    Storm,
    /// Add a wind ball (fluid wind) at this point, blowing along the wind's heading.
    AddWindBall(Vec3),
    /// Remove the wind balls.
    ClearWindBalls,
    /// Show or hide the wind field's arrows.
    ToggleWindField,
    /// Move the wind field's slice up (positive) or down by this many cell layers.
    MoveWindField(i32),
    SwitchSolver,
    /// Rebuild the trees with the next dynamics model (`ModelKind::next`), wind kept.
    CycleModel,
    /// Self-collision on (the command line's k, or 14) or off.
    ToggleSelfCollision,
    /// Detach [`DROP_LEAVES_SHARE`] of the forest's leaves, which fall (Chen 2011 Fig. 6.4,
    /// `DynamicsModel::drop_leaves`).
    DropLeaves,
    /// Move the user's sphere collider to this centre.
    MoveSphere(Vec3),
    /// Take the user's sphere out of the scene (simulation and picture), or put it back where
    /// it was.
    ToggleSphere,
    /// Write the scene (trees, wind, camera, colliders) as a scene file into the current
    /// folder ([`SAVED_SCENE`], or a free name beside it).
    SaveScene,
    Camera(Camera),
    /// Set the level-of-detail bias (see `LodSettings::bias`).
    LodBias(f32),
    /// Replace the scene by this spec file's.
    Load(PathBuf),
    Quit,
}

/// The file the save-scene key writes, in the current folder (`-1`, `-2`, ... added when it
/// exists).
pub const SAVED_SCENE: &str = "sylva-scene.toml";

/// The share of the forest's leaves the drop-leaves key detaches at each press (at least one).
pub const DROP_LEAVES_SHARE: f32 = 0.02;

/// The largest level-of-detail bias the viewer may set.
pub const MAX_LOD_BIAS: f32 = 8.0;
/// Acceleration at a wind ball's centre [m/s²].
const WIND_BALL_ACCEL: f32 = 40.0;
/// Wind balls the viewer keeps; adding one more drops the oldest.
const MAX_WIND_BALLS: usize = 8;
/// Frames the overlay's per-phase means cover.
const RECENT_FRAMES: usize = 60;
/// The user's sphere collider's radius relative to the tallest tree.
const SPHERE_SIZE: f32 = 0.1;
/// At most this many steps per frame; beyond it the simulation runs slower than real time.
const MAX_STEPS_PER_FRAME: u32 = 4;

/// The simulation side of the viewer: owns the scene, steps it in real time and fills frames.
pub struct Driver {
    pub scene: Scene,
    jobs: JobSystem,
    timings: FrameTimings,
    fill_phase: sylva_engine::PhaseId,
    pub paused: bool,
    step_once: bool,
    wind_speed: f32,
    /// The speed the storm key goes back to.
    calm_speed: f32,
    wind_heading: f32,
    pub wind_model: WindModel,
    pub wind_grid: [usize; 3],
    /// Vorticity confinement strength of the fluid wind.
    pub vorticity: f32,
    /// The device the fluid wind is stepped on, if not the CPU.
    wind_gpu: Option<Arc<Gpu>>,
    /// The wind's failure already reported.
    wind_failure: Option<String>,
    /// The device Oliapuram & Kumar's model is stepped on, if not the CPU.
    dynamics_gpu: Option<Arc<Gpu>>,
    /// The model's failure already reported.
    dynamics_failure: Option<String>,
    /// The cell layer whose wind is drawn as arrows, when shown.
    pub field_layer: Option<usize>,
    seed: u64,
    trees: Option<u64>,
    pub camera: Camera,
    pub lod: LodSettings,
    index: FillIndex,
    /// Simulated time not yet stepped \[s\].
    backlog: f64,
    message: String,
    scene_id: u64,
    pub quit: bool,
    /// Print what each command did on stderr.
    pub log: bool,
    /// Weber's settings from the command line, applied to every Weber model the scene gets.
    weber_args: Option<crate::args::ModelArgs>,
    /// Self-collision as the command line or the self-collision key last set it: a model the
    /// model key builds takes it on.
    self_collision: Option<SelfCollisionParams>,
    /// Whether trees small on screen step less often (`--sim-lod`).
    pub sim_lod: SimLod,
    /// Scratch: each tree's level of detail, then its step period.
    levels: Vec<Option<u8>>,
    periods: Vec<u8>,
    /// Whether the user's sphere is in the scene (the first collider) or taken out.
    sphere: SphereState,
    /// Simulated against real time over the last moments (`advance`).
    pace: Pace,
}

/// Simulated and real seconds, each an exponential moving sum over about
/// [`Pace::WINDOW`] real seconds: their ratio is the simulation's speed against real time.
#[derive(Clone, Copy, Debug, Default)]
struct Pace {
    real: f64,
    simulated: f64,
}

impl Pace {
    /// Real seconds the sums reach back over, about.
    const WINDOW: f64 = 2.0;

    fn add(&mut self, real: f64, simulated: f64) {
        let keep = (-real / Self::WINDOW).exp();
        self.real = self.real * keep + real;
        self.simulated = self.simulated * keep + simulated;
    }

    /// Simulated seconds per real second, once a tenth of a second has been measured.
    fn ratio(&self) -> Option<f32> {
        (self.real > 0.1).then(|| (self.simulated / self.real) as f32)
    }
}

/// The user's sphere: in the scene as its first collider, or taken out (kept to be put back;
/// `None` until a scene gave it one).
#[derive(Clone, Debug)]
enum SphereState {
    Shown,
    Away(Option<SphereCollider>),
}

/// The viewer's timings for a model: its phases, the wind's and the fill.
fn driver_timings(model: &dyn DynamicsModel) -> (FrameTimings, sylva_engine::PhaseId) {
    let mut phases: Vec<&str> = model.phases().to_vec();
    phases.extend(FLUID_PHASES);
    phases.push("fill");
    let timings = FrameTimings::new(&phases);
    let fill_phase = timings.phase_id("fill").expect("just added");
    (timings, fill_phase)
}

impl Driver {
    pub fn new(
        scene: Scene,
        wind: f32,
        seed: u64,
        trees: Option<u64>,
        camera: Camera,
        threads: usize,
    ) -> Result<Driver> {
        let (timings, fill_phase) = driver_timings(&*scene.sim);
        let mut d = Driver {
            scene,
            jobs: JobSystem::new(threads)?,
            timings,
            fill_phase,
            paused: false,
            step_once: false,
            wind_speed: wind,
            calm_speed: wind,
            wind_heading: world_heading(DEFAULT_WIND_HEADING),
            wind_model: WindModel::Fluid,
            wind_grid: [96, 16, 96],
            vorticity: 0.0,
            wind_gpu: None,
            wind_failure: None,
            dynamics_gpu: None,
            dynamics_failure: None,
            field_layer: None,
            seed,
            trees,
            camera,
            lod: LodSettings::default(),
            index: FillIndex::default(),
            backlog: 0.0,
            message: String::new(),
            scene_id: 1,
            quit: false,
            log: false,
            weber_args: None,
            self_collision: None,
            sim_lod: SimLod::On,
            levels: Vec::new(),
            periods: Vec::new(),
            sphere: SphereState::Shown,
            pace: Pace::default(),
        };
        d.setup_scene()?;
        Ok(d)
    }

    /// Wind, the user's sphere and the fill index for a freshly built scene.
    fn setup_scene(&mut self) -> Result<()> {
        self.index = FillIndex::new(self.scene.sim.forest());
        self.index.set_palette(self.scene.sim.forest(), &self.scene.tree_looks);
        self.file_wind();
        self.apply_wind()?;
        let (c, r) = self.scene.bounds;
        let radius = (SPHERE_SIZE * self.scene.height).max(0.2);
        // Parked beside the forest, at crown height, until the user drags it in.
        let centre = Vec3::new(c.x + r + 2.0 * radius, 0.5 * self.scene.height, c.z);
        let sphere = SphereCollider::new(centre, radius, Motion::Static)?;
        match &mut self.sphere {
            SphereState::Shown => {
                self.scene.sim.add_collider(sphere);
            }
            SphereState::Away(parked) => *parked = Some(sphere),
        }
        // A scene file's own colliders, after the user's sphere.
        if let Some(f) = &self.scene.file {
            for c in f.colliders.clone() {
                self.scene.sim.add_collider(c);
            }
        }
        Ok(())
    }

    /// A scene file's wind (speed, heading, model), where it sets them: it wins over the
    /// command line's.
    fn file_wind(&mut self) {
        let Some(f) = &self.scene.file else { return };
        if let Some(v) = f.wind.speed {
            self.wind_speed = v;
            self.calm_speed = v;
        }
        if let Some(h) = f.wind.heading {
            self.wind_heading = world_heading(h);
        }
        if let Some(m) = f.wind.model {
            self.wind_model = m;
        }
    }

    /// Writes the scene as a scene file to `path`: its trees, the wind, the camera's bearing,
    /// elevation and distance from its target, and the colliders in the scene.
    pub fn save_scene(&self, path: &Path) -> Result<()> {
        let offset = self.camera.eye - self.camera.target;
        let flat = Vec3::new(offset.x, 0.0, offset.z).length();
        // A bearing b clockwise from north is the direction (sin b, 0, −cos b).
        let camera = crate::args::CameraPlace {
            azimuth: offset.x.atan2(-offset.z).to_degrees().rem_euclid(360.0),
            elevation: offset.y.atan2(flat).to_degrees().clamp(-89.0, 89.0),
            distance: offset.length(),
        };
        let wind = (self.wind_speed, compass_heading(self.wind_heading), self.wind_model);
        let text = file::to_text(&self.scene.trees, wind, camera, self.scene.sim.colliders())?;
        crate::output::write_file(path, text.as_bytes())
    }

    /// Takes the user's sphere out of the scene, or puts it back where it was.
    fn toggle_sphere(&mut self) -> String {
        match &mut self.sphere {
            SphereState::Shown => {
                let colliders = self.scene.sim.colliders_mut();
                let parked = (!colliders.is_empty()).then(|| colliders.remove(0));
                self.sphere = SphereState::Away(parked);
                "sphere removed".into()
            }
            SphereState::Away(parked) => {
                if let Some(s) = parked.take() {
                    self.scene.sim.colliders_mut().insert(0, s);
                }
                self.sphere = SphereState::Shown;
                "sphere back".into()
            }
        }
    }

    /// Applies the wind options of the command line.
    pub fn apply_args(&mut self, a: &SceneArgs) -> Result<()> {
        let wind_model = self
            .scene
            .file
            .as_ref()
            .and_then(|f| f.wind.model)
            .unwrap_or(a.wind_model);
        if a.vorticity > 0.0 && wind_model != WindModel::Fluid {
            bail!("vorticity confinement needs the fluid wind (--wind-model fluid)");
        }
        if a.wind_gpu && wind_model != WindModel::Fluid {
            bail!("only the fluid wind runs on the GPU (--wind-model fluid)");
        }
        if a.dynamics_gpu && a.model.model != ModelKind::Oliapuram {
            return Err(dynamics_gpu_model_error(a.model.model));
        }
        self.vorticity = a.vorticity as f32;
        self.wind_heading = world_heading(a.wind_heading);
        self.file_wind();
        if a.no_collider && matches!(self.sphere, SphereState::Shown) {
            self.toggle_sphere();
        }
        self.sim_lod = a.sim_lod;
        self.weber_args = Some(a.model);
        if self.scene.sim.kind() != a.model.model {
            self.switch_model(a.model.model)?;
        }
        self.configure_model();
        self.self_collision = a.model.self_collision();
        if let Some(p) = self.self_collision {
            self.scene.sim.set_self_collision(Some(p)).context("--self-collision")?;
        }
        self.set_wind_model(wind_model, a.wind_grid)?;
        if a.wind_field {
            self.show_field(true)?;
        }
        Ok(())
    }

    /// Weber's model, when the scene is simulated with it (its solver switch and settings).
    #[cfg(test)]
    pub fn weber(&self) -> Option<&WeberModel> {
        self.scene.sim.as_any().downcast_ref()
    }

    /// Applies the command line's model settings to the scene's model (Weber's solver, mass
    /// matrix and integrator when it is Weber's).
    fn configure_model(&mut self) {
        let Some(a) = self.weber_args else { return };
        if let Some(w) = self.scene.sim.as_any_mut().downcast_mut::<WeberModel>() {
            let p = a.params(*w.params());
            w.set_solver(p.solver);
            w.set_inertia(p.inertia);
            w.set_integrator(p.integrator);
        }
    }

    /// Replaces the dynamics model by a `kind` one built from the same trees, at rest in
    /// their generated shape, with the wind, the colliders and the clock kept. When the new
    /// model refuses, the current one stays as it was.
    pub fn switch_model(&mut self, kind: ModelKind) -> Result<String> {
        let sim = &mut self.scene.sim;
        let parts = ModelParts {
            forest: sim.forest().clone(),
            wind: sim.replace_wind(Box::new(Calm)),
            colliders: std::mem::take(sim.colliders_mut()),
            time: sim.time(),
        };
        let built = match (&self.dynamics_gpu, kind) {
            (Some(gpu), ModelKind::Oliapuram) => GpuOliapuram::with_default_params(gpu, parts)
                .map(|m| Box::new(m) as Box<dyn DynamicsModel>)
                .map_err(|r| (anyhow::Error::new(r.error), r.parts)),
            _ => kind.build_from(parts).map_err(|r| {
                let Refused { error, parts } = *r;
                (anyhow::Error::new(error), parts)
            }),
        };
        match built {
            Ok(next) => self.scene.sim = next,
            Err((error, parts)) => {
                sim.set_wind(parts.wind);
                *sim.colliders_mut() = parts.colliders;
                return Err(error.context(format!("cannot switch to the {kind} model")));
            }
        }
        self.configure_model();
        (self.timings, self.fill_phase) = driver_timings(&*self.scene.sim);
        let mut said = format!("model {kind}: rebuilt at rest, wind kept");
        if let Some(p) = self.self_collision {
            // Self-collision is on: the new model takes it if it can.
            if let Err(e) = self.scene.sim.set_self_collision(Some(p)) {
                said.push_str(&format!("; self-collision off ({e})"));
            }
        }
        Ok(said)
    }

    /// Turns self-collision (Chen 2011 §5) off, or on with the command line's k-DOP (14 by
    /// default); a model without it refuses, naming itself, and stays as it was.
    pub fn toggle_self_collision(&mut self) -> Result<String> {
        if self.scene.sim.self_collision().is_some() {
            self.scene.sim.set_self_collision(None)?;
            self.self_collision = None;
            return Ok("self-collision off".to_string());
        }
        let p = self.weber_args.and_then(|a| a.self_collision()).unwrap_or_default();
        self.scene.sim.set_self_collision(Some(p))?;
        self.self_collision = Some(p);
        Ok(format!("self-collision on ({})", p.k))
    }

    /// Shows the wind field's arrows (on the layer at half the tallest tree's height) or hides
    /// them; only the fluid wind has a field to show.
    pub fn show_field(&mut self, show: bool) -> Result<String> {
        if !show {
            self.field_layer = None;
            self.keep_wind_copy();
            return Ok("wind field hidden".to_string());
        }
        let Some(g) = self.scene.sim.wind().fluid() else {
            bail!("only the fluid wind has a field to show (--wind-model fluid)");
        };
        let h = g.cell_size().y;
        let top = g.cells()[1] - 1;
        // Half the height lies on a layer boundary when the grid is 1.6 heights tall in 16
        // layers: a rounding error must not pick the layer below.
        let layer = (((0.5 * self.scene.height - g.origin().y) / h + 1e-3).floor().max(0.0) as usize).min(top);
        self.field_layer = Some(layer);
        self.keep_wind_copy();
        Ok(field_message(layer, top + 1))
    }

    /// Has the GPU wind download its grid after every step while the arrows, drawn from the CPU
    /// copy, are shown; otherwise only what samples it on the CPU has it downloaded (not the
    /// GPU dynamics, which read it on the device).
    fn keep_wind_copy(&mut self) {
        let shown = self.field_layer.is_some();
        // Only a GPU wind has a copy to keep: the trees' model is left alone (asking it for
        // the wind to change waits for its last step) otherwise.
        if self.scene.sim.wind().as_any().is_some_and(|a| a.is::<GpuWind>()) {
            if let Some(w) = self
                .scene
                .sim
                .wind_mut()
                .as_any_mut()
                .and_then(|a| a.downcast_mut::<GpuWind>())
            {
                w.set_host_copy(shown);
            }
        }
    }

    /// What the device copied back to the CPU so far: the GPU dynamics' pose and state, and
    /// the GPU wind's grid (each `None` when not on the GPU).
    pub fn downloads(&self) -> (Option<Downloads>, Option<Downloads>) {
        let sim = &self.scene.sim;
        let pose = sim.as_any().downcast_ref::<GpuOliapuram>().map(|m| m.downloads());
        let wind = sim
            .wind()
            .as_any()
            .and_then(|a| a.downcast_ref::<GpuWind>())
            .map(|w| w.downloads());
        (pose, wind)
    }

    /// Steps the fluid wind on `gpu` from now on (every fluid wind made after this, too).
    pub fn use_gpu_wind(&mut self, gpu: Arc<Gpu>) -> Result<()> {
        if self.wind_model != WindModel::Fluid {
            bail!("only the fluid wind runs on the GPU (--wind-model fluid)");
        }
        self.message = format!("fluid wind stepped on {}", gpu.name());
        self.wind_gpu = Some(gpu);
        self.apply_wind()
    }

    /// Steps Oliapuram & Kumar's model on `gpu` from now on (every Oliapuram model made after
    /// this, too: a loaded scene's, the model key's); the scene's model must be Oliapuram's.
    pub fn use_gpu_dynamics(&mut self, gpu: Arc<Gpu>) -> Result<()> {
        let kind = self.scene.sim.kind();
        if kind != ModelKind::Oliapuram {
            return Err(dynamics_gpu_model_error(kind));
        }
        // The device is kept only when the model could be set up on it.
        let before = self.dynamics_gpu.replace(gpu);
        if let Err(e) = self.switch_model(kind) {
            self.dynamics_gpu = before;
            return Err(e);
        }
        self.message = self.dynamics_device().unwrap_or_default();
        if self.log {
            eprintln!("{}", self.message);
        }
        Ok(())
    }

    /// Where the trees are stepped and how the wind reaches them, when the model steps on the
    /// GPU: "dynamics on \<device\>, wind read on the device" (or "wind sampled on the CPU and
    /// uploaded", "uniform wind passed to the device"): the last step's wind source, the
    /// current wind's before the first step.
    pub fn dynamics_device(&self) -> Option<String> {
        let m = self.scene.sim.as_any().downcast_ref::<GpuOliapuram>()?;
        let source = m.wind_source().unwrap_or_else(|| m.next_wind_source());
        Some(format!("dynamics on {}, {}", m.gpu().name(), source.describe()))
    }

    /// Why the dynamics model stopped, if it failed (a model on the GPU on a device error).
    pub fn dynamics_failure(&self) -> Option<String> {
        self.scene.sim.failure()
    }

    /// Why the wind stopped, if it failed (the GPU wind on a device error).
    pub fn wind_failure(&self) -> Option<String> {
        self.scene.sim.wind().failure()
    }

    /// Shows a model failure once in the message line (and on stderr when logging).
    fn report_dynamics_failure(&mut self) {
        let failure = self.dynamics_failure();
        if failure.is_some() && failure != self.dynamics_failure {
            self.message = failure.clone().unwrap_or_default();
            if self.log {
                eprintln!("{}", self.message);
            }
        }
        self.dynamics_failure = failure;
    }

    /// Shows a wind failure once in the message line (and on stderr when logging).
    fn report_wind_failure(&mut self) {
        let failure = self.wind_failure();
        if failure.is_some() && failure != self.wind_failure {
            self.message = failure.clone().unwrap_or_default();
            if self.log {
                eprintln!("{}", self.message);
            }
        }
        self.wind_failure = failure;
    }

    /// Chooses the wind model and grid (takes effect on the next scene or [`apply_wind`]).
    ///
    /// [`apply_wind`]: Driver::apply_wind
    pub fn set_wind_model(&mut self, model: WindModel, grid: [usize; 3]) -> Result<()> {
        self.wind_model = model;
        self.wind_grid = grid;
        self.apply_wind()
    }

    /// The border wind of the fluid model: the wind speed along the heading.
    fn border_wind(&self) -> Vec3 {
        let h = self.wind_heading.to_radians();
        Vec3::new(h.cos(), 0.0, h.sin()) * self.wind_speed
    }

    /// A fresh wind: gusting and uniform, or a fluid grid over the forest (paper 004 §2) whose
    /// trunks are solid, filled with the border wind.
    fn apply_wind(&mut self) -> Result<()> {
        match self.wind_model {
            WindModel::Uniform => {
                let wind = GustingWind::new(self.wind_speed, self.wind_heading.to_radians(), 0.5, self.seed)?;
                self.scene.sim.set_wind(Box::new(wind));
            }
            WindModel::Fluid => {
                let (c, r) = self.scene.bounds;
                let half = 1.3 * r + 4.0;
                let top = (1.6 * self.scene.height).max(8.0);
                let mut p = FluidParams::over(
                    Vec3::new(c.x - half, 0.0, c.z - half),
                    Vec3::new(c.x + half, top, c.z + half),
                );
                p.cells = self.wind_grid;
                // One frame's step; `FluidWind::set_parts` lengthens it under the level of detail.
                p.dt = self.scene.sim.dt();
                p.border = self.border_wind();
                p.seed = self.seed;
                let mut grid = FluidGrid::new(p)?;
                grid.set_vorticity(self.vorticity)?;
                for a in 0..3 {
                    let w = grid.params().border[a];
                    grid.velocity_mut(a).iter_mut().for_each(|v| *v = w);
                }
                {
                    let sim = &self.scene.sim;
                    let seg = &sim.forest().seg;
                    let pose = sim.pose();
                    grid.voxelize_segments(
                        (0..seg.parent.len()).map(|i| (pose.base[i], pose.tip(i, seg.length[i]), seg.radius_base[i])),
                    );
                }
                match &self.wind_gpu {
                    Some(gpu) => {
                        let mut wind = GpuWind::new(gpu, grid).context("cannot set up the wind grid on the GPU")?;
                        wind.set_host_copy(self.field_layer.is_some());
                        self.scene.sim.set_wind(Box::new(wind));
                    }
                    None => {
                        let mut wind = FluidWind::new(grid);
                        // Under the level of detail a grid on the CPU steps every 2nd or 4th
                        // frame by that many frames' time, each step spread over them (see
                        // `sim_lod`); one on the GPU costs the simulation thread nothing and
                        // steps every frame.
                        wind.set_parts(self.fluid_parts(wind.grid()))?;
                        self.scene.sim.set_wind(Box::new(wind))
                    }
                }
            }
        }
        Ok(())
    }

    /// Turns or strengthens the wind: the fluid's border wind keeps the field it has made
    /// (§2.3's steering), the uniform wind is replaced.
    fn steer_wind(&mut self) -> Result<()> {
        let border = self.border_wind();
        match self.scene.sim.wind_mut().fluid_mut() {
            Some(g) => g.set_border(border)?,
            None => return self.apply_wind(),
        }
        // A stronger wind may need shorter fluid steps (from the next step on).
        let parts = self.scene.sim.wind().fluid().map(|g| self.fluid_parts(g));
        if let (Some(parts), Some(w)) = (parts, self.scene.sim.wind_mut().fluid_wind_mut()) {
            w.set_parts(parts)?;
        }
        Ok(())
    }

    /// Applies a user command. What it did becomes the overlay's message (and, with
    /// [`log`](Self::log) on, a line on stderr); a command that fails leaves the scene as it
    /// was and says why.
    pub fn handle(&mut self, cmd: SimCommand) {
        let result = (|| -> Result<Option<String>> {
            Ok(match cmd {
                SimCommand::TogglePause => {
                    self.paused = !self.paused;
                    Some(if self.paused { "paused" } else { "running" }.to_string())
                }
                SimCommand::Step => {
                    self.step_once = true;
                    Some("one step".to_string())
                }
                SimCommand::Reset => {
                    self.scene.sim.reset();
                    // The fluid restarts with the trees' clock.
                    if self.wind_model == WindModel::Fluid {
                        self.apply_wind()?;
                    }
                    Some("reset".to_string())
                }
                SimCommand::TurnWind(deg) => {
                    self.wind_heading = (self.wind_heading + deg).rem_euclid(360.0);
                    self.steer_wind()?;
                    Some(self.wind_text())
                }
                SimCommand::ChangeWind(ms) => {
                    // From the current speed, within what the command line allows.
                    self.wind_speed = (self.wind_speed + ms).clamp(0.0, MAX_WIND_SPEED as f32);
                    self.steer_wind()?;
                    Some(self.wind_text())
                }
                SimCommand::Storm => {
                    if self.wind_speed < STORM_SPEED {
                        self.calm_speed = self.wind_speed;
                        self.wind_speed = STORM_SPEED;
                    } else {
                        self.wind_speed = self.calm_speed.min(STORM_SPEED - 1.0);
                    }
                    self.steer_wind()?;
                    Some(self.wind_text())
                }
                SimCommand::AddWindBall(at) => {
                    let h = self.wind_heading.to_radians();
                    let Some(g) = self.scene.sim.wind_mut().fluid_mut() else {
                        bail!("wind balls need the fluid wind (--wind-model fluid)");
                    };
                    let cell = g.cell_size();
                    let ball = WindBall {
                        centre: at,
                        radius: 3.0 * cell.x.max(cell.z).max(0.5),
                        accel: Vec3::new(h.cos(), 0.0, h.sin()) * WIND_BALL_ACCEL,
                        jitter: 0.3,
                    };
                    if g.balls().len() >= MAX_WIND_BALLS {
                        let kept: Vec<WindBall> = g.balls()[1..].to_vec();
                        g.clear_balls();
                        for b in kept {
                            g.add_ball(b)?;
                        }
                    }
                    g.add_ball(ball)?;
                    Some(format!(
                        "wind ball at ({:.1}, {:.1}, {:.1}), {} in all",
                        at.x,
                        at.y,
                        at.z,
                        g.balls().len()
                    ))
                }
                SimCommand::ClearWindBalls => match self.scene.sim.wind_mut().fluid_mut() {
                    Some(g) => {
                        g.clear_balls();
                        Some("wind balls removed".to_string())
                    }
                    None => Some("no wind balls (uniform wind)".to_string()),
                },
                SimCommand::ToggleWindField => Some(self.show_field(self.field_layer.is_none())?),
                SimCommand::MoveWindField(by) => {
                    let (Some(layer), Some(g)) = (self.field_layer, self.scene.sim.wind().fluid()) else {
                        bail!("the wind field is hidden (W shows it)");
                    };
                    let layers = g.cells()[1];
                    let moved = (layer as i64 + by as i64).clamp(0, layers as i64 - 1) as usize;
                    self.field_layer = Some(moved);
                    Some(field_message(moved, layers))
                }
                SimCommand::SwitchSolver => {
                    let name = self.scene.sim.name();
                    let Some(w) = self.scene.sim.as_any_mut().downcast_mut::<WeberModel>() else {
                        bail!("the solver switch is Weber's (--model weber); the {name} model has none");
                    };
                    let next = match w.params().solver {
                        SolverKind::Direct => SolverKind::Cg,
                        SolverKind::Cg => SolverKind::Direct,
                    };
                    w.set_solver(next);
                    Some(format!("solver {}", next.name()))
                }
                SimCommand::CycleModel => Some(self.switch_model(self.scene.sim.kind().next())?),
                SimCommand::ToggleSelfCollision => Some(self.toggle_self_collision()?),
                SimCommand::DropLeaves => {
                    let sim = &mut self.scene.sim;
                    let want = ((sim.forest().leaf_count() as f32 * DROP_LEAVES_SHARE).ceil() as usize).max(1);
                    let n = sim.drop_leaves(want).context("drop leaves")?;
                    let s = sim.falling_leaves().unwrap_or_default();
                    Some(format!(
                        "{n} leaves dropped ({} falling, {} on the ground)",
                        s.falling, s.landed
                    ))
                }
                SimCommand::ToggleSphere => Some(self.toggle_sphere()),
                SimCommand::SaveScene => {
                    let path = crate::output::free_name(Path::new(SAVED_SCENE));
                    self.save_scene(&path)?;
                    Some(format!("scene saved to {}", path.display()))
                }
                SimCommand::MoveSphere(c) => {
                    if c.is_finite() && matches!(self.sphere, SphereState::Shown) {
                        if let Some(s) = self.scene.sim.colliders_mut().first_mut() {
                            s.center = c;
                        }
                    }
                    None
                }
                SimCommand::Camera(c) => {
                    self.camera = c;
                    None
                }
                SimCommand::LodBias(b) => {
                    self.lod.bias = if b.is_finite() { b.clamp(1.0, MAX_LOD_BIAS) } else { 1.0 };
                    None
                }
                SimCommand::Load(path) => Some(self.load(&path)?),
                SimCommand::Quit => {
                    self.quit = true;
                    None
                }
            })
        })();
        let message = match result {
            Ok(Some(m)) => m,
            Ok(None) => return,
            Err(e) => format!("{e:#}"),
        };
        if self.log {
            eprintln!("sylva view: {message}");
        }
        self.message = message;
    }

    fn wind_text(&self) -> String {
        format!(
            "wind {:.1} m/s towards {:.0}°",
            self.wind_speed,
            compass_heading(self.wind_heading)
        )
    }

    /// Replaces the scene by a spec file's; on failure the current scene stays.
    fn load(&mut self, path: &Path) -> Result<String> {
        let name = path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        // The new trees move by the model the viewer is showing, with the command line's settings.
        let scene = Scene::build_with(
            Some(path),
            None,
            // A scene file places its own trees.
            self.trees.filter(|_| !file::is_scene_file(path)),
            self.seed,
            crate::trees::GrowArgs::default(),
            self.scene.sim.kind(),
            &self.scene.sim.forest().material,
        )
        .with_context(|| format!("cannot load {name}"))?;
        let camera = scene.camera_at(None, self.camera.aspect, self.camera.height_px);
        self.scene = scene;
        if self.dynamics_gpu.is_some() && self.scene.sim.kind() == ModelKind::Oliapuram {
            // The loaded trees move on the device too.
            self.switch_model(ModelKind::Oliapuram)?;
        }
        self.camera = camera.camera();
        self.configure_model();
        (self.timings, self.fill_phase) = driver_timings(&*self.scene.sim);
        self.setup_scene()?;
        self.scene_id += 1;
        Ok(format!("loaded {name}"))
    }

    /// Steps the simulation by `real` seconds of real time (in whole steps, at most
    /// [`MAX_STEPS_PER_FRAME`]), or one step when a single step was asked for while paused.
    pub fn advance(&mut self, real: Duration) -> u32 {
        let dt = self.scene.sim.dt() as f64;
        let steps = if self.paused {
            self.backlog = 0.0;
            u32::from(std::mem::take(&mut self.step_once))
        } else {
            self.backlog += real.as_secs_f64();
            let n = (self.backlog / dt).floor() as u32;
            self.backlog -= n as f64 * dt;
            if n > MAX_STEPS_PER_FRAME {
                self.backlog = 0.0;
            }
            n.min(MAX_STEPS_PER_FRAME)
        };
        for _ in 0..steps {
            self.plan_sim_lod();
            self.scene.sim.step(&self.jobs, &self.timings);
        }
        if !self.paused {
            self.pace.add(real.as_secs_f64(), steps as f64 * dt);
        }
        self.report_wind_failure();
        self.report_dynamics_failure();
        steps
    }

    /// Steps exactly `n` steps (headless rendering), each closing a timing frame.
    pub fn step(&mut self, n: u32) {
        for _ in 0..n {
            let start = Instant::now();
            self.plan_sim_lod();
            self.scene.sim.step(&self.jobs, &self.timings);
            self.timings.end_frame(start.elapsed());
        }
        self.report_wind_failure();
        self.report_dynamics_failure();
    }

    /// One viewer frame when the simulation keeps real time at one step per frame: a step
    /// (the wind's, then the trees'), then the fill, closing one timing frame.
    pub fn step_and_fill(&mut self, frame: &mut RenderFrame) {
        let start = Instant::now();
        self.plan_sim_lod();
        self.scene.sim.step(&self.jobs, &self.timings);
        self.report_wind_failure();
        self.report_dynamics_failure();
        self.fill(frame, start, Duration::ZERO);
    }

    /// The simulation's phase timings: the model's phases, the wind's [`FLUID_PHASES`] and
    /// `fill`, one timing frame per filled frame.
    pub fn timings(&self) -> &FrameTimings {
        &self.timings
    }

    /// Fills `frame` for the current camera and closes the timing frame begun at `frame_start`.
    pub fn fill(&mut self, frame: &mut RenderFrame, frame_start: Instant, cache_wait: Duration) {
        let t0 = Instant::now();
        let sim = &self.scene.sim;
        let spheres: Vec<(Vec3, f32)> = sim.colliders().iter().map(|c| (c.center, c.radius)).collect();
        // A model on the GPU leaves its pose on the device, where the renderer draws it from:
        // nothing is read back (unless the model failed: then its last pose read back). A pose
        // on the CPU is copied into the frame and the renderer patches the instances from it
        // on the device (`RenderFrame::fill_patched_with_jobs`): the simulation thread writes
        // no instance while the camera and the levels of detail stay as they were.
        let on_device = sim
            .as_any()
            .downcast_ref::<GpuOliapuram>()
            .filter(|m| m.failure().is_none())
            .map(GpuOliapuram::device_pose);
        match on_device {
            Some(pose) => frame.fill_device_with_jobs(
                &self.jobs,
                sim.forest(),
                &self.index,
                pose,
                spheres,
                &self.camera,
                &self.lod,
            ),
            None => {
                let pose = sim.pose();
                frame.fill_patched_with_jobs(
                    &self.jobs,
                    sim.forest(),
                    &self.index,
                    &pose,
                    spheres,
                    &self.camera,
                    &self.lod,
                );
            }
        }
        // A failed GPU model's pose is read back (which may fail too): a device error is shown
        // in this frame's message line.
        self.report_dynamics_failure();
        let sim = &self.scene.sim;
        frame.looks.clone_from(&self.scene.looks);
        frame.wind_balls.clear();
        if let Some(g) = sim.wind().fluid() {
            frame
                .wind_balls
                .extend(g.balls().iter().map(|b| sylva_render::frame::SphereInstance {
                    center_radius: [b.centre.x, b.centre.y, b.centre.z, b.radius],
                }));
        }
        let field = match (self.field_layer, sim.wind().fluid()) {
            (Some(layer), Some(g)) => slice_arrows(g, layer.min(g.cells()[1] - 1), &mut frame.wind_arrows),
            _ => {
                frame.wind_arrows.clear();
                None
            }
        };
        frame.sun = Vec3::new(0.45, 0.8, 0.35).normalize();
        let forest = sim.forest();
        frame.info = SceneInfo {
            trees: forest.tree_count(),
            segments: forest.segment_count(),
            leaves: forest.leaf_count(),
            sim_time: sim.time(),
            realtime: (!self.paused).then(|| self.pace.ratio()).flatten(),
            paused: self.paused,
            model: sim.name().to_string(),
            settings: {
                let mut text = sim.settings();
                if let Some(t) = self.sim_lod_text() {
                    text.push_str(&format!("; {t}"));
                }
                if let Some(c) = sim.self_collision() {
                    let ms = (c.refit + c.traverse + c.respond + c.count).as_secs_f64() * 1e3;
                    if c.overflow {
                        text.push_str(&format!(
                            "; self-collision over its pair limit (none answered), {ms:.1} ms"
                        ));
                    } else if c.counted {
                        text.push_str(&format!(
                            "; self-collision {} pairs, {} pushed apart, {} interpenetrating, {ms:.1} ms",
                            c.candidates, c.responding, c.close_pairs
                        ));
                    } else {
                        text.push_str(&format!(
                            "; self-collision {} pairs, {} pushed apart, {ms:.1} ms",
                            c.candidates, c.responding
                        ));
                    }
                }
                text
            },
            breakage: sim.breakage(),
            falling: sim.falling_leaves().filter(|f| f.detached > 0),
            wind_speed: self.wind_speed,
            wind_heading_deg: compass_heading(self.wind_heading),
            title: self.scene.title.clone(),
            message: self.message.clone(),
            scene_id: self.scene_id,
            lod_bias: self.lod.bias,
            home: {
                let home = self.scene.default_camera(1.0, 1.0);
                (home.target, home.distance)
            },
            field,
        };
        self.timings.add(self.fill_phase, t0.elapsed());
        self.timings.end_frame(frame_start.elapsed());
        let t = &self.timings;
        let ms = |d: Duration| d.as_secs_f32() * 1e3;
        frame.timings = SimTimings {
            phases: t
                .phase_ids()
                .map(|id| {
                    let recent: Vec<Duration> = t.history(id).rev().take(RECENT_FRAMES).collect();
                    let mean = recent.iter().sum::<Duration>() / recent.len().max(1) as u32;
                    (t.phase_name(id).to_string(), ms(t.last(id)), ms(mean))
                })
                .collect(),
            history_ms: t.wall_history().rev().take(300).rev().map(ms).collect(),
            cache_wait_ms: ms(cache_wait),
        };
    }
}

/// The error for `--dynamics-gpu` with a model the GPU does not step.
pub fn dynamics_gpu_model_error(model: ModelKind) -> anyhow::Error {
    anyhow::anyhow!(
        "--dynamics-gpu steps only Oliapuram & Kumar's model on the GPU (got --model {model}; allowed with --dynamics-gpu: --model oliapuram)"
    )
}

/// What the viewer says when the wind field's layer (0-based) is shown.
fn field_message(layer: usize, layers: usize) -> String {
    format!("wind field on layer {} of {}", layer + 1, layers)
}

/// When logging, says what the device copied back to the CPU while the viewer ran.
fn log_downloads(driver: &Driver) {
    if let Some(line) = crate::headless::downloads_line(driver).filter(|_| driver.log) {
        eprintln!("sylva view: {line}");
    }
}

/// The simulation thread: applies commands, steps in real time, fills and publishes frames.
pub fn simulate(mut driver: Driver, mut writer: CacheWriter<RenderFrame>, commands: Receiver<SimCommand>) {
    let mut last = Instant::now();
    let dt = Duration::from_secs_f32(driver.scene.sim.dt());
    loop {
        let start = Instant::now();
        loop {
            match commands.try_recv() {
                Ok(cmd) => driver.handle(cmd),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return log_downloads(&driver),
            }
        }
        if driver.quit {
            return log_downloads(&driver);
        }
        let now = Instant::now();
        driver.advance(now - last);
        last = now;
        let waited = writer.take_wait_time();
        driver.fill(writer.frame(), start, waited);
        writer.publish();
        // No faster than one step per frame: a faster loop would only refill the same pose.
        if let Some(rest) = dt.checked_sub(start.elapsed()) {
            std::thread::sleep(rest);
        }
    }
}

#[cfg(test)]
mod tests;
