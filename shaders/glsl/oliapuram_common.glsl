// Oliapuram & Kumar 2010 (paper 004, §3 and §4) on the GPU: the shared declarations of the
// three kernels (oliapuram_dynamics.comp, oliapuram_integrate.comp, oliapuram_pose.comp), the
// twin of `sylva_sim::dynamics::oliapuram` (kernels.rs, leaves.rs). Every function below follows
// the CPU kernel of the same name, operation for operation, in f32.
//
// Orders (the CPU model's, see `OliapuramExport`): segments in level order v (level by level,
// root first, §3.2), leaves in the model's order j (segment by segment in level order); the
// pose in the forest's orders. Every moment is already divided by the body's inertia.
//
// Buffers (std430):
// 0 segs      static, one `Seg` per level index
// 1 leaves    static, one `Leaf` per model leaf
// 2 seg_in    (θ', ω) per segment at the step's start: phi[v] = seg_in[v], omega[v] = seg_in[n + v]
// 3 seg_out   the same after the dynamics phase
// 4 leaf_in   (ψ, dψ/dt) per leaf at the step's start
// 5 leaf_out  the same after the dynamics phase
// 6 level     world orientation [0, n) and base [n, 2n) in level order
// 7 pose      the renderer's pose: segment base [0, n), orientation [n, 2n) (forest order),
//             leaf position [2n, 2n + m), orientation [2n + m, 2n + 2m) (forest leaf order)
// 8 samples   the wind at each segment's centroid [0, n) and each blade's centre [n, n + m),
//             sampled on the CPU (wind mode 1)
// 9 points    where the CPU samples it, written by the pose kernel
// 10 fluid    the GPU wind's face velocities (wind mode 2), as `FieldBuffers::velocity`
// 11 status   x: set to 1 once a result is not finite
// Breakage (oliapuram_loads.comp, oliapuram_subtree*.comp; the rule of `sylva_sim::dynamics::oliapuram::device`):
// 12 loads    the external load on every segment [0, n) and leaf [n, n + m) this step: its
//             wind force plus its weight [N], written by the dynamics phase
// 13 brk      static: per segment [0, n) (limit [N·m], wood weight [N], inertia I,
//             uintBitsToFloat(its root's level index)); per leaf [n, n + m) (I/(L/2), blade
//             weight [N], 0, 0)
// 14 sums     per segment: (S_F, bending moment) [0, n) and (S_T about its root's base, 0)
//             [n, 2n), its subtree's sums, tips to root
// 15 over     host-visible: [0] joints over their limits this step, then their level indices
// 16 patch    the pose of the broken pieces, written into the renderer's pose after the pose
//             kernel (oliapuram_patch.comp): per entry (pose slot of the position, of the
//             orientation, 0, 0), position, orientation

layout(local_size_x = 64) in;

// `OliapuramPush` in shaders/src/lib.rs.
layout(push_constant, std430) uniform Push {
    uvec4 counts;  // n segments, m leaves, first level index of the level, its length
    vec4 wind;     // xyz: the uniform wind (mode 0); w: time step Δt
    uvec4 mode;    // x: wind mode (0 uniform, 1 samples, 2 fluid); y, z: float offsets of v and w
                   // in `fluid`; w: unused
    uvec4 cells;   // fluid cells nx, ny, nz; w: drag law (0 linear, 1 quadratic)
    vec4 origin;   // fluid domain's minimum corner
    vec4 h;        // fluid cell size
    vec4 leaf;     // x: μ/I of every leaf; quadratic drag: y = 1/U_match, z = U_r, w = 1 + β
} pc;

struct Seg {
    vec4 a;        // xyz: rest weight moment / I; w: centroid distance
    vec4 b;        // wind gain, weight gain, damping gain μ/I, ω₀² = k/I
    vec4 c;        // den = 1/(1 + ½Δt²ω₀²), propagation, length, 0
    vec4 rest;     // rest orientation relative to the parent (x, y, z, w)
    vec4 root;     // xyz: the root's base (roots only)
    uvec4 topo;    // parent (0xffffffff for roots), first child, end of children, forest index
    uvec4 lv;      // first leaf, end of leaves, 0, 0
};

struct Leaf {
    vec4 a;        // xyz: reaction on the segment per radian; w: wind gain
    vec4 b;        // ω₀², den, along, half length
    vec4 rest;     // rest orientation in the segment's frame
    uvec4 idx;     // segment (level index), forest leaf index, 0, 0
};

layout(set = 0, binding = 0, std430) readonly buffer Segs { Seg segs[]; };
layout(set = 0, binding = 1, std430) readonly buffer Leaves { Leaf leaves[]; };
layout(set = 0, binding = 2, std430) readonly buffer SegIn { vec4 seg_in[]; };
layout(set = 0, binding = 3, std430) writeonly buffer SegOut { vec4 seg_out[]; };
layout(set = 0, binding = 4, std430) readonly buffer LeafIn { vec2 leaf_in[]; };
layout(set = 0, binding = 5, std430) writeonly buffer LeafOut { vec2 leaf_out[]; };
layout(set = 0, binding = 6, std430) buffer Level { vec4 level[]; };
layout(set = 0, binding = 7, std430) buffer Pose { vec4 pose[]; };
layout(set = 0, binding = 8, std430) readonly buffer Samples { vec4 samples[]; };
layout(set = 0, binding = 9, std430) writeonly buffer Points { vec4 points[]; };
layout(set = 0, binding = 10, std430) readonly buffer Fluid { float fluid[]; };
layout(set = 0, binding = 11, std430) buffer Status { uint status[]; };
layout(set = 0, binding = 12, std430) buffer Loads { vec4 loads[]; };
layout(set = 0, binding = 13, std430) readonly buffer Brk { vec4 brk[]; };
layout(set = 0, binding = 14, std430) buffer Sums { vec4 sums[]; };
layout(set = 0, binding = 15, std430) buffer Over { uint over[]; };

struct Patch {
    uvec4 slot;
    vec4 p;
    vec4 q;
};
layout(set = 0, binding = 16, std430) readonly buffer Patches { Patch patches[]; };

const uint NO_PARENT = 0xffffffffu;

// q · (0, 1, 0), a segment's axis (`segment_axis`).
vec3 segment_axis(vec4 q) {
    return vec3(2.0 * (q.x * q.y - q.w * q.z), 1.0 - 2.0 * (q.x * q.x + q.z * q.z),
                2.0 * (q.y * q.z + q.w * q.x));
}

// q · (0, 0, 1), a blade's normal (`axis_z`).
vec3 axis_z(vec4 q) {
    return vec3(2.0 * (q.x * q.z + q.w * q.y), 2.0 * (q.y * q.z - q.w * q.x),
                1.0 - 2.0 * (q.x * q.x + q.y * q.y));
}

// The Hamilton product a · b, (x, y, z, w) as glam's.
vec4 qmul(vec4 a, vec4 b) {
    return vec4(a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
                a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
                a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w,
                a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z);
}

// sin(a)/a·½ and cos(a) for a = θ/2 from θ², by the CPU's Taylor polynomials in a² below π
// (`half_turn`).
vec2 half_turn(float theta2) {
    if (theta2 > 3.14159265358979 * 3.14159265358979) {
        float theta = sqrt(theta2);
        return vec2(sin(0.5 * theta) / theta, cos(0.5 * theta));
    }
    float a2 = 0.25 * theta2;
    float sinc = 1.0 + a2 * (-1.0 / 6.0 + a2 * (1.0 / 120.0 + a2 * (-1.0 / 5040.0
        + a2 * (1.0 / 362880.0 + a2 * (-1.0 / 39916800.0)))));
    float c = 1.0 + a2 * (-0.5 + a2 * (1.0 / 24.0 + a2 * (-1.0 / 720.0
        + a2 * (1.0 / 40320.0 + a2 * (-1.0 / 3628800.0 + a2 * (1.0 / 479001600.0))))));
    return vec2(0.5 * sinc, c);
}

// The rotation by |v| about v/|v| (`rotation`, §3.1.2).
vec4 rotation(vec3 v) {
    vec2 sc = half_turn(dot(v, v));
    return vec4(v * sc.x, sc.y);
}

// q brought back to unit length by one Newton step (`renormalize`).
vec4 renormalize(vec4 q) {
    return q * (1.5 - 0.5 * dot(q, q));
}

#define FLUID_FIELD fluid
#include "fluid_trilinear.glsl"

// The wind at p on the GPU wind's MAC grid: each component trilinear on its own staggered grid,
// clamped to the domain, as `FluidGrid::sample` (`sample_component`, `trilinear`): the same
// sampling function as the GPU wind's advection. A point that is not finite reads a clamped
// cell, never outside the buffer.
float fluid_component(uint a, vec3 g) {
    vec3 c = g - 0.5;
    c[a] += 0.5;
    ivec3 fd = ivec3(pc.cells.xyz);
    fd[a] += 1;
    uint offset = a == 0u ? 0u : (a == 1u ? pc.mode.y : pc.mode.z);
    return fluid_trilinear(offset, fd, c);
}

vec3 fluid_sample(vec3 p) {
    precise vec3 g = (p - pc.origin.xyz) / pc.h.xyz;
    return vec3(fluid_component(0u, g), fluid_component(1u, g), fluid_component(2u, g));
}
