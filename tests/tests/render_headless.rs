//! The renderer on a real Vulkan device (lavapipe on a machine without a GPU), with the Khronos
//! validation layer on: every test fails on a validation error, and fails (rather than
//! passing) when no device can be opened.
//!
//! Images are checked against geometry computed on the CPU: tree pixels (told apart by colour,
//! see `sylva_tests::pixels`) must lie inside the projected bounding box of the simulated
//! segments and leaves.

use std::sync::{Arc, Mutex, OnceLock};

use glam::Vec3;
use sylva_engine::{FrameTimings, JobSystem};
use sylva_render::frame::{Camera, FillIndex, LodSettings, RenderFrame};
use sylva_render::renderer::Output;
use sylva_render::{vk, DrawOptions, Gpu, GpuOptions, Renderer, RendererOptions, Rgba};
use sylva_sim::dynamics::weber::{WeberModel, WeberParams, PHASES};
use sylva_sim::scene::SpeciesForest;
use sylva_sim::{species, Material};
use sylva_tests::pixels::{classify, count, Class};

const W: u32 = 480;
const H: u32 = 360;

/// One device and renderer for the whole file (opening lavapipe with validation is slow);
/// tests take turns.
fn renderer() -> std::sync::MutexGuard<'static, Renderer> {
    static R: OnceLock<Mutex<Renderer>> = OnceLock::new();
    R.get_or_init(|| {
        let gpu = Gpu::new(
            &GpuOptions {
                validation: true,
                device_name: None,
            },
            None,
        )
        .unwrap_or_else(|e| panic!("no Vulkan device for the GPU tests (they must not pass without one): {e}"));
        let renderer = Renderer::new(Arc::new(gpu), &RendererOptions::default()).expect("renderer");
        Mutex::new(renderer)
    })
    .lock()
    .unwrap_or_else(|e| e.into_inner())
}

fn draw(r: &mut Renderer, frame: &RenderFrame, shadows: bool) -> Rgba {
    let options = DrawOptions {
        overlay: false,
        shadows,
        help: String::new(),
        gpu_field: None,
    };
    draw_options(r, frame, &options)
}

/// `frame` drawn with `options`, read back, with no validation error.
fn draw_options(r: &mut Renderer, frame: &RenderFrame, options: &DrawOptions) -> Rgba {
    let output = Output {
        extent: vk::Extent2D { width: W, height: H },
        present: None,
        readback: true,
    };
    let image = r.draw(frame, options, &output).expect("draw").expect("readback");
    let gpu = r.gpu();
    assert_eq!(
        gpu.validation_errors(),
        0,
        "validation errors: {:#?}",
        gpu.validation_messages()
    );
    image
}

/// A quaking aspen simulated for a second of gusting wind.
fn aspen() -> WeberModel {
    let specs = [species::builtin("quaking_aspen").unwrap()];
    let forest = SpeciesForest::new(&specs, 1, 13, &Material::default(), 1).unwrap();
    let mut sim = WeberModel::new(forest.forest, WeberParams::default()).unwrap();
    sim.set_wind(Box::new(sylva_sim::GustingWind::new(8.0, 0.3, 0.5, 1).unwrap()));
    let jobs = JobSystem::new(1).unwrap();
    let timings = FrameTimings::new(&PHASES);
    for _ in 0..60 {
        sim.step(&jobs, &timings);
    }
    sim
}

/// A camera 1.6 tree heights away, looking at the middle of the crown from a little above.
fn camera_for(sim: &WeberModel) -> Camera {
    let tree = &sim.forest().trees[0];
    let reach = tree.reach;
    Camera::orbit(
        tree.root + Vec3::new(0.0, 0.5 * reach, 0.0),
        0.4,
        0.15,
        1.6 * reach,
        W as f32 / H as f32,
        H as f32,
    )
}

fn frame_of(sim: &WeberModel, camera: &Camera) -> RenderFrame {
    let mut frame = RenderFrame::default();
    frame.fill(
        sim.forest(),
        &FillIndex::new(sim.forest()),
        &sim.pose(),
        [],
        camera,
        &LodSettings::default(),
    );
    frame.sun = Vec3::new(0.45, 0.8, 0.35).normalize();
    frame
}

/// The pixel rectangle covering every segment end and leaf of the simulated pose, projected
/// with the same camera, widened by `margin` pixels.
fn projected_box(sim: &WeberModel, camera: &Camera, margin: f32) -> (f32, f32, f32, f32) {
    let pose = sim.pose();
    let forest = sim.forest();
    let mut points: Vec<Vec3> = Vec::new();
    for i in 0..forest.segment_count() {
        let r = forest.seg.radius_base[i];
        for p in [pose.base[i], pose.tip(i, forest.seg.length[i])] {
            // The cylinder's surface reaches r beyond its axis.
            for d in [Vec3::X, Vec3::NEG_X, Vec3::Y, Vec3::NEG_Y, Vec3::Z, Vec3::NEG_Z] {
                points.push(p + d * r);
            }
        }
    }
    for (j, &p) in pose.leaf_pos.iter().enumerate() {
        // A leaf card reaches its length from the attachment point.
        let l = forest.leaf.length_m(j) * 1.01;
        for d in [
            Vec3::ZERO,
            Vec3::X,
            Vec3::NEG_X,
            Vec3::Y,
            Vec3::NEG_Y,
            Vec3::Z,
            Vec3::NEG_Z,
        ] {
            points.push(p + d * l);
        }
    }
    let (mut x0, mut y0, mut x1, mut y1) = (f32::MAX, f32::MAX, f32::MIN, f32::MIN);
    for p in points {
        let (x, y, _) = camera.project(p, W as f32).expect("the tree is in front of the camera");
        x0 = x0.min(x);
        y0 = y0.min(y);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    (x0 - margin, y0 - margin, x1 + margin, y1 + margin)
}

fn save_on_failure(name: &str, image: &Rgba) -> String {
    let path = std::env::temp_dir().join(format!("sylva-test-{name}.png"));
    let _ = std::fs::write(&path, image.to_png());
    path.display().to_string()
}

#[test]
fn a_known_tree_appears_where_its_segments_project() {
    let sim = aspen();
    let camera = camera_for(&sim);
    let frame = frame_of(&sim, &camera);
    assert!(frame.trees_drawn[0] == 1, "a near tree is drawn at full detail");
    let image = draw(&mut renderer(), &frame, false);
    let saved = save_on_failure("known-tree", &image);
    let (bx0, by0, bx1, by1) = projected_box(&sim, &camera, 2.0);
    let (mut inside, mut outside, mut bark, mut leaf) = (0usize, 0usize, 0usize, 0usize);
    let (mut leaf_x, mut leaf_y, mut bark_near_root) = (0.0f64, 0.0f64, 0usize);
    let (root_x, root_y, _) = camera.project(sim.forest().trees[0].root, W as f32).unwrap();
    for y in 0..H {
        for x in 0..W {
            let class = classify(image.pixel(x, y));
            if class == Class::Other {
                continue;
            }
            let (fx, fy) = (x as f32 + 0.5, y as f32 + 0.5);
            if fx >= bx0 && fx <= bx1 && fy >= by0 && fy <= by1 {
                inside += 1;
            } else {
                outside += 1;
            }
            match class {
                Class::Bark => {
                    bark += 1;
                    if (fx - root_x).abs() < 8.0 && (fy - root_y).abs() < 8.0 {
                        bark_near_root += 1;
                    }
                }
                Class::Leaf => {
                    leaf += 1;
                    leaf_x += fx as f64;
                    leaf_y += fy as f64;
                }
                Class::Other => {}
            }
        }
    }
    // Where the leaves should be: the mean of their projected attachment points.
    let pose = sim.pose();
    let projected: Vec<(f32, f32, f32)> = pose
        .leaf_pos
        .iter()
        .map(|&p| camera.project(p, W as f32).unwrap())
        .collect();
    let expect_x = projected.iter().map(|p| p.0 as f64).sum::<f64>() / projected.len() as f64;
    let expect_y = projected.iter().map(|p| p.1 as f64).sum::<f64>() / projected.len() as f64;
    drop(pose);
    let (leaf_x, leaf_y) = (leaf_x / leaf.max(1) as f64, leaf_y / leaf.max(1) as f64);
    eprintln!("leaf pixels centred at ({leaf_x:.0},{leaf_y:.0}), projected leaves at ({expect_x:.0},{expect_y:.0})");
    let box_area = (bx1 - bx0) * (by1 - by0);
    let fraction = inside as f32 / box_area;
    eprintln!(
        "box ({bx0:.0},{by0:.0})-({bx1:.0},{by1:.0}), {inside} tree pixels inside ({:.1}%), {outside} outside, \
         bark {bark}, leaf {leaf}; image {saved}",
        100.0 * fraction
    );
    assert_eq!(
        outside, 0,
        "tree-coloured pixels outside the projected box; image {saved}"
    );
    // The box is well filled by the crown and trunk, but not solid: light shows through the crown.
    assert!(
        (0.15..0.85).contains(&fraction),
        "tree pixels cover {:.1}% of the box; image {saved}",
        100.0 * fraction
    );
    assert!(leaf > 2000, "only {leaf} leaf pixels; image {saved}");
    assert!(bark > 100, "only {bark} bark pixels; image {saved}");
    // The trunk stands on its projected root, the crown where its leaves project (not
    // mirrored or upside down).
    assert!(
        bark_near_root > 20,
        "only {bark_near_root} bark pixels at the projected root; image {saved}"
    );
    let tolerance = 0.1 * (bx1 - bx0).max(by1 - by0) as f64;
    assert!(
        (leaf_x - expect_x).abs() < tolerance && (leaf_y - expect_y).abs() < tolerance,
        "leaf pixels centred at ({leaf_x:.0},{leaf_y:.0}), leaves project around ({expect_x:.0},{expect_y:.0}); image {saved}"
    );
    // The box itself sits inside the image, where the camera was aimed.
    assert!(
        bx0 > 0.0 && by0 > 0.0 && bx1 < W as f32 && by1 < H as f32,
        "camera framing"
    );
}

#[test]
fn an_empty_scene_has_no_tree_pixels() {
    let sim = aspen();
    let camera = camera_for(&sim);
    let mut frame = frame_of(&sim, &camera);
    frame.segments.iter_mut().for_each(Vec::clear);
    frame.leaves.iter_mut().for_each(Vec::clear);
    for shadows in [false, true] {
        let image = draw(&mut renderer(), &frame, shadows);
        let (bark, leaf) = count(&image, 0, 0, W, H);
        let saved = save_on_failure("empty", &image);
        assert_eq!((bark, leaf), (0, 0), "tree pixels in an empty scene; image {saved}");
        // Sky above, ground below the horizon.
        let top = image.pixel(W / 2, 2);
        let bottom = image.pixel(W / 2, H - 3);
        assert!(top[2] > top[0] && top[2] > 150, "sky is blue: {top:?}");
        assert!(bottom[0] >= bottom[2], "ground is not blue: {bottom:?}");
    }
}

#[test]
fn the_tree_casts_a_shadow_on_the_ground() {
    let sim = aspen();
    let camera = camera_for(&sim);
    let frame = frame_of(&sim, &camera);
    let mut r = renderer();
    let lit = draw(&mut r, &frame, false);
    let shaded = draw(&mut r, &frame, true);
    // Ground pixels (neither bark nor leaf in either image) that the shadow darkened.
    let mut darker = 0;
    for y in 0..H {
        for x in 0..W {
            let (a, b) = (lit.pixel(x, y), shaded.pixel(x, y));
            if classify(a) != Class::Other || classify(b) != Class::Other {
                continue;
            }
            let la = a[0] as u32 + a[1] as u32 + a[2] as u32;
            let lb = b[0] as u32 + b[1] as u32 + b[2] as u32;
            if lb * 10 < la * 8 {
                darker += 1;
            }
        }
    }
    let saved = save_on_failure("shadow", &shaded);
    assert!(darker > 1000, "only {darker} ground pixels in shadow; image {saved}");
}

#[test]
fn wind_arrows_are_drawn_on_their_slice() {
    use sylva_render::field::slice_arrows;
    use sylva_sim::fluid::{FluidGrid, FluidParams};
    let sim = aspen();
    let camera = camera_for(&sim);
    let mut frame = frame_of(&sim, &camera);
    frame.segments.iter_mut().for_each(Vec::clear);
    frame.leaves.iter_mut().for_each(Vec::clear);
    // A uniform wind along +x over the tree: every arrow at the top of the colour scale (red).
    let tree = &sim.forest().trees[0];
    let r = tree.reach;
    let mut p = FluidParams::over(tree.root - Vec3::new(r, 0.0, r), tree.root + Vec3::new(r, 1.5 * r, r));
    p.cells = [16, 6, 16];
    let mut grid = FluidGrid::new(p).unwrap();
    grid.velocity_mut(0).iter_mut().for_each(|u| *u = 5.0);
    let slice = slice_arrows(&grid, 2, &mut frame.wind_arrows).unwrap();
    assert_eq!(slice.arrows, 16 * 16);
    let mut r = renderer();
    let plain = {
        let mut f = frame.clone();
        f.wind_arrows.clear();
        draw(&mut r, &f, false)
    };
    let image = draw(&mut r, &frame, true);
    let saved = save_on_failure("wind-arrows", &image);
    let red = |p: [u8; 4]| p[0] > 200 && p[1] < 140 && p[2] < 120;
    // Every arrow end, projected: red pixels lie inside their box.
    let (mut x0, mut y0, mut x1, mut y1) = (f32::MAX, f32::MAX, f32::MIN, f32::MIN);
    for a in &frame.wind_arrows {
        let tail = Vec3::from_slice(&a.tail_width[..3]);
        let head = tail + Vec3::from_slice(&a.vector_speed[..3]);
        for p in [tail, head] {
            for d in [Vec3::X, Vec3::NEG_X, Vec3::Y, Vec3::NEG_Y, Vec3::Z, Vec3::NEG_Z] {
                let (x, y, _) = camera.project(p + d * 2.0 * a.tail_width[3], W as f32).unwrap();
                x0 = x0.min(x);
                y0 = y0.min(y);
                x1 = x1.max(x);
                y1 = y1.max(y);
            }
        }
    }
    let (mut inside, mut outside, mut before) = (0, 0, 0);
    for y in 0..H {
        for x in 0..W {
            before += red(plain.pixel(x, y)) as usize;
            if red(image.pixel(x, y)) {
                let within = (x as f32) >= x0 - 1.0
                    && (x as f32) <= x1 + 1.0
                    && (y as f32) >= y0 - 1.0
                    && (y as f32) <= y1 + 1.0;
                if within {
                    inside += 1;
                } else {
                    outside += 1;
                }
            }
        }
    }
    assert_eq!(before, 0, "red pixels without arrows");
    assert_eq!(
        outside, 0,
        "arrow pixels outside the arrows' box ({x0}..{x1}, {y0}..{y1}); image {saved}"
    );
    assert!(inside > 1500, "only {inside} arrow pixels; image {saved}");
}

/// The key help stays at the bottom when the overlay is hidden: with the overlay off, a frame
/// drawn with a help line differs from one without only in the bottom rows, and its top (where
/// the overlay's title and timings go) is the scene's.
#[test]
fn the_help_line_stays_when_the_overlay_is_hidden() {
    let sim = aspen();
    let camera = camera_for(&sim);
    let frame = frame_of(&sim, &camera);
    let mut r = renderer();
    let mut draw_with = |overlay: bool, help: &str| {
        let options = DrawOptions {
            overlay,
            shadows: false,
            help: help.to_string(),
            gpu_field: None,
        };
        draw_options(&mut r, &frame, &options)
    };
    let plain = draw_with(false, "");
    let help = draw_with(false, "H: help   Esc: quit");
    let shown = draw_with(true, "H: help   Esc: quit");
    let differ = |a: &Rgba, b: &Rgba, y0: u32, y1: u32| {
        (y0..y1)
            .flat_map(|y| (0..W).map(move |x| (x, y)))
            .filter(|&(x, y)| a.pixel(x, y) != b.pixel(x, y))
            .count()
    };
    let bottom = H - 30;
    assert!(
        differ(&plain, &help, bottom, H) > 50,
        "the help line is drawn with the overlay hidden"
    );
    assert_eq!(
        differ(&plain, &help, 0, bottom),
        0,
        "nothing else of the overlay is drawn"
    );
    assert!(
        differ(&help, &shown, 0, 60) > 50,
        "the overlay's title and timings are at the top when shown"
    );
    assert_eq!(
        differ(&help, &shown, bottom, H),
        0,
        "the help line is the same with the overlay shown"
    );
}

/// The overlay is drawn over the scene, not into it: with a tree so near that it fills the
/// picture, the overlay's text is where and as it is over an empty scene (with the scene's
/// depth test, the tree used to cover it). The text is the help line, fixed (the status lines'
/// figures change from draw to draw, and so does where they wrap).
#[test]
fn the_overlay_is_drawn_over_a_tree_in_front_of_it() {
    let sim = aspen();
    let tree = &sim.forest().trees[0];
    // Close to the crown: leaves and branches cover the picture.
    let camera = Camera::orbit(
        tree.root + Vec3::new(0.0, 0.6 * tree.reach, 0.0),
        0.4,
        0.15,
        0.25 * tree.reach,
        W as f32 / H as f32,
        H as f32,
    );
    let full = frame_of(&sim, &camera);
    let mut empty = full.clone();
    empty.segments.iter_mut().for_each(Vec::clear);
    empty.leaves.iter_mut().for_each(Vec::clear);
    let mut r = renderer();
    let help =
        "drag: orbit   wheel: zoom   space: pause   T: storm   M: model   O: overlay   P: screenshot   Esc: quit";
    let mut draw_with = |frame: &RenderFrame, text: bool| {
        let options = DrawOptions {
            overlay: false,
            shadows: false,
            help: if text { help.to_string() } else { String::new() },
            gpu_field: None,
        };
        draw_options(&mut r, frame, &options)
    };
    let (bare, text_bare) = (draw_with(&empty, false), draw_with(&empty, true));
    let (tree_only, text_tree) = (draw_with(&full, false), draw_with(&full, true));
    // The help's white text pixels over the empty scene, and of those, the ones the tree
    // covers when no text is drawn.
    let (mut text, mut covered, mut kept) = (0usize, 0usize, 0usize);
    for y in 2 * H / 3..H {
        for x in 0..W {
            let p = text_bare.pixel(x, y);
            if p[..3].iter().all(|&c| c >= 250) && bare.pixel(x, y)[..3].iter().any(|&c| c < 240) {
                text += 1;
                if tree_only.pixel(x, y) != bare.pixel(x, y) {
                    covered += 1;
                    // White still (the glyphs' edges blend with what lies behind them).
                    kept += text_tree.pixel(x, y)[..3].iter().all(|&c| c >= 200) as usize;
                }
            }
        }
    }
    let saved = save_on_failure("overlay-over-tree", &text_tree);
    assert!(text > 100, "the help's text: {text} white pixels");
    assert!(
        covered * 2 > text,
        "the tree lies behind most of the text: {covered} of {text}; image {saved}"
    );
    assert!(
        kept * 100 >= covered * 98,
        "{kept} of the {covered} text pixels in front of the tree stay white; image {saved}"
    );
}

/// Mean absolute difference per channel (RGB, 0..=255) between two pictures of one size, over
/// the pixels `mask` marks.
fn mean_difference(a: &Rgba, b: &Rgba, mask: &[bool]) -> f64 {
    assert_eq!((a.width, a.height), (b.width, b.height));
    let (mut sum, mut n) = (0u64, 0u64);
    for ((p, q), _) in a
        .pixels
        .chunks_exact(4)
        .zip(b.pixels.chunks_exact(4))
        .zip(mask)
        .filter(|(_, &m)| m)
    {
        sum += (0..3).map(|c| p[c].abs_diff(q[c]) as u64).sum::<u64>();
        n += 3;
    }
    sum as f64 / n.max(1) as f64
}

#[test]
fn multisampling_comes_closer_to_a_supersampled_picture() {
    // The reference: the same frame drawn at one sample per pixel at twice the size, each 2×2
    // block averaged (in sRGB, as a resolve of 8-bit sRGB samples does to within rounding).
    let sim = aspen();
    let frame = frame_of(&sim, &camera_for(&sim));
    let options = DrawOptions {
        overlay: false,
        ..DrawOptions::default()
    };
    let (single, big) = {
        let mut r = renderer();
        let single = draw_options(&mut r, &frame, &options);
        let output = Output {
            extent: vk::Extent2D {
                width: 2 * W,
                height: 2 * H,
            },
            present: None,
            readback: true,
        };
        let big = r.draw(&frame, &options, &output).expect("draw").expect("readback");
        assert_eq!(r.gpu().validation_errors(), 0, "{:#?}", r.gpu().validation_messages());
        (single, big)
    };
    // Edges: pixels whose 2×2 block in the big picture is not one colour (a channel spans
    // more than 32 levels), where anti-aliasing matters.
    let mut reference = single.clone();
    let mut edge = vec![false; (W * H) as usize];
    for y in 0..H {
        for x in 0..W {
            for c in 0..4 {
                let at = |dx: u32, dy: u32| big.pixel(2 * x + dx, 2 * y + dy)[c] as u32;
                let block = [at(0, 0), at(1, 0), at(0, 1), at(1, 1)];
                let mean = (block.iter().sum::<u32>() + 2) / 4;
                reference.pixels[4 * (y * W + x) as usize + c] = mean as u8;
                let spread = block.iter().max().unwrap() - block.iter().min().unwrap();
                edge[(y * W + x) as usize] |= c < 3 && spread > 32;
            }
        }
    }

    // Four samples per pixel, on its own device, validation on.
    let gpu = Gpu::new(
        &GpuOptions {
            validation: true,
            device_name: None,
        },
        None,
    )
    .expect("a Vulkan device");
    let mut multi_renderer = Renderer::new(
        Arc::new(gpu),
        &RendererOptions {
            samples: Some(4),
            ..RendererOptions::default()
        },
    )
    .expect("a renderer with 4 samples per pixel (lavapipe has them)");
    let multi = draw_options(&mut multi_renderer, &frame, &options);

    let edges = edge.iter().filter(|&&e| e).count();
    assert!(edges > 1000, "{edges} edge pixels");
    let (e1, e4) = (
        mean_difference(&single, &reference, &edge),
        mean_difference(&multi, &reference, &edge),
    );
    let all = vec![true; edge.len()];
    let (a1, a4) = (
        mean_difference(&single, &reference, &all),
        mean_difference(&multi, &reference, &all),
    );
    println!(
        "mean difference from the supersampled picture on its {edges} edge pixels: 1 sample {e1:.2}, 4 samples {e4:.2} (all pixels: {a1:.2}, {a4:.2})"
    );
    assert!(e4 < 0.85 * e1, "4 samples {e4:.2} vs 1 sample {e1:.2}");
    // The leaves' coverage never reaches the picture's alpha: it stays opaque.
    assert!(multi.pixels.chunks_exact(4).all(|p| p[3] == 255));
    // Nothing else moved: over the whole picture, no farther from the reference.
    assert!(a4 <= a1, "all pixels: 4 samples {a4:.2} vs 1 sample {a1:.2}");
}

/// Pixels showing the background inside the joint of a stem bent by `bend_deg` degrees, seen side-on
/// close up: the convex side's wedge between the two segments' ends, out to 0.9 of the radius
/// (inside the 8-sided cylinders' silhouette). Returns the widest run of missing pixels along
/// any arc round the joint, and the picture.
fn joint_gap(bend_deg: f32) -> (usize, Rgba) {
    use sylva_sim::dynamics::pose::Pose;
    use sylva_sim::skeleton::SkeletonSegment;
    use sylva_sim::{Forest, Skeleton, TreePlacement};
    let (r, bend) = (0.08f32, bend_deg.to_radians());
    let joint = Vec3::new(0.0, 1.0, 0.0);
    let skeleton = Skeleton {
        segments: vec![
            SkeletonSegment::cylinder(None, Vec3::ZERO, joint, r),
            SkeletonSegment::cylinder(Some(0), joint, joint + Vec3::new(bend.sin(), bend.cos(), 0.0), r),
        ],
        leaves: Vec::new(),
    };
    let placement = TreePlacement {
        skeleton: &skeleton,
        position: Vec3::ZERO,
    };
    let forest = Forest::build(&[placement], &Material::default()).unwrap();
    let pose = Pose::of_shape(&forest);
    // Side-on (from +z, the bend in the picture's plane), the joint filling a good part of it.
    let camera = Camera::orbit(joint, 0.0, 0.0, 0.5, W as f32 / H as f32, H as f32);
    let mut frame = RenderFrame::default();
    frame.fill(
        &forest,
        &FillIndex::new(&forest),
        &pose,
        [],
        &camera,
        &LodSettings::default(),
    );
    frame.sun = Vec3::new(0.3, 0.6, 0.75).normalize();
    let image = draw(&mut renderer(), &frame, false);
    // The same view without the stem: what shows through a gap.
    let empty = Forest::default();
    let mut frame = RenderFrame::default();
    frame.fill(
        &empty,
        &FillIndex::new(&empty),
        &Pose::default(),
        [],
        &camera,
        &LodSettings::default(),
    );
    frame.sun = Vec3::new(0.3, 0.6, 0.75).normalize();
    let background = draw(&mut renderer(), &frame, false);
    let behind = |x: u32, y: u32| {
        let (p, q) = (image.pixel(x, y), background.pixel(x, y));
        (0..3).all(|c| p[c].abs_diff(q[c]) <= 4)
    };
    // The segment turns towards +x, so the convex side is -x: the wedge runs from -x (the first
    // segment's end) round to the second segment's end.
    let mut widest = 0;
    for i in 1..=18 {
        let rho = 0.05 * i as f32 * r;
        let mut seen = std::collections::HashSet::new();
        let (mut run, mut missing) = (0, Vec::new());
        for k in 0..=400 {
            let phi = bend * k as f32 / 400.0;
            let p = joint + rho * Vec3::new(-phi.cos(), phi.sin(), 0.0);
            let (x, y, _) = camera.project(p, W as f32).expect("in front");
            let px = (x as u32, y as u32);
            if seen.insert(px) {
                if !behind(px.0, px.1) {
                    run = 0;
                } else {
                    run += 1;
                    missing.push(px);
                    widest = widest.max(run);
                }
            }
        }
    }
    (widest, image)
}

#[test]
fn stems_have_no_gap_at_a_bend() {
    for bend in [20.0, 40.0, 60.0] {
        let (widest, image) = joint_gap(bend);
        println!("bend {bend}°: widest gap {widest} px");
        assert!(
            widest <= 1,
            "a {bend}° bend leaves a gap {widest} px wide: {}",
            save_on_failure("bend", &image)
        );
    }
}

#[test]
fn wind_balls_are_drawn_where_they_are() {
    let sim = aspen();
    let camera = camera_for(&sim);
    let mut frame = frame_of(&sim, &camera);
    frame.segments.iter_mut().for_each(Vec::clear);
    frame.leaves.iter_mut().for_each(Vec::clear);
    let bare = draw(&mut renderer(), &frame, false);
    // A ball in front of the tree's crown, a tenth of the tree high.
    let tree = &sim.forest().trees[0];
    let centre = tree.root + Vec3::new(0.0, 0.5 * tree.reach, 0.0);
    let radius = 0.1 * tree.reach;
    frame.wind_balls = vec![sylva_render::frame::SphereInstance {
        center_radius: [centre.x, centre.y, centre.z, radius],
    }];
    let image = draw(&mut renderer(), &frame, false);
    let (cx, cy, _) = camera.project(centre, W as f32).unwrap();
    let (ex, _, _) = camera
        .project(centre + camera_right(&camera) * radius, W as f32)
        .unwrap();
    let r_px = (ex - cx).abs();
    assert!(r_px > 8.0, "the ball is {r_px} px across");
    let changed = |x: f32, y: f32| {
        let (p, q) = (image.pixel(x as u32, y as u32), bare.pixel(x as u32, y as u32));
        (0..3).any(|c| p[c].abs_diff(q[c]) > 8)
    };
    // Inside its outline the picture changes, and turns cyan (more blue and green than red);
    // well outside it nothing changes.
    for (dx, dy) in [(0.0, 0.0), (0.5, 0.0), (-0.5, 0.3), (0.0, -0.6)] {
        let (x, y) = (cx + dx * r_px, cy + dy * r_px);
        assert!(
            changed(x, y),
            "no ball at ({x}, {y}): {}",
            save_on_failure("wind-ball", &image)
        );
        let p = image.pixel(x as u32, y as u32);
        assert!(p[2] > p[0] && p[1] > p[0], "{p:?} at ({x}, {y}) is not cyan");
    }
    for (dx, dy) in [(1.5, 0.0), (0.0, 1.5), (-1.5, -1.0)] {
        let (x, y) = (cx + dx * r_px, cy + dy * r_px);
        assert!(
            !changed(x, y),
            "the ball reaches ({x}, {y}): {}",
            save_on_failure("wind-ball", &image)
        );
    }
}

/// The camera's right, in the world.
fn camera_right(camera: &Camera) -> Vec3 {
    (camera.target - camera.eye).cross(Vec3::Y).normalize()
}

/// Each tree is drawn in its species' look: the palette entry its instances carry picks its
/// leaf colour, bark colour and leaf outline.
#[test]
fn trees_are_drawn_in_their_species_look() {
    use sylva_render::frame::Look;
    let sim = aspen();
    let camera = camera_for(&sim);
    let forest = sim.forest();
    let draw_look = |look: Option<Look>| {
        let mut index = FillIndex::new(forest);
        if look.is_some() {
            index.set_palette(forest, &[1]);
        }
        let mut frame = RenderFrame::default();
        frame.fill(forest, &index, &sim.pose(), [], &camera, &LodSettings::default());
        frame.sun = Vec3::new(0.45, 0.8, 0.35).normalize();
        frame.looks = vec![Look::default()];
        frame.looks.extend(look);
        draw(&mut renderer(), &frame, false)
    };
    let plain = draw_look(None);
    let blue_leaves = Look {
        leaf: [0.04, 0.06, 0.60],
        bark: [0.60, 0.60, 0.60],
        shape: 0,
    };
    let tinted = draw_look(Some(blue_leaves));
    // Pixels that were leaf-green are now blue where the tree's leaves are; bark brown is grey.
    let (mut green, mut now_blue) = (0, 0);
    for y in 0..H {
        for x in 0..W {
            if classify(plain.pixel(x, y)) == Class::Leaf {
                green += 1;
                let p = tinted.pixel(x, y);
                now_blue += (p[2] > p[1] && p[2] > p[0]) as usize;
            }
        }
    }
    assert!(
        green > 2000 && now_blue * 10 > green * 8,
        "{now_blue} of {green} leaf pixels turned blue"
    );
    let (bark_plain, _) = count(&plain, 0, 0, W, H);
    let (bark_tinted, _) = count(&tinted, 0, 0, W, H);
    assert!(
        bark_plain > 200 && bark_tinted * 10 < bark_plain,
        "brown bark pixels {bark_plain} → {bark_tinted}"
    );
    // Needles cover much less of a card than the oval.
    let needles = draw_look(Some(Look {
        shape: 1,
        ..Look::default()
    }));
    let (_, leaf_oval) = count(&plain, 0, 0, W, H);
    let (_, leaf_needle) = count(&needles, 0, 0, W, H);
    assert!(
        leaf_needle * 2 < leaf_oval,
        "leaf pixels: oval {leaf_oval}, needles {leaf_needle}"
    );
}
