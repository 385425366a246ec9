//! `sylva spec`, `sylva grow` and `sylva export`: trees from spec files and growth algorithms.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use serde::Serialize;
use sylva_sim::spec::load::load_file;
use sylva_sim::spec::{text, WeberPennSpec};
use sylva_sim::stats::TreeStats;
use sylva_sim::weberpenn::{generate, GenOptions};
use sylva_sim::Skeleton;

use crate::export::{export, ExportOptions};
use crate::progress::Progress;

#[derive(Subcommand)]
pub enum SpecCommand {
    /// Grows a spec and prints what the tree is made of.
    Stats(SpecStatsArgs),
    /// Converts a spec from any supported format to Sylva's own text format.
    Convert(SpecConvertArgs),
}

#[derive(Args)]
pub struct SpecStatsArgs {
    /// A spec file: Arbaro XML, Blender Sapling preset, tree-gen parameters, Helios XML library
    /// or a Sylva spec.
    file: PathBuf,
    /// The species to pick from a library with several.
    #[arg(long)]
    species: Option<String>,
    /// Seed of the tree's random streams.
    #[arg(long, default_value = "13")]
    seed: u64,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct SpecConvertArgs {
    file: PathBuf,
    #[arg(long)]
    species: Option<String>,
    /// Where to write the Sylva spec.
    #[arg(long)]
    out: PathBuf,
    /// Replace the output file if it exists.
    #[arg(long)]
    force: bool,
}

#[derive(Args)]
pub struct ExportArgs {
    /// A spec file (any supported format).
    file: PathBuf,
    #[arg(long)]
    species: Option<String>,
    #[arg(long, default_value = "13")]
    seed: u64,
    /// The mesh to write: `.obj` (with a `.mtl`) or `.glb`.
    #[arg(long)]
    out: PathBuf,
    /// Sides of the branch tubes.
    #[arg(long, default_value_t = crate::export::DEFAULT_SIDES)]
    sides: u32,
    /// Leave the leaf cards out.
    #[arg(long)]
    no_leaves: bool,
    /// Replace the output file if it exists.
    #[arg(long)]
    force: bool,
}

/// What `spec stats` and `grow` print.
#[derive(Serialize)]
pub struct StatsReport {
    pub species: String,
    pub levels: u32,
    pub stems_per_level: Vec<u64>,
    pub clones_per_level: Vec<u64>,
    pub leaves: u64,
    pub segments: u64,
    pub height: f64,
    pub width: f64,
    pub seed: u64,
    pub generation_ms: f64,
}

impl StatsReport {
    pub fn new(stats: &TreeStats, seed: u64, generation_ms: f64) -> StatsReport {
        StatsReport {
            species: stats.species.clone(),
            levels: stats.levels,
            stems_per_level: stats.stems_per_level.clone(),
            clones_per_level: stats.clones_per_level.clone(),
            leaves: stats.leaves,
            segments: stats.segments,
            height: stats.height,
            width: stats.width,
            seed,
            generation_ms,
        }
    }

    pub fn print(&self, json: bool) -> Result<()> {
        if json {
            println!("{}", serde_json::to_string(self)?);
            return Ok(());
        }
        println!("species            {}", self.species);
        println!("levels             {}", self.levels);
        println!("stems per level    {:?}", self.stems_per_level);
        println!("clones per level   {:?}", self.clones_per_level);
        println!("leaves             {}", self.leaves);
        println!("segments           {}", self.segments);
        println!("height             {:.2} m", self.height);
        println!("width              {:.2} m", self.width);
        println!("seed               {}", self.seed);
        println!("generated in       {:.1} ms", self.generation_ms);
        Ok(())
    }
}

/// Loads `file` and picks a species.
pub fn load_spec(file: &Path, species: Option<&str>) -> Result<WeberPennSpec> {
    let library = load_file(file)?;
    Ok(library.pick(species)?.clone())
}

/// Grows a spec, showing progress for long runs.
pub fn grow_spec(spec: &WeberPennSpec, seed: u64) -> Result<(Skeleton, TreeStats, f64)> {
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
    Ok((grown.skeleton, grown.stats, ms))
}

pub fn run_spec(cmd: &SpecCommand) -> Result<()> {
    match cmd {
        SpecCommand::Stats(a) => {
            let spec = load_spec(&a.file, a.species.as_deref())?;
            if !a.json {
                for note in &spec.notes {
                    eprintln!("note: {note}");
                }
            }
            let (_, stats, ms) = grow_spec(&spec, a.seed)?;
            StatsReport::new(&stats, a.seed, ms).print(a.json)
        }
        SpecCommand::Convert(a) => {
            let spec = load_spec(&a.file, a.species.as_deref())?;
            check_output(&a.out, a.force, &[&a.file])?;
            write_atomically(&a.out, text::write(&spec).as_bytes())?;
            eprintln!("wrote {} ({} from {})", a.out.display(), spec.species, spec.origin);
            Ok(())
        }
    }
}

pub fn run_export(a: &ExportArgs) -> Result<()> {
    let spec = load_spec(&a.file, a.species.as_deref())?;
    check_output(&a.out, a.force, &[&a.file])?;
    let (skeleton, stats, _) = grow_spec(&spec, a.seed)?;
    let opts = ExportOptions {
        sides: a.sides,
        leaves: !a.no_leaves,
        ..ExportOptions::default()
    };
    let written = export(&skeleton, &a.out, &opts)?;
    eprintln!(
        "wrote {}: {} segments, {} leaves, {} vertices, {} triangles, {} bytes",
        a.out.display(),
        stats.segments,
        stats.leaves,
        written.vertices,
        written.triangles,
        written.bytes
    );
    Ok(())
}

/// Refuses to replace an existing file unless asked to, and to write over an input.
pub fn check_output(out: &Path, force: bool, inputs: &[&Path]) -> Result<()> {
    for input in inputs {
        if let (Ok(a), Ok(b)) = (out.canonicalize(), input.canonicalize()) {
            if a == b {
                bail!("--out {} is the input file; choose another name", out.display());
            }
        }
    }
    if out.exists() && !force {
        bail!("{} exists; pass --force to replace it", out.display());
    }
    Ok(())
}

/// Writes a file completely or not at all (a temporary file renamed into place).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .with_context(|| format!("{} is not a file name", path.display()))?;
    let tmp = dir.join(format!(".{}.{}.tmp", name.to_string_lossy(), std::process::id()));
    std::fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        anyhow::anyhow!("cannot write {}: {e}", path.display())
    })
}
