//! The converged pressure solver on the GPU: conjugate gradients on the pressure equation
//! (paper 004, Eq. 9) preconditioned by one multigrid V-cycle per iteration, the twin of
//! `PressureState::pcg` in `sim/src/fluid/pressure.rs` (same levels from
//! [`multigrid_levels`], same smoother, restriction and prolongation, same stopping rule).
//! The kernels are `shaders/glsl/wind_mg_*.comp`.
//!
//! Every vector lives in one pool buffer; the CG scalars (dot products, α, β, the iteration
//! count, whether the solve is done) stay on the GPU, each dot product a two-pass reduction
//! (workgroup sums, then one workgroup). Once the solve is done (converged, the iteration
//! limit, or a breakdown) every loop kernel returns at once, so the host records iterations in
//! batches and reads the scalars back only between batches.

use std::sync::Arc;

use ash::vk;
use gpu_allocator::MemoryLocation;
use sylva_shaders::{Spirv, WindMgPush, WindMgScalars};
use sylva_sim::fluid::{multigrid_levels, MG_COARSEST_SWEEPS, MG_OMEGA, MG_SWEEPS};

use super::{compute_pipeline, groups};
use crate::descriptors::{storage_set_layout, whole, write_storage};
use crate::error::{vk_err, RenderError, Result};
use crate::gpu::{Buffer, Gpu};

/// A level's arrays in the pool, in this order (`wind_mg.glsl`).
const ACT: u32 = 0;
const FLUID: u32 = 1;
const R: u32 = 4;
const X: u32 = 5;
const T: u32 = 6;
const ARRAYS: u32 = 7;

/// Flags of `opnd.w` (`wind_mg.glsl`).
const SKIP_DONE: u32 = 256;
const FROM_ZERO: u32 = 512;
const INCREMENT: u32 = 1024;
/// Selects the pipeline of a kernel that also sums a dot product per workgroup (the shaders'
/// `WITH_DOT` specialisation constant, so the plain one has no barrier).
const DOT: u32 = 2048;

/// Operations of wind_mg_vector.comp.
const OP_RHS: u32 = 0;
const OP_RESIDUAL: u32 = 1;
const OP_SUB_MEAN: u32 = 2;
const OP_DIRECTION: u32 = 3;
const OP_APPLY: u32 = 4;
const OP_STEP: u32 = 5;

/// Operations of wind_mg_scalar.comp.
const OP_COUNT: u32 = 0;
const OP_B2: u32 = 1;
const OP_R2: u32 = 2;
const OP_RZ: u32 = 3;
const OP_DQ: u32 = 4;
const OP_MEAN: u32 = 5;

#[derive(Clone, Copy)]
enum Kernel {
    Act,
    Diag,
    Smooth,
    SmoothDot,
    Restrict,
    Prolong,
    Vector,
    VectorDot,
    Dot,
    Scalar,
}

/// Each pipeline's shader and, for those with one, its `WITH_DOT` constant (whether it also sums
/// a dot product).
const KERNELS: [(&Spirv, Option<u32>); 10] = [
    (&sylva_shaders::WIND_MG_ACT_COMP, None),
    (&sylva_shaders::WIND_MG_DIAG_COMP, None),
    (&sylva_shaders::WIND_MG_SMOOTH_COMP, Some(0)),
    (&sylva_shaders::WIND_MG_SMOOTH_COMP, Some(1)),
    (&sylva_shaders::WIND_MG_RESTRICT_COMP, None),
    (&sylva_shaders::WIND_MG_PROLONG_COMP, None),
    (&sylva_shaders::WIND_MG_VECTOR_COMP, Some(0)),
    (&sylva_shaders::WIND_MG_VECTOR_COMP, Some(1)),
    (&sylva_shaders::WIND_MG_DOT_COMP, None),
    (&sylva_shaders::WIND_MG_SCALAR_COMP, None),
];

/// One multigrid level as laid out in the pool.
#[derive(Clone, Copy, Debug)]
struct Level {
    cells: [u32; 3],
    inv_h2: [f32; 3],
    /// Axes halved to get the next level, bit `a` for axis `a`.
    coarsen: u32,
    /// First pool element of the level's arrays, and their length (padded cells).
    base: u32,
    len: u32,
}

impl Level {
    fn at(&self, k: u32) -> u32 {
        self.base + k * self.len
    }
}

/// What a solve reported.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Outcome {
    pub iterations: u32,
    /// `|r| / |b|` (0 when `b` is 0).
    pub residual_rel: f64,
    pub converged: bool,
    /// Whether the solve has finished (converged or given up).
    pub done: bool,
}

/// The multigrid hierarchy, CG vectors and kernels.
pub(crate) struct Pcg {
    gpu: Arc<Gpu>,
    levels: Vec<Level>,
    /// Pool offsets of the fine level's CG vectors b, r, d, q.
    cg: [u32; 4],
    pool: Option<Buffer>,
    scalars: Option<Buffer>,
    partials: Option<Buffer>,
    readback: Option<Buffer>,
    set_layout: vk::DescriptorSetLayout,
    pipeline_layout: vk::PipelineLayout,
    pipelines: [vk::Pipeline; KERNELS.len()],
    descriptor_pool: vk::DescriptorPool,
    set: vk::DescriptorSet,
    pub tolerance: f32,
    pub max_iterations: u32,
    /// Iterations the last solve took (the first batch of the next).
    pub last_iterations: u32,
}

/// Records into one command buffer.
struct Rec<'a> {
    pcg: &'a Pcg,
    dev: &'a ash::Device,
    cmd: vk::CommandBuffer,
}

impl Rec<'_> {
    fn dispatch(&self, k: Kernel, push: &WindMgPush, g: [u32; 3]) {
        let dev = self.dev;
        // SAFETY: `cmd` is recording with the solver's layout bound (see `Pcg::begin`); the
        // pipeline belongs to this solver and outlives the submission.
        unsafe {
            dev.cmd_bind_pipeline(self.cmd, vk::PipelineBindPoint::COMPUTE, self.pcg.pipelines[k as usize]);
            dev.cmd_push_constants(
                self.cmd,
                self.pcg.pipeline_layout,
                vk::ShaderStageFlags::COMPUTE,
                0,
                bytemuck::bytes_of(push),
            );
            dev.cmd_dispatch(self.cmd, g[0], g[1], g[2]);
        }
        barrier(
            dev,
            self.cmd,
            (
                vk::PipelineStageFlags2::COMPUTE_SHADER,
                vk::AccessFlags2::SHADER_STORAGE_WRITE,
            ),
            (
                vk::PipelineStageFlags2::COMPUTE_SHADER,
                vk::AccessFlags2::SHADER_STORAGE_READ | vk::AccessFlags2::SHADER_STORAGE_WRITE,
            ),
        );
    }

    /// Push constants for level `l` (and the next coarser, if any).
    fn push(&self, l: usize) -> WindMgPush {
        let lv = &self.pcg.levels[l];
        let mut p = WindMgPush {
            n: [lv.cells[0], lv.cells[1], lv.cells[2], 0],
            inv_h2: [lv.inv_h2[0], lv.inv_h2[1], lv.inv_h2[2], MG_OMEGA],
            lvl: [lv.base, lv.len, 0, 0],
            aux: [0; 4],
            opnd: [0; 4],
        };
        if let Some(c) = self.pcg.levels.get(l + 1) {
            p.lvl[2] = c.base;
            p.lvl[3] = c.len;
            p.aux = [c.cells[0], c.cells[1], c.cells[2], lv.coarsen];
        }
        p
    }

    fn cells(&self, l: usize) -> [u32; 3] {
        let c = self.pcg.levels[l].cells;
        groups([c[0] as usize, c[1] as usize, c[2] as usize])
    }

    /// `op(Σ x·y)` on the fine level: the dot product's two passes and the scalar kernel.
    fn dot(&self, x: u32, y: u32, op: u32, flags: u32) {
        let mut p = self.push(0);
        p.opnd = [x, y, 0, flags];
        self.dispatch(Kernel::Dot, &p, self.cells(0));
        self.scalar(op, flags);
    }

    /// `op(Σ)` over the partial sums a fine-level pass flagged DOT left.
    fn scalar(&self, op: u32, flags: u32) {
        let g = self.cells(0);
        let mut p = self.push(0);
        p.opnd = [g[0] * g[1] * g[2], 0, 0, op | flags];
        self.dispatch(Kernel::Scalar, &p, [1, 1, 1]);
    }

    /// One of wind_mg_vector.comp's operations on the fine level.
    fn vector(&self, op: u32, operand: u32, flags: u32) {
        let mut p = self.push(0);
        p.aux = self.pcg.cg;
        p.opnd = [operand, 0, 0, op | flags];
        let k = if flags & DOT != 0 {
            Kernel::VectorDot
        } else {
            Kernel::Vector
        };
        self.dispatch(k, &p, self.cells(0));
    }

    /// Subtracts the mean over the fluid cells from `v` (the constant null space of a closed
    /// domain).
    fn remove_mean(&self, v: u32, flags: u32) {
        let fluid = self.pcg.levels[0].at(FLUID);
        self.dot(v, fluid, OP_MEAN, flags);
        self.vector(OP_SUB_MEAN, v, flags);
    }

    /// `sweeps` damped-Jacobi sweeps on level `l` from `x`, ping-ponging between its X and T
    /// arrays, the first flagged `first` (FROM_ZERO: from zero), the last `last` (DOT: r·out);
    /// returns where the result is.
    fn smooth(&self, l: usize, mut x: u32, sweeps: usize, first: u32, last: u32) -> u32 {
        let lv = self.pcg.levels[l];
        let r = if l == 0 { self.pcg.cg[1] } else { lv.at(R) };
        let g = self.cells(l);
        for s in 0..sweeps {
            let out = if x == lv.at(X) { lv.at(T) } else { lv.at(X) };
            let mut p = self.push(l);
            let mut flags = SKIP_DONE;
            if s == 0 {
                flags |= first;
            }
            if s + 1 == sweeps {
                flags |= last;
            }
            p.opnd = [x, out, r, flags];
            let k = if flags & DOT != 0 {
                Kernel::SmoothDot
            } else {
                Kernel::Smooth
            };
            self.dispatch(k, &p, g);
            x = out;
        }
        x
    }

    /// One V-cycle on the CG residual (level 0's right-hand side); returns the pool offset of
    /// `z = M r` (`PressureState::vcycle`). `last` flags level 0's last sweep (DOT: r·z).
    fn vcycle(&self, last: u32) -> u32 {
        let n = self.pcg.levels.len();
        // Where each level's current solution is (its X or T array).
        let mut cur = Vec::with_capacity(n);
        for l in 0..n {
            let coarsest = l + 1 == n;
            let sweeps = if coarsest { MG_COARSEST_SWEEPS } else { MG_SWEEPS };
            let x = self.smooth(l, self.pcg.levels[l].at(T), sweeps, FROM_ZERO, 0);
            cur.push(x);
            if coarsest {
                break;
            }
            let r = if l == 0 {
                self.pcg.cg[1]
            } else {
                self.pcg.levels[l].at(R)
            };
            let mut p = self.push(l);
            p.opnd = [x, r, 0, SKIP_DONE];
            self.dispatch(Kernel::Restrict, &p, self.cells(l + 1));
        }
        for l in (0..n - 1).rev() {
            // (Adding the correction inside the first sweep instead, where it is read, was
            // measured slower on lavapipe: seven coarse reads per cell.)
            let mut p = self.push(l);
            p.opnd = [cur[l], cur[l + 1], 0, SKIP_DONE];
            self.dispatch(Kernel::Prolong, &p, self.cells(l));
            let last = if l == 0 { last } else { 0 };
            cur[l] = self.smooth(l, cur[l], MG_SWEEPS, 0, last);
        }
        cur[0]
    }
}

/// One global memory barrier.
fn barrier(
    dev: &ash::Device,
    cmd: vk::CommandBuffer,
    src: (vk::PipelineStageFlags2, vk::AccessFlags2),
    dst: (vk::PipelineStageFlags2, vk::AccessFlags2),
) {
    let mb = [vk::MemoryBarrier2::default()
        .src_stage_mask(src.0)
        .src_access_mask(src.1)
        .dst_stage_mask(dst.0)
        .dst_access_mask(dst.1)];
    // SAFETY: `cmd` is recording.
    unsafe { dev.cmd_pipeline_barrier2(cmd, &vk::DependencyInfo::default().memory_barriers(&mb)) };
}

impl Pcg {
    /// Sets up the hierarchy for a grid of `n` cells of size `h`; `field_layout` is the wind
    /// solver's field set layout (set 0: divergence and pressure).
    pub fn new(
        gpu: &Arc<Gpu>,
        n: [usize; 3],
        h: glam::Vec3,
        field_layout: vk::DescriptorSetLayout,
        tolerance: f32,
        max_iterations: u32,
    ) -> Result<Pcg> {
        let shapes = multigrid_levels(n, h.to_array());
        let mut levels = Vec::with_capacity(shapes.len());
        let mut next = 0u64;
        for s in &shapes {
            let len = ((s.cells[0] + 2) * (s.cells[1] + 2) * (s.cells[2] + 2)) as u64;
            levels.push(Level {
                cells: s.cells.map(|c| c as u32),
                inv_h2: s.h.map(|x| 1.0 / (x * x)),
                coarsen: (0..3).fold(0, |m, a| m | ((s.coarsen[a] as u32) << a)),
                base: next as u32,
                len: len as u32,
            });
            next += ARRAYS as u64 * len;
        }
        let fine_len = levels[0].len as u64;
        let cg = [0, 1, 2, 3].map(|k| (next + k * fine_len) as u32);
        let pool_bytes = 4 * (next + 4 * fine_len);
        let limits = &gpu.properties.limits;
        // (Element offsets fit u32 whenever the pool fits one binding.)
        if pool_bytes > limits.max_storage_buffer_range as u64 {
            return Err(RenderError::Invalid {
                what: "wind grid for the converged pressure solver",
                value: format!(
                    "{}×{}×{} cells ({pool_bytes} bytes of multigrid arrays)",
                    n[0], n[1], n[2]
                ),
                allowed: format!(
                    "buffers of at most {} bytes on {} (maxStorageBufferRange): fewer cells, or \
                     Pressure::Jacobi",
                    limits.max_storage_buffer_range,
                    gpu.name()
                ),
            });
        }
        let g = groups(n);
        let partial_count = g[0] as u64 * g[1] as u64 * g[2] as u64;
        let mut pcg = Pcg {
            gpu: gpu.clone(),
            levels,
            cg,
            pool: None,
            scalars: None,
            partials: None,
            readback: None,
            set_layout: vk::DescriptorSetLayout::null(),
            pipeline_layout: vk::PipelineLayout::null(),
            pipelines: [vk::Pipeline::null(); KERNELS.len()],
            descriptor_pool: vk::DescriptorPool::null(),
            set: vk::DescriptorSet::null(),
            tolerance,
            max_iterations,
            last_iterations: 0,
        };
        // On failure, Drop destroys whatever was made.
        pcg.create(pool_bytes, 4 * partial_count, field_layout)?;
        Ok(pcg)
    }

    fn create(&mut self, pool_bytes: u64, partial_bytes: u64, field_layout: vk::DescriptorSetLayout) -> Result<()> {
        let gpu = self.gpu.clone();
        let storage = vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::TRANSFER_DST;
        self.pool = Some(gpu.create_buffer("wind multigrid pool", pool_bytes, storage, MemoryLocation::GpuOnly)?);
        self.scalars = Some(gpu.create_buffer(
            "wind CG scalars",
            size_of::<WindMgScalars>() as u64,
            storage | vk::BufferUsageFlags::TRANSFER_SRC,
            MemoryLocation::GpuOnly,
        )?);
        self.partials = Some(gpu.create_buffer(
            "wind CG partial sums",
            partial_bytes,
            vk::BufferUsageFlags::STORAGE_BUFFER,
            MemoryLocation::GpuOnly,
        )?);
        self.readback = Some(gpu.create_buffer(
            "wind CG scalars readback",
            size_of::<WindMgScalars>() as u64,
            vk::BufferUsageFlags::TRANSFER_DST,
            MemoryLocation::GpuToCpu,
        )?);
        let dev = &gpu.device;
        self.set_layout = storage_set_layout(dev, 3)?;
        let set_layouts = [field_layout, self.set_layout];
        let ranges = [vk::PushConstantRange {
            stage_flags: vk::ShaderStageFlags::COMPUTE,
            offset: 0,
            size: size_of::<WindMgPush>() as u32,
        }];
        let info = vk::PipelineLayoutCreateInfo::default()
            .set_layouts(&set_layouts)
            .push_constant_ranges(&ranges);
        // SAFETY: both set layouts are alive.
        self.pipeline_layout =
            unsafe { dev.create_pipeline_layout(&info, None) }.map_err(vk_err("vkCreatePipelineLayout"))?;
        for (k, (spirv, with_dot)) in KERNELS.iter().enumerate() {
            // The kernels' interface (the field set's divergence and pressure, the pool set, the
            // push block) matches the layout.
            self.pipelines[k] = compute_pipeline(&gpu, self.pipeline_layout, spirv, *with_dot)?;
        }
        let sizes = [vk::DescriptorPoolSize {
            ty: vk::DescriptorType::STORAGE_BUFFER,
            descriptor_count: 3,
        }];
        let info = vk::DescriptorPoolCreateInfo::default().max_sets(1).pool_sizes(&sizes);
        // SAFETY: valid device and create info.
        self.descriptor_pool =
            unsafe { dev.create_descriptor_pool(&info, None) }.map_err(vk_err("vkCreateDescriptorPool"))?;
        let layouts = [self.set_layout];
        let alloc = vk::DescriptorSetAllocateInfo::default()
            .descriptor_pool(self.descriptor_pool)
            .set_layouts(&layouts);
        // SAFETY: the pool has room for this set.
        self.set = unsafe { dev.allocate_descriptor_sets(&alloc) }.map_err(vk_err("vkAllocateDescriptorSets"))?[0];
        let raw = |b: &Option<Buffer>| b.as_ref().expect("created above").raw;
        let infos: Vec<_> = [raw(&self.pool), raw(&self.scalars), raw(&self.partials)]
            .into_iter()
            .enumerate()
            .map(|(i, buffer)| (self.set, i as u32, whole(buffer)))
            .collect();
        // SAFETY: the set and buffers are alive and no command buffer uses the set yet.
        unsafe { write_storage(dev, &infos) };
        Ok(())
    }

    /// Binds the solver's sets (the field set `field_set` as set 0) for the dispatches that follow.
    fn begin<'a>(&'a self, cmd: vk::CommandBuffer, field_set: vk::DescriptorSet) -> Rec<'a> {
        let dev = &self.gpu.device;
        // SAFETY: `cmd` is recording; both sets are alive and match the layout.
        unsafe {
            dev.cmd_bind_descriptor_sets(
                cmd,
                vk::PipelineBindPoint::COMPUTE,
                self.pipeline_layout,
                0,
                &[field_set, self.set],
                &[],
            );
        }
        Rec { pcg: self, dev, cmd }
    }

    /// Rebuilds every level's operator from the fine activity `act` (the wind solver's padded
    /// activity buffer, already written in this command buffer) and counts the fluid cells.
    pub fn record_rebuild(&self, cmd: vk::CommandBuffer, field_set: vk::DescriptorSet, act: vk::Buffer) {
        let dev = &self.gpu.device;
        let pool = self.pool.as_ref().expect("created in new").raw;
        let fine = self.levels[0];
        barrier(
            dev,
            cmd,
            (
                vk::PipelineStageFlags2::COMPUTE_SHADER,
                vk::AccessFlags2::SHADER_STORAGE_WRITE,
            ),
            (vk::PipelineStageFlags2::TRANSFER, vk::AccessFlags2::TRANSFER_READ),
        );
        // SAFETY: `cmd` is recording; both buffers are alive until the submission completes.
        unsafe {
            // Ghosts and stale values from an older hierarchy go.
            dev.cmd_fill_buffer(cmd, pool, 0, vk::WHOLE_SIZE, 0);
        }
        barrier(
            dev,
            cmd,
            (vk::PipelineStageFlags2::TRANSFER, vk::AccessFlags2::TRANSFER_WRITE),
            (vk::PipelineStageFlags2::TRANSFER, vk::AccessFlags2::TRANSFER_WRITE),
        );
        // SAFETY: as above; the activity buffer holds the fine level's padded cells.
        unsafe {
            let region = [vk::BufferCopy {
                src_offset: 0,
                dst_offset: 4 * fine.at(ACT) as u64,
                size: 4 * fine.len as u64,
            }];
            dev.cmd_copy_buffer(cmd, act, pool, &region);
        }
        barrier(
            dev,
            cmd,
            (vk::PipelineStageFlags2::TRANSFER, vk::AccessFlags2::TRANSFER_WRITE),
            (
                vk::PipelineStageFlags2::COMPUTE_SHADER,
                vk::AccessFlags2::SHADER_STORAGE_READ | vk::AccessFlags2::SHADER_STORAGE_WRITE,
            ),
        );
        let rec = self.begin(cmd, field_set);
        for l in 0..self.levels.len() {
            rec.dispatch(Kernel::Diag, &rec.push(l), rec.cells(l));
            if let Some(c) = self.levels.get(l + 1) {
                let padded = c.cells.map(|x| x as usize + 2);
                rec.dispatch(Kernel::Act, &rec.push(l), groups(padded));
            }
        }
        let f = fine.at(FLUID);
        rec.dot(f, f, OP_COUNT, 0);
    }

    /// Starts a solve: resets the scalars, builds `b = −divergence` (mean-free when no side is
    /// open), its norm, the residual of the current pressure and the convergence test.
    pub fn record_init(&self, cmd: vk::CommandBuffer, field_set: vk::DescriptorSet, any_open: bool) {
        let dev = &self.gpu.device;
        let scalars = WindMgScalars {
            tol: self.tolerance,
            max_iterations: self.max_iterations,
            ..Default::default()
        };
        // Everything but the fluid count, kept from the rebuild.
        let bytes = &bytemuck::bytes_of(&scalars)[..std::mem::offset_of!(WindMgScalars, count)];
        barrier(
            dev,
            cmd,
            (
                vk::PipelineStageFlags2::COMPUTE_SHADER,
                vk::AccessFlags2::SHADER_STORAGE_READ | vk::AccessFlags2::SHADER_STORAGE_WRITE,
            ),
            (vk::PipelineStageFlags2::TRANSFER, vk::AccessFlags2::TRANSFER_WRITE),
        );
        // SAFETY: `cmd` is recording; the update is under 64 KiB and a multiple of 4 bytes.
        unsafe { dev.cmd_update_buffer(cmd, self.scalars.as_ref().expect("created").raw, 0, bytes) };
        barrier(
            dev,
            cmd,
            (vk::PipelineStageFlags2::TRANSFER, vk::AccessFlags2::TRANSFER_WRITE),
            (
                vk::PipelineStageFlags2::COMPUTE_SHADER,
                vk::AccessFlags2::SHADER_STORAGE_READ | vk::AccessFlags2::SHADER_STORAGE_WRITE,
            ),
        );
        let rec = self.begin(cmd, field_set);
        let [b, r, ..] = self.cg;
        rec.vector(OP_RHS, 0, 0);
        if !any_open {
            rec.remove_mean(b, 0);
        }
        rec.dot(b, b, OP_B2, 0);
        rec.vector(OP_RESIDUAL, 0, 0);
        rec.dot(r, r, OP_R2, 0);
    }

    /// Records `count` CG iterations; those after the solve is done do nothing.
    pub fn record_iterations(&self, cmd: vk::CommandBuffer, field_set: vk::DescriptorSet, count: u32, any_open: bool) {
        let rec = self.begin(cmd, field_set);
        let r = self.cg[1];
        for _ in 0..count {
            // With an open side, r·z is summed by the V-cycle's last sweep; in a closed domain
            // z loses its mean first.
            let z = rec.vcycle(if any_open { DOT } else { 0 });
            if any_open {
                rec.scalar(OP_RZ, SKIP_DONE);
            } else {
                rec.remove_mean(z, SKIP_DONE);
                rec.dot(r, z, OP_RZ, SKIP_DONE);
            }
            rec.vector(OP_DIRECTION, z, SKIP_DONE);
            rec.vector(OP_APPLY, 0, SKIP_DONE | DOT);
            rec.scalar(OP_DQ, SKIP_DONE);
            rec.vector(OP_STEP, 0, SKIP_DONE | DOT);
            rec.scalar(OP_R2, SKIP_DONE | INCREMENT);
        }
    }

    /// Copies the scalars to the host-visible readback buffer (read by [`outcome`](Self::outcome)
    /// once the submission completed).
    pub fn record_readback(&self, cmd: vk::CommandBuffer) {
        let dev = &self.gpu.device;
        barrier(
            dev,
            cmd,
            (
                vk::PipelineStageFlags2::COMPUTE_SHADER,
                vk::AccessFlags2::SHADER_STORAGE_WRITE,
            ),
            (vk::PipelineStageFlags2::TRANSFER, vk::AccessFlags2::TRANSFER_READ),
        );
        let region = [vk::BufferCopy {
            src_offset: 0,
            dst_offset: 0,
            size: size_of::<WindMgScalars>() as u64,
        }];
        // SAFETY: `cmd` is recording; both buffers are alive until the submission completes.
        unsafe {
            dev.cmd_copy_buffer(
                cmd,
                self.scalars.as_ref().expect("created").raw,
                self.readback.as_ref().expect("created").raw,
                &region,
            )
        };
        barrier(
            dev,
            cmd,
            (vk::PipelineStageFlags2::TRANSFER, vk::AccessFlags2::TRANSFER_WRITE),
            (vk::PipelineStageFlags2::HOST, vk::AccessFlags2::HOST_READ),
        );
    }

    /// The scalars as the last completed readback left them.
    pub fn outcome(&self) -> Outcome {
        let bytes = self.readback.as_ref().expect("created").read();
        let s: WindMgScalars = bytemuck::pod_read_unaligned(&bytes[..size_of::<WindMgScalars>()]);
        let rel = if s.b2 > 0.0 {
            (s.r2 as f64).sqrt() / (s.b2 as f64).sqrt()
        } else if s.b2 == 0.0 {
            0.0
        } else {
            f64::NAN
        };
        Outcome {
            iterations: s.iterations,
            residual_rel: rel,
            converged: s.done == 1,
            done: s.done != 0,
        }
    }
}

impl Drop for Pcg {
    /// The owner waits for every submission that used the solver before dropping it.
    fn drop(&mut self) {
        let gpu = self.gpu.clone();
        let dev = &gpu.device;
        // SAFETY: no submission using these objects is pending (see above); destroying null
        // handles is a no-op.
        unsafe {
            for p in self.pipelines {
                dev.destroy_pipeline(p, None);
            }
            dev.destroy_pipeline_layout(self.pipeline_layout, None);
            dev.destroy_descriptor_pool(self.descriptor_pool, None);
            dev.destroy_descriptor_set_layout(self.set_layout, None);
        }
        for b in [
            self.pool.take(),
            self.scalars.take(),
            self.partials.take(),
            self.readback.take(),
        ]
        .into_iter()
        .flatten()
        {
            gpu.destroy_buffer(b);
        }
    }
}
