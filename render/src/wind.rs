//! The wind solver on the GPU: the twin of `sylva_sim::fluid` (stable fluids on a MAC grid,
//! Oliapuram & Kumar 2010, paper 004 §2) as Vulkan compute shaders (`shaders/glsl/wind_*.comp`).
//!
//! The discretisation is the CPU solver's, described in the module docs of `sylva_sim::fluid`;
//! the kernels follow its arithmetic order, so from the same grid and the same
//! [`StepInputs`] both give the same field to float rounding. One step is:
//!
//! | pass      | kernels                                   | reads                       | writes          |
//! |-----------|-------------------------------------------|-----------------------------|-----------------|
//! | (rebuild) | act, diag (when the open sides change)    | solid flags                 | act, 1/diag, p  |
//! | advect    | centre, advect u, v, w (Eq. 4)            | velocity A, act             | centre, vel. B  |
//! | forces    | forces (Eq. 5, §2.3), if there are balls; | balls, act                  | velocity B      |
//! |           | vorticity confinement (curl, force, apply)| velocity B, act             | conf, centre, B |
//! | pressure  | divergence, Jacobi × N (Eq. 9), ping-pong | velocity B, act, 1/diag     | div, p          |
//! | project   | project (Eq. 7)                           | p, act                      | velocity B      |
//!
//! and the next step swaps the roles of velocity buffers A and B.
//!
//! With the converged pressure solver ([`Pressure::Converged`]) the pressure pass is instead
//! conjugate gradients preconditioned by a multigrid V-cycle (module `pcg`, kernels
//! `wind_mg_*.comp`), updating the pressure in place from the last step's. Whether it has
//! converged is known only on the GPU, so such a step is several submissions: the first runs up
//! to the divergence and as many CG iterations as the last solve took, then the host reads the
//! residual and submits batches of `CG_BATCH` more until the solve is done (iterations past
//! that point do nothing), then the projection. [`GpuFluid::step`] then returns when the step has
//! finished, and [`GpuFluid::last_solve`] says how many iterations it took and the residual.
//!
//! # Synchronisation
//!
//! Every submission goes to [`Gpu::compute_queue`] (the dedicated compute family when the
//! device has one) and is ordered by one timeline semaphore: submission `n` waits for value
//! `n − 1` and signals `n`. A graphics submission that reads the field adds
//! [`GpuFluid::semaphore_wait_info`] to its waits (the renderer does so for wind arrows drawn
//! from the field, `DrawOptions::gpu_field`); the buffers are shared (`CONCURRENT`)
//! between the graphics and compute families when they differ. The velocities of step `n`
//! ([`GpuFluid::field_buffers`]) are left untouched by step `n + 1` (which writes the other
//! velocity buffer and reads this one) and overwritten by step `n + 2`: a reader must have
//! finished (e.g. its frame fence waited) before step `n + 2` is submitted; nothing here
//! checks that. The pressure is overwritten by the next step's Jacobi ping-pong (with two or
//! more iterations), or updated in place by the next converged solve.
//!
//! Two submission slots, each with its command buffer, ball buffer and timestamp queries, let
//! the CPU record step `n + 1` while step `n` runs; a slot is reused only after the timeline
//! passed its previous submission.

use std::sync::Arc;
use std::time::Duration;

use ash::vk;
use gpu_allocator::MemoryLocation;
use sylva_shaders::{GpuWindBall, Spirv, WindBallsHeader, WindPush, WIND_LOCAL_SIZE};
use sylva_sim::fluid::{FluidGrid, Pressure, PressureStats, StepInputs, FLUID_PHASES};

use crate::descriptors::{storage_set_layout, whole, write_storage};
use crate::error::{vk_err, RenderError, Result};
use crate::gpu::{Buffer, Gpu};
use crate::timestamps::TimestampClock;

mod gpu_wind;
mod pcg;
pub use gpu_wind::GpuWind;
use pcg::Pcg;

/// The most wind balls one step may carry.
pub const MAX_WIND_BALLS: usize = 256;
/// Names of the timed passes, as the CPU solver's ([`FLUID_PHASES`]).
pub const WIND_GPU_PASSES: [&str; 4] = FLUID_PHASES;

/// Submission slots (two submissions in flight).
const SLOTS: usize = 2;
/// CG iterations per submission after the first of a converged solve (see [`GpuFluid::step`]).
const CG_BATCH: u32 = 4;
/// Timestamps per step: before advection and after each of the four passes.
const TIMESTAMPS: u32 = 5;
/// Storage buffers per stage the kernels bind (10 field buffers and the balls).
const STORAGE_BUFFERS: u32 = 11;
const FIELD_BINDINGS: u32 = 10;

/// The compute pipelines, in the order of [`KERNELS`].
#[derive(Clone, Copy)]
enum Kernel {
    Act,
    Diag,
    Centre,
    /// Advection of u; `AdvectU as usize + a` is that of component `a`.
    AdvectU,
    Forces = 6,
    Divergence,
    Jacobi,
    Project,
    VortCurl,
    VortForce,
    VortApply,
}

/// Each pipeline's shader and the component it is specialised for (constant 0), if any.
const KERNELS: [(&Spirv, Option<u32>); 13] = [
    (&sylva_shaders::WIND_ACT_COMP, None),
    (&sylva_shaders::WIND_DIAG_COMP, None),
    (&sylva_shaders::WIND_CENTRE_COMP, None),
    (&sylva_shaders::WIND_ADVECT_COMP, Some(0)),
    (&sylva_shaders::WIND_ADVECT_COMP, Some(1)),
    (&sylva_shaders::WIND_ADVECT_COMP, Some(2)),
    (&sylva_shaders::WIND_FORCES_COMP, None),
    (&sylva_shaders::WIND_DIVERGENCE_COMP, None),
    (&sylva_shaders::WIND_JACOBI_COMP, None),
    (&sylva_shaders::WIND_PROJECT_COMP, None),
    (&sylva_shaders::WIND_VORT_CURL_COMP, None),
    (&sylva_shaders::WIND_VORT_FORCE_COMP, None),
    (&sylva_shaders::WIND_VORT_APPLY_COMP, None),
];

/// Where the current field lies on the GPU, for passes that read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldBuffers {
    /// Face velocities: u, then v, then w, each laid out as `FluidGrid::velocity` (f32).
    pub velocity: vk::Buffer,
    /// Byte offsets of u, v and w in `velocity`.
    pub offsets: [u64; 3],
    /// Pressure (f32) in a padded cell array: one ghost layer all round (always 0), cell
    /// `(i, j, k)` at `(i+1) + (nx+2) * ((j+1) + (ny+2) * (k+1))`.
    pub pressure: vk::Buffer,
    /// Cells along x, y, z.
    pub cells: [u32; 3],
}

/// One submission slot.
#[derive(Default)]
struct Slot {
    cmd: vk::CommandBuffer,
    /// Host-visible: [`WindBallsHeader`] then up to [`MAX_WIND_BALLS`] balls.
    balls: Option<Buffer>,
    balls_set: vk::DescriptorSet,
    queries: vk::QueryPool,
    /// Timeline value of the last submission recorded here (0: none yet).
    value: u64,
    /// Whether that submission wrote timestamps not read yet.
    timed: bool,
}

/// Everything the solver owns on the device; `None`/null where not created (yet).
#[derive(Default)]
struct Buffers {
    /// Face velocities, two sets (A and B, swapped each step).
    vel: [Option<Buffer>; 2],
    /// Padded pressure, two for the Jacobi ping-pong.
    p: [Option<Buffer>; 2],
    centre: Option<Buffer>,
    act: Option<Buffer>,
    inv_diag: Option<Buffer>,
    div: Option<Buffer>,
    solid: Option<Buffer>,
    /// Vorticity confinement's (ω, |ω|) per cell.
    conf: Option<Buffer>,
    /// Host-visible copy target of [`GpuFluid::download`], made on first use.
    readback: Option<Buffer>,
}

/// A wind grid stepped on the GPU. See the module docs.
pub struct GpuFluid {
    gpu: Arc<Gpu>,
    n: [usize; 3],
    /// Push constants fixed by the grid (the per-step fields are filled in by `step`).
    push: WindPush,
    origin: glam::Vec3,
    h: glam::Vec3,
    /// Jacobi iterations, when `pcg` is not in use.
    iterations: u32,
    /// The converged solver, when chosen (kept when switching back to Jacobi until dropped).
    pcg: Option<Pcg>,
    converged: bool,
    /// What the last converged solve did.
    solve: Option<PressureStats>,
    bufs: Buffers,
    set_layouts: [vk::DescriptorSetLayout; 2],
    pipeline_layout: vk::PipelineLayout,
    pipelines: [vk::Pipeline; KERNELS.len()],
    descriptor_pool: vk::DescriptorPool,
    /// Field descriptor sets by `2 * velocity parity + pressure parity`.
    field_sets: [vk::DescriptorSet; 4],
    command_pool: vk::CommandPool,
    slots: [Slot; SLOTS],
    semaphore: vk::Semaphore,
    /// Last timeline value submitted.
    value: u64,
    /// Which velocity buffer (A = 0, B = 1) and which pressure buffer hold the current field.
    vp: usize,
    pp: usize,
    /// Open sides the activity and diagonal were built for.
    built_for: Option<[bool; 6]>,
    /// The compute queue's timestamp clock (`None` when it records no timestamps).
    clock: Option<TimestampClock>,
    timings: Option<[Duration; 4]>,
    steps: u64,
}

fn invalid(what: &'static str, value: impl ToString, allowed: impl ToString) -> RenderError {
    RenderError::Invalid {
        what,
        value: value.to_string(),
        allowed: allowed.to_string(),
    }
}

fn groups(extent: [usize; 3]) -> [u32; 3] {
    [0, 1, 2].map(|a| extent[a].div_ceil(WIND_LOCAL_SIZE[a] as usize) as u32)
}

impl GpuFluid {
    /// Uploads the grid's velocities, pressure and solid cells, with the grid's pressure
    /// solver. Fails with a clear error when the grid does not fit the device (buffer range,
    /// memory, workgroup counts).
    pub fn new(gpu: &Arc<Gpu>, grid: &FluidGrid) -> Result<GpuFluid> {
        let params = grid.params();
        let iterations = match params.pressure {
            Pressure::Jacobi { iterations } => iterations,
            Pressure::Converged { .. } => 4,
        };
        let n = grid.cells();
        let h = grid.cell_size();
        let limits = &gpu.properties.limits;
        let cells = n[0] * n[1] * n[2];
        let faces = [0, 1, 2].map(|a| {
            let mut d = n;
            d[a] += 1;
            d[0] * d[1] * d[2]
        });
        let padded = (n[0] + 2) * (n[1] + 2) * (n[2] + 2);
        let vel_bytes = 4 * (faces[0] + faces[1] + faces[2]) as u64;
        let sizes = [
            ("velocity", vel_bytes),
            ("cell-centred velocity", 16 * cells as u64),
            ("pressure", 4 * padded as u64),
        ];
        for (what, bytes) in sizes {
            if bytes > limits.max_storage_buffer_range as u64 {
                return Err(invalid(
                    "wind grid",
                    format!("{}×{}×{} cells ({what} buffer of {bytes} bytes)", n[0], n[1], n[2]),
                    format!(
                        "buffers of at most {} bytes on {} (maxStorageBufferRange): fewer cells",
                        limits.max_storage_buffer_range,
                        gpu.name()
                    ),
                ));
            }
        }
        let total = 2 * vel_bytes + 32 * cells as u64 + 4 * (3 * padded + 3 * cells) as u64;
        let heap = device_local_heap(gpu);
        if total > heap {
            return Err(RenderError::OutOfMemory {
                kind: "device",
                during: format!(
                    "sizing a {}×{}×{} wind grid: it needs {} MiB, {} has {} MiB of device memory",
                    n[0],
                    n[1],
                    n[2],
                    total >> 20,
                    gpu.name(),
                    heap >> 20
                ),
            });
        }
        let padded_extent = [n[0] + 2, n[1] + 2, n[2] + 2];
        let g = groups(padded_extent);
        for a in 0..3 {
            if g[a] > limits.max_compute_work_group_count[a] {
                return Err(invalid(
                    "wind grid",
                    format!("{} cells along axis {a}", n[a]),
                    format!(
                        "at most {} workgroups of {} along that axis on {}",
                        limits.max_compute_work_group_count[a],
                        WIND_LOCAL_SIZE[a],
                        gpu.name()
                    ),
                ));
            }
        }
        if limits.max_per_stage_descriptor_storage_buffers < STORAGE_BUFFERS {
            return Err(RenderError::NoDevice(format!(
                "{} binds {} storage buffers per shader stage, the wind solver needs {STORAGE_BUFFERS}",
                gpu.name(),
                limits.max_per_stage_descriptor_storage_buffers
            )));
        }
        let clock = TimestampClock::of_family(
            &gpu.instance,
            gpu.physical,
            gpu.queues.compute_family(),
            limits.timestamp_period,
        );
        let inv = |x: f32| 1.0 / x;
        let push = WindPush {
            n: [n[0] as u32, n[1] as u32, n[2] as u32, 0],
            h: [h.x, h.y, h.z, params.dt],
            inv_h: [inv(h.x), inv(h.y), inv(h.z), 0.0],
            inv_h2: [inv(h.x * h.x), inv(h.y * h.y), inv(h.z * h.z), 0.0],
            origin: [grid.origin().x, grid.origin().y, grid.origin().z, 0.0],
            border: [0.0; 4],
            sides: [0; 4],
        };
        let mut f = GpuFluid {
            gpu: gpu.clone(),
            n,
            push,
            origin: grid.origin(),
            h,
            iterations,
            pcg: None,
            converged: false,
            solve: None,
            bufs: Buffers::default(),
            set_layouts: [vk::DescriptorSetLayout::null(); 2],
            pipeline_layout: vk::PipelineLayout::null(),
            pipelines: [vk::Pipeline::null(); KERNELS.len()],
            descriptor_pool: vk::DescriptorPool::null(),
            field_sets: [vk::DescriptorSet::null(); 4],
            command_pool: vk::CommandPool::null(),
            slots: Default::default(),
            semaphore: vk::Semaphore::null(),
            value: 0,
            vp: 0,
            pp: 0,
            built_for: None,
            clock,
            timings: None,
            steps: 0,
        };
        // From here on, `f`'s Drop destroys whatever exists if a step fails.
        f.create_buffers(vel_bytes, cells, padded)?;
        f.create_pipelines()?;
        f.create_descriptors()?;
        f.create_submission()?;
        f.upload(grid)?;
        f.set_pressure_solver(params.pressure)?;
        Ok(f)
    }

    fn create_buffers(&mut self, vel_bytes: u64, cells: usize, padded: usize) -> Result<()> {
        let gpu = &self.gpu;
        let families = [gpu.queues.graphics, gpu.queues.compute_family()];
        let storage = vk::BufferUsageFlags::STORAGE_BUFFER
            | vk::BufferUsageFlags::TRANSFER_DST
            | vk::BufferUsageFlags::TRANSFER_SRC;
        let make =
            |name: &str, size: u64| gpu.create_buffer_shared(name, size, storage, MemoryLocation::GpuOnly, &families);
        let b = &mut self.bufs;
        b.vel[0] = Some(make("wind velocity A", vel_bytes)?);
        b.vel[1] = Some(make("wind velocity B", vel_bytes)?);
        b.p[0] = Some(make("wind pressure A", 4 * padded as u64)?);
        b.p[1] = Some(make("wind pressure B", 4 * padded as u64)?);
        b.centre = Some(make("wind cell-centred velocity", 16 * cells as u64)?);
        b.act = Some(make("wind face activity", 4 * padded as u64)?);
        b.inv_diag = Some(make("wind inverse diagonal", 4 * cells as u64)?);
        b.div = Some(make("wind divergence", 4 * cells as u64)?);
        b.solid = Some(make("wind solid cells", 4 * cells as u64)?);
        b.conf = Some(make("wind vorticity", 16 * cells as u64)?);
        let ball_bytes = (size_of::<WindBallsHeader>() + MAX_WIND_BALLS * size_of::<GpuWindBall>()) as u64;
        for (i, slot) in self.slots.iter_mut().enumerate() {
            slot.balls = Some(gpu.create_buffer(
                &format!("wind balls {i}"),
                ball_bytes,
                vk::BufferUsageFlags::STORAGE_BUFFER,
                MemoryLocation::CpuToGpu,
            )?);
        }
        Ok(())
    }

    fn create_pipelines(&mut self) -> Result<()> {
        let dev = &self.gpu.device;
        self.set_layouts[0] = storage_set_layout(dev, FIELD_BINDINGS)?;
        self.set_layouts[1] = storage_set_layout(dev, 1)?;
        let ranges = [vk::PushConstantRange {
            stage_flags: vk::ShaderStageFlags::COMPUTE,
            offset: 0,
            size: size_of::<WindPush>() as u32,
        }];
        let info = vk::PipelineLayoutCreateInfo::default()
            .set_layouts(&self.set_layouts)
            .push_constant_ranges(&ranges);
        // SAFETY: the set layouts were just created from this device.
        self.pipeline_layout =
            unsafe { dev.create_pipeline_layout(&info, None) }.map_err(vk_err("vkCreatePipelineLayout"))?;
        for (k, (spirv, component)) in KERNELS.iter().enumerate() {
            // The kernels' interface (two sets of storage buffers, the push block) matches the
            // layout.
            self.pipelines[k] = compute_pipeline(&self.gpu, self.pipeline_layout, spirv, *component)?;
        }
        Ok(())
    }

    fn create_descriptors(&mut self) -> Result<()> {
        let dev = &self.gpu.device;
        let sizes = [vk::DescriptorPoolSize {
            ty: vk::DescriptorType::STORAGE_BUFFER,
            descriptor_count: 4 * FIELD_BINDINGS + SLOTS as u32,
        }];
        let info = vk::DescriptorPoolCreateInfo::default()
            .max_sets(4 + SLOTS as u32)
            .pool_sizes(&sizes);
        // SAFETY: valid device and create info.
        self.descriptor_pool =
            unsafe { dev.create_descriptor_pool(&info, None) }.map_err(vk_err("vkCreateDescriptorPool"))?;
        let layouts = [
            self.set_layouts[0],
            self.set_layouts[0],
            self.set_layouts[0],
            self.set_layouts[0],
            self.set_layouts[1],
            self.set_layouts[1],
        ];
        let alloc = vk::DescriptorSetAllocateInfo::default()
            .descriptor_pool(self.descriptor_pool)
            .set_layouts(&layouts);
        // SAFETY: the pool has room for exactly these sets.
        let sets = unsafe { dev.allocate_descriptor_sets(&alloc) }.map_err(vk_err("vkAllocateDescriptorSets"))?;
        self.field_sets.copy_from_slice(&sets[..4]);
        let b = &self.bufs;
        let raw = |o: &Option<Buffer>| o.as_ref().expect("created before the descriptors").raw;
        let mut infos = Vec::new();
        for vp in 0..2 {
            for pp in 0..2 {
                let set = sets[2 * vp + pp];
                let order = [
                    raw(&b.vel[vp]),
                    raw(&b.vel[1 - vp]),
                    raw(&b.centre),
                    raw(&b.act),
                    raw(&b.inv_diag),
                    raw(&b.div),
                    raw(&b.p[pp]),
                    raw(&b.p[1 - pp]),
                    raw(&b.solid),
                    raw(&b.conf),
                ];
                for (i, buffer) in order.into_iter().enumerate() {
                    infos.push((set, i as u32, whole(buffer)));
                }
            }
        }
        for (s, slot) in self.slots.iter_mut().enumerate() {
            slot.balls_set = sets[4 + s];
            infos.push((slot.balls_set, 0, whole(raw(&slot.balls))));
        }
        // SAFETY: every set and buffer is alive and no command buffer uses the sets yet.
        unsafe { write_storage(dev, &infos) };
        Ok(())
    }

    fn create_submission(&mut self) -> Result<()> {
        let dev = &self.gpu.device;
        let info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(self.gpu.queues.compute_family())
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        // SAFETY: valid device and create info.
        self.command_pool = unsafe { dev.create_command_pool(&info, None) }.map_err(vk_err("vkCreateCommandPool"))?;
        let alloc = vk::CommandBufferAllocateInfo::default()
            .command_pool(self.command_pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(SLOTS as u32);
        // SAFETY: the pool was just created from this device.
        let cmds = unsafe { dev.allocate_command_buffers(&alloc) }.map_err(vk_err("vkAllocateCommandBuffers"))?;
        for (slot, cmd) in self.slots.iter_mut().zip(cmds) {
            slot.cmd = cmd;
            if self.clock.is_some() {
                let info = vk::QueryPoolCreateInfo::default()
                    .query_type(vk::QueryType::TIMESTAMP)
                    .query_count(TIMESTAMPS);
                // SAFETY: valid device and create info.
                slot.queries = unsafe { dev.create_query_pool(&info, None) }.map_err(vk_err("vkCreateQueryPool"))?;
            }
        }
        let mut timeline = vk::SemaphoreTypeCreateInfo::default()
            .semaphore_type(vk::SemaphoreType::TIMELINE)
            .initial_value(0);
        let info = vk::SemaphoreCreateInfo::default().push_next(&mut timeline);
        // SAFETY: valid device; timeline semaphores are enabled on every Gpu (see gpu.rs).
        self.semaphore = unsafe { dev.create_semaphore(&info, None) }.map_err(vk_err("vkCreateSemaphore"))?;
        Ok(())
    }

    /// Copies the grid's state into the device buffers (through a staging buffer) and zeroes
    /// the scratch buffers.
    fn upload(&mut self, grid: &FluidGrid) -> Result<()> {
        let n = self.n;
        let cells = n[0] * n[1] * n[2];
        let mut vel: Vec<f32> = Vec::new();
        for a in 0..3 {
            vel.extend_from_slice(grid.velocity(a));
        }
        let p = self.pad_pressure(&grid.pressure());
        let solid: Vec<u32> = grid.solid().iter().map(|&s| s as u32).collect();
        if solid.len() != cells || vel.len() * 4 != self.bufs.vel[0].as_ref().map_or(0, |b| b.size as usize) {
            return Err(invalid(
                "wind grid arrays",
                format!("{} solid flags, {} velocities", solid.len(), vel.len()),
                "one flag per cell and one velocity per face",
            ));
        }
        let vel_bytes = 4 * vel.len() as u64;
        let p_bytes = 4 * p.len() as u64;
        let solid_bytes = 4 * solid.len() as u64;
        let mut staging = self.gpu.create_buffer(
            "wind upload",
            vel_bytes + p_bytes + solid_bytes,
            vk::BufferUsageFlags::TRANSFER_SRC,
            MemoryLocation::CpuToGpu,
        )?;
        staging.write(0, &vel);
        staging.write(vel_bytes as usize, &p);
        staging.write((vel_bytes + p_bytes) as usize, &solid);
        let result = (|| {
            let (si, cmd) = self.begin()?;
            let dev = &self.gpu.device;
            let b = &self.bufs;
            let raw = |o: &Option<Buffer>| o.as_ref().expect("created").raw;
            // SAFETY: `cmd` is recording; every buffer is alive until the submission completes
            // (the staging buffer is destroyed only after the wait below).
            unsafe {
                let copy = |dst: vk::Buffer, src_offset: u64, size: u64| {
                    let region = [vk::BufferCopy {
                        src_offset,
                        dst_offset: 0,
                        size,
                    }];
                    dev.cmd_copy_buffer(cmd, staging.raw, dst, &region);
                };
                copy(raw(&b.vel[0]), 0, vel_bytes);
                copy(raw(&b.p[0]), vel_bytes, p_bytes);
                copy(raw(&b.solid), vel_bytes + p_bytes, solid_bytes);
                for buffer in [&b.vel[1], &b.p[1], &b.centre, &b.act, &b.inv_diag, &b.div, &b.conf] {
                    dev.cmd_fill_buffer(cmd, raw(buffer), 0, vk::WHOLE_SIZE, 0);
                }
            }
            self.submit(si, false)?;
            self.wait()
        })();
        if result.is_err() {
            // The copy may still be pending: wait before freeing its source.
            let _ = self.gpu.wait_idle();
        }
        self.gpu.destroy_buffer(staging);
        result
    }

    /// Pressure in cell order to the padded layout.
    fn pad_pressure(&self, p: &[f32]) -> Vec<f32> {
        let [nx, ny, nz] = self.n;
        let mut out = vec![0.0f32; (nx + 2) * (ny + 2) * (nz + 2)];
        for k in 0..nz {
            for j in 0..ny {
                let src = nx * (j + ny * k);
                let dst = 1 + (nx + 2) * ((j + 1) + (ny + 2) * (k + 1));
                if let Some(row) = p.get(src..src + nx) {
                    out[dst..dst + nx].copy_from_slice(row);
                }
            }
        }
        out
    }

    /// Takes the slot for the next submission: waits until its previous submission is done,
    /// collects its timestamps and begins its command buffer.
    fn begin(&mut self) -> Result<(usize, vk::CommandBuffer)> {
        let si = ((self.value + 1) % SLOTS as u64) as usize;
        self.wait_value(self.slots[si].value)?;
        self.collect_timestamps(si)?;
        let cmd = self.slots[si].cmd;
        let dev = &self.gpu.device;
        // SAFETY: the slot's previous submission has completed (waited above), so its command
        // buffer is not pending; the pool allows resetting single buffers.
        unsafe {
            dev.reset_command_buffer(cmd, vk::CommandBufferResetFlags::empty())
                .map_err(vk_err("vkResetCommandBuffer"))?;
            let begin = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
            dev.begin_command_buffer(cmd, &begin)
                .map_err(vk_err("vkBeginCommandBuffer"))?;
        }
        Ok((si, cmd))
    }

    /// Ends slot `si`'s command buffer and submits it after the previous submission, signalling
    /// the next timeline value.
    fn submit(&mut self, si: usize, timed: bool) -> Result<()> {
        let cmd = self.slots[si].cmd;
        // SAFETY: the buffer is recording (begun in `begin`).
        unsafe { self.gpu.device.end_command_buffer(cmd) }.map_err(vk_err("vkEndCommandBuffer"))?;
        let next = self.value + 1;
        let waits = [vk::SemaphoreSubmitInfo::default()
            .semaphore(self.semaphore)
            .value(self.value)
            .stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS)];
        let signals = [vk::SemaphoreSubmitInfo::default()
            .semaphore(self.semaphore)
            .value(next)
            .stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS)];
        let waits: &[vk::SemaphoreSubmitInfo<'_>] = if self.value > 0 { &waits } else { &[] };
        let cmds = [vk::CommandBufferSubmitInfo::default().command_buffer(cmd)];
        let submit = vk::SubmitInfo2::default()
            .wait_semaphore_infos(waits)
            .command_buffer_infos(&cmds)
            .signal_semaphore_infos(&signals);
        self.gpu.submit_compute(&[submit], vk::Fence::null())?;
        self.value = next;
        self.slots[si].value = next;
        self.slots[si].timed = timed;
        Ok(())
    }

    /// Blocks until the timeline reaches `value`.
    fn wait_value(&self, value: u64) -> Result<()> {
        if value == 0 {
            return Ok(());
        }
        let semaphores = [self.semaphore];
        let values = [value];
        let info = vk::SemaphoreWaitInfo::default().semaphores(&semaphores).values(&values);
        // SAFETY: the semaphore is a timeline semaphore of this device; every value waited for
        // was submitted to be signalled.
        unsafe { self.gpu.device.wait_semaphores(&info, u64::MAX) }.map_err(vk_err("vkWaitSemaphores"))
    }

    fn collect_timestamps(&mut self, si: usize) -> Result<()> {
        let slot = &mut self.slots[si];
        if !slot.timed {
            return Ok(());
        }
        slot.timed = false;
        let Some(clock) = self.clock else {
            return Ok(());
        };
        let mut ticks = [0u64; TIMESTAMPS as usize];
        // SAFETY: the slot's pool has TIMESTAMPS queries, written on the compute queue by the
        // submission that used the slot, which has completed.
        if !unsafe { clock.read(&self.gpu.device, slot.queries, &mut ticks, false) }? {
            return Ok(());
        }
        self.timings = Some([0, 1, 2, 3].map(|p| clock.span(ticks[p], ticks[p + 1])));
        Ok(())
    }

    /// The first `count` timestamps of slot `si`, whose submission has completed (`None`
    /// without timestamps).
    fn read_stamps(&self, si: usize, count: usize) -> Result<Option<Vec<u64>>> {
        let Some(clock) = self.clock else {
            return Ok(None);
        };
        let mut ticks = vec![0u64; count];
        // SAFETY: the slot's pool has TIMESTAMPS ≥ `count` queries, written on the compute
        // queue by a submission that has completed (waited by the caller), so WAIT returns at
        // once.
        unsafe { clock.read(&self.gpu.device, self.slots[si].queries, &mut ticks, true) }?;
        Ok(Some(ticks))
    }

    /// Time between two timestamps (zero without timestamps).
    fn span(&self, a: u64, b: u64) -> Duration {
        self.clock.map_or(Duration::ZERO, |c| c.span(a, b))
    }

    /// Changes the pressure solver: a fixed number of Jacobi iterations, or multigrid-
    /// preconditioned conjugate gradients to a relative residual (the CPU solver's, see
    /// `sylva_sim::fluid::Pressure`), whose buffers are made on first use. Parameters are
    /// checked against the same ranges as the CPU's.
    pub fn set_pressure_solver(&mut self, pressure: Pressure) -> Result<()> {
        match pressure {
            Pressure::Jacobi { iterations } if (1..=10_000).contains(&iterations) => {
                self.iterations = iterations;
                self.converged = false;
                Ok(())
            }
            Pressure::Jacobi { iterations } => Err(invalid("Jacobi iterations", iterations, "1 to 10000")),
            Pressure::Converged { tolerance, .. } if !(1e-7..=0.5).contains(&tolerance) => {
                Err(invalid("pressure tolerance", tolerance, "1e-7 to 0.5"))
            }
            Pressure::Converged { max_iterations, .. } if !(1..=10_000).contains(&max_iterations) => {
                Err(invalid("pressure iterations", max_iterations, "1 to 10000"))
            }
            Pressure::Converged {
                tolerance,
                max_iterations,
            } => {
                if self.pcg.is_none() {
                    let layout = self.set_layouts[0];
                    self.pcg = Some(Pcg::new(&self.gpu, self.n, self.h, layout, tolerance, max_iterations)?);
                    // The hierarchy is built with the operators at the next step.
                    self.built_for = None;
                }
                let pcg = self.pcg.as_mut().expect("made above");
                pcg.tolerance = tolerance;
                pcg.max_iterations = max_iterations;
                self.converged = true;
                Ok(())
            }
        }
    }

    /// What the last step's converged pressure solve did (`None` before one, and with Jacobi).
    pub fn last_solve(&self) -> Option<PressureStats> {
        self.solve.filter(|_| self.converged)
    }

    /// Records and submits one step (advect, forces, pressure, project) with the inputs the
    /// CPU grid's `next_inputs` drew. With Jacobi pressure it returns once submitted
    /// ([`wait`](Self::wait) blocks); with the converged solver, once the step has finished (see
    /// the module docs).
    pub fn step(&mut self, inputs: &StepInputs) -> Result<()> {
        if inputs.balls.len() > MAX_WIND_BALLS {
            return Err(invalid(
                "number of wind balls",
                inputs.balls.len(),
                format!("at most {MAX_WIND_BALLS} on the GPU"),
            ));
        }
        for &(c, r, a) in &inputs.balls {
            if !(c.is_finite() && a.is_finite() && r > 0.0 && r.is_finite()) {
                return Err(invalid(
                    "wind ball",
                    format!("centre {c}, radius {r}, acceleration {a}"),
                    "finite values and a positive radius",
                ));
            }
        }
        if !inputs.border.is_finite() {
            return Err(invalid("border wind", inputs.border, "finite values"));
        }
        let mut push = self.push;
        push.n[3] = inputs.balls.len() as u32;
        push.border = [inputs.border.x, inputs.border.y, inputs.border.z, 0.0];
        let bits = |f: &[bool; 6]| f.iter().enumerate().fold(0u32, |m, (s, &b)| m | ((b as u32) << s));
        push.sides = [bits(&inputs.inflow), bits(&inputs.open), 0, 0];
        if !(0.0..=FluidGrid::MAX_VORTICITY).contains(&inputs.vorticity) {
            return Err(invalid(
                "vorticity confinement",
                inputs.vorticity,
                format!("0 to {}", FluidGrid::MAX_VORTICITY),
            ));
        }
        push.border[3] = inputs.vorticity;

        let (si, cmd) = self.begin()?;
        let force_slabs = self.write_balls(si, inputs);
        let rebuild = self.built_for != Some(inputs.open);
        let n = self.n;
        let cells_g = groups(n);
        let faces_g = groups([n[0] + 1, n[1] + 1, n[2] + 1]);
        let padded_g = groups([n[0] + 2, n[1] + 2, n[2] + 2]);
        let dev = &self.gpu.device;
        let slot = &self.slots[si];
        let timestamps = self.clock.is_some();
        let (mut vp, mut pp) = (self.vp, self.pp);
        let stamp = |i: u32| {
            if timestamps {
                // SAFETY: the pool has TIMESTAMPS queries, reset at the start of this buffer.
                unsafe { dev.cmd_write_timestamp2(cmd, vk::PipelineStageFlags2::COMPUTE_SHADER, slot.queries, i) };
            }
        };
        let dispatch_index = |k: usize, set: usize, g: [u32; 3]| {
            // SAFETY: `cmd` is recording; the pipeline, layout and sets belong to this solver
            // and outlive the submission (destroyed only in Drop, after waiting).
            unsafe {
                dev.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, self.pipelines[k]);
                dev.cmd_bind_descriptor_sets(
                    cmd,
                    vk::PipelineBindPoint::COMPUTE,
                    self.pipeline_layout,
                    0,
                    &[self.field_sets[set]],
                    &[],
                );
                dev.cmd_dispatch(cmd, g[0], g[1], g[2]);
            }
        };
        let dispatch = |k: Kernel, set: usize, g: [u32; 3]| dispatch_index(k as usize, set, g);
        let barrier = || {
            let mb = [vk::MemoryBarrier2::default()
                .src_stage_mask(vk::PipelineStageFlags2::COMPUTE_SHADER)
                .src_access_mask(vk::AccessFlags2::SHADER_STORAGE_WRITE)
                .dst_stage_mask(vk::PipelineStageFlags2::COMPUTE_SHADER)
                .dst_access_mask(vk::AccessFlags2::SHADER_STORAGE_READ | vk::AccessFlags2::SHADER_STORAGE_WRITE)];
            // SAFETY: `cmd` is recording.
            unsafe { dev.cmd_pipeline_barrier2(cmd, &vk::DependencyInfo::default().memory_barriers(&mb)) };
        };
        // SAFETY: `cmd` is recording; the query pool (when timed) belongs to this slot, whose
        // previous submission has completed.
        unsafe {
            if timestamps {
                dev.cmd_reset_query_pool(cmd, slot.queries, 0, TIMESTAMPS);
            }
        }
        let bind_wind = || self.bind(cmd, &push, 1, &[slot.balls_set]);
        bind_wind();
        let set = |vp: usize, pp: usize| 2 * vp + pp;
        let pcg = self.pcg.as_ref().filter(|_| self.converged);
        if rebuild {
            // The open sides changed (or this is the first step): face activity and the
            // pressure equation's diagonal, as the CPU rebuilds them.
            dispatch(Kernel::Act, set(vp, pp), padded_g);
            barrier();
            dispatch(Kernel::Diag, set(vp, pp), cells_g);
            barrier();
            if let Some(pcg) = pcg {
                let act = self.bufs.act.as_ref().expect("created").raw;
                pcg.record_rebuild(cmd, self.field_sets[set(vp, pp)], act);
                // The multigrid kernels' layout differs in set 1 and the push constants.
                bind_wind();
            }
        }
        stamp(0);
        dispatch(Kernel::Centre, set(vp, pp), cells_g);
        barrier();
        for a in 0..3 {
            let mut d = n;
            d[a] += 1;
            dispatch_index(Kernel::AdvectU as usize + a, set(vp, pp), groups(d));
            // The components write disjoint parts of the buffer, but a barrier per component
            // keeps the synchronisation validation (which sees whole bindings) quiet and costs
            // little beside the dispatch.
            barrier();
        }
        stamp(1);
        if let Some((k0, k1)) = force_slabs {
            // Only the face slabs some ball reaches: the kernel adds `sides.z` to its k.
            let mut p = push;
            p.sides[2] = k0 as u32;
            // SAFETY: `cmd` is recording with this layout.
            unsafe {
                dev.cmd_push_constants(
                    cmd,
                    self.pipeline_layout,
                    vk::ShaderStageFlags::COMPUTE,
                    0,
                    bytemuck::bytes_of(&p),
                )
            };
            let mut g = faces_g;
            g[2] = groups([1, 1, (k1 - k0 + 1) as usize])[2];
            dispatch(Kernel::Forces, set(vp, pp), g);
            barrier();
            // SAFETY: as above.
            unsafe {
                dev.cmd_push_constants(
                    cmd,
                    self.pipeline_layout,
                    vk::ShaderStageFlags::COMPUTE,
                    0,
                    bytemuck::bytes_of(&push),
                )
            };
        }
        if inputs.vorticity > 0.0 {
            dispatch(Kernel::VortCurl, set(vp, pp), cells_g);
            barrier();
            dispatch(Kernel::VortForce, set(vp, pp), cells_g);
            barrier();
            dispatch(Kernel::VortApply, set(vp, pp), faces_g);
            barrier();
        }
        stamp(2);
        dispatch(Kernel::Divergence, set(vp, pp), cells_g);
        barrier();
        if let Some(pcg) = pcg {
            let any_open = inputs.open.iter().any(|&o| o);
            let field_set = self.field_sets[set(vp, pp)];
            pcg.record_init(cmd, field_set, any_open);
            let first = pcg.last_iterations.clamp(1, pcg.max_iterations);
            pcg.record_iterations(cmd, field_set, first, any_open);
            pcg.record_readback(cmd);
            stamp(3);
            self.submit(si, false)?;
            self.built_for = Some(inputs.open);
            return self.finish_converged(si, push, any_open);
        }
        for _ in 0..self.iterations {
            dispatch(Kernel::Jacobi, set(vp, pp), cells_g);
            barrier();
            pp ^= 1;
        }
        stamp(3);
        dispatch(Kernel::Project, set(vp, pp), faces_g);
        stamp(4);
        vp ^= 1;
        self.submit(si, timestamps)?;
        self.vp = vp;
        self.pp = pp;
        self.built_for = Some(inputs.open);
        self.steps += 1;
        Ok(())
    }

    /// The rest of a step with the converged pressure solver, whose first part (advection,
    /// forces, divergence, the solve's start and its first batch of iterations) was submitted
    /// from slot `first`: more batches of [`CG_BATCH`] iterations until the solve is done (the
    /// host reads the GPU's scalars after each), then the projection. Waits for all of it.
    fn finish_converged(&mut self, first: usize, push: WindPush, any_open: bool) -> Result<()> {
        self.wait_value(self.value)?;
        let stamps = self.read_stamps(first, 4)?;
        let mut times = stamps.map(|t| [self.span(t[0], t[1]), self.span(t[1], t[2]), self.span(t[2], t[3])]);
        let field_set = self.field_sets[2 * self.vp + self.pp];
        loop {
            let pcg = self.pcg.as_ref().expect("converged solver");
            if pcg.outcome().done {
                break;
            }
            let (si, cmd) = self.begin()?;
            self.record_timed(si, cmd, |me| {
                let pcg = me.pcg.as_ref().expect("converged solver");
                pcg.record_iterations(cmd, field_set, CG_BATCH, any_open);
                pcg.record_readback(cmd);
            });
            self.submit(si, false)?;
            self.wait_value(self.value)?;
            if let (Some(t), Some(s)) = (times.as_mut(), self.read_stamps(si, 2)?) {
                t[2] += self.span(s[0], s[1]);
            }
        }
        let outcome = self.pcg.as_ref().expect("converged solver").outcome();
        let (si, cmd) = self.begin()?;
        let g = groups([self.n[0] + 1, self.n[1] + 1, self.n[2] + 1]);
        self.record_timed(si, cmd, |me| {
            // The slot's balls set is bound because the layout has it; the projection reads none.
            me.bind(cmd, &push, 0, &[field_set, me.slots[si].balls_set]);
            let dev = &me.gpu.device;
            // SAFETY: `cmd` is recording; the pipeline belongs to this solver and outlives the
            // submission.
            unsafe {
                dev.cmd_bind_pipeline(
                    cmd,
                    vk::PipelineBindPoint::COMPUTE,
                    me.pipelines[Kernel::Project as usize],
                );
                dev.cmd_dispatch(cmd, g[0], g[1], g[2]);
            }
        });
        self.submit(si, false)?;
        self.wait_value(self.value)?;
        let project = self.read_stamps(si, 2)?;
        if let (Some(t), Some(s)) = (times, project) {
            self.timings = Some([t[0], t[1], t[2], self.span(s[0], s[1])]);
        }
        let pcg = self.pcg.as_mut().expect("converged solver");
        pcg.last_iterations = outcome.iterations;
        self.solve = Some(PressureStats {
            iterations: outcome.iterations,
            residual_rel: outcome.residual_rel,
            converged: outcome.converged,
        });
        self.vp ^= 1;
        self.steps += 1;
        Ok(())
    }

    /// Records the kernels' push constants and binds `sets` from set number `first`.
    fn bind(&self, cmd: vk::CommandBuffer, push: &WindPush, first: u32, sets: &[vk::DescriptorSet]) {
        let dev = &self.gpu.device;
        // SAFETY: `cmd` is recording; the layout and sets belong to this solver and outlive the
        // submission.
        unsafe {
            dev.cmd_push_constants(
                cmd,
                self.pipeline_layout,
                vk::ShaderStageFlags::COMPUTE,
                0,
                bytemuck::bytes_of(push),
            );
            dev.cmd_bind_descriptor_sets(
                cmd,
                vk::PipelineBindPoint::COMPUTE,
                self.pipeline_layout,
                first,
                sets,
                &[],
            );
        }
    }

    /// Records `body` into slot `si`'s command buffer between its timestamps 0 and 1.
    fn record_timed(&self, si: usize, cmd: vk::CommandBuffer, body: impl FnOnce(&Self)) {
        let dev = &self.gpu.device;
        let queries = self.slots[si].queries;
        // SAFETY: `cmd` is recording; the slot's query pool has TIMESTAMPS queries and its
        // previous submission has completed.
        unsafe {
            if self.clock.is_some() {
                dev.cmd_reset_query_pool(cmd, queries, 0, 2);
                dev.cmd_write_timestamp2(cmd, vk::PipelineStageFlags2::COMPUTE_SHADER, queries, 0);
            }
        }
        body(self);
        // SAFETY: as above.
        unsafe {
            if self.clock.is_some() {
                dev.cmd_write_timestamp2(cmd, vk::PipelineStageFlags2::COMPUTE_SHADER, queries, 1);
            }
        }
    }

    /// Fills slot `si`'s ball buffer: the slabs the balls reach per component and the balls,
    /// with the reach and 1/r² computed as the CPU computes them. Returns the range of face
    /// slabs any component needs (`None`: no ball reaches the grid).
    fn write_balls(&mut self, si: usize, inputs: &StepInputs) -> Option<(i32, i32)> {
        let (origin, h, n) = (self.origin, self.h, self.n);
        let mut header = WindBallsHeader::default();
        for a in 0..3 {
            let fd_z = if a == 2 { n[2] + 1 } else { n[2] };
            let off_z = if a == 2 { 0.0 } else { 0.5 };
            let (mut lo, mut hi) = (usize::MAX, 0usize);
            for &(c, r, _) in &inputs.balls {
                let g0 = ((c.z - 3.0 * r - origin.z) / h.z - off_z).ceil().max(0.0);
                let g1 = ((c.z + 3.0 * r - origin.z) / h.z - off_z)
                    .floor()
                    .min(fd_z as f32 - 1.0);
                if g0 <= g1 {
                    lo = lo.min(g0 as usize);
                    hi = hi.max(g1 as usize);
                }
            }
            if lo > hi {
                (header.k_lo[a], header.k_hi[a]) = (1, 0);
            } else {
                (header.k_lo[a], header.k_hi[a]) = (lo as i32, hi as i32);
            }
        }
        let k0 = (0..3)
            .filter(|&a| header.k_lo[a] <= header.k_hi[a])
            .map(|a| header.k_lo[a])
            .min();
        let k1 = (0..3)
            .filter(|&a| header.k_lo[a] <= header.k_hi[a])
            .map(|a| header.k_hi[a])
            .max();
        let balls: Vec<GpuWindBall> = inputs
            .balls
            .iter()
            .map(|&(c, r, a)| GpuWindBall {
                centre_reach2: [c.x, c.y, c.z, 9.0 * r * r],
                accel_inv_r2: [a.x, a.y, a.z, 1.0 / (r * r)],
            })
            .collect();
        let buffer = self.slots[si].balls.as_mut().expect("created in new");
        buffer.write(0, std::slice::from_ref(&header));
        if !balls.is_empty() {
            buffer.write(size_of::<WindBallsHeader>(), &balls);
        }
        k0.zip(k1)
    }

    /// Blocks until every submitted step has finished, then reads the last step's timestamps.
    pub fn wait(&mut self) -> Result<()> {
        self.wait_value(self.value)?;
        // Older slot first, so the timings end up those of the newest step.
        let mut order: Vec<usize> = (0..SLOTS).collect();
        order.sort_by_key(|&s| self.slots[s].value);
        for s in order {
            self.collect_timestamps(s)?;
        }
        Ok(())
    }

    /// GPU time of the passes (advect, forces, pressure, project, as [`WIND_GPU_PASSES`]) of
    /// the newest step whose timestamps were read (by [`wait`](Self::wait), or when its slot
    /// was reused); `None` before that or when the compute queue has no timestamps.
    pub fn timings(&self) -> Option<[Duration; 4]> {
        self.timings
    }

    /// Whether the compute queue records timestamps.
    pub fn has_timestamps(&self) -> bool {
        self.clock.is_some()
    }

    /// Steps submitted so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Bytes one [`download`](Self::download) copies back (velocities and pressure).
    pub fn download_bytes(&self) -> u64 {
        let size = |b: &Option<Buffer>| b.as_ref().map_or(0, |b| b.size);
        size(&self.bufs.vel[0]) + size(&self.bufs.p[0])
    }

    /// Copies the current velocities and pressure back into `grid` (which must have the same
    /// cell counts). Waits for every submitted step.
    pub fn download(&mut self, grid: &mut FluidGrid) -> Result<()> {
        if grid.cells() != self.n {
            return Err(invalid(
                "grid to download into",
                format!("{:?} cells", grid.cells()),
                format!("the GPU grid's {:?} cells", self.n),
            ));
        }
        let vel_bytes = self.bufs.vel[0].as_ref().expect("created").size;
        let p_bytes = self.bufs.p[0].as_ref().expect("created").size;
        if self.bufs.readback.is_none() {
            self.bufs.readback = Some(self.gpu.create_buffer(
                "wind readback",
                vel_bytes + p_bytes,
                vk::BufferUsageFlags::TRANSFER_DST,
                MemoryLocation::GpuToCpu,
            )?);
        }
        let (si, cmd) = self.begin()?;
        {
            let dev = &self.gpu.device;
            let b = &self.bufs;
            let raw = |o: &Option<Buffer>| o.as_ref().expect("created").raw;
            let readback = raw(&b.readback);
            // SAFETY: `cmd` is recording; the buffers are alive until the wait below.
            unsafe {
                let copy = |src: vk::Buffer, dst_offset: u64, size: u64| {
                    let region = [vk::BufferCopy {
                        src_offset: 0,
                        dst_offset,
                        size,
                    }];
                    dev.cmd_copy_buffer(cmd, src, readback, &region);
                };
                copy(raw(&b.vel[self.vp]), 0, vel_bytes);
                copy(raw(&b.p[self.pp]), vel_bytes, p_bytes);
                let to_host = [vk::MemoryBarrier2::default()
                    .src_stage_mask(vk::PipelineStageFlags2::TRANSFER)
                    .src_access_mask(vk::AccessFlags2::TRANSFER_WRITE)
                    .dst_stage_mask(vk::PipelineStageFlags2::HOST)
                    .dst_access_mask(vk::AccessFlags2::HOST_READ)];
                dev.cmd_pipeline_barrier2(cmd, &vk::DependencyInfo::default().memory_barriers(&to_host));
            }
        }
        self.submit(si, false)?;
        self.wait()?;
        let bytes = self.bufs.readback.as_ref().expect("created").read();
        let floats: Vec<f32> = bytes[..(vel_bytes + p_bytes) as usize]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let (vel, p) = floats.split_at((vel_bytes / 4) as usize);
        let mut start = 0;
        for a in 0..3 {
            let dst = grid.velocity_mut(a);
            let len = dst.len();
            dst.copy_from_slice(&vel[start..start + len]);
            start += len;
        }
        let [nx, ny, nz] = self.n;
        let mut cells = Vec::with_capacity(nx * ny * nz);
        for k in 0..nz {
            for j in 0..ny {
                let row = 1 + (nx + 2) * ((j + 1) + (ny + 2) * (k + 1));
                cells.extend_from_slice(&p[row..row + nx]);
            }
        }
        grid.set_pressure(&cells);
        Ok(())
    }

    /// A wait for graphics (or other) submissions that read the field: the timeline value of
    /// the last submitted step, at every stage.
    pub fn semaphore_wait_info(&self) -> vk::SemaphoreSubmitInfo<'static> {
        vk::SemaphoreSubmitInfo::default()
            .semaphore(self.semaphore)
            .value(self.value)
            .stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS)
    }

    /// The timeline semaphore and the value the last submitted step signals.
    pub fn timeline(&self) -> (vk::Semaphore, u64) {
        (self.semaphore, self.value)
    }

    /// The buffers holding the field after the last submitted step.
    pub fn field_buffers(&self) -> FieldBuffers {
        let n = self.n;
        let u = 4 * ((n[0] + 1) * n[1] * n[2]) as u64;
        let v = 4 * (n[0] * (n[1] + 1) * n[2]) as u64;
        FieldBuffers {
            velocity: self.bufs.vel[self.vp].as_ref().expect("created").raw,
            offsets: [0, u, u + v],
            pressure: self.bufs.p[self.pp].as_ref().expect("created").raw,
            cells: [n[0] as u32, n[1] as u32, n[2] as u32],
        }
    }

    /// Cells along x, y, z.
    pub fn cells(&self) -> [usize; 3] {
        self.n
    }

    /// The device the solver runs on.
    pub fn device(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// The grid's minimum corner and cell size \[m\].
    pub fn placement(&self) -> (glam::Vec3, glam::Vec3) {
        (self.origin, self.h)
    }
}

/// A compute pipeline of `spirv` with `layout`, its specialisation constant 0 set to `constant`
/// when given. The shader's interface must match the layout.
pub(crate) fn compute_pipeline(
    gpu: &Gpu,
    layout: vk::PipelineLayout,
    spirv: &Spirv,
    constant: Option<u32>,
) -> Result<vk::Pipeline> {
    let dev = &gpu.device;
    let module = gpu.shader_module(spirv)?;
    let entries = [vk::SpecializationMapEntry {
        constant_id: 0,
        offset: 0,
        size: 4,
    }];
    let data = constant.unwrap_or(0).to_le_bytes();
    let specialization = vk::SpecializationInfo::default().map_entries(&entries).data(&data);
    let mut stage = vk::PipelineShaderStageCreateInfo::default()
        .stage(vk::ShaderStageFlags::COMPUTE)
        .module(module)
        .name(c"main");
    if constant.is_some() {
        stage = stage.specialization_info(&specialization);
    }
    let info = vk::ComputePipelineCreateInfo::default().stage(stage).layout(layout);
    // SAFETY: SPIR-V compiled at build time whose interface matches the layout (the caller's
    // guarantee); the module is destroyed once the pipeline exists.
    let result = unsafe { dev.create_compute_pipelines(vk::PipelineCache::null(), &[info], None) };
    // SAFETY: a module may be destroyed once pipelines are created from it.
    unsafe { dev.destroy_shader_module(module, None) };
    Ok(result.map_err(|(_, e)| RenderError::from_vk("vkCreateComputePipelines", e))?[0])
}

/// Size of the largest device-local memory heap.
fn device_local_heap(gpu: &Gpu) -> u64 {
    // SAFETY: plain query on the Gpu's physical device.
    let memory = unsafe { gpu.instance.get_physical_device_memory_properties(gpu.physical) };
    memory.memory_heaps[..memory.memory_heap_count as usize]
        .iter()
        .filter(|h| h.flags.contains(vk::MemoryHeapFlags::DEVICE_LOCAL))
        .map(|h| h.size)
        .max()
        .unwrap_or(u64::MAX)
}

impl Drop for GpuFluid {
    fn drop(&mut self) {
        // Everything submitted must finish before its objects go.
        if self.wait_value(self.value).is_err() {
            let _ = self.gpu.wait_idle();
        }
        // The converged solver's pipeline layout refers to the field set layout: it goes first.
        self.pcg = None;
        let gpu = self.gpu.clone();
        let dev = &gpu.device;
        // SAFETY: no submission is pending (waited above); every handle was created from this
        // device by this solver, and destroying a null handle is a no-op.
        unsafe {
            for p in self.pipelines {
                dev.destroy_pipeline(p, None);
            }
            dev.destroy_pipeline_layout(self.pipeline_layout, None);
            dev.destroy_descriptor_pool(self.descriptor_pool, None);
            for l in self.set_layouts {
                dev.destroy_descriptor_set_layout(l, None);
            }
            for s in &self.slots {
                dev.destroy_query_pool(s.queries, None);
            }
            dev.destroy_command_pool(self.command_pool, None);
            dev.destroy_semaphore(self.semaphore, None);
        }
        let b = &mut self.bufs;
        let all = [
            b.vel[0].take(),
            b.vel[1].take(),
            b.p[0].take(),
            b.p[1].take(),
            b.centre.take(),
            b.act.take(),
            b.inv_diag.take(),
            b.div.take(),
            b.solid.take(),
            b.conf.take(),
            b.readback.take(),
        ];
        for buffer in all.into_iter().flatten() {
            gpu.destroy_buffer(buffer);
        }
        for s in &mut self.slots {
            if let Some(buffer) = s.balls.take() {
                gpu.destroy_buffer(buffer);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workgroup_counts_cover_the_grid() {
        assert_eq!(groups([256, 16, 256]), [16, 4, 32]);
        assert_eq!(groups([49, 13, 41]), [4, 4, 6]);
    }
}
