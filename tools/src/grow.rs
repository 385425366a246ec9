//! `sylva grow`: trees grown by algorithms rather than specs.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use glam::Vec3;
use sylva_sim::collision::modelling::{collision_free, CollisionFreeOptions, CollisionFreeReport};
use sylva_sim::collision::primitives::{MAX_SIDES, MIN_SIDES};
use sylva_sim::colonize::{self, ColonizeParams, Envelope, RootParams};
use sylva_sim::lsystem::{self, LSystem};
use sylva_sim::stats::TreeStats;
use sylva_sim::Skeleton;

use crate::args::{count_in, number_in, parse_envelope, parse_ground_point, seed};
use crate::export::{export_all, ExportOptions};
use crate::input::read_text;
use crate::progress::Progress;
use crate::trees::{print_stats, Output};

#[derive(Subcommand)]
pub enum GrowCommand {
    /// Space colonization (Runions et al. 2007) into an envelope of attraction points.
    Colonize(ColonizeArgs),
    /// Bracketed L-system (a file in Sylva's L-system format, or a preset).
    Lsystem(LsystemArgs),
}

/// Seed, mesh file and statistics format of a grown tree.
#[derive(Args)]
pub struct GrownOutput {
    /// Seed of the random streams.
    #[arg(long, default_value = "1", allow_hyphen_values = true, value_parser = seed)]
    seed: u64,
    /// The mesh to write: `.obj` (with a `.mtl`) or `.glb`.
    #[command(flatten)]
    output: Output,
    /// Print the statistics as one JSON object.
    #[arg(long)]
    json: bool,
    /// Make each tree collision-free (Chen 2011 §3.2): stems as prisms and leaves as blades,
    /// each tested against those built before it; a stem that intersects one is removed with
    /// its branch, a leaf dropped.
    #[arg(long)]
    collision_free: bool,
    /// Faces of the stems' prisms for `--collision-free`.
    #[arg(long, value_name = "SIDES", default_value_t = 6, requires = "collision_free", allow_hyphen_values = true,
          value_parser = |s: &str| count_in(s, MIN_SIDES as u64, MAX_SIDES as u64).map(|n| n as u32))]
    collision_sides: u32,
}

impl GrownOutput {
    /// The trees through the collision-free pass when asked for (what it removed, summed over
    /// the trees), else as grown.
    fn collision_free(&self, trees: &mut [Skeleton]) -> Result<Option<CollisionFreeReport>> {
        if !self.collision_free {
            return Ok(None);
        }
        let opts = CollisionFreeOptions {
            sides: self.collision_sides,
            ..CollisionFreeOptions::default()
        };
        let mut sum = CollisionFreeReport::default();
        for tree in trees {
            let done = collision_free(tree, &opts)?;
            *tree = done.skeleton;
            sum += done.report;
        }
        Ok(Some(sum))
    }
}

#[derive(Args)]
pub struct ColonizeArgs {
    /// The crown envelope; repeat for a union. `sphere:CX,CY,CZ,R`,
    /// `ellipsoid:CX,CY,CZ,RX,RY,RZ`, `cone:BX,BY,BZ,R,H` (apex up), `cylinder:BX,BY,BZ,R,H`.
    /// Default: sphere:0,7,0,4.
    #[arg(long = "envelope", allow_hyphen_values = true, value_parser = parse_envelope)]
    envelopes: Vec<Envelope>,
    /// Attraction points from a file (`x y z` per line) instead of an envelope.
    #[arg(long, conflicts_with = "envelopes")]
    points_file: Option<PathBuf>,
    /// Attraction points in the crown.
    #[arg(long, default_value = "20000", allow_hyphen_values = true, value_parser = |s: &str| count_in(s, 1, colonize::MAX_POINTS as u64))]
    points: u64,
    /// Growth distance D: the length of a new segment (m).
    #[arg(long, default_value = "0.15", allow_hyphen_values = true, value_parser = |s: &str| number_in(s, 1e-3, 100.0))]
    growth: f64,
    /// Influence distance: how far a point attracts a node (m).
    #[arg(long, default_value = "1.5", allow_hyphen_values = true, value_parser = |s: &str| number_in(s, 1e-3, 1000.0))]
    influence: f64,
    /// Kill distance: a point this close to a node is reached and removed (m).
    #[arg(long, default_value = "0.3", allow_hyphen_values = true, value_parser = |s: &str| number_in(s, 1e-3, 1000.0))]
    kill: f64,
    /// A trunk base on the ground at `X,Z`; repeat for several trunks. Default: 0,0.
    #[arg(long = "trunk", allow_hyphen_values = true, value_parser = parse_ground_point)]
    trunks: Vec<Vec3>,
    /// Root attraction points below ground (0 = no roots).
    #[arg(long, default_value = "0", allow_hyphen_values = true, value_parser = |s: &str| count_in(s, 0, colonize::MAX_POINTS as u64))]
    roots: u64,
    /// The root envelope (below ground), same forms as --envelope. Default:
    /// ellipsoid:0,-1.2,0,3,1.1,3.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_envelope)]
    root_envelope: Option<Envelope>,
    #[command(flatten)]
    grown: GrownOutput,
}

#[derive(Args)]
pub struct LsystemArgs {
    /// An L-system file.
    #[arg(conflicts_with = "preset", required_unless_present = "preset")]
    file: Option<PathBuf>,
    /// A built-in L-system: abop-1.24a .. abop-1.24f, oliapuram.
    #[arg(long)]
    preset: Option<String>,
    /// Rewriting steps (default: the L-system's own).
    #[arg(long, allow_hyphen_values = true, value_parser = |s: &str| count_in(s, 0, lsystem::MAX_ITERATIONS as u64))]
    iterations: Option<u64>,
    #[command(flatten)]
    grown: GrownOutput,
}

pub fn run(cmd: &GrowCommand) -> Result<()> {
    match cmd {
        GrowCommand::Colonize(a) => run_colonize(a),
        GrowCommand::Lsystem(a) => run_lsystem(a),
    }
}

fn run_colonize(a: &ColonizeArgs) -> Result<()> {
    let inputs: Vec<&std::path::Path> = a.points_file.iter().map(|f| f.as_path()).collect();
    a.grown.output.check_mesh(&inputs)?;
    let crown = if let Some(file) = &a.points_file {
        let text = read_text(file, colonize::MAX_POINTS_FILE_BYTES, "points file")?;
        Envelope::Points(colonize::parse_points(&text, &file.display().to_string())?)
    } else {
        match a.envelopes.len() {
            0 => Envelope::Sphere {
                center: Vec3::new(0.0, 7.0, 0.0),
                radius: 4.0,
            },
            1 => a.envelopes[0].clone(),
            _ => Envelope::Union(a.envelopes.clone()),
        }
    };
    let roots = (a.roots > 0).then(|| RootParams {
        envelope: a.root_envelope.clone().unwrap_or(Envelope::Ellipsoid {
            center: Vec3::new(0.0, -1.2, 0.0),
            radii: Vec3::new(3.0, 1.1, 3.0),
        }),
        points: a.roots as usize,
    });
    let params = ColonizeParams {
        crown,
        points: a.points as usize,
        growth_distance: a.growth as f32,
        influence_distance: a.influence as f32,
        kill_distance: a.kill as f32,
        trunks: if a.trunks.is_empty() {
            vec![Vec3::ZERO]
        } else {
            a.trunks.clone()
        },
        roots,
        seed: a.grown.seed,
        ..ColonizeParams::default()
    };
    let mut progress = Progress::new("colonizing");
    let start = Instant::now();
    let mut grown = colonize::colonize(&params, &mut |f| progress.update(f))?;
    progress.finish();
    let collision = a.grown.collision_free(&mut grown.trees)?;
    let ms = start.elapsed().as_secs_f64() * 1e3;
    let c = &grown.crown;
    eprintln!(
        "{} iterations, {} nodes, {} of {} points reached, stopped: {:?}",
        c.iterations, c.nodes, c.points_killed, c.points, c.stop
    );
    for w in &grown.warnings {
        eprintln!("warning: {w}");
    }
    let mut parts: Vec<&Skeleton> = grown.trees.iter().collect();
    parts.extend(grown.roots.iter());
    let mut stats = TreeStats::default();
    for (k, tree) in grown.trees.iter().enumerate() {
        let s = TreeStats::of_skeleton("colonized", tree);
        if k == 0 {
            stats = s;
        } else {
            merge_stats(&mut stats, &s);
        }
    }
    (stats.height, stats.width) = grove_extent(&grown.trees);
    report(&stats, &parts, &a.grown, ms, collision.as_ref())
}

/// Adds another trunk's statistics to a grove's.
fn merge_stats(into: &mut TreeStats, other: &TreeStats) {
    for (k, v) in other.stems_per_level.iter().enumerate() {
        if into.stems_per_level.len() <= k {
            into.stems_per_level.resize(k + 1, 0);
            into.clones_per_level.resize(k + 1, 0);
        }
        into.stems_per_level[k] += v;
    }
    into.levels = into.stems_per_level.len() as u32;
    into.leaves += other.leaves;
    into.segments += other.segments;
}

/// Height above the ground and largest horizontal extent of several skeletons together.
fn grove_extent(trees: &[Skeleton]) -> (f64, f64) {
    let (mut lo, mut hi) = (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN));
    for s in trees.iter().flat_map(|t| &t.segments) {
        lo = lo.min(s.base).min(s.tip);
        hi = hi.max(s.base).max(s.tip);
    }
    (hi.y.max(0.0) as f64, (hi.x - lo.x).max(hi.z - lo.z).max(0.0) as f64)
}

fn run_lsystem(a: &LsystemArgs) -> Result<()> {
    let inputs: Vec<&std::path::Path> = a.file.iter().map(|f| f.as_path()).collect();
    a.grown.output.check_mesh(&inputs)?;
    let ls = match (&a.file, &a.preset) {
        (Some(file), _) => {
            let text = read_text(file, lsystem::MAX_TEXT_BYTES as u64, "L-system file")?;
            LSystem::parse(&text, &file.display().to_string())?
        }
        (None, Some(name)) => match lsystem::preset(name) {
            Some(ls) => ls,
            None => bail!(
                "unknown L-system preset `{name}`; allowed: {}",
                lsystem::preset_names().join(", ")
            ),
        },
        (None, None) => bail!("give an L-system file or --preset NAME"),
    };
    let iterations = a.iterations.map_or(ls.iterations, |n| n as u32);
    let mut progress = Progress::new(format!("growing {}", ls.name));
    let start = Instant::now();
    let grown = lsystem::grow(&ls, iterations, a.grown.seed, &mut |f| progress.update(f))?;
    progress.finish();
    let mut trees = [grown.skeleton];
    let collision = a.grown.collision_free(&mut trees)?;
    let ms = start.elapsed().as_secs_f64() * 1e3;
    let stats = TreeStats::of_skeleton(&ls.name, &trees[0]);
    report(&stats, &[&trees[0]], &a.grown, ms, collision.as_ref())
}

/// Writes a grown tree's mesh and prints its statistics.
fn report(
    stats: &TreeStats,
    parts: &[&Skeleton],
    out: &GrownOutput,
    ms: f64,
    collision: Option<&CollisionFreeReport>,
) -> Result<()> {
    let written = export_all(parts, &out.output.out, &ExportOptions::default())?;
    print_stats(stats, out.seed, ms, collision, out.json)?;
    eprintln!(
        "wrote {}: {} vertices, {} triangles, {} bytes",
        out.output.out.display(),
        written.vertices,
        written.triangles,
        written.bytes
    );
    Ok(())
}
