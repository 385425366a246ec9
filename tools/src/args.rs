//! Command-line values shared by several commands: parsers that name what is wrong and what is
//! allowed, and the device choices of the commands that draw. This module depends on no other
//! module of the tool, so every command can use it without import cycles.

use anyhow::Result;
use clap::Args;
use glam::Vec3;
use sylva_render::{Gpu, GpuOptions};
use sylva_sim::colonize::Envelope;
use sylva_sim::dynamics::weber::{InertiaKind, IntegratorKind, SolverKind, WeberParams};
use sylva_sim::dynamics::ModelKind;
use sylva_sim::fluid::MAX_CELLS;
use sylva_sim::{DragLaw, Material};

/// A whole number in `lo..=hi`.
pub fn count_in(s: &str, lo: u64, hi: u64) -> Result<u64, String> {
    let v: i128 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a whole number; allowed {lo}..={hi}"))?;
    if v < lo as i128 || v > hi as i128 {
        return Err(format!("{v} is out of range; allowed {lo}..={hi}"));
    }
    Ok(v as u64)
}

/// A seed of random streams: a whole number in `0..=u64::MAX`.
pub fn seed(s: &str) -> Result<u64, String> {
    count_in(s, 0, u64::MAX)
}

/// A finite number in `lo..=hi`.
pub fn number_in(s: &str, lo: f64, hi: f64) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number; allowed {lo}..={hi}"))?;
    if !v.is_finite() {
        return Err(format!("`{s}` is not a finite number; allowed {lo}..={hi}"));
    }
    if v < lo || v > hi {
        return Err(format!("{v} is out of range; allowed a finite number in {lo}..={hi}"));
    }
    Ok(v)
}

/// Where `--camera` puts the camera: its bearing from the scene's centre (degrees clockwise
/// from north), its elevation above the horizon (degrees) and its distance (metres; 0 frames
/// the scene).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CameraPlace {
    pub azimuth: f32,
    pub elevation: f32,
    pub distance: f32,
}

/// Farthest camera `--camera` accepts \[m\].
pub const MAX_CAMERA_DISTANCE: f64 = 100_000.0;

/// Parses `AZIMUTH,ELEVATION,DISTANCE` (`--camera`): azimuth in 0..=360 degrees clockwise from
/// north, elevation in -89..=89 degrees, distance in 0..=100000 m (0 frames the scene).
pub fn parse_camera(s: &str) -> Result<CameraPlace, String> {
    let parts: Vec<&str> = s.split(',').collect();
    let [a, e, d] = parts[..] else {
        return Err(format!(
            "`{s}` is not a camera; allowed: AZIMUTH,ELEVATION,DISTANCE (degrees, degrees, metres), e.g. 145,10,0"
        ));
    };
    let part = |what: &str, v: &str, lo: f64, hi: f64| {
        number_in(v, lo, hi)
            .map(|x| x as f32)
            .map_err(|err| format!("{what} in `{s}`: {err}"))
    };
    Ok(CameraPlace {
        azimuth: part("azimuth (degrees clockwise from north)", a, 0.0, 360.0)?,
        elevation: part("elevation (degrees above the horizon)", e, -89.0, 89.0)?,
        distance: part("distance (metres; 0 frames the scene)", d, 0.0, MAX_CAMERA_DISTANCE)?,
    })
}

/// Parses `WxH` image sizes.
pub fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("`{s}` is not a size; write WIDTHxHEIGHT, e.g. 1280x720"))?;
    let side = |what: &str, v: &str| {
        count_in(v, 16, 8192)
            .map(|n| n as u32)
            .map_err(|e| format!("{what} in `{s}`: {e} pixels"))
    };
    Ok((side("width", w)?, side("height", h)?))
}

/// Parses `XxYxZ` (east × north × up) into cells along world x, y (up), z.
pub fn parse_cells(s: &str) -> Result<[usize; 3], String> {
    let parts: Vec<&str> = s.split(['x', 'X', '×']).collect();
    let allowed = "allowed: three whole numbers from 2 to 65536 as EASTxNORTHxUP, e.g. 256x256x16";
    if parts.len() != 3 {
        return Err(format!("`{s}` is not a grid size; {allowed}"));
    }
    let mut n = [0usize; 3];
    for (k, p) in parts.iter().enumerate() {
        n[k] = p
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|v| (2..=65536).contains(v))
            .ok_or_else(|| format!("`{p}` in `{s}` is not a valid cell count; {allowed}"))?;
    }
    let total = n.iter().map(|&v| v as u128).product::<u128>();
    if total > MAX_CELLS as u128 {
        return Err(format!("{s} is {total} cells; at most {MAX_CELLS} are allowed"));
    }
    Ok([n[0], n[2], n[1]])
}

/// Parses `shape:numbers`.
pub fn parse_envelope(s: &str) -> Result<Envelope, String> {
    let (shape, rest) = s
        .split_once(':')
        .ok_or_else(|| format!("`{s}`: expected SHAPE:NUMBERS, e.g. sphere:0,7,0,4"))?;
    let nums: Vec<f32> = rest
        .split(',')
        .map(|v| {
            v.trim()
                .parse::<f32>()
                .map_err(|_| format!("`{v}` in `{s}` is not a number; allowed: finite numbers"))
        })
        .collect::<Result<_, _>>()?;
    if let Some(v) = nums.iter().find(|v| !v.is_finite()) {
        return Err(format!("`{s}`: {v} is not a finite number; allowed: finite numbers"));
    }
    let want = |n: usize| {
        if nums.len() == n {
            Ok(())
        } else {
            Err(format!("`{s}`: {shape} takes {n} numbers, got {}", nums.len()))
        }
    };
    let v3 = |i: usize| Vec3::new(nums[i], nums[i + 1], nums[i + 2]);
    match shape {
        "sphere" => want(4).map(|_| Envelope::Sphere {
            center: v3(0),
            radius: nums[3],
        }),
        "ellipsoid" => want(6).map(|_| Envelope::Ellipsoid {
            center: v3(0),
            radii: v3(3),
        }),
        "cone" => want(5).map(|_| Envelope::Cone {
            base: v3(0),
            radius: nums[3],
            height: nums[4],
        }),
        "cylinder" => want(5).map(|_| Envelope::Cylinder {
            base: v3(0),
            radius: nums[3],
            height: nums[4],
        }),
        other => Err(format!(
            "unknown envelope shape `{other}`; allowed: sphere, ellipsoid, cone, cylinder"
        )),
    }
}

/// Parses `X,Z` as a point on the ground.
pub fn parse_ground_point(s: &str) -> Result<Vec3, String> {
    let nums: Vec<f32> = s
        .split(',')
        .map(|v| {
            v.trim()
                .parse::<f32>()
                .map_err(|_| format!("`{v}` in `{s}` is not a number; allowed: X,Z, two finite numbers"))
        })
        .collect::<Result<_, _>>()?;
    match nums[..] {
        [x, z] if x.is_finite() && z.is_finite() => Ok(Vec3::new(x, 0.0, z)),
        _ => Err(format!("`{s}` is not a ground point; allowed: X,Z, two finite numbers")),
    }
}

/// Linear solver of Weber's Eq. 1, on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SolverArg {
    /// Exact O(n) elimination, tip to root.
    Direct,
    /// Weber's preconditioned conjugate gradient.
    Cg,
}

/// Mass matrix of Weber's Eq. 1, on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum InertiaArg {
    /// The exact mass matrix of the articulated tree (every segment coupled to its ancestors).
    Articulated,
    /// Weber's diagonal mass matrix (each segment's own entry only).
    Diagonal,
}

/// Time integrator of Weber's Eq. 1, on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum IntegratorArg {
    /// Weber's first-order semi-implicit step (linearised backward Euler).
    SemiImplicit,
    /// Newmark's average acceleration (trapezoidal rule): second order, keeps the energy of an
    /// undamped linear system.
    Newmark,
}

impl From<SolverArg> for SolverKind {
    fn from(a: SolverArg) -> Self {
        match a {
            SolverArg::Direct => SolverKind::Direct,
            SolverArg::Cg => SolverKind::Cg,
        }
    }
}

impl From<InertiaArg> for InertiaKind {
    fn from(a: InertiaArg) -> Self {
        match a {
            InertiaArg::Articulated => InertiaKind::Articulated,
            InertiaArg::Diagonal => InertiaKind::Diagonal,
        }
    }
}

impl From<IntegratorArg> for IntegratorKind {
    fn from(a: IntegratorArg) -> Self {
        match a {
            IntegratorArg::SemiImplicit => IntegratorKind::SemiImplicit,
            IntegratorArg::Newmark => IntegratorKind::Newmark,
        }
    }
}

/// The dynamics model named on the command line (`weber`, ...); an unknown name is refused
/// with the list of models.
pub fn model(s: &str) -> Result<ModelKind, String> {
    s.parse().map_err(|e: sylva_sim::SimError| e.to_string())
}

/// How the trees' dynamics are solved: the choices of every command that builds a simulation.
#[derive(Args, Clone, Copy, Debug)]
pub struct ModelArgs {
    /// The dynamics model: `weber` (Weber 2008's separable semi-implicit angular springs),
    /// `oliapuram` (Oliapuram & Kumar 2010's rigid segments, stepped level by level),
    /// `verlet` (Manavi 2007's particles and constraints, whose branches break) or `chen`
    /// (Chen 2011's stems turned by their forces root to tips, leaves as venation stems).
    #[arg(long, default_value = "weber", value_parser = model)]
    pub model: ModelKind,
    /// Linear solver for Weber's Eq. 1.
    #[arg(long, value_enum, default_value = "direct")]
    pub solver: SolverArg,
    /// Mass matrix of Eq. 1: the articulated tree's exact one, or Weber's diagonal one.
    #[arg(long, value_enum, default_value = "articulated")]
    pub inertia: InertiaArg,
    /// Time integrator of Eq. 1.
    #[arg(long, value_enum, default_value = "semi-implicit")]
    pub integrator: IntegratorArg,
    /// How the wind's drag grows with speed, in every model: `quadratic` (½·ρ·C_d·A·|u|·u on
    /// the air's velocity relative to the bark and leaves, leaves reconfiguring above 10 m/s)
    /// or `linear` (Weber's f = l·r·(d·w), equal to it at 10 m/s).
    #[arg(long, value_enum, default_value = "quadratic")]
    pub drag: DragArg,
    /// Self-collision (Chen 2011 §5) with a hierarchy of K-DOPs (6, 14, 18 or 26; 14 when K
    /// is left out): pairs of branches and leaves about to pass through each other are pushed
    /// apart (every model).
    #[arg(long, value_name = "K", num_args = 0..=1, default_missing_value = "14",
          value_parser = |s: &str| s.parse::<sylva_sim::collision::kdop::DopK>().map_err(|e| e.to_string()))]
    pub self_collision: Option<sylva_sim::collision::kdop::DopK>,
    /// Petiole strength of the leaves per unit leaf area [N/m²] (`Material::petiole_strength`):
    /// the wind's drag pressure that tears a leaf off (each leaf 0.5 to 1.5 times it), in
    /// every model; `inf`: the wind tears none (the D key still drops them).
    #[arg(long, default_value = "90", value_name = "N_PER_M2")]
    pub petiole_strength: f32,
}

/// `--drag`: the drag law of the trees' material (`sylva_sim::DragLaw`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DragArg {
    Linear,
    Quadratic,
}

impl From<DragArg> for DragLaw {
    fn from(a: DragArg) -> Self {
        match a {
            DragArg::Linear => DragLaw::Linear,
            DragArg::Quadratic => DragLaw::Quadratic,
        }
    }
}

impl ModelArgs {
    /// The default material with the command line's drag law.
    pub fn material(&self) -> Material {
        Material {
            drag_law: self.drag.into(),
            petiole_strength: self.petiole_strength,
            ..Material::default()
        }
    }

    /// `base` with these choices.
    /// Self-collision's parameters when `--self-collision` asks for it.
    pub fn self_collision(&self) -> Option<sylva_sim::collision::runtime::SelfCollisionParams> {
        self.self_collision
            .map(|k| sylva_sim::collision::runtime::SelfCollisionParams {
                k,
                ..Default::default()
            })
    }

    pub fn params(&self, base: WeberParams) -> WeberParams {
        WeberParams {
            solver: self.solver.into(),
            inertia: self.inertia.into(),
            integrator: self.integrator.into(),
            ..base
        }
    }
}

/// Device choices shared by the commands that draw.
#[derive(Args, Clone, Debug, Default)]
pub struct GpuArgs {
    /// Enable the Khronos validation layer and fail on any error it reports.
    #[arg(long)]
    pub validation: bool,
    /// Use the first device whose name contains this text.
    #[arg(long)]
    pub device: Option<String>,
}

impl GpuArgs {
    pub fn options(&self) -> GpuOptions {
        GpuOptions {
            validation: self.validation,
            device_name: self.device.clone(),
        }
    }
}

/// Fails when validation is on and reported errors.
pub fn check_validation(gpu: &Gpu) -> Result<()> {
    let errors = gpu.validation_errors();
    if errors > 0 {
        anyhow::bail!(
            "the Vulkan validation layer reported {errors} error(s); first: {}",
            gpu.validation_messages().first().map(String::as_str).unwrap_or("?")
        );
    }
    Ok(())
}
