//! `sylva view`: the interactive viewer. The simulation runs on its own thread and fills the
//! write side of the render command cache; the main thread handles the window and input and
//! draws the cache's read side (Weber 2008, "Threading").

use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::{anyhow, Context, Result};
use clap::Args;
use glam::{Vec3, Vec4};
use sylva_render::cache::{command_cache, CacheReader};
use sylva_render::frame::RenderFrame;
use sylva_render::renderer::Output;
use sylva_render::swapchain::Swapchain;
use sylva_render::{vk, DrawOptions, Gpu, Renderer, WindowHandles};
use winit::application::ApplicationHandler;
use winit::dpi::{PhysicalPosition, PhysicalSize};
use winit::event::{ElementState, MouseButton, MouseScrollDelta, WindowEvent};
use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop};
use winit::keyboard::{Key, NamedKey};
use winit::raw_window_handle::{HasDisplayHandle, HasWindowHandle};
use winit::window::{Window, WindowId};

use crate::args::{check_validation, parse_size, GpuArgs};
use crate::headless::{write_png, RenderArgs, MAX_FRAMES};
use crate::interrupt;
use crate::scene::{simulate, viewer_threads, Driver, OrbitCamera, Scene, SceneArgs, SimCommand, MAX_LOD_BIAS};
use crate::trees::Output as OutArgs;

/// Every key and mouse action of the viewer and what it does: the list `H` and `F1` show.
pub const KEYS: [(&str, &str); 28] = [
    ("drag", "orbit the camera round the scene"),
    ("shift-drag, middle-drag", "pan"),
    ("wheel", "zoom"),
    ("right-drag", "move the sphere through the trees"),
    ("ctrl-click", "drop a wind ball (a gust) where the pointer is"),
    ("C", "clear the wind balls"),
    ("W", "show or hide the wind field's arrows"),
    ("PgUp, PgDn", "raise or lower the wind field's layer"),
    ("← →", "turn the wind by 15°"),
    ("↑ ↓", "stronger or weaker wind, by 1 m/s"),
    ("T", "storm: a 36 m/s wind, where branches break"),
    ("space", "pause or run the simulation"),
    ("N", "one step while paused"),
    ("R", "reset the trees to their rest shape"),
    ("M", "next dynamics model (Weber, Oliapuram, Verlet, Chen)"),
    ("S", "Weber's solver: direct or conjugate gradients"),
    ("K", "self-collision on or off"),
    ("D", "drop leaves"),
    ("X", "show or hide the sphere"),
    ("L", "automatic level of detail on or off"),
    ("F", "frame the scene again"),
    ("O", "overlay on or off"),
    ("P", "screenshot (sylva-shot.png, never over an existing file)"),
    ("Ctrl-S", "save the scene as a scene file"),
    ("H, F1", "this list, or back to the help line"),
    ("drop a file", "open a spec or scene file"),
    ("Esc, Q", "quit"),
    ("", "(H or F1 again to close)"),
];

/// The help line at the bottom of the window.
pub const HELP: &str = "H / F1: all keys   drag: orbit   shift-drag: pan   wheel: zoom   space: pause   ←→ ↑↓: wind   T: storm   M: model   O: overlay   P: screenshot   Ctrl-S: save scene   Esc: quit";

/// The full key list, one key per line, the keys in a column.
pub fn key_list() -> String {
    let width = KEYS.iter().map(|(k, _)| k.chars().count()).max().unwrap_or(0);
    KEYS.iter()
        .map(|(key, what)| format!("{key:<width$}  {what}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Below this frame rate the viewer coarsens the levels of detail (when automatic)...
const AUTO_LOD_MIN_FPS: f32 = 15.0;
/// ...and above this it refines them again, down to the full detail of bias 1.
const AUTO_LOD_MAX_FPS: f32 = 30.0;
/// Frames between adjustments, so each change shows in the frame rate before the next.
const AUTO_LOD_PERIOD: u32 = 10;

/// One step of the automatic level of detail: a quarter coarser below
/// [`AUTO_LOD_MIN_FPS`], a quarter finer above [`AUTO_LOD_MAX_FPS`], within 1..=[`MAX_LOD_BIAS`].
/// A frame rate of 0 (nothing measured yet) leaves the bias alone.
fn next_lod_bias(bias: f32, fps: f32) -> f32 {
    if fps > 0.0 && fps < AUTO_LOD_MIN_FPS {
        (bias * 1.25).min(MAX_LOD_BIAS)
    } else if fps > AUTO_LOD_MAX_FPS {
        (bias / 1.25).max(1.0)
    } else {
        bias
    }
}

#[derive(Args, Clone, Debug)]
pub struct ViewArgs {
    #[command(flatten)]
    pub scene: SceneArgs,
    /// Window size, WIDTHxHEIGHT.
    #[arg(long, default_value = "1280x720", allow_hyphen_values = true, value_parser = parse_size)]
    pub size: (u32, u32),
    /// Quit after this many frames.
    #[arg(long, allow_hyphen_values = true, value_parser = |s: &str| crate::args::count_in(s, 1, MAX_FRAMES))]
    pub frames: Option<u64>,
    /// Write the last frame shown to this PNG file (with --frames: the frame the viewer quits
    /// on; otherwise the frame shown when the window closes).
    #[arg(long)]
    pub screenshot: Option<PathBuf>,
    /// Write every frame shown into this folder as numbered PNGs (frame-000001.png, ...: the
    /// frames of a video; each frame is read back, so the viewer runs slower while recording).
    #[arg(long, value_name = "DIR")]
    pub record: Option<PathBuf>,
    /// Replace the screenshot file, or the recorded frames, if they exist.
    #[arg(long)]
    pub force: bool,
    /// Present as fast as possible instead of waiting for the display's refresh.
    #[arg(long)]
    pub no_vsync: bool,
    /// Start with the overlay hidden.
    #[arg(long)]
    pub no_overlay: bool,
    /// Keep the levels of detail fixed instead of coarsening them while frames are slow
    /// (below 15 per second).
    #[arg(long)]
    pub fixed_lod: bool,
    #[command(flatten)]
    pub gpu: GpuArgs,
}

pub fn run(a: &ViewArgs) -> Result<()> {
    if let Some(shot) = &a.screenshot {
        let inputs: Vec<&Path> = a.scene.spec.iter().map(|p| p.as_path()).collect();
        crate::output::check(shot, a.force, &inputs)?;
        crate::output::check_png_name(shot)?;
    }
    // Checked before any work; without a display the headless renderer records instead.
    let recorder = a
        .record
        .as_deref()
        .map(|dir| crate::output::Recorder::new(dir, a.force))
        .transpose()?;
    if let Some(why) = no_display() {
        return headless_fallback(a, why);
    }
    let event_loop = match EventLoop::new() {
        Ok(l) => l,
        Err(e) => return headless_fallback(a, &format!("no display ({e})")),
    };
    let (w, h) = a.size;
    let scene = Scene::from_args(&a.scene)?;
    let orbit = scene.camera_at(a.scene.camera, w as f32 / h as f32, h as f32);
    let threads = viewer_threads();
    let mut driver = Driver::new(
        scene,
        a.scene.wind as f32,
        a.scene.seed,
        a.scene.trees,
        orbit.camera(),
        threads,
    )?;
    driver.apply_args(&a.scene)?;
    event_loop.set_control_flow(ControlFlow::Poll);
    let mut app = App::new(a.clone(), driver, orbit);
    app.recorder = recorder;
    // Ctrl-C closes the window at the next frame, without a screenshot.
    let _stoppable = interrupt::Steps::begin();
    event_loop
        .run_app(&mut app)
        .map_err(|e| anyhow!("the window's event loop failed: {e}"))?;
    app.shutdown()
}

/// Why no window can open, where that can be told without trying: on Linux and the BSDs, when
/// neither an X11 display (`DISPLAY`) nor a Wayland one (`WAYLAND_DISPLAY`) is set. Elsewhere
/// (Windows, macOS) the event loop says so itself.
fn no_display() -> Option<&'static str> {
    let set = |v: &str| std::env::var_os(v).is_some_and(|d| !d.is_empty());
    let unix_desktop = cfg!(all(
        unix,
        not(target_os = "macos"),
        not(target_os = "ios"),
        not(target_os = "android")
    ));
    (unix_desktop && !set("DISPLAY") && !set("WAYLAND_DISPLAY"))
        .then_some("no display (neither DISPLAY nor WAYLAND_DISPLAY is set)")
}

/// The screenshot key's file, in the current folder (`-1`, `-2`, ... added when it exists).
const SHOT_NAME: &str = "sylva-shot.png";

/// Without a display, renders the scene headless to a PNG instead, and says so.
fn headless_fallback(a: &ViewArgs, why: &str) -> Result<()> {
    let out = match &a.screenshot {
        Some(p) => p.clone(),
        None => crate::output::free_name(Path::new("sylva-view.png")),
    };
    eprintln!(
        "sylva view: {why}, so no window can open; rendering {} frames headless to {} instead \
         (sylva render does this directly)",
        a.frames.unwrap_or(120),
        out.display()
    );
    let args = RenderArgs {
        scene: a.scene.clone(),
        frames: a.frames.unwrap_or(120),
        size: a.size,
        overlay: !a.no_overlay,
        record: a.record.clone(),
        output: OutArgs { out, force: a.force },
        gpu: a.gpu.clone(),
    };
    crate::headless::run(&args)
}

/// The open window and what draws into it. Fields drop in order: the device (which owns the
/// Vulkan surface) before the window, whose Wayland surface must outlive the Vulkan one.
struct Viewer {
    renderer: Renderer,
    swapchain: Swapchain,
    gpu: Arc<Gpu>,
    reader: CacheReader<RenderFrame>,
    commands: Sender<SimCommand>,
    sim: Option<JoinHandle<()>>,
    window: Arc<Window>,
}

struct App {
    args: ViewArgs,
    /// Until the window opens.
    driver: Option<Driver>,
    viewer: Option<Viewer>,
    orbit: OrbitCamera,
    overlay: bool,
    frames: u64,
    error: Option<anyhow::Error>,
    cursor: PhysicalPosition<f64>,
    /// Buttons held: left, middle, right.
    buttons: [bool; 3],
    shift: bool,
    ctrl: bool,
    /// The sphere's centre in the last frame drawn, and its radius.
    sphere: Option<Vec3>,
    sphere_radius: f32,
    /// Where the current drag last sent the sphere.
    sphere_target: Option<Vec3>,
    scene_id: u64,
    needs_resize: bool,
    auto_lod: bool,
    lod_bias: f32,
    lod_frames: u32,
    last_image: Option<sylva_render::Rgba>,
    /// `--record`: every frame shown, written as it is drawn.
    recorder: Option<crate::output::Recorder>,
    /// The screenshot key was pressed: the next frame is read back and written.
    shot_wanted: bool,
    /// H or F1: the full key list instead of the help line.
    show_keys: bool,
}

impl App {
    fn new(args: ViewArgs, driver: Driver, orbit: OrbitCamera) -> App {
        let auto_lod = !args.fixed_lod;
        App {
            show_keys: false,
            overlay: !args.no_overlay,
            args,
            driver: Some(driver),
            viewer: None,
            orbit,
            frames: 0,
            error: None,
            cursor: PhysicalPosition::new(0.0, 0.0),
            buttons: [false; 3],
            shift: false,
            ctrl: false,
            sphere: None,
            sphere_radius: 0.0,
            sphere_target: None,
            scene_id: 0,
            needs_resize: false,
            auto_lod,
            lod_bias: 1.0,
            lod_frames: 0,
            last_image: None,
            recorder: None,
            shot_wanted: false,
        }
    }

    fn open(&mut self, event_loop: &ActiveEventLoop) -> Result<()> {
        let (w, h) = self.args.size;
        let attributes = Window::default_attributes()
            .with_title("Sylva")
            .with_inner_size(PhysicalSize::new(w, h))
            .with_min_inner_size(PhysicalSize::new(64, 64));
        let window = Arc::new(event_loop.create_window(attributes).context("cannot open a window")?);
        let handles = WindowHandles {
            display: window
                .display_handle()
                .map_err(|e| anyhow!("the window has no display handle: {e}"))?
                .as_raw(),
            window: window
                .window_handle()
                .map_err(|e| anyhow!("the window has no handle: {e}"))?
                .as_raw(),
        };
        let gpu = Arc::new(Gpu::new(&self.args.gpu.options(), Some(handles)).context("cannot open a Vulkan device")?);
        let renderer = Renderer::new(gpu.clone(), &self.args.scene.renderer_options())?;
        let size = window.inner_size();
        let swapchain = Swapchain::new(
            &gpu,
            vk::Extent2D {
                width: size.width,
                height: size.height,
            },
            !self.args.no_vsync,
        )?;
        self.orbit.aspect = swapchain.extent.width as f32 / swapchain.extent.height as f32;
        self.orbit.height_px = swapchain.extent.height as f32;
        let (writer, reader) = command_cache(RenderFrame::default(), RenderFrame::default());
        let (tx, rx) = channel();
        let mut driver = self.driver.take().expect("the window opens once");
        if self.args.scene.wind_gpu {
            driver.use_gpu_wind(gpu.clone())?;
        }
        if self.args.scene.dynamics_gpu {
            driver.use_gpu_dynamics(gpu.clone())?;
        }
        driver.camera = self.orbit.camera();
        driver.log = true;
        let sim = std::thread::Builder::new()
            .name("simulation".into())
            .spawn(move || simulate(driver, writer, rx))
            .context("cannot start the simulation thread")?;
        eprintln!(
            "sylva view: {} on {}, {}x{}, {:?} presentation",
            gpu.name(),
            if gpu.is_software() {
                "the CPU (software rendering)"
            } else {
                "the GPU"
            },
            swapchain.extent.width,
            swapchain.extent.height,
            swapchain.present_mode
        );
        self.viewer = Some(Viewer {
            window,
            gpu,
            renderer,
            swapchain,
            reader,
            commands: tx,
            sim: Some(sim),
        });
        Ok(())
    }

    fn send(&self, cmd: SimCommand) {
        if let Some(v) = &self.viewer {
            // A closed channel means the simulation thread ended; `shutdown` reports why.
            let _ = v.commands.send(cmd);
        }
    }

    fn camera_changed(&self) {
        self.send(SimCommand::Camera(self.orbit.camera()));
    }

    fn redraw(&mut self, event_loop: &ActiveEventLoop) -> Result<()> {
        let Some(v) = self.viewer.as_mut() else { return Ok(()) };
        if self.needs_resize {
            let size = v.window.inner_size();
            if size.width == 0 || size.height == 0 {
                return Ok(()); // minimised
            }
            v.swapchain.recreate(
                &v.gpu,
                vk::Extent2D {
                    width: size.width,
                    height: size.height,
                },
                !self.args.no_vsync,
            )?;
            self.needs_resize = false;
            self.orbit.aspect = v.swapchain.extent.width as f32 / v.swapchain.extent.height as f32;
            self.orbit.height_px = v.swapchain.extent.height as f32;
            let _ = v.commands.send(SimCommand::Camera(self.orbit.camera()));
        }
        let slot = v.renderer.begin_frame()?;
        let Some((index, target)) = v.swapchain.acquire(&v.gpu, slot)? else {
            self.needs_resize = true;
            return Ok(());
        };
        let last = self.args.frames.is_some_and(|n| self.frames + 1 >= n);
        // Every frame is read back when a screenshot on close is wanted without a frame count,
        // or when recording.
        let readback = (self.args.screenshot.is_some() && (last || self.args.frames.is_none()))
            || self.recorder.is_some()
            || self.shot_wanted;
        let frame = v.reader.acquire();
        if frame.info.scene_id != self.scene_id {
            // A new scene (a dropped file): frame it.
            self.scene_id = frame.info.scene_id;
            self.orbit.target = frame.info.home.0;
            self.orbit.distance = frame.info.home.1;
            let _ = v.commands.send(SimCommand::Camera(self.orbit.camera()));
        }
        self.sphere = frame.spheres.first().map(|s| {
            self.sphere_radius = s.center_radius[3];
            Vec3::new(s.center_radius[0], s.center_radius[1], s.center_radius[2])
        });
        let options = DrawOptions {
            overlay: self.overlay,
            shadows: true,
            help: if self.show_keys { key_list() } else { HELP.to_string() },
            gpu_field: None,
        };
        let output = Output {
            extent: v.swapchain.extent,
            present: Some(target),
            readback,
        };
        let image = v.renderer.draw(&frame, &options, &output)?;
        drop(frame);
        if !v.swapchain.present(&v.gpu, index)? {
            self.needs_resize = true;
        }
        if let Some(image) = &image {
            if let Some(rec) = &mut self.recorder {
                rec.write(&image.to_png())?;
            }
            if std::mem::take(&mut self.shot_wanted) {
                let path = crate::output::free_name(Path::new(SHOT_NAME));
                write_png(&path, image)?;
                eprintln!("sylva view: screenshot {}", path.display());
            }
        }
        if image.is_some() {
            self.last_image = image;
        }
        self.frames += 1;
        self.adjust_lod();
        if last {
            event_loop.exit();
        }
        Ok(())
    }

    /// Automatic level of detail: coarser while frames are slow, finer again when they are fast.
    fn adjust_lod(&mut self) {
        let Some(v) = &self.viewer else { return };
        if !self.auto_lod {
            return;
        }
        self.lod_frames += 1;
        if self.lod_frames < AUTO_LOD_PERIOD {
            return;
        }
        self.lod_frames = 0;
        let old = self.lod_bias;
        self.lod_bias = next_lod_bias(old, v.renderer.fps());
        if self.lod_bias != old {
            self.send(SimCommand::LodBias(self.lod_bias));
        }
    }

    /// The cursor's ray from the near plane: (origin, unit direction).
    fn cursor_ray(&self) -> Option<(Vec3, Vec3)> {
        let v = self.viewer.as_ref()?;
        let ext = v.swapchain.extent;
        let inv = self.orbit.camera().view_proj().inverse();
        let ndc_x = (2.0 * self.cursor.x / ext.width as f64 - 1.0) as f32;
        let ndc_y = (2.0 * self.cursor.y / ext.height as f64 - 1.0) as f32;
        let unproject = |z: f32| {
            let p = inv * Vec4::new(ndc_x, ndc_y, z, 1.0);
            p.truncate() / p.w
        };
        // Reversed depth: 1 is the near plane, smaller is farther.
        let (near, far) = (unproject(1.0), unproject(0.01));
        Some((near, (far - near).normalize_or_zero()))
    }

    /// Adds a wind ball where the cursor's ray meets the horizontal plane through the camera's
    /// target (crown height when the view is framed on the forest).
    fn wind_ball_at_cursor(&mut self) {
        let Some((near, dir)) = self.cursor_ray() else { return };
        let y = self.orbit.camera().target.y.max(0.5);
        if dir.y.abs() < 1e-4 {
            return;
        }
        let t = (y - near.y) / dir.y;
        if t > 0.0 && t.is_finite() {
            self.send(SimCommand::AddWindBall(near + dir * t));
        }
    }

    /// Moves the sphere to where the cursor's ray meets the plane through the sphere facing the
    /// camera.
    fn drag_sphere(&mut self) {
        let (Some(v), Some(centre)) = (&self.viewer, self.sphere) else {
            return;
        };
        let ext = v.swapchain.extent;
        let cam = self.orbit.camera();
        let inv = cam.view_proj().inverse();
        let ndc_x = (2.0 * self.cursor.x / ext.width as f64 - 1.0) as f32;
        let ndc_y = (2.0 * self.cursor.y / ext.height as f64 - 1.0) as f32;
        let unproject = |z: f32| {
            let p = inv * Vec4::new(ndc_x, ndc_y, z, 1.0);
            p.truncate() / p.w
        };
        // Reversed depth: 1 is the near plane, smaller is farther.
        let (near, far) = (unproject(1.0), unproject(0.01));
        let dir = (far - near).normalize_or_zero();
        let normal = (cam.target - cam.eye).normalize_or_zero();
        let denom = dir.dot(normal);
        if denom.abs() < 1e-4 {
            return;
        }
        let t = (centre - near).dot(normal) / denom;
        if t > 0.0 {
            let mut hit = near + dir * t;
            // Keep the sphere above the ground.
            hit.y = hit.y.max(self.sphere_radius);
            self.send(SimCommand::MoveSphere(hit));
            self.sphere_target = Some(hit);
        }
    }

    fn key(&mut self, key: &Key, event_loop: &ActiveEventLoop) {
        match key {
            Key::Named(NamedKey::Escape) => event_loop.exit(),
            Key::Named(NamedKey::F1) => self.show_keys = !self.show_keys,
            Key::Named(NamedKey::Space) => self.send(SimCommand::TogglePause),
            Key::Named(NamedKey::ArrowLeft) => self.send(SimCommand::TurnWind(-15.0)),
            Key::Named(NamedKey::ArrowRight) => self.send(SimCommand::TurnWind(15.0)),
            Key::Named(NamedKey::ArrowUp) => self.send(SimCommand::ChangeWind(1.0)),
            Key::Named(NamedKey::ArrowDown) => self.send(SimCommand::ChangeWind(-1.0)),
            Key::Named(NamedKey::PageUp) => self.send(SimCommand::MoveWindField(1)),
            Key::Named(NamedKey::PageDown) => self.send(SimCommand::MoveWindField(-1)),
            Key::Character(c) => match c.to_lowercase().as_str() {
                "n" => self.send(SimCommand::Step),
                "c" => self.send(SimCommand::ClearWindBalls),
                "w" => self.send(SimCommand::ToggleWindField),
                "r" => self.send(SimCommand::Reset),
                "l" => {
                    self.auto_lod = !self.auto_lod;
                    if !self.auto_lod {
                        self.lod_bias = 1.0;
                        self.send(SimCommand::LodBias(1.0));
                    }
                    eprintln!(
                        "sylva view: automatic level of detail {}",
                        if self.auto_lod { "on" } else { "off" }
                    );
                }
                "o" => {
                    self.overlay = !self.overlay;
                    eprintln!("sylva view: overlay {}", if self.overlay { "on" } else { "off" });
                }
                "s" if self.ctrl => self.send(SimCommand::SaveScene),
                "s" => self.send(SimCommand::SwitchSolver),
                "m" => self.send(SimCommand::CycleModel),
                "k" => self.send(SimCommand::ToggleSelfCollision),
                "t" => self.send(SimCommand::Storm),
                "d" => self.send(SimCommand::DropLeaves),
                "x" => self.send(SimCommand::ToggleSphere),
                "p" => self.shot_wanted = true,
                "q" => event_loop.exit(),
                "h" => self.show_keys = !self.show_keys,
                "f" => {
                    // Back to the frame the scene was opened with.
                    self.scene_id = u64::MAX;
                }
                _ => {}
            },
            _ => {}
        }
    }

    /// Stops the simulation thread, writes the screenshot and reports errors.
    fn shutdown(&mut self) -> Result<()> {
        let mut result = match self.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        };
        if let Some(mut v) = self.viewer.take() {
            let _ = v.commands.send(SimCommand::Quit);
            drop(v.commands);
            // The simulation may be waiting to publish: release the read side by not holding
            // it (no guard is alive here) and join.
            if let Some(sim) = v.sim.take() {
                if sim.join().is_err() && result.is_ok() {
                    result = Err(anyhow!("the simulation thread panicked"));
                }
            }
            let _ = v.renderer.finish();
            v.swapchain.destroy(&v.gpu);
            drop(v.renderer);
            if result.is_ok() {
                result = check_validation(&v.gpu);
            }
            eprintln!("sylva view: {} frames", self.frames);
            if let (Some(rec), Some(dir)) = (&self.recorder, &self.args.record) {
                eprintln!("sylva view: recorded {} frames into {}", rec.frames(), dir.display());
            }
            // `v` drops here, its device (and Vulkan surface) before its window.
        }
        if let (Some(path), Some(image)) = (&self.args.screenshot, &self.last_image) {
            write_png(path, image)?;
        } else if self.args.screenshot.is_some() && result.is_ok() {
            result = Err(anyhow!("no frame was drawn, so there is no screenshot to write"));
        }
        result
    }
}

impl ApplicationHandler for App {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.viewer.is_some() || self.error.is_some() {
            return;
        }
        if let Err(e) = self.open(event_loop) {
            self.error = Some(e);
            event_loop.exit();
        }
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _id: WindowId, event: WindowEvent) {
        match event {
            WindowEvent::CloseRequested => event_loop.exit(),
            WindowEvent::Resized(_) => self.needs_resize = true,
            WindowEvent::RedrawRequested => {
                if let Err(e) = self.redraw(event_loop) {
                    self.error = Some(e);
                    event_loop.exit();
                }
            }
            WindowEvent::ModifiersChanged(m) => {
                self.shift = m.state().shift_key();
                self.ctrl = m.state().control_key();
            }
            WindowEvent::KeyboardInput { event, .. } if event.state == ElementState::Pressed && !event.repeat => {
                self.key(&event.logical_key, event_loop)
            }
            WindowEvent::KeyboardInput { event, .. } if event.state == ElementState::Pressed => {
                // Held arrows keep turning and strengthening the wind.
                if matches!(
                    event.logical_key,
                    Key::Named(NamedKey::ArrowLeft | NamedKey::ArrowRight | NamedKey::ArrowUp | NamedKey::ArrowDown)
                ) {
                    self.key(&event.logical_key, event_loop)
                }
            }
            WindowEvent::MouseInput { state, button, .. } => {
                let i = match button {
                    MouseButton::Left => 0,
                    MouseButton::Middle => 1,
                    MouseButton::Right => 2,
                    _ => return,
                };
                self.buttons[i] = state == ElementState::Pressed;
                if i == 0 && self.ctrl {
                    // A click, not an orbit drag.
                    self.buttons[0] = false;
                    if state == ElementState::Pressed {
                        self.wind_ball_at_cursor();
                    }
                } else if i == 2 && self.buttons[2] {
                    self.drag_sphere();
                } else if i == 2 {
                    if let Some(c) = self.sphere_target.take() {
                        eprintln!("sylva view: sphere moved to ({:.2}, {:.2}, {:.2})", c.x, c.y, c.z);
                    }
                }
            }
            WindowEvent::CursorMoved { position, .. } => {
                let (dx, dy) = ((position.x - self.cursor.x) as f32, (position.y - self.cursor.y) as f32);
                self.cursor = position;
                if self.buttons[2] {
                    self.drag_sphere();
                } else if self.buttons[1] || (self.buttons[0] && self.shift) {
                    self.orbit.pan(dx, dy);
                    self.camera_changed();
                } else if self.buttons[0] {
                    self.orbit.orbit(dx, dy);
                    self.camera_changed();
                }
            }
            WindowEvent::MouseWheel { delta, .. } => {
                let steps = match delta {
                    MouseScrollDelta::LineDelta(_, y) => y,
                    MouseScrollDelta::PixelDelta(p) => (p.y / 40.0) as f32,
                };
                self.orbit.zoom(steps);
                self.camera_changed();
            }
            WindowEvent::DroppedFile(path) => self.send(SimCommand::Load(path)),
            _ => {}
        }
    }

    fn about_to_wait(&mut self, event_loop: &ActiveEventLoop) {
        if let Err(e) = interrupt::check() {
            if self.error.is_none() {
                self.error = Some(e.into());
            }
            event_loop.exit();
            return;
        }
        if let Some(v) = &self.viewer {
            v.window.request_redraw();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn automatic_detail_coarsens_when_slow_and_recovers_when_fast() {
        let mut b = 1.0;
        for _ in 0..40 {
            b = next_lod_bias(b, 5.0);
        }
        assert_eq!(b, MAX_LOD_BIAS);
        assert_eq!(next_lod_bias(2.0, 20.0), 2.0, "inside the band nothing changes");
        assert_eq!(next_lod_bias(2.0, 0.0), 2.0, "no measurement, no change");
        for _ in 0..40 {
            b = next_lod_bias(b, 60.0);
        }
        assert_eq!(b, 1.0);
    }

    #[test]
    fn the_key_list_names_every_key_the_viewer_handles() {
        // The letters `App::key` matches, read from its source.
        let source = include_str!("view.rs");
        let body = &source[source.find("fn key(&mut self").unwrap()..];
        let body = &body[..body.find("\n    }\n").unwrap()];
        let mut letters: Vec<char> = Vec::new();
        for part in body.split('"').skip(1).step_by(2) {
            if part.len() == 1 && part.chars().all(|c| c.is_ascii_lowercase()) {
                letters.push(part.chars().next().unwrap().to_ascii_uppercase());
            }
        }
        letters.dedup();
        assert!(letters.len() >= 15, "{letters:?}");
        let keys: Vec<&str> = KEYS.iter().flat_map(|(k, _)| k.split(", ")).collect();
        for letter in letters {
            let listed = keys
                .iter()
                .any(|k| *k == letter.to_string() || k.ends_with(&format!("-{letter}")));
            assert!(listed, "key {letter} is handled but not in the key list");
        }
        for named in ["F1", "Esc", "space", "PgUp"] {
            assert!(keys.contains(&named), "{named} is handled but not in the key list");
        }
        // One key per line, the descriptions in a column.
        let list = key_list();
        assert_eq!(list.lines().count(), KEYS.len());
        let width = KEYS.iter().map(|(k, _)| k.chars().count()).max().unwrap();
        for (line, (_, what)) in list.lines().zip(KEYS) {
            let description: String = line.chars().skip(width + 2).collect();
            assert_eq!(&description, what, "{line:?}");
        }
    }
}
