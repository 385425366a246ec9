//! `sylva bench collision-free`: Chen 2011's Table 6.1 on this machine: the collision-free
//! modelling pass (`sylva_sim::collision::modelling`) on test trees of the sizes of Chen's
//! treeA to treeE (597 to 14,615 stems, 749 to 16,607 leaves), with and without the voxel
//! grid of §3.3.

use anyhow::{bail, Result};
use clap::Args;
use serde::Serialize;
use sylva_sim::collision::kdop::DopK;
use sylva_sim::collision::modelling::{collision_free, CollisionFreeOptions, CollisionFreeReport};
use sylva_sim::testtree::test_tree;

use crate::interrupt;

/// Chen's trees (Table 6.1): name, stems, leaves.
pub const CHEN_TREES: [(&str, usize, usize); 5] = [
    ("treeA", 597, 749),
    ("treeB", 2721, 3320),
    ("treeC", 6470, 7821),
    ("treeD", 11134, 12850),
    ("treeE", 14615, 16607),
];

#[derive(Args, Debug)]
pub struct CollisionBenchArgs {
    /// Which of Chen's trees, comma-separated (treeA to treeE); all by default.
    #[arg(long, value_delimiter = ',')]
    trees: Vec<String>,
    /// The k-DOP of the first test (6, 14, 18 or 26).
    #[arg(long, default_value = "14", value_parser = |s: &str| s.parse::<DopK>().map_err(|e| e.to_string()))]
    k: DopK,
    /// Faces of the stems' prisms.
    #[arg(long, default_value = "6", allow_hyphen_values = true,
          value_parser = |s: &str| crate::args::count_in(s, 3, 32).map(|n| n as u32))]
    sides: u32,
    /// Time only the pass with the voxel grid (without it, the largest tree takes seconds).
    #[arg(long)]
    grid_only: bool,
    /// Seed of the test trees.
    #[arg(long, default_value = "1", allow_hyphen_values = true, value_parser = crate::args::seed)]
    seed: u64,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Pass {
    ms: f64,
    kdop_tests: u64,
    exact_tests: u64,
}

#[derive(Serialize)]
struct TreeRow {
    tree: &'static str,
    stems: usize,
    leaves: usize,
    removed_stems: usize,
    removed_leaves: usize,
    with_grid: Pass,
    without_grid: Option<Pass>,
}

#[derive(Serialize)]
struct Report {
    k: usize,
    sides: u32,
    seed: u64,
    trees: Vec<TreeRow>,
}

fn pass(r: &CollisionFreeReport) -> Pass {
    Pass {
        ms: r.ms,
        kdop_tests: r.kdop_tests,
        exact_tests: r.exact_tests,
    }
}

pub fn run(a: &CollisionBenchArgs) -> Result<()> {
    let picked: Vec<(&'static str, usize, usize)> = if a.trees.is_empty() {
        CHEN_TREES.to_vec()
    } else {
        let mut v = Vec::new();
        for name in &a.trees {
            match CHEN_TREES.iter().find(|t| t.0.eq_ignore_ascii_case(name.trim())) {
                Some(&t) => v.push(t),
                None => bail!("no tree `{name}`; allowed: treeA, treeB, treeC, treeD, treeE"),
            }
        }
        v
    };
    let mut rows = Vec::new();
    for (name, stems, leaves) in picked {
        interrupt::check()?;
        let skel = test_tree(a.seed, stems, leaves)?;
        let opts = |voxels| CollisionFreeOptions {
            sides: a.sides,
            k: a.k,
            voxels,
            ..CollisionFreeOptions::default()
        };
        let grid = collision_free(&skel, &opts(true))?;
        let without = if a.grid_only {
            None
        } else {
            interrupt::check()?;
            let flat = collision_free(&skel, &opts(false))?;
            if flat.skeleton != grid.skeleton {
                bail!("{name}: the pass without the grid removed other primitives than with it");
            }
            Some(pass(&flat.report))
        };
        rows.push(TreeRow {
            tree: name,
            stems: skel.segments.len(),
            leaves: skel.leaves.len(),
            removed_stems: grid.report.removed_stems,
            removed_leaves: grid.report.removed_leaves,
            with_grid: pass(&grid.report),
            without_grid: without,
        });
    }
    let report = Report {
        k: a.k.k(),
        sides: a.sides,
        seed: a.seed,
        trees: rows,
    };
    if a.json {
        println!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    println!(
        "collision-free modelling, {}-DOP, prisms of {} sides, one thread (ms; Chen's Table 6.1 gives seconds for BB + BL)",
        report.k, report.sides
    );
    println!(
        "{:<6} {:>6} {:>6} {:>9} {:>11} {:>8} {:>8}",
        "tree", "stems", "leaves", "grid ms", "no grid ms", "removed", "dropped"
    );
    for r in &report.trees {
        let flat = r
            .without_grid
            .as_ref()
            .map_or("-".to_string(), |p| format!("{:.1}", p.ms));
        println!(
            "{:<6} {:>6} {:>6} {:>9.1} {:>11} {:>8} {:>8}",
            r.tree, r.stems, r.leaves, r.with_grid.ms, flat, r.removed_stems, r.removed_leaves
        );
    }
    Ok(())
}
