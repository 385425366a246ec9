//! `sylva bench frame`: what one frame of the viewer's simulation thread costs, without drawing.
//!
//! The scene is built as the viewer builds it ([`Scene::build_with`], [`Driver::new`],
//! [`Driver::apply_args`]: the same trees, wind, collider sphere and camera), and every frame
//! does what the simulation thread does when it keeps real time at one step per frame: the
//! trees' step with the wind's step beside it (the fluid steps from the field the trees sample,
//! see `WindField::detach`), the fill of the render command cache's write side and the
//! publish that swaps it ([`Driver::step_and_fill`], [`CacheWriter::publish`](sylva_render::cache::CacheWriter::publish)). Nothing is
//! drawn, so no Vulkan device is needed.
//!
//! The state hash covers the trees' angles and velocities, the fluid's velocity and pressure
//! and the last frame's instances: the job system splits work by data, never by thread count,
//! so it is the same for any `--threads`.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use clap::Args;
use serde::Serialize;
use sylva_render::cache::command_cache;
use sylva_render::frame::RenderFrame;
use sylva_sim::fluid::FLUID_PHASES;

use crate::args::count_in;
use crate::interrupt;
use crate::progress::Progress;
use crate::scene::{viewer_threads, Driver, Scene, SceneArgs, SimLod, WindModel};

/// The viewer's default window, whose camera the fill culls and picks details for.
const WIDTH_PX: f32 = 1280.0;
const HEIGHT_PX: f32 = 720.0;

#[derive(Args, Debug)]
pub struct FrameBenchArgs {
    #[command(flatten)]
    scene: SceneArgs,
    /// Threads running jobs, the calling thread included (default: the viewer's, one fewer
    /// than the CPU's, at least 1).
    #[arg(long, allow_hyphen_values = true, value_parser = |s: &str| count_in(s, 1, sylva_engine::MAX_THREADS as u64))]
    threads: Option<u64>,
    /// Frames to time (one step of 1/60 s and one fill each).
    #[arg(long, default_value = "300", allow_hyphen_values = true, value_parser = |s: &str| count_in(s, 1, 1_000_000))]
    frames: u64,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

/// Milliseconds per frame, by phase. The wind's passes and the fill are wall time; the dynamics
/// model's phases (Weber's: populate, solve and kinematics) are work time summed over the
/// threads (they run inside per-tree jobs).
/// The fluid's step runs beside the trees' step, so the wind's passes overlap the tree phases
/// (a pass's wall time includes tree jobs its thread ran while it waited for its own), and the
/// phases need not add up to `total`.
#[derive(Serialize)]
struct FramePhases {
    wind_advect: f64,
    wind_forces: f64,
    wind_pressure: f64,
    wind_project: f64,
    /// The model's phases, by name.
    #[serde(flatten)]
    model: serde_json::Map<String, serde_json::Value>,
    /// The model's phases in the order its step runs them (for the table).
    #[serde(skip)]
    model_order: &'static [&'static str],
    fill: f64,
    /// Wall time of the whole frame: step, fill and publish.
    total: f64,
}

/// What the wind broke (`DynamicsModel::breakage`).
#[derive(Serialize)]
struct BreakageReport {
    broken: usize,
    uprooted: usize,
    debris: usize,
}

/// The simulation's level of detail in the last frame (`--sim-lod`).
#[derive(Serialize)]
struct SimLodReport {
    /// `on` or `off`.
    mode: &'static str,
    /// Trees stepping every frame, every 2nd, 4th and 8th (by that many steps).
    trees_by_period: std::collections::BTreeMap<String, usize>,
}

/// Wall time per frame over the timed frames \[ms\]. The first frame sets up the model's
/// per-job scratch and is usually the `max`; `p95` (the frame 95 % of frames are no slower than)
/// shows the spikes of the frames after it.
#[derive(Serialize)]
struct WallSpread {
    min: f64,
    median: f64,
    p95: f64,
    max: f64,
}

#[derive(Serialize)]
struct FrameReport {
    /// The dynamics model (`--model`).
    model: &'static str,
    scene: String,
    trees: u64,
    segments: u64,
    leaves: u64,
    wind_model: &'static str,
    /// EASTxNORTHxUP cells of the fluid wind (absent for the uniform wind).
    wind_grid: Option<String>,
    threads: u64,
    frames: u64,
    ms_per_frame: FramePhases,
    wall_ms: WallSpread,
    /// Trees drawn at each level of detail in the last frame (culled trees not counted).
    trees_drawn: [usize; 3],
    /// The step schedule in the last frame, for a model that keeps one (absent for a model
    /// that steps every tree every step).
    sim_lod: Option<SimLodReport>,
    /// Frames each step of the fluid wind takes and is spread over (its time step over the
    /// trees'; absent for the uniform wind): 2 or 4 under `--sim-lod on` on the CPU.
    fluid_step_frames: Option<u32>,
    /// Instances in the last frame's render commands, and their bytes.
    instances: u64,
    instance_bytes: u64,
    /// Bytes of the pose the last frame carries for the renderer's pose patch (a pose on the
    /// CPU: the renderer uploads it and fills in the instances from it on the device, and
    /// uploads the instances themselves only when they changed); 0 when the frame's
    /// instances carry the pose.
    pose_bytes: u64,
    /// What the wind broke by the last frame, for a model whose trees break (absent for one
    /// whose trees cannot): branches broken off, trees uprooted, broken pieces still simulated.
    breakage: Option<BreakageReport>,
    state_hash: String,
    finite: bool,
    setup_ms: f64,
}

pub fn run(a: &FrameBenchArgs) -> Result<()> {
    if a.scene.wind_gpu {
        bail!("bench frame times the CPU's frame and opens no device; --wind-gpu is not allowed here (allowed: --wind-model fluid|uniform)");
    }
    if a.scene.dynamics_gpu {
        bail!("bench frame times the CPU's frame and opens no device; --dynamics-gpu is not allowed here (allowed: bench sim --dynamics-gpu, bench render --dynamics-gpu)");
    }
    let setup = Instant::now();
    let s = &a.scene;
    let scene = Scene::from_args(s)?;
    let camera = scene.default_camera(WIDTH_PX / HEIGHT_PX, HEIGHT_PX).camera();
    let threads = a.threads.map_or_else(viewer_threads, |t| t as usize);
    let mut driver = Driver::new(scene, s.wind as f32, s.seed, s.trees, camera, threads)?;
    driver.apply_args(s)?;
    let (mut writer, reader) = command_cache(RenderFrame::default(), RenderFrame::default());
    let setup_ms = setup.elapsed().as_secs_f64() * 1e3;

    let mut walls = Vec::with_capacity(a.frames as usize);
    let stoppable = interrupt::Steps::begin();
    let mut progress = Progress::new("frames");
    for k in 0..a.frames {
        interrupt::check()?;
        progress.update_count(k, a.frames);
        let t0 = Instant::now();
        driver.step_and_fill(writer.frame());
        writer.publish();
        walls.push(t0.elapsed());
    }
    progress.finish();
    drop(stoppable);
    if let Some(failure) = driver.wind_failure().or_else(|| driver.dynamics_failure()) {
        bail!("{failure}");
    }
    // After the publish the frame just filled is the read side; the writer's is the one before.
    let last = {
        let r = reader.acquire();
        (
            r.instance_count() as u64,
            r.instance_bytes() as u64,
            frame_hash(&r),
            r.trees_drawn,
            r.host_pose.as_ref().map_or(0, |p| p.bytes() as u64),
        )
    };

    let timings = driver.timings();
    let frames = timings.frames().max(1) as f64;
    let ms = |name: &str| {
        timings
            .phase_id(name)
            .map_or(0.0, |id| timings.total(id).as_secs_f64() * 1e3 / frames)
    };
    let sim = &driver.scene.sim;
    debug_assert!(sim
        .phases()
        .iter()
        .chain(&FLUID_PHASES)
        .all(|p| timings.phase_id(p).is_some()));
    let total: Duration = walls.iter().sum();
    let mut sorted: Vec<f64> = walls.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    sorted.sort_by(f64::total_cmp);
    let forest = sim.forest();
    let mut hash = Fnv::new();
    hash.u64(sim.state_hash());
    hash.u64(sim.wind().fluid().map_or(0, |g| g.state_hash()));
    hash.u64(last.2);
    let report = FrameReport {
        model: sim.name(),
        scene: driver.scene.title.clone(),
        trees: forest.tree_count() as u64,
        segments: forest.segment_count() as u64,
        leaves: forest.leaf_count() as u64,
        wind_model: match driver.wind_model {
            WindModel::Fluid => "fluid",
            WindModel::Uniform => "uniform",
        },
        wind_grid: sim.wind().fluid().map(|g| {
            let c = g.cells();
            format!("{}x{}x{}", c[0], c[2], c[1])
        }),
        threads: threads as u64,
        frames: a.frames,
        ms_per_frame: FramePhases {
            wind_advect: ms(FLUID_PHASES[0]),
            wind_forces: ms(FLUID_PHASES[1]),
            wind_pressure: ms(FLUID_PHASES[2]),
            wind_project: ms(FLUID_PHASES[3]),
            model: sim.phases().iter().map(|&p| (p.to_string(), ms(p).into())).collect(),
            model_order: sim.phases(),
            fill: ms("fill"),
            total: total.as_secs_f64() * 1e3 / a.frames as f64,
        },
        wall_ms: WallSpread {
            min: sorted[0],
            median: sorted[sorted.len() / 2],
            p95: sorted[((sorted.len() - 1) as f64 * 0.95).round() as usize],
            max: sorted[sorted.len() - 1],
        },
        trees_drawn: last.3,
        sim_lod: driver.sim_lod_mix().map(|mix| SimLodReport {
            mode: match driver.sim_lod {
                SimLod::On => "on",
                SimLod::Off => "off",
            },
            trees_by_period: [1, 2, 4, 8].iter().zip(mix).map(|(p, n)| (p.to_string(), n)).collect(),
        }),
        fluid_step_frames: sim.wind().fluid().map(|g| (g.params().dt / sim.dt()).round() as u32),
        instances: last.0,
        instance_bytes: last.1,
        pose_bytes: last.4,
        breakage: sim.breakage().map(|b| BreakageReport {
            broken: b.broken,
            uprooted: b.uprooted,
            debris: b.debris,
        }),
        state_hash: format!("{:016x}", hash.0),
        finite: sim.finite(),
        setup_ms,
    };
    if a.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print_table(&report);
    }
    Ok(())
}

fn print_table(r: &FrameReport) {
    println!(
        "sylva bench frame: the viewer's simulation thread, one step and one fill per frame (model {})",
        r.model
    );
    println!(
        "  {}: {} tree(s), {} segments, {} leaves; {} wind{}; {} thread(s), {} frames",
        r.scene,
        r.trees,
        r.segments,
        r.leaves,
        r.wind_model,
        r.wind_grid
            .as_ref()
            .map(|g| format!(" on {g} cells"))
            .unwrap_or_default(),
        r.threads,
        r.frames
    );
    println!();
    println!("  {:<14} {:>10}", "phase", "ms/frame");
    let p = &r.ms_per_frame;
    let mut rows: Vec<(String, f64)> = vec![
        ("wind advect".into(), p.wind_advect),
        ("wind forces".into(), p.wind_forces),
        ("wind pressure".into(), p.wind_pressure),
        ("wind project".into(), p.wind_project),
    ];
    for name in p.model_order {
        rows.push((format!("{name} *"), p.model[*name].as_f64().unwrap_or(0.0)));
    }
    rows.push(("fill".into(), p.fill));
    for (name, v) in rows {
        println!("  {name:<14} {v:>10.3}");
    }
    println!(
        "  {:<14} {:>10.3}   (wall; min {:.3}, median {:.3}, 95th percentile {:.3}, max {:.3})",
        "total", p.total, r.wall_ms.min, r.wall_ms.median, r.wall_ms.p95, r.wall_ms.max
    );
    println!("  * work time summed over the threads; the rest is wall time");
    println!("  (the wind's passes run beside the trees' step: they overlap it, and need not add up)");
    println!();
    println!(
        "  trees drawn    {} near, {} middle, {} far (levels of detail)",
        r.trees_drawn[0], r.trees_drawn[1], r.trees_drawn[2]
    );
    if let Some(l) = &r.sim_lod {
        let by: Vec<String> = l
            .trees_by_period
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(p, n)| format!("{n} every {p}"))
            .collect();
        println!("  sim LOD        {}: trees stepping {} frame(s)", l.mode, by.join(", "));
    }
    if let Some(n) = r.fluid_step_frames {
        println!("  fluid wind     a step every {n} frame(s), spread over them");
    }
    println!(
        "  instances      {} ({:.1} MB)",
        r.instances,
        r.instance_bytes as f64 / 1e6
    );
    if r.pose_bytes > 0 {
        println!(
            "  pose patched   {:.1} MB a frame (the instances are uploaded when they change)",
            r.pose_bytes as f64 / 1e6
        );
    }
    if let Some(b) = &r.breakage {
        println!(
            "  breakage       {} broken, {} uprooted, {} debris",
            b.broken, b.uprooted, b.debris
        );
    }
    println!("  state hash     {}", r.state_hash);
    println!("  finite         {}", r.finite);
    println!("  setup          {:.0} ms", r.setup_ms);
}

/// FNV-1a over 64-bit words.
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn u64(&mut self, v: u64) {
        for byte in v.to_le_bytes() {
            self.0 ^= byte as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    fn f32s(&mut self, v: &[f32]) {
        v.iter().for_each(|x| self.u64(x.to_bits() as u64));
    }
    fn i16s(&mut self, v: &[i16]) {
        v.iter().for_each(|x| self.u64(*x as u16 as u64));
    }
}

/// Hash of every instance of a frame, in order, and of the pose they are patched from.
fn frame_hash(f: &RenderFrame) -> u64 {
    let mut h = Fnv::new();
    for list in &f.segments {
        h.u64(list.len() as u64);
        for s in list {
            h.f32s(&s.base_radius);
            h.i16s(&s.orient);
            h.f32s(&s.length_tip);
        }
    }
    for list in &f.leaves {
        h.u64(list.len() as u64);
        for l in list {
            h.f32s(&l.pos_length);
            h.i16s(&l.orient);
            h.f32s(&l.width_shade);
        }
    }
    for s in &f.spheres {
        h.f32s(&s.center_radius);
    }
    // The pose the instances are patched from, when they are templates.
    if let Some(p) = &f.host_pose {
        h.u64(p.segments as u64 | (p.leaves as u64) << 32);
        p.vec4s.iter().for_each(|v| h.f32s(v));
    }
    h.0
}
