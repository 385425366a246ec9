//! Grows a space-colonized tree and prints what came out.
//!
//! `cargo run --release -p sylva-sim --example colonize [POINTS_FILE]`: without a file, the
//! default crown (a 4 m sphere of 20,000 points, 7 m up) with roots; with a file, its points
//! (`x y z` per line) as the crown.

use std::time::Instant;

use glam::Vec3;
use sylva_sim::colonize::{colonize, parse_points, ColonizeParams, Envelope, RootParams};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut params = ColonizeParams::default();
    if let Some(path) = std::env::args().nth(1) {
        let text = std::fs::read_to_string(&path)?;
        let points = parse_points(&text, &path)?;
        params.points = points.len();
        params.crown = Envelope::Points(points);
    } else {
        params.roots = Some(RootParams {
            envelope: Envelope::Ellipsoid {
                center: Vec3::new(0.0, -1.5, 0.0),
                radii: Vec3::new(3.0, 1.4, 3.0),
            },
            points: 5_000,
        });
    }

    let t = Instant::now();
    let mut last = 0.0;
    let grown = colonize(&params, &mut |f| {
        if f >= last + 0.25 || f == 1.0 {
            println!("  {:.0} % of the points reached", 100.0 * f);
            last = f;
        }
    })?;
    let elapsed = t.elapsed();

    for (k, tree) in grown.trees.iter().enumerate() {
        println!(
            "tree {k}: {} segments, {} leaves, {:.2} m tall, trunk radius {:.3} m",
            tree.segments.len(),
            tree.leaves.len(),
            tree.height(),
            tree.segments[0].radius_base
        );
    }
    for (k, root) in grown.roots.iter().enumerate() {
        println!("roots {k}: {} segments", root.segments.len());
    }
    println!("crown: {:?}", grown.crown);
    if let Some(stats) = grown.root_stats {
        println!("roots: {stats:?}");
    }
    println!("grown in {:.1} ms", elapsed.as_secs_f64() * 1e3);
    Ok(())
}
