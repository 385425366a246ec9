//! The simulation's level of detail as the viewer drives it (`--sim-lod`): each tree's step
//! period from the level of detail the fill picks for it from the current camera, handed to a
//! model that keeps a step schedule (`sylva_sim::dynamics::schedule`), and the schedule's mix
//! for the overlay and `bench frame`. The fluid grid's share ([`Driver::fluid_parts`]) is set up
//! with the wind in `Driver::apply_wind` and again when the wind changes: a grid on the CPU
//! steps every 2nd frame by two frames' time, each step spread over both
//! (`FluidWind::set_parts`), and a grid of over 524,288 cells every 4th frame, spread over
//! four, while the border wind crosses at most one cell in those four frames; one on the GPU
//! (`--wind-gpu`) costs this thread nothing and steps every frame. Stable fluids is stable at
//! any step (Stam 1999, paper 004 §2), and its semi-Lagrangian trace stays accurate while it
//! spans at most a cell or so: at the default 6 m/s a step of 1/30 s moves the air 0.4 of a
//! cell of the default 96×96×16 grid, and a step of 1/15 s two thirds of a cell of the
//! paper's 256×256×16 over 100 trees; the flow stays that of a grid stepping every frame
//! (`sylva_sim::fluid` tests: grids at 2h and 4h against one at h).
//!
//! Invariant: the periods depend on the camera and the forest only, never on the threads, so
//! the state stays the same for any number of workers.

use sylva_render::frame::tree_levels;

use super::Driver;

/// Whether the simulation follows the trees' levels of detail (`--sim-lod`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SimLod {
    On,
    Off,
}

/// The step period of a tree at each level of detail the fill picks ([`tree_levels`]), and of
/// one outside the view: a tree covering fewer than 260 pixels of radius steps every 2nd frame
/// by 2h, one under 90 pixels every 4th by 4h, and one out of the view (culled by the fill)
/// every 8th by 8h, the longest period (`sylva_sim::dynamics::schedule::MAX_STEP_PERIOD`): no
/// one sees it, and when it comes into view it takes its level's period and catches up at once.
pub const SIM_LOD_PERIODS: [u8; 3] = [1, 2, 4];
pub const SIM_LOD_UNSEEN_PERIOD: u8 = 8;

/// Cells above which a fluid grid on the CPU may step every 4th frame: 2^19, half the paper's
/// 256×256×16 (a grid this size costs more than the trees of the default forest).
pub const FLUID_LONG_STEP_CELLS: usize = 1 << 19;

impl Driver {
    /// The frames a fluid grid on the CPU spreads each of its steps over (see the module docs):
    /// 1 with `--sim-lod off` or on the GPU; 4 for a grid of over [`FLUID_LONG_STEP_CELLS`]
    /// cells when the border wind crosses at most its smallest cell in four frames; else 2.
    pub(super) fn fluid_parts(&self, grid: &sylva_sim::fluid::FluidGrid) -> u8 {
        if self.sim_lod == SimLod::Off || self.wind_gpu.is_some() {
            return 1;
        }
        let cells: usize = grid.cells().iter().product();
        let reach = self.wind_speed * 4.0 * self.scene.sim.dt();
        if cells > FLUID_LONG_STEP_CELLS && reach <= grid.cell_size().min_element() {
            4
        } else {
            2
        }
    }

    /// Gives each tree its step period from its level of detail from the current camera
    /// ([`SIM_LOD_PERIODS`]), or period 1 with `--sim-lod off`, for a model that keeps a step
    /// schedule (Weber's); a model that steps every tree every step is left as it is.
    pub(super) fn plan_sim_lod(&mut self) {
        if self.scene.sim.step_periods().is_none() {
            return;
        }
        let forest = self.scene.sim.forest();
        self.periods.clear();
        match self.sim_lod {
            SimLod::Off => self.periods.resize(forest.tree_count(), 1),
            SimLod::On => {
                tree_levels(forest, &self.camera, &self.lod, &mut self.levels);
                self.periods.extend(self.levels.iter().map(|l| match l {
                    Some(l) => SIM_LOD_PERIODS[*l as usize],
                    None => SIM_LOD_UNSEEN_PERIOD,
                }));
            }
        }
        if self.scene.sim.step_periods() != Some(&self.periods[..]) {
            if let Err(e) = self.scene.sim.set_step_periods(&self.periods) {
                // One period per tree, each 1 to 8: a refusal is a defect, shown and not hidden.
                self.message = format!("simulation level of detail refused: {e}");
            }
        }
    }

    /// Trees per step period (1, 2, 4, 8) in the model's schedule, for a model that keeps one.
    pub fn sim_lod_mix(&self) -> Option<[usize; 4]> {
        let periods = self.scene.sim.step_periods()?;
        let mut mix = [0; 4];
        for &p in periods {
            mix[(p.max(1).ilog2() as usize).min(3)] += 1;
        }
        Some(mix)
    }

    /// The schedule in a few words for the overlay (`None` for a model that keeps none).
    pub(super) fn sim_lod_text(&self) -> Option<String> {
        let mix = self.sim_lod_mix()?;
        if mix[0] == mix.iter().sum::<usize>() {
            return Some(format!(
                "every tree steps every frame{}",
                if self.sim_lod == SimLod::Off {
                    " (sim LOD off)"
                } else {
                    ""
                }
            ));
        }
        let parts: Vec<String> = [1, 2, 4, 8]
            .iter()
            .zip(mix)
            .filter(|(_, n)| *n > 0)
            .map(|(p, n)| match p {
                1 => format!("{n} every frame"),
                2 => format!("{n} every 2nd"),
                p => format!("{n} every {p}th"),
            })
            .collect();
        Some(format!("trees stepping {}", parts.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use glam::Vec3;
    use sylva_render::frame::RenderFrame;
    use sylva_sim::dynamics::ModelKind;

    use super::super::tests::driver;
    use super::super::{Driver, OrbitCamera, Scene, SimCommand, WindModel};
    use super::{SimLod, SIM_LOD_PERIODS, SIM_LOD_UNSEEN_PERIOD};

    #[test]
    fn trees_small_on_screen_step_less_often_unless_the_sim_lod_is_off() {
        let scene = Scene::build(None, Some("lombardy_poplar"), Some(4), 5).unwrap();
        let home = scene.default_camera(1.5, 600.0);
        let tree0 = scene.sim.forest().trees[0].root;
        let height = scene.height;
        let mut d = Driver::new(scene, 8.0, 5, Some(4), home.camera(), 2).unwrap();
        d.set_wind_model(WindModel::Uniform, [48, 8, 48]).unwrap();
        let periods = |d: &mut Driver| {
            d.step(1);
            d.scene.sim.step_periods().unwrap().to_vec()
        };
        // Far away: every tree under 90 pixels, every 4th frame.
        d.camera = OrbitCamera {
            distance: 40.0 * home.distance,
            ..home
        }
        .camera();
        assert_eq!(periods(&mut d), [4; 4]);
        let mut f = RenderFrame::default();
        d.fill(&mut f, Instant::now(), Duration::ZERO);
        assert!(
            f.info.settings.ends_with("; trees stepping 4 every 4th"),
            "{}",
            f.info.settings
        );
        // Close to the first tree: it fills the view and steps every frame; every other tree
        // steps at its level's period, and one behind the camera or out of the view every 8th.
        d.camera = OrbitCamera {
            target: tree0 + Vec3::Y * (0.5 * height),
            distance: 1.2 * height,
            ..home
        }
        .camera();
        let near = periods(&mut d);
        assert_eq!(near[0], 1, "{near:?}");
        for (t, (level, period)) in d.levels.iter().zip(&near).enumerate() {
            let want = level.map_or(SIM_LOD_UNSEEN_PERIOD, |l| SIM_LOD_PERIODS[l as usize]);
            assert_eq!(*period, want, "tree {t} at level {level:?}: {near:?}");
        }
        // Looking away from the forest (the eye 500 m along -z from the first tree, looking
        // along -z): every tree is behind the camera and steps every 8th.
        d.camera = OrbitCamera {
            target: tree0 - Vec3::Z * 1000.0,
            yaw: 0.0,
            pitch: 0.0,
            distance: 500.0,
            ..home
        }
        .camera();
        let away = periods(&mut d);
        assert!(d.levels.iter().all(Option::is_none), "{:?}", d.levels);
        assert_eq!(away, [SIM_LOD_UNSEEN_PERIOD; 4]);
        // Off: every tree every frame, whatever the camera.
        d.sim_lod = SimLod::Off;
        assert_eq!(periods(&mut d), [1; 4]);
        d.fill(&mut f, Instant::now(), Duration::ZERO);
        assert!(
            f.info.settings.contains("every tree steps every frame (sim LOD off)"),
            "{}",
            f.info.settings
        );
        // A model that steps every tree every step keeps no schedule.
        d.switch_model(ModelKind::Verlet).unwrap();
        d.step(1);
        assert_eq!(d.sim_lod_mix(), None);
    }

    #[test]
    fn the_fluid_grid_spreads_its_steps_over_2_or_4_frames_under_the_sim_lod() {
        let fluid_dt = |d: &Driver| d.scene.sim.wind().fluid().unwrap().params().dt;
        let fluid_steps = |d: &Driver| d.scene.sim.wind().fluid().unwrap().steps();
        let timed = |d: &Driver, name: &str| {
            let t = d.timings();
            !t.last(t.phase_id(name).unwrap()).is_zero()
        };
        // A small grid, and one of over 2^19 cells whose cells the 8 m/s wind crosses in
        // fewer than four frames: every 2nd frame.
        for cells in [[48, 8, 48], [184, 16, 184]] {
            let mut d = driver();
            d.set_wind_model(WindModel::Fluid, cells).unwrap();
            assert_eq!(fluid_dt(&d), 2.0 * d.scene.sim.dt(), "{cells:?}: every 2nd frame");
            // Each of its steps is spread over two frames: none done after the first, one
            // after the second, its advection timed in the first frame and its pressure solve
            // in the second.
            d.step(1);
            assert_eq!(fluid_steps(&d), 0, "{cells:?}: half a fluid step after one frame");
            assert!(timed(&d, "wind advect") && !timed(&d, "wind pressure"), "{cells:?}");
            d.step(1);
            assert_eq!(fluid_steps(&d), 1, "{cells:?}: the whole fluid step after two frames");
            assert!(!timed(&d, "wind advect") && timed(&d, "wind pressure"), "{cells:?}");
        }
        // The large grid in a 1 m/s breeze, which crosses a cell in more than four frames:
        // every 4th frame, spread over four (the first step starts once the trees are half a
        // step ahead, at the second frame): half the advection, the other half, the pressure
        // solve, the projection.
        let mut d = driver();
        d.handle(SimCommand::ChangeWind(-7.0));
        d.set_wind_model(WindModel::Fluid, [184, 16, 184]).unwrap();
        assert_eq!(fluid_dt(&d), 4.0 * d.scene.sim.dt(), "every 4th frame");
        d.step(1);
        assert_eq!(fluid_steps(&d), 0);
        assert!(!timed(&d, "wind advect") && !timed(&d, "wind pressure"));
        let stages = ["wind advect", "wind advect", "wind pressure", "wind project"];
        for (frame, stage) in stages.iter().enumerate() {
            d.step(1);
            for other in ["wind advect", "wind pressure", "wind project"] {
                assert_eq!(timed(&d, other), other == *stage, "frame {}: {other}", frame + 2);
            }
            assert_eq!(fluid_steps(&d), (frame == 3) as u64, "frame {}", frame + 2);
        }
        // A storm crosses a cell in fewer frames: back to every 2nd frame, from the next step.
        d.handle(SimCommand::Storm);
        assert_eq!(fluid_dt(&d), 2.0 * d.scene.sim.dt(), "a storm: every 2nd frame");
        d.step(2);
        assert_eq!(fluid_steps(&d), 2);
        let mut d = driver();
        d.sim_lod = SimLod::Off;
        d.set_wind_model(WindModel::Fluid, [48, 8, 48]).unwrap();
        assert_eq!(fluid_dt(&d), d.scene.sim.dt(), "--sim-lod off: every frame");
        d.step(1);
        assert_eq!(fluid_steps(&d), 1, "--sim-lod off: a whole fluid step every frame");
        assert!(timed(&d, "wind advect") && timed(&d, "wind pressure"));
    }
}
