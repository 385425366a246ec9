//! The viewer's `Driver`, tested without a window: the wind (the fluid grid, its slice,
//! vorticity, the wind keys), the models and the model key, the clock (pause, step, reset), the
//! sphere, what breaks, the forest's size limit and loading a spec.

use super::*;
use sylva_sim::species;

/// The viewer's scene arguments as the command line `args` gives them.
fn parse_scene_args(args: &[&str]) -> Result<SceneArgs, clap::Error> {
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        scene: SceneArgs,
    }
    <Cli as clap::Parser>::try_parse_from(args).map(|c| c.scene)
}

pub(super) fn driver() -> Driver {
    let scene = Scene::build(None, Some("lombardy_poplar"), Some(1), 5).unwrap();
    let camera = scene.default_camera(1.5, 600.0).camera();
    let mut d = Driver::new(scene, 8.0, 5, Some(1), camera, 1).unwrap();
    d.set_wind_model(WindModel::Fluid, [48, 8, 48]).unwrap();
    d
}

#[test]
fn fluid_wind_takes_balls_steers_its_border_and_restarts_on_reset() {
    let mut d = driver();
    // 8 steps (at most 4 a frame): 4 fluid steps of two steps each (the sim LOD's).
    for _ in 0..2 {
        d.advance(Duration::from_secs_f64(0.1));
    }
    let fluid_steps = |d: &Driver| d.scene.sim.wind().fluid().expect("fluid wind").steps();
    let before = fluid_steps(&d);
    assert!(before >= 3, "the fluid steps with the trees: {before}");
    d.handle(SimCommand::AddWindBall(Vec3::new(0.0, 5.0, 0.0)));
    assert!(d.message.contains("wind ball"), "{}", d.message);
    for _ in 0..10 {
        d.handle(SimCommand::AddWindBall(Vec3::new(1.0, 5.0, 0.0)));
    }
    assert_eq!(d.scene.sim.wind().fluid().unwrap().balls().len(), MAX_WIND_BALLS);
    // The frame carries them, where they are and as big as their Gaussian radius.
    let balls = filled(&mut d).wind_balls;
    assert_eq!(balls.len(), MAX_WIND_BALLS);
    for (drawn, ball) in balls.iter().zip(d.scene.sim.wind().fluid().unwrap().balls()) {
        let c = ball.centre;
        assert_eq!(drawn.center_radius, [c.x, c.y, c.z, ball.radius]);
    }
    d.handle(SimCommand::TurnWind(90.0));
    let g = d.scene.sim.wind().fluid().unwrap();
    assert_eq!(g.steps(), before, "steering keeps the field");
    let b = g.params().border;
    let h = 120.0f32.to_radians();
    assert!((b - Vec3::new(h.cos(), 0.0, h.sin()) * 8.0).length() < 1e-4, "{b}");
    d.handle(SimCommand::ClearWindBalls);
    assert!(d.scene.sim.wind().fluid().unwrap().balls().is_empty());
    assert!(filled(&mut d).wind_balls.is_empty());
    d.handle(SimCommand::Reset);
    assert_eq!(fluid_steps(&d), 0, "reset restarts the fluid with the trees");
    // The trunk stands in the grid as solid cells.
    assert!(d.scene.sim.wind().fluid().unwrap().solid().iter().any(|&s| s));
    // Uniform wind: no balls, and says why.
    d.set_wind_model(WindModel::Uniform, [16, 8, 16]).unwrap();
    d.handle(SimCommand::AddWindBall(Vec3::ZERO));
    assert!(d.message.contains("fluid"), "{}", d.message);
}

#[test]
fn the_wind_field_shows_on_a_movable_slice_and_only_for_the_fluid() {
    let mut d = driver();
    d.advance(Duration::from_secs_f64(0.05));
    assert!(filled(&mut d).wind_arrows.is_empty(), "hidden at first");
    d.handle(SimCommand::MoveWindField(1));
    assert!(d.message.contains("hidden"), "{}", d.message);
    d.handle(SimCommand::ToggleWindField);
    let f = filled(&mut d);
    let slice = f.info.field.expect("the slice is reported");
    assert_eq!(slice.arrows, f.wind_arrows.len());
    // 48 cells across: 40 arrows per side at most, a few cells solid (the trunk).
    assert!(slice.arrows > 500 && slice.arrows <= 48 * 48, "{}", slice.arrows);
    assert!(slice.max_speed > 4.0, "{}", slice.max_speed);
    // At half the tree's height.
    assert!((slice.height - 0.5 * d.scene.height).abs() <= d.scene.sim.wind().fluid().unwrap().cell_size().y);
    for _ in 0..40 {
        d.handle(SimCommand::MoveWindField(1));
    }
    assert_eq!(filled(&mut d).info.field.unwrap().layer, 7, "stops at the top layer");
    d.handle(SimCommand::MoveWindField(-100));
    assert_eq!(filled(&mut d).info.field.unwrap().layer, 0, "stops at the ground");
    d.handle(SimCommand::ToggleWindField);
    let f = filled(&mut d);
    assert!(f.wind_arrows.is_empty() && f.info.field.is_none());
    d.set_wind_model(WindModel::Uniform, [16, 8, 16]).unwrap();
    d.handle(SimCommand::ToggleWindField);
    assert!(d.message.contains("only the fluid wind"), "{}", d.message);
    assert!(filled(&mut d).wind_arrows.is_empty());
}

#[test]
fn vorticity_confinement_reaches_the_fluid_grid() {
    let parse = parse_scene_args;
    let mut d = driver();
    let a = parse(&["sylva", "--vorticity", "0.3", "--wind-grid", "16x16x8"]).unwrap();
    d.apply_args(&a).unwrap();
    assert_eq!(d.scene.sim.wind().fluid().unwrap().vorticity(), 0.3);
    assert!(parse(&["sylva", "--vorticity", "4.5"]).is_err());
    let uniform = parse(&["sylva", "--vorticity", "0.3", "--wind-model", "uniform"]).unwrap();
    let e = d.apply_args(&uniform).unwrap_err().to_string();
    assert!(e.contains("fluid"), "{e}");
}

#[test]
fn model_choices_reach_the_simulation() {
    let parse = parse_scene_args;
    let mut d = driver();
    assert_eq!(
        d.weber().unwrap().params().inertia,
        sylva_sim::dynamics::weber::InertiaKind::Articulated
    );
    let a = parse(&[
        "sylva",
        "--wind-model",
        "uniform",
        "--inertia",
        "diagonal",
        "--integrator",
        "newmark",
        "--solver",
        "cg",
    ])
    .unwrap();
    d.apply_args(&a).unwrap();
    let p = *d.weber().unwrap().params();
    assert_eq!(p.inertia, sylva_sim::dynamics::weber::InertiaKind::Diagonal);
    assert_eq!(p.integrator, sylva_sim::dynamics::weber::IntegratorKind::Newmark);
    assert_eq!(p.solver, SolverKind::Cg);
    let e = parse(&["sylva", "--inertia", "lumped"]).unwrap_err().to_string();
    assert!(e.contains("articulated") && e.contains("diagonal"), "{e}");
}

/// `--self-collision K` turns Chen's self-collision on in Weber's model (its figures come
/// with every step), the model key carries it to Manavi's, Oliapuram's and Chen's models, and
/// a k other than 6, 14, 18 or 26 is refused naming those.
#[test]
fn self_collision_from_the_command_line_reaches_the_model() {
    let parse = parse_scene_args;
    let mut d = driver();
    assert!(d.scene.sim.self_collision().is_none());
    d.apply_args(&parse(&["sylva", "--wind-model", "uniform", "--self-collision", "18"]).unwrap())
        .unwrap();
    d.advance(Duration::from_secs_f64(0.05));
    let s = d.scene.sim.self_collision().expect("self-collision is on");
    assert!(s.candidates > 0 && s.kdop_tests > 0, "{s:?}");
    let msg = d.switch_model(ModelKind::Verlet).unwrap();
    assert!(!msg.contains("self-collision off"), "{msg}");
    d.advance(Duration::from_secs_f64(0.05));
    let s = d.scene.sim.self_collision().expect("the verlet model takes it on");
    assert!(s.candidates > 0, "{s:?}");
    let msg = d.switch_model(ModelKind::Oliapuram).unwrap();
    assert!(!msg.contains("self-collision off"), "{msg}");
    d.advance(Duration::from_secs_f64(0.05));
    let s = d.scene.sim.self_collision().expect("the oliapuram model takes it on");
    assert!(s.candidates > 0, "{s:?}");
    let msg = d.switch_model(ModelKind::Chen).unwrap();
    assert!(!msg.contains("self-collision off"), "{msg}");
    d.advance(Duration::from_secs_f64(0.05));
    let s = d
        .scene
        .sim
        .self_collision()
        .expect("self-collision is on in Chen's model");
    assert!(s.kdop_tests > 0, "{s:?}");
    let e = parse(&["sylva", "--self-collision", "8"]).unwrap_err().to_string();
    assert!(e.contains("6, 14, 18 or 26"), "{e}");
}

/// The self-collision key turns it off and on again (with the command line's k), the overlay
/// shows its figures while it is on, and the model key carries what the key set.
#[test]
fn the_self_collision_key_turns_it_off_and_on() {
    let mut d = driver();
    d.apply_args(&parse_scene_args(&["sylva", "--wind-model", "uniform", "--self-collision", "6"]).unwrap())
        .unwrap();
    d.advance(Duration::from_secs_f64(0.05));
    assert!(d.scene.sim.self_collision().is_some());
    assert_eq!(d.toggle_self_collision().unwrap(), "self-collision off");
    assert!(d.scene.sim.self_collision().is_none());
    let msg = d.switch_model(ModelKind::Verlet).unwrap();
    assert!(!msg.contains("self-collision"), "{msg}");
    assert!(
        d.scene.sim.self_collision().is_none(),
        "off stays off across the model key"
    );
    assert_eq!(d.toggle_self_collision().unwrap(), "self-collision on (6-DOP)");
    d.advance(Duration::from_secs_f64(0.05));
    let frame = filled(&mut d);
    assert!(
        frame.info.settings.contains("self-collision"),
        "{}",
        frame.info.settings
    );
    d.switch_model(ModelKind::Weber).unwrap();
    assert!(d.scene.sim.self_collision().is_some(), "on goes with the model key");
}

/// The model key rebuilds the trees at rest with the next model, keeping the clock, the
/// fluid wind (its steps so far), the user's sphere and the Weber settings of the command
/// line; the overlay names the model. An unknown `--model` is refused naming the models.
#[test]
fn the_model_key_rebuilds_the_trees_with_the_wind_and_clock_kept() {
    let parse = parse_scene_args;
    let mut d = driver();
    d.apply_args(&parse(&["sylva", "--model", "weber", "--solver", "cg", "--wind-grid", "48x48x8"]).unwrap())
        .unwrap();
    for _ in 0..2 {
        d.advance(Duration::from_secs_f64(0.1));
    }
    let fluid_steps = d.scene.sim.wind().fluid().unwrap().steps();
    assert!(d.scene.sim.kinetic_energy() > 0.0 && fluid_steps >= 3);
    // The model key rebuilds the trees at rest with the next model, the clock, the fluid
    // wind and the sphere kept, and the overlay times the new model's phases.
    let cycle = |d: &mut Driver, model: &str, phase: &str| {
        let (time, fluid_steps) = (d.scene.sim.time(), d.scene.sim.wind().fluid().unwrap().steps());
        d.handle(SimCommand::CycleModel);
        assert!(d.message.starts_with(&format!("model {model}")), "{}", d.message);
        let sim = &d.scene.sim;
        assert_eq!(sim.time(), time, "the clock is kept");
        assert_eq!(
            sim.wind().fluid().unwrap().steps(),
            fluid_steps,
            "the fluid wind is kept"
        );
        assert_eq!(sim.colliders().len(), 1, "the sphere is kept");
        assert_eq!(sim.kinetic_energy(), 0.0, "rebuilt at rest");
        let f = filled(d);
        assert_eq!(f.info.model, model);
        assert!(f.timings.phases.iter().any(|(name, ..)| name == phase));
    };
    cycle(&mut d, "oliapuram", "dynamics");
    assert!(d.weber().is_none());
    d.advance(Duration::from_secs_f64(0.05));
    assert!(
        d.scene.sim.kinetic_energy() > 0.0,
        "Oliapuram's trees move in the kept wind"
    );
    // Oliapuram → Verlet, whose trees move in the kept wind too.
    cycle(&mut d, "verlet", "constraints");
    d.advance(Duration::from_secs_f64(0.05));
    assert!(
        d.scene.sim.kinetic_energy() > 0.0,
        "Manavi's trees move in the kept wind"
    );
    // Verlet → Chen, whose trees move in the kept wind too.
    cycle(&mut d, "chen", "branches");
    d.advance(Duration::from_secs_f64(0.05));
    assert!(d.scene.sim.kinetic_energy() > 0.0, "Chen's trees move in the kept wind");
    // Chen → Weber: the command line's Weber settings apply again.
    cycle(&mut d, "weber", "populate");
    assert_eq!(
        d.weber().unwrap().params().solver,
        SolverKind::Cg,
        "--solver still applies"
    );
    let (time, fluid_steps) = (d.scene.sim.time(), d.scene.sim.wind().fluid().unwrap().steps());
    // It steps on from there, with the wind it kept.
    d.advance(Duration::from_secs_f64(0.05));
    assert!(d.scene.sim.time() > time && d.scene.sim.kinetic_energy() > 0.0);
    assert!(d.scene.sim.wind().fluid().unwrap().steps() > fluid_steps);
    let e = parse(&["sylva", "--model", "cloth"]).unwrap_err().to_string();
    assert!(
        e.contains("cloth") && e.contains("weber") && e.contains("verlet"),
        "{e}"
    );
}

fn filled(d: &mut Driver) -> RenderFrame {
    let mut f = RenderFrame::default();
    d.fill(&mut f, Instant::now(), Duration::ZERO);
    f
}

#[test]
fn pause_step_and_reset_drive_the_simulation_clock() {
    let mut d = driver();
    let dt = d.scene.sim.dt() as f64;
    assert_eq!(d.advance(Duration::from_secs_f64(3.5 * dt)), 3);
    d.handle(SimCommand::TogglePause);
    assert_eq!(d.advance(Duration::from_secs(1)), 0, "paused");
    d.handle(SimCommand::Step);
    assert_eq!(d.advance(Duration::from_secs(1)), 1, "one step while paused");
    assert_eq!(d.advance(Duration::from_secs(1)), 0);
    let f = filled(&mut d);
    assert!(f.info.paused);
    assert!((f.info.sim_time - 4.0 * dt).abs() < 1e-9);
    d.handle(SimCommand::Reset);
    assert_eq!(d.scene.sim.kinetic_energy(), 0.0, "reset puts the trees back at rest");
    assert_eq!(filled(&mut d).info.message, "reset");
    d.handle(SimCommand::TogglePause);
    // A long stall runs at most MAX_STEPS_PER_FRAME steps and drops the rest.
    assert_eq!(d.advance(Duration::from_secs(10)), MAX_STEPS_PER_FRAME);
    assert_eq!(d.advance(Duration::ZERO), 0);
}

#[test]
fn wind_solver_and_sphere_follow_the_commands() {
    let mut d = driver();
    d.handle(SimCommand::TurnWind(-45.0));
    d.handle(SimCommand::ChangeWind(2.0));
    d.handle(SimCommand::SwitchSolver);
    let target = d.scene.bounds.0 + Vec3::Y;
    d.handle(SimCommand::MoveSphere(target));
    d.handle(SimCommand::MoveSphere(Vec3::NAN));
    let f = filled(&mut d);
    // 45° anticlockwise from the default's 120° (towards east-south-east).
    assert_eq!((f.info.wind_heading_deg, f.info.wind_speed), (75.0, 10.0));
    assert_eq!(f.info.model, "weber");
    assert!(f.info.settings.starts_with("solver cg"), "{}", f.info.settings);
    let s = f.spheres[0].center_radius;
    assert_eq!(
        Vec3::new(s[0], s[1], s[2]),
        target,
        "the sphere moved and ignored the NaN"
    );
    for _ in 0..40 {
        d.handle(SimCommand::ChangeWind(-1.0));
    }
    assert_eq!(
        filled(&mut d).info.wind_speed,
        0.0,
        "wind speed stays within 0..=MAX_WIND_SPEED"
    );
}

/// The storm key blows Manavi's 36 m/s and goes back to the speed before it; the overlay
/// counts what breaks (every CPU model's trees break).
#[test]
fn the_storm_key_blows_and_the_overlay_counts_what_breaks() {
    let mut d = driver();
    d.handle(SimCommand::ChangeWind(2.0));
    let before = filled(&mut d).info.wind_speed;
    d.handle(SimCommand::Storm);
    assert_eq!(filled(&mut d).info.wind_speed, STORM_SPEED);
    assert!(d.message.contains("36"), "{}", d.message);
    let b = filled(&mut d).info.breakage.expect("Weber's trees break");
    assert_eq!(b.uprooted, 0, "one step of storm uproots nothing");
    d.handle(SimCommand::CycleModel);
    d.handle(SimCommand::CycleModel);
    let f = filled(&mut d);
    assert_eq!(f.info.model, "verlet");
    let b = f.info.breakage.expect("Manavi's trees break");
    assert_eq!((b.broken, b.uprooted, b.debris), (0, 0, 0), "rebuilt whole");
    d.handle(SimCommand::Storm);
    assert_eq!(
        filled(&mut d).info.wind_speed,
        before,
        "back to the speed before the storm"
    );
}

/// The overlay's breakage line for Oliapuram's model stepped on the GPU (lavapipe where
/// there is no GPU; the test fails without a Vulkan device): the counts come from the
/// device's model, and what it breaks in a storm shows.
#[test]
fn the_overlay_counts_what_breaks_on_the_gpu() {
    let options = sylva_render::GpuOptions {
        validation: true,
        device_name: None,
    };
    let gpu = Arc::new(Gpu::new(&options, None).expect("a Vulkan device (lavapipe will do)"));
    let mut d = driver();
    d.handle(SimCommand::CycleModel);
    assert_eq!(filled(&mut d).info.model, "oliapuram");
    d.use_gpu_dynamics(gpu.clone()).unwrap();
    assert!(d.scene.sim.as_any().is::<GpuOliapuram>());
    let b = filled(&mut d).info.breakage.expect("the GPU model's trees break");
    assert_eq!((b.broken, b.uprooted, b.debris), (0, 0, 0));
    d.handle(SimCommand::Storm);
    for _ in 0..40 {
        d.advance(Duration::from_secs_f64(0.1));
    }
    let f = filled(&mut d);
    let b = f.info.breakage.expect("the GPU model's trees break");
    assert_eq!(Some(b), d.scene.sim.breakage());
    assert!(f.info.settings.contains("on the GPU"), "{}", f.info.settings);
    eprintln!(
        "4 s of storm on the GPU: broken {}, uprooted {}, debris {}",
        b.broken, b.uprooted, b.debris
    );
    assert_eq!(gpu.validation_errors(), 0, "{:#?}", gpu.validation_messages());
}

#[test]
fn a_forest_too_large_is_refused_before_it_is_grown() {
    let tupelo = species::builtin("black_tupelo").unwrap();
    let start = Instant::now();
    let e = format!(
        "{:#}",
        check_forest_size(std::slice::from_ref(&tupelo), MAX_TREES as usize, 1).unwrap_err()
    );
    assert!(
        e.contains("--trees 10000") && e.contains("black_tupelo") && e.contains("at most"),
        "{e}"
    );
    // One tree was grown, not ten thousand.
    assert!(start.elapsed() < Duration::from_secs(20), "{:?}", start.elapsed());
    check_forest_size(&[tupelo], 9, 1).unwrap();
}

#[test]
fn the_wind_keys_step_from_the_speed_given_on_the_command_line() {
    let scene = Scene::build(None, Some("sassafras"), Some(1), 3).unwrap();
    let camera = scene.default_camera(1.0, 100.0).camera();
    let mut d = Driver::new(scene, MAX_WIND_SPEED as f32, 3, Some(1), camera, 1).unwrap();
    d.handle(SimCommand::ChangeWind(1.0));
    assert_eq!(
        filled(&mut d).info.wind_speed,
        MAX_WIND_SPEED as f32,
        "stronger stays at the top"
    );
    d.handle(SimCommand::ChangeWind(-1.0));
    assert_eq!(
        filled(&mut d).info.wind_speed,
        MAX_WIND_SPEED as f32 - 1.0,
        "weaker steps down by 1"
    );
    d.handle(SimCommand::ChangeWind(1.0));
    assert_eq!(filled(&mut d).info.wind_speed, MAX_WIND_SPEED as f32);
}

#[test]
fn loading_a_spec_replaces_the_scene_and_a_bad_one_keeps_it() {
    let mut d = driver();
    let before = filled(&mut d).info;
    let dir = std::env::temp_dir().join(format!("sylva-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("broken.xml");
    std::fs::write(
        &bad,
        "<arbaro><species name='x'><param name='Levels' value='many'/></species></arbaro>",
    )
    .unwrap();
    d.handle(SimCommand::Load(bad));
    let after_bad = filled(&mut d).info;
    assert_eq!(
        (after_bad.scene_id, after_bad.segments),
        (before.scene_id, before.segments)
    );
    assert!(after_bad.message.contains("broken.xml"), "{}", after_bad.message);
    d.handle(SimCommand::Load(dir.join("missing.xml")));
    assert!(filled(&mut d).info.message.contains("missing.xml"));
    let good = dir.join("aspen.sylva");
    let text = sylva_sim::spec::text::write(&species::builtin("quaking_aspen").unwrap());
    std::fs::write(&good, text).unwrap();
    d.handle(SimCommand::Load(good));
    let after = filled(&mut d).info;
    assert_eq!(after.scene_id, before.scene_id + 1);
    assert!(after.title.starts_with("quaking_aspen"), "{}", after.title);
    assert_ne!(after.segments, before.segments);
    assert_eq!(filled(&mut d).spheres.len(), 1, "the new scene has the user's sphere");
    // A spec loaded while another model runs grows trees that move by that model, its phases
    // timed.
    d.handle(SimCommand::CycleModel);
    assert_eq!(filled(&mut d).info.model, "oliapuram");
    d.handle(SimCommand::Load(dir.join("aspen.sylva")));
    let f = filled(&mut d);
    assert_eq!(
        (f.info.model.as_str(), f.info.scene_id),
        ("oliapuram", before.scene_id + 2)
    );
    d.advance(Duration::from_secs_f64(0.05));
    let f = filled(&mut d);
    assert!(f.timings.phases.iter().any(|(name, ..)| name == "dynamics"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The drop-leaves key detaches 2 % of the forest's leaves in every model, the overlay counts
/// them falling and then on the ground, and reset puts them back.
#[test]
fn the_drop_leaves_key_drops_leaves_and_the_overlay_counts_them() {
    let mut d = driver();
    assert_eq!(filled(&mut d).info.falling, None, "no leaf off yet");
    for model in ["weber", "oliapuram", "verlet"] {
        assert_eq!(d.scene.sim.name(), model);
        let leaves = d.scene.sim.forest().leaf_count();
        let want = ((leaves as f32 * DROP_LEAVES_SHARE).ceil() as usize).max(1);
        d.handle(SimCommand::DropLeaves);
        assert!(
            d.message.starts_with(&format!("{want} leaves dropped")),
            "{model}: {}",
            d.message
        );
        d.advance(Duration::from_secs_f64(0.05));
        let f = filled(&mut d)
            .info
            .falling
            .expect("the overlay counts the falling leaves");
        assert!(
            f.detached >= want && f.falling + f.landed <= f.detached,
            "{model}: {f:?}"
        );
        d.handle(SimCommand::Reset);
        assert_eq!(filled(&mut d).info.falling, None, "{model}: reset re-attaches them");
        d.handle(SimCommand::CycleModel);
    }
}

/// `--wind-heading` is the compass heading the wind blows towards, clockwise from north (the
/// world's x is east and z south): 0 blows towards −z, 90 towards +x, 180 towards +z, for the
/// uniform wind and the fluid grid's border alike; the overlay reports the same heading.
#[test]
fn the_wind_heading_option_is_a_compass_heading() {
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        scene: SceneArgs,
    }
    for (heading, towards) in [
        (0.0, Vec3::NEG_Z),
        (90.0, Vec3::X),
        (180.0, Vec3::Z),
        (270.0, Vec3::NEG_X),
    ] {
        for model in ["uniform", "fluid"] {
            let h = format!("{heading}");
            let args = [
                "view",
                "--wind-heading",
                &h,
                "--wind-model",
                model,
                "--wind-grid",
                "24x24x6",
            ];
            let a = <Cli as clap::Parser>::try_parse_from(args).unwrap().scene;
            let mut d = driver();
            d.apply_args(&a).unwrap();
            let along = match model {
                "uniform" => d.scene.sim.wind().sample(d.scene.bounds.0),
                _ => d.border_wind(),
            };
            let along = along.normalize();
            // The uniform wind gusts and veers a little about its heading.
            assert!(
                along.dot(towards) > 0.95,
                "{model} {heading}: the wind blows along {along}"
            );
            assert_eq!(filled(&mut d).info.wind_heading_deg, heading as f32, "{model}");
        }
    }
    let refused = <Cli as clap::Parser>::try_parse_from(["view", "--wind-heading", "400"]);
    assert!(refused.is_err());
}

/// `--no-collider` leaves the user's sphere out of the simulation and the picture; the
/// sphere key puts it back where it was parked and takes it out again, and a sphere taken out
/// is not moved.
#[test]
fn the_sphere_can_be_left_out_and_brought_back() {
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        scene: SceneArgs,
    }
    let mut d = driver();
    let parked = d.scene.sim.colliders()[0].center;
    let a = <Cli as clap::Parser>::try_parse_from(["view", "--no-collider", "--wind-model", "uniform"])
        .unwrap()
        .scene;
    d.apply_args(&a).unwrap();
    assert!(d.scene.sim.colliders().is_empty());
    assert!(filled(&mut d).spheres.is_empty());
    d.handle(SimCommand::MoveSphere(parked + Vec3::X));
    d.handle(SimCommand::ToggleSphere);
    assert_eq!(d.scene.sim.colliders().len(), 1);
    assert_eq!(
        d.scene.sim.colliders()[0].center,
        parked,
        "back where it was parked, not moved"
    );
    assert_eq!(filled(&mut d).spheres.len(), 1);
    let to = parked + Vec3::new(0.0, 0.5, 1.0);
    d.handle(SimCommand::MoveSphere(to));
    d.handle(SimCommand::ToggleSphere);
    assert!(d.scene.sim.colliders().is_empty());
    d.handle(SimCommand::ToggleSphere);
    assert_eq!(d.scene.sim.colliders()[0].center, to, "back where it was moved to");
}

/// The save-scene key writes a scene file that grows the same trees where they stood, with
/// the wind and the camera's bearing, elevation and distance as they were.
#[test]
fn a_saved_scene_reloads_as_the_same_scene() {
    let dir = std::env::temp_dir().join(format!("sylva-saved-scene-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scene = Scene::build(None, None, Some(3), 21).unwrap();
    let camera = scene.camera_at(
        Some(crate::args::CameraPlace {
            azimuth: 200.0,
            elevation: 12.0,
            distance: 40.0,
        }),
        1.5,
        600.0,
    );
    let mut d = Driver::new(scene, 7.0, 21, Some(3), camera.camera(), 1).unwrap();
    d.handle(SimCommand::TurnWind(30.0));
    let path = dir.join("saved.toml");
    d.save_scene(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let loaded = file::load(&path, 0).unwrap();
    assert_eq!(loaded.trees.len(), 3, "{text}");
    assert_eq!(loaded.wind.speed, Some(7.0), "{text}");
    assert_eq!(loaded.wind.heading, Some(compass_heading(d.wind_heading)), "{text}");
    let place = loaded.camera.unwrap();
    assert!(
        (place.azimuth - 200.0).abs() < 0.01 && (place.elevation - 12.0).abs() < 0.01,
        "{place:?}"
    );
    assert!((place.distance - 40.0).abs() < 0.01, "{place:?}");
    let path_s = path.display().to_string();
    let again = Scene::build(Some(Path::new(&path_s)), None, None, 0).unwrap();
    let (a, b) = (d.scene.sim.forest(), again.sim.forest());
    assert_eq!(a.trees.len(), b.trees.len());
    for (ta, tb) in a.trees.iter().zip(&b.trees) {
        assert_eq!(ta.root, tb.root, "each tree stands where it stood");
        assert_eq!(ta.segments.len(), tb.segments.len(), "each tree grows as it grew");
        assert_eq!(ta.leaves.len(), tb.leaves.len());
    }
    assert_eq!(again.trees, d.scene.trees);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The overlay's pace: a simulation that keeps up with its frames runs at real time; one whose
/// frames take a second each steps at most a few steps a frame and says how far behind it is.
#[test]
fn the_frame_info_says_how_the_simulation_keeps_up_with_real_time() {
    let mut d = driver();
    d.set_wind_model(WindModel::Uniform, [8, 8, 8]).unwrap();
    let dt = d.scene.sim.dt() as f64;
    for _ in 0..60 {
        d.advance(Duration::from_secs_f64(dt));
    }
    let kept = filled(&mut d).info.realtime.unwrap();
    assert!((kept - 1.0).abs() < 0.05, "keeping up: {kept}");
    for _ in 0..10 {
        d.advance(Duration::from_secs(1));
    }
    let slow = filled(&mut d).info.realtime.unwrap();
    let expected = (MAX_STEPS_PER_FRAME as f64 * dt) as f32;
    assert!((slow - expected).abs() < 0.2 * expected, "{slow} against {expected}");
    d.handle(SimCommand::TogglePause);
    assert_eq!(filled(&mut d).info.realtime, None, "paused");
}

/// A scene file's grown trees (an L-system preset, an L-system file beside the scene, space
/// colonization) grow as `sylva grow` grows them, stand where the file puts them, and are
/// written back by the save key as they were asked for.
#[test]
fn a_scene_file_grows_l_system_and_colonization_trees_and_saves_them() {
    let dir = std::env::temp_dir().join(format!("sylva-grown-scene-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("bush.lsys"),
        "name = bush\naxiom = X\niterations = 3\nangle = 25\nlength = 0.4\nX -> F[+X][-X]FX\nF -> FF\n",
    )
    .unwrap();
    let text = "[[tree]]\nspecies = \"sassafras\"\nposition = [0.0, 0.0, 0.0]\nseed = 3\n\
                [[tree]]\nlsystem = \"abop-1.24a\"\niterations = 3\nposition = [9.0, 0.0, 0.0]\nseed = 4\n\
                [[tree]]\nlsystem = \"bush.lsys\"\nposition = [0.0, 0.0, 9.0]\nseed = 5\n\
                [[tree]]\ncolonize = { envelope = [\"sphere:0,5,0,2.5\"], points = 1500 }\nposition = [-9.0, 0.0, 0.0]\nseed = 6\n";
    let path = dir.join("grown.toml");
    std::fs::write(&path, text).unwrap();
    let scene = Scene::build(Some(&path), None, None, 0).unwrap();
    let forest = scene.sim.forest();
    assert_eq!(forest.trees.len(), 4);
    let expect = [
        Vec3::ZERO,
        Vec3::new(9.0, 0.0, 0.0),
        Vec3::new(0.0, 0.0, 9.0),
        Vec3::new(-9.0, 0.0, 0.0),
    ];
    for (t, p) in forest.trees.iter().zip(expect) {
        assert!(t.root.distance(p) < 1e-4, "a tree stands at {} instead of {p}", t.root);
    }
    // The same trees `sylva grow` makes from the same settings and seeds.
    let abop = sylva_sim::lsystem::preset("abop-1.24a").unwrap();
    let grown = sylva_sim::lsystem::grow(&abop, 3, 4, &mut |_| {}).unwrap().skeleton;
    assert_eq!(forest.trees[1].segments.len(), grown.segments.len());
    let colonize = sylva_sim::colonize::ColonizeParams {
        crown: sylva_sim::colonize::Envelope::Sphere {
            center: Vec3::new(0.0, 5.0, 0.0),
            radius: 2.5,
        },
        points: 1500,
        seed: 6,
        ..Default::default()
    };
    let grown = sylva_sim::colonize::colonize(&colonize, &mut |_| {}).unwrap();
    assert_eq!(forest.trees[3].segments.len(), grown.trees[0].segments.len());
    assert!(forest.trees[2].segments.len() > 10, "the bush from its file");
    // The L-system file alone is a scene of its one tree.
    let bush = Scene::build(Some(&dir.join("bush.lsys")), None, None, 5).unwrap();
    assert_eq!(bush.sim.forest().trees.len(), 1);
    assert_eq!(
        bush.sim.forest().trees[0].segments.len(),
        forest.trees[2].segments.len()
    );

    // Saved and loaded again: the same four trees.
    let camera = scene.default_camera(1.5, 600.0).camera();
    let d = Driver::new(scene, 5.0, 0, None, camera, 1).unwrap();
    let saved = dir.join("saved.toml");
    d.save_scene(&saved).unwrap();
    let written = std::fs::read_to_string(&saved).unwrap();
    assert!(
        written.contains("lsystem = \"abop-1.24a\"") && written.contains("colonize"),
        "{written}"
    );
    let again = Scene::build(Some(&saved), None, None, 0).unwrap();
    assert_eq!(again.trees, d.scene.trees, "{written}");
    for (a, b) in again.sim.forest().trees.iter().zip(&d.scene.sim.forest().trees) {
        assert_eq!((a.root, a.segments.len()), (b.root, b.segments.len()));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
