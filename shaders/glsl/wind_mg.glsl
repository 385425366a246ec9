// The converged pressure solver's shared declarations: conjugate gradients on the pressure
// equation (paper 004, Eq. 9), preconditioned by one multigrid V-cycle, as `sylva_sim::fluid`'s
// `PressureState::pcg` runs it on the CPU (sim/src/fluid/pressure.rs): damped-Jacobi smoothing,
// averaging restriction, constant prolongation, semi-coarsened levels. The host code is
// render/src/wind_pcg.rs.
//
// Every multigrid and CG vector lives in one float pool; a level's arrays are padded cell arrays
// (one ghost layer all round, always 0) at `lvl.x + k * lvl.y` for k = ACT, FLUID, DIAG, INV, R,
// X, T. The CG scalars (dot products, α, β, the iteration count and whether the solve is done)
// stay on the GPU in `Scalars`; a kernel flagged SKIP_DONE does nothing once the solve is done,
// so the host can record iterations in batches and only reads the scalars between them.

// `WindMgPush` in shaders/src/lib.rs.
layout(push_constant, std430) uniform MgPush {
    uvec4 n;      // this level's cells (xyz)
    vec4 inv_h2;  // this level's 1/h² (xyz); w: the smoother's damping ω
    uvec4 lvl;    // x, y: this level's first pool element and array length; z, w: the coarser level's
    uvec4 aux;    // restrict, prolong, act: the coarser level's cells (xyz), halved axes (w, bit a);
                  // vector ops: pool offsets of b, r, d, q of the fine level
    uvec4 opnd;   // pool offsets of the operands (x, y, z); w: operation | flags
} pc;

// The solver's field set (see wind_common.glsl): divergence (unpadded cells) and pressure (padded).
layout(set = 0, binding = 5, std430) readonly buffer Div { float div[]; };
layout(set = 0, binding = 6, std430) buffer Pressure { float p[]; };

layout(set = 1, binding = 0, std430) buffer Pool { float pool[]; };
// `MgScalars` in shaders/src/lib.rs.
layout(set = 1, binding = 1, std430) buffer Scalars {
    float b2;        // |b|², b = −divergence
    float r2;        // |r|² of the current residual
    float rz;        // r·z of the last iteration
    float alpha;
    float beta;
    float mean;      // the last mean taken (closed domains)
    float tol;       // relative residual to reach
    uint iterations; // CG iterations done
    uint done;       // 0: running, 1: converged, 2: iteration limit or non-finite, 3: breakdown
    uint max_iterations;
    float count;     // fluid cells of the fine level (kept across solves)
} s;
layout(set = 1, binding = 2, std430) buffer Partials { float partial[]; };

const uint ACT = 0u;
const uint FLUID = 1u;
const uint DIAG = 2u;
const uint INV = 3u;
const uint R = 4u;

const uint SKIP_DONE = 256u;
const uint FROM_ZERO = 512u;
const uint INCREMENT = 1024u;

uint op() { return pc.opnd.w & 255u; }
bool skip() { return (pc.opnd.w & SKIP_DONE) != 0u && s.done != 0u; }

// First pool element of this level's array k, and of the coarser level's.
uint arr(uint k) { return pc.lvl.x + k * pc.lvl.y; }
uint coarse_arr(uint k) { return pc.lvl.z + k * pc.lvl.w; }

// Index of cell c in a padded array of a level with n cells (−1 and n are the ghosts).
uint pad_of(ivec3 c, uvec3 n) {
    return uint(c.x + 1) + (n.x + 2u) * (uint(c.y + 1) + (n.y + 2u) * uint(c.z + 1));
}

bool inside(ivec3 c, uvec3 n) { return all(lessThan(uvec3(c), n)) && all(greaterThanEqual(c, ivec3(0))); }

// (A x)(c) = fluid · (diag x − Σ_axes (x⁺ + x⁻) / h²) on this level, x at pool offset `x`
// (`apply` in sim/src/fluid/pressure.rs).
float apply_pool(uint x, uint c) {
    uint sy = pc.n.x + 2u;
    uint sz = sy * (pc.n.y + 2u);
    precise float nb = pc.inv_h2.x * (pool[x + c - 1u] + pool[x + c + 1u])
        + pc.inv_h2.y * (pool[x + c - sy] + pool[x + c + sy])
        + pc.inv_h2.z * (pool[x + c - sz] + pool[x + c + sz]);
    precise float ax = pool[arr(FLUID) + c] * (pool[arr(DIAG) + c] * pool[x + c] - nb);
    return ax;
}

// The same on the fine level's pressure.
float apply_p(uint c) {
    uint sy = pc.n.x + 2u;
    uint sz = sy * (pc.n.y + 2u);
    precise float nb = pc.inv_h2.x * (p[c - 1u] + p[c + 1u])
        + pc.inv_h2.y * (p[c - sy] + p[c + sy])
        + pc.inv_h2.z * (p[c - sz] + p[c + sz]);
    precise float ax = pool[arr(FLUID) + c] * (pool[arr(DIAG) + c] * p[c] - nb);
    return ax;
}

// Local size of the 3D kernels (each declares it: 16 × 4 × 8).
const uint GROUP = 16u * 4u * 8u;
shared float group_part[GROUP];

// Adds v over the workgroup into partial[workgroup index]; every invocation of the workgroup
// must call it (the first pass of a dot product, finished by wind_mg_scalar.comp).
void group_sum(float v) {
    uint li = gl_LocalInvocationIndex;
    group_part[li] = v;
    barrier();
    for (uint h = GROUP / 2u; h > 0u; h >>= 1u) {
        if (li < h) {
            group_part[li] += group_part[li + h];
        }
        barrier();
    }
    if (li == 0u) {
        uvec3 g = gl_WorkGroupID;
        uvec3 ng = gl_NumWorkGroups;
        partial[g.x + ng.x * (g.y + ng.y * g.z)] = group_part[0];
    }
}
