//! `sylva spec`, `sylva grow` and `sylva export`: trees from spec files and growth algorithms.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use sylva_engine::JobSystem;
use sylva_sim::collision::modelling::CollisionFreeReport;
use sylva_sim::collision::primitives::{MAX_SIDES as MAX_PRISM_SIDES, MIN_SIDES as MIN_PRISM_SIDES};
use sylva_sim::dynamics::ModelKind;
use sylva_sim::spec::load::load_file;
use sylva_sim::spec::{text, WeberPennSpec};
use sylva_sim::stats::TreeStats;
use sylva_sim::weberpenn::{generate, GenOptions};
use sylva_sim::Skeleton;

use crate::args::{count_in, number_in, seed};
use crate::export::animate::{
    export_animated, AnimateOptions, DEFAULT_FPS, DEFAULT_MAX_JOINTS, MAX_FPS, MAX_JOINTS, MAX_SECONDS,
};
use crate::export::{
    export, export_lods, files_written, fit_triangles, require_glb, ExportLook, ExportOptions, MAX_LODS, MAX_SIDES,
    MIN_SIDES, MIN_TRIANGLE_BUDGET,
};
use crate::output;
use crate::progress::Progress;
use crate::scene::{world_heading, DEFAULT_WIND_HEADING, MAX_WIND_SPEED};

#[derive(Subcommand)]
pub enum SpecCommand {
    /// Grows a spec and prints what the tree is made of.
    Stats(SpecStatsArgs),
    /// Converts a spec from any supported format to Sylva's own text format.
    Convert(SpecConvertArgs),
}

/// A spec file and the species to take from it.
#[derive(Args)]
pub struct SpecSource {
    /// A spec file: Arbaro XML, Blender Sapling preset, tree-gen parameters, Helios XML library
    /// or a Sylva spec.
    pub file: PathBuf,
    /// The species to pick from a library with several.
    #[arg(long)]
    pub species: Option<String>,
    #[command(flatten)]
    pub grow: GrowArgs,
}

/// How a command that grows specs grows them: Weber 2008's fork rules (`nForkArea`,
/// `nForkPush`; no tool that writes Weber-Penn files has them, so an imported spec grows
/// without them unless asked; a Sylva spec says per level, and the built-in species have them
/// on) and Chen 2011's collision-free modelling (a Sylva spec's `CollisionFree`).
#[derive(Args, Clone, Copy, Debug, Default)]
pub struct GrowArgs {
    /// Apply Weber 2008's fork rules at full strength on every level (cross-section area kept
    /// across each fork, the stem pushed away from its branches), whatever the spec says.
    #[arg(long, conflicts_with = "no_fork_rules")]
    pub fork_rules: bool,
    /// Grow without Weber 2008's fork rules, whatever the spec says.
    #[arg(long)]
    pub no_fork_rules: bool,
    /// Make the tree collision-free as it grows (Chen 2011 §3.2): stems as prisms and leaves as
    /// blades, each tested against those built before it; a stem that intersects one is
    /// removed with its branch, a leaf dropped.
    #[arg(long)]
    pub collision_free: bool,
    /// Faces of the stems' prisms for `--collision-free`.
    #[arg(long, value_name = "SIDES", default_value_t = 6, requires = "collision_free", allow_hyphen_values = true,
          value_parser = |s: &str| count_in(s, MIN_PRISM_SIDES as u64, MAX_PRISM_SIDES as u64).map(|n| n as u32))]
    pub collision_sides: u32,
}

impl GrowArgs {
    /// The spec as this choice grows it.
    pub fn apply(&self, spec: &mut WeberPennSpec) {
        if self.fork_rules {
            spec.set_fork_rules(true);
        } else if self.no_fork_rules {
            spec.set_fork_rules(false);
        }
        if self.collision_free {
            spec.collision_free = Some(self.collision_sides as i64);
        }
    }
}

/// Where a command writes its file.
#[derive(Args, Clone, Debug)]
pub struct Output {
    /// The file to write.
    #[arg(long)]
    pub out: PathBuf,
    /// Replace the output file if it exists.
    #[arg(long)]
    pub force: bool,
}

impl Output {
    /// Checks, before any work starts, that the file may be written (see `output::check`).
    pub fn check(&self, inputs: &[&Path]) -> Result<()> {
        output::check(&self.out, self.force, inputs)
    }

    /// The same for a mesh: the extension must name a format, and an OBJ's .mtl is checked too.
    pub fn check_mesh(&self, inputs: &[&Path]) -> Result<()> {
        for file in files_written(&self.out)? {
            output::check(&file, self.force, inputs)?;
        }
        Ok(())
    }
}

#[derive(Args)]
pub struct SpecStatsArgs {
    #[command(flatten)]
    source: SpecSource,
    /// Seed of the tree's random streams.
    #[arg(long, default_value = "13", allow_hyphen_values = true, value_parser = seed)]
    seed: u64,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct SpecConvertArgs {
    #[command(flatten)]
    source: SpecSource,
    /// Where to write the Sylva spec.
    #[command(flatten)]
    output: Output,
}

#[derive(Args)]
pub struct ExportArgs {
    #[command(flatten)]
    source: SpecSource,
    /// Seed of the tree's random streams.
    #[arg(long, default_value = "13", allow_hyphen_values = true, value_parser = seed)]
    seed: u64,
    /// The mesh to write: `.obj` (with a `.mtl`) or `.glb`.
    #[command(flatten)]
    output: Output,
    /// Sides of the branch tubes.
    #[arg(long, default_value_t = crate::export::DEFAULT_SIDES, allow_hyphen_values = true,
          value_parser = |s: &str| count_in(s, MIN_SIDES as u64, MAX_SIDES as u64).map(|n| n as u32))]
    sides: u32,
    /// Leave the leaf cards out.
    #[arg(long)]
    no_leaves: bool,
    /// Bake Sylva's simulation of the tree in a gusting wind into the .glb as a skin animation
    /// ("wind") of this many seconds: joints on the segments carrying the largest subtrees (at
    /// most `--max-joints`), every vertex bound to its segment's joint, keyframes `--fps`.
    #[arg(long, value_name = "SECONDS", allow_hyphen_values = true,
          value_parser = |s: &str| number_in(s, 0.0, MAX_SECONDS))]
    animate: Option<f64>,
    /// Keyframes per second of `--animate`.
    #[arg(long, requires = "animate", default_value_t = DEFAULT_FPS, allow_hyphen_values = true,
          value_parser = |s: &str| count_in(s, 1, MAX_FPS as u64).map(|n| n as u32))]
    fps: u32,
    /// Mean wind speed of `--animate` \[m/s\], gusting ±50 %.
    #[arg(long, requires = "animate", default_value_t = 8.0, value_name = "M_PER_S", allow_hyphen_values = true,
          value_parser = |s: &str| number_in(s, 0.0, MAX_WIND_SPEED).map(|v| v as f32))]
    wind: f32,
    /// The compass heading the wind of `--animate` blows towards, in degrees clockwise from
    /// north (90: towards the east; Sylva's north is -z, east +x).
    #[arg(long, requires = "animate", default_value_t = DEFAULT_WIND_HEADING, allow_hyphen_values = true,
          value_parser = |s: &str| number_in(s, 0.0, 360.0).map(|h| h as f32))]
    wind_heading: f32,
    /// Joint budget of `--animate`: the skin has at most this many joints.
    #[arg(long, requires = "animate", default_value_t = DEFAULT_MAX_JOINTS, allow_hyphen_values = true,
          value_parser = |s: &str| count_in(s, 1, MAX_JOINTS as u64).map(|n| n as u32))]
    max_joints: u32,
    /// Fit the mesh into this many triangles: fewer tube sides first, then the thinnest stems
    /// left out, then one leaf in k (each enlarged to keep the foliage's area); says what it gave
    /// up.
    #[arg(long, value_name = "N", allow_hyphen_values = true,
          value_parser = |s: &str| count_in(s, MIN_TRIANGLE_BUDGET, u32::MAX as u64))]
    max_triangles: Option<u64>,
    /// Levels of detail in the .glb: meshes `tree_LOD0` (the full tree, or within
    /// `--max-triangles`) to `tree_LODn`, each fitted to a quarter of the triangles of the one
    /// before, listed by the finest in glTF's `MSFT_lod` extension.
    #[arg(long, value_name = "N", default_value_t = 1, conflicts_with = "animate", allow_hyphen_values = true,
          value_parser = |s: &str| count_in(s, 1, MAX_LODS as u64).map(|n| n as u32))]
    lods: u32,
    /// The dynamics model `--animate` simulates: `weber`, `oliapuram`, `verlet` or `chen`.
    #[arg(long, requires = "animate", default_value = "weber", value_parser = crate::args::model)]
    model: ModelKind,
}

/// Prints what `spec stats` and `grow` report: the tree's statistics, the seed and the time it
/// took to grow (the collision-free pass included, when it ran: what it removed and its own
/// time), as a table or one JSON object.
pub fn print_stats(
    stats: &TreeStats,
    seed: u64,
    generation_ms: f64,
    collision: Option<&CollisionFreeReport>,
    json: bool,
) -> Result<()> {
    if json {
        let mut report = serde_json::json!({
            "species": stats.species,
            "levels": stats.levels,
            "stems_per_level": stats.stems_per_level,
            "clones_per_level": stats.clones_per_level,
            "leaves": stats.leaves,
            "segments": stats.segments,
            "height": stats.height,
            "width": stats.width,
            "bbox_min": stats.bbox_min,
            "bbox_max": stats.bbox_max,
            "seed": seed,
            "generation_ms": generation_ms,
        });
        if let Some(c) = collision {
            report["removed_stems"] = c.removed_stems.into();
            report["removed_leaves"] = c.removed_leaves.into();
            report["intersecting_stems"] = c.intersecting_stems.into();
            report["intersecting_leaves"] = c.intersecting_leaves.into();
            report["bare_stems"] = c.bare_stems.into();
            report["collision_free_ms"] = c.ms.into();
        }
        println!("{report}");
        return Ok(());
    }
    println!("species            {}", stats.species);
    println!("levels             {}", stats.levels);
    println!("stems per level    {:?}", stats.stems_per_level);
    println!("clones per level   {:?}", stats.clones_per_level);
    println!("leaves             {}", stats.leaves);
    println!("segments           {}", stats.segments);
    println!("height             {:.2} m", stats.height);
    println!("width              {:.2} m", stats.width);
    let [a, b, c] = stats.bbox_min;
    let [x, y, z] = stats.bbox_max;
    println!("box (z up)         ({a:.2}, {b:.2}, {c:.2}) .. ({x:.2}, {y:.2}, {z:.2}) m");
    println!("seed               {seed}");
    if let Some(c) = collision {
        println!(
            "collision-free     removed {} segments ({} intersecting, {} bare) and {} leaves ({} intersecting) in {:.1} ms",
            c.removed_stems, c.intersecting_stems, c.bare_stems, c.removed_leaves, c.intersecting_leaves, c.ms
        );
    }
    println!("generated in       {generation_ms:.1} ms");
    Ok(())
}

/// Loads `file` and picks a species.
pub fn load_spec(file: &Path, species: Option<&str>) -> Result<WeberPennSpec> {
    crate::input::check_regular(file)?;
    let library = load_file(file)?;
    Ok(library.pick(species)?.clone())
}

/// Loads a command's spec, with the fork rules it asks for.
pub fn load_source(source: &SpecSource) -> Result<WeberPennSpec> {
    let mut spec = load_spec(&source.file, source.species.as_deref())?;
    source.grow.apply(&mut spec);
    Ok(spec)
}

/// A spec grown by a command.
pub struct GrownSpec {
    pub skeleton: Skeleton,
    pub stats: TreeStats,
    /// Time to grow it \[ms\].
    pub ms: f64,
    /// What the collision-free pass removed, when it ran.
    pub collision_free: Option<CollisionFreeReport>,
}

/// Grows a spec, showing progress for long runs.
pub fn grow_spec(spec: &WeberPennSpec, seed: u64) -> Result<GrownSpec> {
    let mut progress = Progress::new(format!("growing {}", spec.species));
    let start = Instant::now();
    let grown = generate(
        spec,
        &GenOptions {
            seed,
            ..GenOptions::default()
        },
        &mut |f| progress.update(f),
    )
    .with_context(|| format!("cannot grow {}", spec.species))?;
    let ms = start.elapsed().as_secs_f64() * 1e3;
    progress.finish();
    Ok(GrownSpec {
        skeleton: grown.skeleton,
        stats: grown.stats,
        ms,
        collision_free: grown.collision_free,
    })
}

pub fn run_spec(cmd: &SpecCommand) -> Result<()> {
    match cmd {
        SpecCommand::Stats(a) => {
            let spec = load_source(&a.source)?;
            if !a.json {
                for note in &spec.notes {
                    eprintln!("note: {note}");
                }
            }
            let g = grow_spec(&spec, a.seed)?;
            print_stats(&g.stats, a.seed, g.ms, g.collision_free.as_ref(), a.json)
        }
        SpecCommand::Convert(a) => {
            a.output.check(&[&a.source.file])?;
            let spec = load_source(&a.source)?;
            output::write_file(&a.output.out, text::write(&spec).as_bytes())?;
            eprintln!(
                "wrote {} ({} from {})",
                a.output.out.display(),
                spec.species,
                spec.origin
            );
            Ok(())
        }
    }
}

pub fn run_export(a: &ExportArgs) -> Result<()> {
    a.output.check_mesh(&[&a.source.file])?;
    // Refused before the tree grows.
    if a.animate.is_some() {
        require_glb(&a.output.out, "an animation")?;
    }
    if a.lods > 1 {
        require_glb(&a.output.out, "levels of detail")?;
    }
    let spec = load_source(&a.source)?;
    let GrownSpec { skeleton, stats, .. } = grow_spec(&spec, a.seed)?;
    let mut opts = ExportOptions {
        sides: a.sides,
        leaves: !a.no_leaves,
        look: ExportLook::of(&spec),
        ..ExportOptions::default()
    };
    if let Some(max) = a.max_triangles {
        let (fitted, given_up) = fit_triangles(&skeleton, &opts, max)?;
        eprintln!("--max-triangles {max}: {given_up}");
        opts = fitted;
    }
    if a.lods > 1 {
        let levels = export_lods(&skeleton, &a.output.out, &opts, a.lods)?;
        let bytes = levels.first().map_or(0, |l| l.0.bytes);
        for (k, (s, given_up)) in levels.iter().enumerate() {
            eprintln!(
                "  tree_LOD{k}: {} vertices, {} triangles ({given_up})",
                s.vertices, s.triangles
            );
        }
        eprintln!(
            "wrote {}: {} segments, {} leaves, {} levels of detail, {bytes} bytes",
            a.output.out.display(),
            stats.segments,
            stats.leaves,
            levels.len()
        );
        return Ok(());
    }
    if let Some(seconds) = a.animate {
        let anim = AnimateOptions {
            seconds,
            fps: a.fps,
            wind: a.wind,
            heading: world_heading(a.wind_heading),
            seed: a.seed,
            max_joints: a.max_joints,
            model: a.model,
        };
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let jobs = JobSystem::new(threads)?;
        let started = Instant::now();
        let written = export_animated(&skeleton, &a.output.out, &opts, &anim, &jobs)?;
        eprintln!(
            "wrote {}: {} segments, {} leaves, {} vertices, {} triangles, {} joints ({} for broken-off branches), {} keyframes over {seconds} s (step {:.4} s, {} model, wind {} m/s towards {}°), {} bytes, in {:.1} s",
            a.output.out.display(),
            stats.segments,
            stats.leaves,
            written.mesh.vertices,
            written.mesh.triangles,
            written.joints,
            written.broken,
            written.keyframes,
            written.dt,
            a.model,
            a.wind,
            a.wind_heading,
            written.mesh.bytes,
            started.elapsed().as_secs_f64()
        );
        return Ok(());
    }
    let written = export(&skeleton, &a.output.out, &opts)?;
    eprintln!(
        "wrote {}: {} segments, {} leaves, {} vertices, {} triangles, {} bytes",
        a.output.out.display(),
        stats.segments,
        stats.leaves,
        written.vertices,
        written.triangles,
        written.bytes
    );
    Ok(())
}
