//! What the simulation hands the renderer each frame (the content of the render command cache):
//! the camera, per-instance data for every segment, leaf and collider sphere, sorted into the
//! levels of detail they are drawn at, and the figures the overlay shows.
//!
//! [`RenderFrame::fill`] runs on the simulation thread. It culls whole trees against the view
//! frustum, picks each tree's level of detail from its size on screen, and writes one
//! [`SegmentInstance`] per drawn segment and one [`LeafInstance`] per drawn leaf straight from
//! the simulation's arrays. Its vectors keep their capacity, so a steady scene fills without
//! allocating.
//!
//! With the pose on the device ([`RenderFrame::fill_device_with_jobs`], the GPU dynamics), the
//! fill is the same, culling and levels of detail included (a tree's bounding sphere comes from
//! its root and reach, not its pose), but each instance is written with the index of its
//! segment or leaf where the pose goes (a *template*), and the frame carries the
//! [`DevicePose`]: the renderer fills in the pose on the device before drawing
//! (`shaders/glsl/pose_patch.comp` says what each instance holds until then). Nothing of the
//! pose is read back or uploaded.
//!
//! A pose on the CPU can take the same way ([`RenderFrame::fill_patched_with_jobs`], what the
//! viewer does): templates, and the pose copied into the frame ([`HostPose`]: 32 bytes per
//! segment; leaves rigid on their segments are placed and turned by the patch from their
//! segment's pose and their rest orientation, so only a model that turns its leaves copies
//! theirs), which the renderer uploads and patches from. The templates depend on the plan
//! (below), not on the pose: a fill whose plan is the one the frame's templates were written
//! for (a still camera) writes no instance, only the pose.
//!
//! Invariant: a frame's templates were written for the plan and the [`FillIndex`] (by content)
//! its `TemplateKey` holds, and the forest's static data a template copies (radii, lengths,
//! leaf sizes and rest orientations) is the index's: a forest that changes it gets a new index.
//!
//! Segments a pose marks removed (`Pose::removed`: pieces of debris beyond the debris cap of
//! a model whose trees break) are not drawn, nor their leaves: the plan counts what each
//! piece keeps and the piece skips them. The device fill has no removed segments to skip: it
//! serves only the GPU Oliapuram model, whose trees do not break (its [`DevicePose`] carries no
//! such flags).
//!
//! The fill is planned first (cheap: per tree its level, and how many segments each cylinder
//! and how many leaves each level gets, found by binary search in the segments sorted by
//! radius), which gives every instance its slot; then pieces of at most [`FILL_PIECE`]
//! instances are written, as jobs when a job system is given. The instances and their order
//! are the same either way.

use crate::device_pose::DevicePose;
use crate::field::FieldSlice;
use std::mem::MaybeUninit;

use glam::{Quat, Vec3};
use sylva_engine::JobSystem;

pub use crate::camera::{Camera, Frustum};
use sylva_shaders::WindArrow;
pub use sylva_shaders::{LeafInstance, SegmentInstance, SphereInstance, PALETTE_BITS, PALETTE_ENTRIES};
use sylva_sim::dynamics::falling::FallingStats;
use sylva_sim::dynamics::{Breakage, Pose};
use sylva_sim::forest::{Forest, TreeInfo};

/// Levels of detail: 0 near, 2 far.
pub const LODS: usize = 3;

/// Most instances one piece of the fill writes (one job with a job system).
pub const FILL_PIECE: usize = 4096;

/// Levels of detail, chosen by size on screen.
///
/// Each branch segment is drawn with the cylinder whose side count suits its radius in pixels
/// (see [`crate::mesh::CYLINDER_SIDES`]), so a distant tree's branches have fewer sides. Each
/// tree gets a level from its bounding radius in pixels: at levels 1 and 2 its sub-pixel twigs
/// are dropped and one leaf in `leaf_stride[level]` is kept, enlarged to keep the foliage's
/// area (by at most [`MAX_LEAF_GROW`] on each side). Beyond level 2 the stride keeps growing
/// with the square of the distance (up to `max_leaf_stride`), so a distant tree costs about as
/// many leaf cards as the pixels it covers allow, and its crown thins rather than its leaves
/// growing into cards.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LodSettings {
    /// A tree whose bounding radius covers fewer pixels than `radius_px[0]` drops to level 1,
    /// fewer than `radius_px[1]` to level 2.
    pub radius_px: [f32; 2],
    /// A segment whose base radius covers at least `sides_px[0]` pixels is drawn with the
    /// first cylinder, at least `sides_px[1]` with the second, otherwise with the third.
    pub sides_px: [f32; 2],
    /// At tree levels 1 and 2, branches whose radius covers fewer pixels than this are dropped.
    pub min_branch_px: f32,
    /// At level l, one leaf in `leaf_stride[l]` is kept (at level 2: at least); powers of two
    /// up to [`MAX_LEAF_STRIDE`].
    pub leaf_stride: [u32; LODS],
    /// The largest leaf stride of the farthest trees (a power of two, at most
    /// [`MAX_LEAF_STRIDE`]).
    pub max_leaf_stride: u32,
    /// Divides every size on screen before the thresholds apply (at least 1): 2 gives each
    /// tree and branch the detail it would have at twice the distance. The viewer raises it
    /// while frames are slow.
    pub bias: f32,
}

impl Default for LodSettings {
    fn default() -> Self {
        LodSettings {
            radius_px: [260.0, 90.0],
            sides_px: [4.0, 1.0],
            min_branch_px: 0.15,
            leaf_stride: [1, 2, 4],
            max_leaf_stride: MAX_LEAF_STRIDE,
            bias: 1.0,
        }
    }
}

/// Static lookups that let [`RenderFrame::fill`] read only what it draws: each tree's segments
/// sorted by radius (thickest first, so dropping sub-pixel twigs ends the loop instead of
/// testing every twig), and each tree's leaves in *progressive order*: every 32nd leaf first,
/// then the remaining 16ths, 8ths, quarters, halves and the rest, so that the leaves a level
/// keeps (one in `s`) are a prefix, read contiguously. Built once per forest.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FillIndex {
    /// Per tree, its segment indices by decreasing base radius, at the tree's segment range.
    by_radius: Vec<u32>,
    /// The static part of each segment's instance in `by_radius` order (base radius, length,
    /// tip radius), read in order where the segments' own arrays would be read at random.
    seg_shape: Vec<[f32; 3]>,
    /// Per tree, its leaves in progressive order, at the tree's leaf range.
    leaves: Vec<LeafRef>,
    /// Each leaf's segment, in the simulation's order.
    leaf_segment: Vec<u32>,
    /// Per tree, its longest leaf \[m\] (derived from `leaves`).
    longest_leaf: Vec<f32>,
    /// Per tree, its palette entry (`RenderFrame::looks`); empty: every tree entry 0.
    tree_palette: Vec<u8>,
    segments: usize,
    /// FNV-1a over everything above: two indices with the same fingerprint fill the same
    /// templates for the same plan (see [`RenderFrame::fill_patched_with_jobs`]).
    fingerprint: u64,
}

/// What filling a leaf's instance needs besides its segment's pose.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct LeafRef {
    /// The leaf's index in the forest (for its colour variation).
    leaf: u32,
    segment: u32,
    /// Distance of the attachment point from the segment's base along its axis [m].
    along: f32,
    /// Blade length [m].
    length: f32,
    /// Orientation relative to the segment, snorm16.
    rest: [i16; 4],
}

/// The coarsest leaf subsampling the progressive order serves directly (a power of two).
pub const MAX_LEAF_STRIDE: u32 = 32;
/// Most a kept leaf is enlarged by on each side when leaves are thinned, unless it stays
/// within [`MAX_CARD_PX`] on screen: up to a stride of 4 the kept leaves keep the foliage's
/// area; beyond, a crown whose leaves are seen thins instead of turning into a few giant cards
/// (every tree's once the viewer coarsens its detail while frames are slow), while a distant
/// crown of sub-pixel leaves keeps its area.
pub const MAX_LEAF_GROW: f32 = 2.0;
/// The longest a thinned leaf is enlarged to on screen beyond [`MAX_LEAF_GROW`] \[pixels\].
pub const MAX_CARD_PX: f32 = 3.0;

/// Position of relative leaf index `k` in the progressive order of `n` leaves, as the key
/// (coarsest stride dividing k first, then k).
fn progressive_key(k: usize) -> (u32, usize) {
    let mut level = 0;
    let mut s = MAX_LEAF_STRIDE as usize;
    while s > 1 && k % s != 0 {
        s /= 2;
        level += 1;
    }
    (level, k)
}

/// How many of `n` leaves (relative indices 0..n) are multiples of `stride`.
fn multiples(n: usize, stride: usize) -> usize {
    n.div_ceil(stride)
}

impl FillIndex {
    pub fn new(forest: &Forest) -> FillIndex {
        let mut by_radius: Vec<u32> = (0..forest.segment_count() as u32).collect();
        for tree in &forest.trees {
            let range = &mut by_radius[tree.segments.start as usize..tree.segments.end as usize];
            range.sort_by(|&a, &b| forest.seg.radius_base[b as usize].total_cmp(&forest.seg.radius_base[a as usize]));
        }
        let seg = &forest.seg;
        let seg_shape = by_radius
            .iter()
            .map(|&i| {
                let i = i as usize;
                [seg.radius_base[i], seg.length[i], seg.radius_tip[i]]
            })
            .collect();
        let mut leaves = Vec::with_capacity(forest.leaf_count());
        let mut leaf_segment = vec![0u32; forest.leaf_count()];
        for i in 0..forest.segment_count() {
            for j in forest.leaves_of(i) {
                leaf_segment[j] = i as u32;
            }
        }
        for tree in &forest.trees {
            let first = tree.leaves.start as usize;
            let mut refs: Vec<LeafRef> = Vec::with_capacity(tree.leaves.len());
            for i in tree.segments.start as usize..tree.segments.end as usize {
                for j in forest.leaves_of(i) {
                    refs.push(LeafRef {
                        leaf: j as u32,
                        segment: i as u32,
                        along: forest.leaf.along_f32(j) * forest.seg.length[i],
                        length: forest.leaf.length_m(j),
                        rest: forest.leaf.rest[j],
                    });
                }
            }
            debug_assert!(refs.iter().enumerate().all(|(k, r)| r.leaf as usize == first + k));
            refs.sort_by_key(|r| progressive_key(r.leaf as usize - first));
            leaves.extend(refs);
        }
        let longest_leaf = forest
            .trees
            .iter()
            .map(|t| {
                leaves[t.leaves.start as usize..t.leaves.end as usize]
                    .iter()
                    .map(|l| l.length)
                    .fold(0.0f32, f32::max)
            })
            .collect();
        let mut index = FillIndex {
            by_radius,
            seg_shape,
            leaves,
            leaf_segment,
            longest_leaf,
            tree_palette: Vec::new(),
            segments: forest.segment_count(),
            fingerprint: 0,
        };
        index.fingerprint = index.content_hash();
        index
    }

    /// FNV-1a over the index's content (every field but the fingerprint).
    fn content_hash(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut word = |v: u32| {
            for b in v.to_le_bytes() {
                h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
            }
        };
        word(self.segments as u32);
        self.by_radius.iter().for_each(|&i| word(i));
        self.seg_shape.iter().flatten().for_each(|x| word(x.to_bits()));
        for l in &self.leaves {
            [l.leaf, l.segment, l.along.to_bits(), l.length.to_bits()]
                .into_iter()
                .for_each(&mut word);
            l.rest.iter().for_each(|&r| word(r as u16 as u32));
        }
        self.leaf_segment.iter().for_each(|&i| word(i));
        self.tree_palette.iter().for_each(|&p| word(p as u32));
        h
    }

    /// Gives tree t of `forest` palette entry `per_tree[t]` (below [`PALETTE_ENTRIES`]; a tree
    /// past the end of `per_tree` gets entry 0): its segments carry it in their base radius
    /// ([`with_palette`]) and its leaves in their colour variation.
    pub fn set_palette(&mut self, forest: &Forest, per_tree: &[u8]) {
        self.tree_palette = (0..forest.tree_count())
            .map(|t| per_tree.get(t).copied().unwrap_or(0).min(PALETTE_ENTRIES as u8 - 1))
            .collect();
        for (t, tree) in forest.trees.iter().enumerate() {
            let entry = self.tree_palette[t];
            for shape in &mut self.seg_shape[tree.segments.start as usize..tree.segments.end as usize] {
                shape[0] = with_palette(shape[0], entry);
            }
        }
        self.fingerprint = self.content_hash();
    }

    /// Whether this index was built for a forest of this size (a cheap guard against mixing
    /// up scenes).
    pub fn fits(&self, forest: &Forest) -> bool {
        self.segments == forest.segment_count() && self.leaves.len() == forest.leaf_count()
    }
}

/// Timings of the simulation's phases for the overlay.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SimTimings {
    /// (phase name, last frame \[ms\], mean over the last 60 frames \[ms\]).
    pub phases: Vec<(String, f32, f32)>,
    /// The simulation frame's wall time over recent frames \[ms\], oldest first.
    pub history_ms: Vec<f32>,
    /// Time the last publish waited for the renderer \[ms\].
    pub cache_wait_ms: f32,
}

/// Scene state the overlay reports.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SceneInfo {
    pub trees: usize,
    pub segments: usize,
    pub leaves: usize,
    /// Simulated time \[s\].
    pub sim_time: f64,
    /// Simulated seconds per real second over the last moments (1: real time; below when the
    /// simulation cannot keep up and drops time); `None` when not measured (paused, headless).
    pub realtime: Option<f32>,
    pub paused: bool,
    /// The dynamics model's name and its own settings in a few words.
    pub model: String,
    pub settings: String,
    /// What the wind has broken, for a model whose trees break.
    pub breakage: Option<Breakage>,
    /// The leaves that came off (falling and on the ground), once any did.
    pub falling: Option<FallingStats>,
    /// Wind speed \[m/s\] and the compass heading it blows towards \[degrees clockwise from
    /// north\].
    pub wind_speed: f32,
    pub wind_heading_deg: f32,
    /// What is shown (a file name and species, or "default forest").
    pub title: String,
    /// A transient message (a loaded file, an error), shown until replaced.
    pub message: String,
    /// Changes when the scene is replaced (a file was loaded).
    pub scene_id: u64,
    /// Where the camera looks and from how far to see the whole scene.
    pub home: (Vec3, f32),
    /// The level-of-detail bias the frame was filled with.
    pub lod_bias: f32,
    /// The wind-field slice drawn, if any (its arrows are [`RenderFrame::wind_arrows`]).
    pub field: Option<FieldSlice>,
}

/// One frame's worth of render commands.
#[derive(Clone, Debug, Default)]
pub struct RenderFrame {
    pub camera: Option<Camera>,
    /// Segments by cylinder (8, 5 and 3 sides).
    pub segments: [Vec<SegmentInstance>; LODS],
    /// Leaves by level of detail.
    pub leaves: [Vec<LeafInstance>; LODS],
    pub spheres: Vec<SphereInstance>,
    /// The fluid wind's wind balls: centre and Gaussian radius (filled by the caller after
    /// `fill`, which leaves them as they are).
    pub wind_balls: Vec<SphereInstance>,
    /// How each species looks, by palette entry (see [`FillIndex::set_palette`]); entries past
    /// the end look as [`Look::default`]. Set by the caller; `fill` leaves it as it is.
    pub looks: Vec<Look>,
    /// Wind-field arrows (see [`crate::field`]).
    pub wind_arrows: Vec<WindArrow>,
    /// Trees drawn at each level of detail (culled trees are not counted).
    pub trees_drawn: [usize; LODS],
    /// Bounding sphere of the whole scene (for the shadow map).
    pub bounds: (Vec3, f32),
    /// Unit direction towards the sun.
    pub sun: Vec3,
    pub info: SceneInfo,
    pub timings: SimTimings,
    /// Nanoseconds [`fill`](Self::fill) took.
    pub fill_ns: u64,
    /// The pose on the device the renderer fills the instances in from, when the frame was
    /// filled with one ([`fill_device_with_jobs`](Self::fill_device_with_jobs)); the segment
    /// and leaf instances then hold indices until the renderer patches them.
    pub device_pose: Option<DevicePose>,
    /// The pose on the CPU the renderer uploads with the frame and fills the instances in
    /// from, when the frame was filled for that
    /// ([`fill_patched_with_jobs`](Self::fill_patched_with_jobs)); the segment and leaf
    /// instances then hold indices until the renderer patches them.
    pub host_pose: Option<HostPose>,
    /// What the fill knows of the instances it wrote: for templates, what they were written
    /// for, so that a fill for the same plan leaves them as they are.
    pub written: Written,
}

/// What a frame's last fills wrote into its segment and leaf lists (the fill's own
/// bookkeeping, see [`RenderFrame::wrote_instances`]).
#[derive(Clone, Debug, Default)]
pub struct Written {
    /// What the instances were last written as templates (indices) for.
    templates: Option<TemplateKey>,
    /// Whether the last fill wrote the instances.
    wrote: bool,
}

/// A pose on the CPU in the layout the renderer's pose patch reads (`DevicePose`'s): vec4s,
/// segment bases `[0, n)` (w 0) and orientations `[n, 2n)`, then, when the model turns its
/// leaves, leaf positions `[2n, 2n + m)` and orientations `[2n + m, 2n + 2m)`. With rigid
/// leaves (`leaves` 0) it holds the segments alone: every leaf's instance names its segment,
/// its distance along the axis and its rest orientation, which the patch turns with the
/// segment (`shaders/glsl/pose_patch.comp`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HostPose {
    pub vec4s: Vec<[f32; 4]>,
    /// Segments n of the forest.
    pub segments: u32,
    /// Leaves m of the forest whose own pose is given; 0 for rigid leaves.
    pub leaves: u32,
}

impl HostPose {
    /// Bytes the renderer uploads for it.
    pub fn bytes(&self) -> usize {
        size_of_val(self.vec4s.as_slice())
    }
}

/// What a frame's templates were written for: the fill index (by content), the leaves' form
/// and the plan (every piece's source and length, which fix every instance).
#[derive(Clone, Debug, PartialEq)]
struct TemplateKey {
    index: u64,
    form: TemplateForm,
    pieces: Vec<Source>,
}

/// How templates give a leaf's pose.
#[derive(Clone, Copy, Debug, PartialEq)]
enum TemplateForm {
    /// Leaves with their own pose (the pose holds leaf positions and orientations).
    OwnLeaves,
    /// Rigid leaves: each names its segment, its distance along it and its rest orientation.
    RigidLeaves,
}

/// Marks a leaf instance to patch whose position is the pose's leaf position (not its segment's
/// base moved along the axis).
pub const PATCH_LEAF_POSITION: u32 = u32::MAX;

/// Where the fill takes the pose from.
#[derive(Clone, Copy)]
enum PoseIn<'a> {
    Host(&'a Pose),
    /// Patched by the renderer from a pose in a device buffer: the instances are templates
    /// in this form (see the module docs).
    Patch(TemplateForm),
}

/// A tree's bounding sphere: its reach around the middle of the root-to-reach span.
#[inline]
fn tree_sphere(root: Vec3, reach: f32) -> (Vec3, f32) {
    (root + Vec3::new(0.0, 0.5 * reach, 0.0), reach)
}

/// Where a tree stands on screen: its level of detail, pixels per metre at its distance and
/// its bounding radius in pixels; `None` outside the view.
struct OnScreen {
    level: usize,
    scale_px: f32,
    radius_px: f32,
}

/// The tree's [`OnScreen`] from `camera` (its frustum and pixels per radian given), as the fill
/// picks it.
fn on_screen(tree: &TreeInfo, frustum: &Frustum, camera: &Camera, ppr: f32, lod: &LodSettings) -> Option<OnScreen> {
    let (center, radius) = tree_sphere(tree.root, tree.reach);
    if !frustum.sees(center, radius) {
        return None;
    }
    let distance = (center - camera.eye).length().max(1e-3);
    let scale_px = ppr / distance / lod.bias.max(1.0);
    let radius_px = radius * scale_px;
    let level = if radius_px >= lod.radius_px[0] {
        0
    } else if radius_px >= lod.radius_px[1] {
        1
    } else {
        2
    };
    Some(OnScreen {
        level,
        scale_px,
        radius_px,
    })
}

/// Each tree's level of detail from `camera` as [`RenderFrame::fill`] picks it (`None`: the tree
/// is outside the view), in the forest's order: what a simulation level of detail follows.
pub fn tree_levels(forest: &Forest, camera: &Camera, lod: &LodSettings, out: &mut Vec<Option<u8>>) {
    let frustum = Frustum::new(camera.view_proj());
    let ppr = camera.pixels_per_radian();
    out.clear();
    out.extend(
        forest
            .trees
            .iter()
            .map(|t| on_screen(t, &frustum, camera, ppr, lod).map(|s| s.level as u8)),
    );
}

/// How a species looks: its leaves' and bark's linear colours and its leaf shape
/// (`leafshape.glsl`'s ids).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Look {
    pub leaf: [f32; 3],
    pub bark: [f32; 3],
    pub shape: u32,
}

impl Default for Look {
    /// The renderer's leaf and bark colours and the oval leaf.
    fn default() -> Look {
        Look {
            leaf: crate::renderer::palette::LEAF,
            bark: crate::renderer::palette::BARK,
            shape: 0,
        }
    }
}

/// `r` with `entry` in its low [`PALETTE_BITS`] mantissa bits (what `segment_palette` in
/// `common.glsl` reads back); the radius changes by at most 2⁻¹⁸ of itself.
#[inline(always)]
pub fn with_palette(r: f32, entry: u8) -> f32 {
    let mask = (1u32 << PALETTE_BITS) - 1;
    f32::from_bits((r.to_bits() & !mask) | (entry as u32 & mask))
}

/// Cheap colour variation per leaf in [0, 1).
#[inline(always)]
fn leaf_shade(j: usize) -> f32 {
    ((j as u32).wrapping_mul(2_654_435_761) >> 24) as f32 * (1.0 / 256.0)
}

impl RenderFrame {
    /// Instances drawn in all.
    pub fn instance_count(&self) -> usize {
        self.segments.iter().map(Vec::len).sum::<usize>()
            + self.leaves.iter().map(Vec::len).sum::<usize>()
            + self.spheres.len()
            + self.wind_arrows.len()
    }

    /// Whether the last fill wrote the segment and leaf instances: always on the CPU, and for
    /// the patch on the device when its templates changed (a new plan: the camera or the
    /// levels of detail moved); a fill whose templates were in place copies only the pose.
    pub fn wrote_instances(&self) -> bool {
        self.written.wrote
    }

    /// Bytes of the frame's instance data: segments, leaves, spheres and wind arrows.
    pub fn instance_bytes(&self) -> usize {
        self.tree_instance_bytes() + self.other_instance_bytes()
    }

    /// Bytes of instance data the renderer uploads for a frame filled from a pose on the CPU
    /// once its templates are on the device (a still camera): the pose, spheres and arrows
    /// ([`fill_patched_with_jobs`](Self::fill_patched_with_jobs)); otherwise every instance.
    pub fn upload_instance_bytes(&self) -> usize {
        match &self.host_pose {
            Some(p) => p.bytes() + self.other_instance_bytes(),
            None => self.instance_bytes(),
        }
    }

    fn tree_instance_bytes(&self) -> usize {
        self.segments
            .iter()
            .map(|v| v.len() * size_of::<SegmentInstance>())
            .sum::<usize>()
            + self
                .leaves
                .iter()
                .map(|v| v.len() * size_of::<LeafInstance>())
                .sum::<usize>()
    }

    fn other_instance_bytes(&self) -> usize {
        (self.spheres.len() + self.wind_balls.len()) * size_of::<SphereInstance>()
            + self.wind_arrows.len() * size_of::<WindArrow>()
    }

    /// Fills the instance lists from the simulation's arrays for `camera` (replacing what was
    /// there). Collider spheres are given as (centre, radius). `index` is
    /// [`FillIndex::new`]`(forest)`.
    ///
    /// # Panics
    ///
    /// If `index` was built for another forest.
    #[allow(clippy::too_many_arguments)]
    pub fn fill(
        &mut self,
        forest: &Forest,
        index: &FillIndex,
        pose: &Pose,
        spheres: impl IntoIterator<Item = (Vec3, f32)>,
        camera: &Camera,
        lod: &LodSettings,
    ) {
        self.fill_on(None, forest, index, PoseIn::Host(pose), spheres, camera, lod);
        self.device_pose = None;
        self.host_pose = None;
    }

    /// [`fill`](Self::fill) with its pieces run as jobs of `jobs`: the same instances in the
    /// same order.
    #[allow(clippy::too_many_arguments)]
    pub fn fill_with_jobs(
        &mut self,
        jobs: &JobSystem,
        forest: &Forest,
        index: &FillIndex,
        pose: &Pose,
        spheres: impl IntoIterator<Item = (Vec3, f32)>,
        camera: &Camera,
        lod: &LodSettings,
    ) {
        self.fill_on(Some(jobs), forest, index, PoseIn::Host(pose), spheres, camera, lod);
        self.device_pose = None;
        self.host_pose = None;
    }

    /// [`fill_with_jobs`](Self::fill_with_jobs) for a pose on the device: the same trees,
    /// levels of detail and instances in the same order, each holding its segment's or leaf's
    /// index where the pose goes, which the renderer fills in from `pose` (see the module
    /// docs).
    ///
    /// # Panics
    ///
    /// If `index` was built for another forest, or `pose` is of another forest's size.
    #[allow(clippy::too_many_arguments)]
    pub fn fill_device_with_jobs(
        &mut self,
        jobs: &JobSystem,
        forest: &Forest,
        index: &FillIndex,
        pose: DevicePose,
        spheres: impl IntoIterator<Item = (Vec3, f32)>,
        camera: &Camera,
        lod: &LodSettings,
    ) {
        assert!(
            pose.segments as usize == forest.segment_count() && pose.leaves as usize == forest.leaf_count(),
            "RenderFrame::fill_device_with_jobs: a pose of {} segments and {} leaves for a forest of {} and {}",
            pose.segments,
            pose.leaves,
            forest.segment_count(),
            forest.leaf_count()
        );
        self.fill_on(
            Some(jobs),
            forest,
            index,
            PoseIn::Patch(TemplateForm::OwnLeaves),
            spheres,
            camera,
            lod,
        );
        self.device_pose = Some(pose);
        self.host_pose = None;
    }

    /// [`fill_with_jobs`](Self::fill_with_jobs) for the renderer to patch on the device: the
    /// same trees, levels of detail and instances in the same order, each holding its
    /// segment's or leaf's index where the pose goes (as
    /// [`fill_device_with_jobs`](Self::fill_device_with_jobs) writes them), and `pose` copied
    /// into [`host_pose`](Self::host_pose), which the renderer uploads and patches the
    /// instances from (`shaders/glsl/pose_patch.comp`). The templates depend on the camera and
    /// the levels of detail, not on the pose: a fill with the same plan as this frame's last
    /// leaves them as they are and copies only the pose. Rigid leaves (a pose without
    /// `leaf_orient`) are not copied at all: the patch places and turns them with their
    /// segments.
    ///
    /// A pose with removed segments (`Pose::removed`, debris over its cap) is filled as
    /// [`fill_with_jobs`](Self::fill_with_jobs) fills it, on the CPU: the patch draws every
    /// instance it is given, and the plan of what is kept changes as pieces are removed.
    ///
    /// # Panics
    ///
    /// If `index` was built for another forest, or `pose` is of another forest's size.
    #[allow(clippy::too_many_arguments)]
    pub fn fill_patched_with_jobs(
        &mut self,
        jobs: &JobSystem,
        forest: &Forest,
        index: &FillIndex,
        pose: &Pose,
        spheres: impl IntoIterator<Item = (Vec3, f32)>,
        camera: &Camera,
        lod: &LodSettings,
    ) {
        if !pose.removed.is_empty() {
            return self.fill_with_jobs(jobs, forest, index, pose, spheres, camera, lod);
        }
        let (n, m) = (forest.segment_count(), forest.leaf_count());
        assert!(
            pose.base.len() == n
                && pose.orient.len() == n
                && pose.leaf_pos.len() == m
                && (pose.leaf_orient.is_empty() || pose.leaf_orient.len() == m),
            "RenderFrame::fill_patched_with_jobs: a pose of {} segments and {} leaves ({} turned) for a forest of {n} and {m}",
            pose.base.len(),
            pose.leaf_pos.len(),
            pose.leaf_orient.len(),
        );
        let own_leaves = !pose.leaf_orient.is_empty();
        let form = if own_leaves {
            TemplateForm::OwnLeaves
        } else {
            TemplateForm::RigidLeaves
        };
        self.fill_on(Some(jobs), forest, index, PoseIn::Patch(form), spheres, camera, lod);
        let start = std::time::Instant::now();
        let mut host = self.host_pose.take().unwrap_or_default();
        host.segments = n as u32;
        host.leaves = if own_leaves { m as u32 } else { 0 };
        let len = 2 * (n + host.leaves as usize);
        host.vec4s.clear();
        host.vec4s.reserve(len);
        // Written once, in place: no zeroing first (the pieces cover the `len` slots).
        let (bases, rest) = host.vec4s.spare_capacity_mut()[..len].split_at_mut(n);
        let (orients, rest) = rest.split_at_mut(n);
        let (leaf_pos, leaf_orient) = rest.split_at_mut(host.leaves as usize);
        // The copy in pieces of whole vec4 runs, as jobs (a forest of 100 trees has half a
        // million segments).
        let mut work: Vec<PoseCopy<'_>> = Vec::new();
        for (out, from) in bases.chunks_mut(COPY_PIECE).zip(pose.base.chunks(COPY_PIECE)) {
            work.push(PoseCopy::Points(out, from));
        }
        for (out, from) in orients.chunks_mut(COPY_PIECE).zip(pose.orient.chunks(COPY_PIECE)) {
            work.push(PoseCopy::Turns(out, from));
        }
        if own_leaves {
            for (out, from) in leaf_pos.chunks_mut(COPY_PIECE).zip(pose.leaf_pos.chunks(COPY_PIECE)) {
                work.push(PoseCopy::Points(out, from));
            }
            for (out, from) in leaf_orient
                .chunks_mut(COPY_PIECE)
                .zip(pose.leaf_orient.chunks(COPY_PIECE))
            {
                work.push(PoseCopy::Turns(out, from));
            }
        }
        run_pieces(Some(jobs), &mut work, PoseCopy::copy);
        drop(work);
        // SAFETY: the pieces above wrote every one of the first `len` spare slots: bases and
        // orientations cover `n` each (the pose's arrays have `n`, asserted above), and the
        // leaves' two runs cover `host.leaves` each (`m` with own leaves, else none); a panic in
        // a piece returns from here before this line.
        unsafe { host.vec4s.set_len(len) };
        self.host_pose = Some(host);
        self.device_pose = None;
        self.fill_ns += start.elapsed().as_nanos() as u64;
    }

    #[allow(clippy::too_many_arguments)]
    fn fill_on(
        &mut self,
        jobs: Option<&JobSystem>,
        forest: &Forest,
        index: &FillIndex,
        pose: PoseIn<'_>,
        spheres: impl IntoIterator<Item = (Vec3, f32)>,
        camera: &Camera,
        lod: &LodSettings,
    ) {
        let start = std::time::Instant::now();
        assert!(
            index.fits(forest),
            "RenderFrame::fill: the FillIndex belongs to another forest"
        );
        if let PoseIn::Host(pose) = pose {
            assert!(
                pose.leaf_orient.is_empty() || pose.leaf_orient.len() == forest.leaf_count(),
                "RenderFrame::fill: the pose turns {} leaves, the forest has {}",
                pose.leaf_orient.len(),
                forest.leaf_count()
            );
        }
        self.spheres.clear();
        self.trees_drawn = [0; LODS];
        self.camera = Some(*camera);

        let frustum = Frustum::new(camera.view_proj());
        let ppr = camera.pixels_per_radian();
        let mut lo = Vec3::splat(f32::INFINITY);
        let mut hi = Vec3::splat(f32::NEG_INFINITY);
        let mut plan = Plan::default();
        let seg = &forest.seg;
        // Removed segments (host poses only): each piece's window holds what it keeps.
        let removed: Option<&[bool]> = match pose {
            PoseIn::Host(p) if !p.removed.is_empty() => {
                assert_eq!(
                    p.removed.len(),
                    forest.segment_count(),
                    "RenderFrame::fill: the pose flags {} removed segments, the forest has {}",
                    p.removed.len(),
                    forest.segment_count()
                );
                Some(&p.removed)
            }
            _ => None,
        };
        let kept_segments = |range: std::ops::Range<usize>| match removed {
            None => range.len(),
            Some(r) => index.by_radius[range].iter().filter(|&&i| !r[i as usize]).count(),
        };
        let kept_leaves = |source: &LeafSource| match (removed, source) {
            (None, _) => source.len(),
            (Some(r), LeafSource::All { range, .. }) => index.leaf_segment[range.clone()]
                .iter()
                .filter(|&&i| !r[i as usize])
                .count(),
            (Some(r), LeafSource::Strided { range, .. }) => index.leaves[range.clone()]
                .iter()
                .filter(|l| !r[l.segment as usize])
                .count(),
        };
        for (t, tree) in forest.trees.iter().enumerate() {
            let (center, radius) = tree_sphere(tree.root, tree.reach);
            lo = lo.min(center - Vec3::splat(radius));
            hi = hi.max(center + Vec3::splat(radius));
            let Some(OnScreen {
                level,
                scale_px,
                radius_px,
            }) = on_screen(tree, &frustum, camera, ppr, lod)
            else {
                continue;
            };
            self.trees_drawn[level] += 1;
            // Segments thickest first: those at least `min_px` wide on screen are drawn, with the
            // first cylinder from `sides_px[0]` pixels, the second from `sides_px[1]`, else the
            // third. Sizes only fall along `by_radius`, so each run is found by binary search.
            let min_px = if level == 0 { 0.0 } else { lod.min_branch_px };
            let first = tree.segments.start as usize;
            let by_radius = &index.by_radius[first..tree.segments.end as usize];
            let r_px = |i: &u32| seg.radius_base[*i as usize] * scale_px;
            // Kept up to the first one narrower than `min_px`.
            let kept = by_radius.partition_point(|i| r_px(i).partial_cmp(&min_px) != Some(std::cmp::Ordering::Less));
            let kept_r = &by_radius[..kept];
            let thick = kept_r.partition_point(|i| r_px(i) >= lod.sides_px[0]);
            let medium = kept_r.partition_point(|i| r_px(i) >= lod.sides_px[1]).max(thick);
            for (mesh, run) in [(0, 0..thick), (1, thick..medium), (2, medium..kept)] {
                plan.segments(mesh, first + run.start..first + run.end, kept_segments);
            }
            let stride = if level < 2 {
                lod.leaf_stride[level]
            } else {
                // Leaves per pixel of crown kept about constant: the stride grows with the
                // square of the distance beyond the level's threshold.
                let growth = (lod.radius_px[1] / radius_px.max(1e-3)).powi(2);
                ((lod.leaf_stride[2] as f32 * growth) as u32)
                    .clamp(lod.leaf_stride[2], lod.max_leaf_stride.clamp(1, MAX_LEAF_STRIDE))
                    .next_power_of_two()
            };
            let aspect = tree.leaf_aspect;
            let palette = index.tree_palette.get(t).copied().unwrap_or(0) as f32;
            if stride <= 1 {
                // Every leaf, in the simulation's order (sequential reads of its arrays).
                let leaves = seg.leaf_start[first] as usize..seg.leaf_start[tree.segments.end as usize] as usize;
                plan.leaves(
                    level,
                    leaves,
                    |range| LeafSource::All { range, aspect, palette },
                    kept_leaves,
                );
            } else {
                // One leaf in `stride` (a power of two up to MAX_LEAF_STRIDE; those whose index
                // in the tree is a multiple of it, so the choice does not flicker with the
                // pose), each enlarged by sqrt(stride) on each side to keep the foliage's area,
                // at most MAX_LEAF_GROW where the leaves are seen: a prefix of the tree's
                // progressive order.
                let stride = stride.clamp(1, MAX_LEAF_STRIDE).next_power_of_two() as usize;
                // The longest leaf's true length on screen (the bias only picks the detail).
                let leaf_px = index.longest_leaf[t] * scale_px * lod.bias.max(1.0);
                let most = MAX_LEAF_GROW.max(MAX_CARD_PX / leaf_px.max(1e-6));
                let grow = (stride as f32).sqrt().min(most);
                let start = tree.leaves.start as usize;
                let kept = multiples(tree.leaves.len(), stride);
                plan.leaves(
                    level,
                    start..start + kept,
                    |range| LeafSource::Strided {
                        range,
                        aspect,
                        grow,
                        palette,
                    },
                    kept_leaves,
                );
            }
        }

        // Templates for this plan in place already: nothing to write.
        let form = match pose {
            PoseIn::Patch(form) => Some(form),
            PoseIn::Host(_) => None,
        };
        let in_place = |k: &TemplateKey| {
            Some(k.form) == form
                && k.index == index.fingerprint
                && k.pieces == plan.pieces
                && self.segments.iter().map(Vec::len).eq(plan.segment_len)
                && self.leaves.iter().map(Vec::len).eq(plan.leaf_len)
        };
        if self.written.templates.as_ref().is_some_and(in_place) {
            self.written.wrote = false;
            self.finish_fill(forest, spheres, (lo, hi), start);
            return;
        }
        self.written.wrote = true;
        self.written.templates = form.map(|form| TemplateKey {
            index: index.fingerprint,
            form,
            pieces: plan.pieces.clone(),
        });
        for v in &mut self.segments {
            v.clear();
        }
        for v in &mut self.leaves {
            v.clear();
        }
        // Every piece gets its window of the lists' spare capacity, in plan order.
        let RenderFrame { segments, leaves, .. } = self;
        let mut work: Vec<Piece<'_>> = Vec::with_capacity(plan.pieces.len());
        {
            let mut seg_spare = spare_windows(segments, plan.segment_len);
            let mut leaf_spare = spare_windows(leaves, plan.leaf_len);
            for source in plan.pieces {
                work.push(match source {
                    Source::Segments { list, range, len } => {
                        let (out, rest) = std::mem::take(&mut seg_spare[list]).split_at_mut(len);
                        seg_spare[list] = rest;
                        Piece::Segments { range, out }
                    }
                    Source::Leaves { list, leaves, len } => {
                        let (out, rest) = std::mem::take(&mut leaf_spare[list]).split_at_mut(len);
                        leaf_spare[list] = rest;
                        Piece::Leaves { leaves, out }
                    }
                });
            }
            debug_assert!(seg_spare.iter().all(|s| s.is_empty()) && leaf_spare.iter().all(|s| s.is_empty()));
        }
        run_pieces(jobs, &mut work, |piece| piece.write(forest, index, pose));
        drop(work);
        for (v, n) in segments.iter_mut().zip(plan.segment_len) {
            // SAFETY: the pieces split the first `n` spare slots of this list between them
            // without gaps or overlaps, and each wrote every slot of its window (`Piece::write`
            // asserts it writes as many instances as its window holds); a panic in a piece
            // returns from here before this line.
            unsafe { v.set_len(n) };
        }
        for (v, n) in leaves.iter_mut().zip(plan.leaf_len) {
            // SAFETY: as for the segments above.
            unsafe { v.set_len(n) };
        }
        self.finish_fill(forest, spheres, (lo, hi), start);
    }

    /// The fill's last part: the collider spheres, the scene's bounds (from the trees' spheres
    /// `lo..hi`) and the fill's time since `start`.
    fn finish_fill(
        &mut self,
        forest: &Forest,
        spheres: impl IntoIterator<Item = (Vec3, f32)>,
        (lo, hi): (Vec3, Vec3),
        start: std::time::Instant,
    ) {
        for (c, r) in spheres {
            self.spheres.push(SphereInstance {
                center_radius: [c.x, c.y, c.z, r],
            });
        }
        self.bounds = if forest.trees.is_empty() {
            (Vec3::ZERO, 10.0)
        } else {
            ((lo + hi) * 0.5, ((hi - lo) * 0.5).length())
        };
        self.fill_ns = start.elapsed().as_nanos() as u64;
    }
}

/// Runs `f` on every piece: as jobs of `jobs` when there are workers and pieces to share,
/// else in order here (the pieces own disjoint windows, so the result is the same).
fn run_pieces<P: Send>(jobs: Option<&JobSystem>, work: &mut [P], f: impl Fn(&mut P) + Sync) {
    match jobs {
        Some(jobs) if jobs.threads() > 1 && work.len() > 1 => jobs.for_each_mut(work, |_, p| f(p)),
        _ => work.iter_mut().for_each(f),
    }
}

/// Vec4s of the pose a piece of [`RenderFrame::fill_patched_with_jobs`]'s copy converts.
const COPY_PIECE: usize = 16 * 1024;

/// A piece of the pose's copy into a [`HostPose`].
enum PoseCopy<'a> {
    /// Points as vec4s, w 0.
    Points(&'a mut [MaybeUninit<[f32; 4]>], &'a [Vec3]),
    /// Quaternions as vec4s (xyzw).
    Turns(&'a mut [MaybeUninit<[f32; 4]>], &'a [Quat]),
}

impl PoseCopy<'_> {
    /// Writes every slot of the piece's window (which is as long as its source).
    fn copy(&mut self) {
        match self {
            PoseCopy::Points(out, from) => {
                assert_eq!(out.len(), from.len(), "a pose copy piece writes its whole window");
                for (o, p) in out.iter_mut().zip(from.iter()) {
                    o.write([p.x, p.y, p.z, 0.0]);
                }
            }
            PoseCopy::Turns(out, from) => {
                assert_eq!(out.len(), from.len(), "a pose copy piece writes its whole window");
                for (o, q) in out.iter_mut().zip(from.iter()) {
                    o.write(q.to_array());
                }
            }
        }
    }
}

/// The first `n` spare slots of each list (reserved here), for the fill's pieces to split.
fn spare_windows<T>(lists: &mut [Vec<T>], lens: [usize; LODS]) -> Vec<&mut [MaybeUninit<T>]> {
    lists
        .iter_mut()
        .zip(lens)
        .map(|(v, n)| {
            v.reserve(n);
            &mut v.spare_capacity_mut()[..n]
        })
        .collect()
}

/// The fill's plan: what every piece writes, in order, and how long each list gets.
#[derive(Default)]
struct Plan {
    pieces: Vec<Source>,
    segment_len: [usize; LODS],
    leaf_len: [usize; LODS],
}

impl Plan {
    /// The segments at `range` of `FillIndex::by_radius`, into cylinder list `mesh`; `kept`
    /// counts those of a range that are drawn (not removed).
    fn segments(&mut self, mesh: usize, range: std::ops::Range<usize>, kept: impl Fn(std::ops::Range<usize>) -> usize) {
        for start in range.clone().step_by(FILL_PIECE) {
            let range = start..(start + FILL_PIECE).min(range.end);
            let len = kept(range.clone());
            self.segment_len[mesh] += len;
            self.pieces.push(Source::Segments { list: mesh, range, len });
        }
    }

    /// Leaves `range` (of the source `source` makes) into level `level`'s list.
    fn leaves(
        &mut self,
        level: usize,
        range: std::ops::Range<usize>,
        source: impl Fn(std::ops::Range<usize>) -> LeafSource,
        kept: impl Fn(&LeafSource) -> usize,
    ) {
        for start in range.clone().step_by(FILL_PIECE) {
            let range = start..(start + FILL_PIECE).min(range.end);
            let leaves = source(range);
            let len = kept(&leaves);
            self.leaf_len[level] += len;
            self.pieces.push(Source::Leaves {
                list: level,
                leaves,
                len,
            });
        }
    }
}

/// What a piece of the fill reads.
#[derive(Clone, Debug, PartialEq)]
enum Source {
    /// `FillIndex::by_radius[range]`, into segment list `list`: `len` instances (those not
    /// removed).
    Segments {
        list: usize,
        range: std::ops::Range<usize>,
        len: usize,
    },
    /// `leaves` into leaf list `list`: `len` instances (those whose segment is not removed).
    Leaves {
        list: usize,
        leaves: LeafSource,
        len: usize,
    },
}

/// Leaves a piece writes.
#[derive(Clone, Debug, PartialEq)]
enum LeafSource {
    /// The forest's leaves `range`, at their own size.
    /// (`palette`: the tree's palette entry, the integer part of each leaf's colour variation.)
    All {
        range: std::ops::Range<usize>,
        aspect: f32,
        palette: f32,
    },
    /// `FillIndex::leaves[range]`, each enlarged by `grow` on each side.
    Strided {
        range: std::ops::Range<usize>,
        aspect: f32,
        grow: f32,
        palette: f32,
    },
}

impl LeafSource {
    fn len(&self) -> usize {
        match self {
            LeafSource::All { range, .. } | LeafSource::Strided { range, .. } => range.len(),
        }
    }
}

/// How many segments ahead the fill's segment loop asks for their pose.
const PREFETCH_AHEAD: usize = 12;

/// Asks for the cache line holding `v` (a hint: nothing is read, nothing can fail).
#[inline(always)]
fn prefetch<T>(v: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch only hints the cache; `v` is a valid reference besides.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>((v as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = v;
}

/// [`pack_snorm4`](sylva_shaders::pack_snorm4) of a quaternion, bit for bit; on x86_64 with SSE2 (part of its baseline)
/// on the four lanes at once: a NaN becomes 0, the rest is clamped to the i16 range and
/// truncated, as `as` does lane by lane.
#[inline(always)]
fn pack_orient(q: Quat) -> [i16; 4] {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        use std::arch::x86_64::*;
        // SAFETY: the intrinsics need SSE2, which this code is compiled for (the cfg above);
        // none of them reads or writes memory.
        let packed = unsafe {
            let v = _mm_mul_ps(__m128::from(q), _mm_set1_ps(32767.0));
            let v = _mm_and_ps(v, _mm_cmpord_ps(v, v));
            let v = _mm_min_ps(_mm_max_ps(v, _mm_set1_ps(-32768.0)), _mm_set1_ps(32767.0));
            let i = _mm_cvttps_epi32(v);
            _mm_cvtsi128_si64(_mm_packs_epi32(i, i)) as u64
        };
        std::array::from_fn(|k| (packed >> (16 * k)) as u16 as i16)
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    sylva_shaders::pack_snorm4(q.to_array())
}

/// A piece of the fill with its window of the output.
enum Piece<'a> {
    Segments {
        range: std::ops::Range<usize>,
        out: &'a mut [MaybeUninit<SegmentInstance>],
    },
    Leaves {
        leaves: LeafSource,
        out: &'a mut [MaybeUninit<LeafInstance>],
    },
}

impl Piece<'_> {
    /// Writes every slot of the window.
    fn write(&mut self, forest: &Forest, index: &FillIndex, pose: PoseIn<'_>) {
        let pose = match pose {
            PoseIn::Host(pose) => pose,
            PoseIn::Patch(form) => return self.write_indices(forest, index, form),
        };
        if !pose.removed.is_empty() {
            return self.write_kept(forest, index, pose);
        }
        match self {
            Piece::Segments { range, out } => {
                let ids = &index.by_radius[range.clone()];
                let shapes = &index.seg_shape[range.clone()];
                assert_eq!(ids.len(), out.len(), "a fill piece writes its whole window");
                for (k, ((o, &i), &[r0, l, r1])) in out.iter_mut().zip(ids).zip(shapes).enumerate() {
                    // The radius order reads the pose at random: ask for a segment's pose a
                    // few segments ahead, so its cache misses overlap.
                    if let Some(&ahead) = ids.get(k + PREFETCH_AHEAD) {
                        prefetch(&pose.base[ahead as usize]);
                        prefetch(&pose.orient[ahead as usize]);
                    }
                    let i = i as usize;
                    let b = pose.base[i];
                    o.write(SegmentInstance {
                        base_radius: [b.x, b.y, b.z, r0],
                        orient: pack_orient(pose.orient[i]),
                        length_tip: [l, r1],
                    });
                }
            }
            Piece::Leaves { leaves, out } => {
                assert_eq!(leaves.len(), out.len(), "a fill piece writes its whole window");
                match leaves {
                    LeafSource::All { range, aspect, palette } => {
                        let segments = &index.leaf_segment[range.clone()];
                        let positions = &pose.leaf_pos[range.clone()];
                        let rests = &forest.leaf.rest[range.clone()];
                        let write =
                            |o: &mut MaybeUninit<LeafInstance>, j: usize, p: Vec3, length: f32, orient: Quat| {
                                o.write(LeafInstance {
                                    pos_length: [p.x, p.y, p.z, length],
                                    orient: pack_orient(orient),
                                    width_shade: [length * *aspect, *palette + leaf_shade(j)],
                                });
                            };
                        let leaves = out.iter_mut().zip(range.clone()).zip(positions);
                        if pose.leaf_orient.is_empty() {
                            for (((o, j), &p), (&i, r)) in leaves.zip(segments.iter().zip(rests)) {
                                let q: Quat = pose.orient[i as usize];
                                // The rest orientation is stored unit length to 1/32767; the
                                // shader normalises the product, so no normalisation here.
                                let rest = Quat::from_xyzw(r[0] as f32, r[1] as f32, r[2] as f32, r[3] as f32)
                                    * (1.0 / 32767.0);
                                write(o, j, p, forest.leaf.length_m(j), q * rest);
                            }
                        } else {
                            // A model that turns leaves gives each its own orientation.
                            let turned = &pose.leaf_orient[range.clone()];
                            for (((o, j), &p), &q) in leaves.zip(turned) {
                                write(o, j, p, forest.leaf.length_m(j), q);
                            }
                        }
                    }
                    LeafSource::Strided {
                        range,
                        aspect,
                        grow,
                        palette,
                    } => {
                        for (o, l) in out.iter_mut().zip(&index.leaves[range.clone()]) {
                            let i = l.segment as usize;
                            let q: Quat = pose.orient[i];
                            // The attachment point, as the simulation places it: along the
                            // segment's axis; where the model gives leaves their own pose, the
                            // leaf's (a leaf that came off falls on its own).
                            let p = match pose.leaf_orient.is_empty() {
                                true => pose.base[i] + q * Vec3::new(0.0, l.along, 0.0),
                                false => pose.leaf_pos[l.leaf as usize],
                            };
                            let length = l.length * *grow;
                            let r = l.rest;
                            let rest =
                                Quat::from_xyzw(r[0] as f32, r[1] as f32, r[2] as f32, r[3] as f32) * (1.0 / 32767.0);
                            let orient = pose.leaf_orient.get(l.leaf as usize).copied().unwrap_or(q * rest);
                            o.write(LeafInstance {
                                pos_length: [p.x, p.y, p.z, length],
                                orient: pack_orient(orient),
                                width_shade: [length * *aspect, *palette + leaf_shade(l.leaf as usize)],
                            });
                        }
                    }
                }
            }
        }
    }
}

impl Piece<'_> {
    /// [`write`](Self::write) for a pose with removed segments: the same instances, in the
    /// same order, less the removed segments and their leaves (the window holds what is
    /// kept, as the plan counted it).
    fn write_kept(&mut self, forest: &Forest, index: &FillIndex, pose: &Pose) {
        let removed = &pose.removed;
        let rest_of =
            |r: [i16; 4]| Quat::from_xyzw(r[0] as f32, r[1] as f32, r[2] as f32, r[3] as f32) * (1.0 / 32767.0);
        let mut written = 0;
        let capacity;
        match self {
            Piece::Segments { range, out } => {
                capacity = out.len();
                let ids = &index.by_radius[range.clone()];
                let shapes = &index.seg_shape[range.clone()];
                let mut slots = out.iter_mut();
                for (&i, &[r0, l, r1]) in ids.iter().zip(shapes) {
                    let i = i as usize;
                    if removed[i] {
                        continue;
                    }
                    let o = slots.next().expect("a fill piece's window holds its kept segments");
                    let b = pose.base[i];
                    o.write(SegmentInstance {
                        base_radius: [b.x, b.y, b.z, r0],
                        orient: pack_orient(pose.orient[i]),
                        length_tip: [l, r1],
                    });
                    written += 1;
                }
            }
            Piece::Leaves { leaves, out } => {
                capacity = out.len();
                let mut slots = out.iter_mut();
                match leaves {
                    LeafSource::All { range, aspect, palette } => {
                        for j in range.clone() {
                            let i = index.leaf_segment[j] as usize;
                            if removed[i] {
                                continue;
                            }
                            let o = slots.next().expect("a fill piece's window holds its kept leaves");
                            let p = pose.leaf_pos[j];
                            let length = forest.leaf.length_m(j);
                            let orient = match pose.leaf_orient.get(j) {
                                Some(&q) => q,
                                None => pose.orient[i] * rest_of(forest.leaf.rest[j]),
                            };
                            o.write(LeafInstance {
                                pos_length: [p.x, p.y, p.z, length],
                                orient: pack_orient(orient),
                                width_shade: [length * *aspect, *palette + leaf_shade(j)],
                            });
                            written += 1;
                        }
                    }
                    LeafSource::Strided {
                        range,
                        aspect,
                        grow,
                        palette,
                    } => {
                        for l in &index.leaves[range.clone()] {
                            let i = l.segment as usize;
                            if removed[i] {
                                continue;
                            }
                            let o = slots.next().expect("a fill piece's window holds its kept leaves");
                            let q: Quat = pose.orient[i];
                            let p = match pose.leaf_orient.is_empty() {
                                true => pose.base[i] + q * Vec3::new(0.0, l.along, 0.0),
                                false => pose.leaf_pos[l.leaf as usize],
                            };
                            let length = l.length * *grow;
                            let orient = pose
                                .leaf_orient
                                .get(l.leaf as usize)
                                .copied()
                                .unwrap_or(q * rest_of(l.rest));
                            o.write(LeafInstance {
                                pos_length: [p.x, p.y, p.z, length],
                                orient: pack_orient(orient),
                                width_shade: [length * *aspect, *palette + leaf_shade(l.leaf as usize)],
                            });
                            written += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(written, capacity, "a fill piece writes its whole window");
    }

    /// Writes every slot of the window as a template for the pose patch: the instance as
    /// [`write`](Self::write) makes it, its pose replaced by the indices
    /// `shaders/glsl/pose_patch.comp` reads (a segment's index; a leaf's index and, for a
    /// strided leaf or any leaf in the rigid form, its segment's and the distance along it,
    /// else [`PATCH_LEAF_POSITION`]), its orientation zero, but a rigid leaf's, which holds
    /// the leaf's rest orientation for the patch to turn.
    fn write_indices(&mut self, forest: &Forest, index: &FillIndex, form: TemplateForm) {
        let bits = f32::from_bits;
        let rigid = form == TemplateForm::RigidLeaves;
        match self {
            Piece::Segments { range, out } => {
                let ids = &index.by_radius[range.clone()];
                let shapes = &index.seg_shape[range.clone()];
                assert_eq!(ids.len(), out.len(), "a fill piece writes its whole window");
                for ((o, &i), &[r0, l, r1]) in out.iter_mut().zip(ids).zip(shapes) {
                    o.write(SegmentInstance {
                        base_radius: [bits(i), 0.0, 0.0, r0],
                        orient: [0; 4],
                        length_tip: [l, r1],
                    });
                }
            }
            Piece::Leaves { leaves, out } => {
                assert_eq!(leaves.len(), out.len(), "a fill piece writes its whole window");
                match leaves {
                    // A rigid leaf names its segment and the distance along it, and carries its
                    // rest orientation for the patch to turn with the segment.
                    LeafSource::All { range, aspect, palette } if rigid => {
                        let segments = &index.leaf_segment[range.clone()];
                        for ((o, j), &i) in out.iter_mut().zip(range.clone()).zip(segments) {
                            let length = forest.leaf.length_m(j);
                            let along = forest.leaf.along_f32(j) * forest.seg.length[i as usize];
                            o.write(LeafInstance {
                                pos_length: [bits(j as u32), bits(i), along, length],
                                orient: forest.leaf.rest[j],
                                width_shade: [length * *aspect, *palette + leaf_shade(j)],
                            });
                        }
                    }
                    LeafSource::All { range, aspect, palette } => {
                        for (o, j) in out.iter_mut().zip(range.clone()) {
                            let length = forest.leaf.length_m(j);
                            o.write(LeafInstance {
                                pos_length: [bits(j as u32), bits(PATCH_LEAF_POSITION), 0.0, length],
                                orient: [0; 4],
                                width_shade: [length * *aspect, *palette + leaf_shade(j)],
                            });
                        }
                    }
                    LeafSource::Strided {
                        range,
                        aspect,
                        grow,
                        palette,
                    } => {
                        for (o, l) in out.iter_mut().zip(&index.leaves[range.clone()]) {
                            let length = l.length * *grow;
                            o.write(LeafInstance {
                                // A leaf of its own (the model turns leaves, or leaves came
                                // off) at its own position, as the CPU fill places it.
                                pos_length: [
                                    bits(l.leaf),
                                    bits(if rigid { l.segment } else { PATCH_LEAF_POSITION }),
                                    l.along,
                                    length,
                                ],
                                orient: if rigid { l.rest } else { [0; 4] },
                                width_shade: [length * *aspect, *palette + leaf_shade(l.leaf as usize)],
                            });
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sylva_shaders::pack_snorm4;

    #[test]
    fn camera_projects_the_target_to_the_image_centre_with_y_down() {
        let cam = Camera::orbit(Vec3::new(0.0, 5.0, 0.0), 0.3, 0.2, 30.0, 16.0 / 9.0, 720.0);
        let (x, y, d) = cam.project(cam.target, 1280.0).unwrap();
        assert!((x - 640.0).abs() < 1e-2 && (y - 360.0).abs() < 1e-2);
        assert!((d - 30.0).abs() < 1e-3);
        // A point above the target appears above the centre (smaller y).
        let (_, y_up, _) = cam.project(cam.target + Vec3::Y, 1280.0).unwrap();
        assert!(y_up < 360.0);
        // Reversed depth: the near plane maps to 1, far points towards 0.
        let vp = cam.view_proj();
        let near = vp * (cam.eye + (cam.target - cam.eye).normalize() * cam.near).extend(1.0);
        assert!((near.z / near.w - 1.0).abs() < 1e-4);
        let far = vp * (cam.eye + (cam.target - cam.eye).normalize() * 1e4).extend(1.0);
        assert!(far.z / far.w < 1e-3);
    }

    #[test]
    fn orientations_pack_as_pack_snorm4_packs_them() {
        let mut values = vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e30, -1e30, 0.0, -0.0];
        values.extend([
            1.0,
            -1.0,
            1.00002,
            -1.00002,
            1.0 / 32767.0,
            -0.5 / 32767.0,
            0.99999,
            7e-6,
        ]);
        let mut x = 0.123_f32;
        for _ in 0..2000 {
            x = (x * 3.7 + 0.31).fract();
            values.push(2.2 * x - 1.1);
        }
        for w in values.windows(4) {
            let q = Quat::from_xyzw(w[0], w[1], w[2], w[3]);
            assert_eq!(pack_orient(q), pack_snorm4(q.to_array()), "{q:?}");
        }
    }

    #[test]
    fn progressive_order_makes_every_subsample_a_prefix() {
        let n = 1000;
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&k| progressive_key(k));
        for stride in [1, 2, 4, 8, 16, 32] {
            let prefix = &order[..multiples(n, stride)];
            assert!(prefix.iter().all(|k| k % stride == 0), "stride {stride}");
            assert_eq!(prefix.len(), (0..n).filter(|k| k % stride == 0).count());
        }
    }

    #[test]
    fn frustum_keeps_what_is_in_view_and_culls_what_is_behind() {
        let cam = Camera::orbit(Vec3::ZERO, 0.0, 0.0, 20.0, 1.0, 500.0);
        let f = Frustum::new(cam.view_proj());
        assert!(f.sees(Vec3::ZERO, 1.0));
        assert!(
            !f.sees(cam.eye + (cam.eye - cam.target).normalize() * 10.0, 1.0),
            "behind the camera"
        );
        // 45° field of view: at 20 m the half-width is 8.3 m.
        assert!(!f.sees(Vec3::new(15.0, 0.0, 0.0), 1.0));
        assert!(
            f.sees(Vec3::new(15.0, 0.0, 0.0), 8.0),
            "a large sphere reaching in is kept"
        );
    }
}
